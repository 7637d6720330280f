//! A loop's last `wgmma` product issued one iteration late, after the next iteration's first
//! product, so that the tensor cores compute it while the warpgroup computes what lies
//! between the two (FlashAttention-3's overlap inside a warpgroup, as a rule of the general
//! lowering).
//!
//! Attention's key loop is, per step `j`: `s = q kⱼᵀ` (a `wgmma`), the row maxima and
//! exponentials of `s`, the output rescaled (`acc * alpha`, the first read of the carried
//! `acc`), then `acc = p vⱼ + acc` (a second `wgmma` whose accumulator is what the loop
//! carries). Issued where it stands, each product is waited for at once, so the tensor
//! cores idle while the warpgroup computes its exponentials. Deferred, step `j` runs:
//!
//! ```text
//!   issue s_j = q k_jᵀ (group);  [j > 0: issue acc += p_{j-1} v_{j-1} (group)]
//!   wait until one group is pending (s_j is done; the product runs on)
//!   row maxima, exponentials, sums           <- while the tensor cores compute p v
//!   wait for every group; [j > 0: release v_{j-1}'s buffer]; acc is read: acc * alpha ...
//!   at p vⱼ's place: keep its register A (p's fragment words) and B's first descriptor in
//!   variables the loop carries; the accumulator's variables get acc * alpha
//! after the loop: [if any step ran: issue and wait acc += p_last v_last]
//! ```
//!
//! Each output element sees the same products and sums in the same order, so the result is
//! the interpreter's bit for bit; the emulator, which performs a `wgmma` at the latest point
//! its wait allows and reports any early read of an accumulator, overwritten register `A`
//! or overwritten operand bytes, checks the schedule.
//!
//! A loop qualifies ([`Emitter::plan_deferred`]) when, among its body's top-level
//! statements (no nested loops, at most one such loop at a time), its last `mma` takes
//! `wgmma` with `A` in fragments, accumulates into a value the loop carries (its result
//! yielded there and read nowhere else, its accumulator operand not the carried value
//! itself), every tile it reads comes through a tensor-memory-accelerator ring whose
//! buffers are counted free warp by warp (blocks of several warpgroups: a buffer is refilled
//! only once the deferred product that reads it is done, never at a block barrier
//! earlier), and an earlier `mma` that takes `wgmma` stands before the carried
//! value's first read. The carried value is then read from its variables at that first read
//! (after the wait), not at the top of the body.
//!
//! Its cost is registers: `p`'s fragment words and `B`'s first descriptor live across the
//! loop's back edge (16 and 2 more at 64 keys per step; the other descriptors are the
//! first plus constants, made where the product is issued, in the uniform registers a
//! `wgmma` reads: carried, all eight took 4 more registers and 33 more instructions a step
//! of 128x128 attention in ptxas's code, 2026-12-07), which blocks of several warpgroups,
//! one per multiprocessor, have to spare; a block of one warpgroup, three per multiprocessor at
//! 160 registers, has not (measured by hand on the H100 on 2026-12-06: 171 registers, two
//! blocks per multiprocessor, slower), and keeps its products in place. Ways to make the
//! room were all slower on the H100 (2026-12-07, 64x64 tiles of the attention below, ncu at
//! base clocks; products in place with the block barrier: 2.24 ms, tensor pipe 63%):
//!
//! | one warpgroup, deferred | registers | ms |
//! |---|---:|---:|
//! | `q` in shared memory, one key buffer (1) | 139 | 2.69 |
//! | `q` in registers, two key buffers, three blocks forced (2) | 168 | 3.17 |
//! | the same with one key buffer | 167 | 3.16 |
//!
//! (1) `q kᵀ` reads both operands from shared memory; one key buffer, refilled as soon as
//! `q kᵀ` is done, so that three blocks' shared memory still fits; tensor pipe 52%,
//! short-scoreboard stalls per issue 0.33 -> 1.03. (2) `.minnctapersm 3`: 32 bytes
//! spilled. Real clocks: (1) 2.45-2.47 ms against 2.08-2.20. The code is on branch
//! `experiment/one-warpgroup-deferral`. Those 64-row blocks also read every key and value
//! tile once per block: 14.9 GB through L2 for the run, 74% of L2's peak throughput,
//! against 6.5 GB (28%) with 128-row blocks and 7.2 GB (40%) for cuDNN's kernel (76% tensor
//! pipe); the deferral's place is the blocks of several warpgroups.
//!
//! Measured (H100, 2026-12-06, `tile_bench`'s attention at batch 4, 32 heads, sequence 4096,
//! head 128): with the rings' buffers counted free warp by warp (`ring`), 128x64 tiles
//! 2.56 ms deferred against 2.65 not (real clocks), 128x128 2.51 against 2.56 ms at base
//! clocks under ncu (204 registers against 164). With thread 0 waiting on an empty mbarrier
//! before each refill, as the rings did before, deferring was slower (128x64 2.81 against
//! 2.69 ms, as the same schedule made by hand on the PTX: 2.83): that wait tied the
//! warpgroups together.
//!
//! **What ptxas makes of it** (ptxas 13, SASS read on 2026-12-07). ptxas moves a
//! `wgmma.wait_group` up towards the top of its basic block. In attention's loop the wait
//! for the deferred product shares a block with the row maxima and exponentials (the block
//! starts after the branches that release the key buffer), so the warpgroup waits for
//! `p v` *before* its exponentials: the overlap inside a warpgroup drawn above does not
//! happen, and what deferring gains comes from the products of both warpgroups being queued
//! back to back. (Nothing between the two waits touches `p v`'s registers or shared memory;
//! making `p`'s words live past the wait, or the wait unconditional, changes nothing; a wait
//! inside a branch makes ptxas serialize every `wgmma`, C7515/C7517.) A block boundary
//! between the exponentials and the wait keeps it where it stands: releasing the first
//! product's buffers just before that wait, instead of right after the first product's
//! own, does (checked in the SASS, branch `experiment/late-release`), but was slower on the
//! H100 (2026-12-07, real clocks, medians of 3 runs in one call: 128x128 tiles 2.22 ms
//! against 2.15, 128x64 2.92 against 2.54; ncu at base clocks, 128x128: 2.58 against 2.51
//! ms, tensor pipe 55.7% against 57.4%): the key buffer is refilled an exponentials' time
//! later.
//!
//! **Turns** (FlashAttention-3's ping-pong: the two warpgroups take turns at named barriers
//! to issue their products, branch `experiment/turns`) changed nothing there either (same
//! call: 128x128 2.22 ms, 128x64 2.65; under ncu 2.52 ms, tensor pipe 57.3%). ncu's stall
//! sampling of 128x128 on main says why: a warp spends about a quarter of its time on the
//! tensor cores (waiting at `WARPGROUP.DEPBAR` 12%, issuing `HGMMA` 14%) and the rest on the
//! softmax, whose 668 instructions a step run at about 0.25 per cycle; the 66 `MUFU.EX2` a
//! warp issues per step alone hold its scheduler's MUFU pipe (16 results a cycle per
//! multiprocessor) for 528 cycles, twice that with two warps per scheduler, against about
//! 2,050 cycles of tensor work per step for the multiprocessor. A warpgroup's softmax takes
//! longer than the other's products, so taking turns cannot hide it; it has to get shorter.
//!
//! **Neither the schedule nor the rings are what is missing** (H100, 2026-12-07, 128x128
//! tiles, real clocks, medians of 3 to 5 runs, each against the build it changes in the
//! same call; each on an `experiment/` branch):
//!
//! | change | ms | before ms |
//! |---|---:|---:|
//! | the wait after the exponentials (a branch before it, `boundary-hack`) | 2.22 | 2.04 |
//! | that and turns: FlashAttention-3's schedule (tensor pipe 56.6%) | 2.19 | 2.17 |
//! | a third buffer for the values (`three-stages`) | 2.17 | 2.17 |
//! | each warp's count looked at a statement later (`settle`) | 2.19 | 2.06 |
//! | no count: thread 0 refills at once (`free-release-probe`, racy) | 2.06 | 2.11 |
//! | settled after the first product's release: one softmax block (`early-settle`) | 2.08 | 2.10 |
//! | that, the warpgroups taking turns at their softmax (`critical-turns`) | 2.15 | 2.10 |
//!
//! Looking at the count later delays the refill (causal 1.38 against 1.26 ms; ncu's
//! samples of warps waiting for the value tile's copy went from 1.1% to 4.9%). The racy
//! probe bounds what a cheaper release (a producer warp's) could gain: 3% here, 10% at
//! 128x64 (2.29 against 2.55 ms). (It bounded nothing: the producer warpgroup that came
//! next, `emit::producer`, took 14% off at 128x128 (base clocks) and 20% at 128x64 (real
//! clocks), its consumers' code rid of the refills' branches as well.) ncu's samples put 30% of a warp's time on fixed-latency
//! dependencies and 17% on issuing, with two warps per scheduler; a warp issues 527
//! instructions a step, 368 of them arithmetic (`benches/ncu_stalls.py --loop`): the
//! softmax's instruction stream is the cost.
//!
//! **The peer's loop** (ncu on the H100, 2026-12-07, `benches/attention_stalls.sh`): SDPA
//! runs cuDNN's `sm90_flash_fprop_wgmma_f16_knob_7_64x128x128` kernel, two consumer
//! warpgroups of 64 rows and 128 keys a step and a producer warp (named barriers of 256 and
//! 288 threads). Its warps issue *more* per step than ours, 576 instructions against 527
//! (`x * scale` and `- max` as an `FMUL` and an `FADD` where ours is one `FFMA`), and wait
//! for every product at once (`wgmma.wait_group 0` after each, no product deferred); the
//! warpgroups take turns (`bar.sync`/`bar.arrive`) from after the row maxima to the second
//! product's issue, and a buffer is released with one predicated `mbarrier.arrive` to the
//! producer. What differs is how the softmax is scheduled: its `MUFU.EX2`s sit between the
//! other arithmetic, the output's rescale among them, and cost 5% of its samples against
//! 14% of ours, where ptxas issues them back to back after all the exponents' `FFMA`s
//! (each waiting about 7 cycles on the one before) and the rescale after them (neither the
//! PTX's order nor a single basic block, above, changes that). At base clocks a step took
//! about 2,600 cycles a warp for cuDNN and 3,000 for ours.

use cuprum_ir::wgmma::WgmmaA;
use cuprum_ir::{BinaryOp, CmpOp, ScalarType, Stmt, Value, Var};
use cuprum_tile_ir::{Block, Op, Stmt as TStmt, TileValue};

use super::ring::Ring;
use super::wgmma_mma::{ASource, WgmmaChoice};
use super::{Emitter, R};
use crate::plan::Repr;

/// A loop whose last product is deferred (see the module docs), while its body is emitted.
#[derive(Clone, Debug)]
pub(super) struct Deferred {
    /// The first product of the body, after whose issue the deferred one is issued.
    first: TileValue,
    /// The deferred product's value.
    product: TileValue,
    /// The carried value the deferred product accumulates into.
    arg: TileValue,
    /// How the deferred product takes `wgmma`.
    choice: WgmmaChoice,
    /// `U32`: 1 once an iteration has deferred its product (one is waiting to be issued).
    pending: Var,
    /// `U32`: the deferred product's register `A`, four words per 16 of `K`.
    a_words: Vec<Var>,
    /// `U64`: its `B` descriptor for the first 16 of `K`; the others are it plus
    /// `b_offsets` (made where the product is issued, so that they stay in the uniform
    /// registers the `wgmma`s read instead of being carried and moved there).
    b_first: Var,
    /// Each 16 of `K`'s descriptor less the first's ([`Emitter::descriptor_offsets`]).
    b_offsets: Vec<u64>,
    /// Whether the carried value has been read in the iteration being emitted.
    ready: bool,
}

/// The deferred product's operands, read from the loop's variables before a `wgmma.fence`.
pub(super) struct DeferredOperands {
    pending: Value,
    steps: Vec<(WgmmaA, Value)>,
    acc: Vec<Var>,
    choice: WgmmaChoice,
}

impl Emitter<'_> {
    /// Whether `for .. { body }` (carrying `args`, with `rings`) defers its last product, and
    /// the variables that carry it set up before the loop (see the module docs).
    pub(super) fn plan_deferred(
        &mut self,
        body: &Block,
        args: &[TileValue],
        rings: &[Ring],
    ) -> R<Option<Deferred>> {
        if self.deferred.is_some() {
            return Ok(None);
        }
        let mut nested_loop = false;
        body.visit(&mut |s| {
            nested_loop |= matches!(
                s,
                TStmt::For { .. } | TStmt::Loop { .. } | TStmt::ForTiles { .. }
            );
        });
        if nested_loop {
            return Ok(None);
        }
        let mmas: Vec<(usize, TileValue, [TileValue; 3])> = body
            .stmts
            .iter()
            .enumerate()
            .filter_map(|(at, s)| match s {
                TStmt::Def {
                    value,
                    op: Op::Mma { a, b, acc },
                } => Some((at, *value, [*a, *b, *acc])),
                _ => None,
            })
            .collect();
        let Some(&(last_at, deferred, [a, b, acc_in])) = mmas.last() else {
            return Ok(None);
        };
        // Its result is what the loop carries, and nothing else reads it.
        let Some(slot) = body.yields.iter().position(|&y| y == deferred) else {
            return Ok(None);
        };
        let Some(&arg) = args.get(slot) else {
            return Ok(None);
        };
        let same_registers = matches!(
            (self.plan.repr(arg), self.plan.repr(deferred)),
            (Some(Repr::Dist(x)), Some(Repr::Dist(y))) if x == y
        );
        let yielded_once = body.yields.iter().filter(|&&y| y == deferred).count() == 1;
        if !same_registers || !yielded_once || acc_in == arg || reads(body, deferred) {
            return Ok(None);
        }
        let Some(choice) = self.wgmma_choice(deferred, a, b, acc_in)? else {
            return Ok(None);
        };
        let ringed = choice.tiles.iter().all(|&(load, _, _)| {
            rings
                .iter()
                .any(|r| r.load == load && r.tma.is_some_and(|t| t.per_warp()))
        });
        if !matches!(choice.a_source, ASource::Fragments) || !ringed {
            return Ok(None);
        }
        // The carried value's first read, before the product; an earlier product before it.
        let Some(first_read) = body.stmts.iter().position(|s| stmt_reads(s, arg)) else {
            return Ok(None);
        };
        if first_read >= last_at {
            return Ok(None);
        }
        let mut early = None;
        for &(at, value, [ea, eb, eacc]) in &mmas {
            if at < first_read && self.wgmma_choice(value, ea, eb, eacc)?.is_some() {
                early = Some(value);
                break;
            }
        }
        let Some(early) = early else {
            return Ok(None);
        };
        // `B`'s descriptors: the first one carried, the others a constant from it. (`A` is
        // in fragments, so `B`'s is the only tile the product reads.)
        let Some(b_tile) = choice
            .tiles
            .first()
            .and_then(|&(load, _, _)| rings.iter().find(|r| r.load == load))
            .map(|r| r.tile)
        else {
            return Ok(None);
        };
        let ks = choice.k_steps();
        let Some(b_offsets) = Self::descriptor_offsets(b_tile, choice.b_major, &ks)
            .into_iter()
            .collect::<Option<Vec<u64>>>()
        else {
            return Ok(None);
        };
        // The variables, written before the loop (the operands are read in every
        // iteration, issued only once one is pending).
        let steps = ks.len() as u32;
        let zero32 = self.u32c(0);
        let zero64 = self.konst(cuprum_ir::Constant::u64(0));
        let fresh = |e: &mut Self, ty: ScalarType, n: u32, init: Value| {
            (0..n)
                .map(|_| {
                    let v = e.var(ty);
                    e.write(v, init);
                    v
                })
                .collect::<Vec<_>>()
        };
        let pending = fresh(self, ScalarType::U32, 1, zero32)[0];
        let a_words = fresh(self, ScalarType::U32, 4 * steps, zero32);
        let b_first = fresh(self, ScalarType::U64, 1, zero64)[0];
        Ok(Some(Deferred {
            first: early,
            product: deferred,
            arg,
            choice,
            pending,
            a_words,
            b_first,
            b_offsets,
            ready: false,
        }))
    }

    /// Whether the loop being emitted reads carried value `arg` late (it is the deferred
    /// product's accumulator): then the top of the body leaves it alone.
    pub(super) fn read_late(&self, arg: TileValue) -> bool {
        self.deferred.as_ref().is_some_and(|d| d.arg == arg)
    }

    /// At the top of an iteration: the carried value is not read yet.
    pub(super) fn deferred_iteration_starts(&mut self) {
        if let Some(d) = self.deferred.as_mut() {
            d.ready = false;
        }
    }

    /// Before statement `s`: if it (or a statement nested in it) reads the deferred
    /// product's carried value for the first time in this iteration, or leaves the loop,
    /// waits for the product, releases its buffers and reads the value from its variables.
    pub(super) fn ready_deferred(&mut self, s: &TStmt) -> R<()> {
        let Some(d) = self.deferred.as_ref() else {
            return Ok(());
        };
        if d.ready || !(s.is_terminator() || stmt_reads(s, d.arg)) {
            return Ok(());
        }
        let (arg, pending, tiles) = (d.arg, d.pending, d.choice.tiles.clone());
        let Some(vars) = self.loop_vars_of(arg) else {
            return Err(self.internal("a deferred product's carried value has no variables"));
        };
        self.push(Stmt::WgmmaWait { pending: 0 });
        let p = self.read(pending)?;
        let zero = self.u32c(0);
        let was = self.cmp(CmpOp::Ne, p, zero)?;
        // The buffers it read were the last iteration's: the last warp done with each
        // refills it with the next iteration's tile.
        self.if_(was, |e| {
            let Some(frame) = e.ring_frames.last().cloned() else {
                return Err(e.internal("a deferred product outside its ring's loop"));
            };
            let one = e.u32c(1);
            let last = e.bin(BinaryOp::Xor, frame.parity, one)?;
            for &(load, _, _) in &tiles {
                e.release_ring_buffer(load, last, Some((frame.next, frame.more)))?;
            }
            Ok(())
        })?;
        self.read_vars(&vars, arg)?;
        if let Some(d) = self.deferred.as_mut() {
            d.ready = true;
        }
        Ok(())
    }

    /// The deferred product's operands from the loop's variables, if `value` is the product
    /// after whose issue it goes (read before that product's `wgmma.fence`).
    pub(super) fn deferred_operands(&mut self, value: TileValue) -> R<Option<DeferredOperands>> {
        let Some(d) = self.deferred.clone() else {
            return Ok(None);
        };
        if d.first != value {
            return Ok(None);
        }
        self.operands_of(&d).map(Some)
    }

    fn operands_of(&mut self, d: &Deferred) -> R<DeferredOperands> {
        let Some(carried) = self.loop_vars_of(d.arg) else {
            return Err(self.internal("a deferred product's carried value has no variables"));
        };
        let order = self.accumulator_order(&d.choice)?;
        let acc = order.iter().map(|&r| carried[r]).collect();
        let pending = self.read(d.pending)?;
        let first = self.read(d.b_first)?;
        let mut steps = Vec::with_capacity(d.b_offsets.len());
        for (i, &offset) in d.b_offsets.iter().enumerate() {
            let words = d.a_words[4 * i..4 * i + 4]
                .iter()
                .map(|&w| self.read(w))
                .collect::<R<Vec<_>>>()?;
            let words: [Value; 4] = words
                .try_into()
                .map_err(|_| self.internal("a deferred A fragment of other than 4 words"))?;
            let desc = self.descriptor_plus(first, offset)?;
            steps.push((WgmmaA::Registers(words), desc));
        }
        Ok(DeferredOperands {
            pending,
            steps,
            acc,
            choice: d.choice.clone(),
        })
    }

    /// After the first product's group is committed: issues the deferred one (if one is
    /// pending) as a group of its own and waits for the first only; else waits for all.
    pub(super) fn issue_deferred_then_wait(&mut self, ops: DeferredOperands) -> R<()> {
        let zero = self.u32c(0);
        let pending = self.cmp(CmpOp::Ne, ops.pending, zero)?;
        self.if_else(
            pending,
            |e| {
                // A fence of its own: without one in the branch, ptxas inserts one there
                // and serializes every `wgmma` of the kernel (C7519).
                e.push(Stmt::WgmmaFence);
                e.push_wgmmas(&ops.choice, ops.steps, &ops.acc);
                e.push(Stmt::WgmmaCommit);
                e.push(Stmt::WgmmaWait { pending: 1 });
                Ok(())
            },
            |e| {
                e.push(Stmt::WgmmaWait { pending: 0 });
                Ok(())
            },
        )
    }

    /// If `value` is the deferred product: keeps its operands (`steps`, made by
    /// `try_wgmma`, the accumulator's variables already holding its input) for the next
    /// iteration and gives `true`; nothing is issued.
    pub(super) fn defer_product(&mut self, value: TileValue, steps: &[(WgmmaA, Value)]) -> R<bool> {
        let Some(d) = self.deferred.clone() else {
            return Ok(false);
        };
        if d.product != value {
            return Ok(false);
        }
        if steps.len() != d.b_offsets.len() {
            return Err(self.internal("a deferred product's steps changed"));
        }
        for (i, (a, desc)) in steps.iter().enumerate() {
            let WgmmaA::Registers(words) = a else {
                return Err(self.internal("a deferred product's A is not in registers"));
            };
            for (&var, &w) in d.a_words[4 * i..4 * i + 4].iter().zip(words) {
                self.write(var, w);
            }
            if i == 0 {
                self.write(d.b_first, *desc);
            }
        }
        let one = self.u32c(1);
        self.write(d.pending, one);
        Ok(true)
    }

    /// After the loop, before its results are read: the last iteration's deferred product
    /// issued and waited for (its buffers are not counted: the loop's end resets them).
    pub(super) fn finish_deferred(&mut self) -> R<()> {
        let Some(d) = self.deferred.take() else {
            return Ok(());
        };
        let ops = self.operands_of(&d)?;
        let zero = self.u32c(0);
        let pending = self.cmp(CmpOp::Ne, ops.pending, zero)?;
        self.if_(pending, |e| {
            e.push(Stmt::WgmmaFence);
            e.push_wgmmas(&ops.choice, ops.steps, &ops.acc);
            e.push(Stmt::WgmmaCommit);
            e.push(Stmt::WgmmaWait { pending: 0 });
            Ok(())
        })
    }
}

/// Whether any statement of `block` (nested ones too, and nested blocks' yields) reads
/// `value`.
fn reads(block: &Block, value: TileValue) -> bool {
    block.stmts.iter().any(|s| stmt_reads(s, value))
}

/// Whether `s` or a statement or yield nested in it reads `value`.
fn stmt_reads(s: &TStmt, value: TileValue) -> bool {
    s.operands().contains(&value)
        || s.nested()
            .iter()
            .any(|b| b.yields.contains(&value) || reads(b, value))
}
