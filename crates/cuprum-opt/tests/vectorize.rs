//! Consecutive global and shared loads and stores merged into vector accesses: what merges (4-wide,
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

/// A block stages 4 `u32`s per thread in a shared array (shared index `4 t + k + shift`,
/// shared array number `array` of two, so that its offset in the layout is not zero),
/// meets at a barrier, and each thread reads the 4 its neighbour `t + 1` (mod the block)
/// wrote, storing them to `out[4 i + k]`. `between` runs between the second and the third
/// shared load.
fn shared_exchange(
    shift: u32,
    array: u32,
    between: impl FnOnce(&mut K, u32, Value, u32, Value),
) -> Kernel {
    const BLOCK: u32 = 32;
    let mut k = K::new("k");
    let x = k.slice("x", S::U32, SliceAccess::ReadOnly);
    let out = k.slice("out", S::U32, SliceAccess::Disjoint);
    let decl = ArrayDecl {
        name: "tile".into(),
        elem: S::U32,
        len: 4 * BLOCK + 4,
    };
    let arrays = [k.b.shared_array(decl.clone()), k.b.shared_array(decl)];
    let tile = arrays[array as usize];
    let t = k.tid();
    let shared_addr = |k: &mut K, index: Value| {
        let base = k.op(Op::SharedAddr(tile));
        let four = k.u32(4);
        let off = k.mul(index, four);
        k.add(base, off)
    };
    let i = k.global_id();
    let four64 = k.u64(4);
    let j = k.mul(four64, i);
    let four = k.u32(4);
    let sh = k.u32(shift);
    let mine = k.mul(four, t);
    let mine = k.add(mine, sh);
    for d in 0..4 {
        let d64 = k.u64(d);
        let ix = k.add(j, d64);
        k.bounds_check(x, ix);
        let v = k.load(x, S::U32, ix);
        let d32 = k.u32(d as u32);
        let si = k.add(mine, d32);
        let addr = shared_addr(&mut k, si);
        k.b.push(Stmt::Store {
            space: AddressSpace::Shared,
            addr,
            value: v,
        });
    }
    k.b.push(Stmt::Barrier);
    let one = k.u32(1);
    let next = k.add(t, one);
    let block = k.u32(BLOCK);
    let next = k.bin(BinaryOp::Rem, next, block);
    let theirs = k.mul(four, next);
    let theirs = k.add(theirs, sh);
    let mut between = Some(between);
    let mut vals = Vec::new();
    for d in 0..4u32 {
        if d == 2
            && let Some(f) = between.take()
        {
            f(&mut k, tile, theirs, out, j);
        }
        let d32 = k.u32(d);
        let si = k.add(theirs, d32);
        let addr = shared_addr(&mut k, si);
        vals.push(k.op(Op::Load {
            space: AddressSpace::Shared,
            ty: S::U32,
            addr,
            eviction: cuprum_ir::Eviction::Normal,
        }));
    }
    for (d, v) in vals.into_iter().enumerate() {
        let d64 = k.u64(d as u64);
        let ix = k.add(j, d64);
        k.bounds_check(out, ix);
        k.store(out, ix, v);
    }
    k.finish()
}

#[test]
fn shared_loads_and_stores_of_aligned_quads_become_v4() {
    // In either shared array: both start at a 16-byte multiple of the layout.
    for array in [0, 1] {
        let kernel = shared_exchange(0, array, |_, _, _, _, _| {});
        // Whole blocks (a barrier in every thread), and the checks of `x` and `out` met.
        let opt = same_behaviour(&kernel, &vec_passes(), T, 32, 4 * T as u64);
        let text = print_kernel(&opt);
        assert!(has(&opt, "load.Shared.v4.u32"), "{text}");
        assert!(has(&opt, "store.Shared.v4"), "{text}");
        assert!(!has(&opt, "load.Shared.u32"), "{text}");
    }
}

#[test]
fn shared_quads_off_a_16_byte_boundary_become_pairs_where_aligned() {
    // Index 4 t + 2: byte offset 16 t + 8 is 8-byte aligned, so pairs at most.
    let kernel = shared_exchange(2, 1, |_, _, _, _, _| {});
    let opt = same_behaviour(&kernel, &vec_passes(), T, 32, 4 * T as u64);
    let text = print_kernel(&opt);
    assert!(!has(&opt, "Shared.v4"), "{text}");
    assert!(has(&opt, "load.Shared.v2.u32"), "{text}");
    assert_eq!(text.matches("load.Shared.v2.u32").count(), 2, "{text}");
    // Index 4 t + 1: byte offsets 16 t + 4 .. 16 t + 16: only the middle pair is 8-byte
    // aligned.
    let kernel = shared_exchange(1, 0, |_, _, _, _, _| {});
    let opt = same_behaviour(&kernel, &vec_passes(), T, 32, 4 * T as u64);
    let text = print_kernel(&opt);
    assert!(!has(&opt, "Shared.v4"), "{text}");
    assert_eq!(text.matches("load.Shared.v2.u32").count(), 1, "{text}");
    assert_eq!(text.matches("load.Shared.u32").count(), 2, "{text}");
}

#[test]
fn a_shared_store_between_shared_loads_keeps_them_apart() {
    // tile[theirs + 2] = 7 between the loads: the third load must see it (and it is the
    // thread's neighbour's slot, read only by this thread after the barrier: no race).
    let kernel = shared_exchange(0, 0, |k, tile, theirs, _, _| {
        let two = k.u32(2);
        let si = k.add(theirs, two);
        let base = k.op(Op::SharedAddr(tile));
        let four = k.u32(4);
        let off = k.mul(si, four);
        let addr = k.add(base, off);
        let seven = k.c(Constant::u32(7));
        k.b.push(Stmt::Store {
            space: AddressSpace::Shared,
            addr,
            value: seven,
        });
    });
    let opt = same_behaviour(&kernel, &vec_passes(), T, 32, 4 * T as u64);
    let text = print_kernel(&opt);
    assert!(!has(&opt, "load.Shared.v4"), "{text}");
    // A global store in between is another space: the shared loads still merge.
    let kernel = shared_exchange(0, 0, |k, _, _, out, j| {
        let seven = k.c(Constant::u32(7));
        k.bounds_check(out, j);
        k.store(out, j, seven);
    });
    let opt = same_behaviour(&kernel, &vec_passes(), T, 32, 4 * T as u64);
    assert!(has(&opt, "load.Shared.v4.u32"), "{}", print_kernel(&opt));
}

/// [`kernel`]'s loads, hinted `hint(k)` for the `k`-th.
fn hinted(mut kernel: Kernel, hint: impl Fn(usize) -> Eviction) -> Kernel {
    let mut k = 0;
    kernel.body.visit_mut(&mut |s| {
        if let Stmt::Def {
            op: Op::Load { eviction, .. },
            ..
        } = s
        {
            *eviction = hint(k);
            k += 1;
        }
    });
    kernel
}

#[test]
fn loads_merge_only_with_loads_of_the_same_eviction_hint() {
    let base = kernel(S::F32, 4, 0, SliceAccess::ReadOnly, true);
    let kept = hinted(base.clone(), |_| Eviction::Last);
    let mixed = hinted(base, |k| {
        if k % 2 == 0 {
            Eviction::Last
        } else {
            Eviction::First
        }
    });
    for len in lens() {
        let opt = same_behaviour(&kept, &vec_passes(), T, 32, len);
        assert!(
            has(&opt, "load.Global.evict_last.v4.f32"),
            "{}",
            print_kernel(&opt)
        );
        let opt = same_behaviour(&mixed, &vec_passes(), T, 32, len);
        let text = print_kernel(&opt);
        assert!(
            !text.contains(".v4.f32") && !text.contains(".v2.f32"),
            "{text}"
        );
        assert_eq!(
            text.matches("load.Global.evict_first.f32").count(),
            2,
            "{text}"
        );
    }
}
