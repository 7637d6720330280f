//! Values recomputed where they are used ([`Repr::Computed`]): element-wise arithmetic of
//! iotas and uniform values (indices, masks) is kept as an expression and evaluated per
//! register in the layout each use needs, so it never moves through shared memory and
//! holds no registers between uses. The expression's operations are the same
//! [`Emitter::pointwise`] that computes them in registers, one definition for both.

use std::rc::Rc;

use cuprum_ir::{CmpOp, Op, ScalarType, Value};
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
    /// `map`: each register evaluates it at its source coordinates (an affine comparison
    /// more cheaply: [`Emitter::affine_comparison_in`]).
    pub(super) fn computed_in(
        &mut self,
        expr: &Computed,
        from: &[u32],
        to: LayoutId,
        map: &CoordMap,
    ) -> R<Vec<Value>> {
        if let Some(regs) = self.affine_comparison_in(expr, to, map)? {
            return Ok(regs);
        }
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

    /// `expr` in the registers of layout `to` (under `map`) where it compares an affine
    /// index `u + c[i]` (a uniform `u`, a coordinate `c[i]`, either absent) with a
    /// coordinate `c[j]`, in a signed integer type: a causal mask's `row + shift >= col`,
    /// a bound's `col < n`.
    /// Each register's coordinates are its thread's base plus a constant of the layout, so
    /// with `a = u + base[i] + off[i]` (a value per distinct `off[i]`, made here) the
    /// comparison `a OP base[j] + off[j]` is `sat(a - base[j]) OP off[j]`, one comparison
    /// with an immediate per register: exact, as `base[j]` and `off[j]` are non-negative
    /// and the subtraction saturates where it would wrap (the comparison's outcome then
    /// being that of the most negative `a`). Evaluated plainly, each register's coordinate
    /// would be a loop-invariant value the PTX compiler keeps in a register of its own
    /// (`Planner::affine_in_loop`). `None` where `expr` is no such comparison or a
    /// coordinate may be clamped.
    fn affine_comparison_in(
        &mut self,
        expr: &Computed,
        to: LayoutId,
        map: &CoordMap,
    ) -> R<Option<Vec<Value>>> {
        let Computed::Pointwise {
            op: TOp::Compare(op, ..),
            operands,
            ..
        } = expr
        else {
            return Ok(None);
        };
        let [x, y] = operands.as_slice() else {
            return Ok(None);
        };
        let (Some(fx), Some(fy)) = (Affine::of(x), Affine::of(y)) else {
            return Ok(None);
        };
        let Some(ty) = fx.ty.or(fy.ty).filter(|t| t.is_signed_int()) else {
            return Ok(None);
        };
        // `a OP c[j]`: the side without a uniform part is the coordinate (operands swapped,
        // the comparison mirrored).
        let mirrored = match op {
            CmpOp::Lt => CmpOp::Gt,
            CmpOp::Le => CmpOp::Ge,
            CmpOp::Gt => CmpOp::Lt,
            CmpOp::Ge => CmpOp::Le,
            CmpOp::Eq | CmpOp::Ne => *op,
        };
        let (a, j, op) = match (fx, fy) {
            (
                a,
                Affine {
                    uniform: None,
                    axis: Some(j),
                    ..
                },
            ) => (a, j, *op),
            (
                Affine {
                    uniform: None,
                    axis: Some(j),
                    ..
                },
                a,
            ) => (a, j, mirrored),
            _ => return Ok(None),
        };
        let CoordMap::Axes(axes) = map else {
            return Ok(None);
        };
        let dest = |axis: usize| axes.iter().position(|&m| m == Some(axis));
        let (a_dest, Some(j_dest)) = (a.axis.map(dest), dest(j)) else {
            return Ok(None);
        };
        let a_dest = match a_dest {
            Some(Some(d)) => Some(d),
            Some(None) | None => None,
        };
        let registers = self.plan.layout(to).registers();
        let layout = self.plan.layout(to);
        let clamps = (0..registers)
            .any(|r| layout.may_clamp(r, j_dest) || a_dest.is_some_and(|d| layout.may_clamp(r, d)));
        if clamps {
            return Ok(None);
        }
        let offsets: Vec<(u32, u32)> = (0..registers)
            .map(|r| {
                let at = layout.register(r);
                (a_dest.map_or(0, |d| at[d]), at[j_dest])
            })
            .collect();
        // Per thread: `u + base[i]` and `MIN + base[j]` (no wrap: `base[j]` >= 0).
        let mut base_a = match &a.uniform {
            Some(u) => Some(self.evaluate(u, &[])?),
            None => None,
        };
        if let Some(d) = a_dest {
            let b = self.coords[to].bases[d];
            let b = self.cast(b, ty)?;
            base_a = Some(match base_a {
                Some(u) => self.add(u, b)?,
                None => b,
            });
        }
        let base_a = match base_a {
            Some(v) => v,
            None => self.konst(cuprum_ir::Constant::new(ty, 0)),
        };
        let base_j = self.coords[to].bases[j_dest];
        let base_j = self.cast(base_j, ty)?;
        let min = self.konst(cuprum_ir::Constant::new(ty, 1u64 << (ty.bits() - 1)));
        let floor = self.add(min, base_j)?;
        let mut shifted: std::collections::HashMap<u32, Value> = Default::default();
        let mut out = Vec::with_capacity(registers);
        for (off_a, off_j) in offsets {
            let w = match shifted.get(&off_a) {
                Some(&w) => w,
                None => {
                    let k = self.konst(cuprum_ir::Constant::new(ty, u64::from(off_a)));
                    let a_here = self.add(base_a, k)?;
                    let kept = self.bin(cuprum_ir::BinaryOp::Max, a_here, floor)?;
                    let w = self.bin(cuprum_ir::BinaryOp::Sub, kept, base_j)?;
                    shifted.insert(off_a, w);
                    w
                }
            };
            let k = self.konst(cuprum_ir::Constant::new(ty, u64::from(off_j)));
            out.push(self.cmp(op, w, k)?);
        }
        Ok(Some(out))
    }
}

/// An integer expression as `uniform + c[axis]` ([`Emitter::affine_comparison_in`]).
struct Affine {
    /// The uniform part's expression.
    uniform: Option<Rc<Computed>>,
    /// The coordinate's axis, in the expression's own coordinates.
    axis: Option<usize>,
    /// The type, where the expression says (a uniform value alone does not; a comparison's
    /// operands are of one type).
    ty: Option<ScalarType>,
}

impl Affine {
    fn of(expr: &Rc<Computed>) -> Option<Affine> {
        match &**expr {
            Computed::Uniform(_) => Some(Affine {
                uniform: Some(expr.clone()),
                axis: None,
                ty: None,
            }),
            Computed::Coord { axis, ty } => Some(Affine {
                uniform: None,
                axis: Some(*axis),
                ty: Some(*ty),
            }),
            Computed::Pointwise {
                op: TOp::Binary(cuprum_ir::BinaryOp::Add, ..),
                ty,
                operands,
            } => {
                let [x, y] = operands.as_slice() else {
                    return None;
                };
                let uniform_of = |e: &Rc<Computed>| match &**e {
                    Computed::Uniform(_) => Some(e.clone()),
                    _ => None,
                };
                let (u, c) = match (uniform_of(x), uniform_of(y)) {
                    (Some(u), None) => (u, Affine::of(y)?),
                    (None, Some(u)) => (u, Affine::of(x)?),
                    _ => return None,
                };
                (c.uniform.is_none() && c.ty == Some(*ty)).then_some(Affine {
                    uniform: Some(u),
                    axis: c.axis,
                    ty: Some(*ty),
                })
            }
            Computed::Remap { axes, inner, .. } => {
                let a = Affine::of(inner)?;
                Some(Affine {
                    axis: a.axis.and_then(|s| axes.iter().position(|&m| m == Some(s))),
                    ..a
                })
            }
            Computed::Pointwise { .. } => None,
        }
    }
}
