//! Generation of the host side of a `#[cuda_module]`: the module's `load`, its `Module` type
//! with `prepare_*` and launch methods, and the host copies of the kernels for type checking.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::spanned::Spanned;

use cuprum_front::{ContractInfo, HostParam, KernelInfo};

/// Names the generated `Module` type already uses; a kernel may not take them.
const RESERVED: [&str; 4] = ["load", "ir", "ptx", "context"];

/// The module with its kernels kept only as host code, for when compilation failed.
pub fn host_copy_only(module: &syn::ItemMod) -> TokenStream {
    let mut module = module.clone();
    if let Some((_, items)) = &mut module.content {
        for item in items.iter_mut() {
            if let syn::Item::Fn(f) = item {
                let context = launch_context_name(f).ok().flatten();
                bind_launch_context(f, context);
                mark_host_copy(&mut f.attrs);
                crate::host_consts::rewrite(f);
                f.attrs.push(syn::parse_quote!(
                    #[allow(dead_code, unused_variables, unused_mut, unconditional_panic)]
                ));
            }
        }
    }
    quote!(#module)
}

/// The name `#[kernel(launch_context = name)]` gives the launch context, if any.
fn launch_context_name(f: &syn::ItemFn) -> syn::Result<Option<String>> {
    for a in &f.attrs {
        if cuprum_front_attr(a, "kernel") {
            return cuprum_front::parse_kernel_attr(a);
        }
    }
    Ok(None)
}

/// In a kernel's host copy, the launch context's name bound to a `LaunchContext`, so that
/// rustc type-checks the body's uses of it.
fn bind_launch_context(f: &mut syn::ItemFn, name: Option<String>) {
    if let Some(name) = name {
        let name = format_ident!("{}", name);
        f.block.stmts.insert(
            0,
            syn::parse_quote!(
                #[allow(unused_variables)]
                let #name = ::cuprum::simt::thread::LaunchContext::__host_copy();
            ),
        );
    }
}

/// Gives cuprum's marker attributes the argument that makes them pass the item through.
fn mark_host_copy(attrs: &mut [syn::Attribute]) {
    for a in attrs {
        if cuprum_front::CUPRUM_ATTRS
            .iter()
            .any(|n| cuprum_front_attr(a, n))
        {
            let path = a.path().clone();
            *a = syn::parse_quote!(#[#path(__cuprum_host_copy)]);
        }
    }
}

pub fn expand(module: &syn::ItemMod, with_parent: &syn::ItemMod) -> syn::Result<TokenStream> {
    let compiled = cuprum_front::compile_module(with_parent)?;
    for k in &compiled.info.kernels {
        if RESERVED.contains(&k.name.as_str()) || k.name.starts_with("prepare_") {
            return Err(syn::Error::new(
                k.item.sig.ident.span(),
                format!(
                    "a kernel cannot be called `{}`: the generated module API uses that name",
                    k.name
                ),
            ));
        }
    }
    let source = cuprum_front::module_source(with_parent);
    let line_file = line_info_file(module);
    let embedded = embedded_ir(&source, line_file.clone());
    let line_file = match line_file {
        Some(file) => quote!(::std::option::Option::Some(#file)),
        None => quote!(::std::option::Option::None),
    };
    let Some((_, items)) = &module.content else {
        return Err(syn::Error::new(
            module.span(),
            "#[cuda_module] needs an inline module",
        ));
    };
    let vis = &module.vis;
    let ident = &module.ident;
    let attrs = &module.attrs;
    let module_name = ident.to_string();

    let mut kept = Vec::new();
    let mut host_kernels = Vec::new();
    for item in items {
        match item {
            syn::Item::Fn(f) if f.attrs.iter().any(|a| cuprum_front_attr(a, "kernel")) => {
                let context = launch_context_name(f)?;
                let mut f = f.clone();
                for a in &mut f.attrs {
                    if cuprum_front::CUPRUM_ATTRS
                        .iter()
                        .any(|n| cuprum_front_attr(a, n))
                    {
                        let path = a.path().clone();
                        *a = syn::parse_quote!(#[#path(__cuprum_host_copy)]);
                    }
                }
                f.vis = syn::Visibility::Inherited;
                crate::host_consts::rewrite(&mut f);
                bind_launch_context(&mut f, context);
                host_kernels.push(f);
            }
            syn::Item::Fn(f) => {
                let mut f = f.clone();
                // Device code has no iterators nor `std::mem::swap`: do not let clippy
                // suggest them.
                f.attrs.push(syn::parse_quote!(#[allow(dead_code, clippy::needless_range_loop, clippy::manual_memcpy, clippy::manual_swap)]));
                if crate::host_consts::rewrite(&mut f) {
                    // A placeholder length may make a constant index out of bounds on the host.
                    f.attrs
                        .push(syn::parse_quote!(#[allow(unconditional_panic)]));
                }
                kept.push(syn::Item::Fn(f));
            }
            syn::Item::Impl(i) => {
                // Methods are device helpers too: the same lints do not apply.
                let mut i = i.clone();
                i.attrs.push(syn::parse_quote!(#[allow(dead_code, clippy::needless_range_loop, clippy::manual_memcpy, clippy::manual_swap)]));
                kept.push(syn::Item::Impl(i));
            }
            syn::Item::Static(st) if st.attrs.iter().any(|a| cuprum_front_attr(a, "constant")) => {
                // Read only by the kernels' host copies (or by none, until used).
                let mut st = st.clone();
                st.attrs.push(syn::parse_quote!(#[allow(dead_code)]));
                kept.push(syn::Item::Static(st));
            }
            other => kept.push(other.clone()),
        }
    }

    let mut fields = Vec::new();
    let mut field_inits = Vec::new();
    let mut markers = Vec::new();
    let mut methods = Vec::new();
    for k in &compiled.info.kernels {
        let name = &k.name;
        let field = format_ident!("__kernel_{}", name);
        if !k.is_generic() {
            fields.push(quote!(#field: usize));
            field_inits.push(quote!(#field: inner.kernel_index(#name)?));
        }
        let (method, marker) = launch_method(k, &field, &compiled.info)?;
        methods.push(method);
        markers.extend(marker);
    }
    for c in &compiled.info.constants {
        let (field, elem) = (c.param_name(), &c.elem);
        fields.push(quote!(#field: ::cuprum::__private::ConstantCell<#elem>));
        field_inits.push(quote!(#field: ::cuprum::__private::ConstantCell::new(ctx)?));
        let (set, name) = (c.setter(), c.name.to_string());
        let set_blocking = format_ident!("{}_blocking", set);
        let set_doc = format!(
            "Sets the `#[constant]` `{name}`: launches queued after this on `stream` read \
             `value`; those queued before it, on any stream, read the value before."
        );
        let blocking_doc =
            format!("Sets the `#[constant]` `{name}` and waits until the value is written.");
        methods.push(quote! {
            #[doc = #set_doc]
            pub fn #set(&self, stream: &::cuprum::Stream, value: &#elem) -> ::cuprum::Result<()> {
                self.#field.set(stream, value)
            }

            #[doc = #blocking_doc]
            pub fn #set_blocking(&self, value: &#elem) -> ::cuprum::Result<()> {
                self.#field.set_blocking(value)
            }
        });
    }

    Ok(quote! {
        #(#attrs)*
        #vis mod #ident {
            #(#kept)*

            /// Host copies of the kernels: never called, they let rustc type-check the
            /// kernel bodies and point its errors at the user's code.
            #[doc(hidden)]
            // `unsafe_op_in_unsafe_fn`: ported `unsafe fn` kernels dereference raw pointers
            // and call `nvptx::*` in their bodies directly, as CUDA code does;
            // `unconditional_panic`: a const-generic length's placeholder (`host_consts`) may
            // make a constant index out of bounds here.
            #[allow(dead_code, unused_variables, unused_mut, unused_imports, unused_unsafe,
                    unreachable_code, unsafe_op_in_unsafe_fn, unconditional_panic, clippy::all)]
            mod __cuprum_host_check {
                use super::*;
                #(#host_kernels)*
            }

            #(#markers)*

            #[doc(hidden)]
            const __CUPRUM_SOURCE: &str = #source;

            /// The file its kernels' line information names (`CUPRUM_LINEINFO` at build time).
            #[doc(hidden)]
            const __CUPRUM_LINE_FILE: ::std::option::Option<&str> = #line_file;

            /// The optimized IR of the module's non-generic kernels, compiled at `cargo build`.
            #[doc(hidden)]
            const __CUPRUM_IR: ::std::option::Option<&[u8]> = #embedded;

            /// The IR of this module's kernels, read once per process from what `cargo build`
            /// compiled.
            pub fn ir() -> ::cuprum::Result<::std::sync::Arc<::cuprum::ir::Module>> {
                static IR: ::std::sync::OnceLock<
                    ::std::result::Result<::std::sync::Arc<::cuprum::ir::Module>, ::std::string::String>,
                > = ::std::sync::OnceLock::new();
                IR.get_or_init(|| ::cuprum::__private::module_ir(__CUPRUM_IR, __CUPRUM_SOURCE, __CUPRUM_LINE_FILE))
                    .clone()
                    .map_err(|message| ::cuprum::Error::Compile { kernel: #module_name.into(), message })
            }

            /// This module's kernels, loaded on one context.
            pub struct Module {
                inner: ::cuprum::__private::LoadedModule,
                /// Specializations of generic kernels, loaded on first launch.
                specialized: ::cuprum::__private::Specializations,
                #(#fields,)*
            }

            /// cuda-oxide's name for [`Module`].
            #[allow(dead_code)]
            pub type LoadedModule = Module;

            /// Compiles (once per process) and loads this module's kernels on `ctx`.
            pub fn load(ctx: &::cuprum::CudaContext) -> ::cuprum::Result<Module> {
                let inner = ::cuprum::__private::LoadedModule::load(ctx, ir()?)?;
                Ok(Module {
                    #(#field_inits,)*
                    inner,
                    specialized: ::cuprum::__private::Specializations::default(),
                })
            }

            /// Loads this module's kernels on the context of `file`, which
            /// `ctx.load_module_from_file(..)` named (cuda-oxide's two-step load): cuprum
            /// compiled the module into the program, so this is [`load`] on that context and
            /// the file is not read (see `cuprum::oxide`).
            pub fn from_module(file: ::cuprum::ModuleFile) -> ::cuprum::Result<Module> {
                load(file.context())
            }

            impl Module {
                /// The PTX the driver loaded (CUDA backend only).
                pub fn ptx(&self) -> ::std::option::Option<&str> {
                    self.inner.ptx()
                }

                /// ptxas's warnings and notes from compiling this module in this process
                /// (empty when it came from the compile cache, and on the emulator).
                pub fn jit_log(&self) -> &str {
                    self.inner.jit_log()
                }

                /// The context the module is loaded on.
                pub fn context(&self) -> &::cuprum::CudaContext {
                    self.inner.context()
                }

                /// The loaded specialization of a generic kernel (compiled on first use).
                #[allow(dead_code)]
                fn specialize(
                    &self,
                    kernel: &str,
                    spec: &::cuprum::__private::Specialization,
                ) -> ::cuprum::Result<(::std::sync::Arc<::cuprum::__private::LoadedModule>, usize)> {
                    self.specialized
                        .get(self.inner.context(), __CUPRUM_SOURCE, __CUPRUM_LINE_FILE, kernel, spec)
                }

                #(#methods)*
            }
        }
    })
}

/// With `CUPRUM_LINEINFO` set (to anything but `0`) when the crate is built, the file the
/// module is in: its kernels then carry line information (`.file`/`.loc` in the PTX, what
/// Nsight Compute's source view reads), as `nvcc -lineinfo` gives. Cargo does not rebuild a
/// crate when the variable changes: `cargo clean -p <crate>` first.
pub(crate) fn line_info_file(module: &syn::ItemMod) -> Option<String> {
    let wanted = std::env::var_os("CUPRUM_LINEINFO").is_some_and(|v| v != "0");
    if !wanted {
        return None;
    }
    let file = module.ident.span().local_file()?;
    let file = std::fs::canonicalize(&file).unwrap_or(file);
    Some(file.display().to_string())
}

/// `Some(b"...")`: the module's IR as the run time would compile it from `source` (the same
/// text, so the same spans and lines), optimized and encoded ([`cuprum_ir::encode_module`]);
/// `None` if that fails (then the run time compiles the source, and reports the error).
fn embedded_ir(source: &str, line_info: Option<String>) -> TokenStream {
    // Parse the text as the run time does, with proc-macro2's own parser: inside a proc
    // macro it would otherwise use the compiler's, whose spans all point at the macro call,
    // and the lines that run-time errors name would change.
    proc_macro2::fallback::force();
    let encoded = cuprum_front::compile_source_with_lines(source, line_info).map(|compiled| {
        let mut ir = compiled.ir;
        cuprum_opt::optimize(&mut ir);
        cuprum_ir::encode_module(&ir)
    });
    proc_macro2::fallback::unforce();
    match encoded {
        Ok(bytes) => {
            let bytes = proc_macro2::Literal::byte_string(&bytes);
            quote!(::std::option::Option::Some(#bytes))
        }
        Err(_) => quote!(::std::option::Option::None),
    }
}

fn cuprum_front_attr(a: &syn::Attribute, name: &str) -> bool {
    a.path().segments.last().is_some_and(|s| s.ident == name)
}

fn camel(name: &str) -> String {
    name.split('_')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let mut c = p.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect()
}

/// The element type `T` of `&[T]`, `&mut [T]` or `DisjointSlice<T>`.
fn element_type(ty: &syn::Type) -> Option<&syn::Type> {
    match ty {
        syn::Type::Reference(r) => match &*r.elem {
            syn::Type::Slice(s) => Some(&s.elem),
            _ => None,
        },
        syn::Type::Path(p) => match &p.path.segments.last()?.arguments {
            syn::PathArguments::AngleBracketed(a) => match a.args.first()? {
                syn::GenericArgument::Type(t) => Some(t),
                _ => None,
            },
            _ => None,
        },
        _ => None,
    }
}

/// The host signature and argument conversion of one parameter.
fn host_param(
    p: &HostParam,
    type_params: &[String],
    info: &cuprum_front::ModuleInfo,
) -> syn::Result<(TokenStream, TokenStream)> {
    let name = &p.name;
    Ok(match &p.ty {
        cuprum_front::ParamType::Scalar(_) => {
            // cuda-oxide's `Uniform<T>` takes the plain value on the host.
            let ty = cuprum_front::uniform_arg(&p.rust_type).unwrap_or(&p.rust_type);
            (
                quote!(#name: #ty),
                quote!(::cuprum::__private::KernelArg::scalar(#name)),
            )
        }
        cuprum_front::ParamType::Struct { fields, .. } => {
            let ty = &p.rust_type;
            // `pos.x` is field `x` of field `pos`: one launch argument per scalar field.
            let fields = fields.iter().map(|(path, _)| {
                let parts = path.split('.').map(|f| format_ident!("{}", f));
                quote!(#name #(.#parts)*)
            });
            (
                quote!(#name: #ty),
                quote!(#(::cuprum::__private::KernelArg::scalar(#fields)),*),
            )
        }
        cuprum_front::ParamType::Pointer { .. } => {
            let syn::Type::Ptr(ptr) = &p.rust_type else {
                return Err(syn::Error::new(
                    p.rust_type.span(),
                    "expected a pointer type",
                ));
            };
            let elem = &ptr.elem;
            (
                quote!(#name: impl ::std::convert::Into<::cuprum::simt::DevicePtr<#elem>>),
                quote!(::cuprum::__private::KernelArg::scalar(
                    ::std::convert::Into::<::cuprum::simt::DevicePtr<#elem>>::into(#name)
                )),
            )
        }
        cuprum_front::ParamType::TensorMap { rank, .. } => {
            let elem = element_type(&p.rust_type).ok_or_else(|| {
                syn::Error::new(p.rust_type.span(), "cannot find the element type")
            })?;
            let rank = usize::from(*rank);
            (
                quote!(#name: &::cuprum::TensorMap<'_, #elem, #rank>),
                quote!(#name.arg()),
            )
        }
        // cuda-oxide's map in device memory: its address (the launch is `unsafe`).
        cuprum_front::ParamType::TensorMapPtr => (
            quote!(#name: *const ::cuprum::simt::tma::TmaDescriptor),
            quote!(::cuprum::__private::KernelArg::scalar(#name as u64)),
        ),
        cuprum_front::ParamType::Atomic { .. } => {
            let elem = element_type(&p.rust_type).ok_or_else(|| {
                syn::Error::new(p.rust_type.span(), "cannot find the element type")
            })?;
            (
                quote!(#name: &mut impl ::cuprum::DeviceWrite<#elem>),
                quote!(::cuprum::__private::KernelArg::slice_mut(#name)),
            )
        }
        cuprum_front::ParamType::Elements { elem, access } => {
            let ty = element_type(&p.rust_type).ok_or_else(|| {
                syn::Error::new(p.rust_type.span(), "cannot find the element type")
            })?;
            let generic = crate::layout_check::mentions(ty, type_params);
            let mut checks = crate::layout_check::assertions(ty, elem, generic, p.rust_type.span());
            if generic {
                // `&[Acc<T>]`: the layout of each instantiation, where the launch has it.
                let params: Vec<String> = type_params
                    .iter()
                    .filter(|t| crate::layout_check::mentions(ty, std::slice::from_ref(*t)))
                    .cloned()
                    .collect();
                let cases = cuprum_front::layout::per_parameter_size(
                    ty,
                    &params,
                    &info.structs,
                    &info.consts,
                );
                checks.extend(crate::layout_check::generic_assertions(
                    ty,
                    &params,
                    &cases,
                    p.rust_type.span(),
                ));
            }
            let (param, arg) = if *access == cuprum_front::SliceAccess::ReadOnly {
                (
                    quote!(#name: &impl ::cuprum::DeviceRead<#ty>),
                    quote!(::cuprum::__private::KernelArg::slice_bytes(#name)),
                )
            } else {
                (
                    quote!(#name: &mut impl ::cuprum::DeviceWrite<#ty>),
                    quote!(::cuprum::__private::KernelArg::slice_bytes_mut(#name)),
                )
            };
            (param, quote!({ #checks #arg }))
        }
        cuprum_front::ParamType::RowWidthSlice { .. } => {
            let elem = element_type(&p.rust_type).ok_or_else(|| {
                syn::Error::new(p.rust_type.span(), "cannot find the element type")
            })?;
            (
                quote!(#name: ::cuprum::RowWidth<'_, #elem>),
                quote!(#name.slice_arg(), #name.width_arg()),
            )
        }
        cuprum_front::ParamType::Slice { access, .. } => {
            let elem = element_type(&p.rust_type).ok_or_else(|| {
                syn::Error::new(p.rust_type.span(), "cannot find the element type")
            })?;
            if *access == cuprum_front::SliceAccess::ReadOnly {
                (
                    quote!(#name: &impl ::cuprum::DeviceRead<#elem>),
                    quote!(::cuprum::__private::KernelArg::slice(#name)),
                )
            } else {
                (
                    quote!(#name: &mut impl ::cuprum::DeviceWrite<#elem>),
                    quote!(::cuprum::__private::KernelArg::slice_mut(#name)),
                )
            }
        }
    })
}

/// The launch method's generics (the kernel's, with `DeviceScalar` on every type parameter),
/// and the code that finds the module and kernel index to launch.
fn kernel_target(k: &KernelInfo, field: &syn::Ident) -> (TokenStream, TokenStream) {
    if !k.is_generic() {
        return (
            quote!(),
            quote!(let (module, index) = (&self.inner, self.#field);),
        );
    }
    let mut generics = k.item.sig.generics.clone();
    for g in generics.params.iter_mut() {
        if let syn::GenericParam::Type(t) = g {
            t.bounds.push(syn::parse_quote!(::cuprum::DeviceScalar));
        }
    }
    let name = &k.name;
    let types = k.type_params.iter().map(|t| {
        let ident = format_ident!("{}", t);
        quote!((#t.to_string(), <#ident as ::cuprum::DeviceScalar>::TYPE))
    });
    let consts = k.const_params.iter().map(|(c, _)| {
        let ident = format_ident!("{}", c);
        quote!((#c.to_string(), #ident as i128))
    });
    let params = &generics.params;
    (
        quote!(<#params>),
        quote! {
            let spec = ::cuprum::__private::Specialization {
                types: ::std::vec![#(#types),*],
                consts: ::std::vec![#(#consts),*],
            };
            let (module, index) = self.specialize(#name, &spec)?;
            let module = &*module;
        },
    )
}

fn launch_method(
    k: &KernelInfo,
    field: &syn::Ident,
    info: &cuprum_front::ModuleInfo,
) -> syn::Result<(TokenStream, Option<TokenStream>)> {
    let name = &k.name;
    let method = format_ident!("{}", name, span = k.item.sig.ident.span());
    let mut params = Vec::new();
    let mut args = Vec::new();
    // The module's buffers of the constants the kernel reads, held through the launch.
    let mut constants = Vec::new();
    for p in &k.params {
        let (param, arg) = host_param(p, &k.type_params, info)?;
        if p.constant.is_some() {
            let (name, guard) = (&p.name, format_ident!("{}_guard", p.name));
            constants.push(quote! {
                let #guard = self.#name.buffer();
                let #name = &*#guard;
            });
        } else {
            params.push(param);
        }
        args.push(arg);
    }
    let (generics, target) = kernel_target(k, field);
    let requires = crate::requires::checks(name, &k.requires)?;
    let where_clause = &k.item.sig.generics.where_clause;
    let max_threads = match k.launch_bounds {
        Some(b) => {
            let m = b.max_threads;
            quote!(::std::option::Option::Some(#m))
        }
        None => quote!(::std::option::Option::None),
    };
    let contract_value = |contract: &ContractInfo, domain: u32| {
        // A dimension named by a const parameter is that parameter's value at the call.
        let dims = [contract.block.0, contract.block.1, contract.block.2];
        let [bx, by, bz] = std::array::from_fn::<TokenStream, 3, _>(|d| {
            match contract.block_params[d].and_then(|i| k.const_params.get(usize::from(i))) {
                Some((name, _)) => {
                    let ident = format_ident!("{}", name);
                    quote!((#ident as u32))
                }
                None => {
                    let v = dims[d];
                    quote!(#v)
                }
            }
        });
        let dynamic_shared = match contract.dynamic_shared {
            Some(n) => quote!(::std::option::Option::Some(#n)),
            None => quote!(::std::option::Option::None),
        };
        quote! {
            ::cuprum::__private::LaunchContract {
                kernel: #name,
                domain: #domain,
                block: (#bx, #by, #bz),
                max_threads: #max_threads,
                dynamic_shared: #dynamic_shared,
            }
        }
    };
    // A whole contract (with its domain) gives `prepare_*` and a launch taking what it
    // prepared, `unsafe` for an `unsafe` kernel; a block alone, or none, a raw launch.
    let Some((contract, domain)) = k.contract.and_then(|c| c.domain.map(|d| (c, d))) else {
        let doc = match k.contract {
            Some(ContractInfo {
                block: (bx, by, bz),
                ..
            }) => format!(
                "Launches `{name}` with a raw configuration.\n\nThe kernel declares its block \
                 `({bx}, {by}, {bz})` in `#[launch_contract]` and is compiled for it: a \
                 launch with any other block fails with `Error::InvalidLaunch`.\n\n# \
                 Safety\n\nIt is an `unsafe` kernel: nothing checks the grid against what the \
                 kernel assumes; the caller must make sure every thread's accesses stay in \
                 bounds and do not race."
            ),
            None => format!(
                "Launches `{name}` with a raw configuration.\n\n# Safety\n\nThe kernel has \
                 no `#[launch_contract]`, so nothing checks the configuration against what the \
                 kernel assumes; {}the caller must make sure every thread's accesses stay in \
                 bounds and do not race.",
                if k.is_unsafe {
                    "it is an `unsafe` kernel, so "
                } else {
                    ""
                }
            ),
        };
        return Ok((
            quote! {
                #[doc = #doc]
                #[allow(clippy::too_many_arguments)]
                pub unsafe fn #method #generics(
                    &self,
                    stream: &::cuprum::Stream,
                    config: impl ::std::convert::Into<::cuprum::LaunchConfig>,
                    #(#params),*
                ) -> ::cuprum::Result<()> #where_clause {
                    let config: ::cuprum::LaunchConfig = config.into();
                    #requires
                    #(#constants)*
                    let args = [#(#args),*];
                    #target
                    // SAFETY: the caller upholds the contract stated above; the argument list
                    // mirrors the kernel's parameters, as the macro generated it.
                    unsafe { module.launch(stream, index, &config, &args) }
                }
            },
            None,
        ));
    };
    let marker_name = format_ident!("{}Kernel", camel(name));
    let prepare = format_ident!("prepare_{}", name);
    // When the contract's block names const parameters, a configuration is prepared per
    // value of them: the marker carries them, so one prepared for a block size cannot launch
    // another. (Otherwise every specialization has the one block, and one preparation.)
    let names_consts = contract.block_params.iter().any(Option::is_some);
    let const_decls: Vec<TokenStream> = k
        .item
        .sig
        .generics
        .params
        .iter()
        .filter_map(|g| match g {
            syn::GenericParam::Const(c) => {
                let (ident, ty) = (&c.ident, &c.ty);
                Some(quote!(const #ident: #ty))
            }
            _ => None,
        })
        .collect();
    let const_names: Vec<syn::Ident> = k
        .const_params
        .iter()
        .map(|(n, _)| format_ident!("{}", n))
        .collect();
    let (marker, marker_decl, prepare_generics) = if !names_consts || const_decls.is_empty() {
        (quote!(#marker_name), quote!(#marker_name), quote!())
    } else {
        (
            quote!(#marker_name<#(#const_names),*>),
            quote!(#marker_name<#(#const_decls),*>),
            quote!(<#(#const_decls),*>),
        )
    };
    let block_text: Vec<String> = [contract.block.0, contract.block.1, contract.block.2]
        .iter()
        .enumerate()
        .map(|(d, v)| {
            match contract.block_params[d].and_then(|i| k.const_params.get(usize::from(i))) {
                Some((n, _)) => n.clone(),
                None => v.to_string(),
            }
        })
        .collect();
    let (bx, by, bz) = (&block_text[0], &block_text[1], &block_text[2]);
    let contract_check = contract_value(&contract, domain);
    let marker_doc =
        format!("Marks a [`Prepared`](::cuprum::simt::Prepared) configuration of kernel `{name}`.");
    let prepare_doc = format!(
        "Checks `config` against `{name}`'s launch contract (domain {domain}, block ({bx}, {by}, {bz})) \
         and the device's limits."
    );
    // A `*const TmaDescriptor` parameter is an address nothing checks (see `simt::tma`).
    let raw_map = k
        .params
        .iter()
        .any(|p| p.ty == cuprum_front::ParamType::TensorMapPtr);
    let (unsafety, launch_doc) = if k.is_unsafe || raw_map {
        (
            quote!(unsafe),
            format!(
                "Launches `{name}` on `stream` with a configuration checked by \
                 [`Module::{prepare}`].\n\n# Safety\n\n{}: the caller \
                 must make sure every thread's accesses stay in bounds and do not race.",
                if k.is_unsafe {
                    "It is an `unsafe` kernel"
                } else {
                    "It takes a `*const TmaDescriptor`, which must point to a valid tensor map \
                     in device memory over a live buffer"
                }
            ),
        )
    } else {
        (
            TokenStream::new(),
            format!(
                "Launches `{name}` on `stream` with a configuration checked by \
                 [`Module::{prepare}`]."
            ),
        )
    };
    Ok((
        quote! {
            #[doc = #prepare_doc]
            pub fn #prepare #prepare_generics(
                &self,
                config: impl ::std::convert::Into<::cuprum::LaunchConfig>,
            ) -> ::cuprum::Result<::cuprum::simt::Prepared<#marker>> {
                let config = config.into();
                #contract_check.check(self.inner.context(), &config)?;
                // SAFETY: `config` has just passed this kernel's contract check.
                ::std::result::Result::Ok(unsafe {
                    ::cuprum::simt::Prepared::__new_unchecked(config)
                })
            }

            #[doc = #launch_doc]
            #[allow(clippy::too_many_arguments)]
            pub #unsafety fn #method #generics(
                &self,
                stream: &::cuprum::Stream,
                prepared: &::cuprum::simt::Prepared<#marker>,
                #(#params),*
            ) -> ::cuprum::Result<()> #where_clause {
                #requires
                #(#constants)*
                let args = [#(#args),*];
                #target
                // SAFETY: the argument list mirrors the kernel's parameters (the macro made
                // both); `&` and `&mut` borrows of the buffers rule out an output aliasing an
                // input; the configuration passed the contract check in `prepare`; an
                // `unsafe` kernel's caller answers for the rest.
                unsafe { module.launch(stream, index, &prepared.config(), &args) }
            }
        },
        Some(quote! {
            #[doc = #marker_doc]
            pub enum #marker_decl {}
        }),
    ))
}
