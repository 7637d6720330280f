//! The host reference's scalar semantics: every operation of the IR on one thread's values,
//! written from the IR's documented semantics (`cuprum_ir::kernel`) in plain Rust, apart from
//! the emulator's implementation.
//!
//! Values are bit patterns zero-extended into a `u64`, as `cuprum_ir::Constant`. Integers go
//! through `i128` (exact for every type), floats through Rust's `f32`/`f64` (IEEE, round to
//! nearest even). Rust has no `f16`/`bf16` arithmetic and `half`'s conversions from `f64`
//! are not correctly rounded, so rounding to the 16-bit formats is done here from the exact
//! value ([`round_to_half`]); `half` only widens them (exactly) to `f32`.

use cuprum_ir::{AtomicOp, BinaryOp, CmpOp, ScalarType, UnaryOp};
use half::{bf16, f16};

use ScalarType as S;

/// Why an operation has no result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpError {
    /// An integer division or remainder by zero.
    DivideByZero,
    /// A signed `MIN / -1` (an IR precondition violation).
    DivideOverflow,
    /// The operation is not defined on the type (a generator bug).
    Undefined,
}

/// `bits` masked to the width of `ty`.
pub fn canonical(ty: ScalarType, bits: u64) -> u64 {
    match ty.bits() {
        64 => bits,
        w => bits & ((1u64 << w) - 1),
    }
}

/// An integer or `Bool` value, exactly (sign-extended for signed types).
fn int(ty: ScalarType, bits: u64) -> i128 {
    match ty {
        S::I8 => i128::from(bits as u8 as i8),
        S::I16 => i128::from(bits as u16 as i16),
        S::I32 => i128::from(bits as u32 as i32),
        S::I64 => i128::from(bits as i64),
        _ => i128::from(canonical(ty, bits)),
    }
}

/// `v` truncated to the width of `ty` (two's complement).
fn from_int(ty: ScalarType, v: i128) -> u64 {
    canonical(ty, v as u64)
}

/// The 16-bit float formats: (mantissa bits, exponent bias).
const fn half_format(ty: ScalarType) -> (u32, i32) {
    match ty {
        S::BF16 => (7, 127),
        _ => (10, 15),
    }
}

/// A float value widened exactly to `f64`.
pub fn float(ty: ScalarType, bits: u64) -> f64 {
    match ty {
        S::F16 => f16::from_bits(bits as u16).to_f64(),
        S::BF16 => f64::from(f32::from_bits((bits as u32) << 16)),
        S::F32 | S::Tf32 => f64::from(f32::from_bits(bits as u32)),
        _ => f64::from_bits(bits),
    }
}

/// `x` rounded to `f32` and then to the nearest `tf32`, ties away from zero, NaNs to the
/// canonical `tf32` NaN: by comparing the two neighbours' distances in `f64`.
fn to_tf32(x: f64) -> u64 {
    let f = x as f32;
    if f.is_nan() {
        return 0x7FFF_E000;
    }
    let toward_zero = f.to_bits() & 0xFFFF_E000;
    let away = toward_zero + 0x2000;
    if f.is_infinite() {
        return u64::from(f.to_bits());
    }
    let away_value = if away & 0x7FFF_FFFF == 0x7F80_0000 {
        2f64.powi(128)
    } else {
        f64::from(f32::from_bits(away)).abs()
    };
    let below = f64::from(f).abs() - f64::from(f32::from_bits(toward_zero)).abs();
    let above = away_value - f64::from(f).abs();
    u64::from(if below < above { toward_zero } else { away })
}

/// The value `(-1)^neg * m * 2^e`, rounded to nearest even into the 16-bit float format
/// `ty` (`F16` or `BF16`), subnormals and overflow to infinity included.
pub fn round_to_half(ty: ScalarType, neg: bool, m: u128, e: i32) -> u64 {
    let (man, bias) = half_format(ty);
    let sign = u64::from(neg) << 15;
    if m == 0 {
        return sign;
    }
    let top = 127 - m.leading_zeros() as i32;
    let emin = 1 - bias;
    // The spacing of the format at this magnitude, as a power of two.
    let quantum = (top + e).max(emin) - man as i32;
    let shift = quantum - e;
    let mut n = if shift <= 0 {
        m << (-shift) as u32
    } else if shift >= 128 {
        0
    } else {
        let kept = m >> shift;
        let rest = m & ((1u128 << shift) - 1);
        let halfway = 1u128 << (shift - 1);
        if rest > halfway || (rest == halfway && kept & 1 == 1) {
            kept + 1
        } else {
            kept
        }
    };
    let mut q = quantum;
    if n < 1 << man {
        // Subnormal (or zero): the exponent field is 0.
        return sign | n as u64;
    }
    while n >= 1 << (man + 1) {
        n >>= 1;
        q += 1;
    }
    let field = q + man as i32 + bias;
    let max_field = if ty == S::BF16 { 255 } else { 31 };
    if field >= max_field {
        return sign | ((max_field as u64) << man);
    }
    sign | (field as u64) << man | (n as u64 - (1 << man))
}

/// An `f64` rounded once to a 16-bit float format.
fn f64_to_half(ty: ScalarType, x: f64) -> u64 {
    let (man, _) = half_format(ty);
    let max_field: u64 = if ty == S::BF16 { 255 } else { 31 };
    if x.is_nan() {
        // A quiet NaN; the payload is not specified by the IR.
        return max_field << man | 1 << (man - 1);
    }
    let neg = x.is_sign_negative();
    if x.is_infinite() {
        return u64::from(neg) << 15 | max_field << man;
    }
    let bits = x.to_bits();
    let field = ((bits >> 52) & 0x7ff) as i32;
    let frac = bits & ((1 << 52) - 1);
    let (m, e) = if field == 0 {
        (frac, -1074)
    } else {
        (frac | 1 << 52, field - 1075)
    };
    round_to_half(ty, neg, u128::from(m), e)
}

/// Rust's `as` from `from` to `to` (not to `Bool`).
pub fn cast(from: ScalarType, to: ScalarType, bits: u64) -> u64 {
    if from.is_float() || from == S::Tf32 {
        let x = float(from, bits);
        return match to {
            S::F64 => x.to_bits(),
            S::Tf32 => to_tf32(x),
            S::F32 => u64::from((x as f32).to_bits()),
            S::F16 | S::BF16 => f64_to_half(to, x),
            // Rust's float-to-int `as`: toward zero, saturating, NaN to 0.
            S::I8 => from_int(to, i128::from(x as i8)),
            S::I16 => from_int(to, i128::from(x as i16)),
            S::I32 => from_int(to, i128::from(x as i32)),
            S::I64 => from_int(to, i128::from(x as i64)),
            S::U8 => u64::from(x as u8),
            S::U16 => u64::from(x as u16),
            S::U32 => u64::from(x as u32),
            S::U64 => x as u64,
            S::Bool => u64::from(x != 0.0),
        };
    }
    let v = int(from, bits);
    match to {
        // `as` from a 64-bit integer rounds to nearest even (i128 holds every source exactly).
        S::F64 => {
            if v < 0 {
                (v as i64 as f64).to_bits()
            } else {
                (v as u64 as f64).to_bits()
            }
        }
        S::F32 => {
            let f = if v < 0 {
                v as i64 as f32
            } else {
                v as u64 as f32
            };
            u64::from(f.to_bits())
        }
        S::F16 | S::BF16 => round_to_half(to, v < 0, v.unsigned_abs(), 0),
        S::Bool => u64::from(v != 0),
        _ => from_int(to, v),
    }
}

/// The `f32` result of an operation on 16-bit floats, rounded back to `ty`.
fn narrow(ty: ScalarType, x: f32) -> u64 {
    match ty {
        S::F32 => u64::from(x.to_bits()),
        _ => f64_to_half(ty, f64::from(x)),
    }
}

/// A 16-bit or 32-bit float operand as `f32` (exact).
fn f32_of(ty: ScalarType, bits: u64) -> f32 {
    match ty {
        S::F16 => f16::from_bits(bits as u16).to_f32(),
        S::BF16 => bf16::from_bits(bits as u16).to_f32(),
        _ => f32::from_bits(bits as u32),
    }
}

/// `op a`.
pub fn unary(op: UnaryOp, ty: ScalarType, a: u64) -> Result<u64, OpError> {
    if ty == S::Bool {
        return match op {
            UnaryOp::Not => Ok(a ^ 1),
            _ => Err(OpError::Undefined),
        };
    }
    if ty.is_int() {
        return match op {
            UnaryOp::Neg => Ok(from_int(ty, -int(ty, a))),
            UnaryOp::Not => Ok(canonical(ty, !a)),
            // Counted over the value's own bits (its low `width` bits).
            UnaryOp::CountOnes | UnaryOp::LeadingZeros | UnaryOp::TrailingZeros => {
                let width = ty.bits();
                let low = if width == 64 {
                    a
                } else {
                    a & ((1 << width) - 1)
                };
                let n = match op {
                    UnaryOp::CountOnes => low.count_ones(),
                    UnaryOp::LeadingZeros => low.leading_zeros() - (64 - width),
                    _ => low.trailing_zeros().min(width),
                };
                Ok(from_int(ty, i128::from(n)))
            }
            _ => Err(OpError::Undefined),
        };
    }
    let sign = 1u64 << (ty.bits() - 1);
    match op {
        // Sign operations are bit operations on every float type.
        UnaryOp::Neg => return Ok(a ^ sign),
        UnaryOp::Abs => return Ok(a & !sign),
        UnaryOp::Not => return Err(OpError::Undefined),
        _ => {}
    }
    if ty == S::F64 {
        let x = f64::from_bits(a);
        let r = match op {
            UnaryOp::Sqrt => x.sqrt(),
            UnaryOp::Floor => x.floor(),
            UnaryOp::Ceil => x.ceil(),
            UnaryOp::Round => x.round(),
            UnaryOp::Trunc => x.trunc(),
            // The transcendental functions are approximate on the GPU; not generated.
            _ => return Err(OpError::Undefined),
        };
        return Ok(r.to_bits());
    }
    let x = f32_of(ty, a);
    let r = match op {
        UnaryOp::Sqrt => x.sqrt(),
        UnaryOp::Floor => x.floor(),
        UnaryOp::Ceil => x.ceil(),
        UnaryOp::Round => x.round(),
        UnaryOp::Trunc => x.trunc(),
        _ => return Err(OpError::Undefined),
    };
    Ok(narrow(ty, r))
}

/// `a op b` (the shift amount `b` is `U32`).
pub fn binary(op: BinaryOp, ty: ScalarType, a: u64, b: u64) -> Result<u64, OpError> {
    use BinaryOp as B;
    if ty == S::Bool {
        return match op {
            B::And => Ok(a & b),
            B::Or => Ok(a | b),
            B::Xor => Ok(a ^ b),
            _ => Err(OpError::Undefined),
        };
    }
    if ty.is_int() {
        let (x, y) = (int(ty, a), int(ty, b));
        let width = ty.bits();
        let r = match op {
            B::Add => x + y,
            B::Sub => x - y,
            B::Mul => x.wrapping_mul(y),
            // The exact product shifted down by the width: signed products of 64-bit values
            // fit in i128; unsigned ones are formed in u128.
            B::MulHigh if width < 32 => return Err(OpError::Undefined),
            B::MulHigh if ty.is_signed_int() => (x * y) >> width,
            B::MulHigh => ((x as u128 * y as u128) >> width) as i128,
            B::Div | B::Rem => {
                if y == 0 {
                    return Err(OpError::DivideByZero);
                }
                if ty.is_signed_int() && y == -1 && x == -(1i128 << (width - 1)) {
                    return Err(OpError::DivideOverflow);
                }
                if op == B::Div { x / y } else { x % y }
            }
            B::And => x & y,
            B::Or => x | y,
            B::Xor => x ^ y,
            B::Shl => x << (b as u32 % width),
            // `x` is sign-extended for signed types: `>>` on i128 is arithmetic there, and
            // logical on the zero-extended unsigned ones.
            B::Shr => x >> (b as u32 % width),
            B::Min => x.min(y),
            B::Max => x.max(y),
            B::Atan2 | B::Hypot => return Err(OpError::Undefined),
        };
        return Ok(from_int(ty, r));
    }
    if ty == S::F64 {
        let (x, y) = (f64::from_bits(a), f64::from_bits(b));
        let r = match op {
            B::Add => x + y,
            B::Sub => x - y,
            B::Mul => x * y,
            B::Div => x / y,
            B::Rem => x % y,
            B::Min => x.min(y),
            B::Max => x.max(y),
            _ => return Err(OpError::Undefined),
        };
        return Ok(r.to_bits());
    }
    let (x, y) = (f32_of(ty, a), f32_of(ty, b));
    let r = match op {
        B::Add => x + y,
        B::Sub => x - y,
        B::Mul => x * y,
        B::Div => x / y,
        B::Rem => x % y,
        B::Min => x.min(y),
        B::Max => x.max(y),
        _ => return Err(OpError::Undefined),
    };
    Ok(narrow(ty, r))
}

/// `a * b + c` with one rounding (to `f32` first for the 16-bit formats, as the IR says).
pub fn mul_add(ty: ScalarType, a: u64, b: u64, c: u64) -> Result<u64, OpError> {
    match ty {
        S::F64 => Ok(f64::from_bits(a)
            .mul_add(f64::from_bits(b), f64::from_bits(c))
            .to_bits()),
        S::F32 | S::F16 | S::BF16 => Ok(narrow(
            ty,
            f32_of(ty, a).mul_add(f32_of(ty, b), f32_of(ty, c)),
        )),
        _ => Err(OpError::Undefined),
    }
}

/// `a op b`: by signedness on integers, `false < true`, IEEE on floats.
pub fn compare(op: CmpOp, ty: ScalarType, a: u64, b: u64) -> bool {
    if ty.is_float() {
        let (x, y) = (float(ty, a), float(ty, b));
        return match op {
            CmpOp::Eq => x == y,
            CmpOp::Ne => x != y,
            CmpOp::Lt => x < y,
            CmpOp::Le => x <= y,
            CmpOp::Gt => x > y,
            CmpOp::Ge => x >= y,
        };
    }
    let (x, y) = (int(ty, a), int(ty, b));
    match op {
        CmpOp::Eq => x == y,
        CmpOp::Ne => x != y,
        CmpOp::Lt => x < y,
        CmpOp::Le => x <= y,
        CmpOp::Gt => x > y,
        CmpOp::Ge => x >= y,
    }
}

/// The value an atomic `op` leaves in memory holding `old`, with operand `val` and expected
/// value `cmp` (compare-exchange compares bit patterns).
pub fn atomic(op: AtomicOp, ty: ScalarType, old: u64, val: u64, cmp: u64) -> Result<u64, OpError> {
    use AtomicOp as A;
    match op {
        A::Exchange => return Ok(val),
        A::CompareExchange => return Ok(if old == cmp { val } else { old }),
        _ => {}
    }
    if ty.is_float() {
        // The IR flushes `f32` atomic adds' subnormal operands and result to signed zeros.
        let flush = |bits: u64| {
            let x = f32::from_bits(bits as u32);
            if x.is_subnormal() {
                u64::from(0.0f32.copysign(x).to_bits())
            } else {
                bits
            }
        };
        return match (op, ty) {
            (A::Add, ScalarType::F32) => {
                binary(BinaryOp::Add, ty, flush(old), flush(val)).map(flush)
            }
            (A::Add, _) => binary(BinaryOp::Add, ty, old, val),
            _ => Err(OpError::Undefined),
        };
    }
    let binop = match op {
        A::Add => BinaryOp::Add,
        A::Sub => BinaryOp::Sub,
        A::Min => BinaryOp::Min,
        A::Max => BinaryOp::Max,
        A::And => BinaryOp::And,
        A::Or => BinaryOp::Or,
        A::Xor => BinaryOp::Xor,
        A::Exchange | A::CompareExchange => return Err(OpError::Undefined),
    };
    binary(binop, ty, old, val)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    #[test]
    fn rounding_to_halves_agrees_with_half_from_f32() {
        // `half::from_f32` rounds correctly from f32; the soft rounding must agree on every
        // kind of f32: random bits cover normals, subnormals, overflow and ties.
        let mut rng = SmallRng::seed_from_u64(1);
        for i in 0..200_000u32 {
            let bits: u32 = if i < 70_000 { i << 13 } else { rng.random() };
            let x = f32::from_bits(bits);
            if x.is_nan() {
                continue;
            }
            let ours = cast(S::F32, S::F16, u64::from(bits));
            assert_eq!(ours, u64::from(f16::from_f32(x).to_bits()), "f16 of {x:e}");
            let ours = cast(S::F32, S::BF16, u64::from(bits));
            assert_eq!(
                ours,
                u64::from(bf16::from_f32(x).to_bits()),
                "bf16 of {x:e}"
            );
        }
    }

    #[test]
    fn rounding_to_halves_from_f64_and_integers_is_single() {
        // 1 + 2^-8 + 2^-40 is above a bf16 tie; rounding through f32 first would lose it.
        let x = 1.0 + 2f64.powi(-8) + 2f64.powi(-40);
        assert_eq!(cast(S::F64, S::BF16, x.to_bits()), 0x3f81);
        // 2^60 + 2^52 + 1 as bf16: above the tie at 2^60 + 2^52.
        let v: i64 = (1 << 60) + (1 << 52) + 1;
        let got = cast(S::I64, S::BF16, v as u64);
        assert_eq!(float(S::BF16, got), ((1u64 << 60) + (1u64 << 53)) as f64);
        assert_eq!(
            float(S::F16, cast(S::F64, S::F16, 65519.0f64.to_bits())),
            65504.0
        );
        assert!(float(S::F16, cast(S::F64, S::F16, 65520.0f64.to_bits())).is_infinite());
        assert!(float(S::F16, cast(S::U64, S::F16, 1 << 40)).is_infinite());
        // The smallest f16 subnormal, and half of it (a tie, to even: zero).
        let tiny = 2f64.powi(-24);
        assert_eq!(cast(S::F64, S::F16, tiny.to_bits()), 1);
        assert_eq!(cast(S::F64, S::F16, (tiny / 2.0).to_bits()), 0);
        assert_eq!(cast(S::F64, S::F16, (tiny * 0.75).to_bits()), 1);
        assert_eq!(cast(S::F64, S::F16, (-tiny * 1.5).to_bits()), 0x8002);
    }

    #[test]
    fn integer_semantics_follow_rust() {
        assert_eq!(binary(BinaryOp::Shr, S::I8, 0x80, 9), Ok(0xc0));
        assert_eq!(binary(BinaryOp::Shr, S::U8, 0x80, 9), Ok(0x40));
        assert_eq!(binary(BinaryOp::Shl, S::U16, 1, 17), Ok(2));
        assert_eq!(
            binary(BinaryOp::Mul, S::U64, u64::MAX, u64::MAX),
            Ok(1),
            "wrapping"
        );
        assert_eq!(
            binary(BinaryOp::MulHigh, S::U64, u64::MAX, u64::MAX),
            Ok(u64::MAX - 1)
        );
        assert_eq!(
            binary(BinaryOp::MulHigh, S::I64, (-1i64) as u64, 5),
            Ok(u64::MAX)
        );
        assert_eq!(binary(BinaryOp::MulHigh, S::U32, 0x8000_0000, 4), Ok(2));
        assert_eq!(
            binary(BinaryOp::MulHigh, S::U16, 1, 1),
            Err(OpError::Undefined)
        );
        assert_eq!(
            binary(BinaryOp::Rem, S::I32, (-7i32) as u32 as u64, 2),
            Ok((-1i32) as u32 as u64)
        );
        assert_eq!(
            binary(BinaryOp::Div, S::I16, 0x8000, 0xffff),
            Err(OpError::DivideOverflow)
        );
        assert_eq!(
            binary(BinaryOp::Div, S::U8, 1, 0),
            Err(OpError::DivideByZero)
        );
        assert_eq!(cast(S::I8, S::U64, 0xff), u64::MAX);
        assert_eq!(cast(S::F32, S::U8, u64::from((-3.5f32).to_bits())), 0);
        assert_eq!(cast(S::F32, S::I8, u64::from(300f32.to_bits())), 0x7f);
        assert_eq!(cast(S::F64, S::I64, f64::NAN.to_bits()), 0);
        assert_eq!(cast(S::Bool, S::F16, 1), 0x3c00);
        assert!(compare(CmpOp::Lt, S::I64, u64::MAX, 0));
        assert!(compare(CmpOp::Ne, S::F32, 0x7fc0_0000, 0x7fc0_0000));
    }
}
