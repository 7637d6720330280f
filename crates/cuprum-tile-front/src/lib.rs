//! The tile front end: a `#[cuprum::tile::module]` module's Rust source (a `syn` AST) to tile
//! IR, run by the macro at `cargo build`, so that unknown operations and shape errors are
//! compile errors at the user's span. Generic kernels keep their const and type parameters
//! symbolic (`cuprum_tile_ir::Dim::Param`); the host specializes them at launch.

#![warn(missing_docs)]

use cuprum_tile_ir::TileModule;

/// Compiles every `#[cuprum::tile::entry]` function of `module` (helpers are inlined into
/// them); an error carries the span of the offending code.
pub fn compile_module(module: &syn::ItemMod) -> syn::Result<TileModule> {
    Err(syn::Error::new_spanned(
        &module.ident,
        "the tile front end is not written yet",
    ))
}
