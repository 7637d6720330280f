//! `#[derive(DeviceCopy)]`: implements the unsafe `DeviceCopy` trait for a struct only when
//! rustc can prove it is plain data laid out as the device lays it out (`cuprum_front::layout`,
//! `#[repr(C)]`): every field is itself `DeviceCopy` (so no references, pointers or heap
//! types, and no padding inside), and the struct has no padding between or after its fields
//! (a padding byte is uninitialized memory, which `DeviceCopy`'s byte copies must not read).

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

/// The derive's expansion, or the reason it refuses the type.
pub fn expand(input: &syn::DeriveInput) -> syn::Result<TokenStream> {
    let name = &input.ident;
    let data = match &input.data {
        syn::Data::Struct(s) => s,
        syn::Data::Enum(e) => {
            return Err(syn::Error::new(
                e.enum_token.span(),
                "`DeviceCopy` cannot be derived for enums: not every bit pattern a kernel \
                 stores is a valid variant. Store the discriminant as an integer field instead",
            ));
        }
        syn::Data::Union(u) => {
            return Err(syn::Error::new(
                u.union_token.span(),
                "`DeviceCopy` cannot be derived for unions: use a struct of plain fields",
            ));
        }
    };
    if !has_repr_c(&input.attrs) {
        return Err(syn::Error::new(
            name.span(),
            format!(
                "`{name}` needs `#[repr(C)]` to derive `DeviceCopy`: without it Rust may \
                 reorder its fields, and the device reads them in declaration order"
            ),
        ));
    }
    let mut field_checks = Vec::new();
    let mut sizes = Vec::new();
    for field in &data.fields {
        let ty = &field.ty;
        if let Some(why) = not_plain_data(ty) {
            return Err(syn::Error::new(ty.span(), why));
        }
        field_checks.push(quote_spanned! {ty.span()=> __cuprum_device_copy::<#ty>(); });
        sizes.push(quote!(::std::mem::size_of::<#ty>()));
    }
    let msg = format!(
        "`{name}` has padding bytes (uninitialized memory the device copy would read): \
         reorder its fields from the largest alignment to the smallest, or add explicit \
         padding fields (`_pad: [u8; N]`)"
    );
    if !input.generics.params.is_empty() {
        // A generic struct: `DeviceCopy` where every field is, and the padding check per
        // instantiation (only an instantiation knows its fields' sizes), evaluated wherever
        // its bytes are copied (see `DeviceCopy::__ASSERT_NO_PADDING`).
        let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
        let mut where_clause = where_clause.cloned().unwrap_or_else(|| syn::WhereClause {
            where_token: Default::default(),
            predicates: Default::default(),
        });
        for field in &data.fields {
            let ty = &field.ty;
            where_clause
                .predicates
                .push(syn::parse_quote_spanned!(ty.span()=> #ty: ::cuprum::DeviceCopy));
        }
        return Ok(quote! {
            // SAFETY: `#[repr(C)]`, every field `DeviceCopy` (the `where` clause) and, as
            // `__ASSERT_NO_PADDING` asserts for each instantiation wherever its bytes are
            // copied, no padding between or after the fields.
            unsafe impl #impl_generics ::cuprum::DeviceCopy for #name #ty_generics #where_clause {
                const __ASSERT_NO_PADDING: () = ::std::assert!(
                    ::std::mem::size_of::<Self>() == 0 #(+ #sizes)*,
                    #msg
                );
            }
        });
    }
    Ok(quote! {
        const _: () = {
            fn __cuprum_device_copy<T: ::cuprum::DeviceCopy>() {}
            #[allow(dead_code)]
            fn __cuprum_fields() {
                #(#field_checks)*
            }
            ::std::assert!(
                ::std::mem::size_of::<#name>() == 0 #(+ #sizes)*,
                #msg
            );
        };
        // SAFETY: `#[repr(C)]`, every field `DeviceCopy` (plain data whose every stored bit
        // pattern is valid, no padding inside) and, as asserted above, no padding between or
        // after the fields.
        unsafe impl ::cuprum::DeviceCopy for #name {}
    })
}

fn has_repr_c(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("repr") && {
            let mut c = false;
            let _ = a.parse_nested_meta(|m| {
                c |= m.path.is_ident("C") || m.path.is_ident("transparent");
                Ok(())
            });
            c
        }
    })
}

/// Why a field type cannot be plain device data, for the types the derive sees directly
/// (the `DeviceCopy` bound on each field catches the rest).
fn not_plain_data(ty: &syn::Type) -> Option<String> {
    match ty {
        syn::Type::Reference(_) => Some(
            "references cannot be copied to the device: they point into host memory. Store \
             the value itself (or an index into another buffer)"
                .into(),
        ),
        syn::Type::Ptr(_) => Some(
            "raw pointers cannot be part of `DeviceCopy` data: a host pointer means nothing \
             on the device. Store an index into another buffer instead"
                .into(),
        ),
        syn::Type::Array(a) => not_plain_data(&a.elem),
        syn::Type::Tuple(t) if !t.elems.is_empty() => Some(
            "tuples have no promised layout in Rust: use a nested `#[repr(C)]` struct (with \
             `#[derive(Clone, Copy, DeviceCopy)]`) or an array"
                .into(),
        ),
        _ => None,
    }
}
