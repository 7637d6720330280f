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
//!
//! Faults found while running are turned into [`EmuError`]s here, with kernel, block, thread
//! and address; nothing in this file panics on user input.

use std::sync::atomic::{Ordering, fence};

use cuprum_ir::{
    AddressSpace, AtomicOp, Op, ScalarType, ShuffleMode, Special, Stmt, TrapKind, Value, VoteMode,
};

use crate::error::{AccessKind, Dim3, EmuError};
use crate::exec::Launch;
use crate::ops::{self, Lanes, OpFault};
use crate::shared::{SharedFault, SharedMem};
use crate::{atomic, cast};

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

/// Everything one warp needs to run: the launch, this block's identity and the slices of the
/// block state that belong to this warp.
pub(crate) struct Exec<'a, 'k> {
    pub(crate) launch: &'a Launch<'k>,
    pub(crate) block_idx: Dim3,
    pub(crate) block_linear: u64,
    pub(crate) warp_index: u32,
    /// This warp's registers, indexed by value.
    pub(crate) regs: &'a mut [Lanes],
    /// This warp's variables, indexed by variable.
    pub(crate) vars: &'a mut [Lanes],
    pub(crate) shared: &'a mut SharedMem,
    /// This warp's local memory: 32 lanes of `launch.local_size` bytes each.
    pub(crate) local: &'a mut [u8],
    /// Index of the global allocation last accessed.
    pub(crate) hint: &'a mut usize,
}

#[inline(always)]
fn lanes_of(mut m: u32) -> impl Iterator<Item = u32> {
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

impl<'k> Exec<'_, 'k> {
    fn kernel_name(&self) -> String {
        self.launch.kernel.name.clone()
    }

    /// The block-linear thread index of `lane`.
    fn tid(&self, lane: u32) -> u32 {
        self.warp_index * 32 + lane
    }

    fn thread(&self, lane: u32) -> Dim3 {
        self.launch.thread_coords(self.tid(lane))
    }

    fn internal(&self, message: impl Into<String>) -> EmuError {
        EmuError::Internal {
            kernel: self.kernel_name(),
            message: message.into(),
        }
    }

    /// Runs `warp` until it finishes or reaches a barrier.
    pub(crate) fn run(&mut self, warp: &mut Warp<'k>) -> Result<Stop, EmuError> {
        loop {
            let Some(top) = warp.frames.last_mut() else {
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
                Stmt::Def { value, op } => self.def(*value, op, mask)?,
                Stmt::WriteVar { var, value } => {
                    let v = &self.regs[value.index()];
                    let dst = &mut self.vars[var.index()];
                    for l in lanes_of(mask) {
                        dst[l as usize] = v[l as usize];
                    }
                }
                Stmt::Store { space, addr, value } => {
                    let size = self.launch.types[value.index()].size_bytes();
                    let a = self.regs[addr.index()];
                    let v = self.regs[value.index()];
                    self.store(*space, size, &a, &v, mask)?;
                }
                Stmt::If {
                    cond,
                    then,
                    otherwise,
                } => {
                    let t = ops::true_mask(&self.regs[cond.index()]) & mask;
                    let e = mask & !t;
                    if t != 0 {
                        warp.frames.push(Frame {
                            stmts: &then.stmts,
                            pc: 0,
                            mask: t,
                            kind: FrameKind::Then {
                                otherwise: &otherwise.stmts,
                                else_mask: e,
                            },
                        });
                    } else {
                        warp.frames.push(Frame {
                            stmts: &otherwise.stmts,
                            pc: 0,
                            mask: e,
                            kind: FrameKind::Plain,
                        });
                    }
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
                }
                Stmt::Barrier => {
                    let live = warp.live();
                    if mask != live {
                        let away = live & !mask;
                        let lane = away.trailing_zeros();
                        return Err(EmuError::BarrierDivergence {
                            kernel: self.kernel_name(),
                            block: self.block_idx,
                            thread: self.thread(lane),
                            message: format!(
                                "only {} of the {} live threads of warp {} reach this barrier; \
                                 this thread is elsewhere (the other arm of an `if`, or another \
                                 iteration of or outside a loop). Every thread of the block that \
                                 has not returned must reach the same barrier",
                                mask.count_ones(),
                                live.count_ones(),
                                self.warp_index
                            ),
                        });
                    }
                    return Ok(Stop::Barrier(stmt as *const Stmt as usize));
                }
                Stmt::Fence { .. } => fence(Ordering::SeqCst),
                Stmt::Trap(kind) => return Err(self.trap(kind, mask)),
            }
        }
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
                    if self.launch.stopped(self.block_linear) {
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
        Err(self.internal("`Break` or `Continue` outside a loop"))
    }

    fn trap(&self, kind: &TrapKind, mask: u32) -> EmuError {
        let lane = mask.trailing_zeros();
        let (kernel, block, thread) = (self.kernel_name(), self.block_idx, self.thread(lane));
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
                site: format!("`{site}`"),
            },
            TrapKind::Assert { message } => EmuError::AssertFailed {
                kernel,
                block,
                thread,
                message: message.clone(),
            },
        }
    }

    fn op_fault(&self, fault: OpFault, value: Value, op: &Op, ty: ScalarType) -> EmuError {
        let name = match op {
            Op::Binary(b, ..) => format!("{b:?}"),
            _ => "operation".to_string(),
        };
        let site = format!("the {ty} `{name}` defining %{}", value.index());
        let (kernel, block) = (self.kernel_name(), self.block_idx);
        match fault {
            OpFault::DivideByZero { lane } => EmuError::DivideByZero {
                kernel,
                block,
                thread: self.thread(lane),
                site,
            },
            OpFault::DivideOverflow { lane } => EmuError::DivideOverflow {
                kernel,
                block,
                thread: self.thread(lane),
                site,
            },
            OpFault::Unsupported => self.internal(format!("{op:?} is not defined on {ty}")),
        }
    }

    /// Executes `value = op` for the lanes in `mask`.
    fn def(&mut self, value: Value, op: &Op, mask: u32) -> Result<(), EmuError> {
        let l = self.launch;
        let mut out: Lanes = [0; 32];
        let ty = |v: &Value| l.types[v.index()];
        match op {
            Op::Const(c) => out = [c.bits; 32],
            Op::Param(i) | Op::SliceBase(i) => out = [l.params[*i as usize][0]; 32],
            Op::SliceLen(i) => out = [l.params[*i as usize][1]; 32],
            Op::SharedAddr(i) => out = [u64::from(l.shared_offsets[*i as usize]); 32],
            Op::DynSharedAddr => out = [u64::from(l.dyn_shared_offset); 32],
            Op::LocalAddr(i) => out = [u64::from(l.local_offsets[*i as usize]); 32],
            Op::Special(s) => self.special(*s, &mut out),
            Op::Unary(u, a) => ops::unary(*u, ty(a), &self.regs[a.index()], &mut out)
                .map_err(|f| self.op_fault(f, value, op, ty(a)))?,
            Op::Binary(b, x, y) => ops::binary(
                *b,
                ty(x),
                &self.regs[x.index()],
                &self.regs[y.index()],
                &mut out,
                mask,
            )
            .map_err(|f| self.op_fault(f, value, op, ty(x)))?,
            Op::Ternary(_, a, b, c) => ops::mul_add(
                ty(a),
                &self.regs[a.index()],
                &self.regs[b.index()],
                &self.regs[c.index()],
                &mut out,
            )
            .map_err(|f| self.op_fault(f, value, op, ty(a)))?,
            Op::Compare(c, x, y) => ops::compare(
                *c,
                ty(x),
                &self.regs[x.index()],
                &self.regs[y.index()],
                &mut out,
            ),
            Op::Select {
                cond,
                if_true,
                if_false,
            } => ops::select(
                &self.regs[cond.index()],
                &self.regs[if_true.index()],
                &self.regs[if_false.index()],
                &mut out,
            ),
            Op::Cast { value: v, to } => cast::cast(ty(v), *to, &self.regs[v.index()], &mut out),
            Op::Bitcast { value: v, .. } => out = self.regs[v.index()],
            Op::ReadVar(var) => out = self.vars[var.index()],
            Op::Load { space, ty: t, addr } => {
                let a = self.regs[addr.index()];
                self.load(*space, *t, &a, mask, &mut out)?;
            }
            Op::Atomic {
                op: aop,
                space,
                addr,
                value: v,
                compare,
                ..
            } => {
                let a = self.regs[addr.index()];
                let x = self.regs[v.index()];
                let c = compare.map_or([0; 32], |c| self.regs[c.index()]);
                self.atomic(*aop, *space, ty(v), &a, &x, &c, mask, &mut out)?;
            }
            Op::Shuffle {
                mode,
                value: v,
                lane,
            } => self.shuffle(*mode, v, lane, mask, &mut out)?,
            Op::Vote { mode, pred } => {
                let bits = ops::true_mask(&self.regs[pred.index()]) & mask;
                let r = match mode {
                    VoteMode::All => u64::from(bits == mask),
                    VoteMode::Any => u64::from(bits != 0),
                    VoteMode::Ballot => u64::from(bits),
                };
                out = [r; 32];
            }
        }
        self.regs[value.index()] = out;
        Ok(())
    }

    fn special(&self, s: Special, out: &mut Lanes) {
        let l = self.launch;
        let dim = |d: cuprum_ir::Dim| match d {
            cuprum_ir::Dim::X => 0,
            cuprum_ir::Dim::Y => 1,
            cuprum_ir::Dim::Z => 2,
        };
        match s {
            Special::ThreadIdx(d) => {
                let d = dim(d);
                for (lane, o) in out.iter_mut().enumerate() {
                    *o = u64::from(l.thread_coords(self.tid(lane as u32))[d]);
                }
            }
            Special::BlockDim(d) => *out = [u64::from(l.block[dim(d)]); 32],
            Special::BlockIdx(d) => *out = [u64::from(self.block_idx[dim(d)]); 32],
            Special::GridDim(d) => *out = [u64::from(l.grid[dim(d)]); 32],
            Special::LaneId => {
                for (lane, o) in out.iter_mut().enumerate() {
                    *o = lane as u64;
                }
            }
        }
    }

    fn shuffle(
        &self,
        mode: ShuffleMode,
        value: &Value,
        lane: &Value,
        mask: u32,
        out: &mut Lanes,
    ) -> Result<(), EmuError> {
        let v = &self.regs[value.index()];
        let arg = &self.regs[lane.index()];
        for l in lanes_of(mask) {
            let s = arg[l as usize] as u32;
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
                    kernel: self.kernel_name(),
                    block: self.block_idx,
                    thread: self.thread(l),
                    source_lane: src,
                });
            }
            out[l as usize] = v[src as usize];
        }
        Ok(())
    }

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

    fn shared_fault(
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
        }
    }

    /// The byte offset of `lane`'s local access `[off, off + size)` in this warp's local
    /// memory, after the bounds and alignment checks.
    fn local_at(
        &self,
        lane: u32,
        off: u64,
        size: u32,
        access: AccessKind,
    ) -> Result<usize, EmuError> {
        let per = self.launch.local_size as u64;
        if off.checked_add(u64::from(size)).is_none_or(|end| end > per) {
            return Err(self.oob(lane, off, size, AddressSpace::Local, access));
        }
        if !off.is_multiple_of(u64::from(size)) {
            return Err(self.misaligned(lane, off, size, AddressSpace::Local));
        }
        Ok((u64::from(lane) * per + off) as usize)
    }

    fn load(
        &mut self,
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
                let global = &self.launch.global;
                for l in lanes_of(mask) {
                    let a = addr[l as usize];
                    let Some((alloc, off)) = global.locate(a, size64, self.hint) else {
                        return Err(self.oob(l, a, size, space, AccessKind::Load));
                    };
                    if !a.is_multiple_of(size64) {
                        return Err(self.misaligned(l, a, size, space));
                    }
                    out[l as usize] = alloc.load(off, size);
                }
            }
            AddressSpace::Shared => {
                for l in lanes_of(mask) {
                    let a = addr[l as usize];
                    let tid = self.tid(l);
                    out[l as usize] = self
                        .shared
                        .load(a as u32, size, tid)
                        .map_err(|f| self.shared_fault(f, l, a, size, AccessKind::Load))?;
                }
            }
            AddressSpace::Local => {
                for l in lanes_of(mask) {
                    let at = self.local_at(l, addr[l as usize], size, AccessKind::Load)?;
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

    fn store(
        &mut self,
        space: AddressSpace,
        size: u32,
        addr: &Lanes,
        v: &Lanes,
        mask: u32,
    ) -> Result<(), EmuError> {
        let size64 = u64::from(size);
        match space {
            AddressSpace::Global => {
                let global = &self.launch.global;
                for l in lanes_of(mask) {
                    let a = addr[l as usize];
                    let Some((alloc, off)) = global.locate(a, size64, self.hint) else {
                        return Err(self.oob(l, a, size, space, AccessKind::Store));
                    };
                    if !a.is_multiple_of(size64) {
                        return Err(self.misaligned(l, a, size, space));
                    }
                    alloc.store(off, size, v[l as usize]);
                }
            }
            AddressSpace::Shared => {
                for l in lanes_of(mask) {
                    let a = addr[l as usize];
                    let tid = self.tid(l);
                    self.shared
                        .store(a as u32, size, v[l as usize], tid)
                        .map_err(|f| self.shared_fault(f, l, a, size, AccessKind::Store))?;
                }
            }
            AddressSpace::Local => {
                for l in lanes_of(mask) {
                    let at = self.local_at(l, addr[l as usize], size, AccessKind::Store)?;
                    let bytes = v[l as usize].to_le_bytes();
                    self.local[at..at + size as usize].copy_from_slice(&bytes[..size as usize]);
                }
            }
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn atomic(
        &mut self,
        op: AtomicOp,
        space: AddressSpace,
        ty: ScalarType,
        addr: &Lanes,
        val: &Lanes,
        cmp: &Lanes,
        mask: u32,
        out: &mut Lanes,
    ) -> Result<(), EmuError> {
        let size = ty.size_bytes();
        let size64 = u64::from(size);
        // Lanes apply their updates one after another, in lane order.
        for l in lanes_of(mask) {
            let (a, x, c) = (addr[l as usize], val[l as usize], cmp[l as usize]);
            let f = |old: u64| atomic::apply(op, ty, old, x, c);
            out[l as usize] = match space {
                AddressSpace::Global => {
                    let Some((alloc, off)) = self.launch.global.locate(a, size64, self.hint) else {
                        return Err(self.oob(l, a, size, space, AccessKind::Atomic));
                    };
                    if !a.is_multiple_of(size64) {
                        return Err(self.misaligned(l, a, size, space));
                    }
                    alloc.rmw(off, size, f)
                }
                AddressSpace::Shared => {
                    let tid = self.tid(l);
                    self.shared
                        .atomic(a as u32, size, tid, f)
                        .map_err(|e| self.shared_fault(e, l, a, size, AccessKind::Atomic))?
                }
                AddressSpace::Local => return Err(self.internal("atomic on local memory")),
            };
        }
        Ok(())
    }
}
