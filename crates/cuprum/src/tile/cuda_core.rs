//! Devices, streams and element types under the names cuTile Rust programs use
//! (`cuda_core::{Device, Stream, DType}`), on cuprum's runtime.
//!
//! A [`Device`] is one `cuprum::CudaContext` (a GPU, or the CPU emulator when
//! `CUPRUM_DEVICE` says so or there is no GPU). [`Device::new`] hands out one shared device
//! per ordinal, so that every part of a program that asks for device 0 gets the same context
//! and tensors move freely between them (a tensor of another context is refused at launch);
//! `.sync()` runs on that same device 0.
//!
//! Raw device memory by address (`malloc_async`, `memcpy_htod_async`, `memcpy_dtoh_async`,
//! `free_async`) is here too, for programs that manage memory themselves.

use std::fmt;
use std::sync::{Arc, Mutex};

use cuprum_ir::ScalarType;
use cuprum_runtime::DeviceScalar;

pub use cuprum_runtime::Stream;

use crate::CudaContext as RuntimeContext;
use crate::DeviceBuffer;
use crate::tile::error::Error;
use crate::tile::launch::LaunchArgument;
use crate::tile::op::{IntoDeviceOp, Value};

/// The runtime identifier of an element type: the IR's scalar type.
pub type DTypeId = ScalarType;

/// An element type of tensors and a scalar type of kernel arguments: `bool`, the integers of
/// 8 to 64 bits, `f16`, `bf16`, `f32` and `f64`. A value is its own launch argument, also in
/// code generic over the type (`IntoDeviceOp<Self>`).
pub trait DType:
    DeviceScalar + LaunchArgument + IntoDeviceOp<Self, Op = Value<Self>> + fmt::Debug + PartialEq
{
    /// The type's identifier (the IR type [`DeviceScalar::TYPE`] names).
    const DTYPE: DTypeId = <Self as DeviceScalar>::TYPE;
    /// Zero (`false`).
    fn zero() -> Self;
    /// One (`true`).
    fn one() -> Self;
}

macro_rules! dtypes {
    ($($t:ty => $zero:expr, $one:expr;)*) => { $(
        impl DType for $t {
            fn zero() -> Self { $zero }
            fn one() -> Self { $one }
        }
    )* };
}

dtypes! {
    bool => false, true;
    u8 => 0, 1;
    u16 => 0, 1;
    u32 => 0, 1;
    u64 => 0, 1;
    i8 => 0, 1;
    i16 => 0, 1;
    i32 => 0, 1;
    i64 => 0, 1;
    half::f16 => half::f16::ZERO, half::f16::ONE;
    half::bf16 => half::bf16::ZERO, half::bf16::ONE;
    cuprum_runtime::tf32 => cuprum_runtime::tf32::ZERO, cuprum_runtime::tf32::ONE;
    f32 => 0.0, 1.0;
    f64 => 0.0, 1.0;
}

/// cuTile Rust's older name for a [`Device`], which its earlier examples use
/// (`CudaContext::new(0)?.new_stream()?`).
pub type CudaContext = Device;

/// One device: a shared handle to a `cuprum::CudaContext`.
pub struct Device {
    ctx: RuntimeContext,
}

impl fmt::Debug for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Device")
            .field("context", &self.ctx)
            .finish()
    }
}

/// The devices [`Device::new`] opened, by ordinal.
static DEVICES: Mutex<Vec<(usize, Arc<Device>)>> = Mutex::new(Vec::new());

impl Device {
    /// Device `ordinal` on the backend `CUPRUM_DEVICE` selects (a GPU when there is one,
    /// else the CPU emulator), opened on first use and shared afterwards: every call with one
    /// ordinal returns the same device.
    pub fn new(ordinal: usize) -> Result<Arc<Device>, Error> {
        let mut devices = DEVICES.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, d)) = devices.iter().find(|(o, _)| *o == ordinal) {
            return Ok(d.clone());
        }
        let device = Arc::new(Device {
            ctx: RuntimeContext::new(ordinal)?,
        });
        devices.push((ordinal, device.clone()));
        Ok(device)
    }

    /// A device for a context the program opened itself (not shared with [`Device::new`]).
    pub fn from_context(ctx: RuntimeContext) -> Arc<Device> {
        Arc::new(Device { ctx })
    }

    /// The device's ordinal.
    pub fn ordinal(&self) -> usize {
        self.ctx.ordinal()
    }

    /// The device's name (`CPU emulator` on the emulator).
    pub fn name(&self) -> Result<String, Error> {
        Ok(self.ctx.limits().name.clone())
    }

    /// A new stream on this device.
    pub fn new_stream(&self) -> Result<Arc<Stream>, Error> {
        Ok(Arc::new(self.ctx.new_stream()?))
    }

    /// The device's default stream, on which `.sync()` runs.
    pub fn default_stream(&self) -> Stream {
        self.ctx.default_stream()
    }

    /// The context behind the device, for the rest of cuprum's API.
    pub fn context(&self) -> &RuntimeContext {
        &self.ctx
    }

    /// Loads PTX text cuprum did not write (hand-written, or another compiler's) on this
    /// device (cuTile Rust's name): the driver JIT-compiles it on a GPU; the emulator
    /// translates it into cuprum's IR (see `cuprum::external`), refusing what it does not
    /// model with a typed error.
    pub fn load_module_from_ptx_src(&self, ptx: &str) -> Result<Arc<Module>, Error> {
        Ok(Arc::new(Module {
            inner: crate::external::Module::from_ptx(&self.ctx, ptx)?,
        }))
    }
}

/// A module cuprum did not compile, loaded on a device (cuTile Rust's `Module`): its kernels
/// launch through [`AsyncKernelLaunch`](crate::tile::cuda_async::launch::AsyncKernelLaunch).
#[derive(Debug)]
pub struct Module {
    inner: crate::external::Module,
}

impl Module {
    /// The kernel `name` (as the PTX spells it); [`crate::Error::KernelNotFound`] if the
    /// module has none.
    pub fn load_function(&self, name: &str) -> Result<Function, Error> {
        Ok(Function::external(self.inner.get_function(name)?))
    }
}

/// How a launch of cuTile Rust's lower-level API is shaped (`AsyncKernelLaunch::
/// set_launch_config`; what a tile kernel lets it set: [`AsyncKernelLaunch`](crate::tile::cuda_async::launch::AsyncKernelLaunch)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchConfig {
    /// Tile blocks along x, y and z.
    pub grid_dim: (u32, u32, u32),
    /// Threads per block: `(1, 1, 1)` as in cuTile Rust (one "thread" per tile block, the
    /// compiler's block), or the block the lowering compiled the kernel for; any other is
    /// refused before the launch runs.
    pub block_dim: (u32, u32, u32),
    /// Dynamic shared memory reserved beyond the kernel's own, in bytes (0: none).
    pub shared_mem_bytes: u32,
}

pub use crate::tile::launch::direct::Function;

/// The driver's types under cuTile Rust's names.
pub mod sys {
    /// A device address, in bytes (`CUdeviceptr`).
    pub type CUdeviceptr = u64;
}

/// The allocations [`malloc_async`] made and [`free_async`] has not freed yet, found by
/// their addresses.
static RAW: Mutex<Vec<DeviceBuffer<u8>>> = Mutex::new(Vec::new());

/// Runs `f` on the raw allocation of `stream`'s context holding the `bytes` bytes from
/// `addr`, and the offset of `addr` in it.
///
/// # Panics
/// When no live allocation of [`malloc_async`] holds those bytes.
fn with_raw<R>(
    stream: &Stream,
    addr: sys::CUdeviceptr,
    bytes: usize,
    what: &str,
    f: impl FnOnce(&mut DeviceBuffer<u8>, usize) -> R,
) -> R {
    let mut raw = RAW.lock().unwrap_or_else(|e| e.into_inner());
    let found = raw.iter_mut().find(|b| {
        let start = b.device_address();
        b.context().same_context(stream.context())
            && addr >= start
            && addr - start <= b.len() as u64
            && (addr - start) as usize + bytes <= b.len()
    });
    match found {
        Some(buffer) => {
            let offset = (addr - buffer.device_address()) as usize;
            f(buffer, offset)
        }
        None => panic!(
            "{what}: no allocation of `malloc_async` on this stream's device holds the {bytes} \
             bytes at {addr:#x} (allocate with `malloc_async`, and copy inside it before \
             `free_async`)"
        ),
    }
}

/// Allocates `num_bytes` of device memory, ordered on `stream` (cuTile Rust's raw
/// allocation); free it with [`free_async`]. cuprum's memory is also its emulator's, so
/// raw allocations are kept by address and copied with [`memcpy_htod_async`] and
/// [`memcpy_dtoh_async`] (which finish before they return).
///
/// # Safety
/// The memory holds zeros, but it is raw: kernels and copies that use its address must
/// stay inside it and must not outlive it.
///
/// # Panics
/// When the device has no memory left (cuTile Rust's signature has no error to return).
pub unsafe fn malloc_async(num_bytes: usize, stream: &Stream) -> sys::CUdeviceptr {
    let buffer = match DeviceBuffer::<u8>::zeroed(stream, num_bytes) {
        Ok(b) => b,
        Err(e) => panic!("malloc_async of {num_bytes} bytes failed: {e}"),
    };
    let addr = buffer.device_address();
    RAW.lock().unwrap_or_else(|e| e.into_inner()).push(buffer);
    addr
}

/// Frees an allocation of [`malloc_async`], after the work already ordered on it.
///
/// # Safety
/// Nothing may use the address afterwards.
///
/// # Panics
/// When `dptr` is not the address of a live allocation of [`malloc_async`].
pub unsafe fn free_async(dptr: sys::CUdeviceptr, stream: &Stream) {
    let mut raw = RAW.lock().unwrap_or_else(|e| e.into_inner());
    let at = raw
        .iter()
        .position(|b| b.device_address() == dptr && b.context().same_context(stream.context()));
    match at {
        Some(i) => drop(raw.swap_remove(i)),
        None => panic!(
            "free_async: {dptr:#x} is not an allocation of `malloc_async` on this stream's device"
        ),
    }
}

/// Copies `num_elements` elements of `T` from host memory at `src` to device memory at
/// `dst` (inside an allocation of [`malloc_async`]), ordered on `stream`; the copy has
/// finished when this returns.
///
/// # Safety
/// `src` must point to `num_elements` readable elements.
///
/// # Panics
/// When the bytes at `dst` are not inside a live allocation of [`malloc_async`], or the
/// copy fails.
pub unsafe fn memcpy_htod_async<T>(
    dst: sys::CUdeviceptr,
    src: *const T,
    num_elements: usize,
    stream: &Stream,
) {
    let bytes = num_elements * size_of::<T>();
    // SAFETY: the caller guarantees `num_elements` readable elements at `src`.
    let data = unsafe { std::slice::from_raw_parts(src.cast::<u8>(), bytes) };
    with_raw(stream, dst, bytes, "memcpy_htod_async", |buffer, offset| {
        let copied = if offset == 0 && bytes == buffer.len() {
            buffer.copy_from_host(stream, data)
        } else {
            // A part of the allocation: read it whole, patch, write it back.
            buffer.to_host_vec(stream).and_then(|mut all| {
                all[offset..offset + bytes].copy_from_slice(data);
                buffer.copy_from_host(stream, &all)
            })
        };
        if let Err(e) = copied {
            panic!("memcpy_htod_async of {bytes} bytes failed: {e}");
        }
    })
}

/// Copies `num_elements` elements of `T` from device memory at `src` (inside an allocation
/// of [`malloc_async`]) to host memory at `dst`, after the work ordered on `stream`; the
/// copy has finished when this returns.
///
/// # Safety
/// `dst` must point to `num_elements` writable elements, and the device bytes must be a
/// valid `T` each.
///
/// # Panics
/// When the bytes at `src` are not inside a live allocation of [`malloc_async`], or the
/// copy fails.
pub unsafe fn memcpy_dtoh_async<T>(
    dst: *mut T,
    src: sys::CUdeviceptr,
    num_elements: usize,
    stream: &Stream,
) {
    let bytes = num_elements * size_of::<T>();
    let all = with_raw(
        stream,
        src,
        bytes,
        "memcpy_dtoh_async",
        |buffer, offset| match buffer.to_host_vec(stream) {
            Ok(all) => (all, offset),
            Err(e) => panic!("memcpy_dtoh_async of {bytes} bytes failed: {e}"),
        },
    );
    let (all, offset) = all;
    // SAFETY: the caller guarantees `num_elements` writable elements at `dst`, and the
    // source range lies inside `all` (`with_raw` checked it).
    unsafe {
        std::ptr::copy_nonoverlapping(all[offset..].as_ptr(), dst.cast::<u8>(), bytes);
    }
}
