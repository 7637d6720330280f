//! Operations on tile values: scalars, element-wise operations, shape operations and the
//! layout conversions they need.
//!
//! A conversion from one layout to another costs nothing when every thread already holds the
//! elements it needs ([`crate::layout::register_sources`]); otherwise the tile makes a round
//! trip through shared memory: each element's owner writes it at its row-major position,
//! and every register reads the position its coordinates give.

use cuprum_ir::{BinaryOp, CmpOp, Constant, Dim, Op, ScalarType, Special, TrapKind, Value};
use cuprum_tile_ir::{Op as TOp, TileValue};

use super::{Emitter, Lv, R};
use crate::layout::{CoordMap, register_sources, row_major_strides};
use crate::plan::{LayoutId, Repr};

impl Emitter<'_> {
    /// Lowers `value = op`.
    pub(super) fn op(&mut self, value: TileValue, op: &TOp) -> R<Lv> {
        let ty = self.elem(value)?;
        match op {
            TOp::Const { value: lit, .. } => {
                let c = lit.to_constant(ty).ok_or_else(|| {
                    self.unsupported(format!("the literal {lit} cannot be a {ty}"))
                })?;
                Ok(Lv::Uniform(self.konst(c)))
            }
            TOp::ConstParam(_) => Err(crate::LowerError::Generic(self.kernel.name.clone())),
            TOp::Param(i) => Ok(Lv::Uniform(self.scalar_param(*i)?)),
            TOp::BlockId(axis) => self.grid_value(Special::BlockIdx, *axis),
            TOp::NumBlocks(axis) => self.grid_value(Special::GridDim, *axis),
            TOp::TensorDim { tensor, axis } => Ok(Lv::Uniform(self.tensor_dim(*tensor, *axis)?)),
            TOp::Iota { .. } => match self.repr(value)? {
                Repr::Iota { axis } => Ok(Lv::Iota { axis }),
                // Along an axis of size 1 every element is 0.
                _ => Ok(Lv::Uniform(self.konst(Constant::new(ty, 0)))),
            },
            TOp::Binary(b, x, y) => {
                if ty.is_int() && matches!(b, BinaryOp::Div | BinaryOp::Rem) {
                    self.check_divisors(value, *b, *x, *y, ty)?;
                }
                self.pointwise_value(value, op)
            }
            TOp::Unary(..)
            | TOp::Ternary(..)
            | TOp::Compare(..)
            | TOp::Select { .. }
            | TOp::Cast { .. }
            | TOp::Bitcast { .. } => self.pointwise_value(value, op),
            TOp::Broadcast { value: a, .. } => {
                let (from, to) = (self.shape(*a)?, self.shape(value)?);
                self.reshaped(value, *a, CoordMap::broadcast(&from, &to))
            }
            TOp::Reshape { value: a, .. } => {
                let (from, to) = (self.shape(*a)?, self.shape(value)?);
                self.reshaped(value, *a, CoordMap::reshape(&from, &to))
            }
            TOp::Permute { value: a, perm } => self.reshaped(value, *a, CoordMap::permute(perm)),
            TOp::Reduce { .. } => {
                Err(self.internal("a reduction is lowered as a statement (`Emitter::reduce`)"))
            }
            TOp::Mma { a, b, acc } => self.mma(value, *a, *b, *acc),
            TOp::Load { view, padding } => self.load(value, view, *padding),
            TOp::Gather {
                tensor,
                offsets,
                mask,
                padding,
            } => self.gather(value, *tensor, *offsets, *mask, *padding),
        }
    }

    /// `BlockIdx` or `GridDim` along grid axis `axis`, as `I32`.
    fn grid_value(&mut self, special: fn(Dim) -> Special, axis: u32) -> R<Lv> {
        let dim = match axis {
            0 => Dim::X,
            1 => Dim::Y,
            2 => Dim::Z,
            _ => return Err(self.unsupported(format!("grid axis {axis} does not exist"))),
        };
        let dealt = match (self.block_index, self.grid_dims, special(dim)) {
            (Some(index), _, Special::BlockIdx(_)) => index.get(axis as usize).copied(),
            (_, Some(grid), Special::GridDim(_)) => grid.get(axis as usize).copied(),
            _ => None,
        };
        let v = match dealt {
            Some(v) => v,
            None => self.def(Op::Special(special(dim)))?,
        };
        Ok(Lv::Uniform(self.cast(v, ScalarType::I32)?))
    }

    /// An element-wise operation: `f` on the operands' values, once for uniform operands,
    /// else once per register of the result's layout.
    pub(super) fn elementwise(
        &mut self,
        value: TileValue,
        operands: &[TileValue],
        mut f: impl FnMut(&mut Self, &[Value]) -> R<Value>,
    ) -> R<Lv> {
        match self.repr(value)? {
            Repr::Uniform => {
                let xs = operands
                    .iter()
                    .map(|&o| self.uniform(o))
                    .collect::<R<Vec<_>>>()?;
                Ok(Lv::Uniform(f(self, &xs)?))
            }
            Repr::Dist(layout) => {
                let per_operand = operands
                    .iter()
                    .map(|&o| self.regs_in(o, layout))
                    .collect::<R<Vec<_>>>()?;
                let n = self.plan.layout(layout).registers();
                let mut regs = Vec::with_capacity(n);
                for r in 0..n {
                    let xs: Vec<Value> = per_operand.iter().map(|p| p[r]).collect();
                    regs.push(f(self, &xs)?);
                }
                Ok(Lv::Dist { layout, regs })
            }
            Repr::Iota { .. } | Repr::Computed => Err(self.internal(
                "an element-wise result planned as an iota or computed, made in registers",
            )),
        }
    }

    /// An element-wise operation `value = op`: an expression when it is planned as computed,
    /// else [`Emitter::pointwise`] once (uniform) or per register. Integer division and
    /// remainder have checked their divisors first, as Rust does: a zero divisor (or a
    /// signed `MIN / -1`) stops the launch (the plan never computes them lazily).
    fn pointwise_value(&mut self, value: TileValue, op: &TOp) -> R<Lv> {
        if self.is_computed(value)? {
            return self.computed_pointwise(value, op);
        }
        let ty = self.elem(value)?;
        self.elementwise(value, &op.operands(), |e, xs| e.pointwise(op, ty, xs))
    }

    fn check_divisors(
        &mut self,
        value: TileValue,
        op: BinaryOp,
        x: TileValue,
        y: TileValue,
        ty: ScalarType,
    ) -> R<()> {
        let (xs, ys) = match self.repr(value)? {
            Repr::Dist(layout) => (self.regs_in(x, layout)?, self.regs_in(y, layout)?),
            _ => (vec![self.uniform(x)?], vec![self.uniform(y)?]),
        };
        let site = format!(
            "an integer {} of tiles in tile kernel `{}`",
            if op == BinaryOp::Div {
                "division"
            } else {
                "remainder"
            },
            self.kernel.name
        );
        let zero = self.konst(Constant::new(ty, 0));
        let zeros = ys
            .iter()
            .map(|&d| self.cmp(CmpOp::Eq, d, zero))
            .collect::<R<Vec<_>>>()?;
        if let Some(any) = self.any(&zeros)? {
            self.trap_if(any, TrapKind::DivideByZero { site: site.clone() })?;
        }
        if ty.is_signed_int() {
            let min = self.konst(Constant::new(ty, 1u64 << (ty.bits() - 1)));
            let minus_one = self.konst(Constant::new(ty, u64::MAX));
            let mut overflows = Vec::with_capacity(xs.len());
            for (&a, &d) in xs.iter().zip(&ys) {
                let a_min = self.cmp(CmpOp::Eq, a, min)?;
                let d_m1 = self.cmp(CmpOp::Eq, d, minus_one)?;
                overflows.push(self.bin(BinaryOp::And, a_min, d_m1)?);
            }
            if let Some(any) = self.any(&overflows)? {
                self.trap_if(any, TrapKind::DivideOverflow { site })?;
            }
        }
        Ok(())
    }

    /// A broadcast, reshape or permutation: the source's elements under `map`, in the
    /// result's planned representation.
    fn reshaped(&mut self, value: TileValue, source: TileValue, map: CoordMap) -> R<Lv> {
        match self.repr(value)? {
            Repr::Uniform => match self.get(source)? {
                Lv::Uniform(u) => Ok(Lv::Uniform(u)),
                // A tile of one element becoming a scalar: every thread holds it.
                Lv::Dist { regs, .. } if self.shape(value)?.iter().all(|&n| n == 1) => {
                    let r = regs
                        .first()
                        .copied()
                        .ok_or_else(|| self.internal("a layout without registers"))?;
                    Ok(Lv::Uniform(r))
                }
                Lv::Iota { .. } => {
                    let ty = self.elem(value)?;
                    Ok(Lv::Uniform(self.konst(Constant::new(ty, 0))))
                }
                // Every element of a one-element tile is the one at the origin.
                Lv::Computed(c) => {
                    let origin = vec![self.u32c(0); self.shape(source)?.len()];
                    Ok(Lv::Uniform(self.evaluate(&c, &origin)?))
                }
                Lv::Dist { .. } => Err(self.internal("a tile planned as uniform")),
            },
            Repr::Iota { axis } => Ok(Lv::Iota { axis }),
            Repr::Computed => self.computed_remap(source, &map),
            Repr::Dist(layout) => {
                let from = self.shape(source)?;
                let lv = self.get(source)?;
                let ty = self.elem(source)?;
                let regs = self.convert(&lv, &from, ty, layout, &map)?;
                Ok(Lv::Dist { layout, regs })
            }
        }
    }

    /// `v`'s elements in the registers of layout `layout` (same shape).
    pub(crate) fn regs_in(&mut self, v: TileValue, layout: LayoutId) -> R<Vec<Value>> {
        let lv = self.get(v)?;
        let shape = self.shape(v)?;
        let ty = self.elem(v)?;
        self.convert(&lv, &shape, ty, layout, &CoordMap::identity(shape.len()))
    }

    /// `value`'s elements in the representation planned for `like` (same type and shape):
    /// what an `If` result's or a loop's variables hold.
    pub(super) fn in_repr_of(&mut self, value: TileValue, like: TileValue) -> R<Vec<Value>> {
        match self.repr(like)? {
            Repr::Uniform => Ok(vec![self.uniform(value)?]),
            Repr::Iota { .. } => Ok(Vec::new()),
            Repr::Computed => Err(self.internal("a joined value planned as computed")),
            Repr::Dist(layout) => self.regs_in(value, layout),
        }
    }

    /// The registers of layout `to` holding `lv` (a tile of shape `from`, elements `ty`)
    /// under `map`.
    pub(crate) fn convert(
        &mut self,
        lv: &Lv,
        from: &[u32],
        ty: ScalarType,
        to: LayoutId,
        map: &CoordMap,
    ) -> R<Vec<Value>> {
        let n = self.plan.layout(to).registers();
        match lv {
            Lv::Uniform(u) => Ok(vec![*u; n]),
            Lv::Computed(c) => self.computed_in(c, from, to, map),
            Lv::Iota { axis } => (0..n)
                .map(|r| {
                    let c = self.source_coord(to, r, from, map, *axis)?;
                    self.cast(c, ty)
                })
                .collect(),
            Lv::Dist { layout, regs } => {
                let src = self.plan.layout(*layout);
                let dst = self.plan.layout(to);
                match register_sources(src, dst, map) {
                    Some(sources) => Ok(sources.iter().map(|&s| regs[s]).collect()),
                    None => self.through_shared(*layout, regs, from, ty, to, map),
                }
            }
        }
    }

    /// The source coordinate along source axis `axis` (`U32`) of register `reg` of layout
    /// `to`, under `map` from a source of shape `from`.
    pub(super) fn source_coord(
        &mut self,
        to: LayoutId,
        reg: usize,
        from: &[u32],
        map: &CoordMap,
        axis: usize,
    ) -> R<Value> {
        if let CoordMap::Axes(axes) = map {
            return match axes.iter().position(|&a| a == Some(axis)) {
                Some(d) => self.coord(to, reg, d),
                None => Ok(self.u32c(0)),
            };
        }
        let dst_shape = self.plan.layout(to).shape().to_vec();
        let weights = map.weights(from, &dst_shape);
        let linear = self.linear_index(to, reg, &weights)?;
        let stride = row_major_strides(from)[axis];
        let stride = self.u32c(stride as u32);
        let q = self.bin(BinaryOp::Div, linear, stride)?;
        let n = self.u32c(from[axis]);
        self.bin(BinaryOp::Rem, q, n)
    }

    /// Moves a tile between layouts through shared memory (see the module docs).
    fn through_shared(
        &mut self,
        from_layout: LayoutId,
        regs: &[Value],
        from: &[u32],
        ty: ScalarType,
        to: LayoutId,
        map: &CoordMap,
    ) -> R<Vec<Value>> {
        let count: u64 = from.iter().map(|&n| u64::from(n)).product();
        let claim = self.claim_scratch(count, ty)?;
        self.write_tile(claim, from_layout, regs, from)?;
        self.scratch_written(claim);
        let dst_shape = self.plan.layout(to).shape().to_vec();
        let weights = map.weights(from, &dst_shape);
        (0..self.plan.layout(to).registers())
            .map(|r| {
                let index = self.linear_index(to, r, &weights)?;
                self.shared_load(claim, index, ty)
            })
            .collect()
    }
}

/// The type a `ty` element takes in shared memory and in shuffles (`bool` as a byte).
pub(crate) fn shared_type(ty: ScalarType) -> ScalarType {
    if ty == ScalarType::Bool {
        ScalarType::U8
    } else {
        ty
    }
}
