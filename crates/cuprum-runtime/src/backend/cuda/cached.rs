//! The cached load path of the CUDA backend: PTX to a loaded module through the compile
//! cache (memory, then disk, then the driver's JIT and a register-capped link, a spilling
//! kernel's cap raised while its blocks per SM are kept; a verdict on disk when no cubin is as
//! good as the JIT's code).
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
use crate::cache::occupancy::{self, BlockSizes, KernelUse, Shortfall, SmLimits};
use crate::cache::stats::{COUNTERS, bump};
use crate::cache::{CUBIN_DUMP_ENV, CacheKey, CacheLocation, CubinStore, LinkOption, Lookup};
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
    if crate::cache::stats_enabled() {
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

/// What the capped link needs to know of each kernel beyond the module's PTX, in the module's
/// kernel order.
pub(crate) struct PerKernel<'a> {
    /// Each kernel's PTX alone (each is linked as its own input, with its own cap).
    pub(crate) ptx: &'a dyn Fn() -> Result<Vec<String>, Error>,
    /// The threads of the exact block each kernel declares (`.reqntid`), if it does.
    pub(crate) exact_block: Vec<Option<u32>>,
    /// The SM's limits for the occupancy arithmetic, when the driver reported them.
    pub(crate) sm: Option<SmLimits>,
}

/// The per-kernel facts of the capped link; `None` when the module's PTX did not come from its
/// IR, so it cannot be split.
pub(crate) type PerKernelPtx<'a> = Option<&'a PerKernel<'a>>;

/// The cubin a miss keeps, loaded, and the kernels in it linked above the JIT's registers.
pub(crate) struct Capped {
    pub(crate) cubin: Vec<u8>,
    pub(crate) module: CudaModule,
    pub(crate) raised: Vec<Raised>,
}

/// A kernel the capped link compiled at a cap above the JIT's register count, because at the
/// JIT's count it spilled, with the occupancy that cap keeps.
pub(crate) struct Raised {
    pub(crate) kernel: String,
    pub(crate) cap: u32,
    pub(crate) jit: KernelUse,
    pub(crate) linked: KernelUse,
    pub(crate) sizes: BlockSizes,
    pub(crate) sm: SmLimits,
}

impl std::fmt::Display for Raised {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "`{}` linked at a cap of {} registers: {} registers and {} bytes of local memory, \
             {} and {} from the JIT; ",
            self.kernel,
            self.cap,
            self.linked.registers,
            self.linked.local_bytes,
            self.jit.registers,
            self.jit.local_bytes
        )?;
        match self.sizes {
            BlockSizes::Exactly(threads) => write!(
                f,
                "{} blocks of {threads} threads per SM either way",
                occupancy::blocks_per_sm(&self.sm, self.linked.registers, threads)
            ),
            BlockSizes::UpTo(_) => write!(f, "blocks per SM kept for {}", self.sizes),
        }
    }
}

/// Why a miss keeps no cubin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum NoCubin {
    /// The linker's code would be worse than the JIT's (spills, or fewer blocks per SM at
    /// every cap that stops the spills, or `wgmma`s that ptxas serialized in relocatable code
    /// only: [`lost_performance`]). The same PTX, device, driver and recipe give the same
    /// verdict, so it is kept on disk for later processes.
    Worse(String),
    /// Something failed on the way (the PTX cannot be split, the linker refused, its cubin
    /// did not load, the driver did not answer): remembered by this process only.
    Failed(String),
}

impl std::fmt::Display for NoCubin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Worse(why) | Self::Failed(why) => f.write_str(why),
        }
    }
}

impl From<&str> for NoCubin {
    fn from(why: &str) -> Self {
        Self::Failed(why.to_owned())
    }
}

/// A linked cubin, loaded, with what ptxas wrote making it.
struct Linked {
    cubin: Vec<u8>,
    module: CudaModule,
    log: String,
}

impl Linked {
    /// `self`, unless ptxas reported a performance loss making it that the JIT's compile of
    /// the same PTX (which wrote `jit_log`) did not ([`lost_performance`]): then `Worse`.
    fn no_loss_against(self, jit_log: &str) -> Result<Self, NoCubin> {
        match lost_performance(&self.log, jit_log) {
            Some(line) => Err(NoCubin::Worse(format!(
                "the linker's relocatable compile lost what the JIT's whole-program compile \
                 keeps (ptxas: {line})"
            ))),
            None => Ok(self),
        }
    }
}

/// Links `texts` (one kernel each) into one cubin, kernel `i` capped at `caps[i]` registers,
/// and loads it.
fn link_capped(
    device: &CudaDevice,
    texts: &[&str],
    caps: &[u32],
    names: &[&str],
) -> Result<Linked, NoCubin> {
    let options: Vec<Vec<LinkOption>> = caps
        .iter()
        .map(|&cap| {
            vec![
                LinkOption::MaxRegisters(cap),
                LinkOption::OverrideDirectiveValues,
            ]
        })
        .collect();
    link_inputs(device, texts, &options, names)
}

/// Links `texts` (one kernel each) into one cubin with the linker's own choices, and loads it:
/// what a miss links on another thread while the JIT compiles (see [`load_cuda`]).
fn link_uncapped(device: &CudaDevice, texts: &[String], names: &[&str]) -> Result<Linked, NoCubin> {
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    let options = vec![Vec::new(); texts.len()];
    link_inputs(device, &texts, &options, names)
}

/// Links `texts` (one kernel each), input `i` with `options[i]`, and loads the cubin.
fn link_inputs(
    device: &CudaDevice,
    texts: &[&str],
    options: &[Vec<LinkOption>],
    names: &[&str],
) -> Result<Linked, NoCubin> {
    let inputs: Vec<LinkInput<'_>> = texts
        .iter()
        .zip(options)
        .map(|(ptx, options)| LinkInput { ptx, options })
        .collect();
    let linked = device
        .link_ptx(&[], &inputs)
        .map_err(|e| NoCubin::Failed(format!("the linker refused: {e}")))?;
    let module = device
        .load_cubin(&linked.cubin, names)
        .map_err(|e| NoCubin::Failed(format!("the linked cubin does not load: {e}")))?;
    Ok(Linked {
        cubin: linked.cubin,
        module,
        log: linked.log,
    })
}

/// The first line of ptxas's log of a link (`linked`) saying that it serialized `wgmma`
/// instructions ("Potential Performance Loss: wgmma.mma_async instructions are serialized",
/// advisories such as C7509, C7510 and C7512) for a reason its log of the JIT's compile of the same PTX
/// (`jit`) does not give (by advisory code), if there is one.
///
/// Why the cache asks: relocatable code, what the linker compiles, loses what whole-program
/// code keeps. ptxas's own helper routines (the slow paths of `f32` division and of 64-bit
/// integer division) become external calls there, and with a call anywhere in a kernel ptxas
/// makes every `wgmma` wait for the one before (C7509; the tile track's attention kernels
/// divide in their epilogue); it also ignores `setmaxnreg` there (C7504), so a consumer
/// warpgroup keeps the launch's registers and may have too few to keep its `wgmma`s in
/// flight (C7512). Checked with ptxas 13 (`-c`); on H100s in 2026-12 the attention kernels
/// ran about 15% faster in processes that had missed the cache (the JIT's code) than in
/// later ones (the cached cubin). An ignored `setmaxnreg` alone is left to the register and
/// spill rules ([`occupancy::judge`]): what it costs has not been measured, and keeping the
/// Hopper GEMMs' cubins is what makes their first launch from the cache take under a
/// millisecond.
fn lost_performance<'a>(linked: &'a str, jit: &str) -> Option<&'a str> {
    /// The advisory's code, `(C7509)`, or the whole line where there is none.
    fn code(line: &str) -> &str {
        line.find("(C")
            .and_then(|at| line[at..].find(')').map(|end| &line[at..=at + end]))
            .unwrap_or(line)
    }
    linked
        .lines()
        .map(str::trim)
        .filter(|line| line.contains("Performance Loss") && line.contains("serialized"))
        .find(|line| !jit.contains(code(line)))
}

/// What the driver gave kernel `index` of `module`.
fn used(device: &CudaDevice, module: &CudaModule, index: usize) -> Result<KernelUse, NoCubin> {
    device
        .kernel_use(module, index)
        .ok_or_else(|| "the driver did not say what the compiler gave a kernel".into())
}

/// For a kernel that spills when capped at the JIT's registers: the first cap of
/// [`occupancy::raised_caps`] at which the linker compiles it no worse than the JIT did
/// ([`occupancy::judge`]), each tried by linking the kernel alone. `Err(Worse)` lists what
/// each cap gave.
fn climb(
    device: &CudaDevice,
    ptx: &str,
    name: &str,
    sm: &SmLimits,
    sizes: BlockSizes,
    jit: KernelUse,
    jit_log: &str,
) -> Result<u32, NoCubin> {
    let mut tried = Vec::new();
    for cap in occupancy::raised_caps(sm, sizes, jit.registers) {
        let linked = link_capped(device, &[ptx], &[cap], &[name])?.no_loss_against(jit_log)?;
        match occupancy::judge(Some(sm), sizes, jit, used(device, &linked.module, 0)?) {
            Ok(()) => return Ok(cap),
            Err(why) => tried.push(format!("capped at {cap}, {why}")),
        }
    }
    Err(NoCubin::Worse(if tried.is_empty() {
        format!(
            "no cap above {} registers keeps the JIT's blocks per SM for {sizes}",
            jit.registers
        )
    } else {
        format!(
            "{}; no higher cap keeps the JIT's blocks per SM for {sizes}",
            tried.join("; ")
        )
    }))
}

/// What the JIT gave each of the `count` kernels of `jit`.
fn jit_uses(
    device: &CudaDevice,
    jit: &CudaModule,
    count: usize,
) -> Result<Vec<KernelUse>, NoCubin> {
    (0..count).map(|i| used(device, jit, i)).collect()
}

/// The block sizes each kernel may be launched with: its exact block, else any up to the
/// largest the JIT's code accepts (which `.maxntid` already bounds).
fn block_sizes(facts: &PerKernel<'_>, jit_use: &[KernelUse]) -> Vec<BlockSizes> {
    facts
        .exact_block
        .iter()
        .zip(jit_use)
        .map(|(exact, used)| match exact {
            Some(threads) => BlockSizes::Exactly(*threads),
            None => BlockSizes::UpTo(used.max_threads_per_block),
        })
        .collect()
}

/// The uncapped link's cubin, if every kernel in it is no worse than from the JIT
/// ([`occupancy::judge`]); `None` otherwise (the capped link then makes the cubin).
fn uncapped_if_as_good(
    device: &CudaDevice,
    jit: &CudaModule,
    names: &[&str],
    facts: &PerKernel<'_>,
    linked: Result<Linked, NoCubin>,
) -> Option<Vec<u8>> {
    let Linked {
        cubin,
        module: linked,
        ..
    } = linked.ok()?.no_loss_against(&jit.jit_log).ok()?;
    if facts.exact_block.len() != names.len() {
        return None;
    }
    let jit_use = jit_uses(device, jit, names.len()).ok()?;
    let sizes = block_sizes(facts, &jit_use);
    for (i, (jit, sizes)) in jit_use.iter().zip(sizes).enumerate() {
        let got = used(device, &linked, i).ok()?;
        occupancy::judge(facts.sm.as_ref(), sizes, *jit, got).ok()?;
    }
    Some(cubin)
}

/// The cubin a miss keeps: each kernel of `module` (already compiled by the JIT) linked
/// again as its own input, capped at the registers the JIT gave it, with that cubin loaded
/// (the check of its resources loads it). A kernel that spills at that cap is tried at higher
/// caps, one register allocation unit at a time, for as long as the SM still holds as many of
/// its blocks ([`occupancy`]); the first cap at which it spills no more than the JIT's code is
/// kept. `Err` says why there is no such cubin (the caller runs the JIT's module either way).
pub(crate) fn capped_cubin(
    device: &CudaDevice,
    jit: &CudaModule,
    names: &[&str],
    per_kernel: PerKernelPtx<'_>,
) -> Result<Capped, NoCubin> {
    let facts = per_kernel.ok_or("the module's PTX was given, not written from its IR")?;
    let texts = (facts.ptx)().map_err(|e| NoCubin::Failed(e.to_string()))?;
    capped_cubin_of(device, jit, names, Ok((facts, &texts)))
}

/// [`capped_cubin`] with each kernel's PTX already written (`Err`: why there is none).
fn capped_cubin_of(
    device: &CudaDevice,
    jit: &CudaModule,
    names: &[&str],
    per_kernel: Result<(&PerKernel<'_>, &[String]), NoCubin>,
) -> Result<Capped, NoCubin> {
    let (facts, texts) = per_kernel?;
    if texts.len() != names.len() || facts.exact_block.len() != names.len() {
        return Err(NoCubin::Failed(format!(
            "{} kernel PTX texts and {} block shapes for {} kernels",
            texts.len(),
            facts.exact_block.len(),
            names.len()
        )));
    }
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    let jit_use = jit_uses(device, jit, names.len())?;
    let sizes = block_sizes(facts, &jit_use);
    let sm = facts.sm.as_ref();
    let mut caps: Vec<u32> = jit_use.iter().map(|u| u.registers).collect();
    let Linked {
        mut cubin,
        module: mut linked,
        ..
    } = link_capped(device, &texts, &caps, names)?.no_loss_against(&jit.jit_log)?;
    let mut raise = false;
    let jit_log = jit.jit_log.as_str();
    for (i, name) in names.iter().enumerate() {
        let (jit, got) = (jit_use[i], used(device, &linked, i)?);
        let at_jit_cap = |why: &dyn std::fmt::Display| {
            format!(
                "kernel `{name}` capped at the JIT's {} registers: {why}",
                jit.registers
            )
        };
        match (occupancy::judge(sm, sizes[i], jit, got), sm) {
            (Ok(()), _) => {}
            // Spills at the JIT's count: try the caps that keep the occupancy.
            (Err(spills @ Shortfall::Spills { .. }), Some(sm)) => {
                caps[i] = climb(device, texts[i], name, sm, sizes[i], jit, jit_log).map_err(
                    |e| match e {
                        NoCubin::Worse(why) => {
                            NoCubin::Worse(format!("{}; {why}", at_jit_cap(&spills)))
                        }
                        failed => failed,
                    },
                )?;
                raise = true;
            }
            (Err(why), _) => return Err(NoCubin::Worse(at_jit_cap(&why))),
        }
    }
    if !raise {
        return Ok(Capped {
            cubin,
            module: linked,
            raised: Vec::new(),
        });
    }
    // One cubin with every kernel at its cap; each input is compiled on its own with its own
    // options, so each kernel comes out as it did alone. Checked again all the same.
    drop(linked);
    Linked {
        cubin,
        module: linked,
        ..
    } = link_capped(device, &texts, &caps, names)?.no_loss_against(jit_log)?;
    let mut raised = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let (jit, got) = (jit_use[i], used(device, &linked, i)?);
        occupancy::judge(sm, sizes[i], jit, got).map_err(|why| {
            NoCubin::Failed(format!(
                "kernel `{name}` linked with the others at a cap of {} registers came out \
                 otherwise than alone: {why}",
                caps[i]
            ))
        })?;
        if let (Some(sm), true) = (sm, caps[i] > jit.registers) {
            raised.push(Raised {
                kernel: (*name).to_owned(),
                cap: caps[i],
                jit,
                linked: got,
                sizes: sizes[i],
                sm: *sm,
            });
        }
    }
    Ok(Capped {
        cubin,
        module: linked,
        raised,
    })
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
    // when the PTX is refused) while, on another thread, the linker compiles each kernel with
    // its own choices; when every kernel of the linker's cubin is no worse than the JIT's, that
    // cubin is kept, so a first load costs one compile's time. Otherwise the capped link makes
    // the cubin to keep, unless this process or an earlier one found that it cannot.
    bump(&COUNTERS.compiles);
    let verdict_key = key.not_cacheable();
    let known_verdict = known_uncacheable(&key_text)
        || matches!(
            store.as_ref().map(|s| s.lookup(&verdict_key)),
            Some(Lookup::Hit(_))
        );
    // Each kernel's PTX alone, written once for both links (`Err`: why there is none).
    let per_kernel_texts: Result<(&PerKernel<'_>, Vec<String>), NoCubin> = match per_kernel {
        _ if known_verdict => Err("not cacheable, as found before".into()),
        None => Err("the module's PTX was given, not written from its IR".into()),
        Some(facts) => (facts.ptx)()
            .map(|texts| (facts, texts))
            .map_err(|e| NoCubin::Failed(e.to_string())),
    };
    let (module, uncapped) = std::thread::scope(|scope| {
        let linking = per_kernel_texts.as_ref().ok().and_then(|(_, texts)| {
            std::thread::Builder::new()
                .name("cuprum-link".to_owned())
                .spawn_scoped(scope, || link_uncapped(device, texts, names))
                .ok()
        });
        let module = device.load_module(ptx, names);
        let linked = linking.map(|handle| {
            handle
                .join()
                .unwrap_or_else(|_| Err("the linking thread panicked".into()))
        });
        (module, linked)
    });
    let module = module?;
    if let (Ok((facts, _)), Some(linked)) = (&per_kernel_texts, uncapped)
        && let Some(cubin) = uncapped_if_as_good(device, &module, names, facts, linked)
    {
        bump(&COUNTERS.parallel_links);
        keep_cubin(names, &key, key_text, store.as_ref(), cubin);
        report(
            "miss (compiled by the JIT and, at the same time, by the linker; stored)",
            names,
            start,
        );
        return Ok(module);
    }
    if known_uncacheable(&key_text) {
        bump(&COUNTERS.not_cached);
        bump(&COUNTERS.skipped_links);
        report(
            "miss (compiled from PTX; not cacheable, as this process found before)",
            names,
            start,
        );
        return Ok(module);
    }
    if let Some(Lookup::Hit(why)) = store.as_ref().map(|s| s.lookup(&verdict_key)) {
        remember_uncacheable(key_text);
        bump(&COUNTERS.not_cached);
        bump(&COUNTERS.skipped_links);
        report(
            &format!(
                "miss (compiled from PTX; not cacheable, as an earlier process found: {})",
                String::from_utf8_lossy(&why)
            ),
            names,
            start,
        );
        return Ok(module);
    }
    let texts = per_kernel_texts
        .as_ref()
        .map(|(facts, texts)| (*facts, texts.as_slice()))
        .map_err(Clone::clone);
    let (cubin, raised) = match capped_cubin_of(device, &module, names, texts) {
        Ok(capped) => (capped.cubin, capped.raised),
        Err(why) => {
            remember_uncacheable(key_text);
            bump(&COUNTERS.not_cached);
            if let (NoCubin::Worse(text), Some(store)) = (&why, store) {
                // Later processes skip the link; a failed write only costs them the link.
                match store.put(&verdict_key, text.as_bytes()) {
                    Ok(()) => bump(&COUNTERS.disk_writes),
                    Err(e) => {
                        bump(&COUNTERS.io_failures);
                        warn_once(&format!(
                            "could not write {}: {e}",
                            store.path_for(&verdict_key).display()
                        ));
                    }
                }
            }
            report(
                &format!("miss (compiled from PTX, not cached: {why})"),
                names,
                start,
            );
            return Ok(module);
        }
    };
    keep_cubin(names, &key, key_text, store.as_ref(), cubin);
    if raised.is_empty() {
        report("miss (compiled by the driver, stored)", names, start);
    } else {
        bump(&COUNTERS.raised_caps);
        let raised: Vec<String> = raised.iter().map(ToString::to_string).collect();
        report(
            &format!(
                "miss (compiled by the driver, stored with a raised register cap: {})",
                raised.join("; ")
            ),
            names,
            start,
        );
    }
    Ok(module)
}

/// Keeps the cubin a miss made: in memory, on disk when there is a store, and in
/// [`CUBIN_DUMP_ENV`]'s folder when it is set.
fn keep_cubin(
    names: &[&str],
    key: &CacheKey,
    key_text: String,
    store: Option<&CubinStore>,
    cubin: Vec<u8>,
) {
    dump_cubin(names, key, &cubin);
    let cubin: Arc<[u8]> = cubin.into();
    memory_put(key_text, cubin.clone());
    if let Some(store) = store {
        match store.put(key, &cubin) {
            Ok(()) => bump(&COUNTERS.disk_writes),
            Err(e) => {
                bump(&COUNTERS.io_failures);
                warn_once(&format!(
                    "could not write {}: {e}",
                    store.path_for(key).display()
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two `wgmma`s and an `f32` division: ptxas keeps the `wgmma`s in flight when it compiles
    /// the whole program and serializes them in relocatable code (the division's slow path is
    /// a call there).
    const WGMMA_AND_DIVISION: &str = "\
.version 8.0
.target sm_90a
.address_size 64
.visible .entry serialized(.param .u64 out, .param .u64 desc, .param .f32 divisor)
.maxntid 128, 1, 1
{
\t.reg .b64 %rd<4>;
\t.reg .f32 %f<8>;
\tld.param.u64 %rd0, [out];
\tld.param.u64 %rd1, [desc];
\tld.param.f32 %f5, [divisor];
\tmov.f32 %f0, 0f00000000;
\tmov.f32 %f1, 0f00000000;
\tmov.f32 %f2, 0f00000000;
\tmov.f32 %f3, 0f00000000;
\twgmma.fence.sync.aligned;
\twgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f0, %f1, %f2, %f3}, %rd1, %rd1, 1, 1, 1, 0, 0;
\twgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f0, %f1, %f2, %f3}, %rd1, %rd1, 1, 1, 1, 0, 0;
\twgmma.commit_group.sync.aligned;
\twgmma.wait_group.sync.aligned 0;
\tadd.f32 %f4, %f0, %f1;
\tadd.f32 %f4, %f4, %f2;
\tadd.f32 %f4, %f4, %f3;
\tdiv.rn.f32 %f6, %f4, %f5;
\tcvta.to.global.u64 %rd2, %rd0;
\tst.global.f32 [%rd2], %f6;
\tret;
}
";

    /// Warpgroups that give and take registers: ptxas honours `setmaxnreg` when it compiles
    /// the whole program and ignores it in relocatable code (C7504), which the cache leaves to
    /// its register and spill rules.
    const REGISTER_HANDOVER: &str = "\
.version 8.0
.target sm_90a
.address_size 64
.visible .entry specialized(.param .u64 out)
.maxntid 256, 1, 1
.maxnreg 168
{
\t.reg .b32 %r<4>;
\t.reg .b64 %rd<4>;
\t.reg .pred %p<2>;
\tmov.u32 %r0, %tid.x;
\tsetp.lt.u32 %p0, %r0, 128;
\t@%p0 bra PRODUCER;
\tsetmaxnreg.inc.sync.aligned.u32 232;
\tbra DONE;
PRODUCER:
\tsetmaxnreg.dec.sync.aligned.u32 40;
DONE:
\tld.param.u64 %rd0, [out];
\tcvta.to.global.u64 %rd1, %rd0;
\tst.global.u32 [%rd1], %r0;
\tret;
}
";

    #[test]
    fn performance_lost_to_relocatable_code_is_read_from_ptxas_logs() {
        let serialized = "ptxas info    : (C7509) Potential Performance Loss: wgmma.mma_async \
                          instructions are serialized due to the presence of Extern calls in \
                          the function 'k' in line 29";
        let registers = "ptxas info    : Used 40 registers";
        let linked = format!("{registers}\n{serialized}\n");
        assert_eq!(lost_performance(&linked, registers), Some(serialized));
        assert_eq!(lost_performance(&linked, ""), Some(serialized));
        // Lost by the JIT's compile as well (by code): not a reason to prefer the JIT's.
        let jit = "ptxas info    : (C7509) Potential Performance Loss: wgmma.mma_async \
                   instructions are serialized due to the presence of Extern calls in the \
                   function 'k' in line 31";
        assert_eq!(lost_performance(&linked, jit), None);
        assert_eq!(lost_performance(registers, ""), None);
        assert_eq!(lost_performance("", ""), None);
        let ignored = "ptxas info    : (C7504) Potential Performance Loss: 'setmaxnreg' \
                       ignored to maintain compatibility across compilation units.";
        assert_eq!(lost_performance(ignored, ""), None);
        // What ptxas itself writes, whole-program (the JIT's compile) and relocatable (the
        // linker's) (without ptxas: the test policy, a notice or, under
        // CUPRUM_REQUIRE_PTXAS, a failure).
        for (ptx, code) in [
            (WGMMA_AND_DIVISION, Some("C7509")),
            (REGISTER_HANDOVER, None),
        ] {
            if cuprum_testkit::ptxas::find().is_none() {
                cuprum_testkit::ptxas::check(ptx, "sm_90a").unwrap_or_else(|e| panic!("{e}"));
                continue;
            }
            let run = |options: &[&str]| {
                cuprum_testkit::ptxas::assemble_with_options(ptx, "sm_90a", options)
                    .unwrap_or_else(|e| panic!("{e}"))
            };
            let (whole, relocatable) = (run(&[]), run(&["-c"]));
            assert_eq!(lost_performance(&whole, ""), None, "{whole}");
            match code {
                Some(code) => assert!(
                    lost_performance(&relocatable, &whole).is_some_and(|l| l.contains(code)),
                    "ptxas -c no longer reports {code}: {relocatable}"
                ),
                None => {
                    assert!(relocatable.contains("C7504"), "{relocatable}");
                    assert_eq!(lost_performance(&relocatable, &whole), None);
                }
            }
        }
    }

    #[test]
    fn a_raised_cap_names_the_kernel_its_registers_and_the_blocks_kept() {
        let used = |registers, local_bytes| KernelUse {
            registers,
            local_bytes,
            max_threads_per_block: 128,
        };
        let raised = Raised {
            kernel: "k".to_owned(),
            cap: 80,
            jit: used(76, 0),
            linked: used(80, 0),
            sizes: BlockSizes::Exactly(128),
            sm: SmLimits::SM80_SM90,
        };
        assert_eq!(
            raised.to_string(),
            "`k` linked at a cap of 80 registers: 80 registers and 0 bytes of local memory, 76 \
             and 0 from the JIT; 6 blocks of 128 threads per SM either way"
        );
        let raised = Raised {
            sizes: BlockSizes::UpTo(256),
            ..raised
        };
        assert!(
            raised
                .to_string()
                .ends_with("blocks per SM kept for every block size up to 256 threads")
        );
    }

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
