//! The scalar operations of the IR, lane by lane: `unary`, `binary`, `mul_add`, `compare`,
//! `select` (and `cast` in `cast.rs`), over `N` lanes at once.
//!
//! Registers hold each lane's value as bits zero-extended into a `u64` (as
//! [`crate::Constant`]). Every function here dispatches on the operation and type once, then
//! runs a tight loop over the lanes through [`Num`], which moves values between those bits and
//! Rust's own types, so the semantics are Rust's: wrapping integer arithmetic,
//! `wrapping_shl`/`wrapping_shr`, IEEE floats, `f32::min`, `mul_add`, `round`. `F16`/`BF16`
//! arithmetic is done in `f32` and rounded back, as the IR documents.
//!
//! Pure operations compute every lane, active or not (a value an inactive lane never reads is
//! harmless, and the branch-free loop is faster); only integer division looks at the active
//! mask, because a zero divisor in an active lane is an error.

use super::math::{self, Real};
use crate::kernel::{BinaryOp, CmpOp, UnaryOp};
use crate::types::ScalarType;
use half::{bf16, f16};

/// A Rust type that a register's bits can be read as and written from.
pub trait Num: Copy {
    /// The value held in the low bits of `bits`.
    fn get(bits: u64) -> Self;
    /// The value's bits, zero-extended.
    fn put(self) -> u64;
}

macro_rules! num_int {
    ($($t:ty => $u:ty),*) => {$(
        impl Num for $t {
            #[inline(always)]
            fn get(bits: u64) -> Self { bits as $u as $t }
            #[inline(always)]
            fn put(self) -> u64 { self as $u as u64 }
        }
    )*};
}
num_int!(u8 => u8, u16 => u16, u32 => u32, u64 => u64, i8 => u8, i16 => u16, i32 => u32, i64 => u64);

impl Num for bool {
    #[inline(always)]
    fn get(bits: u64) -> Self {
        bits != 0
    }
    #[inline(always)]
    fn put(self) -> u64 {
        self as u64
    }
}
impl Num for f32 {
    #[inline(always)]
    fn get(bits: u64) -> Self {
        f32::from_bits(bits as u32)
    }
    #[inline(always)]
    fn put(self) -> u64 {
        self.to_bits() as u64
    }
}
impl Num for f64 {
    #[inline(always)]
    fn get(bits: u64) -> Self {
        f64::from_bits(bits)
    }
    #[inline(always)]
    fn put(self) -> u64 {
        self.to_bits()
    }
}
impl Num for f16 {
    #[inline(always)]
    fn get(bits: u64) -> Self {
        f16::from_bits(bits as u16)
    }
    #[inline(always)]
    fn put(self) -> u64 {
        self.to_bits() as u64
    }
}
impl Num for bf16 {
    #[inline(always)]
    fn get(bits: u64) -> Self {
        bf16::from_bits(bits as u16)
    }
    #[inline(always)]
    fn put(self) -> u64 {
        self.to_bits() as u64
    }
}

/// `out[i] = f(a[i])` for every lane.
#[inline(always)]
pub(crate) fn map1<const N: usize, A: Num, R: Num>(
    a: &[u64; N],
    out: &mut [u64; N],
    f: impl Fn(A) -> R,
) {
    for (o, &x) in out.iter_mut().zip(a) {
        *o = f(A::get(x)).put();
    }
}

/// `out[i] = f(a[i], b[i])` for every lane.
#[inline(always)]
pub(crate) fn map2<const N: usize, A: Num, B: Num, R: Num>(
    a: &[u64; N],
    b: &[u64; N],
    out: &mut [u64; N],
    f: impl Fn(A, B) -> R,
) {
    for i in 0..N {
        out[i] = f(A::get(a[i]), B::get(b[i])).put();
    }
}

#[inline(always)]
fn map3<const N: usize, T: Num>(
    a: &[u64; N],
    b: &[u64; N],
    c: &[u64; N],
    out: &mut [u64; N],
    f: impl Fn(T, T, T) -> T,
) {
    for i in 0..N {
        out[i] = f(T::get(a[i]), T::get(b[i]), T::get(c[i])).put();
    }
}

/// Why an operation could not be evaluated for some active lane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpFault {
    /// An integer division or remainder by zero, in this lane.
    DivideByZero {
        /// The first active lane that divided by zero.
        lane: u32,
    },
    /// A signed `MIN / -1` (or `MIN % -1`), which overflows, in this lane.
    DivideOverflow {
        /// The first active lane that overflowed.
        lane: u32,
    },
    /// The operation is not defined on the type (the validator rules this out).
    Unsupported,
}

macro_rules! int_unary {
    ($t:ty, $op:expr, $a:expr, $out:expr) => {
        match $op {
            UnaryOp::Neg => map1::<N, $t, $t>($a, $out, |x| x.wrapping_neg()),
            UnaryOp::Not => map1::<N, $t, $t>($a, $out, |x| !x),
            UnaryOp::CountOnes => map1::<N, $t, $t>($a, $out, |x| x.count_ones() as $t),
            UnaryOp::LeadingZeros => map1::<N, $t, $t>($a, $out, |x| x.leading_zeros() as $t),
            UnaryOp::TrailingZeros => map1::<N, $t, $t>($a, $out, |x| x.trailing_zeros() as $t),
            _ => return Err(OpFault::Unsupported),
        }
    };
}

macro_rules! float_unary {
    // `$t` is the storage type, computed as `$c` through `$to` and `$from`.
    ($t:ty, $op:expr, $a:expr, $out:expr, $to:expr, $from:expr) => {{
        let (to, from) = ($to, $from);
        match $op {
            UnaryOp::Neg => map1::<N, $t, $t>($a, $out, |x| from(-to(x))),
            UnaryOp::Abs => map1::<N, $t, $t>($a, $out, |x| from(to(x).abs())),
            UnaryOp::Sqrt => map1::<N, $t, $t>($a, $out, |x| from(to(x).sqrt())),
            UnaryOp::Floor => map1::<N, $t, $t>($a, $out, |x| from(to(x).floor())),
            UnaryOp::Ceil => map1::<N, $t, $t>($a, $out, |x| from(to(x).ceil())),
            UnaryOp::Round => map1::<N, $t, $t>($a, $out, |x| from(to(x).round())),
            UnaryOp::Trunc => map1::<N, $t, $t>($a, $out, |x| from(to(x).trunc())),
            UnaryOp::Exp => map1::<N, $t, $t>($a, $out, |x| from(to(x).exp())),
            UnaryOp::Exp2 => map1::<N, $t, $t>($a, $out, |x| from(to(x).exp2())),
            UnaryOp::Exp2Ftz => {
                map1::<N, $t, $t>($a, $out, |x| from(to(x).flushed().exp2().flushed()))
            }
            UnaryOp::Ln => map1::<N, $t, $t>($a, $out, |x| from(to(x).ln())),
            UnaryOp::Log2 => map1::<N, $t, $t>($a, $out, |x| from(to(x).log2())),
            UnaryOp::Sin => map1::<N, $t, $t>($a, $out, |x| from(to(x).sin())),
            UnaryOp::Cos => map1::<N, $t, $t>($a, $out, |x| from(to(x).cos())),
            UnaryOp::Tanh => map1::<N, $t, $t>($a, $out, |x| from(to(x).tanh())),
            UnaryOp::Tan => map1::<N, $t, $t>($a, $out, |x| from(to(x).via(math::tan))),
            UnaryOp::Atan => map1::<N, $t, $t>($a, $out, |x| from(to(x).via(math::atan))),
            UnaryOp::Sinh => map1::<N, $t, $t>($a, $out, |x| from(to(x).via(math::sinh))),
            UnaryOp::Cosh => map1::<N, $t, $t>($a, $out, |x| from(to(x).via(math::cosh))),
            UnaryOp::Asinh => map1::<N, $t, $t>($a, $out, |x| from(to(x).via(math::asinh))),
            UnaryOp::Acosh => map1::<N, $t, $t>($a, $out, |x| from(to(x).via(math::acosh))),
            UnaryOp::Atanh => map1::<N, $t, $t>($a, $out, |x| from(to(x).via(math::atanh))),
            UnaryOp::ExpM1 => map1::<N, $t, $t>($a, $out, |x| from(to(x).via(math::exp_m1))),
            UnaryOp::Ln1p => map1::<N, $t, $t>($a, $out, |x| from(to(x).via(math::ln_1p))),
            UnaryOp::Not | UnaryOp::CountOnes | UnaryOp::LeadingZeros | UnaryOp::TrailingZeros => {
                return Err(OpFault::Unsupported);
            }
        }
    }};
}

/// `out = op(a)` for values of type `ty`.
pub fn unary<const N: usize>(
    op: UnaryOp,
    ty: ScalarType,
    a: &[u64; N],
    out: &mut [u64; N],
) -> Result<(), OpFault> {
    use ScalarType as S;
    match ty {
        S::Bool => match op {
            UnaryOp::Not => map1::<N, bool, bool>(a, out, |x| !x),
            _ => return Err(OpFault::Unsupported),
        },
        S::I8 => int_unary!(i8, op, a, out),
        S::I16 => int_unary!(i16, op, a, out),
        S::I32 => int_unary!(i32, op, a, out),
        S::I64 => int_unary!(i64, op, a, out),
        S::U8 => int_unary!(u8, op, a, out),
        S::U16 => int_unary!(u16, op, a, out),
        S::U32 => int_unary!(u32, op, a, out),
        S::U64 => int_unary!(u64, op, a, out),
        S::F32 => float_unary!(f32, op, a, out, |x: f32| x, |x: f32| x),
        S::F64 => float_unary!(f64, op, a, out, |x: f64| x, |x: f64| x),
        // Sign operations on halves are exact bit operations (NaN payloads kept).
        S::F16 | S::BF16 if op == UnaryOp::Neg => map1::<N, u16, u16>(a, out, |x| x ^ 0x8000),
        S::F16 | S::BF16 if op == UnaryOp::Abs => map1::<N, u16, u16>(a, out, |x| x & 0x7fff),
        S::F16 => float_unary!(f16, op, a, out, f16::to_f32, f16::from_f32),
        S::BF16 => float_unary!(bf16, op, a, out, bf16::to_f32, bf16::from_f32),
        // `tf32` has no arithmetic (see `ScalarType::Tf32`).
        S::Tf32 => return Err(OpFault::Unsupported),
    }
    Ok(())
}

/// Checks the divisors of the active lanes of an integer division.
#[inline]
fn check_div<const N: usize, T: Num + PartialEq>(
    a: &[u64; N],
    b: &[u64; N],
    mask: u32,
    zero: T,
    overflow: Option<(T, T)>,
) -> Result<(), OpFault> {
    let mut m = mask;
    while m != 0 {
        let lane = m.trailing_zeros();
        m &= m - 1;
        let (x, y) = (T::get(a[lane as usize]), T::get(b[lane as usize]));
        if y == zero {
            return Err(OpFault::DivideByZero { lane });
        }
        if let Some((min, minus_one)) = overflow
            && x == min
            && y == minus_one
        {
            return Err(OpFault::DivideOverflow { lane });
        }
    }
    Ok(())
}

macro_rules! int_binary {
    ($t:ty, $signed:expr, $op:expr, $a:expr, $b:expr, $out:expr, $mask:expr) => {{
        let overflow: Option<($t, $t)> = if $signed {
            Some((<$t>::MIN, (0 as $t).wrapping_sub(1)))
        } else {
            None
        };
        match $op {
            BinaryOp::Add => map2::<N, $t, $t, $t>($a, $b, $out, |x, y| x.wrapping_add(y)),
            BinaryOp::Sub => map2::<N, $t, $t, $t>($a, $b, $out, |x, y| x.wrapping_sub(y)),
            BinaryOp::Mul => map2::<N, $t, $t, $t>($a, $b, $out, |x, y| x.wrapping_mul(y)),
            // Sign- or zero-extended to 128 bits, the product modulo 2^128 is exact for
            // 64-bit operands; its bits above the type's width are the high half.
            BinaryOp::MulHigh => map2::<N, $t, $t, $t>($a, $b, $out, |x, y| {
                ((x as u128).wrapping_mul(y as u128) >> <$t>::BITS) as $t
            }),
            BinaryOp::Div => {
                check_div::<N, $t>($a, $b, $mask, 0, overflow)?;
                map2::<N, $t, $t, $t>($a, $b, $out, |x, y| x.checked_div(y).unwrap_or(0))
            }
            BinaryOp::Rem => {
                check_div::<N, $t>($a, $b, $mask, 0, overflow)?;
                map2::<N, $t, $t, $t>($a, $b, $out, |x, y| x.checked_rem(y).unwrap_or(0))
            }
            BinaryOp::And => map2::<N, $t, $t, $t>($a, $b, $out, |x, y| x & y),
            BinaryOp::Or => map2::<N, $t, $t, $t>($a, $b, $out, |x, y| x | y),
            BinaryOp::Xor => map2::<N, $t, $t, $t>($a, $b, $out, |x, y| x ^ y),
            BinaryOp::Shl => map2::<N, $t, u32, $t>($a, $b, $out, |x, s| x.wrapping_shl(s)),
            BinaryOp::Shr => map2::<N, $t, u32, $t>($a, $b, $out, |x, s| x.wrapping_shr(s)),
            BinaryOp::Min => map2::<N, $t, $t, $t>($a, $b, $out, |x, y| x.min(y)),
            BinaryOp::Max => map2::<N, $t, $t, $t>($a, $b, $out, |x, y| x.max(y)),
            BinaryOp::Atan2 | BinaryOp::Hypot => return Err(OpFault::Unsupported),
        }
    }};
}

macro_rules! float_binary {
    ($t:ty, $op:expr, $a:expr, $b:expr, $out:expr, $to:expr, $from:expr) => {{
        let (to, from) = ($to, $from);
        match $op {
            BinaryOp::Add => map2::<N, $t, $t, $t>($a, $b, $out, |x, y| from(to(x) + to(y))),
            BinaryOp::Sub => map2::<N, $t, $t, $t>($a, $b, $out, |x, y| from(to(x) - to(y))),
            BinaryOp::Mul => map2::<N, $t, $t, $t>($a, $b, $out, |x, y| from(to(x) * to(y))),
            BinaryOp::Div => map2::<N, $t, $t, $t>($a, $b, $out, |x, y| from(to(x) / to(y))),
            BinaryOp::Rem => map2::<N, $t, $t, $t>($a, $b, $out, |x, y| from(to(x) % to(y))),
            BinaryOp::Min => map2::<N, $t, $t, $t>($a, $b, $out, |x, y| from(to(x).min(to(y)))),
            BinaryOp::Max => map2::<N, $t, $t, $t>($a, $b, $out, |x, y| from(to(x).max(to(y)))),
            BinaryOp::Atan2 => {
                map2::<N, $t, $t, $t>($a, $b, $out, |y, x| from(to(y).via2(to(x), math::atan2)))
            }
            BinaryOp::Hypot => {
                map2::<N, $t, $t, $t>($a, $b, $out, |x, y| from(to(x).via2(to(y), math::hypot)))
            }
            BinaryOp::And
            | BinaryOp::Or
            | BinaryOp::Xor
            | BinaryOp::Shl
            | BinaryOp::Shr
            | BinaryOp::MulHigh => {
                return Err(OpFault::Unsupported);
            }
        }
    }};
}

/// `out = a op b` for operands of type `ty` (the shift amount `b` is `U32`). Only integer
/// division and remainder can fail, and only for a lane in `mask`.
pub fn binary<const N: usize>(
    op: BinaryOp,
    ty: ScalarType,
    a: &[u64; N],
    b: &[u64; N],
    out: &mut [u64; N],
    mask: u32,
) -> Result<(), OpFault> {
    use ScalarType as S;
    match ty {
        S::Bool => match op {
            BinaryOp::And => map2::<N, u64, u64, u64>(a, b, out, |x, y| x & y),
            BinaryOp::Or => map2::<N, u64, u64, u64>(a, b, out, |x, y| x | y),
            BinaryOp::Xor => map2::<N, u64, u64, u64>(a, b, out, |x, y| x ^ y),
            _ => return Err(OpFault::Unsupported),
        },
        S::I8 => int_binary!(i8, true, op, a, b, out, mask),
        S::I16 => int_binary!(i16, true, op, a, b, out, mask),
        S::I32 => int_binary!(i32, true, op, a, b, out, mask),
        S::I64 => int_binary!(i64, true, op, a, b, out, mask),
        S::U8 => int_binary!(u8, false, op, a, b, out, mask),
        S::U16 => int_binary!(u16, false, op, a, b, out, mask),
        S::U32 => int_binary!(u32, false, op, a, b, out, mask),
        S::U64 => int_binary!(u64, false, op, a, b, out, mask),
        S::F32 => float_binary!(f32, op, a, b, out, |x: f32| x, |x: f32| x),
        S::F64 => float_binary!(f64, op, a, b, out, |x: f64| x, |x: f64| x),
        S::F16 => float_binary!(f16, op, a, b, out, f16::to_f32, f16::from_f32),
        S::BF16 => float_binary!(bf16, op, a, b, out, bf16::to_f32, bf16::from_f32),
        S::Tf32 => return Err(OpFault::Unsupported),
    }
    Ok(())
}

/// `out = a * b + c` with one rounding (for `F16`/`BF16`: one `f32` rounding, then back).
pub fn mul_add<const N: usize>(
    ty: ScalarType,
    a: &[u64; N],
    b: &[u64; N],
    c: &[u64; N],
    out: &mut [u64; N],
) -> Result<(), OpFault> {
    use ScalarType as S;
    match ty {
        S::F32 => map3::<N, f32>(a, b, c, out, |x, y, z| x.mul_add(y, z)),
        S::F64 => map3::<N, f64>(a, b, c, out, |x, y, z| x.mul_add(y, z)),
        S::F16 => map3::<N, f16>(a, b, c, out, |x, y, z| {
            f16::from_f32(x.to_f32().mul_add(y.to_f32(), z.to_f32()))
        }),
        S::BF16 => map3::<N, bf16>(a, b, c, out, |x, y, z| {
            bf16::from_f32(x.to_f32().mul_add(y.to_f32(), z.to_f32()))
        }),
        _ => return Err(OpFault::Unsupported),
    }
    Ok(())
}

macro_rules! cmp_lanes {
    ($t:ty, $op:expr, $a:expr, $b:expr, $out:expr, $to:expr) => {{
        let to = $to;
        match $op {
            CmpOp::Eq => map2::<N, $t, $t, bool>($a, $b, $out, |x, y| to(x) == to(y)),
            CmpOp::Ne => map2::<N, $t, $t, bool>($a, $b, $out, |x, y| to(x) != to(y)),
            CmpOp::Lt => map2::<N, $t, $t, bool>($a, $b, $out, |x, y| to(x) < to(y)),
            CmpOp::Le => map2::<N, $t, $t, bool>($a, $b, $out, |x, y| to(x) <= to(y)),
            CmpOp::Gt => map2::<N, $t, $t, bool>($a, $b, $out, |x, y| to(x) > to(y)),
            CmpOp::Ge => map2::<N, $t, $t, bool>($a, $b, $out, |x, y| to(x) >= to(y)),
        }
    }};
}

/// `out = a op b` as `Bool`; IEEE on floats (only `Ne` is true with a NaN).
pub fn compare<const N: usize>(
    op: CmpOp,
    ty: ScalarType,
    a: &[u64; N],
    b: &[u64; N],
    out: &mut [u64; N],
) {
    use ScalarType as S;
    match ty {
        S::Bool | S::U8 | S::U16 | S::U32 | S::U64 => cmp_lanes!(u64, op, a, b, out, |x: u64| x),
        S::I8 => cmp_lanes!(i8, op, a, b, out, |x: i8| x),
        S::I16 => cmp_lanes!(i16, op, a, b, out, |x: i16| x),
        S::I32 => cmp_lanes!(i32, op, a, b, out, |x: i32| x),
        S::I64 => cmp_lanes!(i64, op, a, b, out, |x: i64| x),
        // A `tf32` compares as the `f32` it is (the validator refuses it; the value is defined).
        S::F32 | S::Tf32 => cmp_lanes!(f32, op, a, b, out, |x: f32| x),
        S::F64 => cmp_lanes!(f64, op, a, b, out, |x: f64| x),
        S::F16 => cmp_lanes!(f16, op, a, b, out, f16::to_f32),
        S::BF16 => cmp_lanes!(bf16, op, a, b, out, bf16::to_f32),
    }
}

/// `out = cond ? t : f`, lane by lane.
#[inline]
pub fn select<const N: usize>(cond: &[u64; N], t: &[u64; N], f: &[u64; N], out: &mut [u64; N]) {
    for i in 0..N {
        out[i] = if cond[i] != 0 { t[i] } else { f[i] };
    }
}
