//! [`CubinStore`]: the disk half of the compile cache, one file per entry.
//!
//! It exists as its own type, independent of any GPU, so that everything that can go wrong on
//! disk (a missing entry, a corrupt or stale one, two processes writing the same key at once)
//! is tested directly. It never returns an entry it has not verified ([`super::entry`]), and
//! it writes only through a temporary file in the same folder renamed into place, so a reader
//! sees either no file, an old complete file or the new complete file, never a partial one.
//! It reports I/O failures to its caller, which degrades to compiling; it never panics.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::CacheKey;
use super::entry::{self, EntryError};

/// Entries larger than this are not read (a cubin is kilobytes to a few megabytes).
const MAX_ENTRY_BYTES: u64 = 1 << 30;

/// The folder under the cache directory that holds the cubin entries.
const SUBDIR: &str = "cubin";

/// What [`CubinStore::lookup`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Lookup {
    /// A verified entry: the cubin bytes.
    Hit(Vec<u8>),
    /// No entry for this key.
    Missing,
    /// An entry exists but must not be used (corrupt, or stale: another format or key). The
    /// caller rebuilds it; [`CubinStore::put`] replaces it.
    Rejected(EntryError),
    /// The entry could not be read (permissions, I/O error).
    Unreadable(String),
}

/// Counters of one store, for tests and `CUPRUM_CACHE_STATS`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct StoreStats {
    /// Lookups that returned a verified entry.
    pub hits: u64,
    /// Lookups that found no entry.
    pub missing: u64,
    /// Entries refused as corrupt (bad magic, truncated, checksum mismatch).
    pub corrupt: u64,
    /// Entries refused as stale (another format version or another key).
    pub stale: u64,
    /// Lookups that failed to read an existing file.
    pub unreadable: u64,
    /// Entries written.
    pub writes: u64,
    /// Writes that failed.
    pub write_failures: u64,
}

#[derive(Default)]
struct Counters {
    hits: AtomicU64,
    missing: AtomicU64,
    corrupt: AtomicU64,
    stale: AtomicU64,
    unreadable: AtomicU64,
    writes: AtomicU64,
    write_failures: AtomicU64,
}

/// Compiled modules (the driver's cubins) on disk, under `<dir>/cubin/<hash>.cubin`.
///
/// Safe to share between threads and between processes: see the module docs.
///
/// ```
/// use cuprum_runtime::cache::{CacheKey, CubinStore};
///
/// let dir = std::env::temp_dir().join(format!("cuprum-doc-store-{}", std::process::id()));
/// let store = CubinStore::new(&dir);
/// let key = CacheKey::for_ptx(".version 8.0\n.target sm_90\n", "sm_90", (9, 0), 12080);
/// assert_eq!(store.get(&key), None);
/// store.put(&key, b"\x7fELF cubin bytes")?;
/// assert_eq!(store.get(&key).as_deref(), Some(&b"\x7fELF cubin bytes"[..]));
/// // Another driver version is another key: a miss, never the old cubin.
/// let other = CacheKey::for_ptx(".version 8.0\n.target sm_90\n", "sm_90", (9, 0), 12090);
/// assert_eq!(store.get(&other), None);
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct CubinStore {
    dir: PathBuf,
    entries: PathBuf,
    counters: Counters,
}

impl std::fmt::Debug for CubinStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CubinStore")
            .field("dir", &self.dir)
            .finish()
    }
}

impl CubinStore {
    /// A store rooted at the cache directory `dir` (created when the first entry is written).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        let dir = dir.into();
        Self {
            entries: dir.join(SUBDIR),
            dir,
            counters: Counters::default(),
        }
    }

    /// The cache directory this store was made with.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file that holds (or would hold) the entry of `key`.
    pub fn path_for(&self, key: &CacheKey) -> PathBuf {
        self.entries.join(key.file_name())
    }

    /// Looks `key` up, verifying the entry (magic, format, key, checksum).
    pub fn lookup(&self, key: &CacheKey) -> Lookup {
        let path = self.path_for(key);
        let count = |c: &AtomicU64| {
            c.fetch_add(1, Ordering::Relaxed);
        };
        let bytes = match fs::metadata(&path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                count(&self.counters.missing);
                return Lookup::Missing;
            }
            Ok(meta) if meta.len() > MAX_ENTRY_BYTES => Err(io::Error::other(format!(
                "{} bytes, above the {MAX_ENTRY_BYTES}-byte limit of an entry",
                meta.len()
            ))),
            _ => fs::read(&path),
        };
        let bytes = match bytes {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                count(&self.counters.missing);
                return Lookup::Missing;
            }
            Err(e) => {
                count(&self.counters.unreadable);
                return Lookup::Unreadable(format!("reading {}: {e}", path.display()));
            }
        };
        match entry::decode(&bytes, &key.text()) {
            Ok(payload) => {
                count(&self.counters.hits);
                Lookup::Hit(payload.to_vec())
            }
            Err(e) => {
                count(match e {
                    EntryError::Corrupt(_) => &self.counters.corrupt,
                    EntryError::Stale(_) => &self.counters.stale,
                });
                Lookup::Rejected(e)
            }
        }
    }

    /// The verified cubin of `key`, or `None` (missing, rejected or unreadable).
    pub fn get(&self, key: &CacheKey) -> Option<Vec<u8>> {
        match self.lookup(key) {
            Lookup::Hit(bytes) => Some(bytes),
            _ => None,
        }
    }

    /// Stores `cubin` under `key`, replacing any entry there: writes a temporary file in the
    /// same folder, then renames it into place (atomic on one file system). When another
    /// process wins the race to the same key, both wrote the same bytes and either file is
    /// right.
    pub fn put(&self, key: &CacheKey, cubin: &[u8]) -> io::Result<()> {
        let written = self.put_inner(key, cubin);
        let counter = if written.is_ok() {
            &self.counters.writes
        } else {
            &self.counters.write_failures
        };
        counter.fetch_add(1, Ordering::Relaxed);
        written
    }

    fn put_inner(&self, key: &CacheKey, cubin: &[u8]) -> io::Result<()> {
        fs::create_dir_all(&self.entries)?;
        let mut file = self.temp_file()?;
        file.write_all(&entry::encode(&key.text(), cubin))?;
        // A failed rename drops the temporary file, which deletes it.
        file.persist(self.path_for(key)).map_err(|e| e.error)?;
        Ok(())
    }

    /// A temporary file in the entries folder, named so that listings skip it, deleted when
    /// dropped unless persisted.
    fn temp_file(&self) -> io::Result<tempfile::NamedTempFile> {
        tempfile::Builder::new()
            .prefix(".")
            .suffix(".tmp")
            .tempfile_in(&self.entries)
    }

    /// Creates the cache folder if needed and checks that a file can be written and renamed
    /// there (what [`put`](Self::put) does), leaving nothing behind.
    pub fn check_writable(&self) -> io::Result<()> {
        fs::create_dir_all(&self.entries)?;
        let target = self
            .entries
            .join(format!(".write-check-{}", std::process::id()));
        let mut file = self.temp_file()?;
        let result = file
            .write_all(b"cuprum")
            .and_then(|()| file.persist(&target).map(drop).map_err(|e| e.error))
            .and_then(|()| fs::remove_file(&target));
        let _ = fs::remove_file(&target);
        result
    }

    /// The number of entries and their total size in bytes (0 when the folder does not
    /// exist yet).
    pub fn usage(&self) -> io::Result<(usize, u64)> {
        let listing = match fs::read_dir(&self.entries) {
            Ok(listing) => listing,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok((0, 0)),
            Err(e) => return Err(e),
        };
        let mut count = 0;
        let mut bytes = 0;
        for item in listing {
            let item = item?;
            let name = item.file_name();
            let name = name.to_string_lossy();
            if name.starts_with('.') || !name.ends_with(".cubin") {
                continue;
            }
            count += 1;
            bytes += item.metadata().map(|m| m.len()).unwrap_or(0);
        }
        Ok((count, bytes))
    }

    /// This store's counters.
    pub fn stats(&self) -> StoreStats {
        let c = &self.counters;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        StoreStats {
            hits: get(&c.hits),
            missing: get(&c.missing),
            corrupt: get(&c.corrupt),
            stale: get(&c.stale),
            unreadable: get(&c.unreadable),
            writes: get(&c.writes),
            write_failures: get(&c.write_failures),
        }
    }
}
