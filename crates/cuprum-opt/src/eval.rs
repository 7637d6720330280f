//! Evaluation of operations on constants: the values come from `cuprum_ir::scalar` (the one
//! definition the emulator also runs, here over one lane); this module only decides which
//! values the GPU is promised to produce bit for bit, and answers `None` for the rest:
//!
//! * integer division or remainder by zero, and `MIN / -1` (IR precondition violations that
//!   must stay where the emulator can report them);
//! * `F16`/`BF16` arithmetic and conversions to or from the half types (not needed yet);
//! * float results or operands that are NaN (the GPU gives the canonical NaN, the CPU keeps
//!   payloads), float `Rem`, `Min`/`Max` of two zeros (the sign is the implementation's
//!   choice), and transcendental functions (approximations on the GPU).
//!
//! What remains is exact on both sides: `F32`/`F64` `+ - * /`, `sqrt`, fused multiply-add,
//! rounding to integral values, negation and absolute value are correctly rounded (or exact)
//! in IEEE arithmetic, which both Rust and PTX (`.rn`, no flush to zero) implement.

use cuprum_ir::scalar;
use cuprum_ir::{BinaryOp, CmpOp, Constant, Op, ScalarType, UnaryOp, Value};

use ScalarType as S;

/// The value of an integer (or `Bool`) constant, sign-extended for signed types.
pub(crate) fn int_value(c: Constant) -> i128 {
    let w = c.ty.bits();
    if c.ty.is_signed_int() && w < 128 {
        let shift = 128 - w;
        ((c.bits as i128) << shift) >> shift
    } else {
        c.bits as i128
    }
}

/// `v` wrapped into integer type `ty`.
pub(crate) fn int_const(ty: ScalarType, v: i128) -> Constant {
    Constant::new(ty, v as u64)
}

/// Whether `c` is an `F32`/`F64` constant that is not NaN.
fn plain_float(c: Constant) -> bool {
    match c.ty {
        S::F32 => !f32::from_bits(c.bits as u32).is_nan(),
        S::F64 => !f64::from_bits(c.bits).is_nan(),
        _ => false,
    }
}

/// Whether `c` is a value both sides agree on bit for bit: anything but a float NaN (and
/// anything but a half, whose arithmetic is not folded).
fn exact(c: Constant) -> Option<Constant> {
    match c.ty {
        S::F32 | S::F64 => plain_float(c).then_some(c),
        S::F16 | S::BF16 => None,
        _ => Some(c),
    }
}

/// Operand types whose values fold: `Bool`, integers and non-NaN `F32`/`F64`.
fn foldable(c: Constant) -> bool {
    c.ty == S::Bool || c.ty.is_int() || plain_float(c)
}

/// `op(a)`.
pub(crate) fn unary(op: UnaryOp, a: Constant) -> Option<Constant> {
    if !foldable(a) || (op.is_transcendental() && a.ty.is_float()) {
        return None;
    }
    let mut out = [0];
    scalar::unary(op, a.ty, &[a.bits], &mut out).ok()?;
    exact(Constant::new(a.ty, out[0]))
}

/// `a op b` (for shifts `b` is the `U32` amount).
pub(crate) fn binary(op: BinaryOp, a: Constant, b: Constant) -> Option<Constant> {
    if !foldable(a) || !foldable(b) || op.is_transcendental() {
        return None;
    }
    if a.ty.is_float() {
        let both_zero = f64_value(a) == 0.0 && f64_value(b) == 0.0;
        if op == BinaryOp::Rem || (matches!(op, BinaryOp::Min | BinaryOp::Max) && both_zero) {
            return None;
        }
    }
    let mut out = [0];
    // One active lane: a zero divisor or `MIN / -1` is a fault, and not folded.
    scalar::binary(op, a.ty, &[a.bits], &[b.bits], &mut out, 1).ok()?;
    exact(Constant::new(a.ty, out[0]))
}

/// An `F32`/`F64` constant's value, exactly.
fn f64_value(c: Constant) -> f64 {
    match c.ty {
        S::F32 => f64::from(f32::from_bits(c.bits as u32)),
        _ => f64::from_bits(c.bits),
    }
}

/// `a * b + c` with one rounding.
pub(crate) fn mul_add(a: Constant, b: Constant, c: Constant) -> Option<Constant> {
    if !plain_float(a) || !plain_float(b) || !plain_float(c) {
        return None;
    }
    let mut out = [0];
    scalar::mul_add(a.ty, &[a.bits], &[b.bits], &[c.bits], &mut out).ok()?;
    exact(Constant::new(a.ty, out[0]))
}

/// `a op b` for operands of one type (IEEE for floats: every comparison with NaN is false
/// except `Ne`).
pub(crate) fn compare(op: CmpOp, a: Constant, b: Constant) -> Option<bool> {
    if matches!(a.ty, S::F16 | S::BF16) {
        return None;
    }
    let mut out = [0];
    scalar::compare(op, a.ty, &[a.bits], &[b.bits], &mut out);
    Some(out[0] != 0)
}

/// `a as to` (Rust's `as`, see the IR docs).
pub(crate) fn cast(a: Constant, to: ScalarType) -> Option<Constant> {
    if a.ty == to {
        return Some(a);
    }
    if to == S::Bool || matches!(to, S::F16 | S::BF16) || !foldable(a) {
        return None;
    }
    exact(scalar::cast_constant(a, to))
}

/// `a` reinterpreted as `to` (same size).
pub(crate) fn bitcast(a: Constant, to: ScalarType) -> Option<Constant> {
    (a.ty.size_bytes() == to.size_bytes() && a.ty != S::Bool && to != S::Bool)
        .then(|| Constant::new(to, a.bits))
}

/// The constant a pure operation gives when `get` knows its operands (see the module docs
/// for what is refused).
pub(crate) fn op(op: &Op, get: impl Fn(Value) -> Option<Constant>) -> Option<Constant> {
    match *op {
        Op::Const(c) => Some(c),
        Op::Unary(u, a) => unary(u, get(a)?),
        Op::Binary(b, l, r) => binary(b, get(l)?, get(r)?),
        Op::Ternary(_, a, b, c) => mul_add(get(a)?, get(b)?, get(c)?),
        Op::Compare(c, l, r) => compare(c, get(l)?, get(r)?).map(Constant::bool),
        Op::Select {
            cond,
            if_true,
            if_false,
        } => get(if get(cond)?.bits != 0 {
            if_true
        } else {
            if_false
        }),
        Op::Cast { value, to } => cast(get(value)?, to),
        Op::Bitcast { value, to } => bitcast(get(value)?, to),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_wrap_and_shift_modulo_width() {
        let c = |v: i32| Constant::i32(v);
        assert_eq!(binary(BinaryOp::Add, c(i32::MAX), c(1)), Some(c(i32::MIN)));
        assert_eq!(
            binary(BinaryOp::Mul, Constant::u64(u64::MAX), Constant::u64(3)),
            Some(Constant::u64(u64::MAX.wrapping_mul(3)))
        );
        assert_eq!(binary(BinaryOp::Shl, c(1), Constant::u32(33)), Some(c(2)));
        assert_eq!(binary(BinaryOp::Shr, c(-8), Constant::u32(1)), Some(c(-4)));
        assert_eq!(
            binary(BinaryOp::Shr, Constant::u32(0x8000_0000), Constant::u32(31)),
            Some(Constant::u32(1))
        );
        assert_eq!(binary(BinaryOp::Div, c(-7), c(2)), Some(c(-3)));
        assert_eq!(binary(BinaryOp::Rem, c(-7), c(2)), Some(c(-1)));
        assert_eq!(binary(BinaryOp::Div, c(i32::MIN), c(-1)), None);
        assert_eq!(binary(BinaryOp::Rem, c(5), c(0)), None);
        assert_eq!(
            binary(BinaryOp::Min, Constant::u32(u32::MAX), Constant::u32(1)),
            Some(Constant::u32(1))
        );
        assert_eq!(unary(UnaryOp::Neg, c(i32::MIN)), Some(c(i32::MIN)));
        assert_eq!(
            unary(UnaryOp::Not, Constant::new(S::U8, 0x0f)),
            Some(Constant::new(S::U8, 0xf0))
        );
    }

    #[test]
    fn casts_are_rust_as() {
        assert_eq!(
            cast(Constant::i32(-1), S::U64),
            Some(Constant::u64(u64::MAX))
        );
        assert_eq!(
            cast(Constant::u32(u32::MAX), S::I64),
            Some(Constant::i64(u32::MAX as i64))
        );
        assert_eq!(
            cast(Constant::u64(0x1_0000_0005), S::U32),
            Some(Constant::u32(5))
        );
        assert_eq!(cast(Constant::f32(-1.5), S::U32), Some(Constant::u32(0)));
        assert_eq!(
            cast(Constant::f32(3e9), S::I32),
            Some(Constant::i32(i32::MAX))
        );
        assert_eq!(
            cast(Constant::f32(-2.7), S::I8),
            Some(Constant::new(S::I8, (-2i8) as u8 as u64))
        );
        assert_eq!(cast(Constant::f32(f32::NAN), S::I32), None);
        assert_eq!(
            cast(Constant::u64(u64::MAX), S::F32),
            Some(Constant::f32(u64::MAX as f32))
        );
        assert_eq!(
            cast(Constant::i64(-(1 << 60) - 1), S::F64),
            Some(Constant::f64((-(1i64 << 60) - 1) as f64))
        );
        assert_eq!(
            cast(Constant::bool(true), S::U8),
            Some(Constant::new(S::U8, 1))
        );
        assert_eq!(cast(Constant::f64(0.1), S::F32), Some(Constant::f32(0.1)));
        assert_eq!(cast(Constant::u32(1), S::F16), None);
    }

    #[test]
    fn floats_fold_only_when_exact() {
        let f = Constant::f32;
        assert_eq!(binary(BinaryOp::Add, f(0.1), f(0.2)), Some(f(0.1 + 0.2)));
        assert_eq!(binary(BinaryOp::Div, f(0.0), f(0.0)), None);
        assert_eq!(binary(BinaryOp::Rem, f(5.0), f(2.0)), None);
        assert_eq!(binary(BinaryOp::Min, f(0.0), f(-0.0)), None);
        assert_eq!(unary(UnaryOp::Sqrt, f(-1.0)), None);
        assert_eq!(unary(UnaryOp::Sin, f(1.0)), None);
        assert_eq!(unary(UnaryOp::Atanh, f(0.5)), None);
        assert_eq!(binary(BinaryOp::Atan2, f(1.0), f(2.0)), None);
        assert_eq!(unary(UnaryOp::Round, f(-2.5)), Some(f(-3.0)));
        assert_eq!(
            mul_add(f(0.1), f(10.0), f(-1.0)),
            Some(f(0.1f32.mul_add(10.0, -1.0)))
        );
        assert_eq!(compare(CmpOp::Ne, f(f32::NAN), f(1.0)), Some(true));
        assert_eq!(compare(CmpOp::Eq, f(f32::NAN), f(f32::NAN)), Some(false));
        assert_eq!(
            compare(CmpOp::Lt, Constant::i32(-1), Constant::i32(0)),
            Some(true)
        );
        assert_eq!(
            compare(CmpOp::Lt, Constant::u32(u32::MAX), Constant::u32(0)),
            Some(false)
        );
        assert_eq!(
            binary(
                BinaryOp::Add,
                Constant::new(S::F16, 0x3c00),
                Constant::new(S::F16, 0x3c00)
            ),
            None
        );
    }
}
