//! Streams and device memory of other libraries taken over as cuprum's, and cuprum's handed
//! out: the one low-level path that [`crate::interop::cudarc`], [`crate::interop::dlpack`]
//! and a user's own glue (to CuPy, a C library, ...) all go through.
//!
//! * [`Stream::from_raw_cuda`]: a [`Stream`] that enqueues onto another library's `CUstream`
//!   (never destroying it; an owner value keeps it alive), and [`Stream::raw_cuda_stream`] for
//!   the other way.
//! * [`DeviceBuffer::from_raw_parts`]: a buffer over device memory cuprum did not allocate,
//!   with a [`ForeignOwner`] whose release runs when the buffer (and every graph replaying
//!   into it) is gone; [`DeviceBuffer::into_raw_parts`]: the memory handed out, no longer
//!   freed by cuprum.
//!
//! # Ordering across the boundary
//!
//! Inside cuprum every use of a buffer is ordered like a launch (`ordering.rs`): work on one
//! stream that reads a buffer waits for other streams' unfinished writes of it, a write also
//! for their reads. Foreign memory joins that protocol with a *home stream*, the stream its
//! owner orders its own work and its free on:
//! * taking memory over records the home stream's work so far as the buffer's last write, so
//!   cuprum's work on any stream follows what the owner queued there before;
//! * letting it go makes the home stream wait for cuprum's unfinished uses on other streams,
//!   then runs the owner's release on the host at once: an owner that frees in stream order
//!   (cudarc's `cuMemFreeAsync`, PyTorch's caching allocator, DLPack producers) then never
//!   frees memory a kernel still uses;
//! * [`into_raw_parts`](DeviceBuffer::into_raw_parts) makes the receiving stream wait for
//!   every unfinished use.
//!
//! What cuprum cannot see is the other library's work outside those points: while cuprum holds
//! the memory, the other library must not use it except on the home stream after cuprum's
//! work there (or after synchronizing). The wrappers in `interop` keep the other library's
//! own rules where it has some (cudarc's per-slice events).
//!
//! cuprum's own streams are blocking streams, ordered with the legacy default stream without
//! marks. Another library's stream may be non-blocking (cudarc's `new_stream`, every
//! `torch.cuda.Stream`): wrapping one makes it wait for the default stream's work so far, and
//! from then on the context orders its default stream by marks too, like any other stream.
//! (An operation another thread submits to the default stream while the wrap is under way may
//! miss both: wrap such streams before other threads share buffers with them through the
//! default stream, or synchronize the default stream first.)

use std::any::Any;
use std::ffi::c_void;
use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use crate::buffer::{DeviceBuffer, DeviceCopy};
use crate::context::{CudaContext, Stream, StreamInner};
use crate::error::{Error, Result};
use crate::ordering::{self, Access, ForeignRelease, Memory, Release};

/// `CU_STREAM_LEGACY`, the legacy default stream's special handle.
const STREAM_LEGACY: usize = 0x1;

/// The owner of device memory that a [`DeviceBuffer`] wraps without having allocated it:
/// what gives the memory back when cuprum is done with it.
pub struct ForeignOwner {
    origin: &'static str,
    release: Box<dyn FnOnce() + Send>,
}

impl fmt::Debug for ForeignOwner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ForeignOwner")
            .field("origin", &self.origin)
            .finish_non_exhaustive()
    }
}

impl ForeignOwner {
    /// An owner named `origin` (which library the memory came from, such as `"cudarc"`:
    /// wrappers check it before handing memory back) whose `release` runs once, on the host,
    /// after the home stream has been made to wait for cuprum's unfinished uses (see the
    /// module docs); it must not panic.
    pub fn new(origin: &'static str, release: impl FnOnce() + Send + 'static) -> Self {
        Self {
            origin,
            release: Box::new(release),
        }
    }

    /// Memory lent without a release: its owner keeps it alive by other means.
    pub fn lent(origin: &'static str) -> Self {
        Self::new(origin, || {})
    }

    /// Which library the memory came from.
    pub fn origin(&self) -> &'static str {
        self.origin
    }

    /// Runs the release now.
    pub fn release(self) {
        (self.release)();
    }
}

/// Device memory handed out by [`DeviceBuffer::into_raw_parts`].
#[derive(Debug)]
pub struct RawBuffer {
    /// The first element's device address (`CUdeviceptr`); 0 for an empty buffer.
    pub address: u64,
    /// How many elements.
    pub len: usize,
    /// Who frees it now.
    pub owner: RawOwner,
}

/// Who must free memory handed out by [`DeviceBuffer::into_raw_parts`].
#[derive(Debug)]
pub enum RawOwner {
    /// cuprum allocated it (`cuMemAllocAsync` from the device's default pool, or `cuMemAlloc`
    /// where the device has no pools): free it with `cuMemFreeAsync` or `cuMemFree`. Nothing
    /// for an empty buffer.
    Cuprum,
    /// It came from another library: give it back by [`ForeignOwner::release`] (or through
    /// that library, if the origin says how).
    Foreign(ForeignOwner),
}

impl CudaContext {
    /// The raw `CUcontext` (the device's primary context) for other libraries; `None` on
    /// the emulator. Using it is the caller's business: cuprum keeps it retained while this
    /// context lives.
    pub fn raw_cuda_context(&self) -> Option<*mut c_void> {
        self.inner.backend.raw_context()
    }
}

impl Stream {
    /// A stream that enqueues onto another library's CUDA stream `stream` (a `CUstream` of
    /// this context's device's primary context; null or `CU_STREAM_LEGACY` give the
    /// context's default stream). cuprum never destroys it; `owner` (a cudarc `Arc` of the
    /// stream, say) is kept until this stream and all its clones are gone. Its work is
    /// ordered with cuprum's other streams as the module docs say, whether or not it is a
    /// non-blocking stream. [`Error::Unsupported`] on the emulator; [`Error::Interop`] for a
    /// stream of another context.
    ///
    /// # Safety
    /// `stream` must be a live CUDA stream, and stay alive (through `owner`, or otherwise)
    /// for as long as this `Stream` or a clone of it exists.
    pub unsafe fn from_raw_cuda(
        ctx: &CudaContext,
        stream: *mut c_void,
        owner: Option<Box<dyn Any + Send + Sync>>,
    ) -> Result<Stream> {
        if stream.is_null() || stream as usize == STREAM_LEGACY {
            ctx.inner.backend.borrow_stream_check()?;
            return Ok(ctx.default_stream());
        }
        // SAFETY: the caller's contract.
        unsafe { Self::wrap_raw_cuda(ctx, stream, owner) }
    }

    /// [`from_raw_cuda`](Self::from_raw_cuda) without mapping the legacy default stream to
    /// the context's default stream: a stream of its own that holds `owner` (and is ordered
    /// by marks, which on the legacy stream are merely redundant).
    ///
    /// # Safety
    /// As `from_raw_cuda`.
    pub(crate) unsafe fn wrap_raw_cuda(
        ctx: &CudaContext,
        stream: *mut c_void,
        owner: Option<Box<dyn Any + Send + Sync>>,
    ) -> Result<Stream> {
        let (handle, blocking) = ctx.inner.backend.borrow_stream(stream)?;
        if !blocking {
            // From now on the default stream is ordered by marks (`Stream::ordered_with_all`);
            // what it was given before, this stream waits for here.
            ctx.inner.unordered_streams.store(true, Ordering::Release);
            ctx.inner
                .backend
                .follow_legacy(&handle)
                .map_err(|f| ctx.fail(f, None))?;
        }
        Ok(Stream::from_parts(
            Arc::new(StreamInner::foreign(handle, owner)),
            ctx.clone(),
        ))
    }

    /// The raw `CUstream` this stream enqueues onto (null for the legacy default stream), for
    /// other libraries; `None` on the emulator and for a graph's recording stream. cuprum keeps
    /// it alive while this `Stream` lives.
    pub fn raw_cuda_stream(&self) -> Option<*mut c_void> {
        self.context().inner.backend.raw_stream(self.handle())
    }

    /// The owner value given to [`from_raw_cuda`](Self::from_raw_cuda), if it is a `T`.
    pub(crate) fn owner<T: 'static>(&self) -> Option<&T> {
        self.inner.owner.as_ref()?.0.downcast_ref::<T>()
    }
}

impl<T: DeviceCopy> DeviceBuffer<T> {
    /// A buffer of `len` elements over device memory cuprum did not allocate, at `address`,
    /// whose home stream is `stream` (see the module docs: the home stream's work so far
    /// counts as the buffer's last write; when the buffer and every graph using it are gone,
    /// the home stream waits for cuprum's unfinished uses and then `owner`'s release runs).
    /// The memory joins the registry of live buffers, so launches check and order it like
    /// any buffer.
    ///
    /// Errors, with `owner` dropped unreleased (the memory stays the caller's):
    /// [`Error::Unsupported`] on the emulator; [`Error::Interop`] when the driver says the
    /// address is not device memory of this device, when it is not aligned for `T`, or when
    /// the range overlaps a live buffer. A kernel takes it as a slice only if `address` is a
    /// multiple of 16 bytes (the launch checks).
    ///
    /// # Safety
    /// `address..address + len * size_of::<T>()` must be device memory of this context's
    /// device, holding valid `T` values, that stays allocated until `owner`'s release runs
    /// (or until [`into_raw_parts`](Self::into_raw_parts) hands it back); while the buffer
    /// lives, nothing outside cuprum may write it, or read it other than on the home stream
    /// after cuprum's work there.
    pub unsafe fn from_raw_parts(
        stream: &Stream,
        address: u64,
        len: usize,
        owner: ForeignOwner,
    ) -> Result<Self> {
        // SAFETY: the caller's contract.
        unsafe { Self::wrap_foreign(stream, address, len, owner, false) }
    }

    /// A buffer of `len` elements at `address` in an allocation another party owns and keeps
    /// alive for as long as `keep` is (cuTile Rust's `DeviceAllocation`: a framework's buffer
    /// whose `Arc` is the liveness token), on both backends:
    /// * inside one live buffer of this context (memory cuprum allocated and lent out, such
    ///   as `cuprum::tile::cuda_core::malloc_async`'s, also on the emulator): the new buffer
    ///   shares that allocation and its ordering, and keeps `keep` alive with it;
    /// * in no live buffer (memory of another library, on a GPU): as
    ///   [`from_raw_parts`](Self::from_raw_parts), `keep` dropped by the owner's release.
    ///
    /// `stream`'s work so far counts as the buffer's last write either way.
    ///
    /// Errors: [`Error::Interop`] when the range is not aligned for `T`, does not fit in the
    /// address space, lies (even partly) in another context's buffer or runs past the end
    /// of the live buffer it starts in, or on the emulator lies in no emulated buffer; and
    /// those of `from_raw_parts` on a GPU.
    ///
    /// # Safety
    /// As [`from_raw_parts`](Self::from_raw_parts): the range is device memory of this
    /// context holding valid `T`s, alive while `keep` is, and nothing outside cuprum writes
    /// it (or reads it other than after cuprum's work) while the buffer lives.
    pub unsafe fn borrow_allocation(
        stream: &Stream,
        address: u64,
        len: usize,
        keep: Arc<dyn Any + Send + Sync>,
    ) -> Result<Self> {
        let () = T::__ASSERT_NO_PADDING;
        let ctx = stream.context().clone();
        let what = || format!("device memory at {address:#x}");
        let bytes = len
            .checked_mul(size_of::<T>())
            .and_then(|b| u64::try_from(b).ok())
            .filter(|&b| address.checked_add(b).is_some())
            .ok_or_else(|| Error::Interop {
                what: what(),
                reason: format!(
                    "{len} elements of `{}` from there do not fit in the address space",
                    std::any::type_name::<T>()
                ),
            })?;
        if !address.is_multiple_of(align_of::<T>() as u64) {
            return Err(Error::Interop {
                what: what(),
                reason: format!(
                    "it is not aligned for `{}` ({} bytes)",
                    std::any::type_name::<T>(),
                    align_of::<T>()
                ),
            });
        }
        if bytes == 0 {
            drop(keep);
            let memory = Memory::register(&ctx, 0, 0);
            return Ok(Self::from_memory(ctx, 0, len, memory));
        }
        let owner = ordering::owners(&ctx, &[(address, bytes)]).pop();
        match owner {
            Some(ordering::Owner::Own(memory)) => {
                ordering::hold(stream, &[(&memory.uses, Access::Write)])?.note_after()?;
                Ok(DeviceBuffer::sharing(ctx, address, len, memory, keep))
            }
            Some(ordering::Owner::Foreign) => Err(Error::Interop {
                what: what(),
                reason: "it is a buffer of another device's context: borrow it on that \
                         device's stream"
                    .to_owned(),
            }),
            Some(ordering::Owner::Unknown) | None
                if ctx.backend() == crate::BackendKind::Emulator =>
            {
                Err(Error::Interop {
                    what: format!("{} ({bytes} bytes)", what()),
                    reason: "the emulator's memory holds no such range: on the emulator only \
                             memory cuprum allocated (a buffer, `malloc_async`) can be \
                             borrowed, whole or in part"
                        .to_owned(),
                })
            }
            Some(ordering::Owner::Unknown) | None => {
                let owner = ForeignOwner::new("foreign allocation", move || drop(keep));
                // SAFETY: the caller's contract.
                unsafe { Self::from_raw_parts(stream, address, len, owner) }
            }
        }
    }

    /// [`from_raw_parts`](Self::from_raw_parts) of memory lent for a scope: no graph may
    /// keep it (recording refuses it).
    ///
    /// # Safety
    /// As `from_raw_parts`, until the buffer is dropped.
    pub(crate) unsafe fn from_raw_scoped(
        stream: &Stream,
        address: u64,
        len: usize,
        owner: ForeignOwner,
    ) -> Result<Self> {
        // SAFETY: the caller's contract.
        unsafe { Self::wrap_foreign(stream, address, len, owner, true) }
    }

    unsafe fn wrap_foreign(
        stream: &Stream,
        address: u64,
        len: usize,
        owner: ForeignOwner,
        scoped: bool,
    ) -> Result<Self> {
        let () = T::__ASSERT_NO_PADDING;
        let ctx = stream.context().clone();
        if stream.is_recording() {
            return Err(Error::Unsupported {
                what: "wrapping foreign memory on a graph's recording stream: wrap it on the \
                       stream its owner uses"
                    .to_owned(),
            });
        }
        let bytes = len
            .checked_mul(size_of::<T>())
            .ok_or_else(|| Error::Interop {
                what: format!("{len} elements of `{}`", std::any::type_name::<T>()),
                reason: "their size does not fit in the address space".to_owned(),
            })?;
        if bytes == 0 {
            ctx.inner.backend.borrow_stream_check()?;
            owner.release();
            let memory = Memory::register(&ctx, 0, 0);
            return Ok(Self::from_memory(ctx, 0, len, memory));
        }
        if !address.is_multiple_of(align_of::<T>() as u64) {
            return Err(Error::Interop {
                what: format!("device memory at {address:#x}"),
                reason: format!(
                    "it is not aligned for `{}` ({} bytes)",
                    std::any::type_name::<T>(),
                    align_of::<T>()
                ),
            });
        }
        ctx.inner.backend.check_device_memory(address)?;
        let release = ForeignRelease {
            stream: stream.clone(),
            owner: Mutex::new(Some(owner)),
            scoped,
        };
        let memory = Memory::register_foreign(&ctx, address, bytes as u64, release)?;
        // The owner's work on the home stream so far is the buffer's last write.
        ordering::hold(stream, &[(&memory.uses, Access::Write)])?.note_after()?;
        Ok(Self::from_memory(ctx, address, len, memory))
    }

    /// Which library the memory came from, for a buffer made by
    /// [`from_raw_parts`](Self::from_raw_parts) (its owner's origin); `None` for cuprum's own.
    pub fn foreign_origin(&self) -> Option<&'static str> {
        match &self.memory.release {
            Release::Foreign(f) => f
                .owner
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .as_ref()
                .map(ForeignOwner::origin),
            Release::Own | Release::Given => None,
        }
    }

    /// Hands the memory out: cuprum no longer frees it, and `stream` (of this buffer's
    /// context) waits, on the device, for every unfinished use of it on other streams, so
    /// work its new owner queues on `stream` follows cuprum's. The [`RawBuffer`] says who
    /// frees it now.
    ///
    /// Errors: [`Error::Unsupported`] on the emulator or a recording stream;
    /// [`Error::Interop`] while a recorded [`Graph`](crate::Graph) still replays into the
    /// buffer, or for a buffer imported from one of cuprum's own DLPack exports (whose memory
    /// is the exported buffer's); the buffer is then dropped as usual, after its uses.
    pub fn into_raw_parts(self, stream: &Stream) -> Result<RawBuffer> {
        let Some((ctx, address, len, memory)) = self.into_memory() else {
            return Err(Error::Interop {
                what: "a buffer imported from one of cuprum's own DLPack exports".to_owned(),
                reason: "its memory still belongs to the exported buffer: copy it into a new \
                         buffer to hand it out"
                    .to_owned(),
            });
        };
        ctx.check_same(stream.context())?;
        if stream.is_recording() || stream.raw_cuda_stream().is_none() {
            return Err(Error::Unsupported {
                what: "handing a buffer's memory out on the CPU emulator or a graph's \
                       recording stream: it has no CUDA memory or stream to hand out"
                    .to_owned(),
            });
        }
        if address == 0 {
            return Ok(RawBuffer {
                address,
                len,
                owner: RawOwner::Cuprum,
            });
        }
        let mut memory = Arc::try_unwrap(memory).map_err(|_| Error::Interop {
            what: format!("device buffer at {address:#x}"),
            reason: "a recorded graph still replays into it: drop the graph first".to_owned(),
        })?;
        // Held (not noted): the new owner's work on `stream` follows every use so far.
        drop(ordering::hold(stream, &[(&memory.uses, Access::Write)])?);
        let owner = match std::mem::replace(&mut memory.release, Release::Given) {
            Release::Own | Release::Given => RawOwner::Cuprum,
            Release::Foreign(foreign) => match foreign
                .owner
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take()
            {
                Some(owner) => RawOwner::Foreign(owner),
                None => RawOwner::Cuprum,
            },
        };
        drop(memory);
        Ok(RawBuffer {
            address,
            len,
            owner,
        })
    }
}
