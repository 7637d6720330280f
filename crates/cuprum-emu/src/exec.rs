//! Launches: checks a launch against the kernel and the GPU's limits, prepares what every
//! thread needs (value types, argument bits, memory layouts, a snapshot of device memory),
//! spreads the clusters of blocks over the CPU cores with rayon and schedules the warps of
//! each cluster around their barriers.
//!
//! The unit of scheduling is the cluster ([`Kernel::cluster`]; without one, every block is a
//! cluster of one, which is the common case and costs nothing more). A cluster's blocks run
//! together on one CPU thread, their warps interleaved in rounds, rank by rank: each warp runs
//! until it finishes or stops. Each block keeps its own registers, local and shared memory,
//! block barrier, named barriers and mbarriers (in its shared memory); what the blocks share
//! (the cluster barrier, remote arrivals, multicast copies) is [`crate::cluster`]'s.
//!
//! A warp stops at a block barrier; when every warp of its block that is still running has
//! stopped at one, the scheduler checks that they wait at the same barrier statement, starts a
//! new race-tracking epoch and resumes them. A warp that waits on an mbarrier phase, a named
//! barrier or the cluster barrier (or polls an mbarrier phase that is incomplete) stops too,
//! and runs again in the next round while the warps at a block barrier stay there. A round in
//! which no warp of the cluster moves on and no block barrier lets warps past is a deadlock
//! (a warp may wait for another block's warp, so the whole cluster counts), reported for the
//! first waiting warp as [`EmuError::MbarrierDeadlock`], [`EmuError::NamedBarrierDeadlock`]
//! or [`EmuError::ClusterBarrierDeadlock`]. When a block's last warp finishes, its pending
//! bulk stores are written and its warpgroups and cluster obligations checked. Clusters share
//! nothing but global memory, so they run in parallel.
//!
//! The first failure stops the launch: clusters after the failing one stop at their next
//! loop back edge or never start, clusters before it run to the end, and the error of the
//! lowest failing cluster (the first its scheduler found) is returned, so which error a
//! faulty launch reports does not depend on timing (unless clusters race on global memory).
//! The step budget is the exception that makes this safe for runaway kernels: each worker
//! takes steps from the launch's shared counter in chunks, and once the budget is spent every
//! cluster fails at its next chunk, earlier ones included, so an endless loop in any block
//! ends the launch.
//!
//! A launch also owns the global race tracker ([`crate::global`]); each block state holds the
//! block's half of it (clock, synchronisation), advanced at every barrier.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use cuprum_ir::{
    ArrayDecl, Kernel, MAX_CLUSTER_BLOCKS, MemOrder, Op, ParamKind, ScalarType, SliceAccess, Stmt,
    array_layout, array_layout_size, validate_kernel,
};
use rayon::prelude::*;

use crate::access::{Ctx, Ports};
use crate::cluster::{ClusterOrder, ClusterPorts};
use crate::error::{Dim3, EmuError};
use crate::global::{BlockRaces, GlobalRaces};
use crate::lanes::Lanes;
use crate::memory::{GlobalView, Memory};
use crate::options::LaunchOptions;
use crate::printf::Sink;
use crate::shared::SharedMem;
use crate::warp::{Exec, Stop, Warp};

pub use cuprum_ir::{MAX_LOCAL_BYTES, MAX_SHARED_BYTES};
/// Most threads in one block.
pub const MAX_THREADS_PER_BLOCK: u32 = 1024;
/// Most steps a worker takes from a launch's budget at a time: small enough that the budget
/// is exact to a few chunks, large enough that the shared counter is touched rarely.
const STEP_CHUNK: u64 = 4096;

/// One argument of a launch, matching one [`cuprum_ir::Param`], in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgValue {
    /// A scalar's bits, zero-extended to 64 bits (as [`cuprum_ir::Constant`]).
    Scalar(u64),
    /// A slice: device address of the first element and length in elements.
    Slice {
        /// The device address of the first element, aligned to the element size and inside
        /// one live allocation (not checked when `len` is 0).
        base: u64,
        /// The number of elements (not bytes).
        len: u64,
    },
    /// A tensor map: the 128 bytes [`cuprum_ir::TensorMapDesc::encode_emulated`] makes of
    /// its description.
    TensorMap([u64; 16]),
}

/// Grid and block shape of a launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchDims {
    /// Blocks in the grid along `x`, `y` and `z`: each at least 1, at most
    /// `[2^31 - 1, 65535, 65535]`.
    pub grid: [u32; 3],
    /// Threads in each block along `x`, `y` and `z`: each at least 1, at most
    /// `[1024, 1024, 64]`, with a product of at most [`MAX_THREADS_PER_BLOCK`] (and within
    /// the kernel's launch bounds).
    pub block: [u32; 3],
    /// Bytes of dynamic shared memory per block, placed after the static shared arrays; the
    /// total must stay within [`MAX_SHARED_BYTES`].
    pub dynamic_shared_bytes: u32,
}

/// Everything about a launch that all blocks share.
pub(crate) struct Launch<'k> {
    pub(crate) kernel: &'k Kernel,
    /// Type of every value, by value index.
    pub(crate) types: Vec<ScalarType>,
    /// Per parameter: `[bits, 0]` for a scalar, `[base, len]` for a slice, `[0, 0]` for a
    /// tensor map.
    pub(crate) params: Vec<[u64; 2]>,
    /// Per parameter: the description of a tensor map.
    pub(crate) tensor_maps: Vec<Option<cuprum_ir::TensorMapDesc>>,
    pub(crate) shared_offsets: Vec<u32>,
    pub(crate) dyn_shared_offset: u32,
    pub(crate) shared_size: u32,
    pub(crate) local_offsets: Vec<u32>,
    pub(crate) local_size: u32,
    pub(crate) grid: Dim3,
    pub(crate) block: Dim3,
    /// The cluster's shape in blocks (`[1, 1, 1]` without [`Kernel::cluster`]) and its
    /// number of blocks.
    pub(crate) cluster: Dim3,
    pub(crate) cluster_blocks: u32,
    /// Whether the kernel synchronises a cluster's blocks ([`crate::cluster::synchronises`]):
    /// only then are the cluster barrier and the order across blocks kept.
    pub(crate) cluster_sync: bool,
    pub(crate) threads: u32,
    pub(crate) warps: u32,
    /// `threadIdx.{x,y,z}` of every lane of every warp (`warps * 32` entries each).
    pub(crate) thread_index: [Vec<u32>; 3],
    pub(crate) global: GlobalView,
    /// Where device `printf` text goes (stdout, or the launching thread's capture).
    pub(crate) prints: Sink,
    /// The global-memory race tracker (`None` when switched off).
    pub(crate) races: Option<GlobalRaces>,
    /// Which variables are wgmma accumulators (empty when the kernel has no wgmma).
    pub(crate) wgmma_vars: Vec<bool>,
    /// Steps taken from the budget so far, by all workers, in chunks of `step_chunk`.
    steps_taken: AtomicU64,
    /// The step budget (`u64::MAX`: none) and how many steps a worker takes at a time.
    pub(crate) step_limit: u64,
    pub(crate) step_chunk: u64,
    /// Lowest cluster index (block index without clusters) that failed so far (`u64::MAX`:
    /// none).
    first_failed: AtomicU64,
    error: Mutex<Option<(u64, EmuError)>>,
}

impl Launch<'_> {
    /// `[x, y, z]` of block-linear thread index `t`.
    #[inline]
    pub(crate) fn thread_coords(&self, t: u32) -> Dim3 {
        let [bx, by, _] = self.block;
        [t % bx, (t / bx) % by, t / (bx * by)]
    }

    pub(crate) fn block_coords(&self, b: u64) -> Dim3 {
        let [gx, gy, _] = self.grid.map(u64::from);
        [
            (b % gx) as u32,
            ((b / gx) % gy) as u32,
            (b / (gx * gy)) as u32,
        ]
    }

    /// Block `rank` of cluster `cluster_linear` (clusters numbered over the grid's clusters,
    /// x fastest): its `blockIdx` and linear block index.
    pub(crate) fn cluster_member(&self, cluster_linear: u64, rank: u32) -> (Dim3, u64) {
        if self.cluster_blocks == 1 {
            return (self.block_coords(cluster_linear), cluster_linear);
        }
        let [cx, cy, cz] = self.cluster;
        let [nx, ny, _] = [0, 1, 2].map(|d| u64::from(self.grid[d] / self.cluster[d]));
        let c = [
            cluster_linear % nx,
            (cluster_linear / nx) % ny,
            cluster_linear / (nx * ny),
        ];
        let r = [rank % cx, (rank / cx) % cy, rank / (cx * cy) % cz];
        let idx = [0, 1, 2].map(|d| (c[d] * u64::from(self.cluster[d]) + u64::from(r[d])) as u32);
        let [gx, gy, _] = self.grid.map(u64::from);
        let linear = u64::from(idx[0]) + gx * (u64::from(idx[1]) + gy * u64::from(idx[2]));
        (idx, linear)
    }

    /// The slice parameters whose elements hold global address `addr`: `(parameter index,
    /// element index)`, in parameter order.
    fn params_at(&self, addr: u64) -> impl Iterator<Item = (usize, u64)> + '_ {
        self.kernel
            .params
            .iter()
            .zip(&self.params)
            .enumerate()
            .filter_map(move |(i, (p, &[base, len]))| {
                let ParamKind::Slice { elem, .. } = p.kind else {
                    return None;
                };
                let size = u64::from(elem.size_bytes());
                let off = addr.checked_sub(base)?;
                (off < len.saturating_mul(size)).then_some((i, off / size))
            })
    }

    /// The `DisjointSlice` parameter holding `addr` and the element index there.
    pub(crate) fn element_at(&self, addr: u64) -> Option<(String, u64)> {
        self.params_at(addr).find_map(|(i, index)| {
            let p = &self.kernel.params[i];
            let disjoint = matches!(
                p.kind,
                ParamKind::Slice {
                    access: SliceAccess::Disjoint,
                    ..
                }
            );
            disjoint.then(|| (p.name.clone(), index))
        })
    }

    /// What global address `addr` is, in the kernel's terms, for an error message.
    pub(crate) fn describe_global(&self, addr: u64) -> String {
        let named: Vec<String> = self
            .params_at(addr)
            .map(|(i, index)| {
                let p = &self.kernel.params[i];
                let elem = match p.kind {
                    ParamKind::Slice { elem, .. } | ParamKind::TensorMap { elem, .. } => elem,
                    ParamKind::Scalar(t) => t,
                };
                format!("element {index} of parameter `{}` ({elem})", p.name)
            })
            .collect();
        if !named.is_empty() {
            return named.join(", also ");
        }
        let mut hint = 0;
        match self.global.locate(addr, 1, &mut hint) {
            Some((a, off)) => format!(
                "byte {off} of the {}-byte allocation at {:#x}, which no slice parameter covers",
                a.len, a.base
            ),
            None => "outside every allocation".to_string(),
        }
    }

    /// Whether a cluster before `cluster_linear` (a block, without clusters) has failed, so
    /// this one should stop.
    #[inline]
    pub(crate) fn stopped(&self, cluster_linear: u64) -> bool {
        self.first_failed.load(Relaxed) < cluster_linear
    }

    /// Takes the next chunk of steps from the launch's budget for a worker; false when the
    /// budget is spent (then every worker that asks fails, so all blocks stop).
    #[cold]
    pub(crate) fn take_steps(&self) -> bool {
        let taken = self.steps_taken.fetch_add(self.step_chunk, Relaxed);
        taken.saturating_add(self.step_chunk) <= self.step_limit
    }

    fn fail(&self, cluster_linear: u64, error: EmuError) {
        self.first_failed.fetch_min(cluster_linear, Relaxed);
        let mut slot = self.error.lock().unwrap_or_else(|e| e.into_inner());
        if slot.as_ref().is_none_or(|(c, _)| cluster_linear < *c) {
            *slot = Some((cluster_linear, error));
        }
    }
}

/// One block of the cluster a worker runs: its warps and everything they keep but shared
/// memory, which the cluster's other blocks reach too, so it lives beside (`Worker::shared`).
struct BlockState<'k> {
    block_idx: Dim3,
    block_linear: u64,
    warps: Vec<Warp<'k>>,
    at_barrier: Vec<Option<usize>>,
    done: Vec<bool>,
    /// Warps not done yet (0: every thread of the block has returned).
    running: usize,
    regs: Vec<Lanes>,
    vars: Vec<Lanes>,
    local: Vec<u8>,
    races: BlockRaces,
    /// Each warp's wgmma and named-barrier state.
    wg: Vec<crate::wgmma::WarpState<'k>>,
    /// Each warp's `cp.async` copies in flight.
    cp: Vec<crate::cp_async::Queues>,
}

impl BlockState<'_> {
    /// The context of this block's warp `w`, rank `rank` of cluster `cluster_linear`.
    fn warp_ctx<'a, 'k>(
        &self,
        launch: &'a Launch<'k>,
        cluster_linear: u64,
        rank: usize,
        w: usize,
    ) -> Ctx<'a, 'k> {
        Ctx {
            launch,
            block_idx: self.block_idx,
            block_linear: self.block_linear,
            cluster_linear,
            rank: rank as u32,
            warp_index: w as u32,
        }
    }
}

impl<'k> BlockState<'k> {
    fn new(launch: &Launch<'k>) -> Self {
        let w = launch.warps as usize;
        Self {
            block_idx: [0; 3],
            block_linear: 0,
            warps: (0..w).map(|_| Warp::new()).collect(),
            at_barrier: vec![None; w],
            done: vec![false; w],
            running: 0,
            regs: vec![[0; 32]; w * launch.types.len()],
            vars: vec![[0; 32]; w * launch.kernel.vars.len()],
            local: vec![0; w * 32 * launch.local_size as usize],
            races: BlockRaces::new(),
            wg: (0..w).map(|_| crate::wgmma::WarpState::default()).collect(),
            cp: (0..w).map(|_| crate::cp_async::Queues::default()).collect(),
        }
    }

    /// Starts block `block_linear` (`blockIdx` `block_idx`): every warp at the top of the
    /// body, nothing left of the block before.
    fn begin(&mut self, launch: &Launch<'k>, block_idx: Dim3, block_linear: u64) {
        self.block_idx = block_idx;
        self.block_linear = block_linear;
        for (w, warp) in self.warps.iter_mut().enumerate() {
            let first = w as u32 * 32;
            let n = (launch.threads - first).min(32);
            let valid = if n == 32 { u32::MAX } else { (1u32 << n) - 1 };
            warp.reset(&launch.kernel.body.stmts, valid);
        }
        self.done.fill(false);
        self.running = self.warps.len();
        self.at_barrier.fill(None);
        self.wg.iter_mut().for_each(crate::wgmma::WarpState::reset);
        self.cp.iter_mut().for_each(crate::cp_async::Queues::reset);
        self.vars.fill([0; 32]);
        self.local.fill(crate::memory::POISON);
        self.races
            .begin_block(launch.races.as_ref(), block_linear, launch.threads);
    }

    /// When every warp that has not finished waits at a block barrier: checks that they wait
    /// at the same one and lets them past it (true); false while some warps run or wait on
    /// something else.
    fn release_barrier(
        &mut self,
        launch: &Launch,
        shared: &mut SharedMem,
    ) -> Result<bool, EmuError> {
        let mut waiting = (0..self.warps.len()).filter(|&w| !self.done[w]);
        let Some(first) = waiting.next() else {
            return Ok(false);
        };
        if !waiting
            .clone()
            .chain([first])
            .all(|w| self.at_barrier[w].is_some())
        {
            return Ok(false);
        }
        if let Some(other) = waiting.find(|&w| self.at_barrier[w] != self.at_barrier[first]) {
            let lane = self.warps[other].live().trailing_zeros();
            let first_lane = self.warps[first].live().trailing_zeros();
            return Err(EmuError::BarrierDivergence {
                kernel: launch.kernel.name.clone(),
                block: self.block_idx,
                thread: launch.thread_coords(other as u32 * 32 + lane),
                message: format!(
                    "warp {first} (thread {:?}) waits at one barrier and warp {other} (this \
                     thread) at a different barrier statement; every thread of the block that \
                     has not returned must reach the same barrier",
                    launch.thread_coords(first as u32 * 32 + first_lane)
                ),
            });
        }
        self.at_barrier.fill(None);
        shared.next_epoch();
        self.races.barrier(launch.races.as_ref());
        Ok(true)
    }

    /// How many of its warps have finished, wait at a block barrier, and wait on something
    /// else (an mbarrier, a named barrier, the cluster barrier).
    fn warp_counts(&self) -> [usize; 3] {
        let done = self.done.iter().filter(|&&d| d).count();
        let at_barrier = (0..self.done.len())
            .filter(|&w| !self.done[w] && self.at_barrier[w].is_some())
            .count();
        [done, at_barrier, self.done.len() - done - at_barrier]
    }
}

/// Per-worker state, reused from cluster to cluster (without [`Kernel::cluster`], a cluster
/// is one block): one block state and one shared memory per rank, the cluster's order, and
/// what the worker's warps share.
struct Worker<'k> {
    blocks: Vec<BlockState<'k>>,
    shared: Vec<SharedMem>,
    order: ClusterOrder,
    hint: usize,
    /// Steps left in the chunk this worker took from the budget.
    steps_left: u64,
}

impl<'k> Worker<'k> {
    fn new(launch: &Launch<'k>) -> Self {
        let n = launch.cluster_blocks as usize;
        Self {
            blocks: (0..n).map(|_| BlockState::new(launch)).collect(),
            shared: (0..n).map(|_| SharedMem::new()).collect(),
            order: ClusterOrder::default(),
            hint: 0,
            steps_left: 0,
        }
    }
}

/// A warp that cannot move on: its block's rank, the warp, the `off` of its `Stop::Blocked`
/// and the lane it names.
type Blocked = (usize, usize, u32, u32);

/// Runs cluster `cluster_linear` (see the module docs): its blocks' warps in one scheduler.
fn run_cluster<'k>(
    launch: &Launch<'k>,
    st: &mut Worker<'k>,
    cluster_linear: u64,
) -> Result<(), EmuError> {
    let nwarps = launch.warps as usize;
    let nvalues = launch.types.len();
    let nvars = launch.kernel.vars.len();
    let local_per_warp = 32 * launch.local_size as usize;
    let mut members = [([0; 3], 0); MAX_CLUSTER_BLOCKS as usize];
    for (rank, b) in st.blocks.iter_mut().enumerate() {
        let (block_idx, block_linear) = launch.cluster_member(cluster_linear, rank as u32);
        b.begin(launch, block_idx, block_linear);
        if let Some(m) = members.get_mut(rank) {
            *m = (block_idx, block_linear);
        }
    }
    for shared in &mut st.shared {
        shared.begin_block(launch.shared_size, launch.threads);
    }
    let n = st.blocks.len().min(members.len());
    st.order.begin_cluster(launch, &members[..n]);
    loop {
        // Whether any warp moved on (or a block barrier let warps past) in this round, and
        // the first warp that waits on something.
        let mut progress = false;
        let mut blocked: Option<Blocked> = None;
        let Worker {
            blocks,
            shared,
            order,
            hint,
            steps_left,
        } = &mut *st;
        for (rank, b) in blocks.iter_mut().enumerate() {
            if b.running == 0 {
                continue;
            }
            let (below, rest) = shared.split_at_mut(rank);
            let Some((own, above)) = rest.split_first_mut() else {
                return Err(EmuError::Internal {
                    kernel: launch.kernel.name.clone(),
                    message: format!("cluster rank {rank} has no shared memory"),
                });
            };
            for w in 0..nwarps {
                if b.done[w] || b.at_barrier[w].is_some() {
                    continue;
                }
                let ctx = b.warp_ctx(launch, cluster_linear, rank, w);
                let mut exec = Exec {
                    ctx,
                    regs: &mut b.regs[w * nvalues..(w + 1) * nvalues],
                    vars: &mut b.vars[w * nvars..(w + 1) * nvars],
                    mem: Ports {
                        shared: own,
                        local: &mut b.local[w * local_per_warp..(w + 1) * local_per_warp],
                        hint,
                        races: &mut b.races,
                        cluster: ClusterPorts {
                            below,
                            above,
                            order,
                        },
                    },
                    steps_left: *steps_left,
                    wg: &mut b.wg[w],
                    cp: &mut b.cp[w],
                };
                let stop = exec.run(&mut b.warps[w]);
                *steps_left = exec.steps_left;
                match stop? {
                    Stop::Done => {
                        b.done[w] = true;
                        b.running -= 1;
                        progress = true;
                        if b.running == 0 {
                            // The block's last thread returned.
                            crate::tma::finish_block(ctx, own);
                            crate::wgmma::check_warpgroups(launch, b.block_idx, &b.wg)?;
                            crate::cluster::finish_block(launch, rank as u32, own, order)?;
                        }
                    }
                    Stop::Barrier(id) => {
                        b.at_barrier[w] = Some(id);
                        progress = true;
                    }
                    Stop::Yield => progress = true,
                    Stop::Blocked { off, lane, first } => {
                        progress |= !first;
                        blocked = blocked.or(Some((rank, w, off, lane)));
                    }
                    Stop::Aborted => return Ok(()),
                }
            }
            if b.running > 0 && b.release_barrier(launch, own)? {
                progress = true;
                order.block_barrier(rank as u32);
            }
        }
        if st.blocks.iter().all(|b| b.running == 0) {
            return Ok(());
        }
        if !progress {
            // Some warps wait on mbarriers, named barriers or the cluster barrier, and
            // nothing moved in this round: nothing ever will.
            return Err(deadlock(launch, st, cluster_linear, blocked));
        }
    }
}

/// The error of a cluster in which no warp can move on: some wait on something that no
/// thread left can complete (`blocked`: the first such warp).
#[cold]
fn deadlock(
    launch: &Launch,
    st: &Worker,
    cluster_linear: u64,
    blocked: Option<Blocked>,
) -> EmuError {
    let kernel = launch.kernel.name.clone();
    let Some((rank, w, off, lane)) = blocked else {
        return EmuError::Internal {
            kernel,
            message: "no warp of a cluster moved on, yet none waits".into(),
        };
    };
    let (Some(b), Some(shared)) = (st.blocks.get(rank), st.shared.get(rank)) else {
        return EmuError::Internal {
            kernel,
            message: format!("cluster rank {rank} has no block"),
        };
    };
    let ctx = b.warp_ctx(launch, cluster_linear, rank, w);
    let [done, at_barrier, waiting] = b.warp_counts();
    let nwarps = b.done.len();
    // Where the cluster's other blocks' warps are.
    let others = if st.blocks.len() > 1 {
        let [d, a, x] = st
            .blocks
            .iter()
            .enumerate()
            .filter(|&(r, _)| r != rank)
            .map(|(_, o)| o.warp_counts())
            .fold([0; 3], |s, c| [s[0] + c[0], s[1] + c[1], s[2] + c[2]]);
        format!(
            "; of the warps of the cluster's other {} blocks, {d} have finished, {a} wait at a \
             `sync_threads()` barrier and {x} wait on mbarriers, named barriers or the cluster \
             barrier",
            st.blocks.len() - 1
        )
    } else {
        String::new()
    };
    let thread = launch.thread_coords(w as u32 * 32 + lane);
    if off == crate::cluster::CLUSTER_BLOCKED {
        let summary = format!(
            "of the block's {nwarps} warps, {done} have finished, {at_barrier} wait at a \
             `sync_threads()` barrier and {waiting} wait on mbarriers, named barriers or the \
             cluster barrier{others}"
        );
        return crate::cluster::deadlock(ctx, lane, &st.order, &summary);
    }
    if let Some(id) = off.checked_sub(crate::wgmma::NAMED_BLOCKED_BASE) {
        return EmuError::NamedBarrierDeadlock {
            kernel,
            block: b.block_idx,
            thread,
            message: format!(
                "warp {w} (this thread) waits at `bar.sync`, but {}; of the block's {nwarps} \
                 warps, {done} have finished, {at_barrier} wait at a `sync_threads()` barrier \
                 and {waiting} wait on named barriers or mbarriers{others}, so no thread is \
                 left to arrive",
                shared.named.describe(id),
            ),
        };
    }
    EmuError::MbarrierDeadlock {
        kernel,
        block: b.block_idx,
        thread,
        message: format!(
            "warp {w} (this thread) waits for a phase to complete, but {}; of the block's \
             {nwarps} warps, {done} have finished, {at_barrier} wait at a `sync_threads()` \
             barrier and {waiting} wait on mbarriers{others}, so no thread is left to arrive",
            shared.mbar.describe(off),
        ),
    }
}

/// Whether `stmts` hold a fence or an ordered atomic, at any depth.
fn has_fence(stmts: &[Stmt]) -> bool {
    stmts.iter().any(|s| match s {
        Stmt::Fence { .. } => true,
        Stmt::AtomicStore { order, .. }
        | Stmt::Def {
            op: Op::Atomic { order, .. } | Op::AtomicLoad { order, .. },
            ..
        } => *order != MemOrder::Relaxed,
        Stmt::If {
            then, otherwise, ..
        } => has_fence(&then.stmts) || has_fence(&otherwise.stmts),
        Stmt::Loop { body } => has_fence(&body.stmts),
        _ => false,
    })
}

/// The race tracker of a launch, if `options` want one.
fn race_tracker(
    kernel: &Kernel,
    options: &LaunchOptions,
    nblocks: u64,
    global: &GlobalView,
    params: &[[u64; 2]],
) -> Option<GlobalRaces> {
    if !options.global_race_check {
        return None;
    }
    let disjoint = kernel
        .params
        .iter()
        .zip(params)
        .filter_map(|(p, &[base, len])| match p.kind {
            ParamKind::Slice {
                elem,
                access: SliceAccess::Disjoint,
            } => Some((base, base + len * u64::from(elem.size_bytes()))),
            _ => None,
        })
        .collect();
    Some(GlobalRaces::new(
        nblocks,
        global.len(),
        disjoint,
        has_fence(&kernel.body.stmts),
    ))
}

/// `threadIdx` of every lane of every warp of a block, one table per dimension.
fn thread_index_tables(block: Dim3, warps: u32) -> [Vec<u32>; 3] {
    let [bx, by, _] = block;
    let n = warps * 32;
    [
        (0..n).map(|t| t % bx).collect(),
        (0..n).map(|t| (t / bx) % by).collect(),
        (0..n).map(|t| t / (bx * by)).collect(),
    ]
}

fn invalid_launch(kernel: &Kernel, message: String) -> EmuError {
    EmuError::InvalidLaunch {
        kernel: kernel.name.clone(),
        message,
    }
}

fn check_dims(kernel: &Kernel, dims: &LaunchDims) -> Result<(u32, u32), EmuError> {
    let LaunchDims { grid, block, .. } = *dims;
    if grid.contains(&0) || block.contains(&0) {
        return Err(invalid_launch(
            kernel,
            format!("grid {grid:?} and block {block:?} must have every dimension >= 1"),
        ));
    }
    if block[0] > 1024 || block[1] > 1024 || block[2] > 64 {
        return Err(invalid_launch(
            kernel,
            format!("block {block:?} exceeds the per-dimension limits [1024, 1024, 64]"),
        ));
    }
    if let Some((x, y, z)) = kernel.block
        && block != [x, y, z]
    {
        return Err(invalid_launch(
            kernel,
            format!("block {block:?} does not match the block [{x}, {y}, {z}] the kernel declares"),
        ));
    }
    let threads = block.iter().map(|&d| u64::from(d)).product::<u64>();
    if threads > u64::from(MAX_THREADS_PER_BLOCK) {
        return Err(invalid_launch(
            kernel,
            format!(
                "block {block:?} has {threads} threads; at most {MAX_THREADS_PER_BLOCK} are allowed"
            ),
        ));
    }
    if grid[0] > i32::MAX as u32 || grid[1] > 65535 || grid[2] > 65535 {
        return Err(invalid_launch(
            kernel,
            format!("grid {grid:?} exceeds the limits [2^31 - 1, 65535, 65535]"),
        ));
    }
    if let Some(b) = kernel.launch_bounds
        && threads > u64::from(b.max_threads)
    {
        return Err(invalid_launch(
            kernel,
            format!(
                "block of {threads} threads exceeds the kernel's launch bounds ({} threads)",
                b.max_threads
            ),
        ));
    }
    let threads = threads as u32;
    Ok((threads, threads.div_ceil(32)))
}

/// The cluster shape of `kernel` (`[1, 1, 1]` without one), after checking that it cuts
/// `grid` into whole clusters.
fn check_cluster(kernel: &Kernel, grid: Dim3) -> Result<Dim3, EmuError> {
    let Some((x, y, z)) = kernel.cluster else {
        return Ok([1, 1, 1]);
    };
    let cluster = [x, y, z];
    if let Some(d) = (0..3).find(|&d| !grid[d].is_multiple_of(cluster[d])) {
        let axis = ["x", "y", "z"][d];
        let fitted = [0, 1, 2].map(|d| grid[d].next_multiple_of(cluster[d]));
        return Err(invalid_launch(
            kernel,
            format!(
                "grid {grid:?} is not a whole number of the kernel's clusters of [{x}, {y}, {z}] \
                 blocks ({axis}: {} is not a multiple of {}): a cluster's blocks run together, \
                 so each grid dimension must be a multiple of the cluster's; launch a grid of \
                 {fitted:?} (with the extra blocks doing nothing) or declare a cluster shape \
                 that divides the grid",
                grid[d], cluster[d]
            ),
        ));
    }
    Ok(cluster)
}

/// Layout of `arrays` after checking that the sizes cannot overflow.
fn layout(
    kernel: &Kernel,
    arrays: &[ArrayDecl],
    what: &str,
    limit: u32,
) -> Result<(Vec<u32>, u32), EmuError> {
    let total = array_layout_size(arrays);
    if total > u64::from(limit) {
        return Err(invalid_launch(
            kernel,
            format!("its static {what} arrays need {total} bytes; at most {limit} are available"),
        ));
    }
    Ok(array_layout(arrays))
}

type CheckedArgs = (Vec<[u64; 2]>, Vec<Option<cuprum_ir::TensorMapDesc>>);

fn check_args(
    kernel: &Kernel,
    args: &[ArgValue],
    global: &GlobalView,
) -> Result<CheckedArgs, EmuError> {
    if args.len() != kernel.params.len() {
        return Err(EmuError::ArgumentCount {
            kernel: kernel.name.clone(),
            expected: kernel.params.len(),
            got: args.len(),
        });
    }
    let mut out = Vec::with_capacity(args.len());
    let mut maps = vec![None; args.len()];
    for (index, (p, a)) in kernel.params.iter().zip(args).enumerate() {
        let err = |message: String| EmuError::ArgumentMismatch {
            kernel: kernel.name.clone(),
            index,
            param: p.name.clone(),
            message,
        };
        match (p.kind, *a) {
            (ParamKind::Scalar(ty), ArgValue::Scalar(bits)) => {
                if !(cuprum_ir::Constant { ty, bits }).is_canonical() {
                    return Err(err(format!(
                        "the {ty} parameter got bits {bits:#x}, which do not fit in {} bits; \
                         pass the value zero-extended (e.g. `x as u32 as u64` for an i32)",
                        ty.bits()
                    )));
                }
                out.push([bits, 0]);
            }
            (ParamKind::Slice { elem, .. }, ArgValue::Slice { base, len }) => {
                let size = u64::from(elem.size_bytes());
                let Some(bytes) = len.checked_mul(size) else {
                    return Err(err(format!(
                        "slice length {len} of {elem} overflows the address space"
                    )));
                };
                if len > 0 {
                    if base % size != 0 {
                        return Err(err(format!(
                            "slice of {elem} at {base:#x} is not aligned to {size} bytes"
                        )));
                    }
                    if !global.contains(base, bytes) {
                        return Err(err(format!(
                            "slice of {len} {elem} ({bytes} bytes) at {base:#x} is not inside a \
                             live allocation (freed buffer, wrong length, or a host pointer)"
                        )));
                    }
                }
                out.push([base, len]);
            }
            (kind @ ParamKind::TensorMap { .. }, ArgValue::TensorMap(words)) => {
                maps[index] = Some(crate::tma::check_arg(kind, &words, global).map_err(err)?);
                out.push([0, 0]);
            }
            (kind, other) => {
                let what = |k: ParamKind| match k {
                    ParamKind::Scalar(ty) => format!("a {ty} scalar"),
                    ParamKind::Slice { elem, .. } => format!("a slice of {elem}"),
                    ParamKind::TensorMap { elem, rank } => {
                        format!("a {rank}-d tensor map of {elem}")
                    }
                };
                let given = match other {
                    ArgValue::Scalar(_) => "a scalar",
                    ArgValue::Slice { .. } => "a slice",
                    ArgValue::TensorMap(_) => "a tensor map",
                };
                return Err(err(format!(
                    "the parameter is {} but {given} was passed",
                    what(kind)
                )));
            }
        }
    }
    Ok((out, maps))
}

/// Refuses a launch whose arguments fail one of the kernel's launch requirements
/// ([`cuprum_ir::requires`]): the optimizer may have relied on them.
fn check_requirements(kernel: &Kernel, args: &[ArgValue]) -> Result<(), EmuError> {
    use cuprum_ir::requires::ArgValue as Read;
    let read: Vec<Read> = args
        .iter()
        .map(|a| match *a {
            ArgValue::Scalar(bits) => Read::Scalar(bits),
            ArgValue::Slice { len, .. } => Read::Slice(len),
            ArgValue::TensorMap(_) => Read::Other,
        })
        .collect();
    match cuprum_ir::requires::first_failing(kernel, &read) {
        Some(r) => Err(invalid_launch(
            kernel,
            format!("the launch contract's size requirement `{}` fails", r.text),
        )),
        None => Ok(()),
    }
}

/// Runs `kernel` on the emulator over the grid `dims` with `args`, one per parameter, with
/// the options of [`LaunchOptions::from_env`] (the built-in defaults unless
/// [`STEP_LIMIT_ENV`](crate::STEP_LIMIT_ENV) or [`RACE_CHECK_ENV`](crate::RACE_CHECK_ENV) say
/// otherwise).
///
/// Validates the kernel and the launch first (nothing runs if either is wrong), then runs every
/// block; returns the first error found (see the module docs for which one).
pub fn launch(
    memory: &Memory,
    kernel: &Kernel,
    dims: LaunchDims,
    args: &[ArgValue],
) -> Result<(), EmuError> {
    let options = LaunchOptions::from_env().map_err(|message| invalid_launch(kernel, message))?;
    launch_with(memory, kernel, dims, args, &options)
}

/// [`launch`] with explicit `options`; the environment variables are not read.
pub fn launch_with(
    memory: &Memory,
    kernel: &Kernel,
    dims: LaunchDims,
    args: &[ArgValue],
    options: &LaunchOptions,
) -> Result<(), EmuError> {
    validate_kernel(kernel).map_err(|e| EmuError::InvalidKernel {
        kernel: kernel.name.clone(),
        message: e.message,
    })?;
    let (threads, warps) = check_dims(kernel, &dims)?;
    let cluster = check_cluster(kernel, dims.grid)?;
    let static_size = kernel.shared_layout_size();
    if static_size > u64::from(MAX_SHARED_BYTES) {
        return Err(invalid_launch(
            kernel,
            format!(
                "its static shared arrays need {static_size} bytes; at most {MAX_SHARED_BYTES} \
                 are available"
            ),
        ));
    }
    let (shared_offsets, static_shared) = kernel.shared_layout();
    // Dynamic shared memory starts after the static arrays, at the kernel's alignment.
    let dyn_shared_offset = static_shared.next_multiple_of(kernel.dyn_shared_alignment());
    let shared_size = u64::from(dyn_shared_offset) + u64::from(dims.dynamic_shared_bytes);
    if shared_size > u64::from(MAX_SHARED_BYTES) {
        return Err(invalid_launch(
            kernel,
            format!(
                "it needs {static_shared} bytes of static and {} of dynamic shared memory; at \
                 most {MAX_SHARED_BYTES} are available per block",
                dims.dynamic_shared_bytes
            ),
        ));
    }
    let (local_offsets, local_size) = layout(kernel, &kernel.locals, "local", MAX_LOCAL_BYTES)?;
    let global = memory.snapshot();
    let (params, tensor_maps) = check_args(kernel, args, &global)?;
    check_requirements(kernel, args)?;
    let step_limit = options.step_limit.unwrap_or(u64::MAX);
    let nblocks: u64 = dims.grid.iter().map(|&d| u64::from(d)).product();
    let races = race_tracker(kernel, options, nblocks, &global, &params);
    let launch = Launch {
        kernel,
        types: kernel.values.iter().map(|(_, d)| d.ty).collect(),
        params,
        tensor_maps,
        shared_offsets,
        dyn_shared_offset,
        shared_size: shared_size as u32,
        local_offsets,
        local_size,
        grid: dims.grid,
        block: dims.block,
        cluster,
        cluster_blocks: cluster.iter().product(),
        cluster_sync: crate::cluster::synchronises(kernel),
        threads,
        warps,
        thread_index: thread_index_tables(dims.block, warps),
        global,
        prints: Sink::current(),
        races,
        wgmma_vars: crate::wgmma::accumulator_vars(kernel),
        steps_taken: AtomicU64::new(0),
        step_limit,
        step_chunk: (step_limit / 64).clamp(1, STEP_CHUNK),
        first_failed: AtomicU64::new(u64::MAX),
        error: Mutex::new(None),
    };

    let workers = rayon::current_num_threads().max(1) as u64;
    // Workers take whole clusters (single blocks without clusters).
    let nclusters = nblocks / u64::from(launch.cluster_blocks);
    let nchunks = nclusters.min(workers * 8);
    let per_chunk = nclusters.div_ceil(nchunks);
    // Worker states are pooled so a chunk reuses the registers and trackers of an earlier one.
    let pool: Mutex<Vec<Worker>> = Mutex::new(Vec::new());
    let run_chunk = |c: u64| {
        let reused = pool.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let mut state = reused.unwrap_or_else(|| Worker::new(&launch));
        let start = c * per_chunk;
        for cluster in start..(start + per_chunk).min(nclusters) {
            if launch.stopped(cluster) {
                break;
            }
            if let Err(e) = run_cluster(&launch, &mut state, cluster) {
                launch.fail(cluster, e);
                break;
            }
        }
        pool.lock().unwrap_or_else(|e| e.into_inner()).push(state);
    };
    if nchunks == 1 {
        run_chunk(0);
    } else {
        (0..nchunks).into_par_iter().for_each(run_chunk);
    }
    if let Some(races) = launch.races {
        races.give_back(&launch.global);
    }
    let error = launch.error.into_inner().unwrap_or_else(|e| e.into_inner());
    match error {
        Some((_, e)) => Err(e),
        None => Ok(()),
    }
}
