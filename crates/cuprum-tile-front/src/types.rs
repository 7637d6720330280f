//! The types a tile kernel's source writes (`Tile<f32, { [BM, BN] }>`, `&Tensor<E, S>`,
//! `Shape<{ [1, BLOCK] }>`, `(i32, i32, i32)`), resolved against the generic parameters of
//! the function being compiled and the module's consts, and shown back to users with their
//! own names (`[BM, BN]`, not the IR's `[$0, $1]`).
//!
//! A kernel's generic parameters stay symbolic: `const BM: i32` is a [`Dim::Param`], an array
//! parameter `const S: [i32; 2]` is two of them (named `S[0]` and `S[1]`), and an element
//! type parameter `E` is an [`Elem::Param`]. An inlined helper's generic parameters are bound
//! to whatever its call gives them, known sizes or the kernel's parameters.

use std::collections::HashMap;

use cuprum_ir::ScalarType;
use cuprum_tile_ir::{Dim, Elem, Shape, TensorDim, TileKernel, TileType};
use syn::spanned::Spanned;

use crate::err;
use crate::literal::Lit;

/// One dimension of a tensor or shape type: a size, or `-1` (read at launch).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Extent {
    /// A size (known, or a const parameter).
    Dim(Dim),
    /// `-1`.
    Dynamic,
}

impl Extent {
    pub fn tensor_dim(self) -> TensorDim {
        match self {
            Extent::Dim(d) => TensorDim::Static(d),
            Extent::Dynamic => TensorDim::Dynamic,
        }
    }
}

/// A resolved type annotation.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Ty {
    /// `_`, or no annotation.
    Infer,
    /// `()`.
    Unit,
    /// A scalar (`f32`, `E`): a rank-0 tile.
    Scalar(Elem),
    /// `Tile<E, S>`.
    Tile(Elem, Shape),
    /// `Shape<S>`.
    Shape(Vec<Extent>),
    /// `Tensor<E, S>` (behind `&` or `&mut`).
    Tensor {
        elem: Elem,
        dims: Vec<Extent>,
        mutable: bool,
    },
    /// `Partition<E, S>` or `PartitionMut<E, S>`.
    Partition {
        elem: Elem,
        tile: Shape,
        mutable: bool,
    },
    /// `Array<{ [1, 0] }>`: cutile's compile-time array of numbers (a permutation).
    ConstArray(Vec<i64>),
    /// `(A, B, ..)`.
    Tuple(Vec<Ty>),
    /// `[T; N]`.
    Array(Box<Ty>, usize),
    /// `*mut E` (or `*const E`): a raw pointer parameter of an `unsafe` entry.
    Pointer(Elem),
    /// `PointerTile<*mut E, S>`: a tile of pointers.
    PointerTile(Elem, Shape),
    /// `Token`: cutile's memory-ordering token (accepted, and dropped).
    Token,
    /// `MappedPartitionMut<E, S, M>`: an output whose tiles of `S` a persistent schedule
    /// with map shape `M` deals to the blocks.
    Mapped { elem: Elem, tile: Shape, map: Shape },
}

impl Ty {
    /// The tile type this annotation requires, when it is a tile or a scalar.
    pub fn tile_type(&self) -> Option<TileType> {
        match self {
            Ty::Scalar(e) => Some(TileType {
                elem: *e,
                shape: Vec::new(),
            }),
            Ty::Tile(e, s) => Some(TileType {
                elem: *e,
                shape: s.clone(),
            }),
            _ => None,
        }
    }

    /// The element type the annotation asks for, if any.
    pub fn elem(&self) -> Option<Elem> {
        match self {
            Ty::Scalar(e) | Ty::Tile(e, _) => Some(*e),
            _ => None,
        }
    }
}

/// The value of a scalar const generic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ConstValue {
    /// Const parameter `index` of the kernel.
    Param(u32),
    /// A known value (a helper's parameter bound to a known size).
    Known(i64),
}

impl ConstValue {
    pub fn from_dim(d: Dim) -> Self {
        match d {
            Dim::Param(i) => ConstValue::Param(i),
            Dim::Known(n) => ConstValue::Known(i64::from(n)),
        }
    }
}

/// What a generic parameter's name stands for.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Generic {
    /// `const N: T`.
    Const { value: ConstValue, ty: ScalarType },
    /// `const S: [i32; N]`: one dimension per element.
    Array(Vec<Dim>),
    /// A type parameter.
    Type(Elem),
    /// A helper's parameter not bound yet: `const N: T`.
    UnboundConst(ScalarType),
    /// A helper's parameter not bound yet: `const S: [T; len]`.
    UnboundArray(usize),
    /// A helper's parameter not bound yet: a type.
    UnboundType,
}

/// The generic parameters of the function being compiled, by name.
#[derive(Clone, Debug, Default)]
pub(crate) struct GenericEnv {
    pub names: Vec<(String, Generic)>,
}

impl GenericEnv {
    pub fn get(&self, name: &str) -> Option<&Generic> {
        self.names.iter().find(|(n, _)| n == name).map(|(_, g)| g)
    }

    pub fn set(&mut self, name: &str, g: Generic) {
        if let Some(slot) = self.names.iter_mut().find(|(n, _)| n == name) {
            slot.1 = g;
        }
    }
}

/// Resolves types and shapes against a function's generics and the module's consts.
pub(crate) struct TypeCx<'a> {
    pub env: &'a GenericEnv,
    pub consts: &'a HashMap<String, Lit>,
}

/// The name of a single-segment path without arguments (`BM`, `f32`), if it is one.
pub(crate) fn path_name(path: &syn::Path) -> Option<String> {
    path.get_ident().map(|i| i.to_string())
}

/// The generic arguments of a path's last segment (`Tile<f32, S>` gives `f32, S`).
pub(crate) fn last_generic_args(path: &syn::Path) -> Vec<&syn::GenericArgument> {
    match path.segments.last().map(|s| &s.arguments) {
        Some(syn::PathArguments::AngleBracketed(a)) => a.args.iter().collect(),
        _ => Vec::new(),
    }
}

impl TypeCx<'_> {
    /// Resolves a type annotation.
    pub fn ty(&self, t: &syn::Type) -> syn::Result<Ty> {
        match t {
            syn::Type::Infer(_) => Ok(Ty::Infer),
            syn::Type::Paren(p) => self.ty(&p.elem),
            syn::Type::Group(g) => self.ty(&g.elem),
            syn::Type::Tuple(tt) if tt.elems.is_empty() => Ok(Ty::Unit),
            syn::Type::Tuple(tt) => Ok(Ty::Tuple(
                tt.elems
                    .iter()
                    .map(|e| self.ty(e))
                    .collect::<syn::Result<_>>()?,
            )),
            syn::Type::Reference(r) => {
                let inner = self.ty(&r.elem)?;
                match inner {
                    Ty::Tensor { elem, dims, .. } => Ok(Ty::Tensor {
                        elem,
                        dims,
                        mutable: r.mutability.is_some(),
                    }),
                    other => Ok(other),
                }
            }
            syn::Type::Array(a) => {
                let len = self.const_usize(&a.len)?;
                Ok(Ty::Array(Box::new(self.ty(&a.elem)?), len))
            }
            syn::Type::Path(p) if p.qself.is_none() => self.path_ty(&p.path, t),
            syn::Type::Ptr(p) => Ok(Ty::Pointer(self.elem(&p.elem)?)),
            other => err(
                other.span(),
                "this type is not supported in a tile kernel (tiles, tensors, shapes, partitions, scalars and tuples are)",
            ),
        }
    }

    fn path_ty(&self, path: &syn::Path, whole: &syn::Type) -> syn::Result<Ty> {
        let Some(last) = path.segments.last() else {
            return err(whole.span(), "an empty type");
        };
        let name = last.ident.to_string();
        if path.segments.len() == 1 {
            if let Some(t) = ScalarType::from_rust_name(&name) {
                return Ok(Ty::Scalar(Elem::Known(t)));
            }
            match self.env.get(&name) {
                Some(Generic::Type(e)) => return Ok(Ty::Scalar(*e)),
                Some(Generic::UnboundType) => {
                    return err(
                        whole.span(),
                        format!("the type parameter `{name}` is not known here"),
                    );
                }
                _ => {}
            }
        }
        let args = last_generic_args(path);
        let two = |what: &str| -> syn::Result<(&syn::GenericArgument, &syn::GenericArgument)> {
            match args.as_slice() {
                [a, b] => Ok((a, b)),
                _ => err(
                    whole.span(),
                    format!("`{what}` takes an element type and a shape: `{what}<f32, {{ [B] }}>`"),
                ),
            }
        };
        match name.as_str() {
            "Tile" => {
                let (e, s) = two("Tile")?;
                let elem = self.elem_arg(e)?;
                let shape = self.static_shape(&self.shape_arg(s)?, s.span(), "a tile")?;
                Ok(Ty::Tile(elem, shape))
            }
            "Tensor" => {
                let (e, s) = two("Tensor")?;
                Ok(Ty::Tensor {
                    elem: self.elem_arg(e)?,
                    dims: self.shape_arg(s)?,
                    mutable: false,
                })
            }
            "Partition" | "PartitionMut" => {
                let (e, s) = two(&name)?;
                let elem = self.elem_arg(e)?;
                let tile = self.static_shape(&self.shape_arg(s)?, s.span(), "a partition")?;
                Ok(Ty::Partition {
                    elem,
                    tile,
                    mutable: name == "PartitionMut",
                })
            }
            "Shape" => match args.as_slice() {
                [s] => Ok(Ty::Shape(self.shape_arg(s)?)),
                _ => err(whole.span(), "`Shape` takes one shape: `Shape<{ [1, B] }>`"),
            },
            "Array" => match args.as_slice() {
                [a] => Ok(Ty::ConstArray(self.const_array_arg(a)?)),
                _ => err(
                    whole.span(),
                    "`Array` takes its numbers: `Array<{ [1, 0] }>`",
                ),
            },
            "PointerTile" => {
                let (e, s) = two("PointerTile")?;
                let elem = match e {
                    syn::GenericArgument::Type(t) => match self.ty(t)? {
                        Ty::Pointer(elem) => elem,
                        _ => {
                            return err(
                                e.span(),
                                "a pointer tile's first argument is a pointer type: `PointerTile<*mut f32, { [B] }>`",
                            );
                        }
                    },
                    other => {
                        return err(other.span(), "expected a pointer type such as `*mut f32`");
                    }
                };
                let shape = self.static_shape(&self.shape_arg(s)?, s.span(), "a pointer tile")?;
                Ok(Ty::PointerTile(elem, shape))
            }
            "Token" => Ok(Ty::Token),
            "MappedPartitionMut" => match args.as_slice() {
                [e, s, m] => {
                    let elem = self.elem_arg(e)?;
                    let tile = self.static_shape(
                        &self.shape_arg(s)?,
                        s.span(),
                        "a mapped partition's tile",
                    )?;
                    let map = self.static_shape(&self.shape_arg(m)?, m.span(), "a map shape")?;
                    Ok(Ty::Mapped { elem, tile, map })
                }
                _ => err(
                    whole.span(),
                    "`MappedPartitionMut` takes an element type, a tile shape and a map shape: `MappedPartitionMut<f32, { [BM, BN] }, MAP>`",
                ),
            },
            "BoundedPartition" | "BoundedPartitionMut" | "PartitionIndex" => err(
                whole.span(),
                format!("`{name}` is not supported in cuprum tile kernels yet"),
            ),
            _ => err(
                whole.span(),
                format!("unknown type `{name}` in a tile kernel"),
            ),
        }
    }

    /// An element type argument (`f32`, `E`).
    pub fn elem_arg(&self, a: &syn::GenericArgument) -> syn::Result<Elem> {
        match a {
            syn::GenericArgument::Type(t) => self.elem(t),
            other => err(other.span(), "expected an element type such as `f32`"),
        }
    }

    /// An element type (`f32`, `E`).
    pub fn elem(&self, t: &syn::Type) -> syn::Result<Elem> {
        match self.ty(t)? {
            Ty::Scalar(e) => Ok(e),
            _ => err(
                t.span(),
                "expected an element type (`f32`, `i32`, `bool`, ... or a type parameter)",
            ),
        }
    }

    /// A shape argument: `{ [BM, -1] }`, `S` (an array parameter), or `{ [] }`.
    pub fn shape_arg(&self, a: &syn::GenericArgument) -> syn::Result<Vec<Extent>> {
        match a {
            syn::GenericArgument::Const(e) => self.shape_expr(e),
            syn::GenericArgument::Type(syn::Type::Path(p)) if p.qself.is_none() => {
                let Some(name) = path_name(&p.path) else {
                    return err(
                        a.span(),
                        "expected a shape: `{ [B] }` or an array parameter",
                    );
                };
                self.array_param(&name, a.span())
            }
            syn::GenericArgument::Type(syn::Type::Array(arr)) => {
                err(arr.span(), "a shape is written in braces: `{ [B, 1] }`")
            }
            other => err(
                other.span(),
                "expected a shape: `{ [B] }` or an array const parameter",
            ),
        }
    }

    fn array_param(&self, name: &str, span: proc_macro2::Span) -> syn::Result<Vec<Extent>> {
        match self.env.get(name) {
            Some(Generic::Array(dims)) => Ok(dims.iter().map(|d| Extent::Dim(*d)).collect()),
            Some(Generic::UnboundArray(_)) => err(
                span,
                format!("the shape parameter `{name}` is not known here"),
            ),
            Some(_) => err(
                span,
                format!(
                    "`{name}` is not a shape; a shape is `{{ [{name}] }}` or an array const parameter"
                ),
            ),
            None => err(span, format!("unknown shape `{name}`")),
        }
    }

    /// The numbers of a compile-time array: `{ [1, 0] }`, or an array parameter whose
    /// elements are known.
    pub fn const_array_arg(&self, a: &syn::GenericArgument) -> syn::Result<Vec<i64>> {
        let exprs: Vec<&syn::Expr> = match a {
            syn::GenericArgument::Const(e) => match strip(e) {
                syn::Expr::Array(arr) => arr.elems.iter().collect(),
                other => return err(other.span(), "expected numbers: `{ [1, 0] }`"),
            },
            syn::GenericArgument::Type(syn::Type::Path(p)) if p.qself.is_none() => {
                let name = path_name(&p.path).unwrap_or_default();
                return match self.env.get(&name) {
                    Some(Generic::Array(dims)) => dims
                        .iter()
                        .map(|d| match d {
                            Dim::Known(n) => Ok(i64::from(*n)),
                            Dim::Param(_) => err(
                                a.span(),
                                format!("the numbers of `{name}` must be known when the kernel is compiled"),
                            ),
                        })
                        .collect(),
                    _ => err(a.span(), format!("`{name}` is not an array const parameter")),
                };
            }
            other => return err(other.span(), "expected numbers: `{ [1, 0] }`"),
        };
        exprs
            .into_iter()
            .map(|e| match self.size(e)? {
                Size::Known(v) => Ok(v),
                Size::Param(_, name) => err(
                    e.span(),
                    format!("the numbers of an `Array` must be known when the kernel is compiled, not `{name}`"),
                ),
            })
            .collect()
    }

    /// A shape written as an expression: `{ [a, b] }`, `[a, b]`, or an array parameter's
    /// name.
    pub fn shape_expr(&self, e: &syn::Expr) -> syn::Result<Vec<Extent>> {
        match e {
            syn::Expr::Block(b) => match b.block.stmts.as_slice() {
                [syn::Stmt::Expr(inner, None)] => self.shape_expr(inner),
                _ => err(e.span(), "expected a shape: `{ [B, 1] }`"),
            },
            syn::Expr::Paren(p) => self.shape_expr(&p.expr),
            syn::Expr::Group(g) => self.shape_expr(&g.expr),
            syn::Expr::Array(a) => a.elems.iter().map(|x| self.extent(x)).collect(),
            syn::Expr::Path(p) if p.qself.is_none() => match path_name(&p.path) {
                Some(name) => self.array_param(&name, e.span()),
                None => err(e.span(), "expected a shape"),
            },
            _ => err(e.span(), "expected a shape: `{ [B, 1] }`"),
        }
    }

    /// One dimension: a positive size, `-1`, a const parameter, a module const, or an
    /// element of an array parameter (`S[0]`). Arithmetic between known sizes is folded;
    /// arithmetic on a const parameter is refused (not supported yet).
    pub fn extent(&self, e: &syn::Expr) -> syn::Result<Extent> {
        match self.size(e)? {
            Size::Known(-1) => Ok(Extent::Dynamic),
            Size::Known(n) => match u32::try_from(n) {
                Ok(n) if n > 0 => Ok(Extent::Dim(Dim::Known(n))),
                _ => err(
                    e.span(),
                    format!(
                        "a dimension must be a positive size (or -1 for a size read at launch), not {n}"
                    ),
                ),
            },
            Size::Param(d, _) => Ok(Extent::Dim(d)),
        }
    }

    fn size(&self, e: &syn::Expr) -> syn::Result<Size> {
        match e {
            syn::Expr::Lit(syn::ExprLit { lit, .. }) => match Lit::from_syn(lit)?.as_int() {
                Some(v) => i64::try_from(v)
                    .map(Size::Known)
                    .or_else(|_| err(e.span(), "this size does not fit in 64 bits")),
                None => err(e.span(), "a dimension must be an integer"),
            },
            syn::Expr::Paren(p) => self.size(&p.expr),
            syn::Expr::Group(g) => self.size(&g.expr),
            syn::Expr::Block(b) => match b.block.stmts.as_slice() {
                [syn::Stmt::Expr(inner, None)] => self.size(inner),
                _ => err(e.span(), "expected a dimension"),
            },
            syn::Expr::Unary(u) if matches!(u.op, syn::UnOp::Neg(_)) => match self.size(&u.expr)? {
                Size::Known(v) => Ok(Size::Known(-v)),
                Size::Param(_, name) => Err(param_arithmetic(e, &name)),
            },
            syn::Expr::Path(p) if p.qself.is_none() => {
                let Some(name) = path_name(&p.path) else {
                    return err(e.span(), "expected a dimension");
                };
                match self.env.get(&name) {
                    Some(Generic::Const { value, .. }) => match value {
                        ConstValue::Param(i) => Ok(Size::Param(Dim::Param(*i), name)),
                        ConstValue::Known(n) => Ok(Size::Known(*n)),
                    },
                    Some(Generic::Array(_)) | Some(Generic::UnboundArray(_)) => err(
                        e.span(),
                        format!("`{name}` is a whole shape, not one dimension"),
                    ),
                    Some(Generic::UnboundConst(_)) => err(
                        e.span(),
                        format!("the const parameter `{name}` is not known here"),
                    ),
                    Some(_) => err(e.span(), format!("`{name}` is a type, not a size")),
                    None => match self.consts.get(&name).and_then(Lit::as_int) {
                        Some(v) => i64::try_from(v)
                            .map(Size::Known)
                            .or_else(|_| err(e.span(), "this size does not fit in 64 bits")),
                        None if self.consts.contains_key(&name) => err(
                            e.span(),
                            format!("the const `{name}` is not an integer, so not a size"),
                        ),
                        None => err(e.span(), format!("unknown size `{name}`")),
                    },
                }
            }
            syn::Expr::Index(ix) => {
                let syn::Expr::Path(p) = &*ix.expr else {
                    return err(e.span(), "expected a dimension");
                };
                let name = path_name(&p.path).unwrap_or_default();
                let Some(Generic::Array(dims)) = self.env.get(&name) else {
                    return err(
                        e.span(),
                        format!("`{name}` is not an array const parameter"),
                    );
                };
                let i = match self.size(&ix.index)? {
                    Size::Known(i) => i,
                    Size::Param(..) => return err(ix.index.span(), "the index must be a number"),
                };
                match usize::try_from(i).ok().and_then(|i| dims.get(i)) {
                    Some(Dim::Known(n)) => Ok(Size::Known(i64::from(*n))),
                    Some(d) => Ok(Size::Param(*d, format!("{name}[{i}]"))),
                    None => err(
                        ix.index.span(),
                        format!(
                            "`{name}` has {} dimensions; index {i} is out of range",
                            dims.len()
                        ),
                    ),
                }
            }
            syn::Expr::Binary(bin) => {
                let (l, r) = (self.size(&bin.left)?, self.size(&bin.right)?);
                let (l, r) = match (l, r) {
                    (Size::Known(l), Size::Known(r)) => (l, r),
                    (Size::Param(_, name), _) | (_, Size::Param(_, name)) => {
                        return Err(param_arithmetic(e, &name));
                    }
                };
                let v = match bin.op {
                    syn::BinOp::Add(_) => l.checked_add(r),
                    syn::BinOp::Sub(_) => l.checked_sub(r),
                    syn::BinOp::Mul(_) => l.checked_mul(r),
                    syn::BinOp::Div(_) => l.checked_div(r),
                    syn::BinOp::Rem(_) => l.checked_rem(r),
                    _ => return err(e.span(), "only `+ - * / %` are allowed in a size"),
                };
                match v {
                    Some(v) => Ok(Size::Known(v)),
                    None => err(e.span(), "this size overflows or divides by zero"),
                }
            }
            syn::Expr::Cast(c) => self.size(&c.expr),
            _ => err(
                e.span(),
                "expected a dimension: a number, a const parameter or a const",
            ),
        }
    }

    /// A compile-time `usize` (an array length).
    pub fn const_usize(&self, e: &syn::Expr) -> syn::Result<usize> {
        match self.size(e)? {
            Size::Known(n) => usize::try_from(n).or_else(|_| err(e.span(), "a negative length")),
            Size::Param(_, name) => err(
                e.span(),
                format!("the length must be a number, not the parameter `{name}`"),
            ),
        }
    }

    /// The shape of a tile, partition or value-level shape: every dimension a size.
    pub fn static_shape(
        &self,
        extents: &[Extent],
        span: proc_macro2::Span,
        what: &str,
    ) -> syn::Result<Shape> {
        extents
            .iter()
            .map(|e| match e {
                Extent::Dim(d) => Ok(*d),
                Extent::Dynamic => err(
                    span,
                    format!("{what} has static dimensions only; `-1` is for tensors"),
                ),
            })
            .collect()
    }
}

/// `e` without the braces and parentheses around it.
fn strip(e: &syn::Expr) -> &syn::Expr {
    match e {
        syn::Expr::Block(b) => match b.block.stmts.as_slice() {
            [syn::Stmt::Expr(inner, None)] => strip(inner),
            _ => e,
        },
        syn::Expr::Paren(p) => strip(&p.expr),
        syn::Expr::Group(g) => strip(&g.expr),
        other => other,
    }
}

/// A dimension being evaluated.
enum Size {
    Known(i64),
    /// A const parameter, with its name for messages.
    Param(Dim, String),
}

fn param_arithmetic(e: &syn::Expr, name: &str) -> syn::Error {
    syn::Error::new(
        e.span(),
        format!(
            "arithmetic on the const parameter `{name}` inside a shape is not supported yet; add a const parameter for this size instead"
        ),
    )
}

/// A type as users read it, with the kernel's parameter names: `f32`, `Tile<f32, [BM, BN]>`.
pub(crate) fn show_type(kernel: &TileKernel, t: &TileType) -> String {
    if t.shape.is_empty() {
        show_elem(kernel, t.elem)
    } else {
        format!(
            "Tile<{}, {}>",
            show_elem(kernel, t.elem),
            show_shape(kernel, &t.shape)
        )
    }
}

/// A shape with the kernel's parameter names: `[BM, 1]`.
pub(crate) fn show_shape(kernel: &TileKernel, shape: &[Dim]) -> String {
    let dims: Vec<String> = shape.iter().map(|d| show_dim(kernel, *d)).collect();
    format!("[{}]", dims.join(", "))
}

pub(crate) fn show_dim(kernel: &TileKernel, d: Dim) -> String {
    match d {
        Dim::Known(n) => n.to_string(),
        Dim::Param(i) => kernel
            .consts
            .get(i as usize)
            .map(|c| c.name.clone())
            .unwrap_or_else(|| format!("${i}")),
    }
}

pub(crate) fn show_elem(kernel: &TileKernel, e: Elem) -> String {
    match e {
        Elem::Known(t) => t.to_string(),
        Elem::Param(i) => kernel
            .types
            .get(i as usize)
            .cloned()
            .unwrap_or_else(|| format!("%T{i}")),
    }
}

/// A validator message with the IR's `$i` and `%Ti` replaced by the kernel's names.
pub(crate) fn with_names(kernel: &TileKernel, message: &str) -> String {
    let mut out = message.to_string();
    for (i, c) in kernel.consts.iter().enumerate().rev() {
        out = out.replace(&format!("${i}"), &c.name);
    }
    for (i, t) in kernel.types.iter().enumerate().rev() {
        out = out.replace(&format!("%T{i}"), t);
    }
    out
}
