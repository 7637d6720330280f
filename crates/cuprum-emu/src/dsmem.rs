//! Distributed shared memory (sm_90): a thread's loads and stores of the shared memory of
//! another block of its cluster ([`Stmt::ClusterLoad`](cuprum_ir::Stmt::ClusterLoad),
//! [`Stmt::ClusterStore`](cuprum_ir::Stmt::ClusterStore)), and the race tracking that
//! follows them across blocks.
//!
//! A block's race tracker (`crate::shared`) names its own threads, and orders them by its
//! barriers (epochs) and its clocks. Neither says anything about a thread of another block:
//! a block barrier of the target does not order a remote access, and the accessing thread
//! has no place in the target's clocks. So the two sides are kept apart:
//!
//! * A remote access is checked against the target's own records of the bytes in every
//!   epoch of the block (not only the current one) with what the accessing thread knows of
//!   the target's threads: the stamps of the target's clocks it learnt through cluster
//!   barrier phases and remote arrivals, and an epoch of the target before which everything
//!   is known (`ClusterOrder::target_view`). A store then replaces those records.
//! * It is recorded here, in the target's [`RemoteLog`] (per byte: the last remote writer and
//!   up to two remote readers), as a [`RemoteAccess`]: its thread, its cluster barrier
//!   arrivals before it, its stamp in its own block's clocks and its block's epoch, which is
//!   what [`ClusterOrder::knows_remote`](crate::cluster::ClusterOrder::knows_remote) decides
//!   by: a cluster barrier phase after the access, a remote arrival's release after it that
//!   the asking thread (or its block, before a block barrier) acquired, or, between threads
//!   of one block, that block's own order.
//! * A later access of those bytes, by the target's threads (every plain load, store and
//!   atomic, `ldmatrix` and landing `cp.async` copy, `Ports`) or by another remote thread,
//!   must know the remote writer (and a write every remote reader). A local store replaces
//!   the remote records.
//!
//! Both orders only ever over-approximate what the GPU's memory model orders, so a race can
//! hide, never appear where there is none. An access of a block whose threads have all
//! returned, or a rank beyond the cluster, is an [`EmuError::ClusterMisuse`]; so is a block
//! that returns while a remote access of it is not ordered before its end
//! (`crate::cluster::finish_block`). A thread's access of its own rank is an ordinary shared
//! access. A kernel without these statements never touches this module: a block's log stays
//! empty, and its accesses pay one test of that.

use std::collections::{BTreeMap, HashMap};

use cuprum_ir::{AddressSpace, ScalarType, Value};

use crate::access::{Ctx, lanes_of};
use crate::cluster::{ClusterOrder, ClusterPorts};
use crate::error::{AccessKind, ClusterSharedRace, Dim3, EmuError, RaceAccess, RaceKind};
use crate::lanes::Lanes;
use crate::shared::{SharedFault, SharedMem};
use crate::warp::Exec;

/// One access of a byte by a thread of another block of the cluster, with what orders it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RemoteAccess {
    /// The accessing thread's cluster rank and thread index.
    pub(crate) rank: u32,
    pub(crate) tid: u32,
    /// Its cluster barrier arrivals before the access: phase `arrivals + 1` orders it.
    pub(crate) arrivals: u32,
    /// Its stamp in its own block's clocks then (`crate::mbarrier::Clocks`).
    pub(crate) stamp: u32,
    /// Its own block's shared-memory epoch then.
    pub(crate) epoch: u32,
}

/// The remote accesses of one byte that later accesses must be ordered after.
#[derive(Clone, Copy, Default)]
struct ByteLog {
    writer: Option<RemoteAccess>,
    /// Up to two readers of distinct threads since the write.
    readers: [Option<RemoteAccess>; 2],
}

/// A thread's latest access of a block, for the check at the block's end.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Latest {
    pub(crate) access: RemoteAccess,
    /// The byte offset it touched.
    pub(crate) off: u32,
    /// Whether it wrote.
    pub(crate) write: bool,
}

/// A block's shared memory as other blocks of its cluster accessed it (see the module docs).
#[derive(Default)]
pub(crate) struct RemoteLog {
    bytes: HashMap<u32, ByteLog>,
    latest: BTreeMap<(u32, u32), Latest>,
}

impl RemoteLog {
    /// Forgets everything (a new block).
    pub(crate) fn clear(&mut self) {
        if !self.is_empty() {
            self.bytes.clear();
            self.latest.clear();
        }
    }

    /// Whether no other block accessed this block's memory.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.latest.is_empty()
    }

    /// Each remote thread's latest access, by `(rank, thread)`.
    pub(crate) fn latest(&self) -> impl Iterator<Item = ((u32, u32), &Latest)> {
        self.latest.iter().map(|(&k, v)| (k, v))
    }

    /// The first remote access of the `size` bytes at `off` that `known` does not order
    /// before an access now: the writer, and with `writes` the readers too.
    fn unordered(
        &self,
        off: u32,
        size: u32,
        writes: bool,
        known: impl Fn(&RemoteAccess) -> bool,
    ) -> Option<(u32, RemoteAccess, bool)> {
        (off..off.saturating_add(size)).find_map(|b| {
            let log = self.bytes.get(&b)?;
            if let Some(w) = log.writer.filter(|w| !known(w)) {
                return Some((b, w, true));
            }
            if writes {
                return log
                    .readers
                    .iter()
                    .flatten()
                    .find(|r| !known(r))
                    .map(|r| (b, *r, false));
            }
            None
        })
    }

    /// Records `a`'s access of the `size` bytes at `off` (a write replaces what came before;
    /// `before(x)`: whether access `x` happens before `a`, for which reader to keep).
    fn record(
        &mut self,
        off: u32,
        size: u32,
        a: RemoteAccess,
        write: bool,
        before: impl Fn(&RemoteAccess) -> bool,
    ) {
        for b in off..off.saturating_add(size) {
            let log = self.bytes.entry(b).or_default();
            if write {
                *log = ByteLog {
                    writer: Some(a),
                    readers: [None; 2],
                };
                continue;
            }
            let same =
                |r: &Option<RemoteAccess>| r.is_some_and(|r| (r.rank, r.tid) == (a.rank, a.tid));
            if let Some(slot) = log.readers.iter_mut().find(|r| same(r) || r.is_none()) {
                *slot = Some(a);
            } else if let Some(slot) = log
                .readers
                .iter_mut()
                .find(|r| r.is_some_and(|r| before(&r)))
            {
                // A later access that conflicts with the replaced reader conflicts with
                // this one too.
                *slot = Some(a);
            }
        }
        self.latest.insert(
            (a.rank, a.tid),
            Latest {
                access: a,
                off,
                write,
            },
        );
    }

    /// A store of this block's own threads replaced the `size` bytes at `off`.
    fn forget(&mut self, off: u32, size: u32) {
        for b in off..off.saturating_add(size) {
            self.bytes.remove(&b);
        }
    }
}

/// The check of a local access (thread `ctx.tid(lane)` of the block owning `shared`) of the
/// `size` bytes at `off` against other blocks' accesses of them: their writes must be
/// ordered before it, and before a write (`writes`) their reads too. A write then replaces
/// the remote records. Callers test `shared.remote.is_empty()` first.
pub(crate) fn check_local(
    ctx: Ctx,
    shared: &mut SharedMem,
    order: &ClusterOrder,
    lane: u32,
    (off, size): (u32, u32),
    access: AccessKind,
) -> Result<(), EmuError> {
    let me = (ctx.rank, ctx.tid(lane));
    let writes = access != AccessKind::Load;
    if let Some((byte, first, wrote)) = shared
        .remote
        .unordered(off, size, writes, |a| order.knows_remote(me, a, None))
    {
        return Err(race(
            ctx,
            ctx.block_idx,
            byte,
            (order.block_idx(first.rank), first.tid, wrote),
            (ctx.block_idx, me.1, access),
        ));
    }
    if writes {
        shared.remote.forget(off, size);
    }
    Ok(())
}

/// The error of a race on byte `offset` of block `owner`'s shared memory between `first`
/// (`blockIdx`, thread, whether it wrote) and `second` (`blockIdx`, thread, its access).
#[cold]
fn race(
    ctx: Ctx,
    owner: Dim3,
    offset: u32,
    first: (Dim3, u32, bool),
    second: (Dim3, u32, AccessKind),
) -> EmuError {
    let launch = ctx.launch;
    let kind = if first.2 && second.2 != AccessKind::Load {
        RaceKind::WriteWrite
    } else {
        RaceKind::ReadWrite
    };
    EmuError::ClusterSharedRace(Box::new(ClusterSharedRace {
        kernel: ctx.kernel_name(),
        owner,
        address: u64::from(offset),
        first: RaceAccess {
            block: first.0,
            thread: launch.thread_coords(first.1),
            access: if first.2 {
                AccessKind::Store
            } else {
                AccessKind::Load
            },
        },
        second: RaceAccess {
            block: second.0,
            thread: launch.thread_coords(second.1),
            access: second.2,
        },
        kind,
    }))
}

/// The shared memory of rank `rank` among a warp's cluster ports, for a warp of block `own`
/// (not `own` itself).
fn peer<'p>(
    below: &'p mut [SharedMem],
    above: &'p mut [SharedMem],
    own: u32,
    rank: u32,
) -> Option<&'p mut SharedMem> {
    if rank < own {
        below.get_mut(rank as usize)
    } else {
        above.get_mut(rank.checked_sub(own + 1)? as usize)
    }
}

impl Exec<'_, '_> {
    /// `Stmt::ClusterLoad` for the lanes in `mask`.
    #[inline(never)]
    pub(crate) fn cluster_load(
        &mut self,
        result: Value,
        ty: ScalarType,
        (addr, rank): (Value, Value),
        mask: u32,
    ) -> Result<(), EmuError> {
        let (addrs, ranks) = (self.regs[addr.index()], self.regs[rank.index()]);
        let mut out = self.regs[result.index()];
        for l in lanes_of(mask) {
            out[l as usize] = self.cluster_access(l, ty.size_bytes(), (&addrs, &ranks), None)?;
        }
        if ty == ScalarType::Bool {
            // Memory may hold any byte; a `Bool` register holds 0 or 1.
            for o in &mut out {
                *o = u64::from(*o != 0);
            }
        }
        self.regs[result.index()] = out;
        Ok(())
    }

    /// `Stmt::ClusterStore` for the lanes in `mask`.
    #[inline(never)]
    pub(crate) fn cluster_store(
        &mut self,
        (addr, rank): (Value, Value),
        value: Value,
        mask: u32,
    ) -> Result<(), EmuError> {
        let size = self.ctx.launch.types[value.index()].size_bytes();
        let (addrs, ranks) = (self.regs[addr.index()], self.regs[rank.index()]);
        let values = self.regs[value.index()];
        for l in lanes_of(mask) {
            self.cluster_access(l, size, (&addrs, &ranks), Some(&values))?;
        }
        Ok(())
    }

    /// Lane `l`'s access of `size` bytes at `addrs[l]` of cluster block `ranks[l]`: a store
    /// of `values[l]`, or a load (`None`), whose value it returns.
    fn cluster_access(
        &mut self,
        l: u32,
        size: u32,
        (addrs, ranks): (&Lanes, &Lanes),
        values: Option<&Lanes>,
    ) -> Result<u64, EmuError> {
        let ctx = self.ctx;
        let (a, r) = (addrs[l as usize], ranks[l as usize]);
        let blocks = ctx.launch.cluster_blocks;
        let what = if values.is_some() { "store" } else { "load" };
        let Some(rank) = u32::try_from(r).ok().filter(|&r| r < blocks) else {
            return Err(crate::cluster::misuse(
                ctx,
                l,
                format!(
                    "a distributed shared-memory {what} names cluster rank {r}, but the cluster \
                     has {blocks} blocks (ranks 0..{blocks}, `cluster::block_rank()`'s numbering)"
                ),
            ));
        };
        let bit = 1u32 << l;
        if rank == ctx.rank {
            // This block's own shared memory: an ordinary access.
            let one = [a; 32];
            return match values {
                Some(v) => self
                    .mem
                    .store(ctx, AddressSpace::Shared, size, &one, v, bit)
                    .map(|()| v[l as usize]),
                None => {
                    let ty = match size {
                        1 => ScalarType::U8,
                        2 => ScalarType::U16,
                        4 => ScalarType::U32,
                        _ => ScalarType::U64,
                    };
                    let mut out = [0u64; 32];
                    self.mem
                        .load(ctx, AddressSpace::Shared, ty, &one, bit, &mut out)?;
                    Ok(out[l as usize])
                }
            };
        }
        let access = if values.is_some() {
            AccessKind::Store
        } else {
            AccessKind::Load
        };
        let tid = ctx.tid(l);
        let ClusterPorts {
            below,
            above,
            order,
        } = &mut self.mem.cluster;
        let target = order.block_idx(rank);
        if order.finished(rank) {
            return Err(crate::cluster::misuse(
                ctx,
                l,
                format!(
                    "this thread's distributed shared-memory {what} reaches cluster rank \
                     {rank}, block {target:?}, whose threads have all returned (its shared \
                     memory is gone): end the kernel with a cluster barrier (arrive and wait) \
                     so that no block returns while others still access its memory"
                ),
            ));
        }
        let own = &*self.mem.shared;
        let me = RemoteAccess {
            rank: ctx.rank,
            tid,
            arrivals: order.arrivals(ctx.rank, tid),
            stamp: own.mbar.clocks.stamp(tid),
            epoch: own.epoch(),
        };
        let own_view = Some((own.epoch(), &own.mbar.clocks));
        let Some(shared) = peer(below, above, ctx.rank, rank) else {
            return Err(ctx.internal(format!("cluster rank {rank} has no shared memory")));
        };
        let Ok(off) = u32::try_from(a) else {
            return Err(ctx.shared_fault(SharedFault::OutOfBounds, l, a, size, access));
        };
        // Other blocks' accesses (this one's included) of the bytes first.
        if let Some((byte, first, wrote)) =
            shared.remote.unordered(off, size, values.is_some(), |x| {
                order.knows_remote((ctx.rank, tid), x, own_view)
            })
        {
            return Err(race(
                ctx,
                target,
                byte,
                (order.block_idx(first.rank), first.tid, wrote),
                (ctx.block_idx, tid, access),
            ));
        }
        // Then the target's own threads'.
        let (stamps, before) = order.target_view(ctx.rank, tid, rank);
        let known = |w: u32, stamp: u32, epoch: u32| {
            epoch < before || stamps.get(w as usize).is_some_and(|&k| k >= stamp)
        };
        let agent = shared.agent;
        let value = match shared.remote_access(off, size, values.map(|v| v[l as usize]), known) {
            Ok(v) => v,
            Err(SharedFault::Race { first, offset, .. }) if first == agent => {
                return Err(proxy_race(
                    ctx,
                    l,
                    offset,
                    format!(
                        "a TMA copy wrote or read these bytes of block {target:?}'s shared \
                         memory, and nothing orders this thread's {what} of them after it (a \
                         cluster barrier phase after a thread of that block observed the \
                         copy's mbarrier phase)"
                    ),
                ));
            }
            Err(SharedFault::Race {
                first,
                offset,
                kind,
                ..
            }) => {
                let wrote = kind == RaceKind::WriteWrite || access == AccessKind::Load;
                return Err(race(
                    ctx,
                    target,
                    offset,
                    (target, first, wrote),
                    (ctx.block_idx, tid, access),
                ));
            }
            Err(SharedFault::Uninitialized { offset }) => {
                return Err(EmuError::UninitializedClusterSharedRead {
                    kernel: ctx.kernel_name(),
                    block: ctx.block_idx,
                    thread: ctx.thread(l),
                    owner: target,
                    address: u64::from(offset),
                    size,
                });
            }
            Err(SharedFault::Pending { offset, pending }) => {
                return Err(proxy_race(
                    ctx,
                    l,
                    offset,
                    format!(
                        "this thread's distributed shared-memory {what} touches bytes of block \
                         {target:?} that a TMA {} thread {:?} issued still owns",
                        if pending.load { "load" } else { "store" },
                        ctx.launch.thread_coords(pending.issuer)
                    ),
                ));
            }
            Err(f) => return Err(ctx.shared_fault(f, l, a, size, access)),
        };
        shared.remote.record(off, size, me, values.is_some(), |x| {
            order.knows_remote((ctx.rank, tid), x, own_view)
        });
        Ok(value)
    }
}

/// An `AsyncProxyRace` of lane `l`'s distributed shared-memory access at `offset`.
#[cold]
fn proxy_race(ctx: Ctx, l: u32, offset: u32, message: String) -> EmuError {
    EmuError::AsyncProxyRace {
        kernel: ctx.kernel_name(),
        block: ctx.block_idx,
        thread: ctx.thread(l),
        address: u64::from(offset),
        message,
    }
}
