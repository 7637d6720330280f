//! Release and acquire through atomics, for global race detection: which accesses of other
//! threads a thread's fences and atomics order before its own.
//!
//! The pattern real kernels use (CUDA's threadFenceReduction: the last block to finish adds up
//! the others' partial results) is: a thread writes data, executes a device fence, then an
//! atomic on a flag or counter (a *release*); a thread of another block executes an atomic on
//! the same location that comes later in that location's order, then a fence or a barrier (an
//! *acquire*), then reads the data. Modelled as:
//! * A thread's fence remembers its block clock and the block's last barrier. Its later
//!   atomics on a location publish that fence as a release on the location, numbered in the
//!   location's order (the atomic and the numbering happen under one lock). The release
//!   covers the thread's accesses before the fence and its block's accesses before the
//!   barrier (what a barrier orders before the fence).
//! * An atomic notes how many releases its location had (it reads every earlier atomic's
//!   result); the thread's next fence, or its block's next barrier, makes those releases
//!   known to the thread (at a barrier, to its whole block).
//! * An access is ordered after an earlier one of another thread when a release known to the
//!   accessing thread covers the earlier access. Block-scope fences order only within a block.
//! * Ordered atomics (`MemOrder`) are the same pattern in one instruction: a releasing atomic
//!   (`Release`, `AcqRel`; a store-release too) publishes a release of its own, covering the
//!   thread's accesses before it (and its block's before its last barrier), without a fence;
//!   an acquiring one (`Acquire`, `AcqRel`; a load-acquire too) makes the location's earlier
//!   releases known to its thread at once. `SeqCst` is a fence, then an acquire (a store: a
//!   fence, then a relaxed store), as PTX maps it. Atomic loads and stores count as atomics
//!   on their location, so a flag handed over by `store(Release)` and `load(Acquire)` orders
//!   the data around it, and a relaxed pair orders nothing.
//!
//! Simplifications: releases are followed one hop (data a block got from a third block through
//! a release is not passed on by its own releases); every atomic on a location acquires all
//! earlier releases on it, whatever plain stores came between; a thread's newer release on a
//! location replaces its older one. None of these can make a race appear where there is none;
//! they can hide one.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use crate::global::Layout;

/// A fence published by an atomic.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Release {
    tid: u32,
    /// The block clock the fence set: the thread's accesses before it are covered.
    clock: u64,
    /// The block's last barrier at the fence: all of the block's accesses before it are covered.
    barrier_clock: u64,
    /// Device or system scope (else block scope: only the block's own threads may use it).
    device: bool,
}

/// The releases published on one location, by block, each with its number in the location's
/// order.
#[derive(Default)]
struct Location {
    count: u32,
    by_block: HashMap<u64, Vec<(u32, Release)>>,
}

/// Releases known to a thread or block: those numbered below `upto` on `loc`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Known {
    loc: u64,
    upto: u32,
    device: bool,
}

fn merge(into: &mut Vec<Known>, k: Known) {
    match into
        .iter_mut()
        .find(|e| e.loc == k.loc && e.device == k.device)
    {
        Some(e) => e.upto = e.upto.max(k.upto),
        None => into.push(k),
    }
}

/// The releases of one launch, by location (device address of the atomic).
pub(crate) struct SyncTable {
    locations: Mutex<HashMap<u64, Location>>,
}

#[derive(Default, Clone)]
struct ThreadSync {
    /// The thread's latest fence: `(clock, barrier_clock, device)`.
    fence: Option<(u64, u64, bool)>,
    /// Locations its atomics read since its last fence, with the releases they saw.
    pending: Vec<(u64, u32)>,
    /// Releases its fences made known since the block's last barrier.
    known: Vec<Known>,
    /// Whether the thread is in its block's `dirty` list.
    listed: bool,
}

/// One block's synchronisation state: per thread, and what its barriers made known to all.
pub(crate) struct BlockSync {
    threads: Vec<ThreadSync>,
    /// Threads whose state may not be the empty one.
    dirty: Vec<u32>,
    known: Vec<Known>,
}

impl BlockSync {
    pub(crate) fn new() -> Self {
        Self {
            threads: Vec::new(),
            dirty: Vec::new(),
            known: Vec::new(),
        }
    }

    pub(crate) fn begin_block(&mut self, threads: u32) {
        if self.threads.len() < threads as usize {
            self.threads.resize(threads as usize, ThreadSync::default());
        }
        for t in self.dirty.drain(..) {
            self.threads[t as usize] = ThreadSync::default();
        }
        self.known.clear();
    }

    fn thread(&mut self, tid: u32) -> Option<&mut ThreadSync> {
        let t = self.threads.get_mut(tid as usize)?;
        if !t.listed {
            t.listed = true;
            self.dirty.push(tid);
        }
        Some(t)
    }

    /// A fence by thread `tid`, setting the block clock to `clock`.
    pub(crate) fn fence(&mut self, tid: u32, clock: u64, barrier_clock: u64, device: bool) {
        let Some(t) = self.thread(tid) else { return };
        let was_device = t.fence.is_some_and(|f| f.2);
        t.fence = Some((clock, barrier_clock, device || was_device));
        for (loc, upto) in t.pending.drain(..) {
            merge(&mut t.known, Known { loc, upto, device });
        }
    }

    /// A barrier: what any thread acquired becomes known to the whole block.
    pub(crate) fn barrier(&mut self) {
        for &tid in &self.dirty {
            let t = &mut self.threads[tid as usize];
            for (loc, upto) in t.pending.drain(..) {
                merge(
                    &mut self.known,
                    Known {
                        loc,
                        upto,
                        device: true,
                    },
                );
            }
            for k in t.known.drain(..) {
                merge(&mut self.known, k);
            }
        }
    }
}

impl SyncTable {
    pub(crate) fn new() -> Self {
        Self {
            locations: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<u64, Location>> {
        self.locations.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// An atomic by thread `tid` of block `block` (its number in the record layout) on `loc`:
    /// runs `rmw` (the memory update) under the table's lock, so that the release it
    /// publishes and the releases it acquires follow the location's order. `release` is the
    /// atomic's own release, `(clock, barrier_clock, device)`, where it is a releasing one
    /// (else the thread's last fence, if any, is published); `acquire` (its scope: device or
    /// wider) makes the location's releases so far known to the thread at once, where it is
    /// an acquiring one (else only its next fence or barrier does).
    pub(crate) fn atomic<R>(
        &self,
        block_sync: &mut BlockSync,
        block: u64,
        tid: u32,
        loc: u64,
        (release, acquire): (Option<(u64, u64, bool)>, Option<bool>),
        rmw: impl FnOnce() -> R,
    ) -> R {
        let mut locations = self.lock();
        let result = rmw();
        let Some(t) = block_sync.thread(tid) else {
            return result;
        };
        let location = locations.entry(loc).or_default();
        let fence = t.fence.map(|(clock, barrier_clock, device)| {
            // The atomic's own release is newer than the fence, and as wide at least where
            // the fence was narrower.
            match release {
                Some((c, b, d)) => (c, b, d || device),
                None => (clock, barrier_clock, device),
            }
        });
        if let Some((clock, barrier_clock, device)) = fence.or(release) {
            let release = Release {
                tid,
                clock,
                barrier_clock,
                device,
            };
            let list = location.by_block.entry(block).or_default();
            match list.iter_mut().rev().find(|(_, r)| r.tid == tid) {
                Some((_, r)) => *r = release,
                None => {
                    list.push((location.count, release));
                    location.count += 1;
                }
            }
        }
        let upto = location.count;
        match t.pending.iter_mut().find(|p| p.0 == loc) {
            Some(p) => p.1 = p.1.max(upto),
            None => t.pending.push((loc, upto)),
        }
        if let Some(device) = acquire {
            merge(&mut t.known, Known { loc, upto, device });
        }
        result
    }

    /// Whether a release known to the thread of record `who` (block state `block_sync`)
    /// covers the access recorded in `earlier`.
    pub(crate) fn orders(
        &self,
        layout: Layout,
        block_sync: &BlockSync,
        who: u64,
        earlier: u64,
    ) -> bool {
        let tid = layout.tid_of(who);
        let thread_known = block_sync
            .threads
            .get(tid as usize)
            .map_or(&[][..], |t| &t.known[..]);
        if block_sync.known.is_empty() && thread_known.is_empty() {
            return false;
        }
        let (block, e_block) = (layout.block_of(who), layout.block_of(earlier));
        let (e_tid, e_clock) = (layout.tid_of(earlier), layout.clock_of(earlier));
        let same_block = block == e_block;
        let locations = self.lock();
        block_sync
            .known
            .iter()
            .chain(thread_known)
            .filter(|k| k.device || same_block)
            .filter_map(|k| Some((k, locations.get(&k.loc)?.by_block.get(&e_block)?)))
            .any(|(k, releases)| {
                releases.iter().any(|&(number, r)| {
                    number < k.upto
                        && (r.device || same_block)
                        && (e_clock < r.barrier_clock || (e_tid == r.tid && e_clock < r.clock))
                })
            })
    }
}
