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
///
/// Each block below reverses its 128 elements: every thread stores one element, the barrier
/// makes the stores visible to the whole block, then every thread loads another thread's
/// element.
///
/// ```
/// use cuprum::simt::{kernel, launch_contract, sync_threads, thread, DisjointSlice, SharedArray};
/// use cuprum::{cuda_module, CudaContext, DeviceBuffer, LaunchConfig1D};
///
/// #[cuda_module]
/// mod kernels {
///     use super::*;
///
///     #[kernel]
///     #[launch_contract(domain = 1, block = (128, 1, 1))]
///     pub fn reverse_blocks(x: &[u32], mut y: DisjointSlice<u32>) {
///         let tile = SharedArray::<u32, 128>::uninit();
///         let t = thread::threadIdx_x() as usize;
///         let i = thread::index_1d();
///         // SAFETY: thread `t` alone writes slot `t` before the barrier.
///         unsafe { tile.set(t, x[i.get()]) };
///         sync_threads();
///         if let Some(out) = y.get_mut(i) {
///             // SAFETY: nothing writes the tile after the barrier.
///             *out = unsafe { tile.get(127 - t) };
///         }
///     }
/// }
///
/// # fn main() -> cuprum::Result<()> {
/// let x: Vec<u32> = (0..512).collect(); // a whole number of blocks
/// let ctx = CudaContext::new(0)?;
/// let stream = ctx.default_stream();
/// let dx = DeviceBuffer::from_host(&stream, &x)?;
/// let mut dy = DeviceBuffer::zeroed(&stream, x.len())?;
///
/// let module = kernels::load(&ctx)?;
/// let prepared = module.prepare_reverse_blocks(LaunchConfig1D::for_len(x.len(), 128))?;
/// module.reverse_blocks(&stream, &prepared, &dx, &mut dy)?;
///
/// let want: Vec<u32> = x.chunks(128).flat_map(|c| c.iter().rev().copied()).collect();
/// assert_eq!(dy.to_host_vec(&stream)?, want);
/// # Ok(())
/// # }
/// ```
///
/// `ALIGN` is the alignment of the array's start in bytes, as cuda-oxide's third parameter
/// (`SharedArray<u32, 64, 8>`): 0 (the default) or a power of two up to 1024. cuprum places
/// every static shared array at a multiple of 16 bytes, so any `ALIGN` up to 16 holds; a
/// larger one (128 for a TMA box, up to 1024 for a swizzled one: `cuprum::simt::tma`) places
/// the array at a multiple of it, and the block's shared window with it.
pub struct SharedArray<T, const N: usize, const ALIGN: usize = 0> {
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

        /// A reference to element `i`, for a device helper that reads or updates the element
        /// in place: `compare_swap(tile.get_mut(i), tile.get_mut(j))`, as CUDA code passes
        /// `s_key[i]` by reference. The helper is inlined, so the reference is the element.
        ///
        /// # Safety
        /// No other thread may read or write element `i` between the same two barriers, and
        /// no two references live at once may name one element (they are `&mut`).
        #[allow(clippy::mut_from_ref)]
        pub unsafe fn get_mut(&self, i: usize) -> &mut T {
            let _ = i;
            unreachable_on_host()
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

impl<T: Copy, const N: usize, const ALIGN: usize> SharedArray<T, N, ALIGN> {
    /// The initializer of a shared array declared as a `static mut` in a kernel body, as
    /// cuda-oxide writes CUDA's `__shared__`:
    /// `static mut TILE: SharedArray<f32, 256> = SharedArray::UNINIT;` (one array per block,
    /// the same as `let tile = SharedArray::<f32, 256>::uninit();`). Its contents start
    /// undefined.
    pub const UNINIT: Self = Self {
        _elements: PhantomData,
    };

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

/// `tile[i]` (and `tile[r][c]` for arrays as elements, row-major: `SharedArray<[f32; 17], 16>`
/// is a padded 16 x 16 tile), bounds-checked like a slice. Device code may index a shared
/// array only inside `unsafe` (the compiler refuses it elsewhere), under the same rule as
/// [`SharedArray::get`] and [`SharedArray::set`]: no other thread writes an element between
/// two barriers while this one reads or writes it. Writing needs `let mut tile`.
impl<T: Copy, const N: usize, const ALIGN: usize> std::ops::Index<usize>
    for SharedArray<T, N, ALIGN>
{
    type Output = T;
    fn index(&self, i: usize) -> &T {
        let _ = i;
        unreachable_on_host()
    }
}

impl<T: Copy, const N: usize, const ALIGN: usize> std::ops::IndexMut<usize>
    for SharedArray<T, N, ALIGN>
{
    fn index_mut(&mut self, i: usize) -> &mut T {
        let _ = i;
        unreachable_on_host()
    }
}

impl<T: Copy> DynamicShared<T> {
    shared_access!();
}

/// cuda-oxide's raw view of dynamic shared memory: `DynamicSharedArray::<f32>::get()` is a
/// `*mut f32` to its start, `::offset(bytes)` one `bytes` past it, `::get_raw()` a `*mut u8`.
/// Every call in a kernel names the same memory (partition it by byte offsets), whose size is
/// the launch's `shared_mem_bytes`; `ALIGN` (a power of two, 16 by default) is the alignment
/// the start has, the largest any call in the kernel asks. Dereferencing the pointers is
/// `unsafe`: the launch must give enough bytes, and threads must meet at
/// `thread::sync_threads()` between one's write and another's read. For safe shared memory,
/// see `SharedWrite`/`SharedRead` ([`crate::simt::phased`]).
pub struct DynamicSharedArray<T, const ALIGN: usize = 16> {
    _elements: PhantomData<*mut T>,
}

impl<T, const ALIGN: usize> DynamicSharedArray<T, ALIGN> {
    /// The alignment in bytes the start has.
    pub const fn alignment() -> usize {
        ALIGN
    }

    /// The start of dynamic shared memory, as `T`s. In device code only.
    pub fn get() -> *mut T {
        unreachable_on_host()
    }

    /// `bytes` past the start, as `T`s. In device code only.
    pub fn offset(bytes: usize) -> *mut T {
        let _ = bytes;
        unreachable_on_host()
    }

    /// The start as bytes. In device code only.
    pub fn get_raw() -> *mut u8 {
        unreachable_on_host()
    }
}

/// What device-only operations return when host code calls them: they are never meant to run
/// there, and a kernel's host copy is never called.
pub(crate) fn unreachable_on_host<T>() -> T {
    panic!(
        "cuprum device function called on the host: kernels run through a module's launch methods"
    )
}
