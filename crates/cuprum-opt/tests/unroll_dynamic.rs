//! Unrolling by four of counted loops with run-time trip counts: every trip count from 0 up,
//! per-lane trip counts in one warp, counters that wrap, a check failing in the middle of
//! the loop, alone and with the whole pipeline; and the loops that must stay as they are.

mod common;

use common::{K, passes, same_behaviour, same_outcome};
use cuprum_ir::*;

use ScalarType as S;

/// How the test loop is built.
#[derive(Clone, Copy)]
struct Shape {
    /// The counter's type, `U32` or `U64`.
    ty: ScalarType,
    /// The first value of the counter is `start + lane * spread` (`lane` = the global id).
    start: u64,
    spread: u64,
    end: u64,
    step: u64,
    /// Whether the step is computed (not a constant) so the pass cannot know it.
    runtime_step: bool,
    /// Whether the body loads `x[i]` with a bounds check (else it uses `i` itself).
    load: bool,
}

impl Shape {
    fn new(ty: ScalarType, end: u64, step: u64) -> Self {
        Self {
            ty,
            start: 0,
            spread: 1,
            end,
            step,
            runtime_step: false,
            load: true,
        }
    }
}

/// `i = start + id * spread; acc = 0; while i < end { acc = acc * 31 + x[i]; i += step }`,
/// then `y[2 id] = acc; y[2 id + 1] = i`.
fn strided(s: Shape) -> Kernel {
    let mut k = K::new("k");
    let x = k.slice("x", S::U32, SliceAccess::ReadOnly);
    let y = k.slice("y", S::U32, SliceAccess::Disjoint);
    let id = k.global_id();
    let c = |k: &mut K, v: u64| k.c(Constant::new(s.ty, v));
    let id_t = if s.ty == S::U64 { id } else { k.cast(id, s.ty) };
    let spread = c(&mut k, s.spread);
    let start = c(&mut k, s.start);
    let off = k.mul(id_t, spread);
    let first = k.add(start, off);
    let end = c(&mut k, s.end);
    let step = if s.runtime_step {
        // max(step, step): not a constant the pass can see without folding.
        let st = c(&mut k, s.step);
        k.bin(BinaryOp::Max, st, st)
    } else {
        c(&mut k, s.step)
    };
    let acc = k.b.var("acc", S::U32);
    let zero = k.u32(0);
    k.b.push(Stmt::WriteVar {
        var: acc,
        value: zero,
    });
    let var = k.b.var("i", s.ty);
    k.b.push(Stmt::WriteVar { var, value: first });
    k.b.begin_block();
    let i = k.op(Op::ReadVar(var));
    let more = k.cmp(CmpOp::Lt, i, end);
    k.if_else(more, |_| {}, |k| k.b.push(Stmt::Break));
    let v = if s.load {
        let idx = if s.ty == S::U64 { i } else { k.cast(i, S::U64) };
        k.bounds_check(x, idx);
        k.load(x, S::U32, idx)
    } else if s.ty == S::U64 {
        k.cast(i, S::U32)
    } else {
        i
    };
    let a = k.op(Op::ReadVar(acc));
    let thirty_one = k.u32(31);
    let m = k.mul(a, thirty_one);
    let sum = k.add(m, v);
    k.b.push(Stmt::WriteVar {
        var: acc,
        value: sum,
    });
    let next = k.add(i, step);
    k.b.push(Stmt::WriteVar { var, value: next });
    let body = k.b.end_block();
    k.b.push(Stmt::Loop { body });
    let two = k.u64(2);
    let one = k.u64(1);
    let at = k.mul(id, two);
    let r = k.op(Op::ReadVar(acc));
    k.store(y, at, r);
    let at1 = k.add(at, one);
    let last = k.op(Op::ReadVar(var));
    let last = if s.ty == S::U64 {
        k.cast(last, S::U32)
    } else {
        last
    };
    k.store(y, at1, last);
    k.finish()
}

/// How many loops the kernel has.
fn loops(kernel: &Kernel) -> usize {
    print_kernel(kernel).matches("loop {").count()
}

#[test]
fn every_trip_count_runs_the_same_iterations() {
    // One thread, start 0: trip counts 0, 1, 2, 3, 4, 5, 7, 8 and a big one, for both
    // counter types and a constant or computed step.
    for ty in [S::U32, S::U64] {
        for runtime_step in [false, true] {
            for trips in [0u64, 1, 2, 3, 4, 5, 7, 8, 301] {
                for step in [1u64, 3] {
                    let shape = Shape {
                        runtime_step,
                        ..Shape::new(ty, trips * step, step)
                    };
                    let kernel = strided(shape);
                    let opt = same_behaviour(&kernel, &passes(&["unroll_dynamic"]), 1, 1, 1024);
                    assert_eq!(loops(&opt), 2, "{}", print_kernel(&opt));
                }
            }
        }
    }
}

#[test]
fn lanes_with_different_trip_counts() {
    // 96 threads in warps of 32, lane l starting at 5 l: between 0 and 60 iterations.
    for ty in [S::U32, S::U64] {
        for step in [1u64, 2, 5] {
            for runtime_step in [false, true] {
                let shape = Shape {
                    spread: 5,
                    runtime_step,
                    ..Shape::new(ty, 300, step)
                };
                let opt =
                    same_behaviour(&strided(shape), &passes(&["unroll_dynamic"]), 96, 32, 512);
                assert_eq!(loops(&opt), 2);
            }
        }
    }
}

#[test]
fn counters_that_wrap_stay_exact() {
    // From 0xD000_0000 by 0x3000_0000 while below 0xF000_0000: the counter wraps to 0 after
    // the first iteration and runs 6 more; the guard must not let the unrolled loop skip a
    // test there.
    for runtime_step in [false, true] {
        let shape = Shape {
            start: 0xD000_0000,
            spread: 0,
            runtime_step,
            load: false,
            ..Shape::new(S::U32, 0xF000_0000, 0x3000_0000)
        };
        let opt = same_behaviour(&strided(shape), &passes(&["unroll_dynamic"]), 32, 32, 64);
        assert_eq!(loops(&opt), 2);
        // The same in u64, lanes starting one apart.
        let shape = Shape {
            ty: S::U64,
            start: 0xD000 << 48,
            spread: 1,
            end: 0xF000 << 48,
            step: 0x3000 << 48,
            runtime_step,
            load: false,
        };
        same_behaviour(&strided(shape), &passes(&["unroll_dynamic"]), 64, 32, 128);
    }
    // A step too large for four iterations to fit (a constant above MAX / 3) is left alone;
    // a computed one is unrolled with a guard that never passes.
    let huge = Shape {
        start: 1,
        spread: 0,
        load: false,
        ..Shape::new(S::U32, 0xB000_0000, 0x6000_0000)
    };
    let opt = same_behaviour(&strided(huge), &passes(&["unroll_dynamic"]), 32, 32, 64);
    assert_eq!(loops(&opt), 1);
    let opt = same_behaviour(
        &strided(Shape {
            runtime_step: true,
            ..huge
        }),
        &passes(&["unroll_dynamic"]),
        32,
        32,
        64,
    );
    assert_eq!(loops(&opt), 2);
}

#[test]
fn a_check_failing_in_the_middle_traps_at_the_same_index() {
    // x has 37 elements; the loop runs to 100 by 3: iteration 13 (i = 39) fails its check,
    // in the unrolled loop's fourth trip.
    for ty in [S::U32, S::U64] {
        for runtime_step in [false, true] {
            for len in [37u64, 1, 4, 12, 13] {
                let shape = Shape {
                    runtime_step,
                    ..Shape::new(ty, 100, 3)
                };
                let kernel = strided(shape);
                for p in [passes(&["unroll_dynamic"]), cuprum_opt::PASSES.to_vec()] {
                    let opt = same_outcome(&kernel, &p, 1, 1, len);
                    assert!(common::run(&opt, 0, 1, 1, len).is_err());
                }
            }
        }
    }
}

#[test]
fn the_whole_pipeline_gathers_the_four_checks_before_the_loads() {
    let kernel = strided(Shape {
        spread: 1,
        ..Shape::new(S::U64, 700, 32)
    });
    let opt = same_behaviour(&kernel, cuprum_opt::PASSES, 64, 32, 1024);
    let text = print_kernel(&opt);
    assert_eq!(loops(&opt), 2, "{text}");
    // In the first loop: the four checks, then the four loads.
    let first = &text[text.find("loop {").unwrap_or(0)..];
    let first = &first[..first[6..].find("loop {").map_or(first.len(), |e| e + 6)];
    let traps: Vec<usize> = first.match_indices("trap").map(|(i, _)| i).collect();
    let loads: Vec<usize> = first.match_indices("load.").map(|(i, _)| i).collect();
    assert_eq!((traps.len(), loads.len()), (4, 4), "{text}");
    assert!(traps[3] < loads[0], "{text}");
}

/// A loop as [`strided`] makes, with `extra` added to its body.
fn with_extra(extra: impl Fn(&mut K, Value)) -> Kernel {
    let mut k = K::new("k");
    let y = k.slice("y", S::U32, SliceAccess::Disjoint);
    let id = k.global_id();
    let var = k.b.var("i", S::U32);
    let zero = k.u32(0);
    let end = k.u32(40);
    let step = k.u32(1);
    k.b.push(Stmt::WriteVar { var, value: zero });
    k.b.begin_block();
    let i = k.op(Op::ReadVar(var));
    let more = k.cmp(CmpOp::Lt, i, end);
    k.if_else(more, |_| {}, |k| k.b.push(Stmt::Break));
    extra(&mut k, i);
    let next = k.add(i, step);
    k.b.push(Stmt::WriteVar { var, value: next });
    let body = k.b.end_block();
    k.b.push(Stmt::Loop { body });
    let last = k.op(Op::ReadVar(var));
    k.store(y, id, last);
    k.finish()
}

#[test]
fn loops_that_involve_other_threads_or_leave_early_stay() {
    let cases: Vec<(&str, Kernel)> = vec![
        ("barrier", with_extra(|k, _| k.b.push(Stmt::Barrier))),
        (
            "shuffle",
            with_extra(|k, i| {
                let one = k.u32(1);
                k.op(Op::Shuffle {
                    mode: ShuffleMode::Xor,
                    value: i,
                    lane: one,
                });
            }),
        ),
        (
            "break in a branch",
            with_extra(|k, i| {
                let ten = k.u32(10);
                let stop = k.cmp(CmpOp::Eq, i, ten);
                k.if_else(stop, |k| k.b.push(Stmt::Break), |_| {});
            }),
        ),
        (
            "a second write of the counter",
            with_extra(|k, i| {
                let var = Var::from_index(0);
                let two = k.u32(2);
                let j = k.add(i, two);
                k.b.push(Stmt::WriteVar { var, value: j });
            }),
        ),
        (
            "a nested loop",
            with_extra(|k, _| {
                k.b.begin_block();
                k.b.push(Stmt::Break);
                let body = k.b.end_block();
                k.b.push(Stmt::Loop { body });
            }),
        ),
    ];
    for (what, kernel) in cases {
        let mut opt = kernel.clone();
        cuprum_opt::run_passes(&mut opt, &passes(&["unroll_dynamic"]));
        assert_eq!(
            loops(&opt),
            loops(&kernel),
            "{what}: {}",
            print_kernel(&opt)
        );
    }
}
