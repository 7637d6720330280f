//! Building test kernels with `TileBuilder` in few lines, and moving typed data in and out
//! of the little-endian bytes the interpreter takes.

#![allow(dead_code, unused_imports)]

use cuprum_tile_interp::{Arg, InterpError, Output, launch_grid, run};
use cuprum_tile_ir::*;

pub use ScalarType::{F32, I32, I64, U32};

/// A Rust type held in tensors, as little-endian bytes.
pub trait El: Copy {
    const TY: ScalarType;
    fn put(self, out: &mut Vec<u8>);
    fn get(b: &[u8]) -> Self;
}

macro_rules! el {
    ($($t:ty => $s:ident),*) => {$(
        impl El for $t {
            const TY: ScalarType = ScalarType::$s;
            fn put(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn get(b: &[u8]) -> Self {
                <$t>::from_le_bytes(b.try_into().expect("element size"))
            }
        }
    )*};
}
el!(f32 => F32, f64 => F64, i32 => I32, u32 => U32, i64 => I64);

/// The bytes of `v`.
pub fn bytes<T: El>(v: &[T]) -> Vec<u8> {
    let mut out = Vec::with_capacity(v.len() * 8);
    for &x in v {
        x.put(&mut out);
    }
    out
}

/// The elements in `b`.
pub fn values<T: El>(b: &[u8]) -> Vec<T> {
    b.chunks_exact(std::mem::size_of::<T>())
        .map(T::get)
        .collect()
}

/// `n` poison `f32`s as bytes (a NaN no arithmetic produces).
pub fn poison_f32(n: usize) -> Vec<u8> {
    bytes(&cuprum_testkit::poison::poisoned::<f32>(n))
}

/// `n` poison `u32`s as bytes (used for `i32` outputs too).
pub fn poison_u32(n: usize) -> Vec<u8> {
    bytes(&cuprum_testkit::poison::poisoned::<u32>(n))
}

/// Runs `kernel` over the grid its partitioned tensors give.
pub fn launch(kernel: &TileKernel, args: &mut [Arg<'_>]) -> Result<Output, InterpError> {
    let grid = launch_grid(kernel, args)?.expect("a kernel with partitioned tensors");
    run(kernel, args, grid)
}

/// A read-only tensor parameter of rank `rank`, every size dynamic.
pub fn input(b: &mut TileBuilder, name: &str, ty: ScalarType, rank: usize) -> u32 {
    b.param(
        name,
        ParamKind::Tensor(TensorParam {
            elem: Elem::Known(ty),
            dims: vec![TensorDim::Dynamic; rank],
            access: TensorAccess::Read,
        }),
    )
}

/// A partitioned output parameter cut into tiles `tile`.
pub fn output(b: &mut TileBuilder, name: &str, ty: ScalarType, tile: &[u32]) -> u32 {
    b.param(
        name,
        ParamKind::Tensor(TensorParam {
            elem: Elem::Known(ty),
            dims: tile
                .iter()
                .map(|&t| TensorDim::Static(Dim::Known(t)))
                .collect(),
            access: TensorAccess::Partitioned,
        }),
    )
}

/// A scalar parameter.
pub fn scalar(b: &mut TileBuilder, name: &str, ty: ScalarType) -> u32 {
    b.param(name, ParamKind::Scalar(Elem::Known(ty)))
}

/// Appends `op`, which must type.
#[track_caller]
pub fn def(b: &mut TileBuilder, op: Op) -> TileValue {
    match b.def(op) {
        Ok(v) => v,
        Err(e) => panic!("{e}"),
    }
}

/// A constant tile.
pub fn konst(b: &mut TileBuilder, ty: ScalarType, value: Literal, shape: &[u32]) -> TileValue {
    def(
        b,
        Op::Const {
            value,
            elem: Elem::Known(ty),
            shape: shape_of(shape),
        },
    )
}

/// A rank-0 integer constant.
pub fn int(b: &mut TileBuilder, ty: ScalarType, v: i64) -> TileValue {
    konst(b, ty, Literal::Int(v), &[])
}

/// A rank-0 float constant.
pub fn float(b: &mut TileBuilder, ty: ScalarType, v: f64) -> TileValue {
    konst(b, ty, Literal::Float(v), &[])
}

pub fn bin(b: &mut TileBuilder, op: BinaryOp, x: TileValue, y: TileValue) -> TileValue {
    def(b, Op::Binary(op, x, y))
}

pub fn block_id(b: &mut TileBuilder, axis: u32) -> TileValue {
    def(b, Op::BlockId(axis))
}

/// Tile `index` of shape `tile` of read-only `tensor`, `pad` outside it.
pub fn load_tiled(
    b: &mut TileBuilder,
    tensor: u32,
    tile: &[u32],
    index: Vec<TileValue>,
    pad: Literal,
) -> TileValue {
    def(
        b,
        Op::Load {
            view: View::Tiled {
                tensor,
                tile: shape_of(tile),
                index,
            },
            padding: pad,
        },
    )
}

/// This block's own tile of partitioned `tensor`.
pub fn load_own(b: &mut TileBuilder, tensor: u32, pad: Literal) -> TileValue {
    def(
        b,
        Op::Load {
            view: View::Own { tensor },
            padding: pad,
        },
    )
}

pub fn store(b: &mut TileBuilder, tensor: u32, value: TileValue) {
    b.push(Stmt::Store { tensor, value });
}

/// `value` (of any rank, size-1 axes where it is repeated) repeated to `shape`, through a
/// reshape to rank `shape.len()` first when `value` is rank 0.
pub fn splat(b: &mut TileBuilder, value: TileValue, shape: &[u32]) -> TileValue {
    let v = if b.ty(value).is_scalar() {
        def(
            b,
            Op::Reshape {
                value,
                shape: shape_of(&vec![1; shape.len()]),
            },
        )
    } else {
        value
    };
    def(
        b,
        Op::Broadcast {
            value: v,
            shape: shape_of(shape),
        },
    )
}
