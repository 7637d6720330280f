//! The module's own functions (device helpers), inlined at every call.
//!
//! A generic helper is specialized by its call: its type and const parameters are bound by
//! matching its parameter types against the arguments (`x: Tile<f32, S>` given a
//! `[BM, BN]` tile binds `S`; `{ [M, N] }` binds `M` and `N`; `E` is bound by an element
//! type), by `::<..>` arguments, and, for those only the return type names, by the type the
//! call is expected to give. The body is then lowered with those bindings, in a scope of its
//! own (it sees only its parameters, the module's consts and functions).

use cuprum_tile_ir::{Dim, Elem, ParamKind, TileType};
use proc_macro2::Span;
use syn::spanned::Spanned;

use super::calls::Args;
use super::*;
use crate::types::{last_generic_args, path_name};

/// The deepest chain of inlined calls (a recursive helper cannot be inlined).
const MAX_INLINE_DEPTH: usize = 32;

impl<'m> Lowerer<'m> {
    pub(super) fn inline(
        &mut self,
        f: &'m syn::ItemFn,
        args: Args<'_>,
        expect: &Ty,
    ) -> Result<Val> {
        let name = f.sig.ident.to_string();
        let span = args.span;
        if self.callers.contains(&name) || self.callers.len() >= MAX_INLINE_DEPTH {
            return err(
                span,
                format!(
                    "`{name}` calls itself: helpers are inlined, so recursion is not supported"
                ),
            );
        }
        if let Some(c) = args.closure {
            return err(c.span(), "closures cannot be passed to helper functions");
        }
        let mut params = Vec::new();
        for input in &f.sig.inputs {
            match input {
                syn::FnArg::Typed(pt) => params.push(pt),
                syn::FnArg::Receiver(r) => {
                    return err(r.span(), "helper functions of a tile module take no `self`");
                }
            }
        }
        if params.len() != args.vals.len() {
            return err(
                span,
                format!(
                    "`{name}` takes {} argument{}, {} given",
                    params.len(),
                    if params.len() == 1 { "" } else { "s" },
                    args.vals.len()
                ),
            );
        }
        let mut env = self.helper_generics(f, &args)?;
        for (pt, (v, s)) in params.iter().zip(&args.vals) {
            self.unify(&pt.ty, v, &mut env, *s).map_err(|e| {
                syn::Error::new(
                    *s,
                    format!(
                        "argument `{}` of `{name}`: {e}",
                        crate::source_text_pat(&pt.pat)
                    ),
                )
            })?;
        }
        if let (syn::ReturnType::Type(_, ret), Some(want)) = (&f.sig.output, expect.tile_type()) {
            self.unify_tile(ret, &want, &mut env, span)?;
        }
        if let Some((unbound, _)) = env.names.iter().find(|(_, g)| {
            matches!(
                g,
                Generic::UnboundConst(_) | Generic::UnboundArray(_) | Generic::UnboundType
            )
        }) {
            return err(
                span,
                format!(
                    "cannot tell `{unbound}` of `{name}` from its arguments; give it: `{name}::<..>(..)`"
                ),
            );
        }
        // The arguments, checked against the parameters' types (a literal takes its type).
        let mut bound = Vec::with_capacity(params.len());
        for (pt, (v, s)) in params.iter().zip(args.vals) {
            let ty = TypeCx {
                env: &env,
                consts: &self.items.consts,
            }
            .ty(&pt.ty)?;
            let placeholder: syn::Expr = syn::parse_quote!(_);
            let v = self.check_against(v, &ty, s, &placeholder).map_err(|e| {
                syn::Error::new(
                    s,
                    format!(
                        "argument `{}` of `{name}`: {e}",
                        crate::source_text_pat(&pt.pat)
                    ),
                )
            })?;
            bound.push((&*pt.pat, v));
        }
        let frame = Frame {
            env,
            scopes: vec![Vec::new()],
            loops: Vec::new(),
            helper: Some(name.clone()),
        };
        let caller = std::mem::replace(&mut self.frame, frame);
        self.callers.push(name.clone());
        let result = self.helper_body(f, bound);
        self.callers.pop();
        let helper = std::mem::replace(&mut self.frame, caller);
        let value = result?;
        match &f.sig.output {
            syn::ReturnType::Default => match value {
                Val::Unit | Val::Never => Ok(Val::Unit),
                other => err(
                    f.block.span(),
                    format!(
                        "`{name}` returns nothing, but its body ends with {}",
                        other.kind()
                    ),
                ),
            },
            syn::ReturnType::Type(_, ret) => {
                let ty = TypeCx {
                    env: &helper.env,
                    consts: &self.items.consts,
                }
                .ty(ret)?;
                let placeholder: syn::Expr = syn::parse_quote!(_);
                self.check_against(value, &ty, span, &placeholder)
                    .map_err(|e| {
                        syn::Error::new(
                            span,
                            format!("`{name}` returns `{}`: {e}", crate::source_text_ty(ret)),
                        )
                    })
            }
        }
    }

    fn helper_body(&mut self, f: &syn::ItemFn, bound: Vec<(&syn::Pat, Val)>) -> Result<Val> {
        for (pat, v) in bound {
            match pat {
                syn::Pat::Ident(i) if i.by_ref.is_none() && i.subpat.is_none() => {
                    self.bind(&i.ident.to_string(), v, i.mutability.is_some());
                }
                syn::Pat::Wild(_) => {}
                other => return err(other.span(), "a helper's parameter is a plain name"),
            }
        }
        self.fn_body(&f.block)
    }

    /// The helper's generic parameters, unbound except those given with `::<..>`.
    fn helper_generics(&mut self, f: &syn::ItemFn, args: &Args<'_>) -> Result<GenericEnv> {
        let mut env = GenericEnv::default();
        let mut declared = Vec::new();
        for p in &f.sig.generics.params {
            match p {
                syn::GenericParam::Lifetime(_) => {}
                syn::GenericParam::Type(t) => {
                    env.names.push((t.ident.to_string(), Generic::UnboundType));
                    declared.push(p);
                }
                syn::GenericParam::Const(c) => {
                    let g = match &c.ty {
                        syn::Type::Array(a) => {
                            Generic::UnboundArray(self.type_cx().const_usize(&a.len)?)
                        }
                        other => Generic::UnboundConst(const_scalar_type(other)?),
                    };
                    env.names.push((c.ident.to_string(), g));
                    declared.push(p);
                }
            }
        }
        if args.turbofish.len() > declared.len() {
            return err(
                args.span,
                format!(
                    "`{}` has {} generic parameters, {} given",
                    f.sig.ident,
                    declared.len(),
                    args.turbofish.len()
                ),
            );
        }
        for (p, a) in declared.iter().zip(&args.turbofish) {
            if matches!(a, syn::GenericArgument::Type(syn::Type::Infer(_))) {
                continue;
            }
            match p {
                syn::GenericParam::Type(t) => {
                    let syn::GenericArgument::Type(ty) = a else {
                        return err(a.span(), format!("`{}` is a type", t.ident));
                    };
                    let e = self.type_cx().elem(ty)?;
                    env.set(&t.ident.to_string(), Generic::Type(e));
                }
                syn::GenericParam::Const(c) => {
                    let name = c.ident.to_string();
                    let g = match env.get(&name) {
                        Some(Generic::UnboundArray(len)) => {
                            let len = *len;
                            let extents = self.type_cx().shape_arg(a)?;
                            let shape = self.type_cx().static_shape(
                                &extents,
                                a.span(),
                                "a shape argument",
                            )?;
                            if shape.len() != len {
                                return err(a.span(), format!("`{name}` has {len} dimensions"));
                            }
                            Generic::Array(shape)
                        }
                        Some(Generic::UnboundConst(ty)) => {
                            let ty = *ty;
                            Generic::Const {
                                value: self.caller_const(a)?,
                                ty,
                            }
                        }
                        _ => continue,
                    };
                    env.set(&name, g);
                }
                syn::GenericParam::Lifetime(_) => {}
            }
        }
        Ok(env)
    }

    /// A const argument given with `::<..>`: a number, `true`/`false`, or a const of the
    /// caller.
    fn caller_const(&self, a: &syn::GenericArgument) -> Result<ConstValue> {
        let expr: syn::Expr = match a {
            syn::GenericArgument::Const(e) => e.clone(),
            syn::GenericArgument::Type(syn::Type::Path(p)) => syn::Expr::Path(syn::ExprPath {
                attrs: Vec::new(),
                qself: None,
                path: p.path.clone(),
            }),
            other => return err(other.span(), "expected a constant"),
        };
        if let syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Bool(b),
            ..
        }) = &expr
        {
            return Ok(ConstValue::Known(i64::from(b.value)));
        }
        if let syn::Expr::Path(p) = &expr
            && let Some(name) = path_name(&p.path)
            && let Some(Generic::Const { value, .. }) = self.frame.env.get(&name)
        {
            return Ok(*value);
        }
        match self.type_cx().extent(&expr)? {
            Extent::Dim(d) => Ok(ConstValue::from_dim(d)),
            Extent::Dynamic => Ok(ConstValue::Known(-1)),
        }
    }

    /// Binds the generic parameters that `t` (a parameter type) names from the argument `v`.
    fn unify(&self, t: &syn::Type, v: &Val, env: &mut GenericEnv, span: Span) -> Result<()> {
        match (t, v) {
            (syn::Type::Reference(r), _) => self.unify(&r.elem, v, env, span),
            (syn::Type::Paren(p), _) => self.unify(&p.elem, v, env, span),
            (syn::Type::Group(g), _) => self.unify(&g.elem, v, env, span),
            (syn::Type::Tuple(tt), Val::Tuple(items)) if tt.elems.len() == items.len() => {
                for (t, v) in tt.elems.iter().zip(items) {
                    self.unify(t, v, env, span)?;
                }
                Ok(())
            }
            (_, Val::Tile(x)) => {
                let tt = self.ty(*x);
                self.unify_tile(t, &tt, env, span)
            }
            (syn::Type::Ptr(ptr), Val::Pointer(i)) => {
                if let syn::Type::Path(p) = &*ptr.elem
                    && let Some(name) = path_name(&p.path)
                    && env.get(&name) == Some(&Generic::UnboundType)
                {
                    env.set(&name, Generic::Type(self.pointer_elem(*i)?));
                }
                Ok(())
            }
            (syn::Type::Path(p), Val::Tensor(i)) => {
                let args = last_generic_args(&p.path);
                let Some(ParamKind::Tensor(tp)) =
                    self.kernel().params.get(*i as usize).map(|p| &p.kind)
                else {
                    return Ok(());
                };
                if let [e, s] = args.as_slice() {
                    unify_elem(e, tp.elem, env);
                    let extents: Vec<Extent> = tp
                        .dims
                        .iter()
                        .map(|d| match d {
                            cuprum_tile_ir::TensorDim::Static(d) => Extent::Dim(*d),
                            cuprum_tile_ir::TensorDim::Dynamic => Extent::Dynamic,
                        })
                        .collect();
                    unify_shape(s, &extents, env, span)?;
                }
                Ok(())
            }
            (syn::Type::Path(p), Val::Partition { tensor, tile, .. }) => {
                let args = last_generic_args(&p.path);
                let Some(ParamKind::Tensor(tp)) =
                    self.kernel().params.get(*tensor as usize).map(|p| &p.kind)
                else {
                    return Ok(());
                };
                if let [e, s] = args.as_slice() {
                    unify_elem(e, tp.elem, env);
                    let extents: Vec<Extent> = tile.iter().map(|d| Extent::Dim(*d)).collect();
                    unify_shape(s, &extents, env, span)?;
                }
                Ok(())
            }
            (syn::Type::Path(p), Val::Shape(entries)) => {
                if let [s] = last_generic_args(&p.path).as_slice() {
                    let extents: Vec<Extent> = entries
                        .iter()
                        .map(|e| match e {
                            ShapeEntry::Dim(d) => Extent::Dim(*d),
                            ShapeEntry::Dynamic { .. } => Extent::Dynamic,
                        })
                        .collect();
                    unify_shape(s, &extents, env, span)?;
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Binds what a tile or scalar type (`Tile<E, S>`, `E`, `f32`) names from `tt`.
    fn unify_tile(
        &self,
        t: &syn::Type,
        tt: &TileType,
        env: &mut GenericEnv,
        span: Span,
    ) -> Result<()> {
        let syn::Type::Path(p) = t else {
            return Ok(());
        };
        if let Some(name) = path_name(&p.path) {
            if tt.shape.is_empty() && env.get(&name) == Some(&Generic::UnboundType) {
                env.set(&name, Generic::Type(tt.elem));
            }
            return Ok(());
        }
        let args = last_generic_args(&p.path);
        if p.path.segments.last().is_some_and(|s| s.ident == "Tile")
            && let [e, s] = args.as_slice()
        {
            unify_elem(e, tt.elem, env);
            let extents: Vec<Extent> = tt.shape.iter().map(|d| Extent::Dim(*d)).collect();
            unify_shape(s, &extents, env, span)?;
        }
        Ok(())
    }
}

fn unify_elem(a: &syn::GenericArgument, elem: Elem, env: &mut GenericEnv) {
    if let syn::GenericArgument::Type(syn::Type::Path(p)) = a
        && let Some(name) = path_name(&p.path)
        && env.get(&name) == Some(&Generic::UnboundType)
    {
        env.set(&name, Generic::Type(elem));
    }
}

fn unify_shape(
    a: &syn::GenericArgument,
    extents: &[Extent],
    env: &mut GenericEnv,
    span: Span,
) -> Result<()> {
    match a {
        syn::GenericArgument::Type(syn::Type::Path(p)) => {
            let Some(name) = path_name(&p.path) else {
                return Ok(());
            };
            if let Some(Generic::UnboundArray(len)) = env.get(&name) {
                if *len != extents.len() {
                    return err(
                        span,
                        format!(
                            "`{name}` has {len} dimensions; this argument's shape has {}",
                            extents.len()
                        ),
                    );
                }
                let dims: Option<Vec<Dim>> = extents
                    .iter()
                    .map(|e| match e {
                        Extent::Dim(d) => Some(*d),
                        Extent::Dynamic => None,
                    })
                    .collect();
                match dims {
                    Some(dims) => env.set(&name, Generic::Array(dims)),
                    None => {
                        return err(
                            span,
                            format!("`{name}` cannot stand for a shape with `-1` dimensions"),
                        );
                    }
                }
            }
            Ok(())
        }
        syn::GenericArgument::Const(e) => {
            let elems = match strip_block(e) {
                syn::Expr::Array(a) => a.elems.iter().collect::<Vec<_>>(),
                _ => return Ok(()),
            };
            if elems.len() != extents.len() {
                return Ok(());
            }
            for (x, ext) in elems.iter().zip(extents) {
                if let syn::Expr::Path(p) = x
                    && let Some(name) = path_name(&p.path)
                    && let Some(Generic::UnboundConst(ty)) = env.get(&name)
                    && let Extent::Dim(d) = ext
                {
                    let ty = *ty;
                    env.set(
                        &name,
                        Generic::Const {
                            value: ConstValue::from_dim(*d),
                            ty,
                        },
                    );
                }
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

fn strip_block(e: &syn::Expr) -> &syn::Expr {
    match e {
        syn::Expr::Block(b) => match b.block.stmts.as_slice() {
            [syn::Stmt::Expr(inner, None)] => strip_block(inner),
            _ => e,
        },
        syn::Expr::Paren(p) => strip_block(&p.expr),
        other => other,
    }
}
