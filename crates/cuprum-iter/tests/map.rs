//! Element-wise chains (`map`, `zip`, `enumerate`) against plain-Rust references on random
//! data, at every length of `LENGTHS`, on the backend `CUPRUM_DEVICE` selects. Outputs are
//! poisoned first and every element is compared bit for bit (the IR's float semantics are
//! IEEE without contraction, so exact agreement is the right test), except the
//! transcendental functions, which are held to 2 ulp.

mod common;

use common::{LENGTHS, assert_bits_eq, device, ok, random, rng};
use cuprum_iter::prelude::*;
use cuprum_iter::{Layout, Tuning};
use half::f16;

#[test]
fn zip_map_multiplies_at_every_length() {
    let device = device();
    let mut rng = rng("zip_map");
    for len in LENGTHS {
        let a = random(&mut rng, len, -1e3f32, 1e3);
        let b = random(&mut rng, len, -1e3f32, 1e3);
        let da = ok(device.upload(&a));
        let db = ok(device.upload(&b));
        let got = ok(da.zip(db).map(|(x, y)| x * y).collect(&device));
        let want: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x * y).collect();
        assert_bits_eq(&format!("zip-mul len {len}"), &got, &want);
    }
}

#[test]
fn borrowed_vectors_are_reusable_and_zip_nests() {
    let device = device();
    let mut rng = rng("borrowed");
    for len in LENGTHS {
        let a = random(&mut rng, len, -10f32, 10.0);
        let b = random(&mut rng, len, -10f32, 10.0);
        let c = random(&mut rng, len, -10f32, 10.0);
        let (da, db, dc) = (
            ok(device.upload(&a)),
            ok(device.upload(&b)),
            ok(device.upload(&c)),
        );
        let fma = ok((&da)
            .zip(&db)
            .zip(&dc)
            .map(|((x, y), z)| x.mul_add(y, z))
            .collect(&device));
        let want: Vec<f32> = (0..len).map(|i| a[i].mul_add(b[i], c[i])).collect();
        assert_bits_eq(&format!("fma len {len}"), &fma, &want);
        // The same vectors again, in another chain, and one vector zipped with itself.
        let diff = ok((&da).zip(&db).map(|(x, y)| x - y).collect(&device));
        let want: Vec<f32> = (0..len).map(|i| a[i] - b[i]).collect();
        assert_bits_eq(&format!("sub len {len}"), &diff, &want);
        let sq = ok(da
            .iter()
            .zip(da.iter())
            .map(|(x, y)| x * y)
            .collect(&device));
        let want: Vec<f32> = a.iter().map(|x| x * x).collect();
        assert_bits_eq(&format!("self-zip len {len}"), &sq, &want);
        assert_eq!(ok(da.to_vec()), a);
    }
}

#[test]
fn norms_as_in_the_spec() {
    let device = device();
    let xs = ok(device.upload(&vec![3.0f32; 1 << 20]));
    let ys = ok(device.upload(&vec![4.0f32; 1 << 20]));
    let norms: Vec<f32> = ok(xs
        .zip(ys)
        .map(|(x, y)| (x * x + y * y).sqrt())
        .collect(&device));
    assert!(norms.iter().all(|&n| n == 5.0));
}

#[test]
fn enumerate_select_and_float_methods() {
    let device = device();
    let mut rng = rng("methods");
    for len in LENGTHS {
        let a = random(&mut rng, len, -100f32, 100.0);
        let da = ok(device.upload(&a));
        let got = ok((&da)
            .enumerate()
            .map(|(i, x)| {
                let fi = i.cast::<f32>();
                let y = select(x.lt(0.0), -x, x * 2.0);
                let z = (y.sqrt() + x.abs().floor() - x.ceil() + x.round() * x.trunc())
                    .max(fi * 0.5)
                    .min(1e4)
                    .clamp(-3.0, 5e3);
                select(i.ge(2) & !x.is_nan(), z, fi)
            })
            .collect(&device));
        let want: Vec<f32> = a
            .iter()
            .enumerate()
            .map(|(i, &x)| {
                let fi = i as f32;
                let y = if x < 0.0 { -x } else { x * 2.0 };
                let z = (y.sqrt() + x.abs().floor() - x.ceil() + x.round() * x.trunc())
                    .max(fi * 0.5)
                    .min(1e4)
                    .clamp(-3.0, 5e3);
                if i >= 2 && !x.is_nan() { z } else { fi }
            })
            .collect();
        assert_bits_eq(&format!("methods len {len}"), &got, &want);
    }
}

#[test]
fn transcendental_functions_within_two_ulp() {
    let device = device();
    let mut rng = rng("transcendental");
    let a = random(&mut rng, 100_003, -20f32, 20.0);
    let da = ok(device.upload(&a));
    let got = ok((&da).map(|x| x.exp() + x.sin() * x.tanh()).collect(&device));
    // Compare each function on its own, where ulps mean something.
    let exp = ok((&da).map(|x| x.exp()).collect(&device));
    let sin = ok((&da).map(|x| x.sin()).collect(&device));
    for (i, &x) in a.iter().enumerate() {
        for (name, g, w) in [
            ("exp", exp[i], (f64::from(x)).exp() as f32),
            ("sin", sin[i], (f64::from(x)).sin() as f32),
        ] {
            let ulp = (w.abs() * f32::EPSILON).max(f32::MIN_POSITIVE);
            assert!(
                (g - w).abs() <= 2.0 * ulp,
                "{name}({x}) = {g}, want {w} within 2 ulp"
            );
        }
        assert!(got[i].is_finite());
    }
}

#[test]
fn integer_chains_wrap_shift_and_divide_like_rust() {
    let device = device();
    let mut rng = rng("integers");
    for len in LENGTHS {
        let a = random(&mut rng, len, i32::MIN, i32::MAX);
        let b = random(&mut rng, len, 1u32, 31);
        let (da, db) = (ok(device.upload(&a)), ok(device.upload(&b)));
        let d = -7i32;
        let got = ok((&da)
            .zip(&db)
            .map(move |(x, s)| {
                let w = x * 31 + x; // wraps
                let sh = (w << s) ^ (x >> 3u32) | (x & 0xff);
                sh / d + (x % 1000) - (!x >> s.cast::<u32>())
            })
            .collect(&device));
        let want: Vec<i32> = (0..len)
            .map(|i| {
                let (x, s) = (a[i], b[i]);
                let w = x.wrapping_mul(31).wrapping_add(x);
                let sh = (w.wrapping_shl(s)) ^ (x >> 3) | (x & 0xff);
                (sh / d)
                    .wrapping_add(x % 1000)
                    .wrapping_sub((!x).wrapping_shr(s))
            })
            .collect();
        assert_eq!(got, want, "integers len {len}");
        // Index arithmetic in usize and casts between types.
        let got = ok((&db)
            .enumerate()
            .map(|(i, s)| (i * 3 + s.cast::<usize>()).cast::<u8>().cast::<u64>())
            .collect(&device));
        let want: Vec<u64> = b
            .iter()
            .enumerate()
            .map(|(i, &s)| u64::from((i * 3 + s as usize) as u8))
            .collect();
        assert_eq!(got, want, "index casts len {len}");
    }
}

#[test]
fn other_element_types() {
    let device = device();
    let mut rng = rng("types");
    for len in LENGTHS {
        let a = random(&mut rng, len, -1e6f64, 1e6);
        let da = ok(device.upload(&a));
        let got = ok((&da).map(|x| x * x / 3.0 + 1.0).collect(&device));
        let want: Vec<f64> = a.iter().map(|x| x * x / 3.0 + 1.0).collect();
        assert_eq!(
            got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            want.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            "f64 len {len}"
        );

        let h: Vec<f16> = random(&mut rng, len, -100f32, 100.0)
            .into_iter()
            .map(f16::from_f32)
            .collect();
        let dh = ok(device.upload(&h));
        let two = f16::from_f32(2.0);
        let got = ok((&dh).map(move |x| x * two + x).collect(&device));
        let want: Vec<f16> = h.iter().map(|&x| x * two + x).collect();
        assert_eq!(
            got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            want.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            "f16 len {len}"
        );

        let flags = ok((&da).map(|x| x.gt(0.0)).collect(&device));
        let want: Vec<bool> = a.iter().map(|&x| x > 0.0).collect();
        assert_eq!(flags, want, "bool len {len}");

        // A chain over bools, and a materialized vector feeding another chain.
        let dflags = ok((&da).map(|x| x.gt(0.0)).materialize(&device));
        assert_eq!(dflags.len(), len);
        let back = ok((&dflags)
            .zip(&da)
            .map(|(f, x)| select(f & x.lt(1e5), x, 0.0))
            .collect(&device));
        let want: Vec<f64> = a
            .iter()
            .map(|&x| if x > 0.0 && x < 1e5 { x } else { 0.0 })
            .collect();
        assert_eq!(back, want, "bool chain len {len}");
    }
}

/// Inputs of different widths in one chain: each moves in runs as long as the widest
/// type's 16-byte vector (two elements), so narrow inputs take 2- and 4-byte vectors.
#[test]
fn mixed_element_widths_in_one_chain() {
    let device = device();
    let mut rng = rng("mixed");
    for len in LENGTHS {
        let bytes = random(&mut rng, len, 0u8, 255);
        let wide = random(&mut rng, len, -1e6f64, 1e6);
        let shorts = random(&mut rng, len, -3000i16, 3000);
        let (db, dw, ds) = (
            ok(device.upload(&bytes)),
            ok(device.upload(&wide)),
            ok(device.upload(&shorts)),
        );
        let got = ok((&db)
            .zip(&dw)
            .zip(&ds)
            .map(|((b, w), s)| (b.cast::<f64>() + w * s.cast::<f64>()).cast::<f32>())
            .collect(&device));
        let want: Vec<f32> = bytes
            .iter()
            .zip(&wide)
            .zip(&shorts)
            .map(|((&b, &w), &s)| (f64::from(b) + w * f64::from(s)) as f32)
            .collect();
        assert_bits_eq(&format!("mixed len {len}"), &got, &want);
        let got = ok((&ds)
            .zip(&db)
            .map(|(s, b)| s ^ b.cast::<i16>())
            .collect(&device));
        let want: Vec<i16> = shorts
            .iter()
            .zip(&bytes)
            .map(|(&s, &b)| s ^ i16::from(b))
            .collect();
        assert_eq!(got, want, "i16 ^ u8 len {len}");
    }
}

#[test]
fn host_control_flow_and_captured_values_pick_what_is_traced() {
    let device = device();
    let a: Vec<f32> = (0..1000).map(|i| i as f32 - 500.0).collect();
    let da = ok(device.upload(&a));
    for negate in [false, true] {
        for scale in [0.5f32, 3.0] {
            let got = ok((&da)
                .map(move |x| if negate { -x * scale } else { x * scale })
                .collect(&device));
            let want: Vec<f32> = a
                .iter()
                .map(|&x| if negate { -x * scale } else { x * scale })
                .collect();
            assert_bits_eq(&format!("negate {negate} scale {scale}"), &got, &want);
        }
    }
}

#[test]
fn every_tuning_visits_every_element_once() {
    let device = device();
    let mut rng = rng("tunings");
    let lens = [0usize, 1, 3, 31, 32, 33, 255, 1000, 4099, 70_001];
    for (layout, vector_bytes) in [
        (Layout::Consecutive, 0u32),
        (Layout::Consecutive, 16),
        (Layout::WarpStrided, 0),
        (Layout::WarpStrided, 8),
        (Layout::WarpStrided, 16),
    ] {
        for bytes_per_thread in [4u32, 8, 16, 32, 64] {
            for (block, blocks_per_sm) in [(32u32, 1u32), (256, 4), (128, 2)] {
                let tuning = Tuning {
                    block,
                    blocks_per_sm,
                    bytes_per_thread,
                    layout,
                    vector_bytes,
                };
                ok(device.set_tuning(tuning));
                for &len in &lens {
                    let a = random(&mut rng, len, -1e3f32, 1e3);
                    let da = ok(device.upload(&a));
                    let got = ok((&da)
                        .enumerate()
                        .map(|(i, x)| x + i.cast::<f32>())
                        .collect(&device));
                    let want: Vec<f32> = a.iter().enumerate().map(|(i, x)| x + i as f32).collect();
                    assert_bits_eq(&format!("{tuning:?} len {len}"), &got, &want);
                    let s = ok((&da).map(|x| x.cast::<i64>()).sum());
                    let want: i64 = a.iter().map(|&x| x as i64).sum();
                    assert_eq!(s, want, "{tuning:?} len {len} sum");
                }
            }
        }
    }
}

#[test]
fn each_kind_of_kernel_has_its_own_default_tuning() {
    let device = device();
    assert_eq!(device.map_tuning(), Tuning::for_maps());
    assert_eq!(device.reduction_tuning(), Tuning::for_reductions());
    assert_ne!(Tuning::for_maps(), Tuning::for_reductions());
    let mine = Tuning {
        block: 64,
        ..Tuning::default()
    };
    ok(device.set_tuning(mine));
    assert_eq!(device.map_tuning(), mine);
    assert_eq!(device.reduction_tuning(), mine);
    assert_eq!(device.tuning(), mine);
    device.reset_tuning();
    assert_eq!(device.map_tuning(), Tuning::for_maps());
    assert_eq!(device.tuning(), Tuning::default());
}
