//! Which context owns a device address, and how the uses of one buffer on different streams
//! are ordered.
//!
//! Two promises of the safe API rest on this module:
//! * **A launch touches only memory of its own context.** Every live [`DeviceBuffer`] is in
//!   one process-wide registry of address ranges, with the context that owns it. A launch looks
//!   up every slice argument there: a buffer of another context is [`Error::ContextMismatch`],
//!   inputs included, before anything runs. (Addresses are unique in a process: a GPU process
//!   has one address space, and every emulated context hands out addresses from its own window,
//!   see `backend/emu.rs`.)
//! * **Work on different streams never sees a buffer half-way.** A kernel or copy on one stream
//!   that reads a buffer waits, on the device, for the unfinished work of other streams that
//!   wrote it; one that writes it also waits for their unfinished reads. This is the approach
//!   of cudarc (per-buffer events), with reads kept per stream, so that a write waits for every
//!   stream still reading and not only for the last one. Streams still run side by side on
//!   independent buffers; the host never waits.
//!
//! Each buffer keeps the marks (events without timing) of its last write and of the reads since
//! then, on streams other than the legacy default stream. That stream needs none: all our
//! streams are blocking streams, so work on the default stream waits for everything submitted
//! earlier to any stream and everything submitted later waits for it; an operation there makes
//! the earlier marks moot and is not recorded. On the emulator every operation completes when it
//! is submitted, so there is nothing to order; only the context check applies.
//!
//! [`DeviceBuffer`]: crate::DeviceBuffer

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, Weak};

use crate::backend::MarkHandle;
use crate::context::{CudaContext, Stream, StreamInner};
use crate::error::Result;

/// How an operation uses a buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Access {
    /// Reads it only.
    Read,
    /// May write it (and read it).
    Write,
}

/// A point of one stream: the work submitted to it before the mark.
#[derive(Clone)]
struct Mark {
    /// Weak, so a mark neither keeps a stream alive nor can mistake a later stream at the same
    /// address for this one (the allocation stays while the weak count does).
    stream: Weak<StreamInner>,
    event: Arc<MarkHandle>,
}

impl Mark {
    fn on(&self, stream: &Stream) -> bool {
        std::ptr::eq(self.stream.as_ptr(), Arc::as_ptr(&stream.inner))
    }
}

#[derive(Default)]
struct Marks {
    /// The last write on a stream other than the default stream, unless known complete.
    write: Option<Mark>,
    /// Reads on streams other than the default stream since that write: one per stream.
    reads: Vec<Mark>,
}

/// The stream-ordering state of one buffer.
#[derive(Default)]
pub(crate) struct BufferUses {
    marks: Mutex<Marks>,
}

impl BufferUses {
    fn lock(&self) -> std::sync::MutexGuard<'_, Marks> {
        self.marks.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Makes `stream` wait for the unfinished uses of other streams that an `access` must
    /// follow. Nothing to do on the emulator or on the default stream.
    pub(crate) fn order_before(&self, stream: &Stream, access: Access) -> Result<()> {
        let ctx = stream.context();
        if stream.is_default() {
            return Ok(());
        }
        let marks = self.lock();
        let reads = match access {
            Access::Read => &[][..],
            Access::Write => &marks.reads[..],
        };
        for mark in marks.write.iter().chain(reads) {
            if !mark.on(stream) {
                ctx.inner
                    .backend
                    .wait_mark(stream.handle(), &mark.event)
                    .map_err(|f| ctx.fail(f, Some(stream)))?;
            }
        }
        Ok(())
    }

    /// Records that `access` was submitted to `stream`, ending at `mark` (`None` on the
    /// emulator, the default stream, or when the operation has already completed).
    pub(crate) fn note(&self, stream: &Stream, access: Access, mark: Option<&Arc<MarkHandle>>) {
        let mut marks = self.lock();
        let Some(event) = mark.filter(|_| !stream.is_default()) else {
            // The operation is complete, or on the default stream, which every later operation
            // of any stream waits for: what it waited for needs no mark any more. After a
            // completed read, other streams' reads may still be running.
            match access {
                Access::Write => *marks = Marks::default(),
                Access::Read if stream.is_default() => *marks = Marks::default(),
                Access::Read => marks.write = None,
            }
            return;
        };
        let mark = Mark {
            stream: Arc::downgrade(&stream.inner),
            event: event.clone(),
        };
        match access {
            Access::Write => {
                marks.write = Some(mark);
                marks.reads.clear();
            }
            Access::Read => {
                marks.reads.retain(|m| !m.on(stream));
                marks.reads.push(mark);
            }
        }
    }
}

impl BufferUses {
    /// The marks of every unfinished use on a stream other than the default one (the last
    /// write and the reads since): what freeing the buffer must wait for.
    pub(crate) fn outstanding(&self) -> Vec<Arc<MarkHandle>> {
        let marks = self.lock();
        marks
            .write
            .iter()
            .chain(&marks.reads)
            .map(|m| m.event.clone())
            .collect()
    }
}

/// Records a mark at the current end of `stream` for the buffers an operation just used, or
/// `None` where no mark is needed (emulator, default stream).
pub(crate) fn mark_after(stream: &Stream) -> Result<Option<Arc<MarkHandle>>> {
    if stream.is_default() {
        return Ok(None);
    }
    let ctx = stream.context();
    ctx.inner
        .backend
        .order_mark(stream.handle())
        .map(|m| m.map(Arc::new))
        .map_err(|f| ctx.fail(f, Some(stream)))
}

/// The identity of a context in the registry (its shared state's address, unique among live
/// contexts; every buffer keeps its context alive).
pub(crate) fn context_id(ctx: &CudaContext) -> usize {
    Arc::as_ptr(&ctx.inner) as usize
}

struct LiveBuffer {
    end: u64,
    context: usize,
    uses: Arc<BufferUses>,
}

/// Every live buffer of every context, by first address.
static LIVE: Mutex<BTreeMap<u64, LiveBuffer>> = Mutex::new(BTreeMap::new());

fn live() -> std::sync::MutexGuard<'static, BTreeMap<u64, LiveBuffer>> {
    LIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Enters the buffer of `bytes` (> 0) bytes at `address` of `ctx` into the registry.
pub(crate) fn register(address: u64, bytes: u64, ctx: &CudaContext, uses: Arc<BufferUses>) {
    live().insert(
        address,
        LiveBuffer {
            end: address.saturating_add(bytes),
            context: context_id(ctx),
            uses,
        },
    );
}

/// Removes the buffer at `address` (when it is freed).
pub(crate) fn unregister(address: u64) {
    live().remove(&address);
}

/// How many bytes of its live buffer lie from `address` to the buffer's end, if `address` is
/// inside a live buffer (of any context).
pub(crate) fn bytes_from(address: u64) -> Option<u64> {
    let live = live();
    let (_, buffer) = live.range(..=address).next_back()?;
    (address < buffer.end).then(|| buffer.end - address)
}

/// The live allocation holding a raw device address, as [`allocation_containing`] finds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddressOwner {
    /// Inside a live buffer of the asking context: its first address and size in bytes.
    Own {
        /// The buffer's first address.
        base: u64,
        /// Its size in bytes.
        bytes: u64,
    },
    /// Inside a live buffer of another context.
    Foreign,
    /// In no live buffer.
    Unknown,
}

/// Which live buffer holds `address`, as seen from `ctx`: what a raw pointer argument (a
/// tile kernel's `*mut T`) is checked and bounded by before a launch.
pub fn allocation_containing(ctx: &CudaContext, address: u64) -> AddressOwner {
    let live = live();
    let Some((&base, buffer)) = live.range(..=address).next_back() else {
        return AddressOwner::Unknown;
    };
    if address >= buffer.end {
        AddressOwner::Unknown
    } else if buffer.context == context_id(ctx) {
        AddressOwner::Own {
            base,
            bytes: buffer.end - base,
        }
    } else {
        AddressOwner::Foreign
    }
}

/// What the registry knows of `[address, address + bytes)`.
pub(crate) enum Owner {
    /// Inside a live buffer of this context.
    Own(Arc<BufferUses>),
    /// Inside a live buffer of another context.
    Foreign,
    /// In no live buffer (a raw address, or a sub-range only unsafe code can make).
    Unknown,
}

/// Who owns each `[address, address + bytes)` of `ranges`, as seen from `ctx` (one lock of the
/// registry for all).
pub(crate) fn owners(ctx: &CudaContext, ranges: &[(u64, u64)]) -> Vec<Owner> {
    let live = live();
    let me = context_id(ctx);
    ranges
        .iter()
        .map(|&(address, bytes)| {
            let Some((_, buffer)) = live.range(..=address).next_back() else {
                return Owner::Unknown;
            };
            if address.saturating_add(bytes) > buffer.end || (bytes == 0 && address >= buffer.end) {
                Owner::Unknown
            } else if buffer.context == me {
                Owner::Own(buffer.uses.clone())
            } else {
                Owner::Foreign
            }
        })
        .collect()
}
