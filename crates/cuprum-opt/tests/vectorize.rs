//! Consecutive global loads and stores merged into vector accesses: what merges (4-wide,
//! 2-wide, f64 pairs), what must not (unaligned index, an aliasing store, a barrier, `bool`,
//! control flow in between, a check between stores), and that the emulator sees exactly the
//! same behaviour before and after on random data.

mod common;

use common::{K, has, passes, same_behaviour, same_outcome};
use cuprum_ir::*;

use ScalarType as S;

const T: u32 = 96;

/// The passes under test: the merge, then dead code (the unused scalar addresses).
fn vec_passes() -> Vec<cuprum_opt::Pass> {
    passes(&["vectorize", "dce"])
}

/// `i = global id; if i < len(out) / lanes { j = lanes * i + shift; out[j + k] = f(x[j + k])
/// for k < lanes }`, every access checked right before it as the front end does, loads
/// first (`load_first`) or interleaved with the stores.
fn kernel(elem: S, lanes: u64, shift: u64, access: SliceAccess, load_first: bool) -> Kernel {
    let mut k = K::new("k");
    let x = k.slice("x", elem, access);
    let out = k.slice("out", elem, SliceAccess::Disjoint);
    let i = k.global_id();
    let len = k.op(Op::SliceLen(out));
    let m = k.u64(lanes);
    let q = k.bin(BinaryOp::Div, len, m);
    let ok = k.cmp(CmpOp::Lt, i, q);
    k.if_else(
        ok,
        |k| {
            let m = k.u64(lanes);
            let j = k.mul(m, i);
            let sh = k.u64(shift);
            let j = k.add(j, sh);
            let idx: Vec<Value> = (0..lanes)
                .map(|d| {
                    let d = k.u64(d);
                    k.add(j, d)
                })
                .collect();
            let mut vals = Vec::new();
            for (n, &ix) in idx.iter().enumerate() {
                k.bounds_check(x, ix);
                let v = k.load(x, elem, ix);
                if load_first {
                    vals.push(v);
                } else {
                    k.bounds_check(out, idx[n]);
                    k.store(out, idx[n], v);
                }
            }
            for (n, v) in vals.into_iter().enumerate() {
                k.bounds_check(out, idx[n]);
                k.store(out, idx[n], v);
            }
        },
        |_| {},
    );
    k.finish()
}

fn lens() -> [u64; 4] {
    [4 * T as u64, 4 * T as u64 + 3, 2 * T as u64 + 1, 37]
}

#[test]
fn four_f32_loads_and_stores_become_v4() {
    let kernel = kernel(S::F32, 4, 0, SliceAccess::ReadOnly, true);
    for len in lens() {
        let opt = same_behaviour(&kernel, &vec_passes(), T, 32, len);
        assert!(has(&opt, "load.Global.v4.f32"), "{}", print_kernel(&opt));
        assert!(has(&opt, "store.Global.v4"), "{}", print_kernel(&opt));
        assert!(!has(&opt, "load.Global.f32"), "{}", print_kernel(&opt));
        // The checks of `out` are proven by `i < len(out) / 4` and go; those of `x` stay.
        assert_eq!(print_kernel(&opt).matches("trap").count(), 4);
    }
}

#[test]
fn the_whole_pipeline_vectorizes_and_keeps_behaviour() {
    let kernel = kernel(S::F32, 4, 0, SliceAccess::ReadOnly, true);
    let all: Vec<cuprum_opt::Pass> = cuprum_opt::PASSES.to_vec();
    for len in lens() {
        let opt = same_behaviour(&kernel, &all, T, 32, len);
        assert!(has(&opt, "load.Global.v4.f32"), "{}", print_kernel(&opt));
        assert!(has(&opt, "store.Global.v4"), "{}", print_kernel(&opt));
    }
}

#[test]
fn interleaved_loads_and_stores_merge_the_loads_only_where_exact() {
    // x read-only: the loads may move past the stores of `out`; the stores are separated by
    // the checks of x, which stay, so they stay scalar.
    let kernel = kernel(S::F32, 4, 0, SliceAccess::ReadOnly, false);
    for len in lens() {
        let opt = same_behaviour(&kernel, &vec_passes(), T, 32, len);
        assert!(!has(&opt, "store.Global.v"), "{}", print_kernel(&opt));
    }
}

#[test]
fn a_failing_check_between_loads_still_traps_the_same_way() {
    // j = 4 i + 4 (still aligned): the checks of the last threads fail, and the first
    // failing one must still be the one reported.
    let kernel = kernel(S::F32, 4, 4, SliceAccess::ReadOnly, true);
    for len in lens() {
        let opt = same_outcome(&kernel, &vec_passes(), T, 32, len);
        assert!(has(&opt, "load.Global.v4.f32"), "{}", print_kernel(&opt));
    }
}

#[test]
fn an_index_not_a_multiple_of_four_is_not_a_v4() {
    // j = 4 i + 1: the elements j..j+3 straddle two 16-byte lines. (j + 1, j + 2) is an
    // aligned pair and may become a v2.
    let kernel = kernel(S::F32, 4, 1, SliceAccess::ReadOnly, true);
    for len in lens() {
        let opt = same_outcome(&kernel, &vec_passes(), T, 32, len);
        assert!(!has(&opt, ".v4"), "{}", print_kernel(&opt));
    }
}

#[test]
fn f64_quads_become_two_pairs() {
    let kernel = kernel(S::F64, 4, 0, SliceAccess::ReadOnly, true);
    for len in lens() {
        let opt = same_behaviour(&kernel, &vec_passes(), T, 32, len);
        let text = print_kernel(&opt);
        assert!(!text.contains(".v4"), "{text}");
        assert_eq!(text.matches("load.Global.v2.f64").count(), 2, "{text}");
        assert_eq!(text.matches("store.Global.v2").count(), 2, "{text}");
    }
}

#[test]
fn pairs_become_v2() {
    for elem in [S::F64, S::U32, S::F32] {
        let kernel = kernel(elem, 2, 0, SliceAccess::ReadOnly, true);
        for len in lens() {
            let opt = same_behaviour(&kernel, &vec_passes(), T, 32, len);
            let text = print_kernel(&opt);
            assert!(text.contains(&format!("load.Global.v2.{elem}")), "{text}");
            assert!(text.contains("store.Global.v2"), "{text}");
        }
    }
}

#[test]
fn bools_stay_scalar() {
    let kernel = kernel(S::Bool, 4, 0, SliceAccess::ReadOnly, true);
    for len in lens() {
        let opt = same_behaviour(&kernel, &vec_passes(), T, 32, len);
        assert!(!has(&opt, ".v"), "{}", print_kernel(&opt));
    }
}

/// `j = 4 i` (i < len / 4): loads x[j], x[j + 1], then `between`, then x[j + 2], x[j + 3];
/// out[j + k] = the loads. x is `access`.
fn split_loads(access: SliceAccess, between: impl FnOnce(&mut K, u32, Value)) -> Kernel {
    let mut k = K::new("k");
    let x = k.slice("x", S::U32, access);
    let out = k.slice("out", S::U32, SliceAccess::Disjoint);
    let i = k.global_id();
    let len = k.op(Op::SliceLen(out));
    let four = k.u64(4);
    let q = k.bin(BinaryOp::Div, len, four);
    let ok = k.cmp(CmpOp::Lt, i, q);
    let j = k.mul(four, i);
    let idx: Vec<Value> = (0..4)
        .map(|d| {
            let d = k.u64(d);
            k.add(j, d)
        })
        .collect();
    let mut between = Some(between);
    k.if_else(
        ok,
        |k| {
            let mut vals = Vec::new();
            for (n, &ix) in idx.iter().enumerate() {
                if n == 2
                    && let Some(f) = between.take()
                {
                    f(k, x, j);
                }
                k.bounds_check(x, ix);
                vals.push(k.load(x, S::U32, ix));
            }
            for (n, v) in vals.into_iter().enumerate() {
                k.bounds_check(out, idx[n]);
                k.store(out, idx[n], v);
            }
        },
        |_| {},
    );
    k.finish()
}

#[test]
fn a_store_to_the_loaded_slice_in_between_keeps_them_apart() {
    // x[j + 2] = 7 between the loads: the load of x[j + 2] must see it.
    let kernel = split_loads(SliceAccess::ReadWrite, |k, x, j| {
        let two = k.u64(2);
        let ix = k.add(j, two);
        let seven = k.c(Constant::u32(7));
        k.bounds_check(x, ix);
        k.store(x, ix, seven);
    });
    for len in lens() {
        let opt = same_behaviour(&kernel, &vec_passes(), T, 32, len);
        assert!(!has(&opt, "load.Global.v4"), "{}", print_kernel(&opt));
    }
}

#[test]
fn a_barrier_in_between_keeps_them_apart() {
    let kernel = split_loads(SliceAccess::ReadOnly, |k, _, _| k.b.push(Stmt::Barrier));
    // Every thread in range, so that all of them reach the barrier.
    for len in [4 * T as u64, 4 * T as u64 + 3] {
        let opt = same_behaviour(&kernel, &vec_passes(), T, 32, len);
        assert!(!has(&opt, "load.Global.v4"), "{}", print_kernel(&opt));
    }
}

#[test]
fn a_branch_in_between_keeps_them_apart() {
    let kernel = split_loads(SliceAccess::ReadOnly, |k, _, j| {
        let three = k.u64(3);
        let c = k.cmp(CmpOp::Lt, j, three);
        k.if_else(
            c,
            |k| {
                k.b.push(Stmt::Fence {
                    scope: Scope::Device,
                })
            },
            |_| {},
        );
    });
    for len in lens() {
        let opt = same_behaviour(&kernel, &vec_passes(), T, 32, len);
        assert!(!has(&opt, "load.Global.v4"), "{}", print_kernel(&opt));
    }
}

#[test]
fn nothing_merges_across_a_loop_or_if_boundary() {
    // x[j], x[j + 1] outside, x[j + 2], x[j + 3] inside an `if` (and a loop): no v4.
    for in_loop in [false, true] {
        let mut k = K::new("k");
        let x = k.slice("x", S::F32, SliceAccess::ReadOnly);
        let out = k.slice("out", S::F32, SliceAccess::Disjoint);
        let i = k.global_id();
        let len = k.op(Op::SliceLen(out));
        let four = k.u64(4);
        let q = k.bin(BinaryOp::Div, len, four);
        let ok = k.cmp(CmpOp::Lt, i, q);
        let j = k.mul(four, i);
        let idx: Vec<Value> = (0..4)
            .map(|d| {
                let d = k.u64(d);
                k.add(j, d)
            })
            .collect();
        k.if_else(
            ok,
            |k| {
                let mut vals = Vec::new();
                for &ix in &idx[..2] {
                    k.bounds_check(x, ix);
                    vals.push(k.load(x, S::F32, ix));
                }
                let inner = |k: &mut K| {
                    let mut v2 = Vec::new();
                    for &ix in &idx[2..] {
                        k.bounds_check(x, ix);
                        v2.push(k.load(x, S::F32, ix));
                    }
                    for (n, v) in vals.iter().chain(&v2).enumerate() {
                        k.bounds_check(out, idx[n]);
                        k.store(out, idx[n], *v);
                    }
                };
                if in_loop {
                    k.counted_loop(0, 1, 1, |k, _| inner(k));
                } else {
                    let t = k.c(Constant::bool(true));
                    k.if_else(t, inner, |_| {});
                }
            },
            |_| {},
        );
        let kernel = k.finish();
        for len in lens() {
            let opt = same_behaviour(&kernel, &vec_passes(), T, 32, len);
            // Each pair may merge on its own side; the stores (all inside) may merge too.
            assert!(!has(&opt, "load.Global.v4"), "{}", print_kernel(&opt));
        }
    }
}

#[test]
fn a_check_between_stores_keeps_them_scalar() {
    // out[j + k] = 1 for k < 4, with a check of another slice (y, not proven) before each.
    let mut k = K::new("k");
    let y = k.slice("y", S::F32, SliceAccess::ReadOnly);
    let out = k.slice("out", S::F32, SliceAccess::Disjoint);
    let i = k.global_id();
    let len = k.op(Op::SliceLen(out));
    let four = k.u64(4);
    let q = k.bin(BinaryOp::Div, len, four);
    let ok = k.cmp(CmpOp::Lt, i, q);
    k.if_else(
        ok,
        |k| {
            let four = k.u64(4);
            let j = k.mul(four, i);
            for d in 0..4 {
                let d = k.u64(d);
                let ix = k.add(j, d);
                k.bounds_check(y, ix);
                let one = k.f32(1.0);
                k.store(out, ix, one);
            }
        },
        |_| {},
    );
    let kernel = k.finish();
    for len in lens() {
        let opt = same_outcome(&kernel, &vec_passes(), T, 32, len);
        assert!(!has(&opt, "store.Global.v"), "{}", print_kernel(&opt));
    }
}
