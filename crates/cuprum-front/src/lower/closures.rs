//! Closures in device code: `let scale = |x: f32| x * k + b;` then `scale(v)`, as a kernel
//! writes a small local function.
//!
//! A closure is inlined where it is called, like a helper. What it captures is read when it
//! is made: every name of its body that is bound in the enclosing scopes (and is not one of
//! its parameters) is evaluated there and kept with the closure. That is Rust's meaning for a
//! `move` closure of `Copy` values, and also for a borrowing one, since the borrow checker
//! forbids changing a variable while a closure borrows it. A closure that assigns to what it
//! captured (an `FnMut`) therefore cannot be followed, and the assignment is refused
//! (the captured names are immutable inside it); so are `return` in its body, and closures
//! stored anywhere but a `let` or called other than by their name.

use std::rc::Rc;

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::visit::Visit;

use super::*;

/// A closure value: its parameters, its body, and the values it captured when it was made.
#[derive(Debug)]
pub(super) struct Closure {
    params: Vec<(String, Option<syn::Type>)>,
    body: syn::Expr,
    captures: Vec<(String, Binding)>,
}

/// The identifiers a closure body names (candidates for capture), whether it has a `return`,
/// and the names it assigns to.
#[derive(Default)]
struct Names(Vec<String>, bool, Vec<(String, Span)>);

/// The name an assignment's left side changes (`n`, `n.x`, `n[i]`).
fn assigned(e: &syn::Expr) -> Option<String> {
    match e {
        syn::Expr::Path(p) => p.path.get_ident().map(|i| i.to_string()),
        syn::Expr::Field(f) => assigned(&f.base),
        syn::Expr::Index(i) => assigned(&i.expr),
        syn::Expr::Paren(p) => assigned(&p.expr),
        _ => None,
    }
}

impl<'ast> Visit<'ast> for Names {
    fn visit_expr_assign(&mut self, a: &'ast syn::ExprAssign) {
        if let Some(n) = assigned(&a.left) {
            self.2.push((n, a.span()));
        }
        syn::visit::visit_expr_assign(self, a);
    }
    fn visit_expr_binary(&mut self, b: &'ast syn::ExprBinary) {
        if ops::compound_op(b.op).is_some()
            && let Some(n) = assigned(&b.left)
        {
            self.2.push((n, b.span()));
        }
        syn::visit::visit_expr_binary(self, b);
    }
    fn visit_expr_path(&mut self, p: &'ast syn::ExprPath) {
        if let Some(id) = p.path.get_ident() {
            self.0.push(id.to_string());
        }
        syn::visit::visit_expr_path(self, p);
    }
    fn visit_expr_return(&mut self, r: &'ast syn::ExprReturn) {
        self.1 = true;
        syn::visit::visit_expr_return(self, r);
    }
    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        // Names inside `println!(..)` and the like.
        if let Ok(args) = m.parse_body_with(
            syn::punctuated::Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated,
        ) {
            for a in &args {
                self.visit_expr(a);
            }
        }
    }
}

impl Lowerer<'_> {
    /// Makes the closure `c`: its captures are read now.
    pub(super) fn closure(&mut self, c: &syn::ExprClosure) -> Result<Val> {
        let mut params = Vec::with_capacity(c.inputs.len());
        for p in &c.inputs {
            let (pat, ty) = match p {
                syn::Pat::Type(t) => (&*t.pat, Some((*t.ty).clone())),
                other => (other, None),
            };
            match pat {
                syn::Pat::Ident(id) if id.by_ref.is_none() && id.subpat.is_none() => {
                    params.push((id.ident.to_string(), ty));
                }
                _ => return err(p.span(), "closure parameters are names: `|x, y: f32| ..`"),
            }
        }
        let mut names = Names::default();
        names.visit_expr(&c.body);
        if names.1 {
            return err(
                c.body.span(),
                "`return` inside a closure is not supported in device code: end the closure \
                 with its value, or write a helper `fn`",
            );
        }
        for (name, span) in &names.2 {
            if !params.iter().any(|(p, _)| p == name) && self.lookup(name).is_some() {
                return err(
                    *span,
                    format!(
                        "this closure changes `{name}`, which it captures: closures that \
                         change what they capture (`FnMut`) are not supported in device code; \
                         write the loop out, or a helper `fn` taking `&mut`"
                    ),
                );
            }
        }
        let mut captures: Vec<(String, Binding)> = Vec::new();
        for name in names.0 {
            if params.iter().any(|(p, _)| *p == name) || captures.iter().any(|(n, _)| *n == name) {
                continue;
            }
            let Some(binding) = self.lookup(&name).cloned() else {
                continue; // a constant, helper or path the body resolves itself
            };
            let value = match binding {
                // A variable's value now (a `move` of a `Copy` value, or a borrow the
                // borrow checker keeps unchanged while the closure lives).
                Binding::Var { var, .. } => {
                    Binding::Val(Val::Scalar(self.def(Op::ReadVar(var), c.span())?))
                }
                other => other,
            };
            captures.push((name, value));
        }
        Ok(Val::Closure(Rc::new(Closure {
            params,
            body: (*c.body).clone(),
            captures,
        })))
    }

    /// Calls closure `f` on `args`, inlined: the body runs in a scope of its captures and
    /// parameters.
    pub(super) fn call_closure(
        &mut self,
        f: &Closure,
        args: &[&syn::Expr],
        span: Span,
    ) -> Result<Val> {
        if args.len() != f.params.len() {
            return err(
                span,
                format!("this closure takes {} arguments", f.params.len()),
            );
        }
        let mut scope = f.captures.clone();
        for ((name, ty), arg) in f.params.iter().zip(args) {
            let v = self.expr(arg)?;
            let v = match ty {
                Some(t) => Val::Scalar(self.materialize(v, self.resolve_scalar(t)?, arg.span())?),
                None => v,
            };
            scope.push((name.clone(), Binding::Val(v)));
        }
        let saved = std::mem::replace(&mut self.scopes, vec![scope]);
        let result = self.expr(&f.body);
        self.scopes = saved;
        result
    }
}
