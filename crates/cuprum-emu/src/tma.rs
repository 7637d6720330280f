//! The tensor memory accelerator (TMA): bulk tensor loads and stores, plain bulk copies and
//! bulk groups ([`cuprum_ir::TmaOp`]), run as an asynchronous agent of the block.
//!
//! The TMA is one more thread of the block for the race tracker (`SharedMem::agent`, one past
//! the last thread) with its own vector clock: issuing a copy releases the issuing thread's
//! accesses to it, and a load's complete-tx releases the agent's writes into the mbarrier
//! phase, which the threads that observe the phase acquire. A load's writes follow what its
//! own issuer released and nothing more (loads land late and in any order, so what the
//! issuers of loads that landed earlier knew is not the agent's), and they race with the
//! block's accesses since the epoch of the issue, not only those of the landing's epoch (a
//! barrier after the issue does not order the copy, which may write any time after it).
//!
//! When things happen (each is a behaviour the GPU allows; they are the latest legal points,
//! so that a program that relies on an earlier one fails here):
//! * a **load**'s bytes land when a thread tests or waits on its mbarrier and would otherwise
//!   find the phase incomplete: then every pending load completing on that barrier lands, in
//!   issue order (global memory is read then), and completes its bytes on the barrier. Until
//!   then its destination belongs to the TMA: any thread's access of it is an
//!   [`EmuError::AsyncProxyRace`]. Loads nobody waits for never land (their bytes cannot be
//!   observed without a wait).
//! * a **store** reads its shared source when it is issued (each byte a thread wrote must
//!   have been fenced for the async proxy: [`EmuError::MissingProxyFence`]), and the source
//!   belongs to the TMA until a `wait_group.read` covers the store (writing it is an
//!   [`EmuError::AsyncProxyRace`]); it writes global memory when a plain `wait_group` covers
//!   it, or when the block ends.
//!
//! A **multicast** load (`.multicast::cluster`) is one pending load per block its mask names,
//! each in that block's list: it lands when a thread of that block tests or waits on that
//! block's barrier, as above, and completes the box's bytes there. Its issuer's knowledge of
//! that block's threads ([`crate::cluster`]) is what the block's agent acquires. A block must
//! not return while a multicast from another block into it has not landed, nor be named by a
//! multicast issued after it returned: both are [`EmuError::ClusterMisuse`].
//!
//! Shared addresses of a box: element `e` of the box (innermost dimension fastest) has byte
//! offset `e * size` in a dense box, stored at `Swizzle::apply(base + offset)`. Out-of-bounds
//! elements read as zero or as the canonical quiet NaN of the element type (the map's fill)
//! and are skipped by stores. The TMA's global accesses are not race-tracked.

use cuprum_ir::{
    MAX_SHARED_BYTES, OobFill, ParamKind, ScalarType, TensorMapDesc, TensorMapRef, TmaOp, Value,
    tma::{MAX_RANK, SHARED_ALIGN, TENSOR_MAP_BYTES},
};

use crate::access::{Ctx, lanes_of};
use crate::error::{Dim3, EmuError};
use crate::mbarrier::MbarFault;
use crate::shared::{Pending, SharedMem};
use crate::warp::Exec;

/// A load that has not landed.
pub(crate) struct PendingLoad {
    /// The issuing thread and its lane (for errors).
    pub(crate) issuer: u32,
    lane: u32,
    warp: u32,
    /// The issuing thread's block (`blockIdx` and linear index), when another block of the
    /// cluster multicast the load into this one.
    pub(crate) origin: Option<(Dim3, u64)>,
    /// What to copy.
    what: Source,
    /// The shared destination and the barrier the bytes complete on.
    pub(crate) dst: u32,
    pub(crate) mbar: u32,
    /// What the issuer released to the agent.
    known: Vec<u32>,
    /// The shared-memory epoch of the destination's block it was issued in (`None` when
    /// another block of the cluster issued it: its epochs are not this one's, so its copy is
    /// checked from the landing's epoch only).
    epoch: Option<u32>,
}

/// Where a load's bytes come from.
#[derive(Clone, Copy)]
enum Source {
    /// A box of a tensor.
    Tile {
        desc: TensorMapDesc,
        coords: [i64; MAX_RANK],
    },
    /// `bytes` bytes at a global address.
    Bulk { src: u64, bytes: u32 },
}

/// A store whose global writes have not been done.
struct PendingStore {
    issuer: u32,
    /// The issuer's bulk group.
    group: u64,
    /// `(global address, size, value)` of each element in the tensor.
    writes: Vec<(u64, u32, u64)>,
    /// Whether a `wait_group.read` released the source.
    read_done: bool,
    /// The source range in `SharedMem::pending`.
    source: (u32, u32),
}

/// The block's bulk copies in flight.
#[derive(Default)]
pub(crate) struct BulkState {
    pub(crate) loads: Vec<PendingLoad>,
    stores: Vec<PendingStore>,
    /// Per thread that issued stores: the number of its current (open) bulk group.
    groups: std::collections::HashMap<u32, u64>,
}

impl BulkState {
    /// Forgets everything (a new block).
    pub(crate) fn clear(&mut self) {
        self.loads.clear();
        self.stores.clear();
        self.groups.clear();
    }
}

/// The canonical quiet NaN of a float type's bits (the NaN out-of-bounds fill).
fn nan_bits(ty: ScalarType) -> u64 {
    match ty {
        ScalarType::F16 => 0x7fff,
        ScalarType::BF16 => 0x7fff,
        ScalarType::F32 => 0x7fff_ffff,
        ScalarType::F64 => 0x7fff_ffff_ffff_ffff,
        _ => 0,
    }
}

/// Calls `f(byte offset in the dense box, global index)` for every element of the box at
/// `coords`, innermost dimension fastest.
fn for_each_element(
    desc: &TensorMapDesc,
    coords: &[i64; MAX_RANK],
    mut f: impl FnMut(u64, &[i64]),
) {
    let rank = desc.rank.min(MAX_RANK);
    let size = u64::from(desc.elem.size_bytes());
    let mut i = [0u32; MAX_RANK];
    let mut e = 0u64;
    loop {
        let mut index = [0i64; MAX_RANK];
        for d in 0..rank {
            index[d] = coords[d] + i64::from(i[d]);
        }
        f(e * size, &index[..rank]);
        e += 1;
        let mut d = 0;
        loop {
            if d == rank {
                return;
            }
            i[d] += 1;
            if i[d] < desc.box_dims[d] {
                break;
            }
            i[d] = 0;
            d += 1;
        }
    }
}

impl Exec<'_, '_> {
    /// Runs a TMA statement for the lanes in `mask`, lane by lane.
    pub(crate) fn tma(&mut self, op: &TmaOp, mask: u32) -> Result<(), EmuError> {
        let ctx = self.ctx;
        for l in lanes_of(mask) {
            let tid = ctx.tid(l);
            match op {
                TmaOp::LoadTile {
                    map,
                    coords,
                    dst,
                    mbar,
                    multicast,
                } => {
                    let desc = self.tensor_map(*map, l)?;
                    let coords = self.coords(coords, l);
                    if let Some(problem) = desc.box_start_problem(&coords) {
                        return Err(misuse(ctx, l, problem));
                    }
                    let dst = self.shared_box(*dst, l, desc.box_bytes(), &desc)?;
                    let mbar = self.lane_mbar(*mbar, l)?;
                    let what = Source::Tile { desc, coords };
                    match multicast {
                        None => self.issue_load(l, what, dst, mbar, &desc)?,
                        Some(m) => {
                            // The mask is a `U16`: its register holds no higher bits.
                            let mask = self.regs[m.index()][l as usize] as u16;
                            self.issue_multicast(l, what, (dst, mbar), &desc, mask)?;
                        }
                    }
                }
                TmaOp::LoadBulk {
                    dst,
                    src,
                    bytes,
                    mbar,
                } => {
                    let n = self.regs[bytes.index()][l as usize] as u32;
                    let s = self.regs[src.index()][l as usize];
                    if !n.is_multiple_of(16) || !s.is_multiple_of(16) {
                        return Err(misuse(
                            ctx,
                            l,
                            format!(
                                "a bulk copy moves a multiple of 16 bytes from a 16-byte-aligned \
                                 global address, not {n} bytes from {s:#x}"
                            ),
                        ));
                    }
                    let d = self.regs[dst.index()][l as usize];
                    let d = self.shared_range(d, 16, u64::from(n), l)?;
                    let mbar = self.lane_mbar(*mbar, l)?;
                    let desc = TensorMapDesc::new(ScalarType::U8, 1, s);
                    self.issue_load(l, Source::Bulk { src: s, bytes: n }, d, mbar, &desc)?;
                }
                TmaOp::StoreTile { map, coords, src } => {
                    let desc = self.tensor_map(*map, l)?;
                    let coords = self.coords(coords, l);
                    if let Some(problem) = desc.box_start_problem(&coords) {
                        return Err(misuse(ctx, l, problem));
                    }
                    let src = self.shared_box(*src, l, desc.box_bytes(), &desc)?;
                    self.issue_store(l, tid, &desc, &coords, src)?;
                }
                TmaOp::Commit => {
                    *self.mem.shared.tma.groups.entry(tid).or_insert(0) += 1;
                }
                TmaOp::WaitGroup { pending, read } => {
                    self.wait_group(tid, u64::from(*pending), *read)?;
                }
            }
        }
        Ok(())
    }

    /// The description of the tensor map `map` names for lane `l`.
    fn tensor_map(&mut self, map: TensorMapRef, l: u32) -> Result<TensorMapDesc, EmuError> {
        let ctx = self.ctx;
        match map {
            TensorMapRef::Param(i) => ctx
                .launch
                .tensor_maps
                .get(i as usize)
                .copied()
                .flatten()
                .ok_or_else(|| ctx.internal(format!("parameter {i} is not a tensor map"))),
            TensorMapRef::Global(v) => {
                let a = self.regs[v.index()][l as usize];
                let mut words = [0u64; 16];
                let found = ctx
                    .launch
                    .global
                    .locate(a, TENSOR_MAP_BYTES as u64, self.mem.hint);
                let Some((alloc, off)) = found.filter(|_| a.is_multiple_of(64)) else {
                    return Err(misuse(
                        ctx,
                        l,
                        format!(
                            "the tensor map at {a:#x} is not 128 bytes of a live allocation at a \
                             64-byte boundary"
                        ),
                    ));
                };
                for (i, w) in words.iter_mut().enumerate() {
                    *w = alloc.load(off + 8 * i as u64, 8);
                }
                let desc = TensorMapDesc::decode_emulated(&words)
                    .and_then(|d| d.check(None).map(|()| d))
                    .map_err(|p| misuse(ctx, l, format!("the tensor map at {a:#x}: {p}")))?;
                Ok(desc)
            }
        }
    }

    /// Lane `l`'s coordinates, sign-extended.
    fn coords(&self, coords: &[Value], l: u32) -> [i64; MAX_RANK] {
        let mut out = [0i64; MAX_RANK];
        for (o, c) in out.iter_mut().zip(coords) {
            *o = i64::from(self.regs[c.index()][l as usize] as u32 as i32);
        }
        out
    }

    /// Lane `l`'s shared address of a box of `bytes` bytes for `desc`, checked: aligned to
    /// 128 bytes and to the swizzle's period, inside shared memory.
    fn shared_box(
        &self,
        v: Value,
        l: u32,
        bytes: u64,
        desc: &TensorMapDesc,
    ) -> Result<u32, EmuError> {
        let a = self.regs[v.index()][l as usize];
        let align = SHARED_ALIGN.max(desc.swizzle.period_bytes());
        let span = bytes.next_multiple_of(u64::from(desc.swizzle.period_bytes()));
        self.shared_range(a, align, span, l)
    }

    /// Lane `l`'s shared address `a` of `bytes` bytes, checked against `align` and the
    /// block's shared memory.
    fn shared_range(&self, a: u64, align: u32, bytes: u64, l: u32) -> Result<u32, EmuError> {
        let ctx = self.ctx;
        if !a.is_multiple_of(u64::from(align)) {
            return Err(misuse(
                ctx,
                l,
                format!(
                    "shared address {a:#x} is not a multiple of {align} bytes (TMA boxes start \
                     at 128 bytes, swizzled ones at their swizzle's period: declare the array \
                     `SharedArray<T, N, {align}>`)"
                ),
            ));
        }
        let size = u64::from(ctx.launch.shared_size.min(MAX_SHARED_BYTES));
        if a.checked_add(bytes).is_none_or(|end| end > size) {
            return Err(misuse(
                ctx,
                l,
                format!(
                    "the {bytes} bytes at shared offset {a:#x} do not fit in the block's {size} \
                     bytes of shared memory"
                ),
            ));
        }
        Ok(a as u32)
    }

    /// Lane `l`'s mbarrier offset, checked.
    fn lane_mbar(&self, v: Value, l: u32) -> Result<u32, EmuError> {
        let a = self.regs[v.index()][l as usize];
        self.mem
            .shared
            .mbarrier_at(a)
            .map_err(|f| misuse(self.ctx, l, format!("its mbarrier at {a:#x}: {f:?}")))
    }

    /// A load into this block's shared memory.
    fn issue_load(
        &mut self,
        l: u32,
        what: Source,
        dst: u32,
        mbar: u32,
        desc: &TensorMapDesc,
    ) -> Result<(), EmuError> {
        let ctx = self.ctx;
        let shared = &mut *self.mem.shared;
        let mut known = Vec::new();
        if !shared.mbar.clocks.release(ctx.tid(l), &mut known) {
            shared.clocks_restarted();
        }
        let load = self.pending_load(l, what, (dst, mbar), known, None);
        add_load(ctx, self.mem.shared, load, span(&what, desc), None)
    }

    /// A multicast load into the shared memory of every block of the cluster whose rank is
    /// set in `mask` (see the module docs).
    fn issue_multicast(
        &mut self,
        l: u32,
        what: Source,
        (dst, mbar): (u32, u32),
        desc: &TensorMapDesc,
        mask: u16,
    ) -> Result<(), EmuError> {
        let ctx = self.ctx;
        let blocks = ctx.launch.cluster_blocks;
        if u32::from(mask) >> blocks != 0 {
            return Err(crate::cluster::misuse(
                ctx,
                l,
                format!(
                    "the multicast mask {mask:#06x} names ranks at or above the cluster's \
                     {blocks} blocks (bits 0..{blocks} only)"
                ),
            ));
        }
        for rank in lanes_of(u32::from(mask)) {
            if rank == ctx.rank {
                self.issue_load(l, what, dst, mbar, desc)?;
                continue;
            }
            let issuer = ctx.tid(l);
            let cluster = &mut self.mem.cluster;
            if cluster.order.finished(rank) {
                return Err(crate::cluster::misuse(
                    ctx,
                    l,
                    format!(
                        "a multicast copy names cluster rank {rank}, block {:?}, whose threads \
                         have all returned (its shared memory is gone): end the kernel with a \
                         cluster barrier (arrive and wait) so that no block returns while \
                         others still copy into it",
                        cluster.order.block_idx(rank)
                    ),
                ));
            }
            let known = cluster.order.stamps_known(ctx.rank, issuer, rank);
            let target_block = cluster.order.block_idx(rank);
            let origin = Some((ctx.block_idx, ctx.block_linear));
            let load = self.pending_load(l, what, (dst, mbar), known, origin);
            let Some(target) = self.mem.cluster.peer(ctx.rank, rank) else {
                return Err(ctx.internal(format!("cluster rank {rank} has no shared memory")));
            };
            add_load(ctx, target, load, span(&what, desc), Some(target_block))?;
        }
        Ok(())
    }

    fn pending_load(
        &self,
        l: u32,
        what: Source,
        (dst, mbar): (u32, u32),
        known: Vec<u32>,
        origin: Option<(Dim3, u64)>,
    ) -> PendingLoad {
        PendingLoad {
            issuer: self.ctx.tid(l),
            lane: l,
            warp: self.ctx.warp_index,
            origin,
            what,
            dst,
            mbar,
            known,
            epoch: origin.is_none().then(|| self.mem.shared.epoch()),
        }
    }

    /// Lands every pending load that completes on the mbarrier at `off`, in issue order.
    pub(crate) fn land_loads(&mut self, off: u32) -> Result<(), EmuError> {
        let loads = std::mem::take(&mut self.mem.shared.tma.loads);
        let (now, later): (Vec<_>, Vec<_>) = loads.into_iter().partition(|p| p.mbar == off);
        self.mem.shared.tma.loads = later;
        for load in now {
            self.land(load)?;
        }
        Ok(())
    }

    fn land(&mut self, load: PendingLoad) -> Result<(), EmuError> {
        // Faults of the agent's writes are this block's (its shared memory); the rest are
        // the issuer's, who may be in another block of the cluster.
        let here = Ctx {
            warp_index: load.warp,
            ..self.ctx
        };
        let ctx = match load.origin {
            Some((block_idx, block_linear)) => Ctx {
                block_idx,
                block_linear,
                ..here
            },
            None => here,
        };
        let l = load.lane;
        let global = &ctx.launch.global;
        let hint = &mut *self.mem.hint;
        let shared: &mut SharedMem = self.mem.shared;
        let origin = load.origin.map(|(b, _)| b);
        shared.pending.retain(|p| {
            !(p.load && p.start == load.dst && p.issuer == load.issuer && p.origin == origin)
        });
        let agent = shared.agent;
        // The copy's writes follow what its issuer knew when it issued it, and nothing
        // later issuers knew: loads land lazily, possibly after later ones.
        shared.mbar.clocks.assume(agent, &load.known);
        let fault = |f| agent_fault(here, l, f);
        let bytes = match &load.what {
            Source::Tile { desc, coords } => {
                let size = desc.elem.size_bytes();
                let fill = match desc.oob_fill {
                    OobFill::Zero => 0,
                    OobFill::Nan => nan_bits(desc.elem),
                };
                let mut result = Ok(());
                for_each_element(desc, coords, |b, index| {
                    if result.is_err() {
                        return;
                    }
                    let value = match desc.element_offset(index) {
                        Some(o) => {
                            let addr = desc.address + o;
                            match global.locate(addr, u64::from(size), hint) {
                                Some((alloc, off)) => alloc.load(off, size),
                                None => {
                                    result = Err(misuse(
                                        ctx,
                                        l,
                                        format!(
                                            "the tensor's element at {index:?} ({addr:#x}) is \
                                             outside every allocation"
                                        ),
                                    ));
                                    return;
                                }
                            }
                        }
                        None => fill,
                    };
                    let at = desc.swizzle.apply(load.dst + b as u32);
                    result = shared
                        .agent_store(at, size, value, load.epoch)
                        .map_err(fault);
                });
                result?;
                desc.box_bytes()
            }
            Source::Bulk { src, bytes } => {
                let Some((alloc, off)) = global.locate(*src, u64::from(*bytes), hint) else {
                    return Err(misuse(
                        ctx,
                        l,
                        format!("the {bytes} bytes at {src:#x} are not inside one allocation"),
                    ));
                };
                for i in (0..*bytes).step_by(8) {
                    let v = alloc.load(off + u64::from(i), 8);
                    shared
                        .agent_store(load.dst + i, 8, v, load.epoch)
                        .map_err(fault)?;
                }
                u64::from(*bytes)
            }
        };
        let epoch = shared.epoch();
        match shared.mbar.complete_tx(load.mbar, bytes, agent, epoch) {
            Ok(true) => Ok(()),
            Ok(false) => {
                shared.clocks_restarted();
                Ok(())
            }
            Err(f) => {
                let whose = match load.origin {
                    Some(_) => format!(
                        " of block {:?} (a multicast: that block initialises it, then \
                         `fence_mbarrier_init()` and a cluster barrier order the copy after)",
                        here.block_idx
                    ),
                    None => String::new(),
                };
                Err(misuse(
                    ctx,
                    l,
                    format!(
                        "completing {bytes} bytes on the mbarrier at shared offset {}{whose}: {}",
                        load.mbar,
                        describe_mbar_fault(&f)
                    ),
                ))
            }
        }
    }

    fn issue_store(
        &mut self,
        l: u32,
        tid: u32,
        desc: &TensorMapDesc,
        coords: &[i64; MAX_RANK],
        src: u32,
    ) -> Result<(), EmuError> {
        let ctx = self.ctx;
        let shared: &mut SharedMem = self.mem.shared;
        let size = desc.elem.size_bytes();
        let mut writes = Vec::new();
        let mut result = Ok(());
        for_each_element(desc, coords, |b, index| {
            if result.is_err() {
                return;
            }
            if let Some(o) = desc.stored_element_offset(index) {
                let at = desc.swizzle.apply(src + b as u32);
                // Read as the issuer's (the store reads its source when issued, as far as
                // races go: its bytes stay the store's until a `.read` wait covers it), so
                // whatever orders a write before the issue (a named barrier's clocks, not
                // only a block barrier's epoch) orders it before the read.
                match shared.async_proxy_load(at, size, tid) {
                    Ok(v) => writes.push((desc.address + o, size, v)),
                    Err(f) => result = Err(agent_fault(ctx, l, f)),
                }
            }
        });
        result?;
        let span = desc
            .box_bytes()
            .next_multiple_of(u64::from(desc.swizzle.period_bytes())) as u32;
        shared.pending.push(Pending {
            start: src,
            end: src + span,
            load: false,
            issuer: tid,
            origin: None,
        });
        let group = *shared.tma.groups.entry(tid).or_insert(0);
        shared.tma.stores.push(PendingStore {
            issuer: tid,
            group,
            writes,
            read_done: false,
            source: (src, src + span),
        });
        Ok(())
    }

    /// `cp.async.bulk.wait_group{.read} pending` by thread `tid`.
    fn wait_group(&mut self, tid: u32, pending: u64, read: bool) -> Result<(), EmuError> {
        let shared: &mut SharedMem = self.mem.shared;
        let open = shared.tma.groups.get(&tid).copied().unwrap_or(0);
        let done = |s: &PendingStore| s.issuer == tid && s.group + pending < open;
        if shared.tma.stores.iter().any(done) {
            // The copies' reads (and writes) happen before the wait returns.
            let mut agent = Vec::new();
            if !shared.mbar.clocks.release(shared.agent, &mut agent) {
                shared.clocks_restarted();
            }
            shared.mbar.clocks.acquire(tid, &agent);
        }
        for s in shared.tma.stores.iter_mut().filter(|s| done(s)) {
            if !s.read_done {
                s.read_done = true;
                let (start, end) = s.source;
                if let Some(i) = shared
                    .pending
                    .iter()
                    .position(|p| !p.load && p.issuer == tid && p.start == start && p.end == end)
                {
                    shared.pending.swap_remove(i);
                }
            }
        }
        if !read {
            let (now, later): (Vec<_>, Vec<_>) = std::mem::take(&mut shared.tma.stores)
                .into_iter()
                .partition(done);
            shared.tma.stores = later;
            write_stores(self.ctx, &now, self.mem.hint);
        }
        Ok(())
    }
}

/// The shared bytes a load of `what` owns until it lands: a tile's box rounded up to its
/// swizzle's period, or a bulk copy's bytes.
fn span(what: &Source, desc: &TensorMapDesc) -> u64 {
    match what {
        Source::Tile { .. } => desc
            .box_bytes()
            .next_multiple_of(u64::from(desc.swizzle.period_bytes())),
        Source::Bulk { bytes, .. } => u64::from(*bytes),
    }
}

/// Makes `load` pending in `shared` (the shared memory of the block it lands in: the
/// issuer's, or `target` of its cluster), owning its `bytes` bytes: they must not be another
/// copy's already (a thread's unordered access of them since is checked when the bytes land).
fn add_load(
    ctx: Ctx,
    shared: &mut SharedMem,
    load: PendingLoad,
    bytes: u64,
    target: Option<Dim3>,
) -> Result<(), EmuError> {
    let dst = load.dst;
    let end = dst + bytes as u32;
    if let Some(p) = shared.pending.iter().find(|p| p.start < end && dst < p.end) {
        let origin = p
            .origin
            .map_or(String::new(), |b| format!(" of block {b:?}"));
        let whose = target.map_or(String::new(), |b| {
            format!(" in block {b:?}'s shared memory")
        });
        return Err(misuse(
            ctx,
            load.lane,
            format!(
                "the destination {dst:#x}..{end:#x}{whose} overlaps bytes another copy of \
                 thread {:?}{origin} still owns ({:#x}..{:#x}): wait until that copy's bytes \
                 were consumed (an mbarrier phase its readers arrive on) before copying over \
                 them",
                ctx.launch.thread_coords(p.issuer),
                p.start,
                p.end
            ),
        ));
    }
    shared.pending.push(Pending {
        start: dst,
        end,
        load: true,
        issuer: load.issuer,
        origin: load.origin.map(|(b, _)| b),
    });
    shared.tma.loads.push(load);
    Ok(())
}

/// Does the global writes of `stores`.
fn write_stores(ctx: Ctx, stores: &[PendingStore], hint: &mut usize) {
    for s in stores {
        for &(addr, size, value) in &s.writes {
            if let Some((alloc, off)) = ctx.launch.global.locate(addr, u64::from(size), hint) {
                alloc.store(off, size, value);
            }
        }
    }
}

/// The end of a block: the stores no wait covered write global memory now.
pub(crate) fn finish_block(ctx: Ctx, shared: &mut SharedMem) {
    let stores = std::mem::take(&mut shared.tma.stores);
    let mut hint = 0;
    write_stores(ctx, &stores, &mut hint);
}

/// Checks a tensor-map argument against its parameter: the emulator's encoding of a
/// description that fits the parameter and the hardware's rules, over a live allocation.
pub(crate) fn check_arg(
    kind: ParamKind,
    words: &[u64; 16],
    global: &crate::memory::GlobalView,
) -> Result<TensorMapDesc, String> {
    let desc = TensorMapDesc::decode_emulated(words).map_err(|p| p.to_string())?;
    desc.check(None).map_err(|p| p.to_string())?;
    if let ParamKind::TensorMap { elem, rank } = kind
        && (usize::from(rank) != desc.rank
            || cuprum_ir::tma::tensor_map_data_type(elem)
                != cuprum_ir::tma::tensor_map_data_type(desc.elem)
                && elem.size_bytes() != desc.elem.size_bytes())
    {
        return Err(format!(
            "the parameter is a {rank}-d tensor map of {elem}, but the map describes a {}-d \
             tensor of {}",
            desc.rank, desc.elem
        ));
    }
    let extent = u64::try_from(desc.extent_bytes()).unwrap_or(u64::MAX);
    if !global.contains(desc.address, extent) {
        return Err(format!(
            "the tensor's {extent} bytes at {:#x} are not inside one live allocation",
            desc.address
        ));
    }
    Ok(desc)
}

fn describe_mbar_fault(f: &MbarFault) -> String {
    match f {
        MbarFault::Uninitialized => "no `mbarrier_init` set it up".into(),
        MbarFault::Invalidated => "it was invalidated".into(),
        MbarFault::TxCount(c) => format!(
            "its transaction count would reach {c} (more bytes completed than `expect_tx` \
             announced)"
        ),
        MbarFault::UnorderedInit { .. } => {
            "nothing orders the copy's issue after the barrier's initialisation".into()
        }
        other => format!("{other:?}"),
    }
}

#[cold]
fn misuse(ctx: Ctx, lane: u32, message: String) -> EmuError {
    EmuError::TmaMisuse {
        kernel: ctx.kernel_name(),
        block: ctx.block_idx,
        thread: ctx.thread(lane),
        message,
    }
}

/// The error of the agent's own access `f` for the copy lane `lane` issued.
#[cold]
fn agent_fault(ctx: Ctx, lane: u32, f: crate::shared::SharedFault) -> EmuError {
    crate::access::shared_error(ctx, f, lane, 0, 1, crate::error::AccessKind::Store)
}
