//! Reductions along one axis, in three steps: each thread combines the registers it holds
//! along the axis (a tree, for instruction-level parallelism), the lanes along the axis
//! combine with `shfl.xor` (a butterfly, so that every lane ends with the whole result), and
//! when warps lie along the axis, each warp's result goes through shared memory and every
//! thread combines all warps' results in one fixed order. The result is in the slice layout
//! (`Layout::slice`): every thread that held part of a line now holds the line's result, the
//! same bits in each (the butterfly combines commutatively, the last step in one order).
//! The last step's reads wait for the result's first use (`scratch::PendingRead`), so that
//! independent reductions share one barrier.
//!
//! Registers clamped past the tile's end along the axis hold copies of a real element: for
//! `min` and `max` a copy changes nothing, every other combination replaces them with its
//! identity (`-0.0` for a float sum, so that a sum of `-0.0`s stays `-0.0`).

use cuprum_ir::{BinaryOp, Constant, Op, ScalarType, ShuffleMode, Value};
use cuprum_tile_ir::{Combine, TileValue};

use super::scratch::PendingRead;
use super::{Emitter, Lv, R};
use crate::layout::{LANE_BITS, row_major_strides};
use crate::plan::Repr;

impl Emitter<'_> {
    /// Lowers `value = reduce(input, axis, combine)` and defines `value` (or leaves it to
    /// the first use, when warps exchange partial results: see `scratch`).
    pub(super) fn reduce(
        &mut self,
        value: TileValue,
        input: TileValue,
        axis: usize,
        combine: &Combine,
    ) -> R<()> {
        let ty = self.elem(input)?;
        let from = self
            .plan
            .reduce_input(value)
            .ok_or_else(|| self.internal("a reduction's layout was not planned"))?;
        let regs = self.regs_in(input, from)?;
        let layout = self.plan.layout(from).clone();
        let (slice, groups) = layout.slice(axis);
        let idempotent = matches!(combine, Combine::Min | Combine::Max);
        let identity = if idempotent {
            None
        } else {
            Some(self.identity(combine, ty)?)
        };

        // 1. Within each thread.
        let mut partial = Vec::with_capacity(groups.len());
        for members in &groups {
            let mut vals = Vec::with_capacity(members.len());
            for &r in members {
                let v = regs[r];
                let valid = match identity {
                    Some(_) => self.valid_along(from, r, axis)?,
                    None => None,
                };
                vals.push(match (valid, identity) {
                    (Some(valid), Some(id)) => self.select(valid, v, id)?,
                    _ => v,
                });
            }
            while vals.len() > 1 {
                let mut next = Vec::with_capacity(vals.len().div_ceil(2));
                for pair in vals.chunks(2) {
                    next.push(match pair {
                        [a, b] => self.combine(combine, ty, *a, *b)?,
                        [a] => *a,
                        _ => return Err(self.internal("an empty pair")),
                    });
                }
                vals = next;
            }
            partial.push(
                vals.first()
                    .copied()
                    .ok_or_else(|| self.internal("a reduction group without registers"))?,
            );
        }

        // 2. Across the lanes along the axis, the farthest first: a line held one element per
        //    lane is combined as a halving tree (element `i` with `i + n/2` first).
        let axis_bits = layout.axis_mask(axis);
        let lane_bits = axis_bits & ((1 << LANE_BITS) - 1);
        for b in (0..LANE_BITS as u32).rev() {
            if lane_bits >> b & 1 == 0 {
                continue;
            }
            let lane = self.u32c(1 << b);
            for p in &mut partial {
                let other = self.shuffle_xor(*p, lane, ty)?;
                *p = self.combine(combine, ty, *p, other)?;
            }
        }

        // 3. Across the warps along the axis: written now, read where first used.
        let warp_bits: Vec<u32> = (LANE_BITS as u32..layout.thread_bit_count() as u32)
            .filter(|b| axis_bits >> b & 1 == 1)
            .collect();
        if warp_bits.is_empty() {
            let lv = self.reduced(value, partial)?;
            return self.set(value, lv);
        }
        let read = self.write_exchange(
            value,
            &slice,
            partial,
            &warp_bits,
            layout.replication_mask() | lane_bits,
            combine,
            ty,
        )?;
        if matches!(combine, Combine::Closure { .. }) {
            // A closure's body is lowered where it is combined: read now, where the
            // statement is.
            self.read_exchange(read)
        } else {
            self.defer_read(read);
            Ok(())
        }
    }

    /// A reduction's result from its registers, as planned.
    pub(super) fn reduced(&self, value: TileValue, regs: Vec<Value>) -> R<Lv> {
        match self.repr(value)? {
            Repr::Uniform => {
                Ok(Lv::Uniform(regs.first().copied().ok_or_else(|| {
                    self.internal("a reduction without a result")
                })?))
            }
            Repr::Dist(layout) => Ok(Lv::Dist { layout, regs }),
            Repr::Iota { .. } | Repr::Computed => {
                Err(self.internal("a reduction planned as an iota or computed"))
            }
        }
    }

    /// Step 3's writes: each warp group's partial results into the scratch, at the
    /// group's slots (see `scratch::read_exchange` for the reads).
    #[allow(clippy::too_many_arguments)]
    fn write_exchange(
        &mut self,
        value: TileValue,
        slice: &crate::layout::Layout,
        partial: Vec<Value>,
        warp_bits: &[u32],
        writer_mask: u32,
        combine: &Combine,
        ty: ScalarType,
    ) -> R<PendingRead> {
        let out_id = match self.repr(value)? {
            Repr::Dist(id) => Some(id),
            _ => None,
        };
        let out_elems: u32 = slice.shape().iter().product();
        let groups = 1u32 << warp_bits.len();
        let claim = self.claim_scratch(u64::from(groups) * u64::from(out_elems), ty)?;
        let strides = row_major_strides(slice.shape());
        // Which group this thread's warp is: its warp bits along the axis, packed.
        let mut group: Option<Value> = None;
        for (i, &b) in warp_bits.iter().enumerate() {
            let s = self.u32c(b);
            let shifted = self.bin(BinaryOp::Shr, self.tid(), s)?;
            let one = self.u32c(1);
            let bit = self.bin(BinaryOp::And, shifted, one)?;
            let term = if i == 0 {
                bit
            } else {
                let k = self.u32c(i as u32);
                self.bin(BinaryOp::Shl, bit, k)?
            };
            group = Some(match group {
                Some(g) => self.bin(BinaryOp::Or, g, term)?,
                None => term,
            });
        }
        let group = group.ok_or_else(|| self.internal("no warp bits"))?;
        let indices = (0..partial.len())
            .map(|r| match out_id {
                Some(id) => self.linear_index(id, r, &strides),
                None => Ok(self.u32c(0)),
            })
            .collect::<R<Vec<_>>>()?;
        let writer = self.thread_bits_zero(writer_mask)?;
        let per_group = self.u32c(out_elems);
        let mine = self.mul(group, per_group)?;
        self.if_(writer, |e| {
            for (r, &p) in partial.iter().enumerate() {
                let valid = match out_id {
                    Some(id) => e.valid(id, r)?,
                    None => None,
                };
                let at = e.add(mine, indices[r])?;
                e.if_some(valid, |e| e.shared_store(claim, at, p))?;
            }
            Ok(())
        })?;
        Ok(PendingRead {
            value,
            claim,
            indices,
            groups,
            out_elems,
            combine: combine.clone(),
            ty,
            published: false,
        })
    }

    /// `value` from the lane `lane` (`U32`) bits away (`bool` travels as a `u32`).
    fn shuffle_xor(&mut self, value: Value, lane: Value, ty: ScalarType) -> R<Value> {
        if ty == ScalarType::Bool {
            let wide = self.cast(value, ScalarType::U32)?;
            let got = self.def(Op::Shuffle {
                mode: ShuffleMode::Xor,
                value: wide,
                lane,
            })?;
            let zero = self.u32c(0);
            return self.cmp(cuprum_ir::CmpOp::Ne, got, zero);
        }
        self.def(Op::Shuffle {
            mode: ShuffleMode::Xor,
            value,
            lane,
        })
    }

    /// The element that combines with any `x` to give `x`, as a constant.
    fn identity(&mut self, combine: &Combine, ty: ScalarType) -> R<Value> {
        if ty == ScalarType::Bool && !matches!(combine, Combine::Closure { .. }) {
            return Err(self.unsupported(format!(
                "a {} of bool tiles (combine them with a closure instead)",
                combine_name(combine)
            )));
        }
        let c = match combine {
            Combine::Sum if ty.is_float() => Constant::new(ty, 1u64 << (ty.bits() - 1)),
            Combine::Sum => Constant::new(ty, 0),
            Combine::Prod => cuprum_ir::scalar::cast_constant(Constant::i64(1), ty),
            Combine::Closure { identity, .. } => identity.to_constant(ty).ok_or_else(|| {
                self.unsupported(format!("a reduce identity {identity} that is not a {ty}"))
            })?,
            Combine::Min | Combine::Max => {
                return Err(self.internal("min and max need no identity"));
            }
        };
        Ok(self.konst(c))
    }

    /// `combine(a, b)`.
    pub(crate) fn combine(
        &mut self,
        combine: &Combine,
        ty: ScalarType,
        a: Value,
        b: Value,
    ) -> R<Value> {
        let op = match combine {
            Combine::Sum => BinaryOp::Add,
            Combine::Prod => BinaryOp::Mul,
            Combine::Min => BinaryOp::Min,
            Combine::Max => BinaryOp::Max,
            Combine::Closure {
                a: x, b: y, body, ..
            } => {
                self.set(*x, Lv::Uniform(a))?;
                self.set(*y, Lv::Uniform(b))?;
                if self.stmts(body)? {
                    return Err(self.unsupported("a reduce closure that does not yield a value"));
                }
                let out = body
                    .yields
                    .first()
                    .copied()
                    .ok_or_else(|| self.internal("a reduce closure without a result"))?;
                return self.uniform(out);
            }
        };
        if ty == ScalarType::Bool {
            return Err(self.unsupported(format!(
                "a {} of bool tiles (combine them with a closure instead)",
                combine_name(combine)
            )));
        }
        self.bin(op, a, b)
    }
}

fn combine_name(c: &Combine) -> &'static str {
    match c {
        Combine::Sum => "sum",
        Combine::Prod => "product",
        Combine::Min => "min",
        Combine::Max => "max",
        Combine::Closure { .. } => "closure",
    }
}
