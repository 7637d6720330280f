//! Page-locked (pinned) host memory that programs fill and read themselves, and copies
//! between it and device buffers that return at once ([`DeviceBuffer::copy_from_pinned`],
//! [`DeviceBuffer::copy_to_pinned`]): what overlaps transfers with kernels on other streams.
//!
//! Why safe code cannot touch host memory the device is copying, nor free it under a copy:
//! a [`PinnedBuffer`] records the completion of every copy that reads or writes it. Its
//! elements are reached only through [`PinnedBuffer::as_slice`] (which first waits for the
//! copies *into* it: the device must not write what the host reads) and
//! [`PinnedBuffer::as_mut_slice`] (which waits for every copy: the device reads or writes it);
//! a copy into it takes it `&mut`, so no slice of it is alive while one is enqueued; and its
//! drop waits for every copy before the memory goes back. Leaking it (`mem::forget`) leaks the
//! memory, which the device may still write: harmless. The device side is ordered as every
//! other use of a buffer is (`ordering`): later work on other streams that uses the buffer
//! waits for the copy.
//!
//! On the emulator a copy is done when it is submitted, and the memory is ordinary heap
//! memory.

use std::fmt;
use std::marker::PhantomData;
use std::sync::Mutex;

use crate::buffer::{DeviceBuffer, DeviceCopy};
use crate::completion::Completion;
use crate::context::{CudaContext, Stream};
use crate::error::{Error, Result};
use crate::ordering::Access;

/// Page-locked host memory holding `len` elements of `T` (see the module docs).
pub struct PinnedBuffer<T: DeviceCopy> {
    memory: Memory,
    len: usize,
    /// Copies that write this memory (to the host) and that read it (to the device), not
    /// yet known to have ended.
    pending: Mutex<Pending>,
    ctx: CudaContext,
    _elements: PhantomData<T>,
}

/// Where the elements are.
enum Memory {
    /// Driver-allocated page-locked memory at this host address.
    Pinned(u64),
    /// The emulator's: ordinary heap memory (copies there end when submitted), 16-byte
    /// aligned words.
    Heap(Vec<u128>),
}

#[derive(Default)]
struct Pending {
    writes: Vec<Completion>,
    reads: Vec<Completion>,
}

// SAFETY: the memory is owned by the value (the driver's page-locked memory is process-wide
// host memory); every access goes through `&self`/`&mut self` after the copies that race with
// it have ended, and `pending` is behind a mutex.
unsafe impl<T: DeviceCopy> Send for PinnedBuffer<T> {}
// SAFETY: as above; `as_slice` gives shared access only after the device's writes ended.
unsafe impl<T: DeviceCopy> Sync for PinnedBuffer<T> {}

impl<T: DeviceCopy> PinnedBuffer<T> {
    /// `len` zeroed elements of page-locked memory of `ctx` (heap memory on the emulator).
    /// [`Error::OutOfMemory`] if the host has no more to lock.
    pub fn zeroed(ctx: &CudaContext, len: usize) -> Result<Self> {
        let bytes =
            len.checked_mul(std::mem::size_of::<T>())
                .ok_or_else(|| Error::OutOfMemory {
                    bytes: (len as u128) * std::mem::size_of::<T>() as u128,
                    detail: "the size overflows the address space".into(),
                })?;
        let memory = match ctx.inner.backend.alloc_pinned(bytes.max(1)) {
            Ok(Some(ptr)) => {
                // SAFETY: the driver gave `bytes.max(1)` bytes at `ptr`, owned here.
                unsafe { std::ptr::write_bytes(ptr as *mut u8, 0, bytes) };
                Memory::Pinned(ptr)
            }
            Ok(None) => Memory::Heap(vec![0u128; bytes.div_ceil(16)]),
            Err(f) => return Err(ctx.fail(f, None)),
        };
        Ok(Self {
            memory,
            len,
            pending: Mutex::new(Pending::default()),
            ctx: ctx.clone(),
            _elements: PhantomData,
        })
    }

    /// Page-locked memory of `ctx` holding a copy of `data`.
    pub fn from_slice(ctx: &CudaContext, data: &[T]) -> Result<Self> {
        let mut buffer = Self::zeroed(ctx, data.len())?;
        buffer.as_mut_slice()?.copy_from_slice(data);
        Ok(buffer)
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The context whose device copies to and from it.
    pub fn context(&self) -> &CudaContext {
        &self.ctx
    }

    fn address(&self) -> u64 {
        match &self.memory {
            Memory::Pinned(ptr) => *ptr,
            Memory::Heap(words) => words.as_ptr() as u64,
        }
    }

    /// The elements, once every copy into this memory has ended (waiting for them; a fault
    /// of that work is the error).
    pub fn as_slice(&self) -> Result<&[T]> {
        self.wait(false)?;
        // SAFETY: `len` elements of `T` live at the address (zeroed or written by copies of
        // `T`s, every bit pattern of which is valid: `DeviceCopy`); no copy writes them now,
        // and none can start while this borrow of `self` lives (copies into it take `&mut`).
        Ok(unsafe { std::slice::from_raw_parts(self.address() as *const T, self.len) })
    }

    /// The elements, mutably, once every copy from or into this memory has ended.
    pub fn as_mut_slice(&mut self) -> Result<&mut [T]> {
        self.wait(true)?;
        // SAFETY: as in `as_slice`, and no copy reads them either; `&mut self` makes this the
        // only access.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.address() as *mut T, self.len) })
    }

    /// Whether every copy from or into it has ended, without waiting.
    pub fn is_idle(&self) -> bool {
        let pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        pending
            .writes
            .iter()
            .chain(&pending.reads)
            .all(Completion::is_complete)
    }

    /// Waits for the copies into it (and with `reads`, those from it too).
    fn wait(&self, reads: bool) -> Result<()> {
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        let mut outcome = Ok(());
        for c in pending.writes.drain(..) {
            let done = c.wait();
            if outcome.is_ok() {
                outcome = done;
            }
        }
        if reads {
            for c in pending.reads.drain(..) {
                let done = c.wait();
                if outcome.is_ok() {
                    outcome = done;
                }
            }
        }
        outcome
    }

    fn note(&self, completion: Completion, write: bool) {
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        let list = if write {
            &mut pending.writes
        } else {
            &mut pending.reads
        };
        list.retain(|c| !c.is_complete());
        list.push(completion);
    }
}

impl<T: DeviceCopy> Drop for PinnedBuffer<T> {
    fn drop(&mut self) {
        // The device may be copying from or into the memory: wait before it goes back. A
        // fault has nowhere to go here; it is sticky and the next use reports it.
        let _ = self.wait(true);
        if let Memory::Pinned(ptr) = self.memory {
            self.ctx.inner.backend.free_pinned(ptr);
        }
    }
}

impl<T: DeviceCopy> fmt::Debug for PinnedBuffer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PinnedBuffer")
            .field("len", &self.len)
            .field("idle", &self.is_idle())
            .finish()
    }
}

impl<T: DeviceCopy> DeviceBuffer<T> {
    /// Enqueues a copy of `src` into this buffer on `stream` and returns at once: the host
    /// goes on while the device copies (at the full bandwidth of the bus, from page-locked
    /// memory), and other work on `stream` may use the buffer right away. `src` may be read
    /// meanwhile; [`PinnedBuffer::as_mut_slice`] and its drop wait for the copy. The lengths
    /// must be equal ([`Error::LengthMismatch`]).
    pub fn copy_from_pinned(&mut self, stream: &Stream, src: &PinnedBuffer<T>) -> Result<()> {
        self.check_pinned(stream, src.len, &src.ctx, "copy_from_pinned")?;
        let bytes = self.size_bytes();
        if bytes == 0 {
            return Ok(());
        }
        let ctx = stream.context();
        let held = crate::ordering::hold(stream, &[(&self.memory.uses, Access::Write)])?;
        // SAFETY: `addr..addr + bytes` is this buffer's allocation; `src` holds `bytes` bytes
        // of page-locked memory (the emulator: any host memory), which nothing writes or frees
        // until the completion noted below says the copy has ended.
        unsafe {
            ctx.inner
                .backend
                .write_async(stream.handle(), self.addr, src.address(), bytes)
        }
        .map_err(|f| ctx.fail(f, Some(stream)))?;
        let completion = crate::staged::copy_enqueued(held, stream)?;
        src.note(completion, false);
        Ok(())
    }

    /// Enqueues a copy of this buffer into `dst` on `stream` (after the stream's earlier
    /// work) and returns at once; [`PinnedBuffer::as_slice`] waits for it. The lengths must
    /// be equal ([`Error::LengthMismatch`]).
    pub fn copy_to_pinned(&self, stream: &Stream, dst: &mut PinnedBuffer<T>) -> Result<()> {
        self.check_pinned(stream, dst.len, &dst.ctx, "copy_to_pinned")?;
        let bytes = self.size_bytes();
        if bytes == 0 {
            return Ok(());
        }
        let ctx = stream.context();
        let held = crate::ordering::hold(stream, &[(&self.memory.uses, Access::Read)])?;
        // SAFETY: as in `copy_from_pinned`; `&mut dst` means no slice of it is alive, and
        // every later access waits for the completion noted below.
        unsafe {
            ctx.inner
                .backend
                .read_async(stream.handle(), self.addr, dst.address(), bytes)
        }
        .map_err(|f| ctx.fail(f, Some(stream)))?;
        let completion = crate::staged::copy_enqueued(held, stream)?;
        dst.note(completion, true);
        Ok(())
    }

    fn check_pinned(
        &self,
        stream: &Stream,
        len: usize,
        ctx: &CudaContext,
        what: &str,
    ) -> Result<()> {
        let own = self.context();
        own.check_same(stream.context())?;
        own.check_same(ctx)?;
        if len != self.len() {
            return Err(Error::LengthMismatch {
                what: format!("{what}: the pinned buffer"),
                expected: self.len(),
                actual: len,
            });
        }
        Ok(())
    }
}
