//! `mma(a, b, acc)` from source: cuTile Rust's GEMM shape (a `for` loop over K tiles with
//! the accumulator carried) compiled by the front end and run on the tile interpreter,
//! against plain Rust on fresh random inputs at ragged sizes, outputs poisoned first and
//! every element checked: `f32` bit for bit against a plain chain of `mul_add`s, `f16`
//! within the tensor cores' documented bound of an exact `f64` sum. And the errors: shapes
//! that do not multiply, types `mma` does not take, operands that are not matrices.

mod common;

use common::*;
use cuprum_testkit::random::{random, rng};
use cuprum_tile_interp::{Arg, TensorArg};
use cuprum_tile_ir::ScalarType;
use half::f16;
use rand::Rng;

const GEMM: &str = r#"
mod kernels {
    use cuprum::tile::core::*;

    #[cuprum::tile::entry()]
    fn gemm<E: ElementType, const BM: i32, const BN: i32, const BK: i32>(
        z: &mut Tensor<E, { [BM, BN] }>,
        x: &Tensor<E, { [-1, -1] }>,
        y: &Tensor<E, { [-1, -1] }>,
    ) {
        let part_x = x.partition(const_shape![BM, BK]);
        let part_y = y.partition(const_shape![BK, BN]);
        let pid: (i32, i32, i32) = get_tile_block_id();
        let k: i32 = x.shape()[1];
        let mut tile_z = load_tile_mut(z);
        for i in 0i32..ceil_div(k, BK) {
            let tile_x = part_x.load([pid.0, i]);
            let tile_y = part_y.load([i, pid.1]);
            tile_z = mma(tile_x, tile_y, tile_z);
        }
        z.store(tile_z);
    }

    #[cuprum::tile::entry()]
    fn hgemm<const BM: i32, const BN: i32, const BK: i32>(
        z: &mut Tensor<f32, { [BM, BN] }>,
        x: &Tensor<f16, { [-1, -1] }>,
        y: &Tensor<f16, { [-1, -1] }>,
    ) {
        let pid: (i32, i32, i32) = get_tile_block_id();
        let k: i32 = x.shape()[1];
        let mut acc: Tile<f32, { [BM, BN] }> = constant(0.0f32, const_shape![BM, BN]);
        for i in 0i32..ceil_div(k, BK) {
            let a: Tile<f16, { [BM, BK] }> = x.partition(const_shape![BM, BK]).load([pid.0, i]);
            let b: Tile<f16, { [BK, BN] }> = y.partition(const_shape![BK, BN]).load([i, pid.1]);
            acc = mma(a, b, acc);
        }
        z.store(acc);
    }
}
"#;

fn read<'a>(ty: ScalarType, shape: &[u64], b: &'a [u8]) -> Arg<'a> {
    Arg::Tensor(TensorArg::read(ty, shape, b))
}

fn write<'a>(ty: ScalarType, shape: &[u64], b: &'a mut [u8]) -> Arg<'a> {
    Arg::Tensor(TensorArg::write(ty, shape, b))
}

#[test]
fn f32_gemm_is_a_chain_of_fused_multiply_adds() {
    let m = compile(GEMM);
    let mut r = rng("f32_gemm_is_a_chain_of_fused_multiply_adds");
    for _ in 0..3 {
        let (rows, cols, k) = (
            r.random_range(1..70usize),
            r.random_range(1..70usize),
            r.random_range(1..90usize),
        );
        let (bm, bn, bk) = (16i64, 32i64, [4i64, 8, 16][r.random_range(0..3)]);
        let x: Vec<f32> = random(&mut r, rows * k, -2.0, 2.0);
        let y: Vec<f32> = random(&mut r, k * cols, -2.0, 2.0);
        let z0: Vec<f32> = random(&mut r, rows * cols, -2.0, 2.0);
        let mut z = bytes(&z0);
        let (xb, yb) = (bytes(&x), bytes(&y));
        let kern = specialized(&m, "gemm", &[bm, bn, bk], &[ScalarType::F32]);
        let f = ScalarType::F32;
        launch(
            &kern,
            &mut [
                write(f, &[rows as u64, cols as u64], &mut z),
                read(f, &[rows as u64, k as u64], &xb),
                read(f, &[k as u64, cols as u64], &yb),
            ],
        );
        let mut want = z0.clone();
        for i in 0..rows {
            for j in 0..cols {
                let mut d = z0[i * cols + j];
                for kk in 0..k {
                    d = x[i * k + kk].mul_add(y[kk * cols + j], d);
                }
                want[i * cols + j] = d;
            }
        }
        cuprum_testkit::compare::assert_bits_eq("f32 gemm", &values::<f32>(&z), &want);
    }
}

#[test]
fn f16_gemm_is_within_the_tensor_cores_bound_of_the_exact_sum() {
    let m = compile(GEMM);
    let mut r = rng("f16_gemm_is_within_the_tensor_cores_bound_of_the_exact_sum");
    for _ in 0..3 {
        let (rows, cols, k) = (
            r.random_range(1..70usize),
            r.random_range(1..70usize),
            r.random_range(1..100usize),
        );
        let (bm, bn, bk) = (32i64, 16i64, [16i64, 32][r.random_range(0..2)]);
        let x: Vec<f16> = random::<f32>(&mut r, rows * k, -2.0, 2.0)
            .into_iter()
            .map(f16::from_f32)
            .collect();
        let y: Vec<f16> = random::<f32>(&mut r, k * cols, -2.0, 2.0)
            .into_iter()
            .map(f16::from_f32)
            .collect();
        let mut z = poison::<f32>(rows * cols);
        let (xb, yb) = (bytes(&x), bytes(&y));
        let kern = specialized(&m, "hgemm", &[bm, bn, bk], &[]);
        launch(
            &kern,
            &mut [
                write(ScalarType::F32, &[rows as u64, cols as u64], &mut z),
                read(ScalarType::F16, &[rows as u64, k as u64], &xb),
                read(ScalarType::F16, &[k as u64, cols as u64], &yb),
            ],
        );
        let got = values::<f32>(&z);
        // Each 16-product step truncates each of its 17 addends by at most 2^-23 of the
        // largest and rounds toward zero once: within 18 * 2^-23 of that step's magnitudes.
        let steps = k.div_ceil(16) as f64;
        for i in 0..rows {
            for j in 0..cols {
                let (mut exact, mut mag) = (0f64, 0f64);
                for kk in 0..k {
                    let p =
                        f64::from(x[i * k + kk].to_f32()) * f64::from(y[kk * cols + j].to_f32());
                    exact += p;
                    mag += p.abs();
                }
                let g = f64::from(got[i * cols + j]);
                let bound = steps * 18.0 * 2f64.powi(-23) * (mag + exact.abs()) + 1e-30;
                assert!(
                    (g - exact).abs() <= bound,
                    "f16 gemm {rows}x{cols}x{k}: element ({i}, {j}) is {g}, exact {exact}, bound {bound}"
                );
            }
        }
    }
}

const MMA_ERRORS: &str = r#"
mod kernels {
    use cuprum::tile::core::*;

    #[cuprum::tile::entry()]
    fn wrong_k(z: &mut Tensor<f32, { [16, 16] }>, x: &Tensor<f32, { [-1, -1] }>) {
        let a: Tile<f32, { [16, 8] }> = x.partition(const_shape![16, 8]).load([0i32, 0i32]);
        let b: Tile<f32, { [16, 16] }> = x.partition(const_shape![16, 16]).load([0i32, 0i32]);
        let acc = load_tile_mut(z);
        z.store(mma(a, b, acc));
    }
}
"#;

#[test]
fn mma_errors_are_reported_at_the_call() {
    assert_error(
        MMA_ERRORS,
        "K (columns of a, rows of b) differs (8 and 16)",
        10,
        17,
    );
    let half_acc = MMA_ERRORS
        .replace(
            "fn wrong_k(z: &mut Tensor<f32",
            "fn half_acc(z: &mut Tensor<f16",
        )
        .replace("{ [16, 8] }>", "{ [16, 16] }>")
        .replace("f32, { [-1, -1] }", "f16, { [-1, -1] }")
        .replace("const_shape![16, 8]", "const_shape![16, 16]")
        .replace("Tile<f32", "Tile<f16");
    assert_error(
        &half_acc,
        "mma takes f16, bf16 or tf32 inputs with an f32 accumulator",
        10,
        17,
    );
    let rank = MMA_ERRORS.replace("fn wrong_k(", "fn rank(").replace(
        "mma(a, b, acc)",
        "mma(a.reshape(const_shape![128]), b, acc)",
    );
    assert_error(&rank, "all be matrices (rank 2) or all", 10, 17);
}

/// `tf32` tiles feed `mma` and conversions only: arithmetic on them is refused at the
/// operation, naming the conversion to make, and a `tf32` accumulator is no accumulator.
#[test]
fn tf32_tiles_have_no_arithmetic() {
    let tf32_add = MMA_ERRORS.replace("fn wrong_k(", "fn tf32_add(").replace(
        "z.store(mma(a, b, acc));",
        "let t: Tile<tf32, { [16, 8] }> = convert_tile(a);\n        z.store(convert_tile(t + t));",
    );
    assert_error(
        &tf32_add,
        "tf32 tiles only feed `mma` and conversions; convert them to f32 first",
        11,
        30,
    );
    let tf32_acc = MMA_ERRORS.replace("fn wrong_k(", "fn tf32_acc(").replace(
        "z.store(mma(a, b, acc));",
        "let t: Tile<tf32, { [16, 16] }> = convert_tile(acc);\n        z.store(mma(b, b, t));",
    );
    assert_error(
        &tf32_acc,
        "mma of f32 inputs into a tf32 accumulator",
        11,
        17,
    );
}
