//! The CUDA backend: the driver API through `cudarc`, loaded at run time (so nothing CUDA is
//! needed to build), implementing the runtime's [`Device`] seam.
//!
//! * `driver`: loading and vetting the driver library, listing devices, their limits.
//! * `fail`: failed driver calls and the errors they become.
//! * `streams`: streams, timing events, order marks.
//! * `memory`: allocation and copies.
//! * `module`: JIT, linker, cubins, kernel resources, `cuLaunchKernel`.
//! * `graph`: recorded operations captured into CUDA graphs, updated and replayed.
//! * `compile`: IR to a loaded module (PTX target, parameter layout, compile route).
//! * `cached`: the compile cache's load path.
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
//!   (`order_mark`, `wait_mark`; see `ordering.rs`).
//!
//! Driver failures leave as [`Failure::Driver`]; the context turns them into [`Error`]s,
//! naming the kernel that ran last on the stream when the failure is a fault.

mod cached;
mod compile;
mod driver;
mod fail;
mod foreign;
mod graph;
mod memory;
mod module;
pub(crate) mod nccl;
mod streams;

use std::ffi::c_void;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use cudarc::driver::result;
use cudarc::driver::sys;

pub(crate) use compile::CudaProgram;
pub(crate) use driver::{ListFailure, driver_facts, list_devices};
pub(crate) use fail::CuFail;
use fail::{driver_error, fail};
pub(crate) use graph::CudaGraphExec;
pub(crate) use module::{CudaFunction, CudaModule};
use streams::MarkPool;
pub(crate) use streams::{CudaEvent, CudaStream, OrderMark};

use super::{Device, Failure, LaunchTarget, LoadRequest, Outcome};
use crate::cache::occupancy::KernelUse;
use crate::config::{KernelArg, LaunchConfig};
use crate::error::Error;
use crate::limits::DeviceLimits;

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
    /// Shared memory a block gets without opting in (`cuFuncSetAttribute`).
    max_shared_per_block: u32,
    /// Bytes of device memory, for out-of-memory messages.
    total_memory: u64,
    /// The blocking stream frees are ordered on (`memory.rs`), made at the first free;
    /// `None` where it could not be made (frees then go on the default stream).
    release_stream: std::sync::OnceLock<Option<CudaStream>>,
}

// SAFETY: CUDA driver handles may be used from any thread; every call first makes the context
// current on the calling thread.
unsafe impl Send for CudaDevice {}
// SAFETY: as above; the driver API is thread-safe.
unsafe impl Sync for CudaDevice {}

/// How many GPUs the driver reports (0 where it reports none: `CUDA_ERROR_NO_DEVICE`).
/// Loads and initializes the driver as [`CudaDevice::open`] does.
pub(crate) fn device_count() -> Result<usize, Error> {
    driver::probe()?;
    if let Err(err) = result::init() {
        if err.0 == sys::CUresult::CUDA_ERROR_NO_DEVICE {
            return Ok(0);
        }
        return Err(Error::NoDriver {
            detail: CuFail {
                call: "cuInit",
                err,
            }
            .describe(),
        });
    }
    let count = result::device::get_count().map_err(driver_error("cuDeviceGetCount"))?;
    Ok(usize::try_from(count).unwrap_or(0))
}

impl CudaDevice {
    /// Loads the driver (checking it first), initializes it and retains the primary context
    /// of device `ordinal`; returns the device and its limits.
    pub(crate) fn open(ordinal: usize) -> Result<(Self, DeviceLimits), Error> {
        let probe = driver::probe()?;
        crate::tensor_map::note_cuda();
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
        let limits = driver::query_limits(device)?;
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
            max_shared_per_block: limits.max_shared_per_block,
            total_memory: limits.total_memory,
            release_stream: std::sync::OnceLock::new(),
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
}

impl Drop for CudaDevice {
    fn drop(&mut self) {
        // The pooled events go first, while the context lives (marks still held elsewhere
        // keep the pool, which then destroys nothing more).
        self.marks.destroy_free();
        self.marks.closed.store(true, Ordering::Release);
        // The release stream, while the context lives (waiting for the frees on it first).
        if let Some(Some(stream)) = self.release_stream.take() {
            let _ = self.synchronize_stream(&stream);
            drop(stream);
        }
        // SAFETY: balances the retain in `open`.
        let _ = unsafe { result::primary_ctx::release(self.device) };
    }
}

/// Makes `ctx` current on the calling thread.
impl CudaDevice {
    /// Whether this device reaches `peer`'s memory directly (`cuDeviceCanAccessPeer`); a
    /// device reaches itself.
    pub(crate) fn can_access_peer(&self, peer: &CudaDevice) -> Result<bool, CuFail> {
        if self.device == peer.device {
            return Ok(true);
        }
        let mut can: std::ffi::c_int = 0;
        // SAFETY: a valid out pointer and two device handles the driver gave.
        unsafe { sys::cuDeviceCanAccessPeer(&mut can, self.device, peer.device) }
            .result()
            .map_err(fail("cuDeviceCanAccessPeer"))?;
        Ok(can != 0)
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

impl Device for CudaDevice {
    type Stream = CudaStream;
    type Event = CudaEvent;
    type Mark = OrderMark;
    type Module = CudaProgram;

    fn default_stream(&self) -> CudaStream {
        self.legacy_stream()
    }

    fn new_stream(&self) -> Outcome<CudaStream> {
        Ok(self.create_stream()?)
    }

    fn new_stream_with_priority(&self, priority: i32) -> Outcome<CudaStream> {
        Ok(self.create_stream_with_priority(priority)?)
    }

    fn stream_priorities(&self) -> Outcome<(i32, i32)> {
        Ok(CudaDevice::stream_priorities(self)?)
    }

    fn wait_event(&self, stream: &CudaStream, event: &CudaEvent) -> Outcome<()> {
        Ok(self.stream_wait_event(stream, event)?)
    }

    fn event_complete(&self, event: &CudaEvent) -> Outcome<bool> {
        Ok(self.query_event(event)?)
    }

    fn synchronize(&self) -> Outcome<()> {
        Ok(self.synchronize_context()?)
    }

    fn stream_synchronize(&self, stream: &CudaStream) -> Outcome<()> {
        Ok(self.synchronize_stream(stream)?)
    }

    fn record_event(&self, stream: &CudaStream) -> Outcome<CudaEvent> {
        Ok(self.record_timing_event(stream)?)
    }

    fn event_synchronize(&self, event: &CudaEvent) -> Outcome<()> {
        Ok(self.synchronize_event(event)?)
    }

    fn elapsed_ms(&self, earlier: &CudaEvent, later: &CudaEvent) -> Outcome<f32> {
        self.synchronize_event(earlier)?;
        self.synchronize_event(later)?;
        Ok(self.event_elapsed_ms(earlier, later)?)
    }

    fn order_mark(&self, stream: &CudaStream) -> Outcome<Option<OrderMark>> {
        Ok(Some(self.record_order_mark(stream)?))
    }

    fn wait_mark(&self, stream: &CudaStream, mark: &OrderMark) -> Outcome<()> {
        Ok(self.stream_wait(stream, mark)?)
    }

    fn mark_complete(&self, mark: &OrderMark) -> Outcome<bool> {
        Ok(self.query_order_mark(mark)?)
    }

    fn alloc(&self, stream: &CudaStream, bytes: usize) -> Outcome<u64> {
        self.allocate(stream, bytes).map_err(|f| {
            if f.is_out_of_memory() {
                Failure::Error(Error::OutOfMemory {
                    bytes: bytes as u128,
                    detail: format!(
                        "{}: {} bytes of device memory in total",
                        f.describe(),
                        self.total_memory
                    ),
                })
            } else {
                Failure::Driver(f)
            }
        })
    }

    fn free(&self, addr: u64, after: &[&OrderMark]) {
        self.release(addr, after);
    }

    fn zero(&self, stream: &CudaStream, addr: u64, bytes: usize) -> Outcome<()> {
        Ok(self.zero_fill(stream, addr, bytes)?)
    }

    unsafe fn write(&self, stream: &CudaStream, addr: u64, data: &[u8]) -> Outcome<()> {
        if data.is_empty() {
            return Ok(());
        }
        // SAFETY: the caller's contract.
        Ok(unsafe { self.copy_htod(addr, data, stream) }?)
    }

    unsafe fn read(&self, stream: &CudaStream, addr: u64, out: &mut [u8]) -> Outcome<()> {
        if out.is_empty() {
            return Ok(self.synchronize_stream(stream)?);
        }
        // SAFETY: the caller's contract.
        Ok(unsafe { self.copy_dtoh(out, addr, stream) }?)
    }

    fn alloc_pinned(&self, bytes: usize) -> Outcome<Option<u64>> {
        Ok(Some(self.allocate_pinned(bytes)?))
    }

    fn free_pinned(&self, ptr: u64) {
        self.release_pinned(ptr);
    }

    unsafe fn read_async(
        &self,
        stream: &CudaStream,
        addr: u64,
        dst: u64,
        bytes: usize,
    ) -> Outcome<()> {
        // SAFETY: the caller's contract.
        Ok(unsafe { self.copy_dtoh_async(dst, addr, bytes, stream) }?)
    }

    unsafe fn write_async(
        &self,
        stream: &CudaStream,
        addr: u64,
        src: u64,
        bytes: usize,
    ) -> Outcome<()> {
        // SAFETY: the caller's contract.
        Ok(unsafe { self.copy_htod_async(addr, src, bytes, stream) }?)
    }

    unsafe fn copy(&self, stream: &CudaStream, dst: u64, src: u64, bytes: usize) -> Outcome<()> {
        // SAFETY: the caller's contract.
        Ok(unsafe { self.copy_dtod(dst, src, bytes, stream) }?)
    }

    fn load(
        &self,
        ir: &Arc<cuprum_ir::Module>,
        request: LoadRequest<'_>,
    ) -> Result<(CudaProgram, Option<Vec<u8>>), Error> {
        self.load_ir(ir, request)
    }

    fn resources(&self, module: &CudaProgram, index: usize) -> Option<KernelUse> {
        self.kernel_use(&module.module, index)
    }

    fn ptx(module: &CudaProgram) -> Option<&str> {
        Some(&module.ptx)
    }

    fn compile_log(module: &CudaProgram) -> &str {
        &module.module.jit_log
    }

    unsafe fn launch(
        &self,
        module: &CudaProgram,
        stream: &CudaStream,
        kernel: &LaunchTarget<'_>,
        config: &LaunchConfig,
        args: &[KernelArg],
    ) -> Outcome<()> {
        let name = &kernel.ir.name;
        let (Some(function), Some(sizes)) = (
            module.module.functions.get(kernel.index),
            module.machine_sizes.get(kernel.index),
        ) else {
            return Err(Failure::Error(Error::KernelNotFound { name: name.clone() }));
        };
        let mut storage = compile::pack_params(sizes, args);
        let mut pointers: Vec<*mut c_void> = storage
            .iter_mut()
            .map(|slot| (slot as *mut compile::ParamSlot).cast::<c_void>())
            .collect();
        // The kernel rounds the dynamic region's start up to its alignment: the padding
        // that may take is given on top of what the launch asked for.
        let dynamic = config
            .shared_mem_bytes
            .saturating_add(kernel.ir.dyn_shared_padding());
        let needs_opt_in = u64::from(dynamic) + u64::from(kernel.static_shared_bytes)
            > u64::from(self.max_shared_per_block);
        // SAFETY: `pointers` has one pointer per PTX parameter, each at an 8-byte slot holding
        // the value in its first `size` bytes; `storage` outlives the call (the driver copies
        // parameters at launch). Memory validity is the caller's contract.
        let launched = unsafe {
            self.launch_function(
                function,
                config.grid_dim,
                config.block_dim,
                dynamic,
                needs_opt_in,
                stream,
                &mut pointers,
            )
        };
        launched.map_err(|f| {
            if f.is_bad_launch_config() {
                Failure::Error(Error::InvalidLaunch {
                    kernel: name.clone(),
                    reason: format!(
                        "the driver refused grid {:?}, block {:?} with {} bytes of dynamic \
                         shared memory: {}",
                        config.grid_dim,
                        config.block_dim,
                        config.shared_mem_bytes,
                        f.describe()
                    ),
                })
            } else {
                Failure::Driver(f)
            }
        })
    }
}

/// Has the driver encode the (checked) tiled tensor map `desc` (`cuTensorMapEncodeTiled`).
pub(crate) fn encode_tensor_map(desc: &cuprum_ir::TensorMapDesc) -> Result<[u64; 16], Error> {
    use sys::{
        CUtensorMapDataType, CUtensorMapFloatOOBfill, CUtensorMapInterleave,
        CUtensorMapL2promotion, CUtensorMapSwizzle,
    };
    let probe = driver::probe()?;
    if !probe.tensor_maps {
        return Err(Error::Unsupported {
            what: format!(
                "tensor maps: {} lacks cuTensorMapEncodeTiled (a CUDA 12 driver is needed)",
                probe.facts.library
            ),
        });
    }
    let code = cuprum_ir::tma::tensor_map_data_type(desc.elem).ok_or(Error::TensorMap {
        problem: cuprum_ir::TensorMapProblem::Element(desc.elem),
    })?;
    let data_type = match code {
        0 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_UINT8,
        1 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_UINT16,
        2 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_UINT32,
        3 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_INT32,
        4 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_UINT64,
        5 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_INT64,
        6 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
        7 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
        8 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT64,
        _ => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
    };
    let swizzle = match desc.swizzle {
        cuprum_ir::Swizzle::None => CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_NONE,
        cuprum_ir::Swizzle::B32 => CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_32B,
        cuprum_ir::Swizzle::B64 => CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_64B,
        cuprum_ir::Swizzle::B128 => CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
    };
    let fill = match desc.oob_fill {
        cuprum_ir::OobFill::Zero => CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        cuprum_ir::OobFill::Nan => {
            CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA
        }
    };
    let rank = desc.rank;
    let mut map = std::mem::MaybeUninit::<sys::CUtensorMap>::zeroed();
    // SAFETY: the arrays hold `rank` entries (strides `rank - 1`), as the call reads; `map`
    // is 128 writable bytes; the driver only encodes (the address is not dereferenced).
    let status = unsafe {
        sys::cuTensorMapEncodeTiled(
            map.as_mut_ptr(),
            data_type,
            rank as u32,
            desc.address as *mut c_void,
            desc.dims.as_ptr(),
            desc.strides.as_ptr(),
            desc.box_dims.as_ptr(),
            desc.element_strides.as_ptr(),
            CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
            swizzle,
            CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
            fill,
        )
    };
    if status != sys::CUresult::CUDA_SUCCESS {
        return Err(driver_error("cuTensorMapEncodeTiled")(
            cudarc::driver::result::DriverError(status),
        ));
    }
    // SAFETY: the driver wrote the map (and it was zeroed before).
    let map = unsafe { map.assume_init() };
    Ok(map.opaque)
}

impl CudaDevice {
    /// Loads a module cuprum did not write: PTX text (JIT-compiled, its log in
    /// [`Error::ModuleLoad`] on failure) or a cubin; its kernels are looked up by name later.
    pub(crate) fn load_external(
        &self,
        image: crate::external::Image<'_>,
    ) -> Result<CudaModule, Error> {
        match image {
            crate::external::Image::Ptx(text) => self.load_module(text, &[]),
            crate::external::Image::Cubin(bytes) => self.load_cubin(bytes, &[]),
        }
    }

    /// Launches `function` with one parameter per entry of `params` (its bytes, at most 128
    /// each).
    ///
    /// # Safety
    /// `params` must be exactly the kernel's parameters, each of its size; the kernel's memory
    /// accesses must be valid.
    pub(crate) unsafe fn launch_external(
        &self,
        function: &CudaFunction,
        stream: &CudaStream,
        config: &LaunchConfig,
        params: &[Vec<u8>],
    ) -> Outcome<()> {
        let mut storage: Vec<[u64; 16]> = params
            .iter()
            .map(|bytes| {
                let mut slot = [0u64; 16];
                let n = bytes.len().min(128);
                bytemuck::cast_slice_mut::<u64, u8>(&mut slot)[..n].copy_from_slice(&bytes[..n]);
                slot
            })
            .collect();
        let mut pointers: Vec<*mut std::ffi::c_void> = storage
            .iter_mut()
            .map(|slot| slot.as_mut_ptr().cast::<std::ffi::c_void>())
            .collect();
        let needs_opt_in = config.shared_mem_bytes > self.max_shared_per_block;
        // SAFETY: one pointer per parameter, each at a 128-byte slot holding its bytes; the
        // storage outlives the call (the driver copies parameters at launch). The rest is the
        // caller's contract.
        unsafe {
            self.launch_function(
                function,
                config.grid_dim,
                config.block_dim,
                config.shared_mem_bytes,
                needs_opt_in,
                stream,
                &mut pointers,
            )
        }
        .map_err(Failure::Driver)
    }
}
