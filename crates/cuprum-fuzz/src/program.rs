//! The fuzzer's own program representation: a small structured language, close to the IR
//! but independent of it, that [`crate::lower`] turns into a `cuprum_ir::Kernel` and
//! [`crate::reference`] evaluates on the host.
//!
//! A [`Program`] is what one thread does, in SSA form inside structured control flow, like
//! the IR: every [`Stmt::Def`] gives a value [`Id`] its one definition, mutable state lives in
//! variables. What the IR spells as address arithmetic is a [`Place`] here (a buffer, shared
//! or local array and an element index), so the host reference needs no address model.
//!
//! The language itself allows programs whose result depends on scheduling (a race, a shuffle
//! from an inactive lane); the generator ([`crate::generate`]) only makes programs whose
//! every bit is defined by the IR's documented semantics, and the reference reports the
//! problems it can see as [`crate::Fault::Invalid`].

use cuprum_ir::{
    AtomicOp, BinaryOp, CmpOp, Constant, ScalarType, Scope, ShuffleMode, UnaryOp, VoteMode,
};

/// A value: an index into [`Program::types`], defined once by a [`Stmt::Def`].
pub type Id = u32;

/// A `U32` index register of the thread (a 1-D launch: `y` and `z` are always 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Source {
    /// `threadIdx.x`.
    ThreadIdx,
    /// The lane within the warp, `threadIdx.x % 32`.
    LaneId,
    /// `blockIdx.x`.
    BlockIdx,
    /// `blockDim.x`.
    BlockDim,
    /// `gridDim.x`.
    GridDim,
    /// `blockIdx.x * blockDim.x + threadIdx.x`, the thread's element of per-thread buffers.
    GlobalId,
}

/// What a buffer parameter holds, which decides how inputs are made for it and how many
/// elements it has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Read-only data of random bits (floats include zeros, infinities, NaNs, subnormals).
    Input {
        /// Elements.
        len: u32,
    },
    /// `per_thread` elements per thread, poisoned before the launch; each thread writes its
    /// own (elements `per_thread * id ..` of thread `id`).
    Output {
        /// Elements of each thread.
        per_thread: u32,
    },
    /// Counters that many threads update atomically, each with operations whose final
    /// result does not depend on the order the threads run in. Float counters start at small
    /// integers (so that adding small integers is exact in any order).
    Counters {
        /// Elements.
        len: u32,
    },
    /// One element per thread, updated atomically (any operation) by its own thread only.
    /// Float elements start finite, at magnitudes in `[2^-60, 2^60]` or zero.
    Private,
}

/// A kernel parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Param {
    /// A scalar passed by value, random in each input set.
    Scalar(ScalarType),
    /// A buffer (an IR slice parameter) of `elem`s.
    Buffer {
        /// The element type.
        elem: ScalarType,
        /// What it is for.
        role: Role,
    },
}

/// A shared (per block) or local (per thread) array.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Array {
    /// The element type.
    pub elem: ScalarType,
    /// Elements.
    pub len: u32,
}

/// An element of memory. The index is a `U32` value the generator keeps in range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// Element `index` of the buffer parameter `param`.
    Buffer {
        /// The parameter's index in [`Program::params`].
        param: u32,
        /// The element index.
        index: Id,
    },
    /// Element `index` of shared array `array` (its block's copy).
    Shared {
        /// Index into [`Program::shared`].
        array: u32,
        /// The element index.
        index: Id,
    },
    /// Element `index` of local array `array` (the thread's own copy).
    Local {
        /// Index into [`Program::locals`].
        array: u32,
        /// The element index.
        index: Id,
    },
}

/// How a value is computed.
#[derive(Clone, Debug, PartialEq)]
pub enum Node {
    /// A constant.
    Const(Constant),
    /// An index register (`U32`).
    Source(Source),
    /// The scalar parameter with this index in [`Program::params`].
    Scalar(u32),
    /// `op a`, as `cuprum_ir::Op::Unary`.
    Unary(UnaryOp, Id),
    /// `a op b`, as `cuprum_ir::Op::Binary` (shift amounts are `U32`).
    Binary(BinaryOp, Id, Id),
    /// `a * b + c` with one rounding.
    MulAdd(Id, Id, Id),
    /// `a op b` as `Bool`.
    Compare(CmpOp, Id, Id),
    /// `cond ? a : b`.
    Select(Id, Id, Id),
    /// Rust's `as`.
    Cast(Id, ScalarType),
    /// The same bits as another type of the same size.
    Bitcast(Id, ScalarType),
    /// The variable's current value.
    ReadVar(u32),
    /// A load of the element's type.
    Load(Place),
    /// `shfl.sync`: the value of another lane (see `cuprum_ir::Op::Shuffle`).
    Shuffle(ShuffleMode, Id, Id),
    /// A vote over the warp's active lanes.
    Vote(VoteMode, Id),
    /// An atomic read-modify-write of a buffer or shared element, giving the old value.
    Atomic {
        /// The element (not local).
        place: Place,
        /// The operation.
        op: AtomicOp,
        /// The threads it is atomic with.
        scope: Scope,
        /// The operand, of the element's type.
        value: Id,
        /// The expected value, for `CompareExchange` only.
        compare: Option<Id>,
    },
}

/// A condition whose failure stops the launch with a trap, as front ends check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Check {
    /// `index < len` of buffer parameter `param` (`index` is `U32`); else a bounds-check trap.
    Bounds {
        /// The buffer's parameter index.
        param: u32,
        /// The index checked.
        index: Id,
    },
    /// `divisor != 0` (an integer); else a division-by-zero trap.
    Divisor {
        /// The divisor checked.
        divisor: Id,
    },
}

/// One statement.
#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    /// Defines value `.0` as `.1`.
    Def(Id, Node),
    /// Writes variable `.0`.
    SetVar(u32, Id),
    /// Stores a value of the element's type.
    Store {
        /// Where.
        place: Place,
        /// What.
        value: Id,
    },
    /// Runs `then` where `cond` holds, `otherwise` elsewhere.
    If {
        /// A `Bool` value.
        cond: Id,
        /// Run by the threads whose `cond` is true.
        then: Vec<Stmt>,
        /// Run by the others.
        otherwise: Vec<Stmt>,
    },
    /// Repeats its body until the thread breaks out.
    Loop(Vec<Stmt>),
    /// Leaves the innermost loop.
    Break,
    /// Starts the innermost loop's next iteration.
    Continue,
    /// Ends the thread.
    Return,
    /// Waits for every live thread of the block.
    Barrier,
    /// Traps unless the condition holds.
    Check(Check),
}

/// A random kernel: what each thread does, its parameters and memory, and the launch shape.
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    /// The kernel's name (a PTX identifier, unique within a module).
    pub name: String,
    /// Threads per block (a multiple of 32).
    pub block: u32,
    /// Blocks.
    pub grid: u32,
    /// The parameters, in order.
    pub params: Vec<Param>,
    /// Shared arrays.
    pub shared: Vec<Array>,
    /// Local arrays.
    pub locals: Vec<Array>,
    /// The type of every variable.
    pub vars: Vec<ScalarType>,
    /// The type of every value, by [`Id`].
    pub types: Vec<ScalarType>,
    /// What each thread runs.
    pub body: Vec<Stmt>,
    /// Whether the lowered kernel declares its block shape (`Kernel::block`), which lets the
    /// optimizer rely on `threadIdx.x < block`.
    pub declare_block: bool,
}

impl Program {
    /// Threads in the launch.
    pub fn threads(&self) -> u32 {
        self.block * self.grid
    }

    /// Elements of buffer parameter `param` (0 for a scalar).
    pub fn buffer_len(&self, param: u32) -> u32 {
        match self.params.get(param as usize) {
            Some(Param::Buffer { role, .. }) => match *role {
                Role::Input { len } | Role::Counters { len } => len,
                Role::Output { per_thread } => self.threads() * per_thread,
                Role::Private => self.threads(),
            },
            _ => 0,
        }
    }

    /// The element type of a place.
    pub fn elem(&self, place: &Place) -> ScalarType {
        match *place {
            Place::Buffer { param, .. } => match self.params.get(param as usize) {
                Some(Param::Buffer { elem, .. }) => *elem,
                _ => ScalarType::U32,
            },
            Place::Shared { array, .. } => self.shared[array as usize].elem,
            Place::Local { array, .. } => self.locals[array as usize].elem,
        }
    }

    /// Every statement, nested ones included, in program order.
    pub fn walk(&self, mut f: impl FnMut(&Stmt)) {
        fn go(stmts: &[Stmt], f: &mut impl FnMut(&Stmt)) {
            for s in stmts {
                f(s);
                match s {
                    Stmt::If {
                        then, otherwise, ..
                    } => {
                        go(then, f);
                        go(otherwise, f);
                    }
                    Stmt::Loop(body) => go(body, f),
                    _ => {}
                }
            }
        }
        go(&self.body, &mut f);
    }
}

impl Place {
    /// The value the place's index is.
    pub fn index(&self) -> Id {
        match *self {
            Place::Buffer { index, .. }
            | Place::Shared { index, .. }
            | Place::Local { index, .. } => index,
        }
    }
}

impl Node {
    /// The values the node reads.
    pub fn operands(&self) -> Vec<Id> {
        match *self {
            Node::Const(_) | Node::Source(_) | Node::Scalar(_) | Node::ReadVar(_) => Vec::new(),
            Node::Unary(_, a) | Node::Cast(a, _) | Node::Bitcast(a, _) | Node::Vote(_, a) => {
                vec![a]
            }
            Node::Binary(_, a, b) | Node::Compare(_, a, b) | Node::Shuffle(_, a, b) => vec![a, b],
            Node::MulAdd(a, b, c) | Node::Select(a, b, c) => vec![a, b, c],
            Node::Load(place) => vec![place.index()],
            Node::Atomic {
                place,
                value,
                compare,
                ..
            } => {
                let mut v = vec![place.index(), value];
                v.extend(compare);
                v
            }
        }
    }

    /// Whether the node does nothing but compute its value (it may be dropped when unused).
    pub fn is_pure(&self) -> bool {
        !matches!(self, Node::Atomic { .. })
    }
}

impl Stmt {
    /// The values the statement itself reads (not those of nested statements).
    pub fn operands(&self) -> Vec<Id> {
        match self {
            Stmt::Def(_, node) => node.operands(),
            Stmt::SetVar(_, v) => vec![*v],
            Stmt::Store { place, value } => vec![place.index(), *value],
            Stmt::If { cond, .. } => vec![*cond],
            Stmt::Check(Check::Bounds { index, .. }) => vec![*index],
            Stmt::Check(Check::Divisor { divisor }) => vec![*divisor],
            Stmt::Loop(_) | Stmt::Break | Stmt::Continue | Stmt::Return | Stmt::Barrier => {
                Vec::new()
            }
        }
    }
}
