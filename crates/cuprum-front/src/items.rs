//! Reads a `#[cuda_module]` module: finds its kernels and device helpers, parses the cuprum
//! attributes on them, and checks the kernel signatures.

use syn::spanned::Spanned;

use crate::types::ParamType;

/// What the module holds, as the lowering and the host code generator need it.
#[derive(Clone, Debug)]
pub struct ModuleInfo {
    /// The `#[kernel]` functions, in source order.
    pub kernels: Vec<KernelInfo>,
    /// Plain `fn` items: device helpers callable from kernels.
    pub helpers: Vec<syn::ItemFn>,
    /// `const` items, usable in kernels and in array lengths.
    pub consts: Vec<syn::ItemConst>,
    /// Structs with named fields, usable as kernel parameters, locals and helper values; a
    /// generic one is a declaration, instantiated per use (`crate::generic_structs`).
    pub structs: Vec<syn::ItemStruct>,
    /// The functions of `impl` blocks of those structs (inherent ones, and operator traits).
    pub methods: Vec<crate::impls::DeviceMethod>,
    /// `#[constant]` statics (cuda-oxide's constant memory), in source order.
    pub constants: Vec<crate::constants::ConstantInfo>,
    /// The source file the module's lines are in, when kernels carry line information
    /// ([`crate::compile_module_with_lines`]): each statement is then marked with its line
    /// (`Stmt::SourceLine`, the PTX's `.loc`).
    pub line_info: Option<String>,
}

/// One `#[kernel]` function.
#[derive(Clone, Debug)]
pub struct KernelInfo {
    /// The function's name: the PTX entry name of a non-generic kernel and the stem of the
    /// generated host methods.
    pub name: String,
    /// The function as parsed, with its body; the macro re-emits it as a host function so that
    /// rustc type-checks it.
    pub item: syn::ItemFn,
    /// The parameters in declaration order.
    pub params: Vec<HostParam>,
    /// What `#[launch_bounds(...)]` declared, if present.
    pub launch_bounds: Option<cuprum_ir::LaunchBounds>,
    /// `#[max_registers(N)]`: the register cap ptxas gets (`.maxnreg`), which `setmaxnreg`
    /// needs.
    pub max_registers: Option<u32>,
    /// `#[cluster_launch(x, y, z)]`: the thread-block cluster shape every launch runs in
    /// ([`cuprum_ir::Kernel::cluster`]).
    pub cluster: Option<(u32, u32, u32)>,
    /// What `#[launch_contract(...)]` declared, if present; only kernels with one get a safe
    /// launch method.
    pub contract: Option<ContractInfo>,
    /// `unsafe fn`: raw pointers and `&mut [T]` allowed; launched only through the raw method.
    pub is_unsafe: bool,
    /// Type parameters (`<T>`): the kernel is specialized per element type at launch.
    pub type_params: Vec<String>,
    /// Const parameters (`<const N: usize>`) with their types.
    pub const_params: Vec<(String, cuprum_ir::ScalarType)>,
    /// `requires = (a.len() >= n * k, ..)` in the launch contract: relations between the
    /// arguments that every launch checks on the host before it runs (see the macro's
    /// `requires`).
    pub requires: Vec<syn::Expr>,
    /// `#[kernel(launch_context = name)]`: the name the body reads cuda-oxide's launch
    /// context by (what `thread::index_1d_u32(name)` and `thread::coord_2d_u32(name)` take).
    pub launch_context: Option<String>,
}

impl KernelInfo {
    /// Whether the kernel is compiled per specialization at launch.
    pub fn is_generic(&self) -> bool {
        !self.type_params.is_empty() || !self.const_params.is_empty()
    }
}

/// A kernel parameter with its original Rust type (used to spell host signatures).
#[derive(Clone, Debug)]
pub struct HostParam {
    /// The parameter's name as written.
    pub name: syn::Ident,
    /// The parameter's type as written, copied into the generated host signature.
    pub rust_type: syn::Type,
    /// What the front end made of `rust_type`.
    pub ty: ParamType,
    /// For the hidden parameter that carries a `#[constant]`'s buffer (after the kernel's own
    /// parameters): that constant. The host passes the module's buffer, not an argument.
    pub constant: Option<crate::constants::ConstantInfo>,
}

/// `#[launch_contract(domain = N, block = (x, y, z))]` on a safe kernel, or
/// `#[launch_contract(block = (x, y, z))]` on an `unsafe` one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContractInfo {
    /// Dimensions of the indexing domain (1 to 3); always present on safe kernels, never on
    /// `unsafe` ones (their raw launches check only the block).
    pub domain: Option<u32>,
    /// The exact block shape every launch must have; the compiler relies on it.
    pub block: (u32, u32, u32),
    /// `dynamic_shared = N`: the bytes of dynamic shared memory every launch must give at
    /// least.
    pub dynamic_shared: Option<u32>,
    /// Per block dimension named by a const parameter of a generic kernel
    /// (`block = (BLOCK_SIZE, BLOCK_SIZE, 1)`): that parameter's index in
    /// [`KernelInfo::const_params`]. `block` holds 1 there until [`ContractInfo::resolved`]
    /// gives a specialization's value.
    pub block_params: [Option<u8>; 3],
}

impl ContractInfo {
    /// The contract of one specialization: block dimensions named by const parameters take
    /// `value(name)`, and the block is checked against the hardware's limits.
    pub fn resolved(
        self,
        const_params: &[(String, cuprum_ir::ScalarType)],
        value: impl Fn(&str) -> Option<i128>,
    ) -> Result<ContractInfo, String> {
        let mut block = [self.block.0, self.block.1, self.block.2];
        for (d, param) in self.block_params.iter().enumerate() {
            let Some(i) = param else { continue };
            let name = const_params
                .get(usize::from(*i))
                .map(|(n, _)| n.as_str())
                .unwrap_or_default();
            let v = value(name).ok_or_else(|| format!("no value for `{name}`"))?;
            block[d] = u32::try_from(v).map_err(|_| {
                format!("the contract's block dimension `{name}` = {v} is not a block size")
            })?;
        }
        check_block(block[0], block[1], block[2])?;
        Ok(ContractInfo {
            block: (block[0], block[1], block[2]),
            block_params: [None; 3],
            ..self
        })
    }
}

/// Whether a block shape is one the hardware can launch.
fn check_block(x: u32, y: u32, z: u32) -> Result<(), String> {
    if x == 0 || y == 0 || z == 0 {
        return Err("block dimensions must be at least 1".into());
    }
    if x > 1024 || y > 1024 || z > 64 || u64::from(x) * u64::from(y) * u64::from(z) > 1024 {
        return Err(format!(
            "a block has at most (1024, 1024, 64) threads per dimension and 1024 in all, not \
             ({x}, {y}, {z})"
        ));
    }
    Ok(())
}

/// Whether `attr`'s path ends in `name` (`kernel`, `cuprum::simt::kernel`).
pub fn attr_is(attr: &syn::Attribute, name: &str) -> bool {
    attr.path().segments.last().is_some_and(|s| s.ident == name)
}

/// The cuprum attributes that `#[cuda_module]` consumes.
pub const CUPRUM_ATTRS: [&str; 5] = [
    "kernel",
    "launch_bounds",
    "launch_contract",
    "max_registers",
    "cluster_launch",
];

pub fn scan_module(module: &syn::ItemMod) -> syn::Result<ModuleInfo> {
    let Some((_, items)) = &module.content else {
        return Err(syn::Error::new(
            module.span(),
            "#[cuda_module] needs an inline module: `mod kernels { ... }`",
        ));
    };
    let mut info = ModuleInfo {
        kernels: Vec::new(),
        helpers: Vec::new(),
        consts: Vec::new(),
        structs: Vec::new(),
        methods: Vec::new(),
        constants: Vec::new(),
        line_info: None,
    };
    // Structs first: kernel signatures may name them.
    for item in items {
        if let syn::Item::Struct(st) = item {
            if let Some(f) = st
                .fields
                .iter()
                .find(|f| matches!(f.ty, syn::Type::Reference(_)))
            {
                return Err(syn::Error::new(
                    f.ty.span(),
                    "a device struct cannot hold a reference: store the value itself (or an \
                     index into the slice or array), and pass `&mut` to a helper where it \
                     must update a place",
                ));
            }
            crate::types::refuse_trait_object_fields(st)?;
            match &st.fields {
                syn::Fields::Named(_) => {
                    crate::generic_structs::check_params(
                        &st.generics,
                        &format!("struct {}", st.ident),
                    )?;
                    info.structs.push(st.clone())
                }
                _ => {
                    return Err(syn::Error::new(
                        st.span(),
                        format!(
                            "device structs need named fields: write `struct {} {{ x: f32, y: \
                             f32 }}` and use `.x`, not `.0`",
                            st.ident
                        ),
                    ));
                }
            }
        }
    }
    let mut errors = Errors::default();
    // `const` items (array lengths in signatures may name them) and constants too: kernels
    // before them in the source may use them.
    let consts: Vec<syn::ItemConst> = items
        .iter()
        .filter_map(|item| match item {
            syn::Item::Const(c) => Some(c.clone()),
            _ => None,
        })
        .collect();
    for item in items {
        if let syn::Item::Static(st) = item
            && st.attrs.iter().any(|a| attr_is(a, "constant"))
        {
            match crate::constants::scan_constant(st) {
                Ok(c) => info.constants.push(c),
                Err(e) => errors.push(e),
            }
        }
    }
    for item in items {
        if let syn::Item::Fn(f) = item
            && let Err(e) = crate::types::refuse_trait_objects(f)
        {
            errors.push(e);
            continue;
        }
        match item {
            syn::Item::Fn(f) if f.attrs.iter().any(|a| attr_is(a, "kernel")) => {
                let bound = scan_kernel(f, &info.structs, &consts).and_then(|mut k| {
                    crate::constants::bind_constants(
                        &mut k,
                        &info.constants,
                        &info.structs,
                        &consts,
                    )?;
                    Ok(k)
                });
                match bound {
                    Ok(k) => info.kernels.push(k),
                    Err(e) => errors.push(e),
                }
            }
            syn::Item::Fn(f) => {
                if let Some(a) = f
                    .attrs
                    .iter()
                    .find(|a| CUPRUM_ATTRS.iter().any(|n| attr_is(a, n)))
                {
                    errors.push(syn::Error::new(
                        a.span(),
                        "this attribute belongs on a `#[kernel]` function",
                    ));
                }
                for c in &info.constants {
                    if let Some(span) = crate::constants::mentions(&f.block, &c.name) {
                        errors.push(crate::constants::misuse(c, span));
                    }
                }
                info.helpers.push(f.clone());
            }
            syn::Item::Const(c) => info.consts.push(c.clone()),
            syn::Item::Static(st) if st.attrs.iter().any(|a| attr_is(a, "constant")) => {}
            syn::Item::Impl(i) => match crate::impls::scan_impl(i, &info.structs) {
                Ok(methods) => {
                    for m in &methods {
                        for c in &info.constants {
                            if let Some(span) = crate::constants::mentions(&m.item.block, &c.name) {
                                errors.push(crate::constants::misuse(c, span));
                            }
                        }
                    }
                    info.methods.extend(methods)
                }
                Err(e) => errors.push(e),
            },
            syn::Item::Struct(_) => {}
            syn::Item::Use(_) => {}
            other => errors.push(unsupported_item(other)),
        }
    }
    errors.finish()?;
    Ok(info)
}

/// The error for an item `#[cuda_module]` cannot compile, saying what about it is missing.
fn unsupported_item(item: &syn::Item) -> syn::Error {
    let (span, message): (proc_macro2::Span, String) = match item {
        syn::Item::Trait(t) => (
            t.trait_token.span,
            format!(
                "traits are not supported in device code yet: write free `fn`s instead of the \
                 methods of `{}` (generic over the scalar type where needed: `fn f<T>(x: T)`)",
                t.ident
            ),
        ),
        syn::Item::Enum(e) => (
            e.enum_token.span,
            "enums are not supported in device code yet: use integer `const`s and `match` on \
             them"
                .into(),
        ),
        syn::Item::Static(s) => (
            s.static_token.span,
            "statics are not supported in device code: use a `const`, pass the value as a \
             kernel parameter, or declare constant memory the host sets: `#[constant] static \
             NAME: ConstantMemory<T> = ConstantMemory::UNINIT;`"
                .into(),
        ),
        other => (
            other.span(),
            "unsupported item in a #[cuda_module]: only `use`, `const`, `struct`, `#[kernel]` \
             functions and device helper functions may appear here"
                .into(),
        ),
    };
    syn::Error::new(span, message)
}

fn scan_kernel(
    f: &syn::ItemFn,
    structs: &[syn::ItemStruct],
    consts: &[syn::ItemConst],
) -> syn::Result<KernelInfo> {
    let sig = &f.sig;
    let mut errors = Errors::default();
    let is_unsafe = sig.unsafety.is_some();
    let mut type_params = Vec::new();
    let mut const_params = Vec::new();
    for g in &sig.generics.params {
        match g {
            syn::GenericParam::Type(t) => type_params.push(t.ident.to_string()),
            syn::GenericParam::Const(c) => match crate::types::expect_scalar(&c.ty) {
                Ok(ty) if ty.is_int() || ty == cuprum_ir::ScalarType::Bool => {
                    const_params.push((c.ident.to_string(), ty))
                }
                _ => errors.push(syn::Error::new(
                    c.ty.span(),
                    "const parameters of kernels must be integers or bool",
                )),
            },
            syn::GenericParam::Lifetime(l) => errors.push(syn::Error::new(
                l.span(),
                "kernels take no lifetime parameters",
            )),
        }
    }
    // Classify parameters with the type parameters standing for a placeholder: only the
    // shape (scalar, slice, ...) matters here; element types are fixed per specialization.
    let placeholder: std::collections::HashMap<String, cuprum_ir::ScalarType> = type_params
        .iter()
        .map(|t| (t.clone(), cuprum_ir::ScalarType::F32))
        .collect();
    if let Some(a) = &sig.asyncness {
        errors.push(syn::Error::new(a.span(), "kernels cannot be `async`"));
    }
    if !matches!(sig.output, syn::ReturnType::Default) {
        errors.push(syn::Error::new(
            sig.output.span(),
            "kernels return nothing: write results into a `DisjointSlice<T>` parameter",
        ));
    }
    let mut params = Vec::new();
    for input in &sig.inputs {
        match input {
            syn::FnArg::Receiver(r) => {
                errors.push(syn::Error::new(r.span(), "kernels cannot take `self`"))
            }
            syn::FnArg::Typed(pt) => {
                let name = match &*pt.pat {
                    syn::Pat::Ident(id) if id.by_ref.is_none() && id.subpat.is_none() => {
                        id.ident.clone()
                    }
                    other => {
                        errors.push(syn::Error::new(
                            other.span(),
                            "kernel parameters must be plain names",
                        ));
                        continue;
                    }
                };
                match crate::types::param_type_in(&pt.ty, is_unsafe, &placeholder, structs, consts)
                {
                    Ok(ty) => params.push(HostParam {
                        name,
                        rust_type: (*pt.ty).clone(),
                        ty,
                        constant: None,
                    }),
                    Err(e) => errors.push(e),
                }
            }
        }
    }
    let mut launch_bounds = None;
    let mut max_registers = None;
    let mut cluster = None;
    let mut contract = None;
    let mut requires = Vec::new();
    let mut launch_context = None;
    for attr in &f.attrs {
        if attr_is(attr, "kernel") {
            match parse_kernel_attr(attr) {
                Ok(name) => launch_context = name,
                Err(e) => errors.push(e),
            }
        } else if attr_is(attr, "launch_bounds") {
            match parse_launch_bounds(attr) {
                Ok(b) => launch_bounds = Some(b),
                Err(e) => errors.push(e),
            }
        } else if attr_is(attr, "max_registers") {
            match parse_max_registers(attr) {
                Ok(n) => max_registers = Some(n),
                Err(e) => errors.push(e),
            }
        } else if attr_is(attr, "cluster_launch") {
            match parse_cluster_launch(attr) {
                Ok(shape) => cluster = Some(shape),
                Err(e) => errors.push(e),
            }
        } else if attr_is(attr, "launch_contract") {
            match parse_contract(attr, &const_params, consts) {
                Ok((c, r)) => {
                    contract = Some(c);
                    requires = r;
                }
                Err(e) => errors.push(e),
            }
        }
    }
    if let (Some(c), Some(b)) = (contract, launch_bounds) {
        let threads = c.block.0 as u64 * c.block.1 as u64 * c.block.2 as u64;
        if threads > b.max_threads as u64 {
            errors.push(syn::Error::new(
                sig.ident.span(),
                format!(
                    "the contract's block ({} threads) exceeds #[launch_bounds({})]",
                    threads, b.max_threads
                ),
            ));
        }
    }
    match contract {
        Some(ContractInfo { domain: None, .. }) if !is_unsafe => errors.push(syn::Error::new(
            sig.ident.span(),
            "a safe kernel's launch contract needs its domain: \
             #[launch_contract(domain = N, block = (x, y, z))]",
        )),
        _ => {}
    }
    errors.finish()?;
    Ok(KernelInfo {
        name: sig.ident.to_string(),
        item: f.clone(),
        params,
        launch_bounds,
        max_registers,
        cluster,
        contract,
        is_unsafe,
        type_params,
        const_params,
        requires,
        launch_context,
    })
}

/// `#[kernel]` or `#[kernel(launch_context = name)]`: the name the launch context is bound
/// to, if any.
pub fn parse_kernel_attr(attr: &syn::Attribute) -> syn::Result<Option<String>> {
    if matches!(attr.meta, syn::Meta::Path(_)) {
        return Ok(None);
    }
    let args = attr.parse_args_with(
        syn::punctuated::Punctuated::<syn::MetaNameValue, syn::Token![,]>::parse_terminated,
    )?;
    let mut name = None;
    for nv in &args {
        match (nv.path.get_ident(), &nv.value) {
            (Some(key), syn::Expr::Path(p)) if key == "launch_context" => {
                match p.path.get_ident() {
                    Some(id) => name = Some(id.to_string()),
                    None => {
                        return Err(syn::Error::new(
                            p.span(),
                            "expected a plain name: `#[kernel(launch_context = lc)]`",
                        ));
                    }
                }
            }
            _ => {
                return Err(syn::Error::new(
                    nv.span(),
                    "unknown `#[kernel]` argument: expected `launch_context = name`",
                ));
            }
        }
    }
    Ok(name)
}

fn lit_u32(e: &syn::Expr) -> syn::Result<u32> {
    if let syn::Expr::Lit(syn::ExprLit {
        lit: syn::Lit::Int(i),
        ..
    }) = e
    {
        return i.base10_parse::<u32>();
    }
    Err(syn::Error::new(e.span(), "expected an integer literal"))
}

fn parse_launch_bounds(attr: &syn::Attribute) -> syn::Result<cuprum_ir::LaunchBounds> {
    let args = attr.parse_args_with(
        syn::punctuated::Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated,
    )?;
    let mut it = args.iter();
    let max_threads = match it.next() {
        Some(e) => lit_u32(e)?,
        None => {
            return Err(syn::Error::new(
                attr.span(),
                "expected #[launch_bounds(max_threads)]",
            ));
        }
    };
    let min_blocks_per_sm = it.next().map(lit_u32).transpose()?;
    if let Some(extra) = it.next() {
        return Err(syn::Error::new(
            extra.span(),
            "#[launch_bounds] takes at most two numbers",
        ));
    }
    if max_threads == 0 || max_threads > 1024 {
        return Err(syn::Error::new(
            attr.span(),
            "max_threads must be between 1 and 1024",
        ));
    }
    if min_blocks_per_sm == Some(0) {
        return Err(syn::Error::new(
            attr.span(),
            "min_blocks must be at least 1",
        ));
    }
    Ok(cuprum_ir::LaunchBounds {
        max_threads,
        min_blocks_per_sm,
    })
}

/// `#[max_registers(N)]`: `N` a multiple of 8 from 24 to 256.
fn parse_max_registers(attr: &syn::Attribute) -> syn::Result<u32> {
    let e: syn::Expr = attr.parse_args()?;
    let n = lit_u32(&e)?;
    if !cuprum_ir::wgmma::valid_register_count(n) {
        return Err(syn::Error::new(
            e.span(),
            format!("#[max_registers(N)] takes a multiple of 8 from 24 to 256, not {n}"),
        ));
    }
    Ok(n)
}

/// `#[cluster_launch(x)]`, `(x, y)` or `(x, y, z)` (cuda-oxide's attribute; the missing
/// dimensions are 1): each at least 1, at most [`cuprum_ir::MAX_CLUSTER_BLOCKS`] blocks in
/// all.
fn parse_cluster_launch(attr: &syn::Attribute) -> syn::Result<(u32, u32, u32)> {
    const FORM: &str = "#[cluster_launch(x, y, z)] (or `(x)`, `(x, y)`)";
    let max = cuprum_ir::MAX_CLUSTER_BLOCKS;
    if matches!(attr.meta, syn::Meta::Path(_)) {
        return Err(syn::Error::new(
            attr.path().span(),
            format!("{FORM} needs the cluster's shape in blocks, at most {max} in all"),
        ));
    }
    let args = attr.parse_args_with(
        syn::punctuated::Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated,
    )?;
    if args.is_empty() || args.len() > 3 {
        return Err(syn::Error::new(
            attr.path().span(),
            format!(
                "{FORM} takes 1 to 3 block counts, not {}: the cluster's shape in blocks",
                args.len()
            ),
        ));
    }
    let mut dims = [1u32; 3];
    for (d, e) in dims.iter_mut().zip(&args) {
        *d = lit_u32(e).map_err(|_| {
            syn::Error::new(
                e.span(),
                format!("{FORM} takes integer literals: the cluster's blocks along each axis"),
            )
        })?;
        if *d == 0 {
            return Err(syn::Error::new(
                e.span(),
                "a cluster has at least 1 block along each axis",
            ));
        }
    }
    let blocks = dims.iter().map(|&d| u64::from(d)).product::<u64>();
    if blocks > u64::from(max) {
        return Err(syn::Error::new(
            attr.path().span(),
            format!(
                "a cluster of {} x {} x {} = {blocks} blocks is more than the {max} a cluster may \
                 have (sm_90's portable limit): choose a shape of at most {max} blocks, e.g. \
                 #[cluster_launch(2, 2, 1)]",
                dims[0], dims[1], dims[2]
            ),
        ));
    }
    Ok((dims[0], dims[1], dims[2]))
}

fn parse_contract(
    attr: &syn::Attribute,
    const_params: &[(String, cuprum_ir::ScalarType)],
    consts: &[syn::ItemConst],
) -> syn::Result<(ContractInfo, Vec<syn::Expr>)> {
    let args = attr.parse_args_with(
        syn::punctuated::Punctuated::<syn::MetaNameValue, syn::Token![,]>::parse_terminated,
    )?;
    let mut domain = None;
    let mut block = None;
    let mut block_params = [None; 3];
    let mut dynamic_shared = None;
    let mut requires = Vec::new();
    for nv in &args {
        let key = nv
            .path
            .get_ident()
            .map(|i| i.to_string())
            .unwrap_or_default();
        match key.as_str() {
            "domain" => {
                let d = lit_u32(&nv.value)?;
                if !(1..=3).contains(&d) {
                    return Err(syn::Error::new(nv.value.span(), "domain must be 1, 2 or 3"));
                }
                domain = Some(d);
            }
            "block" => {
                let syn::Expr::Tuple(t) = &nv.value else {
                    return Err(syn::Error::new(
                        nv.value.span(),
                        "expected block = (x, y, z)",
                    ));
                };
                // A literal, or a const parameter of the kernel (1 until specialized).
                let mut dims = Vec::with_capacity(3);
                for (d, e) in t.elems.iter().enumerate() {
                    let param = match e {
                        syn::Expr::Path(p) => p
                            .path
                            .get_ident()
                            .and_then(|id| const_params.iter().position(|(n, _)| id == n.as_str())),
                        _ => None,
                    };
                    match param {
                        Some(i) if d < 3 => {
                            block_params[d] = u8::try_from(i).ok();
                            dims.push(1);
                        }
                        _ => dims.push(
                            crate::layout::const_length(e, consts)
                                .and_then(|v| u32::try_from(v).ok())
                                .ok_or_else(|| {
                                    syn::Error::new(
                                        e.span(),
                                        "a block dimension is an integer literal, a `const` \
                                         of the module (or arithmetic on them), or a const \
                                         parameter of the kernel",
                                    )
                                })?,
                        ),
                    }
                }
                let [x, y, z] = dims[..] else {
                    return Err(syn::Error::new(t.span(), "expected three block dimensions"));
                };
                check_block(x, y, z).map_err(|e| syn::Error::new(t.span(), e))?;
                block = Some((x, y, z));
            }
            "dynamic_shared" => dynamic_shared = Some(lit_u32(&nv.value)?),
            // cuda-oxide's 32-bit thread coordinates: cuprum computes every index exactly
            // (in 64 bits where it must), so either width gives the same indices.
            "coordinates" => {
                let width = match &nv.value {
                    syn::Expr::Path(p) => p.path.get_ident().map(|i| i.to_string()),
                    _ => None,
                };
                if !matches!(width.as_deref(), Some("u32" | "u64" | "usize")) {
                    return Err(syn::Error::new(
                        nv.value.span(),
                        "expected coordinates = u32 (or u64, usize)",
                    ));
                }
            }
            "requires" => {
                requires = match &nv.value {
                    syn::Expr::Tuple(t) => t.elems.iter().cloned().collect(),
                    syn::Expr::Paren(p) => vec![(*p.expr).clone()],
                    other => vec![other.clone()],
                };
            }
            _ => {
                return Err(syn::Error::new(
                    nv.path.span(),
                    "unknown launch_contract key: expected `domain`, `block`, \
                     `dynamic_shared`, `coordinates` or `requires`",
                ));
            }
        }
    }
    match block {
        Some(block) => Ok((
            ContractInfo {
                domain,
                block,
                dynamic_shared,
                block_params,
            },
            requires,
        )),
        None => Err(syn::Error::new(
            attr.span(),
            "expected #[launch_contract(domain = N, block = (x, y, z))] (or, on an `unsafe` \
             kernel, #[launch_contract(block = (x, y, z))])",
        )),
    }
}

/// Collects several errors into one, so a user sees all of them in one build.
#[derive(Default)]
pub struct Errors(Option<syn::Error>);

impl Errors {
    pub fn push(&mut self, e: syn::Error) {
        match &mut self.0 {
            Some(all) => all.combine(e),
            None => self.0 = Some(e),
        }
    }
    pub fn finish(self) -> syn::Result<()> {
        self.0.map_or(Ok(()), Err)
    }
}
