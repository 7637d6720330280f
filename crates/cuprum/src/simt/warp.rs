//! Warp-level operations: shuffles, votes and reductions across the 32 lanes of a warp.
//!
//! They act on the lanes that execute them together; a shuffle that reads a lane which is not
//! taking part is an error the emulator reports. Lane operands count modulo 32, as in PTX.
//!
//! Below, each warp sums its 32 values without shared memory, finds which lanes hold an odd
//! value, and reads its neighbour's value with a butterfly shuffle:
//!
//! ```
//! use cuprum::simt::{kernel, launch_contract, thread, warp, DisjointSlice};
//! use cuprum::{cuda_module, CudaContext, DeviceBuffer, LaunchConfig1D};
//!
//! #[cuda_module]
//! mod kernels {
//!     use super::*;
//!
//!     #[kernel]
//!     #[launch_contract(domain = 1, block = (64, 1, 1))]
//!     pub fn warp_demo(
//!         x: &[u32],
//!         mut sums: DisjointSlice<u32>,
//!         mut odd: DisjointSlice<u32>,
//!         mut pairs: DisjointSlice<u32>,
//!     ) {
//!         let i = thread::index_1d();
//!         let v = x[i.get()]; // the input fills whole warps, so every lane takes part
//!         let sum = warp::reduce_add(v);
//!         let mask = warp::ballot(v % 2 == 1);
//!         let other = warp::shuffle_xor(v, 1);
//!         if let Some(o) = sums.get_mut(i) {
//!             *o = sum;
//!         }
//!         if let Some(o) = odd.get_mut(i) {
//!             *o = mask;
//!         }
//!         if let Some(o) = pairs.get_mut(i) {
//!             *o = other;
//!         }
//!     }
//! }
//!
//! # fn main() -> cuprum::Result<()> {
//! let x: Vec<u32> = (0..128u32).map(|i| i * i % 37).collect();
//! let ctx = CudaContext::new(0)?;
//! let stream = ctx.default_stream();
//! let dx = DeviceBuffer::from_host(&stream, &x)?;
//! let mut sums = DeviceBuffer::zeroed(&stream, x.len())?;
//! let mut odd = DeviceBuffer::zeroed(&stream, x.len())?;
//! let mut pairs = DeviceBuffer::zeroed(&stream, x.len())?;
//!
//! let module = kernels::load(&ctx)?;
//! let prepared = module.prepare_warp_demo(LaunchConfig1D::for_len(x.len(), 64))?;
//! module.warp_demo(&stream, &prepared, &dx, &mut sums, &mut odd, &mut pairs)?;
//!
//! let (sums, odd, pairs) = (
//!     sums.to_host_vec(&stream)?,
//!     odd.to_host_vec(&stream)?,
//!     pairs.to_host_vec(&stream)?,
//! );
//! for (w, warp_x) in x.chunks(32).enumerate() {
//!     let sum: u32 = warp_x.iter().sum();
//!     let mask = (0..32).filter(|&l| warp_x[l] % 2 == 1).fold(0u32, |m, l| m | 1 << l);
//!     for lane in 0..32 {
//!         let i = w * 32 + lane;
//!         assert_eq!(sums[i], sum);
//!         assert_eq!(odd[i], mask);
//!         assert_eq!(pairs[i], warp_x[lane ^ 1]);
//!     }
//! }
//! # Ok(())
//! # }
//! ```

use super::shared::unreachable_on_host;

/// `value` from lane `lane` of the warp.
pub fn shuffle<T: Copy>(value: T, lane: u32) -> T {
    let _ = (value, lane);
    unreachable_on_host()
}

/// `value` from the lane `delta` below (a lane with none below keeps its own).
pub fn shuffle_up<T: Copy>(value: T, delta: u32) -> T {
    let _ = (value, delta);
    unreachable_on_host()
}

/// `value` from the lane `delta` above (a lane with none above keeps its own).
pub fn shuffle_down<T: Copy>(value: T, delta: u32) -> T {
    let _ = (value, delta);
    unreachable_on_host()
}

/// `value` from lane `lane_id ^ mask`.
pub fn shuffle_xor<T: Copy>(value: T, mask: u32) -> T {
    let _ = (value, mask);
    unreachable_on_host()
}

/// Whether `predicate` holds on every taking-part lane.
pub fn all(predicate: bool) -> bool {
    let _ = predicate;
    unreachable_on_host()
}

/// Whether `predicate` holds on any taking-part lane.
pub fn any(predicate: bool) -> bool {
    let _ = predicate;
    unreachable_on_host()
}

/// Bit `l` set where `predicate` holds on lane `l`.
pub fn ballot(predicate: bool) -> u32 {
    let _ = predicate;
    unreachable_on_host()
}

/// The sum of `value` over the whole warp (all 32 lanes must take part), on every lane.
pub fn reduce_add<T: Copy>(value: T) -> T {
    let _ = value;
    unreachable_on_host()
}

/// The minimum over the whole warp, on every lane.
pub fn reduce_min<T: Copy>(value: T) -> T {
    let _ = value;
    unreachable_on_host()
}

/// The maximum over the whole warp, on every lane.
pub fn reduce_max<T: Copy>(value: T) -> T {
    let _ = value;
    unreachable_on_host()
}

// cuda-oxide's spellings (`cuda_device::warp`), so that its kernels keep their names. The
// compiler reads them as the operations above (see `cuprum-front`'s `warp_names`): the typed
// forms are the generic ones, and a `_sync` form's member mask must be `0xFFFF_FFFF` or
// `active_mask()` (cuprum computes the exact mask of the lanes executing together itself).

pub use super::thread::{lane_id, warp_id};

/// The lanes executing this call together, one bit per lane (`__activemask()`).
pub fn active_mask() -> u32 {
    unreachable_on_host()
}

/// How many of the lanes executing together have `predicate` (`__popc(__ballot_sync(..))`).
pub fn popc(predicate: bool) -> u32 {
    let _ = predicate;
    unreachable_on_host()
}

/// The lanes below the calling lane, one bit per lane (`%lanemask_lt`).
pub fn lanemask_lt() -> u32 {
    unreachable_on_host()
}

/// The lanes at or below the calling lane, one bit per lane (`%lanemask_le`).
pub fn lanemask_le() -> u32 {
    unreachable_on_host()
}

/// The lanes equal to the calling lane, one bit per lane (`%lanemask_eq`).
pub fn lanemask_eq() -> u32 {
    unreachable_on_host()
}

/// The lanes at or above the calling lane, one bit per lane (`%lanemask_ge`).
pub fn lanemask_ge() -> u32 {
    unreachable_on_host()
}

/// The lanes above the calling lane, one bit per lane (`%lanemask_gt`).
pub fn lanemask_gt() -> u32 {
    unreachable_on_host()
}

/// Elects the lowest lane executing together: `(its lane, whether the caller is it)`. `mask`
/// must be `0xFFFF_FFFF` or `active_mask()`.
pub fn elect_sync(mask: u32) -> (u32, bool) {
    let _ = mask;
    unreachable_on_host()
}

/// Whether the calling lane is the one [`elect_sync`] elects.
pub fn is_elected_sync(mask: u32) -> bool {
    let _ = mask;
    unreachable_on_host()
}

/// [`all`] with a member mask (`0xFFFF_FFFF` or `active_mask()`).
pub fn all_sync(mask: u32, predicate: bool) -> bool {
    let _ = (mask, predicate);
    unreachable_on_host()
}

/// [`any`] with a member mask (`0xFFFF_FFFF` or `active_mask()`).
pub fn any_sync(mask: u32, predicate: bool) -> bool {
    let _ = (mask, predicate);
    unreachable_on_host()
}

/// [`ballot`] with a member mask (`0xFFFF_FFFF` or `active_mask()`).
pub fn ballot_sync(mask: u32, predicate: bool) -> u32 {
    let _ = (mask, predicate);
    unreachable_on_host()
}

/// [`shuffle`] with a member mask (`0xFFFF_FFFF` or `active_mask()`).
pub fn shuffle_sync<T: Copy>(mask: u32, var: T, src_lane: u32) -> T {
    let _ = (mask, var, src_lane);
    unreachable_on_host()
}

/// [`shuffle`] on `f32`.
pub fn shuffle_f32(var: f32, src_lane: u32) -> f32 {
    shuffle(var, src_lane)
}

/// [`shuffle`] on `f32`, with a member mask (`0xFFFF_FFFF` or `active_mask()`).
pub fn shuffle_f32_sync(mask: u32, var: f32, src_lane: u32) -> f32 {
    shuffle_sync(mask, var, src_lane)
}

/// [`shuffle`] on `f64`.
pub fn shuffle_f64(var: f64, src_lane: u32) -> f64 {
    shuffle(var, src_lane)
}

/// [`shuffle`] on `f64`, with a member mask (`0xFFFF_FFFF` or `active_mask()`).
pub fn shuffle_f64_sync(mask: u32, var: f64, src_lane: u32) -> f64 {
    shuffle_sync(mask, var, src_lane)
}

/// [`shuffle`] on `u32`.
pub fn shuffle_u32(var: u32, src_lane: u32) -> u32 {
    shuffle(var, src_lane)
}

/// [`shuffle`] on `u32`, with a member mask (`0xFFFF_FFFF` or `active_mask()`).
pub fn shuffle_u32_sync(mask: u32, var: u32, src_lane: u32) -> u32 {
    shuffle_sync(mask, var, src_lane)
}

/// [`shuffle`] on `i32`.
pub fn shuffle_i32(var: i32, src_lane: u32) -> i32 {
    shuffle(var, src_lane)
}

/// [`shuffle`] on `i32`, with a member mask (`0xFFFF_FFFF` or `active_mask()`).
pub fn shuffle_i32_sync(mask: u32, var: i32, src_lane: u32) -> i32 {
    shuffle_sync(mask, var, src_lane)
}

/// [`shuffle`] on `u64`.
pub fn shuffle_u64(var: u64, src_lane: u32) -> u64 {
    shuffle(var, src_lane)
}

/// [`shuffle`] on `u64`, with a member mask (`0xFFFF_FFFF` or `active_mask()`).
pub fn shuffle_u64_sync(mask: u32, var: u64, src_lane: u32) -> u64 {
    shuffle_sync(mask, var, src_lane)
}

/// [`shuffle`] on `i64`.
pub fn shuffle_i64(var: i64, src_lane: u32) -> i64 {
    shuffle(var, src_lane)
}

/// [`shuffle`] on `i64`, with a member mask (`0xFFFF_FFFF` or `active_mask()`).
pub fn shuffle_i64_sync(mask: u32, var: i64, src_lane: u32) -> i64 {
    shuffle_sync(mask, var, src_lane)
}

/// [`shuffle_xor`] with a member mask (`0xFFFF_FFFF` or `active_mask()`).
pub fn shuffle_xor_sync<T: Copy>(mask: u32, var: T, lane_mask: u32) -> T {
    let _ = (mask, var, lane_mask);
    unreachable_on_host()
}

/// [`shuffle_xor`] on `f32`.
pub fn shuffle_xor_f32(var: f32, lane_mask: u32) -> f32 {
    shuffle_xor(var, lane_mask)
}

/// [`shuffle_xor`] on `f32`, with a member mask (`0xFFFF_FFFF` or `active_mask()`).
pub fn shuffle_xor_f32_sync(mask: u32, var: f32, lane_mask: u32) -> f32 {
    shuffle_xor_sync(mask, var, lane_mask)
}

/// [`shuffle_xor`] on `f64`.
pub fn shuffle_xor_f64(var: f64, lane_mask: u32) -> f64 {
    shuffle_xor(var, lane_mask)
}

/// [`shuffle_xor`] on `f64`, with a member mask (`0xFFFF_FFFF` or `active_mask()`).
pub fn shuffle_xor_f64_sync(mask: u32, var: f64, lane_mask: u32) -> f64 {
    shuffle_xor_sync(mask, var, lane_mask)
}

/// [`shuffle_xor`] on `u32`.
pub fn shuffle_xor_u32(var: u32, lane_mask: u32) -> u32 {
    shuffle_xor(var, lane_mask)
}

/// [`shuffle_xor`] on `u32`, with a member mask (`0xFFFF_FFFF` or `active_mask()`).
pub fn shuffle_xor_u32_sync(mask: u32, var: u32, lane_mask: u32) -> u32 {
    shuffle_xor_sync(mask, var, lane_mask)
}

/// [`shuffle_xor`] on `i32`.
pub fn shuffle_xor_i32(var: i32, lane_mask: u32) -> i32 {
    shuffle_xor(var, lane_mask)
}

/// [`shuffle_xor`] on `i32`, with a member mask (`0xFFFF_FFFF` or `active_mask()`).
pub fn shuffle_xor_i32_sync(mask: u32, var: i32, lane_mask: u32) -> i32 {
    shuffle_xor_sync(mask, var, lane_mask)
}

/// [`shuffle_xor`] on `u64`.
pub fn shuffle_xor_u64(var: u64, lane_mask: u32) -> u64 {
    shuffle_xor(var, lane_mask)
}

/// [`shuffle_xor`] on `u64`, with a member mask (`0xFFFF_FFFF` or `active_mask()`).
pub fn shuffle_xor_u64_sync(mask: u32, var: u64, lane_mask: u32) -> u64 {
    shuffle_xor_sync(mask, var, lane_mask)
}

/// [`shuffle_xor`] on `i64`.
pub fn shuffle_xor_i64(var: i64, lane_mask: u32) -> i64 {
    shuffle_xor(var, lane_mask)
}

/// [`shuffle_xor`] on `i64`, with a member mask (`0xFFFF_FFFF` or `active_mask()`).
pub fn shuffle_xor_i64_sync(mask: u32, var: i64, lane_mask: u32) -> i64 {
    shuffle_xor_sync(mask, var, lane_mask)
}

/// [`shuffle_down`] with a member mask (`0xFFFF_FFFF` or `active_mask()`).
pub fn shuffle_down_sync<T: Copy>(mask: u32, var: T, delta: u32) -> T {
    let _ = (mask, var, delta);
    unreachable_on_host()
}

/// [`shuffle_down`] on `f32`.
pub fn shuffle_down_f32(var: f32, delta: u32) -> f32 {
    shuffle_down(var, delta)
}

/// [`shuffle_down`] on `f32`, with a member mask (`0xFFFF_FFFF` or `active_mask()`).
pub fn shuffle_down_f32_sync(mask: u32, var: f32, delta: u32) -> f32 {
    shuffle_down_sync(mask, var, delta)
}

/// [`shuffle_down`] on `f64`.
pub fn shuffle_down_f64(var: f64, delta: u32) -> f64 {
    shuffle_down(var, delta)
}

/// [`shuffle_down`] on `f64`, with a member mask (`0xFFFF_FFFF` or `active_mask()`).
pub fn shuffle_down_f64_sync(mask: u32, var: f64, delta: u32) -> f64 {
    shuffle_down_sync(mask, var, delta)
}

/// [`shuffle_down`] on `u32`.
pub fn shuffle_down_u32(var: u32, delta: u32) -> u32 {
    shuffle_down(var, delta)
}

/// [`shuffle_down`] on `u32`, with a member mask (`0xFFFF_FFFF` or `active_mask()`).
pub fn shuffle_down_u32_sync(mask: u32, var: u32, delta: u32) -> u32 {
    shuffle_down_sync(mask, var, delta)
}

/// [`shuffle_down`] on `i32`.
pub fn shuffle_down_i32(var: i32, delta: u32) -> i32 {
    shuffle_down(var, delta)
}

/// [`shuffle_down`] on `i32`, with a member mask (`0xFFFF_FFFF` or `active_mask()`).
pub fn shuffle_down_i32_sync(mask: u32, var: i32, delta: u32) -> i32 {
    shuffle_down_sync(mask, var, delta)
}

/// [`shuffle_down`] on `u64`.
pub fn shuffle_down_u64(var: u64, delta: u32) -> u64 {
    shuffle_down(var, delta)
}

/// [`shuffle_down`] on `u64`, with a member mask (`0xFFFF_FFFF` or `active_mask()`).
pub fn shuffle_down_u64_sync(mask: u32, var: u64, delta: u32) -> u64 {
    shuffle_down_sync(mask, var, delta)
}

/// [`shuffle_down`] on `i64`.
pub fn shuffle_down_i64(var: i64, delta: u32) -> i64 {
    shuffle_down(var, delta)
}

/// [`shuffle_down`] on `i64`, with a member mask (`0xFFFF_FFFF` or `active_mask()`).
pub fn shuffle_down_i64_sync(mask: u32, var: i64, delta: u32) -> i64 {
    shuffle_down_sync(mask, var, delta)
}

/// [`shuffle_up`] with a member mask (`0xFFFF_FFFF` or `active_mask()`).
pub fn shuffle_up_sync<T: Copy>(mask: u32, var: T, delta: u32) -> T {
    let _ = (mask, var, delta);
    unreachable_on_host()
}

/// [`shuffle_up`] on `f32`.
pub fn shuffle_up_f32(var: f32, delta: u32) -> f32 {
    shuffle_up(var, delta)
}

/// [`shuffle_up`] on `f32`, with a member mask (`0xFFFF_FFFF` or `active_mask()`).
pub fn shuffle_up_f32_sync(mask: u32, var: f32, delta: u32) -> f32 {
    shuffle_up_sync(mask, var, delta)
}

/// [`shuffle_up`] on `f64`.
pub fn shuffle_up_f64(var: f64, delta: u32) -> f64 {
    shuffle_up(var, delta)
}

/// [`shuffle_up`] on `f64`, with a member mask (`0xFFFF_FFFF` or `active_mask()`).
pub fn shuffle_up_f64_sync(mask: u32, var: f64, delta: u32) -> f64 {
    shuffle_up_sync(mask, var, delta)
}

/// [`shuffle_up`] on `u32`.
pub fn shuffle_up_u32(var: u32, delta: u32) -> u32 {
    shuffle_up(var, delta)
}

/// [`shuffle_up`] on `u32`, with a member mask (`0xFFFF_FFFF` or `active_mask()`).
pub fn shuffle_up_u32_sync(mask: u32, var: u32, delta: u32) -> u32 {
    shuffle_up_sync(mask, var, delta)
}

/// [`shuffle_up`] on `i32`.
pub fn shuffle_up_i32(var: i32, delta: u32) -> i32 {
    shuffle_up(var, delta)
}

/// [`shuffle_up`] on `i32`, with a member mask (`0xFFFF_FFFF` or `active_mask()`).
pub fn shuffle_up_i32_sync(mask: u32, var: i32, delta: u32) -> i32 {
    shuffle_up_sync(mask, var, delta)
}

/// [`shuffle_up`] on `u64`.
pub fn shuffle_up_u64(var: u64, delta: u32) -> u64 {
    shuffle_up(var, delta)
}

/// [`shuffle_up`] on `u64`, with a member mask (`0xFFFF_FFFF` or `active_mask()`).
pub fn shuffle_up_u64_sync(mask: u32, var: u64, delta: u32) -> u64 {
    shuffle_up_sync(mask, var, delta)
}

/// [`shuffle_up`] on `i64`.
pub fn shuffle_up_i64(var: i64, delta: u32) -> i64 {
    shuffle_up(var, delta)
}

/// [`shuffle_up`] on `i64`, with a member mask (`0xFFFF_FFFF` or `active_mask()`).
pub fn shuffle_up_i64_sync(mask: u32, var: i64, delta: u32) -> i64 {
    shuffle_up_sync(mask, var, delta)
}

/// [`reduce_add`] on `f32` (all 32 lanes take part).
pub fn reduce_sum_f32(val: f32) -> f32 {
    reduce_add(val)
}

/// [`reduce_add`] on `f64` (all 32 lanes take part).
pub fn reduce_sum_f64(val: f64) -> f64 {
    reduce_add(val)
}

/// [`reduce_max`] on `f32` (all 32 lanes take part).
pub fn reduce_max_f32(val: f32) -> f32 {
    reduce_max(val)
}

/// [`reduce_max`] on `f64` (all 32 lanes take part).
pub fn reduce_max_f64(val: f64) -> f64 {
    reduce_max(val)
}

/// [`reduce_min`] on `f32` (all 32 lanes take part).
pub fn reduce_min_f32(val: f32) -> f32 {
    reduce_min(val)
}

/// [`reduce_min`] on `f64` (all 32 lanes take part).
pub fn reduce_min_f64(val: f64) -> f64 {
    reduce_min(val)
}

/// The sum of `value` over the lanes executing together, on every lane (`redux.sync`);
/// `mask` must be `0xFFFF_FFFF` or `active_mask()`.
pub fn redux_sync_add(mask: u32, value: u32) -> u32 {
    let _ = (mask, value);
    unreachable_on_host()
}

/// The minimum of `value` over the lanes executing together, on every lane (`redux.sync`);
/// `mask` must be `0xFFFF_FFFF` or `active_mask()`.
pub fn redux_sync_min_u32(mask: u32, value: u32) -> u32 {
    let _ = (mask, value);
    unreachable_on_host()
}

/// The minimum of `value` over the lanes executing together, on every lane (`redux.sync`);
/// `mask` must be `0xFFFF_FFFF` or `active_mask()`.
pub fn redux_sync_min_i32(mask: u32, value: i32) -> i32 {
    let _ = (mask, value);
    unreachable_on_host()
}

/// The maximum of `value` over the lanes executing together, on every lane (`redux.sync`);
/// `mask` must be `0xFFFF_FFFF` or `active_mask()`.
pub fn redux_sync_max_u32(mask: u32, value: u32) -> u32 {
    let _ = (mask, value);
    unreachable_on_host()
}

/// The maximum of `value` over the lanes executing together, on every lane (`redux.sync`);
/// `mask` must be `0xFFFF_FFFF` or `active_mask()`.
pub fn redux_sync_max_i32(mask: u32, value: i32) -> i32 {
    let _ = (mask, value);
    unreachable_on_host()
}

/// The bitwise and of `value` over the lanes executing together, on every lane (`redux.sync`);
/// `mask` must be `0xFFFF_FFFF` or `active_mask()`.
pub fn redux_sync_and(mask: u32, value: u32) -> u32 {
    let _ = (mask, value);
    unreachable_on_host()
}

/// The bitwise or of `value` over the lanes executing together, on every lane (`redux.sync`);
/// `mask` must be `0xFFFF_FFFF` or `active_mask()`.
pub fn redux_sync_or(mask: u32, value: u32) -> u32 {
    let _ = (mask, value);
    unreachable_on_host()
}

/// The bitwise exclusive or of `value` over the lanes executing together, on every lane (`redux.sync`);
/// `mask` must be `0xFFFF_FFFF` or `active_mask()`.
pub fn redux_sync_xor(mask: u32, value: u32) -> u32 {
    let _ = (mask, value);
    unreachable_on_host()
}

/// The launched lanes of the calling warp in a one-dimensional block (32 below the last
/// warp, the remainder in it): the `live_lanes` the partial reductions take.
pub fn live_lanes_1d() -> u32 {
    unreachable_on_host()
}

/// The sum of `val` over lanes `0..live_lanes` (clamped to `1..=32`) of a warp whose
/// other lanes were never launched (a block not a multiple of 32), on every live lane.
pub fn reduce_sum_f32_partial(val: f32, live_lanes: u32) -> f32 {
    let _ = (val, live_lanes);
    unreachable_on_host()
}

/// The sum of `val` over lanes `0..live_lanes` (clamped to `1..=32`) of a warp whose
/// other lanes were never launched (a block not a multiple of 32), on every live lane.
pub fn reduce_sum_f64_partial(val: f64, live_lanes: u32) -> f64 {
    let _ = (val, live_lanes);
    unreachable_on_host()
}

/// The maximum of `val` over lanes `0..live_lanes` (clamped to `1..=32`) of a warp whose
/// other lanes were never launched (a block not a multiple of 32), on every live lane.
pub fn reduce_max_f32_partial(val: f32, live_lanes: u32) -> f32 {
    let _ = (val, live_lanes);
    unreachable_on_host()
}

/// The maximum of `val` over lanes `0..live_lanes` (clamped to `1..=32`) of a warp whose
/// other lanes were never launched (a block not a multiple of 32), on every live lane.
pub fn reduce_max_f64_partial(val: f64, live_lanes: u32) -> f64 {
    let _ = (val, live_lanes);
    unreachable_on_host()
}

/// The minimum of `val` over lanes `0..live_lanes` (clamped to `1..=32`) of a warp whose
/// other lanes were never launched (a block not a multiple of 32), on every live lane.
pub fn reduce_min_f32_partial(val: f32, live_lanes: u32) -> f32 {
    let _ = (val, live_lanes);
    unreachable_on_host()
}

/// The minimum of `val` over lanes `0..live_lanes` (clamped to `1..=32`) of a warp whose
/// other lanes were never launched (a block not a multiple of 32), on every live lane.
pub fn reduce_min_f64_partial(val: f64, live_lanes: u32) -> f64 {
    let _ = (val, live_lanes);
    unreachable_on_host()
}

/// The lanes executing together whose `value` equals the caller's (`__match_any_sync`);
/// `mask` must be `0xFFFF_FFFF` or `active_mask()`.
pub fn match_any_sync(mask: u32, value: u32) -> u32 {
    let _ = (mask, value);
    unreachable_on_host()
}

/// [`match_any_sync`] on 64-bit values.
pub fn match_any_i64_sync(mask: u32, value: u64) -> u32 {
    let _ = (mask, value);
    unreachable_on_host()
}

/// The lanes executing together when all hold the same `value`, else 0
/// (`__match_all_sync`); `mask` must be `0xFFFF_FFFF` or `active_mask()`.
pub fn match_all_sync(mask: u32, value: u32) -> u32 {
    let _ = (mask, value);
    unreachable_on_host()
}

/// [`match_all_sync`] on 64-bit values.
pub fn match_all_i64_sync(mask: u32, value: u64) -> u32 {
    let _ = (mask, value);
    unreachable_on_host()
}
