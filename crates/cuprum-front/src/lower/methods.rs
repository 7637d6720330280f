//! Calls of the functions of the module's `impl` blocks (`crate::impls`): methods with
//! `self`, `&self` or `&mut self` (`p.advance(dt)`, `Particle::advance(&mut p, dt)`),
//! associated functions (`V3::zero()`), and the operator traits (`a + b`, `-a`, `a += b` on a
//! struct). Each is inlined as a helper; a `&self` or `&mut self` receiver is the place the
//! receiver expression names (`references`), so `&mut self` methods update the caller's
//! struct, field or element.

use proc_macro2::Span;
use syn::spanned::Spanned;

use super::references::Arg;
use super::*;

/// What `struct_method_call` made of a method call.
pub(super) enum MethodCall {
    /// A method of the module's structs, inlined: its result.
    Done(Val),
    /// Not one: the receiver's value when it was already evaluated.
    NotOurs(Option<Val>),
}

/// The struct a binding holds, if it holds one.
fn struct_of(b: &Binding) -> Option<&str> {
    match b {
        Binding::Struct(name, _) | Binding::Val(Val::Struct(name, _)) => Some(name),
        _ => None,
    }
}

impl Lowerer<'_> {
    /// The function `Type::name` of an `impl` block of the module (`V3::zero`).
    pub(super) fn find_associated(&self, path: &syn::Path) -> Option<&syn::ItemFn> {
        let [ty, name] = Vec::from_iter(&path.segments)[..] else {
            return None;
        };
        self.find_method(&ty.ident.to_string(), &name.ident.to_string())
    }

    fn find_method(&self, self_ty: &str, name: &str) -> Option<&syn::ItemFn> {
        let self_ty = crate::generic_structs::base_name(self_ty);
        self.info
            .methods
            .iter()
            .find(|m| m.self_ty == self_ty && m.item.sig.ident == name)
            .map(|m| &m.item)
    }

    /// `receiver.method(args)` when `receiver` is a struct with that method in the module.
    pub(super) fn struct_method_call(&mut self, m: &syn::ExprMethodCall) -> Result<MethodCall> {
        if !self
            .info
            .methods
            .iter()
            .any(|d| d.item.sig.ident == m.method)
        {
            return Ok(MethodCall::NotOurs(None));
        }
        let receiver = self.place_binding(&m.receiver)?;
        if let Binding::Val(Val::AggRef(element)) = &receiver
            && let crate::layout::ElemType::Struct { name, .. } = &element.ty
            && let Some(f) = self.find_method(name, &m.method.to_string()).cloned()
        {
            let element = element.clone();
            return self
                .element_method_call(m, &f, element)
                .map(MethodCall::Done);
        }
        let found = struct_of(&receiver).and_then(|s| self.find_method(s, &m.method.to_string()));
        let Some(f) = found.cloned() else {
            return Ok(MethodCall::NotOurs(Some(
                self.read_binding(&receiver, m.receiver.span())?,
            )));
        };
        self.method_call_on(m, &f, receiver).map(MethodCall::Done)
    }

    /// A method called on a struct element of memory (`p.advance(dt)` with `p` from
    /// `get_mut`, `ps[i].energy()`): the element is loaded into a struct of variables, the
    /// method runs on that, and a `&mut self` method's result is stored back. The element is
    /// the calling thread's own (a `DisjointSlice` element, a phased array's slot) or read
    /// only, so the copy is the element for the call's duration.
    fn element_method_call(
        &mut self,
        m: &syn::ExprMethodCall,
        f: &syn::ItemFn,
        element: memory::MemRef,
    ) -> Result<Val> {
        let span = m.span();
        let writes = matches!(
            f.sig.inputs.first(),
            Some(syn::FnArg::Receiver(r)) if r.reference.is_some() && r.mutability.is_some()
        );
        if writes && !element.mutable {
            return err(
                m.receiver.span(),
                format!(
                    "`{}` takes `&mut self`, and this element is read-only",
                    f.sig.ident
                ),
            );
        }
        let Val::Struct(name, fields) = self.load_mem(&element, span)? else {
            return err(span, "internal compiler error: a struct element expected");
        };
        let copy = self.mutable_struct("self", name, fields, span)?;
        let result = self.method_call_on(m, f, copy.clone())?;
        if writes {
            let updated = self.read_binding(&copy, span)?;
            self.store_mem(&element, updated, span)?;
        }
        Ok(result)
    }

    /// `m`, the call of the struct method `f`, with `receiver` the place of its receiver.
    fn method_call_on(
        &mut self,
        m: &syn::ExprMethodCall,
        f: &syn::ItemFn,
        receiver: Binding,
    ) -> Result<Val> {
        let span = m.span();
        let Some(syn::FnArg::Receiver(r)) = f.sig.inputs.first() else {
            return err(
                span,
                format!(
                    "`{}` takes no `self`: call it as `{}::{}(..)`",
                    f.sig.ident,
                    struct_of(&receiver).unwrap_or_default(),
                    f.sig.ident
                ),
            );
        };
        if f.sig.inputs.len() != m.args.len() + 1 {
            return err(
                span,
                format!(
                    "`{}` takes {} arguments",
                    f.sig.ident,
                    f.sig.inputs.len() - 1
                ),
            );
        }
        let open = self.open_sites_of(&receiver);
        let first = if r.reference.is_some() {
            Arg::Place(receiver)
        } else {
            Arg::Value(self.read_binding(&receiver, m.receiver.span())?)
        };
        let rest: Vec<&syn::Expr> = m.args.iter().collect();
        let mut args = vec![first];
        args.extend(self.helper_args(f.sig.inputs.iter().skip(1), &rest)?);
        let path = syn::Path::from(syn::PathSegment {
            ident: m.method.clone(),
            arguments: match &m.turbofish {
                Some(t) => syn::PathArguments::AngleBracketed(t.clone()),
                None => syn::PathArguments::None,
            },
        });
        self.open_receiver = open;
        self.call_with_args(f, &path, args, span)
    }

    /// Binds a method's receiver: `&self` and `&mut self` to the place, `self` to a copy.
    pub(super) fn bind_receiver(&mut self, r: &syn::Receiver, arg: Arg) -> Result<()> {
        if r.colon_token.is_some() {
            return err(
                r.span(),
                "write the receiver as `self`, `&self` or `&mut self` in device code",
            );
        }
        let name = "self".to_string();
        if r.reference.is_some() {
            let place = match arg {
                Arg::Place(b) => b,
                Arg::Value(v) => Binding::Val(v),
            };
            self.bind(name, place);
            return Ok(());
        }
        let value = match arg {
            Arg::Value(v) => v,
            Arg::Place(b) => self.read_binding(&b, r.span())?,
        };
        let pat = syn::Pat::Ident(syn::PatIdent {
            attrs: Vec::new(),
            by_ref: None,
            mutability: r.mutability,
            ident: syn::Ident::new("self", r.self_token.span),
            subpat: None,
        });
        let site = self.site();
        self.bind_pattern(&pat, None, value, site, r.span(), false)
    }

    /// The function of the module's `impl <trait_name> for <self_ty>` whose right operand is
    /// the struct `rhs_struct` (`None`: not a struct); an impl without a second parameter
    /// (`Neg`) fits any.
    fn trait_impl(
        &self,
        self_ty: &str,
        trait_name: &str,
        rhs_struct: Option<&str>,
    ) -> Option<syn::ItemFn> {
        let self_ty = crate::generic_structs::base_name(self_ty);
        let rhs_struct = rhs_struct.map(crate::generic_structs::base_name);
        self.info
            .methods
            .iter()
            .find(|m| {
                m.self_ty == self_ty
                    && m.trait_name.as_deref() == Some(trait_name)
                    && match m.item.sig.inputs.iter().nth(1) {
                        Some(syn::FnArg::Typed(pt)) => {
                            crate::generic_structs::declaration(&pt.ty, &self.info.structs)
                                .map(|d| d.ident.to_string())
                                .as_deref()
                                == rhs_struct
                        }
                        _ => true,
                    }
            })
            .map(|m| m.item.clone())
    }

    /// `operands[0] <op> operands[1]` (or `-operands[0]`) on a struct: its `impl <Trait>`.
    pub(super) fn struct_operator(
        &mut self,
        trait_name: &str,
        operands: Vec<Val>,
        span: Span,
    ) -> Result<Val> {
        let Some(Val::Struct(self_ty, _)) = operands.first() else {
            return err(span, "internal compiler error: operator on a non-struct");
        };
        let rhs_struct = match operands.get(1) {
            Some(Val::Struct(n, _)) => Some(n.clone()),
            _ => None,
        };
        let Some(f) = self.trait_impl(self_ty, trait_name, rhs_struct.as_deref()) else {
            return err(
                span,
                format!(
                    "`{self_ty}` has no `impl {trait_name}` for these operands in this module: \
                     implement `std::ops::{trait_name}` for it there, or call a helper"
                ),
            );
        };
        let args = operands.into_iter().map(Arg::Value).collect();
        let path = syn::Path::from(f.sig.ident.clone());
        self.call_with_args(&f, &path, args, span)
    }

    /// `a + b` and friends when `a` is a struct.
    pub(super) fn struct_binary_operator(
        &mut self,
        b: &syn::ExprBinary,
        l: Val,
        r: Val,
    ) -> Result<Val> {
        use syn::BinOp as B;
        let name = match b.op {
            B::Add(_) => "Add",
            B::Sub(_) => "Sub",
            B::Mul(_) => "Mul",
            B::Div(_) => "Div",
            B::Rem(_) => "Rem",
            B::BitAnd(_) => "BitAnd",
            B::BitOr(_) => "BitOr",
            B::BitXor(_) => "BitXor",
            _ => {
                return err(
                    b.span(),
                    "structs cannot be compared or shifted in device code: compare their fields",
                );
            }
        };
        self.struct_operator(name, vec![l, r], b.span())
    }

    /// `a += b` when `a` names a struct of the module that implements `AddAssign` (and the
    /// others); `None` when `a` is not a struct.
    pub(super) fn struct_compound_assign(&mut self, b: &syn::ExprBinary) -> Result<Option<Val>> {
        use syn::BinOp as B;
        let name = match b.op {
            B::AddAssign(_) => "AddAssign",
            B::SubAssign(_) => "SubAssign",
            B::MulAssign(_) => "MulAssign",
            B::DivAssign(_) => "DivAssign",
            _ => return Ok(None),
        };
        if !self
            .info
            .methods
            .iter()
            .any(|m| m.trait_name.as_deref() == Some(name))
        {
            return Ok(None);
        }
        let target = self.place_binding(&b.left)?;
        let Some(self_ty) = struct_of(&target).map(str::to_string) else {
            return Ok(None);
        };
        let rhs = self.expr(&b.right)?;
        let rhs_struct = match &rhs {
            Val::Struct(n, _) => Some(n.clone()),
            _ => None,
        };
        let Some(f) = self.trait_impl(&self_ty, name, rhs_struct.as_deref()) else {
            return err(
                b.span(),
                format!("`{self_ty}` has no `impl {name}` for these operands in this module"),
            );
        };
        let path = syn::Path::from(f.sig.ident.clone());
        self.open_receiver = self.open_sites_of(&target);
        let args = vec![Arg::Place(target), Arg::Value(rhs)];
        Ok(Some(self.call_with_args(&f, &path, args, b.span())?))
    }
}
