//! mbarriers, with cuda-oxide's names: asynchronous barriers in shared memory that count
//! arrivals in *phases*, so that some threads can wait for others (or for `cp.async` copies)
//! without stopping the whole block as [`sync_threads`](super::sync_threads) does. They are
//! what producer/consumer pipelines and Hopper's TMA copies synchronise through.
//!
//! A barrier is a `static` in the kernel body, one per block, set up by one thread and used
//! after a `sync_threads()`:
//!
//! ```
//! use cuprum::simt::barrier::{Barrier, mbarrier_arrive, mbarrier_init, mbarrier_wait};
//! use cuprum::simt::{kernel, thread, DisjointSlice, SharedArray};
//! use cuprum::{cuda_module, CudaContext, DeviceBuffer, LaunchConfig};
//!
//! #[cuda_module]
//! mod kernels {
//!     use super::*;
//!
//!     #[kernel]
//!     pub fn rotate(x: &[u32], mut y: DisjointSlice<u32>) {
//!         static mut BAR: Barrier = Barrier::UNINIT;
//!         static mut DATA: SharedArray<u32, 64> = SharedArray::UNINIT;
//!         let t = thread::threadIdx_x();
//!         let i = thread::index_1d();
//!         if t == 0 {
//!             // SAFETY: one thread initialises the barrier, before the block barrier.
//!             unsafe { mbarrier_init(&raw mut BAR, thread::blockDim_x()) };
//!         }
//!         thread::sync_threads();
//!         // SAFETY: thread `t` alone writes slot `t`, and reads another slot only once
//!         // every thread has arrived (the wait acquires their writes).
//!         unsafe {
//!             DATA[t as usize] = x[i.get()];
//!             let token = mbarrier_arrive(&raw const BAR);
//!             mbarrier_wait(&raw const BAR, token);
//!             if let Some(out) = y.get_mut(i) {
//!                 *out = DATA[((t + 1) % 64) as usize];
//!             }
//!         }
//!     }
//! }
//!
//! # fn main() -> cuprum::Result<()> {
//! let x: Vec<u32> = (0..64).map(|v| v * 3).collect();
//! let ctx = CudaContext::new(0)?;
//! let stream = ctx.default_stream();
//! let dx = DeviceBuffer::from_host(&stream, &x)?;
//! let mut dy = DeviceBuffer::zeroed(&stream, 64)?;
//! let module = kernels::load(&ctx)?;
//! let cfg = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (64, 1, 1), shared_mem_bytes: 0 };
//! unsafe { module.rotate(&stream, cfg, &dx, &mut dy) }?;
//! let want: Vec<u32> = (0..64).map(|t| x[(t + 1) % 64]).collect();
//! assert_eq!(dy.to_host_vec(&stream)?, want);
//! # Ok(())
//! # }
//! ```
//!
//! What a barrier does (PTX's definition, which the emulator runs): `mbarrier_init(bar, n)`
//! expects `n` arrivals per phase. Each [`mbarrier_arrive`] counts one toward the current
//! phase and returns its token; when the last expected arrival comes in (and, on sm_90, no
//! transaction bytes are pending) the phase completes and the next begins. A thread that
//! waits on a token, or tests it and gets `true`, sees every memory write the arriving
//! threads made before they arrived on that phase; nothing else is ordered. Phases alternate
//! in parity, which [`mbarrier_try_wait_parity`] waits on without a token.
//!
//! The emulator reports (as `EmuError::MbarrierMisuse`) a barrier used before its
//! initialisation, after [`mbarrier_inval`], by a thread nothing orders after the
//! initialisation, or initialised twice; and (as `EmuError::MbarrierDeadlock`) a wait that no
//! thread left can end, where a GPU would hang. Its race detection follows the phases: a read
//! of another thread's write is fine after a wait that covers the write's arrival, and a
//! race otherwise. On the GPU these are undefined behaviour, so the functions are `unsafe`.

use super::shared::unreachable_on_host;

/// An mbarrier: an opaque, 8-byte aligned 64-bit object in shared memory. Declare one per
/// block with `static mut BAR: Barrier = Barrier::UNINIT;` in a kernel body and pass
/// `&raw mut BAR` / `&raw const BAR` to the functions of this module.
#[repr(C, align(8))]
#[derive(Clone, Copy)]
pub struct Barrier {
    _state: u64,
}

impl Barrier {
    /// The declaration's initializer: the barrier is not usable until [`mbarrier_init`].
    pub const UNINIT: Self = Self { _state: 0 };
}

/// Sets the barrier up for `expected_count` arrivals per phase (`mbarrier.init`), in phase 0.
///
/// # Safety
///
/// `bar` points to a `Barrier` in shared memory that is not live (never initialised, or
/// invalidated); exactly one thread initialises it, and the others use it only after
/// something orders them after the initialisation (a `sync_threads()`). `expected_count` is
/// in `1..=2^20 - 1`.
pub unsafe fn mbarrier_init(bar: *mut Barrier, expected_count: u32) {
    let _ = (bar, expected_count);
    unreachable_on_host()
}

/// Arrives on the current phase (`mbarrier.arrive`, releasing this thread's earlier writes)
/// and returns its token.
///
/// # Safety
///
/// `bar` points to a live barrier, and this arrival is one the phase expects.
pub unsafe fn mbarrier_arrive(bar: *const Barrier) -> u64 {
    let _ = bar;
    unreachable_on_host()
}

/// Adds `bytes` to the current phase's transaction count, then arrives once
/// (`mbarrier.arrive.expect_tx`); returns the token. `tx_count` is the number of arrivals,
/// which is always one (cuda-oxide's signature). Needs compute capability 9.0.
///
/// # Safety
///
/// As [`mbarrier_arrive`]; something (a TMA copy) must complete the `bytes`, or the phase
/// never completes.
pub unsafe fn mbarrier_arrive_expect_tx(bar: *const Barrier, tx_count: u32, bytes: u32) -> u64 {
    let _ = (bar, tx_count, bytes);
    unreachable_on_host()
}

/// Adds `bytes` to the current phase's transaction count without arriving
/// (`mbarrier.expect_tx`). Needs compute capability 9.0.
///
/// # Safety
///
/// As [`mbarrier_arrive_expect_tx`].
pub unsafe fn mbarrier_expect_tx(bar: *const Barrier, bytes: u32) {
    let _ = (bar, bytes);
    unreachable_on_host()
}

/// Whether the phase of `token` has completed (`mbarrier.test_wait`), without waiting.
/// `true` makes the writes its arrivals released visible to this thread.
///
/// # Safety
///
/// `bar` points to a live barrier and `token` came from an arrival on it.
pub unsafe fn mbarrier_test_wait(bar: *const Barrier, token: u64) -> bool {
    let _ = (bar, token);
    unreachable_on_host()
}

/// As [`mbarrier_test_wait`], but the hardware may first wait a while for the phase
/// (`mbarrier.try_wait`; `test_wait` on sm_80).
///
/// # Safety
///
/// As [`mbarrier_test_wait`].
pub unsafe fn mbarrier_try_wait(bar: *const Barrier, token: u64) -> bool {
    let _ = (bar, token);
    unreachable_on_host()
}

/// Whether the phase of parity `parity` (0 or 1) has completed, i.e. whether the current
/// phase's parity differs (`mbarrier.try_wait.parity`); `parity` names the current or the
/// previous phase. Pipelines wait for phase `k` with `k % 2`.
///
/// # Safety
///
/// `bar` points to a live barrier.
pub unsafe fn mbarrier_try_wait_parity(bar: *const Barrier, parity: u32) -> bool {
    let _ = (bar, parity);
    unreachable_on_host()
}

/// Waits until the phase of `token` has completed; afterwards the writes its arrivals
/// released are visible to this thread (a `try_wait` loop on the GPU).
///
/// # Safety
///
/// As [`mbarrier_test_wait`]; the phase must complete, or the thread waits forever (the
/// emulator reports a deadlock).
pub unsafe fn mbarrier_wait(bar: *const Barrier, token: u64) {
    let _ = (bar, token);
    unreachable_on_host()
}

/// Waits until the phase of parity `parity` has completed (a `try_wait.parity` loop).
///
/// # Safety
///
/// As [`mbarrier_try_wait_parity`] and [`mbarrier_wait`].
pub unsafe fn mbarrier_wait_parity(bar: *const Barrier, parity: u32) {
    let _ = (bar, parity);
    unreachable_on_host()
}

/// Arrives and waits for the phase it arrived on.
///
/// # Safety
///
/// As [`mbarrier_arrive`] and [`mbarrier_wait`].
pub unsafe fn mbarrier_arrive_and_wait(bar: *const Barrier) {
    let _ = bar;
    unreachable_on_host()
}

/// Ends the barrier's life (`mbarrier.inval`); its memory may then be reused, or the barrier
/// initialised again.
///
/// # Safety
///
/// `bar` points to a live barrier that no thread or copy uses any more (a `sync_threads()`
/// before it); exactly one thread invalidates it.
pub unsafe fn mbarrier_inval(bar: *mut Barrier) {
    let _ = bar;
    unreachable_on_host()
}

/// Makes this thread's earlier [`mbarrier_init`]s visible to the other blocks of its
/// cluster (`fence.mbarrier_init.release.cluster`), with the release of its next cluster
/// barrier arrival: initialise, fence, then [`cluster_sync`](super::cluster::cluster_sync),
/// and other blocks may arrive on the barrier or multicast copies into it. Compute
/// capability 9.0 (nothing on older targets, where no other block sees the barrier). The
/// emulator checks the order the cluster barrier gives instead: a remote use of a barrier
/// that nothing orders after its initialisation is an `EmuError::MbarrierMisuse`.
///
/// # Safety
///
/// None beyond the fence's own (it is `unsafe` in cuda-oxide, so its programs call it in
/// `unsafe` blocks).
pub unsafe fn fence_mbarrier_init_release_cluster() {}

/// cuda-oxide's name for [`fence_proxy_async`](super::fence_proxy_async) as its TMA programs
/// use it after `mbarrier_init`: the fence for the block's shared memory only
/// (`fence.proxy.async.shared::cta`), which is all a TMA program's barriers and staged tiles
/// need and cheaper than the all-spaces form.
///
/// # Safety
///
/// None beyond the fence's own (it is `unsafe` in cuda-oxide, so its programs call it in
/// `unsafe` blocks).
pub unsafe fn fence_proxy_async_shared_cta() {}
