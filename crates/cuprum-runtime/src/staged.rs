//! Reads of device memory that return before the copy is done, so that a thread awaiting a
//! copy to the host (the tile track's `to_host_vec().await`) is not blocked while the device
//! works.
//!
//! [`DeviceBuffer::read_pending`] enqueues the copy into page-locked (pinned) host memory
//! that the read owns, after the stream's earlier work, and records a [`Completion`] after
//! it; [`PendingRead::finish`] gives the elements once that is complete (waiting first if it
//! is not). Why this is sound: the host memory belongs to the read alone, so nothing on the
//! host can see it while the device writes it; it is read only after the completion says the
//! copy has ended; and a read dropped before then waits for the copy before the memory goes
//! back, so the device never writes into freed memory. The buffer's own ordering marks
//! (`ordering`) order later writes of the buffer after the copy, as for any other read.
//!
//! The other way, [`DeviceBuffer::from_host_pending`] copies host data into pinned memory
//! (on the host, at once), enqueues the copy to the device from there, and gives the buffer
//! with a [`PendingWrite`] that owns the pinned memory: the buffer may be used on the stream
//! at once (the stream orders the work after the copy), and the `PendingWrite` keeps the
//! memory until the copy has ended, waiting for it if dropped before.
//!
//! On the emulator a copy is done when it is submitted: a pending read there is finished
//! when made, and a pending write has nothing to keep. A read of an empty buffer waits for
//! the stream, as [`DeviceBuffer::to_host_vec`] does.

use std::fmt;

use crate::buffer::{DeviceBuffer, DeviceCopy};
use crate::completion::Completion;
use crate::context::{CudaContext, Stream};
use crate::error::Result;
use crate::ordering::{self, Access};

/// A copy of a buffer to the host that may still be running. See the module docs.
pub struct PendingRead<T: DeviceCopy> {
    state: State<T>,
}

enum State<T> {
    /// The elements are here (the emulator, an empty buffer, or after `finish`).
    Done(Vec<T>),
    /// The device copies `len` elements into `pinned`; complete when `completion` is.
    Copying {
        pinned: Pinned,
        len: usize,
        completion: Completion,
    },
}

/// Page-locked host memory of a context, given back when dropped.
struct Pinned {
    ctx: CudaContext,
    ptr: u64,
}

impl Drop for Pinned {
    fn drop(&mut self) {
        self.ctx.inner.backend.free_pinned(self.ptr);
    }
}

impl<T: DeviceCopy> PendingRead<T> {
    /// Whether the copy has ended (so [`finish`](Self::finish) does not wait).
    pub fn is_complete(&self) -> bool {
        match &self.state {
            State::Done(_) => true,
            State::Copying { completion, .. } => completion.is_complete(),
        }
    }

    /// The point after the copy, to await (`None` when the elements are already here).
    pub fn completion(&self) -> Option<&Completion> {
        match &self.state {
            State::Done(_) => None,
            State::Copying { completion, .. } => Some(completion),
        }
    }

    /// The elements, in order; waits for the copy first if it has not ended. A fault of the
    /// work the copy waited for is its error.
    pub fn finish(mut self) -> Result<Vec<T>> {
        let state = std::mem::replace(&mut self.state, State::Done(Vec::new()));
        match state {
            State::Done(out) => Ok(out),
            State::Copying {
                pinned,
                len,
                completion,
            } => {
                // On failure `pinned` is dropped after the wait: the copy has ended either way.
                completion.wait()?;
                let mut out = Vec::<T>::with_capacity(len);
                // SAFETY: the copy of `len` elements into `pinned` has completed, and nothing
                // else writes it; every bit pattern the device stores is a valid `T`
                // (`DeviceCopy`), so the `len` elements are initialized.
                unsafe {
                    std::ptr::copy_nonoverlapping(pinned.ptr as *const T, out.as_mut_ptr(), len);
                    out.set_len(len);
                }
                Ok(out)
            }
        }
    }
}

/// A read dropped while its copy runs waits for the copy, blocking, before its host memory
/// is given back.
impl<T: DeviceCopy> Drop for PendingRead<T> {
    fn drop(&mut self) {
        if let State::Copying { completion, .. } = &self.state {
            // The outcome has nowhere to go; a fault is sticky and the next use reports it.
            let _ = completion.wait();
        }
    }
}

impl<T: DeviceCopy> fmt::Debug for PendingRead<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PendingRead")
            .field("complete", &self.is_complete())
            .finish()
    }
}

/// Pinned host memory a copy to the device reads, kept until the copy has ended (see the
/// module docs): dropping it waits for the copy first.
pub struct PendingWrite {
    copying: Option<(Pinned, Completion)>,
}

impl PendingWrite {
    /// Whether the copy has ended.
    pub fn is_complete(&self) -> bool {
        self.copying
            .as_ref()
            .is_none_or(|(_, completion)| completion.is_complete())
    }

    /// Waits for the copy, then gives the memory back; a fault of the work the copy waited
    /// for is its error.
    pub fn wait(mut self) -> Result<()> {
        match self.copying.take() {
            Some((pinned, completion)) => {
                let done = completion.wait();
                drop(pinned);
                done
            }
            None => Ok(()),
        }
    }
}

/// Dropped while the copy runs, it waits for the copy before its memory goes back.
impl Drop for PendingWrite {
    fn drop(&mut self) {
        if let Some((_, completion)) = &self.copying {
            // The outcome has nowhere to go; a fault is sticky and the next use reports it.
            let _ = completion.wait();
        }
    }
}

impl fmt::Debug for PendingWrite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PendingWrite")
            .field("complete", &self.is_complete())
            .finish()
    }
}

impl<T: DeviceCopy> DeviceBuffer<T> {
    /// A new buffer holding `data`, whose copy to the device is enqueued on `stream` and may
    /// still run when this returns: the buffer can be used on `stream` at once, and the
    /// [`PendingWrite`] keeps the host side of the copy until it has ended. See
    /// [`crate::staged`].
    ///
    /// ```
    /// use cuprum_runtime::{CudaContext, DeviceBuffer};
    ///
    /// # fn main() -> cuprum_runtime::Result<()> {
    /// let ctx = CudaContext::new(0)?;
    /// let stream = ctx.new_stream()?;
    /// let (buffer, copying) = DeviceBuffer::from_host_pending(&stream, &[1u32, 2, 3])?;
    /// // `data` may change now; the device still gets what it was.
    /// assert_eq!(buffer.to_host_vec(&stream)?, [1, 2, 3]);
    /// copying.wait()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn from_host_pending(stream: &Stream, data: &[T]) -> Result<(Self, PendingWrite)> {
        let nothing = PendingWrite { copying: None };
        let mut buffer = Self::alloc(stream, data.len())?;
        let bytes = buffer.size_bytes();
        if bytes == 0 {
            return Ok((buffer, nothing));
        }
        let ctx = stream.context();
        let backend = &ctx.inner.backend;
        let ptr = match backend.alloc_pinned(bytes) {
            Ok(Some(ptr)) => ptr,
            // The emulator: the copy is done when submitted.
            Ok(None) => {
                buffer.copy_from_host(stream, data)?;
                return Ok((buffer, nothing));
            }
            Err(f) => return Err(ctx.fail(f, Some(stream))),
        };
        let pinned = Pinned {
            ctx: ctx.clone(),
            ptr,
        };
        // SAFETY: `pinned` is `bytes` bytes of host memory only this function reaches yet.
        unsafe {
            std::ptr::copy_nonoverlapping(
                crate::buffer::as_bytes(data).as_ptr(),
                ptr as *mut u8,
                bytes,
            );
        }
        let held = ordering::hold(stream, &[(&buffer.memory.uses, Access::Write)])?;
        // SAFETY: `addr..addr+bytes` is the new buffer's allocation; `pinned` holds the data
        // and is kept until the copy has ended (below, and in `PendingWrite`).
        unsafe { backend.write_async(stream.handle(), buffer.addr, ptr, bytes) }
            .map_err(|f| ctx.fail(f, Some(stream)))?;
        let completion = copy_enqueued(held, stream)?;
        Ok((
            buffer,
            PendingWrite {
                copying: Some((pinned, completion)),
            },
        ))
    }

    /// Starts copying the buffer to the host after the work on `stream`, and returns without
    /// waiting for it; [`PendingRead::finish`] gives the elements. See [`crate::staged`].
    ///
    /// ```
    /// use cuprum_runtime::{CudaContext, DeviceBuffer};
    ///
    /// # fn main() -> cuprum_runtime::Result<()> {
    /// let ctx = CudaContext::new(0)?;
    /// let stream = ctx.new_stream()?;
    /// let buffer = DeviceBuffer::from_host(&stream, &[1u32, 2, 3])?;
    /// let pending = buffer.read_pending(&stream)?;
    /// // The host goes on while the device copies; in async code, await
    /// // `pending.completion()` first.
    /// assert_eq!(pending.finish()?, [1, 2, 3]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn read_pending(&self, stream: &Stream) -> Result<PendingRead<T>> {
        let ctx = self.context();
        ctx.check_same(stream.context())?;
        let bytes = self.size_bytes();
        if bytes == 0 {
            return Ok(PendingRead {
                state: State::Done(self.to_host_vec(stream)?),
            });
        }
        let backend = &ctx.inner.backend;
        let ptr = match backend.alloc_pinned(bytes) {
            Ok(Some(ptr)) => ptr,
            // The emulator: the copy is done when submitted.
            Ok(None) => {
                return Ok(PendingRead {
                    state: State::Done(self.to_host_vec(stream)?),
                });
            }
            Err(f) => return Err(ctx.fail(f, Some(stream))),
        };
        let pinned = Pinned {
            ctx: ctx.clone(),
            ptr,
        };
        let held = ordering::hold(stream, &[(&self.memory.uses, Access::Read)])?;
        // SAFETY: `addr..addr+bytes` is this buffer's live allocation; `pinned` is `bytes` of
        // pinned memory that only this read reaches, kept until the copy has ended (below, and
        // in `PendingRead`'s `finish` and `Drop`).
        unsafe { backend.read_async(stream.handle(), self.addr, ptr, bytes) }
            .map_err(|f| ctx.fail(f, Some(stream)))?;
        let completion = copy_enqueued(held, stream)?;
        Ok(PendingRead {
            state: State::Copying {
                pinned,
                len: self.len(),
                completion,
            },
        })
    }
}

/// After a copy through pinned memory has been enqueued on `stream`: notes the buffer's use
/// (as `held`) for the runtime's ordering and gives the completion the pinned memory must be
/// kept until. On failure it waits for the stream first, since the copy may be running and
/// the caller then frees the memory.
pub(crate) fn copy_enqueued(held: ordering::Held<'_>, stream: &Stream) -> Result<Completion> {
    let ended = |e| {
        let _ = stream.synchronize();
        e
    };
    held.note_after().map_err(ended)?;
    stream.completion().map_err(ended)
}
