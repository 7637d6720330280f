//! Instances of generic structs in the lowering (`crate::generic_structs` makes them): which
//! instance a type names where the parameters in scope are known (`Acc<T>` in a kernel
//! specialized for `f32` is `Acc<f32>`), and which one a struct expression or a generic
//! `impl`'s function makes where rustc inferred the arguments (`Acc { sum: x, count: 0 }`,
//! `Acc::new()` with `let acc: Acc<f32>`, `acc.add(x)` with `acc` an `Acc<f64>`).

use std::collections::HashMap;

use proc_macro2::Span;

use super::*;
use crate::generic_structs::{self as gs, StructInstance};

impl Lowerer<'_> {
    /// `ty` with the type and const parameters in scope (and the module's constants in
    /// generic arguments) replaced by what they stand for in this specialization.
    pub(super) fn concrete_type(&self, ty: &syn::Type) -> syn::Type {
        let length = |e: &syn::Expr| match self.eval_const(e, 0) {
            Ok(ConstVal::Int(n)) => u64::try_from(n).ok(),
            _ => None,
        };
        crate::types::concrete(ty, &self.type_params, &length)
    }

    /// The instance `ty` names here, if it names a struct of the module with its arguments.
    pub(super) fn struct_instance(&self, ty: &syn::Type) -> Option<StructInstance> {
        crate::types::struct_named(&self.concrete_type(ty), &self.info.structs)
    }

    /// The instance a value's struct name names.
    pub(super) fn instance_def(&self, name: &str) -> Option<StructInstance> {
        gs::instance_named(name, &self.info.structs)
    }

    /// The instance a struct expression `Name { .. }` (or `Name::<f32> { .. }`) makes: from
    /// the path's arguments, else from `expected` (where the value goes), else from the
    /// types of the field values (`values`, by declaration order; `None` where a field takes
    /// the base's), as rustc infers them; an untyped literal takes Rust's default type.
    pub(super) fn struct_expr_instance(
        &self,
        path: &syn::Path,
        decl: &syn::ItemStruct,
        values: &[Option<&Val>],
        base: Option<&str>,
        expected: Option<&syn::Type>,
        span: Span,
    ) -> Result<StructInstance> {
        let from_path = path_type(path);
        if let Some(inst) = self.struct_instance(&from_path) {
            return Ok(inst);
        }
        if let Some(inst) = base.and_then(|b| self.instance_def(b)) {
            return Ok(inst);
        }
        if let Some(inst) = expected.and_then(|t| self.struct_instance(t))
            && decl.ident == gs::base_name(&inst.name)
        {
            return Ok(inst);
        }
        let params = type_and_const_params(&decl.generics);
        let mut types = HashMap::new();
        let mut consts = HashMap::new();
        let mut literal: HashMap<String, LitKind> = HashMap::new();
        for (field, value) in decl.fields.iter().zip(values) {
            let Some(value) = value else { continue };
            if let Some(kind) = literal_kind(value)
                && let syn::Type::Path(p) = &field.ty
                && let Some(name) = p.path.get_ident().map(|i| i.to_string())
                && params.contains(&name)
            {
                literal.entry(name).or_insert(kind);
                continue;
            }
            match self.value_type(value) {
                Some(concrete) => gs::unify(&field.ty, &concrete, &params, &mut types, &mut consts),
                // `Holder { v: &x[0] }`: a parameter standing for a reference, a slice, ...
                None if matches!(&field.ty, syn::Type::Path(p) if p.path.get_ident().is_some_and(|i| params.contains(&i.to_string()))) =>
                {
                    return err(
                        span,
                        format!(
                            "`{}` of `{}` would stand for {} here, which is not plain data: \
                             device structs hold numbers, arrays of numbers and structs of the \
                             module. Store the value itself (`*r`, `x[i]`) or an index into the \
                             slice",
                            source_text(&field.ty),
                            decl.ident,
                            describe(value)
                        ),
                    );
                }
                None => {}
            }
        }
        for (name, kind) in literal {
            types
                .entry(name)
                .or_insert_with(|| gs::scalar_syn_type(kind.default_type()));
        }
        let mut args = Vec::new();
        for p in &decl.generics.params {
            match p {
                syn::GenericParam::Type(t) => match types.get(&t.ident.to_string()) {
                    Some(ty) => args.push(quote::quote!(#ty)),
                    None => return err(span, cannot_infer(&decl.ident, &t.ident)),
                },
                syn::GenericParam::Const(c) => match consts.get(&c.ident.to_string()) {
                    Some(&v) => {
                        let e = gs::literal(v);
                        args.push(quote::quote!(#e));
                    }
                    None => return err(span, cannot_infer(&decl.ident, &c.ident)),
                },
                syn::GenericParam::Lifetime(_) => {}
            }
        }
        let name = &decl.ident;
        let ty: syn::Type = syn::parse_quote!(#name<#(#args),*>);
        self.struct_instance(&ty).ok_or_else(|| {
            syn::Error::new(
                span,
                format!(
                    "`{}` is not a struct device code can build",
                    source_text(&ty)
                ),
            )
        })
    }

    /// The concrete type of a value, where it has one a generic parameter can take:
    /// a typed number, a struct, a local array of numbers, a reference to a struct element.
    pub(super) fn value_type(&self, v: &Val) -> Option<syn::Type> {
        match v {
            Val::Scalar(x) => Some(gs::scalar_syn_type(self.ty(*x))),
            Val::Struct(name, _) => gs::instance_type(name),
            Val::AggRef(m) => match &m.ty {
                crate::layout::ElemType::Struct { name, .. } => gs::instance_type(name),
                _ => None,
            },
            Val::Array(a) if a.infer.is_none() => {
                let mut ty = gs::scalar_syn_type(a.elem);
                for &d in a.dims.iter().rev() {
                    let len = gs::literal(i128::from(d));
                    ty = syn::parse_quote!([#ty; #len]);
                }
                Some(ty)
            }
            _ => None,
        }
    }

    /// Infers the parameters of a generic `impl`'s function `f` (`impl_params` of them, whose
    /// block is for `self_ty`) that the call names through its type: the path's arguments
    /// (`Acc::<f32>::new()`), the receiver's instance (`acc.add(x)`), the instances of
    /// struct arguments (`Vec3<T>` given a `Vec3<f64>`), and where the result goes
    /// (`expected`, for `let acc: Acc<f32> = Acc::new()`).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn infer_struct_params(
        &self,
        f: &syn::ItemFn,
        path: &syn::Path,
        values: &[Val],
        open_receiver: bool,
        expected: Option<&syn::Type>,
        generics: &[String],
        types: &mut TypeParams,
        consts: &mut ConstParams,
        const_types: &[(String, S)],
        span: Span,
    ) -> Result<()> {
        let mut found_types = HashMap::new();
        let mut found_consts = HashMap::new();
        let mut params: Vec<String> = generics.to_vec();
        params.extend(const_types.iter().map(|(n, _)| n.clone()));
        if let Some((_, self_ty)) = crate::impls::impl_origin(f) {
            // `Acc::<f32>::new()`: the type segment's arguments.
            if let [.., ty_seg, _] = Vec::from_iter(&path.segments)[..]
                && !ty_seg.arguments.is_none()
            {
                let given = path_type(&syn::Path::from(ty_seg.clone()));
                let given = self.concrete_type(&given);
                gs::unify(
                    &self_ty,
                    &given,
                    &params,
                    &mut found_types,
                    &mut found_consts,
                );
            }
            // (An open receiver's instance is a guess: its arguments go first.)
            if let (Some(syn::FnArg::Receiver(_)), Some(v)) = (f.sig.inputs.first(), values.first())
                && !open_receiver
                && let Some(t) = self.value_type(v)
            {
                gs::unify(&self_ty, &t, &params, &mut found_types, &mut found_consts);
            }
        }
        for (input, value) in f.sig.inputs.iter().zip(values) {
            if let syn::FnArg::Typed(pt) = input
                && matches!(value, Val::Struct(..) | Val::AggRef(_))
                && let Some(t) = self.value_type(value)
            {
                gs::unify(&pt.ty, &t, &params, &mut found_types, &mut found_consts);
            }
        }
        if let (Some(expected), syn::ReturnType::Type(_, out)) = (expected, &f.sig.output) {
            gs::unify(out, expected, &params, &mut found_types, &mut found_consts);
        }
        for (name, ty) in found_types {
            if types.contains_key(&name) || !generics.contains(&name) {
                continue;
            }
            let Some(s) = crate::types::scalar_type(&ty) else {
                return err(
                    span,
                    format!(
                        "`{name}` of `{}` stands for `{}` here, and the type parameters of \
                         generic device code stand for numbers: write this function for that \
                         type, or make the struct's parameter a number",
                        f.sig.ident,
                        source_text(&ty)
                    ),
                );
            };
            types.insert(name, s);
        }
        for (name, v) in found_consts {
            if let Some((_, ty)) = const_types.iter().find(|(n, _)| *n == name) {
                consts.entry(name).or_insert((*ty, v));
            }
        }
        Ok(())
    }
}

impl Lowerer<'_> {
    /// A type parameter `name` of a generic `impl`'s function `f` that nothing at its call
    /// names, where `f` makes the block's struct (`Acc::new()` in `let mut acc =
    /// Acc::new();`): left open at a site of its own, which later uses of the binding type
    /// (`acc.add(x)`, see `note_open_receiver`), as rustc infers it. The infer runs lower the
    /// call with their best guess so far (`open_guesses`, from the previous run; `f32` at
    /// first), the emit run with the solved type. `None` when `f` does not make its struct,
    /// or (emitting) no use said what the parameter is.
    pub(super) fn open_struct_param(&mut self, f: &syn::ItemFn, name: &str) -> Result<Option<S>> {
        let Some((_, self_ty)) = crate::impls::impl_origin(f) else {
            return Ok(None);
        };
        let syn::ReturnType::Type(_, out) = &f.sig.output else {
            return Ok(None);
        };
        if source_text(&**out) != source_text(&self_ty) {
            return Ok(None);
        }
        let Some(position) = struct_param_position(&self_ty, name) else {
            return Ok(None);
        };
        let site = self.site();
        self.opened.push((position, site));
        if let Mode::Infer(inf) = &mut self.mode {
            inf.opened_struct_params = true;
            return Ok(Some(
                self.open_guesses.get(&site).copied().unwrap_or(S::F32),
            ));
        }
        Ok(self.solved(site))
    }

    /// A call of `f` on a receiver whose instance is open (`open`: the struct's argument
    /// positions and their sites): what the call's arguments gave its parameters (`found`,
    /// or untyped literals' kinds) is what the receiver's arguments are.
    pub(super) fn note_open_receiver(
        &mut self,
        f: &syn::ItemFn,
        open: &[(usize, u32)],
        found: &TypeParams,
        literal: &HashMap<String, LitKind>,
    ) {
        let Some((_, self_ty)) = crate::impls::impl_origin(f) else {
            return;
        };
        for &(position, site) in open {
            let Some(name) = struct_param_name(&self_ty, position) else {
                continue;
            };
            if let Some(&ty) = found.get(&name) {
                self.note_type(site, ty);
            } else if let Some(&kind) = literal.get(&name) {
                self.note_kind(site, kind);
            }
        }
    }

    /// Before lowering `e`, the value of the current helper (its body's tail when `scopes` is
    /// the body's own block's depth, or a `return`'s when 0): where the helper's result type
    /// names a struct, that is where `e`'s value goes, so a call in `e` may take its
    /// arguments from it (`expected`), and a binding whose instance was left open
    /// (`let mut a = Acc::new(); .. a`) learns them.
    pub(super) fn expect_result(&mut self, e: &syn::Expr, scopes: usize) {
        let Some((ty, depth)) = self.frames.last().and_then(|f| f.result_struct.clone()) else {
            return;
        };
        if scopes != 0 && scopes != depth {
            return;
        }
        if let syn::Expr::Path(p) = e
            && let Some(name) = p.path.get_ident().map(|i| i.to_string())
            && let Some(open) = self.lookup(&name).and_then(|b| self.open_sites_of(b))
        {
            for (position, site) in open {
                if let Some(s) =
                    struct_argument(&ty, position).and_then(|t| crate::types::scalar_type(&t))
                {
                    self.note_type(site, s);
                }
            }
            return;
        }
        self.expected = Some(ty);
    }

    /// The sites of `binding`'s open arguments, if it holds a struct whose instance was left
    /// open where it was made (keyed by its first variable, which is its own).
    pub(super) fn open_sites_of(&self, binding: &Binding) -> Option<Vec<(usize, u32)>> {
        let var = first_var(binding)?;
        self.open_vars.get(&var).cloned()
    }

    /// Remembers that the `let mut` binding `name` holds the instance the call just lowered
    /// left open, so that its later uses can type it.
    pub(super) fn register_open_binding(&mut self, name: &str, opened: Vec<(usize, u32)>) {
        if opened.is_empty() {
            return;
        }
        if let Some(var) = self.lookup(name).and_then(first_var) {
            self.open_vars.insert(var, opened);
        }
    }
}

/// The first variable of a mutable struct binding.
fn first_var(b: &Binding) -> Option<cuprum_ir::Var> {
    match b {
        Binding::Var { var, .. } => Some(*var),
        Binding::Struct(_, items) | Binding::Tuple(items) => items.iter().find_map(first_var),
        _ => None,
    }
}

/// The type argument of the concrete type `Acc<f32>` at `position`.
fn struct_argument(ty: &syn::Type, position: usize) -> Option<syn::Type> {
    let syn::Type::Path(p) = ty else {
        return None;
    };
    let syn::PathArguments::AngleBracketed(a) = &p.path.segments.last()?.arguments else {
        return None;
    };
    match a.args.iter().nth(position)? {
        syn::GenericArgument::Type(t) => Some(t.clone()),
        _ => None,
    }
}

/// The position of parameter `name` among the arguments of the self type `Acc<T>`.
fn struct_param_position(self_ty: &syn::Type, name: &str) -> Option<usize> {
    let syn::Type::Path(p) = self_ty else {
        return None;
    };
    let syn::PathArguments::AngleBracketed(a) = &p.path.segments.last()?.arguments else {
        return None;
    };
    a.args.iter().position(|arg| {
        matches!(arg, syn::GenericArgument::Type(syn::Type::Path(t))
            if t.path.get_ident().is_some_and(|i| i == name))
    })
}

/// The parameter the self type `Acc<T>` has at argument `position`.
fn struct_param_name(self_ty: &syn::Type, position: usize) -> Option<String> {
    let syn::Type::Path(p) = self_ty else {
        return None;
    };
    let syn::PathArguments::AngleBracketed(a) = &p.path.segments.last()?.arguments else {
        return None;
    };
    match a.args.iter().nth(position)? {
        syn::GenericArgument::Type(syn::Type::Path(t)) => t.path.get_ident().map(|i| i.to_string()),
        _ => None,
    }
}

/// The type a struct expression's or call's path names: `Acc::<f32>` as `Acc<f32>`.
fn path_type(path: &syn::Path) -> syn::Type {
    let mut path = path.clone();
    for seg in path.segments.iter_mut() {
        if let syn::PathArguments::AngleBracketed(a) = &mut seg.arguments {
            a.colon2_token = None;
        }
    }
    syn::Type::Path(syn::TypePath { qself: None, path })
}

/// The names of a declaration's type and const parameters.
fn type_and_const_params(generics: &syn::Generics) -> Vec<String> {
    generics
        .params
        .iter()
        .filter_map(|p| match p {
            syn::GenericParam::Type(t) => Some(t.ident.to_string()),
            syn::GenericParam::Const(c) => Some(c.ident.to_string()),
            syn::GenericParam::Lifetime(_) => None,
        })
        .collect()
}

fn literal_kind(v: &Val) -> Option<LitKind> {
    match v {
        Val::Int(_) => Some(LitKind::Int),
        Val::Float(_) => Some(LitKind::Float),
        Val::Infer(_, k) => Some(*k),
        _ => None,
    }
}

fn cannot_infer(st: &syn::Ident, param: &syn::Ident) -> String {
    format!(
        "cannot tell what `{param}` of `{st}` stands for here: name it (`{st}::<f32> {{ .. }}`, \
         `{st}::<f32>::new()`) or annotate the binding (`let v: {st}<f32> = ..`)"
    )
}
