//! Hoisting, common subexpressions and dead code: what goes, what must stay, and that the
//! kernel still does exactly the same on the emulator.

mod common;

use common::{K, has, passes, same_behaviour, same_outcome};
use cuprum_ir::*;

use ScalarType as S;

const T: u32 = 96;

#[test]
fn repeated_address_arithmetic_is_computed_once() {
    // y[i] = x[i] + x[i]: the address of x[i] (base + i * 4) is built twice by the front end.
    let mut k = K::new("k");
    let x = k.slice("x", S::U32, SliceAccess::ReadOnly);
    let y = k.slice("y", S::U32, SliceAccess::Disjoint);
    let i = k.global_id();
    let a = k.load(x, S::U32, i);
    let b = k.load(x, S::U32, i); // a second load: loads are never merged
    let i2 = k.global_id(); // the same index, computed again
    let s = k.add(a, b);
    k.store(y, i2, s);
    let kernel = k.finish();
    let opt = same_behaviour(&kernel, &passes(&["hoist", "cse", "dce"]), T, 32, T as u64);
    let text = print_kernel(&opt);
    assert_eq!(text.matches("u64 = Mul").count(), 1, "{text}");
    assert_eq!(text.matches("load.Global").count(), 2, "{text}");
    assert_eq!(text.matches("special BlockIdx").count(), 1, "{text}");
}

#[test]
fn commuted_operands_and_mirrored_comparisons_meet() {
    let mut k = K::new("k");
    let y = k.slice("y", S::U32, SliceAccess::Disjoint);
    let i = k.global_id();
    let t = k.tid();
    let c = k.u32(7);
    let a = k.add(t, c);
    let b = k.add(c, t);
    let lt = k.cmp(CmpOp::Lt, t, c);
    let gt = k.cmp(CmpOp::Gt, c, t);
    let sel1 = k.op(Op::Select {
        cond: lt,
        if_true: a,
        if_false: b,
    });
    let sel2 = k.op(Op::Select {
        cond: gt,
        if_true: b,
        if_false: a,
    });
    let s = k.add(sel1, sel2);
    k.store(y, i, s);
    let kernel = k.finish();
    let opt = same_behaviour(&kernel, &passes(&["cse", "fold", "dce"]), T, 32, T as u64);
    let text = print_kernel(&opt);
    assert!(!text.contains("cmp.Gt"), "{text}");
    // `a == b`, so both selects are `a` and fold away.
    assert!(!text.contains("select"), "{text}");
}

#[test]
fn sibling_branches_share_nothing_but_hoisted_leaves() {
    // if t < 5 { y[i] = t * 3 } else { y[i] = t * 3 + 1 }: each branch keeps its own product
    // (neither dominates the other), but the constant 3 and the slice base are hoisted and
    // merged.
    let mut k = K::new("k");
    let y = k.slice("y", S::U32, SliceAccess::Disjoint);
    let i = k.global_id();
    let t = k.tid();
    let five = k.u32(5);
    let c = k.cmp(CmpOp::Lt, t, five);
    k.if_else(
        c,
        |k| {
            let three = k.u32(3);
            let m = k.mul(t, three);
            k.store(y, i, m);
        },
        |k| {
            let three = k.u32(3);
            let m = k.mul(t, three);
            let one = k.u32(1);
            let s = k.add(m, one);
            k.store(y, i, s);
        },
    );
    let kernel = k.finish();
    let opt = same_behaviour(&kernel, &passes(&["hoist", "cse", "dce"]), T, 32, T as u64);
    let text = print_kernel(&opt);
    assert_eq!(text.matches("const 3u32").count(), 1, "{text}");
    assert_eq!(text.matches("slice_base").count(), 1, "{text}");
    assert_eq!(text.matches("u32 = Mul %").count(), 3, "{text}");
}

#[test]
fn a_value_defined_in_a_branch_is_not_reused_after_it() {
    let mut k = K::new("k");
    let y = k.slice("y", S::U32, SliceAccess::Disjoint);
    let i = k.global_id();
    let t = k.tid();
    let five = k.u32(5);
    let c = k.cmp(CmpOp::Lt, t, five);
    k.if_else(
        c,
        |k| {
            let m = k.mul(t, t);
            k.store(y, i, m);
        },
        |_| {},
    );
    let m = k.mul(t, t);
    let one = k.u32(1);
    let s = k.add(m, one);
    k.store(y, i, s);
    let kernel = k.finish();
    let opt = same_behaviour(&kernel, &passes(&["hoist", "cse", "dce"]), T, 32, T as u64);
    // The thread index's, the branch's and the one after it.
    assert_eq!(print_kernel(&opt).matches("u32 = Mul").count(), 3);
}

#[test]
fn dead_code_goes_and_effects_stay() {
    let mut k = K::new("k");
    let x = k.slice("x", S::U32, SliceAccess::ReadOnly);
    let y = k.slice("y", S::U32, SliceAccess::Disjoint);
    let i = k.global_id();
    let t = k.tid();
    // Unused pure arithmetic: goes.
    let nine = k.u32(9);
    let _ = k.mul(t, nine);
    // An unused load: stays (it may fault).
    let _ = k.load(x, S::U32, i);
    // An unused division by a value that may be zero: stays.
    let v = k.load(x, S::U32, i);
    let _ = k.bin(BinaryOp::Div, t, v);
    // A variable that only feeds itself: `$d = $d + 1` in a loop that runs once.
    let d = k.b.var("d", S::U32);
    let zero = k.u32(0);
    k.b.push(Stmt::WriteVar {
        var: d,
        value: zero,
    });
    k.b.begin_block();
    let r = k.op(Op::ReadVar(d));
    let one = k.u32(1);
    let n = k.add(r, one);
    k.b.push(Stmt::WriteVar { var: d, value: n });
    k.b.push(Stmt::Break);
    let body = k.b.end_block();
    k.b.push(Stmt::Loop { body });
    k.store(y, i, t);
    let kernel = k.finish();
    let opt = same_outcome(&kernel, &passes(&["dce"]), T, 32, T as u64);
    let text = print_kernel(&opt);
    assert!(!text.contains("const 9u32"), "{text}");
    assert_eq!(text.matches("load.Global").count(), 2, "{text}");
    assert!(text.contains("Div"), "{text}");
    assert!(!text.contains("$d"), "{text}");
    assert!(text.contains("loop"), "loops are never deleted: {text}");
}

#[test]
fn an_if_left_empty_goes() {
    let mut k = K::new("k");
    let y = k.slice("y", S::U32, SliceAccess::Disjoint);
    let i = k.global_id();
    let t = k.tid();
    let five = k.u32(5);
    let c = k.cmp(CmpOp::Lt, t, five);
    k.if_else(
        c,
        |k| {
            let _ = k.mul(t, t);
        },
        |_| {},
    );
    k.store(y, i, t);
    let kernel = k.finish();
    let opt = same_behaviour(&kernel, &passes(&["dce"]), T, 32, T as u64);
    assert!(!has(&opt, "if "), "{}", print_kernel(&opt));
    assert!(!has(&opt, "cmp"));
}
