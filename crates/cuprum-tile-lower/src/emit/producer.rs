//! A producer warpgroup for the tensor-memory-accelerator rings of a kernel's main loops
//! (FlashAttention-3's and cuDNN's structure), in blocks of several warpgroups on compute
//! capability 9.0.
//!
//! Without it, each warp counts itself done with a ring buffer (an acquire-release atomic
//! add, which ptxas turns into a fence, a warp vote and a shuffle) and the last one copies
//! the next tile (`ring`, `Release::Counted`): about a fifth of attention's loop on the H100.
//! With it, the block gets one more warpgroup, whose thread `threads` (the first past the
//! consumers) does nothing but copy: per iteration and ring, it waits on the buffer's
//! *empty* mbarrier until every consumer warp has arrived on it (one `mbarrier.arrive` by
//! its lane 0, right after the `wgmma`s that read the buffer were waited for), then starts
//! the copy of the tile into it, counted on its *full* mbarrier, as before. The consumers
//! only wait on full mbarriers and arrive on empty ones; nobody else waits for anybody. A
//! whole warpgroup, not a warp, because ptxas allocates a `wgmma` kernel's registers for
//! whole warpgroups and `setmaxnreg` moves them between whole warpgroups: the producer
//! keeps [`PRODUCER_REGISTERS`] and the consumers get the rest of the register file (one
//! block per multiprocessor; [`Emitter::producer_registers`]).
//!
//! Measured (H100, 2026-12-07, `tile_bench`'s attention, batch 4, 32 heads, sequence 4096,
//! head 128, 128x128 tiles, ncu at base clocks): 2.35 -> 2.01 ms (SDPA 1.92 in the same
//! call), causal 1.34 -> 1.21 ms (SDPA 1.11); with every consumer thread arriving (the
//! empty mbarrier counting threads) 2.09 and 1.27 ms, a warp's step of the key loop about
//! 2,610 cycles against 2,953 before, 471 instructions (cuDNN's kernel: 2,635 cycles, 576
//! instructions).
//!
//! A loop qualifies ([`Emitter::plan_producer`]) when it is among the body's top-level
//! statements, its rings (`ring`) are all copied by the tensor memory accelerator, no
//! statement up to its end can return, and its bounds and its rings' tile indices are
//! computed from the counter and top-level, rank-0 definitions before it (its *slice*) that
//! read nothing but their operands. The producer computes the slice again itself (an integer
//! division's check traps there exactly where it traps in the consumers).
//!
//! The code: at the kernel's start thread 0 sets up a *start* mbarrier, the whole block
//! meets at barrier 0, and the producer warpgroup leaves the consumers' code; its thread
//! `threads` runs the copies of every qualifying loop in turn. At each such loop the
//! consumers reserve the rings' buffers as any loop does (after a barrier: nobody reads what
//! was there), thread 0 sets up their mbarriers and arrives on the start mbarrier, after
//! which the producer copies (the loop's `k`-th phase of it: loops run once each, in
//! order). After the loop the buffers are free again once the consumers have met (every
//! copy was waited for). The consumers' barriers are all named barrier [`CONSUMER_BARRIER`]
//! of `threads` threads, since the producer never reaches them. The producer's code is built
//! as the emitter reaches each loop, with what the consumers' code decided, and put in place
//! at the kernel's start at the end ([`cuprum_ir::KernelBuilder::insert_at_top`]).

use cuprum_ir::{BinaryOp, CmpOp, MbarrierOp, ScalarType, Stmt, Value};
use cuprum_tile_ir::{Op, Stmt as TStmt, TileValue};

use super::ring::{Release, Ring, RingCandidate, computable_ahead, definitions_of};
use super::scratch::Claim;
use super::{Emitter, Lv, R};
use crate::plan::Repr;

/// The named barrier the consumers meet at while a producer warpgroup runs.
pub(super) const CONSUMER_BARRIER: u32 = 1;
/// Threads of the producer warpgroup (`setmaxnreg` gives registers to whole warpgroups,
/// and ptxas allocates a `wgmma` kernel's registers for whole ones).
pub(super) const PRODUCER_THREADS: u32 = cuprum_ir::wgmma::WARPGROUP_THREADS;
/// Registers of a multiprocessor, and the most a thread may ask for with `setmaxnreg`.
const REGISTER_FILE: u32 = 65536;
const MAX_THREAD_REGISTERS: u32 = 256;
/// Registers per thread the producer warpgroup keeps (`setmaxnreg.dec`): its copies' index
/// arithmetic needs few, and the consumers get the rest.
const PRODUCER_REGISTERS: u32 = 40;
/// Threads of a warp.
const WARP: u32 = 32;
/// The most threads of a block.
const MAX_BLOCK_THREADS: u32 = 1024;
/// Bytes (and alignment) of one mbarrier.
const MBARRIER_BYTES: u32 = 8;

/// The loops a producer warpgroup copies for, and its code so far.
#[derive(Clone, Debug)]
pub(super) struct Producer {
    loops: Vec<ProducedLoop>,
    /// The start mbarrier (see the module docs).
    start: Claim,
    /// The kernel's top-level statement before which the producer's code goes.
    top: usize,
    /// The copying thread's code for the loops met so far.
    code: Vec<Stmt>,
    /// How many of the loops were met.
    started: u32,
}

/// One loop a producer warpgroup copies for.
#[derive(Clone, Debug)]
struct ProducedLoop {
    /// The loop's counter (which names the loop).
    counter: TileValue,
    /// The loop's place among the body's top-level statements.
    at: usize,
    /// Its rings, planned at the kernel's start (their buffers reserved at the loop).
    candidates: Vec<RingCandidate>,
    /// The top-level definitions before the loop that its bounds and rings' tile indices
    /// read, in order.
    slice: Vec<(TileValue, Op)>,
}

impl Emitter<'_> {
    /// The loops a producer warpgroup copies for (see the module docs), its start mbarrier
    /// reserved; `None` where none qualifies.
    pub(super) fn plan_producer(&mut self) -> R<Option<Producer>> {
        let threads = self.plan.threads;
        if !self.hopper
            || threads <= cuprum_ir::wgmma::WARPGROUP_THREADS
            || threads + PRODUCER_THREADS > MAX_BLOCK_THREADS
        {
            return Ok(None);
        }
        let stmts = &self.kernel.body.stmts;
        let mut loops = Vec::new();
        let mut before = std::collections::HashSet::new();
        for (at, s) in stmts.iter().enumerate() {
            if may_return(s) {
                break;
            }
            if let TStmt::Def { value, .. } = s {
                before.insert(*value);
            }
            let TStmt::For {
                counter,
                start,
                end,
                step,
                body,
                ..
            } = s
            else {
                continue;
            };
            let candidates = self.ring_candidates(*counter, body, &|_, v| before.contains(&v))?;
            if candidates.is_empty() || candidates.iter().any(|c| c.tma.is_none()) {
                continue;
            }
            let needed = [*start, *end, *step]
                .into_iter()
                .chain(candidates.iter().flat_map(|c| c.outside.iter().copied()));
            let Some(slice) = self.producer_slice(&stmts[..at], needed)? else {
                continue;
            };
            loops.push(ProducedLoop {
                counter: *counter,
                at,
                slice,
                candidates,
            });
        }
        if loops.is_empty() {
            return Ok(None);
        }
        let top = self.b.top_len();
        let start = self.reserve_shared_unsynced(MBARRIER_BYTES, MBARRIER_BYTES)?;
        Ok(Some(Producer {
            loops,
            start,
            top,
            code: Vec::new(),
            started: 0,
        }))
    }

    /// The definitions among `before` (top-level statements) that compute `needed`, in
    /// order, when they are all rank-0, uniform operations on their operands (or an integer
    /// division, whose check the consumers make too); `None` otherwise.
    fn producer_slice(
        &self,
        before: &[TStmt],
        needed: impl IntoIterator<Item = TileValue>,
    ) -> R<Option<Vec<(TileValue, Op)>>> {
        let mut uniform = std::collections::HashSet::new();
        for s in before {
            if let TStmt::Def { value, .. } = s
                && self.shape(*value)?.is_empty()
                && matches!(self.plan.repr(*value), Some(Repr::Uniform))
            {
                uniform.insert(*value);
            }
        }
        let found = definitions_of(before, needed, |value, op| {
            let division = matches!(op, Op::Binary(BinaryOp::Div | BinaryOp::Rem, ..));
            uniform.contains(&value) && (computable_ahead(op) || division)
        });
        // Everything comes from the slice: nothing from outside it.
        Ok(found.and_then(|f| f.outside.is_empty().then_some(f.defs)))
    }

    /// The loop with counter `counter`, if a producer warpgroup copies for it: its rings,
    /// their buffers reserved and their mbarriers set up, and the producer told to start
    /// (see the module docs).
    pub(super) fn start_produced_loop(&mut self, counter: TileValue) -> R<Option<Vec<Ring>>> {
        let Some(produced) = self
            .producer
            .as_ref()
            .and_then(|p| p.loops.iter().find(|l| l.counter == counter))
            .cloned()
        else {
            return Ok(None);
        };
        let rings = self.reserve_rings(produced.candidates.clone(), Release::Producer)?;
        let consumers = self.plan.threads;
        let start = self.producer_start()?;
        let zero = self.u32c(0);
        let first = self.cmp(CmpOp::Eq, self.tid(), zero)?;
        self.if_(first, |e| {
            e.each_ring_buffer(&rings, |e, tma, b, full| {
                let one = e.u32c(1);
                e.mbarrier(MbarrierOp::Init, full, Some(one))?;
                let empty = e.ring_empty_barrier(tma, b)?;
                let warps = e.u32c(consumers / WARP);
                e.mbarrier(MbarrierOp::Init, empty, Some(warps))
            })?;
            // The copies' completions come from the async proxy.
            e.push(Stmt::FenceProxyAsync {
                space: cuprum_ir::ProxyFenceSpace::SharedCta,
            });
            e.mbarrier(MbarrierOp::Arrive, start, None)
        })?;
        // Nobody waits on a barrier before it is set up.
        self.barrier();
        let code = self.block(|e| e.producer_loop(&produced, &rings))?;
        if let Some(p) = self.producer.as_mut() {
            p.code.extend(code.stmts);
            p.started += 1;
        }
        Ok(Some(rings))
    }

    /// The shared address (`U32`) of the producer's start mbarrier.
    fn producer_start(&mut self) -> R<Value> {
        let Some(claim) = self.producer.as_ref().map(|p| p.start) else {
            return Err(self.internal("a producer warpgroup's start without its plan"));
        };
        let zero = self.u32c(0);
        self.shared_addr(claim, zero, ScalarType::U64)
    }

    /// At the end of the kernel, where a producer warpgroup copies: the start mbarrier's set-up,
    /// the block's meeting and the producer warpgroup's code, put at the kernel's start.
    pub(super) fn finish_producer(&mut self) -> R<()> {
        let Some(p) = self.producer.clone() else {
            return Ok(());
        };
        let consumers = self.plan.threads;
        let split = self.block(|e| {
            let start = e.producer_start()?;
            let zero = e.u32c(0);
            let first = e.cmp(CmpOp::Eq, e.tid(), zero)?;
            e.if_(first, |e| {
                let one = e.u32c(1);
                e.mbarrier(MbarrierOp::Init, start, Some(one))
            })?;
            // The whole block, the producer warpgroup too: nobody waits on the start mbarrier
            // before it is set up.
            e.push(Stmt::Barrier);
            let past = e.u32c(consumers);
            let producer = e.cmp(CmpOp::Ge, e.tid(), past)?;
            e.if_(producer, |e| {
                e.push(Stmt::SetMaxNreg {
                    increase: false,
                    count: PRODUCER_REGISTERS,
                });
                let copier = e.cmp(CmpOp::Eq, e.tid(), past)?;
                e.if_(copier, |e| {
                    for s in p.code {
                        e.push(s);
                    }
                    Ok(())
                })?;
                e.push(Stmt::Return);
                Ok(())
            })?;
            let (_, registers) = Self::producer_registers(consumers);
            e.push(Stmt::SetMaxNreg {
                increase: true,
                count: registers,
            });
            Ok(())
        })?;
        self.b.insert_at_top(p.top, split.stmts);
        Ok(())
    }

    /// The copying thread's code: the slice, then per iteration of the loop and per ring,
    /// the wait for the buffer's release (from the third iteration on: the first two fill
    /// empty buffers) and the copy of the iteration's tile into it. The slice's values are
    /// the consumers' again afterwards.
    fn producer_loop(&mut self, p: &ProducedLoop, rings: &[Ring]) -> R<()> {
        let saved: Vec<(TileValue, Option<Lv>)> = p
            .slice
            .iter()
            .map(|&(v, _)| (v, self.get(v).ok()))
            .collect();
        let done = self.producer_copies(p, rings);
        for (v, lv) in saved {
            self.restore(v, lv);
        }
        done
    }

    fn producer_copies(&mut self, p: &ProducedLoop, rings: &[Ring]) -> R<()> {
        // The consumers have set the loop's mbarriers up: the start mbarrier's phase of
        // this loop (loops start in order, once each).
        let start = self.producer_start()?;
        let started = self.producer.as_ref().map_or(0, |p| p.started);
        let parity = self.u32c(started % 2);
        self.mbarrier(MbarrierOp::WaitParity, start, Some(parity))?;
        for (v, op) in &p.slice {
            let lv = self.op(*v, op)?;
            self.set(*v, lv)?;
        }
        let Some(TStmt::For {
            start, end, step, ..
        }) = self.kernel.body.stmts.get(p.at)
        else {
            return Err(self.internal("a producer warpgroup's loop that is not a `for` loop"));
        };
        let (start, end, step) = (
            self.uniform(*start)?,
            self.uniform(*end)?,
            self.uniform(*step)?,
        );
        // A step that is not positive stops the consumers (`for_stmt`); the producer then
        // copies nothing.
        let ty = self.type_of(step);
        let zero = self.konst(cuprum_ir::Constant::new(ty, 0));
        let forward = self.cmp(CmpOp::Gt, step, zero)?;
        let parity = self.var(ScalarType::U32);
        let phase = self.var(ScalarType::U32);
        let issued = self.var(ScalarType::U32);
        let zero = self.u32c(0);
        for var in [parity, phase, issued] {
            self.write(var, zero);
        }
        self.if_(forward, |e| {
            e.counted_loop(start, end, step, |e, c| {
                let b = e.read(parity)?;
                let ph = e.read(phase)?;
                let n = e.read(issued)?;
                let two = e.u32c(2);
                let refill = e.cmp(CmpOp::Ge, n, two)?;
                let one = e.u32c(1);
                // The buffer's previous tile, two iterations ago, released its phase
                // before this one's.
                let released = e.bin(BinaryOp::Xor, ph, one)?;
                for ring in rings {
                    let Some(tma) = ring.tma else {
                        return Err(e.internal("a producer warpgroup's ring without a tensor map"));
                    };
                    e.if_(refill, |e| {
                        let empty = e.ring_empty_barrier(tma, b)?;
                        e.mbarrier(MbarrierOp::WaitParity, empty, Some(released))
                    })?;
                    let distance = e.u32c(ring.distance);
                    let offset = e.mul(b, distance)?;
                    let tile = ring.tile.at(offset);
                    e.copy_ring_tile(ring, p.counter, c, tile, b)?;
                }
                let flipped = e.bin(BinaryOp::Xor, b, one)?;
                e.write(parity, flipped);
                let next_phase = e.bin(BinaryOp::Xor, ph, b)?;
                e.write(phase, next_phase);
                // Saturating: only whether two copies were made counts.
                let next = e.add(n, one)?;
                let more = e.cmp(CmpOp::Lt, n, two)?;
                let next = e.select(more, next, n)?;
                e.write(issued, next);
                Ok(())
            })
        })
    }

    /// The registers per thread of a kernel whose `consumers` threads run beside a producer
    /// warpgroup, one block per multiprocessor: the kernel's cap (the register file shared
    /// by every thread) and what the consumers take once the producer has given back all but
    /// [`PRODUCER_REGISTERS`] (`setmaxnreg` counts in multiples of 8).
    pub(super) fn producer_registers(consumers: u32) -> (u32, u32) {
        let round = |n: u32| n / 8 * 8;
        let cap = round(REGISTER_FILE / (consumers + PRODUCER_THREADS));
        let spare = REGISTER_FILE - PRODUCER_THREADS * PRODUCER_REGISTERS;
        (cap, round(spare / consumers).min(MAX_THREAD_REGISTERS))
    }

    /// The statement that meets the block's threads that run the tile code: barrier 0, or
    /// the consumers' named barrier while a producer warpgroup runs.
    pub(super) fn block_barrier(&self) -> Stmt {
        if self.producer.is_some() {
            Stmt::NamedBarrier {
                arrive: false,
                id: CONSUMER_BARRIER,
                threads: self.plan.threads,
            }
        } else {
            Stmt::Barrier
        }
    }
}

/// Whether `stmt` is a return or holds one in a nested block.
fn may_return(stmt: &TStmt) -> bool {
    let mut returns = matches!(stmt, TStmt::Return);
    for b in stmt.nested() {
        b.visit(&mut |s| returns |= matches!(s, TStmt::Return));
    }
    returns
}
