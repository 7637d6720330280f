//! The compile cache's process-wide counters ([`stats`]), and the per-process memory of
//! validated IR that every backend's module load asks ([`validate_once`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use crate::error::Error;

/// Process-wide counters of the compile cache.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CacheStats {
    /// CUDA modules loaded from a cubin this process already had in memory.
    pub memory_hits: u64,
    /// CUDA modules loaded from a cubin found on disk: started without compiling.
    pub disk_hits: u64,
    /// CUDA modules whose PTX the driver compiled (cache misses).
    pub compiles: u64,
    /// Disk entries refused (corrupt, stale, or a cubin the driver would not load) and
    /// rebuilt.
    pub rejected: u64,
    /// Entries written to disk.
    pub disk_writes: u64,
    /// Misses compiled by the JIT for which no cubin as good as the JIT's could be made, so
    /// nothing was kept (see the module docs of `cache`).
    pub not_cached: u64,
    /// Misses whose cubin was kept with at least one kernel linked at a register cap above the
    /// JIT's count (it spilled at the JIT's count; the higher cap keeps its occupancy).
    pub raised_caps: u64,
    /// Misses whose cubin came from the link run while the JIT compiled (each kernel no worse
    /// than the JIT's), so no second compile followed.
    pub parallel_links: u64,
    /// Misses that did not try the capped link because the module was found not cacheable
    /// before: by this process, or by an earlier one that left a verdict on disk.
    pub skipped_links: u64,
    /// Disk reads or writes that failed (each degraded to compiling or to not storing).
    pub io_failures: u64,
    /// Module loads (any backend) whose IR had already been validated in this process.
    pub ir_reuses: u64,
}

pub(crate) struct Counters {
    pub(crate) memory_hits: AtomicU64,
    pub(crate) disk_hits: AtomicU64,
    pub(crate) compiles: AtomicU64,
    pub(crate) rejected: AtomicU64,
    pub(crate) disk_writes: AtomicU64,
    pub(crate) not_cached: AtomicU64,
    pub(crate) raised_caps: AtomicU64,
    pub(crate) parallel_links: AtomicU64,
    pub(crate) skipped_links: AtomicU64,
    pub(crate) io_failures: AtomicU64,
    pub(crate) ir_reuses: AtomicU64,
}

pub(crate) static COUNTERS: Counters = Counters {
    memory_hits: AtomicU64::new(0),
    disk_hits: AtomicU64::new(0),
    compiles: AtomicU64::new(0),
    rejected: AtomicU64::new(0),
    disk_writes: AtomicU64::new(0),
    not_cached: AtomicU64::new(0),
    raised_caps: AtomicU64::new(0),
    parallel_links: AtomicU64::new(0),
    skipped_links: AtomicU64::new(0),
    io_failures: AtomicU64::new(0),
    ir_reuses: AtomicU64::new(0),
};

pub(crate) fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

/// The compile cache's counters for this process so far.
pub fn stats() -> CacheStats {
    let c = &COUNTERS;
    let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
    CacheStats {
        memory_hits: get(&c.memory_hits),
        disk_hits: get(&c.disk_hits),
        compiles: get(&c.compiles),
        rejected: get(&c.rejected),
        disk_writes: get(&c.disk_writes),
        not_cached: get(&c.not_cached),
        raised_caps: get(&c.raised_caps),
        parallel_links: get(&c.parallel_links),
        skipped_links: get(&c.skipped_links),
        io_failures: get(&c.io_failures),
        ir_reuses: get(&c.ir_reuses),
    }
}

/// Validates `ir` unless this very module was validated before in this process.
///
/// The memory is a list of weak references: a module is recognized while it is alive (its
/// `Arc` cannot be mutated in place while a weak reference exists, so it is still what was
/// validated), and dead entries are dropped.
pub(crate) fn validate_once(ir: &Arc<cuprum_ir::Module>) -> Result<(), Error> {
    static VALIDATED: OnceLock<Mutex<Vec<Weak<cuprum_ir::Module>>>> = OnceLock::new();
    let validated = VALIDATED.get_or_init(|| Mutex::new(Vec::new()));
    if let Ok(mut seen) = validated.lock() {
        seen.retain(|w| w.strong_count() > 0);
        if seen
            .iter()
            .any(|w| std::ptr::eq(w.as_ptr(), Arc::as_ptr(ir)))
        {
            bump(&COUNTERS.ir_reuses);
            return Ok(());
        }
    }
    cuprum_ir::validate_module(ir).map_err(|e| Error::Compile {
        kernel: e.kernel.clone(),
        message: e.to_string(),
    })?;
    if let Ok(mut seen) = validated.lock() {
        seen.push(Arc::downgrade(ir));
    }
    Ok(())
}
