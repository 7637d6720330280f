//! Unrolling of loops with constant trip counts, alone and with the whole pipeline (where it
//! lets local arrays move to registers), and the loops that must stay loops.

mod common;

use common::{K, has, passes, same_behaviour};
use cuprum_ir::*;

use ScalarType as S;

const T: u32 = 96;

/// A loop of `trips` iterations accumulating `x[i] * k` into a variable, stored to `y[i]`.
fn accumulate(trips: u32, step: u32, extra: impl FnOnce(&mut K)) -> Kernel {
    let mut k = K::new("k");
    let x = k.slice("x", S::U32, SliceAccess::ReadOnly);
    let y = k.slice("y", S::U32, SliceAccess::Disjoint);
    let i = k.global_id();
    let v = k.load(x, S::U32, i);
    let acc = k.b.var("acc", S::U32);
    let zero = k.u32(0);
    k.b.push(Stmt::WriteVar {
        var: acc,
        value: zero,
    });
    k.counted_loop(0, trips * step, step, |k, j| {
        let a = k.op(Op::ReadVar(acc));
        let m = k.mul(v, j);
        let s = k.add(a, m);
        k.b.push(Stmt::WriteVar { var: acc, value: s });
    });
    extra(&mut k);
    let r = k.op(Op::ReadVar(acc));
    k.store(y, i, r);
    k.finish()
}

#[test]
fn a_counted_loop_becomes_straight_code() {
    let kernel = accumulate(4, 3, |_| {});
    let opt = same_behaviour(
        &kernel,
        &passes(&["unroll", "fold", "dce"]),
        T,
        32,
        T as u64,
    );
    let text = print_kernel(&opt);
    assert!(!text.contains("loop"), "{text}");
    // k = 0 folds away, k = 3, 6, 9 stay as constants of the products.
    for c in ["const 3u32", "const 6u32", "const 9u32"] {
        assert!(text.contains(c), "{c}: {text}");
    }
}

#[test]
fn long_loops_stay() {
    let kernel = accumulate(100, 1, |_| {});
    let opt = same_behaviour(&kernel, &passes(&["unroll"]), T, 32, T as u64);
    assert!(has(&opt, "loop"));
}

#[test]
fn loops_with_unknown_bounds_or_early_exits_stay() {
    // while k < n (a parameter).
    let mut k = K::new("k");
    let y = k.slice("y", S::U32, SliceAccess::Disjoint);
    let n = k.scalar("n", S::U32);
    let i = k.global_id();
    let var = k.b.var("k", S::U32);
    let zero = k.u32(0);
    k.b.push(Stmt::WriteVar { var, value: zero });
    k.b.begin_block();
    let j = k.op(Op::ReadVar(var));
    let eight = k.u32(8);
    let lim = k.bin(BinaryOp::Min, n, eight);
    let more = k.cmp(CmpOp::Lt, j, lim);
    k.if_else(more, |_| {}, |k| k.b.push(Stmt::Break));
    let one = k.u32(1);
    let next = k.add(j, one);
    k.b.push(Stmt::WriteVar { var, value: next });
    let body = k.b.end_block();
    k.b.push(Stmt::Loop { body });
    let r = k.op(Op::ReadVar(var));
    k.store(y, i, r);
    let kernel = k.finish();
    let opt = same_behaviour(&kernel, &passes(&["unroll"]), T, 32, T as u64);
    assert!(has(&opt, "loop"));

    // A `continue` for some lanes.
    let kernel = accumulate(4, 1, |_| {});
    let mut with_continue = kernel.clone();
    if let Some(Stmt::Loop { body }) = with_continue
        .body
        .stmts
        .iter_mut()
        .find(|s| matches!(s, Stmt::Loop { .. }))
    {
        let cond = match &body.stmts[1] {
            Stmt::Def { value, .. } => *value,
            _ => panic!("unexpected loop shape"),
        };
        // After the counter's write (statement 4), so that the loop still ends.
        body.stmts.insert(
            5,
            Stmt::If {
                cond,
                then: Block {
                    stmts: vec![Stmt::Continue],
                },
                otherwise: Block::default(),
            },
        );
    }
    let opt = same_behaviour(&with_continue, &passes(&["unroll"]), T, 32, T as u64);
    assert!(has(&opt, "loop"), "{}", print_kernel(&opt));
}

#[test]
fn nested_loops_with_a_triangular_bound_unroll_completely() {
    // for a in 0..3 { for b in 0..3 - a { acc += x * (b + 1) } }
    let mut k = K::new("k");
    let x = k.slice("x", S::U32, SliceAccess::ReadOnly);
    let y = k.slice("y", S::U32, SliceAccess::Disjoint);
    let i = k.global_id();
    let v = k.load(x, S::U32, i);
    let acc = k.b.var("acc", S::U32);
    let zero = k.u32(0);
    k.b.push(Stmt::WriteVar {
        var: acc,
        value: zero,
    });
    k.counted_loop(0, 3, 1, |k, a| {
        let kb = k.b.var("b", S::U32);
        let zero = k.u32(0);
        k.b.push(Stmt::WriteVar {
            var: kb,
            value: zero,
        });
        k.b.begin_block();
        let b = k.op(Op::ReadVar(kb));
        let three = k.u32(3);
        let lim = k.bin(BinaryOp::Sub, three, a);
        let more = k.cmp(CmpOp::Lt, b, lim);
        k.if_else(more, |_| {}, |k| k.b.push(Stmt::Break));
        let one = k.u32(1);
        let next = k.add(b, one);
        k.b.push(Stmt::WriteVar {
            var: kb,
            value: next,
        });
        let r = k.op(Op::ReadVar(acc));
        let m = k.mul(v, next);
        let s = k.add(r, m);
        k.b.push(Stmt::WriteVar { var: acc, value: s });
        let body = k.b.end_block();
        k.b.push(Stmt::Loop { body });
    });
    let r = k.op(Op::ReadVar(acc));
    k.store(y, i, r);
    let kernel = k.finish();
    let opt = same_behaviour(
        &kernel,
        &passes(&["unroll", "fold", "dce"]),
        T,
        32,
        T as u64,
    );
    assert!(!has(&opt, "loop"), "{}", print_kernel(&opt));
}

#[test]
fn with_the_whole_pipeline_a_loop_filled_array_moves_to_registers() {
    // a = [0; 4] filled by a counted loop (a[k] = x[i] + k), read back in another loop.
    let mut k = K::new("k");
    let x = k.slice("x", S::U32, SliceAccess::ReadOnly);
    let y = k.slice("y", S::U32, SliceAccess::Disjoint);
    let i = k.global_id();
    let v = k.load(x, S::U32, i);
    let arr = k.b.local_array(ArrayDecl {
        name: "a".into(),
        elem: S::U32,
        len: 4,
    });
    let base = k.op(Op::LocalAddr(arr));
    k.counted_loop(0, 4, 1, |k, j| {
        let four = k.u32(4);
        let off = k.mul(j, four);
        let addr = k.add(base, off);
        let val = k.add(v, j);
        k.b.push(Stmt::Store {
            space: AddressSpace::Local,
            addr,
            value: val,
        });
    });
    let acc = k.b.var("acc", S::U32);
    let zero = k.u32(0);
    k.b.push(Stmt::WriteVar {
        var: acc,
        value: zero,
    });
    k.counted_loop(0, 4, 1, |k, j| {
        let four = k.u32(4);
        let off = k.mul(j, four);
        let addr = k.add(base, off);
        let e = k.op(Op::Load {
            space: AddressSpace::Local,
            ty: S::U32,
            addr,
            eviction: cuprum_ir::Eviction::Normal,
        });
        let r = k.op(Op::ReadVar(acc));
        let s = k.bin(BinaryOp::Xor, r, e);
        k.b.push(Stmt::WriteVar { var: acc, value: s });
    });
    let r = k.op(Op::ReadVar(acc));
    k.store(y, i, r);
    let kernel = k.finish();
    let opt = same_behaviour(&kernel, cuprum_opt::PASSES, T, 32, T as u64);
    let text = print_kernel(&opt);
    assert!(!text.contains("Local"), "{text}");
    assert!(!text.contains("loop"), "{text}");
}
