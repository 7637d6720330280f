//! Atomic operations on global memory, through kernel parameters of type [`AtomicSlice<T>`].
//!
//! The host passes an `&mut DeviceBuffer<T>` for an `AtomicSlice<T>`: the launch has the buffer
//! to itself, so no plain access of another parameter can race with the atomics. Methods
//! without a suffix work at device scope; `_block` and `_system` variants choose the scope.

use std::marker::PhantomData;

use super::shared::unreachable_on_host;

/// A slice of global memory that threads update with atomic read-modify-write operations.
/// Supported element types: `i32`, `u32`, `i64`, `u64` (every operation), `f32` and `f64`
/// (`fetch_add`, `swap`, `compare_exchange`).
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
        /// `fetch_add` at block scope.
        fetch_add_block,
        /// `fetch_add` at system scope.
        fetch_add_system,
        /// Subtracts `value` and returns the old value.
        fetch_sub,
        /// Stores the minimum and returns the old value.
        fetch_min,
        /// Stores the maximum and returns the old value.
        fetch_max,
        /// Bitwise and; returns the old value.
        fetch_and,
        /// Bitwise or; returns the old value.
        fetch_or,
        /// Bitwise xor; returns the old value.
        fetch_xor,
        /// Stores `value` and returns the old value.
        swap,
    }

    /// Stores `new` if element `i` equals `current`; returns the old value either way.
    pub fn compare_exchange(&self, i: usize, current: T, new: T) -> T {
        let _ = (i, current, new);
        unreachable_on_host()
    }
}
