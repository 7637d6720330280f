//! Control flow: `if`/`else` (also as a value), `if let` on slice elements, `while`,
//! `loop` and `for` over ranges, all lowered to the IR's structured `If` and `Loop`.

use cuprum_ir::{BinaryOp, CmpOp, Constant, Op, ScalarType as S, SliceAccess, Stmt, Value};
use syn::spanned::Spanned;

use super::*;

/// Why labelled loops are refused, and what to write instead.
pub(super) const LABEL_HELP: &str = "loop labels are not supported in device code yet: move \
     the loops into a helper `fn` and `return` from it (a `return` leaves every loop of the \
     helper), or `break` each loop on a `bool` flag";

impl Lowerer<'_> {
    // ----- control flow -------------------------------------------------------------------

    pub(super) fn if_expr(&mut self, i: &syn::ExprIf) -> Result<Val> {
        if let Some(nested) = let_chain_as_nested_ifs(i) {
            return self.if_expr(&nested);
        }
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
    pub(super) fn branches(
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
        // Where the value goes: made now, so the then-arm can write it before its block closes.
        let needs_value = else_arm.is_some() && !matches!(then_val, Val::Unit);
        // A thread's own index from either arm is the same index (see `own_index_kind`): it
        // is read again after the `if`, and no slot carries it.
        let mut own = super::views::own_index_kind(&then_val);
        let mut slot: Option<Binding> = None;
        if needs_value && !then_done && own.is_none() {
            slot = self.value_slot(&then_val, site, span)?;
            if let Some(s) = &slot {
                self.assign_binding(s, then_val.clone(), span)?;
            }
        }
        let then = self.b.end_block();
        self.b.begin_block();
        let mut else_val = Val::Unit;
        if let Some(e) = else_arm {
            else_val = self.expr(e)?;
            let else_done = self.b.block_terminated() || matches!(else_val, Val::Never);
            own = own.or(super::views::own_index_kind(&else_val));
            if !else_done && needs_value && own.is_none() {
                if slot.is_none() {
                    slot = self.value_slot(&else_val, site, span)?;
                }
                match &slot {
                    Some(s) => self.assign_binding(s, else_val.clone(), span)?,
                    None => {
                        if let Val::Infer(s, _) = &else_val {
                            self.note_union(site, *s);
                        }
                    }
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
        if let Some(kind) = own {
            return self.own_index(kind, span);
        }
        match slot {
            Some(s) => self.read_binding(&s, span),
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

    /// Slots for the elements of a tuple or the fields of a struct; each element gets its own
    /// (fresh) site, so literals there take Rust's defaults.
    fn element_slots(
        &mut self,
        items: &[Val],
        span: proc_macro2::Span,
    ) -> Result<Option<Vec<Binding>>> {
        let mut out = Vec::with_capacity(items.len());
        for item in items {
            let inner = self.site();
            match self.value_slot(item, inner, span)? {
                Some(b) => out.push(b),
                None => return Ok(None),
            }
        }
        Ok(Some(out))
    }

    /// Variables shaped like `v`, to carry a value out of branches. For an untyped literal the
    /// type comes from the site; in the infer run that may still be open (`None`).
    pub(super) fn value_slot(
        &mut self,
        v: &Val,
        site: u32,
        span: proc_macro2::Span,
    ) -> Result<Option<Binding>> {
        let ty = match v {
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
            Val::Tuple(items) => return Ok(self.element_slots(items, span)?.map(Binding::Tuple)),
            a @ Val::Array(_) => return Ok(Some(Binding::Val(self.copy_array(a, span)?))),
            &Val::Ptr {
                addr,
                elem,
                mutable,
                space,
            } => {
                let ty = self.ty(addr);
                return Ok(Some(Binding::Ptr {
                    var: self.b.var("if_pointer", ty),
                    elem,
                    mutable,
                    space,
                }));
            }
            Val::Struct(name, items) => {
                let slots = self.element_slots(items, span)?;
                return Ok(slots.map(|fields| Binding::Struct(name.clone(), fields)));
            }
            other => {
                return err(
                    span,
                    format!(
                        "a branch that yields {} is not supported in device code",
                        describe(other)
                    ),
                );
            }
        };
        Ok(ty.map(|ty| {
            self.note_type(site, ty);
            Binding::Var {
                var: self.b.var("if_value", ty),
                ty,
                mutable: true,
            }
        }))
    }

    /// `if let Some(r) = slice.get_mut(index) { .. } else { .. }` (and `get` on `&[T]`,
    /// `block_result_mut()` on a `DisjointSlice`).
    pub(super) fn if_let(&mut self, l: &syn::ExprLet, i: &syn::ExprIf, site: u32) -> Result<Val> {
        let span = l.span();
        let else_arm = i.else_branch.as_ref().map(|(_, e)| &**e);
        // `if let Some(w) = thread::warp_index()`: lane 0's own index.
        if let syn::Expr::Call(c) = &*l.expr
            && let syn::Expr::Path(p) = &*c.func
            && p.path
                .segments
                .last()
                .is_some_and(|s| s.ident == "warp_index")
            && c.args.is_empty()
        {
            let binding = some_binding(&l.pat)?;
            let (holds, index) = self.warp_index(span)?;
            return self.branches(
                holds,
                |this| {
                    this.scopes
                        .push(vec![(binding, Binding::Val(Val::WarpIndex(index)))]);
                    let r = this.block(&i.then_branch);
                    this.scopes.pop();
                    r
                },
                else_arm,
                site,
                span,
            );
        }
        // Anything but a method call on a slice (`slice.get_mut(i)`, whose element is reached
        // only inside the `if let`) is a value: an `Option` made in every thread (a witness
        // bound earlier, a tuple of them, `matrix.row(r, n)`, `out.tile_thread32(i)`),
        // matched against the pattern (see `views.rs`).
        let receiver = match &*l.expr {
            syn::Expr::MethodCall(m) if self.warp_slot_call(m) => None,
            syn::Expr::MethodCall(m) => Some((m, self.expr(&m.receiver)?)),
            _ => None,
        };
        let value = match (&*l.expr, receiver) {
            (syn::Expr::MethodCall(m), Some((_, Val::Slice(p))))
                if !super::tiles::OPTION_METHODS.contains(&m.method.to_string().as_str()) =>
            {
                Err(p)
            }
            (syn::Expr::MethodCall(m), Some((_, recv))) => Ok(self.value_method_call(m, recv)?),
            (syn::Expr::MethodCall(_), None) => Err(u32::MAX),
            (e, _) => Ok(self.expr(e)?),
        };
        let param = match value {
            Ok(v) => return self.if_let_value(&l.pat, v, i, site, span),
            Err(p) => p,
        };
        let binding = some_binding(&l.pat)?;
        let syn::Expr::MethodCall(m) = &*l.expr else {
            return err(
                l.expr.span(),
                "expected `slice.get_mut(index)` or `slice.get(index)`",
            );
        };
        let then_block = &i.then_branch;
        if param == u32::MAX
            && let Some((cond, slot)) = self.warp_slot(m)?
        {
            return self.branches(
                cond,
                |this| {
                    this.scopes.push(vec![(binding, Binding::Val(slot))]);
                    let r = this.block(then_block);
                    this.scopes.pop();
                    r
                },
                else_arm,
                site,
                span,
            );
        }
        let method = m.method.to_string();
        let access = self.slice_param(param).1;
        let mutable = match method.as_str() {
            "get_mut" | "get_mut_2d" | "get_mut_3d" | "block_result_mut"
                if access == SliceAccess::ReadOnly =>
            {
                return err(m.method.span(), "cannot get a mutable element of a `&[T]`");
            }
            "block_result_mut" if access != SliceAccess::Disjoint => {
                return err(
                    m.method.span(),
                    "`block_result_mut` is a method of `DisjointSlice`",
                );
            }
            "get_mut" | "get_mut_2d" | "get_mut_3d" | "block_result_mut" => true,
            "get" if access == SliceAccess::Disjoint => {
                return err(m.method.span(), super::disjoint::NOT_INDEXED);
            }
            "get" => false,
            _ => {
                return err(
                    m.method.span(),
                    "expected `get_mut(index)`, `get_mut_2d(index, width)`, `get_mut_3d(index, width, height)` or `get(index)`",
                );
            }
        };
        let args: Vec<&syn::Expr> = m.args.iter().collect();
        let (index, cond) = if method == "block_result_mut" {
            self.block_result_element(param, &args, m.span())?
        } else {
            self.slice_element(param, access, &method, &args, m.span())?
        };
        self.branches(
            cond,
            |this| {
                let value = this.slice_element_ref(param, index, mutable, span)?;
                this.scopes.push(vec![(binding, Binding::Val(value))]);
                let r = this.block(then_block);
                this.scopes.pop();
                r
            },
            i.else_branch.as_ref().map(|(_, e)| &**e),
            site,
            span,
        )
    }

    pub(super) fn loop_body(&mut self, body: impl FnOnce(&mut Self) -> Result<()>) -> Result<()> {
        let returns_before = self.frames.last().map(|f| f.loop_returns);
        self.b.begin_block();
        self.loop_depth += 1;
        let r = body(self);
        self.loop_depth -= 1;
        let block = self.b.end_block();
        r?;
        self.b.push(Stmt::Loop { body: block });
        // A helper's `return` inside this loop left it with the call's flag set: leave the
        // enclosing loop too (up to the call's own one-trip loop, which ends the call).
        if let Some(frame) = self.frames.last()
            && returns_before != Some(frame.loop_returns)
            && let Some(flag) = frame.returned
        {
            let returned = self.def(Op::ReadVar(flag), proc_macro2::Span::call_site())?;
            self.when(returned, |this| {
                this.b.push(Stmt::Break);
                Ok(())
            })?;
        }
        Ok(())
    }

    pub(super) fn break_unless(&mut self, cond: Value) {
        self.b.begin_block();
        self.b.push(Stmt::Break);
        let otherwise = self.b.end_block();
        self.b.push(Stmt::If {
            cond,
            then: Default::default(),
            otherwise,
        });
    }

    pub(super) fn while_loop(&mut self, w: &syn::ExprWhile) -> Result<Val> {
        if w.label.is_some() {
            return err(w.span(), LABEL_HELP);
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

    pub(super) fn plain_loop(&mut self, l: &syn::ExprLoop) -> Result<Val> {
        if l.label.is_some() {
            return err(l.span(), LABEL_HELP);
        }
        self.loop_body(|this| this.block(&l.body).map(|_| ()))?;
        // A `loop` without `break` never completes; with one it yields `()`.
        Ok(Val::Unit)
    }

    /// `for i in a..b`, `a..=b`, `(a..b).rev()`, `(a..b).step_by(s)`.
    pub(super) fn for_loop(&mut self, f: &syn::ExprForLoop) -> Result<Val> {
        if let Some(v) = self.phased_loop(f)? {
            return Ok(v);
        }
        if let Some(v) = self.output_loop(f)? {
            return Ok(v);
        }
        if let Some(v) = self.view_loop(f)? {
            return Ok(v);
        }
        let site = self.site();
        let span = f.span();
        if f.label.is_some() {
            return err(span, LABEL_HELP);
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
        // Infer run with bounds that are all literals: the variable's type comes from its uses.
        let infer_var = ty.is_none() && self.inferring();
        let Some(ty) = ty.or(self.inferring().then_some(S::I32)) else {
            return err(span, "cannot infer the type of the loop variable");
        };
        if let Some(t) = Some(ty).filter(|t| !t.is_int()) {
            return err(
                span,
                format!("device `for` loops range over integers, not `{t}`"),
            );
        }
        if let Some(values) = self.unroll_plan(f, range, reversed, inclusive) {
            return self.unrolled(f, name.as_deref(), &values, ty, infer_var, site);
        }
        if !infer_var && let Some(plan) = self.partial_unroll_plan(f, range, reversed, inclusive) {
            return self.unrolled_by_four(f, name.as_deref(), plan, ty, site);
        }
        // (In the infer run with open bounds, placeholders: typing them would decide the
        // variable's type before its uses do.)
        let (start, end) = if infer_var {
            let zero = self.constant(Constant::new(ty, 0));
            (zero, zero)
        } else {
            (
                self.materialize(start, ty, span)?,
                self.materialize(end, ty, span)?,
            )
        };
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
                let v = if infer_var {
                    Val::Infer(site, LitKind::Int)
                } else {
                    Val::Scalar(current)
                };
                this.bind(n.clone(), Binding::Val(v));
            }
            let r = this.block(&f.body);
            this.scopes.pop();
            this.note_type(site, ty);
            r.map(|_| ())
        })?;
        Ok(Val::Unit)
    }
}

/// The name `if let Some(name) = ..` binds (`Some(mut name)` too).
fn some_binding(pat: &syn::Pat) -> Result<String> {
    match pat {
        syn::Pat::TupleStruct(ts) if ts.path.is_ident("Some") && ts.elems.len() == 1 => {
            match ts.elems.first() {
                Some(syn::Pat::Ident(id)) if id.by_ref.is_none() && id.subpat.is_none() => {
                    Ok(id.ident.to_string())
                }
                _ => err(ts.span(), "expected `Some(name)`"),
            }
        }
        other => err(
            other.span(),
            "only `if let Some(x) = ..` (and tuples of such patterns on `Option` values) is \
             supported in device code",
        ),
    }
}

/// Loops with constant bounds and at most this many iterations are unrolled...
const UNROLL_MAX_TRIPS: i128 = 64;
/// ...and longer ones with a multiple of this many iterations are unrolled by it (as nvcc's
/// default unrolling of such loops): a loop over the groups, the body copied per member.
const PARTIAL_UNROLL: i128 = 4;
/// ...when their body, repeated, stays under this many tokens.
const UNROLL_MAX_TOKENS: usize = 6000;

impl Lowerer<'_> {
    /// `(start, step, last)` of a loop over constant bounds with a constant positive step
    /// (`last` the largest value the range allows; below `start` when it is empty).
    fn constant_range(
        &self,
        f: &syn::ExprForLoop,
        range: &syn::ExprRange,
        inclusive: bool,
    ) -> Option<(i128, i128, i128)> {
        let konst = |e: &Option<Box<syn::Expr>>| match e.as_deref().map(|e| self.eval_const(e, 0)) {
            Some(Ok(ConstVal::Int(v))) => Some(v),
            _ => None,
        };
        let (start, end) = (konst(&range.start)?, konst(&range.end)?);
        let step = match &*f.expr {
            syn::Expr::MethodCall(m) if m.method == "step_by" => {
                match m.args.first().map(|e| self.eval_const(e, 0)) {
                    Some(Ok(ConstVal::Int(s))) if s > 0 => s,
                    _ => return None,
                }
            }
            _ => 1,
        };
        Some((start, step, if inclusive { end } else { end - 1 }))
    }

    /// The loop variable's values if the loop should be unrolled: constant bounds and step, a
    /// small trip count and body, and no `break`/`continue` of this loop in the body.
    fn unroll_plan(
        &self,
        f: &syn::ExprForLoop,
        range: &syn::ExprRange,
        reversed: bool,
        inclusive: bool,
    ) -> Option<Vec<i128>> {
        let (start, step, last) = self.constant_range(f, range, inclusive)?;
        if last < start {
            return Some(Vec::new());
        }
        if (last - start) / step + 1 > UNROLL_MAX_TRIPS {
            return None;
        }
        let mut values: Vec<i128> = (0..)
            .map(|k| start + k * step)
            .take_while(|v| *v <= last)
            .collect();
        if reversed {
            values.reverse();
        }
        let tokens = token_count(quote::ToTokens::to_token_stream(&f.body));
        if tokens.saturating_mul(values.len()) > UNROLL_MAX_TOKENS || breaks_this_loop(&f.body) {
            return None;
        }
        Some(values)
    }

    /// `(start, step, trips)` of a loop with constant bounds and step, too long to unroll,
    /// whose trip count is a multiple of [`PARTIAL_UNROLL`] (below 2^32), with a small body
    /// and no `break`/`continue` of this loop: it is unrolled by [`PARTIAL_UNROLL`].
    fn partial_unroll_plan(
        &self,
        f: &syn::ExprForLoop,
        range: &syn::ExprRange,
        reversed: bool,
        inclusive: bool,
    ) -> Option<(i128, i128, i128)> {
        if reversed {
            return None;
        }
        let (start, step, last) = self.constant_range(f, range, inclusive)?;
        let trips = (last - start).checked_div(step)? + 1;
        let tokens = token_count(quote::ToTokens::to_token_stream(&f.body));
        let fits = trips > UNROLL_MAX_TRIPS
            && trips % PARTIAL_UNROLL == 0
            && trips <= i128::from(u32::MAX)
            && tokens.saturating_mul(PARTIAL_UNROLL as usize) <= UNROLL_MAX_TOKENS;
        (fits && !breaks_this_loop(&f.body)).then_some((start, step, trips))
    }

    /// A loop over groups of [`PARTIAL_UNROLL`] iterations (a `U32` group counter), the body
    /// copied once per member with the loop variable `start + (PARTIAL_UNROLL * g + k) *
    /// step`, computed in its own type: every value is one the original loop takes, so
    /// nothing wraps.
    fn unrolled_by_four(
        &mut self,
        f: &syn::ExprForLoop,
        name: Option<&str>,
        (start, step, trips): (i128, i128, i128),
        ty: S,
        site: u32,
    ) -> Result<Val> {
        let span = f.span();
        let groups = (trips / PARTIAL_UNROLL) as u32;
        let counter = self.b.var("unrolled", S::U32);
        let zero = self.constant(Constant::u32(0));
        self.b.push(Stmt::WriteVar {
            var: counter,
            value: zero,
        });
        let (start_v, group_step) = (
            self.constant(int_constant(ty, start, span)?),
            self.constant(int_constant(ty, step * PARTIAL_UNROLL, span)?),
        );
        let (groups_v, one) = (
            self.constant(Constant::u32(groups)),
            self.constant(Constant::u32(1)),
        );
        self.loop_body(|this| {
            let g = this.def(Op::ReadVar(counter), span)?;
            let more = this.def(Op::Compare(CmpOp::Lt, g, groups_v), span)?;
            this.break_unless(more);
            let next = this.def(Op::Binary(BinaryOp::Add, g, one), span)?;
            this.b.push(Stmt::WriteVar {
                var: counter,
                value: next,
            });
            let g = this.cast_value(g, ty, span)?;
            let offset = this.def(Op::Binary(BinaryOp::Mul, g, group_step), span)?;
            let first = this.def(Op::Binary(BinaryOp::Add, start_v, offset), span)?;
            for k in 0..PARTIAL_UNROLL {
                let delta = this.constant(int_constant(ty, k * step, span)?);
                let value = this.def(Op::Binary(BinaryOp::Add, first, delta), span)?;
                this.scopes.push(Vec::new());
                if let Some(n) = name {
                    this.bind(n.to_string(), Binding::Val(Val::Scalar(value)));
                }
                let r = this.block(&f.body);
                this.scopes.pop();
                if matches!(r?, Val::Never) || this.b.block_terminated() {
                    break;
                }
            }
            Ok(())
        })?;
        self.note_type(site, ty);
        Ok(Val::Unit)
    }

    /// The body once per value, the loop variable bound to each as a constant.
    fn unrolled(
        &mut self,
        f: &syn::ExprForLoop,
        name: Option<&str>,
        values: &[i128],
        ty: S,
        infer_var: bool,
        site: u32,
    ) -> Result<Val> {
        for &v in values {
            let bound = if infer_var {
                Val::Infer(site, LitKind::Int)
            } else {
                Val::Scalar(self.constant(int_constant(ty, v, f.span())?))
            };
            self.scopes.push(Vec::new());
            if let Some(n) = name {
                self.bind(n.to_string(), Binding::Val(bound));
            }
            let r = self.block(&f.body);
            self.scopes.pop();
            if matches!(r?, Val::Never) || self.b.block_terminated() {
                break;
            }
        }
        if !infer_var {
            self.note_type(site, ty);
        }
        Ok(Val::Unit)
    }
}

/// `if a && let P = e && c { T } else { E }` (a let chain, stable in edition 2024) as the
/// nested ifs it means, `if a { if let P = e { if c { T } else { E } } else { E } } else { E }`
/// (the else branch copied into each level): each condition is tested only when those before
/// it held, and names a `let` binds are in scope in the conditions after it and in `T`.
/// `None` when the condition is not a chain with a `let` in it.
fn let_chain_as_nested_ifs(i: &syn::ExprIf) -> Option<syn::ExprIf> {
    fn links(e: &syn::Expr, out: &mut Vec<syn::Expr>) {
        match e {
            syn::Expr::Binary(b) if matches!(b.op, syn::BinOp::And(_)) => {
                links(&b.left, out);
                links(&b.right, out);
            }
            other => out.push(other.clone()),
        }
    }
    let mut conds = Vec::new();
    links(&i.cond, &mut conds);
    if conds.len() < 2 || !conds.iter().any(|c| matches!(c, syn::Expr::Let(_))) {
        return None;
    }
    let mut nested: Option<syn::ExprIf> = None;
    for cond in conds.into_iter().rev() {
        let then_branch = match nested.take() {
            None => i.then_branch.clone(),
            Some(inner) => syn::Block {
                brace_token: i.then_branch.brace_token,
                stmts: vec![syn::Stmt::Expr(syn::Expr::If(inner), None)],
            },
        };
        nested = Some(syn::ExprIf {
            attrs: Vec::new(),
            if_token: i.if_token,
            cond: Box::new(cond),
            then_branch,
            else_branch: i.else_branch.clone(),
        });
    }
    nested
}

/// Tokens in a stream, counting inside groups.
fn token_count(ts: proc_macro2::TokenStream) -> usize {
    ts.into_iter()
        .map(|t| match t {
            proc_macro2::TokenTree::Group(g) => 1 + token_count(g.stream()),
            _ => 1,
        })
        .sum()
}

/// Whether `body` has a `break` or `continue` that leaves this loop (not a nested one).
pub(super) fn breaks_this_loop(body: &syn::Block) -> bool {
    use syn::visit::Visit;
    struct Finder(bool);
    impl<'a> Visit<'a> for Finder {
        fn visit_expr_break(&mut self, _: &'a syn::ExprBreak) {
            self.0 = true;
        }
        fn visit_expr_continue(&mut self, _: &'a syn::ExprContinue) {
            self.0 = true;
        }
        // Loops and closures inside have their own breaks.
        fn visit_expr_for_loop(&mut self, _: &'a syn::ExprForLoop) {}
        fn visit_expr_while(&mut self, _: &'a syn::ExprWhile) {}
        fn visit_expr_loop(&mut self, _: &'a syn::ExprLoop) {}
        fn visit_expr_closure(&mut self, _: &'a syn::ExprClosure) {}
    }
    let mut finder = Finder(false);
    finder.visit_block(body);
    finder.0
}

/// Splits `a..b`, `(a..b).rev()`, `(a..b).step_by(s)` (and `.rev().step_by`/`.step_by().rev()`
/// is not supported: its order semantics are easy to get wrong, so it is rejected).
pub(super) fn range_parts(e: &syn::Expr) -> Result<(&syn::ExprRange, bool, Option<&syn::Expr>)> {
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

pub(super) fn unsigned_of(ty: S) -> S {
    match ty {
        S::I8 => S::U8,
        S::I16 => S::U16,
        S::I32 => S::U32,
        S::I64 => S::U64,
        other => other,
    }
}

impl Lowerer<'_> {
    /// `match` on an integer (or `bool`): literal, constant, range and `|` patterns, `_`, a
    /// binding (`n => ..`, `n @ 1..=5 => ..`), and `if` guards; lowered to an `if` chain,
    /// first arm first, as Rust tries them. Exhaustiveness is rustc's to check.
    pub(super) fn match_expr(&mut self, m: &syn::ExprMatch) -> Result<Val> {
        let site = self.site();
        let span = m.span();
        let scrutinee = self.expr(&m.expr)?;
        let scrutinee = self.scalar(scrutinee, m.expr.span())?;
        let ty = self.ty(scrutinee);
        if ty.is_float() {
            return err(
                m.expr.span(),
                "`match` on floats is not supported: compare with `if`",
            );
        }
        let mut result: Option<Binding> = None;
        let mut any_value = false;
        let mut opened = 0usize;
        let mut all_diverge = true;
        for arm in &m.arms {
            let (cond, binding) = self.pattern_test(&arm.pat, scrutinee, ty)?;
            self.scopes.push(Vec::new());
            if let Some(name) = binding {
                self.bind(name, Binding::Val(Val::Scalar(scrutinee)));
            }
            // The guard is evaluated only where the pattern matched.
            let cond = match (&arm.guard, cond) {
                (Some((_, guard)), Some(c)) => {
                    let var = self.b.var("match_guard", S::Bool);
                    let f = self.constant(Constant::bool(false));
                    self.b.push(Stmt::WriteVar { var, value: f });
                    self.b.begin_block();
                    let g = self.boolean(guard)?;
                    self.b.push(Stmt::WriteVar { var, value: g });
                    let then = self.b.end_block();
                    self.b.push(Stmt::If {
                        cond: c,
                        then,
                        otherwise: Default::default(),
                    });
                    Some(self.def(Op::ReadVar(var), span)?)
                }
                (Some((_, guard)), None) => Some(self.boolean(guard)?),
                (None, c) => c,
            };
            if let Some(c) = cond {
                // if c { arm } else { <the remaining arms> }: open the then-block now.
                self.b.begin_block();
                self.lower_arm(arm, site, &mut result, &mut any_value, &mut all_diverge)?;
                let then = self.b.end_block();
                self.scopes.pop();
                self.pending_ifs.push((c, then));
                self.b.begin_block();
                opened += 1;
            } else {
                self.lower_arm(arm, site, &mut result, &mut any_value, &mut all_diverge)?;
                self.scopes.pop();
                break; // an irrefutable arm: later arms are unreachable
            }
        }
        // Close the else-blocks innermost first, wrapping each in its `If`.
        for _ in 0..opened {
            let otherwise = self.b.end_block();
            let Some((cond, then)) = self.pending_ifs.pop() else {
                break;
            };
            self.b.push(Stmt::If {
                cond,
                then,
                otherwise,
            });
        }
        if all_diverge {
            return Ok(Val::Never);
        }
        match result {
            Some(slot) => self.read_binding(&slot, span),
            None if any_value => Ok(Val::Infer(site, LitKind::Int)),
            None => Ok(Val::Unit),
        }
    }

    fn lower_arm(
        &mut self,
        arm: &syn::Arm,
        site: u32,
        result: &mut Option<Binding>,
        any_value: &mut bool,
        all_diverge: &mut bool,
    ) -> Result<()> {
        let v = self.expr(&arm.body)?;
        if matches!(v, Val::Never) || self.b.block_terminated() {
            return Ok(());
        }
        *all_diverge = false;
        if matches!(v, Val::Unit) {
            return Ok(());
        }
        *any_value = true;
        if result.is_none() {
            *result = self.value_slot(&v, site, arm.body.span())?;
        }
        match (&*result, v) {
            (Some(slot), v) => {
                let slot = slot.clone();
                self.assign_binding(&slot, v, arm.body.span())?;
            }
            (None, Val::Infer(s, _)) => self.note_union(site, s),
            _ => {}
        }
        Ok(())
    }

    /// The condition under which `pat` matches `scrutinee` (`None`: always), and the name it
    /// binds the scrutinee to, if any.
    fn pattern_test(
        &mut self,
        pat: &syn::Pat,
        scrutinee: Value,
        ty: S,
    ) -> Result<(Option<Value>, Option<String>)> {
        let span = pat.span();
        match pat {
            syn::Pat::Wild(_) => Ok((None, None)),
            syn::Pat::Ident(id) if id.subpat.is_none() && id.by_ref.is_none() => {
                // A constant of the module is a value pattern; any other name binds.
                if self.info.consts.iter().any(|c| c.ident == id.ident) {
                    let e: syn::Expr = syn::parse_quote!(#id);
                    return Ok((Some(self.pattern_equals(&e, scrutinee, ty)?), None));
                }
                Ok((None, Some(id.ident.to_string())))
            }
            syn::Pat::Ident(id) => match &id.subpat {
                Some((_, sub)) => {
                    let (cond, _) = self.pattern_test(sub, scrutinee, ty)?;
                    Ok((cond, Some(id.ident.to_string())))
                }
                None => err(span, "`ref` patterns are not supported in device code"),
            },
            syn::Pat::Lit(l) => {
                let e = syn::Expr::Lit(l.clone());
                Ok((Some(self.pattern_equals(&e, scrutinee, ty)?), None))
            }
            syn::Pat::Path(p) => {
                let e = syn::Expr::Path(p.clone());
                Ok((Some(self.pattern_equals(&e, scrutinee, ty)?), None))
            }
            syn::Pat::Range(r) => {
                let mut cond: Option<Value> = None;
                if let Some(start) = &r.start {
                    let lo = self.pattern_constant(start, ty)?;
                    cond = Some(self.def(Op::Compare(CmpOp::Ge, scrutinee, lo), span)?);
                }
                if let Some(end) = &r.end {
                    let hi = self.pattern_constant(end, ty)?;
                    let op = match r.limits {
                        syn::RangeLimits::Closed(_) => CmpOp::Le,
                        syn::RangeLimits::HalfOpen(_) => CmpOp::Lt,
                    };
                    let c = self.def(Op::Compare(op, scrutinee, hi), span)?;
                    cond = Some(match cond {
                        Some(lo) => self.def(Op::Binary(BinaryOp::And, lo, c), span)?,
                        None => c,
                    });
                }
                Ok((cond, None))
            }
            syn::Pat::Or(o) => {
                let mut cond: Option<Value> = None;
                for case in &o.cases {
                    let (c, binding) = self.pattern_test(case, scrutinee, ty)?;
                    if binding.is_some() {
                        return err(
                            case.span(),
                            "bindings inside `|` patterns are not supported in device code",
                        );
                    }
                    let Some(c) = c else { return Ok((None, None)) };
                    cond = Some(match cond {
                        Some(prev) => self.def(Op::Binary(BinaryOp::Or, prev, c), span)?,
                        None => c,
                    });
                }
                Ok((cond, None))
            }
            syn::Pat::Paren(p) => self.pattern_test(&p.pat, scrutinee, ty),
            other => err(
                other.span(),
                "unsupported pattern in device code: use literals, constants, ranges, `|`, `_` or a name",
            ),
        }
    }

    fn pattern_constant(&mut self, e: &syn::Expr, ty: S) -> Result<Value> {
        let value = match self.eval_const(e, 0)? {
            ConstVal::Int(i) => int_constant(ty, i, e.span())?,
            ConstVal::Bool(b) if ty == S::Bool => Constant::bool(b),
            _ => return err(e.span(), format!("expected a `{ty}` constant")),
        };
        Ok(self.constant(value))
    }

    fn pattern_equals(&mut self, e: &syn::Expr, scrutinee: Value, ty: S) -> Result<Value> {
        let c = self.pattern_constant(e, ty)?;
        self.def(Op::Compare(CmpOp::Eq, scrutinee, c), e.span())
    }
}
