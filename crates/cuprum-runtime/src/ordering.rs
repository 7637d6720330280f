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
//! The memory of a buffer is a shared [`Memory`]: the buffer holds it, and so does every
//! recorded graph (`graph.rs`) whose operations use it, so that memory a graph replays into is
//! freed only once both are gone, after its last use on every stream.
//!
//! Each buffer keeps the marks (events without timing) of its last write and of the reads since
//! then, on streams other than the legacy default stream. That stream needs none: all our
//! streams are blocking streams, so work on the default stream waits for everything submitted
//! earlier to any stream and everything submitted later waits for it; an operation there makes
//! the earlier marks moot and is not recorded.
//! That shortcut holds only while every stream of the context is a blocking stream: once a
//! stream that is not ordered with the legacy default stream exists (a non-blocking stream of
//! another library, `Stream::from_raw_cuda`), the default stream is marked and waits for
//! marks like any other stream (`Stream::ordered_with_all`).
//!
//! Memory of another library (`DeviceBuffer::from_raw_parts`) is in the same registry and
//! ordered the same way; when it is let go, its owner's stream waits for its unfinished uses
//! on other streams, and then its owner's release runs (`Release::Foreign`). On the emulator every operation completes when it
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
}

impl Marks {
    /// Makes `stream` wait, on the device, for the unfinished uses of other streams that an
    /// `access` must follow. Nothing to do on the emulator or on the default stream.
    fn order_before(&self, stream: &Stream, access: Access) -> Result<()> {
        let ctx = stream.context();
        if stream.ordered_with_all() {
            return Ok(());
        }
        let reads = match access {
            Access::Read => &[][..],
            Access::Write => &self.reads[..],
        };
        for mark in self.write.iter().chain(reads) {
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
    fn note(&mut self, stream: &Stream, access: Access, mark: Option<&Arc<MarkHandle>>) {
        let Some(event) = mark.filter(|_| !stream.ordered_with_all()) else {
            // The operation is complete, or on the default stream, which every later operation
            // of any stream waits for: what it waited for needs no mark any more. After a
            // completed read, other streams' reads may still be running.
            match access {
                Access::Write => *self = Marks::default(),
                Access::Read if stream.ordered_with_all() => *self = Marks::default(),
                Access::Read => self.write = None,
            }
            return;
        };
        let mark = Mark {
            stream: Arc::downgrade(&stream.inner),
            event: event.clone(),
        };
        match access {
            Access::Write => {
                self.write = Some(mark);
                self.reads.clear();
            }
            Access::Read => {
                self.reads.retain(|m| !m.on(stream));
                self.reads.push(mark);
            }
        }
    }
}

/// The buffers one operation uses, held from the moment it is ordered after their earlier
/// uses until it has been noted as their latest: [`hold`], submit, then
/// [`Held::note`]/[`Held::note_after`] (dropping it instead, when the submission failed,
/// notes nothing).
///
/// Holding them across the submission is what keeps two threads from ordering two
/// operations on one buffer each before the other (each would wait only for what the other
/// had noted, which is nothing yet). Borrows keep that apart for buffers, but a recorded
/// graph (`graph.rs`) writes memory that its buffer's owner may use meanwhile from another
/// thread; so every use is ordered this way, the one definition of the protocol.
pub(crate) struct Held<'a> {
    stream: &'a Stream,
    held: Vec<(std::sync::MutexGuard<'a, Marks>, Access)>,
}

/// Holds `uses` (each buffer once, written if any use writes it, locked in one global order
/// so that two holders never wait for each other) and makes `stream` wait, on the device,
/// for the unfinished uses of other streams that each access must follow.
pub(crate) fn hold<'a>(stream: &'a Stream, uses: &[(&'a BufferUses, Access)]) -> Result<Held<'a>> {
    let once = each_once(uses.to_vec(), |u| {
        std::ptr::from_ref::<BufferUses>(u) as usize
    });
    let held: Vec<_> = once.into_iter().map(|(u, a)| (u.lock(), a)).collect();
    for (marks, access) in &held {
        marks.order_before(stream, *access)?;
    }
    Ok(Held { stream, held })
}

/// [`hold`] of the memories an operation found among its arguments (or a graph recorded).
pub(crate) fn hold_memory<'a>(
    stream: &'a Stream,
    memory: &'a [(Arc<Memory>, Access)],
) -> Result<Held<'a>> {
    let uses: Vec<_> = memory.iter().map(|(m, a)| (&m.uses, *a)).collect();
    hold(stream, &uses)
}

/// `uses` with each buffer once, in the order of `key` (which names a buffer), written if any
/// of its uses writes it.
pub(crate) fn each_once<T>(
    mut uses: Vec<(T, Access)>,
    key: impl Fn(&T) -> usize,
) -> Vec<(T, Access)> {
    uses.sort_by_key(|(u, _)| key(u));
    let mut once: Vec<(T, Access)> = Vec::with_capacity(uses.len());
    for (u, access) in uses {
        match once.last_mut() {
            Some((last, a)) if key(last) == key(&u) => {
                if access == Access::Write {
                    *a = Access::Write;
                }
            }
            _ => once.push((u, access)),
        }
    }
    once
}

impl Held<'_> {
    /// Records the operation just submitted as the latest use of each buffer, ending at
    /// `mark` (`None`: it has completed, or no mark is needed).
    pub(crate) fn note(mut self, mark: Option<&Arc<MarkHandle>>) {
        for (marks, access) in &mut self.held {
            marks.note(self.stream, *access, mark);
        }
    }

    /// [`note`](Self::note) with a mark recorded now at the end of the stream.
    pub(crate) fn note_after(self) -> Result<()> {
        if self.held.is_empty() {
            return Ok(());
        }
        let mark = mark_after(self.stream)?;
        self.note(mark.as_ref());
        Ok(())
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

/// One allocation of device memory: its place in the registry, its uses on streams, and the
/// free when the last holder lets go of it (a buffer, or a graph that replays into it).
pub(crate) struct Memory {
    ctx: CudaContext,
    /// The first address; 0 for a zero-length buffer (nothing allocated, not registered).
    addr: u64,
    /// Its unfinished uses on streams.
    pub(crate) uses: BufferUses,
    /// What letting go of it does.
    pub(crate) release: Release,
    /// How many DLPack tensors exported from it are alive (`interop::dlpack`): while one is,
    /// importing it back shares this memory instead of wrapping it a second time.
    pub(crate) exports: std::sync::atomic::AtomicUsize,
}

/// What happens to an allocation when the last holder lets go of it.
pub(crate) enum Release {
    /// cuprum allocated it: freed after its unfinished uses (`Backend::free`).
    Own,
    /// Another library's memory: its stream waits for the unfinished uses, then its release
    /// runs.
    Foreign(ForeignRelease),
    /// Handed over to someone else (`DeviceBuffer::into_raw_parts`): only leaves the registry.
    Given,
}

/// The owner of another library's memory, as a [`Memory`] keeps it.
pub(crate) struct ForeignRelease {
    /// The stream the owner orders its own uses and its free on.
    pub(crate) stream: Stream,
    /// The owner's release, behind a mutex only so that `Memory` is `Sync`.
    pub(crate) owner: Mutex<Option<crate::foreign::ForeignOwner>>,
    /// Memory lent for a scope (a borrowed `CudaSlice`): no graph may keep it.
    pub(crate) scoped: bool,
}

impl Memory {
    /// Enters `bytes` bytes at `addr` of `ctx` (nothing when `addr` is 0) into the registry.
    pub(crate) fn register(ctx: &CudaContext, addr: u64, bytes: u64) -> Arc<Self> {
        let memory = Arc::new(Self {
            ctx: ctx.clone(),
            addr,
            uses: BufferUses::default(),
            release: Release::Own,
            exports: Default::default(),
        });
        if addr != 0 {
            live().insert(
                addr,
                LiveBuffer {
                    end: addr.saturating_add(bytes),
                    context: context_id(ctx),
                    memory: Arc::downgrade(&memory),
                },
            );
        }
        memory
    }

    /// Enters another library's `bytes` (> 0) bytes at `addr` into the registry, unless they
    /// overlap a live buffer of any context: two buffers over the same memory would let safe
    /// code write what another handle reads. On failure `release` is dropped unreleased.
    pub(crate) fn register_foreign(
        ctx: &CudaContext,
        addr: u64,
        bytes: u64,
        release: ForeignRelease,
    ) -> Result<Arc<Self>> {
        let end = addr.saturating_add(bytes);
        let mut live = live();
        // Entries whose memory is gone are stale, not live (see `Drop for Memory`).
        live.retain(|_, e| e.memory.strong_count() > 0);
        if let Some((&base, other)) = live.range(..end).next_back()
            && other.end > addr
        {
            let error = crate::error::Error::Interop {
                what: format!("{bytes} bytes of device memory at {addr:#x}"),
                reason: format!(
                    "they overlap a live buffer ({} bytes at {base:#x}): one allocation may be                      wrapped by one buffer at a time; use views of that buffer instead",
                    other.end - base
                ),
            };
            return Err(error);
        }
        let memory = Arc::new(Self {
            ctx: ctx.clone(),
            addr,
            uses: BufferUses::default(),
            release: Release::Foreign(release),
            exports: Default::default(),
        });
        live.insert(
            addr,
            LiveBuffer {
                end,
                context: context_id(ctx),
                memory: Arc::downgrade(&memory),
            },
        );
        Ok(memory)
    }

    /// Whether a graph may keep this memory (not while it is only lent for a scope).
    pub(crate) fn recordable(&self) -> bool {
        !matches!(&self.release, Release::Foreign(f) if f.scoped)
    }
}

impl Drop for Memory {
    fn drop(&mut self) {
        if self.addr == 0 {
            return;
        }
        // Freed after exactly the unfinished work that uses it (its marks on other streams,
        // and the default stream's), without making other streams wait. (Its own entry only.)
        {
            let mut live = live();
            // Its own entry: the one naming it, or a dead one at its address (a `Memory`
            // moved out of its `Arc` by `into_raw_parts` is no longer where its entry
            // points, and no other memory at this address can be dead while it lives).
            if live.get(&self.addr).is_some_and(|e| {
                std::ptr::eq(e.memory.as_ptr(), self) || e.memory.strong_count() == 0
            }) {
                live.remove(&self.addr);
            }
        }
        let after = self.uses.outstanding();
        match std::mem::replace(&mut self.release, Release::Given) {
            Release::Own => {
                let marks: Vec<&MarkHandle> = after.iter().map(|m| &**m).collect();
                self.ctx.inner.backend.free(self.addr, &marks);
            }
            Release::Foreign(foreign) => {
                let stream = &foreign.stream;
                let mut ordered = true;
                for mark in &after {
                    ordered &= self
                        .ctx
                        .inner
                        .backend
                        .wait_mark(stream.handle(), mark)
                        .is_ok();
                }
                if !ordered {
                    // Could not order the owner's stream after a use: wait on the host
                    // instead, so the owner never frees memory a kernel still uses.
                    let _ = self.ctx.synchronize();
                }
                let owner = foreign
                    .owner
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .take();
                if let Some(owner) = owner {
                    owner.release();
                }
            }
            Release::Given => {}
        }
    }
}

/// Records a mark at the current end of `stream` for the buffers an operation just used, or
/// `None` where no mark is needed (emulator, default stream).
pub(crate) fn mark_after(stream: &Stream) -> Result<Option<Arc<MarkHandle>>> {
    if stream.ordered_with_all() {
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
    /// Weak, so that the registry keeps nothing alive: the memory leaves it when freed.
    memory: Weak<Memory>,
}

/// Every live buffer of every context, by first address.
static LIVE: Mutex<BTreeMap<u64, LiveBuffer>> = Mutex::new(BTreeMap::new());

fn live() -> std::sync::MutexGuard<'static, BTreeMap<u64, LiveBuffer>> {
    LIVE.lock().unwrap_or_else(|e| e.into_inner())
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

/// The memory of `ctx` holding all of `[address, address + bytes)` if a DLPack tensor
/// exported from it is alive: what importing that tensor back shares (`interop::dlpack`).
pub(crate) fn exported_containing(
    ctx: &CudaContext,
    address: u64,
    bytes: u64,
) -> Option<Arc<Memory>> {
    let live = live();
    let (_, buffer) = live.range(..=address).next_back()?;
    let inside = address
        .checked_add(bytes)
        .is_some_and(|end| end <= buffer.end);
    if !inside || buffer.context != context_id(ctx) {
        return None;
    }
    let memory = buffer.memory.upgrade()?;
    (memory.exports.load(std::sync::atomic::Ordering::Acquire) > 0).then_some(memory)
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
    Own(Arc<Memory>),
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
                // A memory being freed cannot be named by safe code any more.
                buffer.memory.upgrade().map_or(Owner::Unknown, Owner::Own)
            } else {
                Owner::Foreign
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `Memory` moved out of its `Arc` (as `into_raw_parts` hands memory out) still takes
    /// its registry entry with it: a stale entry made the H200 refuse to wrap the same
    /// allocation again as "overlapping a live buffer".
    #[test]
    fn memory_moved_out_of_its_arc_leaves_the_registry() {
        let ctx = CudaContext::emulator();
        // An address no allocator hands out: the test's own entry only.
        let addr = 0xdead_0000_0000;
        let memory = Memory::register(&ctx, addr, 256);
        assert!(live().contains_key(&addr));
        let mut moved = Arc::try_unwrap(memory).unwrap_or_else(|_| panic!("one owner"));
        moved.release = Release::Given;
        drop(moved);
        assert!(!live().contains_key(&addr), "a stale registry entry");
    }
}
