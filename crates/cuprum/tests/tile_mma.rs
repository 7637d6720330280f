//! `mma` in tile kernels end to end (front end at `cargo build`, specialize, lower, optimize,
//! launch) on the backend `CUPRUM_DEVICE` selects, at ragged sizes on fresh random inputs,
//! outputs poisoned first, every element checked: `f32` GEMMs bit for bit against plain Rust's
//! chain of `mul_add`s (what `mma` of `f32` tiles is defined as), `f16` and `bf16` GEMMs
//! with an `f32` accumulator within the tensor cores' bound of the exact sum, and a batched
//! (rank-3) GEMM. The three-way bit-exact comparison with the tile interpreter is
//! `cuprum-tile-fuzz`'s `tests/mma.rs`.

use std::sync::Arc;

use cuprum::tf32;
use cuprum::tile::error::LaunchProblem;
use cuprum::tile::prelude::*;
use cuprum_testkit::compare::{assert_same, ok};
use cuprum_testkit::random::{random, rng};
use half::{bf16, f16};

#[cuprum::tile::module]
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
            tile_z = mma(part_x.load([pid.0, i]), part_y.load([i, pid.1]), tile_z);
        }
        z.store(tile_z);
    }

    #[cuprum::tile::entry()]
    fn mixed<H: ElementType, const BM: i32, const BN: i32, const BK: i32>(
        z: &mut Tensor<f32, { [BM, BN] }>,
        x: &Tensor<H, { [-1, -1] }>,
        y: &Tensor<H, { [-1, -1] }>,
    ) {
        let pid: (i32, i32, i32) = get_tile_block_id();
        let k: i32 = x.shape()[1];
        let mut acc: Tile<f32, { [BM, BN] }> = constant(0.0f32, const_shape![BM, BN]);
        for i in 0i32..ceil_div(k, BK) {
            let a: Tile<H, { [BM, BK] }> = x.partition(const_shape![BM, BK]).load([pid.0, i]);
            let b: Tile<H, { [BK, BN] }> = y.partition(const_shape![BK, BN]).load([i, pid.1]);
            acc = mma(a, b, acc);
        }
        z.store(acc);
    }

    /// An `f32` GEMM on the tensor cores: each loaded tile converted to `tf32` (rounded to
    /// nearest), products summed 8 at a time.
    #[cuprum::tile::entry()]
    fn tf32_gemm<const BM: i32, const BN: i32, const BK: i32>(
        z: &mut Tensor<f32, { [BM, BN] }>,
        x: &Tensor<f32, { [-1, -1] }>,
        y: &Tensor<f32, { [-1, -1] }>,
    ) {
        let pid: (i32, i32, i32) = get_tile_block_id();
        let k: i32 = x.shape()[1];
        let mut acc: Tile<f32, { [BM, BN] }> = constant(0.0f32, const_shape![BM, BN]);
        for i in 0i32..ceil_div(k, BK) {
            let a: Tile<f32, { [BM, BK] }> = x.partition(const_shape![BM, BK]).load([pid.0, i]);
            let b: Tile<f32, { [BK, BN] }> = y.partition(const_shape![BK, BN]).load([i, pid.1]);
            let a: Tile<tf32, { [BM, BK] }> = convert_tile(a);
            let b: Tile<tf32, { [BK, BN] }> = convert_tile(b);
            acc = mma(a, b, acc);
        }
        z.store(acc);
    }

    /// Attention forward as cuTile Rust's `flash_attention` example computes it: an online
    /// softmax over key tiles, two `mma`s per tile.
    #[cuprum::tile::entry()]
    fn fmha<const BM: i32, const BN: i32, const D: i32>(
        out: &mut Tensor<f32, { [1, BM, D] }>,
        q: &Tensor<f32, { [-1, -1, -1, -1] }>,
        k: &Tensor<f32, { [-1, -1, -1, -1] }>,
        v: &Tensor<f32, { [-1, -1, -1, -1] }>,
        qk_scale: f32,
        query_group_size: i32,
    ) {
        let pid: (i32, i32, i32) = get_tile_block_id();
        let h = q.shape()[1];
        let (batch, head, row) = (pid.0 / h, pid.0 % h, pid.1);
        let kv_head = head / query_group_size;
        let two: Tile<f32, { [] }> = constant(2.0f32, const_shape![]);
        let log2: f32 = tile_to_scalar(log(two));
        let scale: Tile<f32, { [BM, BN] }> = (qk_scale / log2).broadcast(const_shape![BM, BN]);
        let mut m_i: Tile<f32, { [BM, 1] }> = constant(f32::NEG_INFINITY, const_shape![BM, 1]);
        let mut l_i: Tile<f32, { [BM, 1] }> = constant(0.0f32, const_shape![BM, 1]);
        let mut acc: Tile<f32, { [BM, D] }> = constant(0.0f32, const_shape![BM, D]);
        let tq: Tile<f32, { [BM, D] }> = q
            .partition(const_shape![1, 1, BM, D])
            .load([batch, head, row, 0i32])
            .reshape(const_shape![BM, D]);
        let k_part = k.partition(const_shape![1, 1, BN, D]);
        let v_part = v.partition(const_shape![1, 1, BN, D]);
        for j in 0i32..ceil_div(k.shape()[2], BN) {
            let kt: Tile<f32, { [BN, D] }> = k_part
                .load([batch, kv_head, j, 0i32])
                .reshape(const_shape![BN, D]);
            let zero: Tile<f32, { [BM, BN] }> = constant(0.0f32, const_shape![BM, BN]);
            let qk: Tile<f32, { [BM, BN] }> = mma(tq, kt.transpose(), zero) * scale;
            let row_max: Tile<f32, { [BM] }> = reduce_max(qk, 1);
            let m_ij: Tile<f32, { [BM, 1] }> = max_tile(m_i, row_max.reshape(const_shape![BM, 1]));
            let p: Tile<f32, { [BM, BN] }> =
                exp2(qk - m_ij.broadcast(const_shape![BM, BN]), ftz::Disabled);
            let l_ij: Tile<f32, { [BM] }> = reduce_sum(p, 1);
            let alpha: Tile<f32, { [BM, 1] }> = exp2(m_i - m_ij, ftz::Disabled);
            l_i = l_i * alpha + l_ij.reshape(const_shape![BM, 1]);
            acc = acc * alpha.broadcast(const_shape![BM, D]);
            let vt: Tile<f32, { [BN, D] }> = v_part
                .load([batch, kv_head, j, 0i32])
                .reshape(const_shape![BN, D]);
            acc = mma(p, vt, acc);
            m_i = m_ij;
        }
        let acc = true_div(acc, l_i.broadcast(const_shape![BM, D]));
        out.store(acc.reshape(const_shape![1, BM, D]));
    }

    #[cuprum::tile::entry()]
    fn batched<const BM: i32, const BN: i32, const K: i32>(
        z: &mut Tensor<f32, { [1, BM, BN] }>,
        x: &Tensor<f32, { [-1, -1, K] }>,
        y: &Tensor<f32, { [-1, K, -1] }>,
    ) {
        let pid: (i32, i32, i32) = get_tile_block_id();
        let a = x
            .partition(const_shape![1, BM, K])
            .load([pid.0, pid.1, 0i32]);
        let b = y
            .partition(const_shape![1, K, BN])
            .load([pid.0, 0i32, pid.2]);
        let acc: Tile<f32, { [1, BM, BN] }> = constant(0.0f32, const_shape![1, BM, BN]);
        z.store(mma(a, b, acc));
    }
}

fn stream() -> Stream {
    ok(Device::new(0)).default_stream()
}

const POISON: f32 = f32::from_bits(0x7FC0_DEAD);

/// `z0 + x · y` as a chain of `mul_add`s along k, for `[m, k]` by `[k, n]`.
fn fma_reference(x: &[f32], y: &[f32], z0: &[f32], (m, n, k): (usize, usize, usize)) -> Vec<f32> {
    let mut out = z0.to_vec();
    for i in 0..m {
        for j in 0..n {
            let mut d = z0[i * n + j];
            for kk in 0..k {
                d = x[i * k + kk].mul_add(y[kk * n + j], d);
            }
            out[i * n + j] = d;
        }
    }
    out
}

#[test]
fn f32_gemm_is_exact_at_ragged_sizes() {
    let s = stream();
    let mut r = rng("f32_gemm_is_exact_at_ragged_sizes");
    for (m, n, k, tiles) in [
        (33, 20, 17, [16, 16, 8]),
        (64, 70, 50, [32, 32, 16]),
        (5, 3, 9, [8, 4, 4]),
    ] {
        let x: Vec<f32> = random(&mut r, m * k, -2.0, 2.0);
        let y: Vec<f32> = random(&mut r, k * n, -2.0, 2.0);
        let z0: Vec<f32> = random(&mut r, m * n, -2.0, 2.0);
        let [bm, bn, bk] = tiles;
        let z = api::from_host(&z0, &[m, n]).partition([bm, bn]);
        let got = ok(
            kernels::gemm(z, api::from_host(&x, &[m, k]), api::from_host(&y, &[k, n]))
                .generics([
                    "f32".to_string(),
                    bm.to_string(),
                    bn.to_string(),
                    bk.to_string(),
                ])
                .first()
                .unpartition()
                .to_host_vec()
                .sync_on(&s),
        );
        assert_same(
            &format!("gemm {m}x{n}x{k}"),
            &got,
            &fma_reference(&x, &y, &z0, (m, n, k)),
        );
    }
}

/// Checks `got` against the exact sum of `x · y` within the tensor cores' bound: each step of
/// `step` products (16 for 16-bit inputs, 8 for `tf32`) truncates its `step + 1` addends by at
/// most 2^-23 of the largest and rounds once.
fn check_tensor_core_result(
    what: &str,
    got: &[f32],
    (x, y): (&[f32], &[f32]),
    (m, n, k): (usize, usize, usize),
    step: usize,
) {
    let steps = k.div_ceil(step) as f64;
    for i in 0..m {
        for j in 0..n {
            let (mut exact, mut mag) = (0f64, 0f64);
            for kk in 0..k {
                let p = f64::from(x[i * k + kk]) * f64::from(y[kk * n + j]);
                exact += p;
                mag += p.abs();
            }
            let g = f64::from(got[i * n + j]);
            let bound = steps * (step as f64 + 2.0) * 2f64.powi(-23) * mag + 1e-30;
            assert!(
                (g - exact).abs() <= bound,
                "{what}: element ({i}, {j}) is {g}, exact {exact}, bound {bound}"
            );
        }
    }
}

/// One GEMM of `xs · ys` rounded to the half type `H` (`kernels::mixed`), checked against
/// the exact sum of the rounded inputs.
fn half_gemm<H: DType + Into<f32>>(
    s: &Stream,
    (xs, ys): (&[f32], &[f32]),
    (m, n, k): (usize, usize, usize),
    [bm, bn, bk]: [usize; 3],
    from_f32: fn(f32) -> H,
) {
    let x: Vec<H> = xs.iter().map(|&v| from_f32(v)).collect();
    let y: Vec<H> = ys.iter().map(|&v| from_f32(v)).collect();
    let ty = H::DTYPE.as_str();
    let z = api::from_host(&vec![POISON; m * n], &[m, n]).partition([bm, bn]);
    let got = ok(
        kernels::mixed(z, api::from_host(&x, &[m, k]), api::from_host(&y, &[k, n]))
            .generics([
                ty.to_string(),
                bm.to_string(),
                bn.to_string(),
                bk.to_string(),
            ])
            .first()
            .unpartition()
            .to_host_vec()
            .sync_on(s),
    );
    let xf: Vec<f32> = x.into_iter().map(Into::into).collect();
    let yf: Vec<f32> = y.into_iter().map(Into::into).collect();
    let step = if ty == "tf32" { 8 } else { 16 };
    let what = format!("{ty} gemm {m}x{n}x{k}");
    check_tensor_core_result(&what, &got, (&xf, &yf), (m, n, k), step);
}

/// `x` rounded to the nearest `tf32` (10 mantissa bits), ties away from zero, by comparing
/// its two `tf32` neighbours in `f64` (finite `x` well inside the range).
fn nearest_tf32(x: f32) -> f32 {
    let down = f32::from_bits(x.to_bits() & 0xFFFF_E000);
    let up = f32::from_bits((x.to_bits() & 0xFFFF_E000) + 0x2000);
    let (dd, du) = (
        (f64::from(x) - f64::from(down)).abs(),
        (f64::from(up) - f64::from(x)).abs(),
    );
    if dd < du { down } else { up }
}

/// `f32` data multiplied on the tensor cores as `tf32`: tensors of `tf32` (rounded on the
/// host) and `f32` tensors converted in the kernel (`convert_tile`), each checked against the
/// exact sum of the rounded inputs. Truncating instead of rounding would miss the bound by
/// far (an input's error would be up to 2^-10 of it, not 2^-11).
#[test]
fn tf32_gemms_are_within_the_tensor_cores_bound() {
    let s = stream();
    let mut r = rng("tf32_gemms_are_within_the_tensor_cores_bound");
    for (m, n, k, tiles) in [
        (40, 24, 50, [32, 16, 32]),
        (17, 9, 16, [16, 8, 8]),
        (33, 20, 29, [16, 16, 8]),
        (100, 90, 70, [48, 80, 24]),
        (70, 64, 200, [64, 64, 16]),
    ] {
        let xs: Vec<f32> = random(&mut r, m * k, -2.0, 2.0);
        let ys: Vec<f32> = random(&mut r, k * n, -2.0, 2.0);
        half_gemm::<tf32>(&s, (&xs, &ys), (m, n, k), tiles, tf32::from_f32);
        let [bm, bn, bk] = tiles;
        let z = api::from_host(&vec![POISON; m * n], &[m, n]).partition([bm, bn]);
        let got = ok(kernels::tf32_gemm(
            z,
            api::from_host(&xs, &[m, k]),
            api::from_host(&ys, &[k, n]),
        )
        .generics([bm.to_string(), bn.to_string(), bk.to_string()])
        .first()
        .unpartition()
        .to_host_vec()
        .sync_on(&s));
        let xr: Vec<f32> = xs.iter().map(|&v| nearest_tf32(v)).collect();
        let yr: Vec<f32> = ys.iter().map(|&v| nearest_tf32(v)).collect();
        let what = format!("f32 converted to tf32, gemm {m}x{n}x{k}");
        check_tensor_core_result(&what, &got, (&xr, &yr), (m, n, k), 8);
    }
}

#[test]
fn half_precision_gemms_are_within_the_tensor_cores_bound() {
    let s = stream();
    let mut r = rng("half_precision_gemms_are_within_the_tensor_cores_bound");
    // The last: K steps of 8, as cuTile Rust's examples take them (each a short step).
    for (m, n, k, tiles) in [
        (40, 24, 50, [32, 16, 32]),
        (64, 64, 64, [64, 64, 16]),
        (17, 9, 16, [16, 8, 16]),
        (33, 20, 29, [16, 16, 8]),
        // Tiles that are multiples of 16 but not powers of two.
        (100, 90, 70, [48, 80, 48]),
        // Rows of whole 16-byte runs and tiles of 64 or 128 rows by multiples of 64
        // columns: on an sm_90 device (and the emulator) the Hopper recipe (TMA, wgmma)
        // runs these, ragged at the edges.
        (200, 136, 304, [128, 128, 64]),
        (130, 264, 40, [128, 256, 32]),
        (70, 64, 200, [64, 64, 16]),
    ] {
        let xs: Vec<f32> = random(&mut r, m * k, -2.0, 2.0);
        let ys: Vec<f32> = random(&mut r, k * n, -2.0, 2.0);
        let dims = (m, n, k);
        half_gemm::<f16>(&s, (&xs, &ys), dims, tiles, f16::from_f32);
        half_gemm::<bf16>(&s, (&xs, &ys), dims, tiles, bf16::from_f32);
    }
}

#[test]
fn flash_attention_matches_the_host_reference() {
    let s = stream();
    let mut r = rng("flash_attention_matches_the_host_reference");
    // Grouped-query attention: two query heads per key/value head; the sequence a multiple
    // of the key tile (the kernel, as cuTile Rust's, masks nothing at the end).
    let (b, h, hkv, m, d, bm, bn) = (2usize, 4usize, 2usize, 48usize, 16usize, 16usize, 16usize);
    let q: Vec<f32> = random(&mut r, b * h * m * d, -1.0, 1.0);
    let k: Vec<f32> = random(&mut r, b * hkv * m * d, -1.0, 1.0);
    let v: Vec<f32> = random(&mut r, b * hkv * m * d, -1.0, 1.0);
    let scale = 1.0 / (d as f32).sqrt();
    let out = api::from_host(&vec![POISON; b * h * m * d], &[b * h, m, d]).partition([1, bm, d]);
    let got = ok(kernels::fmha(
        out,
        api::from_host(&q, &[b, h, m, d]),
        api::from_host(&k, &[b, hkv, m, d]),
        api::from_host(&v, &[b, hkv, m, d]),
        scale,
        // A host size for an `i32` parameter, as cuTile Rust's programs pass them.
        h / hkv,
    )
    .generics([bm.to_string(), bn.to_string(), d.to_string()])
    .first()
    .unpartition()
    .to_host_vec()
    .sync_on(&s));
    let want = cuprum_tile_examples::fmha_ref_exec(
        &q,
        &[b, h, m, d],
        &k,
        &[b, hkv, m, d],
        &v,
        &[b, hkv, m, d],
        scale,
    );
    let want: Vec<f32> = ok(want.flatten_all().and_then(|t| t.to_vec1::<f32>()));
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!((g - w).abs() <= 1e-4, "element {i}: got {g}, want {w}");
    }
}

#[test]
fn a_host_size_too_large_for_an_i32_parameter_is_a_typed_error() {
    let s = stream();
    let (m, d) = (16usize, 16usize);
    let data = vec![0.5f32; m * d];
    let out = api::from_host(&vec![POISON; m * d], &[1, m, d]).partition([1, m, d]);
    let too_big = i32::MAX as usize + 1;
    let r = kernels::fmha(
        out,
        api::from_host(&data, &[1, 1, m, d]),
        api::from_host(&data, &[1, 1, m, d]),
        api::from_host(&data, &[1, 1, m, d]),
        1.0f32,
        too_big,
    )
    .generics(["16", "16", "16"])
    .sync_on(&s);
    match r {
        Err(Error::InvalidLaunch {
            problem: LaunchProblem::SizeRange { value, .. },
            ..
        }) => assert_eq!(value, too_big),
        Err(e) => panic!("expected a size-range error, got {e}"),
        Ok(_) => panic!("a size past i32::MAX was launched"),
    }
}

#[test]
fn batched_gemm_multiplies_each_batch() {
    let s = stream();
    let mut r = rng("batched_gemm_multiplies_each_batch");
    let (batch, m, n, k) = (3usize, 20usize, 13usize, 12usize);
    let x: Vec<f32> = random(&mut r, batch * m * k, -2.0, 2.0);
    let y: Vec<f32> = random(&mut r, batch * k * n, -2.0, 2.0);
    let x_t: Arc<Tensor<f32>> = ok(api::from_host(&x, &[batch, m, k]).sync_on(&s)).into();
    let z = api::from_host(&vec![POISON; batch * m * n], &[batch, m, n]).partition([1, 16, 8]);
    let got = ok(kernels::batched(z, x_t, api::from_host(&y, &[batch, k, n]))
        .generics(["16", "8", &k.to_string()])
        .first()
        .unpartition()
        .to_host_vec()
        .sync_on(&s));
    let mut want = Vec::with_capacity(batch * m * n);
    for b in 0..batch {
        let zeros = vec![0.0f32; m * n];
        want.extend(fma_reference(
            &x[b * m * k..(b + 1) * m * k],
            &y[b * k * n..(b + 1) * k * n],
            &zeros,
            (m, n, k),
        ));
    }
    assert_same("batched gemm", &got, &want);
}
