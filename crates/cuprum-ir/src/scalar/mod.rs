//! The executable definition of the IR's scalar operations (`Op::Unary`, `Op::Binary`,
//! `Op::Ternary`, `Op::Compare`, `Op::Select`, `Op::Cast`), as `kernel.rs` documents them.
//!
//! One definition for every layer that computes a value: the emulator runs these functions
//! over the 32 lanes of a warp, and the optimizer's constant folding runs the same functions
//! over one lane (`N = 1`), then decides separately whether the GPU promises the same bits
//! (it refuses NaNs, transcendental approximations, half-precision results; see
//! `cuprum-opt`'s `eval`). So the optimizer cannot fold a value the emulator would compute
//! differently.
//!
//! Every function takes registers as `[u64; N]`: each lane's value as bits, zero-extended
//! (as [`crate::Constant`] holds them). `N` is at most 32, so a lane mask fits a `u32`.

mod cast;
mod lanes;
pub mod math;

pub use cast::{TF32_NAN, cast, f64_to_f32_odd, round_to_tf32};
pub use lanes::{Num, OpFault, binary, compare, mul_add, select, unary};

use crate::types::{Constant, ScalarType};

/// `value as to` for one constant (Rust's `as`, as [`cast`] defines it for every lane).
pub fn cast_constant(value: Constant, to: ScalarType) -> Constant {
    let mut out = [0];
    cast(value.ty, to, &[value.bits], &mut out);
    Constant::new(to, out[0])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BinaryOp, ScalarType, UnaryOp};

    #[test]
    fn exp2_ftz_flushes_f32_subnormal_operands_and_results() {
        let exp2 = |op, ty, bits: u64| {
            let mut out = [0u64];
            unary(op, ty, &[bits], &mut out).expect("a float operation");
            out[0]
        };
        let f = |x: f32| u64::from(x.to_bits());
        let subnormal = f32::from_bits(1);
        // A subnormal operand counts as zero: 2^0.
        assert_eq!(
            exp2(UnaryOp::Exp2Ftz, ScalarType::F32, f(-subnormal)),
            f(1.0)
        );
        // A subnormal result becomes +0; `Exp2` keeps it.
        assert_eq!(exp2(UnaryOp::Exp2Ftz, ScalarType::F32, f(-130.0)), f(0.0));
        assert_eq!(
            exp2(UnaryOp::Exp2, ScalarType::F32, f(-130.0)),
            f(2f32.powi(-130))
        );
        // Normal results are `Exp2`'s.
        for x in [-126.0f32, -3.5, 0.0, 1.0, 10.25, 127.9] {
            assert_eq!(
                exp2(UnaryOp::Exp2Ftz, ScalarType::F32, f(x)),
                exp2(UnaryOp::Exp2, ScalarType::F32, f(x)),
                "{x}"
            );
        }
        // `f64` has no flush.
        let d = (-1030.0f64).to_bits();
        assert_eq!(
            exp2(UnaryOp::Exp2Ftz, ScalarType::F64, d),
            exp2(UnaryOp::Exp2, ScalarType::F64, d)
        );
        assert_ne!(exp2(UnaryOp::Exp2Ftz, ScalarType::F64, d), 0);
        // `bf16` computes in `f32`: its subnormal results flush there.
        let b = u64::from(half::bf16::from_f32(-130.0).to_bits());
        assert_eq!(exp2(UnaryOp::Exp2Ftz, ScalarType::BF16, b), 0);
        assert_ne!(exp2(UnaryOp::Exp2, ScalarType::BF16, b), 0);
    }

    #[test]
    fn one_lane_and_thirty_two_lanes_agree() {
        let a: [u64; 32] =
            std::array::from_fn(|i| (i as u64).wrapping_mul(0x9e37_79b9) as u32 as u64);
        let b: [u64; 32] = std::array::from_fn(|i| (i as u64 * 7 + 1) as u32 as u64);
        let mut wide = [0u64; 32];
        binary(BinaryOp::Div, ScalarType::I32, &a, &b, &mut wide, u32::MAX)
            .expect("no zero divisor");
        for lane in 0..32 {
            let mut one = [0u64; 1];
            binary(
                BinaryOp::Div,
                ScalarType::I32,
                &[a[lane]],
                &[b[lane]],
                &mut one,
                1,
            )
            .expect("no zero divisor");
            assert_eq!(one[0], wide[lane], "lane {lane}");
        }
        let zero = [0u64; 1];
        assert_eq!(
            binary(BinaryOp::Rem, ScalarType::U8, &[5], &zero, &mut [0], 1),
            Err(OpFault::DivideByZero { lane: 0 })
        );
        // An inactive lane's zero divisor is not an error.
        assert_eq!(
            binary(BinaryOp::Rem, ScalarType::U8, &[5], &zero, &mut [0], 0),
            Ok(())
        );
    }
}
