//! cuda-oxide's constant memory: a module-scope value that every thread reads and only the
//! host writes. In a `#[cuda_module]`:
//!
//! ```ignore
//! #[constant]
//! static SCALE: ConstantMemory<f32> = ConstantMemory::UNINIT;
//!
//! #[kernel]
//! pub fn multiply(mut out: DisjointSlice<f32>) {
//!     let s = SCALE.get();
//!     ...
//! }
//! ```
//!
//! and on the host `module.set_scale(&stream, &3.0)?` (ordered with the stream's work, as
//! a copy into a buffer is) or `module.set_scale_blocking(&3.0)?`.
//!
//! Each loaded module owns one zeroed buffer per constant (CUDA's `.const` memory also
//! starts zeroed, so `T` must be valid as all zero bits: plain data, `DeviceCopy`). A kernel
//! that reads a constant receives that buffer as a hidden read-only parameter, so a set
//! cannot race with a launch: the runtime orders the write after every launch queued before
//! it that reads the buffer, on any stream, and each launch queued after it on the same
//! stream sees the new value. The front end's `constants` module says how reads compile.

use std::marker::PhantomData;
use std::sync::{Mutex, MutexGuard};

use cuprum_runtime::{CudaContext, DeviceBuffer, DeviceCopy, Result, Stream};

use super::shared::unreachable_on_host;

/// A `#[constant]` static's type (see the module docs). Device code reads it with
/// [`get`](Self::get) or [`get_ref`](Self::get_ref); the host sets it through the loaded
/// module's `set_<name>`.
pub struct ConstantMemory<T> {
    _value: PhantomData<fn() -> T>,
}

impl<T> ConstantMemory<T> {
    /// The only initializer: the value starts as zero bits until the host sets it.
    pub const UNINIT: Self = Self {
        _value: PhantomData,
    };

    /// The value (a copy). In device code only.
    pub fn get(&self) -> T {
        unreachable_on_host()
    }

    /// The value in place: index a table through it without copying the whole table. In
    /// device code only.
    pub fn get_ref(&self) -> &T {
        unreachable_on_host()
    }
}

/// A loaded module's storage for one constant: its buffer, zeroed at load. The generated
/// `set_<name>` writes it; launches pass it to the kernels that read the constant.
#[doc(hidden)]
pub struct ConstantCell<T: DeviceCopy> {
    buffer: Mutex<DeviceBuffer<T>>,
}

impl<T: DeviceCopy> ConstantCell<T> {
    /// One zeroed value on `ctx`.
    pub fn new(ctx: &CudaContext) -> Result<Self> {
        let stream = ctx.default_stream();
        let buffer = DeviceBuffer::zeroed(&stream, 1)?;
        stream.synchronize()?;
        Ok(Self {
            buffer: Mutex::new(buffer),
        })
    }

    /// Writes `value`, ordered on `stream` like any copy into a buffer.
    pub fn set(&self, stream: &Stream, value: &T) -> Result<()> {
        self.buffer()
            .copy_from_host(stream, std::slice::from_ref(value))
    }

    /// Writes `value` and waits until it is written.
    pub fn set_blocking(&self, value: &T) -> Result<()> {
        let mut buffer = self.buffer();
        let stream = buffer.context().default_stream();
        buffer.copy_from_host(&stream, std::slice::from_ref(value))?;
        stream.synchronize()
    }

    /// The buffer, held while a launch passes it.
    pub fn buffer(&self) -> MutexGuard<'_, DeviceBuffer<T>> {
        // A panic while the lock was held leaves the buffer as valid as before (a copy is
        // all that happens under it), so a poisoned lock is still usable.
        self.buffer.lock().unwrap_or_else(|e| e.into_inner())
    }
}
