//! Thread-block clusters (compute capability 9.0), with cuda-oxide's names: groups of up to 8
//! blocks that the GPU runs at the same time on one processing cluster, which can wait for
//! each other at a cluster barrier and read and write each other's shared memory
//! (*distributed shared memory*).
//!
//! A kernel runs in clusters when it says its cluster's shape with
//! [`#[cluster_launch(x, y, z)]`](super::cluster_launch) (or `(x)`, `(x, y)`; at most 8
//! blocks in all). Its PTX then
//! carries `.reqnctapercluster x, y, z`, so an ordinary launch runs clusters of that shape
//! (cuda-oxide's programs launch the same kernels with `cuLaunchKernelEx` and a cluster
//! attribute; with cuprum the plain launch does it). The grid must be a whole number of
//! clusters in each dimension, and the device must have clusters (compute capability 9.0):
//! the launch refuses anything else with a typed error. A kernel without the attribute runs
//! every block as a cluster of one, where these functions mean what they mean for one block:
//! [`block_rank`] is 0, [`cluster_size`] is 1, [`cluster_sync`] waits for the block.
//!
//! ```
//! use core::ptr::addr_of;
//! use cuprum::simt::{DisjointSlice, SharedArray, cluster, cluster_launch, kernel, thread};
//! use cuprum::{cuda_module, CudaContext, DeviceBuffer, LaunchConfig};
//!
//! #[cuda_module]
//! mod kernels {
//!     use super::*;
//!
//!     /// Each block publishes its rank and reads its neighbour's.
//!     #[kernel]
//!     #[cluster_launch(2, 1, 1)]
//!     pub fn swap_ranks(mut out: DisjointSlice<u32>) {
//!         static mut MINE: SharedArray<u32, 1> = SharedArray::UNINIT;
//!         let rank = cluster::block_rank();
//!         if thread::threadIdx_x() == 0 {
//!             unsafe { MINE[0] = 100 + rank };
//!         }
//!         cluster::cluster_sync(); // every block has written
//!         if thread::threadIdx_x() == 0 {
//!             let other = (rank + 1) % cluster::cluster_size();
//!             let v = unsafe { cluster::dsmem_read_u32(addr_of!(MINE) as *const u32, other) };
//!             unsafe { *out.get_unchecked_mut(thread::blockIdx_x() as usize) = v };
//!         }
//!         cluster::cluster_sync(); // no block leaves while the other still reads it
//!     }
//! }
//!
//! # fn main() -> cuprum::Result<()> {
//! let ctx = CudaContext::new(0)?;
//! if ctx.compute_capability()?.0 < 9 {
//!     return Ok(()); // clusters need compute capability 9.0
//! }
//! let stream = ctx.default_stream();
//! let module = kernels::load(&ctx)?;
//! let mut out = DeviceBuffer::<u32>::zeroed(&stream, 4)?;
//! let cfg = LaunchConfig { grid_dim: (4, 1, 1), block_dim: (32, 1, 1), shared_mem_bytes: 0 };
//! unsafe { module.swap_ranks(&stream, cfg, &mut out) }?;
//! assert_eq!(out.to_host_vec(&stream)?, [101, 100, 101, 100]);
//! # Ok(())
//! # }
//! ```
//!
//! What the functions are in cuprum's IR: the registers are `%cluster_ctaid`,
//! `%cluster_nctaid`, `%cluster_ctarank`, `%clusterid` and `%nclusterid`
//! (`cuprum_ir::Special`); the barrier is `Stmt::ClusterArrive` (`barrier.cluster.arrive
//! .release.aligned`) and `Stmt::ClusterWait` (`barrier.cluster.wait.acquire.aligned`);
//! distributed shared memory is `Stmt::ClusterLoad` / `Stmt::ClusterStore` (`mapa
//! .shared::cluster` with `ld`/`st.shared::cluster`). cuprum has one form of each barrier
//! statement, so:
//!
//! * every arrival and wait is the `.aligned` one: all the threads of a warp that have not
//!   returned arrive (and wait) together, at the same call. The non-aligned spellings
//!   ([`barrier_cluster_arrive`], [`barrier_cluster_wait`]) are accepted for cuda-oxide's
//!   programs and mean the same; a warp that reaches them diverged is reported by the
//!   emulator (`EmuError::BarrierDivergence`);
//! * the relaxed arrivals ([`barrier_cluster_arrive_relaxed`],
//!   [`barrier_cluster_arrive_relaxed_aligned`]) are the release arrival: they order more
//!   than asked, never less.
//!
//! Distributed shared memory: [`dsmem_read_u32`] reads a `u32` of another block's shared
//! memory at the address a pointer into this block's names (every block of a kernel has the
//! same shared layout, so it names the same variable there); [`map_shared_rank`] and
//! [`map_shared_rank_mut`] map such a pointer to block `rank`, for `*p`, `p.read()`,
//! `*p = v`, `p.write(v)` and `p.add(i)` of any scalar type. These are ordinary (weak)
//! accesses: the other block's threads must have written what is read before a cluster
//! barrier phase this thread waited for (or a remote mbarrier arrival whose phase it
//! observed), and a block must not return while others may still reach its memory, so a
//! kernel that uses them ends with [`cluster_sync`]. The emulator checks all of it: a race
//! between blocks (`EmuError::ClusterSharedRace`; a block barrier of the owner orders nothing
//! for another block's thread), a read of bytes the owner never wrote
//! (`EmuError::UninitializedClusterSharedRead`), a rank outside the cluster, an access of a
//! block whose threads have returned, and a block returning while another's access of it is
//! not ordered before (`EmuError::ClusterMisuse`). On the GPU these are undefined behaviour,
//! so the functions are `unsafe`.
//!
//! Also for clusters: [`fence_mbarrier_init_release_cluster`](super::barrier::fence_mbarrier_init_release_cluster)
//! (in `barrier`, as in cuda-oxide), and multicast tensor copies
//! ([`cp_async_bulk_tensor_2d_g2s_multicast`](super::tma::cp_async_bulk_tensor_2d_g2s_multicast)
//! and the other ranks, in `tma`).

#![allow(non_snake_case)]

use super::shared::unreachable_on_host;

/// The block's position in its cluster along x (`%cluster_ctaid.x`), below
/// [`cluster_nctaidX`].
pub fn cluster_ctaidX() -> u32 {
    0
}

/// The block's position in its cluster along y (`%cluster_ctaid.y`).
pub fn cluster_ctaidY() -> u32 {
    0
}

/// The block's position in its cluster along z (`%cluster_ctaid.z`).
pub fn cluster_ctaidZ() -> u32 {
    0
}

/// The cluster's size along x, in blocks (`%cluster_nctaid.x`): the kernel's
/// `#[cluster_launch]` shape, 1 without one.
pub fn cluster_nctaidX() -> u32 {
    1
}

/// The cluster's size along y, in blocks (`%cluster_nctaid.y`).
pub fn cluster_nctaidY() -> u32 {
    1
}

/// The cluster's size along z, in blocks (`%cluster_nctaid.z`).
pub fn cluster_nctaidZ() -> u32 {
    1
}

/// The block's rank in its cluster, `0..cluster_size()`: `x + y * nx + z * nx * ny` of its
/// place in the cluster (`cluster_ctaidX/Y/Z()`) and the cluster's shape
/// (`cluster_nctaidX/Y()`), which is the hardware's `%cluster_ctarank` (what it reads). The
/// numbering of the `rank` arguments of distributed shared memory and of multicast masks.
pub fn block_rank() -> u32 {
    0
}

/// The blocks in the cluster: `cluster_nctaidX() * cluster_nctaidY() * cluster_nctaidZ()`.
pub fn cluster_size() -> u32 {
    1
}

/// The cluster's linear index in the grid: `x + y * nx + z * nx * ny` of its index
/// (`%clusterid`) and the grid's size in clusters (`%nclusterid`).
pub fn cluster_idx() -> u32 {
    0
}

/// The clusters in the grid: the product of `%nclusterid`'s three dimensions.
pub fn num_clusters() -> u32 {
    1
}

/// Waits until every thread of every block of the cluster has arrived (or returned), and
/// makes their memory accesses before it (shared memory of any block of the cluster, and
/// global memory) visible to this thread after it: [`barrier_cluster_arrive_aligned`] then
/// [`barrier_cluster_wait_aligned`]. Every thread of the cluster that has not returned must
/// call it the same number of times, each warp's threads together; on one block's threads it
/// is a block barrier as well.
pub fn cluster_sync() {}

/// Arrives at the cluster barrier (`barrier.cluster.arrive.release.aligned`), releasing this
/// thread's earlier memory accesses to the threads that complete the matching wait; it does
/// not wait. The same as [`barrier_cluster_arrive_aligned`] in cuprum (see the module docs).
///
/// # Safety
///
/// Each thread of the cluster that has not returned alternates one arrival and one wait,
/// starting with an arrival; the warp's threads that have not returned arrive together.
pub unsafe fn barrier_cluster_arrive() {}

/// Arrives at the cluster barrier, the whole warp together (`.aligned`), with release
/// ordering.
///
/// # Safety
///
/// As [`barrier_cluster_arrive`].
pub unsafe fn barrier_cluster_arrive_aligned() {}

/// cuda-oxide's arrival without release ordering; in cuprum it is the release arrival
/// [`barrier_cluster_arrive`] (ordering more than asked).
///
/// # Safety
///
/// As [`barrier_cluster_arrive`].
pub unsafe fn barrier_cluster_arrive_relaxed() {}

/// cuda-oxide's aligned arrival without release ordering; in cuprum it is
/// [`barrier_cluster_arrive_aligned`].
///
/// # Safety
///
/// As [`barrier_cluster_arrive`].
pub unsafe fn barrier_cluster_arrive_relaxed_aligned() {}

/// Waits until every thread of the cluster has made the arrival matching this thread's last
/// one (or returned), then acquires their released accesses
/// (`barrier.cluster.wait.acquire.aligned`). The same as [`barrier_cluster_wait_aligned`] in
/// cuprum (see the module docs).
///
/// # Safety
///
/// As [`barrier_cluster_arrive`]: a wait follows this thread's arrival, and every thread of
/// the cluster must arrive, or the cluster waits forever (the emulator reports a deadlock).
pub unsafe fn barrier_cluster_wait() {}

/// Waits at the cluster barrier, the whole warp together (`.aligned`), with acquire
/// ordering.
///
/// # Safety
///
/// As [`barrier_cluster_wait`].
pub unsafe fn barrier_cluster_wait_aligned() {}

/// Reads the `u32` at the place `local_ptr` names, in the shared memory of the cluster's
/// block `target_rank` (`mapa.shared::cluster` and `ld.shared::cluster.u32`).
///
/// # Safety
///
/// `local_ptr` points to an aligned `u32` in this block's shared memory; `target_rank` is
/// below [`cluster_size`]; that block's threads have not all returned; its write of the
/// value is ordered before this read (a [`cluster_sync`] between them).
pub unsafe fn dsmem_read_u32(local_ptr: *const u32, target_rank: u32) -> u32 {
    let _ = (local_ptr, target_rank);
    unreachable_on_host()
}

/// The place `local_ptr` names in this block's shared memory, in the shared memory of the
/// cluster's block `target_rank`, for reads (`*p`, `p.read()`) and pointer arithmetic
/// (`p.add(i)`); each read is an `ld.shared::cluster` after a `mapa.shared::cluster`.
///
/// # Safety
///
/// `local_ptr` points into this block's shared memory and `target_rank` is below
/// [`cluster_size`]. The pointer is only for reads of another block's memory in device code:
/// each read is aligned, made while that block still runs, and ordered after that block's
/// writes of it (as [`dsmem_read_u32`]).
pub unsafe fn map_shared_rank<T>(local_ptr: *const T, target_rank: u32) -> *const T {
    let _ = target_rank;
    local_ptr
}

/// [`map_shared_rank`] of a `*mut` pointer: reads and writes (`*p = v`, `p.write(v)`) of the
/// cluster's block `target_rank`.
///
/// # Safety
///
/// As [`map_shared_rank`]; a write must not race with any other access of those bytes (a
/// [`cluster_sync`] between them).
pub unsafe fn map_shared_rank_mut<T>(local_ptr: *mut T, target_rank: u32) -> *mut T {
    let _ = target_rank;
    local_ptr
}
