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
//! A lowered kernel is launched with one thread block of [`Lowered::block_threads`] threads
//! per tile block, the grid the tile IR's semantics give, and [`Lowered::shared_bytes`] of
//! dynamic shared memory. Its kernel IR parameters are, in order, [`Lowered::args`]: the
//! host passes each slot's value:
//!
//! * [`ArgSlot::TensorData`]: a slice parameter (`&[T]` for a read-only tensor, read-write
//!   for a partitioned one) over the tensor's whole allocation (its base is the allocation's
//!   start, so it is 16-byte aligned as the kernel IR requires);
//! * [`ArgSlot::TensorOffset`]: `I64`, the element offset of the tensor's first element in
//!   that allocation (views made by `reshape`, `permute` or slicing start anywhere);
//! * [`ArgSlot::TensorDim`]: `I64`, the tensor's size along one axis;
//! * [`ArgSlot::TensorStride`]: `I64`, its stride along one axis, in elements;
//! * [`ArgSlot::Scalar`]: the scalar parameter, of its element type.

#![warn(missing_docs)]

mod emit;
pub mod layout;
mod plan;

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
}

/// A tile kernel lowered to the kernel IR, with how to launch it.
#[derive(Clone, Debug, PartialEq)]
pub struct Lowered {
    /// The kernel, named as the tile kernel.
    pub kernel: cuprum_ir::Kernel,
    /// Threads per thread block (one thread block per tile block).
    pub block_threads: u32,
    /// Bytes of dynamic shared memory per block.
    pub shared_bytes: u32,
    /// What each of the kernel's parameters carries, in order.
    pub args: Vec<ArgSlot>,
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
}

/// The default number of warps per block aims at this many elements of the largest tile per
/// warp (8 per thread).
const ELEMENTS_PER_WARP: u64 = 256;
/// The most warps the lowering chooses by itself.
const MAX_DEFAULT_WARPS: u32 = 8;

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
    let warps = choose_warps(kernel, options)?;
    let threads = warps * layout::WARP_THREADS;
    let plan = plan::Plan::build(kernel, threads)?;
    let (ir, shared_bytes, args) = emit::Emitter::new(kernel, &plan)?.run()?;
    cuprum_ir::validate_kernel(&ir).map_err(|e| LowerError::Internal {
        kernel: kernel.name.clone(),
        message: format!("the kernel IR does not validate: {e}"),
    })?;
    Ok(Lowered {
        kernel: ir,
        block_threads: threads,
        shared_bytes,
        args,
    })
}

/// Warps per block: the caller's, else one per 256 elements of the kernel's largest tile
/// (a power of two, 1 to 8).
fn choose_warps(kernel: &TileKernel, options: &LowerOptions) -> Result<u32, LowerError> {
    if let Some(w) = options.num_warps {
        if !w.is_power_of_two() || w > 32 {
            return Err(LowerError::Unsupported {
                kernel: kernel.name.clone(),
                message: format!("{w} warps per block: a power of two from 1 to 32 is required"),
            });
        }
        return Ok(w);
    }
    let largest = kernel
        .values
        .iter()
        .filter_map(|(_, t)| cuprum_tile_ir::element_count(&t.shape))
        .max()
        .unwrap_or(1);
    let want = (largest / ELEMENTS_PER_WARP).max(1);
    let floor = 1u64 << want.ilog2();
    Ok(floor.min(u64::from(MAX_DEFAULT_WARPS)) as u32)
}
