//! Lowering of one kernel's body from the syn AST to IR.
//!
//! Types: rustc has already type-checked the body (the macro also emits it as host code), so
//! this pass only needs to *recover* the types, not judge them. Most are known where a value is
//! made; untyped literals stay symbolic ([`Val::Int`], [`Val::Float`]) until they meet a typed
//! value. The one case that needs look-ahead is a binding whose type comes from later use
//! (`let mut acc = 0.0; ... acc += x[i];`, `for k in 0..16 { a[k] }`): the lowering runs twice,
//! the first time only to collect such facts at numbered *sites* (every `let`, `for` and
//! `if`/`else` expression is a site, numbered in visit order, so both runs agree), the second
//! time to emit the IR with the solved types. Unsolved sites default as Rust does: `i32`, `f64`.

use std::collections::HashMap;

use cuprum_ir::{
    AddressSpace, BinaryOp, CmpOp, Constant, Dim, KernelBuilder, Op, ScalarType as S, SliceAccess,
    Special, Stmt, TernaryOp, TrapKind, UnaryOp, Value, Var,
};
use syn::spanned::Spanned;

use crate::items::{KernelInfo, ModuleInfo};
use crate::types::{ParamType, expect_scalar};

type Result<T> = syn::Result<T>;

fn err<T>(span: proc_macro2::Span, msg: impl std::fmt::Display) -> Result<T> {
    Err(syn::Error::new(span, msg))
}

pub fn lower_kernel(info: &ModuleInfo, kernel: &KernelInfo) -> Result<cuprum_ir::Kernel> {
    let mut inference = Inference::default();
    // The first run only collects typing facts; its errors reappear in the second run.
    let _ = Lowerer::new(info, kernel, Mode::Infer(&mut inference)).run();
    let solved = inference.solve();
    Lowerer::new(info, kernel, Mode::Emit(&solved)).run()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LitKind {
    Int,
    Float,
}

impl LitKind {
    fn default_type(self) -> S {
        match self {
            LitKind::Int => S::I32,
            LitKind::Float => S::F64,
        }
    }
}

/// Union-find over sites, each with an optional known type and a literal kind.
#[derive(Default)]
struct Inference {
    parent: HashMap<u32, u32>,
    ty: HashMap<u32, S>,
    kind: HashMap<u32, LitKind>,
}

impl Inference {
    fn find(&self, mut s: u32) -> u32 {
        while let Some(&p) = self.parent.get(&s) {
            if p == s {
                break;
            }
            s = p;
        }
        s
    }
    fn set_type(&mut self, site: u32, ty: S) {
        let root = self.find(site);
        self.ty.entry(root).or_insert(ty);
    }
    fn union(&mut self, a: u32, b: u32) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra == rb {
            return;
        }
        self.parent.insert(rb, ra);
        if let Some(t) = self.ty.remove(&rb) {
            self.ty.entry(ra).or_insert(t);
        }
        if let Some(k) = self.kind.remove(&rb) {
            self.kind.entry(ra).or_insert(k);
        }
    }
    fn solve(&self) -> HashMap<u32, S> {
        let mut sites: Vec<u32> = self
            .parent
            .keys()
            .chain(self.ty.keys())
            .chain(self.kind.keys())
            .copied()
            .collect();
        sites.sort_unstable();
        sites.dedup();
        let mut out = HashMap::new();
        for s in sites {
            let root = self.find(s);
            let ty = self
                .ty
                .get(&root)
                .copied()
                .or_else(|| self.kind.get(&root).map(|k| k.default_type()));
            if let Some(t) = ty {
                out.insert(s, t);
            }
        }
        out
    }
}

enum Mode<'a> {
    Infer(&'a mut Inference),
    Emit(&'a HashMap<u32, S>),
}

/// What an expression evaluates to.
#[derive(Clone, Debug)]
enum Val {
    Scalar(Value),
    Int(i128),
    Float(f64),
    /// Infer run only: a value whose type is being inferred at a site.
    Infer(u32, LitKind),
    Unit,
    /// The expression does not complete (return, break, continue).
    Never,
    /// `thread::index_1d()`: the global x index, a `U64`.
    Index1(Value),
    /// A slice parameter.
    Slice(u32),
    /// A reference to one element of global memory.
    ElemRef {
        addr: Value,
        elem: S,
        mutable: bool,
    },
}

#[derive(Clone, Debug)]
enum Binding {
    Val(Val),
    Var {
        var: Var,
        ty: S,
        mutable: bool,
    },
    /// Infer run only.
    InferVar {
        site: u32,
        kind: LitKind,
    },
}

enum Place {
    Var(Var, S),
    InferVar(u32, LitKind),
    Mem {
        space: AddressSpace,
        addr: Value,
        elem: S,
    },
}

struct Lowerer<'a> {
    kernel: &'a KernelInfo,
    b: KernelBuilder,
    mode: Mode<'a>,
    scopes: Vec<Vec<(String, Binding)>>,
    next_site: u32,
    loop_depth: u32,
    /// Special registers and derived indices already read at kernel entry, reused.
    index_1d: Option<Value>,
}

impl<'a> Lowerer<'a> {
    fn new(_info: &'a ModuleInfo, kernel: &'a KernelInfo, mode: Mode<'a>) -> Self {
        Self {
            kernel,
            b: KernelBuilder::new(kernel.name.clone()),
            mode,
            scopes: vec![Vec::new()],
            next_site: 0,
            loop_depth: 0,
            index_1d: None,
        }
    }

    fn run(mut self) -> Result<cuprum_ir::Kernel> {
        let k = self.kernel;
        self.b.set_launch_bounds(k.launch_bounds);
        for p in &k.params {
            let name = p.name.to_string();
            let binding = match p.ty {
                ParamType::Scalar(ty) => {
                    let index = self.b.param(name.clone(), cuprum_ir::ParamKind::Scalar(ty));
                    Val::Scalar(self.def(Op::Param(index), p.name.span())?)
                }
                ParamType::Slice { elem, access } => {
                    let index = self
                        .b
                        .param(name.clone(), cuprum_ir::ParamKind::Slice { elem, access });
                    Val::Slice(index)
                }
            };
            self.bind(name, Binding::Val(binding));
        }
        let body = &k.item.block;
        let v = self.block_stmts(&body.stmts)?;
        if !matches!(v, Val::Unit | Val::Never) {
            return err(
                body.span(),
                "kernels return nothing; this block has a value",
            );
        }
        Ok(self.b.finish())
    }

    // ----- helpers ------------------------------------------------------------------------

    fn def(&mut self, op: Op, span: proc_macro2::Span) -> Result<Value> {
        self.b
            .def(op)
            .or_else(|msg| err(span, format!("internal compiler error: {msg}")))
    }

    fn constant(&mut self, c: Constant) -> Value {
        self.b.constant(c)
    }

    fn ty(&self, v: Value) -> S {
        self.b.type_of(v)
    }

    fn site(&mut self) -> u32 {
        self.next_site += 1;
        self.next_site
    }

    fn solved(&self, site: u32) -> Option<S> {
        match &self.mode {
            Mode::Emit(m) => m.get(&site).copied(),
            Mode::Infer(_) => None,
        }
    }

    fn inferring(&self) -> bool {
        matches!(self.mode, Mode::Infer(_))
    }

    fn note_type(&mut self, site: u32, ty: S) {
        if let Mode::Infer(inf) = &mut self.mode {
            inf.set_type(site, ty);
        }
    }

    fn note_kind(&mut self, site: u32, kind: LitKind) {
        if let Mode::Infer(inf) = &mut self.mode {
            inf.kind.entry(site).or_insert(kind);
        }
    }

    fn note_union(&mut self, a: u32, b: u32) {
        if let Mode::Infer(inf) = &mut self.mode {
            inf.union(a, b);
        }
    }

    fn bind(&mut self, name: String, binding: Binding) {
        if let Some(scope) = self.scopes.last_mut() {
            scope.push((name, binding));
        }
    }

    fn lookup(&self, name: &str) -> Option<&Binding> {
        self.scopes
            .iter()
            .rev()
            .flat_map(|s| s.iter().rev())
            .find(|(n, _)| n == name)
            .map(|(_, b)| b)
    }

    /// Turns `v` into an IR value of type `ty`, typing literals and checking the rest.
    fn materialize(&mut self, v: Val, ty: S, span: proc_macro2::Span) -> Result<Value> {
        match v {
            Val::Scalar(x) => {
                let actual = self.ty(x);
                if actual != ty {
                    return err(
                        span,
                        format!("mismatched types: expected `{ty}`, found `{actual}`"),
                    );
                }
                Ok(x)
            }
            Val::Int(i) => {
                if ty.is_float() {
                    return err(
                        span,
                        format!("expected `{ty}`, found an integer literal (write `{i}.0`)"),
                    );
                }
                if ty == S::Bool {
                    return err(span, "expected `bool`, found an integer");
                }
                Ok(self.constant(int_constant(ty, i, span)?))
            }
            Val::Float(f) => {
                if !ty.is_float() {
                    return err(
                        span,
                        format!("expected `{ty}`, found a floating-point literal"),
                    );
                }
                Ok(self.constant(float_constant(ty, f)))
            }
            Val::Infer(site, _) => {
                self.note_type(site, ty);
                Ok(self.constant(Constant::new(ty, 0)))
            }
            other => err(
                span,
                format!(
                    "expected a value of type `{ty}`, found {}",
                    describe(&other)
                ),
            ),
        }
    }

    /// Turns `v` into an IR value, giving untyped literals Rust's default types.
    fn scalar(&mut self, v: Val, span: proc_macro2::Span) -> Result<Value> {
        match v {
            Val::Scalar(x) => Ok(x),
            Val::Int(_) => self.materialize(v, S::I32, span),
            Val::Float(_) => self.materialize(v, S::F64, span),
            Val::Infer(site, kind) => {
                let ty = self.solved(site).unwrap_or(kind.default_type());
                self.materialize(Val::Infer(site, kind), ty, span)
            }
            Val::Index1(_) => err(
                span,
                "a thread index is not a number here: call `.get()` to get its `usize` value",
            ),
            other => err(
                span,
                format!("expected a number, found {}", describe(&other)),
            ),
        }
    }

    fn boolean(&mut self, e: &syn::Expr) -> Result<Value> {
        let v = self.expr(e)?;
        self.materialize(v, S::Bool, e.span())
    }

    // ----- statements ---------------------------------------------------------------------

    fn block(&mut self, block: &syn::Block) -> Result<Val> {
        self.scopes.push(Vec::new());
        let r = self.block_stmts(&block.stmts);
        self.scopes.pop();
        r
    }

    fn block_stmts(&mut self, stmts: &[syn::Stmt]) -> Result<Val> {
        let mut last = Val::Unit;
        for (i, stmt) in stmts.iter().enumerate() {
            if matches!(last, Val::Never) || self.b.block_terminated() {
                // Unreachable code after return/break/continue: rustc warns; emit nothing.
                return Ok(Val::Never);
            }
            let is_last = i + 1 == stmts.len();
            last = match stmt {
                syn::Stmt::Local(local) => {
                    self.local(local)?;
                    Val::Unit
                }
                syn::Stmt::Expr(e, semi) => {
                    let v = self.expr(e)?;
                    match (semi, v) {
                        (_, Val::Never) => Val::Never,
                        (None, v) if is_last => v,
                        _ => Val::Unit,
                    }
                }
                syn::Stmt::Item(item) => {
                    return err(
                        item.span(),
                        "items inside kernel bodies are not supported: move them to the module",
                    );
                }
                syn::Stmt::Macro(m) => return Err(unsupported_macro(&m.mac)),
            };
        }
        Ok(last)
    }

    fn local(&mut self, local: &syn::Local) -> Result<()> {
        let Some(init) = &local.init else {
            return err(
                local.span(),
                "declare device variables with an initial value: `let x = ...;`",
            );
        };
        if let Some((_, diverge)) = &init.diverge {
            return err(
                diverge.span(),
                "`let ... else` is not supported in device code",
            );
        }
        self.let_binding(&local.pat, &init.expr)
    }

    /// `let pat = expr`, where `pat` is a name, `_`, a typed name, or a tuple of those matched
    /// against a tuple expression.
    fn let_binding(&mut self, pat: &syn::Pat, init: &syn::Expr) -> Result<()> {
        if let syn::Pat::Tuple(pt) = pat {
            let syn::Expr::Tuple(te) = init else {
                return err(
                    init.span(),
                    "a tuple pattern needs a tuple expression in device code: `let (a, b) = (x, y);`",
                );
            };
            if pt.elems.len() != te.elems.len() {
                return err(
                    pat.span(),
                    "the tuple pattern and the tuple have different lengths",
                );
            }
            for (p, e) in pt.elems.iter().zip(&te.elems) {
                self.let_binding(p, e)?;
            }
            return Ok(());
        }
        let site = self.site();
        let (pat, annotated) = match pat {
            syn::Pat::Type(pt) => (&*pt.pat, Some(expect_scalar(&pt.ty)?)),
            p => (p, None),
        };
        let (name, mutable) = match pat {
            syn::Pat::Ident(id) if id.by_ref.is_none() && id.subpat.is_none() => {
                (Some(id.ident.to_string()), id.mutability.is_some())
            }
            syn::Pat::Wild(_) => (None, false),
            other => {
                return err(
                    other.span(),
                    "only `let name`, `let mut name`, `let _` and tuples of those are supported in device code",
                );
            }
        };
        let value = self.expr(init)?;
        let span = init.span();
        let Some(name) = name else { return Ok(()) };
        if !mutable {
            let bound = match annotated {
                Some(ty) => Val::Scalar(self.materialize(value, ty, span)?),
                None => value,
            };
            self.bind(name.clone(), Binding::Val(bound));
            return Ok(());
        }
        // A mutable binding needs a type now: from the annotation, the value, or the site.
        let ty = match (&value, annotated) {
            (_, Some(ty)) => Some(ty),
            (Val::Scalar(x), None) => Some(self.ty(*x)),
            (Val::Int(_), None) => {
                self.note_kind(site, LitKind::Int);
                self.solved(site)
            }
            (Val::Float(_), None) => {
                self.note_kind(site, LitKind::Float);
                self.solved(site)
            }
            (Val::Infer(other, kind), None) => {
                self.note_kind(site, *kind);
                self.note_union(site, *other);
                self.solved(site)
            }
            (other, None) => {
                return err(
                    span,
                    format!(
                        "`let mut` of {} is not supported in device code",
                        describe(other)
                    ),
                );
            }
        };
        match ty {
            Some(ty) => {
                let var = self.b.var(name.clone(), ty);
                let x = self.materialize(value, ty, span)?;
                self.b.push(Stmt::WriteVar { var, value: x });
                self.bind(
                    name,
                    Binding::Var {
                        var,
                        ty,
                        mutable: true,
                    },
                );
            }
            None => {
                // Infer run: the type is decided by later uses.
                let kind = match value {
                    Val::Infer(_, k) => k,
                    Val::Float(_) => LitKind::Float,
                    _ => LitKind::Int,
                };
                self.bind(name, Binding::InferVar { site, kind });
            }
        }
        Ok(())
    }

    // ----- expressions --------------------------------------------------------------------

    fn expr(&mut self, e: &syn::Expr) -> Result<Val> {
        match e {
            syn::Expr::Lit(l) => self.literal(&l.lit),
            syn::Expr::Paren(p) => self.expr(&p.expr),
            syn::Expr::Group(g) => self.expr(&g.expr),
            syn::Expr::Block(b) if b.label.is_none() => self.block(&b.block),
            syn::Expr::Unsafe(u) => self.block(&u.block),
            syn::Expr::Path(p) => self.path_value(p),
            syn::Expr::Binary(b) => self.binary_expr(b),
            syn::Expr::Unary(u) => self.unary(u),
            syn::Expr::Cast(c) => self.cast(c),
            syn::Expr::Assign(a) => {
                let place = self.place(&a.left)?;
                let v = self.expr(&a.right)?;
                self.write_place(place, v, a.right.span())?;
                Ok(Val::Unit)
            }
            syn::Expr::If(i) => self.if_expr(i),
            syn::Expr::While(w) => self.while_loop(w),
            syn::Expr::Loop(l) => self.plain_loop(l),
            syn::Expr::ForLoop(f) => self.for_loop(f),
            syn::Expr::Break(b) => {
                if b.label.is_some() || b.expr.is_some() {
                    return err(
                        b.span(),
                        "labelled `break` and `break` with a value are not supported in device code yet",
                    );
                }
                self.jump(Stmt::Break, b.span())
            }
            syn::Expr::Continue(c) => {
                if c.label.is_some() {
                    return err(
                        c.span(),
                        "labelled `continue` is not supported in device code yet",
                    );
                }
                self.jump(Stmt::Continue, c.span())
            }
            syn::Expr::Return(r) => {
                if let Some(v) = &r.expr {
                    return err(v.span(), "kernels return nothing: write `return;`");
                }
                self.b.push(Stmt::Return);
                Ok(Val::Never)
            }
            syn::Expr::Index(i) => {
                let place = self.index_place(i)?;
                self.read_place(place, i.span())
            }
            syn::Expr::MethodCall(m) => self.method_call(m),
            syn::Expr::Call(c) => self.call(c),
            syn::Expr::Macro(m) => Err(unsupported_macro(&m.mac)),
            syn::Expr::Reference(r) => err(
                r.span(),
                "taking references is not supported in device code",
            ),
            syn::Expr::Closure(c) => err(
                c.span(),
                "closures are not supported in device code (write a helper `fn` in the module)",
            ),
            syn::Expr::Struct(s) => err(
                s.span(),
                "struct expressions are not supported in device code yet",
            ),
            syn::Expr::Tuple(t) => err(t.span(), "tuples are not supported in device code yet"),
            syn::Expr::Array(a) => err(a.span(), "arrays are not supported in device code yet"),
            syn::Expr::Match(m) => err(m.span(), "`match` is not supported in device code yet"),
            syn::Expr::Async(a) => err(a.span(), "`async` is not supported in device code"),
            syn::Expr::Await(a) => err(a.span(), "`.await` is not supported in device code"),
            syn::Expr::Try(t) => err(t.span(), "the `?` operator is not supported in device code"),
            other => err(
                other.span(),
                "this expression is not supported in device code",
            ),
        }
    }

    fn jump(&mut self, stmt: Stmt, span: proc_macro2::Span) -> Result<Val> {
        if self.loop_depth == 0 {
            return err(span, "`break` and `continue` must be inside a loop");
        }
        self.b.push(stmt);
        Ok(Val::Never)
    }

    fn literal(&mut self, lit: &syn::Lit) -> Result<Val> {
        match lit {
            syn::Lit::Int(i) => {
                let value: i128 = i.base10_parse()?;
                match i.suffix() {
                    "" => Ok(Val::Int(value)),
                    suffix => {
                        let ty = S::from_rust_name(suffix).filter(|t| t.is_int() || t.is_float());
                        let Some(ty) = ty else {
                            return err(i.span(), format!("unknown literal suffix `{suffix}`"));
                        };
                        if ty.is_float() {
                            return Ok(Val::Scalar(
                                self.constant(float_constant(ty, value as f64)),
                            ));
                        }
                        Ok(Val::Scalar(self.constant(int_constant(
                            ty,
                            value,
                            i.span(),
                        )?)))
                    }
                }
            }
            syn::Lit::Float(f) => {
                let value: f64 = f.base10_parse()?;
                match f.suffix() {
                    "" => Ok(Val::Float(value)),
                    "f32" => Ok(Val::Scalar(self.constant(Constant::f32(value as f32)))),
                    "f64" => Ok(Val::Scalar(self.constant(Constant::f64(value)))),
                    s => err(f.span(), format!("unknown float suffix `{s}`")),
                }
            }
            syn::Lit::Bool(b) => Ok(Val::Scalar(self.constant(Constant::bool(b.value)))),
            other => err(
                other.span(),
                "only numeric and boolean literals are supported in device code",
            ),
        }
    }

    fn path_value(&mut self, p: &syn::ExprPath) -> Result<Val> {
        let Some(ident) = p.path.get_ident() else {
            return err(
                p.span(),
                format!(
                    "`{}` is not a value known in device code",
                    path_string(&p.path)
                ),
            );
        };
        let name = ident.to_string();
        match self.lookup(&name).cloned() {
            Some(Binding::Val(v)) => Ok(v),
            Some(Binding::Var { var, .. }) => {
                Ok(Val::Scalar(self.def(Op::ReadVar(var), p.span())?))
            }
            Some(Binding::InferVar { site, kind, .. }) => Ok(Val::Infer(site, kind)),
            None => err(
                ident.span(),
                format!(
                    "cannot find `{name}` in device code (module constants and statics are not supported yet)"
                ),
            ),
        }
    }

    // ----- places (assignable locations) --------------------------------------------------

    fn place(&mut self, e: &syn::Expr) -> Result<Place> {
        match e {
            syn::Expr::Paren(p) => self.place(&p.expr),
            syn::Expr::Path(p) => {
                let name = p
                    .path
                    .get_ident()
                    .map(|i| i.to_string())
                    .unwrap_or_default();
                match self.lookup(&name).cloned() {
                    Some(Binding::Var {
                        var,
                        ty,
                        mutable: true,
                    }) => Ok(Place::Var(var, ty)),
                    Some(Binding::InferVar { site, kind, .. }) => Ok(Place::InferVar(site, kind)),
                    Some(_) => err(
                        p.span(),
                        format!("cannot assign to `{name}`: declare it with `let mut`"),
                    ),
                    None => err(p.span(), format!("cannot find `{name}` in device code")),
                }
            }
            syn::Expr::Unary(syn::ExprUnary {
                op: syn::UnOp::Deref(_),
                expr,
                ..
            }) => match self.expr(expr)? {
                Val::ElemRef {
                    addr,
                    elem,
                    mutable: true,
                } => Ok(Place::Mem {
                    space: AddressSpace::Global,
                    addr,
                    elem,
                }),
                Val::ElemRef { .. } => err(e.span(), "cannot assign through a shared reference"),
                other => err(
                    expr.span(),
                    format!("cannot dereference {}", describe(&other)),
                ),
            },
            syn::Expr::Index(i) => self.index_place(i),
            other => err(
                other.span(),
                "this is not an assignable place in device code",
            ),
        }
    }

    fn read_place(&mut self, place: Place, span: proc_macro2::Span) -> Result<Val> {
        Ok(match place {
            Place::Var(var, _) => Val::Scalar(self.def(Op::ReadVar(var), span)?),
            Place::InferVar(site, kind) => Val::Infer(site, kind),
            Place::Mem { space, addr, elem } => Val::Scalar(self.def(
                Op::Load {
                    space,
                    ty: elem,
                    addr,
                },
                span,
            )?),
        })
    }

    fn write_place(&mut self, place: Place, v: Val, span: proc_macro2::Span) -> Result<()> {
        match place {
            Place::Var(var, ty) => {
                let x = self.materialize(v, ty, span)?;
                self.b.push(Stmt::WriteVar { var, value: x });
            }
            Place::InferVar(site, _) => match v {
                Val::Scalar(x) => {
                    let ty = self.ty(x);
                    self.note_type(site, ty)
                }
                Val::Infer(other, _) => self.note_union(site, other),
                _ => {}
            },
            Place::Mem { space, addr, elem } => {
                let x = self.materialize(v, elem, span)?;
                self.b.push(Stmt::Store {
                    space,
                    addr,
                    value: x,
                });
            }
        }
        Ok(())
    }

    /// `slice[index]`, bounds-checked.
    fn index_place(&mut self, i: &syn::ExprIndex) -> Result<Place> {
        let param = match self.expr(&i.expr)? {
            Val::Slice(p) => p,
            other => {
                return err(
                    i.expr.span(),
                    format!("cannot index {} in device code", describe(&other)),
                );
            }
        };
        let (elem, access) = self.slice_param(param);
        let index_val = self.expr(&i.index)?;
        if matches!(index_val, Val::Index1(_)) {
            return err(
                i.index.span(),
                "slices are indexed by `usize`: use `.get()` on the thread index",
            );
        }
        let index = self
            .materialize(index_val, S::U64, i.index.span())
            .map_err(|e| {
                syn::Error::new(e.span(), format!("{e} (slices are indexed by `usize`)"))
            })?;
        let site = source_text(i);
        let addr = self.checked_element_addr(param, index, elem, site)?;
        if access == SliceAccess::Disjoint {
            return err(
                i.span(),
                "a `DisjointSlice` is written through `get_mut(index)`, not indexed",
            );
        }
        Ok(Place::Mem {
            space: AddressSpace::Global,
            addr,
            elem,
        })
    }

    fn slice_param(&self, param: u32) -> (S, SliceAccess) {
        match self.b.kernel().params.get(param as usize).map(|p| p.kind) {
            Some(cuprum_ir::ParamKind::Slice { elem, access }) => (elem, access),
            _ => (S::U8, SliceAccess::ReadOnly),
        }
    }

    /// Emits `if !(index < len) { trap }` and returns the element's address.
    fn checked_element_addr(
        &mut self,
        param: u32,
        index: Value,
        elem: S,
        site: String,
    ) -> Result<Value> {
        let span = proc_macro2::Span::call_site();
        let len = self.def(Op::SliceLen(param), span)?;
        let in_bounds = self.def(Op::Compare(CmpOp::Lt, index, len), span)?;
        self.b.begin_block();
        let then = self.b.end_block();
        self.b.begin_block();
        self.b
            .push(Stmt::Trap(TrapKind::BoundsCheck { index, len, site }));
        let otherwise = self.b.end_block();
        self.b.push(Stmt::If {
            cond: in_bounds,
            then,
            otherwise,
        });
        self.element_addr(param, index, elem)
    }

    fn element_addr(&mut self, param: u32, index: Value, elem: S) -> Result<Value> {
        let span = proc_macro2::Span::call_site();
        let base = self.def(Op::SliceBase(param), span)?;
        let size = self.constant(Constant::u64(elem.size_bytes() as u64));
        let offset = self.def(Op::Binary(BinaryOp::Mul, index, size), span)?;
        self.def(Op::Binary(BinaryOp::Add, base, offset), span)
    }

    // ----- operators ----------------------------------------------------------------------

    fn binary_expr(&mut self, b: &syn::ExprBinary) -> Result<Val> {
        use syn::BinOp as B;
        let span = b.span();
        let compound = match b.op {
            B::AddAssign(_) => Some(BinaryOp::Add),
            B::SubAssign(_) => Some(BinaryOp::Sub),
            B::MulAssign(_) => Some(BinaryOp::Mul),
            B::DivAssign(_) => Some(BinaryOp::Div),
            B::RemAssign(_) => Some(BinaryOp::Rem),
            B::BitAndAssign(_) => Some(BinaryOp::And),
            B::BitOrAssign(_) => Some(BinaryOp::Or),
            B::BitXorAssign(_) => Some(BinaryOp::Xor),
            B::ShlAssign(_) => Some(BinaryOp::Shl),
            B::ShrAssign(_) => Some(BinaryOp::Shr),
            _ => None,
        };
        if let Some(op) = compound {
            let place = self.place(&b.left)?;
            let current = match &place {
                Place::Var(var, _) => Val::Scalar(self.def(Op::ReadVar(*var), span)?),
                Place::InferVar(site, kind) => Val::Infer(*site, *kind),
                Place::Mem { space, addr, elem } => Val::Scalar(self.def(
                    Op::Load {
                        space: *space,
                        ty: *elem,
                        addr: *addr,
                    },
                    span,
                )?),
            };
            let rhs = self.expr(&b.right)?;
            let result = self.arith(op, current, rhs, span)?;
            self.write_place(place, result, span)?;
            return Ok(Val::Unit);
        }
        if let B::And(_) | B::Or(_) = b.op {
            return self.short_circuit(b);
        }
        let l = self.expr(&b.left)?;
        let r = self.expr(&b.right)?;
        let cmp = match b.op {
            B::Eq(_) => Some(CmpOp::Eq),
            B::Ne(_) => Some(CmpOp::Ne),
            B::Lt(_) => Some(CmpOp::Lt),
            B::Le(_) => Some(CmpOp::Le),
            B::Gt(_) => Some(CmpOp::Gt),
            B::Ge(_) => Some(CmpOp::Ge),
            _ => None,
        };
        if let Some(c) = cmp {
            return self.compare(c, l, r, span);
        }
        let op = match b.op {
            B::Add(_) => BinaryOp::Add,
            B::Sub(_) => BinaryOp::Sub,
            B::Mul(_) => BinaryOp::Mul,
            B::Div(_) => BinaryOp::Div,
            B::Rem(_) => BinaryOp::Rem,
            B::BitAnd(_) => BinaryOp::And,
            B::BitOr(_) => BinaryOp::Or,
            B::BitXor(_) => BinaryOp::Xor,
            B::Shl(_) => BinaryOp::Shl,
            B::Shr(_) => BinaryOp::Shr,
            _ => return err(span, "this operator is not supported in device code"),
        };
        self.arith(op, l, r, span)
    }

    /// Picks the common type of two operands, or `None` when both are still untyped.
    fn unify(&mut self, l: &Val, r: &Val, span: proc_macro2::Span) -> Result<Option<S>> {
        Ok(match (l, r) {
            (Val::Scalar(x), _) => Some(self.ty(*x)),
            (_, Val::Scalar(y)) => Some(self.ty(*y)),
            (Val::Infer(a, _), Val::Infer(b, _)) => {
                self.note_union(*a, *b);
                None
            }
            (Val::Infer(..), _) | (_, Val::Infer(..)) => None,
            (Val::Int(_), Val::Int(_)) | (Val::Float(_), Val::Float(_)) => None,
            (Val::Int(_), Val::Float(_)) | (Val::Float(_), Val::Int(_)) => {
                return err(
                    span,
                    "cannot mix integer and floating-point literals: write `1.0`, not `1`",
                );
            }
            (a, b) => {
                return err(
                    span,
                    format!("no arithmetic between {} and {}", describe(a), describe(b)),
                );
            }
        })
    }

    fn arith(&mut self, op: BinaryOp, l: Val, r: Val, span: proc_macro2::Span) -> Result<Val> {
        if let (BinaryOp::Shl | BinaryOp::Shr, Val::Int(a), Val::Int(b)) = (op, &l, &r) {
            let (a, b) = (*a, *b);
            if !(0..128).contains(&b) {
                return err(span, "shift amount out of range");
            }
            return Ok(Val::Int(if op == BinaryOp::Shl { a << b } else { a >> b }));
        }
        if matches!(op, BinaryOp::Shl | BinaryOp::Shr) {
            let lhs = self.scalar(l, span)?;
            let amount = match r {
                Val::Int(_) => self.materialize(r, S::U32, span)?,
                other => {
                    let a = self.scalar(other, span)?;
                    self.cast_value(a, S::U32, span)?
                }
            };
            if !self.ty(lhs).is_int() {
                return err(span, "shifts need an integer");
            }
            return Ok(Val::Scalar(self.def(Op::Binary(op, lhs, amount), span)?));
        }
        let ty = match self.unify(&l, &r, span)? {
            Some(ty) => ty,
            None => {
                return Ok(match (&l, &r) {
                    (Val::Infer(s, k), _) | (_, Val::Infer(s, k)) => Val::Infer(*s, *k),
                    (Val::Int(a), Val::Int(b)) => Val::Int(fold_int(op, *a, *b, span)?),
                    (Val::Float(a), Val::Float(b)) => Val::Float(fold_float(op, *a, *b, span)?),
                    _ => return err(span, "unsupported operands"),
                });
            }
        };
        if ty == S::Bool && !matches!(op, BinaryOp::And | BinaryOp::Or | BinaryOp::Xor) {
            return err(span, "arithmetic on `bool` is not allowed");
        }
        let lv = self.materialize(l, ty, span)?;
        let divisor_const = matches!(r, Val::Int(x) if x != 0 && x != -1);
        let rv = self.materialize(r, ty, span)?;
        if ty.is_int() && matches!(op, BinaryOp::Div | BinaryOp::Rem) && !divisor_const {
            self.divide_checks(op, lv, rv, ty)?;
        }
        Ok(Val::Scalar(self.def(Op::Binary(op, lv, rv), span)?))
    }

    /// Rust panics on integer division by zero and on `MIN / -1`; so does the device.
    fn divide_checks(&mut self, op: BinaryOp, lhs: Value, rhs: Value, ty: S) -> Result<()> {
        let span = proc_macro2::Span::call_site();
        let what = if op == BinaryOp::Div {
            "divide"
        } else {
            "calculate the remainder"
        };
        let zero = self.constant(Constant::new(ty, 0));
        let is_zero = self.def(Op::Compare(CmpOp::Eq, rhs, zero), span)?;
        self.trap_if(
            is_zero,
            TrapKind::DivideByZero {
                site: format!("attempt to {what} with a divisor of zero"),
            },
        );
        if ty.is_signed_int() {
            let minus_one = self.constant(Constant::new(ty, u64::MAX));
            let min = self.constant(Constant::new(ty, 1u64 << (ty.bits() - 1)));
            let a = self.def(Op::Compare(CmpOp::Eq, rhs, minus_one), span)?;
            let b = self.def(Op::Compare(CmpOp::Eq, lhs, min), span)?;
            let both = self.def(Op::Binary(BinaryOp::And, a, b), span)?;
            self.trap_if(
                both,
                TrapKind::Assert {
                    message: format!("attempt to {what} with overflow"),
                },
            );
        }
        Ok(())
    }

    fn trap_if(&mut self, cond: Value, kind: TrapKind) {
        self.b.begin_block();
        self.b.push(Stmt::Trap(kind));
        let then = self.b.end_block();
        self.b.push(Stmt::If {
            cond,
            then,
            otherwise: Default::default(),
        });
    }

    fn compare(&mut self, c: CmpOp, l: Val, r: Val, span: proc_macro2::Span) -> Result<Val> {
        let ty = match self.unify(&l, &r, span)? {
            Some(ty) => ty,
            None => match (&l, &r) {
                (Val::Int(a), Val::Int(b)) => return Ok(self.bool_val(cmp_fold(c, a, b))),
                (Val::Float(a), Val::Float(b)) => return Ok(self.bool_val(cmp_fold_f(c, *a, *b))),
                (Val::Infer(_, k), _) | (_, Val::Infer(_, k)) => k.default_type(),
                _ => return err(span, "unsupported comparison"),
            },
        };
        let lv = self.materialize(l, ty, span)?;
        let rv = self.materialize(r, ty, span)?;
        Ok(Val::Scalar(self.def(Op::Compare(c, lv, rv), span)?))
    }

    fn bool_val(&mut self, v: bool) -> Val {
        Val::Scalar(self.constant(Constant::bool(v)))
    }

    /// `a && b`, `a || b`: `b` runs only when needed, as in Rust.
    fn short_circuit(&mut self, b: &syn::ExprBinary) -> Result<Val> {
        let span = b.span();
        let is_and = matches!(b.op, syn::BinOp::And(_));
        let lhs = self.boolean(&b.left)?;
        let var = self.b.var(if is_and { "and" } else { "or" }, S::Bool);
        self.b.push(Stmt::WriteVar { var, value: lhs });
        self.b.begin_block();
        let rhs = self.boolean(&b.right)?;
        self.b.push(Stmt::WriteVar { var, value: rhs });
        let evaluate_rhs = self.b.end_block();
        let (then, otherwise) = if is_and {
            (evaluate_rhs, Default::default())
        } else {
            (Default::default(), evaluate_rhs)
        };
        self.b.push(Stmt::If {
            cond: lhs,
            then,
            otherwise,
        });
        Ok(Val::Scalar(self.def(Op::ReadVar(var), span)?))
    }

    fn unary(&mut self, u: &syn::ExprUnary) -> Result<Val> {
        let span = u.span();
        match u.op {
            syn::UnOp::Deref(_) => match self.expr(&u.expr)? {
                Val::ElemRef { addr, elem, .. } => Ok(Val::Scalar(self.def(
                    Op::Load {
                        space: AddressSpace::Global,
                        ty: elem,
                        addr,
                    },
                    span,
                )?)),
                other => err(span, format!("cannot dereference {}", describe(&other))),
            },
            syn::UnOp::Neg(_) => match self.expr(&u.expr)? {
                Val::Int(i) => Ok(Val::Int(-i)),
                Val::Float(f) => Ok(Val::Float(-f)),
                v @ Val::Infer(..) => Ok(v),
                v => {
                    let x = self.scalar(v, span)?;
                    if self.ty(x).is_unsigned_int() || self.ty(x) == S::Bool {
                        return err(span, format!("cannot negate `{}`", self.ty(x)));
                    }
                    Ok(Val::Scalar(self.def(Op::Unary(UnaryOp::Neg, x), span)?))
                }
            },
            syn::UnOp::Not(_) => {
                let v = self.expr(&u.expr)?;
                if let Val::Infer(..) = v {
                    return Ok(v);
                }
                let x = self.scalar(v, span)?;
                if self.ty(x).is_float() {
                    return err(span, "cannot apply `!` to a float");
                }
                Ok(Val::Scalar(self.def(Op::Unary(UnaryOp::Not, x), span)?))
            }
            _ => err(span, "this operator is not supported in device code"),
        }
    }

    fn cast(&mut self, c: &syn::ExprCast) -> Result<Val> {
        let to = expect_scalar(&c.ty)?;
        let span = c.span();
        match self.expr(&c.expr)? {
            Val::Int(i) => {
                if to.is_float() {
                    return Ok(Val::Scalar(self.constant(float_constant(to, i as f64))));
                }
                if to == S::Bool {
                    return err(
                        span,
                        "cannot cast an integer to `bool`: compare with 0 instead",
                    );
                }
                // An unsuffixed literal is an i32 (or whatever fits), truncated like `as`.
                Ok(Val::Scalar(self.constant(Constant::new(to, i as u64))))
            }
            Val::Float(f) => {
                let x = self.constant(Constant::f64(f));
                Ok(Val::Scalar(self.cast_value(x, to, span)?))
            }
            Val::Infer(site, kind) => {
                if self.inferring() {
                    Ok(Val::Scalar(self.constant(Constant::new(to, 0))))
                } else {
                    let x = self.scalar(Val::Infer(site, kind), span)?;
                    Ok(Val::Scalar(self.cast_value(x, to, span)?))
                }
            }
            v => {
                let x = self.scalar(v, span)?;
                if to == S::Bool && self.ty(x) != S::Bool {
                    return err(
                        span,
                        "cannot cast a number to `bool`: compare with 0 instead",
                    );
                }
                Ok(Val::Scalar(self.cast_value(x, to, span)?))
            }
        }
    }

    fn cast_value(&mut self, x: Value, to: S, span: proc_macro2::Span) -> Result<Value> {
        if self.ty(x) == to {
            return Ok(x);
        }
        self.def(Op::Cast { value: x, to }, span)
    }

    // ----- control flow -------------------------------------------------------------------

    fn if_expr(&mut self, i: &syn::ExprIf) -> Result<Val> {
        let site = self.site();
        let span = i.span();
        if let syn::Expr::Let(l) = &*i.cond {
            return self.if_let(l, i, site);
        }
        let cond = self.boolean(&i.cond)?;
        self.branches(
            cond,
            |this| this.block(&i.then_branch),
            i.else_branch.as_ref().map(|(_, e)| &**e),
            site,
            span,
        )
    }

    /// Lowers both arms of an `if` around the condition `cond`, joining their values.
    fn branches(
        &mut self,
        cond: Value,
        then_arm: impl FnOnce(&mut Self) -> Result<Val>,
        else_arm: Option<&syn::Expr>,
        site: u32,
        span: proc_macro2::Span,
    ) -> Result<Val> {
        self.b.begin_block();
        let then_val = then_arm(self)?;
        let then_done = self.b.block_terminated() || matches!(then_val, Val::Never);
        // Decide the result's type now, so the then-arm can write it before its block closes.
        let needs_value = else_arm.is_some() && !matches!(then_val, Val::Unit);
        let mut result: Option<(Var, S)> = None;
        if needs_value && !then_done {
            let ty = match &then_val {
                Val::Scalar(x) => Some(self.ty(*x)),
                Val::Int(_) => {
                    self.note_kind(site, LitKind::Int);
                    self.solved(site)
                }
                Val::Float(_) => {
                    self.note_kind(site, LitKind::Float);
                    self.solved(site)
                }
                Val::Infer(s, k) => {
                    self.note_kind(site, *k);
                    self.note_union(site, *s);
                    self.solved(site)
                }
                other => {
                    return err(
                        span,
                        format!(
                            "an `if` that yields {} is not supported in device code",
                            describe(other)
                        ),
                    );
                }
            };
            if let Some(ty) = ty {
                self.note_type(site, ty);
                let var = self.b.var("if_value", ty);
                let x = self.materialize(then_val.clone(), ty, span)?;
                self.b.push(Stmt::WriteVar { var, value: x });
                result = Some((var, ty));
            }
        }
        let then = self.b.end_block();
        self.b.begin_block();
        let mut else_val = Val::Unit;
        if let Some(e) = else_arm {
            else_val = self.expr(e)?;
            let else_done = self.b.block_terminated() || matches!(else_val, Val::Never);
            if !else_done && needs_value {
                match (&result, &else_val) {
                    (Some((var, ty)), v) => {
                        let (var, ty) = (*var, *ty);
                        let x = self.materialize(v.clone(), ty, span)?;
                        self.b.push(Stmt::WriteVar { var, value: x });
                    }
                    (None, Val::Scalar(x)) => {
                        let ty = self.ty(*x);
                        self.note_type(site, ty)
                    }
                    (None, Val::Infer(s, _)) => self.note_union(site, *s),
                    _ => {}
                }
            }
        }
        let otherwise = self.b.end_block();
        self.b.push(Stmt::If {
            cond,
            then,
            otherwise,
        });
        let else_done = matches!(else_val, Val::Never);
        if then_done && else_done {
            return Ok(Val::Never);
        }
        if !needs_value {
            return Ok(Val::Unit);
        }
        match result {
            Some((var, _)) => Ok(Val::Scalar(self.def(Op::ReadVar(var), span)?)),
            None if then_done => Ok(else_val),
            None => {
                let kind = if matches!(then_val, Val::Float(_)) {
                    LitKind::Float
                } else {
                    LitKind::Int
                };
                Ok(Val::Infer(site, kind))
            }
        }
    }

    /// `if let Some(r) = slice.get_mut(index) { .. } else { .. }` (and `get` on `&[T]`).
    fn if_let(&mut self, l: &syn::ExprLet, i: &syn::ExprIf, site: u32) -> Result<Val> {
        let span = l.span();
        let (binding, mutable_binding) = match &*l.pat {
            syn::Pat::TupleStruct(ts) if ts.path.is_ident("Some") && ts.elems.len() == 1 => {
                match ts.elems.first() {
                    Some(syn::Pat::Ident(id)) if id.by_ref.is_none() && id.subpat.is_none() => {
                        (id.ident.to_string(), id.mutability.is_some())
                    }
                    _ => return err(ts.span(), "expected `Some(name)`"),
                }
            }
            other => {
                return err(
                    other.span(),
                    "only `if let Some(x) = slice.get_mut(i)` / `.get(i)` is supported in device code",
                );
            }
        };
        let _ = mutable_binding;
        let syn::Expr::MethodCall(m) = &*l.expr else {
            return err(
                l.expr.span(),
                "expected `slice.get_mut(index)` or `slice.get(index)`",
            );
        };
        let method = m.method.to_string();
        let param = match self.expr(&m.receiver)? {
            Val::Slice(p) => p,
            other => {
                return err(
                    m.receiver.span(),
                    format!("`{method}` on {} is not supported", describe(&other)),
                );
            }
        };
        let (elem, access) = self.slice_param(param);
        let mutable = match method.as_str() {
            "get_mut" if access == SliceAccess::ReadOnly => {
                return err(m.method.span(), "cannot get a mutable element of a `&[T]`");
            }
            "get_mut" => true,
            "get" => false,
            _ => return err(m.method.span(), "expected `get_mut(index)` or `get(index)`"),
        };
        let [index_expr] = m.args.iter().collect::<Vec<_>>()[..] else {
            return err(m.span(), "expected one index argument");
        };
        let index = match self.expr(index_expr)? {
            Val::Index1(x) => x,
            _ if access == SliceAccess::Disjoint => {
                return err(
                    index_expr.span(),
                    "a `DisjointSlice` is indexed by the thread's own index (`thread::index_1d()`), so \
                     that no two threads can write one element",
                );
            }
            v => self.materialize(v, S::U64, index_expr.span())?,
        };
        let len = self.def(Op::SliceLen(param), span)?;
        let cond = self.def(Op::Compare(CmpOp::Lt, index, len), span)?;
        let then_block = &i.then_branch;
        self.branches(
            cond,
            |this| {
                let addr = this.element_addr(param, index, elem)?;
                this.scopes.push(vec![(
                    binding,
                    Binding::Val(Val::ElemRef {
                        addr,
                        elem,
                        mutable,
                    }),
                )]);
                let r = this.block(then_block);
                this.scopes.pop();
                r
            },
            i.else_branch.as_ref().map(|(_, e)| &**e),
            site,
            span,
        )
    }

    fn loop_body(&mut self, body: impl FnOnce(&mut Self) -> Result<()>) -> Result<()> {
        self.b.begin_block();
        self.loop_depth += 1;
        let r = body(self);
        self.loop_depth -= 1;
        let block = self.b.end_block();
        r?;
        self.b.push(Stmt::Loop { body: block });
        Ok(())
    }

    fn break_unless(&mut self, cond: Value) {
        self.b.begin_block();
        self.b.push(Stmt::Break);
        let otherwise = self.b.end_block();
        self.b.push(Stmt::If {
            cond,
            then: Default::default(),
            otherwise,
        });
    }

    fn while_loop(&mut self, w: &syn::ExprWhile) -> Result<Val> {
        if w.label.is_some() {
            return err(w.span(), "loop labels are not supported in device code yet");
        }
        if let syn::Expr::Let(l) = &*w.cond {
            return err(l.span(), "`while let` is not supported in device code");
        }
        self.loop_body(|this| {
            let cond = this.boolean(&w.cond)?;
            this.break_unless(cond);
            this.block(&w.body)?;
            Ok(())
        })?;
        Ok(Val::Unit)
    }

    fn plain_loop(&mut self, l: &syn::ExprLoop) -> Result<Val> {
        if l.label.is_some() {
            return err(l.span(), "loop labels are not supported in device code yet");
        }
        self.loop_body(|this| this.block(&l.body).map(|_| ()))?;
        // A `loop` without `break` never completes; with one it yields `()`.
        Ok(Val::Unit)
    }

    /// `for i in a..b`, `a..=b`, `(a..b).rev()`, `(a..b).step_by(s)`.
    fn for_loop(&mut self, f: &syn::ExprForLoop) -> Result<Val> {
        let site = self.site();
        let span = f.span();
        if f.label.is_some() {
            return err(span, "loop labels are not supported in device code yet");
        }
        let name = match &*f.pat {
            syn::Pat::Ident(id) if id.by_ref.is_none() && id.subpat.is_none() => {
                Some(id.ident.to_string())
            }
            syn::Pat::Wild(_) => None,
            other => return err(other.span(), "expected a loop variable name"),
        };
        let (range, reversed, step) = range_parts(&f.expr)?;
        let start = match &range.start {
            Some(e) => self.expr(e)?,
            None => return err(range.span(), "device loops need a start: `0..n`"),
        };
        let end = match &range.end {
            Some(e) => self.expr(e)?,
            None => return err(range.span(), "device loops need an end: `a..b`"),
        };
        let inclusive = matches!(range.limits, syn::RangeLimits::Closed(_));
        let step = match step {
            Some(e) => Some(self.expr(e)?),
            None => None,
        };
        // The loop variable's type: from the bounds, else from uses (the site), else i32.
        let mut ty = self.unify(&start, &end, span)?;
        for v in [&start, &end] {
            if let Val::Infer(s, _) = v {
                self.note_union(site, *s);
            }
        }
        if ty.is_none() {
            self.note_kind(site, LitKind::Int);
            ty = self.solved(site);
        }
        let Some(ty) = ty.or(self.inferring().then_some(S::I32)) else {
            return err(span, "cannot infer the type of the loop variable");
        };
        if let Some(t) = Some(ty).filter(|t| !t.is_int()) {
            return err(
                span,
                format!("device `for` loops range over integers, not `{t}`"),
            );
        }
        let start = self.materialize(start, ty, span)?;
        let end = self.materialize(end, ty, span)?;
        let step = match step {
            Some(v) => {
                let s = self.materialize(v, S::U64, span)?;
                Some(self.cast_value(s, ty, span)?)
            }
            None => None,
        };
        let one = self.constant(Constant::new(ty, 1));
        let step = step.unwrap_or(one);
        // `more`: whether another iteration follows; `cursor`: the next value to hand out.
        // Written so that no iteration overflows the type, as Rust's ranges never do.
        let cursor = self.b.var("range", ty);
        let more = self.b.var("range_more", S::Bool);
        let (first, has_any) = match (reversed, inclusive) {
            (false, false) => (start, self.def(Op::Compare(CmpOp::Lt, start, end), span)?),
            (false, true) => (start, self.def(Op::Compare(CmpOp::Le, start, end), span)?),
            (true, false) => {
                let any = self.def(Op::Compare(CmpOp::Lt, start, end), span)?;
                (self.def(Op::Binary(BinaryOp::Sub, end, one), span)?, any)
            }
            (true, true) => (end, self.def(Op::Compare(CmpOp::Le, start, end), span)?),
        };
        self.b.push(Stmt::WriteVar {
            var: cursor,
            value: first,
        });
        self.b.push(Stmt::WriteVar {
            var: more,
            value: has_any,
        });
        self.loop_body(|this| {
            let go = this.def(Op::ReadVar(more), span)?;
            this.break_unless(go);
            let current = this.def(Op::ReadVar(cursor), span)?;
            // Room left before the bound, compared with the step, decides if another follows.
            let room = if reversed {
                this.def(Op::Binary(BinaryOp::Sub, current, start), span)?
            } else {
                let last = if inclusive {
                    end
                } else {
                    this.def(Op::Binary(BinaryOp::Sub, end, one), span)?
                };
                this.def(Op::Binary(BinaryOp::Sub, last, current), span)?
            };
            let room_u = this.cast_value(room, unsigned_of(ty), span)?;
            let step_u = this.cast_value(step, unsigned_of(ty), span)?;
            let another = this.def(Op::Compare(CmpOp::Ge, room_u, step_u), span)?;
            this.b.push(Stmt::WriteVar {
                var: more,
                value: another,
            });
            let next = if reversed {
                this.def(Op::Binary(BinaryOp::Sub, current, step), span)?
            } else {
                this.def(Op::Binary(BinaryOp::Add, current, step), span)?
            };
            let next = this.def(
                Op::Select {
                    cond: another,
                    if_true: next,
                    if_false: current,
                },
                span,
            )?;
            this.b.push(Stmt::WriteVar {
                var: cursor,
                value: next,
            });
            this.scopes.push(Vec::new());
            if let Some(n) = &name {
                this.bind(n.clone(), Binding::Val(Val::Scalar(current)));
            }
            let r = this.block(&f.body);
            this.scopes.pop();
            this.note_type(site, ty);
            r.map(|_| ())
        })?;
        Ok(Val::Unit)
    }

    // ----- calls --------------------------------------------------------------------------

    fn method_call(&mut self, m: &syn::ExprMethodCall) -> Result<Val> {
        let span = m.span();
        let method = m.method.to_string();
        let receiver = self.expr(&m.receiver)?;
        let args: Vec<&syn::Expr> = m.args.iter().collect();
        match (&receiver, method.as_str()) {
            (Val::Index1(x), "get") if args.is_empty() => return Ok(Val::Scalar(*x)),
            (Val::Slice(p), "len") if args.is_empty() => {
                return Ok(Val::Scalar(self.def(Op::SliceLen(*p), span)?));
            }
            (Val::Slice(_), "get_mut" | "get") => {
                return err(
                    span,
                    format!(
                        "use `{method}` as `if let Some(x) = slice.{method}(i) {{ .. }}` in device code"
                    ),
                );
            }
            _ => {}
        }
        let unary = match method.as_str() {
            "sqrt" => Some(UnaryOp::Sqrt),
            "abs" => Some(UnaryOp::Abs),
            "floor" => Some(UnaryOp::Floor),
            "ceil" => Some(UnaryOp::Ceil),
            "round" => Some(UnaryOp::Round),
            "trunc" => Some(UnaryOp::Trunc),
            "exp" => Some(UnaryOp::Exp),
            "exp2" => Some(UnaryOp::Exp2),
            "ln" => Some(UnaryOp::Ln),
            "log2" => Some(UnaryOp::Log2),
            "sin" => Some(UnaryOp::Sin),
            "cos" => Some(UnaryOp::Cos),
            "tanh" => Some(UnaryOp::Tanh),
            _ => None,
        };
        if let Some(op) = unary {
            if !args.is_empty() {
                return err(span, format!("`{method}` takes no arguments"));
            }
            if let Val::Infer(..) = receiver {
                return Ok(receiver);
            }
            let x = self.scalar(receiver, span)?;
            let ty = self.ty(x);
            if op == UnaryOp::Abs && ty.is_signed_int() {
                // Wrapping abs, as `i32::wrapping_abs`; release-mode `abs` of MIN also wraps.
                let zero = self.constant(Constant::new(ty, 0));
                let neg = self.def(Op::Compare(CmpOp::Lt, x, zero), span)?;
                let negated = self.def(Op::Unary(UnaryOp::Neg, x), span)?;
                return Ok(Val::Scalar(self.def(
                    Op::Select {
                        cond: neg,
                        if_true: negated,
                        if_false: x,
                    },
                    span,
                )?));
            }
            if !ty.is_float() {
                return err(span, format!("`{method}` needs a float, found `{ty}`"));
            }
            return Ok(Val::Scalar(self.def(Op::Unary(op, x), span)?));
        }
        let binary = match method.as_str() {
            "min" => Some(BinaryOp::Min),
            "max" => Some(BinaryOp::Max),
            "wrapping_add" => Some(BinaryOp::Add),
            "wrapping_sub" => Some(BinaryOp::Sub),
            "wrapping_mul" => Some(BinaryOp::Mul),
            _ => None,
        };
        if let Some(op) = binary {
            let [arg] = args[..] else {
                return err(span, format!("`{method}` takes one argument"));
            };
            let r = self.expr(arg)?;
            return self.arith(op, receiver, r, span);
        }
        if method == "mul_add" {
            let [a, c] = args[..] else {
                return err(span, "`mul_add` takes two arguments");
            };
            let (a, c) = (self.expr(a)?, self.expr(c)?);
            let x = self.scalar(receiver, span)?;
            let ty = self.ty(x);
            if !ty.is_float() {
                return err(span, "`mul_add` needs floats");
            }
            let a = self.materialize(a, ty, span)?;
            let c = self.materialize(c, ty, span)?;
            return Ok(Val::Scalar(
                self.def(Op::Ternary(TernaryOp::MulAdd, x, a, c), span)?,
            ));
        }
        err(
            m.method.span(),
            format!("method `{method}` is not supported in device code"),
        )
    }

    fn call(&mut self, c: &syn::ExprCall) -> Result<Val> {
        let span = c.span();
        let syn::Expr::Path(p) = &*c.func else {
            return err(
                c.func.span(),
                "only calls of named functions are supported in device code",
            );
        };
        let path = path_string(&p.path);
        let last = p
            .path
            .segments
            .last()
            .map(|s| s.ident.to_string())
            .unwrap_or_default();
        let first = p
            .path
            .segments
            .first()
            .map(|s| s.ident.to_string())
            .unwrap_or_default();
        if matches!(
            first.as_str(),
            "Vec" | "Box" | "String" | "Rc" | "Arc" | "HashMap" | "BTreeMap" | "VecDeque"
        ) {
            return err(
                span,
                format!("`{path}` allocates on the heap, which device code cannot do"),
            );
        }
        if first == "std" || first == "core" || first == "alloc" {
            return err(
                span,
                format!("`{path}`: the standard library is not available in device code"),
            );
        }
        if !c.args.is_empty() {
            return err(
                span,
                format!(
                    "`{path}` is not a device function known to cuprum (device helper functions are not supported yet)"
                ),
            );
        }
        let special = |s| Some(Special::ThreadIdx(s));
        let reg = match last.as_str() {
            "index_1d" => {
                let x = self.global_index_x()?;
                return Ok(Val::Index1(x));
            }
            "thread_idx_x" => special(Dim::X),
            "thread_idx_y" => special(Dim::Y),
            "thread_idx_z" => special(Dim::Z),
            "block_idx_x" => Some(Special::BlockIdx(Dim::X)),
            "block_idx_y" => Some(Special::BlockIdx(Dim::Y)),
            "block_idx_z" => Some(Special::BlockIdx(Dim::Z)),
            "block_dim_x" => Some(Special::BlockDim(Dim::X)),
            "block_dim_y" => Some(Special::BlockDim(Dim::Y)),
            "block_dim_z" => Some(Special::BlockDim(Dim::Z)),
            "grid_dim_x" => Some(Special::GridDim(Dim::X)),
            "grid_dim_y" => Some(Special::GridDim(Dim::Y)),
            "grid_dim_z" => Some(Special::GridDim(Dim::Z)),
            "lane_id" => Some(Special::LaneId),
            _ => None,
        };
        match reg {
            Some(r) => Ok(Val::Scalar(self.def(Op::Special(r), span)?)),
            None => err(
                span,
                format!("`{path}` is not a device function known to cuprum"),
            ),
        }
    }

    /// `blockIdx.x * blockDim.x + threadIdx.x` as a `u64`, computed once per kernel at entry.
    fn global_index_x(&mut self) -> Result<Value> {
        if let Some(x) = self.index_1d {
            // Cached only when defined in the kernel's top-level block, so visible everywhere.
            return Ok(x);
        }
        let span = proc_macro2::Span::call_site();
        let block = self.def(Op::Special(Special::BlockIdx(Dim::X)), span)?;
        let dim = self.def(Op::Special(Special::BlockDim(Dim::X)), span)?;
        let tid = self.def(Op::Special(Special::ThreadIdx(Dim::X)), span)?;
        let block = self.cast_value(block, S::U64, span)?;
        let dim = self.cast_value(dim, S::U64, span)?;
        let tid = self.cast_value(tid, S::U64, span)?;
        let base = self.def(Op::Binary(BinaryOp::Mul, block, dim), span)?;
        let x = self.def(Op::Binary(BinaryOp::Add, base, tid), span)?;
        if self.b.depth() == 0 {
            self.index_1d = Some(x);
        }
        Ok(x)
    }
}

/// Splits `a..b`, `(a..b).rev()`, `(a..b).step_by(s)` (and `.rev().step_by`/`.step_by().rev()`
/// is not supported: its order semantics are easy to get wrong, so it is rejected).
fn range_parts(e: &syn::Expr) -> Result<(&syn::ExprRange, bool, Option<&syn::Expr>)> {
    match e {
        syn::Expr::Range(r) => Ok((r, false, None)),
        syn::Expr::Paren(p) => range_parts(&p.expr),
        syn::Expr::MethodCall(m) if m.method == "rev" && m.args.is_empty() => {
            match range_parts(&m.receiver)? {
                (r, false, None) => Ok((r, true, None)),
                _ => err(
                    m.span(),
                    "only `(a..b).rev()` and `(a..b).step_by(s)` are supported in device loops",
                ),
            }
        }
        syn::Expr::MethodCall(m) if m.method == "step_by" && m.args.len() == 1 => {
            match range_parts(&m.receiver)? {
                (r, false, None) => Ok((r, false, m.args.first())),
                _ => err(
                    m.span(),
                    "only `(a..b).rev()` and `(a..b).step_by(s)` are supported in device loops",
                ),
            }
        }
        other => err(
            other.span(),
            "device `for` loops iterate over integer ranges: `for i in a..b`",
        ),
    }
}

fn unsigned_of(ty: S) -> S {
    match ty {
        S::I8 => S::U8,
        S::I16 => S::U16,
        S::I32 => S::U32,
        S::I64 => S::U64,
        other => other,
    }
}

fn int_constant(ty: S, value: i128, span: proc_macro2::Span) -> Result<Constant> {
    let bits = ty.bits();
    let (min, max): (i128, i128) = if ty.is_signed_int() {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        (0, (1i128 << bits) - 1)
    };
    if value < min || value > max {
        return err(span, format!("literal `{value}` out of range for `{ty}`"));
    }
    Ok(Constant::new(ty, value as u64))
}

fn float_constant(ty: S, value: f64) -> Constant {
    match ty {
        S::F32 => Constant::f32(value as f32),
        S::F16 => Constant::new(S::F16, f64_to_half_bits(value, 5, 10)),
        S::BF16 => Constant::new(
            S::BF16,
            (f32::to_bits(value as f32) as u64
                + 0x7fff
                + ((f32::to_bits(value as f32) as u64 >> 16) & 1))
                >> 16,
        ),
        _ => Constant::f64(value),
    }
}

/// Rounds an `f64` to an IEEE binary16 bit pattern (round to nearest even).
fn f64_to_half_bits(value: f64, exp_bits: u32, man_bits: u32) -> u64 {
    let sign = if value.is_sign_negative() {
        1u64 << (exp_bits + man_bits)
    } else {
        0
    };
    let a = value.abs();
    let bias = (1i32 << (exp_bits - 1)) - 1;
    let max_exp = (1u64 << exp_bits) - 1;
    if a.is_nan() {
        return sign | (max_exp << man_bits) | (1 << (man_bits - 1));
    }
    let min_normal = 2f64.powi(1 - bias);
    let ulp_sub = 2f64.powi(1 - bias - man_bits as i32);
    if a < min_normal {
        let m = (a / ulp_sub).round_ties_even() as u64;
        return sign | m;
    }
    let e = a.log2().floor() as i32;
    let e = if 2f64.powi(e) > a { e - 1 } else { e };
    let mant = a / 2f64.powi(e) - 1.0;
    let mut m = (mant * (1u64 << man_bits) as f64).round_ties_even() as u64;
    let mut biased = (e + bias) as u64;
    if m == 1 << man_bits {
        m = 0;
        biased += 1;
    }
    if biased >= max_exp {
        return sign | (max_exp << man_bits);
    }
    sign | (biased << man_bits) | m
}

fn fold_int(op: BinaryOp, a: i128, b: i128, span: proc_macro2::Span) -> Result<i128> {
    Ok(match op {
        BinaryOp::Add => a + b,
        BinaryOp::Sub => a - b,
        BinaryOp::Mul => a.saturating_mul(b),
        BinaryOp::Div | BinaryOp::Rem if b == 0 => return err(span, "division by zero"),
        BinaryOp::Div => a / b,
        BinaryOp::Rem => a % b,
        BinaryOp::And => a & b,
        BinaryOp::Or => a | b,
        BinaryOp::Xor => a ^ b,
        BinaryOp::Min => a.min(b),
        BinaryOp::Max => a.max(b),
        BinaryOp::Shl | BinaryOp::Shr => return err(span, "unsupported constant shift"),
    })
}

fn fold_float(op: BinaryOp, a: f64, b: f64, span: proc_macro2::Span) -> Result<f64> {
    Ok(match op {
        BinaryOp::Add => a + b,
        BinaryOp::Sub => a - b,
        BinaryOp::Mul => a * b,
        BinaryOp::Div => a / b,
        BinaryOp::Rem => a % b,
        BinaryOp::Min => a.min(b),
        BinaryOp::Max => a.max(b),
        _ => return err(span, "this operator does not apply to floats"),
    })
}

fn cmp_fold<T: PartialOrd>(c: CmpOp, a: &T, b: &T) -> bool {
    match c {
        CmpOp::Eq => a == b,
        CmpOp::Ne => a != b,
        CmpOp::Lt => a < b,
        CmpOp::Le => a <= b,
        CmpOp::Gt => a > b,
        CmpOp::Ge => a >= b,
    }
}

fn cmp_fold_f(c: CmpOp, a: f64, b: f64) -> bool {
    cmp_fold(c, &a, &b)
}

fn describe(v: &Val) -> String {
    match v {
        Val::Scalar(_) => "a number".into(),
        Val::Int(_) => "an integer literal".into(),
        Val::Float(_) => "a float literal".into(),
        Val::Infer(..) => "a number".into(),
        Val::Unit => "`()`".into(),
        Val::Never => "a diverging expression".into(),
        Val::Index1(_) => "a thread index".into(),
        Val::Slice(_) => "a slice".into(),
        Val::ElemRef { .. } => "an element reference".into(),
    }
}

/// The source of an expression as a person would write it, for error messages
/// (`x[i.get()]`, not the token stream's `x [i . get ()]`).
fn source_text(e: &impl quote::ToTokens) -> String {
    let raw = e.to_token_stream().to_string();
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        if c == ' ' {
            let prev = out.chars().last();
            let next = chars.peek().copied();
            let tight_after = matches!(prev, Some('[' | '(' | '.' | '!'));
            let tight_before = matches!(next, Some('[' | ']' | '(' | ')' | '.' | ',' | ';'));
            if tight_after || tight_before {
                continue;
            }
        }
        out.push(c);
    }
    out
}

fn path_string(p: &syn::Path) -> String {
    p.segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect::<Vec<_>>()
        .join("::")
}

fn unsupported_macro(m: &syn::Macro) -> syn::Error {
    let name = m
        .path
        .segments
        .last()
        .map(|s| s.ident.to_string())
        .unwrap_or_default();
    let hint = match name.as_str() {
        "println" | "print" | "eprintln" | "eprint" | "format" | "write" | "writeln" => {
            "printing and formatting are not available in device code yet"
        }
        "vec" => "`vec!` allocates on the heap, which device code cannot do",
        "panic" | "assert" | "assert_eq" | "assert_ne" | "unreachable" | "todo"
        | "unimplemented" => "panicking macros are not supported in device code yet",
        _ => "macros are not supported in device code",
    };
    syn::Error::new(m.span(), format!("`{name}!`: {hint}"))
}
