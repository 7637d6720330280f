//! Strength reduction of loop addresses: shared-memory tiles read at `j * 16 + k` (as nbody's
//! unrolled loop does), global loads through a grid-stride counter with a run-time step,
//! counters that wrap, a `continue` after the counter's write, nested loops that start again,
//! and the loops that must stay as they are. Each kernel runs on the emulator before and
//! after the pass, alone and with the whole pipeline, on random inputs.

mod common;

use common::{K, has, passes, same_behaviour, same_outcome};
use cuprum_ir::*;

use ScalarType as S;

fn pipeline() -> Vec<cuprum_opt::Pass> {
    cuprum_opt::PASSES.to_vec()
}

/// How many loads and stores of the printed kernel use an address made in the loop by a
/// multiplication (what the pass removes).
fn pointer_vars(kernel: &Kernel) -> usize {
    kernel
        .vars
        .iter()
        .filter(|(_, v)| v.name == "pointer")
        .count()
}

/// `(acc ^ t) + (acc >> 3)`: an order-dependent hash of the words read, without a
/// multiplication (the loops' tests look for those).
fn mix(k: &mut K, acc: Var, t: Value) -> Value {
    let a = k.op(Op::ReadVar(acc));
    let x = k.bin(BinaryOp::Xor, a, t);
    let three = k.u32(3);
    let shifted = k.bin(BinaryOp::Shr, a, three);
    k.add(x, shifted)
}

/// `acc = mix(acc, shared[addr])`: one read of the tile folded into the hash.
fn accumulate_shared(k: &mut K, acc: Var, addr: Value) {
    let t = k.op(Op::Load {
        space: AddressSpace::Shared,
        ty: S::U32,
        addr,
        eviction: cuprum_ir::Eviction::Normal,
    });
    let sum = mix(k, acc, t);
    k.b.push(Stmt::WriteVar {
        var: acc,
        value: sum,
    });
}

/// The lines of the printed kernel's first top-level loop.
fn loop_body(text: &str) -> String {
    text.lines()
        .skip_while(|l| *l != "  loop {")
        .take_while(|l| *l != "  }")
        .collect::<Vec<_>>()
        .join("\n")
}

/// A kernel in the making in which each thread has stored `x[gid]` in a shared tile of `len`
/// words (`tile[tid] = x[gid]`, then a barrier) and set `acc` to zero.
struct Tile {
    k: K,
    y: u32,
    gid: Value,
    base: Value,
    acc: Var,
    four: Value,
    zero: Value,
}

fn tile_kernel(name: &str, len: u32) -> Tile {
    let mut k = K::new(name);
    let x = k.slice("x", S::U32, SliceAccess::ReadOnly);
    let y = k.slice("y", S::U32, SliceAccess::Disjoint);
    let tile = k.b.shared_array(ArrayDecl {
        name: "tile".into(),
        elem: S::U32,
        len,
    });
    let gid = k.global_id();
    let tid = k.tid();
    k.bounds_check(x, gid);
    let v = k.load(x, S::U32, gid);
    let base = k.op(Op::SharedAddr(tile));
    let four = k.u32(4);
    let mine = k.mul(tid, four);
    let at = k.add(base, mine);
    k.b.push(Stmt::Store {
        space: AddressSpace::Shared,
        addr: at,
        value: v,
    });
    k.b.push(Stmt::Barrier);
    let acc = k.b.var("acc", S::U32);
    let zero = k.u32(0);
    k.b.push(Stmt::WriteVar {
        var: acc,
        value: zero,
    });
    Tile {
        k,
        y,
        gid,
        base,
        acc,
        four,
        zero,
    }
}

/// Each thread stores `x[gid]` in a shared tile of `n` words, then sums
/// `tile[(j * stride + k) % n]`-like reads: for `j` from `start` while `j < end` by `step`,
/// the four words at `4 j + k` (k = 0..4); the sum goes to `y[gid]`.
fn shared_tile(start: u32, end: u32, step: u32, with_continue: bool) -> Kernel {
    let n = 256u32;
    let Tile {
        mut k,
        y,
        gid,
        base,
        acc,
        four,
        zero,
    } = tile_kernel("tile", n);
    let j = k.b.var("j", S::U32);
    let s = k.u32(start);
    k.b.push(Stmt::WriteVar { var: j, value: s });
    let e = k.u32(end);
    let st = k.u32(step);
    k.b.begin_block();
    let i = k.op(Op::ReadVar(j));
    let more = k.cmp(CmpOp::Lt, i, e);
    k.if_else(more, |_| {}, |k| k.b.push(Stmt::Break));
    let next = k.add(i, st);
    k.b.push(Stmt::WriteVar {
        var: j,
        value: next,
    });
    if with_continue {
        // Skip the reads of every third iteration, after the counter's write.
        let three = k.u32(3);
        let r = k.bin(BinaryOp::Rem, i, three);
        let skip = k.cmp(CmpOp::Eq, r, zero);
        k.if_else(skip, |k| k.b.push(Stmt::Continue), |_| {});
    }
    let words = k.mul(i, four);
    for w in 0..4u32 {
        // ((4 i + w) mod 256) words from the tile's start, as bytes.
        let wc = k.u32(w);
        let word = k.add(words, wc);
        let mask = k.u32(n - 1);
        let word = k.bin(BinaryOp::And, word, mask);
        let bytes = k.mul(word, four);
        let addr = k.add(base, bytes);
        accumulate_shared(&mut k, acc, addr);
    }
    let body = k.b.end_block();
    k.b.push(Stmt::Loop { body });
    let r = k.op(Op::ReadVar(acc));
    k.store(y, gid, r);
    k.finish()
}

/// The same tile, read without the wrap-around mask: `tile[4 i + w]`, so the address is
/// linear in `i` and the pass applies.
fn linear_tile(end: u32, with_continue: bool) -> Kernel {
    let n = 256u32;
    let Tile {
        mut k,
        y,
        gid,
        base,
        acc,
        ..
    } = tile_kernel("linear", n);
    k.counted_loop(0, end, 1, |k, i| {
        if with_continue {
            let three = k.u32(3);
            let r = k.bin(BinaryOp::Rem, i, three);
            let z = k.u32(0);
            let skip = k.cmp(CmpOp::Eq, r, z);
            k.if_else(skip, |k| k.b.push(Stmt::Continue), |_| {});
        }
        let four = k.u32(4);
        let words = k.mul(i, four);
        for w in 0..4u32 {
            let wc = k.u32(w);
            let word = k.add(words, wc);
            let bytes = k.mul(word, four);
            let addr = k.add(base, bytes);
            accumulate_shared(k, acc, addr);
        }
    });
    let r = k.op(Op::ReadVar(acc));
    k.store(y, gid, r);
    k.finish()
}

#[test]
fn a_shared_tile_read_at_constant_offsets_gets_one_pointer() {
    for end in [0u32, 1, 5, 64] {
        let kernel = linear_tile(end, false);
        let opt = same_behaviour(&kernel, &passes(&["strength"]), 256, 256, 256);
        assert_eq!(pointer_vars(&opt), 1, "{}", print_kernel(&opt));
        // The four loads read the pointer at offsets 0, 4, 8, 12: no multiplication by the
        // counter is left in the loop once dead code goes.
        let opt = same_behaviour(&kernel, &passes(&["strength", "dce"]), 256, 256, 256);
        let text = print_kernel(&opt);
        assert!(!loop_body(&text).contains("Mul"), "{text}");
        // And with the whole pipeline (unrolled by four first when it can).
        same_behaviour(&kernel, &pipeline(), 256, 256, 256);
    }
}

#[test]
fn a_continue_after_the_counter_keeps_the_pointer_in_step() {
    for end in [1u32, 7, 64] {
        let kernel = linear_tile(end, true);
        let opt = same_behaviour(&kernel, &passes(&["strength"]), 256, 256, 256);
        assert_eq!(pointer_vars(&opt), 1);
        same_behaviour(&kernel, &pipeline(), 256, 256, 256);
    }
}

#[test]
fn addresses_that_are_not_linear_in_the_counter_stay() {
    // `& 255` makes the word index wrap around the tile: not a linear form.
    for with_continue in [false, true] {
        let kernel = shared_tile(3, 200, 5, with_continue);
        let opt = same_behaviour(&kernel, &passes(&["strength"]), 256, 256, 256);
        assert_eq!(pointer_vars(&opt), 0);
    }
}

/// `i = gid * spread + start; while i < end { acc = mix(acc, x[i]); i += step }` with a
/// computed step (a grid-stride loop), counters of type `ty`; `y[gid] = acc`.
fn strided(ty: ScalarType, start: u64, spread: u64, end: u64, step: u64) -> Kernel {
    let mut k = K::new("strided");
    let x = k.slice("x", S::U32, SliceAccess::ReadOnly);
    let y = k.slice("y", S::U32, SliceAccess::Disjoint);
    let gid = k.global_id();
    let c = |k: &mut K, v: u64| k.c(Constant::new(ty, v));
    let gid_t = if ty == S::U64 { gid } else { k.cast(gid, ty) };
    let sp = c(&mut k, spread);
    let st = c(&mut k, start);
    let off = k.mul(gid_t, sp);
    let first = k.add(st, off);
    let e = c(&mut k, end);
    let s0 = c(&mut k, step);
    let step = k.bin(BinaryOp::Max, s0, s0);
    let acc = k.b.var("acc", S::U32);
    let zero = k.u32(0);
    k.b.push(Stmt::WriteVar {
        var: acc,
        value: zero,
    });
    let var = k.b.var("i", ty);
    k.b.push(Stmt::WriteVar { var, value: first });
    k.b.begin_block();
    let i = k.op(Op::ReadVar(var));
    let more = k.cmp(CmpOp::Lt, i, e);
    k.if_else(more, |_| {}, |k| k.b.push(Stmt::Break));
    let idx = if ty == S::U64 { i } else { k.cast(i, S::U64) };
    k.bounds_check(x, idx);
    let v = k.load(x, S::U32, idx);
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
    let r = k.op(Op::ReadVar(acc));
    k.store(y, gid, r);
    k.finish()
}

#[test]
fn a_grid_stride_loop_with_a_computed_step_gets_a_pointer() {
    for (start, spread, end, step) in [(0u64, 1u64, 300u64, 64u64), (3, 5, 500, 7), (0, 1, 0, 1)] {
        let kernel = strided(S::U64, start, spread, end, step);
        // `hoist` first, as in the pipeline: the slice's base is made in the loop.
        let opt = same_behaviour(&kernel, &passes(&["hoist", "strength"]), 64, 32, 512);
        assert_eq!(pointer_vars(&opt), 1, "{}", print_kernel(&opt));
        same_behaviour(&kernel, &pipeline(), 64, 32, 512);
    }
    // A 32-bit counter reaches the 64-bit address through a cast: not linear, left alone.
    let kernel = strided(S::U32, 0, 1, 300, 64);
    let opt = same_behaviour(&kernel, &passes(&["hoist", "strength"]), 64, 32, 512);
    assert_eq!(pointer_vars(&opt), 0);
}

#[test]
fn wrapping_counters_and_failing_checks_behave_the_same() {
    // A u64 counter that wraps past zero: indices far out of range fail their bounds checks,
    // and must fail at the same access after the pass.
    let kernel = strided(S::U64, u64::MAX - 100, 3, u64::MAX - 2, 40);
    let opt = same_outcome(&kernel, &passes(&["hoist", "strength"]), 32, 32, 128);
    assert_eq!(pointer_vars(&opt), 1);
    same_outcome(&kernel, &pipeline(), 32, 32, 128);
}

#[test]
fn an_inner_loop_starts_its_pointer_again_on_each_outer_iteration() {
    // for r in 0..3 { for c in 0..16 { acc = mix(acc, tile[r * 16 + c]) } }, the inner
    // address linear in c with the term r * 64 defined in the outer body.
    let Tile {
        mut k,
        y,
        gid,
        base,
        acc,
        ..
    } = tile_kernel("nested", 64);
    k.counted_loop(0, 3, 1, |k, r| {
        let sixty_four = k.u32(64);
        let row = k.mul(r, sixty_four);
        let row_at = k.add(base, row);
        k.counted_loop(0, 16, 1, |k, c| {
            let four = k.u32(4);
            let col = k.mul(c, four);
            let addr = k.add(row_at, col);
            accumulate_shared(k, acc, addr);
        });
    });
    let r = k.op(Op::ReadVar(acc));
    k.store(y, gid, r);
    let kernel = k.finish();
    let opt = same_behaviour(&kernel, &passes(&["strength"]), 64, 64, 64);
    assert!(pointer_vars(&opt) >= 1, "{}", print_kernel(&opt));
    assert!(has(&opt, "pointer"));
    same_behaviour(&kernel, &pipeline(), 64, 64, 64);
}
