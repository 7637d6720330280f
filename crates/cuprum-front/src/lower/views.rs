//! Values that are `Option`s in every thread, and cuda-oxide's read views over them.
//!
//! Why this exists: cuda-oxide's proof-carrying views (`MatrixView32`, `RowView32`,
//! `ColView32`, `zip_exact`) check a whole strip of a read-only slice once, where the view is
//! made, so that its reads need no check of their own; and its witnesses
//! (`thread::index_2d_runtime(&s)`) are `Option`s that kernels bind, put in tuples and choose
//! between. Both are an `Option` computed in every thread ([`Val::Opt`]): a `Bool` saying
//! whether it holds its value, and the value, read only where the `Bool` is known to hold
//! (`if let` patterns, `unwrap_or`).
//!
//! The facts that make the unchecked reads sound, each established in one place here:
//! * `matrix.row(r, n)` holds only when `n != 0`, `n <= stride` and `r * stride + n - 1 <
//!   len` (in 64 bits, where `r`, `stride` and `n` are `u32`s, so nothing wraps): its
//!   elements `r * stride + i`, `i < n`, are inside the slice.
//! * `matrix.col(c, n)` holds only when `n != 0`, `c < stride` and `(n - 1) * stride + c <
//!   len`: its elements `c + i * stride`, `i < n`, are inside the slice.
//! * `view.get(i)` holds only when `i < n`, and its element is loaded only where it holds;
//!   an empty view (`RowView32::empty()`) has `n = 0`, so it never holds.
//! * `row.zip_exact(col)` holds only when both have one length `n`, and `for (x, y) in pair`
//!   reads elements `i < n` of both: the loop's own exit test is its only comparison.
//!
//! Views only read, so any number of threads may hold overlapping ones; what a thread writes
//! goes through `DisjointSlice` (`disjoint.rs`, `tiles.rs`).
//!
//! A thread's own index (`thread::index_1d()`, `index_2d()`, the witness of
//! `index_2d_runtime`, `index_1d_u32`, `coord_2d_u32`) is a function of the thread's hardware
//! coordinates alone, so every value of one kind is the same in one thread: choosing between
//! two (`if c { wa } else { wb }`) chooses nothing, and the choice is lowered as a fresh read
//! of the index ([`own_index_kind`]). That is why a witness made from one slice may address
//! another: it carries only the coordinates, and the slice it is used on resolves them
//! against its own width.

use cuprum_ir::{AddressSpace, BinaryOp, CmpOp, Constant, Dim, Op, ScalarType as S, Stmt, Value};
use syn::spanned::Spanned;

use super::*;

/// Why an empty view's elements cannot be read: it names no slice, so no element type.
const EMPTY_VIEW: &str = "an empty view (`RowView32::empty()`) has no elements to read: read \
     the view it stands in for, through `unwrap_or(RowView32::empty())`";

/// A read-only view of a slice: elements `start + i * step` for `i < len`, all proven inside
/// the slice where the view was made. `param` is `None` for an empty view, which names no
/// slice.
#[derive(Clone, Debug)]
pub(super) struct View {
    param: Option<u32>,
    /// `U64`.
    start: Value,
    /// `U64`.
    step: Value,
    /// `U32`.
    len: Value,
}

/// Which own index a value is, if it is one (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum OwnIndex {
    One,
    Two,
    Three,
    One32,
    Two32,
}

/// The kind of own index `v` is: every value of one kind is the same in a thread.
pub(super) fn own_index_kind(v: &Val) -> Option<OwnIndex> {
    match v {
        Val::Index1(_) => Some(OwnIndex::One),
        Val::Index2(..) => Some(OwnIndex::Two),
        Val::Index3(..) => Some(OwnIndex::Three),
        Val::Index32(_) => Some(OwnIndex::One32),
        Val::Coord32(..) => Some(OwnIndex::Two32),
        _ => None,
    }
}

impl Lowerer<'_> {
    /// The calling thread's own index of `kind`, read from the hardware.
    pub(super) fn own_index(&mut self, kind: OwnIndex, span: proc_macro2::Span) -> Result<Val> {
        Ok(match kind {
            OwnIndex::One => Val::Index1(self.global_index_x()?),
            OwnIndex::One32 => Val::Index32(self.global_index_x()?),
            OwnIndex::Two | OwnIndex::Two32 => {
                let v = self.global_index(&[Dim::X, Dim::Y], span)?;
                if kind == OwnIndex::Two {
                    Val::Index2(v[0], v[1])
                } else {
                    Val::Coord32(v[0], v[1])
                }
            }
            OwnIndex::Three => {
                let v = self.global_index(&[Dim::X, Dim::Y, Dim::Z], span)?;
                Val::Index3(v[0], v[1], v[2])
            }
        })
    }

    /// `MatrixView32::new(slice, stride)`, `RowView32::empty()`, `ColView32::empty()`, and
    /// the launch context's `thread::index_1d_u32(lc)` / `thread::coord_2d_u32(lc)`.
    pub(super) fn view_call(
        &mut self,
        path: &syn::Path,
        last: &str,
        args: &[&syn::Expr],
        span: proc_macro2::Span,
    ) -> Result<Option<Val>> {
        let owner = path
            .segments
            .iter()
            .rev()
            .nth(1)
            .map(|s| s.ident.to_string());
        match (owner.as_deref(), last, args) {
            (Some("MatrixView32"), "new", [slice, stride]) => {
                let param = match self.expr(slice)? {
                    Val::Slice(p) if self.elem_slice(p).is_none() => p,
                    other => {
                        return err(
                            slice.span(),
                            format!(
                                "`MatrixView32::new` takes a slice parameter of numbers, not {}",
                                describe(&other)
                            ),
                        );
                    }
                };
                let stride = self.expr(stride)?;
                let stride = self.materialize(stride, S::U32, args[1].span())?;
                Ok(Some(Val::Matrix { param, stride }))
            }
            (Some("RowView32" | "ColView32"), "empty", []) => {
                let zero64 = self.constant(Constant::u64(0));
                let zero32 = self.constant(Constant::u32(0));
                Ok(Some(Val::View(View {
                    param: None,
                    start: zero64,
                    step: zero64,
                    len: zero32,
                })))
            }
            (_, "index_1d_u32" | "coord_2d_u32", [context]) => {
                self.launch_context_index(last, context, span).map(Some)
            }
            _ => Ok(None),
        }
    }

    /// `thread::index_1d_u32(lc)` and `thread::coord_2d_u32(lc)`: the thread's own index,
    /// exact (its `u32` accessors narrow it). They need the kernel's launch context and a
    /// launch contract with a domain, which makes the index unique (`disjoint.rs`).
    fn launch_context_index(
        &mut self,
        name: &str,
        context: &syn::Expr,
        span: proc_macro2::Span,
    ) -> Result<Val> {
        if !matches!(self.expr(context)?, Val::LaunchContext) {
            return err(
                context.span(),
                format!(
                    "`thread::{name}` takes the launch context the kernel binds with \
                     `#[kernel(launch_context = name)]`"
                ),
            );
        }
        let domain = self.contract.and_then(|c| c.domain);
        let want = if name == "index_1d_u32" { 1 } else { 2 };
        if domain != Some(want) {
            return err(
                span,
                format!(
                    "`thread::{name}` needs a launch contract with `domain = {want}` (and \
                     `coordinates = u32`): `#[launch_contract(domain = {want}, coordinates = \
                     u32, block = (..))]`, which makes the thread's index unique in every \
                     launch `prepare_*` accepts"
                ),
            );
        }
        let kind = if want == 1 {
            OwnIndex::One32
        } else {
            OwnIndex::Two32
        };
        self.own_index(kind, span)
    }

    /// Methods of views, options, 32-bit indices, output tiles and element handles; `None`
    /// for any other receiver.
    pub(super) fn view_method(
        &mut self,
        m: &syn::ExprMethodCall,
        receiver: &Val,
    ) -> Result<Option<Val>> {
        let span = m.span();
        let method = m.method.to_string();
        let args: Vec<&syn::Expr> = m.args.iter().collect();
        let v = match (receiver, method.as_str(), &args[..]) {
            // `Uniform<T>`'s value: a scalar parameter, bound as the value itself.
            (Val::Scalar(x), "get", []) => Val::Scalar(*x),
            (Val::Index32(x), "get", []) => Val::Scalar(self.cast_value(*x, S::U32, span)?),
            (Val::Coord32(x, _), "col", []) => Val::Scalar(self.cast_value(*x, S::U32, span)?),
            (Val::Coord32(_, y), "row", []) => Val::Scalar(self.cast_value(*y, S::U32, span)?),
            (Val::Matrix { stride, .. }, "stride", []) => Val::Scalar(*stride),
            (Val::Matrix { param, .. }, "len", []) => Val::Scalar(self.slice_len(*param, span)?),
            (&Val::Matrix { param, stride }, "row" | "col", [at, n]) => {
                let at = self.expr(at)?;
                let at = self.materialize(at, S::U32, args[0].span())?;
                let n = self.expr(n)?;
                let n = self.materialize(n, S::U32, args[1].span())?;
                self.matrix_strip(param, stride, method == "row", at, n, span)?
            }
            (Val::View(v), "len", []) => Val::Scalar(v.len),
            (Val::View(v), "is_empty", []) => {
                let zero = self.constant(Constant::u32(0));
                Val::Scalar(self.def(Op::Compare(CmpOp::Eq, v.len, zero), span)?)
            }
            (Val::View(v), "get", [i]) => {
                let v = v.clone();
                let i = self.expr(i)?;
                let i = self.materialize(i, S::U32, args[0].span())?;
                let some = self.def(Op::Compare(CmpOp::Lt, i, v.len), span)?;
                let (addr, elem) = self.view_element(&v, i, span)?;
                Val::Opt {
                    some,
                    inner: Box::new(Val::ViewLoad { addr, elem }),
                }
            }
            (Val::View(a), "zip_exact", [other]) => {
                let a = a.clone();
                let Val::View(b) = self.expr(other)? else {
                    return err(other.span(), "`zip_exact` takes a column view");
                };
                let some = self.def(Op::Compare(CmpOp::Eq, a.len, b.len), span)?;
                Val::Opt {
                    some,
                    inner: Box::new(Val::Zip(a, b)),
                }
            }
            (Val::Opt { some, inner }, "unwrap_or", [fallback]) => {
                let (some, inner) = (*some, (**inner).clone());
                let fallback = self.expr(fallback)?;
                self.unwrap_or(some, inner, fallback, span)?
            }
            (Val::Opt { some, .. }, "is_some", []) => Val::Scalar(*some),
            (Val::Opt { some, .. }, "is_none", []) => {
                Val::Scalar(self.def(Op::Unary(cuprum_ir::UnaryOp::Not, *some), span)?)
            }
            (Val::OutTile(t), "at_const", []) => {
                let t = t.clone();
                self.tile_at_const(&t, m)?
            }
            (Val::OutTile(t), "rows" | "cols", []) => {
                let n = if method == "rows" { t.rows } else { t.cols };
                Val::Scalar(self.constant(Constant::u32(n as u32)))
            }
            (
                Val::ElemRef {
                    space, addr, elem, ..
                },
                "read",
                [],
            ) => Val::Scalar(self.def(
                Op::Load {
                    space: *space,
                    ty: *elem,
                    addr: *addr,
                    eviction: cuprum_ir::Eviction::Normal,
                },
                span,
            )?),
            (
                Val::ElemRef {
                    space,
                    addr,
                    elem,
                    mutable: true,
                },
                "write",
                [value],
            ) => {
                let (space, addr, elem) = (*space, *addr, *elem);
                let v = self.expr(value)?;
                let v = self.materialize(v, elem, value.span())?;
                self.b.push(Stmt::Store {
                    space,
                    addr,
                    value: v,
                });
                Val::Unit
            }
            (Val::Slice(p), _, _) if super::tiles::OPTION_METHODS.contains(&method.as_str()) => {
                let p = *p;
                self.tile_method(p, m)?
            }
            _ => return Ok(None),
        };
        Ok(Some(v))
    }

    /// `matrix.row(at, n)` (`row`) or `matrix.col(at, n)`: the strip and the condition under
    /// which it lies inside the slice (see the module docs).
    fn matrix_strip(
        &mut self,
        param: u32,
        stride: Value,
        row: bool,
        at: Value,
        n: Value,
        span: proc_macro2::Span,
    ) -> Result<Val> {
        let wide = |this: &mut Self, v: Value| this.cast_value(v, S::U64, span);
        let zero32 = self.constant(Constant::u32(0));
        let one = self.constant(Constant::u64(1));
        let nonempty = self.def(Op::Compare(CmpOp::Ne, n, zero32), span)?;
        let fits = if row {
            self.def(Op::Compare(CmpOp::Le, n, stride), span)?
        } else {
            self.def(Op::Compare(CmpOp::Lt, at, stride), span)?
        };
        let (at64, n64, stride64) = (wide(self, at)?, wide(self, n)?, wide(self, stride)?);
        // Below 2^32 * 2^32 + 2^32: exact in 64 bits.
        let (start, step, last) = if row {
            let start = self.def(Op::Binary(BinaryOp::Mul, at64, stride64), span)?;
            let tail = self.def(Op::Binary(BinaryOp::Sub, n64, one), span)?;
            let last = self.def(Op::Binary(BinaryOp::Add, start, tail), span)?;
            (start, one, last)
        } else {
            let rows = self.def(Op::Binary(BinaryOp::Sub, n64, one), span)?;
            let down = self.def(Op::Binary(BinaryOp::Mul, rows, stride64), span)?;
            let last = self.def(Op::Binary(BinaryOp::Add, down, at64), span)?;
            (at64, stride64, last)
        };
        let len = self.slice_len(param, span)?;
        let inside = self.def(Op::Compare(CmpOp::Lt, last, len), span)?;
        let some = self.def(Op::Binary(BinaryOp::And, nonempty, fits), span)?;
        let some = self.def(Op::Binary(BinaryOp::And, some, inside), span)?;
        Ok(Val::Opt {
            some,
            inner: Box::new(Val::View(View {
                param: Some(param),
                start,
                step,
                len: n,
            })),
        })
    }

    /// The address of element `i` (a `U32`) of view `v`, and its type (`None` for an empty
    /// view, which has no elements); meaningful only where `i < v.len`.
    fn view_element(
        &mut self,
        v: &View,
        i: Value,
        span: proc_macro2::Span,
    ) -> Result<(Value, Option<S>)> {
        let Some(param) = v.param else {
            let zero = self.constant(Constant::u64(0));
            return Ok((zero, None));
        };
        let elem = self.slice_param(param).0;
        let i = self.cast_value(i, S::U64, span)?;
        let offset = self.def(Op::Binary(BinaryOp::Mul, i, v.step), span)?;
        let index = self.def(Op::Binary(BinaryOp::Add, v.start, offset), span)?;
        Ok((self.element_addr(param, index, elem)?, Some(elem)))
    }

    /// `opt.unwrap_or(fallback)`: a view's element loaded only where it exists; views and
    /// values chosen by the condition.
    fn unwrap_or(
        &mut self,
        some: Value,
        inner: Val,
        fallback: Val,
        span: proc_macro2::Span,
    ) -> Result<Val> {
        match (inner, fallback) {
            (Val::ViewLoad { elem: None, .. }, fallback) => Ok(fallback),
            (
                Val::ViewLoad {
                    addr,
                    elem: Some(elem),
                },
                fallback,
            ) => {
                let fallback = self.materialize(fallback, elem, span)?;
                let var = self.b.var("view_value", elem);
                self.b.begin_block();
                let x = self.def(
                    Op::Load {
                        space: AddressSpace::Global,
                        ty: elem,
                        addr,
                        eviction: cuprum_ir::Eviction::Normal,
                    },
                    span,
                )?;
                self.b.push(Stmt::WriteVar { var, value: x });
                let then = self.b.end_block();
                self.b.begin_block();
                self.b.push(Stmt::WriteVar {
                    var,
                    value: fallback,
                });
                let otherwise = self.b.end_block();
                self.b.push(Stmt::If {
                    cond: some,
                    then,
                    otherwise,
                });
                Ok(Val::Scalar(self.def(Op::ReadVar(var), span)?))
            }
            (Val::View(a), Val::View(b)) => {
                let param = match (a.param, b.param) {
                    (Some(x), Some(y)) if x != y => {
                        return err(
                            span,
                            "choosing between views of two slices is not supported in device \
                             code: keep one view per slice",
                        );
                    }
                    (x, y) => x.or(y),
                };
                let mut pick = |x: Value, y: Value| {
                    self.def(
                        Op::Select {
                            cond: some,
                            if_true: x,
                            if_false: y,
                        },
                        span,
                    )
                };
                Ok(Val::View(View {
                    param,
                    start: pick(a.start, b.start)?,
                    step: pick(a.step, b.step)?,
                    len: pick(a.len, b.len)?,
                }))
            }
            (Val::Scalar(x), fallback) => {
                let ty = self.ty(x);
                let y = self.materialize(fallback, ty, span)?;
                Ok(Val::Scalar(self.def(
                    Op::Select {
                        cond: some,
                        if_true: x,
                        if_false: y,
                    },
                    span,
                )?))
            }
            (inner, _) => err(
                span,
                format!(
                    "`unwrap_or` on an `Option` of {} is not supported in device code: use \
                     `if let Some(x) = ..`",
                    describe(&inner)
                ),
            ),
        }
    }

    /// `if let PATTERN = value { .. } else { .. }` for a value: `Some(x)` on an `Option`,
    /// tuples of such patterns on tuples (`if let (Some(a), Some(b)) = (wa, wb)`).
    pub(super) fn if_let_value(
        &mut self,
        pat: &syn::Pat,
        value: Val,
        i: &syn::ExprIf,
        site: u32,
        span: proc_macro2::Span,
    ) -> Result<Val> {
        let mut binds = Vec::new();
        let cond = self.match_option(pat, value, &mut binds)?;
        let cond = match cond {
            Some(c) => c,
            None => self.constant(Constant::bool(true)),
        };
        self.branches(
            cond,
            |this| {
                let mut scope = Vec::with_capacity(binds.len());
                for (name, v) in binds {
                    let v = this.option_payload(v, span)?;
                    scope.push((name, Binding::Val(v)));
                }
                this.scopes.push(scope);
                let r = this.block(&i.then_branch);
                this.scopes.pop();
                r
            },
            i.else_branch.as_ref().map(|(_, e)| &**e),
            site,
            span,
        )
    }

    /// The condition under which `value` matches `pat` (`None`: always), and the names it
    /// binds.
    fn match_option(
        &mut self,
        pat: &syn::Pat,
        value: Val,
        binds: &mut Vec<(String, Val)>,
    ) -> Result<Option<Value>> {
        match (pat, value) {
            (syn::Pat::TupleStruct(ts), Val::Opt { some, inner })
                if ts.path.is_ident("Some") && ts.elems.len() == 1 =>
            {
                let inner_pat = &ts.elems[0];
                let rest = self.match_option(inner_pat, *inner, binds)?;
                Ok(Some(match rest {
                    Some(r) => self.def(Op::Binary(BinaryOp::And, some, r), pat.span())?,
                    None => some,
                }))
            }
            (syn::Pat::TupleStruct(ts), Val::CasResult { ok, value }) => {
                self.match_cas_result(ts, ok, value, binds)
            }
            (syn::Pat::Tuple(pt), Val::Tuple(items)) if pt.elems.len() == items.len() => {
                let mut all: Option<Value> = None;
                for (p, v) in pt.elems.iter().zip(items) {
                    if let Some(c) = self.match_option(p, v, binds)? {
                        all = Some(match all {
                            Some(a) => self.def(Op::Binary(BinaryOp::And, a, c), pat.span())?,
                            None => c,
                        });
                    }
                }
                Ok(all)
            }
            (syn::Pat::Ident(id), v) if id.by_ref.is_none() && id.subpat.is_none() => {
                binds.push((id.ident.to_string(), v));
                Ok(None)
            }
            (syn::Pat::Wild(_), _) => Ok(None),
            (other, v) => err(
                other.span(),
                format!(
                    "this pattern does not match {} in device code: write `Some(name)`, or a \
                     tuple of such patterns on a tuple of `Option`s",
                    describe(&v)
                ),
            ),
        }
    }

    /// What `Some(x)` binds, where the option is known to hold: a view's element is loaded.
    fn option_payload(&mut self, v: Val, span: proc_macro2::Span) -> Result<Val> {
        match v {
            Val::ViewLoad { elem: None, .. } => err(span, EMPTY_VIEW),
            Val::ViewLoad {
                addr,
                elem: Some(elem),
            } => Ok(Val::Scalar(self.def(
                Op::Load {
                    space: AddressSpace::Global,
                    ty: elem,
                    addr,
                    eviction: cuprum_ir::Eviction::Normal,
                },
                span,
            )?)),
            other => Ok(other),
        }
    }

    /// `for (x, y) in pair` over `row.zip_exact(col)`, and `for x in view.iter()`: a counted
    /// loop whose exit test is its only comparison (the strips were checked when made).
    pub(super) fn view_loop(&mut self, f: &syn::ExprForLoop) -> Result<Option<Val>> {
        let source = match &*f.expr {
            syn::Expr::Path(p) if p.path.get_ident().is_some() => &*f.expr,
            syn::Expr::MethodCall(m) if m.method == "iter" && m.args.is_empty() => {
                match &*m.receiver {
                    r @ syn::Expr::Path(p) if p.path.get_ident().is_some() => r,
                    _ => return Ok(None),
                }
            }
            _ => return Ok(None),
        };
        let views = match self.expr(source)? {
            Val::Zip(a, b) => vec![a, b],
            Val::View(v) => vec![v],
            _ => return Ok(None),
        };
        if f.label.is_some() {
            return err(f.span(), super::control::LABEL_HELP);
        }
        let span = f.span();
        let len = views[0].len;
        let cursor = self.b.var("view_index", S::U32);
        let zero = self.constant(Constant::u32(0));
        let one = self.constant(Constant::u32(1));
        self.b.push(Stmt::WriteVar {
            var: cursor,
            value: zero,
        });
        let site = self.site();
        self.loop_body(|this| {
            let i = this.def(Op::ReadVar(cursor), span)?;
            let go = this.def(Op::Compare(CmpOp::Lt, i, len), span)?;
            this.break_unless(go);
            let next = this.def(Op::Binary(BinaryOp::Add, i, one), span)?;
            this.b.push(Stmt::WriteVar {
                var: cursor,
                value: next,
            });
            let mut items = Vec::with_capacity(views.len());
            for v in &views {
                let (addr, elem) = this.view_element(v, i, span)?;
                let Some(elem) = elem else {
                    return err(span, EMPTY_VIEW);
                };
                items.push(Val::Scalar(this.def(
                    Op::Load {
                        space: AddressSpace::Global,
                        ty: elem,
                        addr,
                        eviction: cuprum_ir::Eviction::Normal,
                    },
                    span,
                )?));
            }
            let value = if items.len() == 1 {
                items.remove(0)
            } else {
                Val::Tuple(items)
            };
            this.scopes.push(Vec::new());
            this.bind_pattern(&f.pat, None, value, site, span, true)?;
            let r = this.block(&f.body);
            this.scopes.pop();
            r.map(|_| ())
        })?;
        Ok(Some(Val::Unit))
    }
}
