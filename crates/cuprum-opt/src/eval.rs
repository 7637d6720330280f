//! Evaluation of operations on constants, exactly as the IR defines them (and the emulator
//! runs them): wrapping integer arithmetic, shifts modulo the width, truncating division,
//! Rust's `as` for casts, IEEE comparisons.
//!
//! Every function answers `None` when it cannot promise the bits the GPU would produce:
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

fn f32_of(c: Constant) -> f32 {
    f32::from_bits(c.bits as u32)
}

fn f64_of(c: Constant) -> f64 {
    f64::from_bits(c.bits)
}

/// A float result, refused if it is NaN.
fn float_result(ty: ScalarType, x: f64) -> Option<Constant> {
    if x.is_nan() {
        return None;
    }
    match ty {
        S::F32 => Some(Constant::f32(x as f32)),
        S::F64 => Some(Constant::f64(x)),
        _ => None,
    }
}

/// Whether `c` is an `F32`/`F64` constant that is not NaN.
fn plain_float(c: Constant) -> bool {
    match c.ty {
        S::F32 => !f32_of(c).is_nan(),
        S::F64 => !f64_of(c).is_nan(),
        _ => false,
    }
}

/// `op(a)`.
pub(crate) fn unary(op: UnaryOp, a: Constant) -> Option<Constant> {
    let ty = a.ty;
    if ty == S::Bool {
        return match op {
            UnaryOp::Not => Some(Constant::bool(a.bits == 0)),
            _ => None,
        };
    }
    if ty.is_int() {
        let v = int_value(a);
        return match op {
            UnaryOp::Neg => Some(int_const(ty, v.wrapping_neg())),
            UnaryOp::Not => Some(int_const(ty, !v)),
            _ => None,
        };
    }
    if !plain_float(a) {
        return None;
    }
    macro_rules! go {
        ($x:expr) => {{
            let x = $x;
            let r = match op {
                UnaryOp::Neg => -x,
                UnaryOp::Abs => x.abs(),
                UnaryOp::Sqrt => x.sqrt(),
                UnaryOp::Floor => x.floor(),
                UnaryOp::Ceil => x.ceil(),
                UnaryOp::Round => x.round(),
                UnaryOp::Trunc => x.trunc(),
                _ => return None,
            };
            r
        }};
    }
    match ty {
        S::F32 => {
            let r = go!(f32_of(a));
            (!r.is_nan()).then(|| Constant::f32(r))
        }
        S::F64 => float_result(S::F64, go!(f64_of(a))),
        _ => None,
    }
}

/// `a op b` (for shifts `b` is the `U32` amount).
pub(crate) fn binary(op: BinaryOp, a: Constant, b: Constant) -> Option<Constant> {
    let ty = a.ty;
    if ty == S::Bool {
        let (x, y) = (a.bits != 0, b.bits != 0);
        return match op {
            BinaryOp::And => Some(Constant::bool(x & y)),
            BinaryOp::Or => Some(Constant::bool(x | y)),
            BinaryOp::Xor => Some(Constant::bool(x ^ y)),
            _ => None,
        };
    }
    if ty.is_int() {
        return int_binary(op, ty, a, b);
    }
    if !plain_float(a) || !plain_float(b) {
        return None;
    }
    match ty {
        S::F32 => {
            let (x, y) = (f32_of(a), f32_of(b));
            let r = match op {
                BinaryOp::Add => x + y,
                BinaryOp::Sub => x - y,
                BinaryOp::Mul => x * y,
                BinaryOp::Div => x / y,
                BinaryOp::Min | BinaryOp::Max if x == 0.0 && y == 0.0 => return None,
                BinaryOp::Min => x.min(y),
                BinaryOp::Max => x.max(y),
                _ => return None,
            };
            (!r.is_nan()).then(|| Constant::f32(r))
        }
        S::F64 => {
            let (x, y) = (f64_of(a), f64_of(b));
            let r = match op {
                BinaryOp::Add => x + y,
                BinaryOp::Sub => x - y,
                BinaryOp::Mul => x * y,
                BinaryOp::Div => x / y,
                BinaryOp::Min | BinaryOp::Max if x == 0.0 && y == 0.0 => return None,
                BinaryOp::Min => x.min(y),
                BinaryOp::Max => x.max(y),
                _ => return None,
            };
            float_result(S::F64, r)
        }
        _ => None,
    }
}

fn int_binary(op: BinaryOp, ty: ScalarType, a: Constant, b: Constant) -> Option<Constant> {
    let (x, y) = (int_value(a), int_value(b));
    let width = ty.bits();
    Some(match op {
        BinaryOp::Add => int_const(ty, x.wrapping_add(y)),
        BinaryOp::Sub => int_const(ty, x.wrapping_sub(y)),
        BinaryOp::Mul => int_const(ty, x.wrapping_mul(y)),
        BinaryOp::Div | BinaryOp::Rem => {
            if y == 0 {
                return None;
            }
            // `MIN / -1` overflows the type: a precondition violation, left in place.
            let min = if ty.is_signed_int() {
                -(1i128 << (width - 1))
            } else {
                0
            };
            if ty.is_signed_int() && x == min && y == -1 {
                return None;
            }
            // Exact i128 division truncates toward zero, as Rust's on the narrower type.
            if op == BinaryOp::Div {
                int_const(ty, x / y)
            } else {
                int_const(ty, x % y)
            }
        }
        BinaryOp::And => int_const(ty, x & y),
        BinaryOp::Or => int_const(ty, x | y),
        BinaryOp::Xor => int_const(ty, x ^ y),
        BinaryOp::Shl => {
            let s = (b.bits as u32) % width;
            Constant::new(ty, a.bits << s)
        }
        BinaryOp::Shr => {
            let s = (b.bits as u32) % width;
            // `x` is sign-extended for signed types, so `>>` on i128 is arithmetic there and
            // logical on the zero-extended unsigned values.
            int_const(ty, x >> s)
        }
        BinaryOp::Min => int_const(ty, x.min(y)),
        BinaryOp::Max => int_const(ty, x.max(y)),
    })
}

/// `a * b + c` with one rounding.
pub(crate) fn mul_add(a: Constant, b: Constant, c: Constant) -> Option<Constant> {
    if !plain_float(a) || !plain_float(b) || !plain_float(c) {
        return None;
    }
    match a.ty {
        S::F32 => {
            let r = f32_of(a).mul_add(f32_of(b), f32_of(c));
            (!r.is_nan()).then(|| Constant::f32(r))
        }
        S::F64 => float_result(S::F64, f64_of(a).mul_add(f64_of(b), f64_of(c))),
        _ => None,
    }
}

/// `a op b` for operands of one type (IEEE for floats: every comparison with NaN is false
/// except `Ne`).
pub(crate) fn compare(op: CmpOp, a: Constant, b: Constant) -> Option<bool> {
    let ty = a.ty;
    if ty == S::Bool || ty.is_int() {
        let (x, y) = (int_value(a), int_value(b));
        return Some(cmp(op, x.cmp(&y)));
    }
    let (x, y) = match ty {
        S::F32 => (f64::from(f32_of(a)), f64::from(f32_of(b))),
        S::F64 => (f64_of(a), f64_of(b)),
        _ => return None,
    };
    Some(match x.partial_cmp(&y) {
        Some(ord) => cmp(op, ord),
        None => op == CmpOp::Ne,
    })
}

fn cmp(op: CmpOp, ord: std::cmp::Ordering) -> bool {
    use std::cmp::Ordering::*;
    match op {
        CmpOp::Eq => ord == Equal,
        CmpOp::Ne => ord != Equal,
        CmpOp::Lt => ord == Less,
        CmpOp::Le => ord != Greater,
        CmpOp::Gt => ord == Greater,
        CmpOp::Ge => ord != Less,
    }
}

/// `a as to` (Rust's `as`, see the IR docs).
pub(crate) fn cast(a: Constant, to: ScalarType) -> Option<Constant> {
    let from = a.ty;
    if from == to {
        return Some(a);
    }
    if to == S::Bool {
        return None;
    }
    if from == S::Bool || from.is_int() {
        let v = int_value(a);
        return match to {
            t if t.is_int() => Some(int_const(t, v)),
            // `as` from an integer rounds to nearest even; i64/u64 hold every source exactly.
            S::F32 if from.is_signed_int() => Some(Constant::f32(v as i64 as f32)),
            S::F32 => Some(Constant::f32(v as u64 as f32)),
            S::F64 if from.is_signed_int() => Some(Constant::f64(v as i64 as f64)),
            S::F64 => Some(Constant::f64(v as u64 as f64)),
            _ => None,
        };
    }
    if !plain_float(a) {
        return None;
    }
    let x = match from {
        S::F32 => f64::from(f32_of(a)),
        S::F64 => f64_of(a),
        _ => return None,
    };
    // From here `x` holds the source exactly; Rust's `as` from f64 rounds toward zero and
    // saturates (as from f32 would: the truncation and the clamp commute with widening).
    Some(match to {
        S::I8 => int_const(to, i128::from(x as i8)),
        S::I16 => int_const(to, i128::from(x as i16)),
        S::I32 => int_const(to, i128::from(x as i32)),
        S::I64 => int_const(to, i128::from(x as i64)),
        S::U8 => int_const(to, i128::from(x as u8)),
        S::U16 => int_const(to, i128::from(x as u16)),
        S::U32 => int_const(to, i128::from(x as u32)),
        S::U64 => int_const(to, i128::from(x as u64)),
        S::F32 => Constant::f32(x as f32),
        S::F64 => Constant::f64(x),
        _ => return None,
    })
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
