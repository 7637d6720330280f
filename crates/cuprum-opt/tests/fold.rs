//! Constant folding and algebraic simplification: what the IR looks like afterwards, and
//! that the kernel still does exactly the same on the emulator.

mod common;

use common::{K, has, passes, same_behaviour};
use cuprum_ir::*;

use ScalarType as S;

const T: u32 = 96;

/// `x[i]` loaded, `f(k, x[i])` stored to `y[i]`.
fn elementwise(elem: ScalarType, f: impl FnOnce(&mut K, Value) -> Value) -> Kernel {
    let mut k = K::new("k");
    let x = k.slice("x", elem, SliceAccess::ReadOnly);
    let y = k.slice("y", elem, SliceAccess::Disjoint);
    let i = k.global_id();
    let v = k.load(x, elem, i);
    let r = f(&mut k, v);
    k.store(y, i, r);
    k.finish()
}

#[test]
fn constant_arithmetic_folds() {
    let kernel = elementwise(S::U32, |k, v| {
        let (a, b, c, d) = (k.u32(3), k.u32(4), k.u32(2), k.u32(14));
        let s = k.add(a, b);
        let m = k.mul(s, c);
        let z = k.bin(BinaryOp::Sub, m, d); // 0
        let w = k.c(Constant::u64(0x1_0000_0007));
        let t = k.cast(w, S::U32); // 7
        let r = k.add(z, v);
        k.add(r, t)
    });
    let opt = same_behaviour(&kernel, &passes(&["fold", "dce"]), T, 32, T as u64);
    let text = print_kernel(&opt);
    assert!(has(&opt, "const 7u32"), "{text}");
    assert!(!has(&opt, "Sub"));
    // Left: the thread index (`b * d + t`) and `v + 7`; `(3 + 4) * 2 - 14 + v` is `v`.
    assert_eq!(text.matches("u32 = Mul").count(), 1, "{text}");
    assert_eq!(text.matches("u32 = Add").count(), 2, "{text}");
}

#[test]
fn integer_identities_simplify() {
    let kernel = elementwise(S::U32, |k, v| {
        let (zero, one, w) = (k.u32(0), k.u32(1), k.u32(32));
        let a = k.add(v, zero);
        let b = k.mul(one, a);
        let c = k.bin(BinaryOp::Shl, b, w); // shift by the width: by 0
        let d = k.bin(BinaryOp::Or, c, zero);
        let e = k.cast(d, S::U64);
        let f = k.cast(e, S::U32);
        let g = k.cast(f, S::U32);
        let t = k.tid();
        let c1 = k.cmp(CmpOp::Lt, t, w);
        let h = k.op(Op::Select {
            cond: c1,
            if_true: g,
            if_false: g,
        });
        let x = k.bin(BinaryOp::Xor, h, h); // 0
        let y = k.bin(BinaryOp::Sub, h, h); // 0
        let z = k.mul(v, zero); // 0
        let s = k.add(x, y);
        let s = k.add(s, z);
        k.add(h, s)
    });
    let opt = same_behaviour(&kernel, &passes(&["fold", "dce"]), T, 32, T as u64);
    // `y[i] = x[i]`: nothing computes on the loaded value any more.
    let text = print_kernel(&opt);
    for op in ["Shl", "Or", "Xor", "Sub", "select", "cast %"] {
        assert!(
            !text.lines().any(|l| l.contains(op) && l.contains("u32 =")),
            "{op} left:\n{text}"
        );
    }
}

#[test]
fn float_identities_are_left_alone_and_exact_arithmetic_folds() {
    let kernel = elementwise(S::F32, |k, v| {
        let one = k.f32(1.0);
        let m = k.mul(v, one); // not `v`: NaN payloads differ on the GPU
        let (a, b) = (k.f32(0.1), k.f32(0.2));
        let s = k.add(a, b);
        let (z1, z2) = (k.f32(0.0), k.f32(0.0));
        let nan = k.bin(BinaryOp::Div, z1, z2); // NaN: not folded
        let sq = k.op(Op::Unary(UnaryOp::Sin, a)); // approximate on the GPU: not folded
        let t = k.add(m, s);
        let t = k.add(t, sq);
        k.add(t, nan)
    });
    let opt = same_behaviour(&kernel, &passes(&["fold", "dce"]), T, 32, T as u64);
    assert!(has(&opt, &format!("const {:?}f32", 0.1f32 + 0.2f32)));
    assert!(has(&opt, "Div"));
    assert!(has(&opt, "Sin"));
    assert!(has(&opt, "f32 = Mul"));
}

#[test]
fn casts_of_constants_are_rust_as() {
    let kernel = elementwise(S::I32, |k, v| {
        let big = k.f32(3.0e9);
        let sat = k.cast(big, S::I32); // i32::MAX
        let neg = k.i32(-1);
        let wide = k.cast(neg, S::U64); // u64::MAX
        let back = k.cast(wide, S::I32); // -1
        let f = k.f32(-2.75);
        let t = k.cast(f, S::I32); // -2
        let s = k.add(sat, back);
        let s = k.add(s, t);
        k.add(s, v)
    });
    let opt = same_behaviour(&kernel, &passes(&["fold", "dce"]), T, 32, T as u64);
    // i32::MAX - 1 - 2 folded into one constant.
    assert!(
        has(&opt, &format!("const {}i32", i32::MAX - 3)),
        "{}",
        print_kernel(&opt)
    );
}

#[test]
fn a_constant_branch_is_replaced_by_the_branch_it_takes() {
    let mut k = K::new("k");
    let y = k.slice("y", S::U32, SliceAccess::Disjoint);
    let i = k.global_id();
    let (a, b) = (k.u32(5), k.u32(3));
    let c = k.cmp(CmpOp::Gt, a, b);
    k.if_else(
        c,
        |k| {
            let t = k.tid();
            let one = k.u32(1);
            let v = k.add(t, one);
            k.store(y, i, v);
        },
        |k| {
            let z = k.u32(0);
            k.store(y, i, z);
        },
    );
    let kernel = k.finish();
    let opt = same_behaviour(&kernel, &passes(&["fold", "dce"]), T, 32, T as u64);
    assert!(!has(&opt, "if "), "{}", print_kernel(&opt));
    assert_eq!(print_kernel(&opt).matches("store.Global").count(), 1);
}

#[test]
fn unreachable_statements_and_run_once_loops_go() {
    let mut k = K::new("k");
    let y = k.slice("y", S::U32, SliceAccess::Disjoint);
    let i = k.global_id();
    let t = k.tid();
    // loop { y[i] = t; break; y[i] = 0 }  ==  y[i] = t
    k.b.begin_block();
    k.store(y, i, t);
    k.b.push(Stmt::Break);
    let z = k.u32(0);
    k.store(y, i, z);
    let body = k.b.end_block();
    k.b.push(Stmt::Loop { body });
    k.b.push(Stmt::Return);
    let one = k.u32(1);
    k.store(y, i, one);
    let kernel = k.finish();
    let opt = same_behaviour(&kernel, &passes(&["fold", "dce"]), T, 32, T as u64);
    assert!(!has(&opt, "loop"), "{}", print_kernel(&opt));
    assert_eq!(print_kernel(&opt).matches("store.Global").count(), 1);
}

#[test]
fn zero_extended_comparisons_narrow() {
    // `(t as u64) < 1040` becomes `t < 1040u32`.
    let mut k = K::new("k");
    let y = k.slice("y", S::U32, SliceAccess::Disjoint);
    let i = k.global_id();
    let t = k.tid();
    let w = k.cast(t, S::U64);
    let lim = k.u64(40);
    let c = k.cmp(CmpOp::Lt, w, lim);
    let one = k.u32(1);
    let zero = k.u32(0);
    let v = k.op(Op::Select {
        cond: c,
        if_true: one,
        if_false: zero,
    });
    k.store(y, i, v);
    let kernel = k.finish();
    let opt = same_behaviour(&kernel, &passes(&["fold", "dce"]), T, 32, T as u64);
    assert!(has(&opt, "const 40u32"), "{}", print_kernel(&opt));
    assert!(!has(&opt, "cmp.Lt %") || !has(&opt, "const 40u64"));
}

#[test]
fn faulting_divisions_stay() {
    // A division by a constant zero is an error the emulator must still report.
    let kernel = elementwise(S::U32, |k, v| {
        let z = k.u32(0);
        let d = k.bin(BinaryOp::Div, v, z);
        let one = k.u32(1);
        let q = k.bin(BinaryOp::Div, v, one); // v
        k.add(d, q)
    });
    let opt = common::same_outcome(&kernel, &passes(&["fold", "dce"]), T, 32, T as u64);
    assert_eq!(print_kernel(&opt).matches("Div").count(), 1);
    assert!(common::run(&opt, 0, T, 32, T as u64).is_err());
}
