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
