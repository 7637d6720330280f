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

use cuprum_ir::{BinaryOp, CmpOp, Stmt, Value};
use cuprum_tile_ir::{Block, Op, Stmt as TStmt, TileValue, View};

use super::staged::Dest;
use super::wgmma_mma::{SWIZZLE_ALIGN, SwizzledTile};
use super::{Emitter, Lv, R};

/// The most shared memory a loop's rings may take (of the 227 KiB a block may have), so
/// that they do not push the scratch past what a block has.
const RING_BUDGET: u32 = 160 * 1024;

/// One staged load's ring.
#[derive(Clone, Debug)]
pub(super) struct Ring {
    load: TileValue,
    /// Its tile in buffer 0 (buffer 1 is `distance` bytes further).
    tile: SwizzledTile,
    distance: u32,
    /// The statements of the body that compute the load's tile index from the counter, in
    /// order.
    index_defs: Vec<(TileValue, Op)>,
}

/// The rings of the loop being emitted, with this iteration's state.
#[derive(Clone, Debug)]
pub(super) struct RingFrame {
    counter: TileValue,
    rings: Vec<Ring>,
    /// `U32`: this iteration's buffer (0 or 1).
    parity: Value,
    /// The next iteration's counter, and whether there is one (`Bool`).
    next: Value,
    more: Value,
}

impl Emitter<'_> {
    /// The rings of `for counter in .. { body }` (see the module docs), their buffers
    /// reserved; none where the loop does not qualify.
    pub(super) fn plan_rings(&mut self, counter: TileValue, body: &Block) -> R<Vec<Ring>> {
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
            if found.outside.iter().any(|&v| self.get(v).is_err()) {
                continue;
            }
            candidates.push((*value, rows, cols, found.defs));
        }
        let total: u32 = candidates
            .iter()
            .map(|&(_, rows, cols, _)| 2 * SwizzledTile::bytes(rows, cols))
            .sum();
        if candidates.is_empty() || total > RING_BUDGET {
            return Ok(Vec::new());
        }
        let mut rings = Vec::with_capacity(candidates.len());
        for (load, rows, cols, index_defs) in candidates {
            let bytes = SwizzledTile::bytes(rows, cols);
            let claim = self.reserve_shared(2 * bytes, SWIZZLE_ALIGN)?;
            let tile = SwizzledTile::new(claim.part(0, bytes), rows, cols)
                .ok_or_else(|| self.internal("a ring's tile no swizzle takes"))?;
            rings.push(Ring {
                load,
                tile,
                distance: bytes,
                index_defs,
            });
        }
        Ok(rings)
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

    /// Before the loop: each ring's first tile (counter `start`) into buffer 0, one group
    /// per ring.
    pub(super) fn prime_rings(
        &mut self,
        rings: &[Ring],
        counter: TileValue,
        start: Value,
    ) -> R<()> {
        for ring in rings {
            self.copy_ring_tile(ring, counter, start, ring.tile, true)?;
            self.push(Stmt::CpAsyncCommit);
        }
        Ok(())
    }

    /// At the top of an iteration with counter `c`: this iteration's buffer and the next
    /// counter, kept for the rings' `mma`s. `parity` is the rings' variable (0 before the
    /// loop), flipped here.
    pub(super) fn enter_rings(
        &mut self,
        counter: TileValue,
        rings: Vec<Ring>,
        [c, step, end]: [Value; 3],
        parity: cuprum_ir::Var,
    ) -> R<()> {
        let p = self.read(parity)?;
        let one = self.u32c(1);
        let flipped = self.bin(BinaryOp::Xor, p, one)?;
        self.write(parity, flipped);
        let next = self.add(c, step)?;
        let below = self.cmp(CmpOp::Lt, next, end)?;
        let forward = self.cmp(CmpOp::Gt, next, c)?;
        let more = self.bin(BinaryOp::And, below, forward)?;
        self.ring_frames.push(RingFrame {
            counter,
            rings,
            parity: p,
            next,
            more,
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
        let pending = u32::try_from(frame.rings.len() - 1)
            .map_err(|_| self.internal("too many rings in one loop"))?;
        self.push(Stmt::CpAsyncWaitGroup { pending });
        self.push(Stmt::FenceProxyAsync {
            space: cuprum_ir::ProxyFenceSpace::SharedCta,
        });
        self.barrier();
        let distance = self.u32c(ring.distance);
        let this = self.mul(frame.parity, distance)?;
        let one = self.u32c(1);
        let other_parity = self.bin(BinaryOp::Xor, frame.parity, one)?;
        let other = self.mul(other_parity, distance)?;
        let next_tile = ring.tile.at(other);
        self.if_(frame.more, |e| {
            e.copy_ring_tile(&ring, frame.counter, frame.next, next_tile, false)
        })?;
        self.push(Stmt::CpAsyncCommit);
        Ok(Some(ring.tile.at(this)))
    }

    /// Leaves the loop whose rings were entered: its copies are all waited for.
    pub(super) fn leave_rings(&mut self) {
        if let Some(frame) = self.ring_frames.pop() {
            for ring in &frame.rings {
                self.copy_patterns.remove(&ring.load);
            }
        }
        self.push(Stmt::CpAsyncWaitAll);
    }

    /// Copies `ring`'s tile for counter value `at` into `tile`: its index statements
    /// emitted again with the counter at `at`, then the staged copy (`prime`: the first,
    /// before the loop, which computes the copies' pattern for the loop's).
    fn copy_ring_tile(
        &mut self,
        ring: &Ring,
        counter: TileValue,
        at: Value,
        tile: SwizzledTile,
        prime: bool,
    ) -> R<()> {
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
            done = self.stage_from_global(Dest::Swizzled(tile), ring.load, prime);
        }
        for (v, lv) in saved {
            self.restore(v, lv);
        }
        done
    }
}

/// What computes a ring's tile index from the loop counter: the body's statements (in
/// order) and the values from outside the loop they read.
struct IndexDefs {
    defs: Vec<(TileValue, Op)>,
    outside: Vec<TileValue>,
}

/// The statements among `before` that compute `index` from `counter`, when they are all
/// operations on rank-0 values that cannot trap; `None` otherwise.
fn index_defs(before: &[TStmt], counter: TileValue, index: &[TileValue]) -> Option<IndexDefs> {
    let mut needed: std::collections::HashSet<TileValue> = index.iter().copied().collect();
    let mut out = Vec::new();
    for s in before.iter().rev() {
        let TStmt::Def { value, op } = s else {
            // Results of a branch or an inner loop of the body: not computed ahead.
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
        if !needed.contains(value) {
            continue;
        }
        let harmless = match op {
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
        };
        if !harmless {
            return None;
        }
        needed.extend(op.operands());
        out.push((*value, op.clone()));
    }
    needed.remove(&counter);
    for (v, _) in &out {
        needed.remove(v);
    }
    out.reverse();
    Some(IndexDefs {
        defs: out,
        outside: needed.into_iter().collect(),
    })
}
