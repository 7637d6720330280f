//! `impl` blocks of a `#[cuda_module]`'s structs: their functions become device helpers.
//!
//! A method is a helper whose first parameter may be `self`, `&self` or `&mut self`; an
//! associated function (`V3::zero()`) is a helper called by path. Scanning replaces `Self`
//! by the struct's name (and `Self::Output` by an operator trait's `type Output`), so that the
//! lowering inlines them as it inlines every helper (`lower/methods.rs` finds them). Of the
//! traits, only the arithmetic operator traits can be implemented: `a + b` on a struct calls
//! its `add`.

use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;

/// A function of an `impl` block of one of the module's structs: a device helper that may
/// take `self`, `&self` or `&mut self` first. `Self` in it is already replaced by the
/// struct's name (and `Self::Output` by the operator trait's output type), so the lowering
/// sees an ordinary helper.
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

/// The functions of `impl` block `i`, checked: the block is for a struct of the module, has
/// no generic parameters, and implements no trait or an operator trait.
pub fn scan_impl(i: &syn::ItemImpl, structs: &[syn::ItemStruct]) -> syn::Result<Vec<DeviceMethod>> {
    let named = match &*i.self_ty {
        syn::Type::Path(p) if p.qself.is_none() => p.path.get_ident().cloned(),
        _ => None,
    };
    let Some(self_ty) = named.filter(|n| structs.iter().any(|s| s.ident == *n)) else {
        return Err(syn::Error::new(
            i.self_ty.span(),
            "`impl` blocks in a #[cuda_module] are for the module's own structs (`impl \
             Particle { .. }`)",
        ));
    };
    if !i.generics.params.is_empty() {
        return Err(syn::Error::new(
            i.generics.span(),
            "`impl` blocks of device structs take no generic parameters",
        ));
    }
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
            name: self_ty.clone(),
            output: output.clone(),
        }
        .visit_item_fn_mut(&mut item);
        out.push(DeviceMethod {
            self_ty: self_ty.to_string(),
            trait_name: trait_name.clone(),
            item,
        });
    }
    Ok(out)
}

/// Replaces `Self` by the struct's name, and `Self::Output` by the trait's output type.
struct SelfType {
    name: syn::Ident,
    output: Option<syn::Type>,
}

impl VisitMut for SelfType {
    fn visit_type_mut(&mut self, ty: &mut syn::Type) {
        if let (syn::Type::Path(p), Some(output)) = (&*ty, &self.output)
            && p.qself.is_none()
            && p.path.segments.len() == 2
            && p.path.segments[0].ident == "Self"
            && p.path.segments[1].ident == "Output"
        {
            *ty = output.clone();
        }
        syn::visit_mut::visit_type_mut(self, ty);
    }

    fn visit_ident_mut(&mut self, ident: &mut syn::Ident) {
        if ident == "Self" {
            *ident = syn::Ident::new(&self.name.to_string(), ident.span());
        }
    }
}
