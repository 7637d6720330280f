//! Race detection on global memory: which threads of a launch touched which bytes, and whether
//! anything orders two accesses of the same bytes by different threads.
//!
//! Every allocation a launch touches has a shadow ([`crate::shadow`]): two *records* per
//! 4-byte granule, each one access (kind, which bytes of the granule, the thread, and its
//! block's clock). A new access is checked against the records of its granule and then
//! recorded; a granule keeps the accesses that later ones can still race with, so two records
//! are enough:
//! * a write (or an atomic) that races with nothing replaces every record it is ordered after;
//! * a read replaces only reads it is ordered after; when two records of other threads'
//!   accesses are already there, it is not recorded (any later write races with at least one
//!   of them if it races with the read at all, unless the write is ordered after both);
//! * a record that already says what an access would (the same thread, bytes and clock, a
//!   write standing for later reads) is left alone, so re-reading one's own data writes
//!   nothing and blocks reading the same inputs share the shadow's cache lines.
//!
//! Two accesses race when they overlap in bytes, come from different threads, and at least
//! one is a plain write, and nothing orders them. (Reads never race with reads, atomics never
//! with atomics, and a plain read of a location that others update atomically is allowed: it
//! sees one of the location's values, which is what a compare-exchange loop's first guess or
//! a poll wants; the IR has no atomic load.) Ordered means: the same thread; threads of one
//! block with a barrier between the accesses (the block clock's barrier tick); a
//! release/acquire through an atomic, which [`crate::sync`] decides; or, between threads of
//! one cluster, a cluster barrier phase or a remote mbarrier arrival, which
//! [`crate::cluster`] decides. A write by a second thread to an element of a `DisjointSlice`
//! parameter is reported whatever orders it, with its own error.
//!
//! Records are 64 bits: kind (2), bytes (4), the block's clock, the thread in its block (10)
//! and the block's number; the block number gets the bits the grid needs and the clock the
//! rest (at least 16). A block whose clock runs out (that many barriers and fences) stops
//! being checked, and block numbers repeat in grids of more than 2^32 blocks; with 1-byte
//! elements, a third thread's bytes in one granule evict a record. Each of these can hide a
//! race, none can report one that is not there.

use std::sync::OnceLock;

use crate::cluster::ClusterOrder;
use crate::error::{AccessKind, DisjointWrite, EmuError, GlobalRace, RaceAccess, RaceKind};
use crate::exec::Launch;
use crate::memory::{Allocation, GlobalView};
use crate::shadow::{GRANULE, Shadow, WarpGranules};
use crate::sync::{BlockSync, SyncTable};

/// Record kinds (the low two bits); 0 is an empty slot.
pub(crate) const READ: u64 = 1;
pub(crate) const WRITE: u64 = 2;
pub(crate) const ATOMIC: u64 = 3;
const MASK_SHIFT: u32 = 2;
const CLOCK_SHIFT: u32 = MASK_SHIFT + 4;
/// Bits of a thread's index within its block (`MAX_THREADS_PER_BLOCK` is 1024).
const TID_BITS: u32 = 10;
/// Bits shared by the block clock and the block number.
const CLOCK_AND_BLOCK_BITS: u32 = 64 - CLOCK_SHIFT - TID_BITS;
const MIN_CLOCK_BITS: u32 = 16;

/// Where the fields of a record lie for one launch.
#[derive(Clone, Copy)]
pub(crate) struct Layout {
    clock_bits: u32,
}

impl Layout {
    fn new(blocks: u64) -> Self {
        let needed = 64 - blocks.saturating_sub(1).leading_zeros();
        let block_bits = needed.clamp(1, CLOCK_AND_BLOCK_BITS - MIN_CLOCK_BITS);
        Self {
            clock_bits: CLOCK_AND_BLOCK_BITS - block_bits,
        }
    }

    /// The largest block clock a record can hold.
    fn max_clock(self) -> u64 {
        (1 << self.clock_bits) - 1
    }

    fn tid_shift(self) -> u32 {
        CLOCK_SHIFT + self.clock_bits
    }

    fn block_shift(self) -> u32 {
        self.tid_shift() + TID_BITS
    }

    /// A record without kind and bytes, for thread `tid` of block `block_linear` at `clock`.
    #[inline]
    fn record(self, block_linear: u64, clock: u64, tid: u32) -> u64 {
        let block = block_linear & (u64::MAX >> self.block_shift());
        (block << self.block_shift())
            | (u64::from(tid) << self.tid_shift())
            | (clock << CLOCK_SHIFT)
    }

    #[inline]
    fn thread_of(self, r: u64) -> u64 {
        r >> self.tid_shift()
    }

    /// The number records give block `block_linear` (its linear index, modulo the field's
    /// size).
    #[inline]
    pub(crate) fn block_number(self, block_linear: u64) -> u64 {
        self.block_of(self.record(block_linear, 0, 0))
    }

    /// The block number of a record (the block's linear index, modulo the field's size).
    #[inline]
    pub(crate) fn block_of(self, r: u64) -> u64 {
        r >> self.block_shift()
    }

    #[inline]
    pub(crate) fn tid_of(self, r: u64) -> u32 {
        ((r >> self.tid_shift()) & ((1 << TID_BITS) - 1)) as u32
    }

    #[inline]
    pub(crate) fn clock_of(self, r: u64) -> u64 {
        (r >> CLOCK_SHIFT) & self.max_clock()
    }
}

#[inline]
fn kind(r: u64) -> u64 {
    r & 3
}

#[inline]
fn mask(r: u64) -> u64 {
    (r >> MASK_SHIFT) & 0xF
}

#[inline]
fn writes(k: u64) -> bool {
    k >= WRITE
}

/// The accessing thread as the checks see it.
#[derive(Clone, Copy)]
pub(crate) struct Accessor {
    /// The access's record without kind and bytes.
    pub(crate) record: u64,
    /// The block clock at the block's last barrier: the block's accesses before it are
    /// ordered before this one.
    barrier_clock: u64,
}

/// What a granule's records say about a new access.
enum Verdict {
    /// Nothing to record: a record already stands for the access.
    Unchanged,
    /// The new records.
    Update([u64; 2]),
    /// The access conflicts with this record: a race, or (`disjoint`) a second writer of a
    /// `DisjointSlice` element.
    Conflict { record: u64, disjoint: bool },
}

/// Why an access was refused: the earlier record it conflicts with and the byte address.
pub(crate) struct Found {
    record: u64,
    address: u64,
    disjoint: bool,
}

/// One launch's race tracker: the shadows of the allocations it touches (in `GlobalView`
/// order, taken from the allocations and given back at the end) and what decides order.
pub(crate) struct GlobalRaces {
    pub(crate) layout: Layout,
    shadows: Box<[OnceLock<Option<Box<Shadow>>>]>,
    /// Byte ranges `[start, end)` of the `DisjointSlice` arguments.
    disjoint: Vec<(u64, u64)>,
    /// Release/acquire bookkeeping; `None` when the kernel has no fence (then only barriers
    /// order accesses of different threads).
    pub(crate) sync: Option<SyncTable>,
}

/// The per-block half of the tracker: the block clock and the threads' synchronisation.
pub(crate) struct BlockRaces {
    block_linear: u64,
    /// Advanced by every barrier and fence of the block.
    clock: u64,
    /// The clock at the block's last barrier.
    barrier_clock: u64,
    /// Whether accesses are checked in this block (false once the clock has run out).
    on: bool,
    pub(crate) sync: BlockSync,
}

impl BlockRaces {
    pub(crate) fn new() -> Self {
        Self {
            block_linear: 0,
            clock: 0,
            barrier_clock: 0,
            on: false,
            sync: BlockSync::new(),
        }
    }

    /// Starts block `block_linear` of `threads` threads with a fresh clock.
    pub(crate) fn begin_block(
        &mut self,
        races: Option<&GlobalRaces>,
        block_linear: u64,
        threads: u32,
    ) {
        self.on = races.is_some();
        self.block_linear = block_linear;
        self.clock = 1;
        self.barrier_clock = 0;
        if races.is_some_and(|r| r.sync.is_some()) {
            self.sync.begin_block(threads);
        }
    }

    /// Advances the clock (at a barrier or fence); returns the new clock.
    fn tick(&mut self, races: &GlobalRaces) -> u64 {
        if self.clock >= races.layout.max_clock() {
            self.on = false;
        } else {
            self.clock += 1;
        }
        self.clock
    }

    /// A barrier of the whole block: everything before it is ordered before everything after.
    pub(crate) fn barrier(&mut self, races: Option<&GlobalRaces>) {
        if let Some(races) = races.filter(|_| self.on) {
            self.barrier_clock = self.tick(races);
            if races.sync.is_some() {
                self.sync.barrier();
            }
        }
    }

    /// A fence by the threads `tids` of a warp; `device` for device or system scope.
    pub(crate) fn fence(
        &mut self,
        races: Option<&GlobalRaces>,
        tids: impl Iterator<Item = u32>,
        device: bool,
    ) {
        if let Some(races) = races.filter(|r| self.on && r.sync.is_some()) {
            let clock = self.tick(races);
            let barrier_clock = self.barrier_clock;
            for t in tids {
                self.sync.fence(t, clock, barrier_clock, device);
            }
        }
    }

    /// A release of the block's threads that the cluster's order keeps (a cluster barrier
    /// arrival, a remote mbarrier arrival, threads returning): advances the clock, so that the
    /// releasing threads' accesses so far are below it; returns the new clock and the block's
    /// last barrier, or `None` where nothing is tracked.
    pub(crate) fn release_clock(&mut self, races: Option<&GlobalRaces>) -> Option<(u64, u64)> {
        let races = races.filter(|_| self.on)?;
        let clock = self.tick(races);
        Some((clock, self.barrier_clock))
    }

    /// A release by an atomic of the block's threads (one warp instruction): advances the
    /// clock, so that the releasing threads' accesses so far are before it; returns the new
    /// clock and the block's last barrier, or `None` where nothing is tracked.
    pub(crate) fn release_point(&mut self, races: Option<&GlobalRaces>) -> Option<(u64, u64)> {
        let races = races.filter(|r| self.on && r.sync.is_some())?;
        let clock = self.tick(races);
        Some((clock, self.barrier_clock))
    }

    /// The block's number in records, while its accesses are checked.
    pub(crate) fn number(&self, layout: Layout) -> Option<u64> {
        self.on
            .then(|| layout.block_of(layout.record(self.block_linear, 0, 0)))
    }

    #[inline]
    fn accessor(&self, layout: Layout, tid: u32) -> Accessor {
        Accessor {
            record: layout.record(self.block_linear, self.clock, tid),
            barrier_clock: self.barrier_clock,
        }
    }
}

/// The order a cluster's synchronisation gives the accesses of its blocks, and the rank of
/// the accessing thread's block in it (`None` for kernels without cluster synchronisation).
pub(crate) type ClusterView<'a> = Option<(&'a ClusterOrder, u32)>;

/// Checks the global accesses of one warp instruction: the tracker and the block looked up
/// once, the shadow of the last allocation remembered.
pub(crate) struct Tracker<'a> {
    races: &'a GlobalRaces,
    block: &'a BlockRaces,
    cluster: ClusterView<'a>,
    cached: Option<(usize, Option<&'a Shadow>)>,
}

impl<'a> Tracker<'a> {
    /// The tracker for an instruction of a warp of `block`, if accesses are checked there.
    #[inline]
    pub(crate) fn new(
        races: Option<&'a GlobalRaces>,
        block: &'a BlockRaces,
        cluster: ClusterView<'a>,
    ) -> Option<Self> {
        let races = races?;
        block.on.then_some(Self {
            races,
            block,
            cluster,
            cached: None,
        })
    }

    /// Checks and records an access of `kind` (`READ`, `WRITE`, `ATOMIC`) to `size` bytes at
    /// byte `off` of `alloc` (allocation `index` of the launch's view; the access is aligned
    /// to its size) by block thread `tid`.
    #[inline]
    pub(crate) fn access(
        &mut self,
        tid: u32,
        index: usize,
        alloc: &Allocation,
        off: u64,
        size: u32,
        kind: u64,
    ) -> Result<(), Found> {
        let Some(shadow) = self.shadow(index, alloc) else {
            return Ok(());
        };
        let (races, block, cluster) = (self.races, self.block, self.cluster);
        let who = block.accessor(races.layout, tid);
        let me = races.layout.block_of(who.record);
        // Aligned: one granule for up to 4 bytes, whole granules beyond.
        let size = u64::from(size);
        let (first, bytes) = if size < GRANULE {
            (off / GRANULE, ((1 << size) - 1) << (off % GRANULE))
        } else {
            (off / GRANULE, 0xF)
        };
        let record = who.record | (bytes << MASK_SHIFT) | kind;
        for granule in first..first + size.div_ceil(GRANULE) {
            let address = alloc.base + granule * GRANULE;
            shadow.update(granule, me, |s| {
                races.decide(s, record, who, (block, cluster), address)
            })?;
        }
        Ok(())
    }
}

/// The global accesses of one warp instruction, collected lane by lane (after their bounds
/// and alignment checks) and checked together by [`Tracker::warp`].
pub(crate) struct WarpAccesses {
    lanes: u32,
    /// Allocation index (in the launch's view) and byte offset of each lane's access.
    index: [u32; 32],
    off: [u64; 32],
    /// Whether the lanes touch more than one allocation.
    mixed: bool,
}

impl WarpAccesses {
    pub(crate) fn new() -> Self {
        Self {
            lanes: 0,
            index: [0; 32],
            off: [0; 32],
            mixed: false,
        }
    }

    #[inline]
    pub(crate) fn push(&mut self, lane: u32, index: usize, off: u64) {
        let l = lane as usize;
        let index = index as u32;
        if self.lanes != 0 && self.index[self.lanes.trailing_zeros() as usize] != index {
            self.mixed = true;
        }
        self.lanes |= 1 << lane;
        self.index[l] = index;
        self.off[l] = off;
    }
}

impl<'a> Tracker<'a> {
    /// Checks and records the accesses `acc` of `kind` to `size` bytes each, by the warp
    /// whose lane 0 is block thread `tid0`: at once when they are the common case (see
    /// [`Shadow::warp`]), else lane by lane. The error names the lane.
    pub(crate) fn warp(
        &mut self,
        global: &GlobalView,
        acc: &WarpAccesses,
        tid0: u32,
        size: u32,
        kind: u64,
    ) -> Result<(), (u32, Found)> {
        let lanes = acc.lanes;
        if lanes == 0 {
            return Ok(());
        }
        let lead = lanes.trailing_zeros() as usize;
        if !acc.mixed && size <= 8 {
            let index = acc.index[lead] as usize;
            if let Some(shadow) = global.get(index).and_then(|a| self.shadow(index, a)) {
                let layout = self.races.layout;
                let base = layout.record(self.block.block_linear, self.block.clock, tid0);
                let me = layout.block_of(base);
                let size = u64::from(size);
                let bytes = |l: usize| {
                    if size < GRANULE {
                        ((1 << size) - 1) << (acc.off[l] % GRANULE)
                    } else {
                        0xF
                    }
                };
                let record = |l: usize| {
                    (base + ((l as u64) << layout.tid_shift())) | (bytes(l) << MASK_SHIFT) | kind
                };
                // The same access again, or (for a read) this thread's own write at this clock.
                let same = |l: usize, r: u64| {
                    let want = record(l);
                    r == want || (kind == READ && r == (want & !3) | WRITE)
                };
                let granules = WarpGranules {
                    lanes,
                    first: acc.off.map(|o| o / GRANULE),
                    count: size.div_ceil(GRANULE),
                    linear: size == GRANULE,
                };
                if shadow.warp(&granules, me, record, same) {
                    return Ok(());
                }
            }
        }
        let mut m = lanes;
        while m != 0 {
            let l = m.trailing_zeros();
            m &= m - 1;
            let index = acc.index[l as usize] as usize;
            if let Some(alloc) = global.get(index) {
                self.access(tid0 + l, index, alloc, acc.off[l as usize], size, kind)
                    .map_err(|f| (l, f))?;
            }
        }
        Ok(())
    }

    /// The shadow of allocation `index`, remembered for the next lane.
    #[inline]
    fn shadow(&mut self, index: usize, alloc: &Allocation) -> Option<&'a Shadow> {
        match self.cached {
            Some((i, shadow)) if i == index => shadow,
            _ => {
                let shadow = self.races.shadow(index, alloc);
                self.cached = Some((index, shadow));
                shadow
            }
        }
    }
}

/// Whether `[start, end)` of any of `ranges` holds `addr`.
fn in_ranges(ranges: &[(u64, u64)], addr: u64) -> bool {
    ranges.iter().any(|&(s, e)| (s..e).contains(&addr))
}

impl GlobalRaces {
    /// The tracker of a launch over `blocks` blocks with `allocations` allocations live;
    /// `disjoint` the byte ranges of its `DisjointSlice` arguments; `fences` when the kernel
    /// has a fence statement.
    pub(crate) fn new(
        blocks: u64,
        allocations: usize,
        disjoint: Vec<(u64, u64)>,
        fences: bool,
    ) -> Self {
        Self {
            layout: Layout::new(blocks),
            shadows: (0..allocations).map(|_| OnceLock::new()).collect(),
            disjoint,
            sync: fences.then(SyncTable::new),
        }
    }

    /// The shadow of `alloc` (allocation `index` of the launch's view) for this launch: the
    /// one the allocation keeps from earlier launches, or a new one; `None` when there is no
    /// memory for it (that allocation is then not checked).
    fn shadow(&self, index: usize, alloc: &Allocation) -> Option<&Shadow> {
        let cell = self.shadows.get(index)?;
        cell.get_or_init(|| {
            let kept = alloc
                .shadow
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take();
            let mut shadow = match kept {
                Some(s) => s,
                None => Box::new(Shadow::new(alloc.len)?),
            };
            shadow.next_generation(self.layout.tid_shift());
            Some(shadow)
        })
        .as_deref()
    }

    /// Hands every shadow this launch used back to its allocation, for the next launch.
    pub(crate) fn give_back(self, global: &GlobalView) {
        for (i, cell) in self.shadows.into_vec().into_iter().enumerate() {
            if let (Some(shadow), Some(alloc)) = (cell.into_inner().flatten(), global.get(i)) {
                let mut slot = alloc.shadow.lock().unwrap_or_else(|e| e.into_inner());
                if slot.is_none() {
                    *slot = Some(shadow);
                }
            }
        }
    }

    /// [`Self::verdict`] for [`Shadow::update`], with the common cases first: an empty
    /// granule, and the same access again.
    #[inline]
    fn decide(
        &self,
        s: [u64; 2],
        record: u64,
        who: Accessor,
        orders: (&BlockRaces, ClusterView),
        address: u64,
    ) -> Result<Option<[u64; 2]>, Found> {
        if s[0] == 0 {
            // Empty (then so is the second slot): the granule's first access in this launch.
            return Ok(Some([record, 0]));
        }
        if s[0] == record || s[1] == record {
            // The same access again (its pairs with the other record were checked then).
            return Ok(None);
        }
        match self.verdict(s, record, who, orders, address) {
            Verdict::Unchanged => Ok(None),
            Verdict::Update(new) => Ok(Some(new)),
            Verdict::Conflict {
                record: r,
                disjoint,
            } => {
                let bytes = mask(r) & mask(record);
                Err(Found {
                    record: r,
                    address: address + u64::from(bytes.trailing_zeros().min(3)),
                    disjoint,
                })
            }
        }
    }

    /// What the records `s` of a granule say about the access `a` (a full record).
    #[inline]
    fn verdict(
        &self,
        s: [u64; 2],
        a: u64,
        who: Accessor,
        (block, cluster): (&BlockRaces, ClusterView),
        address: u64,
    ) -> Verdict {
        let layout = self.layout;
        let (a_kind, a_mask, a_thread) = (kind(a), mask(a), layout.thread_of(a));
        let a_block = layout.block_of(a);
        let mut keep = [false; 2];
        for (i, &r) in s.iter().enumerate() {
            if r == 0 {
                continue;
            }
            keep[i] = true;
            let (r_kind, r_mask) = (kind(r), mask(r));
            if r_mask & a_mask == 0 {
                continue;
            }
            let same_thread = layout.thread_of(r) == a_thread;
            if same_thread {
                // Already recorded: the same bytes at the same clock, or this thread's write
                // standing for its later reads.
                let stands_for = r_kind == a_kind || (r_kind == WRITE && a_kind == READ);
                if stands_for
                    && r_mask & a_mask == a_mask
                    && layout.clock_of(r) == layout.clock_of(a)
                {
                    return Verdict::Unchanged;
                }
            } else {
                let byte = address + u64::from((r_mask & a_mask).trailing_zeros());
                // Plain stores only: atomics on an element are made to be shared.
                if a_kind == WRITE && r_kind == WRITE && in_ranges(&self.disjoint, byte) {
                    return Verdict::Conflict {
                        record: r,
                        disjoint: true,
                    };
                }
                // Only plain writes conflict: reads among themselves never, atomics among
                // themselves never, and a plain read of a location others update atomically
                // sees one of its values (a compare-exchange loop's first guess, a poll).
                let conflicting = r_kind == WRITE || a_kind == WRITE;
                let same_block = layout.block_of(r) == a_block;
                let barrier_between = same_block && layout.clock_of(r) < who.barrier_clock;
                if conflicting {
                    let ordered = barrier_between
                        || self.synchronized(block, who, r)
                        || cluster.is_some_and(|(c, rank)| c.orders(layout, rank, a, r));
                    if !ordered {
                        return Verdict::Conflict {
                            record: r,
                            disjoint: false,
                        };
                    }
                } else if !barrier_between {
                    // Concurrent reads (or atomics) of other threads: both stay.
                    continue;
                }
            }
            // `r` is ordered before `a`, or is the same thread's: `a` replaces it if it covers
            // its bytes and says at least as much.
            let replaces = a_kind != READ || r_kind == READ;
            if replaces && r_mask & !a_mask == 0 {
                keep[i] = false;
            }
        }
        let (k0, k1) = (keep[0].then_some(s[0]), keep[1].then_some(s[1]));
        match (k0, k1) {
            (None, None) => Verdict::Update([a, 0]),
            (Some(r), None) | (None, Some(r)) => Verdict::Update([r, a]),
            (Some(r0), Some(r1)) => {
                if a_kind == READ {
                    Verdict::Unchanged
                } else if kind(r0) == READ {
                    Verdict::Update([r1, a])
                } else {
                    Verdict::Update([r0, a])
                }
            }
        }
    }

    /// Whether a release/acquire orders the access recorded in `r` before `who`'s.
    fn synchronized(&self, block: &BlockRaces, who: Accessor, r: u64) -> bool {
        match &self.sync {
            Some(sync) => sync.orders(self.layout, &block.sync, who.record, r),
            None => false,
        }
    }

    /// The error for an access `a` of `kind` by `lane`'s thread that conflicts with `found`.
    #[cold]
    pub(crate) fn error(
        &self,
        launch: &Launch,
        found: &Found,
        second_block: u64,
        second_tid: u32,
        second: AccessKind,
    ) -> EmuError {
        let layout = self.layout;
        let first_block = layout.block_of(found.record);
        let first = RaceAccess {
            block: launch.block_coords(first_block),
            thread: launch.thread_coords(layout.tid_of(found.record)),
            access: access_kind(kind(found.record)),
        };
        let second = RaceAccess {
            block: launch.block_coords(second_block),
            thread: launch.thread_coords(second_tid),
            access: second,
        };
        let kernel = launch.kernel.name.clone();
        if found.disjoint
            && let Some((param, index)) = launch.element_at(found.address)
        {
            return EmuError::DisjointWrite(Box::new(DisjointWrite {
                kernel,
                param,
                index,
                first: (first.block, first.thread),
                second: (second.block, second.thread),
            }));
        }
        let kind = if writes(kind_of_access(first.access)) && writes(kind_of_access(second.access))
        {
            RaceKind::WriteWrite
        } else {
            RaceKind::ReadWrite
        };
        EmuError::GlobalRace(Box::new(GlobalRace {
            kernel,
            address: found.address,
            location: launch.describe_global(found.address),
            kind,
            first,
            second,
        }))
    }
}

fn access_kind(k: u64) -> AccessKind {
    match k {
        READ => AccessKind::Load,
        WRITE => AccessKind::Store,
        _ => AccessKind::Atomic,
    }
}

fn kind_of_access(a: AccessKind) -> u64 {
    match a {
        AccessKind::Load => READ,
        AccessKind::Store => WRITE,
        AccessKind::Atomic => ATOMIC,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_fields_round_trip() {
        for blocks in [1u64, 2, 1000, 1 << 20, (1 << 32) - 1, u64::MAX] {
            let l = Layout::new(blocks);
            assert!(l.clock_bits >= MIN_CLOCK_BITS, "{blocks}");
            let b = blocks.saturating_sub(1).min((1 << 32) - 1);
            let r = l.record(b, l.max_clock(), 1023) | (0xF << MASK_SHIFT) | ATOMIC;
            assert_eq!(l.block_of(r), b);
            assert_eq!(l.tid_of(r), 1023);
            assert_eq!(l.clock_of(r), l.max_clock());
            assert_eq!(l.thread_of(r), (b << TID_BITS) | 1023);
            assert_eq!(mask(r), 0xF);
            assert_eq!(kind(r), ATOMIC);
        }
    }
}
