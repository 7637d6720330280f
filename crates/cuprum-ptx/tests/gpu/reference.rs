//! Reference semantics for the GPU checks: Rust's own operations on bit patterns of every
//! scalar type, and the operand values the cases use.

use cuprum_ir::ScalarType::{self as S};
use cuprum_ir::*;
use half::{bf16, f16};

pub(crate) fn mask(ty: ScalarType, bits: u64) -> u64 {
    Constant::new(ty, bits).bits
}

pub(crate) fn to_i128(ty: ScalarType, b: u64) -> i128 {
    match ty {
        S::Bool => (b & 1) as i128,
        S::I8 => b as u8 as i8 as i128,
        S::I16 => b as u16 as i16 as i128,
        S::I32 => b as u32 as i32 as i128,
        S::I64 => b as i64 as i128,
        _ => mask(ty, b) as i128,
    }
}

pub(crate) fn to_f64(ty: ScalarType, b: u64) -> f64 {
    match ty {
        S::F16 => f16::from_bits(b as u16).to_f64(),
        S::BF16 => bf16::from_bits(b as u16).to_f64(),
        S::F32 | S::Tf32 => f32::from_bits(b as u32) as f64,
        _ => f64::from_bits(b),
    }
}

pub(crate) fn f32_odd(x: f64) -> f32 {
    let r = x as f32;
    if x.is_nan() || r as f64 == x {
        return r;
    }
    let mut bits = r.to_bits();
    if (r as f64).abs() > x.abs() {
        bits -= 1;
    }
    f32::from_bits(bits | 1)
}

pub(crate) fn half_bits(ty: ScalarType, x: f32) -> u64 {
    if ty == S::F16 {
        f16::from_f32(x).to_bits() as u64
    } else {
        bf16::from_f32(x).to_bits() as u64
    }
}

/// Rust's `as` from an `f64` holding the exact source value.
pub(crate) fn from_f64(ty: ScalarType, x: f64) -> u64 {
    match ty {
        S::Bool => (x != 0.0) as u64,
        S::I8 => x as i8 as u8 as u64,
        S::I16 => x as i16 as u16 as u64,
        S::I32 => x as i32 as u32 as u64,
        S::I64 => x as i64 as u64,
        S::U8 => x as u8 as u64,
        S::U16 => x as u16 as u64,
        S::U32 => x as u32 as u64,
        S::U64 => x as u64,
        S::F32 => (x as f32).to_bits() as u64,
        S::F64 => x.to_bits(),
        S::F16 | S::BF16 => half_bits(ty, f32_odd(x)),
        S::Tf32 => u64::from(cuprum_ir::scalar::round_to_tf32((x as f32).to_bits())),
    }
}

/// Rust's `as` from an integer.
pub(crate) fn from_i128(ty: ScalarType, v: i128) -> u64 {
    match ty {
        S::F32 => (v as f32).to_bits() as u64,
        S::F64 => (v as f64).to_bits(),
        S::F16 | S::BF16 => {
            // Round to odd into f32 (exact below 2^24), then once to the half.
            let mag = v.unsigned_abs();
            let width = 128 - mag.leading_zeros();
            let r = if width <= 24 {
                mag as f32
            } else {
                let shift = width - 24;
                let sticky = (mag & ((1u128 << shift) - 1) != 0) as u128;
                ((mag >> shift) | sticky) as f32 * 2f32.powi(shift as i32)
            };
            half_bits(ty, if v < 0 { -r } else { r })
        }
        S::Bool => (v != 0) as u64,
        S::Tf32 => u64::from(cuprum_ir::scalar::round_to_tf32((v as f32).to_bits())),
        _ => mask(ty, v as u64),
    }
}

pub(crate) fn cast_ref(from: ScalarType, to: ScalarType, b: u64) -> u64 {
    if from.is_float() || from == S::Tf32 {
        from_f64(to, to_f64(from, b))
    } else {
        from_i128(to, to_i128(from, b))
    }
}

pub(crate) fn float_result(ty: ScalarType, x: f64) -> u64 {
    // Halves compute in f32 and round once; f32 results are f32 operations already.
    match ty {
        S::F64 => x.to_bits(),
        S::F32 => (x as f32).to_bits() as u64,
        _ => half_bits(ty, x as f32),
    }
}

pub(crate) fn int_binary(op: BinaryOp, ty: ScalarType, a: u64, b: u64) -> u64 {
    let (x, y) = (to_i128(ty, a), to_i128(ty, b));
    let amount = (b as u32 & (ty.bits() - 1)) as i128;
    let r = match op {
        BinaryOp::Add => x.wrapping_add(y),
        BinaryOp::Sub => x.wrapping_sub(y),
        BinaryOp::Mul => x.wrapping_mul(y),
        // Signed 64-bit products fit in i128; unsigned ones are formed in u128.
        BinaryOp::MulHigh if ty.is_signed_int() => (x * y) >> ty.bits(),
        BinaryOp::MulHigh => ((x as u128 * y as u128) >> ty.bits()) as i128,
        BinaryOp::Div => x / y,
        BinaryOp::Rem => x % y,
        BinaryOp::And => x & y,
        BinaryOp::Or => x | y,
        BinaryOp::Xor => x ^ y,
        BinaryOp::Shl => x << amount,
        BinaryOp::Shr => x >> amount,
        BinaryOp::Min => x.min(y),
        BinaryOp::Max => x.max(y),
        // Floats only: no integer case asks for it.
        BinaryOp::Atan2 | BinaryOp::Hypot => 0,
    };
    mask(ty, r as u64)
}

pub(crate) fn float_binary(op: BinaryOp, ty: ScalarType, a: u64, b: u64) -> u64 {
    if ty == S::F64 {
        let (x, y) = (f64::from_bits(a), f64::from_bits(b));
        let r = match op {
            BinaryOp::Add => x + y,
            BinaryOp::Sub => x - y,
            BinaryOp::Mul => x * y,
            BinaryOp::Div => x / y,
            BinaryOp::Rem => x % y,
            BinaryOp::Min => x.min(y),
            _ => x.max(y),
        };
        return r.to_bits();
    }
    let (x, y) = (to_f64(ty, a) as f32, to_f64(ty, b) as f32);
    let r = match op {
        BinaryOp::Add => x + y,
        BinaryOp::Sub => x - y,
        BinaryOp::Mul => x * y,
        BinaryOp::Div => x / y,
        BinaryOp::Rem => x % y,
        BinaryOp::Min => x.min(y),
        _ => x.max(y),
    };
    float_result(ty, r as f64)
}

pub(crate) fn float_unary(op: UnaryOp, ty: ScalarType, a: u64) -> u64 {
    let sign = 1u64 << (ty.bits() - 1);
    match op {
        UnaryOp::Neg => return a ^ sign,
        UnaryOp::Abs => return a & !sign,
        _ => {}
    }
    if ty == S::F64 {
        let x = f64::from_bits(a);
        let r = match op {
            UnaryOp::Sqrt => x.sqrt(),
            UnaryOp::Floor => x.floor(),
            UnaryOp::Ceil => x.ceil(),
            UnaryOp::Round => x.round(),
            _ => x.trunc(),
        };
        return r.to_bits();
    }
    let x = to_f64(ty, a) as f32;
    let xd = x as f64;
    let r = match op {
        UnaryOp::Sqrt => x.sqrt() as f64,
        UnaryOp::Floor => x.floor() as f64,
        UnaryOp::Ceil => x.ceil() as f64,
        UnaryOp::Round => x.round() as f64,
        UnaryOp::Trunc => x.trunc() as f64,
        // The approximate functions: the f64 result, rounded once.
        UnaryOp::Exp => xd.exp(),
        UnaryOp::Exp2 => xd.exp2(),
        UnaryOp::Ln => xd.ln(),
        UnaryOp::Log2 => xd.log2(),
        UnaryOp::Sin => xd.sin(),
        UnaryOp::Cos => xd.cos(),
        _ => xd.tanh(),
    };
    float_result(ty, r)
}

pub(crate) fn compare(op: CmpOp, ty: ScalarType, a: u64, b: u64) -> u64 {
    let r = if ty.is_float() {
        let (x, y) = (to_f64(ty, a), to_f64(ty, b));
        match op {
            CmpOp::Eq => x == y,
            CmpOp::Ne => x != y,
            CmpOp::Lt => x < y,
            CmpOp::Le => x <= y,
            CmpOp::Gt => x > y,
            CmpOp::Ge => x >= y,
        }
    } else {
        let (x, y) = (to_i128(ty, a), to_i128(ty, b));
        match op {
            CmpOp::Eq => x == y,
            CmpOp::Ne => x != y,
            CmpOp::Lt => x < y,
            CmpOp::Le => x <= y,
            CmpOp::Gt => x > y,
            CmpOp::Ge => x >= y,
        }
    };
    r as u64
}

pub(crate) struct Rng(pub(crate) u64);
impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

pub(crate) fn float_specials(ty: ScalarType) -> Vec<u64> {
    let v = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        -0.5,
        1.5,
        2.5,
        -2.5,
        3.5,
        0.499_999_97,
        -0.499_999_97,
        2.0,
        3.0,
        7.0,
        100.0,
        -100.0,
        1e-3,
        65504.0,
        65520.0,
        1e5,
        3e9,
        -3e9,
        1e19,
        -1e19,
        1e30,
        -1e30,
        1e-30,
        1e-40,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        255.5,
        -128.9,
        4e9,
        40000.0,
        -40000.0,
        8_388_609.0,
        0.1,
        1.0 / 3.0,
    ];
    let mut out: Vec<u64> = v.iter().map(|&x| from_f64(ty, x)).collect();
    out.push(mask(ty, 1)); // smallest subnormal
    out.push(mask(ty, u64::MAX >> 1)); // a NaN with payload
    out
}

pub(crate) fn int_specials(ty: ScalarType) -> Vec<u64> {
    let w = ty.bits();
    let mut v = vec![0, 1, 2, 3, 7, 100, u64::MAX, u64::MAX - 1, 1u64 << (w - 1)];
    v.push((1u64 << (w - 1)).wrapping_sub(1));
    v.push((1 << 24) + 1);
    v.push((1 << 24) + (1 << 16) + 1);
    v.push(u64::MAX << 20);
    v.push(65520);
    v.into_iter().map(|b| mask(ty, b)).collect()
}

pub(crate) fn specials(ty: ScalarType) -> Vec<u64> {
    if ty == S::Bool {
        vec![0, 1]
    } else if ty.is_float() {
        float_specials(ty)
    } else {
        int_specials(ty)
    }
}

/// Operand bit patterns of `ty`: the specials and random patterns.
pub(crate) fn operands(ty: ScalarType, rng: &mut Rng, random: usize) -> Vec<u64> {
    let mut v = specials(ty);
    for _ in 0..random {
        let r = rng.next();
        v.push(mask(ty, r));
        if ty.is_float() {
            // Moderate values too: random patterns are mostly huge or tiny.
            let x = (r >> 11) as f64 / (1u64 << 53) as f64 * 200.0 - 100.0;
            v.push(from_f64(ty, x));
        }
    }
    v
}

pub(crate) fn pairs(a: &[u64], b: &[u64], limit: usize) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    for &x in a {
        for &y in b {
            out.push((x, y));
            if out.len() >= limit {
                return out;
            }
        }
    }
    out
}
