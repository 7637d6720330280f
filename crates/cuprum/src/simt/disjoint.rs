//! `DisjointSlice`: the output of a safe kernel, and the patterns through which a thread
//! reaches the elements it owns.
//!
//! A safe kernel cannot race on its outputs because every element of a `DisjointSlice`
//! belongs to at most one thread of a launch. Each way of reaching elements below names, as a
//! function of the thread's position, a set of elements; the sets of two distinct threads
//! never meet, whatever the inputs and whatever launch configuration the kernel's
//! `#[launch_contract]` lets through `prepare_*`. The front end checks at `cargo build` what
//! makes that true (the rules live in `cuprum-front/src/lower/disjoint.rs`), and an output is
//! reached through **one** pattern with **one** set of extents in a kernel: mixing two (say
//! `get_mut(i)` and `chunk_mut::<4>(i)`, which give element 1 to threads 1 and 0) is refused.
//!
//! | pattern | the thread's elements | why no two threads share one |
//! |---|---|---|
//! | [`get_mut(i)`](DisjointSlice::get_mut), `get_mut_2d`, `get_mut_3d` | the one at its index | the index is unique under the contract; extents are launch-uniform and the linear index does not wrap |
//! | [`chunk_mut::<N>(i)`](DisjointSlice::chunk_mut) | `[N*i, N*i + N)` | `i` is unique, so the ranges `[N*i, N*i+N)` of distinct `i` are disjoint; `N` is a constant and `N*i + j` is computed without wrapping |
//! | [`grid_stride_mut()`](DisjointSlice::grid_stride_mut) | `t, t + s, t + 2s, ..` with `t` = `index_1d()`, `s` = the grid's thread count | distinct threads have distinct `t < s`, and each element `e` is reached only by the thread `t = e mod s`; `s` is read from the hardware, so it is the same in every thread |
//! | [`block_result_mut()`](DisjointSlice::block_result_mut) | element `b` (the block's linear index), in thread (0, 0, 0) of the block only | one thread per block is elected, and blocks have distinct linear indices (`x + gx * (y + gy * z)`, exact in 64 bits) |
//! | [`tile_mut::<TM, TN>(idx, width)`](DisjointSlice::tile_mut) | rows `[TM*y, TM*y+TM)` × columns `[TN*x, TN*x+TN)` of a row-major matrix `width` wide | `(x, y)` is unique under the contract, so the tiles are disjoint rectangles; columns past `width` are skipped (no spill into the next row), `width` is launch-uniform and the linear index does not wrap |
//! | [`block_tile_mut(rows, cols, width)`](DisjointSlice::block_tile_mut) | in block `b`'s `rows` × `cols` tile of a row-major matrix `width` wide (tiles numbered row-major, `ceil(width / cols)` per row), the elements at tile row `y + k * dim_y` and tile column `x + l * dim_x` for thread `(x, y, 0)`, handed out with those tile offsets | blocks have distinct linear indices, so distinct tiles; in a tile, element `(r, c)` is thread `(c mod dim_x, r mod dim_y, 0)`'s alone; the extents are launch-uniform, columns stay below `width` and elements below the length, so the linear index `row * width + col` is exact. Needs no contract |
//!
//! Every pattern hands out `&mut T`, so a thread may **read** its own elements as well as
//! write them: in-place updates (`*out = *out * a + b`, or [`update`](DisjointSlice::update))
//! need no second buffer. Reading any other element is refused: a `DisjointSlice` cannot be
//! indexed, and its elements are reached only through the patterns above. An element past the
//! end (a ragged tail) is simply not handed out.
//!
//! Chunks and tiles are unrolled; where the whole chunk or tile is in bounds, its elements are
//! stored without per-element checks, so consecutive aligned stores become vector stores.
//!
//! cuda-oxide's proof-carrying handles (`element_thread32`, `tile_thread32`, `tile_2d32`,
//! `tile_2d32_rt`: [`tiles`](super::tiles)) are these patterns again (`get_mut`, `chunk_mut`,
//! `tile_mut` with a constant or host-bound width), handed out only whole, under the same
//! rules; the runtime-width witnesses of [`thread::index_2d_runtime`](super::thread::index_2d_runtime)
//! are explained on `DisjointSlice<T, Runtime2DIndex>` below.

use std::marker::PhantomData;

use super::thread::{Runtime2DIndex, ThreadIndex, WarpIndex};
use super::{ThreadIndex1D, ThreadIndex2D, ThreadIndex3D};

/// An output slice each thread may touch only at its own index.
///
/// [`get_mut`](Self::get_mut) takes only a [`ThreadIndex1D`] (from [`thread::index_1d`](crate::simt::thread::index_1d)), which
/// no code can make up, so two threads can never write the same element; the out-of-bounds
/// case is a `None`, not a memory error. On the host, a kernel takes it as
/// `&mut DeviceBuffer<T>`.
///
/// What makes the promise hold, checked when the kernel is compiled: an N-D thread index is
/// accepted only where the kernel's launch contract makes it unique (`domain <= N`, a block of
/// 1 along the axes past N), the extents of [`get_mut_2d`](Self::get_mut_2d) and
/// [`get_mut_3d`](Self::get_mut_3d) are the same in every thread and at every access of the
/// slice, and the linear index is computed without wrapping.
///
/// A thread may read the element it got as well as write it, so `y = a * x + y` needs no
/// second buffer:
///
/// ```
/// use cuprum::simt::{kernel, launch_contract, thread, DisjointSlice};
/// use cuprum::{cuda_module, CudaContext, DeviceBuffer, LaunchConfig1D};
///
/// #[cuda_module]
/// mod kernels {
///     use super::*;
///
///     #[kernel]
///     #[launch_contract(domain = 1, block = (64, 1, 1))]
///     pub fn saxpy(a: f32, x: &[f32], mut y: DisjointSlice<f32>) {
///         let i = thread::index_1d();
///         if let Some(out) = y.get_mut(i) {
///             *out = a * x[i.get()] + *out;
///         }
///     }
/// }
///
/// # fn main() -> cuprum::Result<()> {
/// let ctx = CudaContext::new(0)?; // the emulator when there is no GPU
/// let stream = ctx.default_stream();
/// let x: Vec<f32> = (0..100).map(|i| i as f32).collect();
/// let y: Vec<f32> = (0..100).map(|i| 0.5 * i as f32).collect();
/// let dx = DeviceBuffer::from_host(&stream, &x)?;
/// let mut dy = DeviceBuffer::from_host(&stream, &y)?;
///
/// let module = kernels::load(&ctx)?;
/// // Two blocks of 64 threads: the last 28 threads get `None` and write nothing.
/// let prepared = module.prepare_saxpy(LaunchConfig1D::for_len(x.len(), 64))?;
/// module.saxpy(&stream, &prepared, 3.0, &dx, &mut dy)?;
///
/// let want: Vec<f32> = x.iter().zip(&y).map(|(x, y)| 3.0 * x + y).collect();
/// assert_eq!(dy.to_host_vec(&stream)?, want);
/// # Ok(())
/// # }
/// ```
pub struct DisjointSlice<T, Space = Linear> {
    _elements: PhantomData<(*mut T, Space)>,
}

/// The default index space of a [`DisjointSlice`]: a thread reaches elements through its own
/// thread index (`get_mut(thread::index_1d())` and the 2-D and 3-D forms) and the output
/// patterns.
pub enum Linear {}

/// A `DisjointSlice<T, WarpIndex>` holds one element per warp (cuda-oxide's warp index
/// space): lane 0 of each warp of a one-dimensional launch reaches element
/// `blockIdx.x * ceil(blockDim.x / 32) + threadIdx.x / 32` through
/// [`thread::warp_index`](crate::simt::thread::warp_index), and no other thread reaches any.
/// Distinct warps have distinct indices, so each element is one thread's.
impl<T> DisjointSlice<T, WarpIndex> {
    /// The element of the calling warp, or `None` past the end.
    pub fn get_mut(&mut self, warp: WarpIndex) -> Option<&mut T> {
        let _ = warp;
        None
    }
}

/// A `DisjointSlice<T, Runtime2DIndex>` (cuda-oxide's runtime-width 2-D index space) is
/// rows of a width the host binds with [`RowWidth::new(&mut buffer, width)`](crate::RowWidth):
/// thread `(row, col)` of the launch (`thread::index_2d_row()`, `thread::index_2d_col()`)
/// reaches element `row * width + col` when `col < width`, through the index
/// [`thread::index_2d_runtime`](crate::simt::thread::index_2d_runtime) gives it. Threads with
/// distinct coordinates reach distinct elements, which is why a launch contract (or, without
/// one, the `unsafe` launch's caller) must keep the grid and the block to one layer along `z`.
///
/// Why any witness may address any slice of the space, however it was obtained: a
/// `ThreadIndex<Runtime2DIndex>` stands for the calling thread's own global `(row, col)`,
/// read from the hardware, and nothing else (only `index_2d_runtime` makes one; the slice it
/// was made from decides only whether it exists, `col` below *that* slice's width). So the
/// witness may be bound to a variable, put in a tuple, matched by
/// `if let (Some(wa), Some(wb)) = (wa, wb)`, chosen at run time (`if c { wa } else { wb }`:
/// both are the same coordinates, and the compiler reads them again after the choice) and
/// passed by value with the slice to a helper. `get_mut` resolves the coordinates against the
/// width of the slice it is **called on**, checking `col < width` and the length there: with
/// that one width fixed for the launch, `(row, col) -> row * width + col` is injective on
/// `col < width`, so distinct threads (distinct coordinates, one layer along `z`) get
/// distinct elements of that slice, whichever slice made the witness. Flat indices made from
/// the minting slices' widths would not be: thread (1, 0) flattened by a width of 5 and
/// thread (0, 5) flattened by a width of 100 both give element 5.
impl<T> DisjointSlice<T, Runtime2DIndex> {
    /// The element of the calling thread, or `None` where its column is not below this
    /// slice's width or the element is past the end.
    pub fn get_mut(&mut self, index: ThreadIndex<Runtime2DIndex>) -> Option<&mut T> {
        let _ = index;
        None
    }

    /// The row width the host bound with `RowWidth::new(&mut buffer, width)`.
    pub fn row_width(&self) -> u32 {
        0
    }
}

impl<T> DisjointSlice<T> {
    /// Element `index` of the slice, whichever thread owns it (cuda-oxide's escape hatch).
    /// The index is still checked against the length on the device: a failed check stops the
    /// kernel with a typed error.
    ///
    /// # Safety
    ///
    /// Nothing checks that no other thread reads or writes the element while this thread
    /// holds the reference: the caller must rule out every race, as with `&mut [T]` in an
    /// `unsafe` kernel.
    pub unsafe fn get_unchecked_mut(&mut self, index: usize) -> &mut T {
        let _ = index;
        crate::simt::shared::unreachable_on_host()
    }

    /// Element `index` of the slice, read-only (see
    /// [`get_unchecked_mut`](Self::get_unchecked_mut)).
    ///
    /// # Safety
    ///
    /// No other thread may write the element while this thread reads it.
    pub unsafe fn get_unchecked(&self, index: usize) -> &T {
        let _ = index;
        crate::simt::shared::unreachable_on_host()
    }

    /// The element of the calling thread, or `None` past the end.
    pub fn get_mut(&mut self, index: ThreadIndex1D) -> Option<&mut T> {
        let _ = index;
        None
    }

    /// The element at (`index.x()`, `index.y()`) of a row-major matrix `width` elements wide,
    /// or `None` when the column is past `width` or the element past the end (computed
    /// exactly: `y * width + x` never wraps). Distinct threads still get distinct elements:
    /// `width` must be the same in every thread of the launch (built from the kernel's scalar
    /// parameters, constants, slice lengths and block/grid sizes, not from thread indices or
    /// memory), and every access of one slice in a kernel must use the same width; both are
    /// checked at `cargo build`.
    pub fn get_mut_2d(&mut self, index: ThreadIndex2D, width: usize) -> Option<&mut T> {
        let _ = (index, width);
        None
    }

    /// The element at (`x`, `y`, `z`) of a `width` × `height` × depth array, `x` fastest, or
    /// `None` when `x >= width`, `y >= height` or the element is past the end; the extents
    /// follow the rules of [`get_mut_2d`](Self::get_mut_2d).
    pub fn get_mut_3d(
        &mut self,
        index: ThreadIndex3D,
        width: usize,
        height: usize,
    ) -> Option<&mut T> {
        let _ = (index, width, height);
        None
    }

    /// The `N` consecutive elements `[N*i, N*i + N)` of the calling thread (`i` from
    /// [`thread::index_1d`](super::thread::index_1d)), as `(j, element)` for `j` in `0..N`
    /// (the offset within the chunk; element `N*i + j`). Elements past the end are skipped, so
    /// the last thread may get fewer than `N` (a ragged tail) and later ones none.
    ///
    /// Written as `for (j, out) in y.chunk_mut::<4>(i) { .. }`; `N` is a constant (a literal,
    /// a `const` or a const parameter) of at most 64, and the loop is unrolled: `j` is a
    /// constant in each copy, so it may index local arrays kept in registers. A chunk wholly
    /// in bounds is stored without per-element checks (vector stores where aligned). Threads
    /// own disjoint chunks because `i` is unique under the launch contract (the rules of
    /// [`get_mut`](Self::get_mut)); `break` and `continue` are not allowed in the body.
    pub fn chunk_mut<const N: usize>(
        &mut self,
        index: ThreadIndex1D,
    ) -> impl Iterator<Item = (usize, &mut T)> + '_ {
        let _ = index;
        std::iter::empty()
    }

    /// The calling thread's elements of a grid-stride loop, as `(index, element)`: indices
    /// `t, t + s, t + 2s, ..` below `len()`, where `t` is
    /// [`thread::index_1d`](super::thread::index_1d) and `s` is the number of threads in the
    /// grid (`gridDim_x() * blockDim_x()`). So a fixed-size grid covers any length.
    ///
    /// Threads `t != t'` (both below `s`) never meet: every element `e` is reached only by the
    /// thread `t = e mod s`. The index `t` must be unique under the launch contract (the rules
    /// of [`get_mut`](Self::get_mut)); `s` comes from the hardware, the same in every thread.
    /// `break` and `continue` work as in any loop.
    pub fn grid_stride_mut(&mut self) -> impl Iterator<Item = (usize, &mut T)> + '_ {
        std::iter::empty()
    }

    /// The block's result: `Some` in the block's first thread (`thread_idx` (0, 0, 0)) only,
    /// for the element at the block's linear index
    /// (`blockIdx_x + gridDim_x * (blockIdx_y + gridDim_y * blockIdx_z)`), and `None`
    /// in every other thread or when that element is past the end.
    ///
    /// Written as `if let Some(out) = sums.block_result_mut() { *out = .. }`, typically after a
    /// reduction in shared memory and a [`sync_threads`](super::sync_threads). One thread per
    /// block is elected and blocks have distinct indices, so any launch is safe.
    pub fn block_result_mut(&mut self) -> Option<&mut T> {
        None
    }

    /// The calling thread's `TM` × `TN` tile of a row-major matrix `width` elements wide, as
    /// `(r, c, element)` for the element at row `TM * index.y() + r`, column
    /// `TN * index.x() + c`. Elements whose column is at or past `width`, or which lie past the
    /// end, are skipped (ragged edges).
    ///
    /// Written as `for (r, c, out) in m.tile_mut::<4, 4>(thread::index_2d(), width) { .. }`;
    /// `TM` and `TN` are constants with `TM * TN <= 64`, and the loop is unrolled, so `r` and
    /// `c` are constants in each copy (a register-blocked accumulator `acc[r][c]` stays in
    /// registers). Distinct threads own disjoint rectangles: the 2-D index is unique under
    /// the contract and `width` is launch-uniform (the rules of
    /// [`get_mut_2d`](Self::get_mut_2d)); `break` and `continue` are not allowed in the body.
    pub fn tile_mut<const TM: usize, const TN: usize>(
        &mut self,
        index: ThreadIndex2D,
        width: usize,
    ) -> impl Iterator<Item = (usize, usize, &mut T)> + '_ {
        let _ = (index, width);
        std::iter::empty()
    }

    /// The calling thread's elements of its block's tile: the matrix (row-major, `width`
    /// wide) is cut into `tile_rows` × `tile_cols` tiles numbered row-major
    /// (`ceil(width / tile_cols)` per row of tiles), block `b` (its linear index
    /// `x + gx * (y + gy * z)`) takes tile `b`, and in the tile thread `(x, y, 0)` takes the
    /// elements at tile rows `y, y + dim_y, ..` and tile columns `x, x + dim_x, ..` (threads
    /// with `z > 0` take none), as `(r, c, element)` with `r` and `c` the element's row and
    /// column in the tile (its matrix row is the tile's first row plus `r`; under a launch
    /// contract the compiler knows `r < tile_rows` and `c < tile_cols`, so indexing a shared
    /// tile with them needs no run-time check). Columns at or past `width` and elements past
    /// the end are skipped.
    ///
    /// This is how CUDA kernels write a block's output with coalesced stores: a transpose's
    /// 32 × 32 tile from 32 × 8 threads (four rows each), a row of a softmax per block
    /// (`block_tile_mut(1, cols, cols)` in a 1-D grid of one block per row), a convolution's
    /// several results per thread. Written as `for (r, c, out) in
    /// y.block_tile_mut(tile_rows, tile_cols, width) { .. }`; the three extents must be
    /// launch-uniform, and `break` and `continue` are not allowed in the body. It needs no
    /// launch contract.
    pub fn block_tile_mut(
        &mut self,
        tile_rows: usize,
        tile_cols: usize,
        width: usize,
    ) -> impl Iterator<Item = (usize, usize, &mut T)> + '_ {
        let _ = (tile_rows, tile_cols, width);
        std::iter::empty()
    }

    /// Replaces the calling thread's element with `f` of it, when it exists:
    /// `y.update(i, |v| v * a + b)` is `if let Some(v) = y.get_mut(i) { *v = *v * a + b }`.
    /// `f` must be a closure literal with one parameter.
    pub fn update(&mut self, index: ThreadIndex1D, f: impl FnOnce(T) -> T)
    where
        T: Copy,
    {
        let _ = (index, f);
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        0
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        true
    }
}
