//! Per-thread arrays in local memory: literals (`[e; N]`, `[a, b, c]`, and nested ones such as
//! `[[0; 4]; 8]` or `[[1, 2], [3, 4]]`), indexing at run time with Rust's bounds checks, and
//! whole-array (and whole-row) copies.
//!
//! The IR has flat local arrays, so an array of arrays is one flat array in row-major order:
//! `a[i][j]` of a `[[T; N]; M]` is element `i * N + j`, and `a[i]` is a *row view*, the same
//! local array seen from element `i * N` with the shape `[T; N]`. Each index is checked against
//! its own dimension, as Rust does (`a[i]` against `M`, then `[j]` against `N`).
//!
//! Rust arrays are values, so binding one to a new name copies it (a row view too); array
//! expressions are built in place. The element type comes from the elements, the `let`
//! annotation, or later uses (`let mut acc = [0.0; 4]; acc[k] += x[k];` makes `acc` an
//! `[f32; 4]`). Flat arrays of tuples or structs are `local_aggregates`' (`array_expr` hands
//! them over); arrays of arrays of them are refused.

use cuprum_ir::{
    AddressSpace, ArrayDecl, BinaryOp, CmpOp, Constant, Op, ScalarType as S, Stmt, Value,
};
use proc_macro2::Span;
use syn::spanned::Spanned;

use super::*;

/// Arrays with more elements than this (all dimensions together) are refused: they would
/// spill a thread's local memory badly.
pub(super) const MAX_LOCAL_ARRAY: u64 = 16 * 1024;

/// A local array, or a row of one (`a[i]` of a nested array).
#[derive(Clone, Debug)]
pub(super) struct LocalArray {
    /// The array's index in the kernel's local arrays.
    pub array: u32,
    /// The element type (of the innermost dimension).
    pub elem: S,
    /// The lengths, outermost first (`[[f32; 4]; 8]` is `[8, 4]`); never empty.
    pub dims: Vec<u32>,
    /// Where this (sub-)array starts in `array`, in elements: `None` at element 0, else a
    /// `U32` value (a row picked by an index).
    pub offset: Option<Value>,
    /// Set only in the infer run, while the element type is still being decided at that site.
    pub infer: Option<(u32, LitKind)>,
    /// Set when the array lives in variables rather than memory (see [`Registers`]); then
    /// `array` names no local array and `offset` is a dynamic position relative to
    /// `Registers::base`.
    pub regs: Option<Registers>,
}

/// An array kept in variables, one per element, from its `let` on: a wgmma accumulator,
/// which the `wgmma.mma_async` statement reads and writes in place (`Stmt::WgmmaMma::acc`),
/// so no copy may stand between it and the array. Which `let`s these are, the infer run
/// learns from the wgmma calls (`Inference::register_lets`). Elements at constant positions
/// are the variables themselves; at run-time positions, a chain of selects (reads) or of
/// guarded writes over every variable, which constant folding reduces once loops unroll.
/// Anything that needs memory (a copy, an `mma` fragment) reads the variables.
#[derive(Clone, Debug)]
pub(super) struct Registers {
    /// Every element of the whole array, row-major.
    pub vars: std::rc::Rc<[Var]>,
    /// Where this (sub-)array starts in `vars`.
    pub base: u32,
}

impl LocalArray {
    /// The outermost length (what `.len()` gives).
    pub fn len(&self) -> u32 {
        self.dims[0]
    }

    /// Elements in all, every dimension together.
    pub fn count(&self) -> u32 {
        self.dims.iter().product()
    }

    /// Elements in one item of the outermost dimension (1 for a flat array).
    fn row(&self) -> u32 {
        self.dims[1..].iter().product()
    }

    /// The Rust spelling of the type: `[[f32; 4]; 8]`.
    pub fn type_name(&self) -> String {
        let inner = if self.infer.is_some() {
            "_".to_string()
        } else {
            self.elem.rust_name().to_string()
        };
        self.dims
            .iter()
            .rev()
            .fold(inner, |acc, d| format!("[{acc}; {d}]"))
    }
}

/// An array expression as written, its elements evaluated (in Rust's order) but not stored.
enum Init {
    /// One element.
    Scalar(Val),
    /// An array value copied in (`[row; 4]`, `[a, b]` with arrays `a`, `b`).
    Copy(LocalArray),
    /// `[x, y, z]`.
    List(Vec<Init>),
    /// `[x; n]`: `x` evaluated once, stored `n` times.
    Repeat(Box<Init>, u32),
    /// A tuple or struct: the array is one of aggregates (`local_aggregates`).
    Agg(Val),
}

impl Init {
    /// The lengths of the array this builds, outermost first (empty for a scalar).
    fn dims(&self, span: Span) -> Result<Vec<u32>> {
        Ok(match self {
            Init::Scalar(_) | Init::Agg(_) => Vec::new(),
            Init::Copy(a) => a.dims.clone(),
            Init::Repeat(x, n) => std::iter::once(*n).chain(x.dims(span)?).collect(),
            Init::List(items) => {
                let first = items[0].dims(span)?;
                for item in &items[1..] {
                    if item.dims(span)? != first {
                        return err(span, "the elements of an array must all have one shape");
                    }
                }
                std::iter::once(items.len() as u32).chain(first).collect()
            }
        })
    }

    /// The one scalar every element of this is, if it is `[[x; a]; b]`-shaped.
    fn uniform(&self) -> Option<&Val> {
        match self {
            Init::Scalar(v) => Some(v),
            Init::Repeat(x, _) => x.uniform(),
            _ => None,
        }
    }

    /// Visits every scalar and copied array.
    fn each(&self, f: &mut impl FnMut(&Init)) {
        match self {
            Init::Scalar(_) | Init::Copy(_) | Init::Agg(_) => f(self),
            Init::List(items) => items.iter().for_each(|i| i.each(f)),
            Init::Repeat(x, _) => x.each(f),
        }
    }
}

/// An element offset into a local array: a run-time part (`U32`) plus a constant.
#[derive(Clone, Copy)]
struct At {
    dynamic: Option<Value>,
    constant: u32,
}

/// What `a[i]` is: an element (a place to read or write) or a row of a nested array.
pub(super) enum Indexed {
    Element(Place),
    Row(LocalArray),
}

impl Lowerer<'_> {
    /// Declares a local array, remembering where the source asked for it (for the
    /// local-memory limit's message).
    pub(super) fn declare_local(&mut self, decl: ArrayDecl, span: Span, what: String) -> u32 {
        let array = self.b.local_array(decl);
        self.local_origins.push((span, what));
        array
    }

    /// A constant array length: between 1 and [`MAX_LOCAL_ARRAY`].
    fn array_length(&self, e: &syn::Expr) -> Result<u32> {
        match self.eval_const(e, 0)? {
            ConstVal::Int(n) if n > 0 && (n as u64) <= MAX_LOCAL_ARRAY => Ok(n as u32),
            _ => err(
                e.span(),
                format!("array lengths must be between 1 and {MAX_LOCAL_ARRAY}"),
            ),
        }
    }

    /// The element type and lengths of an array type (`[[f32; 4]; 8]`), `None` when `ty` is
    /// not an array type.
    pub(super) fn array_type(&self, ty: &syn::Type) -> Result<Option<(S, Vec<u32>)>> {
        let syn::Type::Array(a) = ty else {
            return Ok(None);
        };
        let len = self.array_length(&a.len)?;
        match self.array_type(&a.elem)? {
            Some((elem, inner)) => Ok(Some((elem, std::iter::once(len).chain(inner).collect()))),
            None => {
                let elem = self
                    .resolve_scalar(&a.elem)
                    .map_err(|_| syn::Error::new(a.elem.span(), UNSUPPORTED_ELEMENTS))?;
                Ok(Some((elem, vec![len])))
            }
        }
    }

    /// A new local array of `elem`s shaped `dims`, not initialized.
    pub(super) fn new_local_array(
        &mut self,
        name: &str,
        elem: S,
        dims: Vec<u32>,
        infer: Option<(u32, LitKind)>,
        span: Span,
        what: String,
    ) -> Result<LocalArray> {
        let count: u64 = dims.iter().map(|&d| u64::from(d)).product();
        if count > MAX_LOCAL_ARRAY {
            return err(
                span,
                format!(
                    "this array has {count} elements in all; local arrays may have at most \
                     {MAX_LOCAL_ARRAY}"
                ),
            );
        }
        let array = self.declare_local(
            ArrayDecl {
                name: name.into(),
                elem,
                len: count as u32,
            },
            span,
            what,
        );
        Ok(LocalArray {
            array,
            elem,
            dims,
            offset: None,
            infer,
            regs: None,
        })
    }

    /// An array expression (`[e; N]`, `[a, b, c]`, nested), with an optional element type
    /// from context; `site` ties an untyped array to its later uses.
    pub(super) fn array_expr(
        &mut self,
        e: &syn::Expr,
        hint: Option<S>,
        site: Option<u32>,
    ) -> Result<Val> {
        let span = e.span();
        // An array expression outside a `let` is a site of its own, so that an untyped one
        // takes its element type from where it goes (`a = [1, 2]`, `return [0.0; 4]`, a
        // helper's `[u8; 3]` parameter), as rustc infers it.
        let site = Some(site.unwrap_or_else(|| self.site()));
        let init = self.array_init(e)?;
        let dims = init.dims(span)?;
        let mut aggregates = false;
        init.each(&mut |i| aggregates |= matches!(i, Init::Agg(_)));
        if aggregates {
            return self.aggregate_init(init, dims.len(), span);
        }
        // The element type: the hint, a typed element, the site's solution, or a default.
        let mut typed = None;
        let mut kind = LitKind::Int;
        let mut open = Vec::new();
        init.each(&mut |i| match i {
            Init::Scalar(Val::Scalar(x)) => {
                typed.get_or_insert(self.ty(*x));
            }
            Init::Scalar(Val::Float(_)) => kind = LitKind::Float,
            Init::Scalar(Val::Infer(s, k)) => {
                open.push(*s);
                if *k == LitKind::Float {
                    kind = LitKind::Float;
                }
            }
            Init::Copy(a) => match a.infer {
                Some((s, k)) => {
                    open.push(s);
                    if k == LitKind::Float {
                        kind = LitKind::Float;
                    }
                }
                None => {
                    typed.get_or_insert(a.elem);
                }
            },
            _ => {}
        });
        let mut infer_site = None;
        let elem = match (hint, typed) {
            (Some(t), _) | (None, Some(t)) => t,
            (None, None) => match site {
                Some(s) => {
                    self.note_kind(s, kind);
                    for other in &open {
                        self.note_union(s, *other);
                    }
                    match self.solved(s) {
                        Some(t) => t,
                        None => {
                            infer_site = Some((s, kind));
                            kind.default_type()
                        }
                    }
                }
                None => kind.default_type(),
            },
        };
        if let Some(s) = site
            && infer_site.is_none()
        {
            self.note_type(s, elem);
        }
        if infer_site.is_none() {
            // Open elements take the array's type (`[acc, 0]` with `acc` still open).
            for other in &open {
                self.note_type(*other, elem);
            }
        }
        if infer_site.is_none()
            && let Some(s) = site
            && self.register_lets.contains(&s)
            && elem == S::F32
            && let Some(x) = init.uniform().cloned()
        {
            // A wgmma accumulator's `[[0.0; 8]; K]`: its variables set one by one, with no
            // array in memory (whose fill loop would keep it there).
            let x = self.materialize(x, elem, span)?;
            let count: u32 = dims.iter().product();
            let vars: Vec<Var> = (0..count)
                .map(|k| self.b.var(format!("acc_{k}"), S::F32))
                .collect();
            for &var in &vars {
                self.b.push(Stmt::WriteVar { var, value: x });
            }
            return Ok(Val::Array(LocalArray {
                array: u32::MAX,
                elem,
                dims,
                offset: None,
                infer: None,
                regs: Some(Registers {
                    vars: vars.into(),
                    base: 0,
                }),
            }));
        }
        let what = format!("an array `{}`", source_text(e));
        let target = self.new_local_array("array", elem, dims, infer_site, span, what)?;
        if infer_site.is_some() {
            return Ok(Val::Array(target)); // the infer run only needs the array's shape
        }
        let base = self.def(Op::LocalAddr(target.array), span)?;
        let start = At {
            dynamic: None,
            constant: 0,
        };
        self.store_init(init, &target, base, start, span)?;
        Ok(Val::Array(target))
    }

    /// An array expression whose elements are tuples or structs: a flat one becomes a
    /// local array of aggregates.
    fn aggregate_init(&mut self, init: Init, rank: usize, span: Span) -> Result<Val> {
        if rank != 1 {
            return err(span, NESTED_AGGREGATES);
        }
        let items = match init {
            Init::Repeat(x, n) => match *x {
                Init::Agg(v) => vec![v; n as usize],
                _ => return err(span, MIXED_ELEMENTS),
            },
            Init::List(items) => items
                .into_iter()
                .map(|i| match i {
                    Init::Agg(v) => Ok(v),
                    _ => err(span, MIXED_ELEMENTS),
                })
                .collect::<Result<Vec<_>>>()?,
            _ => return err(span, MIXED_ELEMENTS),
        };
        self.aggregate_array(items, span)
    }

    /// Evaluates the elements of an array expression, outermost first, in Rust's order.
    fn array_init(&mut self, e: &syn::Expr) -> Result<Init> {
        match e {
            syn::Expr::Paren(p) => self.array_init(&p.expr),
            syn::Expr::Group(g) => self.array_init(&g.expr),
            syn::Expr::Repeat(r) => {
                let n = self.array_length(&r.len)?;
                Ok(Init::Repeat(Box::new(self.array_init(&r.expr)?), n))
            }
            syn::Expr::Array(a) => {
                if a.elems.is_empty() || a.elems.len() as u64 > MAX_LOCAL_ARRAY {
                    return err(
                        a.span(),
                        format!("array lengths must be between 1 and {MAX_LOCAL_ARRAY}"),
                    );
                }
                let items = a
                    .elems
                    .iter()
                    .map(|x| self.array_init(x))
                    .collect::<Result<Vec<_>>>()?;
                Ok(Init::List(items))
            }
            other => match self.expr(other)? {
                Val::Array(a) => Ok(Init::Copy(a)),
                v @ (Val::Tuple(_) | Val::Struct(..)) => Ok(Init::Agg(v)),
                v => Ok(Init::Scalar(v)),
            },
        }
    }

    /// Stores what `init` builds into `target` from element `at` on (`base` is the
    /// target's address). Flat literals keep their simple shape: `[x; n]` is one fill,
    /// `[a, b, c]` a store per element at a constant address.
    fn store_init(
        &mut self,
        init: Init,
        target: &LocalArray,
        base: Value,
        at: At,
        span: Span,
    ) -> Result<()> {
        let elem = target.elem;
        match init {
            // `array_expr` builds arrays of aggregates apart.
            Init::Agg(_) => return err(span, MIXED_ELEMENTS),
            Init::Scalar(v) => {
                let x = self.materialize(v, elem, span)?;
                let addr = self.local_addr_at(base, elem, at, span)?;
                self.b.push(Stmt::Store {
                    space: AddressSpace::Local,
                    addr,
                    value: x,
                });
            }
            Init::Copy(src) => {
                if src.elem != elem {
                    return err(
                        span,
                        format!(
                            "mismatched types: expected elements of type `{elem}`, found `{}`",
                            src.type_name()
                        ),
                    );
                }
                let from = self.array_addr(&src, span)?;
                let to = self.local_addr_at(base, elem, at, span)?;
                self.copy_elements(from, to, elem, src.count(), span)?;
            }
            ref repeat @ Init::Repeat(..) if repeat.uniform().is_some() => {
                let count = repeat.dims(span)?.iter().product::<u32>();
                let Some(v) = repeat.uniform().cloned() else {
                    return err(span, "internal compiler error: uniform array");
                };
                let x = self.materialize(v, elem, span)?;
                if count == 1 {
                    let addr = self.local_addr_at(base, elem, at, span)?;
                    self.b.push(Stmt::Store {
                        space: AddressSpace::Local,
                        addr,
                        value: x,
                    });
                } else {
                    let start = match at {
                        At {
                            dynamic: None,
                            constant: 0,
                        } => base,
                        _ => self.local_addr_at(base, elem, at, span)?,
                    };
                    self.fill_local(start, elem, count, x, span)?;
                }
            }
            Init::Repeat(item, n) => {
                let stride = item.dims(span)?.iter().product::<u32>();
                // The item once, then copied into the other `n - 1` places.
                let first = self.local_addr_at(base, elem, at, span)?;
                self.store_init(*item, target, base, at, span)?;
                let size = self.constant(Constant::u32(stride * elem.size_bytes()));
                self.counted_loop_from(1, n, span, |this, k| {
                    let offset = this.def(Op::Binary(BinaryOp::Mul, k, size), span)?;
                    let to = this.def(Op::Binary(BinaryOp::Add, first, offset), span)?;
                    this.copy_elements(first, to, elem, stride, span)
                })?;
            }
            Init::List(items) => {
                let stride = items[0].dims(span)?.iter().product::<u32>();
                for (k, item) in items.into_iter().enumerate() {
                    let item_at = At {
                        dynamic: at.dynamic,
                        constant: at.constant + k as u32 * stride,
                    };
                    self.store_init(item, target, base, item_at, span)?;
                }
            }
        }
        Ok(())
    }

    /// The address of element `at` of the local array at `base`.
    fn local_addr_at(&mut self, base: Value, elem: S, at: At, span: Span) -> Result<Value> {
        let base = match at.dynamic {
            Some(k) => self.local_elem_addr(base, elem, k, span)?,
            None => base,
        };
        self.local_elem_addr_const(base, elem, at.constant, span)
    }

    /// The address of the first element of `a` (a whole array or a row), to read it: an
    /// array in variables is first copied into a new local array.
    pub(super) fn array_addr(&mut self, a: &LocalArray, span: Span) -> Result<Value> {
        if a.regs.is_some() {
            let what = format!("a copy of a register array `{}`", a.type_name());
            let copy = self.new_local_array("array", a.elem, a.dims.clone(), None, span, what)?;
            self.copy_array_into(a, &copy, span)?;
            return self.array_addr(&copy, span);
        }
        let base = self.def(Op::LocalAddr(a.array), span)?;
        match a.offset {
            Some(k) => self.local_elem_addr(base, a.elem, k, span),
            None => Ok(base),
        }
    }

    pub(super) fn local_elem_addr_const(
        &mut self,
        base: Value,
        elem: S,
        k: u32,
        span: Span,
    ) -> Result<Value> {
        let offset = self.constant(Constant::u32(k * elem.size_bytes()));
        self.def(Op::Binary(BinaryOp::Add, base, offset), span)
    }

    /// Stores `value` into every element, with a loop (short arrays are written out).
    fn fill_local(
        &mut self,
        base: Value,
        elem: S,
        len: u32,
        value: Value,
        span: Span,
    ) -> Result<()> {
        if len <= 8 {
            for k in 0..len {
                let addr = self.local_elem_addr_const(base, elem, k, span)?;
                self.b.push(Stmt::Store {
                    space: AddressSpace::Local,
                    addr,
                    value,
                });
            }
            return Ok(());
        }
        self.counted_loop(len, span, |this, k| {
            let addr = this.local_elem_addr(base, elem, k, span)?;
            this.b.push(Stmt::Store {
                space: AddressSpace::Local,
                addr,
                value,
            });
            Ok(())
        })
    }

    /// `for k in 0..len { body(k) }` with a `u32` counter.
    fn counted_loop(
        &mut self,
        len: u32,
        span: Span,
        body: impl FnOnce(&mut Self, Value) -> Result<()>,
    ) -> Result<()> {
        self.counted_loop_from(0, len, span, body)
    }

    /// `for k in start..end { body(k) }` with a `u32` counter.
    fn counted_loop_from(
        &mut self,
        start: u32,
        end: u32,
        span: Span,
        body: impl FnOnce(&mut Self, Value) -> Result<()>,
    ) -> Result<()> {
        let counter = self.b.var("k", S::U32);
        let first = self.constant(Constant::u32(start));
        self.b.push(Stmt::WriteVar {
            var: counter,
            value: first,
        });
        let end = self.constant(Constant::u32(end));
        let one = self.constant(Constant::u32(1));
        self.loop_body(|this| {
            let k = this.def(Op::ReadVar(counter), span)?;
            let more = this.def(Op::Compare(CmpOp::Lt, k, end), span)?;
            this.break_unless(more);
            let next = this.def(Op::Binary(BinaryOp::Add, k, one), span)?;
            this.b.push(Stmt::WriteVar {
                var: counter,
                value: next,
            });
            body(this, k)
        })
    }

    fn local_elem_addr(&mut self, base: Value, elem: S, k: Value, span: Span) -> Result<Value> {
        let size = self.constant(Constant::u32(elem.size_bytes()));
        let offset = self.def(Op::Binary(BinaryOp::Mul, k, size), span)?;
        self.def(Op::Binary(BinaryOp::Add, base, offset), span)
    }

    /// A copy of array (or row) `v` in a new local array (Rust's move/copy of an array value).
    pub(super) fn copy_array(&mut self, v: &Val, span: Span) -> Result<Val> {
        let Val::Array(src) = v else {
            return err(span, "expected an array");
        };
        let what = format!("a copy of an array `{}`", src.type_name());
        let copy =
            self.new_local_array("array", src.elem, src.dims.clone(), src.infer, span, what)?;
        if src.infer.is_none() {
            self.copy_array_into(src, &copy, span)?;
        }
        Ok(Val::Array(copy))
    }

    /// Copies every element of `src` into `dst`, of the same shape and type.
    pub(super) fn copy_array_into(
        &mut self,
        src: &LocalArray,
        dst: &LocalArray,
        span: Span,
    ) -> Result<()> {
        if src.regs.is_some() || dst.regs.is_some() {
            // Element by element: the register side at constant positions.
            for k in 0..src.count() {
                let x = self.array_element(src, k, span)?;
                let x = self.read_place(x, span)?;
                let to = self.array_element(dst, k, span)?;
                self.write_place(to, x, span)?;
            }
            return Ok(());
        }
        let from = self.array_addr(src, span)?;
        let to = self.array_addr(dst, span)?;
        self.copy_elements(from, to, src.elem, src.count(), span)
    }

    /// Copies `count` elements from local address `from` to `to`.
    fn copy_elements(
        &mut self,
        from: Value,
        to: Value,
        elem: S,
        count: u32,
        span: Span,
    ) -> Result<()> {
        self.counted_loop(count, span, |this, k| {
            let a = this.local_elem_addr(from, elem, k, span)?;
            let x = this.def(
                Op::Load {
                    space: AddressSpace::Local,
                    ty: elem,
                    addr: a,
                    eviction: cuprum_ir::Eviction::Normal,
                },
                span,
            )?;
            let b = this.local_elem_addr(to, elem, k, span)?;
            this.b.push(Stmt::Store {
                space: AddressSpace::Local,
                addr: b,
                value: x,
            });
            Ok(())
        })
    }

    /// Writes the array value `value` over the array (or row) `target`: same shape, same
    /// element type. In the infer run, an open side takes the other's element type.
    pub(super) fn assign_array(
        &mut self,
        target: &LocalArray,
        value: Val,
        span: Span,
    ) -> Result<()> {
        let Val::Array(src) = value else {
            return err(
                span,
                format!(
                    "mismatched types: expected `{}`, found {}",
                    target.type_name(),
                    describe(&value)
                ),
            );
        };
        match (target.infer, src.infer) {
            (Some((a, _)), Some((b, _))) => self.note_union(a, b),
            (Some((a, _)), None) => self.note_type(a, src.elem),
            (None, Some((b, _))) => self.note_type(b, target.elem),
            (None, None) => {}
        }
        if target.dims != src.dims
            || (target.infer.is_none() && src.infer.is_none() && target.elem != src.elem)
        {
            return err(
                span,
                format!(
                    "mismatched types: expected `{}`, found `{}`",
                    target.type_name(),
                    src.type_name()
                ),
            );
        }
        if target.infer.is_none() && src.infer.is_none() {
            self.copy_array_into(&src, target, span)?;
        }
        Ok(())
    }

    /// `array[index]`: an element (bounds-checked against the array's length) or, for an
    /// array of arrays, a row (checked against the outer length).
    pub(super) fn index_array(
        &mut self,
        a: &LocalArray,
        index_expr: &syn::Expr,
        site: String,
    ) -> Result<Indexed> {
        let span = index_expr.span();
        let index = self.expr(index_expr)?;
        if let Some((s, kind)) = a.infer {
            // Infer run: the element type is what later uses say.
            let _ = self.materialize(index, S::U64, span)?;
            if a.dims.len() > 1 {
                return Ok(Indexed::Row(LocalArray {
                    dims: a.dims[1..].to_vec(),
                    offset: None,
                    ..a.clone()
                }));
            }
            return Ok(Indexed::Element(Place::InferVar(s, kind)));
        }
        let index = self.checked_array_index(index, a.len(), site, span, span)?;
        if a.regs.is_some() {
            return self.index_registers(a, index, span);
        }
        if a.dims.len() > 1 {
            let k = self.cast_value(index, S::U32, span)?;
            let row = self.constant(Constant::u32(a.row()));
            let mut start = self.def(Op::Binary(BinaryOp::Mul, k, row), span)?;
            if let Some(outer) = a.offset {
                start = self.def(Op::Binary(BinaryOp::Add, outer, start), span)?;
            }
            return Ok(Indexed::Row(LocalArray {
                dims: a.dims[1..].to_vec(),
                offset: Some(start),
                ..a.clone()
            }));
        }
        let base = self.def(Op::LocalAddr(a.array), span)?;
        let k = self.cast_value(index, S::U32, span)?;
        let k = match a.offset {
            Some(start) => self.def(Op::Binary(BinaryOp::Add, start, k), span)?,
            None => k,
        };
        let addr = self.local_elem_addr(base, a.elem, k, span)?;
        Ok(Indexed::Element(Place::Mem {
            space: AddressSpace::Local,
            addr,
            elem: a.elem,
        }))
    }
}

impl Lowerer<'_> {
    /// Element `k` (row-major over every dimension) of `a`, as a place.
    fn array_element(&mut self, a: &LocalArray, k: u32, span: Span) -> Result<Place> {
        if a.regs.is_some() {
            let at = self.constant(Constant::u32(k));
            let k = match a.offset {
                Some(dynamic) => self.def(Op::Binary(BinaryOp::Add, dynamic, at), span)?,
                None => at,
            };
            let flat = LocalArray {
                dims: vec![a.count()],
                offset: None,
                ..a.clone()
            };
            return match self.index_registers(&flat, k, span)? {
                Indexed::Element(p) => Ok(p),
                Indexed::Row(_) => err(span, "internal compiler error: row of a flat array"),
            };
        }
        let base = self.array_addr(a, span)?;
        let addr = self.local_elem_addr_const(base, a.elem, k, span)?;
        Ok(Place::Mem {
            space: AddressSpace::Local,
            addr,
            elem: a.elem,
        })
    }

    /// `a[k]` of an array in variables (`k` an integer, already checked against `a.len()`):
    /// a variable when the position is constant, else a row at a run-time offset or a
    /// [`Place::Reg`].
    fn index_registers(&mut self, a: &LocalArray, k: Value, span: Span) -> Result<Indexed> {
        let Some(regs) = &a.regs else {
            return err(span, "internal compiler error: not a register array");
        };
        let row = a.row();
        let rest = || a.dims[1..].to_vec();
        let constant = self.constant_value(k);
        let k = self.cast_value(k, S::U32, span)?;
        if a.offset.is_none()
            && let Some(c) = constant.or_else(|| self.constant_value(k))
        {
            let position = regs.base + c as u32 * row;
            if a.dims.len() > 1 {
                return Ok(Indexed::Row(LocalArray {
                    dims: rest(),
                    offset: None,
                    regs: Some(Registers {
                        vars: regs.vars.clone(),
                        base: position,
                    }),
                    ..a.clone()
                }));
            }
            return match regs.vars.get(position as usize) {
                Some(&var) => Ok(Indexed::Element(Place::Var(var, a.elem))),
                None => err(span, "internal compiler error: register array position"),
            };
        }
        let row_v = self.constant(Constant::u32(row));
        let mut at = self.def(Op::Binary(BinaryOp::Mul, k, row_v), span)?;
        if let Some(outer) = a.offset {
            at = self.def(Op::Binary(BinaryOp::Add, outer, at), span)?;
        }
        if a.dims.len() > 1 {
            return Ok(Indexed::Row(LocalArray {
                dims: rest(),
                offset: Some(at),
                ..a.clone()
            }));
        }
        let base = self.constant(Constant::u32(regs.base));
        let index = self.def(Op::Binary(BinaryOp::Add, base, at), span)?;
        Ok(Indexed::Element(Place::Reg {
            vars: regs.vars.clone(),
            index,
            elem: a.elem,
        }))
    }

    /// The value of the variable `index` picks among `vars`: a chain of selects.
    pub(super) fn read_register_choice(
        &mut self,
        vars: &[Var],
        index: Value,
        span: Span,
    ) -> Result<Value> {
        let Some((&first, rest)) = vars.split_first() else {
            return err(span, "internal compiler error: empty register array");
        };
        let mut out = self.def(Op::ReadVar(first), span)?;
        for (p, &var) in rest.iter().enumerate() {
            let at = self.constant(Constant::u32(p as u32 + 1));
            let cond = self.def(Op::Compare(CmpOp::Eq, index, at), span)?;
            let x = self.def(Op::ReadVar(var), span)?;
            out = self.def(
                Op::Select {
                    cond,
                    if_true: x,
                    if_false: out,
                },
                span,
            )?;
        }
        Ok(out)
    }

    /// Writes `value` to the variable `index` picks among `vars`: one guarded write each.
    pub(super) fn write_register_choice(
        &mut self,
        vars: &[Var],
        index: Value,
        value: Value,
        span: Span,
    ) -> Result<()> {
        for (p, &var) in vars.iter().enumerate() {
            let at = self.constant(Constant::u32(p as u32));
            let cond = self.def(Op::Compare(CmpOp::Eq, index, at), span)?;
            self.when(cond, |this| {
                this.b.push(Stmt::WriteVar { var, value });
                Ok(())
            })?;
        }
        Ok(())
    }

    /// `acc = [[x; 8]; K];` over an array in variables: `x` evaluated once and written to
    /// each variable, with no array in memory (which a fill loop would keep there). False,
    /// having done nothing, for any other target or value.
    pub(super) fn fill_registers(&mut self, target: &LocalArray, e: &syn::Expr) -> Result<bool> {
        let Some(regs) = target.regs.clone() else {
            return Ok(false);
        };
        if target.offset.is_some() {
            return Ok(false);
        }
        let mut inner = e;
        while let syn::Expr::Repeat(r) = inner {
            inner = &r.expr;
        }
        if matches!(inner, syn::Expr::Repeat(_) | syn::Expr::Array(_)) || std::ptr::eq(inner, e) {
            return Ok(false);
        }
        // The site `array_expr` would have taken (only the emit run gets here; both runs must
        // number their sites alike).
        let _ = self.site();
        let v = self.expr(inner)?;
        let x = self.materialize(v, target.elem, inner.span())?;
        let start = regs.base as usize;
        for &var in &regs.vars[start..start + target.count() as usize] {
            self.b.push(Stmt::WriteVar { var, value: x });
        }
        Ok(true)
    }

    /// The array a `let` binds, moved into variables when the infer run found it to be a
    /// wgmma accumulator (see [`Registers`]); other values unchanged. An array that is not
    /// `fresh` (another binding's) is copied, as Rust copies it: into new variables.
    pub(super) fn registers_for_let(
        &mut self,
        value: Val,
        site: u32,
        fresh: bool,
        span: Span,
    ) -> Result<Val> {
        let Val::Array(a) = &value else {
            return Ok(value);
        };
        if (a.regs.is_some() && fresh) || a.infer.is_some() || !self.register_lets.contains(&site) {
            return Ok(value);
        }
        // A wgmma accumulator (`f32`) or register `A` (`u32` words).
        if a.elem != S::F32 && a.elem != S::U32 {
            return err(
                span,
                format!(
                    "this array is a wgmma operand kept in registers, so its elements must be \
                     `f32` (an accumulator) or `u32` (register `A`), not `{}`",
                    a.elem.rust_name()
                ),
            );
        }
        let vars: Vec<Var> = (0..a.count())
            .map(|k| self.b.var(format!("wgmma_{k}"), a.elem))
            .collect();
        let target = LocalArray {
            array: u32::MAX,
            elem: a.elem,
            dims: a.dims.clone(),
            offset: None,
            infer: None,
            regs: Some(Registers {
                vars: vars.into(),
                base: 0,
            }),
        };
        self.copy_array_into(a, &target, span)?;
        Ok(Val::Array(target))
    }

    /// Refuses a kernel whose local arrays (its own, its inlined helpers', and the copies and
    /// fragments the lowering makes) need more local memory per thread than a GPU thread has,
    /// at the largest array, naming the largest ones.
    pub(super) fn check_local_memory(&self) -> Result<()> {
        let locals = &self.b.kernel().locals;
        let total = cuprum_ir::array_layout_size(locals);
        let limit = cuprum_ir::MAX_LOCAL_BYTES;
        if total <= u64::from(limit) {
            return Ok(());
        }
        // Largest first; among equals, in source order.
        let mut order: Vec<usize> = (0..locals.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(locals[i].size_bytes()));
        let largest: Vec<String> = order
            .iter()
            .take(3)
            .map(|&i| {
                let size = bytes_text(u64::from(locals[i].size_bytes()));
                match self.local_origins.get(i) {
                    Some((span, what)) => format!("{what}, {size}{}", at_line(*span)),
                    None => format!("a {size} array"),
                }
            })
            .collect();
        let span = self
            .local_origins
            .get(order[0])
            .map_or_else(|| self.kernel.item.sig.ident.span(), |(span, _)| *span);
        err(
            span,
            format!(
                "{} needs {} of local memory per thread for its arrays, more than the {} a GPU \
                 thread has; the largest: {}. Make the arrays smaller, or keep the data in \
                 shared memory or in a slice",
                self.kernel_description(),
                bytes_text(total),
                bytes_text(u64::from(limit)),
                largest.join("; ")
            ),
        )
    }

    /// `kernel `name``, with the specialization's types and constants for a generic kernel.
    pub(super) fn kernel_description(&self) -> String {
        let k = self.kernel;
        let mut args: Vec<String> = k
            .type_params
            .iter()
            .filter_map(|t| Some(format!("{t} = {}", self.kernel_types.get(t)?.rust_name())))
            .collect();
        args.extend(
            k.const_params
                .iter()
                .filter_map(|(c, _)| Some(format!("{c} = {}", self.const_params.get(c)?.1))),
        );
        if args.is_empty() {
            format!("kernel `{}`", k.name)
        } else {
            format!("kernel `{}` (with {})", k.name, args.join(", "))
        }
    }
}

/// `512 KiB`, or `20 bytes` for sizes that are not whole KiB.
fn bytes_text(n: u64) -> String {
    if n >= 1024 && n.is_multiple_of(1024) {
        format!("{} KiB", n / 1024)
    } else {
        format!("{n} bytes")
    }
}

/// What local arrays can hold, for the error on anything else.
pub(super) const UNSUPPORTED_ELEMENTS: &str = "local arrays hold numbers and `bool`s, also \
     nested (`[[f32; 4]; 8]`, `[[0; 4]; 8]`, `[[1, 2], [3, 4]]`), and tuples or structs of the \
     module in a flat array built in place (`let mut ps = [Particle::new(); 4];`); other \
     element types are not supported in device code";

/// The error on an array of arrays of aggregates.
const NESTED_AGGREGATES: &str = "arrays of arrays of tuples or structs are not supported in \
     device code yet: use a flat array and index it with `i * columns + j`";

/// The error on an array mixing aggregates with numbers or arrays.
const MIXED_ELEMENTS: &str = "the elements of an array must all have one type";
