//! The compile cache: a module compiled once is not compiled again, in this process or the
//! next.
//!
//! Loading a module on a GPU means writing PTX (fast, under a millisecond for small kernels)
//! and having the driver compile that PTX to machine code (tens to hundreds of milliseconds).
//! The cache keeps the driver's output, the *cubin*:
//!
//! * **in memory**, per process, so a second context or a second `load` of the same module
//!   costs one `cuModuleLoadDataEx` of the cubin;
//! * **on disk** ([`CubinStore`]), in [`CACHE_DIR_ENV`] (`CUPRUM_CACHE_DIR`) or by default
//!   `$XDG_CACHE_HOME/cuprum`, else `~/.cache/cuprum` (`~/Library/Caches/cuprum` on macOS,
//!   `%LOCALAPPDATA%\cuprum` on Windows), so a second process starts without compiling.
//!
//! An entry's key ([`CacheKey`]) is a 128-bit hash of the PTX text, which holds the kernel IR
//! after specialization (a specialized kernel's name and types are part of it), the PTX
//! target and the PTX writer's version; plus the device's compute capability (the cubin is
//! machine code for exactly that architecture), the driver's version (a new driver may
//! compile differently and may refuse an old driver's cubin) and [`RECIPE`], the way the cubin
//! was made. A hit loads the cubin with no PTX compilation. A cubin that the driver refuses
//! anyway is treated as stale: compiled again and replaced.
//!
//! **Why a miss compiles twice.** The only driver API that returns a cubin is the linker
//! (`cuLinkCreate`, `cuLinkAddData(CU_JIT_INPUT_PTX)`, `cuLinkComplete`), and the driver
//! documents that it treats its inputs as relocatable code (`-rdc=true` to nvcc, `ptxas -c`);
//! no option turns that off. Relocatable compilation of a kernel with `.maxntid` (cuprum's
//! `#[launch_bounds]`) can give it more registers than the whole-program compile of
//! `cuModuleLoadDataEx` does, and so fewer resident blocks: on an H200 (2026-11-30) the tiled
//! SGEMM example took 24.8 ms instead of 17.1 ms from the plain linker's cubin (45 registers
//! instead of 32 per thread with `ptxas 13.5 -c` versus `ptxas`, so one 1024-thread block per
//! SM instead of two), the register-blocked one 12.5 ms instead of 10.0 ms (72 instead of 64).
//! So a miss first has the JIT compile the PTX (the module this process runs), reads how many
//! registers the JIT gave each kernel, then has the linker compile each kernel as its own
//! input capped at that count (`CU_JIT_MAX_REGISTERS` with `CU_JIT_OVERRIDE_DIRECTIVE_VALUES`)
//! into one cubin, and keeps that cubin only if every kernel in it is no worse than from the
//! JIT: no more local memory (spills), blocks as large, and no more registers, or more but
//! with as many blocks per SM ([`occupancy`]).
//!
//! **One compile's time when the linker agrees.** The linker compiles on a second thread
//! while the JIT compiles, with its own choices; when every kernel of its cubin is no worse
//! than the JIT's by the same rule, that cubin is kept and no capped link follows, so a miss
//! takes about as long as the JIT alone (tile kernels, whose blocks are exact, are the common
//! case). Only when the linker's choices are worse (the `.maxntid` kernels above) does the
//! capped link run after the JIT.
//!
//! **Raised caps.** Capped at the JIT's count, a kernel can spill where the JIT's code did not
//! (bench_simt's `hgemm_mma`: 80 registers and 24 bytes of local memory against 80 and 0 on an
//! H200). Registers are allocated per warp in units of 256, 8 per thread, and a few more per
//! thread cost nothing while the SM still holds as many blocks of the kernel. So such a kernel
//! is linked again, alone, at each next multiple of 8 above the JIT's count, for as long as
//! that cap keeps the JIT's resident blocks per SM for every block size the kernel may be
//! launched with (its `.reqntid` block, else any size up to the largest the JIT's code
//! accepts; [`occupancy::raised_caps`]), and the first cap at which it spills no more than the
//! JIT's code is kept ([`occupancy::judge`]); then the whole module is linked once more with
//! each kernel at its cap (each extra link costs a miss one more compile of that kernel, or
//! of the module). Blocks per SM only fall as registers rise, so the search stops at the first
//! cap that loses one. Without the SM's limits from the driver, only the JIT's count
//! is tried. The arithmetic is the occupancy calculator's (sources in [`occupancy`]); it also
//! says that `hgemm_mma` has no such cap: 88 registers hold 5 of its 128-thread blocks per SM
//! instead of 6 (`cache_speed --module simt` shows what each cap gives it, and times it).
//!
//! **Serialized `wgmma`s.** In relocatable code ptxas's helper routines (the slow paths of
//! `f32` division and of 64-bit integer division) are external calls, and with a call in a
//! kernel ptxas makes each `wgmma` wait for the one before (advisory C7509); the JIT's
//! whole-program compile keeps them in flight. The tile track's attention kernels divide in
//! their epilogue (ptxas 13 `-c` serializes them; on H100s in 2026-12 they ran about 15%
//! faster in processes that had missed the cache, which run the JIT's code, than in later
//! ones). A link whose log reports `wgmma`s serialized for a reason the JIT's log does not
//! give is worse than the JIT's code, whatever the registers say.
//!
//! **Not cacheable.** A module for which the linker makes no cubin as good as the JIT's code
//! is not cached: this process runs the JIT's module, and an entry on disk records the
//! verdict (the reason, under the key [`CacheKey::not_cacheable`]), so that later processes,
//! and later loads in this one, load it through the JIT alone instead of repeating the link.
//! The driver's own JIT cache (`~/.nv/ComputeCache`, unless `CUDA_CACHE_DISABLE=1`) keeps the
//! JIT's output across processes. Only verdicts are kept on disk, not failures (a refused link,
//! a cubin that does not load): those are retried by the next process.
//!
//! The disk cache is an optimization and never an error: an unwritable folder, a full disk,
//! a corrupt or stale entry all degrade to compiling, with at most one warning line per
//! process on stderr.
//!
//! **The cubin cache is on by default** ([`ENABLED_BY_DEFAULT`]; `CUPRUM_CACHE=off` turns it
//! off). Measured on an H200 (the `cache_speed` example of the `cuprum` crate, 4096^3 SGEMM,
//! medians of 20): the capped cubins got the JIT's register counts (31 and 63) and ran the
//! tiled kernel in 16.5 ms against the JIT's 17.0 ms and the register-blocked one in 9.75 ms
//! against 9.52 ms, while a second process loaded the module in 0.57 ms instead of having it
//! compiled. A miss costs more than a plain JIT load (the JIT and then the linker compile:
//! 193 ms instead of 149 ms for that module). Off, every load has the driver compile the PTX
//! as it loads it, which the driver's own JIT cache keeps across processes. Deleting the folder
//! is always safe. `CUPRUM_CACHE_STATS=1` prints one line per module load on stderr: hit or
//! miss, and the time it took; a miss kept with a raised cap names each such kernel with its
//! cap, its registers and local memory from the linker and from the JIT, and the blocks per SM
//! kept; a module not cached says why. `CUPRUM_CUBIN_DUMP=<dir>` writes every cubin the cache
//! makes or reads into `<dir>` (named after the module's first kernel and the entry's key),
//! to compare its machine code (`cuobjdump -sass`) with `ptxas`'s.
//!
//! The emulator runs the IR itself and needs no cubin; what it reuses is the IR: a module
//! (an `Arc<cuprum_ir::Module>`, which `#[cuda_module]` builds once per process) is validated
//! on its first load only.
//!
//! ```
//! use std::sync::Arc;
//! use cuprum_ir::{KernelBuilder, Module};
//! use cuprum_runtime::{cache, CudaContext, LoadedModule};
//!
//! let ir = Arc::new(Module { kernels: vec![KernelBuilder::new("nothing").finish()] });
//! let before = cache::stats();
//! let ctx = CudaContext::emulator();
//! LoadedModule::load(&ctx, ir.clone())?; // validated here
//! LoadedModule::load(&ctx, ir.clone())?; // reused: the IR was validated in this process
//! assert!(cache::stats().ir_reuses > before.ir_reuses);
//! # Ok::<(), cuprum_runtime::Error>(())
//! ```

mod entry;
pub mod occupancy;
pub(crate) mod stats;
mod store;

use std::path::PathBuf;

pub use entry::{EntryError, FORMAT_OFFSET, FORMAT_VERSION, HEADER_LEN, MAGIC};
pub use stats::{CacheStats, stats};
pub use store::{CubinStore, Lookup, StoreStats};

/// Whether the cubin cache is on when [`CACHE_ENV`] is unset (see the module docs for the
/// measurements behind the choice).
pub const ENABLED_BY_DEFAULT: bool = true;

/// How the cache's cubins are made, part of every key: a cubin made another way (say, by the
/// plain linker of earlier versions) is never loaded for this one. v1 capped every kernel at
/// the JIT's registers; v2 may raise a spilling kernel's cap while its occupancy is kept (see
/// the module docs), and remembers on disk a module it cannot make a cubin for; v3 first
/// keeps the linker's own cubin, made while the JIT compiles, when it is no worse than the
/// JIT's code.
pub const RECIPE: &str = "judged-link-v3";

/// `CUPRUM_CUBIN_DUMP=<dir>` writes every cubin the cache makes or reads into `<dir>`.
pub const CUBIN_DUMP_ENV: &str = "CUPRUM_CUBIN_DUMP";

/// One option of the driver's linker (a `CUjit_option`), for [`ModuleRoute::Link`]: tools
/// that compare how the driver compiles a module use them; the cache itself uses
/// `MaxRegisters` with `OverrideDirectiveValues`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LinkOption {
    /// `CU_JIT_OPTIMIZATION_LEVEL` (0 to 4; 4, the default, is the highest).
    OptimizationLevel(u32),
    /// `CU_JIT_TARGET_FROM_CUCONTEXT`: compile for the current context's device (the default).
    TargetFromContext,
    /// `CU_JIT_MAX_REGISTERS`: at most this many registers per thread.
    MaxRegisters(u32),
    /// `CU_JIT_MIN_CTA_PER_SM`: compile so that at least this many blocks fit on one SM
    /// (`.minnctapersm`; needs `MaxThreadsPerBlock` too; CUDA 12.4 drivers and newer).
    MinBlocksPerSm(u32),
    /// `CU_JIT_MAX_THREADS_PER_BLOCK`: the largest block the kernel is compiled for
    /// (`.maxntid`; CUDA 12.4 drivers and newer).
    MaxThreadsPerBlock(u32),
    /// `CU_JIT_OVERRIDE_DIRECTIVE_VALUES`: the options above win over the PTX's `.maxntid`,
    /// `.minnctapersm` and `.maxnreg` (CUDA 12.4 drivers and newer).
    OverrideDirectiveValues,
    /// `CU_JIT_LTO` (documented as only valid for LTO-IR, not PTX).
    Lto,
    /// `CU_JIT_POSITION_INDEPENDENT_CODE` (documented as ignored by current drivers).
    PositionIndependentCode(bool),
    /// `CU_JIT_GENERATE_LINE_INFO`.
    GenerateLineInfo,
}

/// How [`LoadedModule::load_routed`](crate::LoadedModule::load_routed) has the CUDA driver
/// compile a module, for tools that compare the routes (the emulator ignores it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ModuleRoute {
    /// What [`LoadedModule::load`](crate::LoadedModule::load) does: through the cache when it
    /// is on, else the JIT.
    Default,
    /// `cuModuleLoadDataEx` of the module's PTX: the driver's JIT, whole-program compilation.
    Jit,
    /// The driver's linker on the module's PTX as one input, with `link` given to
    /// `cuLinkCreate` and `input` to `cuLinkAddData`.
    Link {
        /// Options of the whole link (`cuLinkCreate`).
        link: Vec<LinkOption>,
        /// Options of the one PTX input (`cuLinkAddData`).
        input: Vec<LinkOption>,
    },
    /// What a cache miss makes: the JIT first, then the linker with one input per kernel, each
    /// capped at the registers the JIT gave it (a kernel that spills there at the lowest higher
    /// cap that keeps its occupancy and does not spill); an error when the cache would keep no
    /// cubin.
    LinkCapped,
}

/// Where the disk cache lives; overrides the default folder.
pub const CACHE_DIR_ENV: &str = "CUPRUM_CACHE_DIR";

/// `CUPRUM_CACHE=on` (or `1`, `true`, `yes`) turns the cubin cache on, `off` (or `0`,
/// `false`, `no`) off; unset or anything else leaves [`ENABLED_BY_DEFAULT`]. Off means no
/// disk, no memory, the driver compiles PTX at every load.
pub const CACHE_ENV: &str = "CUPRUM_CACHE";

/// `CUPRUM_CACHE_STATS=1` prints one line per module load (hit or miss, time) on stderr.
pub const CACHE_STATS_ENV: &str = "CUPRUM_CACHE_STATS";

/// Whether [`CACHE_STATS_ENV`] asks for the per-load lines (read once per process).
pub fn stats_enabled() -> bool {
    static ENABLED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ENABLED.get_or_init(|| {
        std::env::var_os(CACHE_STATS_ENV)
            .is_some_and(|v| !v.is_empty() && v != "0" && v != "off" && v != "false")
    })
}

/// What identifies one compiled module: the PTX text's hash, the device architecture and the
/// driver. Two keys are equal exactly when a cubin made for one may be loaded for the other.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CacheKey {
    kind: EntryKind,
    ptx_hash: [u8; 32],
    ptx_len: usize,
    target: String,
    compute_capability: (u32, u32),
    driver_version: u32,
}

impl CacheKey {
    /// The key of `ptx` (written for `target`, e.g. `"sm_90"`) compiled for a device of
    /// `compute_capability` by a driver of `driver_version` (`cuDriverGetVersion`, e.g. 12080).
    pub fn for_ptx(
        ptx: &str,
        target: &str,
        compute_capability: (u32, u32),
        driver_version: u32,
    ) -> Self {
        Self {
            kind: EntryKind::Cubin,
            ptx_hash: entry::content_hash(ptx.as_bytes()),
            ptx_len: ptx.len(),
            target: target.to_owned(),
            compute_capability,
            driver_version,
        }
    }

    /// The key of the entry that records that no cubin can be made for this key's module
    /// (payload: the reason, as text): a miss of a module found not cacheable before goes
    /// straight to the JIT. Same PTX, device, driver and recipe; another file.
    pub fn not_cacheable(&self) -> Self {
        Self {
            kind: EntryKind::NotCacheable,
            ..self.clone()
        }
    }

    /// The key as text, stored in the entry and compared in full on every lookup, e.g.
    /// `cubin ptx=5f0c…/2411 target=sm_90 cc=9.0 driver=12080 ptr=64 recipe=judged-link-v3`
    /// (`not-cacheable ptx=…` for [`not_cacheable`](Self::not_cacheable)).
    pub fn text(&self) -> String {
        let kind = match self.kind {
            EntryKind::Cubin => "cubin",
            EntryKind::NotCacheable => "not-cacheable",
        };
        format!(
            "{kind} ptx={}/{} target={} cc={}.{} driver={} ptr={} recipe={RECIPE}",
            hex(&self.ptx_hash),
            self.ptx_len,
            self.target,
            self.compute_capability.0,
            self.compute_capability.1,
            self.driver_version,
            usize::BITS
        )
    }

    /// The entry's file name: the first 128 bits of the hash of [`text`](Self::text), in
    /// hex, then `.cubin`.
    pub fn file_name(&self) -> String {
        format!(
            "{}.cubin",
            hex(&entry::content_hash(self.text().as_bytes())[..16])
        )
    }

    /// The driver version this key was made for.
    pub fn driver_version(&self) -> u32 {
        self.driver_version
    }
}

/// What an entry holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum EntryKind {
    /// The cubin of the module.
    Cubin,
    /// The verdict that no cubin as good as the JIT's code can be made for the module (the
    /// payload says why), so that later processes load it through the JIT without trying.
    NotCacheable,
}

/// Lowercase hex of `bytes`.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The platform's default cache folder for cuprum, ignoring cuprum's own environment
/// overrides: the platform's cache folder (`dirs::cache_dir`: `$XDG_CACHE_HOME` when absolute,
/// else `~/.cache` on Linux, `~/Library/Caches` on macOS, `%LOCALAPPDATA%` on Windows), then
/// `cuprum`. `None` when there is no home folder to put it in.
pub fn default_dir() -> Option<PathBuf> {
    dirs::cache_dir().map(|p| p.join("cuprum"))
}

/// Where the disk cache is, as this process's environment says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CacheLocation {
    /// Set by [`CACHE_DIR_ENV`].
    FromEnv(PathBuf),
    /// The platform default ([`default_dir`]).
    Default(PathBuf),
    /// Off: `CUPRUM_CACHE` says so, or is unset while [`ENABLED_BY_DEFAULT`] is false (no
    /// compile cache at all).
    Disabled,
    /// No folder could be determined (no home folder and no `CUPRUM_CACHE_DIR`).
    Unknown,
}

impl CacheLocation {
    /// The folder, if there is one.
    pub fn dir(&self) -> Option<&std::path::Path> {
        match self {
            Self::FromEnv(p) | Self::Default(p) => Some(p),
            Self::Disabled | Self::Unknown => None,
        }
    }
}

/// Whether a [`CACHE_ENV`] value (`None`: unset) turns the cubin cache on.
fn switched_on(value: Option<&std::ffi::OsStr>) -> bool {
    let Some(value) = value else {
        return ENABLED_BY_DEFAULT;
    };
    match value.to_string_lossy().trim().to_ascii_lowercase().as_str() {
        "on" | "1" | "true" | "yes" => true,
        "off" | "0" | "false" | "no" => false,
        _ => ENABLED_BY_DEFAULT,
    }
}

/// Reads [`CACHE_ENV`] and [`CACHE_DIR_ENV`] now (the runtime itself reads them once, at its
/// first module load on a GPU).
pub fn location() -> CacheLocation {
    if !switched_on(std::env::var_os(CACHE_ENV).as_deref()) {
        return CacheLocation::Disabled;
    }
    match std::env::var_os(CACHE_DIR_ENV) {
        Some(dir) if !dir.is_empty() => {
            let dir = PathBuf::from(dir);
            // A relative folder is taken from the current folder at the time of reading.
            match std::env::current_dir() {
                Ok(cwd) if dir.is_relative() => CacheLocation::FromEnv(cwd.join(dir)),
                _ => CacheLocation::FromEnv(dir),
            }
        }
        _ => default_dir().map_or(CacheLocation::Unknown, CacheLocation::Default),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_switch_reads_on_off_and_falls_back_to_the_default() {
        use std::ffi::OsStr;
        for on in ["on", "1", "TRUE", " yes "] {
            assert!(switched_on(Some(OsStr::new(on))), "{on}");
        }
        for off in ["off", "0", "False", "no"] {
            assert!(!switched_on(Some(OsStr::new(off))), "{off}");
        }
        assert_eq!(switched_on(None), ENABLED_BY_DEFAULT);
        assert_eq!(switched_on(Some(OsStr::new("maybe"))), ENABLED_BY_DEFAULT);
    }

    #[test]
    fn keys_name_the_recipe() {
        // A cubin made another way (the plain linker of earlier versions) never matches.
        let key = CacheKey::for_ptx("ptx", "sm_90", (9, 0), 12080);
        assert!(key.text().ends_with(&format!("recipe={RECIPE}")));
    }

    #[test]
    fn keys_differ_in_every_part() {
        let base = CacheKey::for_ptx("ptx", "sm_90", (9, 0), 12080);
        let variants = [
            CacheKey::for_ptx("ptx ", "sm_90", (9, 0), 12080),
            CacheKey::for_ptx("ptx", "sm_80", (9, 0), 12080),
            CacheKey::for_ptx("ptx", "sm_90", (9, 1), 12080),
            CacheKey::for_ptx("ptx", "sm_90", (8, 0), 12080),
            CacheKey::for_ptx("ptx", "sm_90", (9, 0), 12090),
        ];
        for v in &variants {
            assert_ne!(v.text(), base.text());
            assert_ne!(v.file_name(), base.file_name());
        }
        assert_eq!(base, CacheKey::for_ptx("ptx", "sm_90", (9, 0), 12080));
        let marker = base.not_cacheable();
        assert_ne!(marker.text(), base.text());
        assert_ne!(marker.file_name(), base.file_name());
        assert!(marker.text().starts_with("not-cacheable ptx="));
        assert_eq!(
            marker.text().strip_prefix("not-cacheable"),
            base.text().strip_prefix("cubin")
        );
        assert!(base.file_name().ends_with(".cubin"));
        assert!(base.text().contains("driver=12080") && base.text().contains("cc=9.0"));
    }
}
