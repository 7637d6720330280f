//! The tile lowering: a specialized tile kernel (`cuprum-tile-ir`) becomes an ordinary kernel
//! of the kernel IR (`cuprum-ir`), which the optimizer, the PTX writer, the emulator and the
//! compile cache then take like any other kernel.
//!
//! The lowering chooses the block size, assigns every tile a layout (which thread holds
//! which elements in which registers) and emits per-thread code. It never depends on the
//! tile interpreter: tests compare the two.
//!
//! # The launch contract ([`Lowered`])
//!
//! A lowered kernel is launched with thread blocks of exactly [`Lowered::block_threads`]
//! threads (along `x`; the kernel declares it as its required block shape, so any other
//! block is refused), [`Lowered::shared_bytes`] of dynamic shared memory, and the grid
//! [`BlockCount::grid`] gives for the tile grid the tile IR's semantics give: for most
//! kernels ([`BlockCount::PerTile`]) that grid itself (tile block `(x, y, z)` is grid block
//! `(x, y, z)`: `BlockId(a)` reads `blockIdx` along axis `a`, and the tile a block owns of a
//! partitioned tensor is at its block index along each tensor axis); for a persistent one
//! ([`BlockCount::Persistent`], the Hopper GEMM recipe) one block per multiprocessor, each
//! looping over tile blocks, which it deals itself from the partitioned tensor's sizes. Its kernel IR parameters
//! are, in order, [`Lowered::args`]: the host passes each slot's value:
//!
//! * [`ArgSlot::TensorData`]: a slice parameter (`&[T]` for a read-only tensor, read-write
//!   for a partitioned one) over the tensor's whole allocation (its base is the allocation's
//!   start, so it is 16-byte aligned as the kernel IR requires);
//! * [`ArgSlot::TensorOffset`]: `I64`, the element offset of the tensor's first element in
//!   that allocation (views made by `reshape`, `permute` or slicing start anywhere);
//! * [`ArgSlot::TensorDim`]: `I64`, the tensor's size along one axis (for a read-only tensor
//!   with a static size, the kernel uses the static size: the host checks they agree);
//! * [`ArgSlot::TensorStride`]: `I64`, its stride along one axis, in elements;
//! * [`ArgSlot::Scalar`]: the scalar parameter, of its element type.
//!
//! Every tensor parameter has all its slots (data, offset, one size and one stride per
//! axis), in that order, whether the kernel reads them or not. Strides may be anything
//! (negative, zero, overlapping views of a read-only tensor); the elements the kernel
//! touches must lie in the allocation. A failed assertion, a zero integer divisor (or a
//! signed `MIN / -1`) and a `for` loop whose step is not positive trap the launch
//! (`Stmt::Trap`, with the assertion's message).
//!
//! # What the lowering does
//!
//! * **Block size.** One warp per 256 elements of the kernel's largest tile, a power of two
//!   from 1 to 8 (more, up to 32, only where a tile would not fit in the registers of 8,
//!   as its layout pads it); [`LowerOptions::num_warps`] overrides it, and
//!   [`LowerOptions::occupancy`] asks the PTX compiler to fit that many blocks per
//!   multiprocessor.
//! * **Layouts** ([`layout`]): Triton's blocked and slice layouts. Loads and stores use the
//!   coalesced blocked layout of their tile (16 bytes per thread along the last axis);
//!   element-wise operations keep their operands' layouts, reductions give slice layouts,
//!   permutations and reshapes that insert or remove axes of size 1 are free, and a slice
//!   reshaped and broadcast back to its parent stays in registers (a row softmax reads each
//!   row once). Other layout changes (general reshapes, transposes at a store, broadcasts of
//!   columns) go through shared memory. Rank-0 tiles, constants and broadcasts of scalars
//!   are one value every thread holds; iotas are computed where they are used.
//! * **Memory.** Each load and store has a fast path for tiles wholly inside the tensor,
//!   with 16-byte vector accesses where the tensor's last stride is 1 and its offset and
//!   other strides keep runs aligned (checked at run time, once per access), and a
//!   predicated path for edge tiles: outside elements read the padding value, stores drop
//!   them. Each element is stored once, by its owner. What a launch knows of its tensors
//!   ([`TensorFacts`], part of the specialization key, as Triton and cuTile specialize on
//!   contiguity and divisibility) removes the alignment test, and the edge path of accesses
//!   whose tile extents divide the tensor's sizes.
//! * **Reductions**: in each thread, then `shfl.xor` across the lanes of the axis, then
//!   shared memory across warps; every thread of a line gets the same bits (for a reduce
//!   closure, as long as it is commutative, as the tile IR requires: a rank-0 result that
//!   differed between threads would make control flow on it diverge).
//! * **Control flow** is uniform over the block (conditions are rank-0 tiles, which every
//!   thread holds): `If` and the loops become kernel IR `If` and `Loop`, carried values live
//!   in variables (one per register). Prints run in thread 0 of each block.
//!
//! # Limits
//!
//! Tile dimensions may be any positive size, not only powers of two (a ragged tile clamps
//! its last registers onto real elements). A tile may hold at most 128 32-bit words per
//! thread (`f64` and `i64` elements count twice) in its layout, which rounds ragged axes up
//! (a `[100, 300]` tile takes the registers of `[128, 512]`): 32768 `f32` elements at 8
//! warps, 131072 at 32; a tile moved between layouts through shared memory may be at most
//! 227 KiB. Larger
//! tiles are refused with [`LowerError::Unsupported`]; so are reduce closures that do more
//! than combine two scalars (loads, reductions, stores, prints), reductions of `bool` tiles
//! other than by closures, and operations the kernel IR does not have for an element type.
//! `mma` is lowered by a portable recipe (`emit::matmul`): `mma.sync` on fragment layouts
//! (`mma_layout`) for `f16`/`bf16`, operands read with `ldmatrix` from shared memory; fused
//! multiply-add chains over staged operands for `f32`/`f64`; exact, not fast. On a device of
//! compute capability 9.0 ([`LowerOptions::compute_capability`]) a kernel in the shape of a
//! GEMM (a K loop of two tile loads and one `mma`, its result stored as the block's tile) is
//! emitted whole by the Hopper recipe (`emit::wgmma_gemm`: TMA into a ring of swizzled
//! stages, mbarriers, a producer warpgroup and one or two `wgmma` consumer warpgroups, tiles
//! in a grouped order), bit for bit the same sums; its operands then travel as
//! [`ArgSlot::TensorMap`]s. A rank-3 `mma` gives the warps its result's 16x8 blocks
//! leave over to the batch axis (as many as divide the tile's batches), so each warp holds
//! the fragments of its own batches only; beyond that, warps hold copies.
//!
//! Sub-tile stores (`Stmt::StorePart`, the source's `partition_mut(..).store(t, index)`)
//! are stores like any other, at the sub-tile's place in the own tile, with the elements
//! outside the own tile dropped as well as those outside the tensor; their vector accesses
//! need the own tile's last size to keep runs aligned (else they are scalar).

#![warn(missing_docs)]

mod block_order;
mod emit;
mod evict;
mod facts;
pub mod layout;
mod mma_chains;
mod mma_layout;
mod plan;
mod staging;

pub use facts::{TensorFacts, access_extents};

use cuprum_tile_ir::{TileKernel, validate_kernel};

/// What one kernel IR parameter of a lowered kernel carries (see the crate docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgSlot {
    /// The allocation holding tile parameter `param`'s elements.
    TensorData {
        /// The tile kernel's parameter index.
        param: u32,
    },
    /// The element offset of tensor `param`'s first element in its allocation.
    TensorOffset {
        /// The tile kernel's parameter index.
        param: u32,
    },
    /// The size of tensor `param` along `axis`.
    TensorDim {
        /// The tile kernel's parameter index.
        param: u32,
        /// The axis.
        axis: u32,
    },
    /// The stride of tensor `param` along `axis`, in elements.
    TensorStride {
        /// The tile kernel's parameter index.
        param: u32,
        /// The axis.
        axis: u32,
    },
    /// Scalar parameter `param`.
    Scalar {
        /// The tile kernel's parameter index.
        param: u32,
    },
    /// A tensor map (`cuprum_ir::ParamKind::TensorMap`) of tensor `param` (rank 2 to 5) for
    /// the tensor memory accelerator: its sizes and strides (the last axis innermost,
    /// contiguous), its first element, out-of-bounds elements read as zero, copied in boxes
    /// of `box_dims` elements along the two innermost axes (innermost first) and one along
    /// every other, laid out in shared memory under `swizzle`: [`slot_tensor_map`]. Only
    /// kernels lowered for sm_90 with [`TensorFacts::tensor_map`] known for `param` have
    /// one.
    TensorMap {
        /// The tile kernel's parameter index.
        param: u32,
        /// The box, innermost dimension first.
        box_dims: [u32; 2],
        /// The box's shared-memory layout.
        swizzle: cuprum_ir::Swizzle,
    },
}

impl ArgSlot {
    /// The tile kernel parameter the slot carries (part of).
    pub fn param(&self) -> u32 {
        match *self {
            ArgSlot::TensorData { param }
            | ArgSlot::TensorOffset { param }
            | ArgSlot::TensorDim { param, .. }
            | ArgSlot::TensorStride { param, .. }
            | ArgSlot::Scalar { param }
            | ArgSlot::TensorMap { param, .. } => param,
        }
    }
}

/// The tensor map an [`ArgSlot::TensorMap`] with `box_dims` and `swizzle` asks for, of a
/// tensor of `elem` whose element `(0, .., 0)` is at `address`, of `shape` and `strides`
/// (in elements, in the tensor's axis order): its axes innermost first, its byte strides,
/// the box as the slot says, zero fill. The one definition every launcher encodes (after
/// `cuprum_ir::TensorMapDesc::check`); `None` where the rank is not 2 to 5 or `shape` and
/// `strides` differ in length.
pub fn slot_tensor_map(
    elem: cuprum_ir::ScalarType,
    address: u64,
    shape: &[u64],
    strides: &[u64],
    box_dims: [u32; 2],
    swizzle: cuprum_ir::Swizzle,
) -> Option<cuprum_ir::TensorMapDesc> {
    let rank = shape.len();
    if !(2..=cuprum_ir::tma::MAX_RANK).contains(&rank) || strides.len() != rank {
        return None;
    }
    let size = u64::from(elem.size_bytes());
    let mut desc = cuprum_ir::TensorMapDesc::new(elem, rank, address);
    for d in 0..rank {
        desc.dims[d] = shape[rank - 1 - d];
        if d > 0 {
            desc.strides[d - 1] = strides[rank - 1 - d].saturating_mul(size);
        }
    }
    desc.box_dims[..2].copy_from_slice(&box_dims);
    desc.swizzle = swizzle;
    desc.oob_fill = cuprum_ir::OobFill::Zero;
    Some(desc)
}

/// The most tile blocks a launch of a persistent kernel ([`BlockCount::Persistent`]) may
/// have: `i32::MAX`, so that its 32-bit tile index and the next one a block takes never wrap.
pub const MAX_PERSISTENT_TILE_BLOCKS: u64 = i32::MAX as u64;

/// How many thread blocks a launch of a lowered kernel runs (see the crate docs): the one
/// definition of a lowered kernel's launch grid, which every launcher asks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BlockCount {
    /// One thread block per tile block, at the tile block's place in the grid.
    #[default]
    PerTile,
    /// A persistent kernel: at most `per_multiprocessor` thread blocks per multiprocessor
    /// (never more than the tile blocks), along `x`; the kernel deals the tile blocks to its
    /// thread blocks itself.
    Persistent {
        /// Thread blocks per multiprocessor.
        per_multiprocessor: u32,
        /// Thread blocks per cluster along `x` (the kernel's `cluster`; 1 without one):
        /// the grid is made of whole clusters, and each cluster takes this many tile blocks
        /// at a time.
        cluster_blocks: u32,
    },
}

/// A tile kernel lowered to the kernel IR, with how to launch it.
#[derive(Clone, Debug, PartialEq)]
pub struct Lowered {
    /// The kernel, named as the tile kernel. It is what the lowering emits, valid but not
    /// yet optimized: run `cuprum_opt::optimize_kernel` on it, as on every kernel.
    pub kernel: cuprum_ir::Kernel,
    /// Threads per thread block, along `x` (one thread block per tile block): the layouts'
    /// warps, and a producer warpgroup's 128 where one copies a loop's tiles
    /// (`emit::producer`). The kernel declares it as its exact block shape (`Kernel::block`).
    pub block_threads: u32,
    /// Bytes of dynamic shared memory per block (0 when the kernel needs none; above 48 KiB
    /// a GPU launch must opt in, which the runtime does).
    pub shared_bytes: u32,
    /// What each of the kernel's parameters carries, in order.
    pub args: Vec<ArgSlot>,
    /// How many thread blocks a launch runs ([`BlockCount::grid`]).
    pub blocks: BlockCount,
}

impl std::fmt::Display for BlockCount {
    /// How `print_ir` and the like describe the grid: `one block per tile block`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BlockCount::PerTile => write!(f, "one block per tile block"),
            BlockCount::Persistent {
                per_multiprocessor,
                cluster_blocks,
            } => {
                write!(
                    f,
                    "persistent: {per_multiprocessor} block(s) per multiprocessor, looping over the tile blocks"
                )?;
                if *cluster_blocks > 1 {
                    write!(f, ", in clusters of {cluster_blocks} blocks")?;
                }
                Ok(())
            }
        }
    }
}

impl BlockCount {
    /// The grid to launch for a launch whose tile grid (`cuprum_tile_ir::grid_of`) is
    /// `tiles`, on a device of `multiprocessors` multiprocessors: `tiles` itself, or for a
    /// persistent kernel as many blocks along `x` as the device holds at once, at most one
    /// per tile block (none when there is no tile block), in whole clusters: as many
    /// clusters as the resident blocks make, at most one per `cluster_blocks` tile blocks
    /// (at least one cluster when there is a tile block). `None`: a persistent kernel
    /// counts its tile blocks in 32-bit arithmetic, and `tiles` has more than
    /// [`MAX_PERSISTENT_TILE_BLOCKS`].
    pub fn grid(self, tiles: [u32; 3], multiprocessors: u32) -> Option<[u32; 3]> {
        match self {
            BlockCount::PerTile => Some(tiles),
            BlockCount::Persistent {
                per_multiprocessor,
                cluster_blocks,
            } => {
                let all: u64 = tiles.iter().map(|&n| u64::from(n)).product();
                if all > MAX_PERSISTENT_TILE_BLOCKS {
                    return None;
                }
                let cluster = u64::from(cluster_blocks.max(1));
                let resident =
                    u64::from(multiprocessors.max(1)) * u64::from(per_multiprocessor.max(1));
                let clusters = (resident / cluster).max(1).min(all.div_ceil(cluster));
                // At most `MAX_PERSISTENT_TILE_BLOCKS` plus one cluster, so a `u32`.
                let blocks = u32::try_from(clusters * cluster).ok()?;
                Some([blocks, 1, 1])
            }
        }
    }
}

/// Why a tile kernel cannot be lowered.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LowerError {
    /// The kernel still has generic parameters: specialize it first.
    #[error("tile kernel `{0}` is generic: specialize it before lowering")]
    Generic(String),
    /// A construct the lowering does not handle (yet), or a tile too large for one block.
    #[error("tile kernel `{kernel}`: {message}")]
    Unsupported {
        /// The kernel.
        kernel: String,
        /// What is not supported, and what to do instead.
        message: String,
    },
    /// The kernel breaks a rule of the tile IR (a front-end bug: it builds valid kernels).
    #[error(transparent)]
    Invalid(#[from] cuprum_tile_ir::TileValidationError),
    /// A bug in the lowering: the kernel should have lowered.
    #[error("tile kernel `{kernel}`: internal error in the tile lowering: {message}")]
    Internal {
        /// The kernel.
        kernel: String,
        /// What went wrong.
        message: String,
    },
}

/// Choices a caller may make about a lowering; [`LowerOptions::default`] lets the lowering
/// choose everything. Part of the specialization key when set.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct LowerOptions {
    /// Warps per block (a power of two from 1 to 32) instead of the lowering's choice (see
    /// the crate docs).
    pub num_warps: Option<u32>,
    /// Blocks that should fit on one multiprocessor at once (1 to
    /// [`MAX_OCCUPANCY`]; cuTile's `occupancy` hint): the kernel declares it
    /// (`.minnctapersm`), so that the PTX compiler keeps its registers within what that many
    /// blocks leave each thread; more blocks than 2048 threads allow count as that many. It
    /// changes no result.
    pub occupancy: Option<u32>,
    /// Per parameter, what the launch knows of its tensor (see [`TensorFacts`]); missing
    /// entries know nothing. The kernel is then only for tensors with these facts.
    pub tensor_facts: Vec<TensorFacts>,
    /// The compute capability of the device the kernel is for (`(9, 0)` for an H100/H200
    /// or the emulator): with 9.0, kernels in the shape of a GEMM take the Hopper recipe
    /// (`emit::wgmma_gemm`: TMA, mbarriers, `wgmma`, warp specialization; sm_90a code, which
    /// runs on 9.0 only). `None`: code for any device (sm_80 and up) only.
    pub compute_capability: Option<(u32, u32)>,
    /// Blocks per cluster (cuTile's `num_cta_in_cga` hint): the Hopper GEMM recipe runs
    /// clusters of this many blocks (1 or 2), which share the tiles of B they load (each
    /// block copies part of them into both blocks' shared memory, TMA multicast), where the
    /// kernel allows it (16-bit operands, an even number of B's 64-column boxes, a K loop
    /// the same for every tile). `None`: the lowering chooses. It changes no result.
    pub cluster_blocks: Option<u32>,
}

/// The default number of warps per block aims at this many elements of the largest tile per
/// warp (8 per thread).
const ELEMENTS_PER_WARP: u64 = 256;
/// The most warps the lowering chooses for tiles that fit in their registers.
const MAX_DEFAULT_WARPS: u32 = 8;
/// The most warps of a block (1024 threads).
const MAX_WARPS: u32 = 32;
/// The most blocks [`LowerOptions::occupancy`] may ask for (Hopper's resident blocks per
/// multiprocessor).
pub const MAX_OCCUPANCY: u32 = 32;
/// The most threads resident on one multiprocessor (sm_80 and sm_90): an occupancy whose
/// blocks would need more is lowered to what fits.
const MAX_THREADS_PER_SM: u32 = 2048;

/// Lowers a specialized tile kernel with the default options (see the crate docs).
pub fn lower(kernel: &TileKernel) -> Result<Lowered, LowerError> {
    lower_with(kernel, &LowerOptions::default())
}

/// Lowers a specialized tile kernel with `options` (see the crate docs).
pub fn lower_with(kernel: &TileKernel, options: &LowerOptions) -> Result<Lowered, LowerError> {
    if !kernel.is_specialized() {
        return Err(LowerError::Generic(kernel.name.clone()));
    }
    validate_kernel(kernel)?;
    if let Some(n) = options.occupancy
        && !(1..=MAX_OCCUPANCY).contains(&n)
    {
        return Err(LowerError::Unsupported {
            kernel: kernel.name.clone(),
            message: format!(
                "an occupancy of {n} blocks per multiprocessor: 1 to {MAX_OCCUPANCY} is required"
            ),
        });
    }
    if let Some(recipe) = emit::wgmma_gemm::find(kernel, options) {
        // The recipe lowers only rank-0 values through the plan (tiles are its own), so
        // any block size the plan accepts does.
        let plan = plan::Plan::build(kernel, layout::WARP_THREADS * 4)?;
        let (ir, shared_bytes, args) =
            emit::Emitter::new(kernel, &plan, &options.tensor_facts, Some(1))?
                .run_gemm_recipe(&recipe)?;
        cuprum_ir::validate_kernel(&ir).map_err(|e| LowerError::Internal {
            kernel: kernel.name.clone(),
            message: format!("the kernel IR of the GEMM recipe does not validate: {e}"),
        })?;
        return Ok(Lowered {
            kernel: ir,
            block_threads: recipe.threads(),
            shared_bytes,
            args,
            blocks: BlockCount::Persistent {
                per_multiprocessor: 1,
                cluster_blocks: recipe.cluster_blocks(),
            },
        });
    }
    let mut warps = choose_warps(kernel, options)?;
    // The estimate ignores how layouts pad a tile (a ragged axis rounds up to a power of
    // two): where a tile still needs more registers than a thread may hold, more warps,
    // unless the caller chose them.
    let plan = loop {
        let plan = plan::Plan::build(kernel, warps * layout::WARP_THREADS)?;
        match plan.register_overflow() {
            None => break plan,
            Some(_) if options.num_warps.is_none() && warps < MAX_WARPS => warps *= 2,
            Some(e) => return Err(e.clone()),
        }
    };
    let threads = warps * layout::WARP_THREADS;
    // A hint, as in cuTile: no more blocks than a multiprocessor holds threads for.
    let min_blocks_per_sm = options
        .occupancy
        .map(|n| n.min(MAX_THREADS_PER_SM / threads).max(1));
    let mut emitter = emit::Emitter::new(kernel, &plan, &options.tensor_facts, min_blocks_per_sm)?;
    emitter.hopper = options.compute_capability == Some((9, 0));
    let (ir, shared_bytes, args, block_threads) = emitter.run()?;
    cuprum_ir::validate_kernel(&ir).map_err(|e| LowerError::Internal {
        kernel: kernel.name.clone(),
        message: format!("the kernel IR does not validate: {e}"),
    })?;
    Ok(Lowered {
        kernel: ir,
        block_threads,
        shared_bytes,
        args,
        blocks: BlockCount::PerTile,
    })
}

/// Warps per block: the caller's, else one per 256 elements of the kernel's largest tile (a
/// power of two, 1 to 8), more (up to 32) where that tile's elements would not fit in the
/// registers of 8 warps. A first estimate: [`lower_with`] adds warps where a layout pads a
/// tile past the registers.
fn choose_warps(kernel: &TileKernel, options: &LowerOptions) -> Result<u32, LowerError> {
    if let Some(w) = options.num_warps {
        if !w.is_power_of_two() || w > MAX_WARPS {
            return Err(LowerError::Unsupported {
                kernel: kernel.name.clone(),
                message: format!(
                    "{w} warps per block: a power of two from 1 to {MAX_WARPS} is required"
                ),
            });
        }
        return Ok(w);
    }
    let (elements, words) = kernel
        .values
        .iter()
        .filter_map(|(_, t)| {
            let n = cuprum_tile_ir::element_count(&t.shape)?;
            let w = t.elem.known().map_or(1, |e| e.size_bytes().div_ceil(4));
            Some((n, n * u64::from(w)))
        })
        .fold((1, 1), |(a, b), (n, w)| (a.max(n), b.max(w)));
    let want = (elements / ELEMENTS_PER_WARP).max(1);
    let mut warps = (1u64 << want.ilog2()).min(u64::from(MAX_DEFAULT_WARPS)) as u32;
    // Chained `mma`s want every warp on rows of their own (`mma_chains`): no more warps
    // than their results have blocks of 16 rows.
    for v in mma_chains::row_coupled(kernel) {
        let shape = &kernel.values[v].shape;
        if let Some(rows) = shape.len().checked_sub(2).and_then(|i| shape[i].known()) {
            let blocks = (rows / mma_layout::BLOCK_M).max(1);
            warps = warps.min(1 << blocks.ilog2());
        }
    }
    let per_thread = |warps: u32| words / u64::from(warps * layout::WARP_THREADS);
    while warps < MAX_WARPS && per_thread(warps) > plan::MAX_WORDS_PER_THREAD as u64 {
        warps *= 2;
    }
    Ok(warps)
}

#[cfg(test)]
mod tests {
    use super::BlockCount;

    #[test]
    fn a_persistent_grid_is_one_row_of_at_most_the_resident_blocks() {
        let persistent = BlockCount::Persistent {
            per_multiprocessor: 1,
            cluster_blocks: 1,
        };
        assert_eq!(BlockCount::PerTile.grid([5, 7, 2], 132), Some([5, 7, 2]));
        assert_eq!(persistent.grid([32, 16, 1], 132), Some([132, 1, 1]));
        assert_eq!(persistent.grid([3, 5, 1], 132), Some([15, 1, 1]));
        assert_eq!(persistent.grid([4, 0, 1], 132), Some([0, 1, 1]));
        let two = BlockCount::Persistent {
            per_multiprocessor: 2,
            cluster_blocks: 1,
        };
        assert_eq!(two.grid([100, 100, 1], 66), Some([132, 1, 1]));
        // Clusters: whole ones, as many as the resident blocks make, at most one per
        // cluster's worth of tile blocks, at least one.
        let pairs = BlockCount::Persistent {
            per_multiprocessor: 1,
            cluster_blocks: 2,
        };
        assert_eq!(pairs.grid([32, 16, 1], 132), Some([132, 1, 1]));
        assert_eq!(pairs.grid([32, 16, 1], 131), Some([130, 1, 1]));
        assert_eq!(pairs.grid([3, 3, 1], 132), Some([10, 1, 1]));
        assert_eq!(pairs.grid([1, 1, 1], 132), Some([2, 1, 1]));
        assert_eq!(pairs.grid([4, 0, 1], 132), Some([0, 1, 1]));
        assert_eq!(pairs.grid([9, 9, 1], 1), Some([2, 1, 1]));
        // A device that does not say how many multiprocessors it has still runs a block.
        assert_eq!(persistent.grid([9, 9, 1], 0), Some([1, 1, 1]));
        // The kernel's 32-bit tile index: at most `i32::MAX` tile blocks.
        assert_eq!(persistent.grid([65536, 32767, 1], 132), Some([132, 1, 1]));
        assert_eq!(persistent.grid([65536, 32768, 1], 132), None);
        assert_eq!(persistent.grid([u32::MAX, u32::MAX, 1], 132), None);
        assert_eq!(
            BlockCount::PerTile.grid([u32::MAX, 2, 1], 132),
            Some([u32::MAX, 2, 1])
        );
    }

    #[test]
    fn a_tensor_map_slot_maps_the_two_innermost_axes_and_one_of_every_other() {
        use cuprum_ir::{OobFill, ScalarType, Swizzle};
        // A `[heads, rows, cols]` f16 tensor with padded rows, boxes of 64 columns by 32 rows.
        let desc = super::slot_tensor_map(
            ScalarType::F16,
            0x1000,
            &[3, 100, 64],
            &[7200, 72, 1],
            [64, 32],
            Swizzle::B128,
        )
        .expect("rank 3 is mappable");
        assert_eq!(desc.rank, 3);
        assert_eq!(desc.address, 0x1000);
        assert_eq!(desc.dims[..3], [64, 100, 3]);
        assert_eq!(desc.strides[..2], [144, 14400]);
        assert_eq!(desc.box_dims[..3], [64, 32, 1]);
        assert_eq!(desc.box_bytes(), 64 * 32 * 2);
        assert_eq!(
            (desc.swizzle, desc.oob_fill),
            (Swizzle::B128, OobFill::Zero)
        );
        assert_eq!(desc.check(Some(3 * 14400)), Ok(()));
        // Rank 2 is the GEMM recipe's map; ranks a tensor map cannot have, or a shape and
        // strides of different ranks, are none.
        let gemm =
            super::slot_tensor_map(ScalarType::BF16, 0, &[4, 8], &[8, 1], [8, 4], Swizzle::B128);
        assert_eq!(
            gemm.map(|d| (d.rank, d.dims[..2].to_vec())),
            Some((2, vec![8, 4]))
        );
        let one = super::slot_tensor_map(ScalarType::F16, 0, &[8], &[1], [8, 1], Swizzle::None);
        assert!(one.is_none());
        let six = [2u64; 6];
        assert!(
            super::slot_tensor_map(ScalarType::F16, 0, &six, &six, [2, 2], Swizzle::None).is_none()
        );
        assert!(
            super::slot_tensor_map(ScalarType::F16, 0, &[2, 2], &[2], [2, 2], Swizzle::None)
                .is_none()
        );
    }
}
