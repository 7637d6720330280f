//! Hopper's tensor memory accelerator (TMA), with cuda-oxide's names: bulk copies of whole
//! tiles between global and shared memory, done by a unit of the SM while the threads go on.
//! Needs compute capability 9.0.
//!
//! A copy reads its tensor through a *tensor map*, the 128-byte description the host makes
//! of a tiled tensor (dimensions, strides, box size, swizzle). A kernel receives one of two
//! ways:
//!
//! - a [`TensorMap<T, RANK>`] parameter (CUDA's `const __grid_constant__ CUtensorMap`): the
//!   host passes a checked [`cuprum::TensorMap`](crate::TensorMap), which borrows its buffer,
//!   and the kernel hands `map.as_ptr()` to the copies;
//! - a `*const TmaDescriptor` parameter (cuda-oxide's form): the address of a map the host
//!   encoded (`cuprum::sys::cuTensorMapEncodeTiled`) and copied into a device buffer. Nothing
//!   checks what such a pointer points to, so a kernel that takes one is launched only through
//!   an `unsafe` launch method, whatever its contract.
//!
//! A load, [`cp_async_bulk_tensor_2d_g2s`] and its siblings, copies the box at the given
//! coordinates (innermost first; out-of-range parts read as zero) into a shared array and
//! *completes* its size in bytes on an mbarrier (`cuprum::simt::barrier`): a thread
//! announces the bytes with `mbarrier_arrive_expect_tx`, and a wait on that phase returns
//! once they have landed. A store, [`cp_async_bulk_tensor_2d_s2g`], copies a box from shared
//! memory to the tensor (parts outside it are dropped) in the thread's current *bulk group*:
//! [`cp_async_bulk_commit_group`] closes the group and [`cp_async_bulk_wait_group`] waits for
//! groups to finish.
//!
//! The innermost coordinate of every box copy must be a multiple of 16 bytes from the
//! tensor's start (a multiple of 4 for `f32`, of 8 for `bf16`), whether the box is inside the
//! tensor or not: an H200 stops the kernel with an illegal instruction otherwise, and the
//! emulator reports it (`TensorMapDesc::box_start_problem`).
//!
//! Why the copies are `unsafe` (and the kernels that use them need not be): a load writes
//! shared memory *after* the call returns, through another agent, and only the mbarrier says
//! when. Reading the tile before the wait, writing it while a load or store is in flight,
//! announcing the wrong byte count, or storing a tile without `fence_proxy_async()` after
//! writing it, are data races or hangs that no type can rule out, exactly as for the mbarrier
//! functions they pair with. Each call's `# Safety` states its part. What the tensor map
//! itself could get wrong (alignment, strides, box limits, a tensor larger than its buffer)
//! is checked on the host when a `TensorMap` is made, so a map from a safe launch cannot reach
//! memory outside the buffer it borrows.
//!
//! ```
//! use cuprum::simt::barrier::{Barrier, mbarrier_arrive_expect_tx, mbarrier_arrive, mbarrier_init, mbarrier_wait};
//! use cuprum::simt::tma::{TensorMap, cp_async_bulk_tensor_2d_g2s};
//! use cuprum::simt::{DisjointSlice, SharedArray, fence_proxy_async, kernel, sync_threads, thread};
//! use cuprum::{cuda_module, CudaContext, DeviceBuffer, LaunchConfig};
//!
//! #[cuda_module]
//! mod kernels {
//!     use super::*;
//!
//!     /// Block `b` copies the 16x8 box of rows `8b..8b+8` through shared memory.
//!     #[kernel]
//!     pub fn tile_copy(map: TensorMap<f32, 2>, mut out: DisjointSlice<f32>) {
//!         static mut TILE: SharedArray<f32, 128, 128> = SharedArray::UNINIT;
//!         static mut BAR: Barrier = Barrier::UNINIT;
//!         let t = thread::threadIdx_x();
//!         if t == 0 {
//!             // SAFETY: one thread initialises the barrier before the block barrier, and
//!             // the fence shows it to the TMA unit.
//!             unsafe { mbarrier_init(&raw mut BAR, thread::blockDim_x()) };
//!             fence_proxy_async();
//!         }
//!         sync_threads();
//!         // SAFETY: thread 0 alone starts the copy into TILE and announces its 512 bytes;
//!         // every thread reads TILE only after waiting for the phase that counts them.
//!         unsafe {
//!             let token = if t == 0 {
//!                 let row = (thread::blockIdx_x() * 8) as i32;
//!                 cp_async_bulk_tensor_2d_g2s(&raw mut TILE as *mut u8, map.as_ptr(), 0, row, &raw mut BAR);
//!                 mbarrier_arrive_expect_tx(&raw const BAR, 1, 512)
//!             } else {
//!                 mbarrier_arrive(&raw const BAR)
//!             };
//!             mbarrier_wait(&raw const BAR, token);
//!             let i = thread::index_1d();
//!             if let Some(o) = out.get_mut(i) {
//!                 *o = TILE[t as usize];
//!             }
//!         }
//!     }
//! }
//!
//! # fn main() -> cuprum::Result<()> {
//! let ctx = CudaContext::new(0)?;
//! if ctx.compute_capability()?.0 < 9 {
//!     return Ok(()); // TMA needs a Hopper GPU (the emulator models one)
//! }
//! let stream = ctx.default_stream();
//! let x: Vec<f32> = (0..16 * 32).map(|v| v as f32).collect();
//! let dx = DeviceBuffer::from_host(&stream, &x)?;
//! let map = cuprum::TensorMap::tiled(&dx, [16, 32], [16, 8])?;
//! let mut out = DeviceBuffer::<f32>::zeroed(&stream, x.len())?;
//! let module = kernels::load(&ctx)?;
//! let cfg = LaunchConfig { grid_dim: (4, 1, 1), block_dim: (128, 1, 1), shared_mem_bytes: 0 };
//! unsafe { module.tile_copy(&stream, cfg, &map, &mut out) }?;
//! assert_eq!(out.to_host_vec(&stream)?, x);
//! # Ok(())
//! # }
//! ```

use std::marker::PhantomData;

use super::barrier::Barrier;
use super::shared::unreachable_on_host;

/// A tensor map as device code sees it: 128 opaque bytes, 64-byte aligned (CUDA's
/// `CUtensorMap`, cuda-oxide's `TmaDescriptor`). Copies take a `*const TmaDescriptor`: a
/// [`TensorMap`] parameter's [`as_ptr`](TensorMap::as_ptr), or a kernel parameter holding
/// the address of a map the host copied into device memory.
#[repr(C, align(64))]
#[derive(Clone, Copy)]
pub struct TmaDescriptor {
    _opaque: [u64; 16],
}

impl TmaDescriptor {
    /// An all-zero descriptor (not a usable map).
    pub const UNINIT: Self = Self { _opaque: [0; 16] };
}

/// A kernel parameter that is a tensor map over `RANK`-dimensional `T` elements, passed by
/// value as CUDA's `const __grid_constant__ CUtensorMap`. The launch takes a
/// [`&cuprum::TensorMap<T, RANK>`](crate::TensorMap), checked when it was made.
#[derive(Clone, Copy)]
pub struct TensorMap<T, const RANK: usize> {
    _map: TmaDescriptor,
    _elem: PhantomData<T>,
}

impl<T, const RANK: usize> TensorMap<T, RANK> {
    /// The map's address, what the copies of this module take.
    pub fn as_ptr(&self) -> *const TmaDescriptor {
        unreachable_on_host()
    }
}

macro_rules! tensor_copies {
    ($($load:ident, $store:ident, $n:literal: $($c:ident),+;)*) => {$(
        #[doc = concat!(
            "Starts a copy of the ", $n, "-D box at (", $(stringify!($c), " ",)+
            ") (innermost first) of `tensor_map`'s tensor into shared memory at `dst` \
             (`cp.async.bulk.tensor.", $n, "d...mbarrier::complete_tx::bytes`); when its \
             bytes have landed it completes them on the mbarrier `barrier`. Elements outside \
             the tensor read as zero (or NaN, as the map says).\n\n# Safety\n\n`dst` points \
             into a shared array aligned to 128 bytes (1024 for a swizzled map: \
             `SharedArray<T, N, 1024>`) with room for the box; `tensor_map` is a valid map in \
             device memory or a `TensorMap` parameter; `barrier` is a live mbarrier whose \
             current phase expects these bytes (`mbarrier_arrive_expect_tx`). No thread \
             touches the box's bytes until a wait on that phase has returned."
        )]
        #[allow(clippy::too_many_arguments)]
        pub unsafe fn $load(
            dst: *mut u8,
            tensor_map: *const TmaDescriptor,
            $($c: i32,)+
            barrier: *mut Barrier,
        ) {
            let _ = (dst, tensor_map, $($c,)+ barrier);
            unreachable_on_host()
        }

        #[doc = concat!(
            "Starts a copy of the ", $n, "-D box in shared memory at `src` to the tensor of \
             `tensor_map` at (", $(stringify!($c), " ",)+ ") (innermost first; \
             `cp.async.bulk.tensor.", $n, "d.global.shared::cta.bulk_group`), in this thread's \
             current bulk group; elements outside the tensor are not written.\n\n# Safety\n\n\
             `src` points to a shared array aligned as for a load, holding the box; its writes \
             were followed by `fence_proxy_async()` before this call (by the writers, or by \
             this thread after a barrier); nobody writes it again before \
             `cp_async_bulk_wait_group_read` covers this copy; nothing else of the launch reads \
             or writes the box's global elements until `cp_async_bulk_wait_group` covers it. \
             (That no other argument of the launch overlaps the tensor of a `TensorMap` \
             parameter stored through, the launch checks: `Error::InvalidLaunch`; for a \
             `*const TmaDescriptor`, the caller of the `unsafe` launch answers for it.)"
        )]
        pub unsafe fn $store(src: *const u8, tensor_map: *const TmaDescriptor, $($c: i32),+) {
            let _ = (src, tensor_map, $($c,)+);
            unreachable_on_host()
        }
    )*};
}

tensor_copies! {
    cp_async_bulk_tensor_1d_g2s, cp_async_bulk_tensor_1d_s2g, "1": coord0;
    cp_async_bulk_tensor_2d_g2s, cp_async_bulk_tensor_2d_s2g, "2": coord0, coord1;
    cp_async_bulk_tensor_3d_g2s, cp_async_bulk_tensor_3d_s2g, "3": coord0, coord1, coord2;
    cp_async_bulk_tensor_4d_g2s, cp_async_bulk_tensor_4d_s2g, "4": coord0, coord1, coord2, coord3;
    cp_async_bulk_tensor_5d_g2s, cp_async_bulk_tensor_5d_s2g, "5": coord0, coord1, coord2, coord3, coord4;
}

macro_rules! multicast_copies {
    ($($load:ident, $n:literal: $($c:ident),+;)*) => {$(
        #[doc = concat!(
            "As `cp_async_bulk_tensor_", $n, "d_g2s`, but the box lands in the shared memory \
             of every block of this block's thread-block cluster whose rank \
             (`cluster::block_rank()`) has its bit set in `cta_mask`, at `dst` and completing \
             its bytes on the mbarrier at `barrier` of each of them \
             (`...multicast::cluster`; sm_90a). The kernel runs in clusters \
             (`#[cluster_launch]`).\n\n# Safety\n\nAs `cp_async_bulk_tensor_", $n, "d_g2s`, \
             in every block the mask names: no bit at or above `cluster::cluster_size()`; \
             each of those blocks' barriers initialised and made visible to the cluster \
             (`fence_mbarrier_init_release_cluster`, then `cluster::cluster_sync()`) before \
             the copy, its phase expecting the bytes; and each of those blocks waits for the \
             phase before it returns."
        )]
        #[allow(clippy::too_many_arguments)]
        pub unsafe fn $load(
            dst: *mut u8,
            tensor_map: *const TmaDescriptor,
            $($c: i32,)+
            barrier: *mut Barrier,
            cta_mask: u16,
        ) {
            let _ = (dst, tensor_map, $($c,)+ barrier, cta_mask);
            unreachable_on_host()
        }
    )*};
}

// cuda-oxide has the 2-D one; cuprum the others too (the IR's copies are of any rank).
multicast_copies! {
    cp_async_bulk_tensor_1d_g2s_multicast, "1": coord0;
    cp_async_bulk_tensor_2d_g2s_multicast, "2": coord0, coord1;
    cp_async_bulk_tensor_3d_g2s_multicast, "3": coord0, coord1, coord2;
    cp_async_bulk_tensor_4d_g2s_multicast, "4": coord0, coord1, coord2, coord3;
    cp_async_bulk_tensor_5d_g2s_multicast, "5": coord0, coord1, coord2, coord3, coord4;
}

/// Closes this thread's current bulk group: the stores it started since the last commit
/// (`cp.async.bulk.commit_group`).
pub fn cp_async_bulk_commit_group() {
    unreachable_on_host()
}

/// Waits until at most `n` (a constant) of this thread's committed bulk groups are still
/// running; the global writes of the others are then done and visible to this thread
/// (`cp.async.bulk.wait_group n`).
pub fn cp_async_bulk_wait_group(n: u32) {
    let _ = n;
    unreachable_on_host()
}

/// As [`cp_async_bulk_wait_group`], but waits only until the copies of the other groups
/// have read their shared sources, which may then be written again
/// (`cp.async.bulk.wait_group.read n`).
pub fn cp_async_bulk_wait_group_read(n: u32) {
    let _ = n;
    unreachable_on_host()
}
