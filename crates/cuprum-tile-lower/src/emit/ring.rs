//! A two-stage `cp.async` ring for the tiles `wgmma`s read in `for` loops: the tile a
//! staged load (`emit::staged`) gives in the next iteration is copied into the ring's other
//! buffer while this iteration's tensor cores and the code between them run, so a loop
//! waits for copies issued an iteration ago instead of for global memory's latency at every
//! step (attention reads a key and a value tile per step; without the ring each step
//! waits for both in turn).
//!
//! A loop qualifies when its body (no `break` or `continue` anywhere in it) has a staged
//! load among its statements that exactly one `mma` reads, that `mma` also one of its
//! statements and one that takes `wgmma` (`emit::wgmma_mma`), and the load's tile index is
//! computed from the counter and values from outside the loop by operations that cannot
//! trap (so computing the next iteration's index early is harmless). Then, per such load:
//!
//! * two buffers are reserved in shared memory, each the [`SwizzledTile`] the `wgmma` reads,
//!   one after the other (a multiple of 1024 bytes apart, so both keep the swizzle);
//! * before the loop, the tile for the first iteration is copied into buffer 0, one
//!   `cp.async` group per ring;
//! * at its `mma` in iteration `i`: wait until at most `rings - 1` groups are pending (the
//!   rings' groups are committed in the body's order, so that is this ring's copy from an
//!   iteration ago), make the copies visible to the tensor cores (`fence.proxy.async`), meet
//!   the block at a barrier (after which nobody reads the other buffer: last iteration's
//!   `wgmma`s were waited for), copy the tile of iteration `i + 1`, if there is one, into
//!   buffer `(i + 1) % 2` and commit a group (empty at the end, so that every iteration
//!   commits as many), then read buffer `i % 2`;
//! * after the loop, every copy is waited for.
//!
//! The copies are those `emit::staged` makes (`cp.async` where the tile is inside and
//! aligned, registers otherwise), so the bytes the `wgmma`s read are the same as without the
//! ring and the results stay bit for bit the interpreter's.
//!
//! **By the tensor memory accelerator.** Where a tensor map can describe the load's tensor
//! ([`crate::TensorFacts::tensor_map`]), its view is a plain tiled one whose tile is one
//! `[rows, cols]` matrix (every other axis 1, `rows` a multiple of 8 up to 256, `cols` a
//! multiple of 64) and its padding is `+0` (what TMA reads outside the tensor), one thread
//! copies the tile instead: one box of 64 columns per 128-byte panel of the
//! [`SwizzledTile`] (the same bytes, swizzled by the copy as the descriptors read them),
//! counted on the buffer's *full* mbarrier, which every thread waits on before its `mma`
//! reads the buffer (phase `(i / 2) % 2` in iteration `i`). The mbarriers are set up
//! before the loop (and invalidated after it, so that a loop run again starts in phase 0).
//! No thread computes addresses, tests the tile's edges or fences the copies for the
//! tensor cores (the copies are in their proxy already), and the copy runs while the
//! thread that started it goes on. Before a buffer is refilled, everyone must be done
//! reading it:
//!
//! * in a block of one warpgroup, the block meets at a barrier once an iteration, at the
//!   first such ring's `mma`, and thread 0 refills every ring's other buffer with iteration
//!   `i + 1`'s tile there (all of them were read in the iteration before), so later rings'
//!   next tiles start early too;
//! * in a block of several whose loop a producer warpgroup copies for (`emit::producer`:
//!   a top-level loop whose bounds and tile indices the producer can compute again), the
//!   producer waits on the buffer's *empty* mbarrier, on which lane 0 of every consumer
//!   warp arrives right after the `wgmma`s that read the buffer were waited for, and
//!   refills it;
//!   the consumers only wait on full mbarriers and arrive on empty ones
//!   ([`Release::Producer`]);
//! * in any other block of several, nobody waits for anybody: both buffers are filled
//!   before the loop, and each has a count of the warps done with it (a `U32` in shared
//!   memory, [`Release::Counted`]). Right
//!   after the `wgmma`s that read a buffer are waited for, lane 0 of each warp adds one to
//!   its count (acquire-release at block scope: the last adder's copy follows every warp's
//!   reads); the warp that finds every other warp counted resets the count and copies
//!   the tile two iterations on into the buffer (`release_ring_buffer`). The warpgroups
//!   never meet in the loop, and no thread stops for the others' reads (before 2026-12-06
//!   thread 0 waited on an *empty* mbarrier per buffer before refilling it, which tied its
//!   warpgroup to the slowest warp of the block; a product deferred to the next iteration,
//!   `emit::deferred`, releases its buffers there).
//!
//! (On the H100, attention with 128-row blocks of two warpgroups took 2-4% less time with
//! the empty mbarriers than with the barrier; 64-row blocks of one took 5-7% more, with
//! lane 0 of each warp arriving or every thread alike. Counted buffers in blocks of one
//! warpgroup too were slower again on 2026-12-07: 64x64 attention 2.59 against 2.24 ms at
//! base clocks, 156 registers against 160; causal 64x64 needed 173 registers, two blocks
//! per multiprocessor, 1.41 against 1.13 ms at real clocks. A `wgmma` meets its
//! warpgroup's warps anyway, so the barrier costs a block of one little.)

use cuprum_ir::{
    BinaryOp, CmpOp, MbarrierOp, ScalarType, Stmt, Swizzle, TensorMapRef, TmaOp, Value,
};
use cuprum_tile_ir::{Block, Op, Stmt as TStmt, TileValue, View};

use super::scratch::Claim;
use super::staged::Dest;
use super::wgmma_mma::{SWIZZLE_ALIGN, SwizzledTile};
use super::{Emitter, Lv, R};

/// The most shared memory a loop's rings may take (of the 227 KiB a block may have), so
/// that they do not push the scratch past what a block has.
const RING_BUDGET: u32 = 160 * 1024;

/// Columns of one box of a tensor-memory-accelerator ring: one 128-byte swizzled panel of
/// 16-bit elements.
const BOX_COLUMNS: u32 = 64;
/// The most rows of a box.
const MAX_BOX_ROWS: u32 = 256;
/// Rows of the 128-byte swizzle's period: a panel of a multiple of them starts where the
/// swizzle does.
const SWIZZLE_ROWS: u32 = 8;
/// Threads of a warp, and of a warpgroup.
const WARP: u32 = 32;
const WARPGROUP_THREADS: u32 = cuprum_ir::wgmma::WARPGROUP_THREADS;
/// Bytes of one mbarrier.
const MBARRIER_BYTES: u32 = 8;
/// A tensor-memory-accelerator ring's 8-byte slots: a full mbarrier per buffer, then a
/// count per buffer of the warps done with it (blocks of several warpgroups).
const RING_BARRIERS: u32 = 4;

/// A staged load a ring can copy, before its buffers are reserved.
#[derive(Clone, Debug)]
pub(super) struct RingCandidate {
    pub(super) load: TileValue,
    rows: u32,
    cols: u32,
    /// What computes its tile index from the counter ([`Ring::index_defs`]).
    index_defs: Vec<(TileValue, Op)>,
    /// The values from outside the loop those statements read.
    pub(super) outside: Vec<TileValue>,
    /// The tensor parameter the tensor memory accelerator copies from, if it can.
    pub(super) tma: Option<u32>,
}

/// One staged load's ring.
#[derive(Clone, Debug)]
pub(super) struct Ring {
    pub(super) load: TileValue,
    /// Its tile in buffer 0 (buffer 1 is `distance` bytes further).
    pub(super) tile: SwizzledTile,
    pub(super) distance: u32,
    /// The statements of the body that compute the load's tile index from the counter, in
    /// order.
    index_defs: Vec<(TileValue, Op)>,
    /// Copied by the tensor memory accelerator (see the module docs); `cp.async` if `None`.
    pub(super) tma: Option<TmaCopy>,
}

/// How a ring's tiles are copied by the tensor memory accelerator.
#[derive(Clone, Copy, Debug)]
pub(super) struct TmaCopy {
    /// The kernel IR parameter of the load's tensor map.
    map: u32,
    /// The full mbarriers (buffer 0's first), then the counts.
    bars: Claim,
    /// Bytes of one tile (what each buffer's mbarrier counts).
    bytes: u32,
    /// How a buffer is known to be free for its refill (see the module docs).
    pub(super) release: Release,
}

/// How a tensor-memory-accelerator ring's buffer is released and refilled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Release {
    /// The block meets at a barrier once an iteration, where thread 0 refills (a block of
    /// one warpgroup).
    BlockBarrier,
    /// Each warp counts itself done with the buffer; the last one refills it.
    Counted,
    /// Each consumer warp arrives on the buffer's *empty* mbarrier; the producer warpgroup
    /// (`emit::producer`) waits on it and refills.
    Producer,
}

impl TmaCopy {
    /// Whether each warp releases a buffer on its own, right after the `wgmma`s that read
    /// it were waited for (rather than at a block barrier).
    pub(super) fn per_warp(&self) -> bool {
        self.release != Release::BlockBarrier
    }
}

/// The rings of the loop being emitted, with this iteration's state.
#[derive(Clone, Debug)]
pub(super) struct RingFrame {
    counter: TileValue,
    rings: Vec<Ring>,
    /// `U32`: this iteration's buffer (0 or 1).
    pub(super) parity: Value,
    /// `U32`: the phase of this iteration's buffer's mbarriers that its copy completes (0
    /// or 1: iteration `i`'s is `(i / 2) % 2`).
    phase: Value,
    /// The next iteration's counter, and whether there is one (`Bool`).
    pub(super) next: Value,
    pub(super) more: Value,
    /// The loop's step and end.
    step: Value,
    end: Value,
    /// Whether this iteration's refill of the block-barrier TMA rings has been emitted (at
    /// the first of their `mma`s, for all of them).
    refilled: bool,
}

impl Emitter<'_> {
    /// The rings of `for counter in .. { body }` (see the module docs), their buffers
    /// reserved; none where the loop does not qualify.
    pub(super) fn plan_rings(&mut self, counter: TileValue, body: &Block) -> R<Vec<Ring>> {
        let candidates = self.ring_candidates(counter, body, &|e: &Self, v| e.get(v).is_ok())?;
        let release = if self.plan.threads > WARPGROUP_THREADS {
            Release::Counted
        } else {
            Release::BlockBarrier
        };
        self.reserve_rings(candidates, release)
    }

    /// The staged loads of `for counter in .. { body }` that a ring can copy (see the module
    /// docs), when their tile indices read, besides the counter, only values `defined` says
    /// are defined before the loop; none where the loop does not qualify or the rings would
    /// not fit [`RING_BUDGET`].
    pub(super) fn ring_candidates(
        &self,
        counter: TileValue,
        body: &Block,
        defined: &dyn Fn(&Self, TileValue) -> bool,
    ) -> R<Vec<RingCandidate>> {
        // Rings feed `wgmma`s only: nothing to look at for other devices.
        if !self.hopper {
            return Ok(Vec::new());
        }
        let mut leaves = false;
        body.visit(&mut |s| {
            leaves |= matches!(s, TStmt::Break { .. } | TStmt::Continue { .. });
        });
        if leaves {
            return Ok(Vec::new());
        }
        // The body's own wgmmas and the tiles they read.
        let mut tiles = Vec::new();
        for s in &body.stmts {
            if let TStmt::Def {
                value,
                op: Op::Mma { a, b, acc },
            } = s
                && let Some(choice) = self.wgmma_choice(*value, *a, *b, *acc)?
            {
                tiles.extend(choice.tiles);
            }
        }
        let mut candidates = Vec::new();
        for (at, s) in body.stmts.iter().enumerate() {
            let TStmt::Def {
                value,
                op: Op::Load { view, .. },
            } = s
            else {
                continue;
            };
            let Some(&(_, rows, cols)) = tiles.iter().find(|t| t.0 == *value) else {
                continue;
            };
            if tiles.iter().filter(|t| t.0 == *value).count() != 1 || self.staging_mmas(*value) != 1
            {
                continue;
            }
            let index = match view {
                View::Tiled { index, .. } | View::Permuted { index, .. } => index.clone(),
                View::Own { .. } => continue,
            };
            let Some(found) = index_defs(&body.stmts[..at], counter, &index) else {
                continue;
            };
            // The rest must be defined before the loop (not carried by it).
            if found.outside.iter().any(|&v| !defined(self, v)) {
                continue;
            }
            candidates.push(RingCandidate {
                load: *value,
                rows,
                cols,
                index_defs: found.defs,
                outside: found.outside.into_iter().collect(),
                tma: self.tma_tensor(*value, rows, cols)?,
            });
        }
        let total: u32 = candidates
            .iter()
            .map(|c| 2 * SwizzledTile::bytes(c.rows, c.cols) + RING_BARRIERS * MBARRIER_BYTES)
            .sum();
        if total > RING_BUDGET {
            return Ok(Vec::new());
        }
        Ok(candidates)
    }

    /// The rings of `candidates`, their buffers reserved in shared memory; the
    /// tensor-memory-accelerator ones released as `release` says.
    pub(super) fn reserve_rings(
        &mut self,
        candidates: Vec<RingCandidate>,
        release: Release,
    ) -> R<Vec<Ring>> {
        let mut rings = Vec::with_capacity(candidates.len());
        for c in candidates {
            let bytes = SwizzledTile::bytes(c.rows, c.cols);
            let bars = if c.tma.is_some() {
                RING_BARRIERS * MBARRIER_BYTES
            } else {
                0
            };
            let claim = self.reserve_shared(2 * bytes + bars, SWIZZLE_ALIGN)?;
            let tile = SwizzledTile::new(claim.part(0, bytes), c.rows, c.cols)
                .ok_or_else(|| self.internal("a ring's tile no swizzle takes"))?;
            let tma = match c.tma {
                Some(param) => Some(TmaCopy {
                    map: self.tensor_map_param(param, [BOX_COLUMNS, c.rows], Swizzle::B128)?,
                    bars: claim.part(2 * bytes, bars),
                    bytes: c.rows * c.cols * 2,
                    release,
                }),
                None => None,
            };
            rings.push(Ring {
                load: c.load,
                tile,
                distance: bytes,
                index_defs: c.index_defs,
                tma,
            });
        }
        Ok(rings)
    }

    /// The tensor parameter of staged load `load` (a `[rows, cols]` tile of 16-bit
    /// elements) if a tensor-memory-accelerator ring can copy its tiles (see the module
    /// docs); `None` otherwise.
    fn tma_tensor(&self, load: TileValue, rows: u32, cols: u32) -> R<Option<u32>> {
        let Some(Op::Load {
            view: View::Tiled { tensor, .. },
            padding,
        }) = self.defs.get(&load)
        else {
            return Ok(None);
        };
        let ty = self.elem(load)?;
        let zero_padding = padding.to_constant(ty).is_some_and(|c| c.bits == 0);
        let shape = self.shape(load)?;
        let rank = shape.len();
        let one_matrix = (2..=cuprum_ir::tma::MAX_RANK).contains(&rank)
            && shape[..rank - 2].iter().all(|&n| n == 1)
            && shape[rank - 2..] == [rows, cols];
        let fits = ty.size_bytes() == 2
            && rows.is_multiple_of(SWIZZLE_ROWS)
            && rows <= MAX_BOX_ROWS
            && cols.is_multiple_of(BOX_COLUMNS);
        let mappable = self.tensor(*tensor)?.facts.tensor_map;
        Ok((zero_padding && one_matrix && fits && mappable).then_some(*tensor))
    }

    /// Runs `f(tma, buffer, full)` for both buffers of each tensor-memory-accelerator ring
    /// of `rings` (`buffer` a `U32` constant, `full` its full mbarrier's address).
    pub(super) fn each_ring_buffer(
        &mut self,
        rings: &[Ring],
        mut f: impl FnMut(&mut Self, TmaCopy, Value, Value) -> R<()>,
    ) -> R<()> {
        for tma in rings.iter().filter_map(|r| r.tma) {
            for buffer in 0..2 {
                let b = self.u32c(buffer);
                let full = self.ring_barrier(tma, b)?;
                f(self, tma, b, full)?;
            }
        }
        Ok(())
    }

    /// The shared address (`U32`) of `tma`'s full mbarrier of buffer `buffer` (`U32`, 0 or
    /// 1).
    fn ring_barrier(&mut self, tma: TmaCopy, buffer: Value) -> R<Value> {
        self.shared_addr(tma.bars, buffer, ScalarType::U64)
    }

    /// The shared address (`U32`) of the count of warps done with `tma`'s buffer `buffer`
    /// (`U32`), in rings released by every warp (see the module docs): a `U32` in the
    /// slot after the full mbarriers.
    fn ring_release_count(&mut self, tma: TmaCopy, buffer: Value) -> R<Value> {
        let two = self.u32c(2);
        let at = self.add(buffer, two)?;
        self.shared_addr(tma.bars, at, ScalarType::U64)
    }

    /// The shared address (`U32`) of the *empty* mbarrier of `tma`'s buffer `buffer` (`U32`)
    /// in a ring a producer warpgroup refills (`emit::producer`): the slot a counted ring keeps
    /// its count in.
    pub(super) fn ring_empty_barrier(&mut self, tma: TmaCopy, buffer: Value) -> R<Value> {
        self.ring_release_count(tma, buffer)
    }

    /// Sets the count of buffer `buffer` (`U32`) of a counted ring to zero (before its loop,
    /// and after it, so that a loop run again starts counting afresh); nothing for others.
    fn reset_release_count(&mut self, tma: TmaCopy, buffer: Value) -> R<()> {
        if tma.release == Release::Counted {
            let count = self.ring_release_count(tma, buffer)?;
            let zero = self.u32c(0);
            self.push(Stmt::Store {
                space: cuprum_ir::AddressSpace::Shared,
                addr: count,
                value: zero,
            });
        }
        Ok(())
    }

    /// How many operands of `mma`s anywhere in the kernel are `load`'s tile.
    fn staging_mmas(&self, load: TileValue) -> usize {
        let mut count = 0;
        self.kernel.body.visit(&mut |s| {
            if let TStmt::Def {
                op: Op::Mma { a, b, .. },
                ..
            } = s
            {
                count += [(false, *a), (true, *b)]
                    .into_iter()
                    .filter(|&(is_b, v)| self.staged_origin(is_b, v).map(|o| o.0) == Some(load))
                    .count();
            }
        });
        count
    }

    /// Before the loop (whose counter runs from `start` while below `end`): each ring's
    /// first tile into buffer 0, one group per `cp.async` ring; the mbarriers of the others
    /// set up, and their first copies started if the loop runs at all.
    pub(super) fn prime_rings(
        &mut self,
        rings: &[Ring],
        counter: TileValue,
        [start, end, step]: [Value; 3],
    ) -> R<()> {
        if rings.iter().any(|r| r.tma.is_some()) {
            let zero = self.u32c(0);
            let first = self.cmp(CmpOp::Eq, self.tid(), zero)?;
            let runs = self.cmp(CmpOp::Lt, start, end)?;
            // The second tile, where rings whose buffers the last warp done with them
            // refills copy two ahead.
            let (second, two) = self.counter_after(start, [step, end])?;
            self.if_(first, |e| {
                e.each_ring_buffer(rings, |e, tma, b, full| {
                    let one = e.u32c(1);
                    e.mbarrier(MbarrierOp::Init, full, Some(one))?;
                    e.reset_release_count(tma, b)
                })?;
                // The copies' completions come from the async proxy.
                e.push(Stmt::FenceProxyAsync {
                    space: cuprum_ir::ProxyFenceSpace::SharedCta,
                });
                e.if_(runs, |e| {
                    for ring in rings.iter().filter(|r| r.tma.is_some()) {
                        let zero = e.u32c(0);
                        e.copy_ring_tile(ring, counter, start, ring.tile, zero)?;
                    }
                    Ok(())
                })?;
                e.if_(two, |e| {
                    for ring in rings
                        .iter()
                        .filter(|r| r.tma.is_some_and(|t| t.release == Release::Counted))
                    {
                        let one = e.u32c(1);
                        let distance = e.u32c(ring.distance);
                        let tile = ring.tile.at(distance);
                        e.copy_ring_tile(ring, counter, second, tile, one)?;
                    }
                    Ok(())
                })
            })?;
            // Nobody waits on a barrier before it is set up.
            self.barrier();
        }
        for ring in rings.iter().filter(|r| r.tma.is_none()) {
            let zero = self.u32c(0);
            self.copy_ring_tile(ring, counter, start, ring.tile, zero)?;
            self.push(Stmt::CpAsyncCommit);
        }
        Ok(())
    }

    /// The counter one `step` after `c` and whether the loop runs it (`Bool`: below `end`,
    /// and not wrapped past the type's range).
    fn counter_after(&mut self, c: Value, [step, end]: [Value; 2]) -> R<(Value, Value)> {
        let next = self.add(c, step)?;
        let below = self.cmp(CmpOp::Lt, next, end)?;
        let forward = self.cmp(CmpOp::Gt, next, c)?;
        Ok((next, self.bin(BinaryOp::And, below, forward)?))
    }

    /// At the top of an iteration with counter `c`: this iteration's buffer and phase and
    /// the next counter, kept for the rings' `mma`s. `parity` and `phase` are the rings'
    /// variables (0 before the loop), advanced here: the buffer flips every iteration, the
    /// phase every second one.
    pub(super) fn enter_rings(
        &mut self,
        counter: TileValue,
        rings: Vec<Ring>,
        [c, step, end]: [Value; 3],
        [parity, phase]: [cuprum_ir::Var; 2],
    ) -> R<()> {
        let p = self.read(parity)?;
        let one = self.u32c(1);
        let flipped = self.bin(BinaryOp::Xor, p, one)?;
        self.write(parity, flipped);
        let ph = self.read(phase)?;
        let next_phase = self.bin(BinaryOp::Xor, ph, p)?;
        self.write(phase, next_phase);
        let (next, more) = self.counter_after(c, [step, end])?;
        self.ring_frames.push(RingFrame {
            counter,
            rings,
            parity: p,
            phase: ph,
            next,
            more,
            step,
            end,
            refilled: false,
        });
        Ok(())
    }

    /// At a `wgmma` that reads staged load `load`: if `load` has a ring in the innermost
    /// loop, waits for its tile, starts the next one's copy (see the module docs) and gives
    /// this iteration's tile.
    pub(super) fn ring_tile(&mut self, load: TileValue) -> R<Option<SwizzledTile>> {
        let Some(frame) = self.ring_frames.last().cloned() else {
            return Ok(None);
        };
        let Some(ring) = frame.rings.iter().find(|r| r.load == load).cloned() else {
            return Ok(None);
        };
        let distance = self.u32c(ring.distance);
        let this = self.mul(frame.parity, distance)?;
        let one = self.u32c(1);
        let other_parity = self.bin(BinaryOp::Xor, frame.parity, one)?;
        let other = self.mul(other_parity, distance)?;
        let next_tile = ring.tile.at(other);
        if let Some(tma) = ring.tma {
            // In a block of one warpgroup, once the block met (last iteration's readers of
            // the other buffer are done), thread 0 starts the next tile's copy into it;
            // counted rings are refilled by the last warp done with a buffer
            // (`release_ring_buffer`). Then everyone waits for this iteration's copy.
            let zero = self.u32c(0);
            let first = self.cmp(CmpOp::Eq, self.tid(), zero)?;
            let go = self.bin(BinaryOp::And, first, frame.more)?;
            if tma.release == Release::BlockBarrier && !frame.refilled {
                // The block meets once an iteration, at the first such ring's `mma`: every
                // block-barrier TMA ring's other buffer was read in the iteration before
                // (whose `wgmma`s were all waited for), so thread 0 refills them all here.
                self.barrier();
                let refilled: Vec<Ring> = frame
                    .rings
                    .iter()
                    .filter(|r| r.tma.is_some_and(|t| t.release == Release::BlockBarrier))
                    .cloned()
                    .collect();
                self.if_(go, |e| {
                    for r in &refilled {
                        let distance = e.u32c(r.distance);
                        let other = e.mul(other_parity, distance)?;
                        let tile = r.tile.at(other);
                        e.copy_ring_tile(r, frame.counter, frame.next, tile, other_parity)?;
                    }
                    Ok(())
                })?;
                if let Some(f) = self.ring_frames.last_mut() {
                    f.refilled = true;
                }
            }
            let full = self.ring_barrier(tma, frame.parity)?;
            self.mbarrier(MbarrierOp::WaitParity, full, Some(frame.phase))?;
            return Ok(Some(ring.tile.at(this)));
        }
        // The `cp.async` rings' groups are committed in the body's order, one per ring and
        // iteration.
        let copying = frame.rings.iter().filter(|r| r.tma.is_none()).count();
        let pending =
            u32::try_from(copying - 1).map_err(|_| self.internal("too many rings in one loop"))?;
        self.push(Stmt::CpAsyncWaitGroup { pending });
        self.push(Stmt::FenceProxyAsync {
            space: cuprum_ir::ProxyFenceSpace::SharedCta,
        });
        self.barrier();
        self.if_(frame.more, |e| {
            e.copy_ring_tile(&ring, frame.counter, frame.next, next_tile, other_parity)
        })?;
        self.push(Stmt::CpAsyncCommit);
        Ok(Some(ring.tile.at(this)))
    }

    /// After the `wgmma`s that read `load`'s tile from a tensor-memory-accelerator ring
    /// of the innermost loop were waited for, in a block of several warpgroups: this warp
    /// is done with this iteration's buffer, and the last warp to be refills it with the
    /// tile two iterations on, or the producer warpgroup does ([`Emitter::release_ring_buffer`]).
    pub(super) fn release_ring_tile(&mut self, load: TileValue) -> R<()> {
        let Some(frame) = self.ring_frames.last().cloned() else {
            return Ok(());
        };
        let release = frame
            .rings
            .iter()
            .find(|r| r.load == load)
            .and_then(|r| r.tma)
            .map(|t| t.release);
        match release {
            // The producer refills; nothing to compute for it here.
            Some(Release::Producer) => self.release_ring_buffer(load, frame.parity, None),
            Some(Release::Counted) => {
                let (after, more) = self.counter_after(frame.next, [frame.step, frame.end])?;
                let more = self.bin(BinaryOp::And, more, frame.more)?;
                self.release_ring_buffer(load, frame.parity, Some((after, more)))
            }
            Some(Release::BlockBarrier) | None => Ok(()),
        }
    }

    /// Warp by warp (lane 0, for the whole warp: the `wgmma` wait before this is
    /// warp-synchronous), done with buffer `buffer` (`U32`) of `load`'s ring in the
    /// innermost loop: with a producer warpgroup, an arrival on the buffer's empty mbarrier;
    /// otherwise a count of the warps done (an acquire-release add on the buffer's
    /// count, so that the last one's copy follows every warp's reads); the last one resets
    /// the count and, where `refill` says there is one (`(counter, Bool)`), copies that
    /// counter's tile into the buffer. No thread waits for the others (FlashAttention-3's
    /// producer waits on an mbarrier instead, `emit::producer`).
    pub(super) fn release_ring_buffer(
        &mut self,
        load: TileValue,
        buffer: Value,
        refill: Option<(Value, Value)>,
    ) -> R<()> {
        let Some(frame) = self.ring_frames.last().cloned() else {
            return Err(self.internal("a ring buffer released outside its loop"));
        };
        let Some((ring, tma)) = frame.rings.iter().find_map(|r| {
            r.tma
                .filter(|t| r.load == load && t.per_warp())
                .map(|t| (r.clone(), t))
        }) else {
            return Err(self.internal("a released tile without a ring of counted buffers"));
        };
        let warp = self.u32c(WARP);
        let lane = self.bin(BinaryOp::Rem, self.tid(), warp)?;
        let zero = self.u32c(0);
        let lane0 = self.cmp(CmpOp::Eq, lane, zero)?;
        if tma.release == Release::Producer {
            // Lane 0 arrives for its warp; the producer waits for every warp before it
            // refills the buffer. (Every thread arriving, the empty mbarrier counting
            // threads, took 4% longer at 128x128 attention on the H100, 2026-12-07.)
            let empty = self.ring_empty_barrier(tma, buffer)?;
            return self.if_(lane0, |e| e.mbarrier(MbarrierOp::Arrive, empty, None));
        }
        self.if_(lane0, |e| {
            let count = e.ring_release_count(tma, buffer)?;
            let one = e.u32c(1);
            let before = e.def(cuprum_ir::Op::Atomic {
                op: cuprum_ir::AtomicOp::Add,
                space: cuprum_ir::AddressSpace::Shared,
                scope: cuprum_ir::Scope::Block,
                order: cuprum_ir::MemOrder::AcqRel,
                addr: count,
                value: one,
                compare: None,
            })?;
            let last = e.u32c(e.plan.threads / WARP - 1);
            let is_last = e.cmp(CmpOp::Eq, before, last)?;
            e.if_(is_last, |e| {
                // Atomic, as every other access of the count in the loop is.
                let zero = e.u32c(0);
                e.push(Stmt::AtomicStore {
                    space: cuprum_ir::AddressSpace::Shared,
                    scope: cuprum_ir::Scope::Block,
                    order: cuprum_ir::MemOrder::Relaxed,
                    addr: count,
                    value: zero,
                });
                let Some((at, more)) = refill else {
                    return Ok(());
                };
                e.if_(more, |e| {
                    let distance = e.u32c(ring.distance);
                    let offset = e.mul(buffer, distance)?;
                    let tile = ring.tile.at(offset);
                    e.copy_ring_tile(&ring, frame.counter, at, tile, buffer)
                })
            })
        })
    }

    /// Leaves the loop whose rings were entered: its copies are all waited for (every
    /// copy of a tensor-memory-accelerator ring was, in the iteration that read it), and
    /// the mbarriers invalidated once nobody waits on them any more.
    pub(super) fn leave_rings(&mut self, rings: &[Ring]) -> R<()> {
        if let Some(frame) = self.ring_frames.pop() {
            for ring in &frame.rings {
                self.copy_patterns.remove(&ring.load);
            }
        }
        if rings.iter().any(|r| r.tma.is_none()) {
            self.push(Stmt::CpAsyncWaitAll);
        }
        if rings.iter().any(|r| r.tma.is_some()) {
            self.barrier();
            let zero = self.u32c(0);
            let first = self.cmp(CmpOp::Eq, self.tid(), zero)?;
            self.if_(first, |e| {
                e.each_ring_buffer(rings, |e, tma, b, full| {
                    e.mbarrier(MbarrierOp::Inval, full, None)?;
                    if tma.release == Release::Producer {
                        let empty = e.ring_empty_barrier(tma, b)?;
                        e.mbarrier(MbarrierOp::Inval, empty, None)?;
                    }
                    // (A deferred product's last buffer is never counted.)
                    e.reset_release_count(tma, b)
                })?;
                Ok(())
            })?;
        }
        Ok(())
    }

    /// Copies `ring`'s tile for counter value `at` into `tile`, buffer `buffer` (`U32`): its
    /// index statements emitted again with the counter at `at`, then the staged copy (before
    /// the loop, where `tile` has no buffer offset, the first, which computes the copies'
    /// pattern for the loop's) or the tensor memory accelerator's.
    pub(super) fn copy_ring_tile(
        &mut self,
        ring: &Ring,
        counter: TileValue,
        at: Value,
        tile: SwizzledTile,
        buffer: Value,
    ) -> R<()> {
        let prime = tile.offset.is_none();
        let saved: Vec<(TileValue, Option<Lv>)> = std::iter::once(counter)
            .chain(ring.index_defs.iter().map(|(v, _)| *v))
            .map(|v| (v, self.get(v).ok()))
            .collect();
        self.set(counter, Lv::Uniform(at))?;
        let mut done = Ok(());
        for (v, op) in &ring.index_defs {
            match self.op(*v, op).and_then(|lv| self.set(*v, lv)) {
                Ok(()) => {}
                Err(e) => {
                    done = Err(e);
                    break;
                }
            }
        }
        if done.is_ok() {
            done = match ring.tma {
                Some(tma) => self.tma_ring_copy(ring.load, tma, tile, buffer),
                None => self.stage_from_global(Dest::Swizzled(tile), ring.load, prime),
            };
        }
        for (v, lv) in saved {
            self.restore(v, lv);
        }
        done
    }
}

impl Emitter<'_> {
    /// The tensor memory accelerator's copy of staged load `load`'s tile (its index values
    /// set) into `tile`, counted on `tma`'s mbarrier of buffer `buffer`: one box per panel.
    /// Each coordinate is clamped to `-extent ..= size` first, which keeps it in an `i32`
    /// and a box outside the tensor outside it (all zeros either way).
    fn tma_ring_copy(
        &mut self,
        load: TileValue,
        tma: TmaCopy,
        tile: SwizzledTile,
        buffer: Value,
    ) -> R<()> {
        let Some(Op::Load { view, .. }) = self.defs.get(&load).cloned() else {
            return Err(self.internal("a ring's tile that is not a load"));
        };
        let place = self.placement(load, &view)?;
        let mut coords = Vec::with_capacity(place.origin.len());
        for (axis, (&origin, &extent)) in place.origin.iter().zip(&place.shape).enumerate().rev() {
            let size = self.tensor_dim(place.tensor, axis as u32)?;
            let low = self.i64c(-i64::from(extent));
            let c = self.bin(BinaryOp::Max, origin, low)?;
            let c = self.bin(BinaryOp::Min, c, size)?;
            coords.push(self.cast(c, ScalarType::I32)?);
        }
        let full = self.ring_barrier(tma, buffer)?;
        let bytes = self.u32c(tma.bytes);
        self.mbarrier(MbarrierOp::ArriveExpectTx, full, Some(bytes))?;
        let zero = self.u32c(0);
        let mut start = self.shared_addr(tile.claim, zero, ScalarType::U8)?;
        if let Some(offset) = tile.offset {
            start = self.add(start, offset)?;
        }
        let panels = place.shape[place.shape.len() - 1] / BOX_COLUMNS;
        for p in 0..panels {
            let off = self.u32c(p * tile.panel_bytes());
            let dst = self.add(start, off)?;
            let mut at = coords.clone();
            let columns = self.konst(cuprum_ir::Constant::i32((p * BOX_COLUMNS) as i32));
            at[0] = self.add(coords[0], columns)?;
            self.push(Stmt::Tma(TmaOp::LoadTile {
                map: TensorMapRef::Param(tma.map),
                coords: at,
                dst,
                mbar: full,
                multicast: None,
            }));
        }
        Ok(())
    }
}

/// Whether `op` reads nothing but its operands and cannot trap, so that computing it again
/// elsewhere (a ring's next tile index, the producer warpgroup's copy of a loop's bounds) gives
/// the same value and no new failure.
pub(super) fn computable_ahead(op: &Op) -> bool {
    match op {
        Op::Binary(b, ..) => !matches!(b, BinaryOp::Div | BinaryOp::Rem),
        Op::Const { .. }
        | Op::ConstParam(_)
        | Op::Param(_)
        | Op::BlockId(_)
        | Op::NumBlocks(_)
        | Op::TensorDim { .. }
        | Op::Cast { .. }
        | Op::Unary(..)
        | Op::Compare(..)
        | Op::Select { .. }
        | Op::Reshape { .. }
        | Op::Broadcast { .. } => true,
        _ => false,
    }
}

/// What computes some values from statements of a block: its definitions (in order) and
/// the values from outside them they read (a ring's tile index: from the loop's counter and
/// values from before the loop).
pub(super) struct Definitions {
    pub(super) defs: Vec<(TileValue, Op)>,
    pub(super) outside: std::collections::HashSet<TileValue>,
}

/// The statements among `before` that compute `index` from `counter`, when they are all
/// operations on rank-0 values that cannot trap; `None` otherwise.
fn index_defs(before: &[TStmt], counter: TileValue, index: &[TileValue]) -> Option<Definitions> {
    let mut found = definitions_of(before, index.iter().copied(), |_, op| computable_ahead(op))?;
    found.outside.remove(&counter);
    Some(found)
}

/// The definitions among `before` (statements of one block) that `needed` depend on, in
/// order, and the values they read that `before` does not define; `None` when one of them is
/// not a plain definition `accept` takes (a branch's or an inner loop's result, say).
pub(super) fn definitions_of(
    before: &[TStmt],
    needed: impl IntoIterator<Item = TileValue>,
    accept: impl Fn(TileValue, &Op) -> bool,
) -> Option<Definitions> {
    let mut needed: std::collections::HashSet<TileValue> = needed.into_iter().collect();
    let mut out = Vec::new();
    for s in before.iter().rev() {
        let TStmt::Def { value, op } = s else {
            let results = match s {
                TStmt::If { results, .. }
                | TStmt::For { results, .. }
                | TStmt::Loop { results, .. }
                | TStmt::ForTiles { results, .. } => results.as_slice(),
                _ => &[],
            };
            if results.iter().any(|r| needed.contains(r)) {
                return None;
            }
            continue;
        };
        if !needed.remove(value) {
            continue;
        }
        if !accept(*value, op) {
            return None;
        }
        needed.extend(op.operands());
        out.push((*value, op.clone()));
    }
    out.reverse();
    Some(Definitions {
        defs: out,
        outside: needed,
    })
}
