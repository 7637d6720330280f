//! Element-wise tile kernels, loads and stores on the device against plain Rust: add,
//! saxpy with a scalar, ragged 2-D tiles, strided and transposed views, iota, constants,
//! casts, comparisons and selects, reshapes and permutations.

mod common;

use common::*;
use cuprum_ir::{BinaryOp, CmpOp, ScalarType};
use cuprum_testkit::compare::{assert_bits_eq, assert_same};
use cuprum_testkit::poison::poisoned;
use cuprum_testkit::random::random;
use cuprum_tile_ir::{
    Dim, Elem, Literal, Op, ParamKind, Specialization, TensorAccess, TensorDim, TensorParam,
    TileBuilder, View, specialize,
};
use cuprum_tile_lower::lower;

/// `add<const B: i32>(z: &mut Tensor<f32, {[B]}>, x: &Tensor<f32, {[-1]}>, y: ..)`, built
/// generic and specialized as a launch would.
fn generic_add() -> cuprum_tile_ir::TileKernel {
    let mut b = TileBuilder::new("add");
    let bsz = b.const_param("B", ScalarType::I32);
    let f = Elem::Known(ScalarType::F32);
    let tensor = |dims, access| {
        ParamKind::Tensor(TensorParam {
            elem: f,
            dims,
            access,
        })
    };
    let z = b.param(
        "z",
        tensor(
            vec![TensorDim::Static(Dim::Param(bsz))],
            TensorAccess::Partitioned,
        ),
    );
    let x = b.param("x", tensor(vec![TensorDim::Dynamic], TensorAccess::Read));
    let y = b.param("y", tensor(vec![TensorDim::Dynamic], TensorAccess::Read));
    let pid = b.def(Op::BlockId(0)).expect("pid");
    let load = |b: &mut TileBuilder, t| {
        b.def(Op::Load {
            view: View::Tiled {
                tensor: t,
                tile: vec![Dim::Param(bsz)],
                index: vec![pid],
            },
            padding: Literal::Float(0.0),
        })
        .expect("load")
    };
    let tx = load(&mut b, x);
    let ty = load(&mut b, y);
    let sum = b.def(Op::Binary(BinaryOp::Add, tx, ty)).expect("add");
    b.push(cuprum_tile_ir::Stmt::Store {
        tensor: z,
        value: sum,
    });
    b.finish()
}

#[test]
fn add_matches_rust_at_many_sizes_and_tiles() {
    let dev = dev();
    let mut rng = rng("add");
    for tile in [1024u32, 128, 96, 32] {
        let k = specialize(
            &generic_add(),
            &Specialization {
                consts: vec![i64::from(tile)],
                types: vec![],
            },
        )
        .expect("specialize");
        let c = compile(&dev, &k);
        for n in [1usize, 1000, 4096, 5000] {
            let x = random(&mut rng, n, -100.0f32, 100.0);
            let y = random(&mut rng, n, -100.0f32, 100.0);
            let z = Tensor::new(&dev, &poisoned::<f32>(n), &[n]);
            let (tx, ty) = (Tensor::new(&dev, &x, &[n]), Tensor::new(&dev, &y, &[n]));
            launch(&dev, &c, &[z.arg(), tx.arg(), ty.arg()]).expect("launch");
            let want: Vec<f32> = x.iter().zip(&y).map(|(a, b)| a + b).collect();
            assert_bits_eq(&format!("add n={n} tile={tile}"), &z.to_host(&dev), &want);
        }
    }
}

#[test]
fn add_loads_and_stores_16_bytes_per_thread_on_the_fast_path() {
    let k = specialize(
        &generic_add(),
        &Specialization {
            consts: vec![1024],
            types: vec![],
        },
    )
    .expect("specialize");
    let l = lower(&k).expect("lower");
    assert_eq!(l.block_threads, 128);
    assert_eq!(l.shared_bytes, 0);
    // 1024 elements over 128 threads: 8 each, as two runs of four, per input; the edge path
    // (which also takes tiles of unaligned views) has one scalar access per element.
    let a = accesses(&l.kernel);
    assert_eq!(a.vector_loads, vec![4; 4], "{a:?}");
    assert_eq!(a.vector_stores, vec![4; 2], "{a:?}");
    assert_eq!((a.loads, a.stores, a.shared), (16, 8, 0), "{a:?}");
}

/// `out = a * x + y` with a scalar `a`, `y` the output itself (read through its own tile,
/// then written: two accesses of one partitioned tensor).
#[test]
fn saxpy_with_a_scalar_parameter() {
    let mut t = Tk::new("saxpy");
    let y = t.output("y", ScalarType::F32, &[256]);
    let x = t.input("x", ScalarType::F32, 1);
    let a = t.scalar_param("a", ScalarType::F32);
    let pid = t.block_id(0);
    let tx = t.load(x, &[256], vec![pid], Literal::Float(0.0));
    let ty = t.load_own(y, Literal::Float(0.0));
    let a = t.splat(a, &[256]);
    let ax = t.bin(BinaryOp::Mul, a, tx);
    let out = t.bin(BinaryOp::Add, ax, ty);
    t.store(y, out);
    let k = t.finish();
    let dev = dev();
    let c = compile(&dev, &k);
    let mut rng = rng("saxpy");
    for n in [700usize, 1024] {
        let xs = random(&mut rng, n, -10.0f32, 10.0);
        let ys = random(&mut rng, n, -10.0f32, 10.0);
        let av = 1.5f32;
        let ty = Tensor::new(&dev, &ys, &[n]);
        let tx = Tensor::new(&dev, &xs, &[n]);
        launch(&dev, &c, &[ty.arg(), tx.arg(), scalar(av)]).expect("launch");
        let want: Vec<f32> = xs.iter().zip(&ys).map(|(x, y)| av * x + y).collect();
        assert_bits_eq("saxpy", &ty.to_host(&dev), &want);
    }
}

/// `out[i, j] = 2 * x[i, j] + 1` on a 37x50 tensor in 16x16 tiles (edge tiles in both
/// directions), with the lowering's warps and with others (replicated layouts).
#[test]
fn ragged_2d_tiles() {
    let mut t = Tk::new("ragged");
    let out = t.output("out", ScalarType::F32, &[16, 16]);
    let x = t.input("x", ScalarType::F32, 2);
    let (i, j) = (t.block_id(0), t.block_id(1));
    let tx = t.load(x, &[16, 16], vec![i, j], Literal::Float(0.0));
    let two = t.constant(ScalarType::F32, Literal::Float(2.0), &[16, 16]);
    let one = t.constant(ScalarType::F32, Literal::Float(1.0), &[16, 16]);
    let m = t.bin(BinaryOp::Mul, tx, two);
    let r = t.bin(BinaryOp::Add, m, one);
    t.store(out, r);
    let k = t.finish();
    let dev = dev();
    let mut rng = rng("ragged_2d_tiles");
    let (rows, cols) = (37usize, 50usize);
    for warps in [None, Some(1), Some(4), Some(8)] {
        let c = compile_warps(&dev, &k, warps);
        let xs = random(&mut rng, rows * cols, -100.0f32, 100.0);
        let o = Tensor::new(&dev, &poisoned::<f32>(rows * cols), &[rows, cols]);
        let tx = Tensor::new(&dev, &xs, &[rows, cols]);
        launch(&dev, &c, &[o.arg(), tx.arg()]).expect("launch");
        let want: Vec<f32> = xs.iter().map(|v| v * 2.0 + 1.0).collect();
        assert_bits_eq(&format!("ragged, {warps:?} warps"), &o.to_host(&dev), &want);
    }
}

/// Tiles of sizes that are not powers of two (clamped layouts), on ragged tensors.
#[test]
fn tiles_of_any_size() {
    let dev = dev();
    let mut rng = rng("tiles_of_any_size");
    for (tile, rows, cols) in [
        ([5u32, 50u32], 23usize, 120usize),
        ([3, 7], 10, 10),
        ([1, 100], 3, 100),
    ] {
        let mut t = Tk::new("any");
        let out = t.output("out", ScalarType::I32, &tile);
        let x = t.input("x", ScalarType::I32, 2);
        let (i, j) = (t.block_id(0), t.block_id(1));
        let tx = t.load(x, &tile, vec![i, j], Literal::Int(0));
        let three = t.constant(ScalarType::I32, Literal::Int(3), &tile);
        let r = t.bin(BinaryOp::Mul, tx, three);
        t.store(out, r);
        let k = t.finish();
        for warps in [None, Some(2)] {
            let c = compile_warps(&dev, &k, warps);
            let xs = random(&mut rng, rows * cols, -1000i32, 1000);
            let o = Tensor::new(&dev, &vec![i32::MIN; rows * cols], &[rows, cols]);
            let tx = Tensor::new(&dev, &xs, &[rows, cols]);
            launch(&dev, &c, &[o.arg(), tx.arg()]).expect("launch");
            let want: Vec<i32> = xs.iter().map(|v| v * 3).collect();
            assert_same(&format!("tile {tile:?}"), &o.to_host(&dev), &want);
        }
    }
}

/// Reading a transposed view (strides `(1, rows)`) and a view at an offset with padded
/// rows: the same kernel, general strides.
#[test]
fn strided_and_transposed_inputs() {
    let mut t = Tk::new("copy");
    let out = t.output("out", ScalarType::F32, &[8, 32]);
    let x = t.input("x", ScalarType::F32, 2);
    let (i, j) = (t.block_id(0), t.block_id(1));
    let tx = t.load(x, &[8, 32], vec![i, j], Literal::Float(-7.0));
    t.store(out, tx);
    let k = t.finish();
    let dev = dev();
    let c = compile(&dev, &k);
    let mut rng = rng("strided");
    let (rows, cols) = (21usize, 70usize);
    // x = a^T where a is cols x rows, row-major: x[i][j] = a[j * rows + i].
    let a = random(&mut rng, rows * cols, -100.0f32, 100.0);
    let xt = Tensor::view(&dev, &a, 0, &[rows, cols], &[1, rows as i64]);
    let o = Tensor::new(&dev, &poisoned::<f32>(rows * cols), &[rows, cols]);
    launch(&dev, &c, &[o.arg(), xt.arg()]).expect("launch");
    let want: Vec<f32> = (0..rows * cols)
        .map(|e| a[(e % cols) * rows + e / cols])
        .collect();
    assert_bits_eq("transposed", &o.to_host(&dev), &want);
    // A view at offset 3 with rows 75 apart (not multiples of 4: no vector accesses).
    let pitch = 75usize;
    let b = random(&mut rng, 3 + rows * pitch, -100.0f32, 100.0);
    let xv = Tensor::view(&dev, &b, 3, &[rows, cols], &[pitch as i64, 1]);
    let o = Tensor::new(&dev, &poisoned::<f32>(rows * cols), &[rows, cols]);
    launch(&dev, &c, &[o.arg(), xv.arg()]).expect("launch");
    let want: Vec<f32> = (0..rows * cols)
        .map(|e| b[3 + (e / cols) * pitch + e % cols])
        .collect();
    assert_bits_eq("offset view", &o.to_host(&dev), &want);
    // Rows 72 apart at offset 8: aligned runs, so the fast path's vector loads.
    let pitch = 72usize;
    let b = random(&mut rng, 8 + rows * pitch, -100.0f32, 100.0);
    let xv = Tensor::view(&dev, &b, 8, &[rows, cols], &[pitch as i64, 1]);
    let o = Tensor::new(&dev, &poisoned::<f32>(rows * cols), &[rows, cols]);
    launch(&dev, &c, &[o.arg(), xv.arg()]).expect("launch");
    let want: Vec<f32> = (0..rows * cols)
        .map(|e| b[8 + (e / cols) * pitch + e % cols])
        .collect();
    assert_bits_eq("aligned view", &o.to_host(&dev), &want);
}

/// A tile index past the tensor or negative reads only padding.
#[test]
fn tiles_outside_the_tensor_read_padding() {
    let mut t = Tk::new("shifted");
    let out = t.output("out", ScalarType::I32, &[64]);
    let x = t.input("x", ScalarType::I32, 1);
    let s = t.scalar_param("shift", ScalarType::I32);
    let pid = t.block_id(0);
    let idx = t.bin(BinaryOp::Add, pid, s);
    let tx = t.load(x, &[64], vec![idx], Literal::Int(-1));
    t.store(out, tx);
    let k = t.finish();
    let dev = dev();
    let c = compile(&dev, &k);
    let n = 200usize;
    let xs: Vec<i32> = (0..n as i32).collect();
    for shift in [-5i32, -1, 0, 1, 2, 9] {
        let o = Tensor::new(&dev, &vec![i32::MIN; n], &[n]);
        let tx = Tensor::new(&dev, &xs, &[n]);
        launch(&dev, &c, &[o.arg(), tx.arg(), scalar(shift)]).expect("launch");
        let want: Vec<i32> = (0..n as i64)
            .map(|e| {
                let src = e + i64::from(shift) * 64;
                if (0..n as i64).contains(&src) {
                    src as i32
                } else {
                    -1
                }
            })
            .collect();
        assert_same(&format!("shift {shift}"), &o.to_host(&dev), &want);
    }
}

/// Tile indices so far out that `index * tile` does not fit in 64 bits (it would wrap onto
/// the tensor: `2^58 * 64 = 2^64`) read padding like any tile outside, for `i64` and `u64`
/// indices.
#[test]
fn tile_indices_whose_offset_overflows_read_padding() {
    let n = 200usize;
    let xs: Vec<i32> = (0..n as i32).collect();
    let dev = dev();
    for ty in [ScalarType::I64, ScalarType::U64] {
        let mut t = Tk::new("far");
        let out = t.output("out", ScalarType::I32, &[64]);
        let x = t.input("x", ScalarType::I32, 1);
        let idx = t.scalar_param("index", ty);
        let tx = t.load(x, &[64], vec![idx], Literal::Int(-1));
        t.store(out, tx);
        let c = compile(&dev, &t.finish());
        for index in [1u64 << 58, 1 << 57, 1 << 63, (1 << 58) + 1, u64::MAX, 3] {
            let o = Tensor::new(&dev, &vec![i32::MIN; 64], &[64]);
            let tx = Tensor::new(&dev, &xs, &[n]);
            let arg = Arg::Scalar(cuprum_runtime::KernelArg::Scalar { ty, bits: index });
            launch(&dev, &c, &[o.arg(), tx.arg(), arg]).expect("launch");
            // Only index 3 (elements 192..256 of 200) is even partly inside.
            let want: Vec<i32> = (0..64)
                .map(|e| if index == 3 && e < 8 { 192 + e } else { -1 })
                .collect();
            assert_same(&format!("{ty} index {index:#x}"), &o.to_host(&dev), &want);
        }
    }
}

/// `out[i, j] = (i * 100 + j) as f32 + x[i, j] as f32 + 0.5`: iotas along both axes of the
/// tile, constants, casts from i32.
#[test]
fn iota_constants_and_casts() {
    let tile = [8u32, 64];
    let mut t = Tk::new("iota");
    let out = t.output("out", ScalarType::F32, &tile);
    let x = t.input("x", ScalarType::I32, 2);
    let (i, j) = (t.block_id(0), t.block_id(1));
    let tx = t.load(x, &tile, vec![i, j], Literal::Int(0));
    let row = t.def(Op::Iota {
        elem: i32e(),
        shape: cuprum_tile_ir::shape_of(&tile),
        axis: 0,
    });
    // The column iota made as a 1-D tile, reshaped and broadcast.
    let col1 = t.def(Op::Iota {
        elem: Elem::Known(ScalarType::I64),
        shape: cuprum_tile_ir::shape_of(&[64]),
        axis: 0,
    });
    let col1 = t.def(Op::Cast {
        value: col1,
        to: i32e(),
    });
    let col = t.reshape(col1, &[1, 64]);
    let col = t.broadcast(col, &tile);
    let hundred = t.constant(ScalarType::I32, Literal::Int(100), &tile);
    let r100 = t.bin(BinaryOp::Mul, row, hundred);
    let code = t.bin(BinaryOp::Add, r100, col);
    let sum = t.bin(BinaryOp::Add, code, tx);
    let f = t.def(Op::Cast {
        value: sum,
        to: f32e(),
    });
    let half = t.constant(ScalarType::F32, Literal::Float(0.5), &tile);
    let r = t.bin(BinaryOp::Add, f, half);
    t.store(out, r);
    let k = t.finish();
    let dev = dev();
    let c = compile(&dev, &k);
    let mut rng = rng("iota");
    let (rows, cols) = (20usize, 100usize);
    let xs = random(&mut rng, rows * cols, -1000i32, 1000);
    let o = Tensor::new(&dev, &poisoned::<f32>(rows * cols), &[rows, cols]);
    let tx = Tensor::new(&dev, &xs, &[rows, cols]);
    launch(&dev, &c, &[o.arg(), tx.arg()]).expect("launch");
    let want: Vec<f32> = (0..rows * cols)
        .map(|e| {
            let (r, cc) = (e / cols, e % cols);
            let (ti, tj) = (r % 8, cc % 64);
            (ti as i32 * 100 + tj as i32 + xs[e]) as f32 + 0.5
        })
        .collect();
    assert_bits_eq("iota", &o.to_host(&dev), &want);
}

/// `out = select(x > y, x, y * 2)`, and `out2 = (x == y) as u8` through a compare.
#[test]
fn compare_and_select() {
    let mut t = Tk::new("select");
    let out = t.output("out", ScalarType::I32, &[128]);
    let x = t.input("x", ScalarType::I32, 1);
    let y = t.input("y", ScalarType::I32, 1);
    let pid = t.block_id(0);
    let tx = t.load(x, &[128], vec![pid], Literal::Int(0));
    let ty = t.load(y, &[128], vec![pid], Literal::Int(0));
    let gt = t.cmp(CmpOp::Gt, tx, ty);
    let two = t.constant(ScalarType::I32, Literal::Int(2), &[128]);
    let y2 = t.bin(BinaryOp::Mul, ty, two);
    let s = t.def(Op::Select {
        cond: gt,
        if_true: tx,
        if_false: y2,
    });
    // Plus 1 where x == y (a bool tile cast to i32).
    let eq = t.cmp(CmpOp::Eq, tx, ty);
    let eqi = t.def(Op::Cast {
        value: eq,
        to: i32e(),
    });
    let r = t.bin(BinaryOp::Add, s, eqi);
    t.store(out, r);
    let k = t.finish();
    let dev = dev();
    let c = compile(&dev, &k);
    let mut rng = rng("select");
    let n = 1000usize;
    let xs = random(&mut rng, n, -20i32, 20);
    let ys = random(&mut rng, n, -20i32, 20);
    let o = Tensor::new(&dev, &vec![i32::MIN; n], &[n]);
    let (tx, ty) = (Tensor::new(&dev, &xs, &[n]), Tensor::new(&dev, &ys, &[n]));
    launch(&dev, &c, &[o.arg(), tx.arg(), ty.arg()]).expect("launch");
    let want: Vec<i32> = xs
        .iter()
        .zip(&ys)
        .map(|(&x, &y)| (if x > y { x } else { y * 2 }) + i32::from(x == y))
        .collect();
    assert_same("select", &o.to_host(&dev), &want);
}

/// A 1-D tile reshaped to 2-D and back, and a transpose: `out` (tile `[32, 16]`) is `x`
/// transposed, each element plus its row-major position within a flattened `[512]` tile.
#[test]
fn reshape_and_permute() {
    let mut t = Tk::new("transpose");
    let out = t.output("out", ScalarType::F32, &[32, 16]);
    let x = t.input("x", ScalarType::F32, 2);
    let (i, j) = (t.block_id(0), t.block_id(1));
    // Block (i, j) of out is block (j, i) of x, transposed.
    let tx = t.load(x, &[16, 32], vec![j, i], Literal::Float(0.0));
    let p = t.def(Op::Permute {
        value: tx,
        perm: vec![1, 0],
    });
    let flat = t.reshape(p, &[512]);
    let pos = t.def(Op::Iota {
        elem: i32e(),
        shape: cuprum_tile_ir::shape_of(&[512]),
        axis: 0,
    });
    let pos = t.def(Op::Cast {
        value: pos,
        to: f32e(),
    });
    let flat = t.bin(BinaryOp::Add, flat, pos);
    let back = t.reshape(flat, &[32, 16]);
    t.store(out, back);
    let k = t.finish();
    let dev = dev();
    let mut rng = rng("reshape_and_permute");
    let (rows, cols) = (40usize, 70usize); // x is rows x cols; out is cols x rows
    for warps in [None, Some(1), Some(8)] {
        let c = compile_warps(&dev, &k, warps);
        let xs = random(&mut rng, rows * cols, -100.0f32, 100.0);
        let o = Tensor::new(&dev, &poisoned::<f32>(rows * cols), &[cols, rows]);
        let tx = Tensor::new(&dev, &xs, &[rows, cols]);
        launch(&dev, &c, &[o.arg(), tx.arg()]).expect("launch");
        let want: Vec<f32> = (0..rows * cols)
            .map(|e| {
                let (r, cc) = (e / rows, e % rows); // out coordinates
                let pos = (r % 32) * 16 + cc % 16;
                xs[cc * cols + r] + pos as f32
            })
            .collect();
        assert_bits_eq(&format!("transpose {warps:?}"), &o.to_host(&dev), &want);
    }
}

/// A column `[BM, 1]` loaded and broadcast along rows (a conversion through shared
/// memory), and a row `[1, BN]` broadcast along columns (free).
#[test]
fn broadcast_rows_and_columns() {
    let tile = [16u32, 64];
    let mut t = Tk::new("outer");
    let out = t.output("out", ScalarType::F32, &tile);
    let a = t.input("a", ScalarType::F32, 2);
    let b = t.input("b", ScalarType::F32, 2);
    let (i, j) = (t.block_id(0), t.block_id(1));
    let zero = t.int(0);
    let col = t.load(a, &[16, 1], vec![i, zero], Literal::Float(0.0));
    let row = t.load(b, &[1, 64], vec![zero, j], Literal::Float(0.0));
    let col = t.broadcast(col, &tile);
    let row = t.broadcast(row, &tile);
    let r = t.bin(BinaryOp::Mul, col, row);
    t.store(out, r);
    let k = t.finish();
    let dev = dev();
    let c = compile(&dev, &k);
    assert!(
        c.lowered.shared_bytes > 0,
        "the column moves through shared memory"
    );
    let mut rng = rng("broadcast");
    let (rows, cols) = (40usize, 100usize);
    let av = random(&mut rng, rows, -10.0f32, 10.0);
    let bv = random(&mut rng, cols, -10.0f32, 10.0);
    let o = Tensor::new(&dev, &poisoned::<f32>(rows * cols), &[rows, cols]);
    let ta = Tensor::new(&dev, &av, &[rows, 1]);
    let tb = Tensor::new(&dev, &bv, &[1, cols]);
    launch(&dev, &c, &[o.arg(), ta.arg(), tb.arg()]).expect("launch");
    let want: Vec<f32> = (0..rows * cols)
        .map(|e| av[e / cols] * bv[e % cols])
        .collect();
    assert_bits_eq("outer product", &o.to_host(&dev), &want);
}

/// Scalars from the launch: a rank-0 tensor's element, the block index, the number of
/// blocks, a tensor's size: `out = x * s + (pid * 1000 + blocks * 10 + len)`.
#[test]
fn scalars_from_the_launch() {
    let mut t = Tk::new("scalars");
    let out = t.output("out", ScalarType::I64, &[32]);
    let x = t.input("x", ScalarType::I64, 1);
    let s = t.input("s", ScalarType::I64, 0);
    let pid = t.block_id(0);
    let tx = t.load(x, &[32], vec![pid], Literal::Int(0));
    let sv = t.load(s, &[], vec![], Literal::Int(0));
    let blocks = t.def(Op::NumBlocks(0));
    let len = t.def(Op::TensorDim { tensor: x, axis: 0 });
    let k1000 = t.constant(ScalarType::I64, Literal::Int(1000), &[]);
    let k10 = t.constant(ScalarType::I64, Literal::Int(10), &[]);
    let pid = t.def(Op::Cast {
        value: pid,
        to: Elem::Known(ScalarType::I64),
    });
    let blocks = t.def(Op::Cast {
        value: blocks,
        to: Elem::Known(ScalarType::I64),
    });
    let a = t.bin(BinaryOp::Mul, pid, k1000);
    let b = t.bin(BinaryOp::Mul, blocks, k10);
    let c = t.bin(BinaryOp::Add, a, b);
    let c = t.bin(BinaryOp::Add, c, len);
    let sv = t.splat(sv, &[32]);
    let c = t.splat(c, &[32]);
    let m = t.bin(BinaryOp::Mul, tx, sv);
    let r = t.bin(BinaryOp::Add, m, c);
    t.store(out, r);
    let k = t.finish();
    let dev = dev();
    let c = compile(&dev, &k);
    let mut rng = rng("scalars_from_the_launch");
    let n = 100usize;
    let xs = random(&mut rng, n, -1000i64, 1000);
    let o = Tensor::new(&dev, &vec![i64::MIN; n], &[n]);
    let tx = Tensor::new(&dev, &xs, &[n]);
    // The scalar tensor is element 2 of a 3-element allocation.
    let ts = Tensor::view(&dev, &[5i64, 6, 7], 2, &[], &[]);
    launch(&dev, &c, &[o.arg(), tx.arg(), ts.arg()]).expect("launch");
    let blocks = n.div_ceil(32) as i64;
    let want: Vec<i64> = (0..n)
        .map(|e| xs[e] * 7 + (e / 32) as i64 * 1000 + blocks * 10 + n as i64)
        .collect();
    assert_same("scalars", &o.to_host(&dev), &want);
}
