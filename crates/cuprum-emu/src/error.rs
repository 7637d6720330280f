//! The emulator's errors: one typed variant per thing that can go wrong, each naming the kernel,
//! the block and thread (`[x, y, z]`, as `blockIdx`/`threadIdx`) and the address where that
//! applies, with a message that says what to look at.
//!
//! Hot code never builds these: the interpreter reports small internal faults and the warp that
//! hit one turns it into an [`EmuError`] with its context, once, on the error path.

use cuprum_ir::AddressSpace;

/// A block or thread index (`[x, y, z]`), as CUDA's `blockIdx` / `threadIdx`.
pub type Dim3 = [u32; 3];

/// Which kind of conflict a race is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RaceKind {
    /// Two threads wrote the same byte (plain stores, or a store and an atomic) with nothing
    /// ordering the writes.
    WriteWrite,
    /// One thread wrote and another read the same byte with nothing ordering the two.
    ReadWrite,
}

/// One side of a global-memory race: the thread and what it did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RaceAccess {
    /// The thread's block (`blockIdx`).
    pub block: Dim3,
    /// The thread within its block (`threadIdx`).
    pub thread: Dim3,
    /// Whether the access was a load, a store or an atomic.
    pub access: AccessKind,
}

/// What a faulting memory access was doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AccessKind {
    /// A load, including the reads of `ldmatrix` and the global-memory reads of `cp.async`.
    Load,
    /// A store, including the shared-memory writes of `cp.async`.
    Store,
    /// An atomic read-modify-write.
    Atomic,
}

impl AccessKind {
    fn name(self) -> &'static str {
        match self {
            Self::Load => "load",
            Self::Store => "store",
            Self::Atomic => "atomic",
        }
    }
}

fn space_name(space: &AddressSpace) -> &'static str {
    match space {
        AddressSpace::Global => "global",
        AddressSpace::Shared => "shared",
        AddressSpace::Local => "local",
    }
}

fn race_name(kind: &RaceKind) -> &'static str {
    match kind {
        RaceKind::WriteWrite => "write/write",
        RaceKind::ReadWrite => "read/write",
    }
}

/// Two threads of a launch touched the same bytes of global memory, at least one with a plain
/// write (a store, or a store and an atomic, or a store and a load), and nothing orders the
/// accesses: not the same thread, not one block with a barrier between them, not a release
/// (a device fence, then an atomic) that the other thread acquired (an atomic on the same
/// location that came later, then a fence or a barrier).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "kernel `{kernel}`: global-memory {} race at {address:#x} ({location}): {} by thread {:?} \
     of block {:?}, then {} by thread {:?} of block {:?}, with nothing ordering them (threads \
     of one block need a barrier (`sync_threads`) between the accesses; threads of different \
     blocks a device fence followed by an atomic that the other thread's atomic observes, \
     then a fence, or separate launches)",
    race_name(.kind), .first.access.name(), .first.thread, .first.block,
    .second.access.name(), .second.thread, .second.block
)]
pub struct GlobalRace {
    /// The kernel's name.
    pub kernel: String,
    /// The access the emulator made first.
    pub first: RaceAccess,
    /// The access that found the race.
    pub second: RaceAccess,
    /// The device address of the first byte both accesses touched.
    pub address: u64,
    /// What that address is: an element of a slice parameter (`element 5 of parameter `out`
    /// (f32)`), or a byte of an allocation that no parameter covers.
    pub location: String,
    /// Whether both threads wrote, or one wrote and one read.
    pub kind: RaceKind,
}

/// Two threads of a cluster touched the same byte of one block's shared memory, at least one
/// of them from another block (distributed shared memory) and at least one writing, and
/// nothing orders the accesses: for a thread of another block, a block barrier of the owner
/// orders nothing; a cluster barrier phase does (accesses before a thread's arrival happen
/// before accesses after the waits of that phase), and so does a remote mbarrier arrival
/// whose phase the other thread observes.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "kernel `{kernel}`: distributed shared-memory {} race at offset {address:#x} of block \
     {owner:?}'s shared memory: {} by thread {:?} of block {:?}, then {} by thread {:?} of \
     block {:?}, with nothing ordering them (put a cluster barrier, `cluster::cluster_sync()`, \
     between the accesses; a `sync_threads()` of one block does not order another block's \
     threads)",
    race_name(.kind), .first.access.name(), .first.thread, .first.block,
    .second.access.name(), .second.thread, .second.block
)]
pub struct ClusterSharedRace {
    /// The kernel's name.
    pub kernel: String,
    /// The block whose shared memory both accesses touched (`blockIdx`).
    pub owner: Dim3,
    /// The access the emulator made first.
    pub first: RaceAccess,
    /// The access that found the race.
    pub second: RaceAccess,
    /// The byte offset into the owner's shared memory.
    pub address: u64,
    /// Whether both threads wrote, or one wrote and one read.
    pub kind: RaceKind,
}

/// Two threads stored to the same element of a `DisjointSlice` parameter, which gives each
/// element to one thread, whatever orders the stores (atomics are not counted: they never
/// race with each other). The safe API makes this impossible; an `unsafe`
/// kernel, a raw launch or a compiler bug can still do it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "kernel `{kernel}`: element {index} of `DisjointSlice` parameter `{param}` is written by \
     thread {:?} of block {:?} and by thread {:?} of block {:?}, but a DisjointSlice gives each \
     element to one thread (a raw launch whose grid has threads the kernel's index does not \
     tell apart, an `unsafe` kernel, or a compiler bug)",
    .first.1, .first.0, .second.1, .second.0
)]
pub struct DisjointWrite {
    /// The kernel's name.
    pub kernel: String,
    /// The parameter's name.
    pub param: String,
    /// The element's index in the slice.
    pub index: u64,
    /// The thread that wrote it first: `(blockIdx, threadIdx)`.
    pub first: (Dim3, Dim3),
    /// The other thread that wrote it: `(blockIdx, threadIdx)`.
    pub second: (Dim3, Dim3),
}

/// Everything the emulator reports. Device-side variants name the kernel, the block and the
/// thread; memory variants name the address (a device address for `Global`, a byte offset into
/// the block's shared memory or the thread's local memory otherwise).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EmuError {
    /// The kernel failed IR validation; nothing ran.
    #[error("kernel `{kernel}` is not valid IR, nothing was run: {message}")]
    InvalidKernel {
        /// The kernel's name.
        kernel: String,
        /// The validator's description of the broken rule.
        message: String,
    },

    /// The grid, block or shared-memory size is not one a GPU accepts.
    #[error("cannot launch kernel `{kernel}`: {message}")]
    InvalidLaunch {
        /// The kernel's name.
        kernel: String,
        /// Which limit the launch exceeds, and by how much.
        message: String,
    },

    /// The launch passed a different number of arguments than the kernel has parameters.
    #[error("kernel `{kernel}` has {expected} parameters but the launch passed {got} arguments")]
    ArgumentCount {
        /// The kernel's name.
        kernel: String,
        /// How many parameters the kernel declares.
        expected: usize,
        /// How many arguments the launch passed.
        got: usize,
    },

    /// An argument does not fit its parameter (wrong kind, non-canonical scalar bits, or a
    /// slice that is not inside live device memory).
    #[error("argument {index} (`{param}`) of kernel `{kernel}`: {message}")]
    ArgumentMismatch {
        /// The kernel's name.
        kernel: String,
        /// The position of the argument, from 0.
        index: usize,
        /// The parameter's name in the kernel.
        param: String,
        /// Why the argument does not fit.
        message: String,
    },

    /// An allocation did not fit in the emulated device's memory.
    #[error(
        "out of emulated device memory: {requested} bytes requested, {available} of the \
         emulator's capacity still free (free buffers, or create the Memory with a larger capacity)"
    )]
    OutOfMemory {
        /// The size of the allocation asked for, in bytes.
        requested: u64,
        /// How many bytes of the emulator's capacity were still free.
        available: u64,
    },

    /// `free` of an address that is not the start of a live allocation.
    #[error(
        "free of {address:#x}, which is not the start of a live allocation (freed twice, or \
         an address from somewhere else)"
    )]
    InvalidFree {
        /// The address passed to `free`.
        address: u64,
    },

    /// A host-side read, write, fill or copy touched memory outside every live allocation.
    #[error(
        "host {op} of {len} bytes at {address:#x} is not inside one live allocation (buffer \
         freed, too short, or wrong address)"
    )]
    HostOutOfBounds {
        /// The host operation: `"read"`, `"write"`, `"fill"`, or which side of a `"copy"`.
        op: &'static str,
        /// The device address of the first byte touched.
        address: u64,
        /// How many bytes the operation touched.
        len: u64,
    },

    /// A kernel accessed memory outside every live allocation (global), outside the block's
    /// shared memory, or outside the thread's local arrays; or an access straddled the end.
    #[error(
        "kernel `{kernel}`, block {block:?}, thread {thread:?}: out-of-bounds {} memory {} of \
         {size} bytes at {address:#x}",
        space_name(.space), .access.name()
    )]
    OutOfBounds {
        /// The kernel's name.
        kernel: String,
        /// The block of the thread that failed (`blockIdx`).
        block: Dim3,
        /// The thread that failed, within its block (`threadIdx`).
        thread: Dim3,
        /// The address accessed, in the address form of `space`.
        address: u64,
        /// The size of the access in bytes.
        size: u32,
        /// The memory space accessed.
        space: AddressSpace,
        /// Whether it was a load, a store or an atomic.
        access: AccessKind,
    },

    /// A load, store or atomic at an address not a multiple of its size.
    #[error(
        "kernel `{kernel}`, block {block:?}, thread {thread:?}: misaligned {} memory access \
         of {size} bytes at {address:#x} (addresses must be multiples of the access size)",
        space_name(.space)
    )]
    Misaligned {
        /// The kernel's name.
        kernel: String,
        /// The block of the thread that failed (`blockIdx`).
        block: Dim3,
        /// The thread that failed, within its block (`threadIdx`).
        thread: Dim3,
        /// The address accessed, in the address form of `space`.
        address: u64,
        /// The size of the access in bytes, which the address must be a
        /// multiple of.
        size: u32,
        /// The memory space accessed.
        space: AddressSpace,
    },

    /// A bounds check the front end emitted failed (`slice[index]` with `index >= len`).
    #[error(
        "kernel `{kernel}`, block {block:?}, thread {thread:?}: index out of bounds at \
         `{site}`: the len is {len} but the index is {index}"
    )]
    BoundsCheck {
        /// The kernel's name.
        kernel: String,
        /// The block of the thread that failed (`blockIdx`).
        block: Dim3,
        /// The thread that failed, within its block (`threadIdx`).
        thread: Dim3,
        /// The index used.
        index: u64,
        /// The length of the slice or array indexed.
        len: u64,
        /// The expression in the kernel's source, as the front end recorded it.
        site: String,
    },

    /// An integer division or remainder by zero (a front-end check, or the IR operation
    /// itself).
    #[error(
        "kernel `{kernel}`, block {block:?}, thread {thread:?}: attempt to divide by zero in \
         {site}"
    )]
    DivideByZero {
        /// The kernel's name.
        kernel: String,
        /// The block of the thread that failed (`blockIdx`).
        block: Dim3,
        /// The thread that failed, within its block (`threadIdx`).
        thread: Dim3,
        /// The expression in the kernel's source, as the front end recorded it.
        site: String,
    },

    /// A zero-filling `cp.async` told to read more source bytes than it copies (the GPU's
    /// behaviour is undefined).
    #[error(
        "kernel `{kernel}`, block {block:?}, thread {thread:?}: cp.async asked to read \
         {read} source bytes of a {size}-byte copy (at most {size})"
    )]
    CpAsyncSourceSize {
        /// The kernel's name.
        kernel: String,
        /// The block of the thread that failed (`blockIdx`).
        block: Dim3,
        /// The thread that failed, within its block (`threadIdx`).
        thread: Dim3,
        /// The source size asked for.
        read: u64,
        /// The copy's size.
        size: u32,
    },

    /// A signed `MIN / -1` or `MIN % -1`, which overflows (a front-end check, or the IR
    /// operation itself).
    #[error(
        "kernel `{kernel}`, block {block:?}, thread {thread:?}: attempt to divide with \
         overflow (the signed `MIN` by -1) in {site}"
    )]
    DivideOverflow {
        /// The kernel's name.
        kernel: String,
        /// The block of the thread that failed (`blockIdx`).
        block: Dim3,
        /// The thread that failed, within its block (`threadIdx`).
        thread: Dim3,
        /// The expression in the kernel's source, as the front end recorded it.
        site: String,
    },

    /// A device assertion failed.
    #[error("kernel `{kernel}`, block {block:?}, thread {thread:?}: assertion failed: {message}")]
    AssertFailed {
        /// The kernel's name.
        kernel: String,
        /// The block of the thread that failed (`blockIdx`).
        block: Dim3,
        /// The thread that failed, within its block (`threadIdx`).
        thread: Dim3,
        /// The assertion's message, or a description of its condition.
        message: String,
    },

    /// Two threads of a block touched the same shared-memory byte between two barriers, at
    /// least one of them writing (atomics excepted). `threads.0` accessed it first.
    #[error(
        "kernel `{kernel}`, block {block:?}: shared-memory {} race at offset {address:#x} \
         between thread {:?} and thread {:?} with no barrier between the accesses",
        race_name(.kind), .threads.0, .threads.1
    )]
    SharedRace {
        /// The kernel's name.
        kernel: String,
        /// The block whose threads raced.
        block: Dim3,
        /// The two threads, the earlier access first.
        threads: (Dim3, Dim3),
        /// The byte offset into the block's shared memory.
        address: u64,
        /// Whether both threads wrote, or one wrote and one read.
        kind: RaceKind,
    },

    /// Two threads of a launch touched the same bytes of global memory, at least one with a
    /// plain write, and nothing orders the accesses (see [`GlobalRace`]).
    #[error(transparent)]
    GlobalRace(Box<GlobalRace>),

    /// Two threads wrote the same element of a `DisjointSlice` parameter (see
    /// [`DisjointWrite`]).
    #[error(transparent)]
    DisjointWrite(Box<DisjointWrite>),

    /// Two threads of a cluster touched the same byte of one block's shared memory, one of
    /// them through distributed shared memory, with nothing ordering the accesses (see
    /// [`ClusterSharedRace`]).
    #[error(transparent)]
    ClusterSharedRace(Box<ClusterSharedRace>),

    /// A thread read bytes of another block's shared memory (distributed shared memory) that
    /// nothing in that block has written.
    #[error(
        "kernel `{kernel}`, block {block:?}, thread {thread:?}: read of {size} bytes of \
         uninitialized shared memory at offset {address:#x} of block {owner:?} (distributed \
         shared memory: nothing in that block wrote it)"
    )]
    UninitializedClusterSharedRead {
        /// The kernel's name.
        kernel: String,
        /// The block of the thread that read (`blockIdx`).
        block: Dim3,
        /// The thread that read, within its block (`threadIdx`).
        thread: Dim3,
        /// The block whose shared memory it read (`blockIdx`).
        owner: Dim3,
        /// The byte offset of the read into the owner's shared memory.
        address: u64,
        /// The size of the read in bytes.
        size: u32,
    },

    /// A read of shared memory that nothing in the block has written since the launch.
    #[error(
        "kernel `{kernel}`, block {block:?}, thread {thread:?}: read of {size} bytes of \
         uninitialized shared memory at offset {address:#x} (nothing in this block wrote it)"
    )]
    UninitializedSharedRead {
        /// The kernel's name.
        kernel: String,
        /// The block of the thread that failed (`blockIdx`).
        block: Dim3,
        /// The thread that failed, within its block (`threadIdx`).
        thread: Dim3,
        /// The byte offset of the read into the block's shared memory.
        address: u64,
        /// The size of the read in bytes.
        size: u32,
    },

    /// A barrier that not every non-exited thread of the block reached (a barrier in a
    /// divergent branch or loop, or warps waiting at different barrier statements).
    #[error("kernel `{kernel}`, block {block:?}, thread {thread:?}: barrier divergence: {message}")]
    BarrierDivergence {
        /// The kernel's name.
        kernel: String,
        /// The block of the thread that failed (`blockIdx`).
        block: Dim3,
        /// The thread that failed, within its block (`threadIdx`).
        thread: Dim3,
        /// Which threads waited where.
        message: String,
    },

    /// An mbarrier used wrongly: one no `init` set up (or invalidated since), initialised
    /// while live, with a count out of range, a token of another barrier, an address outside
    /// shared memory or not 8-byte aligned, or used by a thread that nothing orders after the
    /// initialisation (a barrier or a completed phase between them). Undefined behaviour on
    /// the GPU.
    #[error(
        "kernel `{kernel}`, block {block:?}, thread {thread:?}: mbarrier at shared offset          {address}: {message}"
    )]
    MbarrierMisuse {
        /// The kernel's name.
        kernel: String,
        /// The block of the thread that failed (`blockIdx`).
        block: Dim3,
        /// The thread that failed, within its block (`threadIdx`).
        thread: Dim3,
        /// The barrier object's byte offset in the block's shared memory.
        address: u64,
        /// What was wrong.
        message: String,
    },

    /// The tensor memory accelerator and a thread's ordinary accesses of shared memory
    /// conflict: a thread touched the destination of a TMA load before observing the
    /// mbarrier phase its bytes complete on, wrote the source of a TMA store before a
    /// `cp.async.bulk.wait_group.read` covering the store, touched bytes the TMA wrote with
    /// nothing ordering its access after theirs, or a TMA load overwrote bytes a thread
    /// accessed with nothing ordering that access before the load's issue. On the GPU the
    /// thread sees old or half-written data.
    #[error(
        "kernel `{kernel}`, block {block:?}, thread {thread:?}: shared-memory race with the \
         tensor memory accelerator at offset {address:#x}: {message}"
    )]
    AsyncProxyRace {
        /// The kernel's name.
        kernel: String,
        /// The block of the thread (`blockIdx`).
        block: Dim3,
        /// The thread whose access conflicts (`threadIdx`).
        thread: Dim3,
        /// The byte offset into the block's shared memory.
        address: u64,
        /// Which copy, and what orders the access correctly.
        message: String,
    },

    /// The async proxy (a TMA store, or a `wgmma` reading an operand) read shared memory
    /// that a thread wrote through the generic proxy (ordinary stores, `cp.async`) with no
    /// `fence.proxy.async` after the write, by the writer or by the issuing thread: on the
    /// GPU it may read stale bytes.
    #[error(
        "kernel `{kernel}`, block {block:?}, thread {thread:?}: a TMA store or a wgmma reads \
         shared offset {address:#x} through the async proxy, which thread {writer:?} wrote \
         with no `fence.proxy.async` since (call `fence_proxy_async()` after writing the tile \
         and before the barrier that precedes the store or the wgmma)"
    )]
    MissingProxyFence {
        /// The kernel's name.
        kernel: String,
        /// The block (`blockIdx`).
        block: Dim3,
        /// The thread that issued the store (`threadIdx`).
        thread: Dim3,
        /// The thread that wrote the byte (`threadIdx`).
        writer: Dim3,
        /// The byte offset into the block's shared memory.
        address: u64,
    },

    /// A bulk copy or tensor map used wrongly: a map that is not one, a copy whose
    /// coordinates do not fit its map, a misaligned shared address, a box outside shared
    /// memory, a complete-tx on a barrier that is not live. Undefined behaviour on the GPU.
    #[error("kernel `{kernel}`, block {block:?}, thread {thread:?}: bulk copy: {message}")]
    TmaMisuse {
        /// The kernel's name.
        kernel: String,
        /// The block (`blockIdx`).
        block: Dim3,
        /// The thread that issued the copy (`threadIdx`).
        thread: Dim3,
        /// What was wrong.
        message: String,
    },

    /// Threads wait on an mbarrier phase that can never complete: every other thread of the
    /// block has finished, waits at a `bar.sync`, or waits on an mbarrier too. On the GPU the
    /// block hangs.
    #[error("kernel `{kernel}`, block {block:?}, thread {thread:?}: mbarrier deadlock: {message}")]
    MbarrierDeadlock {
        /// The kernel's name.
        kernel: String,
        /// The block of the waiting thread (`blockIdx`).
        block: Dim3,
        /// A waiting thread, within its block (`threadIdx`).
        thread: Dim3,
        /// What it waits for and where the others are.
        message: String,
    },

    /// Threads wait at a named barrier (`bar.sync id, n`) that can never complete: the
    /// threads that could still arrive have finished or wait elsewhere. On the GPU the block
    /// hangs.
    #[error(
        "kernel `{kernel}`, block {block:?}, thread {thread:?}: named barrier deadlock: {message}"
    )]
    NamedBarrierDeadlock {
        /// The kernel's name.
        kernel: String,
        /// The block of the waiting thread (`blockIdx`).
        block: Dim3,
        /// A waiting thread, within its block (`threadIdx`).
        thread: Dim3,
        /// What it waits for and where the others are.
        message: String,
    },

    /// A misuse of a thread-block cluster's statements that the GPU leaves undefined: a
    /// thread arriving at the cluster barrier twice without waiting, or waiting without an
    /// arrival since its last wait; a remote mbarrier arrival, a multicast copy or a
    /// distributed shared-memory access naming a rank outside the cluster, or aimed at a
    /// block whose threads have all returned (its shared memory is gone); a block that
    /// returned while another block's arrival on its mbarriers, multicast copy into its
    /// shared memory or access of it was not ordered before the return.
    #[error("kernel `{kernel}`, block {block:?}, thread {thread:?}: cluster misuse: {message}")]
    ClusterMisuse {
        /// The kernel's name.
        kernel: String,
        /// The block of the thread that failed (`blockIdx`).
        block: Dim3,
        /// The thread that failed, within its block (`threadIdx`).
        thread: Dim3,
        /// What was wrong, and what orders it correctly.
        message: String,
    },

    /// Threads wait at a cluster barrier (`barrier.cluster.wait`) whose phase can never
    /// complete: threads of the cluster that have not arrived wait elsewhere (at a block
    /// barrier, on an mbarrier, at another cluster wait). On the GPU the cluster hangs.
    #[error(
        "kernel `{kernel}`, block {block:?}, thread {thread:?}: cluster barrier deadlock: \
         {message}"
    )]
    ClusterBarrierDeadlock {
        /// The kernel's name.
        kernel: String,
        /// The block of the waiting thread (`blockIdx`).
        block: Dim3,
        /// A waiting thread, within its block (`threadIdx`).
        thread: Dim3,
        /// What it waits for and where the others are.
        message: String,
    },

    /// A misuse of Hopper's warpgroup statements (`wgmma`, `setmaxnreg`) that the GPU
    /// leaves undefined: an early accumulator access, an overwritten operand, a missing
    /// `wgmma.fence`, a statement not executed by the whole warpgroup together.
    #[error("kernel `{kernel}`, block {block:?}, thread {thread:?}: wgmma misuse: {message}")]
    WgmmaMisuse {
        /// The kernel's name.
        kernel: String,
        /// The block of the thread that failed (`blockIdx`).
        block: Dim3,
        /// The thread that failed, within its block (`threadIdx`).
        thread: Dim3,
        /// What was wrong.
        message: String,
    },

    /// A shuffle read the value of a lane that was not executing it (diverged or exited).
    #[error(
        "kernel `{kernel}`, block {block:?}, thread {thread:?}: shuffle reads lane \
         {source_lane}, which is inactive (diverged or exited) at this shuffle"
    )]
    ShuffleInactiveLane {
        /// The kernel's name.
        kernel: String,
        /// The block of the thread that failed (`blockIdx`).
        block: Dim3,
        /// The thread that failed, within its block (`threadIdx`).
        thread: Dim3,
        /// The lane (0 to 31) the shuffle tried to read from.
        source_lane: u32,
    },

    /// A warp-collective operation (`mma.sync`, `ldmatrix`) that not all 32 lanes of the warp
    /// executed together (`active` has a bit per lane that did).
    #[error(
        "kernel `{kernel}`, block {block:?}, thread {thread:?}: `{operation}` must be executed \
         by all 32 lanes of a warp together, but only lanes {active:#010x} of this thread's \
         warp execute it here (the others diverged, returned, or do not exist because the \
         block's size is not a multiple of 32)"
    )]
    IncompleteWarp {
        /// The kernel's name.
        kernel: String,
        /// The block of the thread that failed (`blockIdx`).
        block: Dim3,
        /// The thread that failed, within its block (`threadIdx`).
        thread: Dim3,
        /// The operation's PTX name, such as `mma.sync`.
        operation: &'static str,
        /// A mask with one bit per lane of the warp that executed the
        /// operation.
        active: u32,
    },

    /// The launch ran more steps than its budget allows (see
    /// [`LaunchOptions::step_limit`](crate::LaunchOptions::step_limit)): an endless loop, a
    /// wait for something no other block will do, or a grid too large to emulate. The block
    /// and thread are one that was running when the budget ran out: the lowest-numbered such
    /// block, and in it the lowest active lane of the warp that asked for more steps.
    #[error(
        "kernel `{kernel}`, block {block:?}, thread {thread:?}: the launch ran past its budget \
         of {limit} emulator steps (statements run by a warp, summed over all blocks): an \
         endless loop, a wait that no other block can end, or a grid too large to emulate. If \
         the kernel is right and just long, raise the budget with {}=<steps> (or `off`), or \
         with `LaunchOptions::step_limit` when calling the emulator directly",
        crate::options::STEP_LIMIT_ENV
    )]
    StepLimit {
        /// The kernel's name.
        kernel: String,
        /// A block that was running when the budget ran out (`blockIdx`).
        block: Dim3,
        /// A thread of that block that was running (`threadIdx`).
        thread: Dim3,
        /// The budget, in steps.
        limit: u64,
    },

    /// Something a validated kernel cannot do happened: a bug in the emulator or validator.
    #[error("emulator internal error in kernel `{kernel}`: {message} (please report this)")]
    Internal {
        /// The kernel's name.
        kernel: String,
        /// What went wrong inside the emulator.
        message: String,
    },
}
