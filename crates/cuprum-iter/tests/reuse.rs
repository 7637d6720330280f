//! Long chains and repeated calls: results stay bit-identical to plain Rust for chains of
//! thousands of operations; a repeated call replays its traces and reuses its kernels
//! (`GpuDevice::chain_stats` counts recorded traces, replays and generated kernels); calls
//! of the same closures whose graphs differ (a captured count, a captured `bool`, captured
//! values that coincide, aliased inputs) are never served the other's kernels; and a chain
//! of 20,000 steps (about 45,700 traced operations) is recorded and replayed in well under a
//! second in a debug build.

mod common;

use std::time::Instant;

use common::{assert_bits_eq, device, ok, random, rng};
use cuprum_iter::ChainStats;
use cuprum_iter::prelude::*;
use cuprum_runtime::BackendKind;

/// `after - before` of the counters (times left out).
fn counts(before: ChainStats, after: ChainStats) -> (u64, u64, u64) {
    (
        after.traces - before.traces,
        after.replays - before.replays,
        after.kernels_generated - before.kernels_generated,
    )
}

/// Operation `i` of a long float chain over `y` and a second input `z`, with host value `s`:
/// each is exact IEEE arithmetic (or a choice), so device and host agree bit for bit.
fn float_step<T: FloatOps>(y: T, z: T, i: usize, s: T) -> T {
    match i % 7 {
        0 => y.mul(T::of(0.999)).add(z.mul(T::of(0.5))),
        1 => y.min(T::of(100.0)).max(T::of(-100.0)),
        2 => y.fma(s, T::of(0.25)),
        3 => y.pick_lt(T::of(0.0), T::of(1.5), T::of(-0.75)),
        4 => y.sub(s),
        5 => y.abs_sqrt_plus(z),
        _ => y.neg().add(z),
    }
}

/// The operations of [`float_step`], once for `Expr<f32>` and once for `f32`.
trait FloatOps: Copy {
    fn of(v: f32) -> Self;
    fn add(self, o: Self) -> Self;
    fn sub(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    fn min(self, o: Self) -> Self;
    fn max(self, o: Self) -> Self;
    fn neg(self) -> Self;
    fn fma(self, a: Self, b: Self) -> Self;
    /// `if self < t { self * a } else { self + b }`.
    fn pick_lt(self, t: Self, a: Self, b: Self) -> Self;
    /// `sqrt(|self|) + z`.
    fn abs_sqrt_plus(self, z: Self) -> Self;
}

impl FloatOps for f32 {
    fn of(v: f32) -> Self {
        v
    }
    fn add(self, o: Self) -> Self {
        self + o
    }
    fn sub(self, o: Self) -> Self {
        self - o
    }
    fn mul(self, o: Self) -> Self {
        self * o
    }
    fn min(self, o: Self) -> Self {
        f32::min(self, o)
    }
    fn max(self, o: Self) -> Self {
        f32::max(self, o)
    }
    fn neg(self) -> Self {
        -self
    }
    fn fma(self, a: Self, b: Self) -> Self {
        f32::mul_add(self, a, b)
    }
    fn pick_lt(self, t: Self, a: Self, b: Self) -> Self {
        if self < t { self * a } else { self + b }
    }
    fn abs_sqrt_plus(self, z: Self) -> Self {
        self.abs().sqrt() + z
    }
}

impl FloatOps for Expr<f32> {
    fn of(v: f32) -> Self {
        Expr::lit(v)
    }
    fn add(self, o: Self) -> Self {
        self + o
    }
    fn sub(self, o: Self) -> Self {
        self - o
    }
    fn mul(self, o: Self) -> Self {
        self * o
    }
    fn min(self, o: Self) -> Self {
        Expr::min(self, o)
    }
    fn max(self, o: Self) -> Self {
        Expr::max(self, o)
    }
    fn neg(self) -> Self {
        -self
    }
    fn fma(self, a: Self, b: Self) -> Self {
        self.mul_add(a, b)
    }
    fn pick_lt(self, t: Self, a: Self, b: Self) -> Self {
        select(self.lt(t), self * a, self + b)
    }
    fn abs_sqrt_plus(self, z: Self) -> Self {
        self.abs().sqrt() + z
    }
}

/// Operation `i` of a long integer chain (wrapping, so exact on both sides).
fn int_host(y: u32, x: u32, i: usize, s: u32) -> u32 {
    match i % 4 {
        0 => y.wrapping_mul(31).wrapping_add(x),
        1 => y ^ (y >> 3),
        2 => y.wrapping_add(s),
        _ => (y << 5) | (x & 0xff),
    }
}

fn int_traced(y: Expr<u32>, x: Expr<u32>, i: usize, s: u32) -> Expr<u32> {
    match i % 4 {
        0 => y * 31 + x,
        1 => y ^ (y >> 3u32),
        2 => y + s,
        _ => (y << 5u32) | (x & 0xff),
    }
}

fn float_chain(steps: usize, s: f32) -> impl Fn((Expr<f32>, Expr<f32>)) -> Expr<f32> {
    move |(x, z)| (0..steps).fold(x, |y, i| float_step(y, z, i, Expr::lit(s)))
}

fn float_want(a: &[f32], b: &[f32], steps: usize, s: f32) -> Vec<f32> {
    a.iter()
        .zip(b)
        .map(|(&x, &z)| (0..steps).fold(x, |y, i| float_step(y, z, i, s)))
        .collect()
}

#[test]
fn long_chains_match_plain_rust_bit_for_bit() {
    let device = device();
    let mut rng = rng("long_chains");
    let n = 1000 + 37;
    let steps = 2_000;
    let a = random(&mut rng, n, -4f32, 4.0);
    let b = random(&mut rng, n, -1f32, 1.0);
    let (da, db) = (ok(device.upload(&a)), ok(device.upload(&b)));
    // Twice: recorded, then replayed with another host value.
    for s in [0.75f32, -1.25] {
        let got = ok((&da).zip(&db).map(float_chain(steps, s)).collect(&device));
        assert_bits_eq(
            &format!("{steps} float operations, s = {s}"),
            &got,
            &float_want(&a, &b, steps, s),
        );
    }

    let x: Vec<u32> = random(&mut rng, n, 0u32, u32::MAX);
    let dx = ok(device.upload(&x));
    for s in [7u32, 0x9e37_79b9] {
        let chain = |y: Expr<u32>| (0..steps).fold(y, |acc, i| int_traced(acc, y, i, s));
        let host = |y: u32| (0..steps).fold(y, |acc, i| int_host(acc, y, i, s));
        let want: Vec<u32> = x.iter().map(|&y| host(y)).collect();
        assert_eq!(ok((&dx).map(chain).collect(&device)), want, "s = {s}");
        // Wrapping sums are exact in any order.
        let sum = want.iter().fold(0u32, |t, &v| t.wrapping_add(v));
        assert_eq!(ok((&dx).map(chain).sum()), sum, "sum, s = {s}");
        // The filter keeps the order; every survivor checked.
        let kept: Vec<u32> = want.iter().copied().filter(|v| v % 3 == 0).collect();
        let got = ok((&dx).map(chain).filter(|v| (v % 3).eq(0)).collect(&device));
        assert_eq!(got, kept, "filter, s = {s}");
    }
}

#[test]
fn a_repeated_chain_is_replayed_not_traced_or_generated() {
    let device = device();
    let mut rng = rng("repeated_chain");
    let n = 517;
    let xs = random(&mut rng, n, -2f32, 2.0);
    let ys = random(&mut rng, n, -2f32, 2.0);
    let (dx, dy) = (ok(device.upload(&xs)), ok(device.upload(&ys)));
    let mut after_first = None;
    for i in 0..1000 {
        // Another captured value every call: a kernel parameter.
        let s = i as f32 * 0.25 - 7.0;
        let got = ok((&dx).zip(&dy).map(move |(x, y)| x * y + s).collect(&device));
        let want: Vec<f32> = xs.iter().zip(&ys).map(|(x, y)| x * y + s).collect();
        assert_bits_eq(&format!("call {i}"), &got, &want);
        if i == 0 {
            after_first = Some(device.chain_stats());
        }
    }
    let first = after_first.unwrap_or_default();
    assert_eq!(first.traces, 1, "the first call records");
    assert_eq!(first.kernels_generated, 1, "and generates its kernel");
    let now = device.chain_stats();
    assert_eq!(
        counts(first, now),
        (0, 999, 0),
        "then 999 calls replay: nothing recorded, nothing generated"
    );
    assert_eq!(
        now.kernels_reused - first.kernels_reused,
        999,
        "and launch the first call's kernel without looking it up"
    );
    assert_eq!(device.cached_kernels(), 1);
}

#[test]
fn every_terminal_replays_its_second_call() {
    let device = device();
    let mut rng = rng("every_terminal");
    let n = 300;
    let a = random(&mut rng, n, -50i32, 50);
    let da = ok(device.upload(&a));
    let positive = |t: i32| a.iter().copied().filter(move |&x| x > t);
    for t in [3i32, -7] {
        let before = device.chain_stats();
        let filtered = ok((&da).filter(move |x| x.gt(t)).collect(&device));
        assert_eq!(filtered, positive(t).collect::<Vec<_>>());
        let sum = ok((&da).map(move |x| x * 2 + t).sum());
        assert_eq!(sum, a.iter().map(|x| x * 2 + t).sum::<i32>());
        assert_eq!(ok((&da).filter(move |x| x.gt(t)).min()), positive(t).min());
        assert_eq!(ok((&da).filter(move |x| x.gt(t)).max()), positive(t).max());
        assert_eq!(
            ok((&da).reduce(i32::MIN, move |p, q| p.max(q).max(t))),
            a.iter().copied().fold(i32::MIN, |p, q| p.max(q).max(t))
        );
        assert_eq!(
            ok((&da).filter(move |x| x.gt(t)).count()),
            positive(t).count()
        );
        assert_eq!(ok((&da).map(move |x| x + t).count()), n);
        let on_device = ok((&da).map(move |x| x - t).sum_on_device());
        assert_eq!(
            ok(on_device.to_vec()),
            vec![a.iter().map(|x| x - t).sum::<i32>()]
        );
        let (traces, replays, generated) = counts(before, device.chain_stats());
        if t == 3 {
            assert!(
                traces >= 8 && generated >= 8,
                "{traces} traces {generated} kernels"
            );
        } else {
            assert_eq!(
                (traces, generated),
                (0, 0),
                "the second round reuses everything"
            );
            // One trace per chain, one more per traced combining function.
            assert_eq!(replays, 8 + 5);
        }
    }
}

/// A chain whose graph depends on host values: `steps` operations, each chosen by `flip`.
fn stepped(v: &GpuVec<f32>, steps: usize, flip: bool, device: &GpuDevice) -> Vec<f32> {
    ok(v.map(move |x| {
        let mut y = x;
        for _ in 0..steps {
            y = if flip { y * 1.5 - 1.0 } else { y + 0.5 };
        }
        y
    })
    .collect(device))
}

fn stepped_host(v: &[f32], steps: usize, flip: bool) -> Vec<f32> {
    v.iter()
        .map(|&x| (0..steps).fold(x, |y, _| if flip { y * 1.5 - 1.0 } else { y + 0.5 }))
        .collect()
}

#[test]
fn chains_whose_graphs_differ_are_not_confused() {
    let device = device();
    let mut rng = rng("graphs_differ");
    let n = 333;
    let a = random(&mut rng, n, -3f32, 3.0);
    let b = random(&mut rng, n, -3f32, 3.0);
    let (da, db) = (ok(device.upload(&a)), ok(device.upload(&b)));

    // A captured count and a captured `bool` shape the graph: each change is traced anew.
    let mut last = device.chain_stats();
    for (steps, flip, replays) in [
        (3, false, false),
        (5, false, false),
        (3, false, false),
        (3, true, false),
        (3, true, true),
        (0, true, false),
        (0, false, true),
    ] {
        let what = format!("{steps} steps, flip {flip}");
        let got = stepped(&da, steps, flip, &device);
        assert_bits_eq(&what, &got, &stepped_host(&a, steps, flip));
        let now = device.chain_stats();
        let (traces, replayed, _) = counts(last, now);
        assert_eq!(
            (traces, replayed),
            (u64::from(!replays), u64::from(replays)),
            "{what}"
        );
        last = now;
    }

    // The same nodes, another root.
    for pick in [true, false, true] {
        let got = ok((&da)
            .map(move |x| {
                let (p, q) = (x + 1.0, x * 2.0);
                if pick { p } else { q }
            })
            .collect(&device));
        let want: Vec<f32> = a
            .iter()
            .map(|x| if pick { x + 1.0 } else { x * 2.0 })
            .collect();
        assert_bits_eq(&format!("pick {pick}"), &got, &want);
    }

    // A closure value that coincides with the reduction's identity shares its parameter:
    // another kernel, and the old one never gets the new values.
    let ints: Vec<u32> = random(&mut rng, n, 0u32, 1000);
    let di = ok(device.upload(&ints));
    for (c, reused) in [(0u32, false), (5, false), (0, false), (9, false), (7, true)] {
        let before = device.chain_stats();
        let got = ok((&di).map(move |x| x + c).reduce(0u32, |p, q| p + q));
        let want = ints.iter().map(|x| x + c).sum::<u32>();
        assert_eq!(got, want, "c = {c}");
        let reused_now = device.chain_stats().kernels_reused - before.kernels_reused;
        assert_eq!(reused_now, if reused { 2 } else { 0 }, "c = {c}");
    }

    // The same chain type over aliased inputs: one input slot instead of two.
    let add =
        |p: &GpuVec<f32>, q: &GpuVec<f32>| ok(p.zip(q).map(|(x, y)| x * 2.0 + y).collect(&device));
    for (p, q, hp, hq) in [
        (&da, &db, &a, &b),
        (&da, &da, &a, &a),
        (&db, &db, &b, &b),
        (&da, &db, &a, &b),
    ] {
        let want: Vec<f32> = hp.iter().zip(hq).map(|(x, y)| x * 2.0 + y).collect();
        assert_bits_eq("aliased zip", &add(p, q), &want);
    }
}

/// One generic function, two closures: each keeps its own reusable trace.
fn apply<F: Fn(Expr<f32>) -> Expr<f32>>(v: &GpuVec<f32>, f: F, device: &GpuDevice) -> Vec<f32> {
    ok(v.map(f).collect(device))
}

#[test]
fn closures_through_one_generic_function_keep_their_own_traces() {
    let device = device();
    let a: Vec<f32> = (0..100).map(|i| i as f32 * 0.5).collect();
    let da = ok(device.upload(&a));
    let mut after_first_round = None;
    for round in 0..4 {
        let plus = apply(&da, |x| x + 1.0, &device);
        let times = apply(&da, |x| x * 3.0, &device);
        assert_bits_eq(
            "plus",
            &plus,
            &a.iter().map(|x| x + 1.0).collect::<Vec<_>>(),
        );
        assert_bits_eq(
            "times",
            &times,
            &a.iter().map(|x| x * 3.0).collect::<Vec<_>>(),
        );
        if round == 0 {
            after_first_round = Some(device.chain_stats());
        }
    }
    let first = after_first_round.unwrap_or_default();
    assert_eq!(counts(first, device.chain_stats()), (0, 6, 0));
}

#[test]
fn twenty_thousand_operations_trace_and_replay_quickly() {
    let device = device();
    // 20,000 steps are about 45,700 traced operations. On a GPU the driver's compiler would
    // take most of the time for a kernel that long; the host's side is what this measures,
    // and the emulator shows it.
    let gpu = device.context().backend() == BackendKind::Cuda;
    let steps = if gpu { 2_000 } else { 20_000 };
    let a = [0.5f32, -1.25, 3.0];
    let b = [0.25f32, 0.75, -2.0];
    let (da, db) = (ok(device.upload(&a)), ok(device.upload(&b)));
    let start = Instant::now();
    // (Host values unlike the chain's own constants, which they would share a node with.)
    for s in [0.625f32, -0.375] {
        let got = ok((&da).zip(&db).map(float_chain(steps, s)).collect(&device));
        assert_bits_eq(
            &format!("{steps} operations, s = {s}"),
            &got,
            &float_want(&a, &b, steps, s),
        );
    }
    let stats = device.chain_stats();
    assert_eq!(
        (stats.traces, stats.replays, stats.kernels_generated),
        (1, 1, 1)
    );
    eprintln!(
        "{steps} operations, recorded and replayed: {:?} (trace {:?}, generate {:?}, load {:?})",
        start.elapsed(),
        stats.trace_time,
        stats.generate_time,
        stats.load_time
    );
}
