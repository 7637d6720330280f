//! Thread-block clusters (sm_90): what the blocks of one cluster share beyond global memory.
//! The scheduler (`exec`) runs a cluster's blocks together, their warps interleaved on one CPU
//! thread; this module keeps the cluster barrier (`barrier.cluster.arrive`/`wait`), the
//! remote mbarrier arrivals ([`cuprum_ir::MbarrierOp::ArriveCluster`]) and the targets of
//! multicast copies (`crate::tma`), and the order all of these give memory accesses, for the
//! race trackers. A kernel without cluster statements never touches it beyond one flag.
//!
//! # The cluster barrier
//!
//! Each thread alternates arrivals and waits, starting with an arrival; a second arrival
//! before the wait, or a wait with no arrival since the last, is an
//! [`EmuError::ClusterMisuse`]. Phase `p` completes when every thread of every block of the
//! cluster has arrived `p` times or returned (PTX's `exit` releases the barriers that only
//! exited threads hold up); a wait for an incomplete phase stops the warp as an mbarrier wait
//! does (`Stop::Blocked` with [`CLUSTER_BLOCKED`]). Both statements are warp-collective: every
//! lane of the warp that has not returned runs them together. Without a cluster the cluster
//! is the one block.
//!
//! # Order across blocks
//!
//! What thread `u` knows of another thread `t`'s accesses is kept in two halves, for the two
//! race trackers: stamps of `t`'s block's vector clocks (`crate::mbarrier::Clocks`, per
//! block: shared memory) and `t`'s block clock (`crate::global`: global memory).
//! * An arrival at the cluster barrier (and a thread's return, which counts as one) releases
//!   the thread's stamp and what it knew of its block into the block's collection for the
//!   phase, and records the block clock at the arrival, per thread. Collections are
//!   cumulative (phase `p`'s covers every arrival up to `p`), and only three are kept per
//!   block: a thread that has not returned has passed the last completed phase or the one
//!   before it, and the third collects.
//! * A wait acquires the completed phase: its own block's collection into its clocks at once;
//!   the other blocks' by the phase number alone (`waits`), looked up when needed: when it
//!   multicasts into a block (what it knows of that block's threads is what the block's TMA
//!   agent acquires), arrives remotely on a block's mbarrier, or when the global race tracker
//!   asks whether an earlier access of the cluster is ordered before its access.
//! * A remote mbarrier arrival joins what its thread knew of the target block into the
//!   phase's collection (the target's clocks) and releases, beside it, a [`Knowledge`] of
//!   the other blocks: the phase it passed, its own stamp and what it knew of its own block
//!   (as stamps of that block), its block clock and its block's last barrier, its block's
//!   shared-memory epoch (every access of that block in an earlier epoch is ordered before
//!   it: what distributed shared memory asks), and the knowledge it had acquired the same
//!   way. The phase's observers acquire that knowledge.
//! * A block barrier passes what any thread of the block acquired that way (and the most
//!   cluster barrier phases one of them waited for) on to all of them.
//!
//! Distributed shared memory (`crate::dsmem`) asks the same order: whether a thread knows
//! another thread's access of a block's shared memory ([`ClusterOrder::knows_remote`]), and
//! what a thread knows of a block's own threads ([`ClusterOrder::target_view`]).
//!
//! A block must not return while another block's arrival on its mbarriers, multicast copy
//! into its shared memory or access of it is not ordered before the return: such an
//! arrival, copy or access after the return (the shared memory is gone on the GPU), a
//! multicast into it that has not landed, or an arrival or access that none of its threads
//! observed (by a phase of that mbarrier, or a cluster barrier phase that the arriving or
//! accessing thread's next arrival completed) are
//! [`EmuError::ClusterMisuse`]: the first at the arrival or copy, the others when the
//! block's last thread returns, so that the report does not depend on which block the
//! scheduler happened to run first.

use std::collections::{BTreeMap, HashMap};

use crate::access::{Ctx, lanes_of};
use crate::dsmem::RemoteAccess;
use crate::error::{Dim3, EmuError};
use crate::exec::Launch;
use crate::global::Layout;
use crate::lanes::Lanes;
use crate::mbarrier::{Clocks, MbarFault};
use crate::shared::SharedMem;
use crate::warp::Exec;

/// The `off` of a [`crate::warp::Stop::Blocked`] that waits at the cluster barrier: above
/// every shared-memory offset and every named barrier's.
pub(crate) const CLUSTER_BLOCKED: u32 = u32::MAX;

/// Phase collections kept per block (see the module docs).
const SLOTS: usize = 3;

/// The collection of phase `phase`.
fn slot(phase: u32) -> usize {
    phase as usize % SLOTS
}

/// Where a thread is in the cluster barrier's alternation.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ThreadPhase {
    /// As many waits as arrivals.
    Idle,
    /// One arrival more than waits.
    Arrived,
    /// The thread returned: it counts as arrived at every later phase.
    Returned,
}

/// What a thread knows of other blocks' accesses beyond the cluster barrier phases it
/// waited for: what it acquired from remote arrivals (see the module docs), or what a remote
/// arrival released.
#[derive(Clone, Default, Debug)]
pub(crate) struct Knowledge {
    /// A cluster barrier phase whose arrivals (every block's) are known.
    phase: u32,
    /// Per `(rank, thread)`: the newest stamp of that block's clocks known.
    stamps: HashMap<(u32, u32), u32>,
    /// Per `(rank, thread)`: a block clock below which that thread's global accesses are
    /// known.
    clocks: HashMap<(u32, u32), u64>,
    /// Per rank: a block clock below which all of that block's global accesses are known
    /// (its last barrier before a release).
    barriers: HashMap<u32, u64>,
    /// Per rank: a shared-memory epoch of that block below which all of its threads'
    /// accesses are known (the epoch at a release: every earlier epoch ended at a block
    /// barrier the releasing thread passed); what orders distributed shared memory.
    epochs: HashMap<u32, u32>,
}

impl Knowledge {
    /// Adds what `other` knows.
    pub(crate) fn join(&mut self, other: &Knowledge) {
        self.phase = self.phase.max(other.phase);
        for (&k, &s) in &other.stamps {
            let e = self.stamps.entry(k).or_insert(0);
            *e = (*e).max(s);
        }
        for (&k, &c) in &other.clocks {
            let e = self.clocks.entry(k).or_insert(0);
            *e = (*e).max(c);
        }
        for (&k, &c) in &other.barriers {
            let e = self.barriers.entry(k).or_insert(0);
            *e = (*e).max(c);
        }
        for (&k, &c) in &other.epochs {
            let e = self.epochs.entry(k).or_insert(0);
            *e = (*e).max(c);
        }
    }

    /// Whether it covers the distributed shared-memory access `a`.
    fn covers_remote(&self, a: &RemoteAccess) -> bool {
        self.stamps
            .get(&(a.rank, a.tid))
            .is_some_and(|&s| s >= a.stamp)
            || self.epochs.get(&a.rank).is_some_and(|&e| e > a.epoch)
    }

    /// Whether it covers the global access of thread `tid` of block `rank` at block clock
    /// `clock`.
    fn covers_global(&self, rank: u32, tid: u32, clock: u64) -> bool {
        self.clocks.get(&(rank, tid)).is_some_and(|&c| clock < c)
            || self.barriers.get(&rank).is_some_and(|&c| clock < c)
    }
}

/// A block's latest remote arrival from one thread of another block, for the check when the
/// block returns.
struct RemoteArrival {
    /// The arriving thread's cluster barrier arrivals before it.
    arrivals: u32,
    /// The mbarrier's shared offset.
    off: u32,
    /// Phases completed there before the arrival's.
    completions: u64,
}

/// One block of the cluster, as the cluster's order sees it.
#[derive(Default)]
struct Member {
    block_idx: Dim3,
    /// Its number in global race records (`None`: not tracked).
    number: Option<u64>,
    /// Per thread: where it is in the barrier's alternation, and its waits so far.
    state: Vec<ThreadPhase>,
    waits: Vec<u32>,
    /// The most waits any of its threads completed.
    max_waits: u32,
    /// Per phase slot: the cumulative collection of its threads' releases (its clocks'
    /// stamps), and per thread the block clock at its latest arrival.
    stamps: [Vec<u32>; SLOTS],
    clocks: [Vec<u64>; SLOTS],
    /// Whether every thread returned.
    finished: bool,
    /// The latest remote arrival on its mbarriers of each `(rank, thread)` of another block.
    remote: BTreeMap<(u32, u32), RemoteArrival>,
    /// What every thread of the block knows since its last block barrier: the join of what
    /// its threads had acquired from remote arrivals before it, and the most cluster barrier
    /// phases one of them had waited for (a block barrier passes knowledge on).
    barrier: Knowledge,
}

impl Member {
    /// Thread `tid` releases its accesses so far into the collection of phase `phase`:
    /// `stamps` through `clocks`, its block clock `clock`. False when `clocks` started over.
    fn release(&mut self, tid: u32, phase: u32, clocks: &mut Clocks, clock: Option<u64>) -> bool {
        let s = slot(phase);
        let ok = clocks.release(tid, &mut self.stamps[s]);
        if let Some(c) = clock
            && let Some(x) = self.clocks[s].get_mut(tid as usize)
        {
            *x = (*x).max(c);
        }
        ok
    }
}

/// The cluster barrier and the order across a cluster's blocks (see the module docs), kept
/// by the worker that runs the cluster and reused from cluster to cluster.
#[derive(Default)]
pub(crate) struct ClusterOrder {
    /// Whether the kernel has cluster statements (else nothing here is kept).
    active: bool,
    /// Cluster barrier phases completed.
    completed: u32,
    /// Threads of the cluster yet to arrive (or return) for phase `completed + 1`.
    missing: u32,
    /// Threads of the cluster that have not returned.
    live: u32,
    /// By rank.
    members: Vec<Member>,
    /// What threads acquired from remote arrivals, by `(rank, thread)`.
    knowledge: HashMap<(u32, u32), Knowledge>,
}

impl ClusterOrder {
    /// Starts a cluster whose blocks, by rank, are `blocks` (`blockIdx`, linear index).
    pub(crate) fn begin_cluster(&mut self, launch: &Launch, blocks: &[(Dim3, u64)]) {
        self.active = launch.cluster_sync;
        if !self.active {
            // Without cluster statements nothing here is asked: keep nothing.
            self.members.clear();
            return;
        }
        self.members.resize_with(blocks.len(), Member::default);
        self.members.truncate(blocks.len());
        let threads = launch.threads as usize;
        let layout = launch.races.as_ref().map(|r| r.layout);
        for (m, &(block_idx, linear)) in self.members.iter_mut().zip(blocks) {
            m.block_idx = block_idx;
            m.finished = false;
            m.max_waits = 0;
            m.remote.clear();
            m.barrier = Knowledge::default();
            m.number = layout.map(|l| l.block_number(linear));
            m.state.clear();
            m.state.resize(threads, ThreadPhase::Idle);
            m.waits.clear();
            m.waits.resize(threads, 0);
            m.stamps.iter_mut().for_each(Vec::clear);
            for c in &mut m.clocks {
                c.clear();
                if layout.is_some() {
                    c.resize(threads, 0);
                }
            }
        }
        self.completed = 0;
        self.live = launch.threads * blocks.len() as u32;
        self.missing = self.live;
        self.knowledge.clear();
    }

    /// The view the global race tracker asks, for a thread of block `rank`.
    #[inline]
    pub(crate) fn view(&self, rank: u32) -> Option<(&Self, u32)> {
        self.active.then_some((self, rank))
    }

    /// Whether block `rank`'s threads have all returned.
    pub(crate) fn finished(&self, rank: u32) -> bool {
        self.members.get(rank as usize).is_some_and(|m| m.finished)
    }

    /// `blockIdx` of block `rank`.
    pub(crate) fn block_idx(&self, rank: u32) -> Dim3 {
        self.members
            .get(rank as usize)
            .map_or([0; 3], |m| m.block_idx)
    }

    fn state(&self, rank: u32, tid: u32) -> ThreadPhase {
        self.members
            .get(rank as usize)
            .and_then(|m| m.state.get(tid as usize))
            .copied()
            .unwrap_or(ThreadPhase::Returned)
    }

    fn waits(&self, rank: u32, tid: u32) -> u32 {
        self.members
            .get(rank as usize)
            .and_then(|m| m.waits.get(tid as usize))
            .copied()
            .unwrap_or(0)
    }

    /// Thread `tid` of block `rank`'s arrivals at the cluster barrier so far.
    pub(crate) fn arrivals(&self, rank: u32, tid: u32) -> u32 {
        self.waits(rank, tid) + u32::from(self.state(rank, tid) == ThreadPhase::Arrived)
    }

    /// The cluster barrier phase whose arrivals thread `tid` of block `rank` knows: the last
    /// it waited for, or a later one a remote arrival passed on.
    fn phase_known(&self, rank: u32, tid: u32) -> u32 {
        let acquired = self.knowledge.get(&(rank, tid)).map_or(0, |k| k.phase);
        let block = self
            .members
            .get(rank as usize)
            .map_or(0, |m| m.barrier.phase);
        self.waits(rank, tid).max(acquired).max(block)
    }

    /// What thread `tid` of block `rank` acquired beyond the phases it knows: its own
    /// knowledge and its block's since the last block barrier.
    fn acquired(&self, rank: u32, tid: u32) -> impl Iterator<Item = &Knowledge> {
        let own = self.knowledge.get(&(rank, tid));
        let block = self.members.get(rank as usize).map(|m| &m.barrier);
        own.into_iter().chain(block)
    }

    /// The slot to look `phase` up in: one of the two completed phases kept (a live thread
    /// has passed one of them, so an older phase only comes from a thread that returned; the
    /// newer collection covers it).
    fn lookup_slot(&self, phase: u32) -> usize {
        slot(phase.max(self.completed.saturating_sub(1)))
    }

    /// What thread `tid` of block `rank` knows of block `target`'s threads, as stamps of
    /// `target`'s clocks.
    pub(crate) fn stamps_known(&self, rank: u32, tid: u32, target: u32) -> Vec<u32> {
        let Some(m) = self.members.get(target as usize) else {
            return Vec::new();
        };
        let mut known = m.stamps[self.lookup_slot(self.phase_known(rank, tid))].clone();
        for k in self.acquired(rank, tid) {
            for (&(r, t), &s) in &k.stamps {
                if r == target {
                    if known.len() <= t as usize {
                        known.resize(t as usize + 1, 0);
                    }
                    known[t as usize] = known[t as usize].max(s);
                }
            }
        }
        known
    }

    /// What a remote arrival by thread `tid` of block `rank` on block `target`'s mbarrier
    /// releases of the blocks other than `target`: `own` is its stamps (its release in its
    /// block's clocks), `epoch` its block's shared-memory epoch, `clock` its block clock and
    /// its block's last barrier.
    fn released_by(
        &self,
        (rank, tid): (u32, u32),
        target: u32,
        (own, epoch): (&[u32], u32),
        clock: Option<(u64, u64)>,
    ) -> Knowledge {
        let mut k = Knowledge::default();
        for a in self.acquired(rank, tid) {
            k.join(a);
        }
        k.phase = self.phase_known(rank, tid);
        k.stamps.retain(|&(r, _), _| r != target);
        k.epochs.retain(|&r, _| r != target);
        let e = k.epochs.entry(rank).or_insert(0);
        *e = (*e).max(epoch);
        for (w, &s) in own.iter().enumerate() {
            if s != 0 {
                let e = k.stamps.entry((rank, w as u32)).or_insert(0);
                *e = (*e).max(s);
            }
        }
        if let Some((clock, barrier)) = clock {
            let e = k.clocks.entry((rank, tid)).or_insert(0);
            *e = (*e).max(clock);
            let e = k.barriers.entry(rank).or_insert(0);
            *e = (*e).max(barrier);
        }
        k
    }

    /// Thread `tid` of block `rank` observed a phase that remote arrivals released `k` into:
    /// its own block's part goes into `clocks` (that block's), the rest into its knowledge.
    pub(crate) fn acquire(&mut self, rank: u32, tid: u32, k: &Knowledge, clocks: &mut Clocks) {
        if !self.active {
            return;
        }
        if k.phase > self.phase_known(rank, tid)
            && let Some(m) = self.members.get(rank as usize)
        {
            clocks.acquire(tid, &m.stamps[self.lookup_slot(k.phase)]);
        }
        for (&(r, w), &s) in &k.stamps {
            if r == rank {
                clocks.acquire_one(tid, w, s);
            }
        }
        let mine = self.knowledge.entry((rank, tid)).or_default();
        mine.join(k);
        mine.stamps.retain(|&(r, _), _| r != rank);
        mine.epochs.retain(|&r, _| r != rank);
    }

    /// A block barrier of block `rank`: what any of its threads knows becomes what all of
    /// them know.
    pub(crate) fn block_barrier(&mut self, rank: u32) {
        if !self.active {
            return;
        }
        let Some(m) = self.members.get(rank as usize) else {
            return;
        };
        let mut all = m.barrier.clone();
        all.phase = all.phase.max(m.max_waits);
        for (_, k) in self.knowledge.iter().filter(|((r, _), _)| *r == rank) {
            all.join(k);
        }
        if let Some(m) = self.members.get_mut(rank as usize) {
            m.barrier = all;
        }
    }

    /// Whether thread `tid` of block `rank` knows the distributed shared-memory access `a`
    /// (made by another thread, of any block): a cluster barrier phase after it, a remote
    /// arrival's release after it that this thread (or its block, before a block barrier)
    /// acquired, or, for `a` of this thread's own block, what orders the block's own
    /// accesses (`own`: the block's current shared-memory epoch and its clocks).
    pub(crate) fn knows_remote(
        &self,
        (rank, tid): (u32, u32),
        a: &RemoteAccess,
        own: Option<(u32, &Clocks)>,
    ) -> bool {
        if a.rank == rank {
            if a.tid == tid {
                return true;
            }
            if let Some((epoch, clocks)) = own
                && (a.epoch != epoch || clocks.ordered(a.tid, a.stamp, tid))
            {
                return true;
            }
        }
        self.phase_known(rank, tid) > a.arrivals
            || self.acquired(rank, tid).any(|k| k.covers_remote(a))
    }

    /// What thread `tid` of block `rank` knows of the accesses of block `target`'s own
    /// threads to its shared memory, for a distributed shared-memory access of it: per
    /// thread of `target`, the newest stamp of its clocks known, and an epoch of `target`
    /// before which all of its accesses are known (0: none).
    pub(crate) fn target_view(&self, rank: u32, tid: u32, target: u32) -> (Vec<u32>, u32) {
        let epoch = self
            .acquired(rank, tid)
            .filter_map(|k| k.epochs.get(&target).copied())
            .max()
            .unwrap_or(0);
        (self.stamps_known(rank, tid, target), epoch)
    }

    /// Whether some thread of block `target` knows the distributed shared-memory access `a`
    /// of it, so that the access happens before the block's threads have all returned.
    fn known_by_block(&self, target: u32, a: &RemoteAccess) -> bool {
        let Some(m) = self.members.get(target as usize) else {
            return false;
        };
        m.max_waits > a.arrivals
            || m.barrier.covers_remote(a)
            || self
                .knowledge
                .iter()
                .any(|((r, _), k)| *r == target && (k.phase > a.arrivals || k.covers_remote(a)))
    }

    /// Whether the cluster's synchronisation orders the global access recorded in `earlier`
    /// before the access `who` (a record of a thread of block `rank`).
    pub(crate) fn orders(&self, layout: Layout, rank: u32, who: u64, earlier: u64) -> bool {
        let number = layout.block_of(earlier);
        let Some(r) = self.members.iter().position(|m| m.number == Some(number)) else {
            return false;
        };
        let tid = layout.tid_of(who);
        let (t, c) = (layout.tid_of(earlier), layout.clock_of(earlier));
        let phase = self.lookup_slot(self.phase_known(rank, tid));
        self.members[r].clocks[phase]
            .get(t as usize)
            .is_some_and(|&k| c < k)
            || self
                .acquired(rank, tid)
                .any(|k| k.covers_global(r as u32, t, c))
    }

    /// Thread `tid` of block `rank` arrives at the cluster barrier (its alternation checked
    /// by the caller). False when `clocks` (its block's) started over.
    fn arrive(&mut self, rank: u32, tid: u32, clocks: &mut Clocks, clock: Option<u64>) -> bool {
        let collecting = self.completed + 1;
        let Some(m) = self.members.get_mut(rank as usize) else {
            return true;
        };
        if let Some(s) = m.state.get_mut(tid as usize) {
            *s = ThreadPhase::Arrived;
        }
        let ok = m.release(tid, collecting, clocks, clock);
        self.missing = self.missing.saturating_sub(1);
        self.complete_if_done();
        ok
    }

    /// Thread `tid` of block `rank` returned: it counts as arrived at every later phase, and
    /// releases its accesses as an arrival does. False when `clocks` started over.
    pub(crate) fn returned(
        &mut self,
        rank: u32,
        tid: u32,
        clocks: &mut Clocks,
        clock: Option<u64>,
    ) -> bool {
        let (completed, collecting) = (self.completed, self.completed + 1);
        let Some(m) = self.members.get_mut(rank as usize) else {
            return true;
        };
        let Some(state) = m.state.get_mut(tid as usize) else {
            return true;
        };
        // Whether its arrival for the collecting phase is already counted.
        let counted = match *state {
            ThreadPhase::Returned => return true,
            ThreadPhase::Arrived => m.waits.get(tid as usize) == Some(&completed),
            ThreadPhase::Idle => false,
        };
        *state = ThreadPhase::Returned;
        let ok = m.release(tid, collecting, clocks, clock);
        self.live = self.live.saturating_sub(1);
        if !counted {
            self.missing = self.missing.saturating_sub(1);
        }
        self.complete_if_done();
        ok
    }

    /// Completes the collecting phase once nothing is missing: the next collection starts
    /// from it (they are cumulative), and every live thread is missing from the next.
    fn complete_if_done(&mut self) {
        if self.missing != 0 || self.live == 0 {
            return;
        }
        self.completed += 1;
        let (done, next) = (slot(self.completed), slot(self.completed + 1));
        for m in &mut self.members {
            let stamps = m.stamps[done].clone();
            m.stamps[next] = stamps;
            let clocks = m.clocks[done].clone();
            m.clocks[next] = clocks;
        }
        self.missing = self.live;
    }

    /// The state of the cluster barrier, for a deadlock report.
    fn describe(&self) -> String {
        // Missing from the collecting phase: no arrival since the last wait, or only one for
        // a phase that has completed.
        let missing = |m: &Member| {
            m.state.iter().zip(&m.waits).any(|(s, &w)| match s {
                ThreadPhase::Idle => true,
                ThreadPhase::Arrived => w < self.completed,
                ThreadPhase::Returned => false,
            })
        };
        let blocks = self
            .members
            .iter()
            .filter(|m| missing(m))
            .map(|m| format!("{:?}", m.block_idx))
            .collect::<Vec<_>>();
        format!(
            "phase {} of the cluster barrier still misses the arrivals of {} of the cluster's {} \
             threads that have not returned (threads of blocks {} have not arrived)",
            self.completed + 1,
            self.missing,
            self.live,
            blocks.join(", ")
        )
    }
}

/// The other blocks of a warp's cluster: their shared memories (the ranks below the warp's
/// block, then those above) and the cluster's order.
pub(crate) struct ClusterPorts<'a> {
    pub(crate) below: &'a mut [SharedMem],
    pub(crate) above: &'a mut [SharedMem],
    pub(crate) order: &'a mut ClusterOrder,
}

impl ClusterPorts<'_> {
    /// The shared memory of block `rank`, for a warp of block `own` (`None` for its own).
    pub(crate) fn peer(&mut self, own: u32, rank: u32) -> Option<&mut SharedMem> {
        if rank < own {
            self.below.get_mut(rank as usize)
        } else {
            self.above.get_mut(rank.checked_sub(own + 1)? as usize)
        }
    }
}

impl Exec<'_, '_> {
    /// Checks that the lanes in `mask` are every lane of the warp that has not returned
    /// (`live`), for a warp-collective cluster barrier statement.
    fn cluster_aligned(&self, mask: u32, live: u32, what: &str) -> Result<(), EmuError> {
        if mask == live {
            return Ok(());
        }
        let ctx = self.ctx;
        let lane = (live & !mask).trailing_zeros();
        Err(EmuError::BarrierDivergence {
            kernel: ctx.kernel_name(),
            block: ctx.block_idx,
            thread: ctx.thread(lane),
            message: format!(
                "only {} of the {} live threads of warp {} reach this `{what}`, which the \
                 warp's threads execute together (`.aligned`); this thread is elsewhere (the \
                 other arm of an `if`, or another iteration of or outside a loop)",
                mask.count_ones(),
                live.count_ones(),
                ctx.warp_index
            ),
        })
    }

    /// `barrier.cluster.arrive` by the lanes in `mask` (`live`: the warp's lanes that have
    /// not returned).
    pub(crate) fn cluster_arrive(&mut self, mask: u32, live: u32) -> Result<(), EmuError> {
        self.cluster_aligned(mask, live, "barrier.cluster.arrive")?;
        let ctx = self.ctx;
        let order = &mut *self.mem.cluster.order;
        if let Some(l) =
            lanes_of(mask).find(|&l| order.state(ctx.rank, ctx.tid(l)) != ThreadPhase::Idle)
        {
            return Err(misuse(
                ctx,
                l,
                "this thread arrives at the cluster barrier again without a \
                 `barrier.cluster.wait` since its last arrival: each thread alternates \
                 arrivals and waits, starting with an arrival"
                    .into(),
            ));
        }
        let clock = self.mem.races.release_clock(ctx.launch.races.as_ref());
        let clocks = &mut self.mem.shared.mbar.clocks;
        let mut restarted = false;
        for l in lanes_of(mask) {
            restarted |= !order.arrive(ctx.rank, ctx.tid(l), clocks, clock.map(|c| c.0));
        }
        if restarted {
            self.mem.shared.clocks_restarted();
        }
        Ok(())
    }

    /// `barrier.cluster.wait` by the lanes in `mask` (`live`: the warp's lanes that have not
    /// returned). Returns a lane whose phase has not completed (the warp then waits here),
    /// or `None` once every lane acquired its phase.
    pub(crate) fn cluster_wait(&mut self, mask: u32, live: u32) -> Result<Option<u32>, EmuError> {
        self.cluster_aligned(mask, live, "barrier.cluster.wait")?;
        let ctx = self.ctx;
        let order = &mut *self.mem.cluster.order;
        for l in lanes_of(mask) {
            let tid = ctx.tid(l);
            if order.state(ctx.rank, tid) != ThreadPhase::Arrived {
                return Err(misuse(
                    ctx,
                    l,
                    "this thread waits at the cluster barrier without a \
                     `barrier.cluster.arrive` since its last wait: each thread alternates \
                     arrivals and waits, starting with an arrival"
                        .into(),
                ));
            }
            if order.waits(ctx.rank, tid) >= order.completed {
                return Ok(Some(l));
            }
        }
        let clocks = &mut self.mem.shared.mbar.clocks;
        let Some(m) = order.members.get_mut(ctx.rank as usize) else {
            return Err(ctx.internal("a cluster rank without its block"));
        };
        for l in lanes_of(mask) {
            let t = ctx.tid(l) as usize;
            let (Some(w), Some(s)) = (m.waits.get_mut(t), m.state.get_mut(t)) else {
                continue;
            };
            // The phase it waited for is the last completed one (it had passed the one
            // before: see `ClusterOrder::lookup_slot`).
            *w += 1;
            *s = ThreadPhase::Idle;
            m.max_waits = m.max_waits.max(*w);
            clocks.acquire(t as u32, &m.stamps[slot(*w)]);
        }
        Ok(None)
    }

    /// The lanes in `lanes` return: they count as arrived at the cluster barrier from now on.
    pub(crate) fn cluster_threads_returned(&mut self, lanes: u32) {
        if lanes == 0 {
            return;
        }
        let ctx = self.ctx;
        let clock = self.mem.races.release_clock(ctx.launch.races.as_ref());
        let order = &mut *self.mem.cluster.order;
        let clocks = &mut self.mem.shared.mbar.clocks;
        let mut restarted = false;
        for l in lanes_of(lanes) {
            restarted |= !order.returned(ctx.rank, ctx.tid(l), clocks, clock.map(|c| c.0));
        }
        if restarted {
            self.mem.shared.clocks_restarted();
        }
    }

    /// `mbarrier.arrive.release.cluster` on the barrier at `addrs` of the block of rank
    /// `ranks`, for the lanes in `mask`.
    pub(crate) fn arrive_cluster(
        &mut self,
        addrs: &Lanes,
        ranks: &Lanes,
        mask: u32,
    ) -> Result<(), EmuError> {
        let ctx = self.ctx;
        let blocks = ctx.launch.cluster_blocks;
        let mut clock = None;
        for l in lanes_of(mask) {
            let (a, tid) = (addrs[l as usize], ctx.tid(l));
            let off = self
                .mem
                .shared
                .mbarrier_at(a)
                .map_err(|f| crate::mbarrier::misuse(ctx, l, a, &f))?;
            let rank = ranks[l as usize];
            let Some(rank) = u32::try_from(rank).ok().filter(|&r| r < blocks) else {
                return Err(misuse(
                    ctx,
                    l,
                    format!(
                        "a remote mbarrier arrival names cluster rank {rank}, but the cluster \
                         has {blocks} blocks (ranks 0..{blocks}, `cluster_ctarank()`'s \
                         numbering)"
                    ),
                ));
            };
            if rank == ctx.rank {
                // This block's own barrier: an ordinary arrival.
                let shared = &mut *self.mem.shared;
                let epoch = shared.epoch();
                let (_, ok) = shared
                    .mbar
                    .arrive(off, tid, epoch, true)
                    .map_err(|f| crate::mbarrier::misuse(ctx, l, a, &f))?;
                if !ok {
                    shared.clocks_restarted();
                }
                continue;
            }
            if clock.is_none() {
                clock = Some(self.mem.races.release_clock(ctx.launch.races.as_ref()));
            }
            let order = &*self.mem.cluster.order;
            let target = order.block_idx(rank);
            if order.finished(rank) {
                return Err(misuse(
                    ctx,
                    l,
                    format!(
                        "this thread arrives on the mbarrier at shared offset {off} of cluster \
                         rank {rank}, block {target:?}, whose threads have all returned (its \
                         shared memory is gone): end the kernel with a cluster barrier \
                         (arrive and wait) so that no block returns while others still arrive \
                         on its barriers"
                    ),
                ));
            }
            let known = order.stamps_known(ctx.rank, tid, rank);
            let arrivals = order.arrivals(ctx.rank, tid);
            let shared = &mut *self.mem.shared;
            let mut own = Vec::new();
            if !shared.mbar.clocks.release(tid, &mut own) {
                shared.clocks_restarted();
            }
            let epoch = self.mem.shared.epoch();
            let released = order.released_by((ctx.rank, tid), rank, (&own, epoch), clock.flatten());
            let Some(peer) = self.mem.cluster.peer(ctx.rank, rank) else {
                return Err(ctx.internal(format!("cluster rank {rank} has no shared memory")));
            };
            let completions = peer
                .mbar
                .arrive_remote(off, &known, released)
                .map_err(|f| remote_mbarrier_misuse(ctx, l, off, target, &f))?;
            if let Some(m) = self.mem.cluster.order.members.get_mut(rank as usize) {
                m.remote.insert(
                    (ctx.rank, tid),
                    RemoteArrival {
                        arrivals,
                        off,
                        completions,
                    },
                );
            }
        }
        Ok(())
    }
}

/// The error of a remote arrival's misuse `f` of the mbarrier at shared offset `off` of
/// block `target`.
#[cold]
fn remote_mbarrier_misuse(ctx: Ctx, lane: u32, off: u32, target: Dim3, f: &MbarFault) -> EmuError {
    let what = match f {
        MbarFault::UnorderedInit { init_thread } => format!(
            "nothing orders this remote arrival after thread {:?}'s `mbarrier_init` there: \
             initialise the barrier, then `fence_mbarrier_init()`, then a cluster barrier \
             (arrive and wait) before other blocks arrive on it",
            ctx.launch.thread_coords(*init_thread)
        ),
        other => crate::mbarrier::fault_message(ctx, other),
    };
    EmuError::MbarrierMisuse {
        kernel: ctx.kernel_name(),
        block: ctx.block_idx,
        thread: ctx.thread(lane),
        address: u64::from(off),
        message: format!("the mbarrier of block {target:?} (a remote arrival): {what}"),
    }
}

/// The end of block `rank` (its last thread returned): every other block's arrival on its
/// mbarriers, multicast copy into its shared memory and access of it (`crate::dsmem`) must
/// be ordered before it (see the module docs).
pub(crate) fn finish_block(
    launch: &Launch,
    rank: u32,
    shared: &SharedMem,
    order: &mut ClusterOrder,
) -> Result<(), EmuError> {
    let Some(m) = order.members.get_mut(rank as usize) else {
        return Ok(());
    };
    m.finished = true;
    if !order.active {
        return Ok(());
    }
    let (block, kernel) = (m.block_idx, launch.kernel.name.clone());
    if let Some(p) = shared.tma.loads.iter().find(|p| p.origin.is_some()) {
        let origin = p.origin.map_or([0; 3], |(b, _)| b);
        return Err(EmuError::ClusterMisuse {
            kernel,
            block: origin,
            thread: launch.thread_coords(p.issuer),
            message: format!(
                "this thread's multicast copy into block {block:?} (shared offset {:#x}, \
                 completing on the mbarrier at shared offset {}) had not landed when that \
                 block's threads all returned (its shared memory is gone): every block a \
                 multicast names must wait on that mbarrier's phase before returning",
                p.dst, p.mbar
            ),
        });
    }
    let m = &order.members[rank as usize];
    let unordered = m
        .remote
        .iter()
        .find(|(_, a)| m.max_waits <= a.arrivals && shared.mbar.observed(a.off) <= a.completions);
    if let Some((&(r, t), a)) = unordered {
        return Err(EmuError::ClusterMisuse {
            kernel,
            block: order.block_idx(r),
            thread: launch.thread_coords(t),
            message: format!(
                "this thread's arrival on the mbarrier at shared offset {} of block {block:?} \
                 is not ordered before that block's threads all returned (none of them \
                 observed the phase it arrived on, nor a cluster barrier phase after it), so \
                 on the GPU it may reach shared memory that is gone: end the kernel with a \
                 cluster barrier (arrive and wait)",
                a.off
            ),
        });
    }
    if let Some(((r, t), last)) = shared
        .remote
        .latest()
        .find(|(_, last)| !order.known_by_block(rank, &last.access))
    {
        return Err(EmuError::ClusterMisuse {
            kernel,
            block: order.block_idx(r),
            thread: launch.thread_coords(t),
            message: format!(
                "this thread's {} of block {block:?}'s shared memory at offset {off:#x} is not \
                 ordered before that block's threads all returned (none of them waited for a \
                 cluster barrier phase after it, nor observed a release after it), so on the \
                 GPU it may reach shared memory that is gone: end the kernel with a cluster \
                 barrier (arrive and wait) after the last access of another block's memory",
                if last.write { "write" } else { "read" },
                off = last.off
            ),
        });
    }
    Ok(())
}

/// The error for `lane`'s cluster misuse described by `message`.
#[cold]
pub(crate) fn misuse(ctx: Ctx, lane: u32, message: String) -> EmuError {
    EmuError::ClusterMisuse {
        kernel: ctx.kernel_name(),
        block: ctx.block_idx,
        thread: ctx.thread(lane),
        message,
    }
}

/// The error of a cluster in which no warp can move on while some wait at the cluster
/// barrier; `where_others` says where the cluster's other warps are.
#[cold]
pub(crate) fn deadlock(ctx: Ctx, lane: u32, order: &ClusterOrder, where_others: &str) -> EmuError {
    EmuError::ClusterBarrierDeadlock {
        kernel: ctx.kernel_name(),
        block: ctx.block_idx,
        thread: ctx.thread(lane),
        message: format!(
            "warp {} (this thread) waits at the cluster barrier, but {}; {where_others}, so \
             no thread is left to arrive",
            ctx.warp_index,
            order.describe()
        ),
    }
}

/// Whether `kernel` has statements that synchronise a cluster's blocks or reach another
/// block: cluster barriers, remote mbarrier arrivals, multicast copies, distributed shared
/// memory.
pub(crate) fn synchronises(kernel: &cuprum_ir::Kernel) -> bool {
    use cuprum_ir::{MbarrierOp, Stmt, TmaOp};
    let mut found = false;
    kernel.body.visit(&mut |s| {
        found |= matches!(
            s,
            Stmt::ClusterArrive
                | Stmt::ClusterWait
                | Stmt::Mbarrier {
                    op: MbarrierOp::ArriveCluster,
                    ..
                }
                | Stmt::Tma(TmaOp::LoadTile {
                    multicast: Some(_),
                    ..
                })
                | Stmt::ClusterLoad { .. }
                | Stmt::ClusterStore { .. }
        );
    });
    found
}
