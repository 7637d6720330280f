//! Value ranges: an upper bound for integer values that are known to be non-negative, kept
//! as each value is defined, so that bounds checks the bounds already prove are not emitted.
//!
//! Sources of bounds: constants, thread indices (below the `#[launch_contract]` block shape
//! when there is one, else below the hardware limits), lane ids, and arithmetic on bounded
//! values that cannot wrap (`+`, `*`, `/`, `%`, `&`, shifts by constants, `min`, `max`,
//! widening casts, `select`). Anything else is unbounded. A shared or local array index
//! whose bound is below the array's length needs no check (the check could never fail).

use cuprum_ir::{BinaryOp, Dim, Op, ScalarType as S, Special, Value};

use super::*;

impl Lowerer<'_> {
    /// The largest value `v` can take, when it is known and `v` is never negative.
    pub(super) fn upper_bound(&self, v: Value) -> Option<u128> {
        self.ranges.get(&v).copied()
    }

    /// Records the bound of the value `v` just defined by `op`, if one follows.
    pub(super) fn note_range(&mut self, v: Value, op: &Op) {
        let ty = self.ty(v);
        if !ty.is_int() {
            return;
        }
        let type_max: u128 = if ty.is_signed_int() {
            (1u128 << (ty.bits() - 1)) - 1
        } else {
            (1u128 << ty.bits()) - 1
        };
        if let Some(r) = self.bound_of(ty, op).filter(|&r| r <= type_max) {
            self.ranges.insert(v, r);
        }
    }

    /// The bound the result of `op` (of type `ty`) has, from its operands' bounds.
    fn bound_of(&self, ty: S, op: &Op) -> Option<u128> {
        let bound = |x: &Value| self.upper_bound(*x);
        let block = self.contract.map(|c| c.block);
        let dim = |d: Dim, limits: (u128, u128, u128)| -> u128 {
            match d {
                Dim::X => limits.0,
                Dim::Y => limits.1,
                Dim::Z => limits.2,
            }
        };
        match op {
            Op::Const(c) => {
                let negative = ty.is_signed_int() && (c.bits >> (ty.bits() - 1)) & 1 == 1;
                (!negative).then_some(u128::from(c.bits))
            }
            Op::Special(Special::ThreadIdx(d)) => Some(match block {
                Some((x, y, z)) => dim(*d, (u128::from(x), u128::from(y), u128::from(z))) - 1,
                None => dim(*d, (1023, 1023, 63)),
            }),
            Op::Special(Special::BlockDim(d)) => Some(match block {
                Some((x, y, z)) => dim(*d, (u128::from(x), u128::from(y), u128::from(z))),
                None => dim(*d, (1024, 1024, 64)),
            }),
            Op::Special(Special::LaneId) => Some(31),
            Op::Special(Special::BlockIdx(d)) => Some(dim(*d, ((1 << 31) - 2, 65534, 65534))),
            Op::Special(Special::GridDim(d)) => Some(dim(*d, ((1 << 31) - 1, 65535, 65535))),
            // A cast from an unsigned type is at most that type's maximum, known or not.
            Op::Cast { value, .. } => bound(value).or_else(|| {
                let from = self.ty(*value);
                (from.is_int() && !from.is_signed_int()).then(|| (1u128 << from.bits()) - 1)
            }),
            Op::Select {
                if_true, if_false, ..
            } => Some(bound(if_true)?.max(bound(if_false)?)),
            Op::Binary(b, l, r) => {
                let (lb, rb) = (bound(l), bound(r));
                let const_r = rb.filter(|_| self.is_constant(*r));
                match b {
                    BinaryOp::Add => Some(lb? + rb?),
                    BinaryOp::Mul => lb?.checked_mul(rb?),
                    BinaryOp::Div => match const_r {
                        Some(c) if c > 0 => Some(lb? / c),
                        _ => lb,
                    },
                    BinaryOp::Rem => match (lb, const_r) {
                        (Some(a), Some(c)) if c > 0 => Some(a.min(c - 1)),
                        (None, Some(c)) if c > 0 && !ty.is_signed_int() => Some(c - 1),
                        _ => None,
                    },
                    BinaryOp::And if !ty.is_signed_int() => match (lb, rb) {
                        (Some(a), Some(c)) => Some(a.min(c)),
                        (Some(a), None) | (None, Some(a)) => Some(a),
                        _ => None,
                    },
                    BinaryOp::And => Some(lb?.min(rb?)),
                    BinaryOp::Shr => Some(lb? >> const_r?.min(127)),
                    BinaryOp::Shl => {
                        let s = const_r?;
                        (s < 64).then(|| lb.map(|a| a << s)).flatten()
                    }
                    BinaryOp::Min => match (lb, rb) {
                        (Some(a), Some(c)) => Some(a.min(c)),
                        (Some(a), None) | (None, Some(a)) if !ty.is_signed_int() => Some(a),
                        _ => None,
                    },
                    BinaryOp::Max => Some(lb?.max(rb?)),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    fn is_constant(&self, v: Value) -> bool {
        self.constants.contains(&v)
    }

    /// The value of a non-negative integer constant (its bound is itself).
    pub(super) fn constant_value(&self, v: Value) -> Option<u64> {
        if !self.is_constant(v) {
            return None;
        }
        self.upper_bound(v).and_then(|b| u64::try_from(b).ok())
    }

    /// Whether `index < len` is already certain.
    pub(super) fn provably_below(&self, index: Value, len: u64) -> bool {
        matches!(self.upper_bound(index), Some(b) if b < u128::from(len))
    }
}
