//! Memory accesses of one warp: loads, stores and atomics in the global, shared and local
//! spaces, the row reads of `ldmatrix` and the copies of `cp.async`, lane by lane in lane
//! order, each checked (bounds, alignment, races) and turned into
//! an [`EmuError`] with kernel, block, thread and address when it fails.
//!
//! Kept apart from the interpreter so that the interpreter can lend these functions the
//! memory (`Ports`) mutably while its registers stay borrowed as operands, with no copies.

use cuprum_ir::{AddressSpace, AtomicOp, MemOrder, ScalarType, Scope};

use crate::atomic;
use crate::cluster::ClusterPorts;
use crate::error::{AccessKind, Dim3, EmuError};
use crate::exec::Launch;
use crate::global::{ATOMIC, BlockRaces, Found, READ, Tracker, WRITE, WarpAccesses};
use crate::lanes::Lanes;
use crate::shared::{SharedFault, SharedMem};
use crate::tensor::Matrices;

/// Who is running: enough to name a thread in an error. Cheap to copy.
#[derive(Clone, Copy)]
pub(crate) struct Ctx<'a, 'k> {
    pub(crate) launch: &'a Launch<'k>,
    pub(crate) block_idx: Dim3,
    pub(crate) block_linear: u64,
    /// The block's cluster, numbered as the grid's clusters are (`%clusterid`, x fastest):
    /// the unit the launch schedules and stops (the block's own index without a cluster).
    pub(crate) cluster_linear: u64,
    /// The block's rank in its cluster (`%cluster_ctarank`).
    pub(crate) rank: u32,
    pub(crate) warp_index: u32,
}

/// The lanes set in `m`, lowest first.
#[inline(always)]
pub(crate) fn lanes_of(mut m: u32) -> impl Iterator<Item = u32> {
    std::iter::from_fn(move || {
        if m == 0 {
            None
        } else {
            let l = m.trailing_zeros();
            m &= m - 1;
            Some(l)
        }
    })
}

impl Ctx<'_, '_> {
    pub(crate) fn kernel_name(&self) -> String {
        self.launch.kernel.name.clone()
    }

    /// The block-linear thread index of `lane`.
    #[inline(always)]
    pub(crate) fn tid(&self, lane: u32) -> u32 {
        self.warp_index * 32 + lane
    }

    pub(crate) fn thread(&self, lane: u32) -> Dim3 {
        self.launch.thread_coords(self.tid(lane))
    }

    pub(crate) fn internal(&self, message: impl Into<String>) -> EmuError {
        EmuError::Internal {
            kernel: self.kernel_name(),
            message: message.into(),
        }
    }

    #[cold]
    fn oob(
        &self,
        lane: u32,
        address: u64,
        size: u32,
        space: AddressSpace,
        access: AccessKind,
    ) -> EmuError {
        EmuError::OutOfBounds {
            kernel: self.kernel_name(),
            block: self.block_idx,
            thread: self.thread(lane),
            address,
            size,
            space,
            access,
        }
    }

    #[cold]
    fn misaligned(&self, lane: u32, address: u64, size: u32, space: AddressSpace) -> EmuError {
        EmuError::Misaligned {
            kernel: self.kernel_name(),
            block: self.block_idx,
            thread: self.thread(lane),
            address,
            size,
            space,
        }
    }

    #[cold]
    pub(crate) fn shared_fault(
        &self,
        f: SharedFault,
        lane: u32,
        addr: u64,
        size: u32,
        access: AccessKind,
    ) -> EmuError {
        let (kernel, block) = (self.kernel_name(), self.block_idx);
        match f {
            SharedFault::OutOfBounds => self.oob(lane, addr, size, AddressSpace::Shared, access),
            SharedFault::Misaligned => self.misaligned(lane, addr, size, AddressSpace::Shared),
            SharedFault::Uninitialized { offset } => EmuError::UninitializedSharedRead {
                kernel,
                block,
                thread: self.thread(lane),
                address: u64::from(offset),
                size,
            },
            SharedFault::Race {
                first,
                second,
                offset,
                kind,
            } => EmuError::SharedRace {
                kernel,
                block,
                threads: (
                    self.launch.thread_coords(first),
                    self.launch.thread_coords(second),
                ),
                address: u64::from(offset),
                kind,
            },
            SharedFault::Pending { offset, pending } => {
                let issuer = self.launch.thread_coords(pending.issuer);
                let origin = pending
                    .origin
                    .map_or(String::new(), |b| format!(" of block {b:?} (a multicast)"));
                let message = if pending.load {
                    format!(
                        "this thread touches the destination of a TMA load thread {issuer:?}\
                         {origin} issued, before observing the completion of the mbarrier phase \
                         its bytes complete on (wait on that barrier's phase first, with the \
                         right parity)"
                    )
                } else {
                    format!(
                        "this thread writes the source of a TMA store thread {issuer:?} issued \
                         before a `cp_async_bulk_wait_group_read` covering the store"
                    )
                };
                EmuError::AsyncProxyRace {
                    kernel,
                    block,
                    thread: self.thread(lane),
                    address: u64::from(offset),
                    message,
                }
            }
            SharedFault::Agent {
                offset,
                thread,
                agent_first,
            } => EmuError::AsyncProxyRace {
                kernel,
                block,
                thread: self.launch.thread_coords(thread),
                address: u64::from(offset),
                message: if agent_first {
                    "a TMA load wrote these bytes, and nothing orders this thread's access \
                     after them (observe the load's mbarrier phase, or synchronise with a \
                     thread that did)"
                        .into()
                } else {
                    "a TMA copy wrote or read these bytes, which this thread accessed with \
                     nothing ordering its access before the copy was issued (an mbarrier phase \
                     or a barrier between them)"
                        .into()
                },
            },
            SharedFault::NoProxyFence { offset, writer } => EmuError::MissingProxyFence {
                kernel,
                block,
                thread: self.thread(lane),
                writer: self.launch.thread_coords(writer),
                address: u64::from(offset),
            },
        }
    }
}

/// The error of `lane`'s shared access fault `f` (see `Ctx::shared_fault`).
#[cold]
pub(crate) fn shared_error(
    ctx: Ctx,
    f: SharedFault,
    lane: u32,
    addr: u64,
    size: u32,
    access: AccessKind,
) -> EmuError {
    ctx.shared_fault(f, lane, addr, size, access)
}

/// The memory one warp may touch besides global memory: the block's shared memory, this
/// warp's local memory (32 lanes of `launch.local_size` bytes), the global lookup hint, the
/// block's half of the global race tracker, and its cluster's other blocks with the order
/// between them.
pub(crate) struct Ports<'a> {
    pub(crate) shared: &'a mut SharedMem,
    pub(crate) local: &'a mut [u8],
    pub(crate) hint: &'a mut usize,
    pub(crate) races: &'a mut BlockRaces,
    pub(crate) cluster: ClusterPorts<'a>,
}

impl Ports<'_> {
    /// The error for `lane`'s global access that the race tracker refused.
    #[cold]
    fn race_error(ctx: Ctx, lane: u32, found: &Found, access: AccessKind) -> EmuError {
        match ctx.launch.races.as_ref() {
            Some(races) => races.error(ctx.launch, found, ctx.block_linear, ctx.tid(lane), access),
            None => ctx.internal("a race was found with race detection off"),
        }
    }

    /// Whether another block of the cluster reached this block's shared memory (distributed
    /// shared memory, `crate::dsmem`), so that its accesses need [`Ports::check_remote`]: one
    /// test per statement in every other block. Local accesses never make it true.
    #[inline]
    fn remote(&self) -> bool {
        !self.shared.remote.is_empty()
    }

    /// Checks `lane`'s access of the `size` shared bytes at `off` against other blocks'
    /// accesses of them (`crate::dsmem`), where [`Ports::remote`] says there are any.
    #[cold]
    fn check_remote(
        &mut self,
        ctx: Ctx,
        lane: u32,
        off: u32,
        size: u32,
        access: AccessKind,
    ) -> Result<(), EmuError> {
        crate::dsmem::check_local(
            ctx,
            self.shared,
            self.cluster.order,
            lane,
            (off, size),
            access,
        )
    }

    /// [`Ports::check_remote`] for the access of `size` bytes at `addr[l]` of each lane `l`
    /// in `mask`, before any of them is made (kept out of the loops of the accesses).
    #[cold]
    #[inline(never)]
    fn check_remote_lanes(
        &mut self,
        ctx: Ctx,
        addr: &Lanes,
        mask: u32,
        size: u32,
        access: AccessKind,
    ) -> Result<(), EmuError> {
        for l in lanes_of(mask) {
            self.check_remote(ctx, l, addr[l as usize] as u32, size, access)?;
        }
        Ok(())
    }

    /// The byte offset of `lane`'s local access `[off, off + size)` in this warp's local
    /// memory, after the bounds and alignment checks.
    fn local_at(
        &self,
        ctx: Ctx,
        lane: u32,
        off: u64,
        size: u32,
        access: AccessKind,
    ) -> Result<usize, EmuError> {
        let per = u64::from(ctx.launch.local_size);
        if off.checked_add(u64::from(size)).is_none_or(|end| end > per) {
            return Err(ctx.oob(lane, off, size, AddressSpace::Local, access));
        }
        if !off.is_multiple_of(u64::from(size)) {
            return Err(ctx.misaligned(lane, off, size, AddressSpace::Local));
        }
        Ok((u64::from(lane) * per + off) as usize)
    }

    /// `out[l] = *addr[l]` for the lanes in `mask`.
    pub(crate) fn load(
        &mut self,
        ctx: Ctx,
        space: AddressSpace,
        ty: ScalarType,
        addr: &Lanes,
        mask: u32,
        out: &mut Lanes,
    ) -> Result<(), EmuError> {
        let size = ty.size_bytes();
        let size64 = u64::from(size);
        match space {
            AddressSpace::Global => {
                let global = &ctx.launch.global;
                let mut track = Tracker::new(
                    ctx.launch.races.as_ref(),
                    self.races,
                    self.cluster.order.view(ctx.rank),
                );
                let mut accesses = WarpAccesses::new();
                for l in lanes_of(mask) {
                    let a = addr[l as usize];
                    let Some((alloc, off)) = global.locate(a, size64, self.hint) else {
                        return Err(ctx.oob(l, a, size, space, AccessKind::Load));
                    };
                    if !a.is_multiple_of(size64) {
                        return Err(ctx.misaligned(l, a, size, space));
                    }
                    if track.is_some() {
                        accesses.push(l, *self.hint, off);
                    }
                    out[l as usize] = alloc.load(off, size);
                }
                if let Some(t) = &mut track {
                    t.warp(global, &accesses, ctx.tid(0), size, READ)
                        .map_err(|(l, f)| Self::race_error(ctx, l, &f, AccessKind::Load))?;
                }
            }
            AddressSpace::Shared => {
                if self.remote() {
                    self.check_remote_lanes(ctx, addr, mask, size, AccessKind::Load)?;
                }
                for l in lanes_of(mask) {
                    let a = addr[l as usize];
                    out[l as usize] = self
                        .shared
                        .load(a as u32, size, ctx.tid(l))
                        .map_err(|f| ctx.shared_fault(f, l, a, size, AccessKind::Load))?;
                }
            }
            AddressSpace::Local => {
                for l in lanes_of(mask) {
                    let at = self.local_at(ctx, l, addr[l as usize], size, AccessKind::Load)?;
                    let mut b = [0u8; 8];
                    b[..size as usize].copy_from_slice(&self.local[at..at + size as usize]);
                    out[l as usize] = u64::from_le_bytes(b);
                }
            }
        }
        if ty == ScalarType::Bool {
            // Memory may hold any byte; a `Bool` register holds 0 or 1.
            for o in out.iter_mut() {
                *o = u64::from(*o != 0);
            }
        }
        Ok(())
    }

    /// The addresses of the `count` elements of `size` bytes of a vector access at `base`,
    /// one set of lanes per element, after checking that every lane in `mask` is aligned to
    /// the whole vector (before any element is touched, as the GPU faults on the
    /// instruction).
    pub(crate) fn vector_elements(
        &self,
        ctx: Ctx,
        space: AddressSpace,
        base: &Lanes,
        size: u32,
        count: usize,
        mask: u32,
    ) -> Result<Vec<Lanes>, EmuError> {
        let whole = size * count as u32;
        for l in lanes_of(mask) {
            let a = base[l as usize];
            if !a.is_multiple_of(u64::from(whole)) {
                return Err(ctx.misaligned(l, a, whole, space));
            }
        }
        Ok((0..count as u64)
            .map(|j| base.map(|a| a.wrapping_add(j * u64::from(size))))
            .collect())
    }

    /// `*addr[l] = v[l]` (the low `size` bytes) for the lanes in `mask`.
    pub(crate) fn store(
        &mut self,
        ctx: Ctx,
        space: AddressSpace,
        size: u32,
        addr: &Lanes,
        v: &Lanes,
        mask: u32,
    ) -> Result<(), EmuError> {
        let size64 = u64::from(size);
        match space {
            AddressSpace::Global => {
                let global = &ctx.launch.global;
                let mut track = Tracker::new(
                    ctx.launch.races.as_ref(),
                    self.races,
                    self.cluster.order.view(ctx.rank),
                );
                let mut accesses = WarpAccesses::new();
                for l in lanes_of(mask) {
                    let a = addr[l as usize];
                    let Some((alloc, off)) = global.locate(a, size64, self.hint) else {
                        return Err(ctx.oob(l, a, size, space, AccessKind::Store));
                    };
                    if !a.is_multiple_of(size64) {
                        return Err(ctx.misaligned(l, a, size, space));
                    }
                    if track.is_some() {
                        accesses.push(l, *self.hint, off);
                    }
                    alloc.store(off, size, v[l as usize]);
                }
                if let Some(t) = &mut track {
                    t.warp(global, &accesses, ctx.tid(0), size, WRITE)
                        .map_err(|(l, f)| Self::race_error(ctx, l, &f, AccessKind::Store))?;
                }
            }
            AddressSpace::Shared => {
                if self.remote() {
                    self.check_remote_lanes(ctx, addr, mask, size, AccessKind::Store)?;
                }
                for l in lanes_of(mask) {
                    let a = addr[l as usize];
                    self.shared
                        .store(a as u32, size, v[l as usize], ctx.tid(l))
                        .map_err(|f| ctx.shared_fault(f, l, a, size, AccessKind::Store))?;
                }
            }
            AddressSpace::Local => {
                for l in lanes_of(mask) {
                    let at = self.local_at(ctx, l, addr[l as usize], size, AccessKind::Store)?;
                    let bytes = v[l as usize].to_le_bytes();
                    self.local[at..at + size as usize].copy_from_slice(&bytes[..size as usize]);
                }
            }
        }
        Ok(())
    }

    /// The rows of `count` 8x8 matrices of 16-bit elements that an `ldmatrix` reads: lane
    /// `l < 8 count` addresses row `l % 8` of matrix `l / 8` (16 bytes, 16-byte aligned) and
    /// is the thread that reads it, for race tracking.
    pub(crate) fn ldmatrix_rows(
        &mut self,
        ctx: Ctx,
        addr: &Lanes,
        count: usize,
    ) -> Result<Matrices, EmuError> {
        let mut rows: Matrices = [[[0u16; 8]; 8]; 4];
        for (m, matrix) in rows.iter_mut().enumerate().take(count) {
            for (r, row) in matrix.iter_mut().enumerate() {
                let lane = (m * 8 + r) as u32;
                let a = addr[lane as usize];
                let space = AddressSpace::Shared;
                if !a.is_multiple_of(16) {
                    return Err(ctx.misaligned(lane, a, 16, space));
                }
                for half in 0..2u32 {
                    let Some(off) = (a as u32).checked_add(8 * half) else {
                        return Err(ctx.oob(lane, a, 16, space, AccessKind::Load));
                    };
                    if self.remote() {
                        self.check_remote(ctx, lane, off, 8, AccessKind::Load)?;
                    }
                    let v = self
                        .shared
                        .load(off, 8, ctx.tid(lane))
                        .map_err(|f| ctx.shared_fault(f, lane, a, 16, AccessKind::Load))?;
                    for (i, e) in row[4 * half as usize..4 * half as usize + 4]
                        .iter_mut()
                        .enumerate()
                    {
                        *e = (v >> (16 * i)) as u16;
                    }
                }
            }
        }
        Ok(rows)
    }

    /// `cp.async` of `size` bytes from global `src[l]` to shared `dst[l]` for the lanes in
    /// `mask`, performed at once (which is one of the behaviours the asynchronous copy
    /// allows): the shared bytes count as written by the issuing thread now.
    /// `cp.async` for the lanes in `mask`: `size` bytes to shared `dst` from global `src`,
    /// of which only the lane's `src_size` (when given) are read and the rest are zeros. The
    /// global bytes are read now; the shared writes go into `queues`, to land when the lane
    /// waits for them (`crate::cp_async`).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn cp_async(
        &mut self,
        ctx: Ctx,
        size: u32,
        dst: &Lanes,
        src: &Lanes,
        src_size: Option<&Lanes>,
        mask: u32,
        queues: &mut crate::cp_async::Queues,
    ) -> Result<(), EmuError> {
        let size64 = u64::from(size);
        let chunk = size.min(8);
        for l in lanes_of(mask) {
            let (d, s) = (dst[l as usize], src[l as usize]);
            let global = AddressSpace::Global;
            let read = match src_size {
                Some(n) => n[l as usize],
                None => size64,
            };
            if read > size64 {
                return Err(EmuError::CpAsyncSourceSize {
                    kernel: ctx.kernel_name(),
                    block: ctx.block_idx,
                    thread: ctx.thread(l),
                    read,
                    size,
                });
            }
            if !s.is_multiple_of(size64) {
                return Err(ctx.misaligned(l, s, size, global));
            }
            if !d.is_multiple_of(size64) {
                return Err(ctx.misaligned(l, d, size, AddressSpace::Shared));
            }
            // The bytes to write: `read` from global memory, then zeros.
            let mut bytes = [0u8; 16];
            if read > 0 {
                let Some((alloc, off)) = ctx.launch.global.locate(s, read, self.hint) else {
                    return Err(ctx.oob(l, s, read as u32, global, AccessKind::Load));
                };
                if let Some(mut t) = Tracker::new(
                    ctx.launch.races.as_ref(),
                    self.races,
                    self.cluster.order.view(ctx.rank),
                ) {
                    t.access(ctx.tid(l), *self.hint, alloc, off, read as u32, READ)
                        .map_err(|f| Self::race_error(ctx, l, &f, AccessKind::Load))?;
                }
                for (i, b) in bytes.iter_mut().take(read as usize).enumerate() {
                    *b = alloc.load(off + i as u64, 1) as u8;
                }
            }
            for i in 0..size / chunk {
                let start = (i * chunk) as usize;
                let mut word = [0u8; 8];
                word[..chunk as usize].copy_from_slice(&bytes[start..start + chunk as usize]);
                let v = u64::from_le_bytes(word);
                let at = u32::try_from(d)
                    .ok()
                    .and_then(|d| d.checked_add(i * chunk))
                    .ok_or_else(|| {
                        ctx.shared_fault(SharedFault::OutOfBounds, l, d, size, AccessKind::Store)
                    })?;
                queues.issue(
                    l,
                    crate::cp_async::Piece {
                        at,
                        bytes: chunk,
                        value: v,
                        copy_dst: d,
                        copy_size: size,
                    },
                );
            }
        }
        Ok(())
    }

    /// Lands lane `lane`'s `pieces` of earlier `cp.async`s in shared memory, as that lane's
    /// writes (`crate::cp_async`).
    pub(crate) fn land_copies(
        &mut self,
        ctx: Ctx,
        lane: u32,
        pieces: &[crate::cp_async::Piece],
    ) -> Result<(), EmuError> {
        for p in pieces {
            if self.remote() {
                self.check_remote(ctx, lane, p.at, p.bytes, AccessKind::Store)?;
            }
            let fault = |f| ctx.shared_fault(f, lane, p.copy_dst, p.copy_size, AccessKind::Store);
            self.shared
                .store(p.at, p.bytes, p.value, ctx.tid(lane))
                .map_err(fault)?;
        }
        Ok(())
    }

    /// An atomic for the lanes in `mask`, one lane after another in lane order; `out[l]` is
    /// the value lane `l` found in memory. `what` is the read-modify-write, an atomic load
    /// (memory left as it is) or an atomic store (an exchange whose result nobody reads).
    /// `order` and `scope` decide what it orders for the race tracker: a `SeqCst` one begins
    /// with a fence of the lanes; a releasing one publishes each lane's earlier accesses on
    /// the location; an acquiring one makes the location's earlier releases known to the
    /// lane at once.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn atomic(
        &mut self,
        ctx: Ctx,
        what: AtomicKind,
        space: AddressSpace,
        (scope, order): (Scope, MemOrder),
        ty: ScalarType,
        addr: &Lanes,
        val: &Lanes,
        cmp: Option<&Lanes>,
        mask: u32,
        out: &mut Lanes,
    ) -> Result<(), EmuError> {
        let size = ty.size_bytes();
        let size64 = u64::from(size);
        let device = scope != Scope::Block;
        let races = ctx.launch.races.as_ref();
        // Shared memory's tracker orders through its clocks, per location.
        let (shared_release, shared_acquire) = (order.releases(), order.acquires());
        let mut order = order;
        if order == MemOrder::SeqCst {
            self.races
                .fence(races, lanes_of(mask).map(|l| ctx.tid(l)), device);
            order = match what {
                AtomicKind::Store => MemOrder::Relaxed,
                _ => MemOrder::Acquire,
            };
        }
        let release = if order.releases() && space == AddressSpace::Global {
            self.races.release_point(races).map(|(c, b)| (c, b, device))
        } else {
            None
        };
        let acquire = order.acquires().then_some(device);
        let op = match what {
            AtomicKind::Rmw(op) => op,
            AtomicKind::Load | AtomicKind::Store => AtomicOp::Exchange,
        };
        let load = matches!(what, AtomicKind::Load);
        for l in lanes_of(mask) {
            let (a, x) = (addr[l as usize], val[l as usize]);
            let c = cmp.map_or(0, |c| c[l as usize]);
            let f = |old: u64| {
                if load {
                    old
                } else {
                    atomic::apply(op, ty, old, x, c)
                }
            };
            out[l as usize] = match space {
                AddressSpace::Global => {
                    let Some((alloc, off)) = ctx.launch.global.locate(a, size64, self.hint) else {
                        return Err(ctx.oob(l, a, size, space, AccessKind::Atomic));
                    };
                    if !a.is_multiple_of(size64) {
                        return Err(ctx.misaligned(l, a, size, space));
                    }
                    if let Some(mut t) = Tracker::new(
                        ctx.launch.races.as_ref(),
                        self.races,
                        self.cluster.order.view(ctx.rank),
                    ) {
                        t.access(ctx.tid(l), *self.hint, alloc, off, size, ATOMIC)
                            .map_err(|f| Self::race_error(ctx, l, &f, AccessKind::Atomic))?;
                    }
                    let races = ctx.launch.races.as_ref();
                    let sync = races.and_then(|r| Some((r.sync.as_ref()?, r.layout)));
                    match sync.and_then(|(s, layout)| Some((s, self.races.number(layout)?))) {
                        Some((sync, block)) => sync.atomic(
                            &mut self.races.sync,
                            block,
                            ctx.tid(l),
                            a,
                            (release, acquire),
                            || alloc.rmw(off, size, f),
                        ),
                        _ => alloc.rmw(off, size, f),
                    }
                }
                AddressSpace::Shared => {
                    let remote = self.remote();
                    if remote {
                        self.check_remote(ctx, l, a as u32, size, AccessKind::Atomic)?;
                    }
                    if shared_acquire && !remote {
                        self.shared.atomic_acquire(a as u32, ctx.tid(l));
                    }
                    let old = self
                        .shared
                        .atomic(a as u32, size, ctx.tid(l), f)
                        .map_err(|e| ctx.shared_fault(e, l, a, size, AccessKind::Atomic))?;
                    if shared_release && !remote {
                        self.shared.atomic_release(a as u32, ctx.tid(l));
                    }
                    old
                }
                AddressSpace::Local => return Err(ctx.internal("atomic on local memory")),
            };
        }
        Ok(())
    }
}

/// What an atomic statement does to memory ([`Ports::atomic`]).
#[derive(Clone, Copy)]
pub(crate) enum AtomicKind {
    /// A read-modify-write.
    Rmw(AtomicOp),
    /// An atomic load: memory unchanged.
    Load,
    /// An atomic store: the operand replaces memory.
    Store,
}
