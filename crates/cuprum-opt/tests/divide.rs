//! Divisions and remainders by constants: no division is left, and every quotient and
//! remainder is the same on the emulator before and after, for every integer type, on
//! dividends of all magnitudes (random, shifted toward zero, and their complements near the
//! type's extremes).

mod common;

use common::{K, has, passes, same_behaviour, same_outcome};
use cuprum_ir::*;

use ScalarType as S;

const T: u32 = 256;

/// Divisors of `ty` (as bits) that take every recipe.
fn divisors(ty: ScalarType) -> Vec<u64> {
    cuprum_testkit::divisors::constant_divisors(ty.bits(), ty.is_signed_int())
}

/// `q_s[i] = shape_s(x[i]) / d` and `r_s[i] = shape_s(x[i]) % d` for three shapes of the
/// loaded `x[i]`: itself, shifted right by its own low bits (small magnitudes of both signs),
/// and the complement of that (near the type's extremes). Signed `MIN / -1` is avoided by
/// making the dividend `MIN + 1` there.
fn kernel(ty: ScalarType, divisor: u64) -> Kernel {
    let mut k = K::new("div");
    let x = k.slice("x", ty, SliceAccess::ReadOnly);
    let outs: Vec<u32> = (0..6)
        .map(|o| k.slice(&format!("out{o}"), ty, SliceAccess::Disjoint))
        .collect();
    let i = k.global_id();
    let v = k.load(x, ty, i);
    let low = k.cast(v, S::U32);
    let width_mask = k.u32(ty.bits() - 1);
    let amount = k.bin(BinaryOp::And, low, width_mask);
    let small = k.bin(BinaryOp::Shr, v, amount);
    let large = k.op(Op::Unary(UnaryOp::Not, small));
    let d = k.c(Constant::new(ty, divisor));
    for (s, dividend) in [v, small, large].into_iter().enumerate() {
        let dividend = if ty.is_signed_int() {
            let min = k.c(Constant::new(ty, 1u64 << (ty.bits() - 1)));
            let is_min = k.cmp(CmpOp::Eq, dividend, min);
            let one = k.c(Constant::new(ty, 1));
            let bumped = k.add(dividend, one);
            k.op(Op::Select {
                cond: is_min,
                if_true: bumped,
                if_false: dividend,
            })
        } else {
            dividend
        };
        let q = k.bin(BinaryOp::Div, dividend, d);
        k.store(outs[2 * s], i, q);
        let r = k.bin(BinaryOp::Rem, dividend, d);
        k.store(outs[2 * s + 1], i, r);
    }
    k.finish()
}

#[test]
fn divisions_by_constants_become_multiplications_and_shifts() {
    let pipeline = passes(&["divide", "fold", "dce"]);
    for ty in [S::U32, S::I32, S::U64, S::I64, S::U8, S::I8, S::U16, S::I16] {
        for divisor in divisors(ty) {
            let before = kernel(ty, divisor);
            let after = same_behaviour(&before, &pipeline, T, 64, u64::from(T));
            let text = print_kernel(&after);
            assert!(
                !has(&after, "= Div") && !has(&after, "= Rem"),
                "{ty} by {divisor:#x}:\n{text}"
            );
        }
    }
}

#[test]
fn the_recipes_are_short() {
    // What nvcc emits: a 32-bit unsigned division by 7 is a multiply-high, a subtraction, a
    // shift, an addition and a shift; by 10, a multiply-high and a shift; a power of two is
    // one shift and its remainder one `and`.
    let pipeline = passes(&["divide", "fold", "dce"]);
    let count = |ty: ScalarType, d: u64, op: BinaryOp| {
        let mut k = K::new("div");
        let x = k.slice("x", ty, SliceAccess::ReadOnly);
        let y = k.slice("y", ty, SliceAccess::Disjoint);
        let i = k.global_id();
        let v = k.load(x, ty, i);
        let d = k.c(Constant::new(ty, d));
        let q = k.bin(op, v, d);
        k.store(y, i, q);
        let before = k.finish();
        let base = common::size(&before);
        let after = same_behaviour(&before, &pipeline, T, 64, u64::from(T));
        common::size(&after) as i64 - base as i64
    };
    // Net statements added in place of the division and its divisor (constants counted).
    assert_eq!(
        count(S::U32, 10, BinaryOp::Div),
        2,
        "magic, mulhi, shift amount, shift"
    );
    assert_eq!(count(S::U32, 7, BinaryOp::Div), 6);
    assert_eq!(count(S::U32, 16, BinaryOp::Div), 0);
    assert_eq!(count(S::U32, 16, BinaryOp::Rem), 0);
    assert!(count(S::I64, 1000, BinaryOp::Rem) <= 10);
}

#[test]
fn a_zero_divisor_is_left_for_the_emulator_to_report() {
    let kernel = kernel(S::U32, 0);
    let after = same_outcome(&kernel, &passes(&["divide", "fold", "dce"]), T, 64, 256);
    assert!(has(&after, "= Div"));
    assert!(common::run(&after, 0, T, 64, 256).is_err());
}

#[test]
fn wide_index_divisions_are_narrowed_first() {
    // `(thread index as u64) / 12`: below 2^32, so a 32-bit multiply-high (a 64-bit one is
    // several instructions).
    let mut k = K::new("div");
    let y = k.slice("y", S::U64, SliceAccess::Disjoint);
    let i = k.global_id();
    let d = k.u64(12);
    let q = k.bin(BinaryOp::Div, i, d);
    let r = k.bin(BinaryOp::Rem, i, d);
    let s = k.add(q, r);
    k.store(y, i, s);
    let before = k.finish();
    let after = same_behaviour(
        &before,
        &passes(&["narrow", "divide", "fold", "dce"]),
        T,
        64,
        u64::from(T),
    );
    let text = print_kernel(&after);
    assert!(text.contains("u32 = MulHigh"), "{text}");
    assert!(
        !text.contains("u64 = MulHigh") && !text.contains("Div"),
        "{text}"
    );
}
