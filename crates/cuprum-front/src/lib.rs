//! The SIMT front end: turns the Rust source of a `#[cuda_module]` into cuprum IR.
//!
//! It runs twice with the same input: inside the proc macro at `cargo build`, where every
//! error becomes a `compile_error!` pointing at the user's code, and at run time when a module
//! is first loaded, where it rebuilds the IR from the source text the macro embedded (so the
//! IR never has to be serialized, and generic kernels can later be specialized at launch).
//! It must stay deterministic: the same source gives the same IR.

#![warn(missing_docs)]

pub mod constants;
mod generic_structs;
mod impls;
mod items;
pub mod layout;
mod lower;
mod types;

pub use cuprum_ir::SliceAccess;
pub use items::{CUPRUM_ATTRS, ContractInfo, HostParam, KernelInfo, ModuleInfo, parse_kernel_attr};
pub use lower::Specialization;
pub use types::{ParamType, uniform_arg};

/// The IR of a module together with what the host-side code generator needs to know.
#[derive(Clone, Debug)]
pub struct CompiledModule {
    /// The IR of every kernel (generic kernels are left out: they are lowered per
    /// [`Specialization`] at launch).
    pub ir: cuprum_ir::Module,
    /// The module's kernels, helpers, constants and structs, as the host code generator needs
    /// them.
    pub info: ModuleInfo,
}

/// Compiles a parsed `#[cuda_module]` module. All errors found are combined into one
/// `syn::Error` whose parts carry the spans of the offending code.
pub fn compile_module(module: &syn::ItemMod) -> Result<CompiledModule, syn::Error> {
    compile_module_with_lines(module, None)
}

/// [`compile_module`], with line information when `source_file` names the file the
/// module's spans count lines in: every statement of a kernel is marked with its line, which
/// the PTX carries as `.file`/`.loc` (Nsight Compute's source view, `nvdisasm -g`). Generic
/// kernels are compiled per specialization at launch, by [`compile_specialized_with_lines`].
pub fn compile_module_with_lines(
    module: &syn::ItemMod,
    source_file: Option<String>,
) -> Result<CompiledModule, syn::Error> {
    let mut info = items::scan_module(module)?;
    info.line_info = source_file;
    let mut kernels = Vec::with_capacity(info.kernels.len());
    let mut errors: Option<syn::Error> = None;
    for k in &info.kernels {
        // Generic kernels are compiled per specialization at launch; here they are only
        // checked, with a few common specializations.
        let result = if k.is_generic() {
            check_generic(&info, k).map(|()| None)
        } else {
            lower::lower_kernel(&info, k, &Specialization::default()).map(Some)
        };
        match result {
            Ok(Some(kernel)) => kernels.push(kernel),
            Ok(None) => {}
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

/// Checks a generic kernel by lowering it for every type parameter set to each of the common
/// element types (and const parameters set to 32): it passes if one of them lowers, since a
/// kernel may well only make sense for floats, or only for integers.
fn check_generic(info: &ModuleInfo, k: &KernelInfo) -> Result<(), syn::Error> {
    use cuprum_ir::ScalarType as S;
    let mut first_error = None;
    // Const parameters stand for 32, except that those naming the launch contract's block
    // take the largest power of two up to 32 that keeps the block launchable.
    let named_in_block = |name: &str| {
        k.contract.is_some_and(|c| {
            c.block_params.iter().flatten().any(|&i| {
                k.const_params
                    .get(usize::from(i))
                    .is_some_and(|(n, _)| n == name)
            })
        })
    };
    let consts_with = |p: i128| -> Vec<(String, i128)> {
        k.const_params
            .iter()
            .map(|(c, _)| (c.clone(), if named_in_block(c) { p } else { 32 }))
            .collect()
    };
    let block_value = [32, 16, 8, 4, 2, 1]
        .into_iter()
        .find(|&p| {
            let consts = consts_with(p);
            k.contract.is_none_or(|c| {
                c.resolved(&k.const_params, |n| {
                    consts.iter().find(|(c, _)| c == n).map(|&(_, v)| v)
                })
                .is_ok()
            })
        })
        .unwrap_or(1);
    for ty in [S::F32, S::I32, S::U32, S::F64, S::U64, S::I64] {
        let spec = Specialization {
            types: k.type_params.iter().map(|t| (t.clone(), ty)).collect(),
            consts: consts_with(block_value),
        };
        match lower::lower_kernel(info, k, &spec) {
            Ok(_) => return Ok(()),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Compiles one specialization of a generic kernel from the module's source text: its entry
/// is named by [`Specialization::mangle`].
pub fn compile_specialized(
    source: &str,
    kernel: &str,
    spec: &Specialization,
) -> Result<cuprum_ir::Module, String> {
    compile_specialized_with_lines(source, kernel, spec, None)
}

/// [`compile_specialized`] with line information naming `source_file`, as
/// [`compile_source_with_lines`] gives the module's other kernels (the macro records the
/// file under `CUPRUM_LINEINFO` and hands it to the run-time compile).
pub fn compile_specialized_with_lines(
    source: &str,
    kernel: &str,
    spec: &Specialization,
    source_file: Option<String>,
) -> Result<cuprum_ir::Module, String> {
    let module: syn::ItemMod = syn::parse_str(source).map_err(|e| e.to_string())?;
    let mut info = items::scan_module(&module).map_err(|e| e.to_string())?;
    info.line_info = source_file;
    let k = info
        .kernels
        .iter()
        .find(|k| k.name == kernel)
        .ok_or_else(|| format!("no kernel `{kernel}` in this module"))?;
    let ir = cuprum_ir::Module {
        kernels: vec![lower::lower_kernel(&info, k, spec).map_err(|e| e.to_string())?],
    };
    cuprum_ir::validate_module(&ir).map_err(|e| format!("internal compiler error: {e}"))?;
    Ok(ir)
}

/// The text of `module` for the run-time compile ([`compile_source`]): its tokens, each on the
/// line it has in the user's file (where spans know their lines: in the proc macro and with
/// `proc-macro2`'s `span-locations`), so that the lines run-time errors give (a failed
/// division's ``"`a / b` at line 12"``, a specialization's local-memory error) are the user's.
/// Where lines are unknown, the text is one line, as `to_string` would give.
pub fn module_source(module: &syn::ItemMod) -> String {
    let mut out = String::new();
    let mut line = 1;
    write_on_lines(
        quote::ToTokens::to_token_stream(module),
        &mut out,
        &mut line,
    );
    out
}

/// Writes `tokens` to `out`, starting new lines so that each token starts on its own line
/// (`line` is the line `out` ends on). Tokens are separated by a space, except after a
/// `Joint` punctuation mark (`::`, `+=`, `'a`), as `TokenStream`'s own printing does.
fn write_on_lines(tokens: proc_macro2::TokenStream, out: &mut String, line: &mut usize) {
    use proc_macro2::{Delimiter, Spacing, TokenTree};
    let mut joint = false;
    for tree in tokens {
        move_to(out, line, tree.span().start().line, joint);
        joint = false;
        match tree {
            TokenTree::Group(g) => {
                let (open, close) = match g.delimiter() {
                    Delimiter::Parenthesis => ("(", ")"),
                    Delimiter::Brace => ("{", "}"),
                    Delimiter::Bracket => ("[", "]"),
                    Delimiter::None => ("", ""),
                };
                out.push_str(open);
                write_on_lines(g.stream(), out, line);
                move_to(out, line, g.span_close().start().line, false);
                out.push_str(close);
            }
            TokenTree::Punct(p) => {
                out.push(p.as_char());
                joint = p.spacing() == Spacing::Joint;
            }
            TokenTree::Ident(i) => out.push_str(&i.to_string()),
            TokenTree::Literal(l) => {
                let text = l.to_string();
                *line += text.matches('\n').count();
                out.push_str(&text);
            }
        }
    }
}

/// Moves the end of `out` (on `line`) to line `target` with newlines, or else separates the next
/// token with a space unless it joins the previous one.
fn move_to(out: &mut String, line: &mut usize, target: usize, joint: bool) {
    if target > *line {
        out.extend(std::iter::repeat_n('\n', target - *line));
        *line = target;
    } else if !joint && !out.is_empty() && !out.ends_with(['\n', ' ']) {
        out.push(' ');
    }
}

/// Why a module's source text did not compile: the front end's message and where in the
/// text it points (1-based line, 0-based column, as `proc_macro2` counts).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct SourceError {
    /// What is wrong, as the front end reports it at `cargo build`.
    pub message: String,
    /// The line of the module's text the error points at.
    pub line: usize,
    /// The column on that line.
    pub column: usize,
}

impl From<syn::Error> for SourceError {
    fn from(error: syn::Error) -> Self {
        let start = error.span().start();
        Self {
            message: error.to_string(),
            line: start.line,
            column: start.column,
        }
    }
}

/// Front ends and tools that report errors as text take the message.
impl From<SourceError> for String {
    fn from(error: SourceError) -> Self {
        error.message
    }
}

/// Compiles the text of a `#[cuda_module]` module (what the macro embeds), for run time.
pub fn compile_source(source: &str) -> Result<CompiledModule, SourceError> {
    compile_source_with_lines(source, None)
}

/// [`compile_source`] with line information naming `source_file` (see
/// [`compile_module_with_lines`]; the text keeps the file's lines, not its columns).
pub fn compile_source_with_lines(
    source: &str,
    source_file: Option<String>,
) -> Result<CompiledModule, SourceError> {
    let module: syn::ItemMod = syn::parse_str(source)?;
    Ok(compile_module_with_lines(&module, source_file)?)
}
