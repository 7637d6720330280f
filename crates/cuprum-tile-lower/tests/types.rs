//! Element types other than `f32`/`i32`: `f16` (computed in `f32`, vectors of four), `f64`
//! (vectors of two), `u8` (wrapping, vectors of four bytes), `i64`, and `bool` tiles stored
//! to a `bool` tensor.

mod common;

use common::kernels;
use common::*;
use cuprum_ir::{BinaryOp, CmpOp, ScalarType};
use cuprum_runtime::DeviceCopy;
use cuprum_testkit::compare::assert_same;
use cuprum_tile_ir::{Combine, Constant, Literal};
use half::f16;

/// `out = x op y` for tensors of `ty`, tiles of `tile` elements.
fn binary_kernel(ty: ScalarType, op: BinaryOp, tile: u32) -> cuprum_tile_ir::TileKernel {
    let mut t = Tk::new("binary");
    let out = t.output("out", ty, &[tile]);
    let x = t.input("x", ty, 1);
    let y = t.input("y", ty, 1);
    let pid = t.block_id(0);
    let zero = Literal::Exact(Constant::new(ty, 0));
    let tx = t.load(x, &[tile], vec![pid], zero);
    let ty_ = t.load(y, &[tile], vec![pid], zero);
    let r = t.bin(op, tx, ty_);
    t.store(out, r);
    t.finish()
}

fn run_binary<T: DeviceCopy + PartialEq + std::fmt::Debug>(
    ty: ScalarType,
    op: BinaryOp,
    xs: &[T],
    ys: &[T],
    poison: T,
    f: impl Fn(T, T) -> T,
) {
    let dev = dev();
    let n = xs.len();
    for tile in [256u32, 64] {
        let c = compile(&dev, &binary_kernel(ty, op, tile));
        let o = Tensor::new(&dev, &vec![poison; n], &[n]);
        let (tx, tyy) = (Tensor::new(&dev, xs, &[n]), Tensor::new(&dev, ys, &[n]));
        launch(&dev, &c, &[o.arg(), tx.arg(), tyy.arg()]).expect("launch");
        let want: Vec<T> = xs.iter().zip(ys).map(|(&a, &b)| f(a, b)).collect();
        assert_same(&format!("{ty} {op:?} tile {tile}"), &o.to_host(&dev), &want);
    }
}

#[test]
fn f16_is_computed_in_f32_and_rounded() {
    let mut rng = rng("f16");
    let n = 1000;
    let xs: Vec<f16> = cuprum_testkit::random::random(&mut rng, n, -100.0f32, 100.0)
        .into_iter()
        .map(f16::from_f32)
        .collect();
    let ys: Vec<f16> = cuprum_testkit::random::random(&mut rng, n, -100.0f32, 100.0)
        .into_iter()
        .map(f16::from_f32)
        .collect();
    run_binary(
        ScalarType::F16,
        BinaryOp::Mul,
        &xs,
        &ys,
        f16::NAN,
        |a, b| f16::from_f32(a.to_f32() * b.to_f32()),
    );
}

#[test]
fn f64_u8_and_i64() {
    let mut rng = rng("wide_and_narrow");
    let n = 777;
    let xs = cuprum_testkit::random::random(&mut rng, n, -1e6f64, 1e6);
    let ys = cuprum_testkit::random::random(&mut rng, n, -1e6f64, 1e6);
    run_binary(
        ScalarType::F64,
        BinaryOp::Sub,
        &xs,
        &ys,
        f64::NAN,
        |a, b| a - b,
    );
    let xs = cuprum_testkit::random::random(&mut rng, n, 0u8, 255);
    let ys = cuprum_testkit::random::random(&mut rng, n, 0u8, 255);
    run_binary(
        ScalarType::U8,
        BinaryOp::Add,
        &xs,
        &ys,
        0xA5,
        u8::wrapping_add,
    );
    let xs = cuprum_testkit::random::random(&mut rng, n, i64::MIN / 2, i64::MAX / 2);
    let ys = cuprum_testkit::random::random(&mut rng, n, -1000i64, 1000);
    run_binary(
        ScalarType::I64,
        BinaryOp::Mul,
        &xs,
        &ys,
        i64::MIN,
        i64::wrapping_mul,
    );
}

/// `out = x < y` into a `bool` tensor.
#[test]
fn bool_tiles() {
    let mut t = Tk::new("less");
    let out = t.output("out", ScalarType::Bool, &[128]);
    let x = t.input("x", ScalarType::F32, 1);
    let y = t.input("y", ScalarType::F32, 1);
    let pid = t.block_id(0);
    let tx = t.load(x, &[128], vec![pid], Literal::Float(0.0));
    let ty = t.load(y, &[128], vec![pid], Literal::Float(0.0));
    let lt = t.cmp(CmpOp::Lt, tx, ty);
    t.store(out, lt);
    let k = t.finish();
    let dev = dev();
    let c = compile(&dev, &k);
    let mut rng = rng("bool_tiles");
    let n = 300;
    let xs = cuprum_testkit::random::random(&mut rng, n, -1.0f32, 1.0);
    let ys = cuprum_testkit::random::random(&mut rng, n, -1.0f32, 1.0);
    // Poison: every element starts as the opposite of its answer.
    let start: Vec<bool> = xs.iter().zip(&ys).map(|(a, b)| a >= b).collect();
    let o = Tensor::new(&dev, &start, &[n]);
    let (tx, tyy) = (Tensor::new(&dev, &xs, &[n]), Tensor::new(&dev, &ys, &[n]));
    launch(&dev, &c, &[o.arg(), tx.arg(), tyy.arg()]).expect("launch");
    let want: Vec<bool> = xs.iter().zip(&ys).map(|(a, b)| a < b).collect();
    assert_same("x < y", &o.to_host(&dev), &want);
}

/// Reductions of narrow and wide types: lanes and warps shuffle and share them.
#[test]
fn reductions_of_every_width() {
    let dev = dev();
    let mut rng = rng("reductions_of_every_width");
    let (rows, cols) = (6usize, 1000usize);
    let tile = [2u32, 1024];
    // u8 max, exact.
    let k = kernels::row_reduce(ScalarType::U8, |_| Combine::Max, tile, Literal::Int(0));
    let c = compile(&dev, &k);
    let xs = cuprum_testkit::random::random(&mut rng, rows * cols, 0u8, 255);
    let o = Tensor::new(&dev, &vec![0xA5u8; rows], &[rows]);
    let tx = Tensor::new(&dev, &xs, &[rows, cols]);
    launch(&dev, &c, &[o.arg(), tx.arg()]).expect("launch");
    let want: Vec<u8> = (0..rows)
        .map(|r| *xs[r * cols..(r + 1) * cols].iter().max().unwrap_or(&0))
        .collect();
    assert_same("u8 max", &o.to_host(&dev), &want);
    // i64 sum, exact (wrapping).
    let k = kernels::row_reduce(ScalarType::I64, |_| Combine::Sum, tile, Literal::Int(0));
    let c = compile(&dev, &k);
    let xs = cuprum_testkit::random::random(&mut rng, rows * cols, i64::MIN, i64::MAX);
    let o = Tensor::new(&dev, &vec![i64::MIN; rows], &[rows]);
    let tx = Tensor::new(&dev, &xs, &[rows, cols]);
    launch(&dev, &c, &[o.arg(), tx.arg()]).expect("launch");
    let want: Vec<i64> = (0..rows)
        .map(|r| {
            xs[r * cols..(r + 1) * cols]
                .iter()
                .fold(0i64, |a, &b| a.wrapping_add(b))
        })
        .collect();
    assert_same("i64 sum", &o.to_host(&dev), &want);
    // f16 max, exact.
    let k = kernels::row_reduce(
        ScalarType::F16,
        |_| Combine::Max,
        tile,
        Literal::Float(f64::NEG_INFINITY),
    );
    let c = compile(&dev, &k);
    let xs: Vec<f16> = cuprum_testkit::random::random(&mut rng, rows * cols, -100.0f32, 100.0)
        .into_iter()
        .map(f16::from_f32)
        .collect();
    let o = Tensor::new(&dev, &vec![f16::NAN; rows], &[rows]);
    let tx = Tensor::new(&dev, &xs, &[rows, cols]);
    launch(&dev, &c, &[o.arg(), tx.arg()]).expect("launch");
    let want: Vec<f16> = (0..rows)
        .map(|r| {
            xs[r * cols..(r + 1) * cols]
                .iter()
                .fold(f16::NEG_INFINITY, |a, &b| a.max(b))
        })
        .collect();
    assert_same("f16 max", &o.to_host(&dev), &want);
    // f64 sum of integers (exact whatever the order).
    let k = kernels::row_reduce(ScalarType::F64, |_| Combine::Sum, tile, Literal::Float(0.0));
    let c = compile(&dev, &k);
    let xs: Vec<f64> = cuprum_testkit::random::random(&mut rng, rows * cols, -1000i32, 1000)
        .into_iter()
        .map(f64::from)
        .collect();
    let o = Tensor::new(&dev, &vec![f64::NAN; rows], &[rows]);
    let tx = Tensor::new(&dev, &xs, &[rows, cols]);
    launch(&dev, &c, &[o.arg(), tx.arg()]).expect("launch");
    let want: Vec<f64> = (0..rows)
        .map(|r| xs[r * cols..(r + 1) * cols].iter().sum())
        .collect();
    assert_same("f64 sum", &o.to_host(&dev), &want);
}

/// `out[i] = any(x[i, ..] > 0.9)` with a closure `|a, b| a || b` on bool tiles (shuffled
/// as words, shared as bytes).
#[test]
fn bool_reduction_by_closure() {
    let k = kernels::any_above([4, 512], 0.9);
    let dev = dev();
    let c = compile(&dev, &k);
    let mut rng = rng("bool_reduction");
    let (rows, cols) = (11usize, 500usize);
    let mut xs = cuprum_testkit::random::random(&mut rng, rows * cols, 0.0f32, 0.9);
    for r in [1usize, 4, 7, 10] {
        xs[r * cols + (r * 37) % cols] = 0.95;
    }
    let want: Vec<bool> = (0..rows)
        .map(|r| xs[r * cols..(r + 1) * cols].iter().any(|&v| v > 0.9))
        .collect();
    let start: Vec<bool> = want.iter().map(|w| !w).collect();
    let o = Tensor::new(&dev, &start, &[rows]);
    let tx = Tensor::new(&dev, &xs, &[rows, cols]);
    launch(&dev, &c, &[o.arg(), tx.arg()]).expect("launch");
    assert_same("any", &o.to_host(&dev), &want);
}
