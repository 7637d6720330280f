//! The tile track's benchmarks, as tile kernels in cuTile Rust's style: element-wise add of
//! 2^28 f32 (12 bytes moved per element), and row softmax, RMS norm and layer norm of
//! 16384x4096 f32 (each row read once from memory and written once, one row per tile block:
//! 8 bytes per element, plus the weights; RMS norm reads its row a second time, from cache,
//! as `torch.compile`'s kernel does, which the lowering sees and hints the caches to keep the
//! row between the reads; the norms carry tuning hints). Each kernel is timed with events
//! (median of 50 launches after 5 warm-ups, queued back to back as the peers' are), checked
//! against a plain-Rust f64 reference on sampled rows, and printed as a JSON record for
//! `benches/report.py`; its peers (PyTorch, `torch.compile`, Triton) are in
//! `benches/peers/tile_peers.py`. On the emulator (or with `CUPRUM_EXAMPLE_SIZE=small`) the
//! sizes are small: the example then only shows that the kernels run and are right.

use cuprum::tile::cuda_async::device_operation::ExecutionContext;
use cuprum::tile::prelude::*;
use cuprum::tile::tile_kernel::CompileOptions;

#[path = "common/record.rs"]
mod record;
#[path = "common/size.rs"]
mod size;
#[path = "common/timing.rs"]
mod timing;

#[cuprum::tile::module]
mod kernels {
    use cuprum::tile::core::*;

    #[cuprum::tile::entry()]
    fn add<const B: i32>(
        z: &mut Tensor<f32, { [B] }>,
        x: &Tensor<f32, { [-1] }>,
        y: &Tensor<f32, { [-1] }>,
    ) {
        z.store(load_tile_like(x, z) + load_tile_like(y, z));
    }

    /// GEMM in cuTile Rust's `gemm` shape: tensor-core input tiles (`f16`, `bf16` or `tf32`),
    /// an f32 accumulator carried over the K loop, the result stored in the input type.
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
        let mut acc: Tile<f32, { [BM, BN] }> = constant(0.0f32, const_shape![BM, BN]);
        for i in 0i32..ceil_div(k, BK) {
            acc = mma(part_x.load([pid.0, i]), part_y.load([i, pid.1]), acc);
        }
        let out: Tile<E, { [BM, BN] }> = convert_tile(acc);
        z.store(out);
    }

    /// Attention forward in f16 (`softmax(q k^T * scale) v`, f32 scores and sums, the result
    /// rounded to f16), in the shape of cuTile Rust's `flash_attention`: one `[BM, D]` block of
    /// queries per tile block, keys and values in steps of `BN`, an online softmax in base 2
    /// (`qk_scale` is `log2(e) / sqrt(D)`). Tensors are `(batch * heads, sequence, D)`.
    /// As FlashAttention computes it (cuTile's example rounds twice and keeps subnormals):
    /// the exponent `qk * scale - m` is one `fma` (the row maximum taken before scaling,
    /// which rounding's monotony makes the maximum of the scaled scores), and the
    /// exponentials flush `f32` subnormals (`ftz::Enabled`; `ftz::Disabled` costs the GPU two
    /// more instructions per exponential: 2.147 against 1.949 ms on an H100, 2026-12-06).
    /// (As cuDNN's kernel computes it, `qk * scale + shift` in two roundings, ptxas puts the
    /// exponentials between the other arithmetic, yet the kernel was slower on the H100:
    /// 2.46 against 2.35 ms at 128x128 tiles and base clocks, its causal twin at 64x64 tiles
    /// 183 registers against 167 and 1.53 against 1.27 ms; 2026-12-07.)
    #[cuprum::tile::entry()]
    fn attention<const BM: i32, const BN: i32, const D: i32>(
        out: &mut Tensor<f16, { [1, BM, D] }>,
        q: &Tensor<f16, { [-1, -1, D] }>,
        k: &Tensor<f16, { [-1, -1, D] }>,
        v: &Tensor<f16, { [-1, -1, D] }>,
        qk_scale: f32,
    ) {
        let pid: (i32, i32, i32) = get_tile_block_id();
        let tq: Tile<f16, { [BM, D] }> = q
            .partition(const_shape![1, BM, D])
            .load([pid.0, pid.1, 0i32])
            .reshape(const_shape![BM, D]);
        let scale: Tile<f32, { [BM, BN] }> = qk_scale.broadcast(const_shape![BM, BN]);
        let mut m_i: Tile<f32, { [BM, 1] }> = constant(f32::NEG_INFINITY, const_shape![BM, 1]);
        let mut l_i: Tile<f32, { [BM, 1] }> = constant(0.0f32, const_shape![BM, 1]);
        let mut acc: Tile<f32, { [BM, D] }> = constant(0.0f32, const_shape![BM, D]);
        let k_part = k.partition(const_shape![1, BN, D]);
        let v_part = v.partition(const_shape![1, BN, D]);
        let n: i32 = k.shape()[1];
        for j in 0i32..ceil_div(n, BN) {
            let kt: Tile<f16, { [BN, D] }> =
                k_part.load([pid.0, j, 0i32]).reshape(const_shape![BN, D]);
            let zero: Tile<f32, { [BM, BN] }> = constant(0.0f32, const_shape![BM, BN]);
            let qk: Tile<f32, { [BM, BN] }> = mma(tq, kt.transpose(), zero);
            // The scaled row maximum (rounding is monotone: the maximum of the scaled
            // scores), and the exponent `qk * scale - m` in one rounding.
            let qk_max: Tile<f32, { [BM, 1] }> =
                reduce_max(qk, 1).reshape(const_shape![BM, 1]) * qk_scale;
            let m_ij: Tile<f32, { [BM, 1] }> = max_tile(m_i, qk_max);
            let shift: Tile<f32, { [BM, BN] }> = negf(m_ij).broadcast(const_shape![BM, BN]);
            let p: Tile<f32, { [BM, BN] }> = exp2(fma(qk, scale, shift), ftz::Enabled);
            let l_ij: Tile<f32, { [BM, 1] }> = reduce_sum(p, 1).reshape(const_shape![BM, 1]);
            let alpha: Tile<f32, { [BM, 1] }> = exp2(m_i - m_ij, ftz::Enabled);
            l_i = l_i * alpha + l_ij;
            acc = acc * alpha.broadcast(const_shape![BM, D]);
            let vt: Tile<f16, { [BN, D] }> =
                v_part.load([pid.0, j, 0i32]).reshape(const_shape![BN, D]);
            let p16: Tile<f16, { [BM, BN] }> = convert_tile(p);
            acc = mma(p16, vt, acc);
            m_i = m_ij;
        }
        // One division per row and a product per element, as FlashAttention normalizes.
        let one: Tile<f32, { [BM, 1] }> = constant(1.0f32, const_shape![BM, 1]);
        let inv_l: Tile<f32, { [BM, 1] }> = true_div(one, l_i);
        let acc: Tile<f32, { [BM, D] }> = acc * inv_l.broadcast(const_shape![BM, D]);
        let out16: Tile<f16, { [BM, D] }> = convert_tile(acc);
        out.store(out16.reshape(const_shape![1, BM, D]));
    }

    /// Causal attention forward in f16, in the shape of cuTile Rust's
    /// `flash_attention_causal` (query `i` sees keys `0..=i`): the key blocks below the
    /// block's diagonal in one loop without a mask, the blocks on it in a second loop that
    /// replaces the score by `-inf` where a key follows its query. Tensors are `(batch * heads, sequence, D)`,
    /// `BM` a multiple of `BN`. Exponentials as in `attention`.
    #[cuprum::tile::entry()]
    fn attention_causal<const BM: i32, const BN: i32, const D: i32>(
        out: &mut Tensor<f16, { [1, BM, D] }>,
        q: &Tensor<f16, { [-1, -1, D] }>,
        k: &Tensor<f16, { [-1, -1, D] }>,
        v: &Tensor<f16, { [-1, -1, D] }>,
        qk_scale: f32,
    ) {
        let pid: (i32, i32, i32) = get_tile_block_id();
        let tq: Tile<f16, { [BM, D] }> = q
            .partition(const_shape![1, BM, D])
            .load([pid.0, pid.1, 0i32])
            .reshape(const_shape![BM, D]);
        let scale: Tile<f32, { [BM, BN] }> = qk_scale.broadcast(const_shape![BM, BN]);
        let mut m_i: Tile<f32, { [BM, 1] }> = constant(f32::NEG_INFINITY, const_shape![BM, 1]);
        let mut l_i: Tile<f32, { [BM, 1] }> = constant(0.0f32, const_shape![BM, 1]);
        let mut acc: Tile<f32, { [BM, D] }> = constant(0.0f32, const_shape![BM, D]);
        let k_part = k.partition(const_shape![1, BN, D]);
        let v_part = v.partition(const_shape![1, BN, D]);
        let n: i32 = k.shape()[1];
        let mask_start: i32 = min(pid.1 * BM / BN, n / BN);
        let end: i32 = ceil_div(min((pid.1 + 1i32) * BM, n), BN);
        for j in 0i32..mask_start {
            let kt: Tile<f16, { [BN, D] }> =
                k_part.load([pid.0, j, 0i32]).reshape(const_shape![BN, D]);
            let zero: Tile<f32, { [BM, BN] }> = constant(0.0f32, const_shape![BM, BN]);
            let qk: Tile<f32, { [BM, BN] }> = mma(tq, kt.transpose(), zero);
            // The scaled row maximum (rounding is monotone: the maximum of the scaled
            // scores), and the exponent `qk * scale - m` in one rounding.
            let qk_max: Tile<f32, { [BM, 1] }> =
                reduce_max(qk, 1).reshape(const_shape![BM, 1]) * qk_scale;
            let m_ij: Tile<f32, { [BM, 1] }> = max_tile(m_i, qk_max);
            let shift: Tile<f32, { [BM, BN] }> = negf(m_ij).broadcast(const_shape![BM, BN]);
            let p: Tile<f32, { [BM, BN] }> = exp2(fma(qk, scale, shift), ftz::Enabled);
            let l_ij: Tile<f32, { [BM, 1] }> = reduce_sum(p, 1).reshape(const_shape![BM, 1]);
            let alpha: Tile<f32, { [BM, 1] }> = exp2(m_i - m_ij, ftz::Enabled);
            l_i = l_i * alpha + l_ij;
            acc = acc * alpha.broadcast(const_shape![BM, D]);
            let vt: Tile<f16, { [BN, D] }> =
                v_part.load([pid.0, j, 0i32]).reshape(const_shape![BN, D]);
            let p16: Tile<f16, { [BM, BN] }> = convert_tile(p);
            acc = mma(p16, vt, acc);
            m_i = m_ij;
        }
        let hidden: Tile<f32, { [BM, BN] }> = constant(f32::NEG_INFINITY, const_shape![BM, BN]);
        for j in mask_start..end {
            let kt: Tile<f16, { [BN, D] }> =
                k_part.load([pid.0, j, 0i32]).reshape(const_shape![BN, D]);
            let zero: Tile<f32, { [BM, BN] }> = constant(0.0f32, const_shape![BM, BN]);
            // Query row `i` of the block sees key column `c` of this tile where
            // `pid.1 * BM + i >= j * BN + c`: a row index against a column index, made here
            // (index tiles made before the loop hold [BM, BN] registers through it), and
            // the hidden scores replaced by `-inf` (no [BM, BN] mask tile added).
            let rows: Tile<i32, { [BM, 1] }> =
                broadcast_scalar(pid.1 * BM - j * BN, const_shape![BM, 1])
                    + iota(const_shape![BM]).reshape(const_shape![BM, 1]);
            let cols: Tile<i32, { [1, BN] }> = iota(const_shape![BN]).reshape(const_shape![1, BN]);
            let seen: Tile<bool, { [BM, BN] }> = ge_tile(
                rows.broadcast(const_shape![BM, BN]),
                cols.broadcast(const_shape![BM, BN]),
            );
            let qk: Tile<f32, { [BM, BN] }> = select(seen, mma(tq, kt.transpose(), zero), hidden);
            let qk_max: Tile<f32, { [BM, 1] }> =
                reduce_max(qk, 1).reshape(const_shape![BM, 1]) * qk_scale;
            let m_ij: Tile<f32, { [BM, 1] }> = max_tile(m_i, qk_max);
            let shift: Tile<f32, { [BM, BN] }> = negf(m_ij).broadcast(const_shape![BM, BN]);
            let p: Tile<f32, { [BM, BN] }> = exp2(fma(qk, scale, shift), ftz::Enabled);
            let l_ij: Tile<f32, { [BM, 1] }> = reduce_sum(p, 1).reshape(const_shape![BM, 1]);
            let alpha: Tile<f32, { [BM, 1] }> = exp2(m_i - m_ij, ftz::Enabled);
            l_i = l_i * alpha + l_ij;
            acc = acc * alpha.broadcast(const_shape![BM, D]);
            let vt: Tile<f16, { [BN, D] }> =
                v_part.load([pid.0, j, 0i32]).reshape(const_shape![BN, D]);
            let p16: Tile<f16, { [BM, BN] }> = convert_tile(p);
            acc = mma(p16, vt, acc);
            m_i = m_ij;
        }
        // One division per row and a product per element, as FlashAttention normalizes.
        let one: Tile<f32, { [BM, 1] }> = constant(1.0f32, const_shape![BM, 1]);
        let inv_l: Tile<f32, { [BM, 1] }> = true_div(one, l_i);
        let acc: Tile<f32, { [BM, D] }> = acc * inv_l.broadcast(const_shape![BM, D]);
        let out16: Tile<f16, { [BM, D] }> = convert_tile(acc);
        out.store(out16.reshape(const_shape![1, BM, D]));
    }

    #[cuprum::tile::entry()]
    fn softmax<const BM: i32, const BN: i32>(
        y: &mut Tensor<f32, { [BM, BN] }>,
        x: &Tensor<f32, { [-1, -1] }>,
    ) {
        let tx: Tile<f32, { [BM, BN] }> = load_tile_like(x, y);
        let max: Tile<f32, { [BM] }> = reduce_max(tx, 1i32);
        let max = max.reshape(const_shape![BM, 1]).broadcast(y.shape());
        let num = exp(tx - max);
        let den: Tile<f32, { [BM] }> = reduce_sum(num, 1i32);
        let den = den.reshape(const_shape![BM, 1]).broadcast(y.shape());
        y.store(num / den);
    }

    /// RMS norm in cuTile Rust's `rms_norm` shape and Inductor's algorithm: a loop over the
    /// row's column blocks sums the squares, a second loop loads the row again (from
    /// cache), scales it and stores it. With the whole row as one block, 16 warps and 4
    /// blocks per multiprocessor, nothing of the row stays in registers across the block's
    /// reduction.
    #[cuprum::tile::entry(optimization_hints = (sm_90 = (num_worker_warps_per_cta = 16, occupancy = 4)))]
    fn rms_norm<const N: i32, const BLOCK: i32>(
        out: &mut Tensor<f32, { [1, N] }>,
        x: &Tensor<f32, { [-1, N] }>,
        w: &Tensor<f32, { [N] }>,
        eps: f32,
    ) {
        let tile_shape: Shape<{ [1, BLOCK] }> = const_shape![1, BLOCK];
        let blocks: i32 = (N + BLOCK - 1) / BLOCK;
        let pid: (i32, i32, i32) = get_tile_block_id();
        let row = pid.0;
        let x_part: Partition<f32, { [1, BLOCK] }> = x.partition(tile_shape);
        let mut squares: Tile<f32, { [1, BLOCK] }> = constant(0.0f32, tile_shape);
        for j in 0i32..blocks {
            let tx: Tile<f32, { [1, BLOCK] }> = x_part.load([row, j]);
            squares = squares + tx * tx;
        }
        let total: Tile<f32, { [1] }> = reduce_sum(squares, 1i32);
        let total: f32 = tile_to_scalar(total.reshape(const_shape![]));
        let n: f32 = convert_scalar(N);
        let scale: f32 = tile_to_scalar(rsqrt(scalar_to_tile(total / n + eps)));
        let w_part: Partition<f32, { [BLOCK] }> = w.partition(const_shape![BLOCK]);
        let mut out_part: PartitionMut<f32, { [1, BLOCK] }> = out.partition_mut(tile_shape);
        for j in 0i32..blocks {
            let tx: Tile<f32, { [1, BLOCK] }> = x_part.load([row, j]);
            let tw: Tile<f32, { [1, BLOCK] }> = w_part.load([j]).reshape(tile_shape);
            out_part.store(tx * scale * tw, [0i32, j]);
        }
    }

    /// Layer norm with the row in registers: the mean, then the centered squares, then the
    /// output (exact two-pass statistics, one read of the row), with 16 warps and 4 blocks
    /// per multiprocessor as the RMS norm.
    #[cuprum::tile::entry(optimization_hints = (sm_90 = (num_worker_warps_per_cta = 16, occupancy = 4)))]
    fn layer_norm<const BM: i32, const BN: i32>(
        y: &mut Tensor<f32, { [BM, BN] }>,
        x: &Tensor<f32, { [-1, -1] }>,
        w: &Tensor<f32, { [-1] }>,
        b: &Tensor<f32, { [-1] }>,
        eps: f32,
    ) {
        let n: f32 = x.shape()[1] as f32;
        let tx: Tile<f32, { [BM, BN] }> = load_tile_like(x, y);
        let sum: Tile<f32, { [BM] }> = reduce_sum(tx, 1i32);
        let mean = (sum / n).reshape(const_shape![BM, 1]).broadcast(y.shape());
        let centered = tx - mean;
        let var: Tile<f32, { [BM] }> = reduce_sum(centered * centered, 1i32);
        let scale = rsqrt(var / n + eps);
        let scale = scale.reshape(const_shape![BM, 1]).broadcast(y.shape());
        let tw: Tile<f32, { [BN] }> = w.load_tile(const_shape![BN], [0i32]);
        let tb: Tile<f32, { [BN] }> = b.load_tile(const_shape![BN], [0i32]);
        let tw = tw.reshape(const_shape![1, BN]).broadcast(y.shape());
        let tb = tb.reshape(const_shape![1, BN]).broadcast(y.shape());
        y.store(centered * scale * tw + tb);
    }
}

type Failure = Box<dyn std::error::Error>;

/// Deterministic pseudo-random floats in `[lo, hi)`.
fn data(n: usize, seed: u32, lo: f32, hi: f32) -> Vec<f32> {
    (0..n as u32)
        .map(|i| {
            let h = (i ^ seed.wrapping_mul(0x9e37_79b9)).wrapping_mul(2_654_435_761);
            lo + (hi - lo) * ((h >> 8) as f32 / (1u32 << 24) as f32)
        })
        .collect()
}

/// Submits an operation without waiting for it: what the timing loops queue.
trait Submit: DeviceOp {
    fn submit(self, ctx: &ExecutionContext) -> Result<<Self as DeviceOp>::Output, Error> {
        // SAFETY: the outputs are partitions of device tensors, read on the host only after
        // the timing loop has synchronized the stream.
        unsafe { self.execute(ctx) }
    }
}

impl<D: DeviceOp> Submit for D {}

/// The median time of `launch` (which submits its work to `ctx`'s stream).
fn time(
    stream: &Stream,
    mut launch: impl FnMut(&ExecutionContext) -> Result<(), Error>,
) -> Result<f64, Failure> {
    let ctx = ExecutionContext::new(stream.clone());
    let mut failure = None;
    // `BENCH_REPS=n`: n timed runs instead of 50, for a measurement under sustained load
    // (benches/attention_clocks.sh), as the Python peers read it.
    let reps = match std::env::var("BENCH_REPS") {
        Ok(n) => n
            .parse()
            .map_err(|_| format!("BENCH_REPS: `{n}` is not a count"))?,
        Err(_) => 50,
    };
    let ms = timing::median_ms_queued(stream, 5, reps, || {
        if let Err(e) = launch(&ctx) {
            failure.get_or_insert(e);
        }
        Ok(())
    })?;
    match failure {
        Some(e) => Err(e.into()),
        None => Ok(ms),
    }
}

/// Checks `got` against `want` (f64) within `tol` relative to `scale`; names the first miss.
fn check(case: &str, got: &[f32], want: &[f64], tol: f64) -> Result<(), Failure> {
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        if (f64::from(g) - w).abs() > tol * w.abs().max(1.0) {
            return Err(format!("FAILED: {case}: element {i} is {g}, want {w}").into());
        }
    }
    Ok(())
}

/// The tile shapes the 16-bit GEMMs try: on an H200 those of 64 or 128 rows by multiples
/// of 64 columns take the Hopper recipe (TMA, wgmma).
const HALF_GEMM_TILES: [(usize, usize, usize); 4] = [
    (128, 256, 64),
    (128, 128, 64),
    (128, 128, 32),
    (64, 128, 64),
];

/// The tile shapes the `tf32` GEMM tries: on an H100/H200 the Hopper recipe's swapped
/// product (`Cᵀ = Bᵀ Aᵀ`, B's fragments from registers), elsewhere `mma.sync m16n8k8` with
/// 4-byte operands in registers (the smaller tiles).
const TF32_GEMM_TILES: [(usize, usize, usize); 5] = [
    (128, 256, 32),
    (128, 128, 32),
    (128, 64, 32),
    (64, 128, 32),
    (64, 64, 32),
];

/// `tile_gemm` (bf16), `tile_gemm_f16` and `tile_gemm_tf32`: `[n, n] x [n, n]` with an f32
/// accumulator, the result stored in the input type, in each of `shapes` (the fastest is
/// recorded), each checked on sampled elements against an f64 sum of the rounded inputs.
/// Its peer is PyTorch's matmul (cuBLAS; for `tf32`, f32 tensors with TF32 allowed).
fn gemm<H: DType + Copy + Into<f32>>(
    stream: &Stream,
    n: usize,
    (case, shapes): (&str, &[(usize, usize, usize)]),
    from_f32: fn(f32) -> H,
    nan: H,
) -> Result<(), Failure> {
    let round = |v: Vec<f32>| -> Vec<H> { v.into_iter().map(from_f32).collect() };
    let (ha, hb) = (
        round(data(n * n, 6, -1.0, 1.0)),
        round(data(n * n, 7, -1.0, 1.0)),
    );
    let a = api::from_host(&ha, &[n, n]).sync_on(stream)?;
    let b = api::from_host(&hb, &[n, n]).sync_on(stream)?;
    let size = format!("{n}x{n}x{n}");
    let flops = 2.0 * (n as f64).powi(3);
    let mut best = f64::INFINITY;
    for ((bm, bn, bk), cluster) in shapes
        .iter()
        .flat_map(|&shape| gemm_clusters().into_iter().map(move |c| (shape, c)))
    {
        let mut z = api::full(nan, &[n, n]).sync_on(stream)?;
        let options = cluster.map_or_else(CompileOptions::default, |c| {
            CompileOptions::default().num_cta_in_cga(c)
        });
        let generics = [
            H::DTYPE.as_str().to_string(),
            bm.to_string(),
            bn.to_string(),
            bk.to_string(),
        ];
        let ms = time(stream, |ctx| {
            kernels::gemm((&mut z).partition([bm, bn]), &a, &b)
                .generics(generics.clone())
                .compile_options(options)
                .submit(ctx)
                .map(drop)
        })?;
        let got = z.to_host_vec().sync_on(stream)?;
        let step = (n / 16).max(1);
        for i in (0..n).step_by(step) {
            for j in (0..n).step_by(step).map(|j| (j + 3 * i + 1) % n) {
                let want: f64 = (0..n)
                    .map(|k| f64::from(ha[i * n + k].into()) * f64::from(hb[k * n + j].into()))
                    .sum();
                let g = f64::from(got[i * n + j].into());
                // A half-precision result: within 2^-8 of it, plus the f32 accumulation's
                // error.
                if (g - want).abs() > want.abs() * 2f64.powi(-8) + 1e-3 {
                    return Err(format!(
                        "FAILED: {case} {bm}x{bn}x{bk}: ({i}, {j}) is {g}, want {want}"
                    )
                    .into());
                }
            }
        }
        let clusters = cluster.map_or(String::new(), |c| format!(" cluster {c}"));
        println!(
            "cuprum {case} {size} tiles {bm}x{bn}x{bk}{clusters} median {ms:.4} ms {:.1} TFLOP/s",
            flops / (ms * 1e9)
        );
        best = best.min(ms);
    }
    let bytes = 3.0 * size_of::<H>() as f64 * (n * n) as f64;
    record::result(case, &size, bytes, flops, best);
    Ok(())
}

/// The blocks per cluster to time each GEMM shape with: `TILE_BENCH_GEMM_CLUSTERS` (e.g.
/// `1,2`, to compare them), else the lowering's choice alone.
fn gemm_clusters() -> Vec<Option<u32>> {
    std::env::var("TILE_BENCH_GEMM_CLUSTERS").map_or_else(
        |_| vec![None],
        |list| list.split(',').map(|c| c.trim().parse().ok()).collect(),
    )
}

/// `tile_attention` and `tile_attention_causal`: attention forward in f16, batch 4, 32
/// heads, sequence 4096, head dimension 128 on a GPU (the size; 4 * b * h * s^2 * d
/// flops, half of it when causal, as FlashAttention counts), in each of a few tile shapes
/// (the fastest recorded), checked on sampled query rows against an f64 softmax of the f16
/// inputs. Its peers are PyTorch's `scaled_dot_product_attention` (flash; `is_causal` for
/// the causal case) and a Triton flash-attention kernel.
fn attention(stream: &Stream, big: bool, causal: bool) -> Result<(), Failure> {
    use half::f16;
    let (b, h, s, d) = if big {
        (4, 32, 4096, 128)
    } else {
        (1, 2, 128, 128)
    };
    let bh = b * h;
    let case = if causal {
        "tile_attention_causal"
    } else {
        "tile_attention"
    };
    let round = |v: Vec<f32>| -> Vec<f16> { v.into_iter().map(f16::from_f32).collect() };
    let (hq, hk, hv) = (
        round(data(bh * s * d, 8, -1.0, 1.0)),
        round(data(bh * s * d, 9, -1.0, 1.0)),
        round(data(bh * s * d, 10, -1.0, 1.0)),
    );
    let q = api::from_host(&hq, &[bh, s, d]).sync_on(stream)?;
    let k = api::from_host(&hk, &[bh, s, d]).sync_on(stream)?;
    let v = api::from_host(&hv, &[bh, s, d]).sync_on(stream)?;
    let scale = std::f32::consts::LOG2_E / (d as f32).sqrt();
    let size = format!("b{b}_h{h}_s{s}_d{d}");
    let full = 4.0 * (bh * s * s * d) as f64;
    let flops = if causal { full / 2.0 } else { full };
    let mut best = f64::INFINITY;
    // A tile shape that computes a wrong result is reported, and the others still run.
    let mut failures = Vec::new();
    // `TILE_BENCH_ATTENTION_OCCUPANCY=n`: the occupancy hint (blocks per multiprocessor) to
    // launch with, to tune a tile shape.
    let options = match std::env::var("TILE_BENCH_ATTENTION_OCCUPANCY") {
        Ok(n) => CompileOptions::default().occupancy(
            n.parse()
                .map_err(|_| format!("TILE_BENCH_ATTENTION_OCCUPANCY: `{n}` is not a count"))?,
        ),
        Err(_) => CompileOptions::default(),
    };
    'shapes: for (bm, bn) in attention_tiles()? {
        let mut z = api::full(f16::NAN, &[bh, s, d]).sync_on(stream)?;
        let generics = [bm.to_string(), bn.to_string(), d.to_string()];
        let ms = time(stream, |ctx| {
            let out = (&mut z).partition([1, bm, d]);
            if causal {
                kernels::attention_causal(out, &q, &k, &v, scale)
                    .generics(generics.clone())
                    .compile_options(options)
                    .submit(ctx)
                    .map(drop)
            } else {
                kernels::attention(out, &q, &k, &v, scale)
                    .generics(generics.clone())
                    .compile_options(options)
                    .submit(ctx)
                    .map(drop)
            }
        })?;
        let got = z.to_host_vec().sync_on(stream)?;
        for (head, row) in [(0, 0), (bh / 2, s / 3), (bh - 1, s - 1), (1, s / 2 + 7)] {
            let at = |t: &[f16], r: usize, c: usize| f64::from(t[(head * s + r) * d + c].to_f32());
            // The keys query `row` sees.
            let seen = if causal { row + 1 } else { s };
            let logits: Vec<f64> = (0..seen)
                .map(|j| (0..d).map(|c| at(&hq, row, c) * at(&hk, j, c)).sum::<f64>())
                .map(|x| x / (d as f64).sqrt())
                .collect();
            let top = logits.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let w: Vec<f64> = logits.iter().map(|x| (x - top).exp()).collect();
            let total: f64 = w.iter().sum();
            for c in 0..d {
                let want: f64 = (0..seen).map(|j| w[j] * at(&hv, j, c)).sum::<f64>() / total;
                let g = f64::from(got[(head * s + row) * d + c].to_f32());
                // f16 probabilities and result: within a few f16 ulps of the largest value.
                if (g - want).abs() > 4e-3 {
                    let failure = format!(
                        "FAILED: {case} {bm}x{bn}: head {head} row {row} col {c} is {g}, want {want}"
                    );
                    println!("{failure}");
                    failures.push(failure);
                    continue 'shapes;
                }
            }
        }
        println!(
            "cuprum {case} {size} tiles {bm}x{bn} median {ms:.4} ms {:.1} TFLOP/s",
            flops / (ms * 1e9)
        );
        best = best.min(ms);
    }
    if best.is_finite() {
        record::result(case, &size, (4 * bh * s * d * 2) as f64, flops, best);
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("; ").into())
    }
}

/// The attention tile shapes `(BM, BN)` to time: `TILE_BENCH_ATTENTION_TILES` (e.g.
/// `128x128,64x64`, to profile or tune one shape), else the shapes that were fastest on the
/// H100 (2026-12-07: 128x128, two consumer warpgroups and a producer, then 64x64 and 128x64;
/// the 32-key shapes were slower than all three and are no longer timed by default).
fn attention_tiles() -> Result<Vec<(usize, usize)>, Failure> {
    let Ok(list) = std::env::var("TILE_BENCH_ATTENTION_TILES") else {
        return Ok(vec![(128, 128), (64, 64), (128, 64)]);
    };
    list.split(',')
        .map(|shape| {
            let parsed = shape
                .split_once('x')
                .and_then(|(m, n)| Some((m.trim().parse().ok()?, n.trim().parse().ok()?)));
            parsed.ok_or_else(|| {
                format!("TILE_BENCH_ATTENTION_TILES: `{shape}` is not a shape like 128x64").into()
            })
        })
        .collect()
}

fn main() -> Result<(), Failure> {
    let device = Device::new(0)?;
    let stream = device.new_stream()?;
    let on_gpu = device.context().backend() == cuprum::BackendKind::Cuda;
    let big = size::benchmark_sizes(on_gpu);
    let n = if big { 1 << 28 } else { 1 << 16 };
    let (rows, cols) = if big { (16384, 4096) } else { (64, 4096) };
    let sampled: Vec<usize> = (0..rows).step_by((rows / 16).max(1)).collect();
    // `TILE_BENCH_ONLY=attention` or `gemm`: only those cases (to profile or tune them).
    match std::env::var("TILE_BENCH_ONLY").as_deref() {
        Ok("attention") => {
            // The causal case runs even when the other fails.
            let plain = attention(&stream, big, false);
            attention(&stream, big, true)?;
            plain?;
            println!("PASSED");
            return Ok(());
        }
        Ok("gemm") => {
            gemms(&stream, big)?;
            println!("PASSED");
            return Ok(());
        }
        _ => {}
    }

    // add
    let (hx, hy) = (data(n, 1, -100.0, 100.0), data(n, 2, -100.0, 100.0));
    let x = api::from_host(&hx, &[n]).sync_on(&stream)?;
    let y = api::from_host(&hy, &[n]).sync_on(&stream)?;
    let mut z = api::full(f32::NAN, &[n]).sync_on(&stream)?;
    let ms = time(&stream, |ctx| {
        kernels::add((&mut z).partition([1024]), &x, &y)
            .submit(ctx)
            .map(drop)
    })?;
    let got = z.to_host_vec().sync_on(&stream)?;
    let wrong = (0..n).filter(|&i| got[i] != hx[i] + hy[i]).count();
    if wrong != 0 {
        return Err(format!("FAILED: tile_add: {wrong} of {n} elements wrong").into());
    }
    let size = format!("n={n}");
    println!(
        "cuprum tile_add {size} median {ms:.4} ms {:.1} GB/s",
        12.0 * n as f64 / (ms * 1e6)
    );
    record::result("tile_add", &size, 12.0 * n as f64, n as f64, ms);

    // The row kernels share one input.
    let e = rows * cols;
    let hx = data(e, 3, -8.0, 8.0);
    let hw = data(cols, 4, 0.5, 1.5);
    let hb = data(cols, 5, -0.5, 0.5);
    let x = api::from_host(&hx, &[rows, cols]).sync_on(&stream)?;
    let w = api::from_host(&hw, &[cols]).sync_on(&stream)?;
    let b = api::from_host(&hb, &[cols]).sync_on(&stream)?;
    // Every case writes a fresh, poisoned output.
    let poisoned = || api::full(f32::NAN, &[rows, cols]).sync_on(&stream);
    let eps = 1e-6f32;
    let size = format!("{rows}x{cols}");
    let row = |r: usize| &hx[r * cols..(r + 1) * cols];

    let mut y = poisoned()?;
    let ms = time(&stream, |ctx| {
        kernels::softmax((&mut y).partition([1, cols]), &x)
            .submit(ctx)
            .map(drop)
    })?;
    let got = y.to_host_vec().sync_on(&stream)?;
    for &r in &sampled {
        let xs = row(r);
        let max = xs
            .iter()
            .fold(f64::NEG_INFINITY, |m, &v| m.max(f64::from(v)));
        let exps: Vec<f64> = xs.iter().map(|&v| (f64::from(v) - max).exp()).collect();
        let sum: f64 = exps.iter().sum();
        let want: Vec<f64> = exps.iter().map(|v| v / sum).collect();
        check("tile_softmax", &got[r * cols..(r + 1) * cols], &want, 1e-5)?;
    }
    println!(
        "cuprum tile_softmax {size} median {ms:.4} ms {:.1} GB/s",
        8.0 * e as f64 / (ms * 1e6)
    );
    record::result("tile_softmax", &size, 8.0 * e as f64, 5.0 * e as f64, ms);

    let mut y = poisoned()?;
    let ms = time(&stream, |ctx| {
        kernels::rms_norm((&mut y).partition([1, cols]), &x, &w, eps)
            .generics(vec![cols.to_string(), cols.to_string()])
            .submit(ctx)
            .map(drop)
    })?;
    let got = y.to_host_vec().sync_on(&stream)?;
    for &r in &sampled {
        let xs = row(r);
        let ms_row = xs.iter().map(|&v| f64::from(v).powi(2)).sum::<f64>() / cols as f64;
        let s = 1.0 / (ms_row + f64::from(eps)).sqrt();
        let want: Vec<f64> = xs
            .iter()
            .zip(&hw)
            .map(|(&v, &wv)| f64::from(v) * s * f64::from(wv))
            .collect();
        check("tile_rms_norm", &got[r * cols..(r + 1) * cols], &want, 1e-5)?;
    }
    let bytes = 8.0 * e as f64 + 4.0 * cols as f64;
    println!(
        "cuprum tile_rms_norm {size} median {ms:.4} ms {:.1} GB/s",
        bytes / (ms * 1e6)
    );
    record::result("tile_rms_norm", &size, bytes, 4.0 * e as f64, ms);

    let mut y = poisoned()?;
    let ms = time(&stream, |ctx| {
        kernels::layer_norm((&mut y).partition([1, cols]), &x, &w, &b, eps)
            .submit(ctx)
            .map(drop)
    })?;
    let got = y.to_host_vec().sync_on(&stream)?;
    for &r in &sampled {
        let xs = row(r);
        let mean = xs.iter().map(|&v| f64::from(v)).sum::<f64>() / cols as f64;
        let var = xs
            .iter()
            .map(|&v| (f64::from(v) - mean).powi(2))
            .sum::<f64>()
            / cols as f64;
        let s = 1.0 / (var + f64::from(eps)).sqrt();
        let want: Vec<f64> = (0..cols)
            .map(|j| (f64::from(xs[j]) - mean) * s * f64::from(hw[j]) + f64::from(hb[j]))
            .collect();
        check(
            "tile_layer_norm",
            &got[r * cols..(r + 1) * cols],
            &want,
            1e-4,
        )?;
    }
    let bytes = 8.0 * e as f64 + 8.0 * cols as f64;
    println!(
        "cuprum tile_layer_norm {size} median {ms:.4} ms {:.1} GB/s",
        bytes / (ms * 1e6)
    );
    record::result("tile_layer_norm", &size, bytes, 8.0 * e as f64, ms);

    gemms(&stream, big)?;
    let plain = attention(&stream, big, false);
    attention(&stream, big, true)?;
    plain?;
    println!("PASSED");
    Ok(())
}

/// Every GEMM case at every size.
fn gemms(stream: &Stream, big: bool) -> Result<(), Failure> {
    let sizes: &[usize] = if big { &[4096, 8192] } else { &[128] };
    for &n in sizes {
        gemm(
            stream,
            n,
            ("tile_gemm", &HALF_GEMM_TILES),
            half::bf16::from_f32,
            half::bf16::NAN,
        )?;
        gemm(
            stream,
            n,
            ("tile_gemm_f16", &HALF_GEMM_TILES),
            half::f16::from_f32,
            half::f16::NAN,
        )?;
        gemm(
            stream,
            n,
            ("tile_gemm_tf32", &TF32_GEMM_TILES),
            cuprum::tf32::from_f32,
            cuprum::tf32::from_f32(f32::NAN),
        )?;
    }
    Ok(())
}
