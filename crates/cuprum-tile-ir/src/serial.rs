//! A tile module as bytes, so that `#[cuprum::tile::module]` can run the tile front end at
//! `cargo build` and embed its output: a program reads the tile IR at run time and never
//! parses Rust. The envelope (header, version, BLAKE3 checksum, `postcard`) is the kernel
//! IR's ([`cuprum_ir::serial::seal`]), with its own magic and format number.

use crate::kernel::TileModule;
use crate::validate::{TileValidationError, validate_module};

const MAGIC: [u8; 8] = *b"CUPRUMTL";

/// The format of the bytes this build writes and reads; it changes whenever the tile IR's
/// types change shape (the crate version is checked too).
pub const FORMAT_VERSION: u32 = 5;

fn version_text() -> String {
    format!(
        "format {FORMAT_VERSION} of cuprum-tile-ir {}",
        env!("CARGO_PKG_VERSION")
    )
}

/// Why bytes are not a tile module this build can use.
#[derive(Debug, thiserror::Error)]
pub enum SerialError {
    /// Not intact, or written by another build.
    #[error(transparent)]
    Envelope(#[from] cuprum_ir::SerialError),
    /// Intact, but breaks a tile IR rule.
    #[error(transparent)]
    Invalid(#[from] TileValidationError),
}

/// The bytes of `module`.
pub fn encode_module(module: &TileModule) -> Vec<u8> {
    cuprum_ir::serial::seal(MAGIC, FORMAT_VERSION, &version_text(), module)
}

/// The module in `bytes`, checked and validated.
pub fn decode_module(bytes: &[u8]) -> Result<TileModule, SerialError> {
    let module: TileModule =
        cuprum_ir::serial::unseal(MAGIC, FORMAT_VERSION, &version_text(), bytes)?;
    validate_module(&module)?;
    Ok(module)
}
