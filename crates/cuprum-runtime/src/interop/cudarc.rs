//! cudarc's objects as cuprum's and back, without copies: a program that already uses
//! [cudarc](https://docs.rs/cudarc) (for cuBLAS, NCCL, its own kernels) runs cuprum kernels on
//! its streams and memory.
//!
//! | cudarc | cuprum | how |
//! |---|---|---|
//! | `Arc<CudaContext>` | [`CudaContext`] | [`context`], [`cudarc_context`]: both are the device's primary context |
//! | `Arc<CudaStream>` | [`Stream`] | [`stream`] (keeps the cudarc stream alive, never destroys it), [`cudarc_stream`] (`unsafe`: cudarc's wrapper cannot keep ours alive) |
//! | `CudaSlice<T>` | [`DeviceBuffer<T>`] | [`from_slice`], [`into_slice`]: ownership moves |
//! | `&CudaSlice<T>`, `&mut CudaSlice<T>` | a kernel argument | [`borrow`], [`borrow_mut`]: [`SliceRef`], [`SliceMut`] |
//!
//! # Ownership and ordering
//!
//! * [`from_slice`]: the memory becomes the buffer's; its home stream is the slice's stream
//!   (`CudaSlice::stream`). cudarc's pending work on the slice (its read and write events) is
//!   waited for by that stream first, and cuprum's work on any stream follows it. When the
//!   buffer is dropped, the slice's stream waits for cuprum's unfinished uses and the memory
//!   is freed on it, as cudarc would have (`cuMemFreeAsync`, or `cuMemFree` after a
//!   synchronize on devices without memory pools).
//! * [`into_slice`]: the buffer's memory (cuprum's own, or a slice's that came through
//!   [`from_slice`]) becomes a `CudaSlice` on the given cudarc stream, which first waits for
//!   every unfinished use of it; the slice's write event is recorded there, so cudarc's work
//!   on other streams follows too. cudarc frees it from then on.
//! * [`borrow`] and [`borrow_mut`] lend a slice for a scope, on a stream made by [`stream`]:
//!   that stream waits for cudarc's unfinished writes (and, to write, reads) of the slice,
//!   and when the borrow ends it waits for cuprum's work on other streams and records the
//!   slice's read (or write) event, as cudarc's own `device_ptr`/`device_ptr_mut` do. No
//!   graph may record borrowed memory (it would outlive the borrow).
//!
//! The user's part: cudarc work queued on the slice's memory through a raw pointer (without
//! cudarc's events), or on another stream after turning its event tracking off, is not
//! seen; order it yourself (`Stream::join`, synchronize).
//!
//! Everything here needs a GPU: on the emulator each function returns
//! [`Error::Unsupported`] (cudarc drives only the CUDA driver).

use std::sync::Arc;

/// cudarc's driver API (the version cuprum links), for naming its types.
pub use cudarc::driver;
use cudarc::driver::{self as cd, CudaSlice, DevicePtr, DevicePtrMut, DeviceRepr};

use crate::backend::cuda::CuFail;
use crate::buffer::{DeviceBuffer, DeviceCopy, Span};
use crate::context::{BackendKind, CudaContext, Stream};
use crate::error::{Error, Result};
use crate::foreign::{ForeignOwner, RawOwner};
use crate::view::{DeviceRead, DeviceWrite, sealed};

/// The [`ForeignOwner::origin`] of memory that came from a `CudaSlice`.
pub const ORIGIN: &str = "cudarc";

fn driver_error(call: &'static str) -> impl FnOnce(cd::DriverError) -> Error {
    move |err| CuFail { call, err }.into_error(None)
}

fn require_cuda(ctx: &CudaContext, what: &str) -> Result<()> {
    match ctx.backend() {
        BackendKind::Cuda => Ok(()),
        BackendKind::Emulator => Err(Error::Unsupported {
            what: format!(
                "{what} on the CPU emulator: cudarc drives only the CUDA driver; run on a GPU \
                 (CUPRUM_DEVICE=cuda)"
            ),
        }),
    }
}

/// Checks that cudarc's context `theirs` is `ctx`'s CUDA context.
fn same_context(ctx: &CudaContext, theirs: &cd::CudaContext, what: &str) -> Result<()> {
    require_cuda(ctx, what)?;
    if ctx.raw_cuda_context() == Some(theirs.cu_ctx().cast()) {
        Ok(())
    } else {
        Err(Error::Interop {
            what: what.to_owned(),
            reason: format!(
                "it belongs to cudarc's context of device {}, which is not this cuprum \
                 context's (device {}'s primary context): make the cuprum context with \
                 `interop::cudarc::context`",
                theirs.ordinal(),
                ctx.ordinal()
            ),
        })
    }
}

/// A cuprum context on the CUDA context of cudarc's `ctx` (the device's primary context,
/// which cudarc's `CudaContext::new` retains, as cuprum does). Each call makes a new cuprum
/// context (buffers of one are refused by another): make one and clone it.
/// [`Error::Interop`] for a cudarc context that is not a primary context
/// (`CudaContext::new_non_primary`).
pub fn context(ctx: &Arc<cd::CudaContext>) -> Result<CudaContext> {
    let ours = CudaContext::cuda(ctx.ordinal())?;
    if !ctx.is_primary() || ours.raw_cuda_context() != Some(ctx.cu_ctx().cast()) {
        return Err(Error::Interop {
            what: format!("cudarc's context of device {}", ctx.ordinal()),
            reason: "it is not the device's primary context, the only one cuprum runs on"
                .to_owned(),
        });
    }
    Ok(ours)
}

/// cudarc's context on `ctx`'s device (`cudarc::driver::CudaContext::new`, the same primary
/// context). [`Error::Unsupported`] on the emulator.
pub fn cudarc_context(ctx: &CudaContext) -> Result<Arc<cd::CudaContext>> {
    require_cuda(ctx, "making a cudarc context")?;
    cd::CudaContext::new(ctx.ordinal()).map_err(driver_error("cudarc::CudaContext::new"))
}

/// A cuprum stream of `ctx` that enqueues onto cudarc's `stream` (its default stream too),
/// keeping it alive and never destroying it. cudarc's non-blocking streams are ordered with
/// cuprum's other streams by marks (see [`crate::foreign`]).
pub fn stream(ctx: &CudaContext, stream: &Arc<cd::CudaStream>) -> Result<Stream> {
    same_context(ctx, stream.context(), "a cudarc stream")?;
    let owner: Box<dyn std::any::Any + Send + Sync> = Box::new(stream.clone());
    // SAFETY: the stream is live while its cudarc `Arc` is, which the cuprum stream keeps.
    unsafe { Stream::wrap_raw_cuda(ctx, stream.cu_stream().cast(), Some(owner)) }
}

/// cudarc's wrapper of cuprum's `stream` (`CudaContext::wrap_borrowed_stream`) on cudarc's
/// context `on` (from [`cudarc_context`]). [`Error::Unsupported`] on the emulator or a
/// graph's recording stream.
///
/// # Safety
/// cudarc's wrapper does not keep the cuprum stream alive: keep `stream` (or a clone) alive
/// while the returned cudarc stream, or anything cudarc made with it, may be used. cudarc's
/// work on it is ordered with cuprum's only by the stream itself (see [`crate::foreign`]).
pub unsafe fn cudarc_stream(
    stream: &Stream,
    on: &Arc<cd::CudaContext>,
) -> Result<Arc<cd::CudaStream>> {
    same_context(stream.context(), on, "a cudarc context")?;
    let raw = stream.raw_cuda_stream().ok_or_else(|| Error::Unsupported {
        what: "handing a graph's recording stream to cudarc".to_owned(),
    })?;
    // SAFETY: a stream of this context, alive as long as the caller keeps `stream`.
    Ok(unsafe { on.wrap_borrowed_stream(raw.cast()) })
}

/// The cudarc stream a cuprum stream made by [`stream`] wraps.
fn cudarc_of<'a>(stream: &'a Stream, what: &str) -> Result<&'a Arc<cd::CudaStream>> {
    require_cuda(stream.context(), what)?;
    stream
        .owner::<Arc<cd::CudaStream>>()
        .ok_or_else(|| Error::Interop {
            what: what.to_owned(),
            reason: "the stream was not made from a cudarc stream: make it with \
                     `interop::cudarc::stream`, so that cudarc's events can be recorded on it"
                .to_owned(),
        })
}

/// Frees memory of a leaked `CudaSlice` on its stream, as cudarc's `Drop` does.
fn free_on(stream: &cd::CudaStream, ptr: u64, async_free: bool) {
    let ctx = stream.context();
    if ctx.bind_to_thread().is_err() {
        return;
    }
    // SAFETY: `ptr` was a slice's allocation, leaked and freed once, here, on its stream
    // (which waited for cuprum's unfinished uses first).
    unsafe {
        if async_free {
            let _ = cd::result::free_async(ptr, stream.cu_stream());
        } else {
            let _ = stream.synchronize();
            let _ = cd::result::free_sync(ptr);
        }
    }
}

/// Moves cudarc's `slice` into a [`DeviceBuffer`] of `ctx` without copying (see the module
/// docs for who frees it and on which stream). [`Error::Interop`] when the slice belongs to
/// another context.
pub fn from_slice<T: DeviceCopy>(
    ctx: &CudaContext,
    slice: CudaSlice<T>,
) -> Result<DeviceBuffer<T>> {
    let theirs = slice.stream().clone();
    let home = stream(ctx, &theirs)?;
    let len = slice.len();
    let async_free = theirs.context().has_async_alloc();
    // `leak` makes the slice's stream wait for cudarc's pending reads and writes of it.
    let ptr = slice.leak();
    let freer = theirs.clone();
    let owner = ForeignOwner::new(ORIGIN, move || free_on(&freer, ptr, async_free));
    // SAFETY: the memory is a live allocation of `len` `T`s on this device, now owned by
    // `owner`, whose stream is the home stream.
    match unsafe { DeviceBuffer::from_raw_parts(&home, ptr, len, owner) } {
        Ok(buffer) => Ok(buffer),
        Err(error) => {
            free_on(&theirs, ptr, async_free);
            Err(error)
        }
    }
}

/// Moves `buffer` into cudarc's `CudaSlice` on cudarc's `stream` without copying (see the
/// module docs). The buffer's memory must be cuprum's own or have come from a slice
/// ([`from_slice`]): other foreign memory (a DLPack import) is [`Error::Interop`], as is a
/// buffer that a recorded graph still replays into (it is then dropped as usual).
pub fn into_slice<T: DeviceCopy + DeviceRepr>(
    buffer: DeviceBuffer<T>,
    stream: &Arc<cd::CudaStream>,
) -> Result<CudaSlice<T>> {
    let home = self::stream(buffer.context(), stream)?;
    if let Some(origin) = buffer.foreign_origin().filter(|o| *o != ORIGIN) {
        return Err(Error::Interop {
            what: format!("a buffer over memory from {origin}"),
            reason: "cudarc would free it, but it belongs to that library: copy it into a \
                     buffer of cuprum's first"
                .to_owned(),
        });
    }
    let raw = buffer.into_raw_parts(&home)?;
    if let RawOwner::Foreign(owner) = raw.owner {
        // cudarc's own release (a free): cudarc frees the memory from now on instead.
        drop(owner);
    }
    if raw.address == 0 {
        return stream.null::<T>().map_err(driver_error("cuMemAllocAsync"));
    }
    // SAFETY: a live allocation of `raw.len` `T`s of this device, from `cuMemAllocAsync` or
    // `cuMemAlloc` (cuprum's or cudarc's), which nothing else frees now.
    let mut slice = unsafe { stream.upgrade_device_ptr::<T>(raw.address, raw.len) };
    // Records the slice's write event on `stream`, after everything it waited for, so that
    // cudarc's work on other streams follows.
    drop(slice.device_ptr_mut(stream));
    Ok(slice)
}

/// cudarc's `slice` lent to cuprum for reading, on `stream` (made by [`stream`]): a kernel
/// argument for `&[T]` parameters and a source of copies.
pub struct SliceRef<'a, T: DeviceCopy> {
    // Dropped first: the home stream waits for cuprum's uses, then the event is recorded.
    buffer: DeviceBuffer<T>,
    _record: cd::SyncOnDrop<'a>,
}

/// cudarc's `slice` lent to cuprum for writing, on `stream` (made by [`stream`]): a kernel
/// argument for `DisjointSlice<T>` and `&mut [T]` parameters, and a copy destination.
pub struct SliceMut<'a, T: DeviceCopy> {
    buffer: DeviceBuffer<T>,
    _record: cd::SyncOnDrop<'a>,
}

/// Lends `slice` to cuprum for reading on `stream`, which must have been made from a cudarc
/// stream by [`stream`] (it waits for cudarc's unfinished writes of the slice; its work is
/// recorded as a read of it when the borrow ends).
///
/// A slice is lent once at a time (its memory is one buffer in cuprum's registry; a second
/// borrow while the first lives is [`Error::Interop`]): to pass it as two arguments, pass the
/// one [`SliceRef`] twice.
pub fn borrow<'a, T: DeviceCopy>(
    stream: &'a Stream,
    slice: &'a CudaSlice<T>,
) -> Result<SliceRef<'a, T>> {
    let theirs = cudarc_of(stream, "borrowing a CudaSlice")?;
    same_context(stream.context(), slice.context(), "a CudaSlice")?;
    let (ptr, record) = slice.device_ptr(theirs);
    // SAFETY: the slice's live memory, borrowed for 'a (so not freed or written meanwhile);
    // the buffer is lent for a scope (no graph may keep it) and dropped before the borrow ends.
    let buffer = unsafe {
        DeviceBuffer::from_raw_scoped(stream, ptr, slice.len(), ForeignOwner::lent(ORIGIN))
    }?;
    Ok(SliceRef {
        buffer,
        _record: record,
    })
}

/// Lends `slice` to cuprum for writing on `stream`, which must have been made from a cudarc
/// stream by [`stream`] (it waits for cudarc's unfinished reads and writes of the slice; its
/// work is recorded as a write of it when the borrow ends).
pub fn borrow_mut<'a, T: DeviceCopy>(
    stream: &'a Stream,
    slice: &'a mut CudaSlice<T>,
) -> Result<SliceMut<'a, T>> {
    let theirs = cudarc_of(stream, "borrowing a CudaSlice")?;
    same_context(stream.context(), slice.context(), "a CudaSlice")?;
    let len = slice.len();
    let (ptr, record) = slice.device_ptr_mut(theirs);
    // SAFETY: as in `borrow`, borrowed exclusively.
    let buffer =
        unsafe { DeviceBuffer::from_raw_scoped(stream, ptr, len, ForeignOwner::lent(ORIGIN)) }?;
    Ok(SliceMut {
        buffer,
        _record: record,
    })
}

impl<T: DeviceCopy> SliceRef<'_, T> {
    /// The borrowed memory as a buffer (to copy from, or view part of).
    pub fn as_buffer(&self) -> &DeviceBuffer<T> {
        &self.buffer
    }
}

impl<T: DeviceCopy> SliceMut<'_, T> {
    /// The borrowed memory as a buffer (to copy from, or view part of).
    pub fn as_buffer(&self) -> &DeviceBuffer<T> {
        &self.buffer
    }

    /// Elements `range` of the borrowed memory, to write (copies, kernel arguments).
    pub fn slice_mut(
        &mut self,
        range: impl std::ops::RangeBounds<usize>,
    ) -> Result<crate::DeviceSliceMut<'_, T>> {
        self.buffer.slice_mut(range)
    }
}

impl<T: DeviceCopy> sealed::Sealed for SliceRef<'_, T> {}
impl<T: DeviceCopy> DeviceRead<T> for SliceRef<'_, T> {
    fn span(&self) -> Span<'_, T> {
        self.buffer.span()
    }
}
impl<T: DeviceCopy> sealed::Sealed for SliceMut<'_, T> {}
impl<T: DeviceCopy> DeviceRead<T> for SliceMut<'_, T> {
    fn span(&self) -> Span<'_, T> {
        self.buffer.span()
    }
}
impl<T: DeviceCopy> DeviceWrite<T> for SliceMut<'_, T> {}

impl<T: DeviceCopy> std::fmt::Debug for SliceRef<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("SliceRef").field(&self.buffer).finish()
    }
}

impl<T: DeviceCopy> std::fmt::Debug for SliceMut<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("SliceMut").field(&self.buffer).finish()
    }
}
