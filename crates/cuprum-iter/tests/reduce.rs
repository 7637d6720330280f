//! Reductions (`sum`, `min`, `max`, `count`, `reduce`, with and without `filter`) against
//! plain-Rust references on random data at every length of `LENGTHS`.
//!
//! Integer results must be exact (wrapping, as the IR's integer arithmetic). Float sums are
//! computed in a tree, not left to right, so they are checked against an `f64` sum with
//! the worst-case bound of recursive summation: `depth * 2^-24 * sum(|x|)`, where `depth`
//! bounds the longest chain of additions any term goes through (the elements one thread
//! adds, then 5 warp steps and 5 block steps, then the same again over the per-block
//! partials). `min`/`max` are exact (order does not matter to them).

mod common;

use common::{LENGTHS, device, ok, random, rng};
use cuprum_iter::prelude::*;

/// The tolerance of an `f32` sum of `terms` on `device`, as described in the module docs.
fn sum_tolerance(device: &GpuDevice, terms: &[f32]) -> f64 {
    let t = device.reduction_tuning();
    let threads =
        (device.context().limits().multiprocessor_count * t.blocks_per_sm * t.block) as usize;
    let per_thread = terms.len().div_ceil(threads) + 16; // + one group and the tail
    let partials = device.context().limits().multiprocessor_count as usize * 4;
    let depth = per_thread + 10 + partials.div_ceil(t.block as usize) + 10;
    let magnitude: f64 = terms.iter().map(|&x| f64::from(x).abs()).sum();
    depth as f64 * (-24f64).exp2() * magnitude
}

#[test]
fn float_sums_within_the_stated_bound() {
    let device = device();
    let mut rng = rng("float_sums");
    for len in LENGTHS {
        let a = random(&mut rng, len, -1f32, 1.0);
        let b = random(&mut rng, len, -1f32, 1.0);
        let (da, db) = (ok(device.upload(&a)), ok(device.upload(&b)));
        let want: f64 = a.iter().map(|&x| f64::from(x)).sum();
        let got = ok((&da).sum());
        let tol = sum_tolerance(&device, &a);
        assert!(
            (f64::from(got) - want).abs() <= tol,
            "sum len {len}: got {got}, f64 {want}, tolerance {tol:e}"
        );
        // A dot product: the multiply is fused into the reduction.
        let products: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x * y).collect();
        let want: f64 = products.iter().map(|&x| f64::from(x)).sum();
        let got = ok((&da).zip(&db).map(|(x, y)| x * y).sum());
        let tol = sum_tolerance(&device, &products);
        assert!(
            (f64::from(got) - want).abs() <= tol,
            "dot len {len}: got {got}, f64 {want}, tolerance {tol:e}"
        );
        // On the device, then copied.
        let on_device = ok((&da).sum_on_device());
        assert_eq!(on_device.len(), 1);
        assert_eq!(ok(on_device.to_vec())[0].to_bits(), ok(da.sum()).to_bits());
    }
}

#[test]
fn integer_sums_are_exact_and_wrap() {
    let device = device();
    let mut rng = rng("int_sums");
    for len in LENGTHS {
        let a = random(&mut rng, len, i32::MIN, i32::MAX);
        let da = ok(device.upload(&a));
        let want = a.iter().fold(0i32, |s, &x| s.wrapping_add(x));
        assert_eq!(ok((&da).sum()), want, "i32 sum len {len}");
        let want: i64 = a.iter().map(|&x| i64::from(x)).sum();
        assert_eq!(
            ok((&da).map(|x| x.cast::<i64>()).sum()),
            want,
            "i64 len {len}"
        );
        let u = random(&mut rng, len, 0u64, u64::MAX);
        let du = ok(device.upload(&u));
        let want = u.iter().fold(0u64, |s, &x| s.wrapping_add(x));
        assert_eq!(ok(du.sum()), want, "u64 len {len}");
    }
}

#[test]
fn min_and_max_are_exact_and_none_when_empty() {
    let device = device();
    let mut rng = rng("min_max");
    for len in LENGTHS {
        let a = random(&mut rng, len, -1e30f32, 1e30);
        let da = ok(device.upload(&a));
        let want_min = a.iter().copied().reduce(f32::min);
        let want_max = a.iter().copied().reduce(f32::max);
        assert_eq!(ok((&da).min()), want_min, "f32 min len {len}");
        assert_eq!(ok((&da).max()), want_max, "f32 max len {len}");
        let i = random(&mut rng, len, i64::MIN, i64::MAX);
        let di = ok(device.upload(&i));
        assert_eq!(
            ok((&di).min()),
            i.iter().copied().min(),
            "i64 min len {len}"
        );
        assert_eq!(
            ok((&di).max()),
            i.iter().copied().max(),
            "i64 max len {len}"
        );
        let u: Vec<u8> = random(&mut rng, len, 0u8, 255);
        let du = ok(device.upload(&u));
        assert_eq!(ok((&du).min()), u.iter().copied().min(), "u8 min len {len}");
        assert_eq!(ok(du.max()), u.iter().copied().max(), "u8 max len {len}");
    }
}

#[test]
fn nans_are_ignored_by_min_and_max_as_by_f32_min() {
    let device = device();
    let mut a = vec![f32::NAN; 10_000];
    let da = ok(device.upload(&a));
    assert!(ok((&da).min()).is_some_and(f32::is_nan), "all NaN: NaN");
    a[7777] = -3.0;
    a[123] = 8.0;
    let da = ok(device.upload(&a));
    assert_eq!(ok((&da).min()), Some(-3.0));
    assert_eq!(ok((&da).max()), Some(8.0));
}

#[test]
fn custom_reductions_and_identities() {
    let device = device();
    let mut rng = rng("reduce");
    for len in LENGTHS {
        let a = random(&mut rng, len, 0u32, u32::MAX);
        let da = ok(device.upload(&a));
        let want = a.iter().fold(1u32, |p, &x| p.wrapping_mul(x | 1));
        let got = ok((&da).map(|x| x | 1).reduce(1, |p, q| p * q));
        assert_eq!(got, want, "product len {len}");
        let want = a.iter().fold(0u32, |s, &x| s ^ x.rotate_left(3));
        let got = ok((&da)
            .map(|x| (x << 3u32) | (x >> 29u32))
            .reduce(0, |p, q| p ^ q));
        assert_eq!(got, want, "xor len {len}");
        let f = random(&mut rng, len, -5f32, 5.0);
        let df = ok(device.upload(&f));
        let want = f.iter().fold(0f32, |m, &x| m.max(x.abs()));
        let got = ok((&df).reduce(0.0, |p, q| p.abs().max(q.abs())));
        assert_eq!(got, want, "max |x| len {len}");
        // A captured value in the function, and the identity of an empty input.
        let cap = 2.5f32;
        let got = ok((&df).reduce(-1.0, move |p, q| p.max(q).min(cap)));
        let want = if len == 0 {
            -1.0
        } else {
            f.iter().fold(-1f32, |m, &x| m.max(x).min(cap))
        };
        assert_eq!(got, want, "clamped max len {len}");
    }
}

#[test]
fn counts_with_and_without_filters() {
    let device = device();
    let mut rng = rng("count");
    for len in LENGTHS {
        let a = random(&mut rng, len, -1f32, 1.0);
        let da = ok(device.upload(&a));
        let launches = device.stats().launches;
        assert_eq!(ok((&da).map(|x| x * 2.0).count()), len);
        assert_eq!(
            device.stats().launches,
            launches,
            "a dense count runs nothing"
        );
        let want = a.iter().filter(|&&x| x > 0.25).count();
        assert_eq!(ok((&da).filter(|x| x.gt(0.25)).count()), want, "len {len}");
        let want = a.iter().filter(|&&x| x > 0.25 && x < 0.5).count();
        let got = ok((&da).filter(|x| x.gt(0.25)).filter(|x| x.lt(0.5)).count());
        assert_eq!(got, want, "two filters len {len}");
    }
}

#[test]
fn filtered_reductions() {
    let device = device();
    let mut rng = rng("filtered_reductions");
    for len in LENGTHS {
        let a = random(&mut rng, len, -1000i32, 1000);
        let da = ok(device.upload(&a));
        let want: i32 = a.iter().filter(|&&x| x % 3 == 0).sum();
        assert_eq!(ok((&da).filter(|x| (x % 3).eq(0)).sum()), want, "len {len}");
        let want = a.iter().copied().filter(|&x| x > 900).min();
        assert_eq!(ok((&da).filter(|x| x.gt(900)).min()), want, "min len {len}");
        let want = a.iter().copied().filter(|&x| x > 5000).max();
        assert_eq!(want, None);
        assert_eq!(ok((&da).filter(|x| x.gt(5000)).max()), None, "len {len}");
        // Filter on the index, then map and reduce.
        let want: i64 = a
            .iter()
            .enumerate()
            .filter(|(i, _)| i % 2 == 1)
            .map(|(_, &x)| i64::from(x) * 3)
            .sum();
        let got = ok((&da)
            .enumerate()
            .filter(|(i, _)| (i % 2).eq(1))
            .map(|(_, x)| x.cast::<i64>() * 3)
            .sum());
        assert_eq!(got, want, "odd positions len {len}");
    }
}
