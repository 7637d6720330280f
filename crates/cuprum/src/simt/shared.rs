//! Shared memory: per-block arrays that every thread of a block reads and writes.
//!
//! Accesses are `unsafe`: between two [`sync_threads`](super::sync_threads) calls, two threads
//! touching one element (one of them writing) is a data race. The emulator reports such races,
//! reads of elements nothing wrote, and out-of-range indices, naming block, thread and address.
//! Atomic read-modify-write methods are safe: atomics do not race.
//!
//! On the host these types only exist so that rustc can type-check kernel bodies.

use std::marker::PhantomData;

/// A statically sized shared-memory array of the block: `let tile = SharedArray::<f32, 256>::uninit();`
/// declares one per kernel (the `let` is the declaration; it is not re-created per call).
pub struct SharedArray<T, const N: usize> {
    _elements: PhantomData<*mut [T; N]>,
}

/// The block's dynamic shared memory, viewed as elements of `T`; its size is the launch
/// configuration's `shared_mem_bytes`.
pub struct DynamicShared<T> {
    _elements: PhantomData<*mut T>,
}

/// The block's dynamic shared memory as `T`s.
pub fn dynamic_shared<T: Copy>() -> DynamicShared<T> {
    DynamicShared {
        _elements: PhantomData,
    }
}

macro_rules! shared_access {
    () => {
        /// Reads element `i`.
        ///
        /// # Safety
        /// No other thread may write element `i` between the same two barriers.
        pub unsafe fn get(&self, i: usize) -> T {
            let _ = i;
            unreachable_on_host()
        }

        /// Writes element `i`.
        ///
        /// # Safety
        /// No other thread may read or write element `i` between the same two barriers.
        pub unsafe fn set(&self, i: usize, value: T) {
            let _ = (i, value);
        }

        /// Atomically adds `value` to element `i` and returns the old value (block scope).
        pub fn fetch_add(&self, i: usize, value: T) -> T {
            let _ = (i, value);
            unreachable_on_host()
        }

        /// Atomically subtracts (integers) and returns the old value.
        pub fn fetch_sub(&self, i: usize, value: T) -> T {
            let _ = (i, value);
            unreachable_on_host()
        }

        /// Atomic minimum (integers); returns the old value.
        pub fn fetch_min(&self, i: usize, value: T) -> T {
            let _ = (i, value);
            unreachable_on_host()
        }

        /// Atomic maximum (integers); returns the old value.
        pub fn fetch_max(&self, i: usize, value: T) -> T {
            let _ = (i, value);
            unreachable_on_host()
        }
    };
}

impl<T: Copy, const N: usize> SharedArray<T, N> {
    /// Declares the array. Its contents start undefined: read nothing before writing it.
    pub fn uninit() -> Self {
        Self {
            _elements: PhantomData,
        }
    }

    /// The number of elements, `N`.
    pub const fn len(&self) -> usize {
        N
    }

    /// Whether `N` is zero.
    pub const fn is_empty(&self) -> bool {
        N == 0
    }

    shared_access!();
}

impl<T: Copy> DynamicShared<T> {
    shared_access!();
}

/// What device-only operations return when host code calls them: they are never meant to run
/// there, and a kernel's host copy is never called.
pub(crate) fn unreachable_on_host<T>() -> T {
    panic!(
        "cuprum device function called on the host: kernels run through a module's launch methods"
    )
}
