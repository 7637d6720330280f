//! Why a launch fails: the host's mistakes (arguments, grid, addresses outside an
//! allocation), found before or while blocks run, and the kernel's own failures (a zero
//! divisor, a failed assertion, a non-positive `For` step), which name the block.

use cuprum_tile_ir::{GridError, TileValidationError};

/// Why [`crate::run`] failed. When several blocks fail, the error is the first failing
/// block's, in the launch's block order (see [`crate::run`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InterpError {
    /// The kernel still has generic parameters: specialize it first
    /// ([`cuprum_tile_ir::specialize()`]).
    #[error("tile kernel `{0}` is generic: specialize it before interpreting it")]
    Generic(String),
    /// The kernel breaks a rule of the tile IR.
    #[error(transparent)]
    Invalid(#[from] TileValidationError),
    /// Not one argument per parameter.
    #[error("tile kernel `{kernel}` takes {expected} arguments, {given} given")]
    ArgCount {
        /// The kernel.
        kernel: String,
        /// How many parameters it has.
        expected: usize,
        /// How many arguments were given.
        given: usize,
    },
    /// An argument does not fit its parameter (kind, element type, rank, a static size, or
    /// read-only bytes for a partitioned output).
    #[error("tile kernel `{kernel}`, argument {index} (`{param}`): {message}")]
    BadArg {
        /// The kernel.
        kernel: String,
        /// The parameter's index.
        index: usize,
        /// The parameter's name.
        param: String,
        /// What is wrong.
        message: String,
    },
    /// The partitioned tensors do not give a grid.
    #[error(transparent)]
    Grid(#[from] GridError),
    /// The grid given is not the one the partitioned tensors give.
    #[error(
        "tile kernel `{kernel}` launched with grid {given:?}, but its partitioned tensors give {expected:?}"
    )]
    GridMismatch {
        /// The kernel.
        kernel: String,
        /// The grid given.
        given: [u32; 3],
        /// The grid of [`cuprum_tile_ir::grid_of`].
        expected: [u32; 3],
    },
    /// A tile value larger than the interpreter holds.
    #[error("tile kernel `{kernel}`: a tile of {elements} elements is too large to interpret")]
    TileTooLarge {
        /// The kernel.
        kernel: String,
        /// Its element count.
        elements: u128,
    },
    /// An integer division or remainder by zero.
    #[error("tile kernel `{kernel}`, block {block:?}: integer division by zero")]
    DivideByZero {
        /// The kernel.
        kernel: String,
        /// The tile block.
        block: [u32; 3],
    },
    /// A signed integer `MIN / -1` or `MIN % -1`.
    #[error("tile kernel `{kernel}`, block {block:?}: integer division overflow (MIN / -1)")]
    DivideOverflow {
        /// The kernel.
        kernel: String,
        /// The tile block.
        block: [u32; 3],
    },
    /// A [`cuprum_tile_ir::Stmt::Assert`] whose condition was false.
    #[error("tile kernel `{kernel}`, block {block:?}: assertion failed: {message}")]
    AssertFailed {
        /// The kernel.
        kernel: String,
        /// The tile block.
        block: [u32; 3],
        /// The assertion's message.
        message: String,
    },
    /// A `For` loop whose step is not positive.
    #[error("tile kernel `{kernel}`, block {block:?}: a for loop's step is {step}, not positive")]
    ForStep {
        /// The kernel.
        kernel: String,
        /// The tile block.
        block: [u32; 3],
        /// The step.
        step: i64,
    },
    /// An element of a tensor (inside its shape) whose address, through the strides and
    /// offset the host gave, lies outside the tensor's allocation: a host bug.
    #[error(
        "tile kernel `{kernel}`, block {block:?}: element {coord:?} of tensor `{param}` is at element address {} (through its strides and offset), outside its allocation of {elements} elements",
        address.map_or("past the range of i64".to_string(), |a| a.to_string())
    )]
    OutOfAllocation {
        /// The kernel.
        kernel: String,
        /// The tile block.
        block: [u32; 3],
        /// The tensor parameter's name.
        param: String,
        /// The element's coordinate in the tensor.
        coord: Vec<u64>,
        /// Its address in elements from the allocation's start (`None` past the range of
        /// `i64`).
        address: Option<i64>,
        /// The allocation's size in whole elements.
        elements: u64,
    },
    /// An operation the kernel IR does not define on its operands' type, which the
    /// validator lets through (an interpreter or validator bug).
    #[error("tile kernel `{kernel}`, block {block:?}: {message}")]
    Unsupported {
        /// The kernel.
        kernel: String,
        /// The tile block.
        block: [u32; 3],
        /// What could not be done.
        message: String,
    },
}

#[cfg(test)]
mod tests {
    #[test]
    fn errors_stay_small() {
        assert!(std::mem::size_of::<super::InterpError>() <= 128);
    }
}
