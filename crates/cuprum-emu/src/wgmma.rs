//! Hopper's warpgroup statements on the emulator: `wgmma` as an asynchronous agent per
//! warpgroup, `setmaxnreg`, named barriers and `stmatrix`.
//!
//! # wgmma
//!
//! A `wgmma.mma_async` is recorded when a warp issues it (its descriptors, register-A values
//! and `scale-d`, and a snapshot of the shared-memory operand bytes) and *performed at the
//! latest legal point*: the `wgmma.wait_group` that covers its group. Then it reads its
//! shared-memory operands (through the race tracker, as the issuing warp's lane 0) and its
//! accumulator variables, and writes them ([`cuprum_ir::wgmma`] gives every layout; the
//! arithmetic is `tensor`'s, the tensor cores' own). Each warp computes its own 16 rows of D,
//! which depend on nothing the other three warps of the warpgroup hold, so the warps of a
//! warpgroup run one after another as the block scheduler has them.
//!
//! What the PTX ISA leaves undefined is reported ([`EmuError::WgmmaMisuse`]):
//! * reading or writing an accumulator variable between its `mma_async` and the covering
//!   wait (an *early accumulator access*);
//! * defining a register-A value again (the next iteration of a loop: its register rewritten)
//!   between the `mma_async` that reads it and the covering wait (an *overwritten register
//!   A*);
//! * an operand's shared-memory bytes that changed between the `mma_async` and the wait (an
//!   *overwritten operand*; a write of the same bytes is not seen);
//! * an `mma_async` with no `wgmma.fence` before it, or whose accumulators were written
//!   since the last fence (a *missing fence*);
//! * a statement not executed by all 128 threads of a warpgroup together: every warp must
//!   have all 32 lanes active, its warpgroup's four warps must exist, and, checked when the
//!   block ends, all four must have executed the same sequence of warpgroup statements;
//! * a descriptor or `scale-d` that differs between the lanes of a warp, a non-zero base
//!   offset, a `wait_group` that asks for more than 7.
//!
//! Kernels without these statements take none of these paths: the per-variable checks are
//! behind one counter of operations in flight, and the accumulator flags are empty.
//!
//! # Named barriers
//!
//! `bar.sync id, n` and `bar.arrive id, n` count whole warps (32 threads each) toward
//! barrier `id`; the arrival that brings the count to `n` completes it. A `bar.sync` warp
//! then waits as an mbarrier wait does (a stop point of the block scheduler; a round in
//! which nothing moves is a deadlock, [`EmuError::NamedBarrierDeadlock`]). Completion
//! orders memory as an mbarrier phase does, through the same vector clocks.

use std::collections::VecDeque;

use cuprum_ir::wgmma::{
    Descriptor, MAX_BARRIER_ID, Major, WARPGROUP_THREADS, a_register_position,
    accumulator_position, stmatrix_position,
};
use cuprum_ir::{Kernel, ScaleD, Stmt, Value, Var, WgmmaA, WgmmaMma};

use crate::access::{Ctx, lanes_of};
use crate::error::{AccessKind, EmuError};
use crate::lanes::Lanes;
use crate::tensor::{Num, Operand, dot_operands, element};
use crate::warp::Exec;

/// The `off` of a [`crate::warp::Stop::Blocked`] that waits on named barrier `id`: above every
/// shared-memory offset.
pub(crate) const NAMED_BLOCKED_BASE: u32 = u32::MAX - 64;

/// Which variables are the accumulators of some `wgmma` of `kernel` (empty when none is).
pub(crate) fn accumulator_vars(kernel: &Kernel) -> Vec<bool> {
    let mut flags = Vec::new();
    kernel.body.visit(&mut |s| {
        if let Stmt::WgmmaMma(m) = s {
            if flags.is_empty() {
                flags = vec![false; kernel.vars.len()];
            }
            for v in &m.acc {
                if let Some(f) = flags.get_mut(v.index()) {
                    *f = true;
                }
            }
        }
    });
    flags
}

/// One issued `mma_async`, waiting to be performed.
struct Pending<'k> {
    m: &'k WgmmaMma,
    a_desc: Option<Descriptor>,
    b_desc: Descriptor,
    a_regs: [Lanes; 4],
    accumulate: bool,
    /// The operand bytes at issue: A's (descriptor A only), then B's, in [`operand_addresses`]
    /// order.
    snapshot: Vec<u64>,
}

/// A warp's wgmma state, kept across its runs.
#[derive(Default)]
pub(crate) struct WarpState<'k> {
    /// Issued, not yet committed.
    open: Vec<Pending<'k>>,
    /// Committed groups, oldest first.
    groups: VecDeque<Vec<Pending<'k>>>,
    /// Operations issued and not yet performed; the variable checks run only when non-zero.
    pub(crate) in_flight: u32,
    /// Per variable: how many operations in flight use it as an accumulator.
    locked: Vec<u16>,
    /// Per value: how many operations in flight read it as a register of A.
    a_locked: Vec<u16>,
    /// Per variable: written (by `WriteVar`) since the last `wgmma.fence`.
    dirty: Vec<bool>,
    /// Whether a `wgmma.fence` has run in this warp.
    fenced: bool,
    /// The warpgroup statements this warp executed, in order (their identities), compared
    /// across the warpgroup when the block ends.
    pub(crate) log: Vec<usize>,
    /// The named barrier (id, generation) this warp waits on.
    named_wait: Option<(u32, u32)>,
}

impl WarpState<'_> {
    /// Forgets everything (a new block).
    pub(crate) fn reset(&mut self) {
        self.open.clear();
        self.groups.clear();
        self.in_flight = 0;
        self.locked.fill(0);
        self.a_locked.fill(0);
        self.dirty.fill(false);
        self.fenced = false;
        self.log.clear();
        self.named_wait = None;
    }
}

/// One named barrier of a block.
#[derive(Clone, Default)]
struct Named {
    /// Threads counted toward the current completion.
    arrived: u32,
    /// The thread count its users give (0 before the first use of this completion).
    expected: u32,
    /// Completions so far.
    generation: u32,
    /// What the current completion's arrivals released (vector clocks).
    released: Vec<u32>,
    /// What the last completion's arrivals released.
    last: Vec<u32>,
}

/// The block's named barriers.
pub(crate) struct NamedBarriers {
    bars: Vec<Named>,
}

impl NamedBarriers {
    pub(crate) fn new() -> Self {
        Self {
            bars: vec![Named::default(); MAX_BARRIER_ID as usize + 1],
        }
    }

    /// Starts a block: no barrier has arrivals.
    pub(crate) fn begin_block(&mut self) {
        self.bars.fill(Named::default());
    }

    /// What a deadlocked wait on `id` waits for.
    pub(crate) fn describe(&self, id: u32) -> String {
        match self.bars.get(id as usize) {
            Some(b) => format!(
                "named barrier {id} has {} of its {} threads arrived",
                b.arrived, b.expected
            ),
            None => format!("named barrier {id}"),
        }
    }
}

/// What the warp does after a named barrier.
pub(crate) enum NamedFlow {
    Next,
    Block,
}

/// The shared addresses a pending operation reads, A's (descriptor A: this warp's 16 rows)
/// then B's, and the element size.
fn operand_addresses(p: &Pending, warp_in_group: u32) -> (Vec<u32>, u32) {
    let s = p.m.shape;
    let (k, bytes) = (s.ty.k(), s.ty.bytes());
    let major = |t: bool| if t { Major::Mn } else { Major::K };
    let mut out = Vec::with_capacity(((16 + s.n) * k) as usize);
    if let Some(a) = p.a_desc {
        for r in 16 * warp_in_group..16 * warp_in_group + 16 {
            for kk in 0..k {
                out.push(a.element_address(major(p.m.trans_a), bytes, r, kk));
            }
        }
    }
    for n in 0..s.n {
        for kk in 0..k {
            out.push(p.b_desc.element_address(major(p.m.trans_b), bytes, n, kk));
        }
    }
    (out, bytes)
}

impl<'k> Exec<'_, 'k> {
    fn wgmma_error(&self, lane: u32, message: impl Into<String>) -> EmuError {
        let ctx = self.ctx;
        EmuError::WgmmaMisuse {
            kernel: ctx.kernel_name(),
            block: ctx.block_idx,
            thread: ctx.thread(lane),
            message: message.into(),
        }
    }

    /// The checks every warpgroup statement makes: all 32 lanes, a whole warpgroup; and the
    /// statement goes into the warp's log.
    fn warpgroup_statement(&mut self, stmt: &Stmt, mask: u32, what: &str) -> Result<(), EmuError> {
        if mask != u32::MAX {
            return Err(self.wgmma_error(
                mask.trailing_zeros() % 32,
                format!(
                    "`{what}` must be executed by all 128 threads of a warpgroup together, but \
                     only lanes {mask:#010x} of this warp execute it here"
                ),
            ));
        }
        let launch = self.ctx.launch;
        let group_end = (self.ctx.warp_index / 4 + 1) * 4;
        if group_end * 32 > launch.threads {
            return Err(self.wgmma_error(
                0,
                format!(
                    "`{what}` needs a whole warpgroup (4 warps, 128 threads), but the block has \
                     {} threads, so this thread's warpgroup is incomplete",
                    launch.threads
                ),
            ));
        }
        self.wg.log.push(stmt as *const Stmt as usize);
        Ok(())
    }

    /// `wgmma.fence`.
    pub(crate) fn wgmma_fence(&mut self, stmt: &Stmt, mask: u32) -> Result<(), EmuError> {
        self.warpgroup_statement(stmt, mask, "wgmma.fence")?;
        self.wg.fenced = true;
        self.wg.dirty.fill(false);
        Ok(())
    }

    /// `wgmma.commit_group`.
    pub(crate) fn wgmma_commit(&mut self, stmt: &Stmt, mask: u32) -> Result<(), EmuError> {
        self.warpgroup_statement(stmt, mask, "wgmma.commit_group")?;
        let group = std::mem::take(&mut self.wg.open);
        self.wg.groups.push_back(group);
        Ok(())
    }

    /// The value lane 0 has in `v`, after checking that every lane has it.
    fn uniform(&self, v: Value, what: &str) -> Result<u64, EmuError> {
        let lanes = &self.regs[v.index()];
        match (1..32).find(|&l| lanes[l] != lanes[0]) {
            Some(l) => Err(self.wgmma_error(
                l as u32,
                format!(
                    "the {what} must be the same in every thread of the warpgroup; this thread \
                     has {:#x}, lane 0 of its warp {:#x}",
                    lanes[l], lanes[0]
                ),
            )),
            None => Ok(lanes[0]),
        }
    }

    fn descriptor(&self, v: Value, what: &str) -> Result<Descriptor, EmuError> {
        let d = Descriptor::decode(self.uniform(v, what)?);
        if d.base_offset != 0 {
            return Err(self.wgmma_error(
                0,
                format!(
                    "the {what} has base offset {}; the emulator supports swizzled operands that \
                     start at a multiple of the swizzle's period (base offset 0)",
                    d.base_offset
                ),
            ));
        }
        Ok(d)
    }

    /// `wgmma.mma_async`: checks and records it; it is performed at the covering wait.
    pub(crate) fn wgmma_issue(
        &mut self,
        stmt: &'k Stmt,
        m: &'k WgmmaMma,
        mask: u32,
    ) -> Result<(), EmuError> {
        self.warpgroup_statement(stmt, mask, "wgmma.mma_async")?;
        if !self.wg.fenced {
            return Err(self.wgmma_error(
                0,
                "missing `wgmma.fence`: the first `wgmma.mma_async` of a warpgroup must follow a \
                 `wgmma_fence()`",
            ));
        }
        if let Some(v) = m
            .acc
            .iter()
            .find(|v| self.wg.dirty.get(v.index()) == Some(&true))
        {
            return Err(self.wgmma_error(
                0,
                format!(
                    "missing `wgmma.fence`: accumulator variable {v:?} was written since the last \
                     `wgmma_fence()`, which must order register writes before the \
                     `wgmma.mma_async` that reads them"
                ),
            ));
        }
        let a_desc = match &m.a {
            WgmmaA::Descriptor(d) => Some(self.descriptor(*d, "A descriptor")?),
            WgmmaA::Registers(_) => None,
        };
        let b_desc = self.descriptor(m.b, "B descriptor")?;
        let a_regs = match &m.a {
            WgmmaA::Registers(r) => r.map(|v| self.regs[v.index()]),
            WgmmaA::Descriptor(_) => [[0; 32]; 4],
        };
        let accumulate = match m.scale_d {
            ScaleD::Const(c) => c,
            ScaleD::Pred(p) => self.uniform(p, "scale-d predicate")? != 0,
        };
        let mut p = Pending {
            m,
            a_desc,
            b_desc,
            a_regs,
            accumulate,
            snapshot: Vec::new(),
        };
        let (addrs, bytes) = operand_addresses(&p, self.ctx.warp_index % 4);
        let shared = &*self.mem.shared;
        p.snapshot = addrs.iter().map(|&a| shared.peek(a, bytes)).collect();
        let nvars = self.ctx.launch.kernel.vars.len();
        if self.wg.locked.len() != nvars {
            self.wg.locked = vec![0; nvars];
        }
        for v in &m.acc {
            if let Some(c) = self.wg.locked.get_mut(v.index()) {
                *c += 1;
            }
        }
        if let WgmmaA::Registers(regs) = &m.a {
            let nvalues = self.ctx.launch.kernel.values.len();
            if self.wg.a_locked.len() != nvalues {
                self.wg.a_locked = vec![0; nvalues];
            }
            for v in regs {
                if let Some(c) = self.wg.a_locked.get_mut(v.index()) {
                    *c += 1;
                }
            }
        }
        self.wg.in_flight += 1;
        self.wg.open.push(p);
        Ok(())
    }

    /// `wgmma.wait_group pending`: performs the operations of every committed group but the
    /// `pending` newest.
    pub(crate) fn wgmma_wait(
        &mut self,
        stmt: &Stmt,
        pending: u32,
        mask: u32,
    ) -> Result<(), EmuError> {
        self.warpgroup_statement(stmt, mask, "wgmma.wait_group")?;
        while self.wg.groups.len() > pending as usize {
            let Some(group) = self.wg.groups.pop_front() else {
                break;
            };
            for p in group {
                self.perform(&p)?;
                for v in &p.m.acc {
                    if let Some(c) = self.wg.locked.get_mut(v.index()) {
                        *c = c.saturating_sub(1);
                    }
                }
                if let WgmmaA::Registers(regs) = &p.m.a {
                    for v in regs {
                        if let Some(c) = self.wg.a_locked.get_mut(v.index()) {
                            *c = c.saturating_sub(1);
                        }
                    }
                }
                self.wg.in_flight = self.wg.in_flight.saturating_sub(1);
            }
        }
        Ok(())
    }

    /// Performs one `mma_async` for this warp's 16 rows of D.
    fn perform(&mut self, p: &Pending) -> Result<(), EmuError> {
        let ctx = self.ctx;
        let w = ctx.warp_index % 4;
        let s = p.m.shape;
        let (n, k) = (s.n as usize, s.ty.k() as usize);
        let mma_shape = s.ty.mma_shape();
        let (addrs, bytes) = operand_addresses(p, w);
        let reader = ctx.tid(0);
        // The bytes first, so that an overwrite is reported as such rather than as the race
        // with the overwriting thread that it also is; then the reads, race-tracked.
        for (i, &a) in addrs.iter().enumerate() {
            if p.snapshot.get(i) != Some(&self.mem.shared.peek(a, bytes)) {
                let which = if p.a_desc.is_some() && i < 16 * k {
                    "A"
                } else {
                    "B"
                };
                return Err(self.wgmma_error(
                    0,
                    format!(
                        "overwritten operand: the {which} operand's bytes at shared offset {a} \
                         changed between the `wgmma.mma_async` that reads them and the \
                         `wgmma.wait_group` that covers it"
                    ),
                ));
            }
        }
        let mut values = Vec::with_capacity(addrs.len());
        for &a in &addrs {
            let v = self
                .mem
                .shared
                .async_proxy_load(a, bytes, reader)
                .map_err(|f| ctx.shared_fault(f, 0, u64::from(a), bytes, AccessKind::Load))?;
            values.push(v);
        }
        let negate = |x: Num, neg: bool| match (x, neg) {
            (Num::Finite { neg: s, m, e }, true) => Num::Finite { neg: !s, m, e },
            (Num::Inf { neg: s }, true) => Num::Inf { neg: !s },
            (x, _) => x,
        };
        let zero = Num::Finite {
            neg: false,
            m: 0,
            e: 0,
        };
        // This warp's 16 rows of A.
        let mut am = vec![[zero; 16]; 16];
        // B by column: `bm[col][kk]`.
        let mut bm = vec![[zero; 16]; n];
        let mut next = values.iter();
        if p.a_desc.is_some() {
            for row in am.iter_mut() {
                for e in row.iter_mut().take(k) {
                    let bits = next.next().copied().unwrap_or(0);
                    *e = negate(element(mma_shape, bits, 0), p.m.negate_a);
                }
            }
        } else {
            let halves = if bytes == 2 { 2 } else { 1 };
            for lane in 0..32u32 {
                for (reg, r) in p.a_regs.iter().enumerate() {
                    for half in 0..halves {
                        let (row, col) = a_register_position(s.ty, 32 * w + lane, reg as u32, half);
                        let x = element(mma_shape, r[lane as usize], half as usize);
                        am[(row - 16 * w) as usize][col as usize] = negate(x, p.m.negate_a);
                    }
                }
            }
        }
        for column in bm.iter_mut() {
            for e in column.iter_mut().take(k) {
                let bits = next.next().copied().unwrap_or(0);
                *e = negate(element(mma_shape, bits, 0), p.m.negate_b);
            }
        }
        // Each operand taken apart once for the many sums it is in.
        let decode = |rows: &[[Num; 16]]| -> Vec<[Operand; 16]> {
            rows.iter().map(|row| row.map(Operand::new)).collect()
        };
        let (ao, bo) = (decode(&am), decode(&bm));
        for (i, var) in p.m.acc.iter().enumerate() {
            let mut out = self.vars[var.index()];
            for lane in 0..32u32 {
                let (row, col) = accumulator_position(32 * w + lane, i as u32);
                let (r, c) = ((row - 16 * w) as usize, col as usize);
                // A zero accumulator is +0.0.
                let acc = if p.accumulate {
                    out[lane as usize] as u32
                } else {
                    0
                };
                out[lane as usize] = u64::from(dot_operands(acc, &ao[r][..k], &bo[c][..k]));
            }
            self.vars[var.index()] = out;
        }
        Ok(())
    }

    /// A `WriteVar` of `var` while wgmma operations may be in flight.
    pub(crate) fn wgmma_var_access(&self, var: Var, write: bool) -> Result<(), EmuError> {
        check_var_access(self.ctx, self.wg, var, write)
    }

    /// Notes a `WriteVar` of an accumulator variable, for the missing-fence check.
    pub(crate) fn wgmma_note_write(&mut self, var: Var) {
        let n = self.ctx.launch.wgmma_vars.len();
        if self.wg.dirty.len() != n {
            self.wg.dirty = vec![false; n];
        }
        if let Some(d) = self.wg.dirty.get_mut(var.index()) {
            *d = true;
        }
    }

    /// `setmaxnreg`: changes nothing the emulator models; the warpgroup checks only.
    pub(crate) fn setmaxnreg(&mut self, stmt: &Stmt, mask: u32) -> Result<(), EmuError> {
        self.warpgroup_statement(stmt, mask, "setmaxnreg")
    }

    /// `bar.sync` / `bar.arrive` on named barrier `id` (see the module docs).
    pub(crate) fn named_barrier(
        &mut self,
        arrive: bool,
        id: u32,
        threads: u32,
        mask: u32,
    ) -> Result<NamedFlow, EmuError> {
        let ctx = self.ctx;
        let shared = &mut *self.mem.shared;
        if let Some((wid, generation)) = self.wg.named_wait {
            let Some(b) = shared.named.bars.get(wid as usize) else {
                return Err(ctx.internal("named barrier out of range"));
            };
            if b.generation == generation {
                return Ok(NamedFlow::Block);
            }
            let last = b.last.clone();
            for l in lanes_of(mask) {
                shared.mbar.clocks.acquire(ctx.tid(l), &last);
            }
            self.wg.named_wait = None;
            return Ok(NamedFlow::Next);
        }
        let live = mask;
        if live != u32::MAX && ctx.warp_index * 32 + 32 <= ctx.launch.threads {
            return Err(EmuError::BarrierDivergence {
                kernel: ctx.kernel_name(),
                block: ctx.block_idx,
                thread: ctx.thread(live.trailing_zeros() % 32),
                message: format!(
                    "named barrier {id} is reached by lanes {live:#010x} of this warp only; \
                     `bar.sync`/`bar.arrive` are executed by whole warps"
                ),
            });
        }
        let Some(b) = shared.named.bars.get_mut(id as usize) else {
            return Err(ctx.internal("named barrier out of range"));
        };
        if b.expected == 0 {
            b.expected = threads;
        } else if b.expected != threads {
            return Err(EmuError::BarrierDivergence {
                kernel: ctx.kernel_name(),
                block: ctx.block_idx,
                thread: ctx.thread(0),
                message: format!(
                    "named barrier {id} is used with {threads} threads here and {} elsewhere in \
                     the same phase",
                    b.expected
                ),
            });
        }
        let mut restarted = false;
        for l in lanes_of(mask) {
            restarted |= !shared.mbar.clocks.release(ctx.tid(l), &mut b.released);
        }
        b.arrived += 32;
        let completed = b.arrived >= b.expected;
        if completed {
            b.generation = b.generation.wrapping_add(1);
            b.arrived = 0;
            b.expected = 0;
            b.last = std::mem::take(&mut b.released);
        }
        let generation = b.generation;
        let last = b.last.clone();
        if restarted {
            shared.clocks_restarted();
        }
        if arrive {
            return Ok(NamedFlow::Next);
        }
        if completed {
            for l in lanes_of(mask) {
                shared.mbar.clocks.acquire(ctx.tid(l), &last);
            }
            return Ok(NamedFlow::Next);
        }
        self.wg.named_wait = Some((id, generation));
        Ok(NamedFlow::Block)
    }

    /// `stmatrix`: lane `l < 8 count` stores row `l % 8` of matrix `l / 8` at its address.
    pub(crate) fn stmatrix(
        &mut self,
        trans: bool,
        addr: Value,
        values: &[Value],
        mask: u32,
    ) -> Result<(), EmuError> {
        if mask != u32::MAX {
            return Err(EmuError::IncompleteWarp {
                kernel: self.ctx.kernel_name(),
                block: self.ctx.block_idx,
                thread: self.ctx.thread(mask.trailing_zeros() % 32),
                operation: "stmatrix",
                active: mask,
            });
        }
        let ctx = self.ctx;
        let mut rows = [[[0u16; 8]; 8]; 4];
        for (m, v) in values.iter().enumerate() {
            let regs = &self.regs[v.index()];
            for lane in 0..32u32 {
                for half in 0..2 {
                    let (r, c) = stmatrix_position(lane, half, trans);
                    rows[m][r][c] = (regs[lane as usize] >> (16 * half)) as u16;
                }
            }
        }
        let addrs = self.regs[addr.index()];
        for (m, matrix) in rows.iter().enumerate().take(values.len()) {
            for (r, row) in matrix.iter().enumerate() {
                let lane = (m * 8 + r) as u32;
                let a = addrs[lane as usize];
                if !a.is_multiple_of(16) || a > u64::from(u32::MAX - 16) {
                    return Err(ctx.shared_fault(
                        crate::shared::SharedFault::Misaligned,
                        lane,
                        a,
                        16,
                        AccessKind::Store,
                    ));
                }
                for half in 0..2usize {
                    let mut bits = 0u64;
                    for (i, &e) in row[4 * half..4 * half + 4].iter().enumerate() {
                        bits |= u64::from(e) << (16 * i);
                    }
                    let off = a as u32 + 8 * half as u32;
                    self.mem
                        .shared
                        .store(off, 8, bits, ctx.tid(lane))
                        .map_err(|f| ctx.shared_fault(f, lane, a, 16, AccessKind::Store))?;
                }
            }
        }
        Ok(())
    }
}

/// A `ReadVar` (`write` false) or `WriteVar` of `var` by a warp whose wgmma state is `wg`:
/// an error while an operation in flight uses `var` as an accumulator.
#[cold]
pub(crate) fn check_var_access(
    ctx: Ctx,
    wg: &WarpState,
    var: Var,
    write: bool,
) -> Result<(), EmuError> {
    if wg.locked.get(var.index()).is_some_and(|&c| c > 0) {
        let verb = if write { "written" } else { "read" };
        return Err(EmuError::WgmmaMisuse {
            kernel: ctx.kernel_name(),
            block: ctx.block_idx,
            thread: ctx.thread(0),
            message: format!(
                "early accumulator access: accumulator variable {var:?} is {verb} while a \
                 `wgmma.mma_async` that uses it is in flight; wait for it with \
                 `wgmma_wait_group` first"
            ),
        });
    }
    Ok(())
}

/// A `Def` of `value` by a warp whose wgmma state is `wg`: an error while an operation in
/// flight reads `value` as a register of A. Each value has one PTX register, which a second
/// definition (the next iteration of a loop) rewrites while the tensor cores may still read
/// it, which the PTX ISA leaves undefined: the emulator, which took A's values at the issue,
/// would otherwise compute what the GPU need not.
#[cold]
pub(crate) fn check_value_definition(
    ctx: Ctx,
    wg: &WarpState,
    value: Value,
) -> Result<(), EmuError> {
    if wg.a_locked.get(value.index()).is_some_and(|&c| c > 0) {
        return Err(EmuError::WgmmaMisuse {
            kernel: ctx.kernel_name(),
            block: ctx.block_idx,
            thread: ctx.thread(0),
            message: format!(
                "overwritten register A: value {value:?}, a register of A of a \
                 `wgmma.mma_async` in flight, is defined again (its register rewritten) before \
                 the `wgmma_wait_group` that covers it"
            ),
        });
    }
    Ok(())
}

/// When a block ends: every warpgroup's four warps executed the same warpgroup statements.
pub(crate) fn check_warpgroups(
    launch: &crate::exec::Launch,
    block: crate::error::Dim3,
    states: &[WarpState],
) -> Result<(), EmuError> {
    for (g, group) in states.chunks(4).enumerate() {
        let Some(first) = group.first() else {
            continue;
        };
        for (i, other) in group.iter().enumerate().skip(1) {
            if other.log != first.log {
                let w = (4 * g + i) as u32;
                return Err(EmuError::WgmmaMisuse {
                    kernel: launch.kernel.name.clone(),
                    block,
                    thread: launch.thread_coords(w * 32),
                    message: format!(
                        "the warps of warpgroup {g} did not execute the same warpgroup \
                         statements (wgmma, setmaxnreg): warp {} ran {} of them, this warp {}; \
                         all {WARPGROUP_THREADS} threads must execute each together",
                        4 * g,
                        first.log.len(),
                        other.log.len()
                    ),
                });
            }
        }
    }
    Ok(())
}
