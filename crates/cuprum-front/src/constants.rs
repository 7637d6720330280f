//! cuda-oxide's constant memory: `#[constant] static SCALE: ConstantMemory<f32> =
//! ConstantMemory::UNINIT;` in a `#[cuda_module]`, read in kernels with `SCALE.get()` (a
//! copy) or `SCALE.get_ref()` (in place), set from the host with the module's
//! `set_scale(&stream, &value)`.
//!
//! The value lives in a one-element device buffer that the loaded module owns (zeroed when
//! it loads, as CUDA's `.const` memory starts zeroed). Every kernel that names a constant
//! receives that buffer as one more read-only slice parameter, after its own parameters
//! (`__cuprum_constant_SCALE: &[f32]`), and `SCALE.get()` reads its element 0. So a set is
//! ordered with launches like any other write of a buffer the launches read (the runtime's
//! per-buffer stream order): a launch queued after it on the stream sees the new value, and
//! a set on another stream waits for the launches reading the old one. Constants are read in
//! kernel bodies; a helper that needs one takes its value as a parameter.

use syn::spanned::Spanned;
use syn::visit::Visit;
use syn::visit_mut::VisitMut;

use crate::items::{HostParam, KernelInfo};

/// One `#[constant] static NAME: ConstantMemory<T> = ConstantMemory::UNINIT;`.
#[derive(Clone, Debug)]
pub struct ConstantInfo {
    /// The static's name (`SCALE`); the host's setter is `set_` and its lower-case form.
    pub name: syn::Ident,
    /// `T`.
    pub elem: syn::Type,
}

impl ConstantInfo {
    /// The hidden kernel parameter that carries the constant's buffer.
    pub fn param_name(&self) -> syn::Ident {
        quote::format_ident!("__cuprum_constant_{}", self.name.to_string().to_lowercase())
    }

    /// The host's setter: `set_scale` for `SCALE`.
    pub fn setter(&self) -> syn::Ident {
        quote::format_ident!("set_{}", self.name.to_string().to_lowercase())
    }
}

/// Reads a `#[constant]` static, or says what to write instead.
pub fn scan_constant(s: &syn::ItemStatic) -> syn::Result<ConstantInfo> {
    if let syn::StaticMutability::Mut(m) = &s.mutability {
        return Err(syn::Error::new(
            m.span(),
            "a `#[constant]` static is not `mut`: kernels only read it, and the host sets it \
             with the module's `set_<name>`",
        ));
    }
    let elem = constant_memory_elem(&s.ty).ok_or_else(|| {
        syn::Error::new(
            s.ty.span(),
            "a `#[constant]` static has the type `ConstantMemory<T>`: write `static NAME: \
             ConstantMemory<T> = ConstantMemory::UNINIT;`",
        )
    })?;
    let uninit = matches!(&*s.expr, syn::Expr::Path(p)
        if p.path.segments.last().is_some_and(|l| l.ident == "UNINIT"));
    if !uninit {
        return Err(syn::Error::new(
            s.expr.span(),
            "a `#[constant]` starts zeroed: initialize it with `ConstantMemory::UNINIT` and set \
             its value from the host with the module's `set_<name>`",
        ));
    }
    Ok(ConstantInfo {
        name: s.ident.clone(),
        elem: elem.clone(),
    })
}

/// `T` of `ConstantMemory<T>`.
fn constant_memory_elem(ty: &syn::Type) -> Option<&syn::Type> {
    let syn::Type::Path(p) = ty else {
        return None;
    };
    let last = p.path.segments.last()?;
    if last.ident != "ConstantMemory" {
        return None;
    }
    match &last.arguments {
        syn::PathArguments::AngleBracketed(a) if a.args.len() == 1 => match a.args.first()? {
            syn::GenericArgument::Type(t) => Some(t),
            _ => None,
        },
        _ => None,
    }
}

/// Gives `kernel` a hidden parameter for each constant its body reads, and rewrites the
/// reads (`NAME.get()` and `NAME.get_ref()`) into element 0 of that parameter.
pub fn bind_constants(
    kernel: &mut KernelInfo,
    constants: &[ConstantInfo],
    structs: &[syn::ItemStruct],
    consts: &[syn::ItemConst],
) -> syn::Result<()> {
    for c in constants {
        let mut reads = ReadRewriter {
            constant: c,
            param: c.param_name(),
            found: false,
        };
        reads.visit_block_mut(&mut kernel.item.block);
        if let Some(span) = mentions(&kernel.item.block, &c.name) {
            return Err(misuse(c, span));
        }
        if !reads.found {
            continue;
        }
        let elem = &c.elem;
        let rust_type: syn::Type = syn::parse_quote!(&[#elem]);
        let placeholder = kernel
            .type_params
            .iter()
            .map(|t| (t.clone(), cuprum_ir::ScalarType::F32))
            .collect();
        let ty = crate::types::param_type_in(&rust_type, false, &placeholder, structs, consts)
            .map_err(|e| {
                syn::Error::new(
                    c.elem.span(),
                    format!("this type cannot be a constant's value: {e}"),
                )
            })?;
        kernel.params.push(HostParam {
            name: c.param_name(),
            rust_type,
            ty,
            constant: Some(c.clone()),
        });
    }
    Ok(())
}

/// The error for a helper, method or other expression that names a constant.
pub fn misuse(c: &ConstantInfo, span: proc_macro2::Span) -> syn::Error {
    syn::Error::new(
        span,
        format!(
            "a `#[constant]` is read in a kernel's body with `{0}.get()` (a copy) or \
             `{0}.get_ref()` (in place); a helper that needs it takes the value as a parameter",
            c.name
        ),
    )
}

/// Where `block` names `name` as a path, if it does.
pub fn mentions(block: &syn::Block, name: &syn::Ident) -> Option<proc_macro2::Span> {
    struct Finder<'n> {
        name: &'n syn::Ident,
        at: Option<proc_macro2::Span>,
    }
    impl<'ast> Visit<'ast> for Finder<'_> {
        fn visit_expr_path(&mut self, p: &'ast syn::ExprPath) {
            if p.path.is_ident(self.name) && self.at.is_none() {
                self.at = Some(p.span());
            }
            syn::visit::visit_expr_path(self, p);
        }
    }
    let mut f = Finder { name, at: None };
    f.visit_block(block);
    f.at
}

/// Rewrites `NAME.get()` and `NAME.get_ref()` to the place `__cuprum_constant_NAME[0usize]`:
/// a path through it (`NAME.get_ref()[k]`, `.field`) reads only what it names, and binding
/// it copies the value, which no one can change while the kernel runs.
struct ReadRewriter<'c> {
    constant: &'c ConstantInfo,
    param: syn::Ident,
    found: bool,
}

impl VisitMut for ReadRewriter<'_> {
    fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
        if let syn::Expr::MethodCall(m) = e
            && m.args.is_empty()
            && matches!(&*m.receiver, syn::Expr::Path(p) if p.path.is_ident(&self.constant.name))
        {
            let param = syn::Ident::new(&self.param.to_string(), m.receiver.span());
            if m.method == "get" || m.method == "get_ref" {
                *e = syn::parse_quote!(#param[0usize]);
                self.found = true;
                return;
            }
        }
        syn::visit_mut::visit_expr_mut(self, e);
    }
}
