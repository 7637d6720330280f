//! The disk compile cache through its GPU-free seam, `CubinStore`: miss, hit, corruption
//! (every kind of damage detected and rebuilt, never loaded), stale entries (another driver,
//! another format, another key) and writers racing on one key, as threads and as processes.
//! What the store promises here is what the CUDA load path relies on.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use cuprum_runtime::cache::{
    CacheKey, CubinStore, EntryError, FORMAT_OFFSET, HEADER_LEN, Lookup, MAGIC,
};

/// A fresh, empty folder for one test (removed when dropped).
struct TempDir(PathBuf);

impl TempDir {
    fn new(test: &str) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "cuprum-cache-test-{}-{test}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        ));
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const PTX: &str = ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k() { ret; }\n";

fn key() -> CacheKey {
    CacheKey::for_ptx(PTX, "sm_90", (9, 0), 12080)
}

/// Bytes that look like a cubin, different for each `seed`.
fn cubin(seed: u8, len: usize) -> Vec<u8> {
    let mut bytes = b"\x7fELF".to_vec();
    bytes.extend((0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)));
    bytes
}

/// Files in the entries folder whose names start with a dot: leftovers of writes.
fn leftovers(store: &CubinStore) -> Vec<String> {
    let entries = store.path_for(&key());
    let Some(dir) = entries.parent() else {
        return vec![];
    };
    std::fs::read_dir(dir)
        .map(|l| {
            l.filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with('.'))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn miss_then_hit() {
    let dir = TempDir::new("hit");
    let store = CubinStore::new(&dir.0);
    assert_eq!(store.lookup(&key()), Lookup::Missing);
    assert_eq!(store.usage().unwrap(), (0, 0));
    let bytes = cubin(1, 5000);
    store.put(&key(), &bytes).unwrap();
    assert_eq!(store.lookup(&key()), Lookup::Hit(bytes.clone()));
    // A second store on the same folder (another process, in effect) finds it too.
    assert_eq!(CubinStore::new(&dir.0).get(&key()), Some(bytes.clone()));
    let (count, size) = store.usage().unwrap();
    assert_eq!(count, 1);
    assert!(size > bytes.len() as u64);
    let stats = store.stats();
    assert_eq!((stats.missing, stats.hits, stats.writes), (1, 1, 1));
    assert!(leftovers(&store).is_empty(), "{:?}", leftovers(&store));
    assert!(store.path_for(&key()).starts_with(&dir.0));
}

#[test]
fn a_flipped_byte_is_detected_and_the_entry_rebuilt() {
    let dir = TempDir::new("corrupt");
    let store = CubinStore::new(&dir.0);
    let bytes = cubin(2, 3000);
    store.put(&key(), &bytes).unwrap();
    let path = store.path_for(&key());
    let good = std::fs::read(&path).unwrap();
    // In the magic, the lengths, the checksum, the key and the payload.
    for at in [
        0,
        13,
        20,
        27,
        HEADER_LEN + 3,
        good.len() / 2,
        good.len() - 1,
    ] {
        let mut bad = good.clone();
        bad[at] ^= 0x01;
        std::fs::write(&path, &bad).unwrap();
        match store.lookup(&key()) {
            Lookup::Rejected(EntryError::Corrupt(why)) => assert!(!why.is_empty()),
            other => panic!("byte {at} flipped: expected a corrupt entry, got {other:?}"),
        }
        assert_eq!(store.get(&key()), None, "byte {at}");
        // Rebuilt: the next put replaces the damaged file.
        store.put(&key(), &bytes).unwrap();
        assert_eq!(store.get(&key()), Some(bytes.clone()), "byte {at}");
    }
    // Truncated (a crash mid-write on a file system without ordered renames) and empty.
    std::fs::write(&path, &good[..good.len() - 100]).unwrap();
    assert!(matches!(
        store.lookup(&key()),
        Lookup::Rejected(EntryError::Corrupt(_))
    ));
    std::fs::write(&path, b"").unwrap();
    assert!(matches!(
        store.lookup(&key()),
        Lookup::Rejected(EntryError::Corrupt(_))
    ));
    assert!(store.stats().corrupt >= 9);
}

#[test]
fn stale_entries_are_never_loaded() {
    let dir = TempDir::new("stale");
    let store = CubinStore::new(&dir.0);
    let bytes = cubin(3, 800);
    store.put(&key(), &bytes).unwrap();

    // Another driver version is another key: a miss, not the old driver's cubin.
    let newer_driver = CacheKey::for_ptx(PTX, "sm_90", (9, 0), 12090);
    assert_eq!(store.lookup(&newer_driver), Lookup::Missing);
    // So are another device architecture and another PTX text.
    assert_eq!(
        store.lookup(&CacheKey::for_ptx(PTX, "sm_90", (10, 0), 12080)),
        Lookup::Missing
    );
    let other_ptx = PTX.replace("ret;", "exit;");
    assert_eq!(
        store.lookup(&CacheKey::for_ptx(&other_ptx, "sm_90", (9, 0), 12080)),
        Lookup::Missing
    );

    // An entry of another format version (an older cuprum) at the same place: stale.
    let path = store.path_for(&key());
    let mut old = std::fs::read(&path).unwrap();
    assert_eq!(old[..8], MAGIC);
    old[FORMAT_OFFSET..FORMAT_OFFSET + 4].copy_from_slice(&0u32.to_le_bytes());
    std::fs::write(&path, &old).unwrap();
    assert!(matches!(
        store.lookup(&key()),
        Lookup::Rejected(EntryError::Stale(_))
    ));
    store.put(&key(), &bytes).unwrap();
    assert_eq!(store.get(&key()), Some(bytes.clone()));

    // An intact entry of another key under this key's name (a hash collision, or a file
    // copied by hand): stale, because the full key is compared.
    store.put(&newer_driver, &cubin(4, 800)).unwrap();
    std::fs::copy(store.path_for(&newer_driver), &path).unwrap();
    match store.lookup(&key()) {
        Lookup::Rejected(EntryError::Stale(why)) => assert!(why.contains("driver=12090"), "{why}"),
        other => panic!("expected a stale entry, got {other:?}"),
    }
    assert_eq!(store.stats().stale, 2);
}

#[test]
fn a_not_cacheable_verdict_is_its_own_entry() {
    // The verdict that no cubin can be made for a module lives beside where its cubin would,
    // under another key: neither is ever taken for the other.
    let dir = TempDir::new("verdict");
    let store = CubinStore::new(&dir.0);
    let verdict = key().not_cacheable();
    assert_ne!(store.path_for(&verdict), store.path_for(&key()));
    store.put(&verdict, b"kernel `k` spills").unwrap();
    assert_eq!(store.lookup(&key()), Lookup::Missing);
    assert_eq!(
        store.lookup(&verdict),
        Lookup::Hit(b"kernel `k` spills".to_vec())
    );
    // The verdict is per driver too: a newer driver tries again.
    let newer_driver = CacheKey::for_ptx(PTX, "sm_90", (9, 0), 12090).not_cacheable();
    assert_eq!(store.lookup(&newer_driver), Lookup::Missing);
    // A verdict copied over a cubin's file is refused as stale, never loaded as a cubin.
    std::fs::copy(store.path_for(&verdict), store.path_for(&key())).unwrap();
    assert!(matches!(
        store.lookup(&key()),
        Lookup::Rejected(EntryError::Stale(_))
    ));
}

#[test]
fn io_failures_are_errors_to_degrade_on_not_panics() {
    let dir = TempDir::new("unwritable");
    // A folder below a regular file can be neither created nor read, even by root.
    let file = dir.0.join("a-file");
    std::fs::write(&file, b"x").unwrap();
    let store = CubinStore::new(file.join("cache"));
    assert_eq!(store.get(&key()), None);
    assert!(store.put(&key(), &cubin(5, 10)).is_err());
    assert!(store.check_writable().is_err());
    assert!(store.usage().is_err() || store.usage().is_ok_and(|u| u == (0, 0)));
    assert_eq!(store.stats().write_failures, 1);
    assert!(CubinStore::new(&dir.0).check_writable().is_ok());
    assert!(leftovers(&CubinStore::new(&dir.0)).is_empty());
}

#[test]
fn threads_racing_on_one_key_never_see_a_partial_entry() {
    let dir = TempDir::new("threads");
    let store = Arc::new(CubinStore::new(&dir.0));
    let bytes = Arc::new(cubin(6, 256 * 1024));
    let done = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..3)
        .map(|_| {
            let (store, bytes, done) = (store.clone(), bytes.clone(), done.clone());
            std::thread::spawn(move || {
                let mut hits = 0;
                while !done.load(Ordering::Relaxed) {
                    match store.lookup(&key()) {
                        Lookup::Hit(got) => {
                            assert!(got == *bytes, "a reader saw different bytes");
                            hits += 1;
                        }
                        Lookup::Missing => {}
                        other => panic!("a reader saw {other:?}"),
                    }
                }
                hits
            })
        })
        .collect();
    let writers: Vec<_> = (0..4)
        .map(|_| {
            let (store, bytes) = (store.clone(), bytes.clone());
            std::thread::spawn(move || {
                for _ in 0..25 {
                    store.put(&key(), &bytes).unwrap();
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    done.store(true, Ordering::Relaxed);
    let hits: usize = readers.into_iter().map(|r| r.join().unwrap()).sum();
    eprintln!("readers saw {hits} complete entries");
    assert_eq!(store.get(&key()).as_deref(), Some(&bytes[..]));
    assert_eq!(store.usage().unwrap().0, 1);
    assert!(leftovers(&store).is_empty(), "{:?}", leftovers(&store));
    assert_eq!(store.stats().corrupt + store.stats().stale, 0);
}

const CHILD_DIR_ENV: &str = "CUPRUM_CACHE_TEST_CHILD_DIR";

/// Run by [`processes_racing_on_one_key`] in child processes: writes and reads one key.
#[test]
#[ignore = "a helper run by processes_racing_on_one_key in child processes"]
fn child_writer() {
    let Some(dir) = std::env::var_os(CHILD_DIR_ENV) else {
        return;
    };
    let store = CubinStore::new(Path::new(&dir));
    let bytes = cubin(7, 512 * 1024);
    for _ in 0..20 {
        store.put(&key(), &bytes).unwrap();
        match store.lookup(&key()) {
            Lookup::Hit(got) => assert!(got == bytes, "a child read different bytes"),
            other => panic!("a child read {other:?} right after writing"),
        }
    }
}

#[test]
fn processes_racing_on_one_key() {
    let dir = TempDir::new("processes");
    let exe = std::env::current_exe().unwrap();
    // All children are started before any is waited for, so that their writes overlap.
    let spawned: Vec<_> = (0..4)
        .map(|_| {
            Command::new(&exe)
                .args(["child_writer", "--exact", "--ignored", "--test-threads=1"])
                .env(CHILD_DIR_ENV, &dir.0)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in spawned {
        let out = child.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && text.contains("1 passed"),
            "child failed:\n{text}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let store = CubinStore::new(&dir.0);
    assert_eq!(store.get(&key()), Some(cubin(7, 512 * 1024)));
    assert_eq!(store.usage().unwrap().0, 1);
    assert!(leftovers(&store).is_empty(), "{:?}", leftovers(&store));
}
