//! The on-disk format of one compile-cache entry, and the hashes it uses.
//!
//! A cache file is read by processes that did not write it, possibly while another process
//! replaces it, possibly after a crash cut it short or a disk flipped a bit. So an entry
//! carries everything needed to refuse it: a magic number, a format version, the full key it
//! was stored under and a checksum of key and payload. [`decode`] checks all of them and says
//! why an entry is unusable; nothing here touches the file system.
//!
//! Layout (integers little-endian):
//!
//! | bytes | field |
//! |---|---|
//! | 8 | magic `CUPRCUBN` |
//! | 4 | format version ([`FORMAT_VERSION`]) |
//! | 4 | key length `k` |
//! | 8 | payload length `n` |
//! | 8 | the first 8 bytes of the BLAKE3 hash of key length, key and payload |
//! | `k` | key text (UTF-8) |
//! | `n` | payload (the driver's cubin) |

/// The first eight bytes of every entry.
pub const MAGIC: [u8; 8] = *b"CUPRCUBN";

/// The entry format written by this build; entries of any other version are stale (1 had an
/// FNV-1a checksum).
pub const FORMAT_VERSION: u32 = 2;

/// Bytes before the key.
pub const HEADER_LEN: usize = 32;

/// Byte offset of the format version, for tests that forge old entries.
pub const FORMAT_OFFSET: usize = 8;

/// Why an entry cannot be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EntryError {
    /// The bytes are not a whole, intact entry (wrong magic, truncated, checksum mismatch):
    /// a crash, a disk error or a foreign file.
    Corrupt(String),
    /// An intact entry that belongs to another format version or another key.
    Stale(String),
}

impl std::fmt::Display for EntryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Corrupt(why) => write!(f, "corrupt entry: {why}"),
            Self::Stale(why) => write!(f, "stale entry: {why}"),
        }
    }
}

/// The 256-bit BLAKE3 hash of `bytes`: the content hash of a PTX text in cache keys and the
/// name of an entry's file.
pub fn content_hash(bytes: &[u8]) -> [u8; 32] {
    *blake3::hash(bytes).as_bytes()
}

/// The checksum of an entry: the first 8 bytes of the BLAKE3 hash of the key's length, the
/// key and the payload (the length keeps key and payload from trading bytes).
fn checksum(key: &[u8], payload: &[u8]) -> u64 {
    let mut h = blake3::Hasher::new();
    h.update(&(key.len() as u64).to_le_bytes());
    h.update(key);
    h.update(payload);
    let mut first = [0u8; 8];
    first.copy_from_slice(&h.finalize().as_bytes()[..8]);
    u64::from_le_bytes(first)
}

/// The bytes of an entry holding `payload` under `key`.
pub fn encode(key: &str, payload: &[u8]) -> Vec<u8> {
    let key = key.as_bytes();
    let mut out = Vec::with_capacity(HEADER_LEN + key.len() + payload.len());
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&(key.len() as u32).to_le_bytes());
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(&checksum(key, payload).to_le_bytes());
    out.extend_from_slice(key);
    out.extend_from_slice(payload);
    out
}

fn read_u32(bytes: &[u8], at: usize) -> u32 {
    let mut b = [0u8; 4];
    b.copy_from_slice(&bytes[at..at + 4]);
    u32::from_le_bytes(b)
}

fn read_u64(bytes: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(b)
}

/// The payload of `bytes` if they are an intact entry of this format stored under `key`.
pub fn decode<'a>(bytes: &'a [u8], key: &str) -> Result<&'a [u8], EntryError> {
    if bytes.len() < HEADER_LEN {
        return Err(EntryError::Corrupt(format!(
            "{} bytes, shorter than the {HEADER_LEN}-byte header",
            bytes.len()
        )));
    }
    if bytes[..8] != MAGIC {
        return Err(EntryError::Corrupt(
            "not a cuprum cache entry (bad magic)".into(),
        ));
    }
    let format = read_u32(bytes, FORMAT_OFFSET);
    if format != FORMAT_VERSION {
        return Err(EntryError::Stale(format!(
            "format version {format}, this build reads {FORMAT_VERSION}"
        )));
    }
    let key_len = read_u32(bytes, 12) as usize;
    let payload_len = read_u64(bytes, 16);
    let sum = read_u64(bytes, 24);
    let expected = (HEADER_LEN as u64)
        .checked_add(key_len as u64)
        .and_then(|n| n.checked_add(payload_len));
    if expected != Some(bytes.len() as u64) {
        return Err(EntryError::Corrupt(format!(
            "{} bytes, but the header announces a {key_len}-byte key and a {payload_len}-byte \
             payload",
            bytes.len()
        )));
    }
    let stored_key = &bytes[HEADER_LEN..HEADER_LEN + key_len];
    let payload = &bytes[HEADER_LEN + key_len..];
    if checksum(stored_key, payload) != sum {
        return Err(EntryError::Corrupt("checksum mismatch".into()));
    }
    if stored_key != key.as_bytes() {
        return Err(EntryError::Stale(format!(
            "stored for key `{}`",
            String::from_utf8_lossy(stored_key)
        )));
    }
    Ok(payload)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let bytes = encode("k1", b"payload");
        assert_eq!(decode(&bytes, "k1"), Ok(&b"payload"[..]));
        assert!(matches!(decode(&bytes, "k2"), Err(EntryError::Stale(_))));
        let empty = encode("k", b"");
        assert_eq!(decode(&empty, "k"), Ok(&b""[..]));
    }

    #[test]
    fn every_flipped_byte_is_refused() {
        let bytes = encode("some key", b"some cubin bytes");
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x40;
            assert!(
                decode(&bad, "some key").is_err(),
                "flip at {i} went unnoticed"
            );
        }
    }

    #[test]
    fn truncations_are_corrupt() {
        let bytes = encode("key", &[7u8; 100]);
        for len in 0..bytes.len() {
            assert!(
                matches!(decode(&bytes[..len], "key"), Err(EntryError::Corrupt(_))),
                "truncated to {len}"
            );
        }
    }

    #[test]
    fn other_format_is_stale() {
        let mut bytes = encode("key", b"x");
        bytes[FORMAT_OFFSET..FORMAT_OFFSET + 4].copy_from_slice(&0u32.to_le_bytes());
        assert!(matches!(decode(&bytes, "key"), Err(EntryError::Stale(_))));
    }

    #[test]
    fn known_hashes() {
        // BLAKE3's published value for the empty input.
        let empty = content_hash(b"");
        assert_eq!(empty[..4], [0xaf, 0x13, 0x49, 0xb9]);
        assert_ne!(content_hash(b"a"), empty);
    }
}
