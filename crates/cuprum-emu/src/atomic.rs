//! What `Op::Atomic` computes: the new memory value from the old one, per operation and type.
//!
//! Kept apart from *how* the update is made atomic (a compare-and-swap loop on global memory,
//! a plain update of the block's shared memory), so both spaces share one definition.

use cuprum_ir::{AtomicOp, ScalarType};
use half::{bf16, f16};

use cuprum_ir::scalar::Num;

#[inline]
fn int_op<T: Num + Ord + WrappingInt>(op: AtomicOp, old: u64, val: u64, cmp: u64) -> u64 {
    let (o, v) = (T::get(old), T::get(val));
    match op {
        AtomicOp::Add => o.wrapping_add_(v).put(),
        AtomicOp::Sub => o.wrapping_sub_(v).put(),
        AtomicOp::Min => o.min(v).put(),
        AtomicOp::Max => o.max(v).put(),
        AtomicOp::Exchange => val,
        AtomicOp::CompareExchange => {
            if old == cmp {
                val
            } else {
                old
            }
        }
        AtomicOp::And => old & val,
        AtomicOp::Or => old | val,
        AtomicOp::Xor => old ^ val,
    }
}

trait WrappingInt: Sized {
    fn wrapping_add_(self, o: Self) -> Self;
    fn wrapping_sub_(self, o: Self) -> Self;
}
macro_rules! wrapping_int {
    ($($t:ty),*) => {$(
        impl WrappingInt for $t {
            #[inline(always)]
            fn wrapping_add_(self, o: Self) -> Self { self.wrapping_add(o) }
            #[inline(always)]
            fn wrapping_sub_(self, o: Self) -> Self { self.wrapping_sub(o) }
        }
    )*};
}
wrapping_int!(i32, i64, u32, u64);

/// The value an atomic `op` leaves in memory, given the `old` value there, the operand `val`
/// and (for `CompareExchange`) the expected value `cmp`, all as zero-extended bits of `ty`.
/// Compare-exchange compares bit patterns (as PTX `atom.cas`).
#[inline]
pub(crate) fn apply(op: AtomicOp, ty: ScalarType, old: u64, val: u64, cmp: u64) -> u64 {
    use ScalarType as S;
    match (op, ty) {
        (AtomicOp::Exchange, _) => val,
        (AtomicOp::CompareExchange, _) => {
            if old == cmp {
                val
            } else {
                old
            }
        }
        (_, S::I32) => int_op::<i32>(op, old, val, cmp),
        (_, S::I64) => int_op::<i64>(op, old, val, cmp),
        (_, S::U32) => int_op::<u32>(op, old, val, cmp),
        (_, S::U64) => int_op::<u64>(op, old, val, cmp),
        (AtomicOp::Add, S::F32) => flush(flush(f32::get(old)) + flush(f32::get(val))).put(),
        (AtomicOp::Add, S::F64) => (f64::get(old) + f64::get(val)).put(),
        (AtomicOp::Add, S::F16) => {
            f16::from_f32(f16::get(old).to_f32() + f16::get(val).to_f32()).put()
        }
        (AtomicOp::Add, S::BF16) => {
            bf16::from_f32(bf16::get(old).to_f32() + bf16::get(val).to_f32()).put()
        }
        // Other operations and types are rejected by the validator; leave memory unchanged.
        _ => old,
    }
}

/// `x`, or a zero of its sign where it is subnormal: `f32` atomic adds flush subnormal
/// operands and results (`atom.add.f32`, measured on an H200; see `AtomicOp::Add`).
#[inline]
fn flush(x: f32) -> f32 {
    if x.is_subnormal() {
        0.0f32.copysign(x)
    } else {
        x
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn add_f32(old: u32, val: u32) -> u32 {
        apply(
            AtomicOp::Add,
            ScalarType::F32,
            u64::from(old),
            u64::from(val),
            0,
        ) as u32
    }

    #[test]
    fn f32_atomic_add_flushes_subnormals_f64_keeps_them() {
        // Subnormal operands count as zeros of their sign, as on the GPU (measured on an H200:
        // these four are the probe's cases of cuprum-fuzz's `tests/device.rs`).
        assert_eq!(add_f32(1, 0x0080_0000), 0x0080_0000);
        assert_eq!(add_f32(0x8000_0001, 0x8080_0000), 0x8080_0000);
        assert_eq!(add_f32(0x007f_ffff, 0), 0);
        // A normal sum whose result is subnormal is flushed too, keeping its sign.
        assert_eq!(
            add_f32(0x0080_0000, 0x8000_0000 | 0x0040_0000 << 1 | 1),
            0x8000_0000
        );
        let one = 1.5f32.to_bits();
        assert_eq!(add_f32(one, one), 3.0f32.to_bits());
        let tiny = 1u64; // the smallest f64 subnormal
        let sum = apply(AtomicOp::Add, ScalarType::F64, tiny, tiny, 0);
        assert_eq!(f64::from_bits(sum), 2.0 * f64::from_bits(tiny));
    }
}
