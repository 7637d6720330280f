//! Permuted partitions (`x.partition_permuted(tile, dim_map).load(index)`, cuTile Rust's
//! view of a tensor with its axes permuted): compiled with the permutation a const generic
//! array, specialized with every permutation of three axes, run on the tile interpreter and
//! checked element by element against plain Rust on ragged shapes; permutations that are
//! not, and outputs, are refused.

mod common;

use common::*;
use cuprum_testkit::random::{random, rng};
use cuprum_tile_interp::{Arg, TensorArg};
use cuprum_tile_ir::{Specialization, SpecializeError, specialize};
use rand::Rng;

const PERMUTE: &str = r#"
mod kernels {
    use cuprum::tile::core::*;

    #[cuprum::tile::entry()]
    fn permute3<const B0: i32, const B1: i32, const B2: i32, const P: [i32; 3]>(
        out: &mut Tensor<f32, { [B0, B1, B2] }>,
        x: &Tensor<f32, { [-1, -1, -1] }>,
    ) {
        let pid: (i32, i32, i32) = get_tile_block_id();
        let dim_map = const_array!(P);
        let part: Partition<f32, { [B0, B1, B2] }> =
            x.partition_permuted(const_shape![B0, B1, B2], dim_map);
        out.store(part.load([pid.0, pid.1, pid.2]) + 1.0f32);
    }

    #[cuprum::tile::entry()]
    fn swap_last<const B0: i32, const B1: i32>(
        out: &mut Tensor<f32, { [B0, B1] }>,
        x: &Tensor<f32, { [-1, -1] }>,
    ) {
        let pid: (i32, i32, i32) = get_tile_block_id();
        let part = x.partition_permuted(const_shape![B0, B1], [1, 0]);
        out.store(part.load([pid.0, pid.1]));
    }
}
"#;

/// `out[v] = x[s] + 1` with `s[perm[i]] = v[i]`, `out` of shape `shape` permuted.
fn reference(x: &[f32], shape: [usize; 3], perm: [usize; 3]) -> Vec<f32> {
    let out_shape = perm.map(|a| shape[a]);
    let strides = [shape[1] * shape[2], shape[2], 1];
    let mut out = Vec::with_capacity(x.len());
    for v0 in 0..out_shape[0] {
        for v1 in 0..out_shape[1] {
            for v2 in 0..out_shape[2] {
                let v = [v0, v1, v2];
                let at: usize = (0..3).map(|i| v[i] * strides[perm[i]]).sum();
                out.push(x[at] + 1.0);
            }
        }
    }
    out
}

#[test]
fn permuted_loads_match_plain_rust_for_every_permutation() {
    let m = compile(PERMUTE);
    let mut r = rng("permuted_loads_match_plain_rust_for_every_permutation");
    let perms = [
        [0, 1, 2],
        [0, 2, 1],
        [1, 0, 2],
        [1, 2, 0],
        [2, 0, 1],
        [2, 1, 0],
    ];
    for perm in perms {
        let shape = [
            r.random_range(1..9usize),
            r.random_range(1..13usize),
            r.random_range(1..20usize),
        ];
        let tile = [2i64, 4, 8];
        let consts = [
            tile[0],
            tile[1],
            tile[2],
            perm[0] as i64,
            perm[1] as i64,
            perm[2] as i64,
        ];
        let k = specialized(&m, "permute3", &consts, &[]);
        let x: Vec<f32> = random(&mut r, shape.iter().product(), -100.0, 100.0);
        let xb = bytes(&x);
        let out_shape: Vec<u64> = perm.iter().map(|&a| shape[a] as u64).collect();
        let mut out = poison::<f32>(x.len());
        let in_shape: Vec<u64> = shape.iter().map(|&n| n as u64).collect();
        launch(
            &k,
            &mut [
                Arg::Tensor(TensorArg::write(
                    cuprum_tile_ir::ScalarType::F32,
                    &out_shape,
                    &mut out,
                )),
                Arg::Tensor(TensorArg::read(
                    cuprum_tile_ir::ScalarType::F32,
                    &in_shape,
                    &xb,
                )),
            ],
        );
        cuprum_testkit::compare::assert_bits_eq(
            &format!("permutation {perm:?} of shape {shape:?}"),
            &values::<f32>(&out),
            &reference(&x, shape, perm),
        );
    }
    // A literal permutation: a transpose.
    let (rows, cols) = (r.random_range(1..30usize), r.random_range(1..30usize));
    let k = specialized(&m, "swap_last", &[4, 8], &[]);
    let x: Vec<f32> = random(&mut r, rows * cols, -100.0, 100.0);
    let xb = bytes(&x);
    let mut out = poison::<f32>(x.len());
    launch(
        &k,
        &mut [
            Arg::Tensor(TensorArg::write(
                cuprum_tile_ir::ScalarType::F32,
                &[cols as u64, rows as u64],
                &mut out,
            )),
            Arg::Tensor(TensorArg::read(
                cuprum_tile_ir::ScalarType::F32,
                &[rows as u64, cols as u64],
                &xb,
            )),
        ],
    );
    let want: Vec<f32> = (0..rows * cols)
        .map(|i| x[(i % rows) * cols + i / rows])
        .collect();
    cuprum_testkit::compare::assert_bits_eq("transpose", &values::<f32>(&out), &want);
}

#[test]
fn axes_that_are_not_a_permutation_are_refused() {
    let m = compile(PERMUTE);
    let k = kernel(&m, "permute3");
    let spec = |p: [i64; 3]| Specialization {
        consts: vec![2, 4, 8, p[0], p[1], p[2]],
        types: vec![],
    };
    let e = specialize(k, &spec([0, 0, 1])).expect_err("a repeated axis");
    assert!(e.to_string().contains("not a permutation"), "{e}");
    let e = specialize(k, &spec([0, 1, 3])).expect_err("an axis past the rank");
    assert!(e.to_string().contains("not a permutation"), "{e}");
    let e = specialize(k, &spec([0, -1, 2])).expect_err("a negative axis");
    assert!(matches!(e, SpecializeError::BadAxis { .. }), "{e}");
    let bad = PERMUTE.replace(
        "x.partition_permuted(const_shape![B0, B1], [1, 0])",
        "x.partition_permuted(const_shape![B0, B1], [1, 0, 2])",
    );
    let (message, line, _) = compile_err(&bad);
    assert!(
        message.contains("its permuted tiles and their axes do too"),
        "{message}"
    );
    let text = bad.lines().nth(line.saturating_sub(1)).unwrap_or("");
    assert!(text.contains("partition_permuted"), "reported at `{text}`");
    let (message, _, _) = compile_err(&PERMUTE.replace(
        "let part = x.partition_permuted(const_shape![B0, B1], [1, 0]);",
        "let part = out.partition_permuted(const_shape![B0, B1], [1, 0]);",
    ));
    assert!(message.contains("is an output"), "{message}");
}
