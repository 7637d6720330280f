//! The tile front end: a `#[cuprum::tile::module]` module's Rust source (a `syn` AST) to tile
//! IR, run by the macro at `cargo build`, so that unknown operations and shape errors are
//! compile errors at the user's span. Generic kernels keep their const and type parameters
//! symbolic (`cuprum_tile_ir::Dim::Param`, `Elem::Param`); the host specializes them at
//! launch.
//!
//! The language is cuTile Rust's kernel language (the `cutile` crate's `core` names), so a
//! cutile kernel compiles with only its paths changed: grid queries
//! (`get_tile_block_id`), tensors and partitions (`x.partition(shape).load([i, j])`,
//! `load_tile_like`, `z.store(t)`), creation, shape, element-wise, math, comparison,
//! conversion and reduction operations, `if`/`for`/`while`/`loop` with `let mut` variables,
//! helper functions (inlined) and module consts, `cuda_tile_print!` and
//! `cuda_tile_assert!`. Beyond cutile: scalar operands of operators (`t * 2.0`), `break`
//! in `for` loops, `iota` of any rank.
//!
//! # Where cuprum's language differs from cutile's
//!
//! * **Scalar operands**: `t * 2.0`, `x + t`, `t / s` repeat the scalar to the tile's shape
//!   (cutile needs `broadcast_scalar`). A literal takes the other operand's element type.
//! * **`break` in `for`** loops, and `..=` ranges, are allowed.
//! * **`iota(shape)`** has any rank: the element at `[i, j, ..]` is `i` (it counts along
//!   axis 0); a float `iota` counts in `i32` and converts.
//! * **Modes are mostly not distinguished**: flush-to-zero (`*_ftz`, `ftz::Enabled`) is
//!   applied by `exp2` only (`exp2_ftz(x)`, `exp2(x, ftz::Enabled)`: the kernel IR's
//!   `Exp2Ftz`, one instruction on the GPU), elsewhere not, and rounding modes
//!   (`rounding::..`) are ignored; every operation rounds as the kernel IR defines it
//!   (conversions are Rust's `as`). cutile's ordering, scope, latency and TMA arguments are
//!   accepted and dropped, as are its compiler hints (`assume_*`, the
//!   `preconditions` entry option): cuprum's edge tiles pad loads and drop stores, so no
//!   access needs a check. The `optimization_hints` entry option is not part of the tile
//!   IR: `#[cuprum::tile::entry]` reads it and the launch hands it to the lowering.
//! * **Reductions and annotations**: a reduction's result may be annotated with its size-1
//!   dimensions kept or dropped, as cutile accepts (`let m: Tile<f32, { [1] }> =
//!   reduce_max(row, 0)` reshapes the rank-0 result); any other disagreement is an error.
//! * **Sub-tiles of an output**: `z.partition_mut(shape).store(t, [i, j])` writes a sub-tile
//!   of the block's own tile ([`cuprum_tile_ir::Stmt::StorePart`]); what falls outside the own
//!   tile is dropped (cutile checks it).
//! * **`mma(a, b, acc)`** (and `mmaf`) takes `f16`/`bf16` inputs with an `f32` accumulator,
//!   or `f32`/`f64` inputs with an accumulator of their type, as matrices or batches of them
//!   (`cuprum_tile_ir::Op::Mma` defines the arithmetic exactly); integer `mmai` and scaled
//!   `mmaf_scaled` are not there yet.
//! * **Raw pointers** (`*mut T` parameters of `unsafe fn` entries only): pointer tiles,
//!   `load_ptr_tko`/`store_ptr_tko`, tensor views (`make_tensor_view`), all as the tile IR's
//!   gathers and scatters, whose offsets outside the allocation read padding and write
//!   nothing; `tile_to_pointer` and pointer arithmetic beyond offsets are not there.
//! * **Mapped partitions**: `MappedPartitionMut` parameters, `for idx in z.iter_indices()`,
//!   `idx.components()`, `z.store(t, idx)` with the innermost own loop's index only.
//! * **Not yet**: scans, atomics, `cat`/`extract`, sub-tile loads of an
//!   output, `match`, labeled loops, and an early `return` from a helper; each is refused
//!   with a message at its span. Arithmetic on a const parameter inside a shape
//!   (`const_shape![2 * BM]`) is refused too (arithmetic on known sizes is folded).
//!
//! # Modules
//!
//! * `items`: what the module holds; entry attributes; module consts.
//! * `types`: the source's types and shapes, resolved against generics.
//! * `literal`: compile-time numbers and how they take types.
//! * `lower`: the lowering of each entry (its own module docs say how).
//!
//! Kernel generics become the IR's parameters in a fixed way the host relies on: each
//! `const N: i32` is one [`cuprum_tile_ir::ConstParam`] named `N`, each `const S: [i32; K]` is
//! `K` of them named `S[0]`..`S[K-1]`, and each type parameter is one entry of
//! [`cuprum_tile_ir::TileKernel::types`]. [`EntryInfo::generics`] gives the source order of
//! both kinds together (which `.generics(..)` follows).

#![warn(missing_docs)]

mod items;
mod literal;
mod lower;
mod types;

use cuprum_ir::ScalarType;
use cuprum_tile_ir::{TileKernel, TileModule};
use proc_macro2::Span;

pub use items::EntryAttrs;

/// A compiled module, with what the host side needs about each entry beyond its IR.
#[derive(Clone, Debug, PartialEq)]
pub struct CompiledTileModule {
    /// The entries' IR, in source order.
    pub module: TileModule,
    /// One per kernel of `module`, in the same order.
    pub entries: Vec<EntryInfo>,
}

/// What the host needs about one entry that its IR does not say.
#[derive(Clone, Debug, PartialEq)]
pub struct EntryInfo {
    /// The function's name (also the kernel's).
    pub name: String,
    /// The generic parameters in source order (lifetimes left out).
    pub generics: Vec<GenericParamInfo>,
    /// Whether the function is an `unsafe fn` (its launcher is then `unsafe` too).
    pub is_unsafe: bool,
    /// The entry attribute's options.
    pub attrs: EntryAttrs,
}

/// A generic parameter of an entry, in source order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GenericParamInfo {
    /// `const N: T` (`len` 1) or `const S: [T; len]`: the kernel's const parameters
    /// `first..first + len` ([`cuprum_tile_ir::TileKernel::consts`]).
    Const {
        /// Its name in the source.
        name: String,
        /// `T`.
        ty: ScalarType,
        /// The index of its first const parameter.
        first: u32,
        /// How many const parameters it is.
        len: u32,
        /// Whether it is an array (`[T; len]`).
        array: bool,
    },
    /// A type parameter: [`cuprum_tile_ir::TileKernel::types`]`[index]`.
    Type {
        /// Its name in the source.
        name: String,
        /// Its index among the kernel's type parameters.
        index: u32,
    },
}

/// Compiles every `#[cuprum::tile::entry]` function of `module` (helpers are inlined into
/// them); an error carries the span of the offending code, and errors of several entries are
/// combined.
pub fn compile_module(module: &syn::ItemMod) -> syn::Result<TileModule> {
    compile_module_with_info(module).map(|c| c.module)
}

/// [`compile_module`], with what the host needs about each entry ([`EntryInfo`]).
pub fn compile_module_with_info(module: &syn::ItemMod) -> syn::Result<CompiledTileModule> {
    compile_module_with_lines(module, None)
}

/// [`compile_module_with_info`], with line information when `source_file` names the file the
/// module's spans count lines in (the macro asks for it under `CUPRUM_LINEINFO`): each
/// statement is marked with its line and column ([`cuprum_tile_ir::Stmt::SourceLine`]),
/// which the lowering hands on to the PTX's `.file`/`.loc`. Without it there are no markers.
pub fn compile_module_with_lines(
    module: &syn::ItemMod,
    source_file: Option<String>,
) -> syn::Result<CompiledTileModule> {
    let mut items = items::scan_module(module)?;
    items.line_info = source_file;
    let mut kernels = Vec::with_capacity(items.entries.len());
    let mut entries = Vec::with_capacity(items.entries.len());
    let mut errors: Option<syn::Error> = None;
    // A helper's error is found once per entry that calls it; it is reported once.
    let mut seen = std::collections::HashSet::new();
    for entry in &items.entries {
        match compile_entry(&items, entry) {
            Ok((k, info)) => {
                kernels.push(k);
                entries.push(info);
            }
            Err(e) => {
                for e in e {
                    if !seen.insert((format!("{:?}", e.span()), e.to_string())) {
                        continue;
                    }
                    match &mut errors {
                        Some(all) => all.combine(e),
                        None => errors = Some(e),
                    }
                }
            }
        }
    }
    if let Some(e) = errors {
        return Err(e);
    }
    Ok(CompiledTileModule {
        module: TileModule { kernels },
        entries,
    })
}

/// How many times an entry is lowered at most: a run that learns a `let`'s literal type from
/// a later use lowers it again with that knowledge.
const MAX_RUNS: usize = 4;

fn compile_entry(
    items: &items::ModuleItems<'_>,
    entry: &items::Entry<'_>,
) -> syn::Result<(TileKernel, EntryInfo)> {
    let mut hints = lower::Hints::default();
    let mut result = lower::lower_entry(items, entry.func, &entry.attrs, &mut hints);
    for _ in 1..MAX_RUNS {
        if !hints.learnt_something_new() {
            break;
        }
        hints = hints.for_next_run();
        result = lower::lower_entry(items, entry.func, &entry.attrs, &mut hints);
    }
    let (kernel, info) = result?;
    cuprum_tile_ir::validate_kernel(&kernel).map_err(|e| {
        syn::Error::new(
            entry.func.sig.ident.span(),
            format!(
                "internal error of the tile front end (please report it): {}",
                types::with_names(&kernel, &e.to_string())
            ),
        )
    })?;
    Ok((kernel, info))
}

/// An error at `span`.
pub(crate) fn err<T>(span: Span, message: impl std::fmt::Display) -> syn::Result<T> {
    Err(syn::Error::new(span, message.to_string()))
}

/// An expression's source text, for messages: as written when its span covers it (the
/// compiler gives a multi-token span only on nightly), else its tokens, tidied.
pub(crate) fn source_text(e: &syn::Expr) -> String {
    let tokens = quote::ToTokens::to_token_stream(e).to_string();
    let compact = |s: &str| s.chars().filter(|c| !c.is_whitespace()).collect::<String>();
    match syn::spanned::Spanned::span(e).source_text() {
        Some(text) if compact(&text) == compact(&tokens) => text,
        _ => tidy(&tokens),
    }
}

/// A pattern's source text, for messages.
pub(crate) fn source_text_pat(p: &syn::Pat) -> String {
    tidy(&quote::ToTokens::to_token_stream(p).to_string())
}

/// A type's source text, for messages.
pub(crate) fn source_text_ty(t: &syn::Type) -> String {
    let text = tidy(&quote::ToTokens::to_token_stream(t).to_string());
    text.replace(" < ", "<")
        .replace("< ", "<")
        .replace(" >", ">")
        .replace(" <", "<")
}

/// Token text (`y . load ()`) with the spaces a person would not write removed
/// (`y.load()`).
fn tidy(tokens: &str) -> String {
    let chars: Vec<char> = tokens.chars().collect();
    let word = |c: Option<char>| {
        c.is_some_and(|c| c.is_alphanumeric() || matches!(c, '_' | ')' | ']' | '>' | '!'))
    };
    let mut out = String::with_capacity(tokens.len());
    for (i, &c) in chars.iter().enumerate() {
        if c == ' ' {
            let prev = out.chars().last();
            let next = chars.get(i + 1).copied();
            let after_next = chars.get(i + 2).copied();
            let drop = matches!(prev, Some('.' | '(' | '[' | ':'))
                || matches!(next, Some('.' | ')' | ']' | ',' | ':' | ';'))
                || (matches!(next, Some('(' | '[')) && word(prev))
                || (next == Some('!') && after_next != Some('=') && word(prev))
                || (prev == Some('!') && out.len() >= 2 && word(out.chars().rev().nth(1)));
            if drop {
                continue;
            }
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn token_text_is_tidied_as_people_write_it() {
        assert_eq!(super::tidy("y . load ()"), "y.load()");
        assert_eq!(super::tidy("reduce_max (t , 1)"), "reduce_max(t, 1)");
        assert_eq!(super::tidy("a + (b * c)"), "a + (b * c)");
        assert_eq!(super::tidy("a != b"), "a != b");
        assert_eq!(super::tidy("const_shape ! [BM , 1]"), "const_shape![BM, 1]");
        assert_eq!(super::tidy("! x"), "! x");
        assert_eq!(super::tidy("f32 :: MAX"), "f32::MAX");
        let t: syn::Type = syn::parse_str("Tile<f32, { [BM, 1] }>").expect("a type");
        assert_eq!(super::source_text_ty(&t), "Tile<f32, { [BM, 1] }>");
    }
}
