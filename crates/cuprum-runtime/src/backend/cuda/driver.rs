//! Loading the driver library without trusting it: `cudarc` panics when `libcuda` or one of
//! its symbols is missing, so before the first call into it this module loads the library
//! itself, with the same names in the same order as `cudarc` does, and checks every symbol the
//! runtime uses; a missing library or symbol is [`Error::NoDriver`]. Optional symbols
//! (stream-ordered allocation, event timing) are recorded for the device to use only when
//! present. The probe also records what `diagnostics` reports (the library's name, file and
//! `cuDriverGetVersion`), calling nothing through cudarc to learn it. Also: listing the
//! devices and querying one device's limits.

use std::ffi::c_void;
use std::sync::OnceLock;

use cudarc::driver::result;
use cudarc::driver::sys;

use super::fail::{CuFail, driver_error};
use crate::error::Error;
use crate::limits::DeviceLimits;
/// Symbols the runtime calls; a driver without any of them is treated as no driver.
const REQUIRED_SYMBOLS: &[&str] = &[
    "cuInit",
    "cuDriverGetVersion",
    "cuGetErrorName",
    "cuGetErrorString",
    "cuDeviceGetCount",
    "cuDeviceGet",
    "cuDeviceGetAttribute",
    "cuDeviceGetName",
    "cuDeviceTotalMem_v2",
    "cuDevicePrimaryCtxRetain",
    "cuDevicePrimaryCtxRelease_v2",
    "cuCtxGetCurrent",
    "cuCtxSetCurrent",
    "cuCtxSynchronize",
    "cuStreamCreate",
    "cuStreamCreateWithPriority",
    "cuCtxGetStreamPriorityRange",
    "cuStreamSynchronize",
    "cuStreamDestroy_v2",
    "cuEventCreate",
    "cuEventRecord",
    "cuEventSynchronize",
    "cuEventQuery",
    "cuEventDestroy_v2",
    "cuStreamWaitEvent",
    "cuStreamGetCtx",
    "cuStreamGetFlags",
    "cuPointerGetAttribute",
    "cuStreamBeginCapture_v2",
    "cuStreamEndCapture",
    "cuGraphInstantiateWithFlags",
    "cuGraphExecUpdate_v2",
    "cuGraphLaunch",
    "cuGraphDestroy",
    "cuGraphExecDestroy",
    "cuMemAlloc_v2",
    "cuMemFree_v2",
    "cuMemHostAlloc",
    "cuMemFreeHost",
    "cuMemcpyHtoDAsync_v2",
    "cuMemcpyDtoHAsync_v2",
    "cuMemcpyDtoDAsync_v2",
    "cuMemsetD8Async",
    "cuLinkCreate_v2",
    "cuLinkAddData_v2",
    "cuLinkComplete",
    "cuLinkDestroy",
    "cuModuleLoadDataEx",
    "cuModuleGetFunction",
    "cuModuleUnload",
    "cuLaunchKernel",
    "cuFuncSetAttribute",
    "cuFuncGetAttribute",
];

/// What the probe learned about the driver library, whether or not it is usable; what
/// `cuprum_runtime::diagnostics` reports.
#[derive(Clone, Debug)]
pub(crate) struct DriverFacts {
    /// The name the library was loaded by (`libcuda.so.1`).
    pub(crate) library: String,
    /// The file it was loaded from, where the platform tells (Linux: `/proc/self/maps`).
    pub(crate) path: Option<std::path::PathBuf>,
    /// `cuDriverGetVersion`: the newest CUDA version the driver supports, `1000 * major +
    /// 10 * minor` (12080 for CUDA 12.8). `None` when the symbol is missing or the call fails.
    pub(crate) version: Option<u32>,
    /// Entries of [`REQUIRED_SYMBOLS`] the library lacks.
    pub(crate) missing: Vec<&'static str>,
}

/// What the probe found: the library (kept loaded), its facts and which optional symbols
/// exist.
pub(super) struct Probe {
    pub(super) _library: libloading::Library,
    pub(super) facts: DriverFacts,
    pub(super) stream_ordered_alloc: bool,
    pub(super) event_timing: bool,
    /// `cuTensorMapEncodeTiled` (CUDA 12.0 drivers and later).
    pub(super) tensor_maps: bool,
}

fn probe_library() -> Result<Probe, String> {
    // The same candidates, in the same order, as cudarc's `culib()`, so that we vet the very
    // library it will load.
    let candidates: Vec<String> = ["cuda", "nvcuda"]
        .iter()
        .flat_map(|name| cudarc::get_lib_name_candidates(name))
        .collect();
    let mut library = None;
    let mut first_error = None;
    for name in &candidates {
        // SAFETY: loading the system's CUDA driver library runs its initializers, as loading
        // it through cudarc would.
        match unsafe { libloading::Library::new(name) } {
            Ok(lib) => {
                library = Some((name.clone(), lib));
                break;
            }
            Err(e) => {
                first_error.get_or_insert(e.to_string());
            }
        }
    }
    let Some((name, library)) = library else {
        return Err(format!(
            "could not load libcuda.so, libcuda.so.1 or {} other candidate names; {}",
            candidates.len().saturating_sub(2),
            first_error.unwrap_or_default()
        ));
    };
    let has = |symbol: &str| {
        // SAFETY: only the symbol's presence is checked; it is never called through this
        // pointer.
        unsafe { library.get::<*const c_void>(symbol.as_bytes()).is_ok() }
    };
    let missing: Vec<&'static str> = REQUIRED_SYMBOLS
        .iter()
        .copied()
        .filter(|s| !has(s))
        .collect();
    let facts = DriverFacts {
        path: loaded_library_path(&name),
        version: driver_version_of(&library),
        library: name,
        missing,
    };
    Ok(Probe {
        stream_ordered_alloc: has("cuMemAllocAsync") && has("cuMemFreeAsync"),
        event_timing: has("cuEventElapsedTime"),
        tensor_maps: has("cuTensorMapEncodeTiled"),
        facts,
        _library: library,
    })
}

/// Calls `cuDriverGetVersion` through `library` itself (not through cudarc, which would panic
/// were the symbol missing). It needs no `cuInit`.
fn driver_version_of(library: &libloading::Library) -> Option<u32> {
    type GetVersion = unsafe extern "C" fn(*mut std::ffi::c_int) -> sys::CUresult;
    // SAFETY: `cuDriverGetVersion` has this signature in every CUDA driver.
    let get = unsafe { library.get::<GetVersion>(b"cuDriverGetVersion") }.ok()?;
    let mut version: std::ffi::c_int = 0;
    // SAFETY: the function writes one int through the pointer, which is valid.
    let status = unsafe { get(&mut version) };
    if status != sys::CUresult::CUDA_SUCCESS {
        return None;
    }
    u32::try_from(version).ok()
}

/// The file a loaded library came from: the first mapping in `/proc/self/maps` whose file name
/// starts like `name` up to its `.so` (so `libcuda.so.1` finds `libcuda.so.565.57.01`).
fn loaded_library_path(name: &str) -> Option<std::path::PathBuf> {
    let stem = match name.find(".so") {
        Some(at) => &name[..at + 3],
        None => name,
    };
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    maps.lines()
        .filter_map(|line| line.split_whitespace().nth(5))
        .find(|path| {
            std::path::Path::new(path)
                .file_name()
                .and_then(|f| f.to_str())
                .is_some_and(|f| f.starts_with(stem))
        })
        .map(std::path::PathBuf::from)
}

fn probe_result() -> &'static Result<Probe, String> {
    static PROBE: OnceLock<Result<Probe, String>> = OnceLock::new();
    PROBE.get_or_init(probe_library)
}

pub(super) fn probe() -> Result<&'static Probe, Error> {
    match probe_result() {
        Err(detail) => Err(Error::NoDriver {
            detail: detail.clone(),
        }),
        Ok(probe) if !probe.facts.missing.is_empty() => Err(Error::NoDriver {
            detail: format!(
                "{} lacks {} (driver too old?)",
                probe.facts.library,
                probe.facts.missing.join(", ")
            ),
        }),
        Ok(probe) => Ok(probe),
    }
}

/// The driver library's facts, or why no library could be loaded. Never calls into cudarc.
pub(crate) fn driver_facts() -> Result<DriverFacts, String> {
    probe_result()
        .as_ref()
        .map(|p| p.facts.clone())
        .map_err(Clone::clone)
}

/// Why no GPU could be listed by [`list_devices`].
#[derive(Clone, Debug)]
pub(crate) enum ListFailure {
    /// No usable driver library (see [`driver_facts`] for why).
    NoDriver,
    /// The driver works but sees no device (or is the toolkit's stub library).
    NoDevice(String),
    /// The driver failed to initialize or to answer.
    Failed(String),
}

/// Every device the driver sees, with its limits (initializing the driver).
pub(crate) fn list_devices() -> Result<Vec<DeviceLimits>, ListFailure> {
    if probe().is_err() {
        return Err(ListFailure::NoDriver);
    }
    if let Err(err) = result::init() {
        let fail = CuFail {
            call: "cuInit",
            err,
        };
        return Err(match err.0 {
            sys::CUresult::CUDA_ERROR_NO_DEVICE | sys::CUresult::CUDA_ERROR_STUB_LIBRARY => {
                ListFailure::NoDevice(fail.describe())
            }
            _ => ListFailure::Failed(fail.describe()),
        });
    }
    let count = result::device::get_count().map_err(|err| {
        ListFailure::Failed(
            CuFail {
                call: "cuDeviceGetCount",
                err,
            }
            .describe(),
        )
    })?;
    let mut devices = Vec::new();
    for ordinal in 0..count.max(0) {
        let device = result::device::get(ordinal).map_err(|err| {
            ListFailure::Failed(
                CuFail {
                    call: "cuDeviceGet",
                    err,
                }
                .describe(),
            )
        })?;
        devices.push(query_limits(device).map_err(|e| ListFailure::Failed(e.to_string()))?);
    }
    Ok(devices)
}

pub(super) fn query_limits(device: sys::CUdevice) -> Result<DeviceLimits, Error> {
    use sys::CUdevice_attribute as A;
    let attr = |a: A| -> Result<u32, Error> {
        // SAFETY: `device` came from cuDeviceGet.
        let v = unsafe { result::device::get_attribute(device, a) }
            .map_err(driver_error("cuDeviceGetAttribute"))?;
        Ok(u32::try_from(v).unwrap_or(0))
    };
    // Attributes only the compile cache's occupancy arithmetic reads: 0 when the driver does
    // not answer, which makes the cache compare registers instead of occupancy.
    let optional = |a: A| -> u32 {
        // SAFETY: `device` came from cuDeviceGet.
        unsafe { result::device::get_attribute(device, a) }
            .ok()
            .and_then(|v| u32::try_from(v).ok())
            .unwrap_or(0)
    };
    let name = result::device::get_name(device).map_err(driver_error("cuDeviceGetName"))?;
    // SAFETY: `device` came from cuDeviceGet.
    let total =
        unsafe { result::device::total_mem(device) }.map_err(driver_error("cuDeviceTotalMem"))?;
    Ok(DeviceLimits {
        name,
        compute_capability: (
            attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
            attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
        ),
        max_threads_per_block: attr(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
        max_block_dim: [
            attr(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)?,
            attr(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y)?,
            attr(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)?,
        ],
        max_grid_dim: [
            attr(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)?,
            attr(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)?,
            attr(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)?,
        ],
        max_shared_per_block: attr(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)?,
        max_shared_per_block_optin: attr(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?,
        multiprocessor_count: attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
        warp_size: attr(A::CU_DEVICE_ATTRIBUTE_WARP_SIZE)?,
        total_memory: total as u64,
        registers_per_sm: optional(A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR),
        registers_per_block: optional(A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK),
        max_threads_per_sm: optional(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR),
        max_blocks_per_sm: optional(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR),
    })
}
