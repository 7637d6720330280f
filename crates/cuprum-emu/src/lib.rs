//! cuprum's CPU emulator: runs kernel IR with the semantics of an NVIDIA GPU, and is the
//! executable definition of what that IR means (see [`cuprum_ir::kernel`]).
//!
//! * [`Memory`] is the emulated device memory: a flat 64-bit address space of separate,
//!   poisoned, bounds-checked allocations, safe to use from many threads.
//! * [`launch`] runs a kernel over a grid: blocks spread over the CPU cores (rayon), warps of 32
//!   lanes in lockstep with divergence masks, barriers, shared and local memory, atomics,
//!   shuffles and votes.
//! * Every problem is an [`EmuError`] naming the kernel, block, thread and address:
//!   out-of-bounds and misaligned accesses, failed bounds checks and assertions, division by
//!   zero, shared-memory races between barriers, reads of uninitialized shared memory, barriers
//!   reached by only part of a block, and shuffles from inactive lanes.
//!
//! This crate must not depend on anything of cuprum's but the IR: the runtime puts it behind
//! its backend trait, tests and tools use it directly.

mod access;
mod atomic;
mod cast;
mod error;
mod exec;
mod memory;
mod ops;
mod shared;
mod warp;

pub use error::{AccessKind, Dim3, EmuError, RaceKind};
pub use exec::{
    ArgValue, LaunchDims, MAX_LOCAL_BYTES, MAX_SHARED_BYTES, MAX_THREADS_PER_BLOCK, launch,
};
pub use memory::{ALLOC_ALIGN, DEFAULT_CAPACITY, Memory, POISON};
