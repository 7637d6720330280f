//! The tile track's JIT cache under cuTile Rust's names (`cutile::jit_cache`): where the
//! compiled form of each specialization of a tile kernel is kept between processes, in a
//! store the program chooses ([`enable`]): a folder ([`FileSystemJitStore`]) or its own
//! [`JitStore`] (a database, an object store, memory).
//!
//! What a store keeps is what cuprum compiles per specialization: the tile kernel lowered
//! to the kernel IR and optimized, with its launch contract (block size, shared memory,
//! argument slots) and, when it was compiled for a GPU, the PTX written from that IR for
//! the GPU's target (so a warm process loads the module without writing PTX), under a
//! content-addressed key (a 128-bit BLAKE3 hash of the module's
//! embedded tile IR, the kernel, the specialization, the tensors' facts and tuning hints, the lowering and
//! cuprum's version). A
//! hit skips the lowering, the optimizer and the PTX writer; the driver's machine code is
//! cached apart, by
//! cuprum's runtime compile cache (`CUPRUM_CACHE_DIR`). An entry that does not decode, or whose
//! kernel IR does not validate, is a miss and is compiled and stored again.
//!
//! **On by default**, unlike cuTile Rust's: until the program chooses ([`enable`],
//! [`disable`]), the store is the `tile-jit` folder of cuprum's compile cache
//! ([`FileSystemJitStore::default_location`]), and it is off exactly when that cache is
//! (`CUPRUM_CACHE=off`), so that a process's first launch of a kernel compiled before costs a
//! lookup instead of a lowering and an optimizer run. The key also names the compiler that
//! made an entry (`COMPILER_FINGERPRINT`: in a workspace checkout, a hash of the tile IR,
//! lowering, optimizer, kernel IR and PTX writer sources, made by the build script; the version
//! otherwise), so an edited compiler never reads its predecessor's entries.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, RwLock};

use cuprum_ir::Module;
use cuprum_tile_ir::Specialization;
use cuprum_tile_lower::{ArgSlot, BlockCount, LowerOptions};

/// A place to keep compiled specializations, by key. Keys are 32 lowercase hex digits;
/// values are opaque bytes. Implementations must never let a reader see part of a value
/// (write to a temporary and rename, replace under a lock, ...); concurrent puts of one key
/// put the same bytes.
pub trait JitStore: Send + Sync + 'static {
    /// The value of `key`, or `None` when there is none.
    fn get(&self, key: &str) -> io::Result<Option<Vec<u8>>>;

    /// Keeps `value` as `key`'s value.
    fn put(&self, key: &str, value: &[u8]) -> io::Result<()>;

    /// Whether `key` has a value.
    fn contains(&self, key: &str) -> io::Result<bool> {
        Ok(self.get(key)?.is_some())
    }

    /// Forgets `key` (no error when it has no value).
    fn delete(&self, key: &str) -> io::Result<()>;

    /// Forgets every key.
    fn clear(&self) -> io::Result<()>;
}

/// A [`JitStore`] in a folder: one file per key.
#[derive(Clone, Debug)]
pub struct FileSystemJitStore {
    root: PathBuf,
}

impl FileSystemJitStore {
    /// A store in `dir`, created when missing.
    pub fn new(dir: impl Into<PathBuf>) -> io::Result<Self> {
        let root = dir.into();
        std::fs::create_dir_all(&root)?;
        Ok(Self { root })
    }

    /// A store in the `tile-jit` folder of cuprum's cache folder (`CUPRUM_CACHE_DIR`, else
    /// the platform's cache folder's `cuprum`).
    pub fn default_location() -> io::Result<Self> {
        let base = std::env::var_os(cuprum_runtime::cache::CACHE_DIR_ENV)
            .map(PathBuf::from)
            .or_else(cuprum_runtime::cache::default_dir)
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::NotFound,
                    "no cache folder: set CUPRUM_CACHE_DIR (there is no home folder)",
                )
            })?;
        Self::new(base.join("tile-jit"))
    }

    /// The folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn path(&self, key: &str) -> io::Result<PathBuf> {
        let plain = !key.is_empty()
            && key
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !plain {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("`{key}` is not a key of this store (letters, digits, `-` and `_`)"),
            ));
        }
        Ok(self.root.join(format!("{key}.tile-jit")))
    }
}

impl JitStore for FileSystemJitStore {
    fn get(&self, key: &str) -> io::Result<Option<Vec<u8>>> {
        match std::fs::read(self.path(key)?) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn put(&self, key: &str, value: &[u8]) -> io::Result<()> {
        let path = self.path(key)?;
        // The default store's folder is made when it first keeps something.
        std::fs::create_dir_all(&self.root)?;
        static TEMPORARY: AtomicU64 = AtomicU64::new(0);
        let n = TEMPORARY.fetch_add(1, Ordering::Relaxed);
        let tmp = self
            .root
            .join(format!(".{key}.{}.{n}.tmp", std::process::id()));
        std::fs::write(&tmp, value)?;
        std::fs::rename(&tmp, &path).inspect_err(|_| {
            let _ = std::fs::remove_file(&tmp);
        })
    }

    fn delete(&self, key: &str) -> io::Result<()> {
        match std::fs::remove_file(self.path(key)?) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }

    fn clear(&self) -> io::Result<()> {
        for entry in std::fs::read_dir(&self.root)? {
            let path = entry?.path();
            if path.extension().is_some_and(|e| e == "tile-jit") {
                std::fs::remove_file(path)?;
            }
        }
        Ok(())
    }
}

/// The store the program chose ([`enable`], [`disable`]); `None` until it chooses, when the
/// default store is used.
static STORE: RwLock<Option<Option<Arc<dyn JitStore>>>> = RwLock::new(None);

/// The store used while the program has not chosen one: the compile cache's `tile-jit`
/// folder, unless that cache is off or has no folder. Made once per process.
fn default_store() -> Option<Arc<dyn JitStore>> {
    static DEFAULT: OnceLock<Option<Arc<dyn JitStore>>> = OnceLock::new();
    DEFAULT
        .get_or_init(|| {
            let dir = cuprum_runtime::cache::location().dir()?.join("tile-jit");
            Some(Arc::new(FileSystemJitStore { root: dir }) as Arc<dyn JitStore>)
        })
        .clone()
}

/// Keeps compiled specializations in `store` from now on (replacing any store before).
pub fn enable(store: Arc<dyn JitStore>) {
    *STORE.write().unwrap_or_else(|e| e.into_inner()) = Some(Some(store));
}

/// [`enable`] with [`FileSystemJitStore::default_location`].
pub fn enable_default() -> io::Result<()> {
    enable(Arc::new(FileSystemJitStore::default_location()?));
    Ok(())
}

/// Keeps nothing beyond the process from now on (the default store too).
pub fn disable() {
    *STORE.write().unwrap_or_else(|e| e.into_inner()) = Some(None);
}

/// Whether a store is in use.
pub fn is_enabled() -> bool {
    store().is_some()
}

fn store() -> Option<Arc<dyn JitStore>> {
    let chosen = STORE.read().unwrap_or_else(|e| e.into_inner()).clone();
    chosen.unwrap_or_else(default_store)
}

/// What the JIT cache did in this process.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JitCacheStats {
    /// Specializations found in the store.
    pub hits: u64,
    /// Specializations looked up and not found (or found unusable).
    pub misses: u64,
    /// Entries written to the store.
    pub puts: u64,
    /// Bytes of those entries.
    pub bytes_written: u64,
    /// Store operations that failed (the kernel was compiled regardless).
    pub io_errors: u64,
}

static HITS: AtomicU64 = AtomicU64::new(0);
static MISSES: AtomicU64 = AtomicU64::new(0);
static PUTS: AtomicU64 = AtomicU64::new(0);
static BYTES_WRITTEN: AtomicU64 = AtomicU64::new(0);
static IO_ERRORS: AtomicU64 = AtomicU64::new(0);
static COMPILES: AtomicU64 = AtomicU64::new(0);

/// The counts so far.
pub fn stats() -> JitCacheStats {
    JitCacheStats {
        hits: HITS.load(Ordering::Relaxed),
        misses: MISSES.load(Ordering::Relaxed),
        puts: PUTS.load(Ordering::Relaxed),
        bytes_written: BYTES_WRITTEN.load(Ordering::Relaxed),
        io_errors: IO_ERRORS.load(Ordering::Relaxed),
    }
}

/// How many specializations this process compiled (lowered and optimized).
pub fn jit_backend_compile_count() -> u64 {
    COMPILES.load(Ordering::Relaxed)
}

/// How many specializations this process took from the store instead.
pub fn jit_disk_hit_count() -> u64 {
    HITS.load(Ordering::Relaxed)
}

/// One compiled specialization: the kernel IR and its launch contract.
pub(crate) struct Entry {
    pub ir: Module,
    pub block_threads: u32,
    pub shared_bytes: u32,
    pub args: Vec<ArgSlot>,
    pub blocks: BlockCount,
    /// What the PTX writer made of `ir` for a GPU's target, when it was compiled for one
    /// (loading it again needs no PTX writing: `LoadedModule::load_written`).
    pub ptx: Option<(cuprum_ptx::Target, String)>,
}

/// Where an [`Entry`] came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Source {
    /// The store had it.
    Store,
    /// Compiled by this process.
    Compiled,
}

impl Source {
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Source::Store => "taken from the tile JIT cache",
            Source::Compiled => "specialized, lowered and optimized",
        }
    }
}

/// The entry of one specialization: from the store when it has it, else `compile`d (and
/// put in the store when there is one). `lowering` names the lowering whose entries may be
/// kept; `None` (a lowering whose code the key's fingerprint does not cover) compiles without
/// the store.
pub(crate) fn fetch_or_compile<E>(
    module_name: &str,
    module_bytes: &[u8],
    kernel: usize,
    spec: &Specialization,
    options: &LowerOptions,
    lowering: Option<&str>,
    compile: impl FnOnce() -> Result<Entry, E>,
) -> Result<(Entry, Source), E> {
    let (Some(store), Some(lowering)) = (store(), lowering) else {
        COMPILES.fetch_add(1, Ordering::Relaxed);
        return Ok((compile()?, Source::Compiled));
    };
    let key = key(module_name, module_bytes, kernel, spec, options, lowering);
    match store.get(&key) {
        Ok(Some(bytes)) => {
            if let Some(entry) = decode(&bytes) {
                HITS.fetch_add(1, Ordering::Relaxed);
                return Ok((entry, Source::Store));
            }
            MISSES.fetch_add(1, Ordering::Relaxed);
        }
        Ok(None) => {
            MISSES.fetch_add(1, Ordering::Relaxed);
        }
        Err(_) => {
            IO_ERRORS.fetch_add(1, Ordering::Relaxed);
        }
    }
    COMPILES.fetch_add(1, Ordering::Relaxed);
    let entry = compile()?;
    let bytes = encode(&entry);
    match store.put(&key, &bytes) {
        Ok(()) => {
            PUTS.fetch_add(1, Ordering::Relaxed);
            BYTES_WRITTEN.fetch_add(bytes.len() as u64, Ordering::Relaxed);
        }
        Err(_) => {
            IO_ERRORS.fetch_add(1, Ordering::Relaxed);
        }
    }
    Ok((entry, Source::Compiled))
}

/// The key of a specialization (see the module docs).
fn key(
    module_name: &str,
    module_bytes: &[u8],
    kernel: usize,
    spec: &Specialization,
    options: &LowerOptions,
    lowering: &str,
) -> String {
    let mut h = blake3::Hasher::new();
    let mut field = |bytes: &[u8]| {
        h.update(&(bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    };
    field(b"cuprum tile jit entry");
    field(env!("CARGO_PKG_VERSION").as_bytes());
    field(env!("CUPRUM_COMPILER_FINGERPRINT").as_bytes());
    field(module_name.as_bytes());
    field(module_bytes);
    field(&(kernel as u64).to_le_bytes());
    for c in &spec.consts {
        field(&c.to_le_bytes());
    }
    for t in &spec.types {
        field(t.rust_name().as_bytes());
    }
    for choice in [options.num_warps, options.occupancy, options.cluster_blocks] {
        field(&choice.map_or(0, |n| u64::from(n) + 1).to_le_bytes());
    }
    let (major, minor) = options.compute_capability.unwrap_or((0, 0));
    field(
        &[
            u64::from(options.compute_capability.is_some()),
            major.into(),
            minor.into(),
        ]
        .map(u64::to_le_bytes)
        .concat(),
    );
    for f in &options.tensor_facts {
        field(&[u8::from(f.aligned_runs), u8::from(f.tensor_map)]);
        field(&(f.size_divisors.len() as u64).to_le_bytes());
        for d in &f.size_divisors {
            field(&d.to_le_bytes());
        }
    }
    field(lowering.as_bytes());
    let hash = h.finalize();
    hash.as_bytes()[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The first bytes of an entry, with its format's version.
const MAGIC: &[u8; 16] = b"cuprum-tile-jit5";

fn encode(entry: &Entry) -> Vec<u8> {
    let mut out = MAGIC.to_vec();
    out.extend(entry.block_threads.to_le_bytes());
    out.extend(entry.shared_bytes.to_le_bytes());
    // Thread blocks per multiprocessor of a persistent kernel and its blocks per cluster,
    // both 0 for one block per tile block.
    let (per_multiprocessor, cluster_blocks) = match entry.blocks {
        BlockCount::PerTile => (0, 0),
        BlockCount::Persistent {
            per_multiprocessor,
            cluster_blocks,
        } => (per_multiprocessor.max(1), cluster_blocks.max(1)),
    };
    out.extend(per_multiprocessor.to_le_bytes());
    out.extend(cluster_blocks.to_le_bytes());
    out.extend((entry.args.len() as u32).to_le_bytes());
    for slot in &entry.args {
        // A tag, the parameter, then three words: an axis, or a map's box and swizzle.
        let (tag, param, words) = match *slot {
            ArgSlot::TensorData { param } => (0u8, param, [0; 3]),
            ArgSlot::TensorOffset { param } => (1, param, [0; 3]),
            ArgSlot::TensorDim { param, axis } => (2, param, [axis, 0, 0]),
            ArgSlot::TensorStride { param, axis } => (3, param, [axis, 0, 0]),
            ArgSlot::Scalar { param } => (4, param, [0; 3]),
            ArgSlot::TensorMap {
                param,
                box_dims: [inner, outer],
                swizzle,
            } => (5, param, [inner, outer, swizzle.span_bytes().unwrap_or(0)]),
        };
        out.push(tag);
        out.extend(param.to_le_bytes());
        for w in words {
            out.extend(w.to_le_bytes());
        }
    }
    // The PTX: its target's position in `PTX_TARGETS` plus one (0: none), its length, the text.
    let (target, ptx) = match &entry.ptx {
        Some((target, ptx)) => {
            let at = PTX_TARGETS
                .iter()
                .position(|t| t == target)
                .map_or(0, |i| i + 1);
            (at as u32, ptx.as_bytes())
        }
        None => (0, &[][..]),
    };
    out.extend(target.to_le_bytes());
    out.extend((ptx.len() as u32).to_le_bytes());
    out.extend(ptx);
    out.extend(cuprum_ir::encode_module(&entry.ir));
    out
}

/// The PTX targets an entry's PTX may be for, by position in the encoding.
const PTX_TARGETS: [cuprum_ptx::Target; 3] = [
    cuprum_ptx::Target::Sm80,
    cuprum_ptx::Target::Sm90,
    cuprum_ptx::Target::Sm90a,
];

fn decode(bytes: &[u8]) -> Option<Entry> {
    let mut rest = bytes.strip_prefix(MAGIC.as_slice())?;
    let mut u32_ = || {
        let (head, tail) = rest.split_first_chunk::<4>()?;
        rest = tail;
        Some(u32::from_le_bytes(*head))
    };
    let block_threads = u32_()?;
    let shared_bytes = u32_()?;
    let blocks = match (u32_()?, u32_()?) {
        (0, _) => BlockCount::PerTile,
        (per_multiprocessor, cluster_blocks) => BlockCount::Persistent {
            per_multiprocessor,
            cluster_blocks: cluster_blocks.max(1),
        },
    };
    let count = u32_()?;
    let mut args = Vec::new();
    for _ in 0..count {
        let (&tag, tail) = rest.split_first()?;
        rest = tail;
        let mut words = [0u32; 4];
        for w in &mut words {
            let (word, tail) = rest.split_first_chunk::<4>()?;
            rest = tail;
            *w = u32::from_le_bytes(*word);
        }
        let [param, axis, outer, span] = words;
        args.push(match tag {
            0 => ArgSlot::TensorData { param },
            1 => ArgSlot::TensorOffset { param },
            2 => ArgSlot::TensorDim { param, axis },
            3 => ArgSlot::TensorStride { param, axis },
            4 => ArgSlot::Scalar { param },
            5 => ArgSlot::TensorMap {
                param,
                box_dims: [axis, outer],
                swizzle: cuprum_ir::Swizzle::ALL
                    .into_iter()
                    .find(|s| s.span_bytes().unwrap_or(0) == span)?,
            },
            _ => return None,
        });
    }
    let mut word = || {
        let (head, tail) = rest.split_first_chunk::<4>()?;
        rest = tail;
        Some(u32::from_le_bytes(*head))
    };
    let target = word()?;
    let len = word()? as usize;
    if rest.len() < len {
        return None;
    }
    let (text, tail) = rest.split_at(len);
    rest = tail;
    let ptx = match target {
        0 => None,
        at => Some((
            *PTX_TARGETS.get(at as usize - 1)?,
            String::from_utf8(text.to_vec()).ok()?,
        )),
    };
    let ir = cuprum_ir::decode_module(rest).ok()?;
    cuprum_ir::validate_module(&ir).ok()?;
    Some(Entry {
        ir,
        block_threads,
        shared_bytes,
        args,
        blocks,
        ptx,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use cuprum_tile_lower::TensorFacts;

    #[test]
    fn entries_round_trip_and_damaged_ones_are_misses() {
        let entry = Entry {
            ir: Module { kernels: vec![] },
            block_threads: 256,
            shared_bytes: 1024,
            args: vec![
                ArgSlot::TensorData { param: 0 },
                ArgSlot::TensorOffset { param: 0 },
                ArgSlot::TensorDim { param: 0, axis: 1 },
                ArgSlot::TensorStride { param: 0, axis: 1 },
                ArgSlot::Scalar { param: 1 },
                ArgSlot::TensorMap {
                    param: 2,
                    box_dims: [64, 128],
                    swizzle: cuprum_ir::Swizzle::B128,
                },
                ArgSlot::TensorMap {
                    param: 3,
                    box_dims: [8, 4],
                    swizzle: cuprum_ir::Swizzle::None,
                },
            ],
            blocks: BlockCount::Persistent {
                per_multiprocessor: 2,
                cluster_blocks: 2,
            },
            ptx: Some((cuprum_ptx::Target::Sm90a, "// the PTX\n".to_owned())),
        };
        let bytes = encode(&entry);
        let back = decode(&bytes).expect("decodes");
        assert_eq!(back.block_threads, 256);
        assert_eq!(back.shared_bytes, 1024);
        assert_eq!(back.blocks, entry.blocks);
        assert_eq!(back.args, entry.args);
        assert_eq!(back.ir, entry.ir);
        assert_eq!(back.ptx, entry.ptx);
        let without = Entry { ptx: None, ..entry };
        assert_eq!(decode(&encode(&without)).expect("decodes").ptx, None);
        assert!(decode(&bytes[..bytes.len() / 2]).is_none(), "a cut entry");
        let mut other = bytes.clone();
        other[0] ^= 1;
        assert!(decode(&other).is_none(), "another format");
    }

    /// A store in memory, counting its calls.
    #[derive(Default)]
    struct Memory {
        entries: std::sync::Mutex<std::collections::HashMap<String, Vec<u8>>>,
    }

    impl JitStore for Memory {
        fn get(&self, key: &str) -> io::Result<Option<Vec<u8>>> {
            Ok(self.entries.lock().unwrap().get(key).cloned())
        }
        fn put(&self, key: &str, value: &[u8]) -> io::Result<()> {
            self.entries
                .lock()
                .unwrap()
                .insert(key.to_owned(), value.to_vec());
            Ok(())
        }
        fn delete(&self, key: &str) -> io::Result<()> {
            self.entries.lock().unwrap().remove(key);
            Ok(())
        }
        fn clear(&self) -> io::Result<()> {
            self.entries.lock().unwrap().clear();
            Ok(())
        }
    }

    #[test]
    fn a_stored_specialization_is_not_compiled_again() {
        let store = Arc::new(Memory::default());
        enable(store.clone());
        let spec = Specialization {
            consts: vec![7],
            types: vec![],
        };
        let make = || Entry {
            ir: Module { kernels: vec![] },
            block_threads: 64,
            shared_bytes: 0,
            args: vec![ArgSlot::Scalar { param: 0 }],
            blocks: BlockCount::PerTile,
            ptx: None,
        };
        let mut compiled = 0;
        let fetch = |compiled: &mut i32| {
            fetch_or_compile::<()>(
                "unit",
                b"module",
                3,
                &spec,
                &LowerOptions::default(),
                Some("test"),
                || {
                    *compiled += 1;
                    Ok(make())
                },
            )
        };
        for round in 0..3 {
            let (e, source) = fetch(&mut compiled).expect("an entry");
            let want = if round == 0 {
                Source::Compiled
            } else {
                Source::Store
            };
            assert_eq!(source, want);
            assert_eq!(e.block_threads, 64);
            assert_eq!(e.args, vec![ArgSlot::Scalar { param: 0 }]);
        }
        assert_eq!(compiled, 1, "compiled once, then taken from the store");
        assert_eq!(store.entries.lock().unwrap().len(), 1);
        // A damaged entry is a miss: compiled and stored again.
        for v in store.entries.lock().unwrap().values_mut() {
            v.truncate(10);
        }
        let _ = fetch(&mut compiled);
        assert_eq!(compiled, 2);
        assert!(
            store
                .entries
                .lock()
                .unwrap()
                .values()
                .all(|v| decode(v).is_some()),
            "the entry was replaced"
        );
        disable();
        assert!(!is_enabled());
    }

    #[test]
    fn the_file_system_store_keeps_replaces_and_forgets() {
        let dir = std::env::temp_dir().join(format!(
            "cuprum-tile-jit-test-{}-{}",
            std::process::id(),
            line!()
        ));
        let store = FileSystemJitStore::new(&dir).expect("a folder");
        assert_eq!(store.root(), dir.as_path());
        assert_eq!(store.get("abc").expect("get"), None);
        store.put("abc", b"one").expect("put");
        store.put("abc", b"two").expect("put again");
        assert_eq!(store.get("abc").expect("get"), Some(b"two".to_vec()));
        assert!(store.contains("abc").expect("contains"));
        store.put("def", b"three").expect("put");
        store.delete("abc").expect("delete");
        store.delete("abc").expect("delete an absent key");
        assert_eq!(store.get("abc").expect("get"), None);
        store.clear().expect("clear");
        assert_eq!(store.get("def").expect("get"), None);
        assert!(store.put("../escape", b"x").is_err(), "a key with a path");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn keys_differ_by_every_field() {
        let spec = |c: i64| Specialization {
            consts: vec![c],
            types: vec![cuprum_ir::ScalarType::F32],
        };
        let with = |facts: Vec<TensorFacts>, num_warps, occupancy| LowerOptions {
            num_warps,
            occupancy,
            tensor_facts: facts,
            compute_capability: None,
            cluster_blocks: None,
        };
        let none = with(vec![], None, None);
        let aligned = with(
            vec![TensorFacts {
                aligned_runs: true,
                tensor_map: false,
                size_divisors: vec![1],
            }],
            None,
            None,
        );
        let divisible = with(
            vec![TensorFacts {
                aligned_runs: false,
                tensor_map: false,
                size_divisors: vec![128],
            }],
            None,
            None,
        );
        let base = key("m", b"ir", 0, &spec(128), &none, "lower");
        assert_eq!(base.len(), 32);
        assert_eq!(base, key("m", b"ir", 0, &spec(128), &none, "lower"));
        for other in [
            key("n", b"ir", 0, &spec(128), &none, "lower"),
            key("m", b"iR", 0, &spec(128), &none, "lower"),
            key("m", b"ir", 1, &spec(128), &none, "lower"),
            key("m", b"ir", 0, &spec(64), &none, "lower"),
            key("m", b"ir", 0, &spec(128), &aligned, "lower"),
            key("m", b"ir", 0, &spec(128), &divisible, "lower"),
            key(
                "m",
                b"ir",
                0,
                &spec(128),
                &with(vec![], Some(4), None),
                "lower",
            ),
            key(
                "m",
                b"ir",
                0,
                &spec(128),
                &with(vec![], None, Some(4)),
                "lower",
            ),
            key(
                "m",
                b"ir",
                0,
                &spec(128),
                &LowerOptions {
                    tensor_facts: vec![TensorFacts {
                        aligned_runs: true,
                        tensor_map: true,
                        size_divisors: vec![1],
                    }],
                    ..aligned.clone()
                },
                "lower",
            ),
            key(
                "m",
                b"ir",
                0,
                &spec(128),
                &LowerOptions {
                    compute_capability: Some((9, 0)),
                    ..none.clone()
                },
                "lower",
            ),
            key(
                "m",
                b"ir",
                0,
                &spec(128),
                &LowerOptions {
                    cluster_blocks: Some(2),
                    ..none.clone()
                },
                "lower",
            ),
            key(
                "m",
                b"ir",
                0,
                &spec(128),
                &LowerOptions {
                    compute_capability: Some((8, 0)),
                    ..none.clone()
                },
                "lower",
            ),
            key("m", b"ir", 0, &spec(128), &none, "other"),
        ] {
            assert_ne!(base, other);
        }
    }
}
