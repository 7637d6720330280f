//! Specialization: a generic tile kernel with the values of its const and type parameters
//! substituted, validated again now that every size is known.
//!
//! The front end runs once, at `cargo build`; a launch gives the parameters (from the
//! partition's tile shape, from `.generics(..)`, or from the element types of its tensors),
//! and this makes the kernel the interpreter and the lowering take: every [`Dim`] known,
//! every [`Elem`] known, every [`Literal`] an exact constant of its type, every
//! [`Op::ConstParam`] a constant. The errors are the user's: a dimension that is not a
//! positive size, a reshape whose element counts differ once the sizes are known.

use cuprum_ir::{Constant, ScalarType, scalar::cast_constant};

use crate::kernel::*;
use crate::types::{Axis, Dim, Elem, Shape, TileType};
use crate::validate::{TileValidationError, validate_kernel};

/// The values of a kernel's generic parameters, in declaration order.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Specialization {
    /// One value per const parameter ([`TileKernel::consts`]), as `i64` (a `bool` is 0 or 1).
    pub consts: Vec<i64>,
    /// One type per type parameter ([`TileKernel::types`]).
    pub types: Vec<ScalarType>,
}

/// Why a kernel cannot be specialized with some values.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SpecializeError {
    /// Not as many values as parameters.
    #[error("tile kernel `{kernel}` takes {expected} {what} parameters, {given} given")]
    Count {
        /// The kernel.
        kernel: String,
        /// `const` or `type`.
        what: &'static str,
        /// How many it declares.
        expected: usize,
        /// How many were given.
        given: usize,
    },
    /// A const parameter sizing a tile is not a positive `u32`.
    #[error(
        "tile kernel `{kernel}`: `{param}` = {value} sizes a tile dimension, which must be between 1 and 2^32 - 1"
    )]
    BadDim {
        /// The kernel.
        kernel: String,
        /// The parameter's name.
        param: String,
        /// Its value.
        value: i64,
    },
    /// A const parameter naming a tensor axis (in a permutation) is negative.
    #[error(
        "tile kernel `{kernel}`: `{param}` = {value} names a tensor axis, which must be 0 or more"
    )]
    BadAxis {
        /// The kernel.
        kernel: String,
        /// The parameter's name.
        param: String,
        /// Its value.
        value: i64,
    },
    /// A literal cannot be an element of the type it was given.
    #[error("tile kernel `{kernel}`: {message}")]
    Literal {
        /// The kernel.
        kernel: String,
        /// What is wrong.
        message: String,
    },
    /// The specialized kernel breaks a rule (shape mismatches that depend on parameters).
    #[error(transparent)]
    Invalid(#[from] TileValidationError),
}

/// `kernel` with `spec` substituted (see the module docs). A kernel without generic
/// parameters is returned validated and unchanged.
pub fn specialize(
    kernel: &TileKernel,
    spec: &Specialization,
) -> Result<TileKernel, SpecializeError> {
    for (what, expected, given) in [
        ("const", kernel.consts.len(), spec.consts.len()),
        ("type", kernel.types.len(), spec.types.len()),
    ] {
        if expected != given {
            return Err(SpecializeError::Count {
                kernel: kernel.name.clone(),
                what,
                expected,
                given,
            });
        }
    }
    let mut s = Subst {
        kernel,
        spec,
        error: None,
    };
    let mut out = kernel.clone();
    out.consts.clear();
    out.types.clear();
    for i in 0..out.values.len() {
        let v = TileValue::from_index(i as u32);
        out.values[v] = s.ty(&kernel.values[v]);
    }
    for p in &mut out.params {
        match &mut p.kind {
            ParamKind::Scalar(e) => *e = s.elem(*e),
            ParamKind::Tensor(t) => {
                t.elem = s.elem(t.elem);
                for d in &mut t.dims {
                    if let TensorDim::Static(d) = d {
                        *d = s.dim(*d);
                    }
                }
            }
        }
    }
    s.block(&mut out.body);
    if let Some(e) = s.error {
        return Err(e);
    }
    validate_kernel(&out)?;
    Ok(out)
}

struct Subst<'a> {
    kernel: &'a TileKernel,
    spec: &'a Specialization,
    error: Option<SpecializeError>,
}

impl Subst<'_> {
    fn dim(&mut self, d: Dim) -> Dim {
        let Dim::Param(i) = d else {
            return d;
        };
        let value = self.spec.consts.get(i as usize).copied().unwrap_or(0);
        match u32::try_from(value) {
            Ok(n) if n > 0 => Dim::Known(n),
            _ => {
                let param = self
                    .kernel
                    .consts
                    .get(i as usize)
                    .map(|c| c.name.clone())
                    .unwrap_or_default();
                self.error.get_or_insert(SpecializeError::BadDim {
                    kernel: self.kernel.name.clone(),
                    param,
                    value,
                });
                Dim::Known(1)
            }
        }
    }

    /// An axis number with its parameter substituted (any value a `u32` holds: the
    /// validator checks that the axes make a permutation).
    fn axis(&mut self, a: Axis) -> Axis {
        let Axis::Param(i) = a else {
            return a;
        };
        let value = self.spec.consts.get(i as usize).copied().unwrap_or(-1);
        match u32::try_from(value) {
            Ok(n) => Axis::Known(n),
            Err(_) => {
                let param = self
                    .kernel
                    .consts
                    .get(i as usize)
                    .map(|c| c.name.clone())
                    .unwrap_or_default();
                self.error.get_or_insert(SpecializeError::BadAxis {
                    kernel: self.kernel.name.clone(),
                    param,
                    value,
                });
                Axis::Known(0)
            }
        }
    }

    fn shape(&mut self, s: &Shape) -> Shape {
        s.iter().map(|&d| self.dim(d)).collect()
    }

    fn elem(&self, e: Elem) -> Elem {
        match e {
            Elem::Param(i) => Elem::Known(
                self.spec
                    .types
                    .get(i as usize)
                    .copied()
                    .unwrap_or(ScalarType::U8),
            ),
            known => known,
        }
    }

    fn ty(&mut self, t: &TileType) -> TileType {
        TileType {
            elem: self.elem(t.elem),
            shape: self.shape(&t.shape),
        }
    }

    fn literal(&mut self, l: Literal, elem: Elem) -> Literal {
        let Elem::Known(ty) = self.elem(elem) else {
            return l;
        };
        // An exact constant of another type is the validator's to report.
        if let Literal::Exact(_) = l {
            return l;
        }
        match l.to_constant(ty) {
            Some(c) => Literal::Exact(c),
            None => {
                self.error.get_or_insert(SpecializeError::Literal {
                    kernel: self.kernel.name.clone(),
                    message: format!("literal {l} cannot be a {ty}"),
                });
                l
            }
        }
    }

    fn block(&mut self, b: &mut Block) {
        for s in &mut b.stmts {
            self.stmt(s);
        }
    }

    fn stmt(&mut self, s: &mut Stmt) {
        match s {
            Stmt::Def { op, .. } => self.op(op),
            Stmt::If {
                then, otherwise, ..
            } => {
                self.block(then);
                self.block(otherwise);
            }
            Stmt::For { body, .. } | Stmt::Loop { body, .. } => self.block(body),
            Stmt::ForTiles { map, body, .. } => {
                *map = self.shape(map);
                self.block(body);
            }
            Stmt::StorePart { tile, .. } => *tile = self.shape(tile),
            Stmt::Store { .. }
            | Stmt::StoreMapped { .. }
            | Stmt::Scatter { .. }
            | Stmt::Break { .. }
            | Stmt::Continue { .. }
            | Stmt::Return
            | Stmt::Print { .. }
            | Stmt::Assert { .. }
            | Stmt::SourceLine { .. } => {}
        }
    }

    fn tensor_elem(&self, tensor: u32) -> Elem {
        match self.kernel.params.get(tensor as usize).map(|p| &p.kind) {
            Some(ParamKind::Tensor(t)) => t.elem,
            _ => Elem::Known(ScalarType::U8),
        }
    }

    fn op(&mut self, op: &mut Op) {
        match op {
            Op::Const { value, elem, shape } => {
                *value = self.literal(*value, *elem);
                *elem = self.elem(*elem);
                *shape = self.shape(shape);
            }
            Op::ConstParam(i) => {
                let (ty, v) = match self.kernel.consts.get(*i as usize) {
                    Some(c) => (
                        c.ty,
                        self.spec.consts.get(*i as usize).copied().unwrap_or(0),
                    ),
                    None => (ScalarType::I32, 0),
                };
                *op = Op::Const {
                    value: Literal::Exact(cast_constant(Constant::i64(v), ty)),
                    elem: Elem::Known(ty),
                    shape: Vec::new(),
                };
                if ty == ScalarType::Bool {
                    *op = Op::Const {
                        value: Literal::Exact(Constant::bool(v != 0)),
                        elem: Elem::Known(ty),
                        shape: Vec::new(),
                    };
                }
            }
            Op::Iota { elem, shape, .. } => {
                *elem = self.elem(*elem);
                *shape = self.shape(shape);
            }
            Op::Cast { to, .. } | Op::Bitcast { to, .. } => *to = self.elem(*to),
            Op::Broadcast { shape, .. } | Op::Reshape { shape, .. } => *shape = self.shape(shape),
            Op::Reduce { combine, value, .. } => {
                if let Combine::Closure { body, identity, .. } = combine {
                    let elem = self.kernel.values[*value].elem;
                    *identity = self.literal(*identity, elem);
                    self.block(body);
                }
            }
            Op::Gather {
                tensor, padding, ..
            } => {
                let elem = self.tensor_elem(*tensor);
                *padding = self.literal(*padding, elem);
            }
            Op::Load { view, padding } => {
                let elem = self.tensor_elem(view.tensor());
                *padding = self.literal(*padding, elem);
                match view {
                    View::Own { .. } => {}
                    View::Tiled { tile, .. } => *tile = self.shape(tile),
                    View::Permuted { tile, dim_map, .. } => {
                        *tile = self.shape(tile);
                        for a in dim_map.iter_mut() {
                            *a = self.axis(*a);
                        }
                    }
                }
            }
            Op::Param(_)
            | Op::BlockId(_)
            | Op::NumBlocks(_)
            | Op::TensorDim { .. }
            | Op::Unary(..)
            | Op::Binary(..)
            | Op::Ternary(..)
            | Op::Mma { .. }
            | Op::Compare(..)
            | Op::Select { .. }
            | Op::Permute { .. } => {}
        }
    }
}
