//! `cargo cuprum emit`: the IR and PTX of a crate's kernels, without building the crate.
//!
//! Building would run the proc macro, which already compiles every kernel, but it would also
//! build every dependency and it hides the result. Instead this walks the crate's module tree
//! from its roots (`src/lib.rs`, `src/main.rs`, `src/bin`, `examples`, `tests`, `benches`,
//! following `mod x;` declarations, so test fixtures that no target includes are skipped),
//! parses each file with `syn`, finds the `#[cuda_module]` modules anywhere in it and runs the
//! same front end as the macro (`cuprum_front::compile_module`), the same optimizer passes as
//! the runtime (`cuprum_opt::optimize`, unless `--no-opt`) and the same PTX writer. Generic
//! kernels have no IR until they are specialized at launch: they are noted (and left out,
//! should the front end refuse them), and one specialization named with `--kernel
//! 'NAME::<ARGS>'` or `--specialize` ([`crate::specialize`]) is compiled as a launch would
//! (`cuprum_front::compile_specialized` on the module's source, then the optimizer).

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use syn::visit::Visit;

use crate::cli::EmitArgs;
use crate::specialize::{self, SpecArgs};

/// What to print.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EmitOptions {
    /// Only this kernel (its function name).
    pub kernel: Option<String>,
    /// The specialization of `kernel`, when it is generic.
    pub spec: Option<SpecArgs>,
    /// Run the optimizer passes the runtime runs (`cuprum_opt::optimize`) before printing.
    pub optimize: bool,
    /// Print the IR.
    pub ir: bool,
    /// Print the PTX.
    pub ptx: bool,
    /// The PTX target.
    pub target: cuprum_ptx::Target,
}

/// The result of emitting a crate: the text to print and what went wrong.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EmitOutput {
    /// IR and PTX, with a header per module.
    pub text: String,
    /// Things worth knowing that are not errors (generic kernels left out...).
    pub notes: Vec<String>,
    /// Files that could not be read or parsed, modules that did not compile: `file:line:col:
    /// message`.
    pub errors: Vec<String>,
    /// Names of the kernels printed.
    pub kernels: Vec<String>,
    /// Every kernel name seen, printed or not (for "no kernel named X" messages).
    pub all_kernels: Vec<String>,
    /// Whether the kernel asked for was found (printed, or refused with an error).
    pub found_requested: bool,
}

/// Which macro a module found carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModuleKind {
    /// `#[cuda_module]`: SIMT kernels.
    Simt,
    /// `#[cuprum::tile::module]`: tile kernels ([`crate::emit_tile`]).
    Tile,
}

/// A `#[cuda_module]` or `#[cuprum::tile::module]` found in a file.
#[derive(Clone, Debug)]
pub struct FoundModule {
    /// Which macro it carries.
    pub kind: ModuleKind,
    /// The file it is in.
    pub file: PathBuf,
    /// The module's name.
    pub name: String,
    /// Its line in the file (1-based).
    pub line: usize,
    /// The module itself.
    pub item: syn::ItemMod,
}

fn is_attr(attr: &syn::Attribute, name: &str) -> bool {
    attr.path().segments.last().is_some_and(|s| s.ident == name)
}

/// Whether `attr` is `#[cuprum::tile::module]` (or `#[tile::module]`).
fn is_tile_module_attr(attr: &syn::Attribute) -> bool {
    let segments: Vec<String> = attr
        .path()
        .segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect();
    segments.len() >= 2 && segments.ends_with(&["tile".to_string(), "module".to_string()])
}

/// Finds the `#[cuda_module]` and `#[cuprum::tile::module]` modules of a parsed file, at any
/// depth (inside other modules, functions...), without looking inside the modules found.
pub fn find_modules(file: &Path, ast: &syn::File) -> Vec<FoundModule> {
    struct Finder<'a> {
        file: &'a Path,
        found: Vec<FoundModule>,
    }
    impl<'ast> Visit<'ast> for Finder<'_> {
        fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
            let kind = if m.attrs.iter().any(|a| is_attr(a, "cuda_module")) {
                Some(ModuleKind::Simt)
            } else if m.attrs.iter().any(is_tile_module_attr) {
                Some(ModuleKind::Tile)
            } else {
                None
            };
            if let Some(kind) = kind {
                self.found.push(FoundModule {
                    kind,
                    file: self.file.to_path_buf(),
                    name: m.ident.to_string(),
                    line: m.ident.span().start().line,
                    item: m.clone(),
                });
            } else {
                syn::visit::visit_item_mod(self, m);
            }
        }
    }
    let mut finder = Finder {
        file,
        found: Vec::new(),
    };
    finder.visit_file(ast);
    finder.found
}

/// The entry files of the package in `dir`: library, binaries, examples, tests, benches.
pub fn package_roots(dir: &Path) -> Vec<PathBuf> {
    let mut roots = Vec::new();
    for file in ["src/lib.rs", "src/main.rs"] {
        let path = dir.join(file);
        if path.is_file() {
            roots.push(path);
        }
    }
    for folder in ["src/bin", "examples", "tests", "benches"] {
        let Ok(listing) = fs::read_dir(dir.join(folder)) else {
            continue;
        };
        let mut found: Vec<PathBuf> = listing
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter_map(|p| {
                if p.is_file() && p.extension().is_some_and(|e| e == "rs") {
                    Some(p)
                } else if p.is_dir() && p.join("main.rs").is_file() {
                    Some(p.join("main.rs"))
                } else {
                    None
                }
            })
            .collect();
        found.sort();
        roots.extend(found);
    }
    roots
}

/// The folder in which the submodules of the module in `file` live: the file's own folder
/// for a crate root or `mod.rs`, else `<folder>/<stem>/`.
fn module_dir(file: &Path, is_root: bool) -> PathBuf {
    let parent = file.parent().unwrap_or(Path::new(".")).to_path_buf();
    let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    if is_root || stem == "mod" {
        parent
    } else {
        parent.join(stem)
    }
}

fn path_attr(attrs: &[syn::Attribute]) -> Option<String> {
    attrs
        .iter()
        .find(|a| a.path().is_ident("path"))
        .and_then(|a| match &a.meta {
            syn::Meta::NameValue(nv) => match &nv.value {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        })
}

/// The files of `mod name;` declarations in `items` (a file's items or an inline module's),
/// whose submodules live in `dir`; `file_dir` is the folder of the file they are written in.
fn declared_files(items: &[syn::Item], dir: &Path, file_dir: &Path, out: &mut Vec<PathBuf>) {
    for item in items {
        let syn::Item::Mod(m) = item else { continue };
        let name = m.ident.to_string();
        match &m.content {
            Some((_, inner)) => {
                let inner_dir = match path_attr(&m.attrs) {
                    Some(p) => file_dir.join(p),
                    None => dir.join(&name),
                };
                declared_files(inner, &inner_dir, file_dir, out);
            }
            None => {
                if let Some(p) = path_attr(&m.attrs) {
                    out.push(file_dir.join(p));
                    continue;
                }
                let flat = dir.join(format!("{name}.rs"));
                let nested = dir.join(&name).join("mod.rs");
                out.push(if flat.is_file() || !nested.is_file() {
                    flat
                } else {
                    nested
                });
            }
        }
    }
}

/// Whether `dir` holds a package (a `Cargo.toml` with a `[package]` table).
fn is_package(dir: &Path) -> bool {
    fs::read_to_string(dir.join("Cargo.toml"))
        .is_ok_and(|t| t.lines().any(|l| l.trim() == "[package]"))
}

/// The packages at or under `dir` (skipping `target` and hidden folders).
pub fn packages_under(dir: &Path) -> Vec<PathBuf> {
    if is_package(dir) {
        return vec![dir.to_path_buf()];
    }
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(listing) = fs::read_dir(&d) else {
            continue;
        };
        for entry in listing.filter_map(Result::ok) {
            let path = entry.path();
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if !path.is_dir() || name.starts_with('.') || name == "target" {
                continue;
            }
            if is_package(&path) {
                found.push(path);
            } else {
                stack.push(path);
            }
        }
    }
    found.sort();
    found
}

/// Parses every file of the module trees rooted at `roots`, finding `#[cuda_module]`s; files
/// that cannot be read or parsed become errors.
pub fn scan(roots: &[PathBuf], errors: &mut Vec<String>) -> Vec<FoundModule> {
    let mut seen = BTreeSet::new();
    let mut modules = Vec::new();
    let mut queue: Vec<(PathBuf, bool)> = roots.iter().map(|r| (r.clone(), true)).collect();
    queue.reverse();
    while let Some((file, is_root)) = queue.pop() {
        if !seen.insert(file.clone()) {
            continue;
        }
        let source = match fs::read_to_string(&file) {
            Ok(s) => s,
            Err(e) => {
                errors.push(format!("{}: {e}", file.display()));
                continue;
            }
        };
        let ast = match syn::parse_file(&source) {
            Ok(ast) => ast,
            Err(e) => {
                errors.push(located(&file, &e));
                continue;
            }
        };
        modules.extend(find_modules(&file, &ast));
        let file_dir = file.parent().unwrap_or(Path::new(".")).to_path_buf();
        let mut children = Vec::new();
        declared_files(
            &ast.items,
            &module_dir(&file, is_root),
            &file_dir,
            &mut children,
        );
        // Depth first, in declaration order.
        queue.extend(children.into_iter().rev().map(|c| (c, false)));
    }
    modules
}

/// `file:line:col: message` for each part of a (combined) syn error.
pub(crate) fn located(file: &Path, error: &syn::Error) -> String {
    error
        .clone()
        .into_iter()
        .map(|e| {
            let start = e.span().start();
            format!(
                "{}:{}:{}: {}",
                file.display(),
                start.line,
                start.column + 1,
                e
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn kernel_fn(item: &syn::Item) -> Option<&syn::ItemFn> {
    match item {
        syn::Item::Fn(f) if f.attrs.iter().any(|a| is_attr(a, "kernel")) => Some(f),
        _ => None,
    }
}

/// Whether `f` has type or const parameters (what a specialization names; lifetimes do not
/// count).
fn is_generic(f: &syn::ItemFn) -> bool {
    !specialize::generic_params(f).is_empty()
}

/// Compiles one module and appends what `options` asks for to `out`.
pub fn emit_module(found: &FoundModule, shown: &Path, options: &EmitOptions, out: &mut EmitOutput) {
    if found.kind == ModuleKind::Tile {
        crate::emit_tile::emit_tile_module(found, shown, options, out);
        return;
    }
    let kernel_fns: Vec<&syn::ItemFn> = match &found.item.content {
        Some((_, items)) => items.iter().filter_map(kernel_fn).collect(),
        None => Vec::new(),
    };
    if let Some(want) = &options.kernel
        && let Some(f) = kernel_fns.iter().find(|f| f.sig.ident == want)
    {
        let is_generic = is_generic(f);
        if is_generic || options.spec.is_some() {
            out.found_requested = true;
            out.all_kernels.push(want.clone());
            if is_generic {
                emit_specialized(found, shown, f, options, out);
            } else {
                out.errors.push(format!(
                    "{}:{}: kernel `{want}` is not generic: drop the specialization \
                     (`::<...>` or --specialize)",
                    shown.display(),
                    f.sig.ident.span().start().line
                ));
            }
            return;
        }
    }
    let generic: Vec<(String, usize, String)> = kernel_fns
        .iter()
        .filter(|f| is_generic(f))
        .map(|f| {
            let name = f.sig.ident.to_string();
            let params = specialize::generic_params(f);
            let how = format!(
                "over {}: emit one specialization with {}",
                specialize::describe(&params),
                specialize::example(&name, &params)
            );
            (name, f.sig.ident.span().start().line, how)
        })
        .collect();
    out.all_kernels
        .extend(generic.iter().map(|(n, _, _)| n.clone()));
    // A front end that compiles generic kernels checks them and leaves them out of the IR (they
    // are specialized at launch); one that does not refuses the module, which is then compiled
    // without them.
    let compiled = match cuprum_front::compile_module(&found.item) {
        Ok(c) => {
            for (name, line, how) in &generic {
                out.notes.push(format!(
                    "{}:{line}: kernel `{name}` is generic {how} (it is specialized when \
                     launched; its body was checked)",
                    shown.display()
                ));
            }
            c
        }
        Err(e) if !generic.is_empty() => {
            let mut item = found.item.clone();
            if let Some((_, items)) = &mut item.content {
                items.retain(|i| kernel_fn(i).is_none_or(|f| !is_generic(f)));
            }
            match cuprum_front::compile_module(&item) {
                Ok(c) => {
                    for (name, line, _) in &generic {
                        out.notes.push(format!(
                            "{}:{line}: kernel `{name}` is generic; this front end does not \
                             compile generic kernels, so it is left out",
                            shown.display()
                        ));
                    }
                    c
                }
                Err(_) => {
                    out.errors.push(located(shown, &e));
                    return;
                }
            }
        }
        Err(e) => {
            out.errors.push(located(shown, &e));
            return;
        }
    };
    let mut ir = compiled.ir;
    if options.optimize {
        cuprum_opt::optimize(&mut ir);
    }
    out.all_kernels
        .extend(ir.kernels.iter().map(|k| k.name.clone()));
    let selected: Vec<&cuprum_ir::Kernel> = ir
        .kernels
        .iter()
        .filter(|k| options.kernel.as_ref().is_none_or(|want| &k.name == want))
        .collect();
    if selected.is_empty() {
        return;
    }
    if options.kernel.is_some() {
        out.found_requested = true;
    }
    let names: Vec<&str> = selected.iter().map(|k| k.name.as_str()).collect();
    let label = format!(
        "kernel{}: {}",
        if names.len() == 1 { "" } else { "s" },
        names.join(", ")
    );
    // One kernel alone when asked for; otherwise the module as the runtime loads it.
    let unit = cuprum_ir::Module {
        kernels: selected.iter().map(|k| (*k).clone()).collect(),
    };
    print_unit(found, shown, options, &unit, &label, out);
}

/// Compiles the specialization of generic kernel `f` that `options` names, as a launch would
/// (the module's source through `cuprum_front::compile_specialized`, then the optimizer), and
/// prints it; without a specialization, an error that lists the kernel's parameters.
fn emit_specialized(
    found: &FoundModule,
    shown: &Path,
    f: &syn::ItemFn,
    options: &EmitOptions,
    out: &mut EmitOutput,
) {
    let name = f.sig.ident.to_string();
    let line = f.sig.ident.span().start().line;
    let at = format!("{}:{line}", shown.display());
    let params = specialize::generic_params(f);
    let Some(args) = &options.spec else {
        out.errors.push(format!(
            "{at}: kernel `{name}` is generic over {}: it has code only per specialization; \
             name one with {}",
            specialize::describe(&params),
            specialize::example(&name, &params)
        ));
        return;
    };
    let spec = match specialize::resolve(&name, &params, args) {
        Ok(spec) => spec,
        Err(e) => {
            out.errors.push(format!("{at}: {e}"));
            return;
        }
    };
    let shown_spec = specialize::display(&name, &params, &spec);
    // The source text the macro embeds: the module without its `#[cuda_module]`.
    let mut item = found.item.clone();
    item.attrs.retain(|a| !is_attr(a, "cuda_module"));
    let source = cuprum_front::module_source(&item);
    let mut ir = match cuprum_front::compile_specialized(&source, &name, &spec) {
        Ok(ir) => ir,
        Err(e) => {
            out.errors.push(format!(
                "{at}: kernel `{name}` does not compile as `{shown_spec}`: {e}"
            ));
            return;
        }
    };
    if options.optimize {
        cuprum_opt::optimize(&mut ir);
    }
    let label = format!("kernel: {shown_spec}, entry {}", spec.mangle(&name));
    print_unit(found, shown, options, &ir, &label, out);
}

/// Appends the header, the IR and the PTX of `unit` (as `options` asks) to `out`.
pub(crate) fn print_unit(
    found: &FoundModule,
    shown: &Path,
    options: &EmitOptions,
    unit: &cuprum_ir::Module,
    label: &str,
    out: &mut EmitOutput,
) {
    let text = &mut out.text;
    let _ = writeln!(
        text,
        "// ===== {}:{}: mod {} ({label}) =====",
        shown.display(),
        found.line,
        found.name,
    );
    if options.ir {
        let _ = writeln!(text, "// ----- IR -----");
        text.push_str(&cuprum_ir::print_module(unit));
        if !text.ends_with('\n') {
            text.push('\n');
        }
    }
    if options.ptx {
        let _ = writeln!(text, "// ----- PTX ({}) -----", options.target.name());
        match cuprum_ptx::write_module(unit, options.target) {
            Ok(ptx) => {
                text.push_str(&ptx);
                if !text.ends_with('\n') {
                    text.push('\n');
                }
            }
            Err(e) => {
                // Hopper's instructions need the architecture-specific target: say which.
                let hint = if !options.target.is_arch_specific()
                    && unit.kernels.iter().any(|k| k.needs_arch_specific())
                {
                    " (`--target sm_90a` writes it)"
                } else {
                    ""
                };
                out.errors.push(format!(
                    "{}:{}: mod {}: PTX: {e}{hint}",
                    shown.display(),
                    found.line,
                    found.name
                ))
            }
        }
    }
    text.push('\n');
    out.kernels
        .extend(unit.kernels.iter().map(|k| k.name.clone()));
}

/// Emits every kernel under `path` (a package folder, a folder of packages or one `.rs`
/// file), naming files relative to `base`.
///
/// ```
/// use cargo_cuprum::emit::{emit_path, EmitOptions};
///
/// let dir = std::env::temp_dir().join(format!("cuprum-emit-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let file = dir.join("k.rs");
/// std::fs::write(&file, r#"
///     #[cuda_module]
///     mod kernels {
///         #[kernel]
///         pub fn fill(value: f32, mut out: DisjointSlice<f32>) {
///             if let Some(o) = out.get_mut(thread::index_1d()) { *o = value; }
///         }
///     }
/// "#)?;
/// let options = EmitOptions {
///     kernel: None,
///     spec: None,
///     optimize: true,
///     ir: true,
///     ptx: true,
///     target: cuprum_ptx::Target::Sm80,
/// };
/// let out = emit_path(&file, &dir, &options);
/// assert!(out.errors.is_empty(), "{:?}", out.errors);
/// assert_eq!(out.kernels, ["fill"]);
/// assert!(out.text.contains(".target sm_80") && out.text.contains(".entry fill"));
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn emit_path(path: &Path, base: &Path, options: &EmitOptions) -> EmitOutput {
    let mut out = EmitOutput::default();
    let roots = if path.is_file() {
        vec![path.to_path_buf()]
    } else {
        let packages = packages_under(path);
        if packages.is_empty() {
            out.errors.push(format!(
                "{}: no Cargo package here or below (and not a .rs file)",
                path.display()
            ));
        }
        packages.iter().flat_map(|p| package_roots(p)).collect()
    };
    let modules = scan(&roots, &mut out.errors);
    for found in &modules {
        let shown = found.file.strip_prefix(base).unwrap_or(&found.file);
        emit_module(found, shown, options, &mut out);
    }
    if modules.is_empty() && out.errors.is_empty() {
        out.notes.push(format!(
            "no #[cuda_module] or #[cuprum::tile::module] found in {} ({} file(s) read)",
            path.display(),
            roots.len()
        ));
    }
    out
}

/// `cargo cuprum emit`: prints the text on stdout, notes and errors on stderr; fails when a
/// module does not compile or the kernel asked for is nowhere.
pub fn run(args: &EmitArgs) -> Result<ExitCode, String> {
    let base = std::env::current_dir().map_err(|e| format!("reading the current folder: {e}"))?;
    let path = base.join(args.path.clone().unwrap_or_else(|| PathBuf::from(".")));
    if !path.exists() {
        return Err(format!("{} does not exist", path.display()));
    }
    let both = !args.ir && !args.ptx;
    let request = match &args.kernel {
        Some(kernel) => Some(specialize::parse_request(
            kernel,
            args.specialize.as_deref(),
        )?),
        None => None,
    };
    let options = EmitOptions {
        kernel: request.as_ref().map(|r| r.name.clone()),
        spec: request.and_then(|r| r.spec),
        optimize: !args.no_opt,
        ir: args.ir || both,
        ptx: args.ptx || both,
        target: args.target.target(),
    };
    let out = emit_path(&path, &base, &options);
    print!("{}", out.text);
    for note in &out.notes {
        eprintln!("note: {note}");
    }
    for error in &out.errors {
        eprintln!("error: {error}");
    }
    if let Some(want) = &options.kernel
        && !out.found_requested
    {
        let mut all = out.all_kernels.clone();
        all.sort();
        all.dedup();
        return Err(format!(
            "no kernel named `{want}` under {}{}",
            path.display(),
            if all.is_empty() {
                String::new()
            } else {
                format!(" (kernels found: {})", all.join(", "))
            }
        ));
    }
    Ok(if out.errors.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(kernel: Option<&str>) -> EmitOptions {
        EmitOptions {
            kernel: kernel.map(str::to_owned),
            spec: None,
            optimize: true,
            ir: true,
            ptx: true,
            target: cuprum_ptx::Target::Sm90,
        }
    }

    #[test]
    fn modules_are_found_at_any_depth() {
        let source = r#"
            mod outer {
                #[cuprum::cuda_module]
                mod a { #[kernel] pub fn k(mut o: DisjointSlice<u32>) {} }
            }
            fn f() {
                #[cuda_module]
                mod b {}
            }
            mod plain { fn g() {} }
        "#;
        let ast = syn::parse_file(source).unwrap_or_else(|e| panic!("{e}"));
        let found = find_modules(Path::new("x.rs"), &ast);
        let names: Vec<&str> = found.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(found[0].line, 4);
    }

    #[test]
    fn generic_kernels_are_noted_and_errors_located() {
        let source = r#"
#[cuda_module]
mod kernels {
    #[kernel]
    pub fn fill(v: u32, mut o: DisjointSlice<u32>) {
        if let Some(x) = o.get_mut(thread::index_1d()) { *x = v; }
    }
    #[kernel]
    pub fn generic<T: Copy>(mut o: DisjointSlice<T>) {}
}
#[cuda_module]
mod broken {
    #[kernel]
    pub fn bad(mut o: DisjointSlice<u32>) {
        let s = String::new();
    }
}
"#;
        let ast = syn::parse_file(source).unwrap_or_else(|e| panic!("{e}"));
        let mut out = EmitOutput::default();
        for found in find_modules(Path::new("k.rs"), &ast) {
            emit_module(&found, Path::new("k.rs"), &options(None), &mut out);
        }
        assert_eq!(out.kernels, ["fill"]);
        assert_eq!(out.notes.len(), 1, "{:?}", out.notes);
        assert!(
            out.notes[0].starts_with("k.rs:9: kernel `generic` is generic"),
            "{:?}",
            out.notes
        );
        assert_eq!(out.errors.len(), 1, "{:?}", out.errors);
        assert!(out.errors[0].starts_with("k.rs:15:"), "{:?}", out.errors);
        assert!(out.text.contains("mod kernels (kernel: fill)"));
        assert!(out.text.contains("// ----- PTX (sm_90) -----"));
    }

    #[test]
    fn hopper_kernels_need_sm_90a_and_the_error_says_so() {
        let source = r#"
#[cuda_module]
mod kernels {
    #[kernel]
    pub fn fenced(mut o: DisjointSlice<u32>) {
        wgmma_fence();
        if let Some(x) = o.get_mut(thread::index_1d()) { *x = 1; }
    }
}
"#;
        let ast = syn::parse_file(source).unwrap_or_else(|e| panic!("{e}"));
        let emit = |target| {
            let mut out = EmitOutput::default();
            for found in find_modules(Path::new("k.rs"), &ast) {
                let options = EmitOptions {
                    target,
                    ..options(None)
                };
                emit_module(&found, Path::new("k.rs"), &options, &mut out);
            }
            out
        };
        let portable = emit(cuprum_ptx::Target::Sm90);
        assert_eq!(portable.errors.len(), 1, "{:?}", portable.errors);
        assert!(
            portable.errors[0].ends_with("(`--target sm_90a` writes it)"),
            "{:?}",
            portable.errors
        );
        let hopper = emit(cuprum_ptx::Target::Sm90a);
        assert!(hopper.errors.is_empty(), "{:?}", hopper.errors);
        assert!(hopper.text.contains("wgmma.fence"), "{}", hopper.text);
    }

    #[test]
    fn module_dirs_follow_rust_rules() {
        assert_eq!(
            module_dir(Path::new("/p/src/lib.rs"), true),
            Path::new("/p/src")
        );
        assert_eq!(
            module_dir(Path::new("/p/src/a.rs"), false),
            Path::new("/p/src/a")
        );
        assert_eq!(
            module_dir(Path::new("/p/src/a/mod.rs"), false),
            Path::new("/p/src/a")
        );
    }
}
