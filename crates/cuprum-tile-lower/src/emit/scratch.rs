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

use cuprum_ir::{AddressSpace, CmpOp, Constant, Op, ScalarType, Stmt, Value};

use super::{Emitter, R};
use crate::emit::values::shared_type;

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

/// Exchanges start at multiples of this many bytes (the widest element and vector access).
const ALIGN: u32 = 16;

impl Emitter<'_> {
    /// Claims room for `count` elements of `ty` for one exchange, with a barrier first only
    /// where threads may still be reading those bytes (see the module docs).
    pub(crate) fn claim_scratch(&mut self, count: u64, ty: ScalarType) -> R<Claim> {
        let bytes = count * u64::from(shared_type(ty).size_bytes());
        let limit = u64::from(cuprum_ir::MAX_SHARED_BYTES);
        if bytes > limit {
            return Err(self.unsupported(format!(
                "moving a tile of {count} {ty} elements between warps needs {bytes} bytes of \
                 shared memory, more than a block has ({limit} bytes): use smaller tiles"
            )));
        }
        let bytes = bytes as u32;
        self.scratch_events += 1;
        let start = match self.scratch_in_use {
            InUse::Nothing => 0,
            InUse::Bytes { end, .. }
                if u64::from(end.next_multiple_of(ALIGN)) + u64::from(bytes) <= limit =>
            {
                end.next_multiple_of(ALIGN)
            }
            InUse::Bytes { .. } | InUse::Unknown => {
                self.barrier();
                0
            }
        };
        self.shared_bytes = self.shared_bytes.max(start + bytes);
        Ok(Claim { start, bytes })
    }

    /// Marks the exchange's writes done: the barrier that lets its readers read, after
    /// which threads may be reading its bytes until the next barrier.
    pub(crate) fn scratch_written(&mut self, claim: Claim) {
        self.barrier();
        self.scratch_in_use = InUse::Bytes {
            start: claim.start,
            end: claim.start + claim.bytes,
        };
    }

    /// Every thread of the block waits for all others; after it no thread reads the
    /// scratch from before.
    pub(crate) fn barrier(&mut self) {
        self.scratch_events += 1;
        self.scratch_in_use = InUse::Nothing;
        self.push(Stmt::Barrier);
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

    /// Stores `v` as element `index` (`U32`) of `claim`'s bytes.
    pub(crate) fn shared_store(&mut self, claim: Claim, index: Value, v: Value) -> R<()> {
        let ty = self.type_of(v);
        let st = shared_type(ty);
        let addr = self.shared_addr(claim, index, st)?;
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
        })?;
        if ty == ScalarType::Bool {
            let zero = self.konst(Constant::new(st, 0));
            return self.cmp(CmpOp::Ne, v, zero);
        }
        Ok(v)
    }

    fn shared_addr(&mut self, claim: Claim, index: Value, st: ScalarType) -> R<Value> {
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
