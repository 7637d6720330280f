//! A module's IR as bytes, so that a program can carry its kernels already compiled: the
//! `#[cuda_module]` macro runs the front end and the optimizer at `cargo build` and embeds
//! the result, and the program only reads it at run time (no front end, no optimizer in the
//! process that loads it).
//!
//! The bytes are versioned and checksummed: a header (magic `CUPRUMIR`, [`FORMAT_VERSION`],
//! the length and the first 8 bytes of the BLAKE3 hash of the payload), then the module
//! through `postcard`. [`decode_module`] refuses anything else with a [`SerialError`] and
//! validates what it read, so a corrupted or foreign blob can never reach a backend.

use crate::kernel::Module;
use crate::validate::{ValidationError, validate_module};

const MAGIC: [u8; 8] = *b"CUPRUMIR";
const HEADER_LEN: usize = 24;

/// The format of the bytes this build writes and reads. It changes whenever the IR's types
/// change shape; the crate version is part of the payload check too (see [`encode_module`]).
pub const FORMAT_VERSION: u32 = 12;

/// Why bytes are not a module this build can use.
#[derive(Debug, thiserror::Error)]
pub enum SerialError {
    /// Not the output of [`encode_module`], cut short, or altered.
    #[error("not an intact cuprum IR blob: {0}")]
    Corrupt(String),
    /// Written by another format version or another version of cuprum.
    #[error("cuprum IR written by {found}, this build reads {expected}")]
    Version {
        /// What the blob says it is.
        found: String,
        /// What this build reads.
        expected: String,
    },
    /// Intact, but breaks an IR invariant.
    #[error(transparent)]
    Invalid(#[from] ValidationError),
}

fn version_text() -> String {
    format!(
        "format {FORMAT_VERSION} of cuprum-ir {}",
        env!("CARGO_PKG_VERSION")
    )
}

fn checksum(payload: &[u8]) -> u64 {
    let mut first = [0u8; 8];
    first.copy_from_slice(&blake3::hash(payload).as_bytes()[..8]);
    u64::from_le_bytes(first)
}

/// The bytes of `module`. The payload is the crate version followed by the module, so a blob
/// from another build of cuprum is refused as a version mismatch rather than misread.
pub fn encode_module(module: &Module) -> Vec<u8> {
    seal(MAGIC, FORMAT_VERSION, &version_text(), module)
}

/// The module in `bytes`, checked (header, checksum, versions) and validated.
pub fn decode_module(bytes: &[u8]) -> Result<Module, SerialError> {
    let module: Module = unseal(MAGIC, FORMAT_VERSION, &version_text(), bytes)?;
    validate_module(&module)?;
    Ok(module)
}

/// `value` as versioned, checksummed bytes: `magic`, `format`, the payload's length and the
/// first 8 bytes of its BLAKE3 hash, then `(version, value)` through `postcard`. Every IR
/// that a macro embeds (this crate's modules, the tile IR's) is written by this one
/// function, and read by [`unseal`].
pub fn seal<T: serde::Serialize>(magic: [u8; 8], format: u32, version: &str, value: &T) -> Vec<u8> {
    // Serializing plain data into a Vec cannot fail; an empty payload would be refused by
    // `unseal` as corrupt, never misread.
    let payload = postcard::to_stdvec(&(version, value)).unwrap_or_default();
    let mut out = Vec::with_capacity(HEADER_LEN + payload.len());
    out.extend_from_slice(&magic);
    out.extend_from_slice(&format.to_le_bytes());
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&checksum(&payload).to_le_bytes());
    out.extend_from_slice(&payload);
    out
}

/// The value [`seal`] wrote into `bytes` with the same `magic`, `format` and `version`;
/// anything else (another header, a bad checksum, another version) is a [`SerialError`].
/// The caller validates what it reads.
pub fn unseal<T: serde::de::DeserializeOwned>(
    magic: [u8; 8],
    format: u32,
    version: &str,
    bytes: &[u8],
) -> Result<T, SerialError> {
    let corrupt = |why: &str| SerialError::Corrupt(why.to_string());
    if bytes.len() < HEADER_LEN || bytes[..8] != magic {
        return Err(corrupt("no cuprum IR header"));
    }
    let word = |at: usize| {
        let mut b = [0u8; 4];
        b.copy_from_slice(&bytes[at..at + 4]);
        u32::from_le_bytes(b)
    };
    let found = word(8);
    if found != format {
        return Err(SerialError::Version {
            found: format!("format {found}"),
            expected: version.to_string(),
        });
    }
    let len = word(12) as usize;
    let payload = &bytes[HEADER_LEN..];
    if payload.len() != len {
        return Err(corrupt("the length in the header is not the payload's"));
    }
    let mut sum = [0u8; 8];
    sum.copy_from_slice(&bytes[16..24]);
    if checksum(payload) != u64::from_le_bytes(sum) {
        return Err(corrupt("checksum mismatch"));
    }
    let (found, value): (String, T) =
        postcard::from_bytes(payload).map_err(|e| SerialError::Corrupt(e.to_string()))?;
    if found != version {
        return Err(SerialError::Version {
            found,
            expected: version.to_string(),
        });
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{KernelBuilder, ParamKind, ScalarType, SliceAccess};

    fn module() -> Module {
        let mut b = KernelBuilder::new("copy");
        b.param(
            "x",
            ParamKind::Slice {
                elem: ScalarType::F32,
                access: SliceAccess::ReadOnly,
            },
        );
        Module {
            kernels: vec![b.finish()],
        }
    }

    #[test]
    fn a_module_round_trips() {
        let m = module();
        let bytes = encode_module(&m);
        match decode_module(&bytes) {
            Ok(back) => assert_eq!(back, m),
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn every_flipped_byte_and_every_truncation_is_refused() {
        let bytes = encode_module(&module());
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x10;
            assert!(decode_module(&bad).is_err(), "flip at {i} went unnoticed");
        }
        for len in 0..bytes.len() {
            assert!(decode_module(&bytes[..len]).is_err(), "truncated to {len}");
        }
    }

    #[test]
    fn another_format_is_a_version_error() {
        let mut bytes = encode_module(&module());
        bytes[8..12].copy_from_slice(&(FORMAT_VERSION + 1).to_le_bytes());
        assert!(matches!(
            decode_module(&bytes),
            Err(SerialError::Version { .. })
        ));
    }
}
