//! Layout assignment: before any code is emitted, every tile value gets its representation
//! ([`Repr`]): one value every thread holds, a lazily computed iota, or registers in a
//! [`Layout`]. Deciding first (rather than while emitting) lets `If` results and loop-carried
//! values have one representation that both branches, and every iteration, convert to.
//!
//! The rules, Triton's:
//!
//! * rank-0 tiles (scalars), constants and broadcasts of them are [`Repr::Uniform`]: every
//!   thread holds the value (control flow on them is uniform over the block);
//! * an iota is [`Repr::Iota`]: each register computes its own coordinate where it is used,
//!   in whatever layout the use needs, so it never needs moving;
//! * outside loops, element-wise arithmetic of iotas and uniform values, and broadcasts,
//!   permutations and unit reshapes of it (indices, masks: a few operations per element),
//!   is [`Repr::Computed`]: recomputed from the coordinates wherever it is used (Triton's
//!   rematerialization), in whatever layout the use needs, so a mask never moves through
//!   shared memory to meet what it selects (inside a loop it takes the anchor layout, but
//!   for affine indices that only feed comparisons, and those comparisons: see
//!   [`Planner::computed`]);
//! * loads take the coalesced layout of their tile shape ([`Plan::anchor`]: 16 bytes per
//!   thread along the last axis, for the narrowest element type the kernel moves in that
//!   shape), and stores convert to it;
//! * element-wise operations keep their operands' layout (the first operand's that every
//!   other operand reaches without moving data, else, in a loop, a tensor-core result's
//!   among them, else the first operand's);
//! * a reduction gives the slice of its operand's layout; a permutation or a reshape that
//!   only inserts or removes axes of size 1 gives the same registers under a changed layout;
//!   a broadcast to another shape or a general reshape gives the anchor layout of its shape (free when the
//!   registers already match: a slice reshaped and broadcast back to its parent);
//! * an `mma` result takes its accumulator's layout (the anchor layout when the
//!   accumulator is uniform), so that `acc = mma(a, b, acc)` in a loop keeps one layout; its
//!   `a` and `b` are staged through shared memory from their own layouts;
//! * a gather through a raw pointer is element-wise in its offsets (and mask), and a scatter
//!   writes from the layout its value, offsets and mask meet in, as an element-wise
//!   operation's;
//! * `If` results and loop-carried values join what flows into them: equal representations
//!   stay, a uniform or iota value meeting registers takes the registers' layout.

use std::collections::HashMap;

use cuprum_tile_ir::{Block, Combine, Op, Stmt, TileKernel, TileValue, View, known_sizes};

use crate::LowerError;
use crate::layout::{CoordMap, Layout, WARP_THREADS, register_sources};
use crate::mma_layout::{self, Operand, WarpGrid};
use cuprum_ir::{MmaShape, ScalarType};
use cuprum_tile_ir::MmaKind;

/// An index into [`Plan`]'s layouts.
pub(crate) type LayoutId = usize;

/// How a tile value is held (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Repr {
    /// One value, the same in every thread, stands for every element.
    Uniform,
    /// Element `c` is `c[axis]`, computed where it is used.
    Iota {
        /// The axis counted along.
        axis: usize,
    },
    /// Registers in a layout.
    Dist(LayoutId),
    /// An element-wise function of coordinates and uniform values (see the module docs),
    /// computed where it is used. Two computed values are different values: a join never
    /// keeps this representation.
    Computed,
}

/// The most operations one [`Repr::Computed`] value recomputes at each use; a larger
/// expression is held in registers instead.
const MAX_COMPUTED_OPERATIONS: usize = 16;

/// The most elements of one tile a thread may hold in registers (32-bit words: an `f64`
/// element counts twice).
pub(crate) const MAX_WORDS_PER_THREAD: usize = 128;

/// The layouts of a kernel and the representation of each of its values.
pub(crate) struct Plan {
    /// Threads per block.
    pub(crate) threads: u32,
    layouts: Vec<Layout>,
    index: HashMap<Layout, LayoutId>,
    reprs: Vec<Option<Repr>>,
    /// The narrowest element size moved to or from global memory per tile shape.
    access_bytes: HashMap<Vec<u32>, u32>,
    /// Per reduction result, the layout its operand is reduced in.
    reduce_inputs: HashMap<TileValue, LayoutId>,
    /// Per `mma` result, the layouts its `a` and `b` operands are read in.
    mma_inputs: HashMap<TileValue, [LayoutId; 2]>,
    /// The layouts of tensor-core `mma` results, which loop-carried values prefer.
    mma_results: std::collections::HashSet<LayoutId>,
    /// Per scatter, by its `(offsets, value)`: the representation its operands meet in.
    scatters: HashMap<(TileValue, TileValue), Repr>,
    /// Tensor-core operands defined outside the loop that reads them, with the fragment
    /// layout they are put in once, where they are defined, rather than at every step.
    eager: HashMap<TileValue, (LayoutId, Operand)>,
    /// The first value whose layout needs more than [`MAX_WORDS_PER_THREAD`] registers per
    /// thread, as the error to report (more threads may fit it: see
    /// [`register_overflow`](Plan::register_overflow)).
    overflow: Option<LowerError>,
}

impl Plan {
    /// Assigns every value of `kernel` a representation, in blocks of `threads` threads.
    pub(crate) fn build(kernel: &TileKernel, threads: u32) -> Result<Plan, LowerError> {
        let mut access_bytes = HashMap::new();
        kernel.body.visit(&mut |s| {
            let (shape, elem) = match s {
                Stmt::Def {
                    value,
                    op: Op::Load { .. },
                } => (&kernel.values[*value].shape, kernel.values[*value].elem),
                Stmt::Store { value, .. } | Stmt::StorePart { value, .. } => {
                    (&kernel.values[*value].shape, kernel.values[*value].elem)
                }
                _ => return,
            };
            if let (Some(shape), Some(elem)) = (known_sizes(shape), elem.known()) {
                let e = access_bytes.entry(shape).or_insert(u32::MAX);
                *e = (*e).min(elem.size_bytes());
            }
        });
        let mut planner = Planner {
            kernel,
            plan: Plan {
                threads,
                layouts: Vec::new(),
                index: HashMap::new(),
                reprs: vec![None; kernel.values.len()],
                access_bytes,
                reduce_inputs: HashMap::new(),
                mma_inputs: HashMap::new(),
                mma_results: Default::default(),
                scatters: HashMap::new(),
                eager: HashMap::new(),
                overflow: None,
            },
            loops: Vec::new(),
            row_coupled: crate::mma_chains::row_coupled(kernel),
            broadcast_partners: crate::mma_chains::broadcast_partners(kernel),
            def_depth: HashMap::new(),
            computed_ops: HashMap::new(),
            compare_inputs: compare_inputs(kernel),
            affine: Default::default(),
        };
        planner.block(&kernel.body)?;
        Ok(planner.plan)
    }

    /// Why the plan does not fit its threads' registers: the first tile whose layout needs
    /// more than [`MAX_WORDS_PER_THREAD`] registers per thread (`None`: every one fits).
    /// The plan is complete either way, so that a caller may try more threads.
    pub(crate) fn register_overflow(&self) -> Option<&LowerError> {
        self.overflow.as_ref()
    }

    /// The representation of `value`.
    pub(crate) fn repr(&self, value: TileValue) -> Option<&Repr> {
        self.reprs.get(value.index()).and_then(Option::as_ref)
    }

    /// Layout `id`.
    pub(crate) fn layout(&self, id: LayoutId) -> &Layout {
        &self.layouts[id]
    }

    /// Every layout the kernel uses, by id.
    pub(crate) fn layouts(&self) -> &[Layout] {
        &self.layouts
    }

    /// The id of `layout`, when the plan uses it.
    pub(crate) fn id_of(&self, layout: &Layout) -> Option<LayoutId> {
        self.index.get(layout).copied()
    }

    /// The layout loads and stores of tiles of `shape` use: coalesced for the narrowest
    /// element type the kernel moves in that shape (4 bytes when it moves none).
    pub(crate) fn anchor(&self, shape: &[u32]) -> Layout {
        let bytes = self.access_bytes.get(shape).copied().unwrap_or(4);
        Layout::coalesced(shape, bytes, self.threads)
    }

    /// The layout reduction `result` reduces its operand in.
    pub(crate) fn reduce_input(&self, result: TileValue) -> Option<LayoutId> {
        self.reduce_inputs.get(&result).copied()
    }

    /// For an `mma` result, the layouts its `a` and `b` operands are read in.
    pub(crate) fn mma_inputs(&self, result: TileValue) -> Option<[LayoutId; 2]> {
        self.mma_inputs.get(&result).copied()
    }

    /// The fragment layout a tensor-core operand defined outside the loop that reads it
    /// is moved to right after its definition (see [`Plan`]'s `eager`).
    pub(crate) fn eager_layout(&self, value: TileValue) -> Option<(LayoutId, Operand)> {
        self.eager.get(&value).copied()
    }

    /// The representation a scatter of `value` at `offsets` writes from (its operands'
    /// joint one, as for an element-wise operation).
    pub(crate) fn scatter_repr(&self, offsets: TileValue, value: TileValue) -> Option<&Repr> {
        self.scatters.get(&(offsets, value))
    }

    fn intern(&mut self, layout: Layout) -> LayoutId {
        if let Some(&id) = self.index.get(&layout) {
            return id;
        }
        let id = self.layouts.len();
        self.index.insert(layout.clone(), id);
        self.layouts.push(layout);
        id
    }

    fn anchor_id(&mut self, shape: &[u32]) -> LayoutId {
        let l = self.anchor(shape);
        self.intern(l)
    }
}

/// One loop being planned: the representations flowing into its carried values.
struct LoopFrame {
    flows: Vec<Vec<Repr>>,
}

struct Planner<'k> {
    kernel: &'k TileKernel,
    plan: Plan,
    loops: Vec<LoopFrame>,
    /// The `mma` results whose warps split rows only (`mma_chains::row_coupled`).
    row_coupled: std::collections::HashSet<TileValue>,
    /// `mma_chains::broadcast_partners`.
    broadcast_partners: HashMap<TileValue, Vec<TileValue>>,
    /// Per value a `Def` defines, the loops around it.
    def_depth: HashMap<TileValue, usize>,
    /// Per [`Repr::Computed`] value, the operations its expression recomputes at each use.
    computed_ops: HashMap<TileValue, usize>,
    /// The values whose every use is a comparison, or a broadcast, permutation or unit
    /// reshape whose every use is ([`compare_inputs`]).
    compare_inputs: std::collections::HashSet<TileValue>,
    /// The computed values planned as affine indices in a loop ([`Planner::affine_in_loop`]).
    affine: std::collections::HashSet<TileValue>,
}

impl Planner<'_> {
    fn unsupported(&self, message: impl Into<String>) -> LowerError {
        LowerError::Unsupported {
            kernel: self.kernel.name.clone(),
            message: message.into(),
        }
    }

    fn shape(&self, v: TileValue) -> Result<Vec<u32>, LowerError> {
        known_sizes(&self.kernel.values[v].shape)
            .ok_or_else(|| LowerError::Generic(self.kernel.name.clone()))
    }

    fn elem(&self, v: TileValue) -> Result<ScalarType, LowerError> {
        self.kernel.values[v]
            .elem
            .known()
            .ok_or_else(|| LowerError::Generic(self.kernel.name.clone()))
    }

    fn repr(&self, v: TileValue) -> Result<Repr, LowerError> {
        self.plan
            .repr(v)
            .cloned()
            .ok_or_else(|| LowerError::Internal {
                kernel: self.kernel.name.clone(),
                message: format!("{v:?} is used before it has a representation"),
            })
    }

    fn set(&mut self, v: TileValue, repr: Repr) -> Result<(), LowerError> {
        let shape = self.shape(v)?;
        let repr = if shape.is_empty() {
            Repr::Uniform
        } else {
            repr
        };
        if let Repr::Dist(id) = repr {
            let layout = self.plan.layout(id);
            let words = self.kernel.values[v]
                .elem
                .known()
                .map_or(1, |e| e.size_bytes().div_ceil(4) as usize);
            if layout.registers() * words > MAX_WORDS_PER_THREAD && self.plan.overflow.is_none() {
                self.plan.overflow = Some(self.unsupported(format!(
                    "a tile of shape {shape:?} needs {} registers per thread in a block of {} \
                     threads, more than the {MAX_WORDS_PER_THREAD} the lowering allows: use \
                     smaller tiles (or more warps)",
                    layout.registers() * words,
                    self.plan.threads
                )));
            }
        }
        self.plan.reprs[v.index()] = Some(repr);
        Ok(())
    }

    /// The representation that every value flowing into one place (an `If` result, a
    /// loop-carried value) converts to.
    fn join(&mut self, shape: &[u32], flows: &[Repr]) -> Repr {
        if shape.is_empty() {
            return Repr::Uniform;
        }
        if let Some(first) = flows.first()
            && *first != Repr::Computed
            && flows.iter().all(|f| f == first)
        {
            return first.clone();
        }
        // A tensor-core accumulator's layout wins: converting the initial value once before
        // a loop beats converting the result on every iteration.
        let mma = flows
            .iter()
            .find(|f| matches!(f, Repr::Dist(id) if self.plan.mma_results.contains(id)));
        match mma.or_else(|| flows.iter().find(|f| matches!(f, Repr::Dist(_)))) {
            Some(dist) => dist.clone(),
            None => Repr::Dist(self.plan.anchor_id(shape)),
        }
    }

    /// Plans `block`; returns its yields' representations, or `None` when it ends in a
    /// break, continue or return.
    fn block(&mut self, block: &Block) -> Result<Option<Vec<Repr>>, LowerError> {
        for s in &block.stmts {
            self.stmt(s)?;
        }
        if block.stmts.last().is_some_and(Stmt::is_terminator) {
            return Ok(None);
        }
        block
            .yields
            .iter()
            .map(|&y| self.repr(y))
            .collect::<Result<_, _>>()
            .map(Some)
    }

    fn stmt(&mut self, s: &Stmt) -> Result<(), LowerError> {
        match s {
            Stmt::Def { value, op } => {
                self.def_depth.insert(*value, self.loops.len());
                let repr = self.op(*value, op)?;
                self.set(*value, repr)
            }
            Stmt::Store { value, .. } => {
                let shape = self.shape(*value)?;
                self.plan.anchor_id(&shape);
                Ok(())
            }
            Stmt::StorePart { index, value, .. } => {
                for &i in index {
                    self.repr(i)?;
                }
                let shape = self.shape(*value)?;
                self.plan.anchor_id(&shape);
                Ok(())
            }
            Stmt::Scatter {
                offsets,
                value,
                mask,
                ..
            } => {
                let shape = self.shape(*value)?;
                let operands: Vec<TileValue> =
                    [*value, *offsets].into_iter().chain(*mask).collect();
                let repr = match self.elementwise(&shape, &operands)? {
                    Repr::Iota { .. } | Repr::Computed => Repr::Dist(self.plan.anchor_id(&shape)),
                    other => other,
                };
                self.plan.scatters.insert((*offsets, *value), repr);
                Ok(())
            }
            Stmt::If {
                then,
                otherwise,
                results,
                ..
            } => {
                let arms = [self.block(then)?, self.block(otherwise)?];
                for (i, &r) in results.iter().enumerate() {
                    let flows: Vec<Repr> = arms
                        .iter()
                        .flatten()
                        .filter_map(|ys| ys.get(i).cloned())
                        .collect();
                    let shape = self.shape(r)?;
                    let repr = self.join(&shape, &flows);
                    self.set(r, repr)?;
                }
                Ok(())
            }
            Stmt::For {
                counter,
                args,
                inits,
                body,
                results,
                ..
            } => {
                self.set(*counter, Repr::Uniform)?;
                self.carried(args, inits, body, results)
            }
            Stmt::ForTiles {
                coords,
                args,
                inits,
                body,
                results,
                ..
            } => {
                for &c in coords {
                    self.set(c, Repr::Uniform)?;
                }
                self.carried(args, inits, body, results)
            }
            Stmt::StoreMapped { value, .. } => {
                let shape = self.shape(*value)?;
                self.plan.anchor_id(&shape);
                Ok(())
            }
            Stmt::Loop {
                args,
                inits,
                body,
                results,
            } => self.carried(args, inits, body, results),
            Stmt::Break { values } | Stmt::Continue { values } => {
                let reprs = values
                    .iter()
                    .map(|&v| self.repr(v))
                    .collect::<Result<Vec<_>, _>>()?;
                match self.loops.last_mut() {
                    Some(frame) => {
                        frame.flows.push(reprs);
                        Ok(())
                    }
                    None => Err(self.unsupported("a break or continue outside a loop")),
                }
            }
            Stmt::Return | Stmt::Print { .. } | Stmt::Assert { .. } | Stmt::SourceLine { .. } => {
                Ok(())
            }
        }
    }

    /// Plans a loop: its carried values join their initial values, the body's yields and
    /// every `Break` and `Continue`, until nothing changes (a few rounds: a representation
    /// only ever moves from uniform or iota to registers).
    fn carried(
        &mut self,
        args: &[TileValue],
        inits: &[TileValue],
        body: &Block,
        results: &[TileValue],
    ) -> Result<(), LowerError> {
        let mut current: Vec<Repr> = inits
            .iter()
            .map(|&v| self.repr(v))
            .collect::<Result<_, _>>()?;
        for _round in 0..4 {
            for (&a, r) in args.iter().zip(&current) {
                self.set(a, r.clone())?;
            }
            self.loops.push(LoopFrame { flows: Vec::new() });
            let yields = self.block(body)?;
            let mut flows = self.loops.pop().map(|f| f.flows).unwrap_or_default();
            flows.extend(yields);
            let mut next = Vec::with_capacity(args.len());
            for (i, &a) in args.iter().enumerate() {
                let mut into = vec![current[i].clone()];
                into.extend(flows.iter().filter_map(|f| f.get(i).cloned()));
                let shape = self.shape(a)?;
                next.push(self.join(&shape, &into));
            }
            if next == current {
                for (&r, repr) in results.iter().zip(current) {
                    self.set(r, repr)?;
                }
                return Ok(());
            }
            current = next;
        }
        Err(LowerError::Internal {
            kernel: self.kernel.name.clone(),
            message: "the layouts of a loop's carried values did not settle".into(),
        })
    }

    /// The representation of `value = op`.
    fn op(&mut self, value: TileValue, op: &Op) -> Result<Repr, LowerError> {
        let shape = self.shape(value)?;
        Ok(match op {
            Op::Const { .. }
            | Op::ConstParam(_)
            | Op::Param(_)
            | Op::BlockId(_)
            | Op::NumBlocks(_)
            | Op::TensorDim { .. } => Repr::Uniform,
            Op::Iota { axis, .. } => {
                let axis = *axis as usize;
                if shape.get(axis) == Some(&1) {
                    Repr::Uniform
                } else {
                    Repr::Iota { axis }
                }
            }
            Op::Unary(..)
            | Op::Cast { .. }
            | Op::Bitcast { .. }
            | Op::Binary(..)
            | Op::Compare(..)
            | Op::Ternary(..)
            | Op::Select { .. } => {
                let operands = op.operands();
                match self.elementwise(&shape, &operands)? {
                    Repr::Iota { .. } | Repr::Computed => self.computed(value, op, &shape)?,
                    other => other,
                }
            }
            Op::Broadcast { value: a, .. } => match self.repr(*a)? {
                Repr::Uniform => Repr::Uniform,
                Repr::Iota { axis } => Repr::Iota { axis },
                Repr::Computed => self.computed(value, op, &shape)?,
                // Broadcasting to the same shape moves nothing.
                Repr::Dist(id) if self.shape(*a)? == shape => Repr::Dist(id),
                Repr::Dist(id) => {
                    match self.broadcast_in_place(value, id, &self.shape(*a)?, &shape)? {
                        Some(partner) => Repr::Dist(partner),
                        None => Repr::Dist(self.plan.anchor_id(&shape)),
                    }
                }
            },
            Op::Reshape { value: a, .. } => {
                let from = self.shape(*a)?;
                match self.repr(*a)? {
                    Repr::Uniform => Repr::Uniform,
                    Repr::Iota { axis } => match CoordMap::reshape(&from, &shape) {
                        CoordMap::Axes(axes) => match axes.iter().position(|&m| m == Some(axis)) {
                            Some(d) => Repr::Iota { axis: d },
                            None => Repr::Uniform,
                        },
                        CoordMap::RowMajor => Repr::Dist(self.plan.anchor_id(&shape)),
                    },
                    Repr::Computed => match CoordMap::reshape(&from, &shape) {
                        CoordMap::Axes(_) => self.computed(value, op, &shape)?,
                        CoordMap::RowMajor => Repr::Dist(self.plan.anchor_id(&shape)),
                    },
                    Repr::Dist(id) => match self.plan.layout(id).reshape_unit(&shape) {
                        Some(l) => Repr::Dist(self.plan.intern(l)),
                        None => Repr::Dist(self.plan.anchor_id(&shape)),
                    },
                }
            }
            Op::Permute { value: a, perm } => match self.repr(*a)? {
                Repr::Uniform => Repr::Uniform,
                Repr::Iota { axis } => match perm.iter().position(|&p| p as usize == axis) {
                    Some(d) => Repr::Iota { axis: d },
                    None => Repr::Uniform,
                },
                Repr::Computed => self.computed(value, op, &shape)?,
                Repr::Dist(id) => {
                    let l = self.plan.layout(id).permute(perm);
                    Repr::Dist(self.plan.intern(l))
                }
            },
            Op::Reduce {
                value: a,
                axis,
                combine,
            } => {
                if let Combine::Closure {
                    a: x, b: y, body, ..
                } = combine
                {
                    self.closure(*x, *y, body)?;
                }
                let input = match self.repr(*a)? {
                    Repr::Dist(id) => id,
                    Repr::Uniform | Repr::Iota { .. } | Repr::Computed => {
                        let from = self.shape(*a)?;
                        self.plan.anchor_id(&from)
                    }
                };
                self.plan.reduce_inputs.insert(value, input);
                let (slice, _) = self.plan.layout(input).slice(*axis as usize);
                Repr::Dist(self.plan.intern(slice))
            }
            Op::Mma { a, b, acc } => {
                let (input, accum) = (self.elem(*a)?, self.elem(*acc)?);
                match MmaKind::of(input, accum) {
                    // The tensor cores' fragments: the result and the operands take the
                    // mma.sync layouts; a loop's `acc = mma(a, b, acc)` keeps the result's.
                    Some(MmaKind::TensorCore { input }) => {
                        let [la, lb, out] = self.mma_layouts(input, *a, *b, value)?;
                        self.plan.mma_inputs.insert(value, [la, lb]);
                        self.eager_operands([(*a, la, Operand::A), (*b, lb, Operand::B)])?;
                        self.plan.mma_results.insert(out);
                        Repr::Dist(out)
                    }
                    // A chain per thread: the operands are staged in shared memory from
                    // wherever they are; the result takes the accumulator's registers.
                    _ => {
                        let mut inputs = [0; 2];
                        for (slot, &v) in inputs.iter_mut().zip([a, b]) {
                            *slot = self.dist_or_anchor(v)?;
                        }
                        self.plan.mma_inputs.insert(value, inputs);
                        Repr::Dist(self.dist_or_anchor(*acc)?)
                    }
                }
            }
            // Each element where its offset is: an element-wise operation of the offsets.
            Op::Gather { offsets, mask, .. } => {
                let operands: Vec<TileValue> = [*offsets].into_iter().chain(*mask).collect();
                match self.elementwise(&shape, &operands)? {
                    Repr::Iota { .. } | Repr::Computed => Repr::Dist(self.plan.anchor_id(&shape)),
                    other => other,
                }
            }
            Op::Load { view, .. } => {
                if let View::Tiled { index, .. } | View::Permuted { index, .. } = view {
                    for &i in index {
                        self.repr(i)?;
                    }
                }
                Repr::Dist(self.plan.anchor_id(&shape))
            }
        })
    }

    /// The mma.sync layouts of a tensor-core `value = mma(a, b, ..)`: `a`'s, `b`'s and the
    /// result's, for the block's warps.
    fn mma_layouts(
        &mut self,
        input: ScalarType,
        a: TileValue,
        b: TileValue,
        value: TileValue,
    ) -> Result<[LayoutId; 3], LowerError> {
        let (sa, sb, sc) = (self.shape(a)?, self.shape(b)?, self.shape(value)?);
        let r = sc.len();
        let (m, n) = (sc[r - 2], sc[r - 1]);
        let unsupported = |message: String| LowerError::Unsupported {
            kernel: self.kernel.name.clone(),
            message,
        };
        if !m.is_multiple_of(mma_layout::BLOCK_M) || !n.is_multiple_of(mma_layout::BLOCK_N) {
            return Err(unsupported(format!(
                "mma of {input} tiles with a {m} x {n} result: the tensor-core recipe needs \
                 M a multiple of 16 and N a multiple of 8 (use larger tiles: loads pad past \
                 the tensor's edge)"
            )));
        }
        let shape = MmaShape::for_input(input).ok_or_else(|| LowerError::Internal {
            kernel: self.kernel.name.clone(),
            message: format!("a tensor-core mma of {input} inputs"),
        })?;
        let warps = self.plan.threads / WARP_THREADS;
        let grid = if self.row_coupled.contains(&value) {
            WarpGrid::rows(m, n, warps)
        } else if r == 3 {
            WarpGrid::batched(sc[0], m, n, warps)
        } else {
            WarpGrid::new(m, n, warps)
        };
        let mut ids = [0; 3];
        for (slot, (operand, s)) in
            ids.iter_mut()
                .zip([(Operand::A, &sa), (Operand::B, &sb), (Operand::C, &sc)])
        {
            let l =
                mma_layout::layout(shape, operand, s, grid).map_err(|e| LowerError::Internal {
                    kernel: self.kernel.name.clone(),
                    message: format!("the mma.sync layout of {operand:?}: {e}"),
                })?;
            *slot = self.plan.intern(l);
        }
        Ok(ids)
    }

    /// The layout of an element-wise partner of broadcast `value` (of `shape`, from a
    /// source in layout `source`) that the source's registers already hold every element
    /// of: the broadcast is then made in place, without moving data.
    fn broadcast_in_place(
        &self,
        value: TileValue,
        source: LayoutId,
        from: &[u32],
        shape: &[u32],
    ) -> Result<Option<LayoutId>, LowerError> {
        let Some(partners) = self.broadcast_partners.get(&value) else {
            return Ok(None);
        };
        let map = CoordMap::broadcast(from, shape);
        for &p in partners {
            if let Some(Repr::Dist(id)) = self.plan.repr(p)
                && self.shape(p)? == shape
                && register_sources(self.plan.layout(source), self.plan.layout(*id), &map).is_some()
            {
                return Ok(Some(*id));
            }
        }
        Ok(None)
    }

    /// Records the tensor-core operands defined outside the innermost loop around their
    /// `mma` for conversion to their fragment layouts where they are defined.
    fn eager_operands(
        &mut self,
        operands: [(TileValue, LayoutId, Operand); 2],
    ) -> Result<(), LowerError> {
        let depth = self.loops.len();
        for (v, layout, operand) in operands {
            let outside = self.def_depth.get(&v).is_some_and(|&d| d < depth);
            if outside && self.repr(v)? != Repr::Dist(layout) {
                self.plan.eager.insert(v, (layout, operand));
            }
        }
        Ok(())
    }

    /// The layout `v`'s registers are in, or the anchor layout of its shape when it has none
    /// (a uniform or iota tile), to hold it in registers.
    fn dist_or_anchor(&mut self, v: TileValue) -> Result<LayoutId, LowerError> {
        Ok(match self.repr(v)? {
            Repr::Dist(id) => id,
            Repr::Uniform | Repr::Iota { .. } | Repr::Computed => {
                let shape = self.shape(v)?;
                self.plan.anchor_id(&shape)
            }
        })
    }

    /// `value = op`, whose operands are uniform, iotas or computed: [`Repr::Computed`] when
    /// recomputing it at each use is cheap and safe, else registers in the anchor layout.
    /// An integer division or remainder checks its divisors where it is defined, so it is
    /// never recomputed.
    fn computed(&mut self, value: TileValue, op: &Op, shape: &[u32]) -> Result<Repr, LowerError> {
        use cuprum_ir::BinaryOp::{Div, Rem};
        let checked = matches!(op, Op::Binary(Div | Rem, a, _) if self.elem(*a)?.is_int());
        let operations = 1 + op
            .operands()
            .iter()
            .map(|o| self.computed_ops.get(o).copied().unwrap_or(0))
            .sum::<usize>();
        // Inside a loop the PTX compiler hoists each register's loop-invariant part (its
        // coordinates) out of the loop, one register each: more than the anchor layout's
        // registers cost (measured: attention's causal mask, 168 -> 181 registers). Affine
        // indices that only feed comparisons, and those comparisons, are the exception
        // (see `affine_in_loop`).
        let in_loop = !self.loops.is_empty() && !self.affine_in_loop(value, op)?;
        if checked || in_loop || operations > MAX_COMPUTED_OPERATIONS {
            return Ok(Repr::Dist(self.plan.anchor_id(shape)));
        }
        self.computed_ops.insert(value, operations);
        Ok(Repr::Computed)
    }

    /// Whether `value = op`, in a loop, stays computed where it is used: an affine index (a
    /// signed integer iota plus a uniform value, or a broadcast, permutation or unit reshape
    /// of one) whose every use is a comparison ([`compare_inputs`]), or a comparison of an
    /// iota with one of them, another iota or a uniform value. The emitter compares such a pair
    /// per register against an immediate, from two per-thread values made in the
    /// iteration (`emit::computed`'s affine comparisons), so that no per-register
    /// coordinate lives across the loop; a causal mask then never crosses shared memory to
    /// meet the scores it hides (attention's diagonal step: 1,348 instructions a warp at
    /// 128x128 tiles with the mask moved through shared memory).
    fn affine_in_loop(&mut self, value: TileValue, op: &Op) -> Result<bool, LowerError> {
        let affine = |p: &Self, v: TileValue| -> Result<bool, LowerError> {
            Ok(match p.repr(v)? {
                Repr::Uniform | Repr::Iota { .. } => p.elem(v)?.is_signed_int(),
                Repr::Computed => p.affine.contains(&v),
                Repr::Dist(_) => false,
            })
        };
        let index = match op {
            // A uniform value plus an index (two indices added are no longer one
            // coordinate plus a uniform value).
            Op::Binary(cuprum_ir::BinaryOp::Add, a, b) => {
                let uniform = |v: TileValue| matches!(self.repr(v), Ok(Repr::Uniform));
                self.elem(value)?.is_signed_int()
                    && (uniform(*a) || uniform(*b))
                    && affine(self, *a)?
                    && affine(self, *b)?
            }
            Op::Broadcast { value: a, .. }
            | Op::Reshape { value: a, .. }
            | Op::Permute { value: a, .. } => affine(self, *a)?,
            // One side a coordinate alone (what the emitter compares against).
            Op::Compare(_, a, b) => {
                let iota = |v: TileValue| matches!(self.repr(v), Ok(Repr::Iota { .. }));
                return Ok((iota(*a) || iota(*b)) && affine(self, *a)? && affine(self, *b)?);
            }
            _ => false,
        };
        let kept = index && self.compare_inputs.contains(&value);
        if kept {
            self.affine.insert(value);
        }
        Ok(kept)
    }

    /// Element-wise operations keep their operands' layout (see the module docs).
    fn elementwise(&mut self, shape: &[u32], operands: &[TileValue]) -> Result<Repr, LowerError> {
        let reprs = operands
            .iter()
            .map(|&v| self.repr(v))
            .collect::<Result<Vec<_>, _>>()?;
        if reprs.iter().all(|r| *r == Repr::Uniform) {
            return Ok(Repr::Uniform);
        }
        let mut dists: Vec<LayoutId> = Vec::new();
        for r in &reprs {
            if let Repr::Dist(id) = r
                && !dists.contains(id)
            {
                dists.push(*id);
            }
        }
        let Some(&first) = dists.first() else {
            // Iotas and computed values with uniform ones: computed where used, when the
            // operation can be (see `computed`).
            return Ok(Repr::Computed);
        };
        let identity = CoordMap::identity(shape.len());
        let chosen = dists.iter().copied().find(|&cand| {
            dists.iter().all(|&other| {
                other == cand
                    || register_sources(self.plan.layout(other), self.plan.layout(cand), &identity)
                        .is_some()
            })
        });
        // In a loop, operands that disagree meet in a tensor-core result's layout when one
        // is among them (what a loop computes from a product mostly flows into products and
        // accumulators again): the others move, not the product and all that follows it.
        let product = dists
            .iter()
            .copied()
            .find(|id| !self.loops.is_empty() && self.plan.mma_results.contains(id));
        Ok(Repr::Dist(chosen.or(product).unwrap_or(first)))
    }

    /// Plans a reduce closure's body, whose values are per-thread scalars: only operations
    /// on rank-0 values, without memory, reductions or prints.
    fn closure(&mut self, a: TileValue, b: TileValue, body: &Block) -> Result<(), LowerError> {
        let mut problem: Option<String> = None;
        body.visit(&mut |s| {
            let bad = match s {
                Stmt::Def { value, op } => {
                    if !self.kernel.values[*value].is_scalar() {
                        Some("a tile that is not rank 0")
                    } else {
                        match op {
                            Op::Load { .. } => Some("a load"),
                            Op::Reduce { .. } => Some("a reduction"),
                            _ => None,
                        }
                    }
                }
                Stmt::Store { .. } => Some("a store"),
                Stmt::Print { .. } => Some("a print"),
                Stmt::Return => Some("a return"),
                _ => None,
            };
            if let Some(what) = bad {
                problem.get_or_insert_with(|| what.to_owned());
            }
        });
        if let Some(what) = problem {
            return Err(self.unsupported(format!(
                "a reduce closure computes {what}; a closure may only combine its two scalar \
                 operands (element-wise operations, `if`, loops and assertions on scalars)"
            )));
        }
        // Every value in the closure is per thread, held like a scalar.
        self.set(a, Repr::Uniform)?;
        self.set(b, Repr::Uniform)?;
        self.block(body)?;
        Ok(())
    }
}

/// The values of `kernel` whose every use is a comparison's operand, or the operand of a
/// broadcast, permutation or unit reshape whose result is such a value (the indices a mask
/// compares: [`Planner::affine_in_loop`]).
fn compare_inputs(kernel: &TileKernel) -> std::collections::HashSet<TileValue> {
    let uses = crate::staging::use_counts(&kernel.body);
    // Per value, the `Def`s that read it: (the user, whether it compares, whether it remaps).
    let mut users: HashMap<TileValue, Vec<(TileValue, bool)>> = HashMap::new();
    let mut defs = Vec::new();
    kernel.body.visit(&mut |s| {
        if let Stmt::Def { value, op } = s {
            defs.push(*value);
            let compares = matches!(op, Op::Compare(..));
            let remaps = matches!(
                op,
                Op::Broadcast { .. } | Op::Reshape { .. } | Op::Permute { .. }
            );
            if compares || remaps {
                for o in op.operands() {
                    users.entry(o).or_default().push((*value, compares));
                }
            }
        }
    });
    // Users are defined after what they read: decide the last definitions first.
    let mut out = std::collections::HashSet::new();
    for &v in defs.iter().rev() {
        let Some(us) = users.get(&v) else {
            continue;
        };
        let all = uses.get(&v).copied().unwrap_or(0);
        if all > 0
            && us.len() == all
            && us.iter().all(|&(u, compares)| compares || out.contains(&u))
        {
            out.insert(v);
        }
    }
    out
}
