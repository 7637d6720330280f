//! The warp interpreter: runs the statements of one warp, 32 lanes in lockstep under an active
//! mask, until the warp finishes or reaches a barrier.
//!
//! A warp's position is an explicit stack of [`Frame`]s (statement list, next statement,
//! active mask, and what to do when the list ends), not the Rust call stack, so a warp can
//! stop at a `Barrier` in the middle of nested `If`s and `Loop`s and resume later from exactly
//! there. This is standard structured SIMT execution:
//! * `If` runs `then` with the lanes whose condition holds, then `otherwise` with the rest; the
//!   lanes reconverge when both are done.
//! * `Loop` reruns its body with the lanes still in the loop until none is left. `Break`
//!   removes lanes from every frame up to the loop and from the loop; `Continue` removes them
//!   up to the end of this iteration; `Return` removes them everywhere and marks them exited.
//! * `Barrier` requires every live lane of the warp to be active; the block scheduler
//!   (`exec`) then checks that every warp stopped at the same barrier statement.
//! * A blocking mbarrier wait whose phase is incomplete stops the warp there ([`Stop::Blocked`],
//!   resumed at the wait); a test that finds its phase incomplete lets the other warps run
//!   ([`Stop::Yield`]); the rest is `mbarrier`'s. A cluster barrier wait whose phase is
//!   incomplete stops it the same way; the cluster barrier, remote arrivals and lanes that
//!   return (which count as arrived there) are `cluster`'s.
//! * `Mma` and `LdMatrix` require all 32 lanes to be active (arithmetic in `tensor`);
//!   `CpAsync` reads at once and writes when its lane waits (`cp_async`); `Print`
//!   formats one text per active lane, in lane order (`printf`).
//!
//! Each `Def` writes its result straight into the destination register while reading its
//! operands from the others (a split borrow of the register file), so no register is copied.
//! Faults become [`EmuError`]s with kernel, block, thread and address; nothing here panics on
//! user input.

use std::sync::atomic::{Ordering, fence};

use cuprum_ir::{
    Dim, Op, ScalarType, Scope, ShuffleMode, Special, Stmt, TrapKind, Value, VoteMode,
};

use crate::access::{AtomicKind, Ctx, Ports, lanes_of};
use crate::error::EmuError;
use crate::lanes::{Lanes, true_mask};
use crate::mbarrier::Flow;
use crate::tensor;
use cuprum_ir::printf::{self, Arg, parse_format};
use cuprum_ir::scalar::{self as ops, OpFault};

/// What happens when a frame's statement list ends.
#[derive(Clone, Copy)]
enum FrameKind<'k> {
    /// Nothing: the enclosing frame continues.
    Plain,
    /// The `then` arm of an `If`: the `otherwise` arm runs next for `else_mask`.
    Then {
        otherwise: &'k [Stmt],
        else_mask: u32,
    },
    /// A loop body: it runs again for `loop_mask`, the lanes that have not left the loop.
    Loop { body: &'k [Stmt], loop_mask: u32 },
}

#[derive(Clone, Copy)]
struct Frame<'k> {
    stmts: &'k [Stmt],
    pc: usize,
    /// Lanes executing this statement list now.
    mask: u32,
    kind: FrameKind<'k>,
}

/// Why [`Exec::run`] returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stop {
    /// Every lane has exited.
    Done,
    /// Every live lane is at the barrier statement with this identity (its address).
    Barrier(usize),
    /// Another block failed first; this block's result no longer matters.
    Aborted,
    /// A blocking mbarrier wait whose phase has not completed: lane `lane` waits on the
    /// barrier at shared offset `off`. The warp resumes at the wait. `first` says the wait
    /// was the first statement of this run (the warp made no progress since it last stopped).
    Blocked { off: u32, lane: u32, first: bool },
    /// An mbarrier test that found its phase incomplete: the warp lets the others run (a
    /// polling loop would otherwise never see them arrive) and resumes after the test.
    Yield,
}

/// One warp's control state. Its registers live in the block state.
pub(crate) struct Warp<'k> {
    frames: Vec<Frame<'k>>,
    /// Lanes that are threads of the block (the last warp may be partial).
    valid: u32,
    /// Lanes that have returned or finished the body.
    exited: u32,
}

impl<'k> Warp<'k> {
    pub(crate) fn new() -> Self {
        Self {
            frames: Vec::new(),
            valid: 0,
            exited: 0,
        }
    }

    /// Positions the warp at the start of `body` with the lanes in `valid`.
    pub(crate) fn reset(&mut self, body: &'k [Stmt], valid: u32) {
        self.frames.clear();
        self.frames.push(Frame {
            stmts: body,
            pc: 0,
            mask: valid,
            kind: FrameKind::Plain,
        });
        self.valid = valid;
        self.exited = !valid;
    }

    /// Lanes that have not exited.
    pub(crate) fn live(&self) -> u32 {
        self.valid & !self.exited
    }
}

/// The registers other than the one being defined, readable while that one is written.
struct Operands<'r> {
    below: &'r [Lanes],
    above: &'r [Lanes],
    dst: usize,
}

impl Operands<'_> {
    /// The register of `v`, which is never the destination in a validated kernel (a value is
    /// defined before it is used).
    #[inline(always)]
    fn get(&self, v: Value) -> &Lanes {
        let i = v.index();
        if i < self.dst {
            &self.below[i]
        } else {
            &self.above[i - self.dst - 1]
        }
    }
}

/// Everything one warp needs to run: who it is, its registers and variables, and the memory
/// it may touch.
pub(crate) struct Exec<'a, 'k> {
    pub(crate) ctx: Ctx<'a, 'k>,
    /// This warp's registers, indexed by value.
    pub(crate) regs: &'a mut [Lanes],
    /// This warp's variables, indexed by variable.
    pub(crate) vars: &'a mut [Lanes],
    pub(crate) mem: Ports<'a>,
    /// Steps left in this worker's chunk of the launch's budget (see `Launch::take_steps`).
    pub(crate) steps_left: u64,
    /// This warp's wgmma and named-barrier state (`crate::wgmma`).
    pub(crate) wg: &'a mut crate::wgmma::WarpState<'k>,
    /// This warp's `cp.async` copies in flight (`crate::cp_async`).
    pub(crate) cp: &'a mut crate::cp_async::Queues,
}

impl<'k> Exec<'_, 'k> {
    /// Lands the `cp.async` copies the lanes of `mask` wait for: all but their `pending`
    /// most recent groups, or (`None`) every copy.
    pub(crate) fn land_copies(&mut self, mask: u32, pending: Option<u32>) -> Result<(), EmuError> {
        for l in lanes_of(mask) {
            let pieces = self.cp.complete(l, pending);
            if !pieces.is_empty() {
                self.mem.land_copies(self.ctx, l, &pieces)?;
            }
        }
        Ok(())
    }

    /// Runs `warp` until it finishes or reaches a barrier.
    pub(crate) fn run(&mut self, warp: &mut Warp<'k>) -> Result<Stop, EmuError> {
        let ctx = self.ctx;
        let mut first = true;
        loop {
            // Every turn of this loop is one step of the launch's budget.
            if self.steps_left == 0 {
                self.take_steps(warp)?;
            }
            self.steps_left -= 1;
            let was_first = std::mem::replace(&mut first, false);
            let Some(top) = warp.frames.last_mut() else {
                // A thread's copies complete even if it never waits for them.
                self.land_copies(u32::MAX, None)?;
                if ctx.launch.cluster_sync {
                    self.cluster_threads_returned(warp.live());
                }
                return Ok(Stop::Done);
            };
            let stmts = top.stmts;
            if top.mask == 0 || top.pc >= stmts.len() {
                if self.finish_frame(warp) {
                    return Ok(Stop::Aborted);
                }
                continue;
            }
            let stmt = &stmts[top.pc];
            top.pc += 1;
            let mask = top.mask;
            match stmt {
                Stmt::Def { value, op } => {
                    if self.wg.in_flight != 0 {
                        crate::wgmma::check_value_definition(ctx, self.wg, *value)?;
                    }
                    self.def(*value, op, mask)?
                }
                Stmt::WriteVar { var, value } => {
                    if !ctx.launch.wgmma_vars.is_empty() {
                        self.wgmma_var_access(*var, true)?;
                        if ctx.launch.wgmma_vars.get(var.index()) == Some(&true) {
                            self.wgmma_note_write(*var);
                        }
                    }
                    let v = &self.regs[value.index()];
                    let dst = &mut self.vars[var.index()];
                    for i in 0..32 {
                        if mask >> i & 1 != 0 {
                            dst[i] = v[i];
                        }
                    }
                }
                Stmt::Store { space, addr, value } => {
                    let size = ctx.launch.types[value.index()].size_bytes();
                    let (a, v) = (&self.regs[addr.index()], &self.regs[value.index()]);
                    self.mem.store(ctx, *space, size, a, v, mask)?;
                }
                Stmt::AtomicStore {
                    space,
                    scope,
                    order,
                    addr,
                    value,
                } => {
                    let ty = ctx.launch.types[value.index()];
                    let (a, v) = (&self.regs[addr.index()], &self.regs[value.index()]);
                    let mut old = [0u64; 32];
                    self.mem.atomic(
                        ctx,
                        AtomicKind::Store,
                        *space,
                        (*scope, *order),
                        ty,
                        a,
                        v,
                        None,
                        mask,
                        &mut old,
                    )?;
                }
                Stmt::VectorLoad {
                    space, ty, addr, d, ..
                } => {
                    let base = &self.regs[addr.index()];
                    let size = ty.size_bytes();
                    let elements =
                        self.mem
                            .vector_elements(ctx, *space, base, size, d.len(), mask)?;
                    for (at, v) in elements.iter().zip(d) {
                        let mut out = self.regs[v.index()];
                        self.mem.load(ctx, *space, *ty, at, mask, &mut out)?;
                        self.regs[v.index()] = out;
                    }
                }
                Stmt::VectorStore {
                    space,
                    addr,
                    values,
                } => {
                    let base = &self.regs[addr.index()];
                    let size = values
                        .first()
                        .map_or(0, |v| ctx.launch.types[v.index()].size_bytes());
                    let elements =
                        self.mem
                            .vector_elements(ctx, *space, base, size, values.len(), mask)?;
                    for (at, v) in elements.iter().zip(values) {
                        self.mem
                            .store(ctx, *space, size, at, &self.regs[v.index()], mask)?;
                    }
                }
                Stmt::If {
                    cond,
                    then,
                    otherwise,
                } => {
                    let t = true_mask(&self.regs[cond.index()]) & mask;
                    let e = mask & !t;
                    let frame = if t != 0 {
                        Frame {
                            stmts: &then.stmts,
                            pc: 0,
                            mask: t,
                            kind: FrameKind::Then {
                                otherwise: &otherwise.stmts,
                                else_mask: e,
                            },
                        }
                    } else {
                        Frame {
                            stmts: &otherwise.stmts,
                            pc: 0,
                            mask: e,
                            kind: FrameKind::Plain,
                        }
                    };
                    warp.frames.push(frame);
                }
                Stmt::Loop { body } => warp.frames.push(Frame {
                    stmts: &body.stmts,
                    pc: 0,
                    mask,
                    kind: FrameKind::Loop {
                        body: &body.stmts,
                        loop_mask: mask,
                    },
                }),
                Stmt::Break => self.leave_loop(warp, mask, true)?,
                Stmt::Continue => self.leave_loop(warp, mask, false)?,
                Stmt::Return => {
                    for f in &mut warp.frames {
                        f.mask &= !mask;
                        match &mut f.kind {
                            FrameKind::Loop { loop_mask, .. } => *loop_mask &= !mask,
                            FrameKind::Then { else_mask, .. } => *else_mask &= !mask,
                            FrameKind::Plain => {}
                        }
                    }
                    warp.exited |= mask;
                    if ctx.launch.cluster_sync {
                        self.cluster_threads_returned(mask);
                    }
                }
                Stmt::Barrier => {
                    let live = warp.live();
                    if mask != live {
                        let lane = (live & !mask).trailing_zeros();
                        return Err(EmuError::BarrierDivergence {
                            kernel: ctx.kernel_name(),
                            block: ctx.block_idx,
                            thread: ctx.thread(lane),
                            message: format!(
                                "only {} of the {} live threads of warp {} reach this barrier; \
                                 this thread is elsewhere (the other arm of an `if`, or another \
                                 iteration of or outside a loop). Every thread of the block that \
                                 has not returned must reach the same barrier",
                                mask.count_ones(),
                                live.count_ones(),
                                ctx.warp_index
                            ),
                        });
                    }
                    return Ok(Stop::Barrier(stmt as *const Stmt as usize));
                }
                Stmt::Fence { scope } => {
                    fence(Ordering::SeqCst);
                    let tids = lanes_of(mask).map(|l| ctx.tid(l));
                    let device = *scope != Scope::Block;
                    self.mem
                        .races
                        .fence(ctx.launch.races.as_ref(), tids, device);
                }
                Stmt::Trap(kind) => return Err(self.trap(kind, mask)),
                Stmt::Mma { shape, a, b, c, d } => {
                    self.full_warp(mask, "mma.sync")?;
                    let r = &self.regs;
                    let (a, b, c) = (
                        a.map(|v| r[v.index()]),
                        b.map(|v| r[v.index()]),
                        c.map(|v| r[v.index()]),
                    );
                    let out = tensor::mma(*shape, &a, &b, &c);
                    for (v, lanes) in d.iter().zip(out) {
                        self.regs[v.index()] = lanes;
                    }
                }
                Stmt::LdMatrix { trans, addr, d } => {
                    self.full_warp(mask, "ldmatrix")?;
                    let rows = self
                        .mem
                        .ldmatrix_rows(ctx, &self.regs[addr.index()], d.len())?;
                    let out = tensor::ldmatrix_registers(&rows, d.len(), *trans);
                    for (v, lanes) in d.iter().zip(out) {
                        self.regs[v.index()] = lanes;
                    }
                }
                Stmt::CpAsync {
                    size,
                    dst,
                    src,
                    src_size,
                    ..
                } => {
                    let (d, s) = (&self.regs[dst.index()], &self.regs[src.index()]);
                    let n = src_size.map(|n| &self.regs[n.index()]);
                    self.mem.cp_async(ctx, *size, d, s, n, mask, self.cp)?;
                }
                // Copies land when their lane waits for them (`crate::cp_async`).
                Stmt::CpAsyncCommit => self.cp.commit(mask),
                Stmt::CpAsyncWaitGroup { pending } => self.land_copies(mask, Some(*pending))?,
                Stmt::CpAsyncWaitAll => self.land_copies(mask, None)?,
                // The fence lets the TMA read the thread's earlier generic writes
                // (`crate::tma`); it orders nothing between threads.
                // Line information only.
                Stmt::SourceLine { .. } => {}
                Stmt::FenceProxyAsync { .. } => {
                    for l in crate::access::lanes_of(mask) {
                        self.mem.shared.proxy_fence(ctx.tid(l));
                    }
                }
                Stmt::Tma(op) => self.tma(op, mask)?,
                Stmt::Print { format, args } => self.print(format, args, mask)?,
                Stmt::Mbarrier {
                    op,
                    addr,
                    arg,
                    result,
                } => match self.mbarrier(*op, *addr, *arg, *result, mask)? {
                    Flow::Next => {}
                    Flow::Yield => return Ok(Stop::Yield),
                    Flow::Block { off, lane } => {
                        // Resume at the wait itself.
                        if let Some(top) = warp.frames.last_mut() {
                            top.pc -= 1;
                        }
                        return Ok(Stop::Blocked {
                            off,
                            lane,
                            first: was_first,
                        });
                    }
                },
                Stmt::WgmmaFence => self.wgmma_fence(stmt, mask)?,
                Stmt::WgmmaMma(m) => self.wgmma_issue(stmt, m, mask)?,
                Stmt::WgmmaCommit => self.wgmma_commit(stmt, mask)?,
                Stmt::WgmmaWait { pending } => self.wgmma_wait(stmt, *pending, mask)?,
                Stmt::SetMaxNreg { .. } => self.setmaxnreg(stmt, mask)?,
                Stmt::StMatrix {
                    trans,
                    addr,
                    values,
                } => self.stmatrix(*trans, *addr, values, mask)?,
                Stmt::ClusterArrive => self.cluster_arrive(mask, warp.live())?,
                Stmt::ClusterWait => {
                    if let Some(lane) = self.cluster_wait(mask, warp.live())? {
                        // Resume at the wait itself.
                        if let Some(top) = warp.frames.last_mut() {
                            top.pc -= 1;
                        }
                        return Ok(Stop::Blocked {
                            off: crate::cluster::CLUSTER_BLOCKED,
                            lane,
                            first: was_first,
                        });
                    }
                }
                // It makes this thread's `mbarrier.init`s visible to the cluster's other
                // blocks with its next cluster barrier arrival; the emulator runs every
                // statement of a block in program order and keeps the mbarriers' state
                // outside the bytes, so an init is already there for every later use (and
                // the order a remote use needs after it is checked through the cluster
                // barrier's clocks, `cluster`).
                Stmt::FenceMbarrierInit => {}
                Stmt::ClusterLoad {
                    result,
                    ty,
                    addr,
                    rank,
                } => self.cluster_load(*result, *ty, (*addr, *rank), mask)?,
                Stmt::ClusterStore { addr, rank, value } => {
                    self.cluster_store((*addr, *rank), *value, mask)?
                }
                Stmt::NamedBarrier {
                    arrive,
                    id,
                    threads,
                } => {
                    if let crate::wgmma::NamedFlow::Block =
                        self.named_barrier(*arrive, *id, *threads, mask)?
                    {
                        // Resume at the barrier itself.
                        if let Some(top) = warp.frames.last_mut() {
                            top.pc -= 1;
                        }
                        return Ok(Stop::Blocked {
                            off: crate::wgmma::NAMED_BLOCKED_BASE + id,
                            lane: mask.trailing_zeros() % 32,
                            first: was_first,
                        });
                    }
                }
            }
        }
    }

    /// Refills `steps_left` from the launch's budget, or fails naming a thread of this warp
    /// that was running when the budget ran out.
    #[cold]
    #[inline(never)]
    fn take_steps(&mut self, warp: &Warp<'k>) -> Result<(), EmuError> {
        let launch = self.ctx.launch;
        if launch.take_steps() {
            self.steps_left = launch.step_chunk;
            return Ok(());
        }
        let running = warp.frames.last().map_or(0, |f| f.mask);
        let lanes = if running != 0 { running } else { warp.live() };
        let ctx = self.ctx;
        Err(EmuError::StepLimit {
            kernel: ctx.kernel_name(),
            block: ctx.block_idx,
            thread: ctx.thread(lanes.trailing_zeros() % 32),
            limit: launch.step_limit,
        })
    }

    /// Pops the finished top frame and starts what follows it. Returns true when the launch
    /// is being stopped (checked at every loop back edge, so endless loops still stop).
    fn finish_frame(&self, warp: &mut Warp<'k>) -> bool {
        let Some(f) = warp.frames.pop() else {
            return false;
        };
        match f.kind {
            FrameKind::Plain => {}
            FrameKind::Then {
                otherwise,
                else_mask,
            } => {
                if else_mask != 0 {
                    warp.frames.push(Frame {
                        stmts: otherwise,
                        pc: 0,
                        mask: else_mask,
                        kind: FrameKind::Plain,
                    });
                }
            }
            FrameKind::Loop { body, loop_mask } => {
                if loop_mask != 0 {
                    if self.ctx.launch.stopped(self.ctx.cluster_linear) {
                        return true;
                    }
                    warp.frames.push(Frame {
                        stmts: body,
                        pc: 0,
                        mask: loop_mask,
                        kind: FrameKind::Loop { body, loop_mask },
                    });
                }
            }
        }
        false
    }

    /// `Break` (`leave` true) or `Continue` for the lanes in `mask`.
    fn leave_loop(&self, warp: &mut Warp<'k>, mask: u32, leave: bool) -> Result<(), EmuError> {
        for f in warp.frames.iter_mut().rev() {
            f.mask &= !mask;
            if let FrameKind::Loop { loop_mask, .. } = &mut f.kind {
                if leave {
                    *loop_mask &= !mask;
                }
                return Ok(());
            }
        }
        Err(self.ctx.internal("`Break` or `Continue` outside a loop"))
    }

    /// Checks that all 32 lanes execute a warp-collective `operation`.
    fn full_warp(&self, mask: u32, operation: &'static str) -> Result<(), EmuError> {
        if mask == u32::MAX {
            return Ok(());
        }
        let ctx = self.ctx;
        Err(EmuError::IncompleteWarp {
            kernel: ctx.kernel_name(),
            block: ctx.block_idx,
            thread: ctx.thread(mask.trailing_zeros()),
            operation,
            active: mask,
        })
    }

    /// Device `printf` for the lanes in `mask`, in lane order, one text per lane.
    fn print(&self, format: &str, args: &[Value], mask: u32) -> Result<(), EmuError> {
        let ctx = self.ctx;
        let pieces = parse_format(format).map_err(|e| ctx.internal(e))?;
        let mut values = Vec::with_capacity(args.len());
        for l in lanes_of(mask) {
            values.clear();
            values.extend(args.iter().map(|v| {
                Arg::promote(
                    ctx.launch.types[v.index()],
                    self.regs[v.index()][l as usize],
                )
            }));
            ctx.launch.prints.emit(&printf::format(&pieces, &values));
        }
        Ok(())
    }

    #[cold]
    fn trap(&self, kind: &TrapKind, mask: u32) -> EmuError {
        let ctx = self.ctx;
        let lane = mask.trailing_zeros();
        let (kernel, block, thread) = (ctx.kernel_name(), ctx.block_idx, ctx.thread(lane));
        match kind {
            TrapKind::BoundsCheck { index, len, site } => EmuError::BoundsCheck {
                kernel,
                block,
                thread,
                index: self.regs[index.index()][lane as usize],
                len: self.regs[len.index()][lane as usize],
                site: site.clone(),
            },
            TrapKind::DivideByZero { site } => EmuError::DivideByZero {
                kernel,
                block,
                thread,
                site: site.clone(),
            },
            TrapKind::DivideOverflow { site } => EmuError::DivideOverflow {
                kernel,
                block,
                thread,
                site: site.clone(),
            },
            TrapKind::Assert { message } => EmuError::AssertFailed {
                kernel,
                block,
                thread,
                message: message.clone(),
            },
        }
    }

    /// Executes `value = op` for the lanes in `mask`.
    fn def(&mut self, value: Value, op: &Op, mask: u32) -> Result<(), EmuError> {
        let ctx = self.ctx;
        let l = ctx.launch;
        let d = value.index();
        let (below, rest) = self.regs.split_at_mut(d.min(self.regs.len()));
        let Some((out, above)) = rest.split_first_mut() else {
            return Err(ctx.internal(format!("value %{d} has no register")));
        };
        let r = Operands {
            below,
            above,
            dst: d,
        };
        let ty = |v: &Value| l.types[v.index()];
        let fault = |f: OpFault, t: ScalarType| op_fault(ctx, f, value, op, t);
        match op {
            Op::Const(c) => *out = [c.bits; 32],
            Op::Param(i) | Op::SliceBase(i) => *out = [l.params[*i as usize][0]; 32],
            Op::SliceLen(i) => *out = [l.params[*i as usize][1]; 32],
            Op::SharedAddr(i) => *out = [u64::from(l.shared_offsets[*i as usize]); 32],
            Op::DynSharedAddr => *out = [u64::from(l.dyn_shared_offset); 32],
            Op::LocalAddr(i) => *out = [u64::from(l.local_offsets[*i as usize]); 32],
            Op::Special(s) => special(ctx, *s, out),
            Op::Unary(u, a) => {
                ops::unary(*u, ty(a), r.get(*a), out).map_err(|f| fault(f, ty(a)))?;
            }
            Op::Binary(b, x, y) => {
                ops::binary(*b, ty(x), r.get(*x), r.get(*y), out, mask)
                    .map_err(|f| fault(f, ty(x)))?;
            }
            Op::Ternary(_, a, b, c) => {
                ops::mul_add(ty(a), r.get(*a), r.get(*b), r.get(*c), out)
                    .map_err(|f| fault(f, ty(a)))?;
            }
            Op::Compare(c, x, y) => ops::compare(*c, ty(x), r.get(*x), r.get(*y), out),
            Op::Select {
                cond,
                if_true,
                if_false,
            } => ops::select(r.get(*cond), r.get(*if_true), r.get(*if_false), out),
            Op::Cast { value: v, to } => ops::cast(ty(v), *to, r.get(*v), out),
            Op::Bitcast { value: v, .. } => *out = *r.get(*v),
            Op::ReadVar(var) => {
                if self.wg.in_flight != 0 {
                    crate::wgmma::check_var_access(ctx, self.wg, *var, false)?;
                }
                *out = self.vars[var.index()]
            }
            Op::Load {
                space, ty: t, addr, ..
            } => {
                self.mem.load(ctx, *space, *t, r.get(*addr), mask, out)?;
            }
            Op::Atomic {
                op: aop,
                space,
                scope,
                order,
                addr,
                value: v,
                compare,
            } => {
                let c = compare.map(|c| r.get(c));
                self.mem.atomic(
                    ctx,
                    AtomicKind::Rmw(*aop),
                    *space,
                    (*scope, *order),
                    ty(v),
                    r.get(*addr),
                    r.get(*v),
                    c,
                    mask,
                    out,
                )?;
            }
            Op::AtomicLoad {
                space,
                scope,
                order,
                ty: t,
                addr,
            } => {
                let a = r.get(*addr);
                self.mem.atomic(
                    ctx,
                    AtomicKind::Load,
                    *space,
                    (*scope, *order),
                    *t,
                    a,
                    a,
                    None,
                    mask,
                    out,
                )?;
            }
            Op::Shuffle {
                mode,
                value: v,
                lane,
            } => shuffle(ctx, *mode, r.get(*v), r.get(*lane), mask, out)?,
            Op::Vote { mode, pred } => {
                let bits = true_mask(r.get(*pred)) & mask;
                let x = match mode {
                    VoteMode::All => u64::from(bits == mask),
                    VoteMode::Any => u64::from(bits != 0),
                    VoteMode::Ballot => u64::from(bits),
                };
                *out = [x; 32];
            }
        }
        Ok(())
    }
}

#[cold]
fn op_fault(ctx: Ctx, fault: OpFault, value: Value, op: &Op, ty: ScalarType) -> EmuError {
    let name = match op {
        Op::Binary(b, ..) => format!("{b:?}"),
        _ => "operation".to_string(),
    };
    let site = format!("the {ty} `{name}` defining %{}", value.index());
    let (kernel, block) = (ctx.kernel_name(), ctx.block_idx);
    match fault {
        OpFault::DivideByZero { lane } => EmuError::DivideByZero {
            kernel,
            block,
            thread: ctx.thread(lane),
            site,
        },
        OpFault::DivideOverflow { lane } => EmuError::DivideOverflow {
            kernel,
            block,
            thread: ctx.thread(lane),
            site,
        },
        OpFault::Unsupported => ctx.internal(format!("{op:?} is not defined on {ty}")),
    }
}

fn special(ctx: Ctx, s: Special, out: &mut Lanes) {
    let l = ctx.launch;
    let dim = |d: Dim| match d {
        Dim::X => 0,
        Dim::Y => 1,
        Dim::Z => 2,
    };
    match s {
        Special::ThreadIdx(d) => {
            let first = ctx.warp_index as usize * 32;
            let table = &l.thread_index[dim(d)][first..first + 32];
            for (o, &t) in out.iter_mut().zip(table) {
                *o = u64::from(t);
            }
        }
        Special::BlockDim(d) => *out = [u64::from(l.block[dim(d)]); 32],
        Special::BlockIdx(d) => *out = [u64::from(ctx.block_idx[dim(d)]); 32],
        Special::GridDim(d) => *out = [u64::from(l.grid[dim(d)]); 32],
        Special::LaneId => {
            for (lane, o) in out.iter_mut().enumerate() {
                *o = lane as u64;
            }
        }
        Special::ClusterCtaRank => *out = [u64::from(ctx.rank); 32],
        Special::ClusterCtaIdx(d) => {
            *out = [u64::from(ctx.block_idx[dim(d)] % l.cluster[dim(d)]); 32]
        }
        Special::ClusterDim(d) => *out = [u64::from(l.cluster[dim(d)]); 32],
        Special::ClusterIdx(d) => *out = [u64::from(ctx.block_idx[dim(d)] / l.cluster[dim(d)]); 32],
        Special::ClusterCount(d) => *out = [u64::from(l.grid[dim(d)] / l.cluster[dim(d)]); 32],
    }
}

/// `shfl.sync` over the lanes in `mask`; a source outside the warp gives the lane's own value,
/// an inactive source is an error.
fn shuffle(
    ctx: Ctx,
    mode: ShuffleMode,
    v: &Lanes,
    arg: &Lanes,
    mask: u32,
    out: &mut Lanes,
) -> Result<(), EmuError> {
    for l in lanes_of(mask) {
        // Only the low five bits of the lane operand count, as in PTX's `shfl.sync`.
        let s = arg[l as usize] as u32 & 31;
        let src = match mode {
            ShuffleMode::Idx => Some(s),
            ShuffleMode::Up => l.checked_sub(s),
            ShuffleMode::Down => l.checked_add(s),
            ShuffleMode::Xor => Some(l ^ s),
        }
        .filter(|&src| src < 32)
        .unwrap_or(l);
        if mask >> src & 1 == 0 {
            return Err(EmuError::ShuffleInactiveLane {
                kernel: ctx.kernel_name(),
                block: ctx.block_idx,
                thread: ctx.thread(l),
                source_lane: src,
            });
        }
        out[l as usize] = v[src as usize];
    }
    Ok(())
}
