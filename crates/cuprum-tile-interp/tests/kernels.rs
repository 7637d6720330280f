//! Tile kernels built with `TileBuilder`, interpreted on seeded random data and compared
//! element by element with plain Rust (outputs start poisoned, so a missed element shows).
//! The interpreter reduces left to right, so float results are compared bit for bit.

mod common;

use std::time::Instant;

use common::*;
use cuprum_testkit::compare::{assert_bits_eq, assert_same};
use cuprum_testkit::random::{random, seeded};
use cuprum_tile_interp::{Arg, Printed, TensorArg, run};
use cuprum_tile_ir::*;

/// `z[i] = x[i] + y[i]`, tile `tile`.
fn add_kernel(tile: u32) -> TileKernel {
    let mut b = TileBuilder::new("add");
    let z = output(&mut b, "z", F32, &[tile]);
    let x = input(&mut b, "x", F32, 1);
    let y = input(&mut b, "y", F32, 1);
    let pid = block_id(&mut b, 0);
    let tx = load_tiled(&mut b, x, &[tile], vec![pid], Literal::Float(0.0));
    let ty = load_tiled(&mut b, y, &[tile], vec![pid], Literal::Float(0.0));
    let s = bin(&mut b, BinaryOp::Add, tx, ty);
    store(&mut b, z, s);
    b.finish()
}

/// Checks the add of `n` random elements; returns how long the interpreter took.
fn check_add(n: usize, tile: u32, seed: u64) -> std::time::Duration {
    let mut rng = seeded(seed);
    let x: Vec<f32> = random(&mut rng, n, -100.0, 100.0);
    let y: Vec<f32> = random(&mut rng, n, -100.0, 100.0);
    let (bx, by) = (bytes(&x), bytes(&y));
    let mut bz = poison_f32(n);
    let k = add_kernel(tile);
    let shape = [n as u64];
    let mut args = [
        Arg::Tensor(TensorArg::write(F32, &shape, &mut bz)),
        Arg::Tensor(TensorArg::read(F32, &shape, &bx)),
        Arg::Tensor(TensorArg::read(F32, &shape, &by)),
    ];
    assert_eq!(
        cuprum_tile_interp::launch_grid(&k, &args).expect("grid"),
        Some([(n as u32).div_ceil(tile), 1, 1])
    );
    let t = Instant::now();
    launch(&k, &mut args).expect("add runs");
    let took = t.elapsed();
    let want: Vec<f32> = x.iter().zip(&y).map(|(a, b)| a + b).collect();
    assert_bits_eq("add", &values::<f32>(&bz), &want);
    took
}

#[test]
fn add_with_a_ragged_edge_tile() {
    check_add(1000, 128, 1);
    check_add(128, 128, 2);
    check_add(1, 128, 3);
}

#[test]
fn add_of_a_million_elements_is_fast() {
    // Tiles of 128: 8192 blocks, more than the interpreter runs at once.
    let took = check_add(1 << 20, 128, 4);
    eprintln!("2^20-element add: {took:?} in the interpreter");
    // A loose bound against a pathological slowdown (it takes milliseconds).
    assert!(took.as_secs_f64() < 5.0, "{took:?}");
}

/// `y[i] = a * x[i] + y_in[i]` with scalar `a`; `fused` uses the IR's one-rounding
/// multiply-add instead of a multiply and an add.
fn saxpy_kernel(tile: u32, fused: bool) -> TileKernel {
    let mut b = TileBuilder::new("saxpy");
    let out = output(&mut b, "out", F32, &[tile]);
    let a = scalar(&mut b, "a", F32);
    let x = input(&mut b, "x", F32, 1);
    let y = input(&mut b, "y", F32, 1);
    let pid = block_id(&mut b, 0);
    let tx = load_tiled(&mut b, x, &[tile], vec![pid], Literal::Float(0.0));
    let ty = load_tiled(&mut b, y, &[tile], vec![pid], Literal::Float(0.0));
    let av = def(&mut b, Op::Param(a));
    let at = splat(&mut b, av, &[tile]);
    let r = if fused {
        def(&mut b, Op::Ternary(TernaryOp::MulAdd, at, tx, ty))
    } else {
        let ax = bin(&mut b, BinaryOp::Mul, at, tx);
        bin(&mut b, BinaryOp::Add, ax, ty)
    };
    store(&mut b, out, r);
    b.finish()
}

#[test]
fn saxpy_with_a_scalar_parameter() {
    let n = 1000;
    let mut rng = seeded(5);
    let x: Vec<f32> = random(&mut rng, n, -100.0, 100.0);
    let y: Vec<f32> = random(&mut rng, n, -100.0, 100.0);
    let a = 1.7f32;
    for fused in [false, true] {
        let (bx, by) = (bytes(&x), bytes(&y));
        let mut bo = poison_f32(n);
        let shape = [n as u64];
        let mut args = [
            Arg::Tensor(TensorArg::write(F32, &shape, &mut bo)),
            Arg::Scalar(Constant::f32(a)),
            Arg::Tensor(TensorArg::read(F32, &shape, &bx)),
            Arg::Tensor(TensorArg::read(F32, &shape, &by)),
        ];
        launch(&saxpy_kernel(128, fused), &mut args).expect("saxpy runs");
        let want: Vec<f32> = x
            .iter()
            .zip(&y)
            .map(|(&x, &y)| if fused { a.mul_add(x, y) } else { a * x + y })
            .collect();
        assert_bits_eq("saxpy", &values::<f32>(&bo), &want);
    }
}

/// Softmax along axis 1 of tiles `[bm, bn]` (`bn` at least the row length; `-inf` pads).
fn softmax_kernel(bm: u32, bn: u32) -> TileKernel {
    let mut b = TileBuilder::new("softmax");
    let y = output(&mut b, "y", F32, &[bm, bn]);
    let x = input(&mut b, "x", F32, 2);
    let pid = block_id(&mut b, 0);
    let zero = int(&mut b, I32, 0);
    let t = load_tiled(
        &mut b,
        x,
        &[bm, bn],
        vec![pid, zero],
        Literal::Float(f64::NEG_INFINITY),
    );
    let row = |b: &mut TileBuilder, v: TileValue, combine: Combine| {
        let r = def(
            b,
            Op::Reduce {
                value: v,
                axis: 1,
                combine,
            },
        );
        let col = def(
            b,
            Op::Reshape {
                value: r,
                shape: shape_of(&[bm, 1]),
            },
        );
        splat(b, col, &[bm, bn])
    };
    let m = row(&mut b, t, Combine::Max);
    let d = bin(&mut b, BinaryOp::Sub, t, m);
    let e = def(&mut b, Op::Unary(UnaryOp::Exp, d));
    let s = row(&mut b, e, Combine::Sum);
    let r = bin(&mut b, BinaryOp::Div, e, s);
    store(&mut b, y, r);
    b.finish()
}

/// Softmax of each row, left to right.
fn softmax_ref(x: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    let mut out = Vec::with_capacity(x.len());
    for r in x.chunks(cols).take(rows) {
        let m = r[1..].iter().fold(r[0], |a, &b| a.max(b));
        let e: Vec<f32> = r.iter().map(|&v| (v - m).exp()).collect();
        let s = e[1..].iter().fold(e[0], |a, &b| a + b);
        out.extend(e.iter().map(|&v| v / s));
    }
    out
}

/// Checks the softmax of random `[rows, cols]`; returns how long the interpreter took.
fn check_softmax(rows: usize, cols: usize, bm: u32, bn: u32, seed: u64) -> std::time::Duration {
    let mut rng = seeded(seed);
    let x: Vec<f32> = random(&mut rng, rows * cols, -10.0, 10.0);
    let bx = bytes(&x);
    let mut by = poison_f32(rows * cols);
    let shape = [rows as u64, cols as u64];
    let mut args = [
        Arg::Tensor(TensorArg::write(F32, &shape, &mut by)),
        Arg::Tensor(TensorArg::read(F32, &shape, &bx)),
    ];
    let t = Instant::now();
    launch(&softmax_kernel(bm, bn), &mut args).expect("softmax runs");
    let took = t.elapsed();
    assert_bits_eq("softmax", &values::<f32>(&by), &softmax_ref(&x, rows, cols));
    took
}

#[test]
fn softmax_along_rows_with_ragged_edges() {
    check_softmax(37, 50, 16, 64, 6);
    check_softmax(3, 5, 4, 8, 7);
}

#[test]
fn softmax_of_1024_by_1024_is_fast() {
    let took = check_softmax(1024, 1024, 4, 1024, 8);
    eprintln!("1024x1024 softmax: {took:?} in the interpreter");
    assert!(took.as_secs_f64() < 5.0, "{took:?}");
}

#[test]
fn reductions_with_closures() {
    // Column maxima of an i32 matrix through a closure of a compare and a select (axis 0),
    // and row sums of an f32 matrix through a closure adding (axis 1).
    let (rows, cols, bm, bn) = (13usize, 50usize, 16u32, 16u32);
    let mut b = TileBuilder::new("closures");
    let colmax = output(&mut b, "colmax", I32, &[bn]);
    let x = input(&mut b, "x", I32, 2);
    let pid = block_id(&mut b, 0);
    let zero = int(&mut b, I32, 0);
    let t = load_tiled(
        &mut b,
        x,
        &[bm, bn],
        vec![zero, pid],
        Literal::Int(i32::MIN.into()),
    );
    let (a, c) = (
        b.value(TileType::scalar(I32)),
        b.value(TileType::scalar(I32)),
    );
    b.begin_block();
    let gt = def(&mut b, Op::Compare(CmpOp::Gt, a, c));
    let m = def(
        &mut b,
        Op::Select {
            cond: gt,
            if_true: a,
            if_false: c,
        },
    );
    let body = b.end_block(vec![m]);
    let r = def(
        &mut b,
        Op::Reduce {
            value: t,
            axis: 0,
            combine: Combine::Closure {
                a,
                b: c,
                body,
                identity: Literal::Int(i32::MIN.into()),
            },
        },
    );
    store(&mut b, colmax, r);
    let k = b.finish();

    let mut rng = seeded(9);
    let xs: Vec<i32> = random(&mut rng, rows * cols, i32::MIN, i32::MAX);
    let bx = bytes(&xs);
    let mut out = poison_u32(cols);
    let mut args = [
        Arg::Tensor(TensorArg::write(I32, &[cols as u64], &mut out)),
        Arg::Tensor(TensorArg::read(I32, &[rows as u64, cols as u64], &bx)),
    ];
    launch(&k, &mut args).expect("column maxima");
    let want: Vec<i32> = (0..cols)
        .map(|c| {
            (0..rows)
                .map(|r| xs[r * cols + c])
                .max()
                .unwrap_or(i32::MIN)
        })
        .collect();
    assert_same("column maxima", &values::<i32>(&out), &want);

    let mut b = TileBuilder::new("closure_sum");
    let sums = output(&mut b, "sums", F32, &[bm]);
    let x = input(&mut b, "x", F32, 2);
    let pid = block_id(&mut b, 0);
    let zero = int(&mut b, I32, 0);
    let t = load_tiled(&mut b, x, &[bm, 64], vec![pid, zero], Literal::Float(0.0));
    let (a, c) = (
        b.value(TileType::scalar(F32)),
        b.value(TileType::scalar(F32)),
    );
    b.begin_block();
    let s = bin(&mut b, BinaryOp::Add, a, c);
    let body = b.end_block(vec![s]);
    let r = def(
        &mut b,
        Op::Reduce {
            value: t,
            axis: 1,
            combine: Combine::Closure {
                a,
                b: c,
                body,
                identity: Literal::Float(0.0),
            },
        },
    );
    store(&mut b, sums, r);
    let k = b.finish();
    let xs: Vec<f32> = random(&mut rng, rows * cols, -100.0, 100.0);
    let bx = bytes(&xs);
    let mut out = poison_f32(rows);
    let mut args = [
        Arg::Tensor(TensorArg::write(F32, &[rows as u64], &mut out)),
        Arg::Tensor(TensorArg::read(F32, &[rows as u64, cols as u64], &bx)),
    ];
    launch(&k, &mut args).expect("row sums");
    // Left to right over the 64 padded columns (+0.0 pads leave a sum as it is).
    let want: Vec<f32> = xs
        .chunks(cols)
        .map(|r| r[1..].iter().fold(r[0], |a, &b| a + b))
        .collect();
    assert_bits_eq("row sums", &values::<f32>(&out), &want);
}

#[test]
fn a_for_loop_carries_an_accumulator() {
    // Row sums of an [m, n] matrix, `bk` columns per iteration into a [bm, bk] accumulator.
    let (m, n, bm, bk) = (37usize, 50usize, 8u32, 16u32);
    let mut b = TileBuilder::new("rowsum");
    let y = output(&mut b, "y", F32, &[bm]);
    let x = input(&mut b, "x", F32, 2);
    let pid = block_id(&mut b, 0);
    let cols = def(&mut b, Op::TensorDim { tensor: x, axis: 1 });
    let bkv = int(&mut b, I64, bk.into());
    let one = int(&mut b, I64, 1);
    let t = bin(&mut b, BinaryOp::Add, cols, bkv);
    let t = bin(&mut b, BinaryOp::Sub, t, one);
    let chunks = bin(&mut b, BinaryOp::Div, t, bkv);
    let start = int(&mut b, I64, 0);
    let acc0 = konst(&mut b, F32, Literal::Float(0.0), &[bm, bk]);
    let counter = b.value(TileType::scalar(I64));
    let acc = b.value(b.ty(acc0).clone());
    let result = b.value(b.ty(acc0).clone());
    b.begin_block();
    let tile = load_tiled(
        &mut b,
        x,
        &[bm, bk],
        vec![pid, counter],
        Literal::Float(0.0),
    );
    let next = bin(&mut b, BinaryOp::Add, acc, tile);
    let body = b.end_block(vec![next]);
    b.push(Stmt::For {
        counter,
        start,
        end: chunks,
        step: one,
        args: vec![acc],
        inits: vec![acc0],
        body,
        results: vec![result],
    });
    let r = def(
        &mut b,
        Op::Reduce {
            value: result,
            axis: 1,
            combine: Combine::Sum,
        },
    );
    store(&mut b, y, r);
    let k = b.finish();

    let mut rng = seeded(10);
    let xs: Vec<f32> = random(&mut rng, m * n, -100.0, 100.0);
    let bx = bytes(&xs);
    let mut out = poison_f32(m);
    let mut args = [
        Arg::Tensor(TensorArg::write(F32, &[m as u64], &mut out)),
        Arg::Tensor(TensorArg::read(F32, &[m as u64, n as u64], &bx)),
    ];
    launch(&k, &mut args).expect("row sums");
    let want: Vec<f32> = xs
        .chunks(n)
        .map(|row| {
            let mut acc = vec![0.0f32; bk as usize];
            for chunk in 0..n.div_ceil(bk as usize) {
                for (j, a) in acc.iter_mut().enumerate() {
                    *a += row.get(chunk * bk as usize + j).copied().unwrap_or(0.0);
                }
            }
            acc[1..].iter().fold(acc[0], |a, &b| a + b)
        })
        .collect();
    assert_bits_eq("row sums", &values::<f32>(&out), &want);
}

#[test]
fn for_loops_continue_and_if_yields_results() {
    // Block b: the sum of the even counters below 8 + b, skipping odd ones by `continue`,
    // then doubled on even blocks and incremented on odd ones by an `if` with a result.
    let mut b = TileBuilder::new("evens");
    let y = output(&mut b, "y", I32, &[1]);
    let pid = block_id(&mut b, 0);
    let start = int(&mut b, I32, 0);
    let eight = int(&mut b, I32, 8);
    let end = bin(&mut b, BinaryOp::Add, eight, pid);
    let one = int(&mut b, I32, 1);
    let two = int(&mut b, I32, 2);
    let zero = int(&mut b, I32, 0);
    let counter = b.value(TileType::scalar(I32));
    let acc = b.value(TileType::scalar(I32));
    let sum = b.value(TileType::scalar(I32));
    b.begin_block();
    let parity = bin(&mut b, BinaryOp::Rem, counter, two);
    let odd = def(&mut b, Op::Compare(CmpOp::Ne, parity, zero));
    b.begin_block();
    b.push(Stmt::Continue { values: vec![acc] });
    let then = b.end_block(vec![]);
    b.begin_block();
    let otherwise = b.end_block(vec![]);
    b.push(Stmt::If {
        cond: odd,
        then,
        otherwise,
        results: vec![],
    });
    let next = bin(&mut b, BinaryOp::Add, acc, counter);
    let body = b.end_block(vec![next]);
    b.push(Stmt::For {
        counter,
        start,
        end,
        step: one,
        args: vec![acc],
        inits: vec![zero],
        body,
        results: vec![sum],
    });
    let pp = bin(&mut b, BinaryOp::Rem, pid, two);
    let even = def(&mut b, Op::Compare(CmpOp::Eq, pp, zero));
    let r = b.value(TileType::scalar(I32));
    b.begin_block();
    let doubled = bin(&mut b, BinaryOp::Mul, sum, two);
    let then = b.end_block(vec![doubled]);
    b.begin_block();
    let plus = bin(&mut b, BinaryOp::Add, sum, one);
    let otherwise = b.end_block(vec![plus]);
    b.push(Stmt::If {
        cond: even,
        then,
        otherwise,
        results: vec![r],
    });
    let r1 = def(
        &mut b,
        Op::Reshape {
            value: r,
            shape: shape_of(&[1]),
        },
    );
    store(&mut b, y, r1);
    let k = b.finish();

    let blocks = 6;
    let mut out = poison_u32(blocks);
    let mut args = [Arg::Tensor(TensorArg::write(
        I32,
        &[blocks as u64],
        &mut out,
    ))];
    launch(&k, &mut args).expect("evens");
    let want: Vec<i32> = (0..blocks as i32)
        .map(|p| {
            let s: i32 = (0..8 + p).filter(|c| c % 2 == 0).sum();
            if p % 2 == 0 { s * 2 } else { s + 1 }
        })
        .collect();
    assert_same("evens", &values::<i32>(&out), &want);
}

#[test]
fn a_loop_ends_by_break() {
    // y = x * 2^(b % 4) on block b: a `loop` doubling until its counter reaches b % 4,
    // leaving by a `break` inside an `if`.
    let (n, tile) = (1000usize, 128u32);
    let mut b = TileBuilder::new("doubling");
    let y = output(&mut b, "y", F32, &[tile]);
    let x = input(&mut b, "x", F32, 1);
    let pid = block_id(&mut b, 0);
    let t = load_tiled(&mut b, x, &[tile], vec![pid], Literal::Float(0.0));
    let four = int(&mut b, I32, 4);
    let p = bin(&mut b, BinaryOp::Rem, pid, four);
    let i0 = int(&mut b, I32, 0);
    let one = int(&mut b, I32, 1);
    let two = konst(&mut b, F32, Literal::Float(2.0), &[tile]);
    let i = b.value(TileType::scalar(I32));
    let acc = b.value(b.ty(t).clone());
    let (ri, racc) = (b.value(TileType::scalar(I32)), b.value(b.ty(t).clone()));
    b.begin_block();
    let done = def(&mut b, Op::Compare(CmpOp::Ge, i, p));
    b.begin_block();
    b.push(Stmt::Break {
        values: vec![i, acc],
    });
    let then = b.end_block(vec![]);
    b.begin_block();
    let otherwise = b.end_block(vec![]);
    b.push(Stmt::If {
        cond: done,
        then,
        otherwise,
        results: vec![],
    });
    let i1 = bin(&mut b, BinaryOp::Add, i, one);
    let acc1 = bin(&mut b, BinaryOp::Mul, acc, two);
    let body = b.end_block(vec![i1, acc1]);
    b.push(Stmt::Loop {
        args: vec![i, acc],
        inits: vec![i0, t],
        body,
        results: vec![ri, racc],
    });
    store(&mut b, y, racc);
    let k = b.finish();

    let mut rng = seeded(11);
    let xs: Vec<f32> = random(&mut rng, n, -100.0, 100.0);
    let bx = bytes(&xs);
    let mut out = poison_f32(n);
    let mut args = [
        Arg::Tensor(TensorArg::write(F32, &[n as u64], &mut out)),
        Arg::Tensor(TensorArg::read(F32, &[n as u64], &bx)),
    ];
    launch(&k, &mut args).expect("doubling");
    let want: Vec<f32> = xs
        .iter()
        .enumerate()
        .map(|(i, &v)| v * (1 << ((i / tile as usize) % 4)) as f32)
        .collect();
    assert_bits_eq("doubling", &values::<f32>(&out), &want);
}

/// `y = permute(x)`: y of shape `[c, r]` cut into `[t, t]` tiles, each the transpose of x's
/// tile at the swapped index.
fn transpose_kernel(t: u32) -> TileKernel {
    let mut b = TileBuilder::new("transpose");
    let y = output(&mut b, "y", F32, &[t, t]);
    let x = input(&mut b, "x", F32, 2);
    let p0 = block_id(&mut b, 0);
    let p1 = block_id(&mut b, 1);
    let tile = load_tiled(&mut b, x, &[t, t], vec![p1, p0], Literal::Float(0.0));
    let tt = def(
        &mut b,
        Op::Permute {
            value: tile,
            perm: vec![1, 0],
        },
    );
    store(&mut b, y, tt);
    b.finish()
}

#[test]
fn permute_transposes_ragged_tiles() {
    let (r, c) = (37usize, 50usize);
    let mut rng = seeded(12);
    let xs: Vec<f32> = random(&mut rng, r * c, -100.0, 100.0);
    let bx = bytes(&xs);
    let mut out = poison_f32(r * c);
    let k = transpose_kernel(16);
    let mut args = [
        Arg::Tensor(TensorArg::write(F32, &[c as u64, r as u64], &mut out)),
        Arg::Tensor(TensorArg::read(F32, &[r as u64, c as u64], &bx)),
    ];
    assert_eq!(
        cuprum_tile_interp::launch_grid(&k, &args).expect("grid"),
        Some([4, 3, 1])
    );
    launch(&k, &mut args).expect("transpose");
    let want: Vec<f32> = (0..c)
        .flat_map(|i| (0..r).map(move |j| (i, j)))
        .map(|(i, j)| xs[j * c + i])
        .collect();
    assert_bits_eq("transpose", &values::<f32>(&out), &want);
}

#[test]
fn strided_views_are_read_through_their_strides_and_offset() {
    // x is [37, 50] stored transposed after 5 unrelated elements: x[i][j] = buf[5 + j*37 + i].
    let (r, c, t) = (37usize, 50usize, 16u32);
    let mut b = TileBuilder::new("plus_one");
    let y = output(&mut b, "y", F32, &[t, t]);
    let x = input(&mut b, "x", F32, 2);
    let p0 = block_id(&mut b, 0);
    let p1 = block_id(&mut b, 1);
    let tile = load_tiled(&mut b, x, &[t, t], vec![p0, p1], Literal::Float(0.0));
    let one = konst(&mut b, F32, Literal::Float(1.0), &[t, t]);
    let s = bin(&mut b, BinaryOp::Add, tile, one);
    store(&mut b, y, s);
    let k = b.finish();

    let mut rng = seeded(13);
    let buf: Vec<f32> = random(&mut rng, 5 + r * c, -100.0, 100.0);
    let bb = bytes(&buf);
    let mut out = poison_f32(r * c);
    let mut args = [
        Arg::Tensor(TensorArg::write(F32, &[r as u64, c as u64], &mut out)),
        Arg::Tensor(TensorArg::read(F32, &[r as u64, c as u64], &bb).strided(&[1, r as i64], 5)),
    ];
    launch(&k, &mut args).expect("plus one");
    let want: Vec<f32> = (0..r * c)
        .map(|e| buf[5 + (e % c) * r + e / c] + 1.0)
        .collect();
    assert_bits_eq("strided", &values::<f32>(&out), &want);

    // A strided output: y written through a transposed view of its bytes.
    let mut out = poison_f32(r * c);
    let mut args = [
        Arg::Tensor(
            TensorArg::write(F32, &[r as u64, c as u64], &mut out).strided(&[1, r as i64], 0),
        ),
        Arg::Tensor(TensorArg::read(F32, &[r as u64, c as u64], &bb).strided(&[1, r as i64], 5)),
    ];
    launch(&k, &mut args).expect("plus one, transposed output");
    let want: Vec<f32> = (0..r * c).map(|e| buf[5 + e] + 1.0).collect();
    assert_bits_eq("strided output", &values::<f32>(&out), &want);
}

#[test]
fn iota_block_ids_and_casts() {
    // y[i][j] = i * 1000 + j from iotas offset by the block's tile origin; z = y as f32;
    // w = the bits of z as u32.
    let (r, c, t0, t1) = (37usize, 50usize, 16u32, 8u32);
    let mut b = TileBuilder::new("coords");
    let y = output(&mut b, "y", I32, &[t0, t1]);
    let z = output(&mut b, "z", F32, &[t0, t1]);
    let w = output(&mut b, "w", U32, &[t0, t1]);
    let shape = [t0, t1];
    let coord = |b: &mut TileBuilder, axis: u32, size: u32| {
        let pid = block_id(b, axis);
        let sz = int(b, I32, size.into());
        let origin = bin(b, BinaryOp::Mul, pid, sz);
        let origin = splat(b, origin, &shape);
        let i = def(
            b,
            Op::Iota {
                elem: Elem::Known(I32),
                shape: shape_of(&shape),
                axis,
            },
        );
        bin(b, BinaryOp::Add, i, origin)
    };
    let i = coord(&mut b, 0, t0);
    let j = coord(&mut b, 1, t1);
    let k1000 = konst(&mut b, I32, Literal::Int(1000), &shape);
    let v = bin(&mut b, BinaryOp::Mul, i, k1000);
    let v = bin(&mut b, BinaryOp::Add, v, j);
    store(&mut b, y, v);
    let f = def(
        &mut b,
        Op::Cast {
            value: v,
            to: Elem::Known(F32),
        },
    );
    store(&mut b, z, f);
    let bits = def(
        &mut b,
        Op::Bitcast {
            value: f,
            to: Elem::Known(U32),
        },
    );
    store(&mut b, w, bits);
    let k = b.finish();

    let (mut oy, mut oz, mut ow) = (poison_u32(r * c), poison_f32(r * c), poison_u32(r * c));
    let shape = [r as u64, c as u64];
    let mut args = [
        Arg::Tensor(TensorArg::write(I32, &shape, &mut oy)),
        Arg::Tensor(TensorArg::write(F32, &shape, &mut oz)),
        Arg::Tensor(TensorArg::write(U32, &shape, &mut ow)),
    ];
    launch(&k, &mut args).expect("coords");
    let want: Vec<i32> = (0..r * c)
        .map(|e| ((e / c) * 1000 + e % c) as i32)
        .collect();
    assert_same("iota", &values::<i32>(&oy), &want);
    let wf: Vec<f32> = want.iter().map(|&v| v as f32).collect();
    assert_bits_eq("cast", &values::<f32>(&oz), &wf);
    let wb: Vec<u32> = wf.iter().map(|v| v.to_bits()).collect();
    assert_same("bitcast", &values::<u32>(&ow), &wb);
}

#[test]
fn a_block_reads_its_own_stores_and_return_ends_it() {
    // y = (y + 1) * 2 on even blocks, through a load of the block's own tile before and
    // after a store; odd blocks return first and leave their tiles as they were.
    let (n, tile) = (100usize, 16u32);
    let mut b = TileBuilder::new("own");
    let y = output(&mut b, "y", F32, &[tile]);
    let pid = block_id(&mut b, 0);
    let two = int(&mut b, I32, 2);
    let zero = int(&mut b, I32, 0);
    let p = bin(&mut b, BinaryOp::Rem, pid, two);
    let odd = def(&mut b, Op::Compare(CmpOp::Ne, p, zero));
    b.begin_block();
    b.push(Stmt::Return);
    let then = b.end_block(vec![]);
    b.begin_block();
    let otherwise = b.end_block(vec![]);
    b.push(Stmt::If {
        cond: odd,
        then,
        otherwise,
        results: vec![],
    });
    let a = load_own(&mut b, y, Literal::Float(0.0));
    let one = konst(&mut b, F32, Literal::Float(1.0), &[tile]);
    let a1 = bin(&mut b, BinaryOp::Add, a, one);
    store(&mut b, y, a1);
    let c = load_own(&mut b, y, Literal::Float(0.0));
    let twof = konst(&mut b, F32, Literal::Float(2.0), &[tile]);
    let c2 = bin(&mut b, BinaryOp::Mul, c, twof);
    store(&mut b, y, c2);
    let k = b.finish();

    let mut rng = seeded(14);
    let ys: Vec<f32> = random(&mut rng, n, -100.0, 100.0);
    let mut out = bytes(&ys);
    let mut args = [Arg::Tensor(TensorArg::write(F32, &[n as u64], &mut out))];
    launch(&k, &mut args).expect("own");
    let want: Vec<f32> = ys
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            if (i / tile as usize) % 2 == 1 {
                v
            } else {
                (v + 1.0) * 2.0
            }
        })
        .collect();
    assert_bits_eq("own", &values::<f32>(&out), &want);
}

#[test]
fn prints_come_by_block_then_in_program_order() {
    let mut b = TileBuilder::new("hello");
    let x = block_id(&mut b, 0);
    let y = block_id(&mut b, 1);
    let f = def(
        &mut b,
        Op::Cast {
            value: x,
            to: Elem::Known(F32),
        },
    );
    let half = float(&mut b, F32, 0.5);
    let f = bin(&mut b, BinaryOp::Add, f, half);
    let big = int(&mut b, I64, -3_000_000_000);
    let ux = def(
        &mut b,
        Op::Cast {
            value: x,
            to: Elem::Known(U32),
        },
    );
    let k255 = int(&mut b, U32, 255);
    let ux = bin(&mut b, BinaryOp::Add, ux, k255);
    b.push(Stmt::Print {
        format: "block (%d, %d): %5.2f|%-4x|%#X|%ld|%e\n".into(),
        args: vec![x, y, f, ux, ux, big, f],
    });
    b.push(Stmt::Print {
        format: "%g%%\n".into(),
        args: vec![f],
    });
    let k = b.finish();
    let out = run(&k, &mut [], [2, 2, 1]).expect("prints");
    let mut want = Vec::new();
    for y in 0..2u32 {
        for x in 0..2u32 {
            let f = x as f32 + 0.5;
            let u = x + 255;
            want.push(Printed {
                block: [x, y, 0],
                text: format!(
                    "block ({x}, {y}): {f:5.2}|{u:<4x}|0X{u:X}|-3000000000|{}\n",
                    if x == 0 {
                        "5.000000e-01"
                    } else {
                        "1.500000e+00"
                    }
                ),
            });
            want.push(Printed {
                block: [x, y, 0],
                text: format!("{f}%\n"),
            });
        }
    }
    assert_eq!(out.prints, want);
    assert!(
        out.text()
            .starts_with("block (0, 0):  0.50|ff  |0XFF|-3000000000|5.000000e-01\n0.5%\n")
    );
}

#[test]
fn a_kernel_without_partitioned_tensors_takes_its_grid() {
    // Every block asserts it is inside the grid it was given.
    let mut b = TileBuilder::new("grid");
    for axis in 0..3 {
        let id = block_id(&mut b, axis);
        let n = def(&mut b, Op::NumBlocks(axis));
        let ok = def(&mut b, Op::Compare(CmpOp::Lt, id, n));
        b.push(Stmt::Assert {
            cond: ok,
            message: format!("block id {axis} inside the grid"),
        });
    }
    let k = b.finish();
    assert_eq!(
        cuprum_tile_interp::launch_grid(&k, &[]).expect("grid"),
        None
    );
    run(&k, &mut [], [3, 2, 2]).expect("inside");
    assert_eq!(
        run(&k, &mut [], [0, 1, 1]).expect("no block"),
        Default::default()
    );
}

#[test]
fn rank_3_partitions_and_grids() {
    // y = x * 2 over a [5, 9, 20] tensor in [2, 4, 8] tiles: a 3 x 3 x 3 grid, each block
    // checking its tile origin through `NumBlocks` too.
    let (tile, dims) = ([2u32, 4, 8], [5usize, 9, 20]);
    let mut b = TileBuilder::new("scale3");
    let y = output(&mut b, "y", F32, &tile);
    let x = input(&mut b, "x", F32, 3);
    let ids: Vec<TileValue> = (0..3).map(|a| block_id(&mut b, a)).collect();
    let three = int(&mut b, I32, 3);
    for a in 0..3 {
        let n = def(&mut b, Op::NumBlocks(a));
        let ok = def(&mut b, Op::Compare(CmpOp::Eq, n, three));
        b.push(Stmt::Assert {
            cond: ok,
            message: format!("three blocks along axis {a}"),
        });
    }
    let t = load_tiled(&mut b, x, &tile, ids, Literal::Float(0.0));
    let two = konst(&mut b, F32, Literal::Float(2.0), &tile);
    let r = bin(&mut b, BinaryOp::Mul, t, two);
    store(&mut b, y, r);
    let k = b.finish();
    let n: usize = dims.iter().product();
    let mut rng = seeded(15);
    let xs: Vec<f32> = random(&mut rng, n, -100.0, 100.0);
    let bx = bytes(&xs);
    let mut out = poison_f32(n);
    let shape = dims.map(|d| d as u64);
    let mut args = [
        Arg::Tensor(TensorArg::write(F32, &shape, &mut out)),
        Arg::Tensor(TensorArg::read(F32, &shape, &bx)),
    ];
    assert_eq!(
        cuprum_tile_interp::launch_grid(&k, &args).expect("grid"),
        Some([3, 3, 3])
    );
    launch(&k, &mut args).expect("scale3");
    let want: Vec<f32> = xs.iter().map(|v| v * 2.0).collect();
    assert_bits_eq("scale3", &values::<f32>(&out), &want);
}
