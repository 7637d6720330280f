//! cuprum's tile IR: what one tile block does to whole tiles of data, with no thread mapping.
//!
//! The kernel IR (`cuprum-ir`) says what one thread does; a tile kernel says what one *tile
//! block* does to tiles (immutable n-dimensional arrays held by the block). This IR sits
//! above the kernel IR: the tile front end (`cuprum-tile-front`) builds it from Rust at
//! `cargo build`, the reference interpreter (`cuprum-tile-interp`) is its executable
//! definition, and the lowering (`cuprum-tile-lower`) assigns layouts and emits ordinary
//! kernel IR, which the optimizer, the PTX writer, the emulator and the compile cache then
//! handle like any other kernel. The interpreter and the lowering never depend on each
//! other, so that tests can compare them.
//!
//! # Semantics
//!
//! * **Launch.** A launch runs a grid of tile blocks, each running [`TileKernel::body`] once.
//!   The grid is fixed by the partitioned tensors ([`TensorAccess::Partitioned`]): a tensor
//!   of rank `r <= 3` and sizes `n_d` partitioned into tiles `t_d` gives `ceil(n_d / t_d)`
//!   blocks along grid axis `d` (1 along the others); every partitioned tensor of a launch
//!   must give the same grid (the host checks it; [`grid_of`] is the rule's one definition).
//!   A kernel without partitioned tensors is launched with an explicit grid.
//! * **Values.** A [`TileValue`] is a whole tile, defined once ([`Stmt::Def`], or as the
//!   results and arguments of control flow), of a [`TileType`]: an element type and a
//!   shape, row-major. Rank-0 tiles are the scalars of tile programs. Every value is the
//!   tile block's, not a thread's, so control flow on rank-0 values is uniform over the block.
//! * **Scalar semantics.** Element-wise operations apply the kernel IR's operation to each
//!   element, with exactly the kernel IR's semantics (`cuprum_ir::kernel`'s docs:
//!   wrapping integers, IEEE floats without contraction, Rust's `as`, `f16`/`bf16`
//!   computed in `f32`), which `cuprum_ir::scalar` defines for every layer. Integer
//!   division by zero (or `MIN / -1`) fails the launch. Transcendental functions are
//!   approximate on the GPU, as in the kernel IR.
//! * **Memory.** A read-only tensor ([`TensorAccess::Read`]) is not written by anyone during
//!   the launch. A partitioned tensor is cut into tiles, tile `b` belonging to block `b`:
//!   only block `b` reads ([`View::Own`]) and writes ([`Stmt::Store`], or a sub-tile of it
//!   with [`Stmt::StorePart`]) it, so no two blocks
//!   touch one element and a block's loads of its own tile see its earlier stores. Loads
//!   read `padding` for elements outside the tensor and stores drop them: edge tiles need no
//!   checks and never fault. A tensor's elements are addressed by its strides (in
//!   elements), which need not be contiguous. An `unsafe` entry's raw pointers
//!   ([`TensorAccess::Raw`]) are read and written element by element at offsets
//!   ([`Op::Gather`], [`Stmt::Scatter`]); offsets outside the pointer's allocation read
//!   padding and are not written, and the entry's caller promises that no two blocks race on
//!   an element. A mapped output ([`TensorAccess::Mapped`]) is written by persistent loops
//!   ([`Stmt::ForTiles`]) that deal its tiles to the blocks by one schedule
//!   ([`grid::mapped_tile`]), each tile to one block, and store only to the current tile
//!   ([`Stmt::StoreMapped`]).
//! * **Reductions** combine in an unspecified order: integer results are exact, float
//!   results may differ in the last bits between the interpreter, the emulator and the GPU
//!   (tests compare floats within a stated bound).
//! * **Matrix multiplies** ([`Op::Mma`]) are exact and order-defined, unlike reductions:
//!   `f16`/`bf16` inputs sum 16 products at a time as the tensor cores do, `f32`/`f64` inputs
//!   chain fused multiply-adds in order of `k`, so every backend gives the same bits.
//! * **Control flow.** `If` yields values from the branch taken; `For` and `Loop` carry
//!   values from one iteration to the next (`let mut acc` in the source becomes a carried
//!   value); `Break` and `Continue` act on the innermost loop; `Return` ends the block.
//! * **Failures.** A failed [`Stmt::Assert`], a zero integer divisor or a non-positive `For`
//!   step fails the launch with a typed error; what the launch had stored is then
//!   unspecified, as in the kernel IR.
//!
//! Generic kernels keep their const and type parameters symbolic ([`Dim::Param`],
//! [`Elem::Param`], [`Literal`]); [`specialize`] substitutes the values of a launch and
//! validates again. [`validate_kernel`] checks every rule it can decide before that.

#![warn(missing_docs)]

pub mod builder;
pub mod grid;
pub mod kernel;
pub mod print;
pub mod serial;
pub mod specialize;
pub mod types;
pub mod validate;

pub use builder::TileBuilder;
pub use grid::{GridError, grid_of};
pub use kernel::*;
pub use print::{print_kernel, print_module};
pub use serial::{SerialError, decode_module, encode_module};
pub use specialize::{Specialization, SpecializeError, specialize};
pub use types::{
    Axis, Dim, Elem, Shape, ShapeDisplay, TileType, element_count, known_sizes, shape_of,
};
pub use validate::{TileValidationError, result_type, validate_kernel, validate_module};

/// Re-exported from the kernel IR: the scalar types and operators tile operations apply
/// element-wise.
pub use cuprum_ir::{BinaryOp, CmpOp, Constant, ScalarType, TernaryOp, UnaryOp};
