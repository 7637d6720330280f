//! cuda-oxide's pointer forms of `cp.async`, for ported kernels: copies of 4, 8 or 16 bytes
//! from global memory to shared memory that complete in the background, in groups the thread
//! commits and waits for. The destination is a `*mut` pointer into shared memory
//! (`core::ptr::addr_of_mut!(TILE) as *mut u32`), the source a pointer into a slice
//! (`input.as_ptr()`); both must be aligned to the copy's size. The `zfill` forms read only
//! `src_size` bytes (at most the copy's size) and write zeros to the rest, as a tile's edge
//! needs. The destination may be read after a wait that covers the copy and, by other
//! threads, after a barrier too (the IR's `CpAsync` says so exactly). These are `unsafe`: the
//! compiler checks neither the pointers' bounds nor that nobody reads the bytes early. For
//! checked copies into shared arrays, see [`crate::simt::mma::cp_async`]. The
//! `cp_async_mbarrier_arrive` forms signal an mbarrier ([`crate::simt::barrier`]) when the
//! thread's copies have landed, instead of a wait.

use super::barrier::Barrier;
use super::shared::unreachable_on_host;

macro_rules! copies {
    ($($(#[$doc:meta])* $name:ident;)*) => {$(
        $(#[$doc])*
        ///
        /// # Safety
        ///
        /// `shared_dst` points into shared memory and `global_src` into global memory, both
        /// aligned to the copy's size, with the bytes in bounds; nothing reads the
        /// destination before a wait that covers the copy.
        pub unsafe fn $name(shared_dst: *mut u32, global_src: *const u32) {
            let _ = (shared_dst, global_src);
            unreachable_on_host()
        }
    )*};
}

macro_rules! zero_filling_copies {
    ($($(#[$doc:meta])* $name:ident;)*) => {$(
        $(#[$doc])*
        ///
        /// # Safety
        ///
        /// As for the full copies; `src_size` is at most the copy's size, and only that many
        /// source bytes must be in bounds.
        pub unsafe fn $name(shared_dst: *mut u32, global_src: *const u8, src_size: u32) {
            let _ = (shared_dst, global_src, src_size);
            unreachable_on_host()
        }
    )*};
}

copies! {
    /// `cp.async.ca` of 4 bytes (through L1).
    cp_async_ca_4;
    /// `cp.async.ca` of 8 bytes.
    cp_async_ca_8;
    /// `cp.async.ca` of 16 bytes.
    cp_async_ca_16;
    /// `cp.async.cg` of 16 bytes (L2 only).
    cp_async_cg_16;
}

zero_filling_copies! {
    /// `cp.async.ca` of 4 bytes, `src_size` of them read, the rest zeros.
    cp_async_ca_zfill_4;
    /// `cp.async.ca` of 8 bytes, `src_size` of them read, the rest zeros.
    cp_async_ca_zfill_8;
    /// `cp.async.ca` of 16 bytes, `src_size` of them read, the rest zeros.
    cp_async_ca_zfill_16;
    /// `cp.async.cg` of 16 bytes, `src_size` of them read, the rest zeros.
    cp_async_cg_zfill_16;
}

/// Closes the thread's current group of copies.
///
/// # Safety
///
/// None beyond the copies' own; `unsafe` as cuda-oxide declares it.
pub unsafe fn cp_async_commit_group() {}

/// Waits until at most `max_pending` (a constant) of the thread's committed groups are
/// still in flight.
///
/// # Safety
///
/// None beyond the copies' own; `unsafe` as cuda-oxide declares it.
pub unsafe fn cp_async_wait_group(max_pending: u32) {
    let _ = max_pending;
}

/// Waits for every copy of the thread, committed or not.
///
/// # Safety
///
/// None beyond the copies' own; `unsafe` as cuda-oxide declares it.
pub unsafe fn cp_async_wait_all() {}

macro_rules! mbarrier_arrivals {
    ($($(#[$doc:meta])* $name:ident;)*) => {$(
        $(#[$doc])*
        ///
        /// # Safety
        ///
        /// `barrier` points to a live [`Barrier`] in shared memory that stays live until the
        /// copies complete; this thread issued the copies it covers.
        pub unsafe fn $name(barrier: *mut Barrier) {
            let _ = barrier;
            unreachable_on_host()
        }
    )*};
}

mbarrier_arrivals! {
    /// An arrival on the barrier's current phase once every copy this thread issued before
    /// it has landed (`cp.async.mbarrier.arrive`): a waiter on the phase then sees the
    /// copied bytes. The pending count is raised by one first, so this arrival is not one of
    /// the phase's expected count: it only holds the phase open until the copies land.
    cp_async_mbarrier_arrive;
    /// [`cp_async_mbarrier_arrive`] through a shared-memory address (the same instruction
    /// here: barriers are always in shared memory).
    cp_async_mbarrier_arrive_shared;
    /// As [`cp_async_mbarrier_arrive`], but the arrival counts toward the phase's expected
    /// count (`.noinc`): `mbarrier_init`'s count must include it.
    cp_async_mbarrier_arrive_noinc;
    /// [`cp_async_mbarrier_arrive_noinc`] through a shared-memory address.
    cp_async_mbarrier_arrive_noinc_shared;
}
