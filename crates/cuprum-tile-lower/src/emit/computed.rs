//! Values recomputed where they are used ([`Repr::Computed`]): element-wise arithmetic of
//! iotas and uniform values (indices, masks) is kept as an expression and evaluated per
//! register in the layout each use needs, so it never moves through shared memory and
//! holds no registers between uses. The expression's operations are the same
//! [`Emitter::pointwise`] that computes them in registers, one definition for both.

use std::rc::Rc;

use cuprum_ir::{Op, ScalarType, Value};
use cuprum_tile_ir::{Op as TOp, TileValue};

use super::{Emitter, Lv, R};
use crate::layout::CoordMap;
use crate::plan::{LayoutId, Repr};

/// An expression of a tile's element at given coordinates.
#[derive(Debug)]
pub(crate) enum Computed {
    /// One value for every element.
    Uniform(Value),
    /// The coordinate along `axis`, as `ty` (an iota).
    Coord { axis: usize, ty: ScalarType },
    /// An element-wise operation of expressions over the same coordinates.
    Pointwise {
        op: TOp,
        ty: ScalarType,
        operands: Vec<Rc<Computed>>,
    },
    /// A broadcast, permutation or unit reshape: destination axis `d` is `inner`'s axis
    /// `axes[d]` (`None`: an axis `inner` has with size 1 or not at all); `inner` has
    /// `rank` axes, those no destination axis names read at 0.
    Remap {
        axes: Vec<Option<usize>>,
        rank: usize,
        inner: Rc<Computed>,
    },
}

impl Emitter<'_> {
    /// One element of the element-wise operation `op` from its operands' elements, as
    /// `ty`: what each register of a result in registers and each evaluation of a computed
    /// value emits.
    pub(super) fn pointwise(&mut self, op: &TOp, ty: ScalarType, xs: &[Value]) -> R<Value> {
        match (op, xs) {
            (TOp::Unary(u, _), &[x]) => self.def(Op::Unary(*u, x)),
            (TOp::Binary(b, ..), &[x, y]) => self.bin(*b, x, y),
            (TOp::Ternary(t, ..), &[x, y, z]) => self.def(Op::Ternary(*t, x, y, z)),
            (TOp::Compare(c, ..), &[x, y]) => self.cmp(*c, x, y),
            (TOp::Select { .. }, &[c, x, y]) => self.select(c, x, y),
            (TOp::Cast { .. }, &[x]) => self.cast(x, ty),
            (TOp::Bitcast { .. }, &[x]) => self.bitcast(x, ty),
            _ => Err(self.internal(format!(
                "{op:?} with {} operands is not an element-wise operation",
                xs.len()
            ))),
        }
    }

    /// `v`'s lowered value as an expression: a uniform value, an iota or a computed one.
    fn expression(&mut self, v: TileValue) -> R<Rc<Computed>> {
        match self.get(v)? {
            Lv::Uniform(u) => Ok(Rc::new(Computed::Uniform(u))),
            Lv::Iota { axis } => Ok(Rc::new(Computed::Coord {
                axis,
                ty: self.elem(v)?,
            })),
            Lv::Computed(c) => Ok(c),
            Lv::Dist { .. } => Err(self.internal(format!(
                "{v:?} is in registers but an operand of a computed value"
            ))),
        }
    }

    /// `value = op` (element-wise) planned as computed: its expression, nothing emitted.
    pub(super) fn computed_pointwise(&mut self, value: TileValue, op: &TOp) -> R<Lv> {
        let operands = op
            .operands()
            .iter()
            .map(|&o| self.expression(o))
            .collect::<R<Vec<_>>>()?;
        Ok(Lv::Computed(Rc::new(Computed::Pointwise {
            op: op.clone(),
            ty: self.elem(value)?,
            operands,
        })))
    }

    /// `source` under `map` (a broadcast, permutation or unit reshape) planned as computed.
    pub(super) fn computed_remap(&mut self, source: TileValue, map: &CoordMap) -> R<Lv> {
        let CoordMap::Axes(axes) = map else {
            return Err(self.internal("a computed value reshaped in row-major order"));
        };
        Ok(Lv::Computed(Rc::new(Computed::Remap {
            axes: axes.clone(),
            rank: self.shape(source)?.len(),
            inner: self.expression(source)?,
        })))
    }

    /// `expr`'s element at coordinates `coords` (`U32`, one per axis).
    pub(super) fn evaluate(&mut self, expr: &Computed, coords: &[Value]) -> R<Value> {
        match expr {
            Computed::Uniform(u) => Ok(*u),
            Computed::Coord { axis, ty } => {
                let c = coords.get(*axis).copied().ok_or_else(|| {
                    self.internal(format!("a computed iota along missing axis {axis}"))
                })?;
                self.cast(c, *ty)
            }
            Computed::Pointwise { op, ty, operands } => {
                let xs = operands
                    .iter()
                    .map(|o| self.evaluate(o, coords))
                    .collect::<R<Vec<_>>>()?;
                self.pointwise(op, *ty, &xs)
            }
            Computed::Remap { axes, rank, inner } => {
                let inner_coords = (0..*rank)
                    .map(|s| match axes.iter().position(|&a| a == Some(s)) {
                        Some(d) => coords.get(d).copied().ok_or_else(|| {
                            self.internal(format!("a computed value's missing axis {d}"))
                        }),
                        None => Ok(self.u32c(0)),
                    })
                    .collect::<R<Vec<_>>>()?;
                self.evaluate(inner, &inner_coords)
            }
        }
    }

    /// The registers of layout `to` holding computed `expr` (a tile of shape `from`) under
    /// `map`: each register evaluates it at its source coordinates.
    pub(super) fn computed_in(
        &mut self,
        expr: &Computed,
        from: &[u32],
        to: LayoutId,
        map: &CoordMap,
    ) -> R<Vec<Value>> {
        (0..self.plan.layout(to).registers())
            .map(|r| {
                let coords = (0..from.len())
                    .map(|axis| self.source_coord(to, r, from, map, axis))
                    .collect::<R<Vec<_>>>()?;
                self.evaluate(expr, &coords)
            })
            .collect()
    }

    /// Whether `v` is planned as computed.
    pub(super) fn is_computed(&self, v: TileValue) -> R<bool> {
        Ok(self.repr(v)? == Repr::Computed)
    }
}
