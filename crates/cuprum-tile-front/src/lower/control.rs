//! Control flow, as SSA over Rust's structured blocks: `if`/`else` (as statements and as
//! values), `for` over integer ranges (`a..b`, `a..=b`, `(a..b).step_by(s)`), `while`,
//! `loop`, `break` (in `for` loops too, which cutile refuses), `continue` and `return`.
//!
//! A `let mut` variable assigned in an `if` becomes a result of the IR's `If`: each branch
//! yields its value of the variable. One assigned in a loop body is carried: the loop takes
//! its value before the loop, the body yields its next value (as do `continue` and `break`),
//! and the loop's results are its value after the loop. Which variables a loop carries is
//! read from its body (every variable assigned in it) before the body is lowered.

use std::collections::HashSet;

use cuprum_ir::{BinaryOp, ScalarType, UnaryOp};
use cuprum_tile_ir::{Block, Elem, Op, Stmt, TileType, TileValue};
use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::visit::Visit;

use super::*;

/// The names a block assigns (`x = ..`, `x += ..`), anywhere in it.
pub(super) fn assigned_names(node: &syn::Block) -> HashSet<String> {
    struct Finder(HashSet<String>);
    impl<'ast> Visit<'ast> for Finder {
        fn visit_expr_assign(&mut self, a: &'ast syn::ExprAssign) {
            if let syn::Expr::Path(p) = &*a.left
                && let Some(id) = p.path.get_ident()
            {
                self.0.insert(id.to_string());
            }
            syn::visit::visit_expr_assign(self, a);
        }
        fn visit_expr_binary(&mut self, b: &'ast syn::ExprBinary) {
            let compound = !matches!(
                b.op,
                syn::BinOp::Add(_)
                    | syn::BinOp::Sub(_)
                    | syn::BinOp::Mul(_)
                    | syn::BinOp::Div(_)
                    | syn::BinOp::Rem(_)
                    | syn::BinOp::And(_)
                    | syn::BinOp::Or(_)
                    | syn::BinOp::BitXor(_)
                    | syn::BinOp::BitAnd(_)
                    | syn::BinOp::BitOr(_)
                    | syn::BinOp::Shl(_)
                    | syn::BinOp::Shr(_)
                    | syn::BinOp::Eq(_)
                    | syn::BinOp::Lt(_)
                    | syn::BinOp::Le(_)
                    | syn::BinOp::Ne(_)
                    | syn::BinOp::Ge(_)
                    | syn::BinOp::Gt(_)
            );
            if compound
                && let syn::Expr::Path(p) = &*b.left
                && let Some(id) = p.path.get_ident()
            {
                self.0.insert(id.to_string());
            }
            syn::visit::visit_expr_binary(self, b);
        }
    }
    let mut f = Finder(HashSet::new());
    f.visit_block(node);
    f.0
}

/// How a branch of an `if` ended.
struct Branch {
    block: Block,
    /// The variables' values at its end.
    env: Vec<Val>,
    /// Its value (the `if`'s value).
    value: Val,
    /// Whether control leaves it (its block ends in a terminator, or it never finishes).
    leaves: bool,
}

impl Lowerer<'_> {
    pub(super) fn if_expr(&mut self, e: &syn::ExprIf, expect: &Ty) -> Result<Val> {
        let span = e.span();
        let cond = self.expr(&e.cond, &Ty::Scalar(Elem::Known(ScalarType::Bool)))?;
        // A condition known at compile time (`if FLAG > 0` in an inlined helper, say)
        // chooses its branch here.
        if let Val::Lit(l, _) = &cond {
            let taken = l.constant(ScalarType::Bool, e.cond.span())?.bits != 0;
            return if taken {
                self.block(&e.then_branch, expect)
            } else {
                match &e.else_branch {
                    Some((_, other)) => self.expr(other, expect),
                    None => Ok(Val::Unit),
                }
            };
        }
        let cond = self.tile(cond, e.cond.span())?;
        self.scalar_bool(cond, e.cond.span())?;
        let before = self.snapshot();

        self.b.begin_block();
        let value = self.block(&e.then_branch, expect)?;
        let then = self.end_branch(value);
        self.restore(&before);

        self.b.begin_block();
        let value = match &e.else_branch {
            Some((_, other)) => self.expr(other, expect)?,
            None => Val::Unit,
        };
        let otherwise = self.end_branch(value);
        self.restore(&before);

        let mut branches = [then, otherwise];
        let results = self.merge(&before, &mut branches, span)?;
        let [then, otherwise] = branches;
        let leaves = then.leaves && otherwise.leaves;
        self.b.push(Stmt::If {
            cond,
            then: then.block,
            otherwise: otherwise.block,
            results: results.iter().map(|(_, v)| *v).collect(),
        });
        let mut value = Val::Unit;
        for (slot, v) in results {
            match slot {
                Slot::Value => value = Val::Tile(v),
                Slot::Var(flat) => {
                    if let Some(b) = self.binding_mut(flat) {
                        b.val = Val::Tile(v);
                    }
                }
            }
        }
        if leaves {
            self.unreachable = true;
            return Ok(Val::Never);
        }
        // A value both branches give as the same literal stays a literal.
        if let (Val::Lit(a, _), Val::Lit(b, _)) = (&then.value, &otherwise.value)
            && a == b
        {
            return Ok(then.value);
        }
        Ok(value)
    }

    fn end_branch(&mut self, value: Val) -> Branch {
        let leaves = self.unreachable || value == Val::Never;
        self.unreachable = false;
        let env = self.snapshot();
        let block = self.b.end_block(Vec::new());
        Branch {
            block,
            env,
            value,
            leaves,
        }
    }

    /// The results of an `if` whose branches ended as `branches`: the value (if the `if` has
    /// one) and every variable some branch changed; each branch's block gets its yields.
    fn merge(
        &mut self,
        before: &[Val],
        branches: &mut [Branch; 2],
        span: Span,
    ) -> Result<Vec<(Slot, TileValue)>> {
        let mut slots: Vec<(Slot, [Val; 2])> = Vec::new();
        let has_value = branches
            .iter()
            .any(|b| !matches!(b.value, Val::Unit | Val::Never));
        if has_value {
            let both_lit = matches!(
                (&branches[0].value, &branches[1].value),
                (Val::Lit(a, _), Val::Lit(b, _)) if a == b
            );
            if !both_lit {
                slots.push((
                    Slot::Value,
                    [branches[0].value.clone(), branches[1].value.clone()],
                ));
            }
        }
        for (flat, old) in before.iter().enumerate() {
            let vals = [branches[0].env[flat].clone(), branches[1].env[flat].clone()];
            let changed = branches
                .iter()
                .zip(&vals)
                .any(|(b, v)| !b.leaves && v != old);
            if changed {
                slots.push((Slot::Var(flat), vals));
            }
        }
        let mut results = Vec::new();
        for (slot, vals) in slots {
            let ty = self.merged_type(&slot, &vals, branches, span)?;
            for (branch, v) in branches.iter_mut().zip(&vals) {
                if branch.block.stmts.last().is_some_and(Stmt::is_terminator) {
                    continue;
                }
                let y = self.yield_value(&mut branch.block, v, &ty, branch.leaves, span)?;
                branch.block.yields.push(y);
            }
            results.push((slot, self.b.value(ty)));
        }
        Ok(results)
    }

    /// The type of an `if` result: the tile type some branch that finishes gives it, or a
    /// literal's own (or learnt, or default) type when all give literals.
    fn merged_type(
        &mut self,
        slot: &Slot,
        vals: &[Val; 2],
        branches: &[Branch; 2],
        span: Span,
    ) -> Result<TileType> {
        let mut found: Option<TileType> = None;
        for (b, v) in branches.iter().zip(vals) {
            if b.leaves {
                continue;
            }
            match v {
                Val::Tile(t) => {
                    let t = self.ty(*t);
                    if let Some(f) = &found
                        && *f != t
                    {
                        let what = match slot {
                            Slot::Value => "the branches of this `if` give".to_string(),
                            Slot::Var(flat) => format!(
                                "the branches of this `if` leave `{}` as",
                                self.binding(*flat)
                                    .map(|b| b.name.clone())
                                    .unwrap_or_default()
                            ),
                        };
                        return err(
                            span,
                            format!("{what} `{}` and `{}`", self.show(f), self.show(&t)),
                        );
                    }
                    found = Some(t);
                }
                Val::Lit(..) | Val::Never => {}
                other => {
                    return err(
                        span,
                        format!(
                            "an `if` cannot choose between values that are {}",
                            other.kind()
                        ),
                    );
                }
            }
        }
        if let Some(t) = found {
            return Ok(t);
        }
        for v in vals {
            if let Val::Lit(l, o) = v {
                let t = match o.and_then(|o| self.hints.get(o)) {
                    Some(t) if l.ty.is_none() => t,
                    _ => l.default_type(),
                };
                return Ok(TileType::scalar(t));
            }
        }
        err(span, "this `if` gives no value in any branch that finishes")
    }

    /// `v` as a value of type `ty` yielded by a closed branch block (a literal is defined
    /// there; a branch that never finishes yields a placeholder its block never reaches).
    fn yield_value(
        &mut self,
        block: &mut Block,
        v: &Val,
        ty: &TileType,
        leaves: bool,
        span: Span,
    ) -> Result<TileValue> {
        match v {
            Val::Tile(t) if self.ty(*t) == *ty => Ok(*t),
            Val::Lit(l, o) => {
                if let (Some(o), Elem::Known(t)) = (o, ty.elem) {
                    self.hints.learn(*o, t);
                }
                let value = l.literal(ty.elem, span)?;
                Ok(push_def(
                    &mut self.b,
                    block,
                    ty.clone(),
                    Op::Const {
                        value,
                        elem: ty.elem,
                        shape: ty.shape.clone(),
                    },
                ))
            }
            _ if leaves => Ok(push_def(
                &mut self.b,
                block,
                ty.clone(),
                Op::Const {
                    value: zero_literal(ty.elem),
                    elem: ty.elem,
                    shape: ty.shape.clone(),
                },
            )),
            other => err(
                span,
                format!("this `if` gives {} in one branch", other.kind()),
            ),
        }
    }

    // ---- loops ------------------------------------------------------------------------

    /// The variables a loop body carries: the visible `let mut` variables it assigns, as
    /// tiles of their types (a literal one takes its learnt or default type here).
    pub(super) fn carried(
        &mut self,
        assigned: &HashSet<String>,
        span: Span,
    ) -> Result<(Vec<usize>, Vec<TileValue>)> {
        let mut flats = Vec::new();
        let mut inits = Vec::new();
        let mut names: Vec<&String> = assigned.iter().collect();
        names.sort();
        for name in names {
            let Some(flat) = self.lookup(name) else {
                continue;
            };
            let Some(b) = self.binding(flat).cloned() else {
                continue;
            };
            if !b.mutable {
                continue;
            }
            let init = match b.val {
                Val::Tile(t) => t,
                Val::Lit(l, o) => self.materialize(&l, o, span)?,
                other => {
                    return err(
                        span,
                        format!(
                            "`{name}` holds {} and is assigned in this loop; only tiles and scalars can change in a loop",
                            other.kind()
                        ),
                    );
                }
            };
            flats.push(flat);
            inits.push(init);
        }
        Ok((flats, inits))
    }

    /// Fresh loop arguments for `inits`, bound to the carried variables.
    pub(super) fn enter_loop(
        &mut self,
        flats: &[usize],
        inits: &[TileValue],
    ) -> (Vec<TileValue>, Vec<TileType>) {
        let types: Vec<TileType> = inits.iter().map(|v| self.ty(*v)).collect();
        let args: Vec<TileValue> = types.iter().map(|t| self.b.value(t.clone())).collect();
        for ((flat, arg), init) in flats.iter().zip(&args).zip(inits) {
            self.hints.inherit(*init, *arg);
            if let Some(b) = self.binding_mut(*flat) {
                b.val = Val::Tile(*arg);
            }
        }
        (args, types)
    }

    /// The current values of the innermost loop's carried variables (for its yields, a
    /// `continue` or a `break`).
    fn carried_values(&mut self, span: Span) -> Result<Vec<TileValue>> {
        let Some(ctx) = self.frame.loops.last() else {
            return err(span, "`break` and `continue` belong inside a loop");
        };
        let pairs: Vec<(usize, TileType)> = ctx
            .carried
            .iter()
            .copied()
            .zip(ctx.types.iter().cloned())
            .collect();
        let mut out = Vec::with_capacity(pairs.len());
        for (flat, ty) in pairs {
            let v = self
                .binding(flat)
                .map(|b| b.val.clone())
                .unwrap_or(Val::Unit);
            let t = match v {
                Val::Tile(t) => t,
                Val::Lit(l, _) => self.constant(&l, ty.elem, ty.shape.clone(), span)?,
                other => return err(span, format!("a loop variable holds {}", other.kind())),
            };
            out.push(t);
        }
        Ok(out)
    }

    /// Lowers a loop body into the open block and closes it with its yields.
    pub(super) fn loop_body(
        &mut self,
        body: &syn::Block,
        flats: Vec<usize>,
        types: Vec<TileType>,
    ) -> Result<Block> {
        self.frame.loops.push(LoopCtx {
            carried: flats,
            types,
        });
        let r = self.block(body, &Ty::Infer);
        let yields = match r {
            Ok(Val::Unit | Val::Never) => {
                if self.b.block_ended() {
                    Ok(Vec::new())
                } else {
                    self.carried_values(body.span())
                }
            }
            Ok(other) => err(
                body.span(),
                format!("a loop body ends with {}; add `;`", other.kind()),
            ),
            Err(e) => Err(e),
        };
        self.frame.loops.pop();
        self.unreachable = false;
        let yields = yields?;
        Ok(self.b.end_block(yields))
    }

    pub(super) fn finish_loop(&mut self, flats: &[usize], types: &[TileType]) -> Vec<TileValue> {
        let results: Vec<TileValue> = types.iter().map(|t| self.b.value(t.clone())).collect();
        for (flat, r) in flats.iter().zip(&results) {
            if let Some(b) = self.binding_mut(*flat) {
                b.val = Val::Tile(*r);
            }
        }
        results
    }

    pub(super) fn for_loop(&mut self, f: &syn::ExprForLoop) -> Result<Val> {
        let span = f.span();
        if let Some(l) = &f.label {
            return err(
                l.span(),
                "labeled loops are not supported in tile kernels yet",
            );
        }
        // `for idx in z.iter_indices()`: a loop over a mapped output's tiles.
        if let syn::Expr::MethodCall(m) = &*f.expr
            && m.method == "iter_indices"
            && m.args.is_empty()
        {
            return match self.expr(&m.receiver, &Ty::Infer)? {
                Val::Mapped { tensor, map, .. } => self.mapped_loop(f, tensor, map),
                other => err(
                    m.receiver.span(),
                    format!(
                        "`iter_indices()` iterates a `MappedPartitionMut`, not {}",
                        other.kind()
                    ),
                ),
            };
        }
        let (range, step_expr) = match &*f.expr {
            syn::Expr::MethodCall(m) if m.method == "step_by" && m.args.len() == 1 => {
                (strip_parens(&m.receiver), m.args.first())
            }
            other => (strip_parens(other), None),
        };
        let syn::Expr::Range(range) = range else {
            return err(
                f.expr.span(),
                "a `for` loop in a tile kernel runs over an integer range: `a..b`, `a..=b` or `(a..b).step_by(s)`",
            );
        };
        let (Some(start_e), Some(end_e)) = (&range.start, &range.end) else {
            return err(range.span(), "a loop range needs both bounds: `a..b`");
        };
        let start = self.expr(start_e, &Ty::Infer)?;
        let end = self.expr(end_e, &Ty::Infer)?;
        let step = match step_expr {
            Some(s) => Some((self.expr(s, &Ty::Infer)?, s.span())),
            None => None,
        };
        // The counter's type: the bounds' (a typed bound types the other); between two
        // untyped literals, what a use of the counter teaches (as a `let`'s literal), else
        // `i32`.
        let typed = [&start, &end].into_iter().find_map(|v| match v {
            Val::Tile(t) => Some(self.ty(*t).elem),
            Val::Lit(l, _) => l.ty.map(Elem::Known),
            _ => None,
        });
        let literal_counter = match typed {
            Some(_) => None,
            None => Some(self.hints.next_let()),
        };
        let ty = typed
            .or_else(|| {
                literal_counter
                    .and_then(|id| self.hints.get(id))
                    .map(Elem::Known)
            })
            .unwrap_or(Elem::Known(ScalarType::I32));
        match ty {
            Elem::Known(t) if t.is_int() => {}
            _ => {
                return err(
                    range.span(),
                    format!(
                        "a loop counter is an integer, not `{}`",
                        crate::types::show_elem(self.kernel(), ty)
                    ),
                );
            }
        }
        let start = self.tile_of(start, ty, start_e.span())?;
        let mut end = self.tile_of(end, ty, end_e.span())?;
        for (v, e) in [(start, start_e), (end, end_e)] {
            if !self.ty(v).shape.is_empty() {
                return err(e.span(), "a loop bound is a scalar");
            }
        }
        if matches!(range.limits, syn::RangeLimits::Closed(_)) {
            let one = self.constant(&Lit::int(1), ty, Vec::new(), span)?;
            end = self.def(Op::Binary(BinaryOp::Add, end, one), span)?;
        }
        let step = match step {
            None => self.constant(&Lit::int(1), ty, Vec::new(), span)?,
            Some((Val::Lit(l, _), s)) => {
                if l.as_int().is_some_and(|v| v <= 0) {
                    return err(s, "`step_by` takes a positive step");
                }
                let l = match l.ty {
                    // `step_by` takes a `usize`; the counter's type is used.
                    Some(_) => Lit::int(l.as_int().unwrap_or(1)),
                    None => l,
                };
                self.constant(&l, ty, Vec::new(), s)?
            }
            Some((other, s)) => {
                let t = self.tile(other, s)?;
                if !self.ty(t).shape.is_empty() {
                    return err(s, "a loop step is a scalar");
                }
                self.convert(t, ty, s)?
            }
        };
        let (flats, inits) = self.carried(&assigned_names(&f.body), span)?;
        let counter_ty = TileType {
            elem: ty,
            shape: Vec::new(),
        };
        let counter = self.b.value(counter_ty);
        if let Some(id) = literal_counter {
            self.hints.defaulted(counter, id);
        }
        let before_loop = self.frame.scopes.len();
        let (args, types) = self.enter_loop(&flats, &inits);
        self.b.begin_block();
        self.frame.scopes.push(Vec::new());
        let bound = self.bind_loop_pattern(&f.pat, counter);
        let body = bound.and_then(|()| self.loop_body(&f.body, flats.clone(), types.clone()));
        self.frame.scopes.truncate(before_loop);
        let body = body?;
        let results = self.finish_loop(&flats, &types);
        self.b.push(Stmt::For {
            counter,
            start,
            end,
            step,
            args,
            inits,
            body,
            results,
        });
        Ok(Val::Unit)
    }

    fn bind_loop_pattern(&mut self, pat: &syn::Pat, counter: TileValue) -> Result<()> {
        match pat {
            syn::Pat::Ident(i) if i.by_ref.is_none() && i.subpat.is_none() => {
                self.bind(
                    &i.ident.to_string(),
                    Val::Tile(counter),
                    i.mutability.is_some(),
                );
                Ok(())
            }
            syn::Pat::Wild(_) => Ok(()),
            other => err(other.span(), "a loop variable is a plain name"),
        }
    }

    pub(super) fn while_loop(&mut self, w: &syn::ExprWhile) -> Result<Val> {
        let span = w.span();
        if let Some(l) = &w.label {
            return err(
                l.span(),
                "labeled loops are not supported in tile kernels yet",
            );
        }
        let (flats, inits) = self.carried(&assigned_names(&w.body), span)?;
        let (args, types) = self.enter_loop(&flats, &inits);
        self.b.begin_block();
        self.frame.loops.push(LoopCtx {
            carried: flats.clone(),
            types: types.clone(),
        });
        let exit = self.while_exit(&w.cond);
        self.frame.loops.pop();
        if let Err(e) = exit {
            self.b.end_block(Vec::new());
            return Err(e);
        }
        let body = self.loop_body(&w.body, flats.clone(), types.clone())?;
        let results = self.finish_loop(&flats, &types);
        self.b.push(Stmt::Loop {
            args,
            inits,
            body,
            results,
        });
        Ok(Val::Unit)
    }

    /// `if !cond { break }` at the top of a `while` loop's body.
    fn while_exit(&mut self, cond: &syn::Expr) -> Result<()> {
        let c = self.expr(cond, &Ty::Scalar(Elem::Known(ScalarType::Bool)))?;
        if let Val::Lit(l, _) = &c
            && l.constant(ScalarType::Bool, cond.span())?.bits != 0
        {
            return Ok(());
        }
        let c = self.tile(c, cond.span())?;
        self.scalar_bool(c, cond.span())?;
        let stop = self.def(Op::Unary(UnaryOp::Not, c), cond.span())?;
        let values = self.carried_values(cond.span())?;
        self.b.begin_block();
        self.b.push(Stmt::Break { values });
        let then = self.b.end_block(Vec::new());
        self.b.push(Stmt::If {
            cond: stop,
            then,
            otherwise: Block::default(),
            results: Vec::new(),
        });
        Ok(())
    }

    pub(super) fn loop_expr(&mut self, l: &syn::ExprLoop) -> Result<Val> {
        let span = l.span();
        if let Some(label) = &l.label {
            return err(
                label.span(),
                "labeled loops are not supported in tile kernels yet",
            );
        }
        let (flats, inits) = self.carried(&assigned_names(&l.body), span)?;
        let (args, types) = self.enter_loop(&flats, &inits);
        self.b.begin_block();
        let body = self.loop_body(&l.body, flats.clone(), types.clone())?;
        let results = self.finish_loop(&flats, &types);
        self.b.push(Stmt::Loop {
            args,
            inits,
            body,
            results,
        });
        Ok(Val::Unit)
    }

    pub(super) fn break_expr(&mut self, b: &syn::ExprBreak) -> Result<Val> {
        if let Some(l) = &b.label {
            return err(
                l.span(),
                "labeled breaks are not supported in tile kernels yet",
            );
        }
        if let Some(v) = &b.expr {
            return err(
                v.span(),
                "`break` with a value is not supported in tile kernels; assign a `let mut` variable instead",
            );
        }
        let values = self.carried_values(b.span())?;
        self.b.push(Stmt::Break { values });
        self.unreachable = true;
        Ok(Val::Never)
    }

    pub(super) fn continue_expr(&mut self, c: &syn::ExprContinue) -> Result<Val> {
        if let Some(l) = &c.label {
            return err(
                l.span(),
                "labeled `continue` is not supported in tile kernels yet",
            );
        }
        let values = self.carried_values(c.span())?;
        self.b.push(Stmt::Continue { values });
        self.unreachable = true;
        Ok(Val::Never)
    }

    pub(super) fn return_expr(&mut self, r: &syn::ExprReturn) -> Result<Val> {
        if self.in_combiner > 0 {
            return err(
                r.span(),
                "a `return` cannot leave the combiner of `reduce`; the closure's value is its result",
            );
        }
        if let Some(helper) = &self.frame.helper {
            return err(
                r.span(),
                format!(
                    "`{helper}` is inlined, and a `return` before its end is not supported yet; end it with its value (or `return x;` as its last statement)"
                ),
            );
        }
        if let Some(v) = &r.expr {
            return err(
                v.span(),
                "a tile entry returns nothing; store results instead",
            );
        }
        self.b.push(Stmt::Return);
        self.unreachable = true;
        Ok(Val::Never)
    }
}

/// What an `if` result defines: the `if`'s value, or a variable (flat binding index).
#[derive(Clone, Copy, Debug)]
enum Slot {
    Value,
    Var(usize),
}

fn strip_parens(e: &syn::Expr) -> &syn::Expr {
    match e {
        syn::Expr::Paren(p) => strip_parens(&p.expr),
        syn::Expr::Group(g) => strip_parens(&g.expr),
        other => other,
    }
}
