//! Atomic operations on global memory, through kernel parameters of type [`AtomicSlice<T>`].
//!
//! The host passes an `&mut DeviceBuffer<T>` for an `AtomicSlice<T>`: the launch has the buffer
//! to itself, so no plain access of another parameter can race with the atomics. Methods
//! without a suffix work at device scope; `_block` and `_system` variants choose the scope.
//!
//! cuda-oxide's typed cells with orderings (`DeviceAtomicU32`, `AtomicOrdering`, ..) are here
//! too, for kernels that make them from raw pointers in `unsafe` code.

use std::marker::PhantomData;

pub use super::atomic_cells::*;

use super::shared::unreachable_on_host;

/// A slice of global memory that threads update with atomic read-modify-write operations.
/// Supported element types: `i32`, `u32`, `i64`, `u64` (every operation), `f32` and `f64`
/// (`fetch_add`, `swap`, `compare_exchange`).
///
/// A histogram, where many threads add to the same bin:
///
/// ```
/// use cuprum::simt::{kernel, launch_contract, thread, AtomicSlice};
/// use cuprum::{cuda_module, CudaContext, DeviceBuffer, LaunchConfig1D};
///
/// #[cuda_module]
/// mod kernels {
///     use super::*;
///
///     #[kernel]
///     #[launch_contract(domain = 1, block = (256, 1, 1))]
///     pub fn histogram(x: &[u32], bins: AtomicSlice<u32>) {
///         let i = thread::index_1d().get();
///         if i < x.len() {
///             bins.fetch_add((x[i] % 16) as usize, 1);
///         }
///     }
/// }
///
/// # fn main() -> cuprum::Result<()> {
/// let x: Vec<u32> = (0..1000u32).map(|i| i.wrapping_mul(2_654_435_761) >> 7).collect();
/// let ctx = CudaContext::new(0)?;
/// let stream = ctx.default_stream();
/// let dx = DeviceBuffer::from_host(&stream, &x)?;
/// // The host passes `&mut DeviceBuffer<u32>` for an `AtomicSlice<u32>`.
/// let mut bins = DeviceBuffer::<u32>::zeroed(&stream, 16)?;
///
/// let module = kernels::load(&ctx)?;
/// let prepared = module.prepare_histogram(LaunchConfig1D::for_len(x.len(), 256))?;
/// module.histogram(&stream, &prepared, &dx, &mut bins)?;
///
/// let mut want = vec![0u32; 16];
/// for v in &x {
///     want[(v % 16) as usize] += 1;
/// }
/// assert_eq!(bins.to_host_vec(&stream)?, want);
/// # Ok(())
/// # }
/// ```
pub struct AtomicSlice<T> {
    _elements: PhantomData<*mut T>,
}

macro_rules! atomic_ops {
    ($($(#[$doc:meta])* $name:ident),* $(,)?) => {
        $(
            $(#[$doc])*
            pub fn $name(&self, i: usize, value: T) -> T {
                let _ = (i, value);
                unreachable_on_host()
            }
        )*
    };
}

impl<T: Copy> AtomicSlice<T> {
    /// The number of elements.
    pub fn len(&self) -> usize {
        unreachable_on_host()
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        unreachable_on_host()
    }

    atomic_ops! {
        /// Adds `value` to element `i` and returns the old value (device scope).
        fetch_add,
        /// [`fetch_add`](Self::fetch_add) at block scope.
        fetch_add_block,
        /// [`fetch_add`](Self::fetch_add) at system scope.
        fetch_add_system,
        /// Subtracts `value` from element `i` and returns the old value (device scope).
        fetch_sub,
        /// [`fetch_sub`](Self::fetch_sub) at block scope.
        fetch_sub_block,
        /// [`fetch_sub`](Self::fetch_sub) at system scope.
        fetch_sub_system,
        /// Stores the minimum of element `i` and `value` and returns the old value (device scope).
        fetch_min,
        /// [`fetch_min`](Self::fetch_min) at block scope.
        fetch_min_block,
        /// [`fetch_min`](Self::fetch_min) at system scope.
        fetch_min_system,
        /// Stores the maximum of element `i` and `value` and returns the old value (device scope).
        fetch_max,
        /// [`fetch_max`](Self::fetch_max) at block scope.
        fetch_max_block,
        /// [`fetch_max`](Self::fetch_max) at system scope.
        fetch_max_system,
        /// Bitwise-ands `value` into element `i` and returns the old value (device scope).
        fetch_and,
        /// [`fetch_and`](Self::fetch_and) at block scope.
        fetch_and_block,
        /// [`fetch_and`](Self::fetch_and) at system scope.
        fetch_and_system,
        /// Bitwise-ors `value` into element `i` and returns the old value (device scope).
        fetch_or,
        /// [`fetch_or`](Self::fetch_or) at block scope.
        fetch_or_block,
        /// [`fetch_or`](Self::fetch_or) at system scope.
        fetch_or_system,
        /// Bitwise-xors `value` into element `i` and returns the old value (device scope).
        fetch_xor,
        /// [`fetch_xor`](Self::fetch_xor) at block scope.
        fetch_xor_block,
        /// [`fetch_xor`](Self::fetch_xor) at system scope.
        fetch_xor_system,
        /// Stores `value` in element `i` and returns the old value (device scope).
        swap,
        /// [`swap`](Self::swap) at block scope.
        swap_block,
        /// [`swap`](Self::swap) at system scope.
        swap_system,
    }

    /// Stores `new` if element `i` equals `current`; returns the old value either way.
    pub fn compare_exchange(&self, i: usize, current: T, new: T) -> T {
        let _ = (i, current, new);
        unreachable_on_host()
    }
}
