//! The CUDA backend: the driver API through `cudarc` (loaded at run time, so nothing CUDA is
//! needed to build).
//!
//! `cudarc` panics when `libcuda` or one of its symbols is missing, so before the first call
//! into it this module loads the driver library itself, with the same names in the same order
//! as `cudarc` does, and checks every symbol the runtime uses; a missing library or symbol is
//! [`Error::NoDriver`]. Optional symbols (stream-ordered allocation, event timing) are only
//! called when present. The probe also records what `diagnostics` reports (the library's
//! name, file and `cuDriverGetVersion`), calling nothing through cudarc to learn it.
//!
//! Modules are compiled from PTX by the driver's JIT (`load_module`, `cuModuleLoadDataEx`),
//! which compiles the whole program, or by the driver's linker (`link_ptx`, `cuLink*`, PTX in,
//! cubin out) when the compile cache (`cache`) needs a cubin to keep. The linker treats every
//! input as relocatable code (`-rdc=true`, `ptxas -c`), which can cost registers and so
//! occupancy; `cache::load` says how the cache compensates.
//!
//! Ordering rules the rest of the runtime relies on:
//! * Every context is a device's *primary* context, made current on the calling thread before
//!   each driver call (`bind`), so any thread may use any handle.
//! * Allocation, freeing and zero-filling run on the *legacy default stream*, which is ordered
//!   with every blocking stream of the context (all our streams are blocking). So a buffer is
//!   never freed while a kernel or copy on any stream might still use it, and a new buffer is
//!   ready for any stream, without per-buffer events.
//! * Host-to-device and device-to-host copies synchronize their stream before returning, so
//!   host slices never need to outlive the call.
//! * Work on two non-default streams that shares a buffer is ordered by that buffer's marks
//!   (`record_order_mark`, `stream_wait`; see `ordering.rs`).
//!
//! This module returns raw driver failures ([`CuFail`]); `context.rs` turns them into
//! [`Error`]s, naming the kernel that ran last on the stream when the failure is a fault.

use std::ffi::{CString, c_void};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::driver::result::{self, DriverError};
use cudarc::driver::sys;

use crate::cache::LinkOption;
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
    "cuStreamSynchronize",
    "cuStreamDestroy_v2",
    "cuEventCreate",
    "cuEventRecord",
    "cuEventSynchronize",
    "cuEventDestroy_v2",
    "cuStreamWaitEvent",
    "cuMemAlloc_v2",
    "cuMemFree_v2",
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
struct Probe {
    _library: libloading::Library,
    facts: DriverFacts,
    stream_ordered_alloc: bool,
    event_timing: bool,
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

fn probe() -> Result<&'static Probe, Error> {
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

/// A failed driver call, before it becomes an [`Error`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct CuFail {
    pub(crate) call: &'static str,
    pub(crate) err: DriverError,
}

fn fail(call: &'static str) -> impl FnOnce(DriverError) -> CuFail {
    move |err| CuFail { call, err }
}

impl CuFail {
    fn code_and_message(&self) -> (String, String) {
        let code = self
            .err
            .error_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|_| format!("{:?}", self.err.0));
        let message = self
            .err
            .error_string()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|_| "(no description from the driver)".to_owned());
        (code, message)
    }

    /// Whether the error is one the GPU reports after a kernel went wrong; it is sticky: the
    /// context cannot be used afterwards.
    pub(crate) fn is_fault(&self) -> bool {
        use sys::CUresult as R;
        matches!(
            self.err.0,
            R::CUDA_ERROR_ILLEGAL_ADDRESS
                | R::CUDA_ERROR_LAUNCH_TIMEOUT
                | R::CUDA_ERROR_HARDWARE_STACK_ERROR
                | R::CUDA_ERROR_ILLEGAL_INSTRUCTION
                | R::CUDA_ERROR_MISALIGNED_ADDRESS
                | R::CUDA_ERROR_INVALID_ADDRESS_SPACE
                | R::CUDA_ERROR_INVALID_PC
                | R::CUDA_ERROR_LAUNCH_FAILED
                | R::CUDA_ERROR_ASSERT
                | R::CUDA_ERROR_ECC_UNCORRECTABLE
        )
    }

    pub(crate) fn is_out_of_memory(&self) -> bool {
        self.err.0 == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY
    }

    /// Whether the driver refused a launch because of its configuration.
    pub(crate) fn is_bad_launch_config(&self) -> bool {
        use sys::CUresult as R;
        matches!(
            self.err.0,
            R::CUDA_ERROR_INVALID_VALUE | R::CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
        )
    }

    /// The driver's description, e.g. `CUDA_ERROR_INVALID_VALUE: invalid argument`.
    pub(crate) fn describe(&self) -> String {
        let (code, message) = self.code_and_message();
        format!("{code}: {message} (from {})", self.call)
    }

    /// The error for the user; `last_kernel` is named when this is a kernel fault.
    pub(crate) fn into_error(self, last_kernel: Option<&str>) -> Error {
        let (code, message) = self.code_and_message();
        if self.is_fault() {
            Error::KernelFault {
                kernel: last_kernel
                    .unwrap_or("<unknown: no kernel launched yet>")
                    .to_owned(),
                detail: format!(
                    "{code}: {message} (reported by {}). A device-side check failed (a bounds \
                     check, an assertion, an integer division by zero or with overflow) or the \
                     kernel accessed invalid memory. The CUDA context is now unusable: every \
                     later GPU call in this process fails; restart the process. Running the \
                     same code with CUPRUM_DEVICE=emu names the check, its expression and line, \
                     the block and the thread.",
                    self.call
                ),
            }
        } else {
            Error::Driver {
                call: self.call,
                code,
                message,
            }
        }
    }
}

/// A device's primary context, retained for as long as this value lives.
pub(crate) struct CudaDevice {
    device: sys::CUdevice,
    ctx: sys::CUcontext,
    stream_ordered_alloc: bool,
    event_timing: bool,
    /// `cuDriverGetVersion` (0 if the driver would not say), part of every compile-cache key.
    driver_version: u32,
    /// Events of finished-with order marks, reused (creating and destroying one per launch
    /// would cost more than recording it).
    marks: Arc<MarkPool>,
}

// SAFETY: CUDA driver handles may be used from any thread; every call first makes the context
// current on the calling thread.
unsafe impl Send for CudaDevice {}
// SAFETY: as above; the driver API is thread-safe.
unsafe impl Sync for CudaDevice {}

fn driver_error(call: &'static str) -> impl FnOnce(DriverError) -> Error {
    move |err| CuFail { call, err }.into_error(None)
}

impl CudaDevice {
    /// Loads the driver (checking it first), initializes it and retains the primary context
    /// of device `ordinal`; returns the device and its limits.
    pub(crate) fn open(ordinal: usize) -> Result<(Self, DeviceLimits), Error> {
        let probe = probe()?;
        if let Err(err) = result::init() {
            let fail = CuFail {
                call: "cuInit",
                err,
            };
            return Err(if err.0 == sys::CUresult::CUDA_ERROR_NO_DEVICE {
                Error::NoDevice { ordinal, count: 0 }
            } else {
                Error::NoDriver {
                    detail: fail.describe(),
                }
            });
        }
        let count = result::device::get_count().map_err(driver_error("cuDeviceGetCount"))?;
        let count = usize::try_from(count).unwrap_or(0);
        if ordinal >= count {
            return Err(Error::NoDevice { ordinal, count });
        }
        let device = result::device::get(ordinal as i32).map_err(driver_error("cuDeviceGet"))?;
        let limits = query_limits(device)?;
        // SAFETY: `device` came from cuDeviceGet.
        let pools = unsafe {
            result::device::get_attribute(
                device,
                sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED,
            )
        }
        .unwrap_or(0);
        // SAFETY: `device` came from cuDeviceGet; released in Drop.
        let ctx = unsafe { result::primary_ctx::retain(device) }
            .map_err(driver_error("cuDevicePrimaryCtxRetain"))?;
        let this = Self {
            device,
            ctx,
            stream_ordered_alloc: probe.stream_ordered_alloc && pools != 0,
            event_timing: probe.event_timing,
            driver_version: probe.facts.version.unwrap_or(0),
            marks: Arc::new(MarkPool {
                ctx,
                free: Mutex::new(Vec::new()),
                closed: std::sync::atomic::AtomicBool::new(false),
            }),
        };
        this.bind().map_err(|f| f.into_error(None))?;
        Ok((this, limits))
    }

    /// The driver's CUDA version (`cuDriverGetVersion`, e.g. 12080), 0 if unknown.
    pub(crate) fn driver_version(&self) -> u32 {
        self.driver_version
    }

    /// Makes this context current on the calling thread.
    fn bind(&self) -> Result<(), CuFail> {
        bind(self.ctx)
    }

    pub(crate) fn default_stream(&self) -> CudaStream {
        CudaStream {
            raw: std::ptr::null_mut(),
            owned: false,
            ctx: self.ctx,
        }
    }

    pub(crate) fn new_stream(&self) -> Result<CudaStream, CuFail> {
        self.bind()?;
        let raw = result::stream::create(result::stream::StreamKind::Default)
            .map_err(fail("cuStreamCreate"))?;
        Ok(CudaStream {
            raw,
            owned: true,
            ctx: self.ctx,
        })
    }

    pub(crate) fn synchronize(&self) -> Result<(), CuFail> {
        self.bind()?;
        result::ctx::synchronize().map_err(fail("cuCtxSynchronize"))
    }

    pub(crate) fn stream_synchronize(&self, stream: &CudaStream) -> Result<(), CuFail> {
        self.bind()?;
        // SAFETY: the stream is alive (owned by a live StreamInner) or the legacy stream.
        unsafe { result::stream::synchronize(stream.raw) }.map_err(fail("cuStreamSynchronize"))
    }

    pub(crate) fn record_event(&self, stream: &CudaStream) -> Result<CudaEvent, CuFail> {
        self.bind()?;
        let raw = result::event::create(sys::CUevent_flags::CU_EVENT_DEFAULT)
            .map_err(fail("cuEventCreate"))?;
        let event = CudaEvent { raw };
        // SAFETY: both handles are alive.
        unsafe { result::event::record(event.raw, stream.raw) }.map_err(fail("cuEventRecord"))?;
        Ok(event)
    }

    /// Records a point of `stream` that other streams can wait for ([`stream_wait`]): an
    /// event without timing, the cheap kind, taken from the device's pool (back there when the
    /// last holder drops the mark).
    ///
    /// [`stream_wait`]: Self::stream_wait
    pub(crate) fn record_order_mark(&self, stream: &CudaStream) -> Result<OrderMark, CuFail> {
        self.bind()?;
        let reused = self.marks.lock().pop();
        let raw = match reused {
            Some(e) => e.0,
            None => result::event::create(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING)
                .map_err(fail("cuEventCreate"))?,
        };
        let mark = OrderMark {
            raw,
            pool: self.marks.clone(),
        };
        // SAFETY: both handles are alive; re-recording a reused event is allowed (a stream
        // that waited on its earlier recording captured that one when it called).
        unsafe { result::event::record(mark.raw, stream.raw) }.map_err(fail("cuEventRecord"))?;
        Ok(mark)
    }

    /// Makes all work submitted to `stream` from now on wait until `mark` has completed (on
    /// the device; the host does not wait).
    pub(crate) fn stream_wait(&self, stream: &CudaStream, mark: &OrderMark) -> Result<(), CuFail> {
        self.bind()?;
        // SAFETY: both handles are alive.
        unsafe {
            result::stream::wait_event(
                stream.raw,
                mark.raw,
                sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT,
            )
        }
        .map_err(fail("cuStreamWaitEvent"))
    }

    pub(crate) fn event_synchronize(&self, event: &CudaEvent) -> Result<(), CuFail> {
        self.bind()?;
        // SAFETY: the event is alive.
        unsafe { result::event::synchronize(event.raw) }.map_err(fail("cuEventSynchronize"))
    }

    pub(crate) fn event_elapsed_ms(&self, a: &CudaEvent, b: &CudaEvent) -> Result<f32, CuFail> {
        if !self.event_timing {
            return Err(CuFail {
                call: "cuEventElapsedTime",
                err: DriverError(sys::CUresult::CUDA_ERROR_NOT_SUPPORTED),
            });
        }
        self.bind()?;
        // SAFETY: both events are alive and were created with timing enabled.
        unsafe { result::event::elapsed(a.raw, b.raw) }.map_err(fail("cuEventElapsedTime"))
    }

    pub(crate) fn destroy_event(&self, event: &CudaEvent) {
        if self.bind().is_ok() {
            // SAFETY: called once, from the owning Event's Drop.
            let _ = unsafe { result::event::destroy(event.raw) };
        }
    }

    /// Allocates `bytes` (> 0), ordered on the legacy default stream when the device supports
    /// stream-ordered allocation.
    pub(crate) fn alloc(&self, bytes: usize) -> Result<u64, CuFail> {
        self.bind()?;
        // SAFETY: plain allocation calls; the legacy stream handle (null) is always valid.
        unsafe {
            if self.stream_ordered_alloc {
                result::malloc_async(std::ptr::null_mut(), bytes).map_err(fail("cuMemAllocAsync"))
            } else {
                result::malloc_sync(bytes).map_err(fail("cuMemAlloc"))
            }
        }
    }

    /// Frees an allocation made by [`alloc`](Self::alloc). Errors are ignored (this runs in
    /// `Drop`; after a fault the context is unusable anyway).
    pub(crate) fn free(&self, ptr: u64) {
        if self.bind().is_err() {
            return;
        }
        // SAFETY: `ptr` came from `alloc` and is freed once; the legacy stream orders the
        // free after all earlier work on every (blocking) stream.
        unsafe {
            let _ = if self.stream_ordered_alloc {
                result::free_async(ptr, std::ptr::null_mut())
            } else {
                result::free_sync(ptr)
            };
        }
    }

    /// Fills `bytes` at `ptr` with zero, on the legacy default stream.
    pub(crate) fn zero(&self, ptr: u64, bytes: usize) -> Result<(), CuFail> {
        self.bind()?;
        // SAFETY: `ptr..ptr+bytes` is a live allocation.
        unsafe { result::memset_d8_async(ptr, 0, bytes, std::ptr::null_mut()) }
            .map_err(fail("cuMemsetD8Async"))
    }

    /// Copies host bytes to the device and waits for the copy.
    ///
    /// # Safety
    /// `dst..dst+src.len()` must be a live device allocation of this context.
    pub(crate) unsafe fn copy_htod(
        &self,
        dst: u64,
        src: &[u8],
        stream: &CudaStream,
    ) -> Result<(), CuFail> {
        self.bind()?;
        // SAFETY: caller's contract; `src` outlives the call, which waits for the copy.
        unsafe {
            result::memcpy_htod_async(dst, src, stream.raw).map_err(fail("cuMemcpyHtoDAsync"))?;
            result::stream::synchronize(stream.raw).map_err(fail("cuStreamSynchronize"))
        }
    }

    /// Copies device bytes to the host and waits for the copy.
    ///
    /// # Safety
    /// `src..src+dst.len()` must be a live device allocation of this context.
    pub(crate) unsafe fn copy_dtoh(
        &self,
        dst: &mut [u8],
        src: u64,
        stream: &CudaStream,
    ) -> Result<(), CuFail> {
        self.bind()?;
        // SAFETY: caller's contract; `dst` outlives the call, which waits for the copy.
        unsafe {
            result::memcpy_dtoh_async(dst, src, stream.raw).map_err(fail("cuMemcpyDtoHAsync"))?;
            result::stream::synchronize(stream.raw).map_err(fail("cuStreamSynchronize"))
        }
    }

    /// Copies device bytes to device bytes, ordered on `stream` (asynchronous).
    ///
    /// # Safety
    /// Both ranges must be live device allocations of this context.
    pub(crate) unsafe fn copy_dtod(
        &self,
        dst: u64,
        src: u64,
        bytes: usize,
        stream: &CudaStream,
    ) -> Result<(), CuFail> {
        self.bind()?;
        // SAFETY: caller's contract.
        unsafe { result::memcpy_dtod_async(dst, src, bytes, stream.raw) }
            .map_err(fail("cuMemcpyDtoDAsync"))
    }

    /// JIT-compiles `ptx` and looks up every kernel in `names`. A JIT failure is
    /// [`Error::ModuleLoad`] with the driver's error log.
    pub(crate) fn load_module(&self, ptx: &str, names: &[&str]) -> Result<CudaModule, Error> {
        let image = ptx_image(ptx)?;
        // SAFETY: a NUL-terminated PTX text is a valid module image.
        unsafe { self.load_image(image.as_ptr().cast::<c_void>(), names) }
    }

    /// Loads a cubin the driver made earlier ([`link_ptx`](Self::link_ptx)) and looks up
    /// every kernel in `names`; no PTX compilation happens. A refused image (say, one made by
    /// another driver) is [`Error::ModuleLoad`].
    pub(crate) fn load_cubin(&self, cubin: &[u8], names: &[&str]) -> Result<CudaModule, Error> {
        // ELF images are read with 8-byte alignment in mind: give the driver an aligned copy.
        let mut aligned = vec![0u64; cubin.len().div_ceil(8)];
        bytemuck::cast_slice_mut::<u64, u8>(&mut aligned)[..cubin.len()].copy_from_slice(cubin);
        // SAFETY: the bytes are a cubin the driver wrote (checked against a checksum when it
        // came from the disk cache); the driver validates the ELF image it is given.
        unsafe { self.load_image(aligned.as_ptr().cast::<c_void>(), names) }
    }

    /// `cuModuleLoadDataEx` of `image` (PTX or cubin), with the driver's error log.
    ///
    /// # Safety
    /// `image` must point at a NUL-terminated PTX text or a complete cubin, alive for the call.
    unsafe fn load_image(&self, image: *const c_void, names: &[&str]) -> Result<CudaModule, Error> {
        self.bind().map_err(|f| f.into_error(None))?;
        let mut error_log = vec![0u8; LOG_SIZE];
        let mut options = [
            sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
            sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
        ];
        // The driver reads option values by value; sizes travel in the pointer itself.
        let mut values: [*mut c_void; 2] = [
            error_log.as_mut_ptr().cast::<c_void>(),
            LOG_SIZE as *mut c_void,
        ];
        let mut module: sys::CUmodule = std::ptr::null_mut();
        // SAFETY: the caller vouches for `image`; the options and values arrays have the
        // length given and stay alive for the call; the log buffer has the size announced.
        let loaded = unsafe {
            sys::cuModuleLoadDataEx(
                &mut module,
                image,
                options.len() as u32,
                options.as_mut_ptr(),
                values.as_mut_ptr(),
            )
        }
        .result();
        if let Err(err) = loaded {
            let fail = CuFail {
                call: "cuModuleLoadDataEx",
                err,
            };
            if fail.is_fault() {
                return Err(fail.into_error(None));
            }
            return Err(Error::ModuleLoad {
                message: fail.describe(),
                log: log_text(&error_log),
            });
        }
        let mut cuda_module = CudaModule {
            raw: module,
            ctx: self.ctx,
            functions: Vec::with_capacity(names.len()),
        };
        for name in names {
            let cname = CString::new(*name).map_err(|_| Error::KernelNotFound {
                name: (*name).to_owned(),
            })?;
            // SAFETY: the module is loaded and alive.
            let function =
                unsafe { result::module::get_function(module, cname) }.map_err(|err| {
                    Error::ModuleLoad {
                        message: format!(
                            "kernel `{name}` is missing from the loaded module: {}",
                            CuFail {
                                call: "cuModuleGetFunction",
                                err
                            }
                            .describe()
                        ),
                        log: String::new(),
                    }
                })?;
            cuda_module.functions.push(CudaFunction {
                raw: function,
                dynamic_shared_opt_in: AtomicU32::new(0),
            });
        }
        Ok(cuda_module)
    }

    /// Compiles `inputs` (PTX texts, each with its own options) for this context's device with
    /// the driver's linker (`cuLinkCreate` with `options`, one `cuLinkAddData(CU_JIT_INPUT_PTX)`
    /// per input, `cuLinkComplete`) and returns the cubin, which
    /// [`load_cubin`](Self::load_cubin) loads without compiling again. The linker compiles each
    /// input as relocatable code. A refused PTX or option is [`Error::ModuleLoad`] with the
    /// linker's error log.
    pub(crate) fn link_ptx(
        &self,
        options: &[LinkOption],
        inputs: &[LinkInput<'_>],
    ) -> Result<Vec<u8>, Error> {
        let images = inputs
            .iter()
            .map(|input| ptx_image(input.ptx))
            .collect::<Result<Vec<_>, _>>()?;
        self.bind().map_err(|f| f.into_error(None))?;
        let mut error_log = vec![0u8; LOG_SIZE];
        let (mut keys, mut values) = jit_options(options);
        keys.extend([
            sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
            sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
        ]);
        values.extend([
            error_log.as_mut_ptr().cast::<c_void>(),
            LOG_SIZE as *mut c_void,
        ]);
        let mut state: sys::CUlinkState = std::ptr::null_mut();
        // SAFETY: the options and values arrays have the length given; the log buffer outlives
        // the link state, which is destroyed below before the buffer is dropped.
        unsafe {
            sys::cuLinkCreate_v2(
                keys.len() as u32,
                keys.as_mut_ptr(),
                values.as_mut_ptr(),
                &mut state,
            )
        }
        .result()
        .map_err(|err| link_error("cuLinkCreate", err, &error_log))?;
        let linked = (|| {
            let name = c"cuprum.ptx";
            for (input, image) in inputs.iter().zip(&images) {
                let (mut keys, mut values) = jit_options(input.options);
                // SAFETY: `image` is NUL-terminated PTX of the length given (NUL included);
                // the option arrays have the length given and live for the call; the state is
                // live.
                unsafe {
                    sys::cuLinkAddData_v2(
                        state,
                        sys::CUjitInputType::CU_JIT_INPUT_PTX,
                        image.as_ptr().cast_mut().cast::<c_void>(),
                        image.as_bytes_with_nul().len(),
                        name.as_ptr(),
                        keys.len() as u32,
                        if keys.is_empty() {
                            std::ptr::null_mut()
                        } else {
                            keys.as_mut_ptr()
                        },
                        if values.is_empty() {
                            std::ptr::null_mut()
                        } else {
                            values.as_mut_ptr()
                        },
                    )
                }
                .result()
                .map_err(|err| link_error("cuLinkAddData", err, &error_log))?;
            }
            let mut cubin: *mut c_void = std::ptr::null_mut();
            let mut size = 0usize;
            // SAFETY: the state is live; the driver returns a buffer it owns until
            // cuLinkDestroy, copied out before that.
            unsafe { sys::cuLinkComplete(state, &mut cubin, &mut size) }
                .result()
                .map_err(|err| link_error("cuLinkComplete", err, &error_log))?;
            if cubin.is_null() || size == 0 {
                return Err(Error::ModuleLoad {
                    message: "cuLinkComplete returned an empty image".to_owned(),
                    log: log_text(&error_log),
                });
            }
            // SAFETY: the driver gave `size` readable bytes at `cubin`, alive until the state
            // is destroyed.
            Ok(unsafe { std::slice::from_raw_parts(cubin.cast::<u8>(), size) }.to_vec())
        })();
        // SAFETY: destroyed once; the cubin was copied out.
        let _ = unsafe { sys::cuLinkDestroy(state) };
        linked
    }

    /// What the driver allocated to kernel `index` of `module`: registers per thread
    /// (`CU_FUNC_ATTRIBUTE_NUM_REGS`) and local memory per thread, spills included
    /// (`CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES`); `None` if the driver does not say.
    pub(crate) fn resources(&self, module: &CudaModule, index: usize) -> Option<KernelResources> {
        let function = module.functions.get(index)?;
        self.bind().ok()?;
        let get = |attribute| {
            // SAFETY: the function belongs to a live module of this context.
            let value =
                unsafe { result::function::get_function_attribute(function.raw, attribute) };
            value.ok().and_then(|v| u32::try_from(v).ok())
        };
        use sys::CUfunction_attribute as A;
        Some(KernelResources {
            registers: get(A::CU_FUNC_ATTRIBUTE_NUM_REGS)?,
            local_bytes: get(A::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)?,
        })
    }

    /// Launches `function`.
    ///
    /// # Safety
    /// `params` must point at one correctly sized value per PTX parameter of the function,
    /// alive for the call; the kernel's memory accesses must be valid.
    #[allow(clippy::too_many_arguments)]
    pub(crate) unsafe fn launch(
        &self,
        function: &CudaFunction,
        grid: (u32, u32, u32),
        block: (u32, u32, u32),
        dynamic_shared: u32,
        needs_opt_in: bool,
        stream: &CudaStream,
        params: &mut [*mut c_void],
    ) -> Result<(), CuFail> {
        self.bind()?;
        if needs_opt_in && dynamic_shared > function.dynamic_shared_opt_in.load(Ordering::Relaxed) {
            // SAFETY: the function belongs to a live module of this context.
            unsafe {
                result::function::set_function_attribute(
                    function.raw,
                    sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    dynamic_shared as i32,
                )
            }
            .map_err(fail("cuFuncSetAttribute"))?;
            function
                .dynamic_shared_opt_in
                .fetch_max(dynamic_shared, Ordering::Relaxed);
        }
        // SAFETY: caller's contract.
        unsafe {
            result::launch_kernel(
                function.raw,
                grid,
                block,
                dynamic_shared,
                stream.raw,
                params,
            )
        }
        .map_err(fail("cuLaunchKernel"))
    }
}

impl Drop for CudaDevice {
    fn drop(&mut self) {
        // The pooled events go first, while the context lives (marks still held elsewhere
        // keep the pool, which then destroys nothing more).
        self.marks.destroy_free();
        self.marks.closed.store(true, Ordering::Release);
        // SAFETY: balances the retain in `open`.
        let _ = unsafe { result::primary_ctx::release(self.device) };
    }
}

/// Per-thread resources the driver gave one kernel ([`CudaDevice::resources`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct KernelResources {
    pub(crate) registers: u32,
    pub(crate) local_bytes: u32,
}

/// One PTX input of [`CudaDevice::link_ptx`] and the options it is compiled with.
pub(crate) struct LinkInput<'a> {
    pub(crate) ptx: &'a str,
    pub(crate) options: &'a [LinkOption],
}

/// The driver's option keys and values for `options` (values travel in the pointer itself).
fn jit_options(options: &[LinkOption]) -> (Vec<sys::CUjit_option>, Vec<*mut c_void>) {
    use sys::CUjit_option as O;
    let value = |v: u32| v as usize as *mut c_void;
    options
        .iter()
        .map(|option| match *option {
            LinkOption::OptimizationLevel(level) => (O::CU_JIT_OPTIMIZATION_LEVEL, value(level)),
            LinkOption::TargetFromContext => (O::CU_JIT_TARGET_FROM_CUCONTEXT, value(0)),
            LinkOption::MaxRegisters(n) => (O::CU_JIT_MAX_REGISTERS, value(n)),
            LinkOption::OverrideDirectiveValues => (O::CU_JIT_OVERRIDE_DIRECTIVE_VALUES, value(1)),
            LinkOption::Lto => (O::CU_JIT_LTO, value(1)),
            LinkOption::PositionIndependentCode(on) => {
                (O::CU_JIT_POSITION_INDEPENDENT_CODE, value(u32::from(on)))
            }
            LinkOption::GenerateLineInfo => (O::CU_JIT_GENERATE_LINE_INFO, value(1)),
        })
        .unzip()
}

/// `ptx` as the NUL-terminated image the driver reads; a NUL inside is [`Error::ModuleLoad`].
fn ptx_image(ptx: &str) -> Result<CString, Error> {
    CString::new(ptx).map_err(|_| Error::ModuleLoad {
        message: "the generated PTX contains a NUL byte".to_owned(),
        log: String::new(),
    })
}

/// Size of the driver's JIT error log buffers.
const LOG_SIZE: usize = 16 * 1024;

/// The text the driver wrote into a log buffer (up to its first NUL).
fn log_text(buffer: &[u8]) -> String {
    let used = buffer.iter().position(|&b| b == 0).unwrap_or(buffer.len());
    String::from_utf8_lossy(&buffer[..used]).into_owned()
}

fn link_error(call: &'static str, err: DriverError, log: &[u8]) -> Error {
    let fail = CuFail { call, err };
    if fail.is_fault() {
        return fail.into_error(None);
    }
    Error::ModuleLoad {
        message: fail.describe(),
        log: log_text(log),
    }
}

fn bind(ctx: sys::CUcontext) -> Result<(), CuFail> {
    let current = result::ctx::get_current().map_err(fail("cuCtxGetCurrent"))?;
    if current != Some(ctx) {
        // SAFETY: `ctx` is a retained primary context.
        unsafe { result::ctx::set_current(ctx) }.map_err(fail("cuCtxSetCurrent"))?;
    }
    Ok(())
}

fn query_limits(device: sys::CUdevice) -> Result<DeviceLimits, Error> {
    use sys::CUdevice_attribute as A;
    let attr = |a: A| -> Result<u32, Error> {
        // SAFETY: `device` came from cuDeviceGet.
        let v = unsafe { result::device::get_attribute(device, a) }
            .map_err(driver_error("cuDeviceGetAttribute"))?;
        Ok(u32::try_from(v).unwrap_or(0))
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
    })
}

/// A stream handle: the legacy default stream (null, not owned) or one we created.
pub(crate) struct CudaStream {
    raw: sys::CUstream,
    owned: bool,
    ctx: sys::CUcontext,
}

// SAFETY: stream handles may be used from any thread (the context is bound per call).
unsafe impl Send for CudaStream {}
// SAFETY: as above.
unsafe impl Sync for CudaStream {}

/// Destroys a stream we created (not the default stream). Errors are ignored: the driver
/// releases a stream's resources once its work is done, and this runs in `Drop`.
pub(crate) fn destroy_stream(stream: &CudaStream) {
    if stream.owned && bind(stream.ctx).is_ok() {
        // SAFETY: called once, from the owning StreamInner's Drop, while the context lives.
        let _ = unsafe { result::stream::destroy(stream.raw) };
    }
}

/// An event created with timing enabled.
pub(crate) struct CudaEvent {
    raw: sys::CUevent,
}

// SAFETY: event handles may be used from any thread.
unsafe impl Send for CudaEvent {}
// SAFETY: as above.
unsafe impl Sync for CudaEvent {}

/// A point recorded in a stream for other streams to wait for (an event without timing);
/// its event goes back to the device's pool on drop.
pub(crate) struct OrderMark {
    raw: sys::CUevent,
    pool: Arc<MarkPool>,
}

// SAFETY: event handles may be used from any thread (the context is bound per call).
unsafe impl Send for OrderMark {}
// SAFETY: as above.
unsafe impl Sync for OrderMark {}

impl Drop for OrderMark {
    fn drop(&mut self) {
        if self.pool.closed.load(Ordering::Acquire) {
            return; // the context is gone, and its events with it
        }
        let mut free = self.pool.lock();
        if free.len() < MarkPool::KEPT {
            free.push(PooledEvent(self.raw));
        } else if bind(self.pool.ctx).is_ok() {
            // SAFETY: destroyed once, here; no stream waits on it after the call returns.
            let _ = unsafe { result::event::destroy(self.raw) };
        }
    }
}

/// An event handle in the pool.
struct PooledEvent(sys::CUevent);

// SAFETY: event handles may be used from any thread.
unsafe impl Send for PooledEvent {}

/// Events without timing, for order marks, kept for reuse; destroyed with the last holder.
pub(crate) struct MarkPool {
    ctx: sys::CUcontext,
    free: Mutex<Vec<PooledEvent>>,
    /// Set when the device lets its context go: events then need no destroying.
    closed: std::sync::atomic::AtomicBool,
}

// SAFETY: the context handle is only bound, from any thread; the events are behind a mutex.
unsafe impl Send for MarkPool {}
// SAFETY: as above.
unsafe impl Sync for MarkPool {}

impl MarkPool {
    /// Events kept at most (more are destroyed when their mark drops).
    const KEPT: usize = 256;

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<PooledEvent>> {
        self.free.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl MarkPool {
    /// Destroys the pooled events now.
    fn destroy_free(&self) {
        let free = std::mem::take(&mut *self.lock());
        if self.closed.load(Ordering::Acquire) {
            return;
        }
        if !free.is_empty() && bind(self.ctx).is_ok() {
            for e in free {
                // SAFETY: each pooled event is destroyed once, here.
                let _ = unsafe { result::event::destroy(e.0) };
            }
        }
    }
}

impl Drop for MarkPool {
    fn drop(&mut self) {
        self.destroy_free();
    }
}

/// A kernel of a loaded module.
pub(crate) struct CudaFunction {
    raw: sys::CUfunction,
    /// The largest dynamic shared memory size this function was opted in for.
    dynamic_shared_opt_in: AtomicU32,
}

/// A loaded PTX module; unloaded on drop.
pub(crate) struct CudaModule {
    raw: sys::CUmodule,
    ctx: sys::CUcontext,
    pub(crate) functions: Vec<CudaFunction>,
}

// SAFETY: module and function handles may be used from any thread.
unsafe impl Send for CudaModule {}
// SAFETY: as above; the opt-in size is atomic.
unsafe impl Sync for CudaModule {}

impl Drop for CudaModule {
    fn drop(&mut self) {
        if bind(self.ctx).is_ok() {
            // Kernels of this module may still be running: wait for them first.
            let _ = result::ctx::synchronize();
            // SAFETY: unloaded once; the owning LoadedModule keeps its context alive.
            let _ = unsafe { result::module::unload(self.raw) };
        }
    }
}
