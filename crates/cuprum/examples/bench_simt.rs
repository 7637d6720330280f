//! SIMT benchmark cases that the other examples do not cover, for the benchmark suite
//! (`benches/run_all.sh`): a grid-stride vector add (4 consecutive elements per thread per
//! step), SAXPY, a row softmax (one block per row) and a bf16 GEMM on the tensor cores with
//! `mma.sync` (the kernels are in `common/simt_kernels.rs`, shared with `cache_speed`). Their
//! CUDA C++ peers are in `benches/peers/bench_simt.cu`.
//!
//! Each case is checked against a CPU reference (sampled for the big sizes) and then timed
//! with CUDA events: the median of 50 launches after 5 warm-up ones. Each prints a line for
//! people and a JSON record `{"record":"result","case":..,"impl":"cuprum","size":..,"bytes":..,
//! "flops":..,"ms":..}`, which `benches/report.py` reads. On the emulator the sizes are tiny
//! and nothing is timed.

use cuprum::half::bf16;
use cuprum::{BackendKind, CudaContext, DeviceBuffer, LaunchConfig, LaunchConfig1D};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

#[path = "common/record.rs"]
mod record;
#[path = "common/simt_kernels.rs"]
mod simt_kernels;
#[path = "common/size.rs"]
mod size;
#[path = "common/timing.rs"]
mod timing;
use simt_kernels::kernels;
use timing::median_ms;

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
        grid_dim: ((n / 64) as u32, (m / 64) as u32, 1),
        block_dim: (128, 1, 1),
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
