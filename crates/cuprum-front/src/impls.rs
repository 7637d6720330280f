//! `impl` blocks of a `#[cuda_module]`'s structs: their functions become device helpers.
//!
//! A method is a helper whose first parameter may be `self`, `&self` or `&mut self`; an
//! associated function (`V3::zero()`) is a helper called by path. Scanning replaces `Self`
//! by the struct's type (and `Self::Output` by an operator trait's `type Output`), so that the
//! lowering inlines them as it inlines every helper (`lower/methods.rs` finds them). A generic
//! block (`impl<T: Num> Acc<T>`) gives its parameters to each of its functions, which the
//! lowering infers per call as a generic helper's. Of the traits, only the arithmetic
//! operator traits can be implemented: `a + b` on a struct calls its `add`.

use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;

/// A function of an `impl` block of one of the module's structs: a device helper that may
/// take `self`, `&self` or `&mut self` first. `Self` in it is already replaced by the
/// struct's type (and `Self::Output` by the operator trait's output type), and a generic
/// block's parameters are the function's first (see [`impl_origin`]), so the lowering sees an
/// ordinary, possibly generic, helper.
#[derive(Clone, Debug)]
pub struct DeviceMethod {
    /// The struct the block is for.
    pub self_ty: String,
    /// The operator trait the block implements (`Add`), or `None` for an inherent block.
    pub trait_name: Option<String>,
    /// The function, as a helper.
    pub item: syn::ItemFn,
}

/// The operator traits an `impl` block of the module may implement, with their methods:
/// `a + b` on a struct calls `add`, `-a` calls `neg`, `a += b` calls `add_assign`.
pub const OPERATOR_TRAITS: [(&str, &str); 13] = [
    ("Add", "add"),
    ("Sub", "sub"),
    ("Mul", "mul"),
    ("Div", "div"),
    ("Rem", "rem"),
    ("BitAnd", "bitand"),
    ("BitOr", "bitor"),
    ("BitXor", "bitxor"),
    ("Neg", "neg"),
    ("AddAssign", "add_assign"),
    ("SubAssign", "sub_assign"),
    ("MulAssign", "mul_assign"),
    ("DivAssign", "div_assign"),
];

/// The functions of `impl` block `i`, checked: the block is for a struct of the module
/// (generic ones with their parameters: `impl<T: Num> Acc<T>`, bounds every number meets),
/// and implements no trait or an operator trait.
pub fn scan_impl(i: &syn::ItemImpl, structs: &[syn::ItemStruct]) -> syn::Result<Vec<DeviceMethod>> {
    let named = match &*i.self_ty {
        syn::Type::Path(p) if p.qself.is_none() => p.path.segments.last().map(|s| s.ident.clone()),
        _ => None,
    };
    let Some(self_ty) = named.filter(|n| structs.iter().any(|s| s.ident == *n)) else {
        return Err(syn::Error::new(
            i.self_ty.span(),
            "`impl` blocks in a #[cuda_module] are for the module's own structs (`impl \
             Particle { .. }`, `impl<T: Num> Acc<T> { .. }`)",
        ));
    };
    crate::generic_structs::check_params(&i.generics, &format!("impl {self_ty}"))?;
    let trait_name = match &i.trait_ {
        None => None,
        Some((_, path, _)) => {
            let last = path.segments.last();
            let name = last.map(|s| s.ident.to_string()).unwrap_or_default();
            if !OPERATOR_TRAITS.iter().any(|(t, _)| *t == name) {
                let ops: Vec<&str> = OPERATOR_TRAITS.iter().map(|(t, _)| *t).collect();
                return Err(syn::Error::new(
                    path.span(),
                    format!(
                        "only the operator traits ({}) can be implemented in device code: write \
                         the methods of `{name}` in an inherent `impl {self_ty} {{ .. }}`",
                        ops.join(", ")
                    ),
                ));
            }
            Some(name)
        }
    };
    let mut output: Option<syn::Type> = None;
    let mut fns = Vec::new();
    for item in &i.items {
        match item {
            syn::ImplItem::Fn(f) => fns.push(f),
            syn::ImplItem::Type(t) if trait_name.is_some() && t.ident == "Output" => {
                output = Some(t.ty.clone());
            }
            syn::ImplItem::Const(c) => {
                return Err(syn::Error::new(
                    c.span(),
                    "associated constants are not supported in device code yet: use a `const` \
                     of the module",
                ));
            }
            other => {
                return Err(syn::Error::new(
                    other.span(),
                    "only functions can appear in an `impl` block of device code",
                ));
            }
        }
    }
    let mut out = Vec::with_capacity(fns.len());
    for f in fns {
        if let Some(a) = f.attrs.iter().find(|a| {
            crate::items::CUPRUM_ATTRS
                .iter()
                .any(|n| crate::items::attr_is(a, n))
        }) {
            return Err(syn::Error::new(
                a.span(),
                "kernels are free functions of the module, not methods",
            ));
        }
        let mut item = syn::ItemFn {
            attrs: f.attrs.clone(),
            vis: f.vis.clone(),
            sig: f.sig.clone(),
            block: Box::new(f.block.clone()),
        };
        crate::types::refuse_trait_objects(&item)?;
        SelfType {
            self_ty: (*i.self_ty).clone(),
            output: output.clone(),
        }
        .visit_item_fn_mut(&mut item);
        // The block's parameters become the function's first ones: the lowering infers them
        // per call, from the receiver's type (`Acc<f32>`), the path's (`Acc::<f32>::new`),
        // the arguments, or where the result goes, as it infers a generic helper's.
        let impl_params = i.generics.params.len();
        if impl_params > 0 {
            let own = std::mem::take(&mut item.sig.generics.params);
            item.sig.generics.params = i.generics.params.iter().cloned().chain(own).collect();
            if let Some(w) = &i.generics.where_clause {
                let clause = item.sig.generics.make_where_clause();
                clause.predicates.extend(w.predicates.iter().cloned());
            }
        }
        let self_type = &i.self_ty;
        item.attrs
            .push(syn::parse_quote!(#[__cuprum_impl(#impl_params, #self_type)]));
        out.push(DeviceMethod {
            self_ty: self_ty.to_string(),
            trait_name: trait_name.clone(),
            item,
        });
    }
    Ok(out)
}

/// What the scan recorded on a function of an `impl` block: how many of its first generic
/// parameters are the block's, and the block's self type (`Acc<T>`). `None` for a plain
/// helper.
pub fn impl_origin(f: &syn::ItemFn) -> Option<(usize, syn::Type)> {
    let attr = f
        .attrs
        .iter()
        .find(|a| a.path().is_ident("__cuprum_impl"))?;
    attr.parse_args_with(|input: syn::parse::ParseStream| {
        let n: syn::LitInt = input.parse()?;
        let _: syn::Token![,] = input.parse()?;
        let ty: syn::Type = input.parse()?;
        Ok((n.base10_parse::<usize>()?, ty))
    })
    .ok()
}

/// Replaces `Self` by the block's self type (`Acc<T>`: in expressions `Acc::<T>`), and
/// `Self::Output` by the trait's output type.
struct SelfType {
    self_ty: syn::Type,
    output: Option<syn::Type>,
}

impl SelfType {
    /// The self type's last segment: its name and generic arguments.
    fn segment(&self) -> Option<&syn::PathSegment> {
        match &self.self_ty {
            syn::Type::Path(p) => p.path.segments.last(),
            _ => None,
        }
    }
}

impl VisitMut for SelfType {
    fn visit_type_mut(&mut self, ty: &mut syn::Type) {
        if let syn::Type::Path(p) = &*ty
            && p.qself.is_none()
        {
            let segs = &p.path.segments;
            if let (2, Some(output)) = (segs.len(), &self.output)
                && segs[0].ident == "Self"
                && segs[1].ident == "Output"
            {
                *ty = output.clone();
                // `type Output = Self;`
                self.visit_type_mut(ty);
                return;
            }
            if segs.len() == 1 && segs[0].ident == "Self" {
                *ty = self.self_ty.clone();
                return;
            }
        }
        syn::visit_mut::visit_type_mut(self, ty);
    }

    fn visit_path_segment_mut(&mut self, seg: &mut syn::PathSegment) {
        if seg.ident == "Self"
            && let Some(own) = self.segment().cloned()
        {
            seg.ident = syn::Ident::new(&own.ident.to_string(), seg.ident.span());
            if seg.arguments.is_none()
                && let syn::PathArguments::AngleBracketed(mut a) = own.arguments
            {
                // In an expression path the arguments need their `::` (`Acc::<T>::new()`).
                a.colon2_token = Some(Default::default());
                seg.arguments = syn::PathArguments::AngleBracketed(a);
            }
            return;
        }
        syn::visit_mut::visit_path_segment_mut(self, seg);
    }

    fn visit_ident_mut(&mut self, ident: &mut syn::Ident) {
        if ident == "Self"
            && let Some(own) = self.segment()
        {
            *ident = syn::Ident::new(&own.ident.to_string(), ident.span());
        }
    }
}
