//! `tf32`, the tensor cores' TensorFloat-32, as a host element type: what a buffer or a tile
//! tensor of `tf32` holds, so that data rounded once on the host (or by a kernel) feeds
//! `mma` without a conversion per load. The rounding is `cuprum_ir::scalar::round_to_tf32`,
//! the one definition kernels use too.

use cuprum_ir::ScalarType;

use crate::buffer::{DeviceCopy, DeviceScalar};

/// TensorFloat-32: an `f32` of which only the sign, the 8-bit exponent and the top 10
/// mantissa bits count, held as the `f32`'s 32 bits (cuTile Rust's `tf32(pub u32)` shape).
/// [`tf32::from_f32`] rounds to the nearest (ties away from zero), as a kernel's conversion
/// does; the tensor cores ignore the low 13 bits of a value built from other bits.
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct tf32(pub u32);

impl tf32 {
    /// Zero.
    pub const ZERO: tf32 = tf32(0);
    /// One.
    pub const ONE: tf32 = tf32(0x3F80_0000);

    /// `x` rounded to the nearest `tf32`, ties away from zero (infinities stay, NaNs become
    /// the canonical `tf32` NaN): the conversion a kernel's `convert_tile::<tf32>` makes.
    pub const fn from_f32(x: f32) -> tf32 {
        tf32(cuprum_ir::scalar::round_to_tf32(x.to_bits()))
    }

    /// The `f32` this value stands for (exact).
    pub const fn to_f32(self) -> f32 {
        f32::from_bits(self.0)
    }

    /// The bits.
    pub const fn to_bits(self) -> u32 {
        self.0
    }

    /// The value with bits `bits`.
    pub const fn from_bits(bits: u32) -> tf32 {
        tf32(bits)
    }
}

impl From<f32> for tf32 {
    fn from(x: f32) -> tf32 {
        tf32::from_f32(x)
    }
}

impl From<tf32> for f32 {
    fn from(x: tf32) -> f32 {
        x.to_f32()
    }
}

impl std::fmt::Display for tf32 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(&self.to_f32(), f)
    }
}

// SAFETY: a transparent `u32`: plain data, every bit pattern valid.
unsafe impl DeviceCopy for tf32 {}

impl DeviceScalar for tf32 {
    const TYPE: ScalarType = ScalarType::Tf32;
    #[inline]
    fn to_bits(self) -> u64 {
        u64::from(self.0)
    }
    #[inline]
    fn from_bits(bits: u64) -> Self {
        tf32(bits as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_to_nearest_ties_away_and_back_exactly() {
        assert_eq!(tf32::from_f32(1.0), tf32::ONE);
        // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: away from zero.
        assert_eq!(
            tf32::from_f32(1.0 + 2f32.powi(-11)).to_f32(),
            1.0 + 2f32.powi(-10)
        );
        assert_eq!(
            tf32::from_f32(-(1.0 + 2f32.powi(-11))).to_f32(),
            -(1.0 + 2f32.powi(-10))
        );
        // Just below halfway: down.
        let below = f32::from_bits((1.0 + 2f32.powi(-11)).to_bits() - 1);
        assert_eq!(tf32::from_f32(below), tf32::ONE);
        assert!(tf32::from_f32(f32::NAN).to_f32().is_nan());
        assert_eq!(tf32::from_f32(f32::MAX).to_f32(), f32::INFINITY);
        assert_eq!(f32::from(tf32::from(0.75f32)), 0.75);
    }
}
