//! The tile track's one error type ([`Error`]), as `cuprum::tile::error::Error`.
//!
//! Each way tile host code fails is a variant a caller can match: the runtime failed
//! ([`Error::Runtime`], which wraps `cuprum::Error`, so `?` converts runtime errors), a
//! tensor operation got shapes it cannot use ([`Error::Tensor`]), a launch was refused before
//! anything ran ([`Error::InvalidLaunch`], with the [`LaunchProblem`]), the kernel could not
//! be compiled for the launch's specialization ([`Error::Compile`]), an `Arc` had other
//! owners ([`Error::ArcShared`]), or a shared operation had failed for another of its users
//! ([`Error::SharedOpFailed`]). Every message names what is wrong with the numbers, so a user
//! can act on it.

use std::fmt;

use cuprum_ir::ScalarType;

/// `Result` with the tile track's [`Error`] as the default error type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything tile host code can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The runtime failed: the device, the driver, memory, the emulator, a copy.
    #[error(transparent)]
    Runtime(#[from] crate::Error),
    /// A tensor operation got shapes it cannot use.
    #[error(transparent)]
    Tensor(#[from] TensorError),
    /// A launch was refused before anything ran; the tensors given to it are dropped.
    #[error("invalid launch of tile kernel `{kernel}`: {problem}")]
    InvalidLaunch {
        /// The kernel.
        kernel: String,
        /// What about the arguments or the configuration is wrong.
        problem: LaunchProblem,
    },
    /// The kernel could not be compiled for this launch: its IR embedded at `cargo build`
    /// cannot be read, or specializing or lowering it failed.
    #[error("could not compile tile kernel `{kernel}`{}: {message}", SpecSuffix(.specialization))]
    Compile {
        /// The kernel (or the module, when its embedded IR cannot be read).
        kernel: String,
        /// The values of its generic parameters (`B = 128, T = f32`); empty when it has
        /// none.
        specialization: String,
        /// What failed, and what to do.
        message: String,
    },
    /// An `Arc` that had to be the only owner of its value has others (`unwrap_arc`,
    /// `try_partition`).
    #[error(
        "{what}: the `Arc` has {owners} owners; drop the other clones first (or use the value through the `Arc`)"
    )]
    ArcShared {
        /// The operation that needed the value by itself.
        what: &'static str,
        /// How many owners the `Arc` had.
        owners: usize,
    },
    /// A launch the emulator ran in the tile interpreter (see `CUPRUM_TILE_EMULATION`)
    /// failed there: an access outside a tensor's allocation, a failed assertion, an
    /// operation that faulted.
    #[error(
        "tile kernel `{kernel}` failed in the tile interpreter (the emulator's route for large launches): {source}"
    )]
    Interpreted {
        /// The kernel.
        kernel: String,
        /// What failed (boxed: it is large, and rare).
        source: Box<cuprum_tile_interp::InterpError>,
    },
    /// `CUPRUM_TILE_EMULATION` holds something other than `auto`, `interpret` or `lowered`.
    #[error(
        "invalid CUPRUM_TILE_EMULATION value `{value}`: expected `auto` (the tile interpreter for launches over large tensors, the lowered kernel otherwise), `interpret` or `lowered`"
    )]
    InvalidEmulation {
        /// The value found.
        value: String,
    },
    /// A `.shared()` operation (or one side of an `unzip`) whose work failed when another
    /// of its users ran it; that user got the error itself.
    #[error("a shared device operation failed when another of its users ran it: {message}")]
    SharedOpFailed {
        /// The first failure's message.
        message: String,
    },
}

/// A problem found outside any launch (a partition's grid asked for with `grid()?`) as an
/// [`Error::InvalidLaunch`] naming no kernel.
impl From<LaunchProblem> for Error {
    fn from(problem: LaunchProblem) -> Self {
        Error::InvalidLaunch {
            kernel: "(none: a partition's grid)".into(),
            problem,
        }
    }
}

/// The `cuda_async` name of the error every device operation returns.
pub type DeviceError = Error;

/// Writes ` (B = 128)` after a kernel name when there is a specialization to show.
struct SpecSuffix<'a>(&'a str);

impl fmt::Display for SpecSuffix<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            Ok(())
        } else {
            write!(f, " ({})", self.0)
        }
    }
}

/// A tensor operation that cannot be done with the shapes given.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TensorError {
    /// A reshape to a shape with another element count.
    #[error(
        "cannot reshape a tensor of shape {from:?} ({} elements) to {to:?} ({} elements): the element counts differ",
        count(.from), count(.to)
    )]
    ReshapeCount {
        /// The tensor's shape.
        from: Vec<usize>,
        /// The shape asked for.
        to: Vec<usize>,
    },
    /// A copy between tensors of other shapes, or between views that are not whole
    /// contiguous allocations.
    #[error(
        "cannot copy a tensor of shape {src:?} into one of shape {dst:?}: `memcpy` copies between tensors of one shape, each the whole of its allocation in row-major order (copy views with `dup` first)"
    )]
    CopyShapes {
        /// The destination's shape.
        dst: Vec<usize>,
        /// The source's shape.
        src: Vec<usize>,
    },
    /// A slice whose ranges do not fit the tensor.
    #[error(
        "cannot slice a tensor of shape {shape:?} with {ranges:?}: give at most one range per axis, each within its axis (start <= end <= size)"
    )]
    SliceOutOfRange {
        /// The tensor's shape.
        shape: Vec<usize>,
        /// The ranges asked for.
        ranges: Vec<std::ops::Range<usize>>,
    },
    /// A reshape of a tensor whose elements are not contiguous in row-major order.
    #[error(
        "cannot reshape a tensor of shape {shape:?} with strides {strides:?}: its elements are not contiguous in row-major order (`dup` it first)"
    )]
    NotContiguous {
        /// The tensor's shape.
        shape: Vec<usize>,
        /// Its strides, in elements.
        strides: Vec<usize>,
    },
    /// Host data whose length is not the element count of the shape asked for.
    #[error(
        "{len} host elements cannot fill a tensor of shape {shape:?} ({} elements)",
        count(.shape)
    )]
    HostLength {
        /// The host data's length.
        len: usize,
        /// The shape asked for.
        shape: Vec<usize>,
    },
    /// A tensor over another framework's memory (`Tensor::from_foreign`) whose shape and
    /// strides do not fit it.
    #[error(
        "cannot make a tensor of shape {shape:?} with strides {strides:?} over a foreign allocation: {reason}"
    )]
    Foreign {
        /// The shape asked for.
        shape: Vec<i32>,
        /// The strides asked for, in elements.
        strides: Vec<i32>,
        /// Which rule they break.
        reason: String,
    },
    /// A shape whose element count or byte size overflows `usize`.
    #[error("a tensor of shape {shape:?} of `{elem}` has more bytes than fit in memory")]
    TooLarge {
        /// The shape.
        shape: Vec<usize>,
        /// The element type.
        elem: ScalarType,
    },
}

fn count(shape: &[usize]) -> String {
    shape
        .iter()
        .try_fold(1usize, |n, &d| n.checked_mul(d))
        .map_or_else(|| "too many".to_owned(), |n| n.to_string())
}

/// Why a launch was refused before anything ran. `param` fields name the kernel parameter as
/// written in its source.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LaunchProblem {
    /// An argument of another kind than the parameter (a scalar for a tensor, a tensor that
    /// is not partitioned for a `&mut Tensor`).
    #[error("parameter `{param}` is {expected}, but the argument is {given}")]
    ArgumentKind {
        /// The parameter.
        param: String,
        /// What the kernel declares.
        expected: &'static str,
        /// What the launch gave.
        given: &'static str,
    },
    /// Not as many arguments as parameters (the generated launchers always agree; only a
    /// hand-made launch can get here).
    #[error("the kernel takes {expected} argument(s), {given} were given")]
    ArgumentCount {
        /// Parameters.
        expected: usize,
        /// Arguments.
        given: usize,
    },
    /// A tensor of another rank than the parameter declares.
    #[error(
        "parameter `{param}` is a rank-{declared} tensor, but the argument has shape {shape:?}"
    )]
    Rank {
        /// The parameter.
        param: String,
        /// The rank it declares.
        declared: usize,
        /// The argument's shape.
        shape: Vec<usize>,
    },
    /// A tensor or scalar of another element type than the parameter's.
    #[error("parameter `{param}` holds `{expected}`, but the argument holds `{given}`")]
    ElementType {
        /// The parameter.
        param: String,
        /// The element type it declares (a type parameter's name, or its bound type).
        expected: String,
        /// The argument's.
        given: ScalarType,
    },
    /// A tensor whose size along an axis is not the one the parameter's shape fixes.
    #[error(
        "parameter `{param}` declares size {declared} along axis {axis}, but the argument has shape {shape:?}"
    )]
    StaticDim {
        /// The parameter.
        param: String,
        /// The axis.
        axis: usize,
        /// The size the kernel declares (after specialization).
        declared: u64,
        /// The argument's shape.
        shape: Vec<usize>,
    },
    /// A tensor with no elements.
    #[error(
        "the tensor given for `{param}` has shape {shape:?}, with no elements; tile kernels take tensors of at least one element"
    )]
    EmptyTensor {
        /// The parameter.
        param: String,
        /// Its shape.
        shape: Vec<usize>,
    },
    /// A partition whose rank is not its tensor's.
    #[error(
        "the output `{param}` of shape {shape:?} is partitioned into tiles {partition:?}: the partition needs one tile size per axis of the tensor"
    )]
    PartitionRank {
        /// The parameter.
        param: String,
        /// The tensor's shape.
        shape: Vec<usize>,
        /// The partition's tile shape.
        partition: Vec<usize>,
    },
    /// A partition whose tile is not the kernel's tile shape, or has a size of zero.
    #[error(
        "the output `{param}` is partitioned into tiles {partition:?}, which does not fit the kernel's tile shape {kernel_tile}"
    )]
    PartitionTile {
        /// The parameter.
        param: String,
        /// The partition's tile shape.
        partition: Vec<usize>,
        /// The tile shape the kernel declares, its generic sizes shown by name (`[B, 16]`).
        kernel_tile: String,
    },
    /// A partitioned tensor of rank above 3, or whose grid is too large.
    #[error(
        "the output `{param}` needs a grid of {grid:?} tile blocks; a grid has at most 3 axes of at most 2^31 - 1 blocks"
    )]
    GridTooLarge {
        /// The parameter.
        param: String,
        /// The blocks along each axis it needs.
        grid: Vec<u64>,
    },
    /// Two partitioned outputs that give different grids.
    #[error(
        "the outputs `{first}` and `{param}` give different grids, {first_grid:?} and {grid:?}: every partitioned output of a launch must be cut into the same number of tiles along each axis"
    )]
    GridMismatch {
        /// The first partitioned output.
        first: String,
        /// Its grid.
        first_grid: (u32, u32, u32),
        /// The output that disagrees.
        param: String,
        /// Its grid.
        grid: (u32, u32, u32),
    },
    /// A kernel without partitioned outputs launched without `.grid(..)`.
    #[error(
        "the kernel has no partitioned output to infer its grid from: give one with `.grid((x, y, z))`"
    )]
    NoGrid,
    /// `.grid(..)` given with a zero, or disagreeing with the partitioned outputs.
    #[error("the grid {given:?} given with `.grid(..)` {reason}")]
    BadGrid {
        /// The grid given.
        given: (u32, u32, u32),
        /// What is wrong with it.
        reason: String,
    },
    /// A launch with more tile blocks than a persistent kernel (the Hopper GEMM recipe,
    /// `cuprum_tile_lower::BlockCount::Persistent`) counts.
    #[error(
        "the launch has {tiles:?} tile blocks, more than the {most} a persistent kernel counts: split the problem into several launches"
    )]
    TooManyTileBlocks {
        /// The launch's tile grid.
        tiles: (u32, u32, u32),
        /// The most tile blocks such a kernel counts.
        most: u64,
    },
    /// A launch of a kernel cuprum did not compile without a launch configuration: its grid
    /// and block are the program's to give.
    #[error(
        "a kernel cuprum did not compile needs its grid and block: call `set_launch_config` before launching it"
    )]
    MissingConfig,
    /// A raw device address (`AsyncKernelLaunch::push_device_ptr`) pushed for a tile kernel,
    /// whose parameters take tensors and scalars.
    #[error(
        "a raw device address was pushed for a tile kernel: push the tensor (`push_arg`), or its `device_pointer()` for an `unsafe` entry's `*mut T`"
    )]
    RawAddress,
    /// A launch configuration (`AsyncKernelLaunch::set_launch_config`) whose block is neither
    /// cuTile Rust's `(1, 1, 1)` nor the block cuprum's lowering chose for the kernel.
    #[error(
        "the launch configuration asks for block {given:?}, but the tile lowering compiled the kernel for block {lowered:?} (a tile kernel's threads are the compiler's choice): give block_dim (1, 1, 1), as cuTile Rust's launchers do, or {lowered:?}"
    )]
    BlockShape {
        /// The block the configuration gives.
        given: (u32, u32, u32),
        /// The block the kernel was lowered for.
        lowered: (u32, u32, u32),
    },
    /// A tensor of another context (device) than the stream the launch runs on.
    #[error(
        "the tensor given for `{param}` lives on another context (device) than the stream the launch runs on"
    )]
    ContextMismatch {
        /// The parameter.
        param: String,
    },
    /// A mapped partition whose map shape or block count does not fit its tiles.
    #[error("the mapped partition given for `{param}` {reason}")]
    BadMap {
        /// The parameter.
        param: String,
        /// What is wrong.
        reason: String,
    },
    /// A raw pointer (`DevicePointer`) that is not inside a live allocation of the launch's
    /// context, or not aligned to its element type.
    #[error(
        "the pointer {address:#x} given for `{param}` {reason}: a raw pointer argument must point at an element of a live tensor of the launch's context (`Tensor::device_pointer`)"
    )]
    BadPointer {
        /// The parameter.
        param: String,
        /// The address given.
        address: u64,
        /// What is wrong with it.
        reason: String,
    },
    /// A raw pointer into the memory of a tensor argument of the same launch, which the
    /// kernel may write while the tensor's loads assume nobody does (or another block owns).
    #[error(
        "the pointer given for `{pointer}` points into the memory of the tensor argument `{tensor}`: a launch may not see one allocation both as a tensor and through a raw pointer"
    )]
    PointerAliased {
        /// The raw pointer parameter.
        pointer: String,
        /// The tensor parameter.
        tensor: String,
    },
    /// A partitioned output whose memory is also another argument of the launch.
    #[error(
        "the output `{output}` shares its memory with the argument `{other}`: an output must be the only tensor of a launch that uses its memory"
    )]
    Aliased {
        /// The partitioned output.
        output: String,
        /// The other argument.
        other: String,
    },
    /// `.generics(..)` with the wrong number of values.
    #[error(
        "`.generics(..)` was given {given} value(s), but the kernel's generic parameters are [{}] (an array parameter `S: [i32; N]` takes N values)",
        .names.join(", ")
    )]
    GenericCount {
        /// The generic parameters, in declaration order, arrays flattened.
        names: Vec<String>,
        /// How many values were given.
        given: usize,
    },
    /// A `.generics(..)` value that is not a value of its parameter's kind.
    #[error("`.generics(..)` gives `{name}` the value `{value}`, which is not {expected}")]
    GenericValue {
        /// The parameter.
        name: String,
        /// The value given.
        value: String,
        /// What it should be.
        expected: &'static str,
    },
    /// Two sources that give one generic parameter different values.
    #[error("`{name}` is {first}, but {second}")]
    GenericConflict {
        /// The parameter.
        name: String,
        /// The first value and where it came from (`64 from \`.generics(..)\``).
        first: String,
        /// The second value and where it came from (`32 from the partition of \`z\``).
        second: String,
    },
    /// Generic parameters that no argument determines and `.generics(..)` did not give.
    #[error(
        "the value of [{}] cannot be inferred from the arguments: give every generic parameter with `.generics(vec![..])`, in declaration order",
        .names.join(", ")
    )]
    GenericUnbound {
        /// The parameters without a value.
        names: Vec<String>,
    },
    /// A host size (`usize`) given for a narrower integer scalar parameter does not fit it.
    #[error("the host size {value} was given for an {ty} argument, which cannot hold it")]
    SizeRange {
        /// The size.
        value: usize,
        /// The parameter's type.
        ty: ScalarType,
    },
}
