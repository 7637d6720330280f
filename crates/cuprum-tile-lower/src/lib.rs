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

use cuprum_tile_ir::TileKernel;

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
}

/// Lowers a specialized tile kernel (see the crate docs).
pub fn lower(kernel: &TileKernel) -> Result<Lowered, LowerError> {
    if !kernel.is_specialized() {
        return Err(LowerError::Generic(kernel.name.clone()));
    }
    Err(LowerError::Unsupported {
        kernel: kernel.name.clone(),
        message: "the tile lowering is not written yet".into(),
    })
}
