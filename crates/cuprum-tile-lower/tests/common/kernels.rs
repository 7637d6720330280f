//! Tile kernels more than one test file uses.

use cuprum_ir::{BinaryOp, CmpOp, ScalarType, UnaryOp};
use cuprum_tile_ir::{Combine, Literal, Op, Stmt, TileKernel, TileType};

use super::Tk;

/// Cutile's softmax example: `reduce_max(x, 1).reshape([BM, 1]).broadcast([BM, BN])`,
/// `exp(x - max)`, `reduce_sum`, divide.
pub fn softmax(tile: [u32; 2]) -> TileKernel {
    let [bm, bn] = tile;
    let mut t = Tk::new("softmax");
    let y = t.output("y", ScalarType::F32, &tile);
    let x = t.input("x", ScalarType::F32, 2);
    let (i, j) = (t.block_id(0), t.block_id(1));
    let tx = t.load(x, &tile, vec![i, j], Literal::Float(f64::NEG_INFINITY));
    let mx = t.reduce(tx, 1, Combine::Max);
    let mx = t.reshape(mx, &[bm, 1]);
    let mx = t.broadcast(mx, &tile);
    let d = t.bin(BinaryOp::Sub, tx, mx);
    let num = t.un(UnaryOp::Exp, d);
    let den = t.reduce(num, 1, Combine::Sum);
    let den = t.reshape(den, &[bm, 1]);
    let den = t.broadcast(den, &[bm, bn]);
    let r = t.bin(BinaryOp::Div, num, den);
    t.store(y, r);
    t.finish()
}

/// `z = x + y` on tiles of `tile` elements of `ty`.
pub fn add(ty: ScalarType, tile: u32) -> TileKernel {
    let mut t = Tk::new("add");
    let z = t.output("z", ty, &[tile]);
    let x = t.input("x", ty, 1);
    let y = t.input("y", ty, 1);
    let pid = t.block_id(0);
    let zero = Literal::Exact(cuprum_ir::Constant::new(ty, 0));
    let a = t.load(x, &[tile], vec![pid], zero);
    let b = t.load(y, &[tile], vec![pid], zero);
    let s = t.bin(BinaryOp::Add, a, b);
    t.store(z, s);
    t.finish()
}

/// `out` (tile `[32, 16]`) is `x` transposed: a permutation, then a conversion through
/// shared memory to the store's layout.
pub fn transpose() -> TileKernel {
    let mut t = Tk::new("transpose");
    let out = t.output("out", ScalarType::F32, &[32, 16]);
    let x = t.input("x", ScalarType::F32, 2);
    let (i, j) = (t.block_id(0), t.block_id(1));
    let tx = t.load(x, &[16, 32], vec![j, i], Literal::Float(0.0));
    let p = t.def(Op::Permute {
        value: tx,
        perm: vec![1, 0],
    });
    t.store(out, p);
    t.finish()
}

/// A bit of everything scalar: a `for` loop over column tiles with a closure reduction
/// along axis 0, an `if` with results, a print, an assertion and a division.
pub fn control() -> TileKernel {
    let mut t = Tk::new("control");
    let out = t.output("out", ScalarType::I32, &[64]);
    let x = t.input("x", ScalarType::I32, 2);
    let d = t.scalar_param("d", ScalarType::I32);
    let pid = t.block_id(0);
    let zero = t.int(0);
    let start = t.int(0);
    let end = t.int(4);
    let step = t.int(1);
    let acc0 = t.constant(ScalarType::I32, Literal::Int(0), &[64]);
    let counter = t.b.value(TileType::scalar(ScalarType::I32));
    let acc = t.b.value(t.ty(acc0));
    let result = t.b.value(t.ty(acc0));
    let body = t.block(|t| {
        let tile = t.load(x, &[16, 64], vec![counter, pid], Literal::Int(0));
        let c = t.closure(ScalarType::I32, Literal::Int(0), |t, a, b| {
            t.bin(BinaryOp::Xor, a, b)
        });
        let s = t.reduce(tile, 0, c);
        vec![t.bin(BinaryOp::Add, acc, s)]
    });
    t.push(Stmt::For {
        counter,
        start,
        end,
        step,
        args: vec![acc],
        inits: vec![acc0],
        body,
        results: vec![result],
    });
    let ds = t.splat(d, &[64]);
    let q = t.bin(BinaryOp::Div, result, ds);
    let total = t.reduce(q, 0, Combine::Sum);
    let big = t.cmp(CmpOp::Gt, total, zero);
    let r = t.b.value(TileType::scalar(ScalarType::I32));
    let then = t.block(|t| vec![t.int(1)]);
    let otherwise = t.block(|t| vec![t.int(2)]);
    t.push(Stmt::If {
        cond: big,
        then,
        otherwise,
        results: vec![r],
    });
    t.push(Stmt::Print {
        format: "block %d: %d\n".into(),
        args: vec![pid, r],
    });
    let ok = t.cmp(CmpOp::Ge, r, zero);
    t.push(Stmt::Assert {
        cond: ok,
        message: "never".into(),
    });
    t.store(out, q);
    t.finish()
}

/// `out[i] = combine(x[i, ..])` along axis 1 of `[rows, cols]` tiles of `ty`, padded with
/// `pad`.
pub fn row_reduce(
    ty: ScalarType,
    combine_of: impl FnOnce(&mut Tk) -> Combine,
    tile: [u32; 2],
    pad: Literal,
) -> TileKernel {
    let mut t = Tk::new("row_reduce");
    let out = t.output("out", ty, &[tile[0]]);
    let x = t.input("x", ty, 2);
    let pid = t.block_id(0);
    let zero = t.int(0);
    let tx = t.load(x, &tile, vec![pid, zero], pad);
    let c = combine_of(&mut t);
    let r = t.reduce(tx, 1, c);
    t.store(out, r);
    t.finish()
}

/// `out[i] = any(x[i, ..] > limit)`: a comparison, then a closure `|a, b| a || b` on
/// `bool` tiles.
pub fn any_above(tile: [u32; 2], limit: f64) -> TileKernel {
    let mut t = Tk::new("any");
    let out = t.output("out", ScalarType::Bool, &[tile[0]]);
    let x = t.input("x", ScalarType::F32, 2);
    let pid = t.block_id(0);
    let zero = t.int(0);
    let tx = t.load(x, &tile, vec![pid, zero], Literal::Float(0.0));
    let limit = t.constant(ScalarType::F32, Literal::Float(limit), &tile);
    let big = t.cmp(CmpOp::Gt, tx, limit);
    let or = t.closure(ScalarType::Bool, Literal::Bool(false), |t, a, b| {
        t.bin(BinaryOp::Or, a, b)
    });
    let r = t.reduce(big, 1, or);
    t.store(out, r);
    t.finish()
}
