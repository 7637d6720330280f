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
//! * [`Stmt::Trap`] stops the launch with an error the host reports. When a launch traps, the
//!   contents of the global memory it writes are unspecified afterwards: a trap may come
//!   before or after any store the launch makes to global memory, whatever the order of the
//!   statements. This is the GPU's behaviour: a trap leaves the CUDA context unusable, so
//!   nothing can read that memory. (A launch that does not trap is unaffected: its global
//!   memory is exactly what its statements write.)
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
//!   order, each aligned to 16 bytes or to the larger alignment [`Kernel::shared_align`] gives
//!   it, then the dynamic region, aligned to 16 or [`Kernel::dyn_shared_align`]); `Local` addresses
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
//! * [`Stmt::Mbarrier`] operates on an mbarrier object in shared memory: arrivals count
//!   toward the current phase, waits block the waiting thread (not the block) until a phase
//!   completes, and a completed phase orders the arrivers' earlier accesses before the
//!   waiters' later ones (see the statement's docs).
//! * Distributed shared memory ([`Stmt::ClusterLoad`], [`Stmt::ClusterStore`]): a thread may
//!   read and write the shared memory of the other blocks of its cluster ([`Kernel::cluster`]),
//!   ordered by the cluster barrier and remote mbarrier arrivals (see the statements' docs).
//! * [`Stmt::Tma`] starts a bulk copy by the tensor memory accelerator, an asynchronous
//!   agent of its own ([`crate::tma::TmaOp`] says when its bytes land and what orders them).
//! * Atomics ([`Op::Atomic`], [`Op::AtomicLoad`], [`Stmt::AtomicStore`]) are indivisible at
//!   their [`Scope`]; the lanes of a warp apply them in lane order. Two accesses of one
//!   location by different threads race unless both are atomic, both read, or something
//!   orders them: a `Barrier` (one block), an mbarrier phase, or a release/acquire pair at a
//!   scope that holds both threads: a release (a `Release`/`AcqRel`/`SeqCst` atomic, or a
//!   `Fence` followed by an atomic) whose write an acquire (an `Acquire`/`AcqRel`/`SeqCst`
//!   atomic, or an atomic followed by a `Fence` or a `Barrier`) reads, directly or through
//!   later read-modify-writes of the location ([`MemOrder`]). The emulator's race tracker
//!   checks this; PTX's memory model is the definition.
//! * [`Stmt::Print`] formats C-`printf`-style text ([`crate::printf`]) for every lane that
//!   executes it; each print is one piece of text, never interleaved with another. The order
//!   of prints from different threads is unspecified. On the GPU, output goes to a buffer of
//!   the driver, shown when the host synchronizes; a launch that prints more than that buffer
//!   holds loses the rest.

use crate::arena::{Arena, Handle};
use crate::matrix::{CpAsyncCache, MmaShape};
use crate::tma::TmaOp;
use crate::types::{Constant, ScalarType};
use crate::wgmma::WgmmaMma;

/// An SSA value: defined once, by [`Stmt::Def`] or as a result of [`Stmt::Mma`],
/// [`Stmt::LdMatrix`], [`Stmt::VectorLoad`], [`Stmt::Mbarrier`] or [`Stmt::ClusterLoad`].
pub type Value = Handle<ValueDef>;
/// A mutable, per-thread variable (`let mut`).
pub type Var = Handle<VarDef>;

/// The type of an SSA value.
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, PartialEq)]
pub struct ValueDef {
    /// The value's type, which the defining operation determines (see
    /// [`crate::validate::result_type`]).
    pub ty: ScalarType,
}

/// A mutable variable. Its name is for printing and debugging only. Every thread's copy holds
/// zero (all bits clear: `0`, `+0.0`, `false`) until the thread first writes it, so a read
/// before any write is defined (the front end never emits one; generated code may).
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, PartialEq)]
pub struct VarDef {
    /// The source name (`let mut acc` gives `acc`); need not be unique.
    pub name: String,
    /// The type of every value written to or read from the variable.
    pub ty: ScalarType,
}

/// A compilation unit: the kernels loaded together as one PTX module.
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, Default, PartialEq)]
pub struct Module {
    /// The kernels, in source order; names are unique within the module.
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
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, Default, PartialEq)]
pub struct Kernel {
    /// The entry point's name in the PTX and in launches.
    pub name: String,
    /// The parameters in declaration order; [`Op::Param`], [`Op::SliceBase`] and
    /// [`Op::SliceLen`] refer to them by index into this list.
    pub params: Vec<Param>,
    /// The type of every SSA value, indexed by [`Value`].
    pub values: Arena<ValueDef>,
    /// The declared mutable variables, indexed by [`Var`]; every thread has its own copy of
    /// each.
    pub vars: Arena<VarDef>,
    /// Statically sized shared-memory arrays of the block.
    pub shared: Vec<ArrayDecl>,
    /// Statically sized per-thread arrays (local memory).
    pub locals: Vec<ArrayDecl>,
    /// The statements every thread runs.
    pub body: Block,
    /// Launch bounds the user declared (`#[launch_bounds]`), if any.
    pub launch_bounds: Option<LaunchBounds>,
    /// The exact block shape `(x, y, z)` every launch must have, when the kernel declares one
    /// (`#[launch_contract(block = ...)]`): both backends refuse a launch with any other
    /// block, so passes may rely on `threadIdx.d < block.d`. The PTX entry declares it as
    /// `.reqntid`. Each dimension is at least 1 and within the hardware limits, and the
    /// product is at most 1024 and at most the launch bounds.
    pub block: Option<(u32, u32, u32)>,
    /// The alignment in bytes that [`Op::DynSharedAddr`] has, when the kernel asks for more
    /// than the default ([`DYN_SHARED_MIN_ALIGN`]); 0 asks for the default. A power of two
    /// up to [`DYN_SHARED_MAX_ALIGN`]. Read it through [`Kernel::dyn_shared_alignment`].
    pub dyn_shared_align: u32,
    /// Alignments in bytes of the static shared arrays that need more than [`ARRAY_ALIGN`]
    /// (TMA boxes: 128, swizzled ones up to 1024): entry `i` is array `i`'s, a power of two
    /// up to [`MAX_ARRAY_ALIGN`]; 0, or no entry, is the default [`ARRAY_ALIGN`]. Read it
    /// through [`Kernel::shared_layout`] and [`Kernel::shared_window_align`].
    pub shared_align: Vec<u32>,
    /// The most registers per thread ptxas may give the kernel (`.maxnreg`), when the kernel
    /// asks for a cap (`#[max_registers(n)]`): a multiple of 8 in 24..=256. `setmaxnreg`
    /// ([`Stmt::SetMaxNreg`]) needs one, else ptxas ignores it (warning C7508).
    pub max_registers: Option<u32>,
    /// Relations between the arguments that every launch satisfies (a launch contract's
    /// `requires = (..)`): both backends refuse a launch in which one fails
    /// ([`crate::requires`]), so passes may rely on them.
    pub requires: Vec<crate::requires::Requirement>,
    /// The thread-block cluster shape `(x, y, z)`, in blocks, every launch has, when the
    /// kernel declares one (sm_90: `.reqnctapercluster`, with `.explicitcluster`). The
    /// launch's grid is then cut into clusters of this shape: a grid dimension that is not a
    /// multiple of the cluster's is refused by both backends. A cluster's blocks run at the
    /// same time (on one GPU processing cluster), may wait for each other at cluster
    /// barriers ([`Stmt::ClusterArrive`], [`Stmt::ClusterWait`]), arrive on each other's
    /// mbarriers ([`MbarrierOp::ArriveCluster`]), read and write each other's shared memory
    /// ([`Stmt::ClusterLoad`], [`Stmt::ClusterStore`]) and receive each other's multicast
    /// tensor copies ([`crate::TmaOp::LoadTile`]'s `multicast`). Each dimension is at least 1 and
    /// the product at most [`MAX_CLUSTER_BLOCKS`]. `None` is a cluster of one block: the
    /// cluster statements and specials then mean what they mean for a cluster of 1.
    #[serde(default)]
    pub cluster: Option<(u32, u32, u32)>,
}

/// The most blocks one cluster may have ([`Kernel::cluster`]): the portable limit of sm_90
/// (more needs a non-portable opt-in cuprum does not make).
pub const MAX_CLUSTER_BLOCKS: u32 = 8;

/// The alignment dynamic shared memory always has (the widest vector access).
pub const DYN_SHARED_MIN_ALIGN: u32 = 16;

/// The largest alignment a kernel may ask of dynamic shared memory (what TMA's 128-byte
/// swizzle needs).
pub const DYN_SHARED_MAX_ALIGN: u32 = 1024;

impl Kernel {
    /// The alignment in bytes of the start of dynamic shared memory ([`Op::DynSharedAddr`]):
    /// a power of two, at least [`DYN_SHARED_MIN_ALIGN`]. Both backends place it so.
    pub fn dyn_shared_alignment(&self) -> u32 {
        self.dyn_shared_align.max(DYN_SHARED_MIN_ALIGN)
    }

    /// Bytes a GPU launch adds to the dynamic shared memory it is given: the PTX declares
    /// the dynamic region [`DYN_SHARED_MIN_ALIGN`]-aligned (the most the driver's linker
    /// keeps, so that the kernel can be linked into a cubin and cached) and rounds its start
    /// up to [`dyn_shared_alignment`](Self::dyn_shared_alignment) in the kernel, which may
    /// move it this far. The emulator places the region aligned and needs none, but both
    /// backends count it against the device's shared memory per block.
    pub fn dyn_shared_padding(&self) -> u32 {
        self.dyn_shared_alignment() - DYN_SHARED_MIN_ALIGN
    }

    /// The alignment in bytes of static shared array `i` (at least [`ARRAY_ALIGN`]).
    pub fn shared_alignment(&self, i: usize) -> u32 {
        self.shared_align
            .get(i)
            .copied()
            .unwrap_or(0)
            .max(ARRAY_ALIGN)
    }

    /// The alignment both backends give the start of the static shared window: the largest
    /// of its arrays' alignments (at least [`ARRAY_ALIGN`]).
    pub fn shared_window_align(&self) -> u32 {
        (0..self.shared.len())
            .map(|i| self.shared_alignment(i))
            .max()
            .unwrap_or(ARRAY_ALIGN)
    }

    /// Byte offsets of the static shared arrays and the window's size: [`array_layout`]
    /// with each array at its [`Kernel::shared_alignment`].
    pub fn shared_layout(&self) -> (Vec<u32>, u32) {
        let mut offsets = Vec::with_capacity(self.shared.len());
        let mut end = 0u32;
        for (i, a) in self.shared.iter().enumerate() {
            let start = end.next_multiple_of(self.shared_alignment(i));
            offsets.push(start);
            end = start.saturating_add(a.size_bytes());
        }
        (offsets, end.next_multiple_of(ARRAY_ALIGN))
    }

    /// The size in bytes of [`Kernel::shared_layout`], computed so that it cannot overflow.
    pub fn shared_layout_size(&self) -> u64 {
        self.shared
            .iter()
            .enumerate()
            .fold(0u64, |end, (i, a)| {
                end.next_multiple_of(u64::from(self.shared_alignment(i)))
                    + u64::from(a.len) * u64::from(a.elem.size_bytes())
            })
            .next_multiple_of(u64::from(ARRAY_ALIGN))
    }
}

/// The largest alignment a static shared array may ask ([`Kernel::shared_align`]): what a
/// 128-byte-swizzled TMA box needs.
pub const MAX_ARRAY_ALIGN: u32 = 1024;

/// `.maxntid` / `.minnctapersm` for the PTX entry.
#[derive(serde::Serialize, serde::Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchBounds {
    /// The most threads a block of a launch may have (`.maxntid`); a launch with a larger block
    /// is rejected.
    pub max_threads: u32,
    /// A hint for the register allocator: aim to fit at least this many blocks on one
    /// multiprocessor at once (`.minnctapersm`). It does not change results.
    pub min_blocks_per_sm: Option<u32>,
}

/// A statically sized array in shared or local memory.
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, PartialEq)]
pub struct ArrayDecl {
    /// The source name, for printing and diagnostics.
    pub name: String,
    /// The element type.
    pub elem: ScalarType,
    /// The number of elements (not bytes).
    pub len: u32,
}

impl ArrayDecl {
    /// The array's size in bytes, `len` times the element size, without alignment padding.
    pub fn size_bytes(&self) -> u32 {
        self.elem.size_bytes() * self.len
    }
}

/// The most local memory one thread may use for its arrays ([`Kernel::locals`], laid out by
/// [`array_layout`]): 512 KiB, the per-thread limit of NVIDIA GPUs. The front end refuses a
/// kernel that needs more at compile time, and the emulator refuses to launch one.
pub const MAX_LOCAL_BYTES: u32 = 512 * 1024;

/// The most shared memory one block may use, static and dynamic together: 227 KiB, as on an
/// H100/H200 (compute capability 9.0). The front end refuses a larger static array, and the
/// emulator a launch that asks for more.
pub const MAX_SHARED_BYTES: u32 = 227 * 1024;

/// The alignment, in bytes, of every array of a shared or local layout ([`array_layout`]) and
/// of the start of the static shared and local windows on both backends: the PTX writer
/// declares the windows `.align` this, and the emulator starts them at address 0. So the
/// address of array `i` is a multiple of this and of its offset's largest power of two.
pub const ARRAY_ALIGN: u32 = 16;

/// The size in bytes of the layout [`array_layout`] gives `arrays`, computed so that it cannot
/// overflow (for checking against [`MAX_LOCAL_BYTES`] or [`MAX_SHARED_BYTES`] before laying
/// anything out).
pub fn array_layout_size(arrays: &[ArrayDecl]) -> u64 {
    arrays
        .iter()
        .fold(0u64, |end, a| {
            end.next_multiple_of(u64::from(ARRAY_ALIGN))
                + u64::from(a.len) * u64::from(a.elem.size_bytes())
        })
        .next_multiple_of(u64::from(ARRAY_ALIGN))
}

/// Byte offsets of each array in a shared or local layout, and the total size, following the
/// rule in the module docs (each array aligned to [`ARRAY_ALIGN`] bytes, in order).
pub fn array_layout(arrays: &[ArrayDecl]) -> (Vec<u32>, u32) {
    let mut offsets = Vec::with_capacity(arrays.len());
    let mut end = 0u32;
    for a in arrays {
        let start = end.next_multiple_of(ARRAY_ALIGN);
        offsets.push(start);
        end = start + a.size_bytes();
    }
    (offsets, end.next_multiple_of(ARRAY_ALIGN))
}

/// A kernel parameter as the user declared it.
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, PartialEq)]
pub struct Param {
    /// The name in the user's source, for error messages and printing.
    pub name: String,
    /// What the parameter holds, which decides how many machine parameters it takes.
    pub kind: ParamKind,
}

/// What a kernel parameter is, and so how the host passes it.
#[derive(serde::Serialize, serde::Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamKind {
    /// A scalar passed by value.
    Scalar(ScalarType),
    /// A slice of device memory, passed as (`U64` base address, `U64` length in elements).
    /// The base address is a multiple of 16: a slice argument starts where a device
    /// allocation starts (both backends align those to 256 bytes), the runtime refuses a
    /// launch that breaks this, and optimizer passes rely on it for vector accesses.
    Slice {
        /// The element type.
        elem: ScalarType,
        /// What the kernel may do with the elements.
        access: SliceAccess,
    },
    /// A tiled tensor map (`const __grid_constant__ CUtensorMap` in CUDA): 128 opaque bytes
    /// passed by value, `.param .align 64 .b8 name[128]` in PTX, that only
    /// [`crate::tma::TensorMapRef::Param`] reads (its address is the param's own). The host
    /// encodes it for a tensor of `elem` with `rank` dimensions
    /// ([`crate::tma::TensorMapDesc`]); the emulator receives the description itself.
    TensorMap {
        /// The element type of the tensor.
        elem: ScalarType,
        /// The number of dimensions, 1 to [`crate::tma::MAX_RANK`].
        rank: u8,
    },
}

/// How a kernel may use a slice parameter; the PTX writer may use it for cache hints
/// (`ld.global.nc` for `ReadOnly`).
#[derive(serde::Serialize, serde::Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub enum SliceAccess {
    /// `&[T]`: read only, for the whole launch.
    ReadOnly,
    /// `DisjointSlice<T>`: each thread writes (and reads) only its own elements.
    Disjoint,
    /// `&mut [T]` in an `unsafe` kernel: anything goes.
    ReadWrite,
}

/// A sequence of statements.
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, Default, PartialEq)]
pub struct Block {
    /// The statements, run in order.
    pub stmts: Vec<Stmt>,
}

/// One statement of a [`Block`]. Statements define values, change variables and memory, and
/// carry the structured control flow; their meaning is in the module docs.
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, PartialEq)]
pub enum Stmt {
    /// Defines `value` as the result of `op`.
    Def {
        /// The value defined; its recorded type is `op`'s result type.
        value: Value,
        /// The operation computing it.
        op: Op,
    },
    /// Writes a variable. `value` has the variable's type.
    WriteVar {
        /// The variable written.
        var: Var,
        /// Its new value for this thread.
        value: Value,
    },
    /// Stores `value` (of any type) at `addr` in `space`.
    Store {
        /// The memory space written.
        space: AddressSpace,
        /// The address, of the space's address type ([`AddressSpace::address_type`]), aligned to
        /// the size of `value`'s type.
        addr: Value,
        /// The value stored; its type decides how many bytes are written.
        value: Value,
    },
    /// Loads `d.len()` (2 or 4) consecutive elements of type `ty` from `addr` in `space` with
    /// one vector access (`ld.<space>.v<N>`), defining `d[j]` as the element at
    /// `addr + j * size_of(ty)`. `ty` is not `Bool`; the vector is at most 16 bytes and `addr`
    /// is aligned to the whole vector's size (a misaligned address is an error, as on the
    /// GPU). Otherwise it means the same as `d.len()` [`Op::Load`]s.
    VectorLoad {
        /// The memory read.
        space: AddressSpace,
        /// The element type (not `Bool`).
        ty: ScalarType,
        /// The address of the first element, of the space's address type, aligned to
        /// `d.len() * size_of(ty)`.
        addr: Value,
        /// The elements, in address order; each has type `ty`.
        d: Vec<Value>,
        /// How long the caches should keep what it reads (as [`Op::Load`]'s).
        eviction: Eviction,
    },
    /// Stores `values` (2 or 4, all of one type, not `Bool`) to consecutive elements at
    /// `addr` in `space` with one vector access (`st.<space>.v<N>`); the same alignment and
    /// size rules as [`Stmt::VectorLoad`]. Otherwise it means the same as one
    /// [`Stmt::Store`] per value, in order.
    VectorStore {
        /// The memory written.
        space: AddressSpace,
        /// The address of the first element, of the space's address type, aligned to the
        /// whole vector's size.
        addr: Value,
        /// The elements, in address order, all of one type.
        values: Vec<Value>,
    },
    /// Two-way branch; `cond` is `Bool`.
    If {
        /// The `Bool` condition, per lane.
        cond: Value,
        /// Run by the lanes whose `cond` is true.
        then: Block,
        /// Run by the other lanes (often empty).
        otherwise: Block,
    },
    /// Repeats `body` until every entering lane breaks or returns.
    Loop {
        /// The statements repeated.
        body: Block,
    },
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
    Fence {
        /// The threads that must observe this thread's accesses in order.
        scope: Scope,
    },
    /// Atomically stores `value` (a 32- or 64-bit type) at `addr` in `space` (`Global` or
    /// `Shared`). `order` is `Relaxed`, `Release` or `SeqCst` (PTX `st.relaxed`/`st.release`
    /// at `scope`; `SeqCst` is a `fence.sc`, then a relaxed store). The lanes of a warp store
    /// in lane order (the last active lane's value stays).
    AtomicStore {
        /// `Global` or `Shared`.
        space: AddressSpace,
        /// The threads the store is atomic with respect to.
        scope: Scope,
        /// `Relaxed`, `Release` or `SeqCst`.
        order: MemOrder,
        /// The address, aligned to the size of the value's type.
        addr: Value,
        /// The value stored.
        value: Value,
    },
    /// `fence.proxy.async`: orders this thread's memory accesses through the generic proxy
    /// (ordinary loads and stores) against its accesses through the async proxy (the
    /// Hopper bulk copies and tensor-core operand reads), both ways: a shared-memory write
    /// before it is visible to an asynchronous operation this thread starts after it, and
    /// an asynchronous operation's writes that this thread has waited for are visible to its
    /// ordinary loads after it. Needs compute capability 9.0 (a PTX writer error on sm_80).
    /// `space` is the memory it orders: what a tile kernel or a TMA program needs is the
    /// block's shared memory alone, the cheaper fence (`.shared::cta`; on an H200 the
    /// all-spaces form also waits for the thread's memory accesses to reach the whole GPU).
    /// The emulator has one proxy, where program order already gives this.
    FenceProxyAsync {
        /// The state space the fence orders.
        space: ProxyFenceSpace,
    },
    /// Line information: the statements after it (up to the next one) come from `line`,
    /// `column` of source file `file` (a path as the compiler saw it). It does nothing: the
    /// PTX writer turns it into `.file`/`.loc` directives (what Nsight Compute's source view
    /// and `cuobjdump`/`nvdisasm -g` read), the emulator skips it, and the optimizer keeps
    /// it where it is (no effects, no operands: it neither orders nor blocks anything).
    SourceLine {
        /// The source file's path.
        file: String,
        /// 1-based line.
        line: u32,
        /// 1-based column.
        column: u32,
    },
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
        /// The instruction shape, which fixes `K` and the input element type.
        shape: MmaShape,
        /// The lane's four registers of A, each packing elements of the input type.
        a: [Value; 4],
        /// The lane's two registers of B.
        b: [Value; 2],
        /// The lane's four `F32` elements of the accumulator C.
        c: [Value; 4],
        /// The four `F32` values this statement defines: the lane's elements of D.
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
        /// Whether each matrix is transposed as it is loaded (`.trans`).
        trans: bool,
        /// The `U32` shared address of the row this lane supplies.
        addr: Value,
        /// The `U32` values defined, one per matrix (1, 2 or 4 of them).
        d: Vec<Value>,
    },
    /// `cp.async.<cache>.shared.global [dst], [src], size`: starts copying `size` bytes (4, 8
    /// or 16; 16 only with `Cg`) from global address `src` (`U64`) to shared address `dst`
    /// (`U32`), both aligned to `size`. The copy joins the thread's current, uncommitted group
    /// of copies; when it is complete is described in the module docs.
    CpAsync {
        /// The cache policy: through L1 (`.ca`) or L2 only (`.cg`).
        cache: CpAsyncCache,
        /// Bytes copied: 4, 8 or 16.
        size: u32,
        /// The `U32` shared-memory destination address.
        dst: Value,
        /// The `U64` global-memory source address.
        src: Value,
        /// `cp.async`'s `src-size` (a `U32` at most `size`): only that many bytes are read
        /// from `src`, and the rest of the `size` bytes at `dst` become zeros. `None` copies
        /// all `size` bytes.
        src_size: Option<Value>,
    },
    /// `cp.async.commit_group`: closes the thread's current group of [`Stmt::CpAsync`] copies
    /// (an empty group if there were none).
    CpAsyncCommit,
    /// `cp.async.wait_group pending`: waits until at most `pending` of the thread's committed
    /// groups are incomplete, i.e. all but the `pending` most recent committed groups have
    /// completed. Copies not yet committed are not waited for.
    CpAsyncWaitGroup {
        /// How many of the most recently committed groups may still be in flight.
        pending: u32,
    },
    /// `cp.async.wait_all`: waits for every copy of the thread, committed or not (as
    /// `CpAsyncCommit` followed by `CpAsyncWaitGroup { pending: 0 }`).
    CpAsyncWaitAll,
    /// An operation on an *mbarrier*, an asynchronous transaction barrier of the block: an
    /// 8-byte object in shared memory at `addr` (a `U32` shared address, 8-byte aligned),
    /// which counts arrivals (and, on sm_90, transaction bytes) in *phases*. `arg` and
    /// `result` are present exactly as [`MbarrierOp`]'s variant says, with the types it gives.
    ///
    /// State, as PTX defines it: the current phase (its parity is its low bit), the expected
    /// arrival count `init` set, the pending arrival count of the current phase, and the
    /// pending transaction count (tx-count). The current phase completes when its pending
    /// arrival count reaches zero *and* its tx-count is zero; then the next phase begins
    /// with the expected count pending and no transactions. Arrivals beyond the expected
    /// count in one phase count toward the next.
    ///
    /// Memory ordering: an arrival releases the arriving thread's earlier memory accesses
    /// (block scope), and a wait or test that observes a phase's completion acquires them for
    /// the observing thread: the arrivers' accesses before their arrivals in that phase
    /// happen before the observer's accesses after the observation. Nothing else is ordered
    /// (threads that did not arrive, accesses after an arrival).
    ///
    /// Using a barrier that no `Init` set up, or one invalidated since, using a token of
    /// another barrier, initialising a live barrier, a count out of `1..=2^20 - 1`, or a
    /// blocking wait that can never complete are errors the emulator reports; on the GPU
    /// they are undefined behaviour (a wait that never completes hangs).
    Mbarrier {
        /// What the statement does.
        op: MbarrierOp,
        /// The `U32` shared address of the barrier object, 8-byte aligned.
        addr: Value,
        /// The operand [`MbarrierOp::operand`] asks for (a count, a token or a parity).
        arg: Option<Value>,
        /// The value [`MbarrierOp::result`] gives (a token, or whether a phase completed).
        result: Option<Value>,
    },
    /// A bulk copy by the tensor memory accelerator, or a commit or wait of bulk groups: what
    /// [`TmaOp`] says. Needs compute capability 9.0 (a PTX writer error on sm_80).
    Tma(TmaOp),
    /// `wgmma.fence.sync.aligned`: orders this thread's earlier register accesses of
    /// accumulators (and shared-memory writes of operands) before the warpgroup's later
    /// [`Stmt::WgmmaMma`]s. Every `WgmmaMma` whose accumulator variables were written since the
    /// last fence (other than by an earlier `WgmmaMma` of the same accumulator) must follow a
    /// fence; the emulator reports a missing one. Warpgroup-collective (all 128 threads of a
    /// warpgroup run it together, see [`crate::wgmma`]). sm_90a only.
    WgmmaFence,
    /// `wgmma.mma_async.sync.aligned`: starts `D = A * B + scale_d * D` for the warpgroup,
    /// asynchronously ([`crate::wgmma`] gives the shapes, operand and accumulator layouts).
    /// Operands are the statement's values and descriptors; the accumulator is the variables
    /// `acc`, read and written in place. The operation joins the thread's current, uncommitted
    /// wgmma group; it reads its shared-memory operands and its accumulators, and writes its
    /// accumulators, at some point before the covering [`Stmt::WgmmaWait`] completes (the
    /// emulator: at that wait). Reading or writing an accumulator variable, or writing an
    /// operand's shared memory, between the statement and that wait is an error (undefined on
    /// the GPU) that the emulator reports. Arithmetic per element is that of [`Stmt::Mma`]
    /// with `K + 1` addends. Warpgroup-collective; sm_90a only.
    WgmmaMma(Box<WgmmaMma>),
    /// `wgmma.commit_group.sync.aligned`: closes the thread's current group of
    /// [`Stmt::WgmmaMma`]s (an empty group if there were none). Warpgroup-collective; sm_90a.
    WgmmaCommit,
    /// `wgmma.wait_group.sync.aligned pending`: waits until at most `pending` of the thread's
    /// committed wgmma groups are incomplete; the operations of the completed groups have then
    /// read their operands and written their accumulators. Warpgroup-collective; sm_90a.
    WgmmaWait {
        /// How many of the most recently committed groups may still be in flight (0..=7).
        pending: u32,
    },
    /// `setmaxnreg.{inc,dec}.sync.aligned.u32 count`: the warpgroup asks for `count`
    /// registers per thread (raising waits until the block's pool has them). It changes no
    /// value; the kernel must have a register cap ([`Kernel::max_registers`]). `count` is a
    /// multiple of 8 in 24..=256. Warpgroup-collective; sm_90a only.
    SetMaxNreg {
        /// `.inc` (true: at least `count`) or `.dec` (at most `count`).
        increase: bool,
        /// The registers per thread asked for.
        count: u32,
    },
    /// A named barrier of the block (`bar.sync id, threads` or `bar.arrive id, threads`):
    /// barrier `id` (1..=15; 0 is [`Stmt::Barrier`]'s) completes once `threads` threads (a
    /// multiple of 32) have arrived, counted per whole warp. `arrive: false` waits for the
    /// completion, `arrive: true` only counts. Completion orders the arrivers' earlier memory
    /// accesses before the waiters' later ones. Warp-collective (the whole warp runs it
    /// together); a wait that no arrivals can complete is a deadlock the emulator reports.
    NamedBarrier {
        /// `bar.arrive` (true) or `bar.sync` (false).
        arrive: bool,
        /// The barrier, 1..=15.
        id: u32,
        /// The threads that complete it: a multiple of 32 in 32..=1024.
        threads: u32,
    },
    /// `stmatrix.sync.aligned.m8n8.x{N}{.trans}.shared.b16`: the inverse of
    /// [`Stmt::LdMatrix`]: stores `N = values.len()` (1, 2 or 4) 8x8 matrices of 16-bit
    /// elements to shared memory, warp-collectively. `addr` is the lane's `U32` shared address
    /// of one matrix row (lane `l < 8 N` gives row `l % 8` of matrix `l / 8`, 16 bytes, 16-byte
    /// aligned); `values[m]` is the lane's `U32` fragment of matrix `m`, laid out as
    /// [`crate::wgmma::stmatrix_position`] says. For race tracking, lane `l < 8 N` writes the
    /// row it addressed. sm_90.
    StMatrix {
        /// Whether each matrix is transposed as it is stored (`.trans`).
        trans: bool,
        /// The `U32` shared address of the row this lane supplies.
        addr: Value,
        /// The `U32` fragments, one per matrix (1, 2 or 4).
        values: Vec<Value>,
    },
    /// `barrier.cluster.arrive.release.aligned`: this thread arrives at its cluster's
    /// barrier, releasing its earlier memory accesses (shared memory of any block of the
    /// cluster, and global memory) to the threads that complete the matching
    /// [`Stmt::ClusterWait`]. It does not wait. Each thread alternates arrivals and waits,
    /// starting with an arrival; a wait completes once every thread of every block of the
    /// cluster has arrived or returned (PTX's `exit` releases barriers that only exited
    /// threads hold up). A block must not return while others may still arrive on its
    /// mbarriers or copy into its shared memory: kernels end with an arrival and a wait.
    /// Warp-collective (`.aligned`: the whole warp runs it together). Without a cluster it
    /// is a barrier of the block's threads. sm_90.
    ClusterArrive,
    /// `barrier.cluster.wait.acquire.aligned`: waits until every thread of the cluster has
    /// made the arrival matching this thread's last [`Stmt::ClusterArrive`], then acquires
    /// their released accesses. Warp-collective. sm_90.
    ClusterWait,
    /// `fence.mbarrier_init.release.cluster`: makes this thread's earlier `mbarrier.init`s
    /// ([`MbarrierOp::Init`]) visible to the cluster with the release of its next
    /// [`Stmt::ClusterArrive`], so that other blocks' remote arrivals and multicast copies
    /// may use those barriers after the matching [`Stmt::ClusterWait`]. sm_90. The emulator
    /// orders every statement in program order, where it changes nothing.
    FenceMbarrierInit,
    /// Distributed shared memory (`mapa.shared::cluster`, then `ld.shared::cluster`): loads a
    /// `ty` (any type; a `Bool` reads one byte, nonzero being true, as [`Op::Load`]'s) from
    /// the shared memory of the block of rank `rank` of this block's cluster, at the offset
    /// `addr` names in this block's shared memory, and defines `result` as it.
    ///
    /// `addr` is a `U32` shared address ([`Op::SharedAddr`] plus offsets: every block of a
    /// kernel has the same layout, so it names the same variable in every block), aligned to
    /// the size of `ty`. `rank` is a `U32` below the cluster's block count
    /// ([`Special::ClusterCtaRank`]'s numbering; this block's own rank reads its own shared
    /// memory, and without [`Kernel::cluster`] only rank 0 exists). A rank beyond the cluster,
    /// or a block whose threads have all returned, is undefined behaviour (the emulator
    /// reports both as misuse): a kernel whose blocks read each other's memory ends with a
    /// cluster barrier ([`Stmt::ClusterArrive`] then [`Stmt::ClusterWait`]) so that no block
    /// leaves while others may still reach its memory.
    ///
    /// It is an ordinary (weak) access: it races with another block's write of the same bytes
    /// unless something orders the two: the cluster barrier (accesses before a thread's
    /// arrival happen before accesses after the waits of that phase), or a remote mbarrier
    /// arrival ([`MbarrierOp::ArriveCluster`]) whose phase the other thread observes. Within
    /// the target block, its own threads' accesses are ordered with it by the same means
    /// (a block barrier of the target orders nothing for a thread of another block). sm_90.
    ClusterLoad {
        /// The loaded value, of type `ty`.
        result: Value,
        /// The element type.
        ty: ScalarType,
        /// The `U32` shared address, as in this block's window.
        addr: Value,
        /// The `U32` rank of the block whose shared memory is read.
        rank: Value,
    },
    /// Distributed shared memory (`mapa.shared::cluster`, then `st.shared::cluster`): stores
    /// `value` (any type; a `Bool` writes one byte, 0 or 1) at the offset `addr` names in the
    /// shared memory of the block of rank `rank` of this block's cluster. The same operands,
    /// rules and ordering as [`Stmt::ClusterLoad`]. sm_90.
    ClusterStore {
        /// The `U32` shared address, as in this block's window.
        addr: Value,
        /// The `U32` rank of the block whose shared memory is written.
        rank: Value,
        /// The value stored; its type decides how many bytes are written.
        value: Value,
    },
    /// Device `printf`: every executing lane formats `format` with `args` (C semantics for
    /// the subset defined in [`crate::printf`], which also gives the argument promotions) and
    /// prints the text (see the module docs).
    Print {
        /// The format string, in the subset of [`crate::printf`].
        format: String,
        /// One value per conversion of `format`, in order.
        args: Vec<Value>,
    },
}

/// What a [`Stmt::Mbarrier`] does. Tokens are `U64`s returned by the arrivals: opaque
/// values that name the barrier and the phase the arrival counted toward (PTX's `state`);
/// their bits differ between the GPU and the emulator. Each variant's operand and result
/// types are in [`MbarrierOp::operand`] and [`MbarrierOp::result`]
/// (`cuprum_ir::effects`).
#[derive(serde::Serialize, serde::Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MbarrierOp {
    /// `mbarrier.init`: sets the barrier up with `arg` (`U32`, in `1..=2^20 - 1`) expected
    /// arrivals per phase, in phase 0 with no transactions. The barrier must not be live.
    Init,
    /// `mbarrier.arrive`: one arrival on the current phase (a release); the result is the
    /// `U64` token of that phase.
    Arrive,
    /// `mbarrier.arrive.expect_tx`: adds `arg` (`U32`) bytes to the current phase's
    /// tx-count, then arrives as `Arrive` does (result: the token). sm_90 only.
    ArriveExpectTx,
    /// `mbarrier.expect_tx`: adds `arg` (`U32`) bytes to the current phase's tx-count,
    /// without arriving. sm_90 only.
    ExpectTx,
    /// `mbarrier.test_wait`: whether the phase of token `arg` (`U64`) has completed (a
    /// `Bool`), without waiting; `true` acquires that phase's arrivals.
    TestWait,
    /// `mbarrier.try_wait`: as `TestWait`, but may first wait a while (a time the hardware
    /// chooses) for the phase to complete. On sm_80 it is `test_wait`.
    TryWait,
    /// `mbarrier.try_wait.parity`: whether the phase of parity `arg` (`U32`, 0 or 1; only its
    /// low bit counts) has completed, i.e. whether the current phase's parity differs; `arg`
    /// must name the current or the immediately preceding phase. On sm_80 it is
    /// `test_wait.parity`.
    TryWaitParity,
    /// Waits until the phase of token `arg` (`U64`) has completed, then acquires its
    /// arrivals (a `try_wait` loop on the GPU).
    Wait,
    /// Waits until the phase of parity `arg` (`U32`) has completed (a `try_wait.parity`
    /// loop on the GPU).
    WaitParity,
    /// `mbarrier.inval`: the barrier is no longer live; its memory may be reused (or the
    /// barrier initialised again). No thread may be using it.
    Inval,
    /// `cp.async.mbarrier.arrive{.noinc}.shared::cta.b64`: an arrival on the current phase
    /// that happens once every [`Stmt::CpAsync`] this thread issued before it has completed
    /// (and releases their writes). Without `noinc` the pending count is first raised by
    /// one, so the statement changes no count and only holds the phase open until the
    /// copies land; with `noinc` it is one of the phase's expected arrivals.
    CpAsyncArrive {
        /// Whether the arrival counts toward the expected count (`.noinc`).
        noinc: bool,
    },
    /// `mapa.shared::cluster` then `mbarrier.arrive.shared::cluster.b64`: one arrival on the
    /// mbarrier at the same shared address `addr` in the block of rank `arg` (`U32`,
    /// [`Special::ClusterCtaRank`]'s numbering, below the cluster's block count; this
    /// block's own rank is allowed) of this block's cluster. No result (a remote arrival
    /// returns no token). sm_90.
    ///
    /// Its release has PTX's default scope, the block (`.cta`; a `.cluster` release costs a
    /// memory barrier per arrival, which halved a clustered GEMM's speed on an H100): it
    /// orders what this thread has finished reading (a stage whose `wgmma`s it waited for)
    /// before what the target block does after observing the phase, which is how
    /// pipelines hand buffers back across a cluster; writes meant for the target block's
    /// threads need a fence at a wider scope first. The emulator orders it as it would a
    /// cluster-scope release, so it does not report a kernel that publishes writes to
    /// another block through such an arrival alone.
    ArriveCluster,
}

/// Why a kernel stopped itself.
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, PartialEq)]
pub enum TrapKind {
    /// `slice[index]` with `index >= len`. `index` and `len` are `U64` values; `site` describes
    /// the expression for error messages (e.g. `"x[i]"`).
    BoundsCheck {
        /// The `U64` index that was out of range.
        index: Value,
        /// The `U64` length of the indexed slice or array.
        len: Value,
        /// The indexing expression as written, for the error message.
        site: String,
    },
    /// An integer division or remainder by zero. `site` says which operation and where, for
    /// the error message (e.g. ``"`a / b` at line 12"``).
    DivideByZero {
        /// The division expression as written and where it is.
        site: String,
    },
    /// A signed integer division or remainder of `MIN` by `-1`, whose quotient overflows
    /// (`site` as for `DivideByZero`).
    DivideOverflow {
        /// The division expression as written and where it is.
        site: String,
    },
    /// A failed device assertion.
    Assert {
        /// The text the host reports: the user's message, or one describing what failed.
        message: String,
    },
}

/// A memory space.
#[derive(
    serde::Serialize, serde::Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord,
)]
pub enum AddressSpace {
    /// Device memory, visible to every thread of every launch; addresses are `U64`.
    Global,
    /// The block's shared memory, visible to the threads of one block for the launch's
    /// duration; addresses are `U32` offsets.
    Shared,
    /// The thread's private arrays ([`Kernel::locals`]); addresses are `U32` offsets.
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

/// How long the caches should keep what a global load reads: a hint to the GPU's L1 and L2
/// replacement that never changes what a load returns (the emulator ignores it). A kernel
/// that reads data twice asks to keep it after the first read (`Last`) and to drop it first
/// after the last (`First`), so that one stream of data does not push out another that is
/// read again; data every block reads (weights) is `Last`. In PTX: `.L1::evict_last` /
/// `.L1::evict_first` with an L2 policy of the same kind (`createpolicy.fractional`, on all
/// of the lines), as Triton writes its `eviction_policy`.
#[derive(
    serde::Serialize,
    serde::Deserialize,
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
)]
pub enum Eviction {
    /// The caches' own policy.
    #[default]
    Normal,
    /// Evicted before other lines: data read for the last time.
    First,
    /// Evicted after other lines: data read again soon.
    Last,
}

/// The memory a `fence.proxy.async` orders ([`Stmt::FenceProxyAsync`]).
#[derive(serde::Serialize, serde::Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProxyFenceSpace {
    /// The block's shared memory (`fence.proxy.async.shared::cta`): what staging tiles for
    /// `wgmma` or a TMA store, and initialising mbarriers for TMA loads, need.
    SharedCta,
    /// Every state space (`fence.proxy.async`).
    All,
}

/// The set of threads an atomic or fence is coherent with.
#[derive(serde::Serialize, serde::Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scope {
    /// The threads of one block (PTX `.cta`).
    Block,
    /// Every thread on the GPU (PTX `.gpu`).
    Device,
    /// The GPU and the host, and other GPUs (PTX `.sys`).
    System,
}

/// The memory ordering of an atomic ([`Op::Atomic`], [`Op::AtomicLoad`],
/// [`Stmt::AtomicStore`]), as in C++ and Rust, among the threads of the atomic's [`Scope`].
///
/// * `Relaxed`: atomic, but orders nothing else.
/// * `Release` (stores and read-modify-writes): this thread's memory accesses before it
///   happen before the accesses after an `Acquire` (or stronger) atomic of another thread
///   that reads the value it wrote, or a later value of the location written by a
///   read-modify-write.
/// * `Acquire` (loads and read-modify-writes): the other half of that pair.
/// * `AcqRel` (read-modify-writes only): both.
/// * `SeqCst`: a sequentially consistent fence at the scope before the access (PTX
///   `fence.sc`), then the access as `Acquire` (loads, read-modify-writes) or `Relaxed`
///   (stores): the mapping PTX's memory model gives for C++'s `seq_cst`.
///
/// The validator refuses `Release` and `AcqRel` on loads, `Acquire` and `AcqRel` on stores,
/// as Rust panics on them.
#[derive(serde::Serialize, serde::Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemOrder {
    /// No ordering beyond atomicity.
    Relaxed,
    /// Later accesses happen after the release this read.
    Acquire,
    /// Earlier accesses happen before an acquire that reads this write.
    Release,
    /// `Acquire` and `Release`.
    AcqRel,
    /// A `fence.sc` at the scope, then `Acquire` (a store: `Relaxed`).
    SeqCst,
}

impl MemOrder {
    /// Every ordering, for tests that cover them all.
    pub const ALL: [MemOrder; 5] = [
        Self::Relaxed,
        Self::Acquire,
        Self::Release,
        Self::AcqRel,
        Self::SeqCst,
    ];

    /// Whether the access publishes this thread's earlier accesses (`Release`, `AcqRel`;
    /// `SeqCst` through its fence).
    pub const fn releases(self) -> bool {
        matches!(self, Self::Release | Self::AcqRel | Self::SeqCst)
    }

    /// Whether the access makes other threads' released accesses visible to this thread's
    /// later ones (`Acquire`, `AcqRel`, `SeqCst`).
    pub const fn acquires(self) -> bool {
        matches!(self, Self::Acquire | Self::AcqRel | Self::SeqCst)
    }
}

/// Hardware index registers. All are `U32`.
#[derive(serde::Serialize, serde::Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Special {
    /// The thread's index within its block along a dimension, below `BlockDim`.
    ThreadIdx(Dim),
    /// The block's size along a dimension, in threads.
    BlockDim(Dim),
    /// The block's index within the grid along a dimension, below `GridDim`.
    BlockIdx(Dim),
    /// The grid's size along a dimension, in blocks.
    GridDim(Dim),
    /// Lane within the warp, 0..32.
    LaneId,
    /// The block's rank in its cluster (`%cluster_ctarank`), below the cluster's block
    /// count: `x + y * cx + z * cx * cy` of [`Special::ClusterCtaIdx`] in a cluster of shape
    /// `(cx, cy, cz)` ([`Kernel::cluster`]); 0 without a cluster.
    ClusterCtaRank,
    /// The block's index within its cluster along a dimension (`%cluster_ctaid`), below
    /// [`Special::ClusterDim`]: the block index modulo the cluster's size.
    ClusterCtaIdx(Dim),
    /// The cluster's size along a dimension, in blocks (`%cluster_nctaid`); 1 without a
    /// cluster.
    ClusterDim(Dim),
    /// The cluster's index within the grid along a dimension (`%clusterid`): the block index
    /// divided by the cluster's size.
    ClusterIdx(Dim),
    /// The grid's size along a dimension, in clusters (`%nclusterid`).
    ClusterCount(Dim),
}

/// One of the three dimensions of a block or a grid.
#[derive(serde::Serialize, serde::Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dim {
    /// The first dimension: consecutive `x` indices are consecutive lanes of a warp.
    X,
    /// The second dimension.
    Y,
    /// The third dimension.
    Z,
}

/// An operation producing one value.
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, PartialEq)]
pub enum Op {
    /// A constant; the result has the constant's type.
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
    /// The value (`U32`) of a hardware index register.
    Special(Special),
    /// A one-operand operation; the result has the operand's type.
    Unary(UnaryOp, Value),
    /// Both operands and the result have one type, except shifts (amount is `U32`).
    Binary(BinaryOp, Value, Value),
    /// A three-operand operation; all operands and the result have one type.
    Ternary(TernaryOp, Value, Value, Value),
    /// Operands of one type; result `Bool`.
    Compare(CmpOp, Value, Value),
    /// `cond ? if_true : if_false`; `cond` is `Bool`, the arms share the result type.
    Select {
        /// The `Bool` selector.
        cond: Value,
        /// The result where `cond` is true.
        if_true: Value,
        /// The result where `cond` is false.
        if_false: Value,
    },
    /// Rust's `as` (see the module docs).
    Cast {
        /// The value converted; any type.
        value: Value,
        /// The result type; not `Bool`.
        to: ScalarType,
    },
    /// Reinterprets the bits of `value` as `to`, of the same size.
    Bitcast {
        /// The value whose bits are reused.
        value: Value,
        /// The result type, the same size in bytes as `value`'s.
        to: ScalarType,
    },
    /// The current value of a variable, of the variable's type.
    ReadVar(Var),
    /// Loads a `ty` from `addr` (whose type is the space's address type).
    Load {
        /// The memory space read.
        space: AddressSpace,
        /// The type loaded, which is also the result type.
        ty: ScalarType,
        /// The address, aligned to the size of `ty`.
        addr: Value,
        /// How long the caches should keep what it reads (`Normal` unless `space` is
        /// `Global`); never changes the value.
        eviction: Eviction,
    },
    /// Atomically applies `op` at `addr` and returns the old value. `value` has the memory
    /// type; `compare` is present exactly for `AtomicOp::CompareExchange`. The lanes of a
    /// warp that run it together apply it one after another in lane order (so each sees
    /// the lanes before it); `order` says what else it orders ([`MemOrder`]).
    Atomic {
        /// The read-modify-write operation.
        op: AtomicOp,
        /// `Global` or `Shared`; atomics on local memory are not allowed.
        space: AddressSpace,
        /// The threads the operation is atomic with respect to.
        scope: Scope,
        /// What the operation orders besides itself.
        order: MemOrder,
        /// The address, of the space's address type, aligned to the memory type's size.
        addr: Value,
        /// The operand, a 32- or 64-bit type, which is also the memory and result type.
        value: Value,
        /// For `CompareExchange`, the value expected in memory; `None` for every other op.
        compare: Option<Value>,
    },
    /// Atomically loads a `ty` (a 32- or 64-bit type) from `addr` in `space` (`Global` or
    /// `Shared`): the value some atomic or store of the location left there, never a torn
    /// one. `order` is `Relaxed`, `Acquire` or `SeqCst` (PTX `ld.relaxed`/`ld.acquire` at
    /// `scope`; `SeqCst` after a `fence.sc`). It is never merged with another load, nor
    /// moved out of a loop (a spin loop must see other threads' stores): its effects are
    /// those of a read-modify-write.
    AtomicLoad {
        /// `Global` or `Shared`.
        space: AddressSpace,
        /// The threads the load is atomic with respect to.
        scope: Scope,
        /// `Relaxed`, `Acquire` or `SeqCst`.
        order: MemOrder,
        /// The type loaded, which is also the result type.
        ty: ScalarType,
        /// The address, aligned to the size of `ty`.
        addr: Value,
    },
    /// Reads `value` from another lane of the warp (`shfl.sync`). `lane` is `U32`: the source
    /// lane for `Idx`, the distance for `Up`/`Down`, the xor mask for `Xor`; only its low five
    /// bits count (so an `Idx` of 33 reads lane 1), as in PTX. A lane whose source falls outside
    /// the warp (`Up` below lane 0, `Down` past lane 31) gets its own value, as in PTX.
    Shuffle {
        /// How `lane` picks the source lane.
        mode: ShuffleMode,
        /// This lane's contribution, of any type; the result has the same type.
        value: Value,
        /// The `U32` lane selector (see above).
        lane: Value,
    },
    /// A warp vote over the active lanes: `All`/`Any` give `Bool`, `Ballot` gives `U32`.
    Vote {
        /// Which vote.
        mode: VoteMode,
        /// This lane's `Bool` vote.
        pred: Value,
    },
}

/// Declares an enum of operations together with `ALL`, every variant in declaration order:
/// the one list that tests and tools covering every operation iterate (filtered by the
/// operation's predicates), so a new operation is covered where it is added.
macro_rules! operations {
    ($(#[$meta:meta])* pub enum $name:ident { $($(#[$vmeta:meta])* $variant:ident,)* }) => {
        $(#[$meta])*
        pub enum $name {
            $($(#[$vmeta])* $variant,)*
        }

        impl $name {
            /// Every operation, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)*];
        }
    };
}

operations! {
/// The one-operand operations of [`Op::Unary`].
#[derive(serde::Serialize, serde::Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    /// Wrapping negation on integers, sign flip on floats.
    Neg,
    /// Bitwise not on integers, logical not on `Bool`.
    Not,
    /// The number of one bits of an integer (`count_ones`), in the operand's type.
    CountOnes,
    /// The number of zero bits above the highest one bit of an integer (`leading_zeros`; the
    /// width for zero), in the operand's type.
    LeadingZeros,
    /// The number of zero bits below the lowest one bit of an integer (`trailing_zeros`; the
    /// width for zero), in the operand's type.
    TrailingZeros,
    // Float-only operations below.
    /// Absolute value (clears the sign bit, so `-NaN` becomes `NaN`).
    Abs,
    /// Square root, correctly rounded for `F32` and `F64`; NaN for negative operands.
    Sqrt,
    /// Rounds toward negative infinity.
    Floor,
    /// Rounds toward positive infinity.
    Ceil,
    /// Rust's `round`: half away from zero.
    Round,
    /// Rounds toward zero.
    Trunc,
    /// `e^x`. Like the other transcendental functions below, not correctly rounded: the GPU
    /// code is accurate to a few ulp, so it may differ from the emulator (Rust's `std`) in the
    /// last bits.
    Exp,
    /// `2^x` (approximate, see `Exp`).
    Exp2,
    /// `2^x` computed with `f32` subnormals flushed to zero (PTX's `ex2.approx.ftz.f32`,
    /// cuTile's `exp2(x, ftz::Enabled)`): an `f32` subnormal operand counts as a zero of its
    /// sign and an `f32` subnormal result becomes `+0`. `F16` and `BF16` compute in `f32`,
    /// so the flushes apply there; `F64` is `Exp2`. Approximate, see `Exp`. On the GPU it is
    /// one instruction where `Exp2` of an `f32` is three (the subnormal range needs scaling).
    Exp2Ftz,
    /// Natural logarithm (approximate, see `Exp`); NaN for negative operands, `-inf` at zero.
    Ln,
    /// Base-2 logarithm (approximate, see `Exp`).
    Log2,
    /// Sine of an angle in radians (approximate, see `Exp`).
    Sin,
    /// Cosine of an angle in radians (approximate, see `Exp`).
    Cos,
    /// Hyperbolic tangent (approximate, see `Exp`).
    Tanh,
    /// Tangent of an angle in radians (approximate, see `Exp`).
    Tan,
    /// Arctangent, in radians in [-pi/2, pi/2] (approximate, see `Exp`).
    Atan,
    /// Hyperbolic sine (approximate, see `Exp`).
    Sinh,
    /// Hyperbolic cosine (approximate, see `Exp`).
    Cosh,
    /// Inverse hyperbolic sine (approximate, see `Exp`).
    Asinh,
    /// Inverse hyperbolic cosine (approximate, see `Exp`); NaN below 1.
    Acosh,
    /// Inverse hyperbolic tangent (approximate, see `Exp`); `±inf` at `±1`, NaN beyond.
    Atanh,
    /// `e^x - 1`, accurate near 0 (approximate, see `Exp`).
    ExpM1,
    /// `ln(1 + x)`, accurate near 0 (approximate, see `Exp`); NaN below -1.
    Ln1p,
}
}

impl UnaryOp {
    /// Whether the operation is defined on floats only.
    pub const fn is_float_only(self) -> bool {
        !matches!(self, Self::Neg | Self::Not) && !self.is_bit_count()
    }

    /// Whether the operation counts bits (`CountOnes`, `LeadingZeros`, `TrailingZeros`):
    /// defined on integers only.
    pub const fn is_bit_count(self) -> bool {
        matches!(
            self,
            Self::CountOnes | Self::LeadingZeros | Self::TrailingZeros
        )
    }

    /// Whether the operation is a transcendental function: the GPU computes it with an
    /// approximation (within a few ulp, see `cuprum-ptx`'s `math`), so its bits may differ
    /// from the host's.
    pub const fn is_transcendental(self) -> bool {
        matches!(
            self,
            Self::Exp
                | Self::Exp2
                | Self::Exp2Ftz
                | Self::Ln
                | Self::Log2
                | Self::Sin
                | Self::Cos
                | Self::Tanh
                | Self::Tan
                | Self::Atan
                | Self::Sinh
                | Self::Cosh
                | Self::Asinh
                | Self::Acosh
                | Self::Atanh
                | Self::ExpM1
                | Self::Ln1p
        )
    }
}

operations! {
/// The two-operand operations of [`Op::Binary`]; their integer and float semantics are in
/// the module docs.
#[derive(serde::Serialize, serde::Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    /// Addition; wraps on integers.
    Add,
    /// Subtraction; wraps on integers.
    Sub,
    /// Multiplication; wraps on integers (the low half of the product).
    Mul,
    /// The high half of the double-width product of two 32- or 64-bit integers (signed or
    /// unsigned as their type): with `Mul`'s low half, the exact product. Integers only.
    MulHigh,
    /// Division: truncating on integers (a zero divisor or signed `MIN / -1` must not reach
    /// it), IEEE on floats.
    Div,
    /// Remainder with the sign of the dividend, as Rust's `%` (same preconditions as `Div` on
    /// integers).
    Rem,
    /// Bitwise on integers, logical on `Bool`.
    And,
    /// Bitwise or on integers, logical or on `Bool`.
    Or,
    /// Bitwise exclusive or on integers, logical inequality on `Bool`.
    Xor,
    /// Left shift by the `U32` right operand modulo the bit width.
    Shl,
    /// Right shift by the `U32` right operand modulo the bit width: arithmetic on signed,
    /// logical on unsigned types.
    Shr,
    /// The smaller operand (by signedness on integers; on floats a NaN operand yields the
    /// other one).
    Min,
    /// The larger operand (NaN handling as `Min`).
    Max,
    /// `atan2(l, r)`: the angle of the point `(r, l)` (so `y.atan2(x)` is `Atan2(y, x)`), in
    /// radians in [-pi, pi], with C's special values (signed zeros pick the quadrant).
    /// Floats only; approximate like the transcendental [`UnaryOp`]s.
    Atan2,
    /// `sqrt(l^2 + r^2)` without overflow or underflow on the way; infinite when an operand
    /// is (even if the other is NaN), as C's `hypot`. Floats only; approximate like `Atan2`.
    Hypot,
}
}

impl BinaryOp {
    /// Whether the operation is defined on integers (and `Bool`, for the bitwise ones) only:
    /// the bitwise operations, shifts and `MulHigh`.
    pub const fn is_integer_only(self) -> bool {
        matches!(
            self,
            Self::And | Self::Or | Self::Xor | Self::Shl | Self::Shr | Self::MulHigh
        )
    }

    /// Whether the operation is defined on floats only.
    pub const fn is_float_only(self) -> bool {
        matches!(self, Self::Atan2 | Self::Hypot)
    }

    /// Whether the operation is a transcendental function (see
    /// [`UnaryOp::is_transcendental`]).
    pub const fn is_transcendental(self) -> bool {
        matches!(self, Self::Atan2 | Self::Hypot)
    }
}

/// The three-operand operations of [`Op::Ternary`].
#[derive(serde::Serialize, serde::Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TernaryOp {
    /// `a * b + c` with one rounding (floats only).
    MulAdd,
}

/// The comparisons of [`Op::Compare`]: ordered by signedness on integers (`false < true` on
/// `Bool`), IEEE on floats.
#[derive(serde::Serialize, serde::Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CmpOp {
    /// Equal (false whenever an operand is NaN).
    Eq,
    /// Not equal (true whenever an operand is NaN).
    Ne,
    /// Less than.
    Lt,
    /// Less than or equal.
    Le,
    /// Greater than.
    Gt,
    /// Greater than or equal.
    Ge,
}

/// The read-modify-write operations of [`Op::Atomic`]. Each returns the value memory held
/// before. Floats allow only `Add`, `Exchange` and `CompareExchange`.
#[derive(serde::Serialize, serde::Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AtomicOp {
    /// Adds the operand (wrapping on integers, IEEE rounding on floats). On `F32` the operands
    /// and the result are flushed: a subnormal is taken, and stored, as a zero of its sign,
    /// as `atom.add.f32` does (measured on an H200); `F64` keeps subnormals.
    Add,
    /// Subtracts the operand, wrapping (integers only).
    Sub,
    /// Stores the smaller of memory and the operand, by the type's signedness (integers only).
    Min,
    /// Stores the larger of memory and the operand (integers only).
    Max,
    /// Stores the operand unconditionally.
    Exchange,
    /// Stores the operand only if memory holds `compare` (compared bit for bit).
    CompareExchange,
    /// Bitwise and (integers only).
    And,
    /// Bitwise or (integers only).
    Or,
    /// Bitwise exclusive or (integers only).
    Xor,
}

impl AtomicOp {
    /// Every operation, for the tests that cover them all.
    pub const ALL: [AtomicOp; 9] = [
        AtomicOp::Add,
        AtomicOp::Sub,
        AtomicOp::Min,
        AtomicOp::Max,
        AtomicOp::Exchange,
        AtomicOp::CompareExchange,
        AtomicOp::And,
        AtomicOp::Or,
        AtomicOp::Xor,
    ];

    /// Whether the operation exists on elements of type `ty`: every one on integers, only
    /// `Add`, `Exchange` and `CompareExchange` on floats (the one statement of that rule, which
    /// the validator, the front end and the tests ask).
    pub fn applies_to(self, ty: ScalarType) -> bool {
        !ty.is_float()
            || matches!(
                self,
                AtomicOp::Add | AtomicOp::Exchange | AtomicOp::CompareExchange
            )
    }
}

/// How [`Op::Shuffle`] chooses the lane to read from.
#[derive(serde::Serialize, serde::Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ShuffleMode {
    /// From lane `lane`.
    Idx,
    /// From lane `self - lane` (a lane below 0 keeps its value).
    Up,
    /// From lane `self + lane` (a lane past 31 keeps its value).
    Down,
    /// From lane `self ^ lane`.
    Xor,
}

/// What [`Op::Vote`] computes over the active lanes.
#[derive(serde::Serialize, serde::Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum VoteMode {
    /// Whether every active lane's predicate is true.
    All,
    /// Whether at least one active lane's predicate is true.
    Any,
    /// A `U32` mask with bit `i` set when lane `i` is active and its predicate is true.
    Ballot,
}
