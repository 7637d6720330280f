//! GEMM K loops computed at once (`kloop`) give the bits of the same loops run step by step:
//! each kernel runs twice, once as cuTile Rust's `gemm` writes it and once with an unused
//! constant in the loop body (which the interpreter does not recognize, so it runs the loop
//! tile by tile), on random `f32` data with NaNs, infinities, signed zeros and subnormals,
//! and every output element is compared bit for bit. Cases cover both ways B's panel is read
//! (in place when B is one tile wide, packed otherwise), widths and heights that are not
//! multiples of the kernel's register blocks, an accumulator that starts from the output's
//! own tile, and the loops the fast path must leave alone (ragged tiles, a strided operand).

mod common;

use common::*;
use cuprum_testkit::compare::assert_bits_eq;
use cuprum_testkit::random::seeded;
use cuprum_tile_interp::{Arg, TensorArg, fused_k_loops};
use cuprum_tile_ir::*;
use rand::Rng;

/// The fused-loop counter is the process's: one case counts at a time.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// How the accumulator starts.
#[derive(Clone, Copy, Debug)]
enum Init {
    Zero,
    Own,
}

/// `z = x · y (+ z)` in `[bm, bn]` tiles with K steps of `bk`, `ceil(K / bk)` steps;
/// `decoy` puts an unused constant in the loop body; `init` `Own` also ends the body with a
/// `continue` that passes the product on (as cuTile Rust's `gemm_static` writes it).
fn gemm(bm: u32, bn: u32, bk: u32, init: Init, decoy: bool) -> TileKernel {
    let mut b = TileBuilder::new("gemm");
    let z = output(&mut b, "z", F32, &[bm, bn]);
    let x = input(&mut b, "x", F32, 2);
    let y = input(&mut b, "y", F32, 2);
    let row = block_id(&mut b, 0);
    let col = block_id(&mut b, 1);
    let k = def(&mut b, Op::TensorDim { tensor: x, axis: 1 });
    let bkv = int(&mut b, I64, bk.into());
    let one = int(&mut b, I64, 1);
    let t = bin(&mut b, BinaryOp::Add, k, bkv);
    let t = bin(&mut b, BinaryOp::Sub, t, one);
    let steps = bin(&mut b, BinaryOp::Div, t, bkv);
    let start = int(&mut b, I64, 0);
    let acc0 = match init {
        Init::Zero => konst(&mut b, F32, Literal::Float(0.0), &[bm, bn]),
        Init::Own => load_own(&mut b, z, Literal::Float(0.0)),
    };
    let counter = b.value(TileType::scalar(I64));
    let acc = b.value(b.ty(acc0).clone());
    let result = b.value(b.ty(acc0).clone());
    b.begin_block();
    let a = load_tiled(
        &mut b,
        x,
        &[bm, bk],
        vec![row, counter],
        Literal::Float(0.0),
    );
    if decoy {
        konst(&mut b, F32, Literal::Float(1.0), &[]);
    }
    let bt = load_tiled(
        &mut b,
        y,
        &[bk, bn],
        vec![counter, col],
        Literal::Float(0.0),
    );
    let next = def(&mut b, Op::Mma { a, b: bt, acc });
    let body = if matches!(init, Init::Own) {
        b.push(Stmt::Continue { values: vec![next] });
        b.end_block(Vec::new())
    } else {
        b.end_block(vec![next])
    };
    b.push(Stmt::For {
        counter,
        start,
        end: steps,
        step: one,
        args: vec![acc],
        inits: vec![acc0],
        body,
        results: vec![result],
    });
    store(&mut b, z, result);
    b.finish()
}

/// Random `f32`s, one in sixteen a special value.
fn data(rng: &mut impl Rng, n: usize) -> Vec<f32> {
    let specials = [
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        -0.0,
        0.0,
        f32::MIN_POSITIVE / 4.0,
        -f32::MIN_POSITIVE,
    ];
    (0..n)
        .map(|_| {
            if rng.random_range(0..16) == 0 {
                specials[rng.random_range(0..specials.len())]
            } else {
                rng.random_range(-4.0f32..4.0)
            }
        })
        .collect()
}

/// One case: `[m, k] · [k, n]` in `[bm, bn]` tiles with K steps of `bk`; `x_transposed`
/// gives `x` as a transposed view (inner stride not 1). Returns how many K loops were
/// computed at once.
#[allow(clippy::too_many_arguments)]
fn case(
    (m, n, k): (usize, usize, usize),
    (bm, bn, bk): (u32, u32, u32),
    init: Init,
    x_transposed: bool,
    seed: u64,
) -> u64 {
    let mut rng = seeded(seed);
    let xs = data(&mut rng, m * k);
    let ys = data(&mut rng, k * n);
    let zs = data(&mut rng, m * n);
    let (bx, by) = (bytes(&xs), bytes(&ys));
    let mut outs = Vec::new();
    let mut fused = 0;
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    for decoy in [true, false] {
        let kernel = gemm(bm, bn, bk, init, decoy);
        let mut out = bytes(&zs);
        let x_arg = if x_transposed {
            // The same matrix stored column-major: element (i, kk) at kk * m + i.
            let mut t = vec![0f32; m * k];
            for i in 0..m {
                for kk in 0..k {
                    t[kk * m + i] = xs[i * k + kk];
                }
            }
            TensorArg::read(
                F32,
                &[m as u64, k as u64],
                Box::leak(bytes(&t).into_boxed_slice()),
            )
            .strided(&[1, m as i64], 0)
        } else {
            TensorArg::read(F32, &[m as u64, k as u64], &bx)
        };
        let before = fused_k_loops();
        let mut args = [
            Arg::Tensor(TensorArg::write(F32, &[m as u64, n as u64], &mut out)),
            Arg::Tensor(x_arg),
            Arg::Tensor(TensorArg::read(F32, &[k as u64, n as u64], &by)),
        ];
        launch(&kernel, &mut args).expect("gemm");
        if !decoy {
            fused = fused_k_loops() - before;
        }
        outs.push(values::<f32>(&out));
    }
    let what = format!("{m}x{n}x{k} in {bm}x{bn}x{bk}, {init:?}, x transposed {x_transposed}");
    assert_bits_eq(&what, &outs[1], &outs[0]);
    fused
}

#[test]
fn k_loops_computed_at_once_match_the_steps() {
    // B one tile wide (read in place), and wider (packed); 16 and 24 columns (a register
    // block and a half); 8 and 12 rows (whole blocks of eight, and four left over).
    let blocks = |m: usize, n: usize, bm: u32, bn: u32| (m / bm as usize) * (n / bn as usize);
    for (dims, tiles) in [
        ((32, 16, 64), (8, 16, 8)),
        ((48, 48, 40), (12, 16, 8)),
        ((24, 72, 32), (8, 24, 16)),
        ((36, 24, 48), (12, 24, 16)),
        ((16, 16, 8), (16, 16, 8)),
    ] {
        for (i, init) in [Init::Zero, Init::Own].into_iter().enumerate() {
            let fused = case(dims, tiles, init, false, 40 + i as u64);
            assert_eq!(
                fused,
                blocks(dims.0, dims.1, tiles.0, tiles.1) as u64,
                "{dims:?} {tiles:?}: every block's loop is computed at once"
            );
        }
    }
}

#[test]
fn loops_the_fast_path_cannot_take_run_step_by_step() {
    // Ragged rows and columns: the edge blocks step, the rest are computed at once.
    let fused = case((40, 40, 32), (16, 16, 8), Init::Own, false, 50);
    assert_eq!(fused, 4, "the 2x2 blocks inside the tensor");
    // A ragged K: every loop's last tile is padded, so every block steps.
    assert_eq!(case((32, 32, 36), (16, 16, 8), Init::Zero, false, 51), 0);
    // A transposed A (inner stride m): every block steps.
    assert_eq!(case((32, 32, 32), (16, 16, 8), Init::Zero, true, 52), 0);
}
