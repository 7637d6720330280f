//! Code generation: the planned tile kernel becomes kernel IR, built with `KernelBuilder`.
//!
//! * this file: [`Emitter`] (typed helpers over the builder, the per-thread coordinates of
//!   each layout, computed once at the top of the kernel), statements and uniform control
//!   flow (`If`, `For`, `Loop`, `Break`, `Continue`, `Return`, prints, assertions);
//! * `values`: operations on tiles: scalars, element-wise operations (with the integer
//!   division checks), shape operations and layout conversions (in registers when the
//!   layouts allow, else through shared memory);
//! * `computed`: values recomputed where they are used (index and mask arithmetic of
//!   iotas), and the one per-element definition of every element-wise operation;
//! * `memory`: kernel parameters, loads and stores (a fast path for tiles wholly inside the
//!   tensor, with 16-byte vector accesses where strides allow, and a predicated path for edge
//!   tiles);
//! * `raw`: gathers and scatters through the raw pointers of `unsafe` entries, element by
//!   element at their offsets;
//! * `matmul`: `mma`, through shared memory, with `mma.sync` for `f16`/`bf16` inputs and
//!   fused multiply-add chains for `f32`/`f64`;
//! * `reduce`: reductions (in each thread, then shuffles across lanes, then shared memory
//!   across warps);
//! * `scratch`: the shared memory those exchanges go through, placed so that most need no
//!   barrier before their writes.
//!
//! Every value a tile operation needs per register is a per-thread base (from the prologue)
//! plus a constant, recomputed where it is used; the optimizer's CSE merges the copies. No
//! value is cached across kernel IR blocks, so none is used outside the block defining it.

mod computed;
mod deferred;
mod matmul;
mod memory;
mod producer;
mod raw;
mod reduce;
mod ring;
mod scratch;
mod staged;
mod values;
pub(crate) mod wgmma_gemm;
mod wgmma_mma;

use cuprum_ir::{
    BinaryOp, Block, BuildError, CmpOp, Constant, Dim, KernelBuilder, LaunchBounds, Op, ScalarType,
    Special, Stmt, TrapKind, Value, Var,
};
use cuprum_tile_ir::{Stmt as TStmt, TileKernel, TileValue, known_sizes};

use crate::plan::{LayoutId, Plan, Repr};
use crate::{ArgSlot, LowerError};

pub(crate) type R<T> = Result<T, LowerError>;

/// A lowered tile value (see [`Repr`]).
#[derive(Clone, Debug)]
pub(crate) enum Lv {
    /// One value every thread holds, standing for every element.
    Uniform(Value),
    /// Element `c` is `c[axis]` (cast to the element type where used).
    Iota { axis: usize },
    /// Registers in a layout, in the layout's register order.
    Dist { layout: LayoutId, regs: Vec<Value> },
    /// An expression evaluated where it is used ([`Repr::Computed`]).
    Computed(std::rc::Rc<computed::Computed>),
}

/// The per-thread part of a layout's coordinates, computed once at the top of the kernel.
struct ThreadCoords {
    /// Per axis, the thread's base raw coordinate (`U32`).
    bases: Vec<Value>,
    /// Whether the thread's replication bits are zero (`None` when it has none).
    primary: Option<Value>,
}

/// The kernel IR variables of one loop being lowered.
struct LoopVars {
    /// One list of variables per carried value (see [`Emitter::make_vars`]).
    vars: Vec<Vec<Var>>,
    /// The carried values, whose representations the variables hold.
    args: Vec<TileValue>,
    /// For a `For` loop: the counter variable and the step.
    counter: Option<(Var, Value)>,
    /// The values the body yields into the variables, once the body is being emitted.
    yields: Vec<TileValue>,
}

/// The state of one lowering.
pub(crate) struct Emitter<'k> {
    pub(crate) kernel: &'k TileKernel,
    pub(crate) plan: &'k Plan,
    b: KernelBuilder,
    vals: Vec<Option<Lv>>,
    /// Tensor-core operands already in a fragment layout (`Plan::eager_layout`): the
    /// layout, the registers and the packed fragment words, made once where the operand is
    /// defined.
    fragments: std::collections::HashMap<TileValue, (LayoutId, matmul::Packed)>,
    /// The loads staged for the `mma`s that read them (`crate::staging`).
    staged_loads: std::collections::HashSet<TileValue>,
    /// Loop-invariant `wgmma` operands kept in shared memory since their definition
    /// (`wgmma_mma`, `Emitter::keep_resident`).
    resident: std::collections::HashMap<TileValue, wgmma_mma::SwizzledTile>,
    /// Per load that may be copied straight into a resident tile, that tile's value
    /// (`crate::staging::resident_candidates`).
    resident_candidates: std::collections::HashMap<TileValue, TileValue>,
    /// Per resident tile copied so, once its load is met, that load.
    resident_copies: std::collections::HashMap<TileValue, TileValue>,
    /// Whether resident tiles' copies are in flight (`Emitter::settle_resident_copies`).
    resident_copies_pending: bool,
    /// The `cp.async` rings of the loops being emitted, innermost last (`ring`).
    ring_frames: Vec<ring::RingFrame>,
    /// The loops a producer warpgroup copies the rings' tiles for (`producer`).
    producer: Option<producer::Producer>,
    /// The loop being emitted whose last product is issued an iteration late (`deferred`).
    deferred: Option<deferred::Deferred>,
    /// The copy patterns of the staged loads the rings being emitted copy, computed before
    /// their loops (`ring`, `staged::CopyPattern`).
    copy_patterns: std::collections::HashMap<TileValue, staged::CopyPattern>,
    /// Shared memory below this is reserved (rings' buffers): scratch claims go above it.
    scratch_floor: u32,
    /// Each value's defining operation.
    defs: std::collections::HashMap<TileValue, cuprum_tile_ir::Op>,
    params: Vec<memory::ParamArgs>,
    coords: Vec<ThreadCoords>,
    tid: Value,
    shared_base: Value,
    /// Bytes of dynamic shared memory the kernel uses.
    pub(crate) shared_bytes: u32,
    /// What of the shared scratch threads may still be reading (see `scratch`).
    scratch_in_use: scratch::InUse,
    /// Barriers and scratch claims so far: a loop body that adds none leaves the scratch as
    /// it found it.
    scratch_events: u64,
    /// The current tile of each enclosing loop over a mapped output's tiles, innermost
    /// last: the tensor and the tile's first element's coordinates (`I64`).
    mapped: Vec<(u32, Vec<Value>)>,
    /// Reductions whose reads wait for their first use (see `scratch`).
    pending_reads: Vec<scratch::PendingRead>,
    loops: Vec<LoopVars>,
    /// Per tile parameter: whether a barrier follows each of its accesses (a partitioned
    /// tensor accessed at more than one place, so that different threads may touch one
    /// element in turn).
    barrier_after: Vec<bool>,
    /// The eviction hint of each load that has one ([`crate::evict`]).
    evictions: std::collections::HashMap<TileValue, cuprum_ir::Eviction>,
    pub(crate) args: Vec<ArgSlot>,
    /// The tile block's index along grid axes x and y (`U32`) where a recipe deals the tiles
    /// to the hardware's blocks in an order of its own (`wgmma_gemm`'s grouped order);
    /// `None`: the block's own `ctaid`.
    pub(super) block_index: Option<[Value; 2]>,
    /// The tile grid along axes x and y (`U32`) where a persistent recipe's blocks loop over
    /// the tile blocks (`wgmma_gemm`); `None`: the launch's `nctaid`.
    pub(super) grid_dims: Option<[Value; 2]>,
    /// Whether the kernel is for compute capability 9.0 (sm_90a code): tensor-core `mma`s
    /// whose layouts are warpgroups' take `wgmma` (`wgmma_mma`).
    pub(crate) hopper: bool,
}

impl<'k> Emitter<'k> {
    /// Starts the kernel: parameters, thread index, every layout's per-thread coordinates.
    pub(crate) fn new(
        kernel: &'k TileKernel,
        plan: &'k Plan,
        facts: &[crate::TensorFacts],
        min_blocks_per_sm: Option<u32>,
    ) -> R<Self> {
        let mut b = KernelBuilder::new(kernel.name.clone());
        b.set_block(Some((plan.threads, 1, 1)));
        b.set_launch_bounds(Some(LaunchBounds {
            max_threads: plan.threads,
            min_blocks_per_sm,
        }));
        let indices = (
            b.def(Op::Special(Special::ThreadIdx(Dim::X))),
            b.def(Op::DynSharedAddr),
        );
        let (Ok(tid), Ok(shared_base)) = indices else {
            return Err(LowerError::Internal {
                kernel: kernel.name.clone(),
                message: "the kernel IR refuses a thread index".into(),
            });
        };
        let mut e = Emitter {
            kernel,
            plan,
            b,
            vals: vec![None; kernel.values.len()],
            fragments: std::collections::HashMap::new(),
            staged_loads: crate::staging::staged_loads(kernel, plan),
            resident: std::collections::HashMap::new(),
            resident_candidates: crate::staging::resident_candidates(kernel, plan),
            resident_copies: std::collections::HashMap::new(),
            resident_copies_pending: false,
            ring_frames: Vec::new(),
            producer: None,
            deferred: None,
            copy_patterns: std::collections::HashMap::new(),
            scratch_floor: 0,
            defs: definitions(kernel),
            params: Vec::new(),
            coords: Vec::new(),
            tid,
            shared_base,
            shared_bytes: 0,
            scratch_in_use: scratch::InUse::Nothing,
            scratch_events: 0,
            mapped: Vec::new(),
            pending_reads: Vec::new(),
            loops: Vec::new(),
            barrier_after: memory::barrier_after(kernel),
            evictions: crate::evict::plan(kernel),
            args: Vec::new(),
            block_index: None,
            grid_dims: None,
            hopper: false,
        };
        e.declare_params(facts)?;
        for id in 0..plan.layouts().len() {
            let c = e.thread_coords(id)?;
            e.coords.push(c);
        }
        Ok(e)
    }

    /// Lowers the kernel's body and returns the kernel IR, its dynamic shared memory and
    /// arguments, and the threads of its blocks (the plan's, and a producer warpgroup's).
    pub(crate) fn run(mut self) -> R<(cuprum_ir::Kernel, u32, Vec<ArgSlot>, u32)> {
        if crate::block_order::axis1_fastest(self.kernel) {
            let index = self.axis1_fastest_index()?;
            self.block_index = Some(index);
        }
        let mut threads = self.plan.threads;
        self.producer = self.plan_producer()?;
        if self.producer.is_some() {
            // One block per multiprocessor, its registers shared out by `setmaxnreg`.
            threads += producer::PRODUCER_THREADS;
            self.b.set_block(Some((threads, 1, 1)));
            self.b.set_launch_bounds(Some(LaunchBounds {
                max_threads: threads,
                min_blocks_per_sm: Some(1),
            }));
            let (cap, _) = Self::producer_registers(self.plan.threads);
            self.b.set_max_registers(Some(cap));
        }
        let body = &self.kernel.body;
        self.stmts(body)?;
        self.finish_producer()?;
        Ok((self.b.finish(), self.shared_bytes, self.args, threads))
    }

    /// The tile block `(a0, a1)` this hardware block runs when blocks go axis 1 fastest
    /// (`block_order`): hardware block `l = x + y * n0` (`n0`, `n1` the grid's sizes) runs
    /// `(l / n1, l % n1)`, computed in `U64` (the grid has up to 2^47 blocks).
    fn axis1_fastest_index(&mut self) -> R<[Value; 2]> {
        use cuprum_ir::{Dim, Special};
        let read = |e: &mut Self, s: Special| -> R<Value> {
            let v = e.def(Op::Special(s))?;
            e.cast(v, ScalarType::U64)
        };
        let x = read(self, Special::BlockIdx(Dim::X))?;
        let y = read(self, Special::BlockIdx(Dim::Y))?;
        let n0 = read(self, Special::GridDim(Dim::X))?;
        let n1 = read(self, Special::GridDim(Dim::Y))?;
        let at = self.mul(y, n0)?;
        let linear = self.add(at, x)?;
        let a0 = self.bin(BinaryOp::Div, linear, n1)?;
        let a1 = self.bin(BinaryOp::Rem, linear, n1)?;
        Ok([
            self.cast(a0, ScalarType::U32)?,
            self.cast(a1, ScalarType::U32)?,
        ])
    }

    // ----- errors -----

    pub(crate) fn unsupported(&self, message: impl Into<String>) -> LowerError {
        LowerError::Unsupported {
            kernel: self.kernel.name.clone(),
            message: message.into(),
        }
    }

    pub(crate) fn internal(&self, message: impl Into<String>) -> LowerError {
        LowerError::Internal {
            kernel: self.kernel.name.clone(),
            message: message.into(),
        }
    }

    fn built<T>(&self, r: Result<T, BuildError>) -> R<T> {
        r.map_err(|e| {
            self.unsupported(format!("the kernel IR has no such operation: {}", e.reason))
        })
    }

    // ----- builder helpers -----

    pub(crate) fn def(&mut self, op: Op) -> R<Value> {
        let r = self.b.def(op);
        self.built(r)
    }

    pub(crate) fn konst(&mut self, c: Constant) -> Value {
        self.b.constant(c)
    }

    pub(crate) fn u32c(&mut self, v: u32) -> Value {
        self.konst(Constant::u32(v))
    }

    pub(crate) fn i64c(&mut self, v: i64) -> Value {
        self.konst(Constant::i64(v))
    }

    pub(crate) fn bin(&mut self, op: BinaryOp, a: Value, b: Value) -> R<Value> {
        let r = self.b.binary(op, a, b);
        self.built(r)
    }

    pub(crate) fn add(&mut self, a: Value, b: Value) -> R<Value> {
        self.bin(BinaryOp::Add, a, b)
    }

    pub(crate) fn mul(&mut self, a: Value, b: Value) -> R<Value> {
        self.bin(BinaryOp::Mul, a, b)
    }

    pub(crate) fn cmp(&mut self, op: CmpOp, a: Value, b: Value) -> R<Value> {
        let r = self.b.compare(op, a, b);
        self.built(r)
    }

    pub(crate) fn select(&mut self, cond: Value, t: Value, f: Value) -> R<Value> {
        let r = self.b.select(cond, t, f);
        self.built(r)
    }

    pub(crate) fn cast(&mut self, value: Value, to: ScalarType) -> R<Value> {
        let r = self.b.cast(value, to);
        self.built(r)
    }

    pub(crate) fn bitcast(&mut self, value: Value, to: ScalarType) -> R<Value> {
        let r = self.b.bitcast(value, to);
        self.built(r)
    }

    pub(crate) fn type_of(&self, v: Value) -> ScalarType {
        self.b.type_of(v)
    }

    /// `a && b`, where either may be absent (true).
    pub(crate) fn and(&mut self, a: Option<Value>, b: Option<Value>) -> R<Option<Value>> {
        Ok(match (a, b) {
            (Some(a), Some(b)) => Some(self.bin(BinaryOp::And, a, b)?),
            (a, None) => a,
            (None, b) => b,
        })
    }

    /// The disjunction of `vs` (`None` when empty).
    pub(crate) fn any(&mut self, vs: &[Value]) -> R<Option<Value>> {
        let mut acc: Option<Value> = None;
        for &v in vs {
            acc = Some(match acc {
                Some(a) => self.bin(BinaryOp::Or, a, v)?,
                None => v,
            });
        }
        Ok(acc)
    }

    pub(crate) fn push(&mut self, stmt: Stmt) {
        self.b.push(stmt);
    }

    pub(crate) fn var(&mut self, ty: ScalarType) -> Var {
        self.b.var("t", ty)
    }

    pub(crate) fn write(&mut self, var: Var, value: Value) {
        self.b.push(Stmt::WriteVar { var, value });
    }

    pub(crate) fn read(&mut self, var: Var) -> R<Value> {
        self.def(Op::ReadVar(var))
    }

    fn block(&mut self, body: impl FnOnce(&mut Self) -> R<()>) -> R<Block> {
        self.b.begin_block();
        let result = body(self);
        let block = self.b.end_block();
        result.map(|()| block)
    }

    /// `if cond { then }`.
    pub(crate) fn if_(&mut self, cond: Value, then: impl FnOnce(&mut Self) -> R<()>) -> R<()> {
        let then = self.block(then)?;
        self.b.push(Stmt::If {
            cond,
            then,
            otherwise: Block::default(),
        });
        Ok(())
    }

    /// `if cond { then }` when `cond` is present, else `then` unconditionally.
    pub(crate) fn if_some(
        &mut self,
        cond: Option<Value>,
        then: impl FnOnce(&mut Self) -> R<()>,
    ) -> R<()> {
        match cond {
            Some(c) => self.if_(c, then),
            None => then(self),
        }
    }

    /// `if cond { then } else { otherwise }`.
    pub(crate) fn if_else(
        &mut self,
        cond: Value,
        then: impl FnOnce(&mut Self) -> R<()>,
        otherwise: impl FnOnce(&mut Self) -> R<()>,
    ) -> R<()> {
        let then = self.block(then)?;
        let otherwise = self.block(otherwise)?;
        self.b.push(Stmt::If {
            cond,
            then,
            otherwise,
        });
        Ok(())
    }

    /// Stops the launch with `kind` when `cond` holds.
    pub(crate) fn trap_if(&mut self, cond: Value, kind: TrapKind) -> R<()> {
        self.if_(cond, |e| {
            e.push(Stmt::Trap(kind));
            Ok(())
        })
    }

    // ----- tile values -----

    pub(crate) fn shape(&self, v: TileValue) -> R<Vec<u32>> {
        known_sizes(&self.kernel.values[v].shape)
            .ok_or_else(|| LowerError::Generic(self.kernel.name.clone()))
    }

    pub(crate) fn elem(&self, v: TileValue) -> R<ScalarType> {
        self.kernel.values[v]
            .elem
            .known()
            .ok_or_else(|| LowerError::Generic(self.kernel.name.clone()))
    }

    pub(crate) fn repr(&self, v: TileValue) -> R<Repr> {
        self.plan
            .repr(v)
            .cloned()
            .ok_or_else(|| self.internal(format!("{v:?} has no planned representation")))
    }

    /// Puts back what `v` held (`None`: nothing), after emitting code with another value
    /// in its place (`ring`'s index statements for another iteration).
    pub(super) fn restore(&mut self, v: TileValue, lv: Option<Lv>) {
        if let Some(slot) = self.vals.get_mut(v.index()) {
            *slot = lv;
        }
    }

    pub(crate) fn get(&self, v: TileValue) -> R<Lv> {
        self.vals
            .get(v.index())
            .cloned()
            .flatten()
            .ok_or_else(|| self.internal(format!("{v:?} is used before it is lowered")))
    }

    /// The value of a rank-0 tile (or any uniform one).
    pub(crate) fn uniform(&self, v: TileValue) -> R<Value> {
        match self.get(v)? {
            Lv::Uniform(u) => Ok(u),
            _ => Err(self.internal(format!("{v:?} is not uniform"))),
        }
    }

    /// Records `v`'s lowered value, which must match its planned representation.
    pub(crate) fn set(&mut self, v: TileValue, lv: Lv) -> R<()> {
        let planned = self.repr(v)?;
        let fits = match (&planned, &lv) {
            (Repr::Uniform, Lv::Uniform(_)) => true,
            (Repr::Iota { axis: a }, Lv::Iota { axis: b }) => a == b,
            (Repr::Computed, Lv::Computed(_)) => true,
            (Repr::Dist(a), Lv::Dist { layout: b, regs }) => {
                a == b && regs.len() == self.plan.layout(*a).registers()
            }
            _ => false,
        };
        if !fits {
            return Err(self.internal(format!(
                "{v:?} was lowered as {lv:?}, planned as {planned:?}"
            )));
        }
        self.vals[v.index()] = Some(lv);
        Ok(())
    }

    // ----- coordinates -----

    /// The per-thread coordinates of layout `id`, at the top of the kernel.
    fn thread_coords(&mut self, id: LayoutId) -> R<ThreadCoords> {
        let layout = self.plan.layout(id).clone();
        let mut bases = Vec::with_capacity(layout.rank());
        for axis in 0..layout.rank() {
            let mut base: Option<Value> = None;
            for (shift, count, step) in layout.bit_runs(axis) {
                let s = self.u32c(shift);
                let shifted = self.bin(BinaryOp::Shr, self.tid, s)?;
                let m = self.u32c((1u32 << count) - 1);
                let field = self.bin(BinaryOp::And, shifted, m)?;
                let k = self.u32c(step);
                let term = self.mul(field, k)?;
                base = Some(match base {
                    Some(b) => self.add(b, term)?,
                    None => term,
                });
            }
            let zero = self.u32c(0);
            bases.push(base.unwrap_or(zero));
        }
        let mask = layout.replication_mask();
        let primary = if mask == 0 {
            None
        } else {
            Some(self.thread_bits_zero(mask)?)
        };
        Ok(ThreadCoords { bases, primary })
    }

    /// Whether the thread's index has every bit of `mask` clear.
    pub(crate) fn thread_bits_zero(&mut self, mask: u32) -> R<Value> {
        let m = self.u32c(mask);
        let bits = self.bin(BinaryOp::And, self.tid, m)?;
        let zero = self.u32c(0);
        self.cmp(CmpOp::Eq, bits, zero)
    }

    pub(crate) fn tid(&self) -> Value {
        self.tid
    }

    /// The raw coordinate (`U32`) of register `reg` of layout `id` along `axis`.
    pub(crate) fn raw_coord(&mut self, id: LayoutId, reg: usize, axis: usize) -> R<Value> {
        let base = self.coords[id].bases[axis];
        let off = self.plan.layout(id).register(reg)[axis];
        if off == 0 {
            return Ok(base);
        }
        let k = self.u32c(off);
        self.add(base, k)
    }

    /// The coordinate (`U32`) of the element register `reg` of layout `id` holds along
    /// `axis` (the raw coordinate clamped to the tile).
    pub(crate) fn coord(&mut self, id: LayoutId, reg: usize, axis: usize) -> R<Value> {
        let raw = self.raw_coord(id, reg, axis)?;
        let layout = self.plan.layout(id);
        if !layout.may_clamp(reg, axis) {
            return Ok(raw);
        }
        let last = self.u32c(layout.shape()[axis] - 1);
        self.bin(BinaryOp::Min, raw, last)
    }

    /// Whether register `reg`'s raw coordinate along `axis` is inside the tile (`None`:
    /// always).
    pub(crate) fn valid_along(
        &mut self,
        id: LayoutId,
        reg: usize,
        axis: usize,
    ) -> R<Option<Value>> {
        let layout = self.plan.layout(id);
        if !layout.may_clamp(reg, axis) {
            return Ok(None);
        }
        let n = layout.shape()[axis];
        let raw = self.raw_coord(id, reg, axis)?;
        let n = self.u32c(n);
        Ok(Some(self.cmp(CmpOp::Lt, raw, n)?))
    }

    /// Whether register `reg`'s raw coordinates are inside the tile on every axis.
    pub(crate) fn valid(&mut self, id: LayoutId, reg: usize) -> R<Option<Value>> {
        let mut acc = None;
        for axis in 0..self.plan.layout(id).rank() {
            let v = self.valid_along(id, reg, axis)?;
            acc = self.and(acc, v)?;
        }
        Ok(acc)
    }

    /// Whether the thread's replication bits of layout `id` are zero (`None`: it has none).
    pub(crate) fn primary(&self, id: LayoutId) -> Option<Value> {
        self.coords[id].primary
    }

    /// The row-major index (`U32`) of register `reg`'s element, with `weights` per axis
    /// (see `CoordMap::weights`).
    pub(crate) fn linear_index(&mut self, id: LayoutId, reg: usize, weights: &[u64]) -> R<Value> {
        let mut acc: Option<Value> = None;
        for (axis, &w) in weights.iter().enumerate() {
            if w == 0 {
                continue;
            }
            let c = self.coord(id, reg, axis)?;
            let w = u32::try_from(w)
                .map_err(|_| self.unsupported("a tile with more than 2^32 elements"))?;
            let term = if w == 1 {
                c
            } else {
                let k = self.u32c(w);
                self.mul(c, k)?
            };
            acc = Some(match acc {
                Some(a) => self.add(a, term)?,
                None => term,
            });
        }
        Ok(match acc {
            Some(a) => a,
            None => self.u32c(0),
        })
    }

    // ----- statements -----

    /// Lowers a block's statements; no read is pending after it (see `scratch`).
    fn stmts(&mut self, block: &cuprum_tile_ir::Block) -> R<bool> {
        for s in &block.stmts {
            if s.is_terminator() || !s.nested().is_empty() {
                self.make_pending_reads()?;
            } else {
                for v in s.operands() {
                    self.make_pending_read(v)?;
                }
            }
            // Resident copies in flight are waited for before control flow (a `for` loop
            // waits after its rings' first copies, `for_stmt`).
            if s.is_terminator() || !(s.nested().is_empty() || matches!(s, TStmt::For { .. })) {
                self.settle_resident_copies();
            }
            self.ready_deferred(s)?;
            self.stmt(s)?;
        }
        self.make_pending_reads()?;
        Ok(block.stmts.last().is_some_and(TStmt::is_terminator))
    }

    /// Runs `body(k)` for `k = start, start + step, ...` while `k < end` (one integer type;
    /// `end` and `step` the same in every iteration), as one kernel IR loop.
    pub(super) fn counted_loop(
        &mut self,
        start: Value,
        end: Value,
        step: Value,
        body: impl FnOnce(&mut Self, Value) -> R<()>,
    ) -> R<()> {
        let ty = self.b.type_of(start);
        let counter = self.var(ty);
        self.write(counter, start);
        let block = self.block(|e| {
            let k = e.break_unless_below(counter, end)?;
            body(e, k)?;
            let next = e.add(k, step)?;
            e.write(counter, next);
            Ok(())
        })?;
        self.push(Stmt::Loop { body: block });
        Ok(())
    }

    /// The head of a counted loop's body: reads `counter` and leaves the loop unless it is
    /// below `limit` (both of one integer type); returns the value read.
    pub(super) fn break_unless_below(&mut self, counter: Var, limit: Value) -> R<Value> {
        let c = self.read(counter)?;
        let more = self.cmp(CmpOp::Lt, c, limit)?;
        let done = self.def(Op::Unary(cuprum_ir::UnaryOp::Not, more))?;
        self.if_(done, |e| {
            e.push(Stmt::Break);
            Ok(())
        })?;
        Ok(c)
    }

    fn stmt(&mut self, s: &TStmt) -> R<()> {
        match s {
            TStmt::Def {
                value,
                op:
                    cuprum_tile_ir::Op::Reduce {
                        value: input,
                        axis,
                        combine,
                    },
            } => self.reduce(*value, *input, *axis as usize, combine),
            TStmt::Def { value, op } => {
                let lv = self.op(*value, op)?;
                self.set(*value, lv)?;
                if let Some((layout, operand)) = self.plan.eager_layout(*value) {
                    if operand == crate::mma_layout::Operand::A && self.stays_resident(*value)? {
                        self.keep_resident(*value, layout)?;
                    } else {
                        let packed = self.packed_fragments(*value, layout, operand)?;
                        self.fragments.insert(*value, (layout, packed));
                    }
                }
                Ok(())
            }
            TStmt::Store { tensor, value } => self.store(*tensor, *value),
            TStmt::StorePart {
                tensor,
                index,
                value,
                ..
            } => self.store_part(*tensor, index, *value),
            TStmt::Scatter {
                tensor,
                offsets,
                value,
                mask,
            } => self.scatter(*tensor, *offsets, *value, *mask),
            TStmt::If {
                cond,
                then,
                otherwise,
                results,
            } => self.if_stmt(*cond, then, otherwise, results),
            TStmt::For {
                counter,
                start,
                end,
                step,
                args,
                inits,
                body,
                results,
            } => self.for_stmt(*counter, [*start, *end, *step], args, inits, body, results),
            TStmt::Loop {
                args,
                inits,
                body,
                results,
            } => self.loop_stmt(args, inits, body, results),
            TStmt::ForTiles {
                tensor,
                map,
                coords,
                args,
                inits,
                body,
                results,
            } => self.for_tiles(*tensor, map, coords, [args, inits, results], body),
            TStmt::StoreMapped { tensor, value } => self.store_mapped(*tensor, *value),
            TStmt::Break { values } => {
                self.write_loop_args(values)?;
                self.push(Stmt::Break);
                Ok(())
            }
            TStmt::Continue { values } => {
                self.write_loop_args(values)?;
                self.advance_counter()?;
                self.push(Stmt::Continue);
                Ok(())
            }
            TStmt::Return => {
                self.push(Stmt::Return);
                Ok(())
            }
            TStmt::Print { format, args } => {
                let values = args
                    .iter()
                    .map(|&a| self.uniform(a))
                    .collect::<R<Vec<_>>>()?;
                let zero = self.u32c(0);
                let first = self.cmp(CmpOp::Eq, self.tid, zero)?;
                let format = format.clone();
                self.if_(first, |e| {
                    let r = e.b.print(format, values);
                    e.built(r)
                })
            }
            TStmt::Assert { cond, message } => {
                let c = self.uniform(*cond)?;
                let failed = self.def(Op::Unary(cuprum_ir::UnaryOp::Not, c))?;
                self.trap_if(
                    failed,
                    TrapKind::Assert {
                        message: message.clone(),
                    },
                )
            }
            // Line information: the kernel IR's marker, before the code of what follows.
            TStmt::SourceLine { file, line, column } => {
                self.push(Stmt::SourceLine {
                    file: file.clone(),
                    line: *line,
                    column: *column,
                });
                Ok(())
            }
        }
    }

    /// Variables that hold a value of `v`'s representation: one per register, one for a
    /// uniform value, none for an iota.
    fn make_vars(&mut self, v: TileValue) -> R<Vec<Var>> {
        let ty = self.elem(v)?;
        let n = match self.repr(v)? {
            Repr::Uniform => 1,
            Repr::Iota { .. } => 0,
            Repr::Computed => return Err(self.internal("a loop variable planned as computed")),
            Repr::Dist(id) => self.plan.layout(id).registers(),
        };
        Ok((0..n).map(|_| self.var(ty)).collect())
    }

    /// The innermost loop's variables that `value` is yielded into at the end of the body,
    /// when they hold it in its own representation (register `r` in variable `r`): a product
    /// accumulated in place there needs no copy in and out of the loop's registers.
    pub(super) fn carried_vars_of(&self, value: TileValue) -> Option<Vec<Var>> {
        let frame = self.loops.last()?;
        let at = frame.yields.iter().position(|&y| y == value)?;
        let arg = *frame.args.get(at)?;
        let same = matches!(
            (self.plan.repr(arg), self.plan.repr(value)),
            (Some(Repr::Dist(a)), Some(Repr::Dist(v))) if a == v
        );
        same.then(|| frame.vars.get(at).cloned()).flatten()
    }

    /// The innermost loop's variables of carried value `arg`.
    pub(super) fn loop_vars_of(&self, arg: TileValue) -> Option<Vec<Var>> {
        let frame = self.loops.last()?;
        let at = frame.args.iter().position(|&a| a == arg)?;
        frame.vars.get(at).cloned()
    }

    /// Writes `value`, converted to `like`'s representation, into `vars`.
    fn write_vars(&mut self, vars: &[Var], value: TileValue, like: TileValue) -> R<()> {
        let regs = self.in_repr_of(value, like)?;
        if regs.len() != vars.len() {
            return Err(self.internal("a value does not fit its variables"));
        }
        for (&var, r) in vars.iter().zip(regs) {
            self.write(var, r);
        }
        Ok(())
    }

    /// Defines `v` from `vars` (see [`make_vars`](Self::make_vars)).
    fn read_vars(&mut self, vars: &[Var], v: TileValue) -> R<()> {
        let regs = vars.iter().map(|&x| self.read(x)).collect::<R<Vec<_>>>()?;
        let lv = match self.repr(v)? {
            Repr::Uniform => Lv::Uniform(
                *regs
                    .first()
                    .ok_or_else(|| self.internal("a uniform value without its variable"))?,
            ),
            Repr::Iota { axis } => Lv::Iota { axis },
            Repr::Computed => return Err(self.internal("a loop variable planned as computed")),
            Repr::Dist(layout) => Lv::Dist { layout, regs },
        };
        self.set(v, lv)
    }

    fn if_stmt(
        &mut self,
        cond: TileValue,
        then: &cuprum_tile_ir::Block,
        otherwise: &cuprum_tile_ir::Block,
        results: &[TileValue],
    ) -> R<()> {
        let c = self.uniform(cond)?;
        let vars = results
            .iter()
            .map(|&r| self.make_vars(r))
            .collect::<R<Vec<_>>>()?;
        // Each branch starts with what was in use before; after, what either left.
        let before = self.scratch_in_use;
        let ends = [std::cell::Cell::new(before), std::cell::Cell::new(before)];
        let arm = |e: &mut Self, block: &cuprum_tile_ir::Block, end: &std::cell::Cell<_>| {
            e.scratch_in_use = before;
            if !e.stmts(block)? {
                for ((vs, &y), &r) in vars.iter().zip(&block.yields).zip(results) {
                    e.write_vars(vs, y, r)?;
                }
            }
            end.set(e.scratch_in_use);
            Ok(())
        };
        self.if_else(
            c,
            |e| arm(e, then, &ends[0]),
            |e| arm(e, otherwise, &ends[1]),
        )?;
        self.scratch_in_use = ends[0].get().either(ends[1].get());
        for (vs, &r) in vars.iter().zip(results) {
            self.read_vars(vs, r)?;
        }
        Ok(())
    }

    fn for_stmt(
        &mut self,
        counter: TileValue,
        [start, end, step]: [TileValue; 3],
        args: &[TileValue],
        inits: &[TileValue],
        body: &cuprum_tile_ir::Block,
        results: &[TileValue],
    ) -> R<()> {
        let ty = self.elem(start)?;
        let (start, end, step) = (
            self.uniform(start)?,
            self.uniform(end)?,
            self.uniform(step)?,
        );
        let zero = self.konst(Constant::new(ty, 0));
        let bad_step = self.cmp(CmpOp::Le, step, zero)?;
        self.trap_if(
            bad_step,
            TrapKind::Assert {
                message: format!(
                    "a `for` loop's step must be positive (in tile kernel `{}`)",
                    self.kernel.name
                ),
            },
        )?;
        let floor = self.scratch_floor;
        let (rings, produced) = match self.start_produced_loop(counter)? {
            Some(rings) => (rings, true),
            None => (self.plan_rings(counter, body)?, false),
        };
        if rings.is_empty() {
            self.settle_resident_copies();
            return self.carried_counted_loop(
                ty,
                [start, end, step],
                [args, inits, results],
                body,
                |e, c| e.set(counter, Lv::Uniform(c)),
            );
        }
        self.deferred = self.plan_deferred(body, args, &rings)?;
        if !produced {
            self.prime_rings(&rings, counter, [start, end, step])?;
        }
        self.settle_resident_copies();
        let parity = self.var(ScalarType::U32);
        let phase = self.var(ScalarType::U32);
        let zero = self.u32c(0);
        self.write(parity, zero);
        self.write(phase, zero);
        let kept = rings.clone();
        self.carried_counted_loop(
            ty,
            [start, end, step],
            [args, inits, results],
            body,
            |e, c| {
                e.set(counter, Lv::Uniform(c))?;
                e.enter_rings(counter, rings, [c, step, end], [parity, phase])
            },
        )?;
        self.leave_rings(&kept)?;
        // The rings' buffers are free after the loop once the block has met (threads may
        // still be reading them until then).
        self.scratch_floor = floor;
        self.scratch_in_use = scratch::InUse::Unknown;
        Ok(())
    }

    /// A loop whose counter of type `ty` (a kernel IR variable) runs from `start` by `step`
    /// while below `end`, carrying `args` (from `inits`, into `results`): `enter` runs at
    /// the top of each iteration with the counter's value, then `body`.
    fn carried_counted_loop(
        &mut self,
        ty: ScalarType,
        [start, end, step]: [Value; 3],
        [args, inits, results]: [&[TileValue]; 3],
        body: &cuprum_tile_ir::Block,
        enter: impl FnOnce(&mut Self, Value) -> R<()>,
    ) -> R<()> {
        let vars = self.init_carried(args, inits)?;
        let counter_var = self.var(ty);
        self.write(counter_var, start);
        let frame = LoopVars {
            vars,
            args: args.to_vec(),
            counter: Some((counter_var, step)),
            yields: Vec::new(),
        };
        let body = self.scratch_loop(|e| {
            e.block(|e| {
                let c = e.break_unless_below(counter_var, end)?;
                enter(e, c)?;
                e.loop_body(frame, body)
            })
        })?;
        self.push(Stmt::Loop { body });
        // A product the loop deferred (planned for this loop: none nests in its body).
        self.finish_deferred()?;
        self.finish_carried(results)
    }

    /// A loop over the tiles of mapped output `tensor` this block visits (see
    /// `cuprum_tile_ir::grid::mapped_tile`, whose arithmetic it emits): tiles `ctaid.x,
    /// ctaid.x + nctaid.x, ..` below the tile count, each tile's coordinates computed at the
    /// top of the body.
    fn for_tiles(
        &mut self,
        tensor: u32,
        map: &[cuprum_tile_ir::Dim],
        coords: &[TileValue],
        [args, inits, results]: [&[TileValue]; 3],
        body: &cuprum_tile_ir::Block,
    ) -> R<()> {
        let tile = self.mapped_tile(tensor)?;
        let rank = tile.len();
        let group = match map.get(rank.saturating_sub(2)) {
            Some(d) if rank >= 2 => d
                .known()
                .ok_or_else(|| crate::LowerError::Generic(self.kernel.name.clone()))?,
            _ => 1,
        };
        let counts = self.tile_counts(tensor, &tile)?;
        let mut total = self.i64c(1);
        for &c in &counts {
            total = self.mul(total, c)?;
        }
        let start = self.def(Op::Special(Special::BlockIdx(Dim::X)))?;
        let start = self.cast(start, ScalarType::I64)?;
        let step = self.def(Op::Special(Special::GridDim(Dim::X)))?;
        let step = self.cast(step, ScalarType::I64)?;
        // The current tile stays on `mapped` while the body is emitted (its values are the
        // body's own), and comes off once the loop is.
        let depth = self.mapped.len();
        let r = self.carried_counted_loop(
            ScalarType::I64,
            [start, total, step],
            [args, inits, results],
            body,
            |e, t| {
                let at = e.mapped_coords(t, &counts, group)?;
                let mut origin = Vec::with_capacity(rank);
                for ((&c, &v), &n) in coords.iter().zip(&at).zip(&tile) {
                    let as_i32 = e.cast(v, ScalarType::I32)?;
                    e.set(c, Lv::Uniform(as_i32))?;
                    let n = e.i64c(i64::from(n));
                    origin.push(e.mul(v, n)?);
                }
                e.mapped.push((tensor, origin));
                Ok(())
            },
        );
        self.mapped.truncate(depth);
        r
    }

    /// The tile coordinates (`I64`) of tile `t` of a mapped output with `counts` tiles along
    /// each axis, in bands of `group` rows: `cuprum_tile_ir::grid::mapped_tile`'s
    /// arithmetic, every divisor at least 1 once `t` is below the tile count.
    fn mapped_coords(&mut self, t: Value, counts: &[Value], group: u32) -> R<Vec<Value>> {
        let rank = counts.len();
        if rank <= 1 {
            return Ok(vec![t]);
        }
        let (m, n) = (counts[rank - 2], counts[rank - 1]);
        let mn = self.mul(m, n)?;
        let lead = self.bin(BinaryOp::Div, t, mn)?;
        let r = self.bin(BinaryOp::Rem, t, mn)?;
        let mut coords = vec![t; rank];
        let mut rest = lead;
        for d in (0..rank - 2).rev() {
            coords[d] = self.bin(BinaryOp::Rem, rest, counts[d])?;
            rest = self.bin(BinaryOp::Div, rest, counts[d])?;
        }
        let g = self.i64c(i64::from(group.max(1)));
        let gn = self.mul(g, n)?;
        let band = self.bin(BinaryOp::Div, r, gn)?;
        let first = self.mul(band, g)?;
        let left = self.bin(BinaryOp::Sub, m, first)?;
        let rows = self.bin(BinaryOp::Min, g, left)?;
        let within = self.bin(BinaryOp::Rem, r, gn)?;
        let down = self.bin(BinaryOp::Rem, within, rows)?;
        coords[rank - 2] = self.add(first, down)?;
        coords[rank - 1] = self.bin(BinaryOp::Div, within, rows)?;
        Ok(coords)
    }

    /// The tile shape of mapped output `tensor`.
    fn mapped_tile(&self, tensor: u32) -> R<Vec<u32>> {
        match self.kernel.params.get(tensor as usize).map(|p| &p.kind) {
            Some(cuprum_tile_ir::ParamKind::Tensor(t)) => t
                .mapped_tile()
                .and_then(|s| cuprum_tile_ir::known_sizes(&s))
                .ok_or_else(|| self.internal(format!("parameter {tensor} is not a mapped output"))),
            _ => Err(self.internal(format!("parameter {tensor} is not a tensor"))),
        }
    }

    fn loop_stmt(
        &mut self,
        args: &[TileValue],
        inits: &[TileValue],
        body: &cuprum_tile_ir::Block,
        results: &[TileValue],
    ) -> R<()> {
        let vars = self.init_carried(args, inits)?;
        let frame = LoopVars {
            vars,
            args: args.to_vec(),
            counter: None,
            yields: Vec::new(),
        };
        let body = self.scratch_loop(|e| e.block(|e| e.loop_body(frame, body)))?;
        self.push(Stmt::Loop { body });
        self.finish_carried(results)
    }

    /// Variables for a loop's carried values, holding their initial values.
    fn init_carried(&mut self, args: &[TileValue], inits: &[TileValue]) -> R<Vec<Vec<Var>>> {
        let mut all = Vec::with_capacity(args.len());
        for (&a, &i) in args.iter().zip(inits) {
            let vs = self.make_vars(a)?;
            self.write_vars(&vs, i, a)?;
            all.push(vs);
        }
        Ok(all)
    }

    /// One iteration: the carried values from their variables, the body, the yields back
    /// into the variables and the counter advanced.
    fn loop_body(&mut self, mut frame: LoopVars, body: &cuprum_tile_ir::Block) -> R<()> {
        // A deferred product's accumulator is read where the body first reads it.
        self.deferred_iteration_starts();
        for (vs, &a) in frame.vars.iter().zip(&frame.args) {
            if !self.read_late(a) {
                self.read_vars(vs, a)?;
            }
        }
        frame.yields = body.yields.clone();
        self.loops.push(frame);
        let ended = self.stmts(body)?;
        if !ended {
            self.write_loop_args(&body.yields)?;
            self.advance_counter()?;
        }
        Ok(())
    }

    /// After a loop: its results are what its variables hold (a `Break` wrote its values
    /// there too). Pops the loop.
    fn finish_carried(&mut self, results: &[TileValue]) -> R<()> {
        let frame = self
            .loops
            .pop()
            .ok_or_else(|| self.internal("a loop without its variables"))?;
        for (vs, &r) in frame.vars.iter().zip(results) {
            self.read_vars(vs, r)?;
        }
        Ok(())
    }

    /// Writes `values` into the innermost loop's variables.
    fn write_loop_args(&mut self, values: &[TileValue]) -> R<()> {
        let frame = self
            .loops
            .last()
            .ok_or_else(|| self.internal("a break or continue outside a loop"))?;
        let pairs: Vec<(Vec<Var>, TileValue)> = frame
            .vars
            .iter()
            .cloned()
            .zip(frame.args.iter().copied())
            .collect();
        for ((vs, a), &v) in pairs.iter().zip(values) {
            self.write_vars(vs, v, *a)?;
        }
        Ok(())
    }

    /// In a `For` loop, moves the counter on by its step, leaving the loop when that wraps
    /// past the type's range (the counter would then be past any `end`).
    fn advance_counter(&mut self) -> R<()> {
        let Some((var, step)) = self.loops.last().and_then(|f| f.counter) else {
            return Ok(());
        };
        let c = self.read(var)?;
        let next = self.add(c, step)?;
        self.write(var, next);
        let wrapped = self.cmp(CmpOp::Lt, next, c)?;
        self.if_(wrapped, |e| {
            e.push(Stmt::Break);
            Ok(())
        })
    }
}

/// Each value a `Def` defines, with its operation.
fn definitions(kernel: &TileKernel) -> std::collections::HashMap<TileValue, cuprum_tile_ir::Op> {
    let mut defs = std::collections::HashMap::new();
    kernel.body.visit(&mut |s| {
        if let cuprum_tile_ir::Stmt::Def { value, op } = s {
            defs.insert(*value, op.clone());
        }
    });
    defs
}
