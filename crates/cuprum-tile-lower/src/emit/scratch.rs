//! The shared-memory scratch through which tiles cross warps (reductions across warps,
//! layout changes), and the barriers it needs.
//!
//! An exchange writes its elements, meets the block at a barrier, then reads. Before it may
//! write, every thread must have finished reading what an earlier exchange left in the same
//! bytes. The emitter tracks which bytes threads may still be reading ([`InUse`]: none at
//! the start, the last exchange's bytes after it, none after any barrier) and places each
//! exchange after them, so that it needs no barrier first; only where that is not known (the
//! first exchange of a loop body, which the previous iteration's reads may precede; after a
//! loop or branch that used the scratch) or the bytes do not fit does an exchange start at
//! the beginning behind a barrier. So RMS norm's one reduction takes one barrier instead of
//! two, and layer norm's and softmax's two take two instead of four (as Triton's allocation
//! of its shared memory also saves them).
//!
//! A reduction's reads wait until its result is first used ([`PendingRead`]): the statements
//! before that use run first, so independent reductions (a sum and a sum of squares of one
//! tile) write their partial results side by side and all meet the block at one barrier, as
//! a Welford reduction's one exchange does. Pending reads are made before any statement
//! with nested blocks or that leaves its block, and at the end of every block, so that
//! control flow never sees one (and a barrier is never inside a branch of its own).

use cuprum_ir::{AddressSpace, CmpOp, Constant, Op, ScalarType, Stmt, Value};
use cuprum_tile_ir::{Combine, TileValue};

use super::{Emitter, R};
use crate::emit::values::shared_type;
use crate::layout::row_major_strides;
use crate::plan::LayoutId;

/// What of the scratch threads may still be reading since the block last met at a barrier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum InUse {
    /// Nothing.
    Nothing,
    /// The bytes `start..end`.
    Bytes { start: u32, end: u32 },
    /// Not known: any of it.
    Unknown,
}

impl InUse {
    /// `self` and also the bytes of `claim`.
    fn and_claim(self, claim: Claim) -> InUse {
        self.either(InUse::Bytes {
            start: claim.start,
            end: claim.start + claim.bytes,
        })
    }

    /// What may be in use after one of two branches ran, one ending with `self`, the other
    /// with `other`.
    pub(crate) fn either(self, other: InUse) -> InUse {
        match (self, other) {
            (InUse::Nothing, x) | (x, InUse::Nothing) => x,
            (InUse::Unknown, _) | (_, InUse::Unknown) => InUse::Unknown,
            (InUse::Bytes { start: a, end: b }, InUse::Bytes { start: c, end: d }) => {
                InUse::Bytes {
                    start: a.min(c),
                    end: b.max(d),
                }
            }
        }
    }
}

/// The bytes of the scratch one exchange uses.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Claim {
    /// Where they start (a multiple of 16).
    start: u32,
    bytes: u32,
}

impl Claim {
    /// The `bytes` of this claim from byte `offset` on (a multiple of 16), as a claim of its
    /// own for addressing; barriers and what is in use still go by the whole claim.
    pub(crate) fn part(self, offset: u32, bytes: u32) -> Claim {
        Claim {
            start: self.start + offset,
            bytes,
        }
    }

    /// A claim of `bytes` from `start`, for unit tests of what lays tiles out in one.
    #[cfg(test)]
    pub(crate) fn for_tests(start: u32, bytes: u32) -> Claim {
        Claim { start, bytes }
    }
}

/// A reduction across warps whose partial results are in the scratch and whose reads wait
/// until its value is first used.
#[derive(Clone, Debug)]
pub(crate) struct PendingRead {
    /// The reduction's result.
    pub(crate) value: TileValue,
    pub(crate) claim: Claim,
    /// Per register of the result, its element's index within one warp group's results.
    pub(crate) indices: Vec<Value>,
    /// How many warp groups wrote results (`out_elems` elements each).
    pub(crate) groups: u32,
    pub(crate) out_elems: u32,
    pub(crate) combine: Combine,
    pub(crate) ty: ScalarType,
    /// Whether a barrier has passed since the writes.
    pub(crate) published: bool,
}

/// Exchanges start at multiples of this many bytes (the widest element and vector access).
const ALIGN: u32 = 16;

impl Emitter<'_> {
    /// Claims room for `count` elements of `ty` for one exchange, with a barrier first only
    /// where threads may still be reading those bytes (see the module docs).
    pub(crate) fn claim_scratch(&mut self, count: u64, ty: ScalarType) -> R<Claim> {
        self.claim_scratch_aligned(count * u64::from(shared_type(ty).size_bytes()), ALIGN)
    }

    /// The most dynamic shared memory the block may use: what a block has, less the padding
    /// a launch adds so that the kernel can align the region's start
    /// (`cuprum_ir::Kernel::dyn_shared_padding`, as the alignment asked so far requires).
    fn shared_limit(&self) -> u64 {
        u64::from(cuprum_ir::MAX_SHARED_BYTES) - u64::from(self.b.kernel().dyn_shared_padding())
    }

    /// Claims `bytes` for one exchange starting at a multiple of `align` (a power of two of
    /// at least 16, at most 1024: a swizzled tile's period), as [`Emitter::claim_scratch`].
    pub(crate) fn claim_scratch_aligned(&mut self, bytes: u64, align: u32) -> R<Claim> {
        if align > ALIGN {
            self.b.align_dyn_shared(align);
        }
        let limit = self.shared_limit();
        if bytes > limit {
            return Err(self.unsupported(format!(
                "moving tiles between warps needs {bytes} bytes of shared memory at once, \
                 more than a block has ({limit} bytes): use smaller tiles"
            )));
        }
        let bytes = bytes as u32;
        self.scratch_events += 1;
        let start = match self.free_from(bytes, align) {
            Some(start) => start,
            None => {
                // A barrier ends the reads from before; what pending reductions left stays.
                self.barrier();
                match self.free_from(bytes, align) {
                    Some(start) => start,
                    None => {
                        self.make_pending_reads()?;
                        self.barrier();
                        self.scratch_floor.next_multiple_of(align)
                    }
                }
            }
        };
        self.shared_bytes = self.shared_bytes.max(start + bytes);
        Ok(Claim { start, bytes })
    }

    /// Where `bytes` fit after everything in use, starting at a multiple of `align`, if they
    /// do.
    fn free_from(&self, bytes: u32, align: u32) -> Option<u32> {
        let limit = self.shared_limit();
        let floor = self.scratch_floor;
        match self.scratch_in_use {
            InUse::Nothing => Some(floor.next_multiple_of(align)),
            InUse::Bytes { end, .. }
                if u64::from(end.max(floor).next_multiple_of(align)) + u64::from(bytes)
                    <= limit =>
            {
                Some(end.max(floor).next_multiple_of(align))
            }
            InUse::Bytes { .. } | InUse::Unknown => None,
        }
    }

    /// `bytes` of shared memory of their own from a multiple of `align` (a `cp.async`
    /// ring's buffers, `ring`): after a barrier (nobody then reads the scratch of earlier
    /// exchanges), above what pending reductions still hold, and every later claim goes
    /// above them.
    pub(crate) fn reserve_shared(&mut self, bytes: u32, align: u32) -> R<Claim> {
        self.barrier();
        self.reserve_shared_unsynced(bytes, align)
    }

    /// [`Emitter::reserve_shared`] without its barrier, where no thread can be using the
    /// scratch yet (the kernel's start).
    pub(crate) fn reserve_shared_unsynced(&mut self, bytes: u32, align: u32) -> R<Claim> {
        if align > ALIGN {
            self.b.align_dyn_shared(align);
        }
        let in_use = match self.scratch_in_use {
            InUse::Nothing => 0,
            InUse::Bytes { end, .. } => end,
            InUse::Unknown => self.shared_bytes,
        };
        let start = in_use.max(self.scratch_floor).next_multiple_of(align);
        let end = u64::from(start) + u64::from(bytes);
        let limit = self.shared_limit();
        if end > limit {
            return Err(self.unsupported(format!(
                "a loop's copy buffers need {end} bytes of shared memory, more than a block \
                 has ({limit} bytes): use smaller tiles"
            )));
        }
        self.scratch_floor = end as u32;
        self.shared_bytes = self.shared_bytes.max(self.scratch_floor);
        Ok(Claim { start, bytes })
    }

    /// Marks the exchange's writes done: the barrier that lets its readers read, after
    /// which threads may be reading its bytes until the next barrier.
    pub(crate) fn scratch_written(&mut self, claim: Claim) {
        self.barrier();
        self.scratch_in_use = self.scratch_in_use.and_claim(claim);
    }

    /// Records a reduction whose writes are done and whose reads wait for its first use;
    /// its bytes stay in use until then.
    pub(crate) fn defer_read(&mut self, read: PendingRead) {
        self.scratch_in_use = self.scratch_in_use.and_claim(read.claim);
        self.pending_reads.push(read);
    }

    /// Every thread of the block waits for all others; after it no thread reads the
    /// scratch from before, and the pending reductions' results may be read.
    pub(crate) fn barrier(&mut self) {
        self.scratch_events += 1;
        self.scratch_in_use = InUse::Nothing;
        for read in &mut self.pending_reads {
            read.published = true;
            self.scratch_in_use = self.scratch_in_use.and_claim(read.claim);
        }
        let barrier = self.block_barrier();
        self.push(barrier);
    }

    /// Makes the pending read of `value`, if there is one.
    pub(crate) fn make_pending_read(&mut self, value: TileValue) -> R<()> {
        match self.pending_reads.iter().position(|p| p.value == value) {
            Some(i) => {
                let read = self.pending_reads.remove(i);
                self.read_exchange(read)
            }
            None => Ok(()),
        }
    }

    /// Makes every pending read, in the order of the reductions.
    pub(crate) fn make_pending_reads(&mut self) -> R<()> {
        while !self.pending_reads.is_empty() {
            let read = self.pending_reads.remove(0);
            self.read_exchange(read)?;
        }
        Ok(())
    }

    /// Reads a reduction's partial results (behind a barrier if none has passed since they
    /// were written) and combines them in group order, defining its value.
    pub(crate) fn read_exchange(&mut self, read: PendingRead) -> R<()> {
        if !read.published {
            self.barrier();
        }
        // Threads read these bytes until the next barrier.
        self.scratch_in_use = self.scratch_in_use.and_claim(read.claim);
        let mut out = Vec::with_capacity(read.indices.len());
        for &index in &read.indices {
            let mut acc: Option<Value> = None;
            for g in 0..read.groups {
                let start = self.u32c(g * read.out_elems);
                let at = self.add(start, index)?;
                let v = self.shared_load(read.claim, at, read.ty)?;
                acc = Some(match acc {
                    Some(a) => self.combine(&read.combine, read.ty, a, v)?,
                    None => v,
                });
            }
            out.push(acc.ok_or_else(|| self.internal("no warp groups"))?);
        }
        let lv = self.reduced(read.value, out)?;
        self.set(read.value, lv)
    }

    /// Runs `body` (a loop's body, emitted once, run any number of times): it starts not
    /// knowing what the previous iteration left in use, and after the loop nothing is known
    /// unless the body neither met a barrier nor used the scratch.
    pub(crate) fn scratch_loop<T>(&mut self, body: impl FnOnce(&mut Self) -> R<T>) -> R<T> {
        let (before, events) = (self.scratch_in_use, self.scratch_events);
        self.scratch_in_use = InUse::Unknown;
        let out = body(self)?;
        self.scratch_in_use = if self.scratch_events == events {
            before
        } else {
            InUse::Unknown
        };
        Ok(out)
    }

    /// Writes registers `regs` of layout `layout` (a tile of `shape`) row-major into `claim`:
    /// each element once, by the thread that holds it unreplicated.
    pub(crate) fn write_tile(
        &mut self,
        claim: Claim,
        layout: LayoutId,
        regs: &[Value],
        shape: &[u32],
    ) -> R<()> {
        self.write_tile_strided(claim, layout, regs, &row_major_strides(shape))
    }

    /// [`write_tile`](Self::write_tile) with the element at coordinates `c` at index
    /// `sum(c[i] * strides[i])`.
    pub(crate) fn write_tile_strided(
        &mut self,
        claim: Claim,
        layout: LayoutId,
        regs: &[Value],
        strides: &[u64],
    ) -> R<()> {
        let strides = strides.to_vec();
        let primary = self.primary(layout);
        self.if_some(primary, |e| {
            for (r, &v) in regs.iter().enumerate() {
                let index = e.linear_index(layout, r, &strides)?;
                let valid = e.valid(layout, r)?;
                e.if_some(valid, |e| e.shared_store(claim, index, v))?;
            }
            Ok(())
        })
    }

    /// Stores `v` as element `index` (`U32`) of `claim`'s bytes.
    pub(crate) fn shared_store(&mut self, claim: Claim, index: Value, v: Value) -> R<()> {
        let st = shared_type(self.type_of(v));
        let addr = self.shared_addr(claim, index, st)?;
        self.shared_store_at(addr, v)
    }

    /// Stores `v` at shared address `addr` (`U32`), as the scratch keeps its type.
    pub(crate) fn shared_store_at(&mut self, addr: Value, v: Value) -> R<()> {
        let st = shared_type(self.type_of(v));
        let v = self.cast(v, st)?;
        self.push(Stmt::Store {
            space: AddressSpace::Shared,
            addr,
            value: v,
        });
        Ok(())
    }

    /// Loads element `index` (`U32`) of `claim`'s bytes as a `ty`.
    pub(crate) fn shared_load(&mut self, claim: Claim, index: Value, ty: ScalarType) -> R<Value> {
        let st = shared_type(ty);
        let addr = self.shared_addr(claim, index, st)?;
        let v = self.def(Op::Load {
            space: AddressSpace::Shared,
            ty: st,
            addr,
            eviction: cuprum_ir::Eviction::Normal,
        })?;
        if ty == ScalarType::Bool {
            let zero = self.konst(Constant::new(st, 0));
            return self.cmp(CmpOp::Ne, v, zero);
        }
        Ok(v)
    }

    /// The shared-memory address (`U32`) of element `index` of `claim`'s bytes, as elements
    /// of `st`.
    pub(crate) fn shared_addr(&mut self, claim: Claim, index: Value, st: ScalarType) -> R<Value> {
        let size = self.u32c(st.size_bytes());
        let off = self.mul(index, size)?;
        let at = self.add(self.shared_base, off)?;
        if claim.start == 0 {
            return Ok(at);
        }
        let start = self.u32c(claim.start);
        self.add(at, start)
    }
}
