//! Device helper functions: plain `fn`s of the module, called from kernels (and from each
//! other), inlined at each call.
//!
//! A call evaluates its arguments in the caller's scope, binds them to the parameters in a
//! fresh scope (a helper sees only its parameters and the module's constants), and lowers the
//! body inside a one-trip `Loop`, so that `return value` becomes "write the result, `Break`".
//! Generic helpers are specialized per call: each type parameter takes the type of the
//! argument it was given (or the turbofish's). Recursion is refused.

use std::collections::HashMap;

use cuprum_ir::{ScalarType as S, Stmt};
use proc_macro2::Span;
use syn::spanned::Spanned;

use super::*;

/// How deep helper calls may nest: deeper means recursion, which device code cannot do here.
const MAX_HELPER_DEPTH: usize = 24;

/// One helper call being lowered.
pub(super) struct HelperFrame {
    /// Where the result is written (variables, or a local array); `None` for `()`.
    pub result: Option<Binding>,
    /// `loop_depth` inside the call's one-trip loop: a `return` must be at this depth.
    pub loop_depth: u32,
}

impl Lowerer<'_> {
    /// The scalar type `ty` names, seen through the current helper's type parameters.
    pub(super) fn resolve_scalar(&self, ty: &syn::Type) -> Result<S> {
        if let syn::Type::Path(p) = ty
            && let Some(ident) = p.path.get_ident()
            && let Some(&s) = self.type_params.get(&ident.to_string())
        {
            return Ok(s);
        }
        expect_scalar(ty)
    }

    pub(super) fn find_helper(&self, path: &syn::Path) -> Option<&syn::ItemFn> {
        let segs: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        let name = match segs.as_slice() {
            [name] => name,
            [first, name] if first == "self" || first == "super" => name,
            _ => return None,
        };
        self.info.helpers.iter().find(|f| f.sig.ident == name)
    }

    /// Inlines a call of helper `f`.
    pub(super) fn call_helper(
        &mut self,
        f: &syn::ItemFn,
        path: &syn::Path,
        args: &[&syn::Expr],
        span: Span,
    ) -> Result<Val> {
        let name = f.sig.ident.to_string();
        if self.frames.len() >= MAX_HELPER_DEPTH {
            return err(
                span,
                format!(
                    "`{name}` calls itself (directly or not): recursion is not supported in device code"
                ),
            );
        }
        if f.sig.inputs.len() != args.len() {
            return err(
                span,
                format!("`{name}` takes {} arguments", f.sig.inputs.len()),
            );
        }
        let mut values = Vec::with_capacity(args.len());
        for a in args {
            values.push(self.expr(a)?);
        }
        let type_params = self.infer_type_params(f, path, &values, span)?;

        // The helper runs in its own scope, with its own type parameters.
        let saved_scopes = std::mem::replace(&mut self.scopes, vec![Vec::new()]);
        let saved_types = std::mem::replace(&mut self.type_params, type_params);
        let result = self.inline_body(f, values, span);
        self.scopes = saved_scopes;
        self.type_params = saved_types;
        result
    }

    fn inline_body(&mut self, f: &syn::ItemFn, values: Vec<Val>, span: Span) -> Result<Val> {
        for (input, value) in f.sig.inputs.iter().zip(values) {
            let syn::FnArg::Typed(pt) = input else {
                return err(input.span(), "device helpers cannot take `self`");
            };
            self.bind_helper_param(pt, value)?;
        }
        let result = match &f.sig.output {
            syn::ReturnType::Default => None,
            syn::ReturnType::Type(_, ty) => {
                Some(self.result_slot(&format!("{}_result", f.sig.ident), ty)?)
            }
        };
        self.b.begin_block();
        self.loop_depth += 1;
        self.frames.push(HelperFrame {
            result: result.clone(),
            loop_depth: self.loop_depth,
        });
        let body = self.block(&f.block);
        self.frames.pop();
        self.loop_depth -= 1;
        let tail = match body {
            Ok(v) => v,
            Err(e) => {
                self.b.end_block();
                return Err(e);
            }
        };
        if !matches!(tail, Val::Never) && !self.b.block_terminated() {
            if let Some(slot) = &result {
                self.assign_binding(slot, tail, f.block.span())?;
            }
            self.b.push(Stmt::Break);
        }
        let body = self.b.end_block();
        self.b.push(Stmt::Loop { body });
        match result {
            Some(slot) => self.read_binding(&slot, span),
            None => Ok(Val::Unit),
        }
    }

    /// Variables (or a local array) shaped like the return type `ty`.
    fn result_slot(&mut self, name: &str, ty: &syn::Type) -> Result<Binding> {
        match ty {
            syn::Type::Tuple(t) => {
                let mut items = Vec::with_capacity(t.elems.len());
                for (k, elem) in t.elems.iter().enumerate() {
                    items.push(self.result_slot(&format!("{name}.{k}"), elem)?);
                }
                Ok(Binding::Tuple(items))
            }
            syn::Type::Array(_) => {
                let Some((elem, dims)) = self.array_type(ty)? else {
                    return err(ty.span(), "expected an array type");
                };
                let what = format!("the result of `{}`", name.trim_end_matches("_result"));
                let array = self.new_local_array(name, elem, dims, None, ty.span(), what)?;
                Ok(Binding::Val(Val::Array(array)))
            }
            other if crate::types::struct_named(other, &self.info.structs).is_some() => {
                let Some(def) = crate::types::struct_named(other, &self.info.structs).cloned()
                else {
                    return err(other.span(), "unknown struct");
                };
                let mut items = Vec::new();
                for field in &def.fields {
                    let fname = field
                        .ident
                        .as_ref()
                        .map(|i| i.to_string())
                        .unwrap_or_default();
                    items.push(self.result_slot(&format!("{name}.{fname}"), &field.ty)?);
                }
                Ok(Binding::Struct(def.ident.to_string(), items))
            }
            other => {
                let ty = self.resolve_scalar(other).map_err(|e| {
                    syn::Error::new(
                        e.span(),
                        "device helpers return scalars, tuples, arrays or structs of the module",
                    )
                })?;
                Ok(Binding::Var {
                    var: self.b.var(name, ty),
                    ty,
                    mutable: true,
                })
            }
        }
    }

    fn bind_helper_param(&mut self, pt: &syn::PatType, value: Val) -> Result<()> {
        // References to device data pass through: slices, shared arrays, atomic slices.
        if let syn::Type::Reference(_) = &*pt.ty {
            let v = match value {
                v @ (Val::Slice(_) | Val::Shared { .. } | Val::Atomic(_)) => v,
                other => {
                    let found = describe(&other);
                    return err(
                        pt.ty.span(),
                        format!("expected a slice or shared array here, found {found}"),
                    );
                }
            };
            if let syn::Pat::Ident(id) = &*pt.pat {
                self.bind(id.ident.to_string(), Binding::Val(v));
            }
            return Ok(());
        }
        // Everything else binds as `let` does: arrays copied, aggregates taken apart,
        // scalars converted to the declared type, `mut` parameters made variables.
        let site = self.site();
        self.bind_pattern(&pt.pat, Some(&pt.ty), value, site, pt.span(), false)
    }

    /// The type each generic parameter of `f` takes at this call.
    fn infer_type_params(
        &mut self,
        f: &syn::ItemFn,
        path: &syn::Path,
        values: &[Val],
        span: Span,
    ) -> Result<HashMap<String, S>> {
        let mut out = HashMap::new();
        let generics: Vec<String> = f
            .sig
            .generics
            .params
            .iter()
            .map(|g| match g {
                syn::GenericParam::Type(t) => Ok(t.ident.to_string()),
                other => err(other.span(), "device helpers may have type parameters only (no const or lifetime parameters yet)"),
            })
            .collect::<Result<_>>()?;
        if generics.is_empty() {
            return Ok(out);
        }
        // An explicit turbofish fixes the types in order.
        if let Some(syn::PathArguments::AngleBracketed(a)) =
            path.segments.last().map(|s| &s.arguments)
        {
            for (name, arg) in generics.iter().zip(&a.args) {
                if let syn::GenericArgument::Type(t) = arg {
                    out.insert(name.clone(), self.resolve_scalar(t)?);
                }
            }
        }
        let mut literal_kind: HashMap<String, LitKind> = HashMap::new();
        let mut from_open: HashMap<String, S> = HashMap::new();
        for (input, value) in f.sig.inputs.iter().zip(values) {
            let syn::FnArg::Typed(pt) = input else {
                continue;
            };
            let syn::Type::Path(p) = &*pt.ty else {
                continue;
            };
            let Some(ident) = p.path.get_ident().map(|i| i.to_string()) else {
                continue;
            };
            if !generics.contains(&ident) || out.contains_key(&ident) {
                continue;
            }
            match value {
                Val::Scalar(x) => {
                    out.insert(ident, self.ty(*x));
                }
                Val::Int(_) => {
                    literal_kind.entry(ident).or_insert(LitKind::Int);
                }
                Val::Float(_) => {
                    literal_kind.entry(ident).or_insert(LitKind::Float);
                }
                Val::Infer(site, kind) => {
                    // Weaker than a typed argument: `add(acc, x[i])` with `acc` still open
                    // takes `T` from `x[i]`.
                    let ty = self.solved(*site).unwrap_or(kind.default_type());
                    from_open.entry(ident).or_insert(ty);
                }
                _ => {}
            }
        }
        for name in &generics {
            if !out.contains_key(name) {
                if let Some(&ty) = from_open.get(name) {
                    out.insert(name.clone(), ty);
                    continue;
                }
                match literal_kind.get(name) {
                    Some(k) => {
                        out.insert(name.clone(), k.default_type());
                    }
                    None => {
                        return err(
                            span,
                            format!(
                                "cannot infer the type parameter `{name}` of `{}`: name it with a turbofish",
                                f.sig.ident
                            ),
                        );
                    }
                }
            }
        }
        Ok(out)
    }
}
