//! Safe shared memory: block-wide arrays whose type says which phase the block is in.
//!
//! A raw [`SharedArray`](super::SharedArray) is `unsafe` to index, because nothing stops two
//! threads from touching one element between barriers. The arrays here are safe by
//! construction, for the pattern almost every shared-memory kernel follows: threads fill the
//! array, a barrier, threads read it, a barrier, and again.
//!
//! * **Write phase** ([`SharedWrite`], [`SharedWrite2d`]). Each element has one owner, a
//!   function of the thread's position in the block fixed by the type; a thread reaches only
//!   the elements it owns (`for (i, slot) in tile.mine()`), to write them or to read back what
//!   it wrote. [`SharedWrite::warp_slot`] is the other owner: lane 0 of warp `w` owns element
//!   `w` (per-warp partial results). Distinct threads own distinct elements, so nothing races.
//! * **Read phase** ([`SharedRead`], [`SharedRead2d`]). Every thread reads every element
//!   (`tile[i]`, `tile[r][c]`, `tile.get(..)`); nobody writes.
//! * **Atomic phase** ([`SharedAtomic`], 1-D arrays). Every thread updates any element, with
//!   atomic read-modify-writes only (`fetch_add(i, v)`, ..: a histogram's bins); atomics do
//!   not race with each other. `sync_atomic()` enters it from either phase above, `sync()`
//!   leaves it for the read phase.
//! * **Split phase** ([`SharedSplit`], 1-D arrays), for tree reductions: with a boundary `s`,
//!   a thread writes only the elements it owns *below* `s` (`for (i, slot) in
//!   split.mine_below()`), and reads only elements *at or above* `s` (`split.above(k)` is
//!   element `s + k`; `split[i]` with `i < s` stops the kernel with an error, as an index past
//!   `N` does). `sync_split(s)` enters it from the read or write phase, `sync_split(s2)`
//!   moves it to the next level (`s2 <= s`, one barrier), `sync()` leaves it for the read
//!   phase. `s` must be the same in every thread of the block (the compiler checks, at
//!   `cargo build`) and at most `N`.
//! * **`sync()`** is the block barrier (`__syncthreads`) between the phases. It consumes the
//!   array in one phase and returns it in the other, so no handle of the old phase survives
//!   the barrier (rustc's move check). Several arrays change phase at one barrier with
//!   `(a, b).sync()` ([`SyncPhases`]).
//!
//! Why this is sound: within a write phase, an element is written only by its owner; within a
//! read phase, nothing is written; within an atomic phase, every access is atomic; and the
//! phases are separated by barriers. For that last
//! step every thread of the block must pass the same barriers in the same order, so in a
//! kernel that uses these arrays the compiler refuses, at `cargo build`, any block barrier (a
//! `sync()`, or a plain `sync_threads()`, also inside helpers) that not every thread of the
//! block is sure to reach: one under a condition that depends on the thread (its index, data
//! it loaded), in a loop that threads may leave after different numbers of iterations, or
//! after a `return` that only some threads take. Conditions built from constants, scalar
//! parameters, slice lengths and block and grid indices and sizes are the same in every
//! thread of a block, and barriers under them are accepted.
//!
//! Why the split phase is sound. Between two barriers the block is in one split level with
//! one boundary `s` (a block-uniform value, so every thread has the same `s`). The accesses
//! of that interval are: writes, each to an element `i < s` that the writing thread owns
//! (element `i` belongs to linear thread `i % threads_per_block`, one owner per element);
//! reads of the writer's own elements through its `slot` (`*slot += ..`); and reads, by any
//! thread, of elements `i >= s`. Two accesses conflict only if they touch one element and one
//! of them writes. Two writes to one element come from its one owner, one thread, in program
//! order. A write (`i < s`) and another thread's read (`i >= s`) never touch one element. A
//! write and a read through the slot are the owner's own accesses, in program order. So no
//! two threads' accesses conflict inside a level; accesses of different levels (and of the
//! phases before and after) are ordered by the barrier of the `sync_split`/`sync` between
//! them, which every thread passes together (the barrier check above). The next level's rule
//! `s2 <= s` is not needed for that argument, which holds level by level; it is checked
//! (a constant `s2 > s` at `cargo build`, a run-time one stops the kernel with an error)
//! because a boundary that grows is not a tree: the new level would rewrite elements of
//! `[s, s2)` whose values the previous level has already consumed, which is a bug in the
//! loop that computes the boundaries rather than a reduction. A boundary is at most `N`
//! (checked the same way), so `above(k)` (element `s + k`, checked below `N`) cannot wrap.
//! Where a `sync_split` sets a constant boundary, the compiler knows it in the code that
//! follows in the same block (not across a loop's back edge), and those checks fold away.
//!
//! Elements. A 1-D array holds what a `SharedArray` holds: scalars, arrays and the module's
//! `#[repr(C)]` structs (`SharedWrite<[f32; 4], 64>` stages float4 bodies; `slot` is then a
//! `&mut [f32; 4]` and `tile[j]` a `[f32; 4]`, read as one 16-byte access where aligned).
//! 2-D tiles and the atomic phase take scalars.
//!
//! Ownership. In a [`SharedWrite<T, N>`] element `i` belongs to the thread whose linear index
//! in the block (`x + dim_x * (y + dim_y * z)`) is `i % threads_per_block`. In a
//! [`SharedWrite2d<T, R, C>`] element `[r][c]` belongs to thread `(c % dim_x, r % dim_y, 0)`;
//! threads with `z > 0` own none. Both hold for any block shape, so they need no launch
//! contract; a tile larger than the block gives each thread several elements (a 32 x 32 tile
//! filled by 32 x 8 threads: four rows each), a smaller one gives some threads none.
//!
//! A tree reduction with one barrier per level, as CUDA's `reduce4` writes it
//! (`if (tid < s) sdata[tid] = sum = sum + sdata[tid + s]; __syncthreads();`):
//!
//! ```
//! use cuprum::simt::{kernel, launch_contract, thread, DisjointSlice, SharedWrite};
//! use cuprum::{cuda_module, CudaContext, DeviceBuffer, LaunchConfig1D};
//!
//! #[cuda_module]
//! mod kernels {
//!     use super::*;
//!
//!     /// Each block's sum of its 256 elements, without `unsafe`.
//!     #[kernel]
//!     #[launch_contract(domain = 1, block = (256, 1, 1))]
//!     pub fn block_sums(x: &[u32], mut sums: DisjointSlice<u32>) {
//!         let i = thread::index_1d().get();
//!         let mut tile = SharedWrite::<u32, 256>::new();
//!         for (_, slot) in tile.mine() {
//!             *slot = if i < x.len() { x[i] } else { 0 };
//!         }
//!         let mut s = 128;
//!         let mut split = tile.sync_split(s); // one barrier: every element written
//!         while s > 0 {
//!             // This thread's element `k < s`, plus element `s + k` above the boundary.
//!             for (k, slot) in split.mine_below() {
//!                 let mine = *slot;
//!                 *slot = mine.wrapping_add(split.above(k));
//!             }
//!             s /= 2;
//!             split = split.sync_split(s); // one barrier per level
//!         }
//!         let total = split.get(0); // boundary 0: every element is above it
//!         if let Some(out) = sums.block_result_mut() {
//!             *out = total;
//!         }
//!     }
//! }
//!
//! # fn main() -> cuprum::Result<()> {
//! let x: Vec<u32> = (0..1000).collect();
//! let ctx = CudaContext::new(0)?;
//! let stream = ctx.default_stream();
//! let dx = DeviceBuffer::from_host(&stream, &x)?;
//! let mut sums = DeviceBuffer::zeroed(&stream, 4)?;
//! let module = kernels::load(&ctx)?;
//! let prepared = module.prepare_block_sums(LaunchConfig1D::new(4, 256, 0))?;
//! module.block_sums(&stream, &prepared, &dx, &mut sums)?;
//! let want: Vec<u32> = x.chunks(256).map(|c| c.iter().sum()).collect();
//! assert_eq!(sums.to_host_vec(&stream)?, want);
//! # Ok(())
//! # }
//! ```
//!
//! Each block's 128 elements reversed, through the write and read phases:
//!
//! ```
//! use cuprum::simt::{kernel, launch_contract, thread, DisjointSlice, SharedWrite};
//! use cuprum::{cuda_module, CudaContext, DeviceBuffer, LaunchConfig1D};
//!
//! #[cuda_module]
//! mod kernels {
//!     use super::*;
//!
//!     /// Reverses each block's 128 elements, without `unsafe`.
//!     #[kernel]
//!     #[launch_contract(domain = 1, block = (128, 1, 1))]
//!     pub fn reverse_blocks(x: &[u32], mut y: DisjointSlice<u32>) {
//!         let mut tile = SharedWrite::<u32, 128>::new();
//!         let i = thread::index_1d();
//!         for (_, slot) in tile.mine() {
//!             *slot = x[i.get()];
//!         }
//!         let tile = tile.sync();
//!         let t = thread::threadIdx_x() as usize;
//!         if let Some(out) = y.get_mut(i) {
//!             *out = tile[127 - t];
//!         }
//!     }
//! }
//!
//! # fn main() -> cuprum::Result<()> {
//! let x: Vec<u32> = (0..512).collect();
//! let ctx = CudaContext::new(0)?;
//! let stream = ctx.default_stream();
//! let dx = DeviceBuffer::from_host(&stream, &x)?;
//! let mut dy = DeviceBuffer::zeroed(&stream, x.len())?;
//! let module = kernels::load(&ctx)?;
//! let prepared = module.prepare_reverse_blocks(LaunchConfig1D::for_len(x.len(), 128))?;
//! module.reverse_blocks(&stream, &prepared, &dx, &mut dy)?;
//! let want: Vec<u32> = x.chunks(128).flat_map(|c| c.iter().rev().copied()).collect();
//! assert_eq!(dy.to_host_vec(&stream)?, want);
//! # Ok(())
//! # }
//! ```

use std::marker::PhantomData;

use super::shared::unreachable_on_host;

/// A block's shared array of `N` elements in its write phase: each thread reaches only the
/// elements it owns (element `i` is linear thread `i % threads_per_block`'s).
/// `let mut tile = SharedWrite::<f32, 256>::new();` declares one per kernel (the `let` is the
/// declaration). Its contents start undefined.
pub struct SharedWrite<T, const N: usize> {
    _elements: PhantomData<*mut [T; N]>,
}

/// The same array in its read phase: every thread reads any element; nobody writes.
pub struct SharedRead<T, const N: usize> {
    _elements: PhantomData<*mut [T; N]>,
}

/// A block's `R x C` shared tile (row-major) in its write phase: element `[r][c]` is thread
/// `(c % dim_x, r % dim_y, 0)`'s. `let mut tile = SharedWrite2d::<f32, 32, 33>::new();`
/// declares one per kernel; an extra column (33) is the usual padding against bank conflicts.
pub struct SharedWrite2d<T, const R: usize, const C: usize> {
    _elements: PhantomData<*mut [[T; C]; R]>,
}

/// The same tile in its read phase: every thread reads any element; nobody writes.
pub struct SharedRead2d<T, const R: usize, const C: usize> {
    _elements: PhantomData<*mut [[T; C]; R]>,
}

/// The elements a thread owns in a write phase, with their indices: `for (i, slot) in
/// tile.mine() { *slot = .. }`. Only for `for` loops in device code.
pub struct Mine<'a, T> {
    _tile: PhantomData<&'a mut T>,
}

impl<'a, T> Iterator for Mine<'a, T> {
    type Item = (usize, &'a mut T);
    fn next(&mut self) -> Option<Self::Item> {
        None
    }
}

/// The elements a thread owns in a 2-D write phase, with row and column: `for (r, c, slot) in
/// tile.mine() { *slot = .. }`. Only for `for` loops in device code.
pub struct Mine2d<'a, T> {
    _tile: PhantomData<&'a mut T>,
}

impl<'a, T> Iterator for Mine2d<'a, T> {
    type Item = (usize, usize, &'a mut T);
    fn next(&mut self) -> Option<Self::Item> {
        None
    }
}

impl<T: Copy, const N: usize> SharedWrite<T, N> {
    /// Declares the array, in its write phase.
    pub fn new() -> Self {
        Self {
            _elements: PhantomData,
        }
    }

    /// The elements this thread owns, `i = t, t + threads, t + 2 * threads, ..` below `N`
    /// (`t` its linear index in the block), each with a reference to write it or to read back
    /// what this thread wrote.
    pub fn mine(&mut self) -> Mine<'_, T> {
        Mine { _tile: PhantomData }
    }

    /// Element `w` for lane 0 of warp `w` of the block (when `w < N`), `None` for every other
    /// thread: where each warp leaves one partial result.
    pub fn warp_slot(&mut self) -> Option<&mut T> {
        None
    }

    /// The number of elements, `N`.
    pub const fn len(&self) -> usize {
        N
    }

    /// Whether `N` is zero.
    pub const fn is_empty(&self) -> bool {
        N == 0
    }

    /// Waits for the whole block (`__syncthreads`): every thread's writes are then visible,
    /// and the array is in its read phase.
    pub fn sync(self) -> SharedRead<T, N> {
        SharedRead {
            _elements: PhantomData,
        }
    }
}

impl<T: Copy, const N: usize> SharedWrite<T, N> {
    /// Waits for the whole block (`__syncthreads`): every thread's writes are then visible,
    /// and the array is in its split phase with boundary `s`: each thread writes its own
    /// elements below `s` and reads any element at or above `s`. `s` must be the same in every
    /// thread of the block (checked at `cargo build`) and at most `N` (checked: a larger `s`
    /// stops the kernel with an error).
    pub fn sync_split(self, s: usize) -> SharedSplit<T, N> {
        let _ = s;
        SharedSplit {
            _elements: PhantomData,
        }
    }

    /// Waits for the whole block; the array is then in its atomic phase.
    pub fn sync_atomic(self) -> SharedAtomic<T, N> {
        SharedAtomic {
            _elements: PhantomData,
        }
    }
}

impl<T: Copy, const N: usize> Default for SharedWrite<T, N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Copy, const N: usize> SharedRead<T, N> {
    /// Element `i` (bounds-checked: an index past `N` stops the kernel with an error).
    pub fn get(&self, i: usize) -> T {
        let _ = i;
        unreachable_on_host()
    }

    /// The number of elements, `N`.
    pub const fn len(&self) -> usize {
        N
    }

    /// Whether `N` is zero.
    pub const fn is_empty(&self) -> bool {
        N == 0
    }

    /// Waits for the whole block (`__syncthreads`): every thread has finished reading, and the
    /// array is in its write phase again (keeping its contents).
    pub fn sync(self) -> SharedWrite<T, N> {
        SharedWrite {
            _elements: PhantomData,
        }
    }
}

impl<T: Copy, const N: usize> SharedRead<T, N> {
    /// Waits for the whole block (every thread has finished reading); the array is then in
    /// its split phase with boundary `s`, keeping its contents (see
    /// [`SharedWrite::sync_split`]).
    pub fn sync_split(self, s: usize) -> SharedSplit<T, N> {
        let _ = s;
        SharedSplit {
            _elements: PhantomData,
        }
    }

    /// Waits for the whole block (every thread has finished reading); the array is then in
    /// its atomic phase, keeping its contents.
    pub fn sync_atomic(self) -> SharedAtomic<T, N> {
        SharedAtomic {
            _elements: PhantomData,
        }
    }
}

/// A block's shared array of `N` elements in its atomic phase: every thread updates any
/// element, through atomic read-modify-writes only (block scope). Each returns the element's
/// old value; an index past `N` stops the kernel with an error.
pub struct SharedAtomic<T, const N: usize> {
    _elements: PhantomData<*mut [T; N]>,
}

macro_rules! atomic_methods {
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

impl<T: Copy, const N: usize> SharedAtomic<T, N> {
    atomic_methods!(
        /// Adds `value` to element `i`.
        fetch_add,
        /// Subtracts `value` from element `i` (integers).
        fetch_sub,
        /// Element `i` becomes the smaller of it and `value` (integers).
        fetch_min,
        /// Element `i` becomes the larger of it and `value` (integers).
        fetch_max,
        /// Bitwise and (integers).
        fetch_and,
        /// Bitwise or (integers).
        fetch_or,
        /// Bitwise exclusive or (integers).
        fetch_xor,
        /// Element `i` becomes `value`.
        swap,
    );

    /// The number of elements, `N`.
    pub const fn len(&self) -> usize {
        N
    }

    /// Whether `N` is zero.
    pub const fn is_empty(&self) -> bool {
        N == 0
    }

    /// Waits for the whole block: every atomic is then done, and the array is in its read
    /// phase.
    pub fn sync(self) -> SharedRead<T, N> {
        SharedRead {
            _elements: PhantomData,
        }
    }
}

/// A block's shared array of `N` elements in its split phase with a boundary `s` (the same in
/// every thread): each thread writes only the elements it owns below `s`
/// ([`mine_below`](Self::mine_below)) and reads only elements at or above `s`
/// ([`above`](Self::above), `split[i]`). One level of a tree reduction; the module's docs
/// say why nothing races.
pub struct SharedSplit<T, const N: usize> {
    _elements: PhantomData<*mut [T; N]>,
}

impl<T: Copy, const N: usize> SharedSplit<T, N> {
    /// The elements this thread owns that lie below the boundary, `i = t, t + threads, ..`
    /// below `s`, each with a reference to write it or to read back what this thread wrote.
    /// Only for `for` loops in device code. It takes `&self` so that the loop's body may read
    /// above the boundary (`split.above(i)`) while it holds a slot: the two never meet (a slot
    /// is below the boundary, a read at or above it), and the compiler refuses a `mine_below()`
    /// loop nested in another over the same array.
    pub fn mine_below(&self) -> Mine<'_, T> {
        Mine { _tile: PhantomData }
    }

    /// Element `s + k`, the `k`-th at or above the boundary (checked: `s + k` past `N` stops
    /// the kernel with an error).
    pub fn above(&self, k: usize) -> T {
        let _ = k;
        unreachable_on_host()
    }

    /// Element `i`, which must be at or above the boundary (checked: `i < s` or `i >= N`
    /// stops the kernel with an error; a constant `i` below a constant `s` is refused at
    /// `cargo build`).
    pub fn get(&self, i: usize) -> T {
        let _ = i;
        unreachable_on_host()
    }

    /// The boundary `s`.
    pub fn boundary(&self) -> usize {
        unreachable_on_host()
    }

    /// The number of elements, `N`.
    pub const fn len(&self) -> usize {
        N
    }

    /// Whether `N` is zero.
    pub const fn is_empty(&self) -> bool {
        N == 0
    }

    /// Waits for the whole block (`__syncthreads`, one barrier): this level's writes are then
    /// visible, and the array is in the next level of its split phase, with boundary `s2`.
    /// `s2` must be the same in every thread (checked at `cargo build`) and at most the
    /// current boundary (checked: a larger one stops the kernel with an error, or is refused
    /// at `cargo build` when both are constants).
    pub fn sync_split(self, s2: usize) -> SharedSplit<T, N> {
        let _ = s2;
        SharedSplit {
            _elements: PhantomData,
        }
    }

    /// Waits for the whole block; the array is then in its read phase (every element, every
    /// thread).
    pub fn sync(self) -> SharedRead<T, N> {
        SharedRead {
            _elements: PhantomData,
        }
    }
}

/// `split[i]`: element `i`, which must be at or above the boundary (checked like
/// [`SharedSplit::get`]).
impl<T: Copy, const N: usize> std::ops::Index<usize> for SharedSplit<T, N> {
    type Output = T;
    fn index(&self, i: usize) -> &T {
        let _ = i;
        unreachable_on_host()
    }
}

/// `tile[i]`, bounds-checked like a slice.
impl<T: Copy, const N: usize> std::ops::Index<usize> for SharedRead<T, N> {
    type Output = T;
    fn index(&self, i: usize) -> &T {
        let _ = i;
        unreachable_on_host()
    }
}

impl<T: Copy, const R: usize, const C: usize> SharedWrite2d<T, R, C> {
    /// Declares the tile, in its write phase.
    pub fn new() -> Self {
        Self {
            _elements: PhantomData,
        }
    }

    /// The elements this thread `(x, y, 0)` owns: rows `y, y + dim_y, ..` below `R` times
    /// columns `x, x + dim_x, ..` below `C`, each with a reference.
    pub fn mine(&mut self) -> Mine2d<'_, T> {
        Mine2d { _tile: PhantomData }
    }

    /// The number of rows, `R`.
    pub const fn rows(&self) -> usize {
        R
    }

    /// The number of columns, `C`.
    pub const fn cols(&self) -> usize {
        C
    }

    /// Waits for the whole block; the tile is then in its read phase.
    pub fn sync(self) -> SharedRead2d<T, R, C> {
        SharedRead2d {
            _elements: PhantomData,
        }
    }
}

impl<T: Copy, const R: usize, const C: usize> Default for SharedWrite2d<T, R, C> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Copy, const R: usize, const C: usize> SharedRead2d<T, R, C> {
    /// Element `[r][c]` (bounds-checked).
    pub fn get(&self, r: usize, c: usize) -> T {
        let _ = (r, c);
        unreachable_on_host()
    }

    /// The number of rows, `R`.
    pub const fn rows(&self) -> usize {
        R
    }

    /// The number of columns, `C`.
    pub const fn cols(&self) -> usize {
        C
    }

    /// Waits for the whole block; the tile is then in its write phase again.
    pub fn sync(self) -> SharedWrite2d<T, R, C> {
        SharedWrite2d {
            _elements: PhantomData,
        }
    }
}

/// `tile[r][c]`, each index bounds-checked.
impl<T: Copy, const R: usize, const C: usize> std::ops::Index<usize> for SharedRead2d<T, R, C> {
    type Output = [T; C];
    fn index(&self, r: usize) -> &[T; C] {
        let _ = r;
        unreachable_on_host()
    }
}

mod sealed {
    pub trait Sealed {}
}

/// One of the phased shared arrays: what `sync()` turns it into.
pub trait Phased: sealed::Sealed {
    /// The array in its other phase.
    type Next;
}

impl<T, const N: usize> sealed::Sealed for SharedWrite<T, N> {}
impl<T, const N: usize> sealed::Sealed for SharedRead<T, N> {}
impl<T, const N: usize> sealed::Sealed for SharedAtomic<T, N> {}
impl<T, const N: usize> sealed::Sealed for SharedSplit<T, N> {}
impl<T, const R: usize, const C: usize> sealed::Sealed for SharedWrite2d<T, R, C> {}
impl<T, const R: usize, const C: usize> sealed::Sealed for SharedRead2d<T, R, C> {}

impl<T, const N: usize> Phased for SharedWrite<T, N> {
    type Next = SharedRead<T, N>;
}
impl<T, const N: usize> Phased for SharedRead<T, N> {
    type Next = SharedWrite<T, N>;
}
impl<T, const N: usize> Phased for SharedAtomic<T, N> {
    type Next = SharedRead<T, N>;
}
impl<T, const N: usize> Phased for SharedSplit<T, N> {
    type Next = SharedRead<T, N>;
}
impl<T, const R: usize, const C: usize> Phased for SharedWrite2d<T, R, C> {
    type Next = SharedRead2d<T, R, C>;
}
impl<T, const R: usize, const C: usize> Phased for SharedRead2d<T, R, C> {
    type Next = SharedWrite2d<T, R, C>;
}

/// Several phased arrays change phase at one barrier: `let (a, b) = (a, b).sync();`.
pub trait SyncPhases {
    /// The arrays in their other phases.
    type Next;
    /// One block barrier (`__syncthreads`) for all of them.
    fn sync(self) -> Self::Next;
}

impl<A: Phased, B: Phased> SyncPhases for (A, B) {
    type Next = (A::Next, B::Next);
    fn sync(self) -> Self::Next {
        unreachable_on_host()
    }
}

impl<A: Phased, B: Phased, C: Phased> SyncPhases for (A, B, C) {
    type Next = (A::Next, B::Next, C::Next);
    fn sync(self) -> Self::Next {
        unreachable_on_host()
    }
}
