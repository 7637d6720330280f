//! What each operation and statement *is*, in one place: its operands (to read and to
//! rewrite), the values it defines, the blocks nested in it, and its effects (memory read and
//! written per space, block barrier, fence, warp-collective, may fault, terminator,
//! asynchronous, prints).
//!
//! Every layer asks these instead of matching on [`Op`] and [`Stmt`] itself: the validator,
//! the optimizer's passes, the PTX writer's analyses and the emulator's race tracking. The
//! matches here are exhaustive, so a new statement does not compile until it has said what it
//! reads, defines and does; "How to add a statement" in `ARCHITECTURE.md` lists the rest.

use crate::kernel::{
    AddressSpace, BinaryOp, Block, Kernel, MbarrierOp, MemOrder, Module, Op, Stmt, TrapKind, Value,
    Var,
};
use crate::tma::{TensorMapRef, TmaOp};
use crate::types::ScalarType;

/// A set of memory spaces.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Spaces(u8);

impl Spaces {
    /// No memory.
    pub const NONE: Self = Self(0);

    const fn bit(space: AddressSpace) -> u8 {
        match space {
            AddressSpace::Global => 1,
            AddressSpace::Shared => 2,
            AddressSpace::Local => 4,
        }
    }

    /// The set of `space` alone.
    pub const fn of(space: AddressSpace) -> Self {
        Self(Self::bit(space))
    }

    /// Whether `space` is in the set.
    pub const fn contains(self, space: AddressSpace) -> bool {
        self.0 & Self::bit(space) != 0
    }

    /// Whether the set is empty.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Both sets together.
    pub const fn union(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }
}

/// What running an operation or a statement does besides defining its values. Statements
/// with nested blocks (`If`, `Loop`) report only what they do themselves (read a condition,
/// repeat); ask their blocks for the rest.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Effects {
    /// Memory it may read.
    pub reads: Spaces,
    /// Memory it may write.
    pub writes: Spaces,
    /// It reads or writes a variable.
    pub uses_vars: bool,
    /// It waits for every thread of the block (and orders the block's memory around it).
    pub block_barrier: bool,
    /// It orders this thread's memory accesses as other threads (or proxies) see them.
    pub fence: bool,
    /// Its meaning depends on which lanes of the warp run it together.
    pub warp_collective: bool,
    /// It may stop the kernel with an error: a trap, or an access or division the emulator
    /// reports when it is out of range, misaligned or by zero.
    pub may_fault: bool,
    /// Every lane that runs it leaves the block: the statements after it never run.
    pub terminator: bool,
    /// It starts, commits or waits for work that completes after the statement does
    /// (`cp.async`).
    pub asynchronous: bool,
    /// It prints.
    pub prints: bool,
    /// It carries nested blocks ([`Stmt::nested`]).
    pub control: bool,
    /// It exists only on the architecture-specific target of its GPU generation (`sm_90a`:
    /// `wgmma`, `setmaxnreg`), which runs on that one compute capability and no later one.
    /// A module with such a statement is written for that target ([`Module::needs_arch_specific`]).
    pub arch_specific: bool,
}

impl Effects {
    /// Whether it does nothing but compute (it may still fault): no memory, variables,
    /// synchronization, warp dependence, control flow or output.
    pub const fn is_computation(&self) -> bool {
        self.reads.is_empty()
            && self.writes.is_empty()
            && !self.uses_vars
            && !self.block_barrier
            && !self.fence
            && !self.warp_collective
            && !self.terminator
            && !self.asynchronous
            && !self.prints
            && !self.control
    }
}

/// One plain memory access of a statement: a scalar or vector load, a store, or an atomic
/// ([`Stmt::access`]). The warp-matrix load and the asynchronous copy are described by their
/// [`Effects`] only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access<'a> {
    /// The memory space.
    pub space: AddressSpace,
    /// The address of the first element.
    pub addr: Value,
    /// Consecutive elements accessed: 1, or 2 or 4 for a vector access.
    pub count: usize,
    /// The element type where the statement names it (loads, vector loads); a store's is
    /// its values' type.
    pub ty: Option<ScalarType>,
    /// The values a store writes, in address order (empty for loads and atomics).
    pub stored: &'a [Value],
    /// Whether it reads memory.
    pub reads: bool,
    /// Whether it writes memory.
    pub writes: bool,
    /// Whether it is an atomic read-modify-write.
    pub atomic: bool,
}

impl Op {
    /// Calls `f` on every operand.
    pub fn for_each_operand(&self, mut f: impl FnMut(Value)) {
        match self {
            Op::Const(_)
            | Op::Param(_)
            | Op::SliceBase(_)
            | Op::SliceLen(_)
            | Op::SharedAddr(_)
            | Op::DynSharedAddr
            | Op::LocalAddr(_)
            | Op::Special(_)
            | Op::ReadVar(_) => {}
            Op::Unary(_, a) | Op::Cast { value: a, .. } | Op::Bitcast { value: a, .. } => f(*a),
            Op::Load { addr, .. } | Op::AtomicLoad { addr, .. } => f(*addr),
            Op::Vote { pred, .. } => f(*pred),
            Op::Binary(_, a, b) | Op::Compare(_, a, b) => {
                f(*a);
                f(*b);
            }
            Op::Shuffle { value, lane, .. } => {
                f(*value);
                f(*lane);
            }
            Op::Ternary(_, a, b, c) => {
                f(*a);
                f(*b);
                f(*c);
            }
            Op::Select {
                cond,
                if_true,
                if_false,
            } => {
                f(*cond);
                f(*if_true);
                f(*if_false);
            }
            Op::Atomic {
                addr,
                value,
                compare,
                ..
            } => {
                f(*addr);
                f(*value);
                if let Some(c) = compare {
                    f(*c);
                }
            }
        }
    }

    /// Calls `f` on every operand, which it may rewrite.
    pub fn for_each_operand_mut(&mut self, mut f: impl FnMut(&mut Value)) {
        match self {
            Op::Const(_)
            | Op::Param(_)
            | Op::SliceBase(_)
            | Op::SliceLen(_)
            | Op::SharedAddr(_)
            | Op::DynSharedAddr
            | Op::LocalAddr(_)
            | Op::Special(_)
            | Op::ReadVar(_) => {}
            Op::Unary(_, a) | Op::Cast { value: a, .. } | Op::Bitcast { value: a, .. } => f(a),
            Op::Load { addr, .. } | Op::AtomicLoad { addr, .. } => f(addr),
            Op::Vote { pred, .. } => f(pred),
            Op::Binary(_, a, b) | Op::Compare(_, a, b) => {
                f(a);
                f(b);
            }
            Op::Shuffle { value, lane, .. } => {
                f(value);
                f(lane);
            }
            Op::Ternary(_, a, b, c) => {
                f(a);
                f(b);
                f(c);
            }
            Op::Select {
                cond,
                if_true,
                if_false,
            } => {
                f(cond);
                f(if_true);
                f(if_false);
            }
            Op::Atomic {
                addr,
                value,
                compare,
                ..
            } => {
                f(addr);
                f(value);
                if let Some(c) = compare {
                    f(c);
                }
            }
        }
    }

    /// What evaluating it does. An integer division or remainder may fault (by zero; signed
    /// `MIN / -1`); a float one does not. `int` says whether the operands of a `Binary` are
    /// integers (the caller knows their types).
    pub fn effects(&self, int: impl FnOnce() -> bool) -> Effects {
        let none = Effects::default();
        match self {
            Op::Const(_)
            | Op::Param(_)
            | Op::SliceBase(_)
            | Op::SliceLen(_)
            | Op::SharedAddr(_)
            | Op::DynSharedAddr
            | Op::LocalAddr(_)
            | Op::Special(_)
            | Op::Unary(..)
            | Op::Ternary(..)
            | Op::Compare(..)
            | Op::Select { .. }
            | Op::Cast { .. }
            | Op::Bitcast { .. } => none,
            Op::Binary(BinaryOp::Div | BinaryOp::Rem, ..) => Effects {
                may_fault: int(),
                ..none
            },
            Op::Binary(..) => none,
            Op::ReadVar(_) => Effects {
                uses_vars: true,
                ..none
            },
            Op::Load { space, .. } => Effects {
                reads: Spaces::of(*space),
                may_fault: true,
                ..none
            },
            // An atomic load counts as a read-modify-write, so that no pass merges it with
            // another or hoists it out of a (spin) loop; an ordered atomic is also a fence, so
            // that no access moves across it.
            Op::Atomic { space, order, .. } | Op::AtomicLoad { space, order, .. } => Effects {
                reads: Spaces::of(*space),
                writes: Spaces::of(*space),
                may_fault: true,
                fence: *order != MemOrder::Relaxed,
                ..none
            },
            Op::Shuffle { .. } | Op::Vote { .. } => Effects {
                warp_collective: true,
                ..none
            },
        }
    }

    /// Whether it has no effect and its result depends only on its operands and on which
    /// thread runs it: two evaluations with the same operands give the same bits anywhere in
    /// the kernel (divisions included: where they do not fault they are pure). Loads,
    /// atomics, variable reads and warp operations are not.
    pub fn is_pure(&self) -> bool {
        let e = self.effects(|| true);
        Effects {
            may_fault: false,
            ..e
        }
        .is_computation()
    }
}

impl Stmt {
    /// Calls `f` on every operand the statement reads itself (not those of its nested
    /// blocks).
    pub fn for_each_operand(&self, mut f: impl FnMut(Value)) {
        match self {
            Stmt::Def { op, .. } => op.for_each_operand(f),
            Stmt::WriteVar { value, .. } => f(*value),
            Stmt::Store { addr, value, .. } | Stmt::AtomicStore { addr, value, .. } => {
                f(*addr);
                f(*value);
            }
            Stmt::If { cond, .. } => f(*cond),
            Stmt::Trap(TrapKind::BoundsCheck { index, len, .. }) => {
                f(*index);
                f(*len);
            }
            Stmt::Mma { a, b, c, .. } => a.iter().chain(b).chain(c).for_each(|&v| f(v)),
            Stmt::LdMatrix { addr, .. } | Stmt::VectorLoad { addr, .. } => f(*addr),
            Stmt::VectorStore { addr, values, .. } => {
                f(*addr);
                values.iter().for_each(|&v| f(v));
            }
            Stmt::CpAsync {
                dst, src, src_size, ..
            } => {
                f(*dst);
                f(*src);
                if let Some(n) = src_size {
                    f(*n);
                }
            }
            Stmt::Print { args, .. } => args.iter().for_each(|&v| f(v)),
            Stmt::Mbarrier { addr, arg, .. } => {
                f(*addr);
                if let Some(a) = arg {
                    f(*a);
                }
            }
            Stmt::Tma(op) => op.operands().into_iter().for_each(|v| f(*v)),
            Stmt::WgmmaMma(m) => m.for_each_operand(f),
            Stmt::StMatrix { addr, values, .. } => {
                f(*addr);
                values.iter().for_each(|&v| f(v));
            }
            Stmt::ClusterLoad { addr, rank, .. } => {
                f(*addr);
                f(*rank);
            }
            Stmt::ClusterStore { addr, rank, value } => {
                f(*addr);
                f(*rank);
                f(*value);
            }
            Stmt::Loop { .. }
            | Stmt::Break
            | Stmt::Continue
            | Stmt::Return
            | Stmt::Barrier
            | Stmt::Fence { .. }
            | Stmt::FenceProxyAsync { .. }
            | Stmt::SourceLine { .. }
            | Stmt::Trap(_)
            | Stmt::CpAsyncCommit
            | Stmt::CpAsyncWaitGroup { .. }
            | Stmt::CpAsyncWaitAll
            | Stmt::WgmmaFence
            | Stmt::WgmmaCommit
            | Stmt::WgmmaWait { .. }
            | Stmt::SetMaxNreg { .. }
            | Stmt::NamedBarrier { .. }
            | Stmt::ClusterArrive
            | Stmt::ClusterWait
            | Stmt::FenceMbarrierInit => {}
        }
    }

    /// Calls `f` on every operand the statement reads itself, which it may rewrite.
    pub fn for_each_operand_mut(&mut self, mut f: impl FnMut(&mut Value)) {
        match self {
            Stmt::Def { op, .. } => op.for_each_operand_mut(f),
            Stmt::WriteVar { value, .. } => f(value),
            Stmt::Store { addr, value, .. } | Stmt::AtomicStore { addr, value, .. } => {
                f(addr);
                f(value);
            }
            Stmt::If { cond, .. } => f(cond),
            Stmt::Trap(TrapKind::BoundsCheck { index, len, .. }) => {
                f(index);
                f(len);
            }
            Stmt::Mma { a, b, c, .. } => a.iter_mut().chain(b).chain(c).for_each(f),
            Stmt::LdMatrix { addr, .. } | Stmt::VectorLoad { addr, .. } => f(addr),
            Stmt::VectorStore { addr, values, .. } => {
                f(addr);
                values.iter_mut().for_each(f);
            }
            Stmt::CpAsync {
                dst, src, src_size, ..
            } => {
                f(dst);
                f(src);
                if let Some(n) = src_size {
                    f(n);
                }
            }
            Stmt::Print { args, .. } => args.iter_mut().for_each(f),
            Stmt::Mbarrier { addr, arg, .. } => {
                f(addr);
                if let Some(a) = arg {
                    f(a);
                }
            }
            Stmt::Tma(op) => op.operands_mut().into_iter().for_each(f),
            Stmt::WgmmaMma(m) => m.for_each_operand_mut(f),
            Stmt::StMatrix { addr, values, .. } => {
                f(addr);
                values.iter_mut().for_each(f);
            }
            Stmt::ClusterLoad { addr, rank, .. } => {
                f(addr);
                f(rank);
            }
            Stmt::ClusterStore { addr, rank, value } => {
                f(addr);
                f(rank);
                f(value);
            }
            Stmt::Loop { .. }
            | Stmt::Break
            | Stmt::Continue
            | Stmt::Return
            | Stmt::Barrier
            | Stmt::Fence { .. }
            | Stmt::FenceProxyAsync { .. }
            | Stmt::SourceLine { .. }
            | Stmt::Trap(_)
            | Stmt::CpAsyncCommit
            | Stmt::CpAsyncWaitGroup { .. }
            | Stmt::CpAsyncWaitAll
            | Stmt::WgmmaFence
            | Stmt::WgmmaCommit
            | Stmt::WgmmaWait { .. }
            | Stmt::SetMaxNreg { .. }
            | Stmt::NamedBarrier { .. }
            | Stmt::ClusterArrive
            | Stmt::ClusterWait
            | Stmt::FenceMbarrierInit => {}
        }
    }

    /// The values the statement defines: a `Def`'s value, the results of `Mma`, `LdMatrix`
    /// and `VectorLoad`, an `Mbarrier`'s result (a token or a completion flag) and a
    /// `ClusterLoad`'s.
    pub fn results(&self) -> &[Value] {
        match self {
            Stmt::Def { value, .. } => std::slice::from_ref(value),
            Stmt::Mma { d, .. } => d,
            Stmt::LdMatrix { d, .. } | Stmt::VectorLoad { d, .. } => d,
            Stmt::Mbarrier { result, .. } => result.as_slice(),
            Stmt::ClusterLoad { result, .. } => std::slice::from_ref(result),
            _ => &[],
        }
    }

    /// The values the statement defines, which the caller may rewrite.
    pub fn results_mut(&mut self) -> &mut [Value] {
        match self {
            Stmt::Def { value, .. } => std::slice::from_mut(value),
            Stmt::Mma { d, .. } => d,
            Stmt::LdMatrix { d, .. } | Stmt::VectorLoad { d, .. } => d,
            Stmt::Mbarrier { result, .. } => result.as_mut_slice(),
            Stmt::ClusterLoad { result, .. } => std::slice::from_mut(result),
            _ => &mut [],
        }
    }

    /// The variables the statement reads and writes in place, besides `ReadVar` and
    /// `WriteVar`: the accumulators of a [`Stmt::WgmmaMma`]. Passes that follow variables
    /// treat them as read and written by the statement (their values are unknown after it).
    pub fn vars_in_place(&self) -> &[Var] {
        match self {
            Stmt::WgmmaMma(m) => &m.acc,
            _ => &[],
        }
    }

    /// The variables the statement reads and writes in place ([`Stmt::vars_in_place`]), which
    /// the caller may rewrite (renumber).
    pub fn vars_in_place_mut(&mut self) -> &mut [Var] {
        match self {
            Stmt::WgmmaMma(m) => &mut m.acc,
            _ => &mut [],
        }
    }

    /// The type the statement gives its results, for the statements whose results are not
    /// a `Def`'s (whose type is its operation's).
    pub fn result_type(&self) -> Option<ScalarType> {
        match self {
            Stmt::Mma { .. } => Some(ScalarType::F32),
            Stmt::LdMatrix { .. } => Some(ScalarType::U32),
            Stmt::VectorLoad { ty, .. } => Some(*ty),
            Stmt::Mbarrier { op, .. } => op.result(),
            Stmt::ClusterLoad { ty, .. } => Some(*ty),
            _ => None,
        }
    }

    /// The plain memory access the statement makes, if it makes one (see [`Access`]).
    pub fn access(&self) -> Option<Access<'_>> {
        fn plain(
            space: AddressSpace,
            addr: Value,
            count: usize,
            ty: Option<ScalarType>,
            stored: &[Value],
            writes: bool,
        ) -> Access<'_> {
            Access {
                space,
                addr,
                count,
                ty,
                stored,
                reads: !writes,
                writes,
                atomic: false,
            }
        }
        match self {
            Stmt::Def {
                op: Op::Load {
                    space, ty, addr, ..
                },
                ..
            } => Some(plain(*space, *addr, 1, Some(*ty), &[], false)),
            Stmt::Def {
                op: Op::Atomic { space, addr, .. } | Op::AtomicLoad { space, addr, .. },
                ..
            }
            | Stmt::AtomicStore { space, addr, .. } => Some(Access {
                space: *space,
                addr: *addr,
                count: 1,
                ty: None,
                stored: &[],
                reads: true,
                writes: true,
                atomic: true,
            }),
            Stmt::Store { space, addr, value } => Some(plain(
                *space,
                *addr,
                1,
                None,
                std::slice::from_ref(value),
                true,
            )),
            Stmt::VectorLoad {
                space, ty, addr, d, ..
            } => Some(plain(*space, *addr, d.len(), Some(*ty), &[], false)),
            Stmt::VectorStore {
                space,
                addr,
                values,
            } => Some(plain(*space, *addr, values.len(), None, values, true)),
            _ => None,
        }
    }

    /// The address operand of the statement's plain memory access ([`Stmt::access`]), to
    /// rewrite: the same statements, so the two cannot disagree.
    pub fn access_addr_mut(&mut self) -> Option<&mut Value> {
        match self {
            Stmt::Def {
                op: Op::Load { addr, .. } | Op::Atomic { addr, .. } | Op::AtomicLoad { addr, .. },
                ..
            }
            | Stmt::AtomicStore { addr, .. }
            | Stmt::Store { addr, .. }
            | Stmt::VectorLoad { addr, .. }
            | Stmt::VectorStore { addr, .. } => Some(addr),
            _ => None,
        }
    }

    /// The blocks nested in the statement, in program order.
    pub fn nested(&self) -> impl Iterator<Item = &Block> {
        let (a, b) = match self {
            Stmt::If {
                then, otherwise, ..
            } => (Some(then), Some(otherwise)),
            Stmt::Loop { body } => (Some(body), None),
            _ => (None, None),
        };
        a.into_iter().chain(b)
    }

    /// The blocks nested in the statement, which the caller may rewrite.
    pub fn nested_mut(&mut self) -> impl Iterator<Item = &mut Block> {
        let (a, b) = match self {
            Stmt::If {
                then, otherwise, ..
            } => (Some(then), Some(otherwise)),
            Stmt::Loop { body } => (Some(body), None),
            _ => (None, None),
        };
        a.into_iter().chain(b)
    }

    /// What running the statement does itself (see [`Effects`]). `int` says whether a
    /// `Def`'s `Binary` operands are integers.
    pub fn effects(&self, int: impl FnOnce() -> bool) -> Effects {
        let none = Effects::default();
        match self {
            Stmt::Def { op, .. } => op.effects(int),
            Stmt::WriteVar { .. } => Effects {
                uses_vars: true,
                ..none
            },
            Stmt::Store { space, .. } | Stmt::VectorStore { space, .. } => Effects {
                writes: Spaces::of(*space),
                may_fault: true,
                ..none
            },
            // As an atomic read-modify-write whose result is unused (see `Op::AtomicLoad`).
            Stmt::AtomicStore { space, order, .. } => Effects {
                reads: Spaces::of(*space),
                writes: Spaces::of(*space),
                may_fault: true,
                fence: *order != MemOrder::Relaxed,
                ..none
            },
            Stmt::VectorLoad { space, .. } => Effects {
                reads: Spaces::of(*space),
                may_fault: true,
                ..none
            },
            Stmt::If { .. } | Stmt::Loop { .. } => Effects {
                control: true,
                ..none
            },
            Stmt::Break | Stmt::Continue | Stmt::Return => Effects {
                terminator: true,
                ..none
            },
            Stmt::Trap(_) => Effects {
                terminator: true,
                may_fault: true,
                ..none
            },
            Stmt::Barrier => Effects {
                block_barrier: true,
                fence: true,
                ..none
            },
            Stmt::Fence { .. } | Stmt::FenceProxyAsync { .. } => Effects {
                fence: true,
                ..none
            },
            Stmt::SourceLine { .. } => none,
            Stmt::Mma { .. } => Effects {
                warp_collective: true,
                ..none
            },
            Stmt::LdMatrix { .. } => Effects {
                reads: Spaces::of(AddressSpace::Shared),
                warp_collective: true,
                may_fault: true,
                ..none
            },
            Stmt::CpAsync { .. } => Effects {
                reads: Spaces::of(AddressSpace::Global),
                writes: Spaces::of(AddressSpace::Shared),
                may_fault: true,
                asynchronous: true,
                ..none
            },
            Stmt::CpAsyncCommit | Stmt::CpAsyncWaitGroup { .. } | Stmt::CpAsyncWaitAll => Effects {
                asynchronous: true,
                ..none
            },
            Stmt::Print { .. } => Effects {
                prints: true,
                ..none
            },
            Stmt::WgmmaFence => Effects {
                fence: true,
                warp_collective: true,
                arch_specific: true,
                ..none
            },
            // The operation reads its shared operands and its accumulator variables, and
            // writes those variables, later (by the covering wait): both it and the waits are
            // kept in place and in order by every pass (variables, fence, asynchronous).
            Stmt::WgmmaMma(_) => Effects {
                reads: Spaces::of(AddressSpace::Shared),
                uses_vars: true,
                warp_collective: true,
                may_fault: true,
                asynchronous: true,
                arch_specific: true,
                ..none
            },
            Stmt::WgmmaCommit => Effects {
                warp_collective: true,
                asynchronous: true,
                arch_specific: true,
                ..none
            },
            Stmt::WgmmaWait { .. } => Effects {
                uses_vars: true,
                fence: true,
                warp_collective: true,
                asynchronous: true,
                arch_specific: true,
                ..none
            },
            Stmt::SetMaxNreg { .. } => Effects {
                warp_collective: true,
                arch_specific: true,
                ..none
            },
            // Orders the participants' memory (a fence each way) and waits for other warps.
            Stmt::NamedBarrier { .. } => Effects {
                fence: true,
                warp_collective: true,
                ..none
            },
            Stmt::StMatrix { .. } => Effects {
                writes: Spaces::of(AddressSpace::Shared),
                warp_collective: true,
                may_fault: true,
                ..none
            },
            // The barrier object is shared memory that the operation reads and updates; its
            // arrivals release and its observed completions acquire (a fence each way).
            Stmt::Mbarrier { op, .. } => Effects {
                reads: Spaces::of(AddressSpace::Shared),
                writes: Spaces::of(AddressSpace::Shared),
                fence: true,
                may_fault: true,
                asynchronous: matches!(op, MbarrierOp::CpAsyncArrive { .. }),
                ..none
            },
            Stmt::Tma(op) => op.effects(),
            // A cluster barrier orders memory both ways (release at the arrival, acquire at
            // the wait) and waits for the cluster's other warps, as a named barrier does.
            Stmt::ClusterArrive | Stmt::ClusterWait => Effects {
                fence: true,
                warp_collective: true,
                ..none
            },
            Stmt::FenceMbarrierInit => Effects {
                fence: true,
                ..none
            },
            // Another block's shared memory (or this block's, for its own rank): no plain
            // `Access`, so no pass merges, forwards or promotes it as one of the block's own.
            Stmt::ClusterLoad { .. } => Effects {
                reads: Spaces::of(AddressSpace::Shared),
                may_fault: true,
                ..none
            },
            Stmt::ClusterStore { .. } => Effects {
                writes: Spaces::of(AddressSpace::Shared),
                may_fault: true,
                ..none
            },
        }
    }

    /// Whether every lane that runs it leaves the block: `Break`, `Continue`, `Return`,
    /// `Trap`.
    pub fn is_terminator(&self) -> bool {
        self.effects(|| false).terminator
    }
}

impl TmaOp {
    /// Its operands, in a fixed order: the global tensor-map address (when the map is not a
    /// parameter), the coordinates, then the shared addresses, source and byte count.
    pub fn operands(&self) -> Vec<&Value> {
        let mut out = Vec::new();
        match self {
            TmaOp::LoadTile {
                map,
                coords,
                dst,
                mbar,
                multicast,
            } => {
                if let TensorMapRef::Global(m) = map {
                    out.push(m);
                }
                out.extend(coords);
                out.push(dst);
                out.push(mbar);
                out.extend(multicast);
            }
            TmaOp::StoreTile { map, coords, src } => {
                if let TensorMapRef::Global(m) = map {
                    out.push(m);
                }
                out.extend(coords);
                out.push(src);
            }
            TmaOp::LoadBulk {
                dst,
                src,
                bytes,
                mbar,
            } => out.extend([dst, src, bytes, mbar]),
            TmaOp::Commit | TmaOp::WaitGroup { .. } => {}
        }
        out
    }

    /// Its operands, as [`TmaOp::operands`], to rewrite.
    pub fn operands_mut(&mut self) -> Vec<&mut Value> {
        let mut out = Vec::new();
        match self {
            TmaOp::LoadTile {
                map,
                coords,
                dst,
                mbar,
                multicast,
            } => {
                if let TensorMapRef::Global(m) = map {
                    out.push(m);
                }
                out.extend(coords.iter_mut());
                out.push(dst);
                out.push(mbar);
                out.extend(multicast.as_mut());
            }
            TmaOp::StoreTile { map, coords, src } => {
                if let TensorMapRef::Global(m) = map {
                    out.push(m);
                }
                out.extend(coords.iter_mut());
                out.push(src);
            }
            TmaOp::LoadBulk {
                dst,
                src,
                bytes,
                mbar,
            } => out.extend([dst, src, bytes, mbar]),
            TmaOp::Commit | TmaOp::WaitGroup { .. } => {}
        }
        out
    }

    /// The type each of [`TmaOp::operands`] must have, in the same order.
    pub fn operand_types(&self) -> Vec<ScalarType> {
        let map = |m: &TensorMapRef| match m {
            TensorMapRef::Global(_) => Some(ScalarType::U64),
            TensorMapRef::Param(_) => None,
        };
        let mut out = Vec::new();
        match self {
            TmaOp::LoadTile {
                map: m,
                coords,
                multicast,
                ..
            } => {
                out.extend(map(m));
                out.extend(coords.iter().map(|_| ScalarType::I32));
                out.extend([ScalarType::U32, ScalarType::U32]);
                out.extend(multicast.map(|_| ScalarType::U16));
            }
            TmaOp::StoreTile { map: m, coords, .. } => {
                out.extend(map(m));
                out.extend(coords.iter().map(|_| ScalarType::I32));
                out.push(ScalarType::U32);
            }
            TmaOp::LoadBulk { .. } => out.extend([
                ScalarType::U32,
                ScalarType::U64,
                ScalarType::U32,
                ScalarType::U32,
            ]),
            TmaOp::Commit | TmaOp::WaitGroup { .. } => {}
        }
        out
    }

    /// What it does: loads read global and write shared memory (and update the mbarrier in
    /// shared memory), stores read shared and write global memory, all asynchronously; a
    /// wait orders the completed copies' memory for the thread (a fence).
    pub fn effects(&self) -> Effects {
        let none = Effects::default();
        let shared = Spaces::of(AddressSpace::Shared);
        let global = Spaces::of(AddressSpace::Global);
        match self {
            // A multicast load is sm_90a's.
            TmaOp::LoadTile { multicast, .. } => Effects {
                reads: global.union(shared),
                writes: shared,
                may_fault: true,
                asynchronous: true,
                arch_specific: multicast.is_some(),
                ..none
            },
            TmaOp::LoadBulk { .. } => Effects {
                reads: global.union(shared),
                writes: shared,
                may_fault: true,
                asynchronous: true,
                ..none
            },
            TmaOp::StoreTile { .. } => Effects {
                reads: shared,
                writes: global,
                may_fault: true,
                asynchronous: true,
                ..none
            },
            TmaOp::Commit => Effects {
                asynchronous: true,
                ..none
            },
            TmaOp::WaitGroup { .. } => Effects {
                reads: global.union(shared),
                writes: global,
                fence: true,
                asynchronous: true,
                ..none
            },
        }
    }
}

impl MbarrierOp {
    /// The type of the operand `arg` of a [`Stmt::Mbarrier`] with this operation, or `None`
    /// when it takes none: the expected count of `Init` and the bytes of `ArriveExpectTx`
    /// and `ExpectTx` (`U32`), the token of the token waits (`U64`), the parity of the parity
    /// waits (`U32`), the target block's rank of `ArriveCluster` (`U32`).
    pub const fn operand(self) -> Option<ScalarType> {
        match self {
            Self::Init
            | Self::ArriveExpectTx
            | Self::ExpectTx
            | Self::TryWaitParity
            | Self::WaitParity => Some(ScalarType::U32),
            Self::TestWait | Self::TryWait | Self::Wait => Some(ScalarType::U64),
            Self::ArriveCluster => Some(ScalarType::U32),
            Self::Arrive | Self::Inval | Self::CpAsyncArrive { .. } => None,
        }
    }

    /// The type of the `result` of a [`Stmt::Mbarrier`] with this operation, or `None` when
    /// it defines none: the token of the arrivals that return one (`U64`), whether the phase
    /// completed for the tests (`Bool`).
    pub const fn result(self) -> Option<ScalarType> {
        match self {
            Self::Arrive | Self::ArriveExpectTx => Some(ScalarType::U64),
            Self::TestWait | Self::TryWait | Self::TryWaitParity => Some(ScalarType::Bool),
            Self::Init
            | Self::ExpectTx
            | Self::Wait
            | Self::WaitParity
            | Self::Inval
            | Self::CpAsyncArrive { .. }
            | Self::ArriveCluster => None,
        }
    }

    /// Whether it arrives on the barrier (releasing the thread's earlier accesses).
    pub const fn arrives(self) -> bool {
        matches!(
            self,
            Self::Arrive | Self::ArriveExpectTx | Self::CpAsyncArrive { .. } | Self::ArriveCluster
        )
    }

    /// Whether it blocks the thread until a phase completes (`Wait`, `WaitParity`).
    pub const fn blocks(self) -> bool {
        matches!(self, Self::Wait | Self::WaitParity)
    }

    /// Whether it needs compute capability 9.0 (the transaction count).
    pub const fn needs_sm90(self) -> bool {
        matches!(self, Self::ArriveExpectTx | Self::ExpectTx)
    }
}

impl Block {
    /// Calls `f` on every statement of the block and of its nested blocks, in program order
    /// (a statement before the statements nested in it).
    pub fn visit<'a>(&'a self, f: &mut impl FnMut(&'a Stmt)) {
        for s in &self.stmts {
            f(s);
            for b in s.nested() {
                b.visit(f);
            }
        }
    }

    /// Calls `f` on every statement of the block and of its nested blocks (parents first),
    /// which it may rewrite in place (but not restructure).
    pub fn visit_mut(&mut self, f: &mut impl FnMut(&mut Stmt)) {
        for s in &mut self.stmts {
            f(s);
            for b in s.nested_mut() {
                b.visit_mut(f);
            }
        }
    }

    /// Whether every lane that runs the block leaves it at or before its end (a terminator
    /// at its top level).
    pub fn always_exits(&self) -> bool {
        self.stmts.iter().any(Stmt::is_terminator)
    }
}

impl Kernel {
    /// Whether some statement of the kernel exists only on an architecture-specific target
    /// ([`Effects::arch_specific`]).
    pub fn needs_arch_specific(&self) -> bool {
        fn in_block(block: &Block) -> bool {
            block
                .stmts
                .iter()
                .any(|s| s.effects(|| false).arch_specific || s.nested().any(in_block))
        }
        in_block(&self.body)
    }
}

impl Module {
    /// Whether some kernel of the module needs an architecture-specific target
    /// ([`Kernel::needs_arch_specific`]), so the whole module must be written for it
    /// (`sm_90a`).
    pub fn needs_arch_specific(&self) -> bool {
        self.kernels.iter().any(Kernel::needs_arch_specific)
    }
}
