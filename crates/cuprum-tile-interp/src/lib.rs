//! The tile interpreter: runs a specialized tile kernel on whole tiles, one tile block at a
//! time (blocks in parallel), with the tile IR's semantics and nothing else. It is the
//! executable definition of the tile IR: the lowering is tested against it. It never
//! depends on the lowering.
//!
//! [`run`] takes the kernel, one [`Arg`] per parameter (tensors exactly as the device sees
//! them: element type, shape, strides and offset in elements, and the allocation's
//! little-endian bytes) and the grid, which for a kernel with partitioned tensors must be the
//! one [`cuprum_tile_ir::grid_of`] gives ([`launch_grid`] asks it for a launch's
//! arguments).
//!
//! # What it defines where the tile IR leaves a choice
//!
//! * **Element-wise operations** are `cuprum_ir::scalar`'s, element by element (32 at a time
//!   through the emulator's lane functions): exactly the kernel IR's results, with no
//!   arithmetic of the interpreter's own. Transcendental functions are Rust's `f32`/`f64`
//!   functions, as in the emulator; the GPU approximates them.
//! * **Reductions** combine left to right along the axis, starting from the first element:
//!   `((x0 ⊕ x1) ⊕ x2) ⊕ ...` for each result element (a closure's `identity` is not used,
//!   since no axis is empty). The tile IR leaves the order unspecified; this is the
//!   interpreter's, so a float reduction here is bit for bit what a plain left-to-right
//!   loop in Rust gives.
//! * **Blocks** are numbered `x + gx * (y + gy * z)`. They run in parallel, but what a launch
//!   does is the same as running them one after another in that order: a block's stores go
//!   to its own copy of its tiles (its later loads of its tile see them), and are written to
//!   memory block by block, in block order, once the block has ended.
//! * **Prints** come back in [`Output`], by block (in block order), then in the order the
//!   block printed them.
//! * **Failures**: when blocks fail, the error is the first failing block's in block order,
//!   and a launch that fails may have written the stores of earlier blocks (the tile IR
//!   leaves what a failed launch stored unspecified).
//! * **`For`** counts without wrapping: the counter takes `start`, `start + step`, ... while
//!   it is below `end`, so a step that would carry the counter past the type's range ends
//!   the loop.
//! * **Memory**: an element inside a tensor's shape whose address (offset plus coordinates
//!   times strides) lies outside the allocation is an error
//!   ([`InterpError::OutOfAllocation`]), found before the load or store touches anything; a
//!   `bool` element reads as `true` for any nonzero byte.
//! * **Raw pointers** (an `unsafe` entry's `*mut T`) are rank-1 tensors from the pointer to
//!   its allocation's end, given writable bytes. A block's scatters are logged; its later
//!   gathers see them; the log is written to memory when the block ends, in block order
//!   (see `raw`). Where one scatter names one offset twice, the later element in row-major
//!   order is written.
//! * **GEMM K loops** (a `for` whose body only loads a tile of A at `(row, k)` and one of B at
//!   `(k, col)` and `mma`s them, in `f32`, into what it carries) are computed at once from
//!   the tensors' memory where that gives the same bits (`kloop`): the same chains of fused
//!   multiply-adds, in the same order, without making the tiles ([`fused_k_loops`] counts
//!   them). This is what lets GEMMs with small tiles run at their real sizes.
//! * **Mapped outputs**' loops visit the block's tiles in the schedule's order
//!   (`cuprum_tile_ir::grid::mapped_tile`); their stores go to the same log as scatters.

#![warn(missing_docs)]

mod elementwise;
mod error;
mod exec;
mod kloop;
mod matmul;
mod memory;
mod raw;
mod shape;

pub use error::InterpError;
pub use kloop::fused_k_loops;

use cuprum_ir::{Constant, ScalarType};
use cuprum_tile_ir::{
    Dim, ParamKind, TensorAccess, TensorDim, TileKernel, grid_of, validate_kernel,
};
use rayon::prelude::*;

use exec::{Launch, Param, own_base};
use memory::{TensorView, Window, write_elem};

/// One argument of a launch.
#[derive(Debug)]
pub enum Arg<'a> {
    /// A tensor parameter's tensor.
    Tensor(TensorArg<'a>),
    /// A scalar parameter's value, of the parameter's element type.
    Scalar(Constant),
}

/// A tensor as the device sees it: the element at coordinate `c` is at element address
/// `offset + sum(c[d] * strides[d])` of the allocation `data`, little-endian.
#[derive(Debug)]
pub struct TensorArg<'a> {
    /// The element type.
    pub elem: ScalarType,
    /// The size along each axis, in elements.
    pub shape: Vec<u64>,
    /// The stride along each axis, in elements (any sign; need not be contiguous).
    pub strides: Vec<i64>,
    /// The element address of the element at coordinate 0.
    pub offset: u64,
    /// The allocation.
    pub data: TensorData<'a>,
}

/// The bytes of a tensor's allocation.
#[derive(Debug)]
pub enum TensorData<'a> {
    /// Read only: for a read-only tensor.
    Read(&'a [u8]),
    /// Read and written: a partitioned output needs these (a read-only tensor may have them).
    Write(&'a mut [u8]),
}

impl TensorData<'_> {
    /// The bytes.
    pub fn bytes(&self) -> &[u8] {
        match self {
            TensorData::Read(b) => b,
            TensorData::Write(b) => b,
        }
    }
}

impl<'a> TensorArg<'a> {
    /// A read-only tensor of shape `shape`, row-major and contiguous from the start of
    /// `bytes`.
    pub fn read(elem: ScalarType, shape: &[u64], bytes: &'a [u8]) -> Self {
        Self {
            elem,
            shape: shape.to_vec(),
            strides: row_major_strides(shape),
            offset: 0,
            data: TensorData::Read(bytes),
        }
    }

    /// A tensor to write (a partitioned output), row-major and contiguous from the start of
    /// `bytes`.
    pub fn write(elem: ScalarType, shape: &[u64], bytes: &'a mut [u8]) -> Self {
        Self {
            elem,
            shape: shape.to_vec(),
            strides: row_major_strides(shape),
            offset: 0,
            data: TensorData::Write(bytes),
        }
    }

    /// The same tensor with other strides and offset (a view: a transpose, a slice).
    pub fn strided(mut self, strides: &[i64], offset: u64) -> Self {
        self.strides = strides.to_vec();
        self.offset = offset;
        self
    }
}

/// The row-major strides of a contiguous tensor of shape `shape`, in elements.
pub fn row_major_strides(shape: &[u64]) -> Vec<i64> {
    let mut s = vec![1i64; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        s[d] = s[d + 1].saturating_mul(i64::try_from(shape[d + 1]).unwrap_or(i64::MAX));
    }
    s
}

/// What a launch printed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Output {
    /// Each print's text, by block (in block order: `x + gx * (y + gy * z)`), then in the
    /// order the block printed.
    pub prints: Vec<Printed>,
}

/// The text of one [`cuprum_tile_ir::Stmt::Print`] as it ran.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Printed {
    /// The tile block that printed it.
    pub block: [u32; 3],
    /// The text (`cuprum_ir::printf::format` of the format and arguments).
    pub text: String,
}

impl Output {
    /// Every print's text, concatenated in order.
    pub fn text(&self) -> String {
        self.prints.iter().map(|p| p.text.as_str()).collect()
    }
}

/// The grid a launch of `kernel` with `args` runs: [`cuprum_tile_ir::grid_of`] of the
/// argument tensors' shapes; `Ok(None)` when the kernel has no partitioned tensor (its launch
/// gives a grid explicitly).
pub fn launch_grid(kernel: &TileKernel, args: &[Arg<'_>]) -> Result<Option<[u32; 3]>, InterpError> {
    let shapes: Vec<Option<&[u64]>> = args
        .iter()
        .map(|a| match a {
            Arg::Tensor(t) => Some(t.shape.as_slice()),
            Arg::Scalar(_) => None,
        })
        .collect();
    Ok(grid_of(kernel, &shapes)?)
}

/// The most elements one tile value may have (each is held as 8 bytes).
const MAX_TILE_ELEMENTS: u128 = 1 << 30;

/// Blocks run in parallel at a time; their stores are written before the next ones run, so
/// that the stores held at once stay bounded.
const BLOCKS_AT_ONCE: u64 = 4096;

/// Runs specialized `kernel` over `grid` with `args` (one per parameter, in order), and
/// returns what it printed; the stores are in the partitioned tensors' bytes. See the crate
/// docs for the order of blocks, reductions, prints and failures.
pub fn run(
    kernel: &TileKernel,
    args: &mut [Arg<'_>],
    grid: [u32; 3],
) -> Result<Output, InterpError> {
    if !kernel.is_specialized() {
        return Err(InterpError::Generic(kernel.name.clone()));
    }
    validate_kernel(kernel)?;
    check_args(kernel, args)?;
    if let Some(expected) = launch_grid(kernel, args)?
        && expected != grid
    {
        return Err(InterpError::GridMismatch {
            kernel: kernel.name.clone(),
            given: grid,
            expected,
        });
    }
    let (elem, shape) = value_types(kernel)?;

    let [gx, gy, gz] = grid.map(u64::from);
    // Saturating: a grid past 2^64 blocks would not finish anyway.
    let blocks = (gx * gy).saturating_mul(gz);
    let block_id = |b: u64| {
        [
            (b % gx) as u32,
            ((b / gx) % gy) as u32,
            (b / (gx * gy)) as u32,
        ]
    };
    static LAUNCHES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let id = LAUNCHES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut output = Output::default();
    let mut first = 0u64;
    while first < blocks {
        let count = (blocks - first).min(BLOCKS_AT_ONCE);
        let outs: Vec<_> = {
            let launch = Launch {
                kernel,
                elem: &elem,
                shape: &shape,
                params: params(kernel, args),
                grid,
                id,
            };
            // An indexed range: the results come back in block order.
            (0..count as usize)
                .into_par_iter()
                .map(|i| launch.block(block_id(first + i as u64)))
                .collect()
        };
        for out in outs {
            let out = out?;
            for (p, own) in &out.own {
                write_back(kernel, *p, &mut args[*p], out.block, own)?;
            }
            for &(p, addr, bits) in &out.raw {
                if let Some(Arg::Tensor(TensorArg {
                    elem,
                    data: TensorData::Write(bytes),
                    ..
                })) = args.get_mut(p as usize)
                {
                    write_elem(bytes, *elem, addr, bits);
                }
            }
            output
                .prints
                .extend(out.prints.into_iter().map(|text| Printed {
                    block: out.block,
                    text,
                }));
        }
        first += count;
    }
    Ok(output)
}

/// Checks each argument against its parameter.
fn check_args(kernel: &TileKernel, args: &[Arg<'_>]) -> Result<(), InterpError> {
    if args.len() != kernel.params.len() {
        return Err(InterpError::ArgCount {
            kernel: kernel.name.clone(),
            expected: kernel.params.len(),
            given: args.len(),
        });
    }
    for (index, (p, a)) in kernel.params.iter().zip(args).enumerate() {
        let bad = |message: String| InterpError::BadArg {
            kernel: kernel.name.clone(),
            index,
            param: p.name.clone(),
            message,
        };
        match (&p.kind, a) {
            (ParamKind::Scalar(e), Arg::Scalar(c)) => {
                if Some(c.ty) != e.known() || !c.is_canonical() {
                    return Err(bad(format!("the scalar {c} is not a {e}")));
                }
            }
            (ParamKind::Tensor(t), Arg::Tensor(a)) => {
                if Some(a.elem) != t.elem.known() {
                    return Err(bad(format!(
                        "a tensor of {} where {} is required",
                        a.elem, t.elem
                    )));
                }
                if a.shape.len() != t.rank() || a.strides.len() != t.rank() {
                    return Err(bad(format!(
                        "a tensor of rank {} with {} strides where rank {} is required",
                        a.shape.len(),
                        a.strides.len(),
                        t.rank()
                    )));
                }
                if let Some(n) = a.shape.iter().find(|&&n| i64::try_from(n).is_err()) {
                    return Err(bad(format!("a size of {n} elements along an axis")));
                }
                match t.access {
                    TensorAccess::Read => {
                        for (axis, (d, &n)) in t.dims.iter().zip(&a.shape).enumerate() {
                            if let TensorDim::Static(Dim::Known(want)) = d
                                && u64::from(*want) != n
                            {
                                return Err(bad(format!(
                                    "size {n} along axis {axis}, where the kernel declares {want}"
                                )));
                            }
                        }
                    }
                    TensorAccess::Raw | TensorAccess::Mapped => {
                        if matches!(a.data, TensorData::Read(_)) {
                            return Err(bad(
                                "a raw pointer or mapped output given read-only bytes (use TensorData::Write)"
                                    .into(),
                            ));
                        }
                    }
                    TensorAccess::Partitioned => {
                        if matches!(a.data, TensorData::Read(_)) {
                            return Err(bad(
                                "a partitioned output given read-only bytes (use TensorData::Write)"
                                    .into(),
                            ));
                        }
                    }
                }
            }
            (ParamKind::Scalar(_), Arg::Tensor(_)) => {
                return Err(bad("a tensor where a scalar is required".into()));
            }
            (ParamKind::Tensor(_), Arg::Scalar(_)) => {
                return Err(bad("a scalar where a tensor is required".into()));
            }
        }
    }
    Ok(())
}

/// The element type and shape of every value of a validated, specialized kernel.
#[allow(clippy::type_complexity)]
fn value_types(kernel: &TileKernel) -> Result<(Vec<ScalarType>, Vec<Vec<usize>>), InterpError> {
    let mut elem = Vec::with_capacity(kernel.values.len());
    let mut shape = Vec::with_capacity(kernel.values.len());
    for (_, t) in kernel.values.iter() {
        // Known in a specialized kernel that validates.
        elem.push(t.elem.known().unwrap_or(ScalarType::U8));
        let dims: Vec<usize> = t
            .shape
            .iter()
            .map(|d| d.known().unwrap_or(1) as usize)
            .collect();
        let elements = dims.iter().map(|&d| d as u128).product::<u128>();
        if elements > MAX_TILE_ELEMENTS {
            return Err(InterpError::TileTooLarge {
                kernel: kernel.name.clone(),
                elements,
            });
        }
        shape.push(dims);
    }
    Ok((elem, shape))
}

/// The parameters as the blocks read them (checked by [`check_args`]).
fn params<'a>(kernel: &'a TileKernel, args: &'a [Arg<'_>]) -> Vec<Param<'a>> {
    kernel
        .params
        .iter()
        .zip(args)
        .enumerate()
        .map(|(i, (p, a))| match a {
            Arg::Scalar(c) => Param::Scalar(c.bits),
            Arg::Tensor(t) => Param::Tensor {
                view: view(&p.name, t),
                tile: partition_tile(kernel, i),
            },
        })
        .collect()
}

fn view<'a>(name: &'a str, t: &'a TensorArg<'_>) -> TensorView<'a> {
    TensorView {
        name,
        elem: t.elem,
        shape: &t.shape,
        strides: &t.strides,
        offset: t.offset,
        bytes: t.data.bytes(),
    }
}

/// The tile shape of parameter `p` when it is a partitioned tensor.
fn partition_tile(kernel: &TileKernel, p: usize) -> Option<Vec<usize>> {
    match &kernel.params.get(p)?.kind {
        ParamKind::Tensor(t) => Some(
            t.partition_tile()?
                .iter()
                .map(|d| d.known().unwrap_or(1) as usize)
                .collect(),
        ),
        ParamKind::Scalar(_) => None,
    }
}

/// Writes what block `block` stored to its tile of partitioned tensor `p`, whose argument
/// is `arg`.
fn write_back(
    kernel: &TileKernel,
    p: usize,
    arg: &mut Arg<'_>,
    block: [u32; 3],
    own: &exec::OwnTile,
) -> Result<(), InterpError> {
    let (Arg::Tensor(t), Some(tile)) = (arg, partition_tile(kernel, p)) else {
        return Ok(());
    };
    let name = &kernel.params[p].name;
    let window = {
        let v = view(name, t);
        Window::new(&v, &own_base(block, &tile), &tile).map_err(|f| {
            InterpError::OutOfAllocation {
                kernel: kernel.name.clone(),
                block,
                param: name.clone(),
                coord: f.coord,
                address: f.address,
                elements: v.elements(),
            }
        })?
    };
    let elem = t.elem;
    if let (Some(w), TensorData::Write(bytes)) = (window, &mut t.data) {
        w.for_each(|i, a| {
            if own.written[i] {
                write_elem(bytes, elem, a, own.data[i]);
            }
        });
    }
    Ok(())
}
