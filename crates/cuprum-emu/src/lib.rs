//! cuprum's CPU emulator: runs kernel IR with the semantics of an NVIDIA GPU, and is the
//! executable definition of what that IR means (see [`cuprum_ir::kernel`]). It is also the
//! project's test oracle, so it reports what a GPU would let pass silently.
//!
//! * [`Memory`] is the emulated device memory: a flat 64-bit address space of separate,
//!   poisoned, bounds-checked allocations, safe to use from many threads.
//! * [`launch`] runs a kernel over a grid: blocks spread over the CPU cores (rayon), warps of 32
//!   lanes in lockstep with divergence masks, barriers, shared and local memory, atomics,
//!   shuffles and votes. [`launch_with`] takes [`LaunchOptions`] (step budget, race checks).
//! * Thread-block clusters (`Kernel::cluster`, sm_90): a cluster's blocks run together, with
//!   the cluster specials, the cluster barrier, remote mbarrier arrivals and multicast tensor
//!   copies (see below).
//! * Tensor-core `mma.sync`, `ldmatrix`, `cp.async`, mbarriers and device `printf` (whose
//!   text goes to stdout, or to [`capture_prints`]) run as `cuprum_ir::kernel` defines them;
//!   a warp waiting on an mbarrier phase lets the others run, and a wait no thread can end
//!   is [`EmuError::MbarrierDeadlock`], not a hang.
//! * Every problem is an [`EmuError`] naming the kernel, block, thread and address:
//!   out-of-bounds and misaligned accesses, failed bounds checks and assertions, division by
//!   zero, shared-memory races between barriers, reads of uninitialized shared memory, barriers
//!   reached by only part of a block, shuffles from inactive lanes, races on global memory
//!   between threads of a launch ([`EmuError::GlobalRace`]: both threads, the address, the
//!   parameter and element, write/write or read/write), a `DisjointSlice` element written by
//!   two threads ([`EmuError::DisjointWrite`]), and a launch that runs past its step budget
//!   ([`EmuError::StepLimit`]: an endless loop, a wait nothing ends, or a grid too large to
//!   emulate).
//!
//! # The step budget
//!
//! A launch may run [`DEFAULT_STEP_LIMIT`] steps (statements executed by a warp, summed over
//! all blocks; about 4 to 50 seconds of emulation on two cores) before it stops with
//! [`EmuError::StepLimit`], which names the lowest-numbered block still running (with
//! clusters, the block of the lowest-numbered cluster still running that asked for steps)
//! and its first active lane. Raise or remove it with the environment variable [`STEP_LIMIT_ENV`]
//! (`CUPRUM_EMU_STEP_LIMIT=100_000_000_000`, or `off`), read once per process by [`launch`],
//! or per launch with [`LaunchOptions::step_limit`] and [`launch_with`]. Workers take steps
//! from a shared counter in chunks of at most 4096, so the budget is exact to a few chunks;
//! once it is spent every block stops at its next chunk.
//!
//! # Thread-block clusters
//!
//! A kernel that declares a cluster shape has its grid cut into clusters of that many blocks
//! (a grid that is not a whole number of clusters is refused with
//! [`EmuError::InvalidLaunch`]). The blocks of one cluster run on one worker, their warps
//! interleaved in one scheduler, so a warp may wait for another block's; rayon spreads
//! clusters, not blocks. Each block keeps its own registers, shared memory, block and named
//! barriers and mbarriers. What the cluster shares:
//! * the specials (`%cluster_ctarank`, `%cluster_ctaid`, `%cluster_nctaid`, `%clusterid`,
//!   `%nclusterid`): without a cluster, rank 0 in a cluster of one block;
//! * the cluster barrier (`barrier.cluster.arrive.release` / `wait.acquire`): each thread
//!   alternates arrivals and waits, starting with an arrival (anything else is
//!   [`EmuError::ClusterMisuse`]); a wait completes once every thread of every block of the
//!   cluster has arrived or returned; both are executed by every lane of the warp that has
//!   not returned. Everything a thread did before its arrival (shared memory of its block,
//!   global memory) is ordered before everything after the waits that complete that phase,
//!   for the race trackers; what it does between its arrival and its wait is not. Without a
//!   cluster it is a barrier over the block;
//! * remote mbarrier arrivals (`MbarrierOp::ArriveCluster`): a counted arrival on the barrier
//!   at the same offset of another block's shared memory, releasing the arriving thread's
//!   accesses (and what it learnt of other blocks') to the threads that observe the phase;
//! * multicast tensor loads (`TmaOp::LoadTile`'s `multicast`): the box lands in every masked
//!   block's shared memory and completes its bytes on each one's mbarrier, at the latest
//!   legal point, as a unicast load does;
//! * distributed shared memory (`Stmt::ClusterLoad`, `Stmt::ClusterStore`): loads and stores
//!   of another block's shared memory, race-tracked against that block's own threads and the
//!   cluster's other blocks, ordered by the cluster barrier and remote arrivals (not by the
//!   owner's block barriers): a conflict is [`EmuError::ClusterSharedRace`], a read of bytes
//!   the owner never wrote [`EmuError::UninitializedClusterSharedRead`];
//! * `fence.mbarrier_init` does nothing here: the emulator runs a block in program order, and
//!   the order a remote use needs after an init is the cluster barrier's, which is checked.
//!
//! A rank or mask bit beyond the cluster, a remote arrival, multicast or distributed
//! shared-memory access into a block whose threads have all returned, and a block returning
//! while another block's arrival on its barriers (or multicast into it, or access of it) is
//! not ordered before the return are
//! [`EmuError::ClusterMisuse`]: on the GPU that block's shared memory is gone. A cluster
//! barrier no thread can complete is [`EmuError::ClusterBarrierDeadlock`].
//!
//! # Races on global memory
//!
//! Two accesses of a launch race when they touch a common byte of global memory, come from
//! different threads, at least one is a plain store, and nothing orders them. Ordered are:
//! * accesses of one thread;
//! * accesses of threads of one block with a barrier between them;
//! * accesses of threads of one cluster ordered by a cluster barrier phase (before the
//!   arrival, after the wait) or by a remote mbarrier arrival (before the arrival, after
//!   observing the phase it arrived on);
//! * an access before a *release* and one after the matching *acquire*: thread A's accesses
//!   before a device (or system) fence, and its block's accesses before that fence's last
//!   barrier, are ordered before thread B's accesses after B executed an atomic on the same
//!   location after A's atomic following the fence, and then a fence or a barrier (B's
//!   barrier passes the acquire to its whole block). This is the "last block finishes the
//!   reduction" pattern of CUDA's threadFenceReduction, with or without a fence in the last
//!   block before its barrier. Block-scope fences order accesses within their block only.
//!
//! Reads never race with reads, and atomics never with atomics. A plain load of a location
//! other threads update atomically is not reported either: the IR has no atomic load, and a
//! compare-exchange loop's first guess or a poll of a counter may see any of its values
//! (plain *stores* among atomics are reported). Launches are ordered with each other: the
//! records of a launch end with it. For shared memory the older, stricter rules above apply
//! (a plain read of a shared byte another thread updates atomically in the same barrier
//! interval is a race).
//!
//! A `DisjointSlice` parameter gives each element to one thread: a second thread storing to it
//! is reported as [`EmuError::DisjointWrite`] even when a barrier orders the stores. (Atomics
//! on an element are the ordinary race rules' business: they never race with each other.)
//!
//! The tracker keeps, per 4-byte granule of each allocation a launch touches, the two accesses
//! that later ones could still race with; the shadow lives with the allocation (about twice
//! the bytes a launch touches, plus a quarter) and is reused by later launches. What it can
//! miss (it never reports a race that is not there): with 1-byte elements, a third thread's
//! byte in one granule evicts a record; release/acquire is followed one hop (block C does not
//! see data block A passed to block B); a block stops being checked after 2^(48 - b) barriers
//! and fences, `b` the bits its grid's block count needs (131071 for 2^31 blocks), and block
//! numbers repeat beyond 2^32 blocks; two blocks touching one granule at the same instant may
//! lose a record. Switch it off with [`RACE_CHECK_ENV`]
//! (`CUPRUM_EMU_RACE_CHECK=off`) or [`LaunchOptions::global_race_check`], for a kernel whose
//! races are deliberate.
//!
//! # Choices where the IR docs leave room, made here once
//!
//! * A barrier waits for the threads that have not exited: warps that returned (or finished
//!   the body) do not make a barrier diverge; live threads elsewhere do.
//! * For race detection every lane is its own thread: two lanes of one warp that touch the same
//!   byte between barriers, one of them writing, race (there is no warp-synchronous memory
//!   model). Atomics do not race with each other.
//! * Within a block, warps run one after another between barriers, and an `If` runs its `then`
//!   arm before its `otherwise` arm; the blocks of a cluster take turns, rank by rank; clusters
//!   (blocks, without clusters) run in parallel and in no fixed order.
//! * A thread that returns counts as arrived at the cluster barrier from then on, and its
//!   accesses before the return are ordered before the waits of the phases it is counted in.
//! * When several clusters fail, the error of the lowest-numbered failing cluster (block,
//!   without clusters) is returned. For a race between two blocks of different clusters,
//!   which of the two finds it (and so which access is `first`) can depend on timing; that a
//!   race is reported does not.
//! * `mma.sync` adds as the tensor cores do (`Stmt::Mma`: alignment to the largest exponent,
//!   truncation, one exact sum, rounding toward zero), which reproduced an H200's results bit
//!   for bit; NaN results are the canonical NaN.
//! * `cp.async` copies when it is issued (a legal schedule of the asynchronous copy), so the
//!   commit and wait statements do nothing; the destination counts as written by the issuing
//!   thread at that point for race detection, and the source as read. Reading the destination
//!   before the wait is a bug the emulator does not detect (it sees the data already there).
//! * `ldmatrix` reads each row as the lane that supplied its address, for race detection.
//! * Warp-collective `mma.sync` and `ldmatrix` executed by fewer than 32 lanes are an error
//!   (`EmuError::IncompleteWarp`).
//!
//! This crate must not depend on anything of cuprum's but the IR: the runtime puts it behind
//! its backend trait; tests and tools use it directly.
//!
//! ```
//! use cuprum_emu::{ArgValue, LaunchDims, Memory, launch};
//! use cuprum_ir::*;
//!
//! // out[threadIdx.x] = threadIdx.x * 2
//! let mut b = KernelBuilder::new("twice");
//! let out = b.param("out", ParamKind::Slice { elem: ScalarType::U32, access: SliceAccess::Disjoint });
//! let t = b.def(Op::Special(Special::ThreadIdx(Dim::X))).unwrap();
//! let two = b.constant(Constant::u32(2));
//! let v = b.def(Op::Binary(BinaryOp::Mul, t, two)).unwrap();
//! let i = b.def(Op::Cast { value: t, to: ScalarType::U64 }).unwrap();
//! let four = b.constant(Constant::u64(4));
//! let off = b.def(Op::Binary(BinaryOp::Mul, i, four)).unwrap();
//! let base = b.def(Op::SliceBase(out)).unwrap();
//! let addr = b.def(Op::Binary(BinaryOp::Add, base, off)).unwrap();
//! b.push(Stmt::Store { space: AddressSpace::Global, addr, value: v });
//! let kernel = b.finish();
//!
//! let mem = Memory::new();
//! let buf = mem.alloc(64 * 4)?;
//! let dims = LaunchDims { grid: [1, 1, 1], block: [64, 1, 1], dynamic_shared_bytes: 0 };
//! launch(&mem, &kernel, dims, &[ArgValue::Slice { base: buf, len: 64 }])?;
//! let mut bytes = vec![0u8; 64 * 4];
//! mem.read(buf, &mut bytes)?;
//! assert_eq!(u32::from_le_bytes(bytes[40..44].try_into().unwrap()), 20);
//!
//! // One thread too many writes past the end, and the emulator says who and where.
//! let dims = LaunchDims { block: [65, 1, 1], ..dims };
//! let err = launch(&mem, &kernel, dims, &[ArgValue::Slice { base: buf, len: 64 }]).unwrap_err();
//! assert!(err.to_string().contains("thread [64, 0, 0]: out-of-bounds global memory store"));
//! # Ok::<(), cuprum_emu::EmuError>(())
//! ```

#![warn(missing_docs)]

mod access;
mod atomic;
mod cluster;
mod cp_async;
mod dsmem;
mod error;
mod exec;
mod global;
mod lanes;
mod mbarrier;
mod memory;
mod options;
mod printf;
mod shadow;
mod shared;
mod sync;
mod tensor;
mod tma;
mod warp;
mod wgmma;

pub use error::{
    AccessKind, ClusterSharedRace, Dim3, DisjointWrite, EmuError, GlobalRace, RaceAccess, RaceKind,
};
pub use exec::{
    ArgValue, LaunchDims, MAX_LOCAL_BYTES, MAX_SHARED_BYTES, MAX_THREADS_PER_BLOCK, launch,
    launch_with,
};
pub use memory::{ALLOC_ALIGN, DEFAULT_CAPACITY, Memory, POISON};
pub use options::{DEFAULT_STEP_LIMIT, LaunchOptions, RACE_CHECK_ENV, STEP_LIMIT_ENV};
pub use printf::capture_prints;

#[cfg(test)]
mod tests {
    fn send_sync<T: Send + Sync + 'static>() {}

    #[test]
    fn public_types_are_thread_safe() {
        send_sync::<super::Memory>();
        send_sync::<super::EmuError>();
        send_sync::<super::ArgValue>();
    }
}
