//! cuda-oxide's packed half-precision operations, for ported kernels: each `u32` holds two
//! 16-bit floats (element 0 in the low half), and each operation works on both halves as the
//! PTX `f16x2`/`bf16x2` instruction it is named after. The name says the operation and its
//! modifiers: `ftz` (subnormal inputs and results are zeros of their sign), `relu` (a
//! negative result is `+0`, NaN the canonical NaN), `sat` (clamped to `[0, 1]`, NaN to `+0`),
//! and for `min`/`max`, `nan` (a NaN input gives the canonical NaN) and `xorsign_abs` (of the
//! magnitudes, with the sign `sign(a) ^ sign(b)`). The halves compute with the IR's
//! `f16`/`bf16` operations (`+ - *` correctly rounded, `fma` as an `f32` fma rounded once to
//! the half type). The compiler's `packed_halves` module is the one definition. Beside them,
//! cuda-oxide's `convert::cvt_rna_tf32_f32` (an `f32` rounded to `tf32` bits).

use super::shared::unreachable_on_host;

/// Packed `f16` pairs.
pub mod f16x2 {
    use super::unreachable_on_host;

    /// `abs` on each half (see the module docs). In device code only.
    pub fn abs_f16x2(a: u32) -> u32 {
        let _ = (a,);
        unreachable_on_host()
    }

    /// `add` on each half (see the module docs). In device code only.
    pub fn add_f16x2(a: u32, b: u32) -> u32 {
        let _ = (a, b);
        unreachable_on_host()
    }

    /// `fma` on each half (see the module docs). In device code only.
    pub fn fma_f16x2(a: u32, b: u32, c: u32) -> u32 {
        let _ = (a, b, c);
        unreachable_on_host()
    }

    /// `fma ftz` on each half (see the module docs). In device code only.
    pub fn fma_ftz_f16x2(a: u32, b: u32, c: u32) -> u32 {
        let _ = (a, b, c);
        unreachable_on_host()
    }

    /// `fma ftz relu` on each half (see the module docs). In device code only.
    pub fn fma_ftz_relu_f16x2(a: u32, b: u32, c: u32) -> u32 {
        let _ = (a, b, c);
        unreachable_on_host()
    }

    /// `fma ftz sat` on each half (see the module docs). In device code only.
    pub fn fma_ftz_sat_f16x2(a: u32, b: u32, c: u32) -> u32 {
        let _ = (a, b, c);
        unreachable_on_host()
    }

    /// `fma relu` on each half (see the module docs). In device code only.
    pub fn fma_relu_f16x2(a: u32, b: u32, c: u32) -> u32 {
        let _ = (a, b, c);
        unreachable_on_host()
    }

    /// `fma sat` on each half (see the module docs). In device code only.
    pub fn fma_sat_f16x2(a: u32, b: u32, c: u32) -> u32 {
        let _ = (a, b, c);
        unreachable_on_host()
    }

    /// `max` on each half (see the module docs). In device code only.
    pub fn max_f16x2(a: u32, b: u32) -> u32 {
        let _ = (a, b);
        unreachable_on_host()
    }

    /// `min` on each half (see the module docs). In device code only.
    pub fn min_f16x2(a: u32, b: u32) -> u32 {
        let _ = (a, b);
        unreachable_on_host()
    }

    /// `mul` on each half (see the module docs). In device code only.
    pub fn mul_f16x2(a: u32, b: u32) -> u32 {
        let _ = (a, b);
        unreachable_on_host()
    }

    /// `neg` on each half (see the module docs). In device code only.
    pub fn neg_f16x2(a: u32) -> u32 {
        let _ = (a,);
        unreachable_on_host()
    }

    /// `sub` on each half (see the module docs). In device code only.
    pub fn sub_f16x2(a: u32, b: u32) -> u32 {
        let _ = (a, b);
        unreachable_on_host()
    }

    /// `max ftz` on each half (see the module docs). In device code only.
    pub fn max_ftz_f16x2(a: u32, b: u32) -> u32 {
        let _ = (a, b);
        unreachable_on_host()
    }

    /// `max ftz nan` on each half (see the module docs). In device code only.
    pub fn max_ftz_nan_f16x2(a: u32, b: u32) -> u32 {
        let _ = (a, b);
        unreachable_on_host()
    }

    /// `max ftz nan xorsign abs` on each half (see the module docs). In device code only.
    pub fn max_ftz_nan_xorsign_abs_f16x2(a: u32, b: u32) -> u32 {
        let _ = (a, b);
        unreachable_on_host()
    }

    /// `max ftz xorsign abs` on each half (see the module docs). In device code only.
    pub fn max_ftz_xorsign_abs_f16x2(a: u32, b: u32) -> u32 {
        let _ = (a, b);
        unreachable_on_host()
    }

    /// `max nan` on each half (see the module docs). In device code only.
    pub fn max_nan_f16x2(a: u32, b: u32) -> u32 {
        let _ = (a, b);
        unreachable_on_host()
    }

    /// `max nan xorsign abs` on each half (see the module docs). In device code only.
    pub fn max_nan_xorsign_abs_f16x2(a: u32, b: u32) -> u32 {
        let _ = (a, b);
        unreachable_on_host()
    }

    /// `max xorsign abs` on each half (see the module docs). In device code only.
    pub fn max_xorsign_abs_f16x2(a: u32, b: u32) -> u32 {
        let _ = (a, b);
        unreachable_on_host()
    }

    /// `min ftz` on each half (see the module docs). In device code only.
    pub fn min_ftz_f16x2(a: u32, b: u32) -> u32 {
        let _ = (a, b);
        unreachable_on_host()
    }

    /// `min ftz nan` on each half (see the module docs). In device code only.
    pub fn min_ftz_nan_f16x2(a: u32, b: u32) -> u32 {
        let _ = (a, b);
        unreachable_on_host()
    }

    /// `min ftz nan xorsign abs` on each half (see the module docs). In device code only.
    pub fn min_ftz_nan_xorsign_abs_f16x2(a: u32, b: u32) -> u32 {
        let _ = (a, b);
        unreachable_on_host()
    }

    /// `min ftz xorsign abs` on each half (see the module docs). In device code only.
    pub fn min_ftz_xorsign_abs_f16x2(a: u32, b: u32) -> u32 {
        let _ = (a, b);
        unreachable_on_host()
    }

    /// `min nan` on each half (see the module docs). In device code only.
    pub fn min_nan_f16x2(a: u32, b: u32) -> u32 {
        let _ = (a, b);
        unreachable_on_host()
    }

    /// `min nan xorsign abs` on each half (see the module docs). In device code only.
    pub fn min_nan_xorsign_abs_f16x2(a: u32, b: u32) -> u32 {
        let _ = (a, b);
        unreachable_on_host()
    }

    /// `min xorsign abs` on each half (see the module docs). In device code only.
    pub fn min_xorsign_abs_f16x2(a: u32, b: u32) -> u32 {
        let _ = (a, b);
        unreachable_on_host()
    }
}

/// Packed `bf16` pairs.
pub mod bf16x2 {
    use super::unreachable_on_host;

    /// `abs` on each half (see the module docs). In device code only.
    pub fn abs_bf16x2(a: u32) -> u32 {
        let _ = (a,);
        unreachable_on_host()
    }

    /// `add` on each half (see the module docs). In device code only.
    pub fn add_bf16x2(a: u32, b: u32) -> u32 {
        let _ = (a, b);
        unreachable_on_host()
    }

    /// `fma` on each half (see the module docs). In device code only.
    pub fn fma_bf16x2(a: u32, b: u32, c: u32) -> u32 {
        let _ = (a, b, c);
        unreachable_on_host()
    }

    /// `fma relu` on each half (see the module docs). In device code only.
    pub fn fma_relu_bf16x2(a: u32, b: u32, c: u32) -> u32 {
        let _ = (a, b, c);
        unreachable_on_host()
    }

    /// `max` on each half (see the module docs). In device code only.
    pub fn max_bf16x2(a: u32, b: u32) -> u32 {
        let _ = (a, b);
        unreachable_on_host()
    }

    /// `min` on each half (see the module docs). In device code only.
    pub fn min_bf16x2(a: u32, b: u32) -> u32 {
        let _ = (a, b);
        unreachable_on_host()
    }

    /// `mul` on each half (see the module docs). In device code only.
    pub fn mul_bf16x2(a: u32, b: u32) -> u32 {
        let _ = (a, b);
        unreachable_on_host()
    }

    /// `neg` on each half (see the module docs). In device code only.
    pub fn neg_bf16x2(a: u32) -> u32 {
        let _ = (a,);
        unreachable_on_host()
    }

    /// `sub` on each half (see the module docs). In device code only.
    pub fn sub_bf16x2(a: u32, b: u32) -> u32 {
        let _ = (a, b);
        unreachable_on_host()
    }

    /// `max nan` on each half (see the module docs). In device code only.
    pub fn max_nan_bf16x2(a: u32, b: u32) -> u32 {
        let _ = (a, b);
        unreachable_on_host()
    }

    /// `max nan xorsign abs` on each half (see the module docs). In device code only.
    pub fn max_nan_xorsign_abs_bf16x2(a: u32, b: u32) -> u32 {
        let _ = (a, b);
        unreachable_on_host()
    }

    /// `max xorsign abs` on each half (see the module docs). In device code only.
    pub fn max_xorsign_abs_bf16x2(a: u32, b: u32) -> u32 {
        let _ = (a, b);
        unreachable_on_host()
    }

    /// `min nan` on each half (see the module docs). In device code only.
    pub fn min_nan_bf16x2(a: u32, b: u32) -> u32 {
        let _ = (a, b);
        unreachable_on_host()
    }

    /// `min nan xorsign abs` on each half (see the module docs). In device code only.
    pub fn min_nan_xorsign_abs_bf16x2(a: u32, b: u32) -> u32 {
        let _ = (a, b);
        unreachable_on_host()
    }

    /// `min xorsign abs` on each half (see the module docs). In device code only.
    pub fn min_xorsign_abs_bf16x2(a: u32, b: u32) -> u32 {
        let _ = (a, b);
        unreachable_on_host()
    }
}

/// The conversion cuda-oxide keeps in its `tcgen05` module (usable on sm_80 and later, as
/// cuprum compiles it): two `f32`s to a packed `bf16x2`, each rounded to nearest even.
pub mod tcgen05 {
    use super::unreachable_on_host;

    /// cuda-oxide keeps `stmatrix` here too (see `cuprum::simt::wgmma`).
    pub use crate::simt::wgmma::{
        stmatrix_m8n8_x2, stmatrix_m8n8_x2_trans, stmatrix_m8n8_x4, stmatrix_m8n8_x4_trans,
    };

    /// `lo` in the low half and `hi` in the high half, each rounded to `bf16`. In device code
    /// only.
    pub fn cvt_f32x2_bf16x2(lo: f32, hi: f32) -> u32 {
        let _ = (lo, hi);
        unreachable_on_host()
    }
}

/// cuda-oxide's `cuda_device::convert` conversions that cuprum has: an `f32` rounded to a
/// `tf32` operand for `mma.sync m16n8k8` (`cuprum::simt::mma`).
pub mod convert {
    use super::unreachable_on_host;

    /// The bits of `value` rounded to `tf32`: to nearest, ties away from zero (PTX's
    /// `cvt.rna.tf32.f32`), infinities kept, a NaN the canonical `tf32` NaN: the kernel IR's
    /// cast to `tf32` (`cuprum_ir::scalar::round_to_tf32`), so the emulator and the GPU give
    /// the same bits. In device code only.
    pub fn cvt_rna_tf32_f32(value: f32) -> u32 {
        let _ = value;
        unreachable_on_host()
    }
}
