//! Thread, block and grid indices, as device code reads them.
//!
//! The bodies here run only if host code calls them, which is meaningless: they return zero.
//! In a kernel, the compiler replaces each call with the hardware register it names.

/// The global 1-D index of the calling thread (`blockIdx.x * blockDim.x + threadIdx.x`).
///
/// Only [`index_1d`] makes one, which is what lets [`DisjointSlice`](super::DisjointSlice)
/// promise that threads write disjoint elements. As in CUDA it counts along `x` only, so it
/// identifies a thread only in a 1-D launch: `DisjointSlice::get_mut` accepts it in kernels
/// whose `#[launch_contract]` declares `domain = 1` and a block of `(n, 1, 1)` (a compile
/// error otherwise, naming the threads that would share an index).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThreadIndex1D {
    raw: usize,
}

impl ThreadIndex1D {
    /// The index as a `usize`, for indexing slices.
    pub fn get(self) -> usize {
        self.raw
    }

    /// Whether the index is below `len` (`self.get() < len`), as cuda-oxide spells it.
    pub fn in_bounds(self, len: usize) -> bool {
        self.get() < len
    }
}

/// The global 1-D index of the calling thread.
pub fn index_1d() -> ThreadIndex1D {
    ThreadIndex1D { raw: 0 }
}

/// The global 2-D index of the calling thread: `x` is the column
/// (`blockIdx.x * blockDim.x + threadIdx.x`), `y` the row, likewise. It identifies a thread
/// where the launch has one block and one thread along `z`: `get_mut_2d` accepts it in
/// kernels whose contract declares `domain` 1 or 2 and a block of 1 along `z`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThreadIndex2D {
    x: usize,
    y: usize,
}

impl ThreadIndex2D {
    /// The column.
    pub fn x(self) -> usize {
        self.x
    }
    /// The row.
    pub fn y(self) -> usize {
        self.y
    }
}

/// The global 2-D index of the calling thread.
///
/// With [`DisjointSlice::get_mut_2d`](super::DisjointSlice::get_mut_2d) it gives each thread
/// one element of a row-major matrix. A transpose, where thread (`x`, `y`) writes row `y`,
/// column `x` of the output:
///
/// ```
/// use cuprum::simt::{kernel, launch_contract, thread, DisjointSlice};
/// use cuprum::{cuda_module, CudaContext, DeviceBuffer, LaunchConfig};
///
/// #[cuda_module]
/// mod kernels {
///     use super::*;
///
///     #[kernel]
///     #[launch_contract(domain = 2, block = (16, 16, 1))]
///     pub fn transpose(a: &[i32], rows: usize, cols: usize, mut t: DisjointSlice<i32>) {
///         let idx = thread::index_2d();
///         // `t` is `cols` rows of `rows` elements: `None` unless x < rows and y < cols.
///         if let Some(out) = t.get_mut_2d(idx, rows) {
///             *out = a[idx.x() * cols + idx.y()];
///         }
///     }
/// }
///
/// # fn main() -> cuprum::Result<()> {
/// let (rows, cols) = (20usize, 35usize);
/// let a: Vec<i32> = (0..(rows * cols) as i32).collect();
/// let ctx = CudaContext::new(0)?;
/// let stream = ctx.default_stream();
/// let da = DeviceBuffer::from_host(&stream, &a)?;
/// let mut dt = DeviceBuffer::zeroed(&stream, rows * cols)?;
///
/// let module = kernels::load(&ctx)?;
/// let config = LaunchConfig {
///     grid_dim: ((rows as u32).div_ceil(16), (cols as u32).div_ceil(16), 1),
///     block_dim: (16, 16, 1),
///     shared_mem_bytes: 0,
/// };
/// let prepared = module.prepare_transpose(config)?;
/// module.transpose(&stream, &prepared, &da, rows, cols, &mut dt)?;
///
/// let t = dt.to_host_vec(&stream)?;
/// for r in 0..rows {
///     for c in 0..cols {
///         assert_eq!(t[c * rows + r], a[r * cols + c]);
///     }
/// }
/// # Ok(())
/// # }
/// ```
pub fn index_2d() -> ThreadIndex2D {
    ThreadIndex2D { x: 0, y: 0 }
}

/// cuda-oxide's row of the calling thread in a 2-D launch,
/// `blockIdx.y * blockDim.y + threadIdx.y` (`index_2d().y()`).
pub fn index_2d_row() -> usize {
    0
}

/// cuda-oxide's column of the calling thread in a 2-D launch,
/// `blockIdx.x * blockDim.x + threadIdx.x` (`index_2d().x()`).
pub fn index_2d_col() -> usize {
    0
}

/// The index space of a `DisjointSlice<T, Runtime2DIndex>`: rows of a width bound on the
/// host with [`RowWidth`](crate::RowWidth) (cuda-oxide's runtime-width 2-D space).
pub enum Runtime2DIndex {}

/// The calling thread's own index in the index space `S`, which only
/// [`index_2d_runtime`] makes: what `get_mut` of a `DisjointSlice<T, S>` takes.
#[derive(Debug)]
pub struct ThreadIndex<S> {
    row: usize,
    col: usize,
    space: std::marker::PhantomData<S>,
}

impl<S> Clone for ThreadIndex<S> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S> Copy for ThreadIndex<S> {}

impl<S> ThreadIndex<S> {
    /// The thread's row.
    pub fn row(self) -> usize {
        self.row
    }

    /// The thread's column.
    pub fn col(self) -> usize {
        self.col
    }
}

/// `Some(index)` when the calling thread's column (`index_2d_col()`) is below `slice`'s row
/// width: the index `slice.get_mut(index)` takes (element `row * width + col` of the width of
/// the slice it is used on). The index stands for the thread's own coordinates, whichever
/// slice made it, so it may be bound, put in tuples, chosen between and passed to helpers:
/// `if let Some(i) = thread::index_2d_runtime(&c) && let Some(x) = c.get_mut(i)`.
pub fn index_2d_runtime<T>(
    slice: &super::DisjointSlice<T, Runtime2DIndex>,
) -> Option<ThreadIndex<Runtime2DIndex>> {
    let _ = slice;
    None
}

/// cuda-oxide's launch context: what `#[kernel(launch_context = lc)]` binds in the kernel's
/// body under the name `lc`, and what [`index_1d_u32`] and [`coord_2d_u32`] take. Only the
/// kernel macro makes one.
#[derive(Clone, Copy, Debug)]
pub struct LaunchContext {
    _private: (),
}

impl LaunchContext {
    /// The context of the host copy of a kernel, which rustc type-checks and nothing runs.
    #[doc(hidden)]
    pub fn __host_copy() -> Self {
        Self { _private: () }
    }
}

/// The calling thread's global 1-D index as a `u32` (cuda-oxide's `ThreadIndex32`), from
/// [`index_1d_u32`]: what `DisjointSlice::element_thread32` and `tile_thread32` take.
#[derive(Clone, Copy, Debug)]
pub struct ThreadIndex32 {
    raw: u32,
}

impl ThreadIndex32 {
    /// The index, `blockIdx.x * blockDim.x + threadIdx.x` (its low 32 bits, should a launch
    /// have more threads: the elements a thread gets are computed from the exact index).
    pub fn get(self) -> u32 {
        self.raw
    }
}

/// The calling thread's global 2-D coordinates as `u32`s (cuda-oxide's `ThreadCoord2D32`),
/// from [`coord_2d_u32`]: what `tile_2d32` and `tile_2d32_rt` take.
#[derive(Clone, Copy, Debug)]
pub struct ThreadCoord2D32 {
    row: u32,
    col: u32,
}

impl ThreadCoord2D32 {
    /// The row, `blockIdx.y * blockDim.y + threadIdx.y`.
    pub fn row(self) -> u32 {
        self.row
    }

    /// The column, `blockIdx.x * blockDim.x + threadIdx.x`.
    pub fn col(self) -> u32 {
        self.col
    }
}

/// The calling thread's global 1-D index. The kernel needs a launch contract with
/// `domain = 1` (and `coordinates = u32`), which makes the index unique.
pub fn index_1d_u32(context: LaunchContext) -> ThreadIndex32 {
    let _ = context;
    ThreadIndex32 { raw: 0 }
}

/// The calling thread's global 2-D coordinates. The kernel needs a launch contract with
/// `domain = 2` (and `coordinates = u32`) and a block of 1 along `z`, which make them unique.
pub fn coord_2d_u32(context: LaunchContext) -> ThreadCoord2D32 {
    let _ = context;
    ThreadCoord2D32 { row: 0, col: 0 }
}

/// The global 3-D index of the calling thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThreadIndex3D {
    x: usize,
    y: usize,
    z: usize,
}

impl ThreadIndex3D {
    /// The fastest-varying coordinate.
    pub fn x(self) -> usize {
        self.x
    }
    /// The middle coordinate.
    pub fn y(self) -> usize {
        self.y
    }
    /// The slowest-varying coordinate.
    pub fn z(self) -> usize {
        self.z
    }
}

/// The global 3-D index of the calling thread.
pub fn index_3d() -> ThreadIndex3D {
    ThreadIndex3D { x: 0, y: 0, z: 0 }
}

/// The index of the calling thread's warp in a one-dimensional launch,
/// `blockIdx.x * ceil(blockDim.x / 32) + threadIdx.x / 32`, held by the warp's lane 0 only:
/// what [`warp_index`] gives, and the only index of a `DisjointSlice<T, WarpIndex>` (one
/// element per warp, as cuda-oxide's warp index space).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WarpIndex {
    index: usize,
}

impl WarpIndex {
    /// The warp's index as a `usize`.
    pub fn get(self) -> usize {
        self.index
    }
}

/// `Some(warp index)` in lane 0 of each warp when the grid and the blocks are
/// one-dimensional; `None` in every other lane and in 2-D or 3-D launches. Use it as
/// `if let Some(w) = thread::warp_index() && let Some(slot) = sums.get_mut(w) { .. }`.
pub fn warp_index() -> Option<WarpIndex> {
    None
}

macro_rules! registers {
    ($($(#[$doc:meta])* $name:ident),* $(,)?) => {
        $( $(#[$doc])* #[allow(non_snake_case)] pub fn $name() -> u32 { 0 } )*
    };
}

// The hardware registers under CUDA's names (cuda-oxide's too), one function each.
registers! {
    /// `threadIdx.x`: the thread's index in its block along `x`.
    threadIdx_x,
    /// `threadIdx.y`.
    threadIdx_y,
    /// `threadIdx.z`.
    threadIdx_z,
    /// `blockIdx.x`: the block's index in the grid along `x`.
    blockIdx_x,
    /// `blockIdx.y`.
    blockIdx_y,
    /// `blockIdx.z`.
    blockIdx_z,
    /// `blockDim.x`: threads per block along `x`.
    blockDim_x,
    /// `blockDim.y`.
    blockDim_y,
    /// `blockDim.z`.
    blockDim_z,
    /// `gridDim.x`: blocks in the grid along `x`.
    gridDim_x,
    /// `gridDim.y`.
    gridDim_y,
    /// `gridDim.z`.
    gridDim_z,
}

pub use super::sync_threads;

registers! {
    /// The lane of the calling thread within its warp, `0..32`.
    lane_id,
    /// The warp of the calling thread within its block (its linear thread index / 32).
    warp_id,
}
