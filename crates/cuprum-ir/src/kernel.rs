//! The kernel IR: what one GPU thread does, as plain data.
//!
//! A [`Module`] holds [`Kernel`]s. A kernel body is a tree of [`Block`]s of [`Stmt`]s
//! (structured control flow: `If`, `Loop` with `Break`/`Continue`, `Return`), so the emulator
//! can run a warp with an active mask and the PTX writer can emit straight-line code with
//! labels. Computation is in SSA form inside that tree: [`Stmt::Def`] gives a [`Value`] its one
//! definition; mutable state (`let mut`) lives in [`Var`]s read and written explicitly.
//!
//! # Semantics (the emulator is the executable definition; the PTX writer must agree)
//!
//! * Every thread of the launch runs the body once. Values and variables are per thread.
//! * Integer `Add`, `Sub`, `Mul` and `Neg` wrap (Rust's release semantics). `Div`/`Rem` on
//!   integers truncate toward zero; a zero divisor, or `MIN / -1` on signed types, is an IR
//!   precondition violation: front ends emit a check and a [`Stmt::Trap`] before, and the
//!   emulator reports it if it ever happens.
//! * `Shl`/`Shr` take the shift amount as `U32` and use it modulo the bit width (Rust's
//!   release `wrapping_shl` semantics). `Shr` is arithmetic on signed, logical on unsigned types.
//! * Float arithmetic is IEEE with round-to-nearest-even, no fast-math contraction: `Mul` then
//!   `Add` is two roundings, [`TernaryOp::MulAdd`] is one. `Div` and `Sqrt` are correctly
//!   rounded for `F32`/`F64`. `Min`/`Max` on floats return the other operand when one is NaN
//!   (Rust's `f32::min`). `F16`/`BF16` arithmetic is done in `F32` and rounded back.
//! * `Compare` on floats is IEEE: every comparison with NaN is false except `Ne`, which is true.
//! * [`Op::Cast`] is Rust's `as`: int to int truncates or extends by the source's signedness;
//!   float to int rounds toward zero and saturates, NaN gives 0; int to float and float to float
//!   round to nearest even; `Bool` to int gives 0 or 1; casts *to* `Bool` are not allowed (use
//!   `Compare` with zero).
//! * Addresses: `Global` addresses are `U64` byte addresses of device memory; `Shared` addresses
//!   are `U32` byte offsets into the block's shared memory (static arrays first, in declaration
//!   order, each aligned to 16 bytes, then the dynamic region, aligned to 16); `Local` addresses
//!   are `U32` byte offsets into the thread's own local arrays, laid out the same way. A load or
//!   store must be aligned to the size of its type.
//! * A slice parameter is passed as two machine parameters, a `U64` base address and a `U64`
//!   element count; [`Op::SliceBase`] and [`Op::SliceLen`] read them.
//! * Divergence: `If` runs `then` for the lanes whose condition is true and `otherwise` for the
//!   rest; `Loop` repeats its body until every lane that entered has executed `Break` (or
//!   `Return`); `Continue` skips the rest of the body for that lane in this iteration; `Return`
//!   ends the thread. Lanes reconverge after each `If` and `Loop`.
//! * `Barrier` waits for every (non-exited) thread of the block; every such thread must reach
//!   the same barrier statement, otherwise the behaviour is undefined and the emulator reports it.
//! * Warp operations (`Shuffle`, `Vote`) act on the lanes of the warp that execute them together
//!   (the active mask); a shuffle that reads from an inactive or exited lane is an error the
//!   emulator reports.
//! * Warp-collective matrix operations ([`Stmt::Mma`], [`Stmt::LdMatrix`]) are executed by the
//!   32 lanes of a warp together: every lane of the warp must execute the same statement at
//!   once (none diverged, none exited, and the warp full, i.e. not the partial last warp of a
//!   block). Otherwise the behaviour is undefined on the GPU and the emulator reports it.
//!   Which lane holds which matrix element is fixed by the fragment layouts of
//!   [`crate::matrix`].
//! * [`Stmt::CpAsync`] copies from global to shared memory asynchronously: the bytes are
//!   written at some point before the issuing thread's next [`Stmt::CpAsyncWaitGroup`] (or
//!   [`Stmt::CpAsyncWaitAll`]) that covers the copy's group completes; other threads see them
//!   only after that wait *and* a `Barrier`. Reading or writing the destination before the
//!   wait, or reading the source's changes made after the copy was issued, is a data race.
//!   For race tracking the destination is written by the issuing thread.
//! * [`Stmt::Print`] formats C-`printf`-style text ([`crate::printf`]) for every lane that
//!   executes it; each print is one piece of text, never interleaved with another. The order
//!   of prints from different threads is unspecified. On the GPU, output goes to a buffer of
//!   the driver, shown when the host synchronizes; a launch that prints more than that buffer
//!   holds loses the rest.

use crate::arena::{Arena, Handle};
use crate::matrix::{CpAsyncCache, MmaShape};
use crate::types::{Constant, ScalarType};

/// An SSA value: defined once, by [`Stmt::Def`] or as a result of [`Stmt::Mma`],
/// [`Stmt::LdMatrix`] or [`Stmt::VectorLoad`].
pub type Value = Handle<ValueDef>;
/// A mutable, per-thread variable (`let mut`).
pub type Var = Handle<VarDef>;

/// The type of an SSA value.
#[derive(Clone, Debug, PartialEq)]
pub struct ValueDef {
    pub ty: ScalarType,
}

/// A mutable variable. Its name is for printing and debugging only.
#[derive(Clone, Debug, PartialEq)]
pub struct VarDef {
    pub name: String,
    pub ty: ScalarType,
}

/// A compilation unit: the kernels loaded together as one PTX module.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Module {
    pub kernels: Vec<Kernel>,
}

impl Module {
    /// The kernel called `name`, if any.
    pub fn kernel(&self, name: &str) -> Option<&Kernel> {
        self.kernels.iter().find(|k| k.name == name)
    }
}

/// One kernel entry point.
///
/// Invariants (all checked by [`crate::validate`]):
/// * `name` is a valid PTX identifier (`[A-Za-z_][A-Za-z0-9_]*`), unique in its module;
/// * every [`Value`] in `values` is defined exactly once in `body`, by a [`Stmt::Def`] or as
///   one of the results (`d`) of a [`Stmt::Mma`], [`Stmt::LdMatrix`] or [`Stmt::VectorLoad`],
///   and every use of a
///   value comes after its definition, in the same block or a block nested in it (the results
///   of a statement are defined after its operands are read, so they cannot be its operands);
/// * every handle is in range; every parameter index names a parameter of the right kind;
/// * every operation's operands have the types its documentation asks for, and
///   `values[v].ty` is the type that the defining operation produces;
/// * `Break` and `Continue` appear only inside a `Loop`;
/// * constants are canonical ([`Constant::is_canonical`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Kernel {
    pub name: String,
    pub params: Vec<Param>,
    pub values: Arena<ValueDef>,
    pub vars: Arena<VarDef>,
    /// Statically sized shared-memory arrays of the block.
    pub shared: Vec<ArrayDecl>,
    /// Statically sized per-thread arrays (local memory).
    pub locals: Vec<ArrayDecl>,
    pub body: Block,
    pub launch_bounds: Option<LaunchBounds>,
}

/// `.maxntid` / `.minnctapersm` for the PTX entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchBounds {
    pub max_threads: u32,
    pub min_blocks_per_sm: Option<u32>,
}

/// A statically sized array in shared or local memory.
#[derive(Clone, Debug, PartialEq)]
pub struct ArrayDecl {
    pub name: String,
    pub elem: ScalarType,
    pub len: u32,
}

impl ArrayDecl {
    pub fn size_bytes(&self) -> u32 {
        self.elem.size_bytes() * self.len
    }
}

/// Byte offsets of each array in a shared or local layout, and the total size, following the
/// rule in the module docs (each array aligned to 16 bytes, in order).
pub fn array_layout(arrays: &[ArrayDecl]) -> (Vec<u32>, u32) {
    let mut offsets = Vec::with_capacity(arrays.len());
    let mut end = 0u32;
    for a in arrays {
        let start = end.next_multiple_of(16);
        offsets.push(start);
        end = start + a.size_bytes();
    }
    (offsets, end.next_multiple_of(16))
}

/// A kernel parameter as the user declared it.
#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    pub name: String,
    pub kind: ParamKind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamKind {
    /// A scalar passed by value.
    Scalar(ScalarType),
    /// A slice of device memory, passed as (`U64` base address, `U64` length in elements).
    Slice {
        elem: ScalarType,
        access: SliceAccess,
    },
}

/// How a kernel may use a slice parameter; the PTX writer may use it for cache hints
/// (`ld.global.nc` for `ReadOnly`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SliceAccess {
    /// `&[T]`: read only, for the whole launch.
    ReadOnly,
    /// `DisjointSlice<T>`: each thread writes (and reads) only its own elements.
    Disjoint,
    /// `&mut [T]` in an `unsafe` kernel: anything goes.
    ReadWrite,
}

/// A sequence of statements.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Block {
    pub stmts: Vec<Stmt>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    /// Defines `value` as the result of `op`.
    Def { value: Value, op: Op },
    /// Writes a variable. `value` has the variable's type.
    WriteVar { var: Var, value: Value },
    /// Stores `value` (of any type) at `addr` in `space`.
    Store {
        space: AddressSpace,
        addr: Value,
        value: Value,
    },
    /// Loads `d.len()` (2 or 4) consecutive elements of type `ty` from `addr` in `space` with
    /// one vector access (`ld.<space>.v<N>`), defining `d[j]` as the element at
    /// `addr + j * size_of(ty)`. `ty` is not `Bool`; the vector is at most 16 bytes and `addr`
    /// is aligned to the whole vector's size (a misaligned address is an error, as on the
    /// GPU). Otherwise it means the same as `d.len()` [`Op::Load`]s.
    VectorLoad {
        space: AddressSpace,
        ty: ScalarType,
        addr: Value,
        d: Vec<Value>,
    },
    /// Stores `values` (2 or 4, all of one type, not `Bool`) to consecutive elements at
    /// `addr` in `space` with one vector access (`st.<space>.v<N>`); the same alignment and
    /// size rules as [`Stmt::VectorLoad`]. Otherwise it means the same as one
    /// [`Stmt::Store`] per value, in order.
    VectorStore {
        space: AddressSpace,
        addr: Value,
        values: Vec<Value>,
    },
    /// Two-way branch; `cond` is `Bool`.
    If {
        cond: Value,
        then: Block,
        otherwise: Block,
    },
    /// Repeats `body` until every entering lane breaks or returns.
    Loop { body: Block },
    /// Leaves the innermost `Loop`.
    Break,
    /// Starts the next iteration of the innermost `Loop`.
    Continue,
    /// Ends the thread.
    Return,
    /// Waits for every thread of the block (`bar.sync 0`); orders shared and global memory
    /// accesses of the block around it.
    Barrier,
    /// A memory fence at `scope` (`membar`/`fence.sc`).
    Fence { scope: Scope },
    /// Stops the kernel with an error the host reports (a failed bounds check or assertion).
    Trap(TrapKind),
    /// A warp-wide tensor-core matrix multiply-accumulate, `D = A * B + C` with A `16 x K`,
    /// B `K x 8`, C and D `16 x 8` (`mma.sync.aligned.<shape>.row.col.f32.<t>.<t>.f32`).
    /// Warp-collective (see the module docs). Per lane, `a` (four `U32`) and `b` (two `U32`)
    /// are the lane's fragment registers of A and B, `c` (four `F32`) its fragment of C, and
    /// the statement defines the four `F32` values `d`, its fragment of D; the fragment layouts
    /// are in [`crate::matrix`].
    ///
    /// Arithmetic, per element, as NVIDIA's tensor cores do it (measured bit for bit on an
    /// H200 for all three shapes): every product `A[i][k] * B[k][j]` is exact; let `E` be the
    /// largest of `floor(log2 |C[i][j]|)` and, over the nonzero products,
    /// `floor(log2 |A[i][k]|) + floor(log2 |B[k][j]|)` (the product's exponent before
    /// normalisation); each of the `K + 1` addends (C and the products) is truncated toward
    /// zero to a multiple of `2^(E - 25)`; the truncated addends are added exactly; the sum
    /// is rounded toward zero to `f32`. So results differ from sums of IEEE `f32` additions,
    /// but always lie within `(K + 1) * 2^-23` times the sum of the addends' magnitudes of
    /// the exact result, and are exact when all addends are multiples of `2^(E - 25)` and the
    /// sum fits in 24 bits (e.g. small integers). NaN operands, `0 * inf` and `inf - inf`
    /// give the canonical NaN (`0x7fff_ffff`), other infinities propagate (both measured); a
    /// sum beyond the `f32` range is an infinity and a zero sum is `+0` unless every addend is
    /// `-0` (IEEE-like choices, not measured; neither were subnormal operands). `tf32` inputs
    /// are truncated to `tf32` first (see [`MmaShape::M16n8k8Tf32`]).
    Mma {
        shape: MmaShape,
        a: [Value; 4],
        b: [Value; 2],
        c: [Value; 4],
        d: [Value; 4],
    },
    /// `ldmatrix.sync.aligned.m8n8.x{N}{.trans}.shared.b16`: loads `N = d.len()` (1, 2 or 4)
    /// 8x8 matrices of 16-bit elements from shared memory, collectively for the warp
    /// (warp-collective, see the module docs). `addr` (`U32`) is the lane's shared address of
    /// one matrix row: lane `l < 8 N` gives row `l % 8` of matrix `l / 8`; each row is 16
    /// bytes, 16-byte aligned; the addresses of lanes `8 N ..` are ignored. Defines the `U32`
    /// values `d`: `d[m]` is the lane's fragment of matrix `m`, laid out as
    /// [`crate::matrix::ldmatrix_position`] says (`trans`: the matrix transposed). For race
    /// tracking, lane `l < 8 N` reads the row it addressed.
    LdMatrix {
        trans: bool,
        addr: Value,
        d: Vec<Value>,
    },
    /// `cp.async.<cache>.shared.global [dst], [src], size`: starts copying `size` bytes (4, 8
    /// or 16; 16 only with `Cg`) from global address `src` (`U64`) to shared address `dst`
    /// (`U32`), both aligned to `size`. The copy joins the thread's current, uncommitted group
    /// of copies; when it is complete is described in the module docs.
    CpAsync {
        cache: CpAsyncCache,
        size: u32,
        dst: Value,
        src: Value,
    },
    /// `cp.async.commit_group`: closes the thread's current group of [`Stmt::CpAsync`] copies
    /// (an empty group if there were none).
    CpAsyncCommit,
    /// `cp.async.wait_group pending`: waits until at most `pending` of the thread's committed
    /// groups are incomplete, i.e. all but the `pending` most recent committed groups have
    /// completed. Copies not yet committed are not waited for.
    CpAsyncWaitGroup { pending: u32 },
    /// `cp.async.wait_all`: waits for every copy of the thread, committed or not (as
    /// `CpAsyncCommit` followed by `CpAsyncWaitGroup { pending: 0 }`).
    CpAsyncWaitAll,
    /// Device `printf`: every executing lane formats `format` with `args` (C semantics for
    /// the subset defined in [`crate::printf`], which also gives the argument promotions) and
    /// prints the text (see the module docs).
    Print { format: String, args: Vec<Value> },
}

/// Why a kernel stopped itself.
#[derive(Clone, Debug, PartialEq)]
pub enum TrapKind {
    /// `slice[index]` with `index >= len`. `index` and `len` are `U64` values; `site` describes
    /// the expression for error messages (e.g. `"x[i]"`).
    BoundsCheck {
        index: Value,
        len: Value,
        site: String,
    },
    /// An integer division or remainder by zero (`site` as above).
    DivideByZero { site: String },
    /// A failed device assertion.
    Assert { message: String },
}

/// A memory space.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AddressSpace {
    Global,
    Shared,
    Local,
}

impl AddressSpace {
    /// The type of an address in this space.
    pub const fn address_type(self) -> ScalarType {
        match self {
            Self::Global => ScalarType::U64,
            Self::Shared | Self::Local => ScalarType::U32,
        }
    }
}

/// The set of threads an atomic or fence is coherent with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scope {
    Block,
    Device,
    System,
}

/// Hardware index registers. All are `U32`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Special {
    ThreadIdx(Dim),
    BlockDim(Dim),
    BlockIdx(Dim),
    GridDim(Dim),
    /// Lane within the warp, 0..32.
    LaneId,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dim {
    X,
    Y,
    Z,
}

/// An operation producing one value.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    Const(Constant),
    /// The value of scalar parameter `index`.
    Param(u32),
    /// Base address (`U64`) of slice parameter `index`.
    SliceBase(u32),
    /// Length in elements (`U64`) of slice parameter `index`.
    SliceLen(u32),
    /// Address (`U32`) of static shared array `index` (see [`Kernel::shared`]).
    SharedAddr(u32),
    /// Address (`U32`) of the start of dynamic shared memory.
    DynSharedAddr,
    /// Address (`U32`) of local array `index` (see [`Kernel::locals`]).
    LocalAddr(u32),
    Special(Special),
    Unary(UnaryOp, Value),
    /// Both operands and the result have one type, except shifts (amount is `U32`).
    Binary(BinaryOp, Value, Value),
    Ternary(TernaryOp, Value, Value, Value),
    /// Operands of one type; result `Bool`.
    Compare(CmpOp, Value, Value),
    /// `cond ? if_true : if_false`; `cond` is `Bool`, the arms share the result type.
    Select {
        cond: Value,
        if_true: Value,
        if_false: Value,
    },
    /// Rust's `as` (see the module docs).
    Cast {
        value: Value,
        to: ScalarType,
    },
    /// Reinterprets the bits of `value` as `to`, of the same size.
    Bitcast {
        value: Value,
        to: ScalarType,
    },
    ReadVar(Var),
    /// Loads a `ty` from `addr` (whose type is the space's address type).
    Load {
        space: AddressSpace,
        ty: ScalarType,
        addr: Value,
    },
    /// Atomically applies `op` at `addr` and returns the old value. `value` has the memory
    /// type; `compare` is present exactly for `AtomicOp::CompareExchange`.
    Atomic {
        op: AtomicOp,
        space: AddressSpace,
        scope: Scope,
        addr: Value,
        value: Value,
        compare: Option<Value>,
    },
    /// Reads `value` from another lane of the warp (`shfl.sync`). `lane` is `U32`: the source
    /// lane for `Idx`, the distance for `Up`/`Down`, the xor mask for `Xor`; only its low five
    /// bits count (so an `Idx` of 33 reads lane 1), as in PTX. A lane whose source falls outside
    /// the warp (`Up` below lane 0, `Down` past lane 31) gets its own value, as in PTX.
    Shuffle {
        mode: ShuffleMode,
        value: Value,
        lane: Value,
    },
    /// A warp vote over the active lanes: `All`/`Any` give `Bool`, `Ballot` gives `U32`.
    Vote {
        mode: VoteMode,
        pred: Value,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    /// Wrapping negation on integers, sign flip on floats.
    Neg,
    /// Bitwise not on integers, logical not on `Bool`.
    Not,
    // Float-only operations below.
    Abs,
    Sqrt,
    Floor,
    Ceil,
    /// Rust's `round`: half away from zero.
    Round,
    Trunc,
    Exp,
    Exp2,
    Ln,
    Log2,
    Sin,
    Cos,
    Tanh,
}

impl UnaryOp {
    /// Whether the operation is defined on floats only.
    pub const fn is_float_only(self) -> bool {
        !matches!(self, Self::Neg | Self::Not)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    /// Bitwise on integers, logical on `Bool`.
    And,
    Or,
    Xor,
    Shl,
    Shr,
    Min,
    Max,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TernaryOp {
    /// `a * b + c` with one rounding (floats only).
    MulAdd,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AtomicOp {
    Add,
    Sub,
    Min,
    Max,
    Exchange,
    CompareExchange,
    And,
    Or,
    Xor,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ShuffleMode {
    Idx,
    Up,
    Down,
    Xor,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum VoteMode {
    All,
    Any,
    Ballot,
}
