//! `#[cuprum::tile::module]`: runs the tile front end on a module at `cargo build` (so shape
//! errors and unsupported code are compile errors at the user's span), embeds the module's
//! tile IR, and generates one host launcher per `#[cuprum::tile::entry]`.
//!
//! The launchers are made from each [`TileKernel`]'s parameters (their kinds and element
//! types) and from the entry's generic parameters in source order (what `.generics(..)`
//! gives values to). When the front end refuses the module, its error is emitted together
//! with launchers made from the entries' signatures alone ([`Launcher::from_signature`]), so
//! the program's calls still type-check and the front end's error is the only one shown.
//! Kernel bodies are not emitted: they are tile code, not host Rust (nothing parses Rust at
//! run time; the program reads the embedded IR).

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

use cuprum_tile_ir::{Elem, ParamKind, ScalarType, TensorAccess, TileKernel, TileModule};

/// What one launcher parameter takes.
#[derive(Clone, Debug, PartialEq, Eq)]
enum HostParam {
    /// A `&mut Tensor<E, ..>`: a partition of tensors of `E`.
    Output(ElemType),
    /// A `&Tensor<E, ..>`: a tensor of `E`.
    Input(ElemType),
    /// A scalar of type `E`.
    Scalar(ElemType),
    /// A `*mut E` of an `unsafe` entry: a `DevicePointer<E>`.
    Pointer(ElemType),
    /// A `MappedPartitionMut<E, ..>`: a mapped partition of tensors of `E`.
    Mapped(ElemType),
}

/// An element type: a scalar type, or one of the entry's type parameters.
#[derive(Clone, Debug, PartialEq, Eq)]
enum ElemType {
    Known(ScalarType),
    Param(String),
    /// A type the signature names and the front end would have resolved (only in launchers
    /// made from a signature the front end refused).
    Written(String),
}

/// One entry's launcher, before it becomes tokens.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Launcher {
    name: String,
    /// The kernel's position in the module's tile IR.
    index: usize,
    /// The value parameters: name and what they take.
    params: Vec<(String, HostParam)>,
    /// The launcher's type parameters (the entry's, those that element types name).
    type_params: Vec<String>,
    /// The entry's generic parameters in source order, arrays flattened.
    generics: Vec<String>,
}

/// `#[cuprum::tile::entry(..)]`'s options.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct EntryOptions {
    print_ir: bool,
    /// `optimization_hints`, per target.
    hints: Vec<crate::tile_hints::TargetHints>,
}

/// One `#[cuprum::tile::entry]` function of the module.
struct EntryFn<'a> {
    item: &'a syn::ItemFn,
    options: EntryOptions,
}

/// Expands `#[cuprum::tile::module]` on `module`.
pub fn expand_module(attr: TokenStream, module: &syn::ItemMod) -> TokenStream {
    if !attr.is_empty() {
        return syn::Error::new(attr.span(), "#[cuprum::tile::module] takes no arguments")
            .to_compile_error();
    }
    let Some((_, items)) = &module.content else {
        return syn::Error::new(
            module.span(),
            "#[cuprum::tile::module] needs an inline module (`mod name { .. }`)",
        )
        .to_compile_error();
    };
    let mut entries = Vec::new();
    let mut errors = TokenStream::new();
    for item in items {
        let syn::Item::Fn(f) = item else { continue };
        let Some(attr) = f.attrs.iter().find(|a| is_entry_attr(a)) else {
            continue;
        };
        match entry_options(attr) {
            Ok(options) => entries.push(EntryFn { item: f, options }),
            Err(e) => errors.extend(e.to_compile_error()),
        }
    }
    let (launchers, embedded) = if !errors.is_empty() {
        (signature_launchers(&entries, &mut errors), Vec::new())
    } else {
        // Under `CUPRUM_LINEINFO`, each statement carries its line (`host::line_info_file`).
        let lines = crate::host::line_info_file(module);
        match cuprum_tile_front::compile_module_with_lines(module, lines).map(|c| c.module) {
            Ok(tile) => match ir_launchers(&tile, &entries) {
                Ok(launchers) => (launchers, cuprum_tile_ir::encode_module(&tile)),
                Err(e) => {
                    errors.extend(e.to_compile_error());
                    (signature_launchers(&entries, &mut errors), Vec::new())
                }
            },
            Err(e) => {
                errors.extend(e.to_compile_error());
                (signature_launchers(&entries, &mut errors), Vec::new())
            }
        }
    };
    let module_name = module.ident.to_string();
    let bytes = proc_macro2::Literal::byte_string(&embedded);
    let mut generated = Vec::new();
    let mut entry_list = Vec::new();
    for (launcher, entry) in launchers.iter().zip(&entries) {
        generated.push(launcher_tokens(launcher, entry));
        let name = &launcher.name;
        let static_name = entry_static(launcher);
        entry_list.push(quote!((#name, &#static_name)));
    }
    let source_hash = {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        quote!(#module).to_string().hash(&mut h);
        format!("{:016x}", h.finish())
    };
    let kept = items.iter().filter_map(|item| match item {
        syn::Item::Use(u) => Some(quote!(#[allow(unused_imports)] #u)),
        syn::Item::Const(c) => Some(quote!(#[allow(dead_code)] #c)),
        _ => None,
    });
    let attrs = &module.attrs;
    let vis = &module.vis;
    let ident = &module.ident;
    quote! {
        #errors
        #(#attrs)*
        #vis mod #ident {
            #(#kept)*

            /// The module's tile IR, compiled by the tile front end at `cargo build`.
            #[doc(hidden)]
            static __CUPRUM_TILE_MODULE: ::cuprum::tile::__private::EmbeddedModule =
                ::cuprum::tile::__private::EmbeddedModule::new(#module_name, #bytes);

            #(#generated)*

            /// The module's entries by name, for cuTile Rust's lower-level API
            /// (`cuprum::tile::tile_kernel::compile_from_context`).
            #[doc(hidden)]
            #[allow(dead_code)]
            pub fn __module_ast_self() -> ::cuprum::tile::__private::ModuleAst {
                static ENTRIES: &[(&str, &::cuprum::tile::__private::Entry)] = &[#(#entry_list),*];
                ::cuprum::tile::__private::ModuleAst::new(#module_name, ENTRIES)
            }

            /// A hash of the module's source (cuTile Rust's `_SOURCE_HASH`).
            #[doc(hidden)]
            #[allow(dead_code)]
            pub const _SOURCE_HASH: &str = #source_hash;
        }
    }
}

/// The name of the static describing `l`'s entry (its kernel, generics and options).
fn entry_static(l: &Launcher) -> proc_macro2::Ident {
    format_ident!("__CUPRUM_TILE_ENTRY_{}", l.name)
}

/// Whether `a` is `#[cuprum::tile::entry]` (or `#[entry]`, `#[tile::entry]`).
fn is_entry_attr(a: &syn::Attribute) -> bool {
    a.path().segments.last().is_some_and(|s| s.ident == "entry")
}

/// Parses an entry's options. cuTile Rust's options that change nothing in cuprum are
/// accepted (see `cuprum::tile`'s docs); those it cannot honour are errors.
fn entry_options(attr: &syn::Attribute) -> syn::Result<EntryOptions> {
    let mut options = EntryOptions::default();
    if matches!(attr.meta, syn::Meta::Path(_)) {
        return Ok(options);
    }
    attr.parse_nested_meta(|meta| {
        let key = meta
            .path
            .get_ident()
            .map(ToString::to_string)
            .unwrap_or_default();
        let flag = |meta: &syn::meta::ParseNestedMeta| -> syn::Result<bool> {
            if meta.input.peek(syn::Token![=]) {
                Ok(meta.value()?.parse::<syn::LitBool>()?.value)
            } else {
                Ok(true)
            }
        };
        match key.as_str() {
            "print_ir" => options.print_ir = flag(&meta)?,
            // Tile kernels never access memory outside their tensors (elements outside
            // read padding and stores there are dropped), so there are no checks to waive
            // or to forbid.
            "unchecked_accesses" | "deny_in_kernel_checks" => {
                flag(&meta)?;
            }
            "optimization_hints" => {
                options.hints = crate::tile_hints::parse(&meta.value()?.parse::<syn::Expr>()?)?;
            }
            // cuTile's MLIR output: cuprum writes no MLIR (`print_ir = true` prints its IR).
            "dump_mlir_dir" => {
                meta.value()?.parse::<syn::Expr>()?;
            }
            "use_debug_mlir" | "preconditions" => {
                return Err(meta.error(format!(
                    "`{key}` is not supported by cuprum's tile compiler"
                )));
            }
            _ => {
                return Err(meta.error(format!(
                    "unknown option `{key}` of #[cuprum::tile::entry]: expected `print_ir`, `unchecked_accesses`, `deny_in_kernel_checks`, `optimization_hints` or `dump_mlir_dir`"
                )));
            }
        }
        Ok(())
    })?;
    Ok(options)
}

/// The entry's generic parameters in source order, const arrays flattened to `S[0]`, ...:
/// the names `.generics(..)` gives values to, and the tile IR's names of the consts.
fn generic_names(f: &syn::ItemFn) -> syn::Result<Vec<String>> {
    let mut names = Vec::new();
    for g in &f.sig.generics.params {
        match g {
            syn::GenericParam::Type(t) => names.push(t.ident.to_string()),
            syn::GenericParam::Const(c) => match &c.ty {
                syn::Type::Array(a) => {
                    let len = match &a.len {
                        syn::Expr::Lit(syn::ExprLit {
                            lit: syn::Lit::Int(n),
                            ..
                        }) => n.base10_parse::<usize>()?,
                        other => {
                            return Err(syn::Error::new(
                                other.span(),
                                "the length of a const array parameter must be an integer literal",
                            ));
                        }
                    };
                    names.extend((0..len).map(|i| format!("{}[{i}]", c.ident)));
                }
                _ => names.push(c.ident.to_string()),
            },
            syn::GenericParam::Lifetime(_) => {}
        }
    }
    Ok(names)
}

/// The launchers of `tile`'s kernels, one per entry (matched by name).
fn ir_launchers(tile: &TileModule, entries: &[EntryFn<'_>]) -> syn::Result<Vec<Launcher>> {
    entries
        .iter()
        .map(|e| {
            let name = e.item.sig.ident.to_string();
            let (index, kernel) = tile.kernels.iter().enumerate().find(|(_, k)| k.name == name).ok_or_else(|| {
                syn::Error::new(
                    e.item.sig.ident.span(),
                    format!("the tile front end compiled no kernel `{name}` (a bug of the front end)"),
                )
            })?;
            let launcher = Launcher {
                index,
                ..Launcher::from_kernel(kernel, generic_names(e.item)?)
            };
            launcher.check_against(kernel, e.item)?;
            Ok(launcher)
        })
        .collect()
}

/// Launchers made from the entries' signatures, for a module the front end refused; their
/// errors are added to `errors`.
fn signature_launchers(entries: &[EntryFn<'_>], errors: &mut TokenStream) -> Vec<Launcher> {
    entries
        .iter()
        .map(|e| match Launcher::from_signature(e.item) {
            Ok(l) => l,
            Err(err) => {
                errors.extend(err.to_compile_error());
                Launcher {
                    name: e.item.sig.ident.to_string(),
                    index: 0,
                    params: Vec::new(),
                    type_params: Vec::new(),
                    generics: Vec::new(),
                }
            }
        })
        .collect()
}

impl Launcher {
    /// The launcher of a compiled kernel.
    fn from_kernel(kernel: &TileKernel, generics: Vec<String>) -> Self {
        let elem = |e: Elem| match e {
            Elem::Known(t) => ElemType::Known(t),
            Elem::Param(i) => ElemType::Param(
                kernel
                    .types
                    .get(i as usize)
                    .cloned()
                    .unwrap_or_else(|| format!("T{i}")),
            ),
        };
        let params: Vec<(String, HostParam)> = kernel
            .params
            .iter()
            .map(|p| {
                let host = match &p.kind {
                    ParamKind::Scalar(e) => HostParam::Scalar(elem(*e)),
                    ParamKind::Tensor(t) if t.access == TensorAccess::Partitioned => {
                        HostParam::Output(elem(t.elem))
                    }
                    ParamKind::Tensor(t) if t.access == TensorAccess::Raw => {
                        HostParam::Pointer(elem(t.elem))
                    }
                    ParamKind::Tensor(t) if t.access == TensorAccess::Mapped => {
                        HostParam::Mapped(elem(t.elem))
                    }
                    ParamKind::Tensor(t) => HostParam::Input(elem(t.elem)),
                };
                (p.name.clone(), host)
            })
            .collect();
        let type_params = kernel
            .types
            .iter()
            .filter(|t| {
                params.iter().any(|(_, p)| {
                    matches!(p, HostParam::Output(ElemType::Param(n))
                        | HostParam::Input(ElemType::Param(n))
                        | HostParam::Scalar(ElemType::Param(n))
                        | HostParam::Pointer(ElemType::Param(n))
                        | HostParam::Mapped(ElemType::Param(n)) if n == *t)
                })
            })
            .cloned()
            .collect();
        Self {
            name: kernel.name.clone(),
            index: 0,
            params,
            type_params,
            generics,
        }
    }

    /// Checks that the front end's kernel has the entry's generic parameters; a mismatch is
    /// a bug of the front end (or of this macro), reported at the entry.
    fn check_against(&self, kernel: &TileKernel, f: &syn::ItemFn) -> syn::Result<()> {
        let declared: Vec<&String> = kernel
            .consts
            .iter()
            .map(|c| &c.name)
            .chain(&kernel.types)
            .collect();
        let same = declared.len() == self.generics.len()
            && self.generics.iter().all(|g| declared.contains(&g));
        if same && kernel.params.len() == f.sig.inputs.len() {
            return Ok(());
        }
        Err(syn::Error::new(
            f.sig.ident.span(),
            format!(
                "the tile front end compiled `{}` with generic parameters [{}] and {} parameter(s), but its signature has [{}] and {} (a bug of the front end)",
                self.name,
                declared
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                kernel.params.len(),
                self.generics.join(", "),
                f.sig.inputs.len()
            ),
        ))
    }

    /// The launcher an entry's signature gives: `&mut Tensor<E, ..>` an output, `&Tensor<E,
    /// ..>` an input, any other type a scalar.
    fn from_signature(f: &syn::ItemFn) -> syn::Result<Self> {
        let type_params: Vec<String> = f
            .sig
            .generics
            .type_params()
            .map(|t| t.ident.to_string())
            .collect();
        let elem = |ty: &syn::Type| {
            let text = quote!(#ty).to_string().replace(' ', "");
            if type_params.contains(&text) {
                ElemType::Param(text)
            } else if let Some(t) = ScalarType::from_rust_name(&text) {
                ElemType::Known(t)
            } else {
                ElemType::Written(text)
            }
        };
        let mut params = Vec::new();
        for input in &f.sig.inputs {
            let syn::FnArg::Typed(pt) = input else {
                return Err(syn::Error::new(
                    input.span(),
                    "a tile entry has no `self` parameter",
                ));
            };
            let name = match &*pt.pat {
                syn::Pat::Ident(p) => p.ident.to_string(),
                other => {
                    return Err(syn::Error::new(
                        other.span(),
                        "a tile entry's parameters are plain names",
                    ));
                }
            };
            let host = match &*pt.ty {
                syn::Type::Reference(r) => {
                    let e = tensor_elem(&r.elem).ok_or_else(|| {
                        syn::Error::new(
                            r.span(),
                            "a reference parameter of a tile entry is `&Tensor<E, S>` or `&mut Tensor<E, S>`",
                        )
                    })?;
                    if r.mutability.is_some() {
                        HostParam::Output(elem(e))
                    } else {
                        HostParam::Input(elem(e))
                    }
                }
                syn::Type::Ptr(p) => HostParam::Pointer(elem(&p.elem)),
                syn::Type::Path(p)
                    if p.path
                        .segments
                        .last()
                        .is_some_and(|s| s.ident == "MappedPartitionMut") =>
                {
                    match first_generic_type(&p.path) {
                        Some(e) => HostParam::Mapped(elem(e)),
                        None => HostParam::Scalar(elem(&pt.ty)),
                    }
                }
                other => HostParam::Scalar(elem(other)),
            };
            params.push((name, host));
        }
        Ok(Self {
            name: f.sig.ident.to_string(),
            index: 0,
            params,
            type_params,
            generics: generic_names(f)?,
        })
    }
}

/// The first type argument of `path`'s last segment (`E` of `MappedPartitionMut<E, ..>`).
fn first_generic_type(path: &syn::Path) -> Option<&syn::Type> {
    let syn::PathArguments::AngleBracketed(args) = &path.segments.last()?.arguments else {
        return None;
    };
    match args.args.first()? {
        syn::GenericArgument::Type(t) => Some(t),
        _ => None,
    }
}

/// `E` of `Tensor<E, S>`.
fn tensor_elem(ty: &syn::Type) -> Option<&syn::Type> {
    let syn::Type::Path(p) = ty else { return None };
    let last = p.path.segments.last()?;
    if last.ident != "Tensor" {
        return None;
    }
    let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    match args.args.first()? {
        syn::GenericArgument::Type(t) => Some(t),
        _ => None,
    }
}

/// The Rust type of an element type, as launchers name it.
fn elem_tokens(e: &ElemType) -> TokenStream {
    match e {
        ElemType::Known(ScalarType::F16) => quote!(::cuprum::half::f16),
        ElemType::Known(ScalarType::BF16) => quote!(::cuprum::half::bf16),
        ElemType::Known(t) => {
            let ident = format_ident!("{}", t.rust_name());
            quote!(::core::primitive::#ident)
        }
        ElemType::Param(name) => {
            let ident = format_ident!("{}", name);
            quote!(#ident)
        }
        ElemType::Written(text) => text.parse().unwrap_or_else(|_| quote!(())),
    }
}

/// The launcher function of an entry.
fn launcher_tokens(l: &Launcher, entry: &EntryFn<'_>) -> TokenStream {
    let span = entry.item.sig.ident.span();
    let name = format_ident!("{}", l.name, span = span);
    let private = quote!(::cuprum::tile::__private);
    let mut generics = Vec::new();
    let mut inputs = Vec::new();
    let mut bounds = Vec::new();
    let mut ops = Vec::new();
    let mut op_types = Vec::new();
    let mut doc_params = Vec::new();
    for t in &l.type_params {
        let t = format_ident!("{}", t);
        generics.push(quote!(#t: #private::DType));
    }
    for (i, (pname, host)) in l.params.iter().enumerate() {
        let a = format_ident!("__CuprumArg{}", i);
        let v = format_ident!("__CuprumValue{}", i);
        let p = format_ident!("{}", pname, span = span);
        let (value, bound, doc) = match host {
            HostParam::Output(e) => {
                let e_t = elem_tokens(e);
                (
                    quote!(#v),
                    Some(quote!(#v: #private::KernelOutput<#e_t>)),
                    format!("`{pname}`: a `Partition` of a tensor of `{}`", elem_text(e)),
                )
            }
            HostParam::Input(e) => {
                let e_t = elem_tokens(e);
                (
                    quote!(#v),
                    Some(quote!(#v: #private::KernelInput<#e_t>)),
                    format!(
                        "`{pname}`: a tensor of `{}` (`Tensor`, `Arc<Tensor>` or `&Tensor`)",
                        elem_text(e)
                    ),
                )
            }
            HostParam::Scalar(e) => (
                elem_tokens(e),
                None,
                format!("`{pname}`: a `{}`", elem_text(e)),
            ),
            HostParam::Mapped(e) => {
                let e_t = elem_tokens(e);
                (
                    quote!(#v),
                    Some(quote!(#v: #private::KernelMapped<#e_t>)),
                    format!(
                        "`{pname}`: a `MappedPartition` of a tensor of `{}` (`partition(..).map(..)`)",
                        elem_text(e)
                    ),
                )
            }
            HostParam::Pointer(e) => {
                let e_t = elem_tokens(e);
                (
                    quote!(#private::DevicePointer<#e_t>),
                    None,
                    format!(
                        "`{pname}`: a `DevicePointer<{}>` (`Tensor::device_pointer`)",
                        elem_text(e)
                    ),
                )
            }
        };
        generics.push(quote!(#a));
        if bound.is_some() {
            generics.push(quote!(#v));
        }
        bounds.push(quote!(#a: #private::IntoDeviceOp<#value>));
        bounds.extend(bound);
        inputs.push(quote!(#p: #a));
        ops.push(quote!(<#a as #private::IntoDeviceOp<#value>>::into_op(#p)));
        op_types.push(quote!(<#a as #private::IntoDeviceOp<#value>>::Op));
        doc_params.push(doc);
    }
    let generic_names = &l.generics;
    let index = l.index;
    let print_ir = entry.options.print_ir;
    let hints = crate::tile_hints::table(&entry.options.hints, &private);
    let unsafety = entry.item.sig.unsafety;
    let doc = format!(
        "Launches tile kernel `{}` (lazily: nothing runs before `.sync_on(&stream)` or `.sync()`).\n\n\
         Each argument is the value or an operation producing it:\n\n{}\n\n\
         The launch gives every argument back, in order. Its grid is the partitions' \
         (`.grid(..)` for a kernel without a partitioned output); generic parameters the \
         arguments do not determine are given with `.generics(..)`, in the order [{}].{}",
        l.name,
        if doc_params.is_empty() {
            "(no arguments)".to_owned()
        } else {
            doc_params
                .iter()
                .map(|d| format!("* {d}"))
                .collect::<Vec<_>>()
                .join("\n")
        },
        generic_names.join(", "),
        if l.params
            .iter()
            .any(|(_, p)| matches!(p, HostParam::Pointer(_)))
        {
            "\n\n# Safety\n\nThe kernel reads and writes memory through raw pointers. Each pointer must stay a live allocation of the launch's context until the launch's work has finished, and no element that one tile block writes may be read or written by another block (nor be an element of a tensor argument) during the launch. The launch itself refuses a pointer outside the context's live allocations, and the kernel never reaches past the pointer's allocation (offsets outside it read padding and write nothing)."
        } else if unsafety.is_some() {
            "\n\n# Safety\n\nThe entry is declared `unsafe`; cuprum's tile kernels never access memory outside their tensors, so there is nothing more to uphold."
        } else {
            ""
        }
    );
    // The entry's own docs come first, a paragraph of their own.
    let user_docs: Vec<&syn::Attribute> = entry
        .item
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .collect();
    let doc = if user_docs.is_empty() {
        doc
    } else {
        format!("\n{doc}")
    };
    let entry_static = entry_static(l);
    quote_spanned! {span=>
        #[doc(hidden)]
        #[allow(non_upper_case_globals)]
        static #entry_static: #private::Entry = #private::Entry {
            module: &__CUPRUM_TILE_MODULE,
            index: #index,
            generics: &[#(#generic_names),*],
            print_ir: #print_ir,
            hints: #hints,
        };

        #(#user_docs)*
        #[doc = #doc]
        #[allow(dead_code, clippy::too_many_arguments, clippy::type_complexity, non_camel_case_types, non_snake_case)]
        pub #unsafety fn #name<#(#generics),*>(#(#inputs),*)
            -> #private::Launcher<(#(#op_types,)*)>
        where
            #(#bounds,)*
        {
            #private::Launcher::new(&#entry_static, (#(#ops,)*))
        }
    }
}

/// An element type as the docs write it.
fn elem_text(e: &ElemType) -> String {
    match e {
        ElemType::Known(t) => t.rust_name().to_owned(),
        ElemType::Param(n) | ElemType::Written(n) => n.clone(),
    }
}

/// `#[cuprum::tile::entry]` outside a `#[cuprum::tile::module]`.
pub fn entry_outside_module() -> TokenStream {
    syn::Error::new(
        Span::call_site(),
        "#[cuprum::tile::entry] only has a meaning on a function inside a #[cuprum::tile::module] module",
    )
    .to_compile_error()
}

#[cfg(test)]
mod tests {
    use super::*;
    use cuprum_tile_ir::{Dim, TensorDim, TensorParam, TileBuilder};

    fn tensor(elem: Elem, dims: Vec<TensorDim>, access: TensorAccess) -> ParamKind {
        ParamKind::Tensor(TensorParam { elem, dims, access })
    }

    fn entry(src: &str) -> syn::ItemFn {
        match syn::parse_str(src) {
            Ok(f) => f,
            Err(e) => panic!("test entry does not parse: {e}"),
        }
    }

    /// The launchers made from the front end's kernel and from the signature agree, so a
    /// module the front end refuses gets the launchers it will have once it compiles.
    #[test]
    fn kernel_and_signature_give_one_launcher() {
        // saxpy<const S: [i32; 2], T>(y: &mut Tensor<T, S>, a: T, x: &Tensor<T, {[-1, -1]}>)
        let mut b = TileBuilder::new("saxpy");
        let s0 = b.const_param("S[0]", ScalarType::I32);
        let s1 = b.const_param("S[1]", ScalarType::I32);
        let t = b.type_param("T");
        let te = Elem::Param(t);
        b.param(
            "y",
            tensor(
                te,
                vec![
                    TensorDim::Static(Dim::Param(s0)),
                    TensorDim::Static(Dim::Param(s1)),
                ],
                TensorAccess::Partitioned,
            ),
        );
        b.param("a", ParamKind::Scalar(te));
        b.param(
            "x",
            tensor(
                te,
                vec![TensorDim::Dynamic, TensorDim::Dynamic],
                TensorAccess::Read,
            ),
        );
        let kernel = b.finish();
        let f = entry(
            "fn saxpy<const S: [i32; 2], T: ElementType>(y: &mut Tensor<T, S>, a: T, x: &Tensor<T, { [-1, -1] }>) {}",
        );
        let from_ir = Launcher::from_kernel(&kernel, generic_names(&f).expect("names"));
        from_ir.check_against(&kernel, &f).expect("agree");
        let from_sig = Launcher::from_signature(&f).expect("signature");
        assert_eq!(from_ir, from_sig);
        assert_eq!(from_ir.generics, ["S[0]", "S[1]", "T"]);
        assert_eq!(from_ir.type_params, ["T"]);
        assert_eq!(
            from_ir.params,
            [
                (
                    "y".to_owned(),
                    HostParam::Output(ElemType::Param("T".into()))
                ),
                (
                    "a".to_owned(),
                    HostParam::Scalar(ElemType::Param("T".into()))
                ),
                (
                    "x".to_owned(),
                    HostParam::Input(ElemType::Param("T".into()))
                ),
            ]
        );
    }

    #[test]
    fn known_element_types_and_no_parameters() {
        let mut b = TileBuilder::new("scale");
        let n = b.const_param("N", ScalarType::I32);
        let f16 = Elem::Known(ScalarType::F16);
        b.param(
            "out",
            tensor(
                f16,
                vec![TensorDim::Static(Dim::Param(n))],
                TensorAccess::Partitioned,
            ),
        );
        b.param("k", ParamKind::Scalar(Elem::Known(ScalarType::F32)));
        let kernel = b.finish();
        let f = entry("fn scale<const N: i32>(out: &mut Tensor<f16, { [N] }>, k: f32) {}");
        let from_ir = Launcher::from_kernel(&kernel, generic_names(&f).expect("names"));
        assert_eq!(from_ir, Launcher::from_signature(&f).expect("signature"));
        assert!(from_ir.type_params.is_empty());
        let tokens = elem_tokens(&ElemType::Known(ScalarType::F16)).to_string();
        assert!(tokens.contains("half"), "{tokens}");

        let hello = TileBuilder::new("hello").finish();
        let f = entry("fn hello() {}");
        let from_ir = Launcher::from_kernel(&hello, Vec::new());
        assert_eq!(from_ir, Launcher::from_signature(&f).expect("signature"));
    }

    #[test]
    fn a_front_end_that_disagrees_with_the_signature_is_reported() {
        let mut b = TileBuilder::new("k");
        b.const_param("B", ScalarType::I32);
        let kernel = b.finish();
        let f = entry("fn k<const C: i32>() {}");
        let l = Launcher::from_kernel(&kernel, generic_names(&f).expect("names"));
        let err = l.check_against(&kernel, &f).expect_err("names differ");
        assert!(err.to_string().contains("[B]"), "{err}");
    }

    #[test]
    fn entry_options_parse_and_refuse() {
        let attr = |s: &str| -> syn::Attribute {
            let f: syn::ItemFn = entry(&format!("{s} fn f() {{}}"));
            f.attrs[0].clone()
        };
        assert_eq!(
            entry_options(&attr("#[cuprum::tile::entry(print_ir = true)]")).expect("ok"),
            EntryOptions {
                print_ir: true,
                hints: Vec::new()
            }
        );
        assert_eq!(
            entry_options(&attr("#[cuprum::tile::entry()]")).expect("ok"),
            EntryOptions::default()
        );
        assert_eq!(
            entry_options(&attr("#[entry]")).expect("ok"),
            EntryOptions::default()
        );
        entry_options(&attr(
            "#[entry(unchecked_accesses, deny_in_kernel_checks = true, dump_mlir_dir = \"/tmp\")]",
        ))
        .expect("accepted");
        let e = entry_options(&attr("#[entry(fast = true)]")).expect_err("unknown");
        assert!(e.to_string().contains("unknown option `fast`"), "{e}");
        let e = entry_options(&attr("#[entry(preconditions = (dim(a, 0) == 4))]"))
            .expect_err("unsupported");
        assert!(e.to_string().contains("not supported"), "{e}");
    }

    /// Each launcher names its kernel by its position in the tile IR, whatever order the
    /// entries come in; a kernel the front end did not compile is an error at the entry.
    #[test]
    fn launchers_find_their_kernels_by_name() {
        let tile = TileModule {
            kernels: vec![
                TileBuilder::new("first").finish(),
                TileBuilder::new("second").finish(),
            ],
        };
        let second = entry("fn second() {}");
        let first = entry("fn first() {}");
        let entries = [
            EntryFn {
                item: &second,
                options: EntryOptions::default(),
            },
            EntryFn {
                item: &first,
                options: EntryOptions::default(),
            },
        ];
        let launchers = ir_launchers(&tile, &entries).expect("launchers");
        let found: Vec<(&str, usize)> = launchers
            .iter()
            .map(|l| (l.name.as_str(), l.index))
            .collect();
        assert_eq!(found, [("second", 1), ("first", 0)]);
        let missing = entry("fn third() {}");
        let err = ir_launchers(
            &tile,
            &[EntryFn {
                item: &missing,
                options: EntryOptions::default(),
            }],
        )
        .expect_err("no such kernel");
        assert!(err.to_string().contains("no kernel `third`"), "{err}");
    }

    #[test]
    fn array_generics_need_a_literal_length() {
        let f = entry("fn k<const S: [i32; N]>() {}");
        assert!(generic_names(&f).is_err());
        let f = entry("fn k<'a, T, const A: i32, const S: [i32; 3]>() {}");
        assert_eq!(
            generic_names(&f).expect("names"),
            ["T", "A", "S[0]", "S[1]", "S[2]"]
        );
    }
}
