//! The SIMT front end: turns the Rust source of a `#[cuda_module]` into cuprum IR.
//!
//! It runs twice with the same input: inside the proc macro at `cargo build`, where every
//! error becomes a `compile_error!` pointing at the user's code, and at run time when a module
//! is first loaded, where it rebuilds the IR from the source text the macro embedded (so the
//! IR never has to be serialized, and generic kernels can later be specialized at launch).
//! It must stay deterministic: the same source gives the same IR.

mod items;
mod lower;
mod types;

pub use cuprum_ir::SliceAccess;
pub use items::{ContractInfo, HostParam, KernelInfo, ModuleInfo};
pub use types::ParamType;

/// The IR of a module together with what the host-side code generator needs to know.
#[derive(Clone, Debug)]
pub struct CompiledModule {
    pub ir: cuprum_ir::Module,
    pub info: ModuleInfo,
}

/// Compiles a parsed `#[cuda_module]` module. All errors found are combined into one
/// `syn::Error` whose parts carry the spans of the offending code.
pub fn compile_module(module: &syn::ItemMod) -> Result<CompiledModule, syn::Error> {
    let info = items::scan_module(module)?;
    let mut kernels = Vec::with_capacity(info.kernels.len());
    let mut errors: Option<syn::Error> = None;
    for k in &info.kernels {
        match lower::lower_kernel(&info, k) {
            Ok(kernel) => kernels.push(kernel),
            Err(e) => match &mut errors {
                Some(all) => all.combine(e),
                None => errors = Some(e),
            },
        }
    }
    if let Some(e) = errors {
        return Err(e);
    }
    let ir = cuprum_ir::Module { kernels };
    cuprum_ir::validate_module(&ir).map_err(|e| {
        syn::Error::new(module.ident.span(), format!("internal compiler error: {e}"))
    })?;
    Ok(CompiledModule { ir, info })
}

/// Compiles the text of a `#[cuda_module]` module (what the macro embeds), for run time.
pub fn compile_source(source: &str) -> Result<CompiledModule, String> {
    let module: syn::ItemMod = syn::parse_str(source).map_err(|e| e.to_string())?;
    compile_module(&module).map_err(|e| e.to_string())
}
