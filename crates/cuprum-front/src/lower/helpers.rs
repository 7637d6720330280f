//! Device helper functions: plain `fn`s of the module, called from kernels (and from each
//! other), inlined at each call.
//!
//! A call evaluates its arguments in the caller's scope, binds them to the parameters in a
//! fresh scope (a helper sees only its parameters and the module's constants), and lowers the
//! body inside a one-trip `Loop`, so that `return value` becomes "write the result, `Break`".
//! A `return` inside a loop of the helper also sets the call's `returned` flag before its
//! `Break`, and every loop that holds such a `return` is followed by `if returned { Break }`,
//! so each thread leaves loop after loop up to the call's own; threads of a warp that did not
//! return go on, as in Rust.
//! Generic helpers are specialized per call: each type parameter takes the type of the
//! argument it was given (or the turbofish's). Recursion is refused.
//! A reference parameter binds the place its argument names (`references`); the functions of
//! `impl` blocks are helpers too, their receiver bound by `methods`.

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
    /// `loop_depth` inside the call's one-trip loop: a `return` at this depth is a `Break`.
    pub loop_depth: u32,
    /// Set by a `return` from inside a loop of the helper: a `Bool` variable, false on entry
    /// (present only when the body has such a `return`).
    pub returned: Option<cuprum_ir::Var>,
    /// How many `return`s from inside loops were lowered so far: a loop whose body raised it
    /// is followed by `if returned { Break }`.
    pub loop_returns: u32,
    /// The result type, where it names a struct of the module (`-> Acc<T>`, with the
    /// parameters in scope substituted), and how many scopes are open in the body's own
    /// block: what a generic struct's arguments are inferred from when the body's value or a
    /// `return` names none (`Acc::new()`, or a binding made so, as the tail).
    pub result_struct: Option<(syn::Type, usize)>,
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

    /// The scalar type a type name stands for: a type parameter of the current helper (or
    /// kernel) in this specialization, or a scalar type's own name (`f32`, `f16`).
    pub(super) fn scalar_named(&self, name: &str) -> Option<S> {
        self.type_params
            .get(name)
            .copied()
            .or_else(|| S::from_rust_name(name))
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
        if f.sig.inputs.len() != args.len() {
            return err(
                span,
                format!("`{name}` takes {} arguments", f.sig.inputs.len()),
            );
        }
        // Where the result goes (`let acc: Acc<f32> = Acc::new()`) is this call's, not its
        // arguments'.
        let expected = self.expected.take();
        let args = self.helper_args(f.sig.inputs.iter(), args)?;
        self.expected = expected;
        self.call_with_args(f, path, args, span)
    }

    /// Inlines a call of helper (or method) `f` on arguments already evaluated.
    pub(super) fn call_with_args(
        &mut self,
        f: &syn::ItemFn,
        path: &syn::Path,
        args: Vec<references::Arg>,
        span: Span,
    ) -> Result<Val> {
        let name = f.sig.ident.to_string();
        let expected = self.expected.take();
        if self.frames.len() >= MAX_HELPER_DEPTH {
            return err(
                span,
                format!(
                    "`{name}` calls itself (directly or not): recursion is not supported in device code"
                ),
            );
        }
        let mut witnesses = Vec::with_capacity(args.len());
        if !f.sig.generics.params.is_empty() {
            for a in &args {
                witnesses.push(self.arg_witness(a, span)?);
            }
        }
        let (type_params, const_params) =
            self.infer_generics(f, path, &witnesses, expected.as_ref(), span)?;

        // The helper runs in its own scope, with its own type and const parameters.
        let saved_scopes = std::mem::replace(&mut self.scopes, vec![Vec::new()]);
        let saved_types = std::mem::replace(&mut self.type_params, type_params);
        let saved_consts = std::mem::replace(&mut self.const_params, const_params);
        let result = self.inline_body(f, args, span);
        self.scopes = saved_scopes;
        self.type_params = saved_types;
        self.const_params = saved_consts;
        result
    }

    fn inline_body(
        &mut self,
        f: &syn::ItemFn,
        args: Vec<references::Arg>,
        span: Span,
    ) -> Result<Val> {
        use references::Arg;
        for (input, arg) in f.sig.inputs.iter().zip(args) {
            match (input, arg) {
                (syn::FnArg::Receiver(r), arg) => self.bind_receiver(r, arg)?,
                (syn::FnArg::Typed(pt), Arg::Place(place)) => {
                    self.bind_reference_param(pt, place)?
                }
                // A closure argument is passed as it is, to be called inside.
                (syn::FnArg::Typed(pt), Arg::Value(Val::Closure(c))) => match &*pt.pat {
                    syn::Pat::Ident(id) => {
                        self.bind(id.ident.to_string(), Binding::Val(Val::Closure(c)))
                    }
                    other => return err(other.span(), "bind a closure parameter to a name"),
                },
                (syn::FnArg::Typed(pt), Arg::Value(value)) => self.bind_helper_param(pt, value)?,
            }
        }
        let result = match &f.sig.output {
            syn::ReturnType::Default => None,
            syn::ReturnType::Type(_, ty) => {
                Some(self.result_slot(&format!("{}_result", f.sig.ident), ty)?)
            }
        };
        let returned = if returns_from_a_loop(&f.block) {
            let flag = self.b.var(format!("{}_returned", f.sig.ident), S::Bool);
            let no = self.constant(cuprum_ir::Constant::bool(false));
            self.b.push(Stmt::WriteVar {
                var: flag,
                value: no,
            });
            Some(flag)
        } else {
            None
        };
        self.b.begin_block();
        self.loop_depth += 1;
        let result_struct = match &f.sig.output {
            syn::ReturnType::Type(_, ty)
                if crate::generic_structs::declaration(ty, &self.info.structs).is_some() =>
            {
                Some((self.concrete_type(ty), self.scopes.len() + 1))
            }
            _ => None,
        };
        self.frames.push(HelperFrame {
            result: result.clone(),
            loop_depth: self.loop_depth,
            returned,
            loop_returns: 0,
            result_struct,
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
            other if self.struct_instance(other).is_some() => {
                let Some(def) = self.struct_instance(other) else {
                    return err(other.span(), "unknown struct");
                };
                let mut items = Vec::new();
                for field in &def.def.fields {
                    let fname = field
                        .ident
                        .as_ref()
                        .map(|i| i.to_string())
                        .unwrap_or_default();
                    items.push(self.result_slot(&format!("{name}.{fname}"), &field.ty)?);
                }
                Ok(Binding::Struct(def.name, items))
            }
            other if crate::generic_structs::declaration(other, &self.info.structs).is_some() => {
                err(
                    other.span(),
                    format!(
                        "`{}` names a generic struct without its arguments: write them \
                         (`-> {}<T>`)",
                        source_text(other),
                        source_text(other)
                    ),
                )
            }
            syn::Type::Reference(r) => err(
                r.span(),
                "device helpers cannot return references: helpers are inlined, so return the \
                 value, or take `&mut` to the place and write through it",
            ),
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

    /// Binds a by-value parameter (a reference parameter binds the place its argument names:
    /// `bind_reference_param`).
    fn bind_helper_param(&mut self, pt: &syn::PatType, value: Val) -> Result<()> {
        // Everything else binds as `let` does: arrays copied, aggregates taken apart,
        // scalars converted to the declared type, `mut` parameters made variables.
        let site = self.site();
        self.bind_pattern(&pt.pat, Some(&pt.ty), value, site, pt.span(), false)
    }

    /// The type each type parameter of `f` takes at this call, and the value of each const
    /// parameter: from the turbofish (in the order the parameters are declared), else from
    /// the arguments (`x: T` takes the argument's type; `a: [T; N]` an array's element type
    /// and length; `s: &SharedArray<T, N>` a shared array's).
    fn infer_generics(
        &mut self,
        f: &syn::ItemFn,
        path: &syn::Path,
        values: &[Val],
        expected: Option<&syn::Type>,
        span: Span,
    ) -> Result<(TypeParams, ConstParams)> {
        let mut out = HashMap::new();
        let mut consts = ConstParams::new();
        let open_receiver = self.open_receiver.take();
        let mut generics: Vec<String> = Vec::new();
        let mut const_types: Vec<(String, S)> = Vec::new();
        // Type and const parameters in declaration order, as a turbofish names them.
        let mut order: Vec<(String, Option<S>)> = Vec::new();
        for g in &f.sig.generics.params {
            match g {
                syn::GenericParam::Type(t) => {
                    generics.push(t.ident.to_string());
                    order.push((t.ident.to_string(), None));
                }
                syn::GenericParam::Const(c) => {
                    let ty = expect_scalar(&c.ty)
                        .ok()
                        .filter(|t| t.is_int() || *t == S::Bool)
                        .ok_or_else(|| {
                            syn::Error::new(
                                c.ty.span(),
                                "const parameters of device helpers must be integers or bool",
                            )
                        })?;
                    const_types.push((c.ident.to_string(), ty));
                    order.push((c.ident.to_string(), Some(ty)));
                }
                // Lifetimes say nothing the lowering needs: references pass through.
                syn::GenericParam::Lifetime(_) => {}
            }
        }
        if order.is_empty() {
            return Ok((out, consts));
        }
        // An explicit turbofish fixes the parameters in order: the function's own, after
        // those of a generic `impl` block (which the path's type names: `Acc::<f32>::new`).
        let impl_params = crate::impls::impl_origin(f).map_or(0, |(n, _)| n);
        if let Some(syn::PathArguments::AngleBracketed(a)) =
            path.segments.last().map(|s| &s.arguments)
        {
            for ((name, const_ty), arg) in order.iter().skip(impl_params).zip(&a.args) {
                match (const_ty, arg) {
                    (None, syn::GenericArgument::Type(t)) => {
                        out.insert(name.clone(), self.resolve_scalar(t)?);
                    }
                    (Some(ty), syn::GenericArgument::Const(e)) => {
                        let v = self.const_argument(e, *ty, name)?;
                        consts.insert(name.clone(), (*ty, v));
                    }
                    // `f::<N>()`: a bare name parses as a type.
                    (Some(ty), syn::GenericArgument::Type(syn::Type::Path(p))) => {
                        let e = syn::Expr::Path(syn::ExprPath {
                            attrs: Vec::new(),
                            qself: None,
                            path: p.path.clone(),
                        });
                        let v = self.const_argument(&e, *ty, name)?;
                        consts.insert(name.clone(), (*ty, v));
                    }
                    (_, other) => {
                        return err(
                            other.span(),
                            format!(
                                "this does not fit the parameter `{name}` of `{}`",
                                f.sig.ident
                            ),
                        );
                    }
                }
            }
        }
        // Lengths and element types of array and shared-array arguments.
        for (input, value) in f.sig.inputs.iter().zip(values) {
            let syn::FnArg::Typed(pt) = input else {
                continue;
            };
            self.match_shape(
                &pt.ty,
                value,
                &const_types,
                &generics,
                &mut consts,
                &mut out,
            );
        }
        // Generic structs: the path's type, the receiver's and the struct arguments'
        // instances, and where the result goes.
        self.infer_struct_params(
            f,
            path,
            values,
            open_receiver.is_some(),
            expected,
            &generics,
            &mut out,
            &mut consts,
            &const_types,
            span,
        )?;
        for (name, _) in &const_types {
            if !consts.contains_key(name) {
                return err(
                    span,
                    format!(
                        "cannot infer the const parameter `{name}` of `{}`: name it with a \
                         turbofish (`{}::<..>(..)`)",
                        f.sig.ident, f.sig.ident
                    ),
                );
            }
        }
        if generics.is_empty() {
            return Ok((out, consts));
        }
        let mut literal_kind: HashMap<String, LitKind> = HashMap::new();
        let mut from_open: HashMap<String, S> = HashMap::new();
        // Type parameters that closure arguments fill (`F: Fn(T) -> T`): the closure is
        // passed as it is and called inside, so they stand for no scalar type.
        let mut closures: Vec<String> = Vec::new();
        for (input, value) in f.sig.inputs.iter().zip(values) {
            let syn::FnArg::Typed(pt) = input else {
                continue;
            };
            // `x: &T` and `x: &mut T` take `T` from the place as `x: T` from a value.
            let ty = match &*pt.ty {
                syn::Type::Reference(r) => &*r.elem,
                ty => ty,
            };
            let syn::Type::Path(p) = ty else {
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
                Val::Closure(_) => closures.push(ident),
                _ => {}
            }
        }
        // A receiver whose instance was left open where it was made (`let mut acc =
        // Acc::new();`): this call's arguments say what it stands for.
        if let Some(open) = open_receiver {
            self.note_open_receiver(f, &open, &out, &literal_kind);
            let mut found = HashMap::new();
            let mut found_consts = HashMap::new();
            if let (Some((_, self_ty)), Some(v)) = (crate::impls::impl_origin(f), values.first())
                && let Some(t) = self.value_type(v)
            {
                crate::generic_structs::unify(
                    &self_ty,
                    &t,
                    &generics,
                    &mut found,
                    &mut found_consts,
                );
            }
            for (name, ty) in found {
                if let Some(s) = crate::types::scalar_type(&ty)
                    && !literal_kind.contains_key(&name)
                    && !from_open.contains_key(&name)
                {
                    out.entry(name).or_insert(s);
                }
            }
        }
        for name in &generics {
            if !out.contains_key(name) && !closures.contains(name) {
                if let Some(&ty) = from_open.get(name) {
                    out.insert(name.clone(), ty);
                    continue;
                }
                match literal_kind.get(name) {
                    Some(k) => {
                        out.insert(name.clone(), k.default_type());
                    }
                    None => {
                        if let Some(ty) = self.open_struct_param(f, name)? {
                            out.insert(name.clone(), ty);
                            continue;
                        }
                        if let Some((_, self_ty)) = crate::impls::impl_origin(f) {
                            let st = crate::generic_structs::base_name(&source_text(&self_ty))
                                .to_string();
                            return err(
                                span,
                                format!(
                                    "cannot tell what `{name}` of `{}` stands for at this call \
                                     of `{}`: device code infers it from the path, the \
                                     receiver, the arguments, the binding's annotation or the \
                                     arguments of the binding's later method calls and \
                                     operators, not from other uses. Name it: \
                                     `{st}::<f32>::{}(..)`, or `let v: {st}<f32> = ..`",
                                    source_text(&self_ty).replace(" < ", "<").replace(" >", ">"),
                                    f.sig.ident,
                                    f.sig.ident
                                ),
                            );
                        }
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
        Ok((out, consts))
    }

    /// The value of a const argument for parameter `name` of type `ty`.
    fn const_argument(&self, e: &syn::Expr, ty: S, name: &str) -> Result<i128> {
        match self.eval_const(e, 0)? {
            ConstVal::Int(v) => {
                int_constant(ty, v, e.span())?;
                Ok(v)
            }
            ConstVal::Bool(b) if ty == S::Bool => Ok(i128::from(b)),
            _ => err(
                e.span(),
                format!("`{name}` is a `{ty}`: expected a constant of that type"),
            ),
        }
    }

    /// Takes the const and type parameters that a parameter type `ty` names from the
    /// argument `value` bound to it: `[T; N]` (nested too) from a local array, `&[T; N]`
    /// likewise, `&SharedArray<T, N>` from a shared array. The first argument that gives a
    /// parameter its value wins; rustc has checked that the others agree.
    fn match_shape(
        &self,
        ty: &syn::Type,
        value: &Val,
        const_types: &[(String, S)],
        generics: &[String],
        consts: &mut ConstParams,
        types: &mut TypeParams,
    ) {
        let param_name = |e: &syn::Expr| match e {
            syn::Expr::Path(p) => p.path.get_ident().map(|i| i.to_string()),
            syn::Expr::Block(b) => match b.block.stmts.as_slice() {
                [syn::Stmt::Expr(syn::Expr::Path(p), None)] => {
                    p.path.get_ident().map(|i| i.to_string())
                }
                _ => None,
            },
            _ => None,
        };
        let mut take_const = |name: Option<String>, v: u32| {
            if let Some(name) = name
                && let Some((_, ty)) = const_types.iter().find(|(n, _)| *n == name)
            {
                consts.entry(name).or_insert((*ty, i128::from(v)));
            }
        };
        let mut take_type = |t: &syn::Type, elem: S| {
            if let syn::Type::Path(p) = t
                && let Some(i) = p.path.get_ident()
                && generics.iter().any(|g| i == g)
            {
                types.entry(i.to_string()).or_insert(elem);
            }
        };
        match (ty, value) {
            (syn::Type::Reference(r), _) => {
                self.match_shape(&r.elem, value, const_types, generics, consts, types)
            }
            (syn::Type::Array(_), Val::Array(a)) => {
                let mut t = ty;
                for &d in &a.dims {
                    let syn::Type::Array(arr) = t else { return };
                    take_const(param_name(&arr.len), d);
                    t = &arr.elem;
                }
                // (An array still open in the infer run: its site's type so far.)
                let elem = match a.infer {
                    Some((site, kind)) => self.solved(site).unwrap_or(kind.default_type()),
                    None => a.elem,
                };
                take_type(t, elem);
            }
            (
                syn::Type::Path(p),
                Val::Shared {
                    elem,
                    len,
                    array: Some(_),
                },
            ) => {
                let Some(seg) = p.path.segments.last().filter(|s| s.ident == "SharedArray") else {
                    return;
                };
                let syn::PathArguments::AngleBracketed(a) = &seg.arguments else {
                    return;
                };
                let mut args = a.args.iter();
                if let Some(syn::GenericArgument::Type(t)) = args.next() {
                    take_type(t, *elem);
                }
                match args.next() {
                    Some(syn::GenericArgument::Const(e)) => take_const(param_name(e), *len),
                    Some(syn::GenericArgument::Type(syn::Type::Path(p))) => {
                        take_const(p.path.get_ident().map(|i| i.to_string()), *len)
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
}

/// Whether `body` has a `return` inside a loop (not in a closure or a nested item).
fn returns_from_a_loop(body: &syn::Block) -> bool {
    use syn::visit::Visit;
    #[derive(Default)]
    struct Finder {
        loops: u32,
        found: bool,
    }
    impl<'a> Visit<'a> for Finder {
        fn visit_expr_return(&mut self, r: &'a syn::ExprReturn) {
            self.found |= self.loops > 0;
            syn::visit::visit_expr_return(self, r);
        }
        fn visit_expr_for_loop(&mut self, l: &'a syn::ExprForLoop) {
            self.loops += 1;
            syn::visit::visit_expr_for_loop(self, l);
            self.loops -= 1;
        }
        fn visit_expr_while(&mut self, l: &'a syn::ExprWhile) {
            self.loops += 1;
            syn::visit::visit_expr_while(self, l);
            self.loops -= 1;
        }
        fn visit_expr_loop(&mut self, l: &'a syn::ExprLoop) {
            self.loops += 1;
            syn::visit::visit_expr_loop(self, l);
            self.loops -= 1;
        }
        fn visit_expr_closure(&mut self, _: &'a syn::ExprClosure) {}
        fn visit_item(&mut self, _: &'a syn::Item) {}
    }
    let mut finder = Finder::default();
    finder.visit_block(body);
    finder.found
}
