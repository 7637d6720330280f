//! Compile-time checks that a host element type has the layout the device code was compiled
//! for: its size, alignment and every struct field's offset, as `cuprum_front::layout` (the
//! one definition) computes them, asserted in `const` blocks, so a mismatch (a struct without
//! `#[repr(C)]`, a tuple rustc reordered) fails `cargo build` instead of reading wrong bytes.

use cuprum_front::layout::ElemType;
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};

/// The `const { assert!(..) }` statements for a slice parameter whose host element type is
/// `ty` and whose device element type is `elem`; `generic`: the type names a kernel type
/// parameter, whose layout is only known per launch (only the structs are checked then).
pub fn assertions(ty: &syn::Type, elem: &ElemType, generic: bool, span: Span) -> TokenStream {
    let mut out = TokenStream::new();
    if !generic {
        let l = elem.layout();
        let (size, align) = (l.size as usize, l.align as usize);
        let msg = format!(
            "the host type `{}` must have the device layout (size {size}, alignment {align}): \
             declare structs `#[repr(C)]` with `#[derive(Clone, Copy, DeviceCopy)]`",
            elem.rust_name()
        );
        out.extend(quote_spanned! {span=>
            const {
                ::std::assert!(
                    ::std::mem::size_of::<#ty>() == #size
                        && ::std::mem::align_of::<#ty>() == #align,
                    #msg
                )
            };
        });
    }
    // In a generic kernel, instances of generic structs were laid out for a placeholder
    // type: `generic_assertions` checks each instantiation instead.
    let mut seen = Vec::new();
    struct_checks(elem, span, generic, &mut seen, &mut out);
    out
}

/// The assertions for a slice parameter of a generic kernel whose host element type `ty`
/// names its type parameters `params` (`&[Acc<T>]`): per instantiation, since the layout
/// depends on what they stand for. `cases` gives, per size of the parameters, the device
/// element type (`cuprum_front::layout::per_parameter_size`); each becomes one assertion of
/// the host type's size, alignment and (for a struct) its fields' offsets, taken where the
/// parameters have those sizes, so every launch's instantiation is checked where rustc
/// builds it.
pub fn generic_assertions(
    ty: &syn::Type,
    params: &[String],
    cases: &[(Vec<u64>, ElemType)],
    span: Span,
) -> TokenStream {
    let mut branches = Vec::new();
    for (sizes, elem) in cases {
        let when = params.iter().zip(sizes).map(|(p, size)| {
            let p = format_ident!("{}", p, span = span);
            let size = *size as usize;
            quote!(::std::mem::size_of::<#p>() == #size)
        });
        let l = elem.layout();
        let (size, align) = (l.size as usize, l.align as usize);
        let mut conds = vec![
            quote!(::std::mem::size_of::<#ty>() == #size),
            quote!(::std::mem::align_of::<#ty>() == #align),
        ];
        if let ElemType::Struct { fields, .. } = elem {
            for ((field, _), offset) in fields.iter().zip(elem.offsets()) {
                let f = format_ident!("{}", field, span = span);
                let offset = offset as usize;
                conds.push(quote!(::std::mem::offset_of!(#ty, #f) == #offset));
            }
        }
        let msg = format!(
            "the host type `{}` must have the device layout of each instantiation (here size \
             {size}, alignment {align}): declare it `#[repr(C)]` with `#[derive(Clone, Copy, \
             DeviceCopy)]`",
            quote!(#ty).to_string().replace(' ', "")
        );
        branches.push(quote! {
            if #(#when)&&* {
                ::std::assert!(#(#conds)&&*, #msg);
            }
        });
    }
    quote_spanned! {span=> const { #(#branches)* }; }
}

/// Offsets and sizes of every struct inside `elem`, once per struct.
fn struct_checks(
    elem: &ElemType,
    span: Span,
    generic: bool,
    seen: &mut Vec<String>,
    out: &mut TokenStream,
) {
    match elem {
        ElemType::Scalar(_) => {}
        ElemType::Array(inner, _) => struct_checks(inner, span, generic, seen, out),
        ElemType::Tuple(items) => {
            for t in items {
                struct_checks(t, span, generic, seen, out);
            }
        }
        ElemType::Struct { name, fields } => {
            if seen.contains(name) || (generic && name.contains('<')) {
                return;
            }
            seen.push(name.clone());
            // An instance of a generic struct is named by its Rust spelling (`Acc<f32>`).
            let Ok(ident) = syn::parse_str::<syn::Type>(name) else {
                return;
            };
            let size = elem.layout().size as usize;
            let mut conds = vec![quote!(::std::mem::size_of::<#ident>() == #size)];
            for ((field, _), offset) in fields.iter().zip(elem.offsets()) {
                let f = format_ident!("{}", field, span = span);
                let offset = offset as usize;
                conds.push(quote!(::std::mem::offset_of!(#ident, #f) == #offset));
            }
            let msg = format!(
                "`{name}` must have the device layout (`#[repr(C)]`): add `#[repr(C)]` and \
                 `#[derive(Clone, Copy, DeviceCopy)]` to it"
            );
            out.extend(quote_spanned! {span=>
                const { ::std::assert!(#(#conds)&&*, #msg) };
            });
            for (_, f) in fields {
                struct_checks(f, span, generic, seen, out);
            }
        }
    }
}

/// Whether `ty` mentions one of `params` (a kernel's type parameters).
pub fn mentions(ty: &syn::Type, params: &[String]) -> bool {
    let text = quote!(#ty).to_string();
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .any(|word| params.iter().any(|p| p == word))
}
