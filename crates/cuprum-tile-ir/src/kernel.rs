//! The tile IR itself: kernels, parameters, statements and operations on whole tiles.
//!
//! The semantics every layer must agree on are in the crate docs ([`crate`]); each variant
//! here says what its operands must be (the validator checks it) and what it computes.

use cuprum_ir::{
    Arena, BinaryOp, CmpOp, Constant, Handle, MmaShape, ScalarType, TernaryOp, UnaryOp,
};

use crate::types::{Dim, Elem, Shape, TileType};

/// A tile value (SSA: defined once, immutable).
pub type TileValue = Handle<TileType>;

/// The kernels of one `#[cuprum::tile::module]`.
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, Default, PartialEq)]
pub struct TileModule {
    /// The entry kernels, in source order.
    pub kernels: Vec<TileKernel>,
}

/// One `#[cuprum::tile::entry]` function: what one tile block does.
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, PartialEq)]
pub struct TileKernel {
    /// The function's name.
    pub name: String,
    /// Its const generic parameters (`const BM: i32`), in declaration order; [`Dim::Param`]
    /// and [`Op::ConstParam`] name them by index.
    pub consts: Vec<ConstParam>,
    /// Its element-type generic parameters (`E: ElementType`), in declaration order;
    /// [`Elem::Param`] names them by index.
    pub types: Vec<String>,
    /// The value parameters, in declaration order.
    pub params: Vec<TileParam>,
    /// The type of every value.
    pub values: Arena<TileType>,
    /// The body, run once by every tile block. Its `yields` are empty.
    pub body: Block,
}

/// A const generic parameter of a tile kernel.
///
/// The front end gives one per scalar const generic (`const BM: i32` is named `BM`) and `N`
/// per array const generic of literal length `N` (`const S: [i32; 2]` gives `S[0]` and
/// `S[1]`, in that order, at the parameter's place among the others), so a shape `S` is
/// `[Dim::Param(i), Dim::Param(i + 1)]`. The host maps `.generics(..)` values and the tile
/// shapes of partitions onto these names and indices.
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, PartialEq)]
pub struct ConstParam {
    /// Its name in the source: `BM`, or `S[i]` for element `i` of an array parameter `S`.
    pub name: String,
    /// Its type: an integer type or `Bool`. A parameter used as a dimension must be a
    /// positive integer when the kernel is specialized.
    pub ty: ScalarType,
}

/// A value parameter of a tile kernel.
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, PartialEq)]
pub struct TileParam {
    /// Its name in the source.
    pub name: String,
    /// What it is.
    pub kind: ParamKind,
}

/// What a kernel parameter is.
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, PartialEq)]
pub enum ParamKind {
    /// A scalar passed by value; [`Op::Param`] reads it as a rank-0 tile.
    Scalar(Elem),
    /// A tensor in global memory.
    Tensor(TensorParam),
}

/// A tensor parameter: `&Tensor<E, {[..]}>` or `&mut Tensor<E, {[..]}>`.
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, PartialEq)]
pub struct TensorParam {
    /// The element type.
    pub elem: Elem,
    /// The declared shape: its rank, and which dimensions are fixed. For a
    /// [`TensorAccess::Partitioned`] tensor these are the tile shape (all static).
    pub dims: Vec<TensorDim>,
    /// How the kernel may use it.
    pub access: TensorAccess,
}

impl TensorParam {
    /// The rank.
    pub fn rank(&self) -> usize {
        self.dims.len()
    }

    /// For a partitioned tensor, the shape of the tile each block owns.
    pub fn partition_tile(&self) -> Option<Shape> {
        if self.access != TensorAccess::Partitioned {
            return None;
        }
        self.static_dims()
    }

    /// For a mapped output, the shape of its tiles.
    pub fn mapped_tile(&self) -> Option<Shape> {
        if self.access != TensorAccess::Mapped {
            return None;
        }
        self.static_dims()
    }

    /// The declared dims when every one is static.
    fn static_dims(&self) -> Option<Shape> {
        self.dims
            .iter()
            .map(|d| match d {
                TensorDim::Static(d) => Some(*d),
                TensorDim::Dynamic => None,
            })
            .collect()
    }
}

/// One dimension of a declared tensor shape.
#[derive(serde::Serialize, serde::Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub enum TensorDim {
    /// `-1`: any size, read at launch.
    Dynamic,
    /// A size the tensor must have (checked at launch); for a partitioned tensor, the tile's
    /// size along this axis.
    Static(Dim),
}

/// How a kernel uses a tensor parameter.
#[derive(serde::Serialize, serde::Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub enum TensorAccess {
    /// `&Tensor`: read, anywhere, and written by nobody during the launch.
    Read,
    /// `&mut Tensor<E, S>`: the host partitions it into tiles of shape `S` (the declared
    /// dims); the grid has one tile block per tile, and block `b` reads and writes only tile
    /// `b` ([`View::Own`], [`Stmt::Store`]). So no two blocks touch one element.
    Partitioned,
    /// `*mut E`, a raw device pointer of an `unsafe` entry: the elements from the pointer to
    /// the end of its allocation, seen as a rank-1 tensor of that (dynamic) size, read by
    /// [`Op::Gather`] and written by [`Stmt::Scatter`] at any offsets. An offset outside it
    /// (below 0, or at or past its size) reads padding and is not written, so even a raw
    /// pointer never reaches outside its allocation. What the entry's `unsafe` leaves to
    /// its caller is the absence of races: no element that one tile block writes may be
    /// read or written by another during the launch (which block's write lands, and what
    /// such a read sees, is then unspecified). Within a block, accesses happen in program
    /// order.
    Raw,
    /// `MappedPartitionMut<E, S, M>`: an output cut into tiles of shape `S` (the declared
    /// dims) that a persistent schedule deals to the tile blocks ([`Stmt::ForTiles`]): the
    /// launch has any number `g` of blocks along grid axis x (the host's choice) and 1 along
    /// the others; block `b` visits tiles `b, b + g, b + 2g, ..` of the schedule's order
    /// ([`crate::grid::mapped_tile`]) and writes only those ([`Stmt::StoreMapped`]), so no
    /// two blocks touch one element.
    Mapped,
}

/// A sequence of statements, and what it gives its parent when it ends normally.
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, Default, PartialEq)]
pub struct Block {
    /// The statements, run in order.
    pub stmts: Vec<Stmt>,
    /// The values the block ends with: an `If`'s results, a loop's next arguments, a reduce
    /// closure's result. Empty for the kernel body.
    pub yields: Vec<TileValue>,
}

/// Where a [`Op::Load`] reads.
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, PartialEq)]
pub enum View {
    /// The tile of partitioned tensor `tensor` that this tile block owns (the tensor's tile
    /// shape, at this block's index).
    Own {
        /// The parameter index of a [`TensorAccess::Partitioned`] tensor.
        tensor: u32,
    },
    /// Tile `index` of read-only tensor `tensor` cut into tiles of shape `tile`: the element
    /// at tile coordinate `c` is the tensor's element `index * tile + c` (per axis).
    Tiled {
        /// The parameter index of a [`TensorAccess::Read`] tensor.
        tensor: u32,
        /// The tile shape, of the tensor's rank.
        tile: Shape,
        /// One rank-0 integer per axis: which tile.
        index: Vec<TileValue>,
    },
    /// Tile `index` of read-only tensor `tensor` seen with its axes permuted (the source's
    /// `x.partition_permuted(tile, dim_map).load(index)`): axis `i` of the view is the
    /// tensor's axis `dim_map[i]`, so the element at tile coordinate `c` is the tensor's
    /// element whose coordinate along axis `dim_map[i]` is `index[i] * tile[i] + c[i]`.
    Permuted {
        /// The parameter index of a [`TensorAccess::Read`] tensor.
        tensor: u32,
        /// The tile shape, in the view's axis order, of the tensor's rank.
        tile: Shape,
        /// One rank-0 integer per axis of the view: which tile.
        index: Vec<TileValue>,
        /// A permutation of the tensor's axes (`0..rank`), possibly naming const parameters
        /// until specialization.
        dim_map: Vec<crate::types::Axis>,
    },
}

impl View {
    /// The tensor parameter read.
    pub fn tensor(&self) -> u32 {
        match self {
            View::Own { tensor } | View::Tiled { tensor, .. } | View::Permuted { tensor, .. } => {
                *tensor
            }
        }
    }
}

/// A literal whose type may be a type parameter until specialization.
#[derive(serde::Serialize, serde::Deserialize, Clone, Copy, Debug, PartialEq)]
pub enum Literal {
    /// An exact constant of a known type.
    Exact(Constant),
    /// An integer literal, converted to the element type with Rust's `as`.
    Int(i64),
    /// A float literal, converted to the element type with Rust's `as` (from `f64`).
    Float(f64),
    /// `true` or `false`.
    Bool(bool),
}

impl Literal {
    /// The constant this literal stands for as an element of type `ty`: an exact constant of
    /// that type as it is, an integer or float literal converted with Rust's `as` (from `i64`
    /// or `f64`), a bool literal as a `Bool`. `None` when it cannot be one (a number for
    /// `bool`, a bool for a number, an exact constant of another type). Specialization and
    /// the back ends convert literals only through this.
    pub fn to_constant(self, ty: ScalarType) -> Option<Constant> {
        match self {
            Literal::Exact(c) => (c.ty == ty).then_some(c),
            Literal::Bool(b) => (ty == ScalarType::Bool).then(|| Constant::bool(b)),
            Literal::Int(i) => (ty != ScalarType::Bool)
                .then(|| cuprum_ir::scalar::cast_constant(Constant::i64(i), ty)),
            Literal::Float(x) => (ty != ScalarType::Bool)
                .then(|| cuprum_ir::scalar::cast_constant(Constant::f64(x), ty)),
        }
    }
}

/// How [`Op::Reduce`] combines two elements.
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, PartialEq)]
pub enum Combine {
    /// Sum (wrapping on integers).
    Sum,
    /// Product (wrapping on integers).
    Prod,
    /// Minimum (the IR's `Min`: a NaN operand yields the other one).
    Min,
    /// Maximum (the IR's `Max`).
    Max,
    /// A closure `|a, b| ..`: `a` and `b` are rank-0 values of the element type defined only
    /// inside `body`, whose one yield is the combined value. It must be associative and
    /// commutative for a deterministic result (the order of combination is unspecified), and
    /// `identity` combined with any `x` must give `x`.
    Closure {
        /// The first operand.
        a: TileValue,
        /// The second operand.
        b: TileValue,
        /// Computes the combined value (one yield, rank 0, the element type).
        body: Block,
        /// The identity element.
        identity: Literal,
    },
}

/// An operation producing one tile.
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, PartialEq)]
pub enum Op {
    /// Every element is `value` converted to `elem`.
    Const {
        /// The value.
        value: Literal,
        /// The element type.
        elem: Elem,
        /// The shape.
        shape: Shape,
    },
    /// The value of const generic parameter `index`, a rank-0 tile of its type.
    ConstParam(u32),
    /// The value of scalar parameter `index`, a rank-0 tile.
    Param(u32),
    /// This tile block's index along grid axis `axis` (0, 1 or 2): rank-0 `I32`.
    BlockId(u32),
    /// The number of tile blocks along grid axis `axis`: rank-0 `I32`.
    NumBlocks(u32),
    /// The size of tensor parameter `tensor` along `axis` (the whole tensor, also for a
    /// partitioned one): rank-0 `I64`.
    TensorDim {
        /// The tensor parameter's index.
        tensor: u32,
        /// The axis.
        axis: u32,
    },
    /// A tile whose element at coordinate `c` is `c[axis]`, converted to `elem` (an integer
    /// type).
    Iota {
        /// The integer element type.
        elem: Elem,
        /// The shape.
        shape: Shape,
        /// The axis counted along.
        axis: u32,
    },
    /// Element-wise; the result has the operand's type.
    Unary(UnaryOp, TileValue),
    /// Element-wise on two tiles of one type and shape; the result has that type (shifts
    /// take a `U32` right operand of the same shape).
    Binary(BinaryOp, TileValue, TileValue),
    /// Element-wise on three tiles of one type and shape.
    Ternary(TernaryOp, TileValue, TileValue, TileValue),
    /// Element-wise comparison of two tiles of one type and shape: a `Bool` tile.
    Compare(CmpOp, TileValue, TileValue),
    /// Element-wise `cond ? if_true : if_false`; all three of one shape, `cond` of `Bool`.
    Select {
        /// The `Bool` selector.
        cond: TileValue,
        /// Where `cond` is true.
        if_true: TileValue,
        /// Where `cond` is false.
        if_false: TileValue,
    },
    /// Element-wise Rust `as` (the kernel IR's `Cast`).
    Cast {
        /// The tile converted.
        value: TileValue,
        /// The new element type (not `Bool`).
        to: Elem,
    },
    /// Element-wise reinterpretation of the bits, as the kernel IR's `Bitcast`.
    Bitcast {
        /// The tile whose bits are reused.
        value: TileValue,
        /// The new element type, of the same size.
        to: Elem,
    },
    /// Repeats `value` along its dimensions of size 1 to `shape`, of the same rank: the
    /// element at `c` is `value`'s element at `c` with every broadcast axis set to 0.
    Broadcast {
        /// The tile broadcast.
        value: TileValue,
        /// The result shape.
        shape: Shape,
    },
    /// The same elements in row-major order, in a shape of the same element count.
    Reshape {
        /// The tile reshaped.
        value: TileValue,
        /// The result shape.
        shape: Shape,
    },
    /// Reorders the axes: result axis `i` is `value`'s axis `perm[i]` (a transpose of a
    /// rank-2 tile is `perm = [1, 0]`).
    Permute {
        /// The tile permuted.
        value: TileValue,
        /// A permutation of `0..rank`.
        perm: Vec<u32>,
    },
    /// Combines the elements along `axis`: the result has `value`'s shape without that axis
    /// and the same element type. The order of combination is unspecified (float sums may
    /// differ in the last bits between backends).
    Reduce {
        /// The tile reduced.
        value: TileValue,
        /// The axis removed.
        axis: u32,
        /// How two elements combine.
        combine: Combine,
    },
    /// A matrix multiply-accumulate, `a · b + acc`: `a` is `[M, K]`, `b` `[K, N]` and `acc`
    /// and the result `[M, N]`, or all three with one more leading batch axis of one size
    /// (`[B, M, K]`, `[B, K, N]`, `[B, M, N]`: batch `i` of the result is batch `i` of `a`
    /// times batch `i` of `b` plus batch `i` of `acc`). `a` and `b` have one float element
    /// type; the result has `acc`'s. The arithmetic is defined exactly, so that every
    /// backend agrees bit for bit (see [`MmaKind::of`] for the accepted types):
    ///
    /// * `f16`, `bf16` or `tf32` inputs, `f32` accumulator ([`MmaKind::TensorCore`]):
    ///   element `(i, j)` is `d_K`, where `d_0 = acc[i][j]` and `d_{k+s}` is `d_k` plus the
    ///   `s` products `a[i][k..k+s] * b[k..k+s][j]` (`s` is [`MmaKind::k_step`]: 16 for the
    ///   16-bit inputs, 8 for `tf32`; fewer in the last step when `K` is not a multiple of
    ///   `s`: as if zeros padded it, which the tensor cores' sums skip) added as the tensor
    ///   cores add (`cuprum_ir::tensor_core::dot`, the arithmetic `Stmt::Mma` of the kernel
    ///   IR documents: exact products, alignment to the largest exponent, truncation, one
    ///   exact sum, rounding toward zero), each element read as `MmaShape::element` reads it
    ///   (a `tf32` with low bits set, as one loaded from memory may have, is truncated).
    ///   `mma.sync m16n8k16` (`m16n8k8` for `tf32`) and `wgmma` with K = 16 (8) steps compute
    ///   exactly these sums.
    /// * `f32` or `f64` inputs and accumulator of the same type ([`MmaKind::FmaChain`]):
    ///   element `(i, j)` is `d_K`, where `d_0 = acc[i][j]` and
    ///   `d_{k+1} = fma(a[i][k], b[k][j], d_k)`, one IEEE fused multiply-add at a time in
    ///   order of `k`.
    Mma {
        /// The left operand, `[M, K]` or `[B, M, K]`.
        a: TileValue,
        /// The right operand, `[K, N]` or `[B, K, N]`.
        b: TileValue,
        /// The accumulator, `[M, N]` or `[B, M, N]`.
        acc: TileValue,
    },
    /// Reads the elements of raw pointer parameter `tensor` ([`TensorAccess::Raw`]) at
    /// `offsets` (an integer tile of any shape, counted in elements from the pointer): the
    /// result has `offsets`' shape and the pointer's element type, and its element at `c` is
    /// the element at `offsets[c]`, or `padding` where `mask` (a `Bool` tile of the same
    /// shape) is false or the offset is outside the pointer's elements (see
    /// [`TensorAccess::Raw`]). Masked-off elements are not read.
    Gather {
        /// The parameter index of a [`TensorAccess::Raw`] tensor.
        tensor: u32,
        /// Where each element is read, in elements from the pointer.
        offsets: TileValue,
        /// Which elements are read (all when `None`).
        mask: Option<TileValue>,
        /// The value of elements not read.
        padding: Literal,
    },
    /// Reads a tile from a tensor (see [`View`]). Elements outside the tensor (a coordinate
    /// `< 0` or `>=` the tensor's size on some axis) read `padding` instead: edge tiles need
    /// no checks in the kernel, and never fault.
    Load {
        /// Where it reads.
        view: View,
        /// The value of elements outside the tensor.
        padding: Literal,
    },
}

/// One statement of a [`Block`].
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, PartialEq)]
pub enum Stmt {
    /// Defines `value` as the result of `op`.
    Def {
        /// The value defined.
        value: TileValue,
        /// The operation computing it.
        op: Op,
    },
    /// Writes `value` to the tile this block owns of partitioned tensor `tensor` (the tile
    /// shape, the tensor's element type); elements outside the tensor are dropped.
    Store {
        /// The parameter index of a [`TensorAccess::Partitioned`] tensor.
        tensor: u32,
        /// The tile stored.
        value: TileValue,
    },
    /// Writes `value` to sub-tile `index` of the tile this block owns of partitioned tensor
    /// `tensor`, that tile being cut into tiles of shape `tile` (the source's
    /// `z.partition_mut(shape).store(t, [i, j])`): the element at coordinate `c` of `value`
    /// goes to coordinate `index * tile + c` (per axis) of the owned tile. Elements that fall
    /// outside the owned tile or outside the tensor are dropped, as [`Stmt::Store`] drops
    /// those outside the tensor, so a block still writes only its own tile.
    StorePart {
        /// The parameter index of a [`TensorAccess::Partitioned`] tensor.
        tensor: u32,
        /// The sub-tile shape, of the tensor's rank; `value` has this shape and the tensor's
        /// element type.
        tile: Shape,
        /// One rank-0 integer per axis: which sub-tile of the owned tile.
        index: Vec<TileValue>,
        /// The tile stored.
        value: TileValue,
    },
    /// Writes `value[c]` to the element at `offsets[c]` of raw pointer parameter `tensor`
    /// ([`TensorAccess::Raw`]) for every `c` where `mask` is true (all when `None`) and the
    /// offset is inside the pointer's elements; the others are dropped. `offsets`, `value`
    /// and `mask` have one shape; `value` the pointer's element type. Where two elements of
    /// one scatter name one offset, one of them is written (which one is unspecified).
    Scatter {
        /// The parameter index of a [`TensorAccess::Raw`] tensor.
        tensor: u32,
        /// Where each element goes, in elements from the pointer (an integer tile).
        offsets: TileValue,
        /// The elements written.
        value: TileValue,
        /// Which elements are written (all when `None`).
        mask: Option<TileValue>,
    },
    /// Runs `then` when the rank-0 `Bool` `cond` is true, else `otherwise`; `results` take
    /// the yields of the branch that ran (same count and types).
    If {
        /// The rank-0 `Bool` condition.
        cond: TileValue,
        /// Run when `cond` is true.
        then: Block,
        /// Run when it is false.
        otherwise: Block,
        /// Defined by the branch's yields.
        results: Vec<TileValue>,
    },
    /// A counted loop: `counter` takes `start`, `start + step`, ... while `counter < end`
    /// (all three rank-0 of one integer type; `step > 0`, else the launch fails). The
    /// progression never wraps: a value past the type's range is not below `end`, so the
    /// loop ends there. `args`
    /// start as `inits`; each iteration's body yields the next `args`; `results` are the
    /// `args` after the last iteration (or a [`Stmt::Break`]'s values). `counter` and `args`
    /// are defined only inside `body`.
    For {
        /// The loop counter, defined inside `body`.
        counter: TileValue,
        /// The first counter value.
        start: TileValue,
        /// The bound (exclusive).
        end: TileValue,
        /// The increment (positive).
        step: TileValue,
        /// The loop-carried values, defined inside `body`.
        args: Vec<TileValue>,
        /// Their values before the first iteration.
        inits: Vec<TileValue>,
        /// The body; its yields are the next iteration's `args`.
        body: Block,
        /// The loop's results, defined after it.
        results: Vec<TileValue>,
    },
    /// Repeats `body` until a [`Stmt::Break`]; `args`, `inits` and `results` as in
    /// [`Stmt::For`].
    Loop {
        /// The loop-carried values, defined inside `body`.
        args: Vec<TileValue>,
        /// Their values before the first iteration.
        inits: Vec<TileValue>,
        /// The body; its yields are the next iteration's `args`.
        body: Block,
        /// The loop's results: a `Break`'s values.
        results: Vec<TileValue>,
    },
    /// Runs `body` once for each tile of mapped output `tensor` ([`TensorAccess::Mapped`])
    /// that this tile block visits, in the schedule's order: tiles `b, b + g, ..` below the
    /// tensor's tile count (`b` this block's index along grid axis x, `g` the grid's size
    /// there), tile `t` being at the tile coordinates [`crate::grid::mapped_tile`] gives;
    /// `coords` (rank-0 `I32`, one per axis, defined only inside `body`) hold them. `args`,
    /// `inits` and `results` as in [`Stmt::For`]; `Break` and `Continue` act on it.
    ForTiles {
        /// The parameter index of a [`TensorAccess::Mapped`] tensor.
        tensor: u32,
        /// The schedule's map shape (one entry per axis, each at least 1, all but the last
        /// two 1): tiles are taken in bands of `map[rank - 2]` rows of tiles.
        map: Shape,
        /// The current tile's coordinates, defined inside `body`.
        coords: Vec<TileValue>,
        /// The loop-carried values, defined inside `body`.
        args: Vec<TileValue>,
        /// Their values before the first iteration.
        inits: Vec<TileValue>,
        /// The body; its yields are the next iteration's `args`.
        body: Block,
        /// The loop's results, defined after it.
        results: Vec<TileValue>,
    },
    /// Writes `value` (the tile shape, the tensor's element type) to the current tile of the
    /// innermost enclosing [`Stmt::ForTiles`] over mapped output `tensor`; elements outside
    /// the tensor are dropped.
    StoreMapped {
        /// The parameter index of a [`TensorAccess::Mapped`] tensor.
        tensor: u32,
        /// The tile stored.
        value: TileValue,
    },
    /// Leaves the innermost loop; its `results` take `values`. Ends the block it is in.
    Break {
        /// One per loop result.
        values: Vec<TileValue>,
    },
    /// Starts the next iteration of the innermost loop with `args` = `values`. Ends the
    /// block it is in.
    Continue {
        /// One per loop argument.
        values: Vec<TileValue>,
    },
    /// Ends the tile block. Ends the block it is in.
    Return,
    /// Prints `format` (C `printf` subset of `cuprum_ir::printf`) with rank-0 `args`, once
    /// per tile block.
    Print {
        /// The format.
        format: String,
        /// Rank-0 arguments.
        args: Vec<TileValue>,
    },
    /// Fails the launch with `message` when the rank-0 `Bool` `cond` is false.
    Assert {
        /// What must hold.
        cond: TileValue,
        /// Said when it does not.
        message: String,
    },
    /// Line information: the statements after it (up to the next one) come from `line`,
    /// `column` of source file `file` (a path as the compiler saw it). It does nothing: no
    /// operands, results or effects, so the interpreter skips it and every analysis looks
    /// past it; the lowering emits the kernel IR's `cuprum_ir::Stmt::SourceLine` (the PTX's
    /// `.file`/`.loc`) where it stands. The front end writes it only when asked
    /// (`CUPRUM_LINEINFO` at build time): without it a kernel has none.
    SourceLine {
        /// The source file's path.
        file: String,
        /// 1-based line.
        line: u32,
        /// 1-based column, 0 when unknown.
        column: u32,
    },
}

impl Stmt {
    /// Whether the statement ends its block (nothing after it runs).
    pub fn is_terminator(&self) -> bool {
        matches!(
            self,
            Stmt::Break { .. } | Stmt::Continue { .. } | Stmt::Return
        )
    }

    /// Whether the statement is line information ([`Stmt::SourceLine`]), which analyses
    /// that look for patterns of statements skip.
    pub fn is_source_line(&self) -> bool {
        matches!(self, Stmt::SourceLine { .. })
    }

    /// The blocks nested in the statement.
    pub fn nested(&self) -> Vec<&Block> {
        match self {
            Stmt::If {
                then, otherwise, ..
            } => vec![then, otherwise],
            Stmt::For { body, .. } | Stmt::Loop { body, .. } | Stmt::ForTiles { body, .. } => {
                vec![body]
            }
            Stmt::Def {
                op:
                    Op::Reduce {
                        combine: Combine::Closure { body, .. },
                        ..
                    },
                ..
            } => vec![body],
            _ => Vec::new(),
        }
    }

    /// The values the statement reads directly (not those of nested blocks).
    pub fn operands(&self) -> Vec<TileValue> {
        match self {
            Stmt::Def { op, .. } => op.operands(),
            Stmt::Store { value, .. } => vec![*value],
            Stmt::StorePart { index, value, .. } => index.iter().copied().chain([*value]).collect(),
            Stmt::Scatter {
                offsets,
                value,
                mask,
                ..
            } => [*offsets, *value].into_iter().chain(*mask).collect(),
            Stmt::If { cond, .. } => vec![*cond],
            Stmt::For {
                start,
                end,
                step,
                inits,
                ..
            } => [*start, *end, *step]
                .into_iter()
                .chain(inits.iter().copied())
                .collect(),
            Stmt::Loop { inits, .. } | Stmt::ForTiles { inits, .. } => inits.clone(),
            Stmt::StoreMapped { value, .. } => vec![*value],
            Stmt::Break { values } | Stmt::Continue { values } => values.clone(),
            Stmt::Return => Vec::new(),
            Stmt::Print { args, .. } => args.clone(),
            Stmt::Assert { cond, .. } => vec![*cond],
            Stmt::SourceLine { .. } => Vec::new(),
        }
    }
}

impl Op {
    /// The values the operation reads (not those of a closure's body).
    pub fn operands(&self) -> Vec<TileValue> {
        match self {
            Op::Const { .. }
            | Op::ConstParam(_)
            | Op::Param(_)
            | Op::BlockId(_)
            | Op::NumBlocks(_)
            | Op::TensorDim { .. }
            | Op::Iota { .. } => Vec::new(),
            Op::Unary(_, a)
            | Op::Cast { value: a, .. }
            | Op::Bitcast { value: a, .. }
            | Op::Broadcast { value: a, .. }
            | Op::Reshape { value: a, .. }
            | Op::Permute { value: a, .. }
            | Op::Reduce { value: a, .. } => vec![*a],
            Op::Binary(_, a, b) | Op::Compare(_, a, b) => vec![*a, *b],
            Op::Ternary(_, a, b, c) | Op::Mma { a, b, acc: c } => vec![*a, *b, *c],
            Op::Select {
                cond,
                if_true,
                if_false,
            } => vec![*cond, *if_true, *if_false],
            Op::Gather { offsets, mask, .. } => [*offsets].into_iter().chain(*mask).collect(),
            Op::Load { view, .. } => match view {
                View::Own { .. } => Vec::new(),
                View::Tiled { index, .. } | View::Permuted { index, .. } => index.clone(),
            },
        }
    }
}

/// How an [`Op::Mma`] computes, fixed by its element types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MmaKind {
    /// `f16`, `bf16` or `tf32` inputs with an `f32` accumulator, summed [`MmaKind::k_step`]
    /// products at a time as the tensor cores sum.
    TensorCore {
        /// The input element type (`F16`, `BF16` or `Tf32`).
        input: ScalarType,
    },
    /// `f32` or `f64` inputs and accumulator, one fused multiply-add per product.
    FmaChain {
        /// The element type of all three operands.
        elem: ScalarType,
    },
}

impl MmaKind {
    /// The tensor-core instruction shape of a [`MmaKind::TensorCore`] `mma`: its fragments
    /// and the K of one step.
    pub const fn shape(self) -> Option<MmaShape> {
        match self {
            MmaKind::TensorCore { input } => MmaShape::for_input(input),
            MmaKind::FmaChain { .. } => None,
        }
    }

    /// The products one step sums: the tensor-core shape's K (16 for `f16`/`bf16`, 8 for
    /// `tf32`; the last step of a `K` that is not a multiple of it sums fewer), or 1 for an
    /// FMA chain.
    pub const fn k_step(self) -> u32 {
        match self.shape() {
            Some(shape) => shape.k() as u32,
            None => 1,
        }
    }

    /// The kind of an `mma` with inputs of type `input` and an accumulator of type `acc`,
    /// or `None` when no `mma` takes those types (the one rule the validator, the front end,
    /// the interpreter and the lowering ask).
    pub fn of(input: ScalarType, acc: ScalarType) -> Option<MmaKind> {
        use ScalarType as S;
        match (input, acc) {
            (S::F16 | S::BF16 | S::Tf32, S::F32) => Some(MmaKind::TensorCore { input }),
            (S::F32, S::F32) | (S::F64, S::F64) => Some(MmaKind::FmaChain { elem: input }),
            _ => None,
        }
    }
}

impl Block {
    /// Calls `f` on every statement of the block and of the blocks nested in it, parents
    /// first.
    pub fn visit<'a>(&'a self, f: &mut impl FnMut(&'a Stmt)) {
        for s in &self.stmts {
            f(s);
            for b in s.nested() {
                b.visit(f);
            }
        }
    }
}

impl TileKernel {
    /// Whether parameter `tensor` is a tensor nobody writes during the launch
    /// ([`TensorAccess::Read`]), so that its loads may be made earlier, later or again.
    pub fn is_read_only_tensor(&self, tensor: u32) -> bool {
        self.params.get(tensor as usize).is_some_and(
            |p| matches!(&p.kind, ParamKind::Tensor(t) if t.access == TensorAccess::Read),
        )
    }

    /// The type of `value`.
    pub fn ty(&self, value: TileValue) -> &TileType {
        &self.values[value]
    }

    /// Whether every dimension, element type and literal is known (no generic parameter is
    /// left), so that the kernel can be interpreted or lowered.
    pub fn is_specialized(&self) -> bool {
        self.consts.is_empty() && self.types.is_empty()
    }
}
