//! The cached load path of the CUDA backend: PTX to a loaded module through the compile
//! cache (memory, then disk, then the driver's JIT and a register-capped link).
//!
//! This is the only part of the cache that talks to a device; the decisions it takes (which
//! key, hit or miss, what to store) are the same whatever the device, and every failure of the
//! cache itself falls back to compiling. The process-wide counters (`cache::stats`) prove
//! what happened.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use super::CudaDevice;
use super::module::{CudaModule, LinkInput};
use crate::cache::stats::{COUNTERS, bump};
use crate::cache::{
    CACHE_STATS_ENV, CUBIN_DUMP_ENV, CacheKey, CacheLocation, CubinStore, LinkOption, Lookup,
};
use crate::error::Error;

/// The cache as the environment configured it at first use: the location, and the disk store
/// when there is a folder.
fn configured() -> &'static (CacheLocation, Option<CubinStore>) {
    static CONFIG: OnceLock<(CacheLocation, Option<CubinStore>)> = OnceLock::new();
    CONFIG.get_or_init(|| {
        let location = crate::cache::location();
        let store = location.dir().map(CubinStore::new);
        (location, store)
    })
}

/// Cubins compiled or read by this process, by key text.
fn memory() -> &'static Mutex<HashMap<String, Arc<[u8]>>> {
    static MEMORY: OnceLock<Mutex<HashMap<String, Arc<[u8]>>>> = OnceLock::new();
    MEMORY.get_or_init(|| Mutex::new(HashMap::new()))
}

fn memory_get(key: &str) -> Option<Arc<[u8]>> {
    memory().lock().ok()?.get(key).cloned()
}

fn memory_put(key: String, cubin: Arc<[u8]>) {
    if let Ok(mut map) = memory().lock() {
        map.insert(key, cubin);
    }
}

fn memory_remove(key: &str) {
    if let Ok(mut map) = memory().lock() {
        map.remove(key);
    }
}

/// Keys of modules this process found it cannot make a cubin for (a capped link that would
/// run worse than the JIT's code): later loads of them go straight to the JIT, without
/// trying the link again.
fn uncacheable() -> &'static Mutex<HashSet<String>> {
    static UNCACHEABLE: OnceLock<Mutex<HashSet<String>>> = OnceLock::new();
    UNCACHEABLE.get_or_init(|| Mutex::new(HashSet::new()))
}

fn known_uncacheable(key: &str) -> bool {
    uncacheable().lock().is_ok_and(|set| set.contains(key))
}

fn remember_uncacheable(key: String) {
    if let Ok(mut set) = uncacheable().lock() {
        set.insert(key);
    }
}

/// Prints `message` on stderr, once per process: the cache degrades, it does not nag.
fn warn_once(message: &str) {
    static WARNED: AtomicBool = AtomicBool::new(false);
    if !WARNED.swap(true, Ordering::Relaxed) {
        eprintln!(
            "cuprum: warning: compile cache: {message}; compiling instead (further cache \
             warnings are not shown)"
        );
    }
}

fn report(outcome: &str, names: &[&str], start: Instant) {
    static ENABLED: OnceLock<bool> = OnceLock::new();
    let enabled = *ENABLED.get_or_init(|| {
        std::env::var_os(CACHE_STATS_ENV)
            .is_some_and(|v| !v.is_empty() && v != "0" && v != "off" && v != "false")
    });
    if enabled {
        eprintln!(
            "cuprum cache: {outcome}: module [{}] ready in {:.3} ms",
            names.join(", "),
            start.elapsed().as_secs_f64() * 1e3
        );
    }
}

/// Writes `cubin` into [`CUBIN_DUMP_ENV`]'s folder when it is set (read once per process,
/// like the cache's other settings), as `<first kernel>-<entry file name>`; a failure is one
/// warning, never an error.
fn dump_cubin(names: &[&str], key: &CacheKey, cubin: &[u8]) {
    static DIR: OnceLock<Option<std::path::PathBuf>> = OnceLock::new();
    let dir = DIR.get_or_init(|| {
        std::env::var_os(CUBIN_DUMP_ENV)
            .filter(|d| !d.is_empty())
            .map(std::path::PathBuf::from)
    });
    let Some(dir) = dir else {
        return;
    };
    let first = names.first().copied().unwrap_or("module");
    let path = dir.join(format!("{first}-{}", key.file_name()));
    if let Err(e) = std::fs::create_dir_all(dir).and_then(|()| std::fs::write(&path, cubin)) {
        eprintln!(
            "cuprum: warning: {CUBIN_DUMP_ENV}: could not write {}: {e}",
            path.display()
        );
    }
}

/// Each kernel's PTX alone (in the module's kernel order), for the capped link; `None` when
/// the module's PTX did not come from its IR, so it cannot be split.
pub(crate) type PerKernelPtx<'a> = Option<&'a dyn Fn() -> Result<Vec<String>, Error>>;

/// The cubin a miss keeps: each kernel of `module` (already compiled by the JIT) linked
/// again as its own input, capped at the registers the JIT gave it, with that cubin loaded
/// (the check of its registers loads it). `Err` says why there is none (the caller runs the
/// JIT's module either way).
pub(crate) fn capped_cubin(
    device: &CudaDevice,
    jit: &CudaModule,
    names: &[&str],
    per_kernel: PerKernelPtx<'_>,
) -> Result<(Vec<u8>, CudaModule), String> {
    let split = per_kernel.ok_or("the module's PTX was given, not written from its IR")?;
    let texts = split().map_err(|e| e.to_string())?;
    if texts.len() != names.len() {
        return Err(format!(
            "{} kernel PTX texts for {} kernels",
            texts.len(),
            names.len()
        ));
    }
    let jit_use = (0..names.len())
        .map(|i| device.resources(jit, i))
        .collect::<Option<Vec<_>>>()
        .ok_or("the driver did not say how many registers the JIT used")?;
    let options: Vec<[LinkOption; 2]> = jit_use
        .iter()
        .map(|r| {
            [
                LinkOption::MaxRegisters(r.registers),
                LinkOption::OverrideDirectiveValues,
            ]
        })
        .collect();
    let inputs: Vec<LinkInput<'_>> = texts
        .iter()
        .zip(&options)
        .map(|(ptx, options)| LinkInput { ptx, options })
        .collect();
    let cubin = device
        .link_ptx(&[], &inputs)
        .map_err(|e| format!("the linker refused: {e}"))?;
    // Kept only if it is no worse than the JIT's code in registers (so in occupancy) and in
    // local memory (so the cap made no spills).
    let linked = device
        .load_cubin(&cubin, names)
        .map_err(|e| format!("the linked cubin does not load: {e}"))?;
    for (i, name) in names.iter().enumerate() {
        let from_jit = jit_use[i];
        match device.resources(&linked, i) {
            Some(r)
                if r.registers <= from_jit.registers && r.local_bytes <= from_jit.local_bytes => {}
            got => {
                return Err(format!(
                    "kernel `{name}` got {got:?} from the linker, {from_jit:?} from the JIT"
                ));
            }
        }
    }
    Ok((cubin, linked))
}

/// Loads `ptx` (written for `target`) on `device` through the cache. `per_kernel` gives each
/// kernel's PTX alone, for the cubin a miss keeps (see the module docs of `cache`).
pub(crate) fn load_cuda(
    device: &CudaDevice,
    compute_capability: (u32, u32),
    target: &str,
    ptx: &str,
    names: &[&str],
    per_kernel: PerKernelPtx<'_>,
) -> Result<CudaModule, Error> {
    let start = Instant::now();
    let (location, store) = configured();
    if *location == CacheLocation::Disabled {
        // No cache at all: the driver compiles the PTX as it loads it, every time.
        bump(&COUNTERS.compiles);
        let module = device.load_module(ptx, names);
        report("cache off (compiled from PTX)", names, start);
        return module;
    }
    let key = CacheKey::for_ptx(ptx, target, compute_capability, device.driver_version());
    let key_text = key.text();

    if let Some(cubin) = memory_get(&key_text) {
        if let Ok(module) = device.load_cubin(&cubin, names) {
            bump(&COUNTERS.memory_hits);
            report("memory hit (no compilation)", names, start);
            return Ok(module);
        }
        memory_remove(&key_text);
    }

    if let Some(store) = store {
        match store.lookup(&key) {
            Lookup::Hit(cubin) => match device.load_cubin(&cubin, names) {
                Ok(module) => {
                    bump(&COUNTERS.disk_hits);
                    dump_cubin(names, &key, &cubin);
                    memory_put(key_text, cubin.into());
                    report("disk hit (no compilation)", names, start);
                    return Ok(module);
                }
                // The driver refuses what it once wrote: stale in a way the key missed.
                Err(_) => bump(&COUNTERS.rejected),
            },
            Lookup::Rejected(_) => bump(&COUNTERS.rejected),
            Lookup::Missing => {}
            Lookup::Unreadable(why) => {
                bump(&COUNTERS.io_failures);
                warn_once(&why);
            }
        }
    }

    // A miss: the JIT compiles the whole program (what this process runs, and the JIT's log
    // when the PTX is refused), then the capped link makes the cubin to keep.
    bump(&COUNTERS.compiles);
    let module = device.load_module(ptx, names)?;
    if known_uncacheable(&key_text) {
        bump(&COUNTERS.not_cached);
        report(
            "miss (compiled from PTX; not cacheable, as this process found before)",
            names,
            start,
        );
        return Ok(module);
    }
    let cubin = match capped_cubin(device, &module, names, per_kernel) {
        Ok((cubin, _linked)) => cubin,
        Err(why) => {
            remember_uncacheable(key_text);
            bump(&COUNTERS.not_cached);
            report(
                &format!("miss (compiled from PTX, not cached: {why})"),
                names,
                start,
            );
            return Ok(module);
        }
    };
    dump_cubin(names, &key, &cubin);
    let cubin: Arc<[u8]> = cubin.into();
    memory_put(key_text, cubin.clone());
    if let Some(store) = store {
        match store.put(&key, &cubin) {
            Ok(()) => bump(&COUNTERS.disk_writes),
            Err(e) => {
                bump(&COUNTERS.io_failures);
                warn_once(&format!(
                    "could not write {}: {e}",
                    store.path_for(&key).display()
                ));
            }
        }
    }
    report("miss (compiled by the driver, stored)", names, start);
    Ok(module)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_uncacheable_module_is_remembered_for_the_process() {
        let key = "test-key-uncacheable-remembered".to_owned();
        let other = "test-key-never-seen";
        assert!(!known_uncacheable(&key));
        remember_uncacheable(key.clone());
        assert!(known_uncacheable(&key));
        assert!(!known_uncacheable(other));
    }
}
