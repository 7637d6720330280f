//! SIMT benchmark cases that the other examples do not cover, for the benchmark suite
//! (`benches/run_all.sh`): a grid-stride vector add (4 consecutive elements per thread per
//! step), SAXPY, a row softmax (one block per row) and a bf16 GEMM on the tensor cores with
//! `mma.sync`. Their CUDA C++ peers are in `benches/peers/bench_simt.cu`.
//!
//! Each case is checked against a CPU reference (sampled for the big sizes) and then timed
//! with CUDA events: the median of 50 launches after 5 warm-up ones. Each prints a line for
//! people and a JSON record `{"record":"result","case":..,"impl":"cuprum","size":..,"bytes":..,
//! "flops":..,"ms":..}`, which `benches/report.py` reads. On the emulator the sizes are tiny
//! and nothing is timed.

use cuprum::simt::mma::mma_m16n8k16_bf16;
use cuprum::simt::{
    SharedArray, kernel, launch_bounds, launch_contract, sync_threads, thread, warp,
};
use cuprum::{BackendKind, CudaContext, DeviceBuffer, LaunchConfig, LaunchConfig1D};
use cuprum::{cuda_module, half::bf16};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

#[path = "common/record.rs"]
mod record;
#[path = "common/size.rs"]
mod size;
#[path = "common/timing.rs"]
mod timing;
use timing::median_ms;

#[cuda_module]
mod kernels {
    use super::*;

    /// c = a + b; each thread handles 4 consecutive elements per step of a grid-stride loop,
    /// and the first threads handle the tail that is not a multiple of 4.
    #[kernel]
    #[launch_bounds(256)]
    #[launch_contract(block = (256, 1, 1))]
    pub unsafe fn vecadd_gridstride(a: &[f32], b: &[f32], c: &mut [f32]) {
        let n = c.len();
        let n4 = n / 4;
        let stride = (thread::grid_dim_x() * thread::block_dim_x()) as usize;
        let first = thread::index_1d().get();
        let mut i = first;
        while i < n4 {
            let j = 4 * i;
            // All four sums before the first store: a failing bounds check of a or b must not
            // land between two stores of c, or the optimizer could not merge them (exactly)
            // into one 16-byte store.
            let s0 = a[j] + b[j];
            let s1 = a[j + 1] + b[j + 1];
            let s2 = a[j + 2] + b[j + 2];
            let s3 = a[j + 3] + b[j + 3];
            c[j] = s0;
            c[j + 1] = s1;
            c[j + 2] = s2;
            c[j + 3] = s3;
            i += stride;
        }
        if first < n - 4 * n4 {
            let j = 4 * n4 + first;
            c[j] = a[j] + b[j];
        }
    }

    /// y = alpha * x + y, one element per thread.
    #[kernel]
    #[launch_bounds(256)]
    #[launch_contract(block = (256, 1, 1))]
    pub unsafe fn saxpy(alpha: f32, x: &[f32], y: &mut [f32]) {
        let i = thread::index_1d().get();
        if i < y.len() {
            y[i] = alpha.mul_add(x[i], y[i]);
        }
    }

    /// y[row] = softmax(x[row]) for rows of `cols` elements; one 256-thread block per row:
    /// the row's max, then the sum of exp(x - max), then the normalized values. Each
    /// reduction is a butterfly across the warp, then across the 8 warps through shared memory.
    #[kernel]
    #[launch_bounds(256)]
    #[launch_contract(block = (256, 1, 1))]
    pub unsafe fn softmax_rows(x: &[f32], y: &mut [f32], cols: u32) {
        let maxes = SharedArray::<f32, 8>::uninit();
        let sums = SharedArray::<f32, 8>::uninit();
        let cols = cols as usize;
        let base = thread::block_idx_x() as usize * cols;
        let tid = thread::thread_idx_x() as usize;
        let lane = thread::lane_id();
        let warp_id = thread::warp_id() as usize;

        let mut m = f32::NEG_INFINITY;
        let mut j = tid;
        while j < cols {
            m = m.max(x[base + j]);
            j += 256;
        }
        let mut offset = 16u32;
        while offset > 0 {
            m = m.max(warp::shuffle_xor(m, offset));
            offset /= 2;
        }
        if lane == 0 {
            unsafe { maxes.set(warp_id, m) };
        }
        sync_threads();
        let mut row_max = unsafe { maxes.get(0) };
        for w in 1..8usize {
            row_max = row_max.max(unsafe { maxes.get(w) });
        }

        let mut s = 0.0f32;
        let mut j = tid;
        while j < cols {
            s += (x[base + j] - row_max).exp();
            j += 256;
        }
        let mut offset = 16u32;
        while offset > 0 {
            s += warp::shuffle_xor(s, offset);
            offset /= 2;
        }
        if lane == 0 {
            unsafe { sums.set(warp_id, s) };
        }
        sync_threads();
        let mut total = 0.0f32;
        for w in 0..8usize {
            total += unsafe { sums.get(w) };
        }
        let inv = 1.0 / total;

        let mut j = tid;
        while j < cols {
            y[base + j] = (x[base + j] - row_max).exp() * inv;
            j += 256;
        }
    }

    /// C (m x n, f32, row-major) = A (m x k, bf16, row-major) · B, with B given transposed
    /// (`bt`: n x k, row-major), both as u32 words of two consecutive bf16 along k. A block
    /// of 4 warps (2 x 2) computes a 64x64 tile of C; each warp a 32x32 tile: 2 x 4 mma tiles
    /// of 16x8, its fragments loaded straight from global memory (through L1) for each
    /// 16-wide step of k. m and n must be multiples of 64, k of 16. Grid: (n/64, m/64).
    #[kernel]
    #[launch_bounds(128)]
    #[launch_contract(block = (128, 1, 1))]
    pub unsafe fn hgemm_mma(a: &[u32], bt: &[u32], c: &mut [f32], n: u32, k: u32) {
        let lane = thread::lane_id() as usize;
        let w = thread::warp_id() as usize;
        let (g, t) = (lane / 4, lane % 4);
        let n = n as usize;
        let kw = k as usize / 2;
        let row0 = thread::block_idx_y() as usize * 64 + (w / 2) * 32;
        let col0 = thread::block_idx_x() as usize * 64 + (w % 2) * 32;
        let mut c00 = [0.0f32; 4];
        let mut c01 = [0.0f32; 4];
        let mut c02 = [0.0f32; 4];
        let mut c03 = [0.0f32; 4];
        let mut c10 = [0.0f32; 4];
        let mut c11 = [0.0f32; 4];
        let mut c12 = [0.0f32; 4];
        let mut c13 = [0.0f32; 4];
        // Word offsets of this lane's A rows (g, g + 8 of each 16-row tile) and B columns.
        let ar0 = (row0 + g) * kw + t;
        let ar1 = (row0 + 16 + g) * kw + t;
        let e8 = 8 * kw;
        let bc0 = (col0 + g) * kw + t;
        let bc1 = (col0 + 8 + g) * kw + t;
        let bc2 = (col0 + 16 + g) * kw + t;
        let bc3 = (col0 + 24 + g) * kw + t;
        let mut kk = 0usize;
        while kk < kw {
            let a0 = [
                a[ar0 + kk],
                a[ar0 + e8 + kk],
                a[ar0 + kk + 4],
                a[ar0 + e8 + kk + 4],
            ];
            let a1 = [
                a[ar1 + kk],
                a[ar1 + e8 + kk],
                a[ar1 + kk + 4],
                a[ar1 + e8 + kk + 4],
            ];
            let b0 = [bt[bc0 + kk], bt[bc0 + kk + 4]];
            let b1 = [bt[bc1 + kk], bt[bc1 + kk + 4]];
            let b2 = [bt[bc2 + kk], bt[bc2 + kk + 4]];
            let b3 = [bt[bc3 + kk], bt[bc3 + kk + 4]];
            c00 = mma_m16n8k16_bf16(a0, b0, c00);
            c01 = mma_m16n8k16_bf16(a0, b1, c01);
            c02 = mma_m16n8k16_bf16(a0, b2, c02);
            c03 = mma_m16n8k16_bf16(a0, b3, c03);
            c10 = mma_m16n8k16_bf16(a1, b0, c10);
            c11 = mma_m16n8k16_bf16(a1, b1, c11);
            c12 = mma_m16n8k16_bf16(a1, b2, c12);
            c13 = mma_m16n8k16_bf16(a1, b3, c13);
            kk += 8;
        }
        // Lane (g, t) holds C[g][2t], C[g][2t+1], C[g+8][2t], C[g+8][2t+1] of each tile.
        let r0 = (row0 + g) * n + col0 + 2 * t;
        let r1 = (row0 + 16 + g) * n + col0 + 2 * t;
        let e8 = 8 * n;
        c[r0] = c00[0];
        c[r0 + 1] = c00[1];
        c[r0 + e8] = c00[2];
        c[r0 + e8 + 1] = c00[3];
        c[r1] = c10[0];
        c[r1 + 1] = c10[1];
        c[r1 + e8] = c10[2];
        c[r1 + e8 + 1] = c10[3];
        c[r0 + 8] = c01[0];
        c[r0 + 8 + 1] = c01[1];
        c[r0 + e8 + 8] = c01[2];
        c[r0 + e8 + 8 + 1] = c01[3];
        c[r1 + 8] = c11[0];
        c[r1 + 8 + 1] = c11[1];
        c[r1 + e8 + 8] = c11[2];
        c[r1 + e8 + 8 + 1] = c11[3];
        c[r0 + 16] = c02[0];
        c[r0 + 16 + 1] = c02[1];
        c[r0 + e8 + 16] = c02[2];
        c[r0 + e8 + 16 + 1] = c02[3];
        c[r1 + 16] = c12[0];
        c[r1 + 16 + 1] = c12[1];
        c[r1 + e8 + 16] = c12[2];
        c[r1 + e8 + 16 + 1] = c12[3];
        c[r0 + 24] = c03[0];
        c[r0 + 24 + 1] = c03[1];
        c[r0 + e8 + 24] = c03[2];
        c[r0 + e8 + 24 + 1] = c03[3];
        c[r1 + 24] = c13[0];
        c[r1 + 24 + 1] = c13[1];
        c[r1 + e8 + 24] = c13[2];
        c[r1 + e8 + 24 + 1] = c13[3];
    }
}

fn result(case: &str, size: &str, bytes: f64, flops: f64, ms: Option<f64>) {
    match ms {
        Some(ms) => {
            println!(
                "cuprum {case} {size} median {ms:.4} ms {:.1} GB/s {:.1} GFLOP/s",
                bytes / (ms * 1e6),
                flops / (ms * 1e6)
            );
            record::result(case, size, bytes, flops, ms);
        }
        None => println!("PASSED: {case} {size} (not timed on the emulator)"),
    }
}

/// Indices to check: every one for small sizes, else a stride through and the last 4096.
fn sample(n: usize) -> Vec<usize> {
    if n <= 1 << 22 {
        (0..n).collect()
    } else {
        (0..n).step_by(997).chain(n - 4096..n).collect()
    }
}

type Failures = Vec<String>;

fn bench_vecadd(ctx: &CudaContext, gpu: bool, fails: &mut Failures) -> cuprum::Result<()> {
    let stream = ctx.default_stream();
    let n: usize = if gpu { 1 << 28 } else { (1 << 16) + 3 };
    let ha: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 0.5).collect();
    let hb: Vec<f32> = (0..n).map(|i| (i % 777) as f32 - 300.0).collect();
    let a = DeviceBuffer::from_host(&stream, &ha)?;
    let b = DeviceBuffer::from_host(&stream, &hb)?;
    let mut c = DeviceBuffer::from_host(&stream, &vec![f32::NAN; n])?;
    let m = kernels::load(ctx)?;
    // 4 blocks of 256 threads per SM, the same grid as the CUDA peer
    // (benches/peers/bench_simt.cu). Measured on an H200 (2^28 f32, both sides alike):
    // 1 block per SM 1.44 ms, 2: 0.95, 4: 0.768, 8: 0.789, 16: 0.789. GRIDSTRIDE_BLOCKS_PER_SM
    // overrides the 4 on both sides, to measure other grids.
    let per_sm = std::env::var("GRIDSTRIDE_BLOCKS_PER_SM")
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
        .filter(|&v| v > 0)
        .unwrap_or(4);
    let grid = if gpu {
        ctx.limits().multiprocessor_count * per_sm
    } else {
        24
    };
    let config = LaunchConfig1D::new(grid, 256, 0);
    // SAFETY: each element of c is written by exactly one thread (grid-stride, disjoint).
    let launch =
        |c: &mut DeviceBuffer<f32>| unsafe { m.vecadd_gridstride(&stream, config, &a, &b, c) };
    launch(&mut c)?;
    let hc = c.to_host_vec(&stream)?;
    let wrong = sample(n)
        .into_iter()
        .filter(|&i| hc[i] != ha[i] + hb[i])
        .count();
    if wrong > 0 {
        fails.push(format!("vecadd_gridstride: {wrong} sampled elements wrong"));
        return Ok(());
    }
    let ms = if gpu {
        Some(median_ms(&stream, 5, 50, || launch(&mut c))?)
    } else {
        None
    };
    result(
        "vecadd_gridstride",
        &format!("n={n}"),
        12.0 * n as f64,
        n as f64,
        ms,
    );
    Ok(())
}

fn bench_saxpy(ctx: &CudaContext, gpu: bool, fails: &mut Failures) -> cuprum::Result<()> {
    let stream = ctx.default_stream();
    let n: usize = if gpu { 1 << 28 } else { (1 << 16) + 5 };
    let alpha = 2.0f32;
    let hx: Vec<f32> = (0..n).map(|i| (i % 1024) as f32 * 0.25).collect();
    let hy: Vec<f32> = (0..n).map(|i| (i % 333) as f32).collect();
    let x = DeviceBuffer::from_host(&stream, &hx)?;
    let mut y = DeviceBuffer::from_host(&stream, &hy)?;
    let m = kernels::load(ctx)?;
    let config = LaunchConfig1D::new((n as u32).div_ceil(256), 256, 0);
    // SAFETY: thread i reads and writes only y[i].
    let launch = |y: &mut DeviceBuffer<f32>| unsafe { m.saxpy(&stream, config, alpha, &x, y) };
    launch(&mut y)?;
    let got = y.to_host_vec(&stream)?;
    let wrong = sample(n)
        .into_iter()
        .filter(|&i| got[i] != alpha.mul_add(hx[i], hy[i]))
        .count();
    if wrong > 0 {
        fails.push(format!("saxpy: {wrong} sampled elements wrong"));
        return Ok(());
    }
    // y keeps growing across the timed runs (by alpha * x each); the work is the same.
    let ms = if gpu {
        Some(median_ms(&stream, 5, 50, || launch(&mut y))?)
    } else {
        None
    };
    result(
        "saxpy",
        &format!("n={n}"),
        12.0 * n as f64,
        2.0 * n as f64,
        ms,
    );
    Ok(())
}

fn bench_softmax(ctx: &CudaContext, gpu: bool, fails: &mut Failures) -> cuprum::Result<()> {
    let stream = ctx.default_stream();
    let (rows, cols): (usize, usize) = if gpu { (8192, 4096) } else { (6, 1000) };
    let mut rng = SmallRng::seed_from_u64(7);
    let hx: Vec<f32> = (0..rows * cols)
        .map(|_| rng.random_range(-8.0f32..8.0))
        .collect();
    let x = DeviceBuffer::from_host(&stream, &hx)?;
    let mut y = DeviceBuffer::from_host(&stream, &vec![f32::NAN; rows * cols])?;
    let m = kernels::load(ctx)?;
    let config = LaunchConfig1D::new(rows as u32, 256, 0);
    // SAFETY: block r writes only row r, each element of it by one thread.
    let launch =
        |y: &mut DeviceBuffer<f32>| unsafe { m.softmax_rows(&stream, config, &x, y, cols as u32) };
    launch(&mut y)?;
    let got = y.to_host_vec(&stream)?;
    let check_rows: Vec<usize> = if gpu {
        (0..rows).step_by(61).chain([rows - 1]).collect()
    } else {
        (0..rows).collect()
    };
    let mut wrong = 0;
    for r in check_rows {
        let row = &hx[r * cols..(r + 1) * cols];
        let mx = row
            .iter()
            .fold(f64::NEG_INFINITY, |m, &v| m.max(f64::from(v)));
        let s: f64 = row.iter().map(|&v| (f64::from(v) - mx).exp()).sum();
        for j in 0..cols {
            let want = (f64::from(row[j]) - mx).exp() / s;
            let g = f64::from(got[r * cols + j]);
            if (g - want).abs() > 1e-5 * want + 1e-9 || g.is_nan() {
                wrong += 1;
            }
        }
    }
    if wrong > 0 {
        fails.push(format!("softmax_rows: {wrong} checked elements wrong"));
        return Ok(());
    }
    let ms = if gpu {
        Some(median_ms(&stream, 5, 50, || launch(&mut y))?)
    } else {
        None
    };
    let e = (rows * cols) as f64;
    result(
        "softmax_rows",
        &format!("{rows}x{cols}"),
        8.0 * e,
        5.0 * e,
        ms,
    );
    Ok(())
}

fn bench_hgemm(ctx: &CudaContext, gpu: bool, fails: &mut Failures) -> cuprum::Result<()> {
    let stream = ctx.default_stream();
    let (m, n, k): (usize, usize, usize) = if gpu {
        (4096, 4096, 4096)
    } else {
        (128, 64, 48)
    };
    let mut rng = SmallRng::seed_from_u64(11);
    let mut rand_bf16 = |len: usize| -> Vec<bf16> {
        (0..len)
            .map(|_| bf16::from_f32(rng.random_range(-1.0f32..1.0)))
            .collect()
    };
    let ha = rand_bf16(m * k); // m x k
    let hbt = rand_bf16(n * k); // n x k (B transposed)
    let pack = |v: &[bf16]| -> Vec<u32> {
        v.chunks_exact(2)
            .map(|p| u32::from(p[0].to_bits()) | u32::from(p[1].to_bits()) << 16)
            .collect()
    };
    let a = DeviceBuffer::from_host(&stream, &pack(&ha))?;
    let bt = DeviceBuffer::from_host(&stream, &pack(&hbt))?;
    let mut c = DeviceBuffer::from_host(&stream, &vec![f32::NAN; m * n])?;
    let module = kernels::load(ctx)?;
    let config = LaunchConfig {
        grid: ((n / 64) as u32, (m / 64) as u32, 1),
        block: (128, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: each lane writes its own 32 elements of its warp's 32x32 tile of C; the
    // tiles do not overlap and the grid covers C exactly (m, n multiples of 64).
    let launch = |c: &mut DeviceBuffer<f32>| unsafe {
        module.hgemm_mma(&stream, config, &a, &bt, c, n as u32, k as u32)
    };
    launch(&mut c)?;
    let got = c.to_host_vec(&stream)?;
    let rows: Vec<usize> = if gpu {
        vec![0, 1, 17, 1000, 2049, m - 1]
    } else {
        (0..m).collect()
    };
    let mut wrong = 0;
    let mut first = None;
    for &i in &rows {
        for j in 0..n {
            let (mut want, mut mag) = (0.0f64, 0.0f64);
            for kk in 0..k {
                let p = f64::from(ha[i * k + kk].to_f32()) * f64::from(hbt[j * k + kk].to_f32());
                want += p;
                mag += p.abs();
            }
            // f32 accumulation over k terms: well within 2^-12 of the sum of magnitudes.
            let tol = mag * (-12f64).exp2() + 1e-6;
            let g = f64::from(got[i * n + j]);
            if g.is_nan() || (g - want).abs() > tol {
                wrong += 1;
                first.get_or_insert((i, j, g, want));
            }
        }
    }
    if wrong > 0 {
        fails.push(format!(
            "hgemm_mma: {wrong} checked elements wrong, first (row, col, got, want) {first:?}"
        ));
        return Ok(());
    }
    let ms = if gpu {
        Some(median_ms(&stream, 5, 50, || launch(&mut c))?)
    } else {
        None
    };
    let bytes = (2 * (m * k + n * k) + 4 * m * n) as f64;
    let flops = 2.0 * (m * n * k) as f64;
    result("hgemm_mma", &format!("{m}x{n}x{k}"), bytes, flops, ms);
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let ctx = CudaContext::new(0)?;
    let gpu = size::benchmark_sizes(ctx.backend() == BackendKind::Cuda);
    let mut fails = Failures::new();
    type Case = fn(&CudaContext, bool, &mut Failures) -> cuprum::Result<()>;
    let cases: [(&str, Case); 4] = [
        ("vecadd_gridstride", bench_vecadd),
        ("saxpy", bench_saxpy),
        ("softmax_rows", bench_softmax),
        ("hgemm_mma", bench_hgemm),
    ];
    // Each case runs on its own: one that fails to launch or check does not stop the others.
    for (name, case) in cases {
        if let Err(e) = case(&ctx, gpu, &mut fails) {
            fails.push(format!("{name}: error {e}"));
        }
    }
    if !fails.is_empty() {
        for f in &fails {
            eprintln!("FAILED: {f}");
        }
        std::process::exit(1);
    }
    println!("PASSED: bench_simt on {:?}", ctx.backend());
    Ok(())
}
