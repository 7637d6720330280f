//! Proof that chains are fused and traced once: the context's launch and allocation
//! counters (`ctx.stats()`) around each terminal call, closures that count their own calls,
//! and the kernel cache (same structure: no new kernel; another captured value: no new
//! kernel and the new value is used; another operation: a new kernel).

mod common;

use std::cell::Cell;

use common::{device, ok, random, rng};
use cuprum_iter::prelude::*;
use cuprum_runtime::RuntimeStats;

/// Launches and allocations made by `f`.
fn cost<T>(device: &GpuDevice, f: impl FnOnce() -> T) -> (T, u64, u64) {
    let before: RuntimeStats = device.stats();
    let out = f();
    let after = device.stats();
    (
        out,
        after.launches - before.launches,
        after.allocations - before.allocations,
    )
}

#[test]
fn a_map_chain_is_one_launch_and_one_allocation() {
    let device = device();
    let mut rng = rng("fusion_map");
    let n = (1 << 20) + 7;
    let a = random(&mut rng, n, -1f32, 1.0);
    let b = random(&mut rng, n, -1f32, 1.0);
    let c = random(&mut rng, n, -1f32, 1.0);
    let (da, db, dc) = (
        ok(device.upload(&a)),
        ok(device.upload(&b)),
        ok(device.upload(&c)),
    );
    let (out, launches, allocations) = cost(&device, || {
        (&da)
            .zip(&db)
            .zip(&dc)
            .enumerate()
            .map(|(i, ((x, y), z))| (x * y + z, i))
            .map(|(v, i)| select(i.lt(10), 0.0, v.abs()))
            .map(|v| v.sqrt() * 2.0)
            .materialize(&device)
    });
    let out = ok(out);
    assert_eq!(
        (launches, allocations),
        (1, 1),
        "five adapters, one kernel, one buffer"
    );
    let got = ok(out.to_vec());
    for i in 0..n {
        let v = if i < 10 {
            0.0
        } else {
            (a[i] * b[i] + c[i]).abs()
        };
        assert_eq!(got[i].to_bits(), (v.sqrt() * 2.0).to_bits(), "element {i}");
    }
}

#[test]
fn reductions_are_two_launches_whatever_the_chain() {
    let device = device();
    let a: Vec<f32> = (0..100_000).map(|i| (i % 7) as f32).collect();
    let da = ok(device.upload(&a));
    let (s, launches, allocations) = cost(&device, || {
        (&da).zip(&da).map(|(x, y)| x * y).map(|v| v + 1.0).sum()
    });
    assert_eq!(ok(s), a.iter().map(|x| x * x + 1.0).sum::<f32>());
    assert_eq!(
        (launches, allocations),
        (2, 2),
        "partials pass + final step"
    );
    let (m, launches, allocations) = cost(&device, || (&da).filter(|x| x.gt(3.0)).min());
    assert_eq!(ok(m), Some(4.0));
    assert_eq!(
        (launches, allocations),
        (2, 3),
        "+1 buffer for the survivor count"
    );
    let (c, launches, allocations) = cost(&device, || (&da).map(|x| x * 2.0).count());
    assert_eq!(ok(c), a.len());
    assert_eq!((launches, allocations), (0, 0));
}

#[test]
fn filter_collect_is_a_count_pass_and_a_scatter_pass() {
    let device = device();
    let a: Vec<i32> = (0..300_001).collect();
    let da = ok(device.upload(&a));
    let (v, launches, allocations) = cost(&device, || {
        (&da)
            .map(|x| x * 3)
            .filter(|x| (x % 2).eq(0))
            .map(|x| x + 1)
            .collect(&device)
    });
    let want: Vec<i32> = a
        .iter()
        .map(|x| x * 3)
        .filter(|x| x % 2 == 0)
        .map(|x| x + 1)
        .collect();
    assert_eq!(ok(v), want);
    assert_eq!((launches, allocations), (2, 2), "counts buffer + output");
}

#[test]
fn closures_run_once_per_call_not_per_element() {
    let device = device();
    let da = ok(device.upload(&vec![2.0f32; 50_000]));
    let calls = Cell::new(0u32);
    let sum = ok((&da)
        .map(|x| {
            calls.set(calls.get() + 1);
            x * x
        })
        .sum());
    assert_eq!(sum, 200_000.0);
    assert_eq!(calls.get(), 1);
    let preds = Cell::new(0u32);
    let kept = ok((&da)
        .filter(|x| {
            preds.set(preds.get() + 1);
            x.gt(1.0)
        })
        .count());
    assert_eq!((kept, preds.get()), (50_000, 1));
}

#[test]
fn kernels_are_cached_by_their_ir_never_by_closure_identity() {
    let device = device();
    let a: Vec<f32> = (0..10_000).map(|i| i as f32).collect();
    let da = ok(device.upload(&a));
    let scale = |s: f32| ok((&da).map(move |x| x * s + 1.0).collect(&device));
    assert_eq!(scale(2.0)[3], 7.0);
    let kernels = device.cached_kernels();
    // Another captured value: the same kernel (it is a parameter), and the new value.
    assert_eq!(scale(3.0)[3], 10.0);
    assert_eq!(scale(-1.0)[3], -2.0);
    assert_eq!(device.cached_kernels(), kernels);
    // Literally the same structure in another closure: the same kernel.
    let again = ok((&da).map(|x| x * 5.0 + 1.0).collect(&device));
    assert_eq!(again[3], 16.0);
    assert_eq!(device.cached_kernels(), kernels);
    // Another operation: a new kernel, never the cached one.
    let other = ok((&da).map(|x| x * 5.0 - 1.0).collect(&device));
    assert_eq!(other[3], 14.0);
    assert_eq!(device.cached_kernels(), kernels + 1);
    // Captured values that coincide with another constant of the closure share one
    // parameter, which changes the kernel's structure: still the right kernel each time.
    for s in [1.0f32, 2.0, 1.0, 0.0, 1.0] {
        let got = ok((&da).map(move |x| x * s + 1.0).collect(&device));
        assert_eq!(got[3], 3.0 * s + 1.0, "scale {s}");
        let r = ok((&da).reduce(s, move |p, q| p.max(q).max(s)));
        assert_eq!(r, 9999f32.max(s), "reduce with identity {s}");
    }
    let kernels = device.cached_kernels();
    // Another element type: a new kernel too.
    let ints = ok(device.upload(&[1i32, 2, 3]));
    assert_eq!(
        ok(ints.map(|x| x * 5 + 1).collect(&device)),
        vec![6, 11, 16]
    );
    assert_eq!(device.cached_kernels(), kernels + 1);
}
