//! `Op::Cast`: Rust's `as` between every pair of scalar types, including `f16`/`bf16`.
//!
//! Each source is widened exactly (integers and `Bool` to `i128`, floats to `f64`), then
//! converted with Rust's `as` to the destination, which gives the same result as a direct `as`
//! (truncation or extension by the source's signedness; float to int toward zero, saturating,
//! NaN to 0; int to float and float to float round to nearest even). Rust has no `as` to
//! `f16`/`bf16`, and `half`'s `f64` conversions drop low bits before rounding, so conversions
//! to the halves round to odd into `f32` first (exact enough that the final rounding to the
//! half is correct: 24 >= 2 * 11 + 2) and then round once with `half`'s `from_f32`.

use half::{bf16, f16};

use super::lanes::{Num, map1};
use crate::types::ScalarType;

/// Rounds `x` to `f32` with round-to-odd: exact results stay, inexact ones truncate toward zero
/// and set the last mantissa bit.
pub fn f64_to_f32_odd(x: f64) -> f32 {
    let r = x as f32;
    if x.is_nan() || r as f64 == x {
        return r;
    }
    let mut bits = r.to_bits();
    if (r as f64).abs() > x.abs() {
        // `r` rounded away from zero (perhaps to infinity): step back toward zero.
        bits -= 1;
    }
    f32::from_bits(bits | 1)
}

/// Rounds an integer to `f32` with round-to-odd.
fn int_to_f32_odd(v: i128) -> f32 {
    let neg = v < 0;
    let mag = v.unsigned_abs();
    let width = 128 - mag.leading_zeros();
    let r = if width <= 24 {
        mag as f32
    } else {
        let shift = width - 24;
        let sticky = (mag & ((1u128 << shift) - 1) != 0) as u128;
        // (t | sticky) has at most 24 significant bits: exact in f32, as is the scaling.
        ((mag >> shift) | sticky) as f32 * (2.0f32).powi(shift as i32)
    };
    if neg { -r } else { r }
}

/// A destination of a cast from an integer or `Bool` (widened to `i128`).
pub(crate) trait FromInt: Num {
    fn from_int(v: i128) -> Self;
}
/// A destination of a cast from a float (widened to `f64`).
pub(crate) trait FromFloat: Num {
    fn from_float(v: f64) -> Self;
}

macro_rules! prim_dst {
    ($($t:ty),*) => {$(
        impl FromInt for $t {
            #[inline(always)]
            fn from_int(v: i128) -> Self { v as $t }
        }
        impl FromFloat for $t {
            #[inline(always)]
            fn from_float(v: f64) -> Self { v as $t }
        }
    )*};
}
prim_dst!(u8, u16, u32, u64, i8, i16, i32, i64, f32, f64);

impl FromInt for bool {
    #[inline(always)]
    fn from_int(v: i128) -> Self {
        v != 0
    }
}
impl FromFloat for bool {
    #[inline(always)]
    fn from_float(v: f64) -> Self {
        v != 0.0
    }
}
impl FromInt for f16 {
    #[inline]
    fn from_int(v: i128) -> Self {
        f16::from_f32(int_to_f32_odd(v))
    }
}
impl FromFloat for f16 {
    #[inline]
    fn from_float(v: f64) -> Self {
        f16::from_f32(f64_to_f32_odd(v))
    }
}
impl FromInt for bf16 {
    #[inline]
    fn from_int(v: i128) -> Self {
        bf16::from_f32(int_to_f32_odd(v))
    }
}
impl FromFloat for bf16 {
    #[inline]
    fn from_float(v: f64) -> Self {
        bf16::from_f32(f64_to_f32_odd(v))
    }
}

/// A source read as an exact `i128`.
trait IntSrc: Num {
    fn wide(self) -> i128;
}
macro_rules! int_src {
    ($($t:ty),*) => {$(
        impl IntSrc for $t {
            #[inline(always)]
            fn wide(self) -> i128 { self as i128 }
        }
    )*};
}
int_src!(u8, u16, u32, u64, i8, i16, i32, i64);
impl IntSrc for bool {
    #[inline(always)]
    fn wide(self) -> i128 {
        self as i128
    }
}

/// A source read as an exact `f64`.
trait FloatSrc: Num {
    fn wide(self) -> f64;
}
impl FloatSrc for f32 {
    #[inline(always)]
    fn wide(self) -> f64 {
        self as f64
    }
}
impl FloatSrc for f64 {
    #[inline(always)]
    fn wide(self) -> f64 {
        self
    }
}
impl FloatSrc for f16 {
    #[inline(always)]
    fn wide(self) -> f64 {
        self.to_f64()
    }
}
impl FloatSrc for bf16 {
    #[inline(always)]
    fn wide(self) -> f64 {
        self.to_f64()
    }
}

macro_rules! to_each {
    ($to:expr, $go:ident, $src:ty, $a:expr, $out:expr) => {
        match $to {
            ScalarType::Bool => $go::<N, $src, bool>($a, $out),
            ScalarType::I8 => $go::<N, $src, i8>($a, $out),
            ScalarType::I16 => $go::<N, $src, i16>($a, $out),
            ScalarType::I32 => $go::<N, $src, i32>($a, $out),
            ScalarType::I64 => $go::<N, $src, i64>($a, $out),
            ScalarType::U8 => $go::<N, $src, u8>($a, $out),
            ScalarType::U16 => $go::<N, $src, u16>($a, $out),
            ScalarType::U32 => $go::<N, $src, u32>($a, $out),
            ScalarType::U64 => $go::<N, $src, u64>($a, $out),
            ScalarType::F16 => $go::<N, $src, f16>($a, $out),
            ScalarType::BF16 => $go::<N, $src, bf16>($a, $out),
            ScalarType::F32 => $go::<N, $src, f32>($a, $out),
            ScalarType::F64 => $go::<N, $src, f64>($a, $out),
            ScalarType::Tf32 => {
                $go::<N, $src, f32>($a, $out);
                for bits in $out.iter_mut() {
                    *bits = u64::from(round_to_tf32(*bits as u32));
                }
            }
        }
    };
}

fn from_int_src<const N: usize, S: IntSrc, D: FromInt>(a: &[u64; N], out: &mut [u64; N]) {
    map1::<N, S, D>(a, out, |x| D::from_int(x.wide()));
}

fn from_float_src<const N: usize, S: FloatSrc, D: FromFloat>(a: &[u64; N], out: &mut [u64; N]) {
    map1::<N, S, D>(a, out, |x| D::from_float(x.wide()));
}

/// `out = a as to`, for `a` of type `from` (Rust's `as`; see the module docs).
pub fn cast<const N: usize>(from: ScalarType, to: ScalarType, a: &[u64; N], out: &mut [u64; N]) {
    use ScalarType as S;
    match from {
        S::Bool => to_each!(to, from_int_src, bool, a, out),
        S::I8 => to_each!(to, from_int_src, i8, a, out),
        S::I16 => to_each!(to, from_int_src, i16, a, out),
        S::I32 => to_each!(to, from_int_src, i32, a, out),
        S::I64 => to_each!(to, from_int_src, i64, a, out),
        S::U8 => to_each!(to, from_int_src, u8, a, out),
        S::U16 => to_each!(to, from_int_src, u16, a, out),
        S::U32 => to_each!(to, from_int_src, u32, a, out),
        S::U64 => to_each!(to, from_int_src, u64, a, out),
        S::F16 => to_each!(to, from_float_src, f16, a, out),
        S::BF16 => to_each!(to, from_float_src, bf16, a, out),
        S::F32 => to_each!(to, from_float_src, f32, a, out),
        S::F64 => to_each!(to, from_float_src, f64, a, out),
        // A `tf32` is an `f32` value (its low mantissa bits zero).
        S::Tf32 => to_each!(to, from_float_src, f32, a, out),
    }
}

/// The canonical `tf32` NaN: what every NaN becomes when cast to `tf32`.
pub const TF32_NAN: u32 = 0x7FFF_E000;

/// The `f32` with bits `bits` rounded to the nearest `tf32` (10 mantissa bits), ties away
/// from zero, as the bits of an `f32` whose low 13 mantissa bits are zero: the one definition
/// of `ScalarType::Tf32`'s rounding, which the PTX writer emits as integer instructions. A
/// value beyond the largest `tf32` rounds to infinity; infinities stay; every NaN becomes
/// [`TF32_NAN`]. Adding half of the dropped bits' weight to the sign-magnitude bits carries
/// into the exponent exactly where the rounding crosses a binade (or reaches infinity).
pub const fn round_to_tf32(bits: u32) -> u32 {
    if bits & 0x7FFF_FFFF > 0x7F80_0000 {
        return TF32_NAN;
    }
    bits.wrapping_add(0x1000) & 0xFFFF_E000
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Correctly rounded f64 -> bf16 by exhaustive neighbour search (reference).
    fn bf16_ref(x: f64) -> u16 {
        let lo = bf16::from_f64(x);
        // Candidates around half's answer; choose the nearest, ties to even.
        let mut best = lo.to_bits();
        let mut best_err = f64::INFINITY;
        for d in -2i32..=2 {
            let b = (lo.to_bits() as i32 + d) as u16;
            let v = bf16::from_bits(b);
            if v.is_nan() {
                continue;
            }
            let err = (v.to_f64() - x).abs();
            if err < best_err || (err == best_err && b & 1 == 0) {
                best = b;
                best_err = err;
            }
        }
        best
    }

    /// `round_to_tf32` against the nearest of the two `tf32` neighbours, ties away from zero.
    #[test]
    fn tf32_rounds_to_nearest_ties_away() {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut cases: Vec<u32> = vec![0, 0x8000_0000, 0x3F80_1000, 0xBF80_1000, 0x3F80_0FFF];
        cases.extend([
            0x7F7F_FFFF,
            0x7F80_0000,
            0xFF80_0000,
            0x0000_1000,
            0x0000_0FFF,
        ]);
        for _ in 0..100_000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            cases.push(seed as u32);
        }
        for bits in cases {
            let x = f32::from_bits(bits);
            let got = round_to_tf32(bits);
            if x.is_nan() {
                assert_eq!(got, TF32_NAN);
                continue;
            }
            assert_eq!(got & 0x1FFF, 0, "{bits:#x}");
            let down = f64::from(f32::from_bits(bits & 0xFFFF_E000));
            let up_bits = (bits & 0xFFFF_E000) + 0x2000;
            let x = f64::from(x);
            // Past the largest finite `tf32` the next one up is 2^128 (which overflows).
            let up = if up_bits & 0x7FFF_FFFF == 0x7F80_0000 {
                2f64.powi(128).copysign(x)
            } else {
                f64::from(f32::from_bits(up_bits))
            };
            let want = if (x - down).abs() < (up - x).abs() || x.is_infinite() {
                bits & 0xFFFF_E000
            } else {
                up_bits
            };
            assert_eq!(got, want, "{bits:#x}");
        }
        let mut out = [0u64; 1];
        cast::<1>(
            ScalarType::F64,
            ScalarType::Tf32,
            &[1.0f64.to_bits()],
            &mut out,
        );
        assert_eq!(out[0], 0x3F80_0000);
        cast::<1>(ScalarType::Tf32, ScalarType::F32, &[0x3F80_2000], &mut out);
        assert_eq!(out[0], 0x3F80_2000);
    }

    #[test]
    fn odd_rounding_fixes_double_rounding() {
        // 1 + 2^-8 + 2^-40: a tie for bf16 in f32 (the 2^-40 is lost), above the tie in truth.
        let x = 1.0 + 2f64.powi(-8) + 2f64.powi(-40);
        assert_eq!(bf16::from_f32(f64_to_f32_odd(x)).to_bits(), bf16_ref(x));
        assert_eq!(
            bf16::from_f32(f64_to_f32_odd(x)).to_f64(),
            1.0 + 2f64.powi(-7)
        );
        // Integers above 2^53 going to bf16.
        let v: i64 = (1 << 60) + (1 << 52) + 1;
        let got = bf16::from_int(v as i128).to_f64();
        assert_eq!(got, ((1u64 << 60) + (1u64 << 53)) as f64);
        let f = f16::from_float(65519.0);
        assert_eq!(f.to_f64(), 65504.0);
        assert!(f16::from_float(65520.0).is_infinite());
        assert!(f16::from_int(1 << 40).is_infinite());
    }
}
