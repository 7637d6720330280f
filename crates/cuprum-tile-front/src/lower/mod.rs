//! Lowering one entry function to tile IR: its generics and parameters, then its body,
//! statement by statement, into a [`TileBuilder`].
//!
//! The body is lowered by direct SSA construction over Rust's structured control flow: a
//! variable holds a value ([`Val`]); assigning to a `let mut` variable rebinds it; an `if`
//! whose branches assign a variable gives that variable an `If` result, and a loop that
//! assigns it carries it (`control`). Helper functions are inlined at each call
//! (`helpers`); built-in operations are found by name (`calls`) and lowered by `ops`,
//! `math`, `views` and `macros`. Literals stay untyped until a use types them
//! ([`crate::literal`]); `infer` carries what one run learns about a `let`'s literal to a
//! second run, as rustc types a literal from any of its uses.
//!
//! Every error is a `syn::Error` at the span of the code it is about.

mod calls;
mod control;
mod expr;
mod helpers;
mod infer;
mod macros;
mod mapped;
mod math;
mod ops;
mod pointers;
mod views;

use std::collections::HashMap;

use cuprum_ir::ScalarType;
use cuprum_tile_ir::{
    Axis, Block, Dim, Elem, Literal, Op, ParamKind, Shape, Stmt, TensorAccess, TensorParam,
    TileBuilder, TileKernel, TileType, TileValue,
};
use proc_macro2::Span;
use syn::spanned::Spanned;

use crate::items::{EntryAttrs, ModuleItems};
use crate::literal::{Lit, Num};
use crate::types::{ConstValue, Extent, Generic, GenericEnv, Ty, TypeCx, show_shape, show_type};
use crate::{EntryInfo, GenericParamInfo, err};

pub(crate) use infer::Hints;

/// One entry of a value-level shape (`x.shape()`): a size, or a tensor's dimension read at
/// launch.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum ShapeEntry {
    Dim(Dim),
    Dynamic { tensor: u32, axis: u32 },
}

/// A value while lowering.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Val {
    /// A tile; rank 0 for the scalars of the source.
    Tile(TileValue),
    /// A compile-time number or bool, and the `let` it came from (for [`Hints`]).
    Lit(Lit, Option<u32>),
    /// A shape (`const_shape![..]`, `x.shape()`).
    Shape(Vec<ShapeEntry>),
    /// `[a, b]`: tile indices, permutations.
    Array(Vec<Val>),
    /// `(a, b, c)`: the block id and the grid.
    Tuple(Vec<Val>),
    /// Tensor parameter `index`.
    Tensor(u32),
    /// `x.partition(shape)` of a read-only tensor, or `z.partition_mut(shape)` of an output.
    Partition {
        tensor: u32,
        tile: Shape,
        mutable: bool,
    },
    /// `x.partition_permuted(shape, dim_map)` of a read-only tensor: tiles of the tensor
    /// seen with its axes permuted (axis `i` of the view is the tensor's `dim_map[i]`).
    PermutedPartition {
        tensor: u32,
        tile: Shape,
        dim_map: Vec<Axis>,
    },
    /// A raw pointer parameter (`*mut T` of an `unsafe` entry).
    Pointer(u32),
    /// A tile of pointers: raw pointer parameter `tensor` and each element's offset from
    /// it (`i64`).
    PointerTile { tensor: u32, offsets: TileValue },
    /// A tensor view over a raw pointer (`make_tensor_view`).
    RawTensor(Box<pointers::RawView>),
    /// `view.partition(shape)` or `view.partition_mut(shape)` of a tensor view over a
    /// pointer.
    RawPartition {
        view: Box<pointers::RawView>,
        tile: Shape,
        mutable: bool,
    },
    /// A mapped output (`MappedPartitionMut<E, S, M>`): tensor parameter `tensor`, its tiles
    /// of `tile` dealt to the blocks by a schedule with map shape `map`.
    Mapped {
        tensor: u32,
        tile: Shape,
        map: Shape,
    },
    /// The index a loop over a mapped output's tiles gives (`for i in z.iter_indices()`):
    /// the loop (`id`) and the current tile's coordinates (rank-0 `i32`s).
    TileIndex {
        tensor: u32,
        id: u32,
        coords: Vec<TileValue>,
    },
    /// `const_array!(P)` of an array const parameter whose numbers are known only at
    /// launch: axis numbers (a permutation) that name the parameter's elements.
    Axes(Vec<Axis>),
    /// A mode argument of cutile's API that has no meaning here (`ftz::Disabled`,
    /// `rounding::NearestEven`, `None`, ...), dropped from argument lists.
    Marker(String),
    /// `()`.
    Unit,
    /// What an expression that does not finish gives (`return`, `break`, `continue`).
    Never,
}

impl Val {
    fn lit(lit: Lit) -> Val {
        Val::Lit(lit, None)
    }

    /// What kind of value this is, for messages.
    fn kind(&self) -> &'static str {
        match self {
            Val::Tile(_) => "a tile",
            Val::Lit(..) => "a number",
            Val::Shape(_) => "a shape",
            Val::Array(_) => "an array",
            Val::Tuple(_) => "a tuple",
            Val::Tensor(_) => "a tensor",
            Val::Partition { mutable: false, .. } => "a partition",
            Val::Partition { mutable: true, .. } => "a mutable partition",
            Val::PermutedPartition { .. } => "a permuted partition",
            Val::Axes(_) => "an array of const parameters",
            Val::Pointer(_) => "a raw pointer",
            Val::Mapped { .. } => "a mapped partition",
            Val::TileIndex { .. } => "a partition index",
            Val::PointerTile { .. } => "a pointer tile",
            Val::RawTensor(_) => "a tensor view over a pointer",
            Val::RawPartition { .. } => "a partition of a tensor view over a pointer",
            Val::Marker(_) => "a mode marker",
            Val::Unit => "`()`",
            Val::Never => "nothing (this expression does not finish)",
        }
    }
}

/// A local variable.
#[derive(Clone, Debug)]
struct Binding {
    name: String,
    val: Val,
    mutable: bool,
}

/// A loop being lowered: which variables it carries (flat binding indices) and their types.
struct LoopCtx {
    carried: Vec<usize>,
    types: Vec<TileType>,
}

/// The state of one function being lowered (an entry, or a helper inlined into it).
struct Frame {
    env: GenericEnv,
    scopes: Vec<Vec<Binding>>,
    loops: Vec<LoopCtx>,
    /// The helper's name, for messages; `None` for the entry.
    helper: Option<String>,
}

pub(crate) struct Lowerer<'m> {
    items: &'m ModuleItems<'m>,
    b: TileBuilder,
    frame: Frame,
    /// Callers of the helper being inlined, innermost last.
    callers: Vec<String>,
    /// How many `reduce` combiners are being lowered (a `return` cannot leave one).
    in_combiner: usize,
    /// The code after a `return`, `break` or `continue` (or an `if` all of whose branches
    /// end so) does not run; it is not lowered.
    unreachable: bool,
    /// Descriptions of values produced by named operations, for type-mismatch messages
    /// ("`reduce_max` over axis 1 of `[BM, BN]`").
    origins: HashMap<TileValue, String>,
    /// The results of reductions (whose annotation may keep size-1 dimensions).
    reductions: std::collections::HashSet<TileValue>,
    hints: Hints,
    /// The loops over mapped outputs' tiles being lowered, innermost last: the tensor and
    /// the loop's id (what its indices carry).
    mapped_loops: Vec<(u32, u32)>,
    /// Ids given to such loops so far.
    mapped_ids: u32,
}

pub(crate) type Result<T> = syn::Result<T>;

/// Lowers `entry`; errors carry their spans. `hints` holds what a previous run learnt about
/// literals and receives what this one learns.
pub(crate) fn lower_entry(
    items: &ModuleItems<'_>,
    func: &syn::ItemFn,
    attrs: &EntryAttrs,
    hints: &mut Hints,
) -> Result<(TileKernel, EntryInfo)> {
    let mut lw = Lowerer {
        items,
        b: TileBuilder::new(func.sig.ident.to_string()),
        frame: Frame {
            env: GenericEnv::default(),
            scopes: vec![Vec::new()],
            loops: Vec::new(),
            helper: None,
        },
        callers: Vec::new(),
        in_combiner: 0,
        unreachable: false,
        origins: HashMap::new(),
        reductions: std::collections::HashSet::new(),
        hints: std::mem::take(hints),
        mapped_loops: Vec::new(),
        mapped_ids: 0,
    };
    let result = lw.entry(func, attrs);
    *hints = std::mem::take(&mut lw.hints);
    let info = result?;
    let kernel = lw.b.finish();
    Ok((kernel, info))
}

impl<'m> Lowerer<'m> {
    fn entry(&mut self, func: &syn::ItemFn, attrs: &EntryAttrs) -> Result<EntryInfo> {
        let sig = &func.sig;
        if let Some(a) = &sig.asyncness {
            return err(a.span(), "a tile kernel cannot be `async`");
        }
        if let syn::ReturnType::Type(_, t) = &sig.output {
            return err(
                t.span(),
                "a tile entry returns nothing; it stores its results",
            );
        }
        let generics = self.entry_generics(&sig.generics)?;
        self.entry_params(sig)?;
        let tail = self.fn_body(&func.block)?;
        match tail {
            Val::Unit | Val::Never => {}
            other => {
                let span = func
                    .block
                    .stmts
                    .last()
                    .map_or(func.block.span(), |s| s.span());
                return err(
                    span,
                    format!(
                        "a tile entry returns nothing, but its body ends with {}; add `;` or store it",
                        other.kind()
                    ),
                );
            }
        }
        Ok(EntryInfo {
            name: sig.ident.to_string(),
            generics,
            is_unsafe: sig.unsafety.is_some(),
            attrs: attrs.clone(),
        })
    }

    fn entry_generics(&mut self, generics: &syn::Generics) -> Result<Vec<GenericParamInfo>> {
        let mut info = Vec::new();
        for p in &generics.params {
            match p {
                syn::GenericParam::Lifetime(_) => {}
                syn::GenericParam::Type(t) => {
                    let name = t.ident.to_string();
                    let index = self.b.type_param(name.clone());
                    self.frame
                        .env
                        .names
                        .push((name.clone(), Generic::Type(Elem::Param(index))));
                    info.push(GenericParamInfo::Type { name, index });
                }
                syn::GenericParam::Const(c) => {
                    let name = c.ident.to_string();
                    match &c.ty {
                        syn::Type::Array(a) => {
                            let ty = const_scalar_type(&a.elem)?;
                            if !ty.is_int() {
                                return err(
                                    a.elem.span(),
                                    "a shape parameter's elements are integers (`[i32; N]`)",
                                );
                            }
                            let len = match &a.len {
                                syn::Expr::Lit(syn::ExprLit {
                                    lit: syn::Lit::Int(n),
                                    ..
                                }) => n.base10_parse::<usize>()?,
                                other => {
                                    return err(
                                        other.span(),
                                        "the length of an array const parameter must be a number (its rank is fixed)",
                                    );
                                }
                            };
                            let first = self.b.kernel().consts.len() as u32;
                            let dims = (0..len)
                                .map(|k| Dim::Param(self.b.const_param(format!("{name}[{k}]"), ty)))
                                .collect();
                            self.frame
                                .env
                                .names
                                .push((name.clone(), Generic::Array(dims)));
                            info.push(GenericParamInfo::Const {
                                name,
                                ty,
                                first,
                                len: len as u32,
                                array: true,
                            });
                        }
                        other => {
                            let ty = const_scalar_type(other)?;
                            let index = self.b.const_param(name.clone(), ty);
                            self.frame.env.names.push((
                                name.clone(),
                                Generic::Const {
                                    value: ConstValue::Param(index),
                                    ty,
                                },
                            ));
                            info.push(GenericParamInfo::Const {
                                name,
                                ty,
                                first: index,
                                len: 1,
                                array: false,
                            });
                        }
                    }
                }
            }
        }
        Ok(info)
    }

    fn entry_params(&mut self, sig: &syn::Signature) -> Result<()> {
        for input in &sig.inputs {
            let syn::FnArg::Typed(pt) = input else {
                return err(input.span(), "a tile entry takes no `self`");
            };
            let (name, mutable) = match &*pt.pat {
                syn::Pat::Ident(i) if i.by_ref.is_none() && i.subpat.is_none() => {
                    (i.ident.to_string(), i.mutability.is_some())
                }
                syn::Pat::Wild(_) => ("_".to_string(), false),
                other => return err(other.span(), "an entry parameter is a plain name"),
            };
            let ty = self.type_cx().ty(&pt.ty)?;
            let kind = match ty {
                Ty::Tensor {
                    elem,
                    dims,
                    mutable: true,
                } => {
                    let mut tile = Vec::with_capacity(dims.len());
                    for d in &dims {
                        match d {
                            Extent::Dim(d) => tile.push(*d),
                            Extent::Dynamic => {
                                return err(
                                    pt.ty.span(),
                                    "a `&mut Tensor` is partitioned by the host into tiles of its declared shape, so every dimension must be static (a number or a const parameter), not `-1`",
                                );
                            }
                        }
                    }
                    if tile.is_empty() || tile.len() > 3 {
                        return err(
                            pt.ty.span(),
                            format!(
                                "a `&mut Tensor` has rank 1 to 3 (one grid axis per dimension), not {}",
                                tile.len()
                            ),
                        );
                    }
                    ParamKind::Tensor(TensorParam {
                        elem,
                        dims: dims.iter().map(|d| d.tensor_dim()).collect(),
                        access: TensorAccess::Partitioned,
                    })
                }
                Ty::Tensor { elem, dims, .. } => ParamKind::Tensor(TensorParam {
                    elem,
                    dims: dims.iter().map(|d| d.tensor_dim()).collect(),
                    access: TensorAccess::Read,
                }),
                Ty::Scalar(e) => ParamKind::Scalar(e),
                Ty::Mapped { elem, tile, .. } => {
                    if tile.is_empty() || tile.len() > 3 {
                        return err(
                            pt.ty.span(),
                            format!("a `MappedPartitionMut` has rank 1 to 3, not {}", tile.len()),
                        );
                    }
                    ParamKind::Tensor(TensorParam {
                        elem,
                        dims: tile
                            .iter()
                            .map(|d| cuprum_tile_ir::TensorDim::Static(*d))
                            .collect(),
                        access: TensorAccess::Mapped,
                    })
                }
                Ty::Pointer(elem) => {
                    if sig.unsafety.is_none() {
                        return err(
                            pt.ty.span(),
                            "a raw pointer parameter needs an `unsafe fn` entry: its caller promises that no two tile blocks race on an element",
                        );
                    }
                    ParamKind::Tensor(TensorParam {
                        elem,
                        dims: vec![cuprum_tile_ir::TensorDim::Dynamic],
                        access: TensorAccess::Raw,
                    })
                }
                _ => {
                    return err(
                        pt.ty.span(),
                        "an entry parameter is a `&Tensor<E, {..}>`, a `&mut Tensor<E, {..}>`, a scalar or (in an `unsafe fn`) a `*mut E`",
                    );
                }
            };
            let raw = matches!(&kind, ParamKind::Tensor(t) if t.access == TensorAccess::Raw);
            let mapped = match self.type_cx().ty(&pt.ty)? {
                Ty::Mapped { tile, map, .. } => Some((tile, map)),
                _ => None,
            };
            let is_tensor = matches!(kind, ParamKind::Tensor(_));
            let index = self.b.param(name.clone(), kind);
            let val = if let Some((tile, map)) = mapped {
                if map.len() != tile.len() {
                    return err(
                        pt.ty.span(),
                        format!(
                            "the map shape has rank {}, the tiles {}: they must agree",
                            map.len(),
                            tile.len()
                        ),
                    );
                }
                Val::Mapped {
                    tensor: index,
                    tile,
                    map,
                }
            } else if raw {
                Val::Pointer(index)
            } else if is_tensor {
                Val::Tensor(index)
            } else {
                Val::Tile(self.def(Op::Param(index), pt.span())?)
            };
            self.bind(&name, val, mutable);
        }
        Ok(())
    }

    // ---- helpers for everything below -------------------------------------------------

    fn type_cx(&self) -> TypeCx<'_> {
        TypeCx {
            env: &self.frame.env,
            consts: &self.items.consts,
        }
    }

    fn kernel(&self) -> &TileKernel {
        self.b.kernel()
    }

    fn ty(&self, v: TileValue) -> TileType {
        self.b.ty(v).clone()
    }

    fn show(&self, t: &TileType) -> String {
        show_type(self.kernel(), t)
    }

    fn show_shape(&self, s: &[Dim]) -> String {
        show_shape(self.kernel(), s)
    }

    /// Appends `op`, typed by the IR's rules; a rule it breaks is reported at `span` with the
    /// kernel's names.
    fn def(&mut self, op: Op, span: Span) -> Result<TileValue> {
        let operands = op.operands();
        let v = self.b.def(op).map_err(|e| {
            syn::Error::new(span, crate::types::with_names(self.b.kernel(), &e.message))
        })?;
        // A value computed from a defaulted literal in its type is one too (`j % 2` of a
        // counter `j` whose type a later use decides).
        let elem = self.b.ty(v).elem;
        for o in operands {
            if self.b.ty(o).elem == elem {
                self.hints.inherit(o, v);
            }
        }
        Ok(v)
    }

    /// A tile of `elem` and `shape` whose every element is `lit`.
    fn constant(&mut self, lit: &Lit, elem: Elem, shape: Shape, span: Span) -> Result<TileValue> {
        let value = lit.literal(elem, span)?;
        self.def(Op::Const { value, elem, shape }, span)
    }

    /// A literal as a rank-0 tile of its own or Rust's default type.
    fn materialize(&mut self, lit: &Lit, origin: Option<u32>, span: Span) -> Result<TileValue> {
        let ty = match origin.and_then(|o| self.hints.get(o)) {
            Some(t) if lit.ty.is_none() => t,
            _ => lit.default_type(),
        };
        let v = self.constant(lit, Elem::Known(ty), Vec::new(), span)?;
        if lit.ty.is_none()
            && let Some(o) = origin
        {
            self.hints.defaulted(v, o);
        }
        Ok(v)
    }

    /// `v` as a tile (a literal takes its own or the default type).
    fn tile(&mut self, v: Val, span: Span) -> Result<TileValue> {
        match v {
            Val::Tile(t) => Ok(t),
            Val::Lit(l, o) => self.materialize(&l, o, span),
            other => err(
                span,
                format!("expected a tile or a scalar, found {}", other.kind()),
            ),
        }
    }

    /// `v` as a tile of element type `elem` (a literal takes it; a tile must have it).
    fn tile_of(&mut self, v: Val, elem: Elem, span: Span) -> Result<TileValue> {
        match v {
            Val::Lit(l, o) => {
                if let (Some(o), Elem::Known(t)) = (o, elem) {
                    self.hints.learn(o, t);
                }
                self.constant(&l, elem, Vec::new(), span)
            }
            other => {
                let t = self.tile(other, span)?;
                let ty = self.ty(t);
                if ty.elem != elem {
                    self.hints.mismatch(t, elem);
                    return err(
                        span,
                        format!(
                            "mismatched element types: `{}` where `{}` elements are required",
                            self.show(&ty),
                            crate::types::show_elem(self.kernel(), elem)
                        ),
                    );
                }
                Ok(t)
            }
        }
    }

    /// A rank-0 tile repeated to `shape`.
    fn splat(&mut self, scalar: TileValue, shape: &Shape, span: Span) -> Result<TileValue> {
        if shape.is_empty() {
            return Ok(scalar);
        }
        let ones = vec![Dim::Known(1); shape.len()];
        let r = self.def(
            Op::Reshape {
                value: scalar,
                shape: ones,
            },
            span,
        )?;
        self.def(
            Op::Broadcast {
                value: r,
                shape: shape.clone(),
            },
            span,
        )
    }

    /// A compile-time integer (an axis, an index into a shape or tuple).
    fn const_int(&self, v: &Val, span: Span, what: &str) -> Result<i128> {
        match v {
            Val::Lit(l, _) => match l.as_int() {
                Some(i) => Ok(i),
                None => err(span, format!("{what} must be an integer")),
            },
            _ => err(
                span,
                format!("{what} must be known when the kernel is compiled (a number or a const)"),
            ),
        }
    }

    /// A shape value whose every entry is a size (a tile shape).
    fn static_shape(&self, v: &Val, span: Span, what: &str) -> Result<Shape> {
        let Val::Shape(entries) = v else {
            return err(
                span,
                format!(
                    "{what} must be a shape (`const_shape![..]` or `x.shape()`), not {}",
                    v.kind()
                ),
            );
        };
        entries
            .iter()
            .map(|e| match e {
                ShapeEntry::Dim(d) => Ok(*d),
                ShapeEntry::Dynamic { tensor, axis } => err(
                    span,
                    format!(
                        "{what} must be static, but dimension {axis} of `{}` is `-1` (read at launch)",
                        self.kernel()
                            .params
                            .get(*tensor as usize)
                            .map_or("?", |p| p.name.as_str())
                    ),
                ),
            })
            .collect()
    }

    // ---- variables ------------------------------------------------------------------

    fn bind(&mut self, name: &str, val: Val, mutable: bool) {
        if name == "_" {
            return;
        }
        if let Some(scope) = self.frame.scopes.last_mut() {
            scope.push(Binding {
                name: name.to_string(),
                val,
                mutable,
            });
        }
    }

    /// The flat index of the innermost visible binding of `name`.
    fn lookup(&self, name: &str) -> Option<usize> {
        let mut flat = 0usize;
        let mut found = None;
        for scope in &self.frame.scopes {
            for b in scope {
                if b.name == name {
                    found = Some(flat);
                }
                flat += 1;
            }
        }
        found
    }

    fn binding(&self, flat: usize) -> Option<&Binding> {
        self.frame.scopes.iter().flatten().nth(flat)
    }

    fn binding_mut(&mut self, flat: usize) -> Option<&mut Binding> {
        self.frame.scopes.iter_mut().flatten().nth(flat)
    }

    /// The values of every visible variable, outermost first.
    fn snapshot(&self) -> Vec<Val> {
        self.frame
            .scopes
            .iter()
            .flatten()
            .map(|b| b.val.clone())
            .collect()
    }

    /// Sets the variables of a snapshot's scopes back to its values.
    fn restore(&mut self, snap: &[Val]) {
        for (b, v) in self.frame.scopes.iter_mut().flatten().zip(snap) {
            b.val = v.clone();
        }
    }

    // ---- statements -----------------------------------------------------------------

    /// A function body: its statements, and its value (a helper's `return x;` at the end is
    /// its value).
    fn fn_body(&mut self, block: &syn::Block) -> Result<Val> {
        match block.stmts.split_last() {
            Some((
                syn::Stmt::Expr(
                    syn::Expr::Return(syn::ExprReturn {
                        expr: Some(value), ..
                    }),
                    _,
                ),
                init,
            )) if self.frame.helper.is_some() => {
                for s in init {
                    self.mark_line(s.span());
                    self.stmt(s)?;
                    if self.unreachable {
                        return Ok(Val::Never);
                    }
                }
                self.mark_line(value.span());
                self.expr(value, &Ty::Infer)
            }
            _ => self.block_stmts(&block.stmts, &Ty::Infer),
        }
    }

    /// A `{ .. }` block in a new scope; its value is its tail expression's.
    fn block(&mut self, block: &syn::Block, expect: &Ty) -> Result<Val> {
        self.frame.scopes.push(Vec::new());
        let r = self.block_stmts(&block.stmts, expect);
        self.frame.scopes.pop();
        r
    }

    fn block_stmts(&mut self, stmts: &[syn::Stmt], expect: &Ty) -> Result<Val> {
        let mut value = Val::Unit;
        for (i, s) in stmts.iter().enumerate() {
            if self.unreachable {
                return Ok(Val::Never);
            }
            let last = i + 1 == stmts.len();
            self.mark_line(s.span());
            value = match s {
                syn::Stmt::Expr(e, None) if last => self.expr(e, expect)?,
                other => {
                    self.stmt(other)?;
                    Val::Unit
                }
            };
        }
        if self.unreachable {
            return Ok(Val::Never);
        }
        Ok(value)
    }

    /// Marks what follows as coming from `span`'s line, when the module carries line
    /// information. Not inside a `reduce` combiner (its body is the combination's, repeated
    /// wherever it is applied), nor after the block has ended.
    fn mark_line(&mut self, span: proc_macro2::Span) {
        let Some(file) = &self.items.line_info else {
            return;
        };
        let start = span.start();
        if start.line == 0 || self.in_combiner > 0 || self.b.block_ended() {
            return;
        }
        self.b.push(Stmt::SourceLine {
            file: file.clone(),
            line: start.line as u32,
            column: start.column as u32 + 1,
        });
    }

    fn stmt(&mut self, s: &syn::Stmt) -> Result<()> {
        match s {
            syn::Stmt::Local(local) => self.local(local),
            syn::Stmt::Expr(e, semi) => {
                let v = self.expr(e, &Ty::Infer)?;
                if semi.is_none()
                    && !matches!(v, Val::Unit | Val::Never)
                    && !matches!(
                        e,
                        syn::Expr::If(_)
                            | syn::Expr::Block(_)
                            | syn::Expr::Unsafe(_)
                            | syn::Expr::ForLoop(_)
                            | syn::Expr::While(_)
                            | syn::Expr::Loop(_)
                    )
                {
                    return err(e.span(), "expected `;` after this expression");
                }
                Ok(())
            }
            syn::Stmt::Macro(m) => {
                self.macro_call(&m.mac, &Ty::Infer)?;
                Ok(())
            }
            syn::Stmt::Item(syn::Item::Use(_)) => Ok(()),
            syn::Stmt::Item(other) => err(
                other.span(),
                "items inside a tile kernel are not supported; put them in the module",
            ),
        }
    }

    fn local(&mut self, local: &syn::Local) -> Result<()> {
        let (pat, annotation) = match &local.pat {
            syn::Pat::Type(pt) => (&*pt.pat, Some(&*pt.ty)),
            other => (other, None),
        };
        let expect = match annotation {
            Some(t) => self.type_cx().ty(t)?,
            None => Ty::Infer,
        };
        let Some(init) = &local.init else {
            return err(
                local.span(),
                "a `let` in a tile kernel needs a value (`let x = ..;`)",
            );
        };
        if let Some((_, diverge)) = &init.diverge {
            return err(
                diverge.span(),
                "`let .. else` is not supported in tile kernels",
            );
        }
        let value = self.expr(&init.expr, &expect)?;
        if value == Val::Never {
            return Ok(());
        }
        let value = self.check_against(value, &expect, init.expr.span(), &init.expr)?;
        // An untyped literal bound by `let` remembers the `let`, so that a use that types it
        // can type it here in the next run.
        let value = match value {
            Val::Lit(l, None) if l.ty.is_none() => {
                let id = self.hints.next_let();
                match self.hints.get(id) {
                    Some(t) => Val::lit(l.typed(t, init.expr.span())?),
                    None => Val::Lit(l, Some(id)),
                }
            }
            other => other,
        };
        self.bind_pattern(pat, value)
    }

    fn bind_pattern(&mut self, pat: &syn::Pat, value: Val) -> Result<()> {
        match pat {
            syn::Pat::Ident(i) => {
                if i.by_ref.is_some() || i.subpat.is_some() {
                    return err(i.span(), "`ref` bindings are not supported in tile kernels");
                }
                self.bind(&i.ident.to_string(), value, i.mutability.is_some());
                Ok(())
            }
            syn::Pat::Wild(_) => Ok(()),
            syn::Pat::Paren(p) => self.bind_pattern(&p.pat, value),
            syn::Pat::Type(pt) => {
                let ty = self.type_cx().ty(&pt.ty)?;
                let value = self.check_against(value, &ty, pt.span(), &syn::parse_quote!(_))?;
                self.bind_pattern(&pt.pat, value)
            }
            syn::Pat::Tuple(t) => {
                let Val::Tuple(items) = value else {
                    return err(t.span(), format!("a tuple pattern for {}", value.kind()));
                };
                if items.len() != t.elems.len() {
                    return err(
                        t.span(),
                        format!(
                            "this pattern has {} elements, the value {}",
                            t.elems.len(),
                            items.len()
                        ),
                    );
                }
                for (p, v) in t.elems.iter().zip(items) {
                    self.bind_pattern(p, v)?;
                }
                Ok(())
            }
            other => err(
                other.span(),
                "this pattern is not supported in tile kernels",
            ),
        }
    }

    /// `value` checked against an annotation (and converted: a literal takes the annotated
    /// type). `expr` is the annotated expression, for the message.
    fn check_against(&mut self, value: Val, ty: &Ty, span: Span, expr: &syn::Expr) -> Result<Val> {
        match (ty, value) {
            (Ty::Infer, v) => Ok(v),
            (Ty::Unit, Val::Unit) => Ok(Val::Unit),
            (Ty::Scalar(e), Val::Lit(l, o)) => match e {
                Elem::Known(t) => {
                    if let Some(o) = o {
                        self.hints.learn(o, *t);
                    }
                    Ok(Val::lit(l.typed(*t, span)?))
                }
                Elem::Param(_) => Ok(Val::Tile(self.constant(&l, *e, Vec::new(), span)?)),
            },
            (Ty::Scalar(_) | Ty::Tile(..), Val::Tile(t)) => {
                let want = ty.tile_type().unwrap_or_else(|| self.ty(t));
                let got = self.ty(t);
                if got == want {
                    return Ok(Val::Tile(t));
                }
                // cutile lets a reduction's result be annotated with its size-1 dimensions
                // kept or dropped (`let m: Tile<f32, { [1] }> = reduce_max(row, 0)`): the same
                // elements, reshaped.
                if self.reductions.contains(&t)
                    && got.elem == want.elem
                    && without_ones(&got.shape) == without_ones(&want.shape)
                {
                    let v = self.def(
                        Op::Reshape {
                            value: t,
                            shape: want.shape,
                        },
                        span,
                    )?;
                    return Ok(Val::Tile(v));
                }
                if got.elem != want.elem {
                    self.hints.mismatch(t, want.elem);
                }
                Err(self.mismatch(t, &got, &want, span, expr))
            }
            (Ty::Tile(e, shape), Val::Lit(l, _)) if shape.is_empty() => {
                Ok(Val::Tile(self.constant(&l, *e, Vec::new(), span)?))
            }
            (Ty::Shape(want), Val::Shape(got)) => {
                let ok = want.len() == got.len()
                    && want.iter().zip(&got).all(|(w, g)| match (w, g) {
                        (Extent::Dim(a), ShapeEntry::Dim(b)) => a == b,
                        (Extent::Dynamic, ShapeEntry::Dynamic { .. }) => true,
                        _ => false,
                    });
                if ok {
                    Ok(Val::Shape(got))
                } else {
                    err(span, "this shape differs from its annotation")
                }
            }
            (Ty::Tensor { elem, dims, .. }, Val::Tensor(i)) => {
                let Some(ParamKind::Tensor(t)) =
                    self.kernel().params.get(i as usize).map(|p| &p.kind)
                else {
                    return err(span, "not a tensor");
                };
                let same = t.elem == *elem
                    && t.dims.len() == dims.len()
                    && t.dims.iter().zip(dims).all(|(a, b)| *a == b.tensor_dim());
                if same {
                    Ok(Val::Tensor(i))
                } else {
                    err(span, "this tensor's type differs from its annotation")
                }
            }
            (
                Ty::Partition { elem, tile, .. },
                Val::Partition {
                    tensor,
                    tile: got,
                    mutable,
                },
            ) => {
                let Some(ParamKind::Tensor(t)) =
                    self.kernel().params.get(tensor as usize).map(|p| &p.kind)
                else {
                    return err(span, "not a tensor");
                };
                if t.elem == *elem && got == *tile {
                    Ok(Val::Partition {
                        tensor,
                        tile: got,
                        mutable,
                    })
                } else {
                    err(
                        span,
                        format!(
                            "this partition has tiles of `{}`, not `{}`",
                            self.show_shape(&got),
                            self.show_shape(tile)
                        ),
                    )
                }
            }
            (
                Ty::Partition { elem, tile, .. },
                Val::PermutedPartition {
                    tensor,
                    tile: got,
                    dim_map,
                },
            ) => {
                let Some(ParamKind::Tensor(t)) =
                    self.kernel().params.get(tensor as usize).map(|p| &p.kind)
                else {
                    return err(span, "not a tensor");
                };
                if t.elem == *elem && got == *tile {
                    Ok(Val::PermutedPartition {
                        tensor,
                        tile: got,
                        dim_map,
                    })
                } else {
                    err(
                        span,
                        format!(
                            "this partition has tiles of `{}`, not `{}`",
                            self.show_shape(&got),
                            self.show_shape(tile)
                        ),
                    )
                }
            }
            (Ty::Pointer(elem), Val::Pointer(p)) => {
                if self.pointer_elem(p)? == *elem {
                    Ok(Val::Pointer(p))
                } else {
                    err(
                        span,
                        "this pointer's element type differs from its annotation",
                    )
                }
            }
            (Ty::PointerTile(elem, shape), Val::PointerTile { tensor, offsets }) => {
                if self.pointer_elem(tensor)? == *elem && self.ty(offsets).shape == *shape {
                    Ok(Val::PointerTile { tensor, offsets })
                } else {
                    err(
                        span,
                        format!(
                            "this pointer tile has shape `{}`, not `{}`",
                            self.show_shape(&self.ty(offsets).shape),
                            self.show_shape(shape)
                        ),
                    )
                }
            }
            (Ty::Tensor { elem, dims, .. }, Val::RawTensor(view)) => {
                if self.pointer_elem(view.tensor)? == *elem && dims.len() == view.sizes.len() {
                    Ok(Val::RawTensor(view))
                } else {
                    err(span, "this tensor view's type differs from its annotation")
                }
            }
            (Ty::Token, Val::Marker(m)) => Ok(Val::Marker(m)),
            // Run-time numbers (`Shape::<{ [-1] }> { dims: &[len] }`).
            (Ty::Shape(want), Val::Array(items))
                if want.len() == items.len() && want.contains(&Extent::Dynamic) =>
            {
                Ok(Val::Array(items))
            }
            (Ty::ConstArray(want), Val::Array(items))
                if want.len() == items.len() && want.contains(&-1) =>
            {
                Ok(Val::Array(items))
            }
            (Ty::ConstArray(want), Val::Array(items)) => {
                let mut got = Vec::with_capacity(items.len());
                for item in &items {
                    got.push(self.const_int(item, span, "an entry of an `Array`")?);
                }
                if got.len() != want.len()
                    || got.iter().zip(want).any(|(g, w)| *g != i128::from(*w))
                {
                    return err(span, format!("this array is {got:?}, not {want:?}"));
                }
                Ok(Val::Array(items))
            }
            (Ty::Tuple(tys), Val::Tuple(vals)) if tys.len() == vals.len() => {
                let mut out = Vec::with_capacity(vals.len());
                for (t, v) in tys.iter().zip(vals) {
                    out.push(self.check_against(v, t, span, expr)?);
                }
                Ok(Val::Tuple(out))
            }
            (Ty::Array(t, n), Val::Array(vals)) if vals.len() == *n => {
                let mut out = Vec::with_capacity(vals.len());
                for v in vals {
                    out.push(self.check_against(v, t, span, expr)?);
                }
                Ok(Val::Array(out))
            }
            (Ty::Array(t, n), Val::Shape(entries))
                if entries.len() == *n && matches!(**t, Ty::Scalar(Elem::Known(_))) =>
            {
                Ok(Val::Shape(entries))
            }
            (_, Val::Never) => Ok(Val::Never),
            (ty, v) => err(
                span,
                format!(
                    "mismatched types: {} where {} is annotated",
                    v.kind(),
                    describe_ty(ty)
                ),
            ),
        }
    }

    /// The error for a tile of type `got` where `want` is required.
    fn mismatch(
        &self,
        v: TileValue,
        got: &TileType,
        want: &TileType,
        span: Span,
        expr: &syn::Expr,
    ) -> syn::Error {
        let what = match self.origins.get(&v) {
            Some(origin) => origin.clone(),
            None => match expr {
                syn::Expr::Infer(_) => "this value".to_string(),
                e => format!("`{}`", crate::source_text(e)),
            },
        };
        let (got_s, want_s) =
            if got.elem == want.elem && !got.shape.is_empty() && !want.shape.is_empty() {
                (self.show_shape(&got.shape), self.show_shape(&want.shape))
            } else {
                (self.show(got), self.show(want))
            };
        syn::Error::new(span, format!("{what} gives `{got_s}`, not `{want_s}`"))
    }
}

fn describe_ty(ty: &Ty) -> &'static str {
    match ty {
        Ty::Infer => "anything",
        Ty::Unit => "`()`",
        Ty::Scalar(_) => "a scalar",
        Ty::Tile(..) => "a tile",
        Ty::Shape(_) => "a shape",
        Ty::Tensor { .. } => "a tensor",
        Ty::Partition { .. } => "a partition",
        Ty::ConstArray(_) => "an array of numbers",
        Ty::Tuple(_) => "a tuple",
        Ty::Array(..) => "an array",
        Ty::Pointer(_) => "a raw pointer",
        Ty::PointerTile(..) => "a pointer tile",
        Ty::Token => "a token",
        Ty::Mapped { .. } => "a mapped partition",
    }
}

/// A shape without its known dimensions of size 1.
fn without_ones(shape: &[Dim]) -> Vec<Dim> {
    shape
        .iter()
        .copied()
        .filter(|d| *d != Dim::Known(1))
        .collect()
}

/// The scalar type of a const generic (`i32`, `bool`, `usize`, ...).
fn const_scalar_type(t: &syn::Type) -> Result<ScalarType> {
    if let syn::Type::Path(p) = t
        && let Some(id) = p.path.get_ident()
        && let Some(s) = ScalarType::from_rust_name(&id.to_string())
        && (s.is_int() || s == ScalarType::Bool)
    {
        return Ok(s);
    }
    err(
        t.span(),
        "a const parameter of a tile kernel is an integer, a `bool`, or an array of integers `[i32; N]`",
    )
}

/// A zero of `elem`: the padding of loads.
fn zero_literal(elem: Elem) -> Literal {
    match elem {
        Elem::Known(ScalarType::Bool) => Literal::Bool(false),
        _ => Literal::Int(0),
    }
}

/// Appends `value = op` to a block that is already closed (its branch's yields are decided
/// after both branches are lowered).
fn push_def(b: &mut TileBuilder, block: &mut Block, ty: TileType, op: Op) -> TileValue {
    let v = b.value(ty);
    block.stmts.push(Stmt::Def { value: v, op });
    v
}

/// Whether a literal is a number (not a bool).
fn is_number(l: &Lit) -> bool {
    !matches!(l.num, Num::Bool(_))
}
