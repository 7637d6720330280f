//! Devices, streams and element types under the names cuTile Rust programs use
//! (`cuda_core::{Device, Stream, DType}`), on cuprum's runtime.
//!
//! A [`Device`] is one `cuprum::CudaContext` (a GPU, or the CPU emulator when
//! `CUPRUM_DEVICE` says so or there is no GPU). [`Device::new`] hands out one shared device
//! per ordinal, so that every part of a program that asks for device 0 gets the same context
//! and tensors move freely between them (a tensor of another context is refused at launch);
//! `.sync()` runs on that same device 0.

use std::fmt;
use std::sync::{Arc, Mutex};

use cuprum_ir::ScalarType;
use cuprum_runtime::DeviceScalar;

pub use cuprum_runtime::Stream;

use crate::CudaContext;
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
    f32 => 0.0, 1.0;
    f64 => 0.0, 1.0;
}

/// One device: a shared handle to a `cuprum::CudaContext`.
pub struct Device {
    ctx: CudaContext,
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
            ctx: CudaContext::new(ordinal)?,
        });
        devices.push((ordinal, device.clone()));
        Ok(device)
    }

    /// A device for a context the program opened itself (not shared with [`Device::new`]).
    pub fn from_context(ctx: CudaContext) -> Arc<Device> {
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
    pub fn context(&self) -> &CudaContext {
        &self.ctx
    }
}
