//! Single-precision matrix multiply C = A·B (row-major), in cuprum: checked against an f64
//! CPU reference with a worst-case error bound and (on a GPU) timed against its CUDA C++ peer
//! `benches/peers/sgemm.cu`, which also times cuBLAS.
//!
//! Two kernels, both staging tiles of A and B through shared memory between barriers:
//! - `sgemm_tiled`, the textbook one: a 32x32-thread block per 32x32 tile of C, one output
//!   per thread, 32-wide slices of K. Safe, shared memory too: the tiles are phased arrays
//!   (each thread loads the element it owns, `sync()`, every thread reads), and each thread
//!   writes its own element of C through `DisjointSlice::get_mut_2d`.
//! - `sgemm_reg`: a 16x16-thread block per 64x64 tile of C, each thread keeping a 4x4 block
//!   of outputs in registers (rows ty + 16i, columns tx + 16j, so that shared reads and global
//!   writes stay conflict-free and coalesced), 16-wide slices of K. Sixteen named accumulators
//!   stand in for a fixed-size local array; as each thread writes sixteen elements of C, the
//!   kernel takes `&mut [f32]` and is `unsafe`.
//!
//! Both zero-pad partial tiles, so any M, N, K work: checked in full on sizes that are not
//! multiples of the tiles, and on 16 rows of the timed 4096^3 product on the GPU.

use cuprum::{BackendKind, CudaContext, DeviceBuffer, LaunchConfig, Stream};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

#[path = "common/record.rs"]
mod record;
#[path = "common/size.rs"]
mod size;
#[path = "common/timing.rs"]
mod timing;
use timing::median_ms;

#[path = "common/sgemm_kernels.rs"]
mod sgemm_kernels;
use sgemm_kernels::kernels;

/// Which kernel a run uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Variant {
    Tiled,
    Reg,
}

impl Variant {
    fn case(self) -> &'static str {
        match self {
            Variant::Tiled => "sgemm",
            Variant::Reg => "sgemm_reg",
        }
    }
}

/// One problem: random A and B on the device, and the f64 reference for some rows of C with
/// the error bound of each element.
struct Problem {
    m: usize,
    n: usize,
    k: usize,
    a: DeviceBuffer<f32>,
    b: DeviceBuffer<f32>,
    /// (row, reference row, tolerance per element) for each checked row.
    checked: Vec<(usize, Vec<f64>, Vec<f64>)>,
}

impl Problem {
    /// Checks `rows` rows of C (all when `rows >= m`, else spread evenly, first and last
    /// included). The tolerance is the worst-case error of a k-term f32 dot product,
    /// (k + 2)·2^-24·Σ|a_ip·b_pj|.
    fn new(
        stream: &Stream,
        rng: &mut SmallRng,
        (m, n, k): (usize, usize, usize),
        rows: usize,
    ) -> cuprum::Result<Self> {
        let ha: Vec<f32> = (0..m * k).map(|_| rng.random_range(-1.0f32..1.0)).collect();
        let hb: Vec<f32> = (0..k * n).map(|_| rng.random_range(-1.0f32..1.0)).collect();
        let pick: Vec<usize> = if rows >= m {
            (0..m).collect()
        } else {
            (0..rows).map(|s| s * (m - 1) / (rows - 1)).collect()
        };
        let unit = (k as f64 + 2.0) * (-24f64).exp2();
        let checked = pick
            .into_iter()
            .map(|i| {
                let mut reference = vec![0.0f64; n];
                let mut magnitude = vec![0.0f64; n];
                for p in 0..k {
                    let x = f64::from(ha[i * k + p]);
                    let brow = &hb[p * n..(p + 1) * n];
                    for j in 0..n {
                        let prod = x * f64::from(brow[j]);
                        reference[j] += prod;
                        magnitude[j] += prod.abs();
                    }
                }
                let tol = magnitude.iter().map(|&g| unit * g + 1e-30).collect();
                (i, reference, tol)
            })
            .collect();
        Ok(Self {
            m,
            n,
            k,
            a: DeviceBuffer::from_host(stream, &ha)?,
            b: DeviceBuffer::from_host(stream, &hb)?,
            checked,
        })
    }

    fn size(&self) -> String {
        format!("{}x{}x{}", self.m, self.n, self.k)
    }
}

/// Runs `variant` on `p`, checks the reference rows, and times `reps` launches if `reps > 0`.
fn run(
    ctx: &CudaContext,
    module: &kernels::Module,
    p: &Problem,
    variant: Variant,
    reps: usize,
) -> Result<(), Box<dyn std::error::Error>> {
    let stream = ctx.default_stream();
    let (m, n, k) = (p.m as u32, p.n as u32, p.k as u32);
    // Poisoned, so an element the kernel fails to write cannot pass the check.
    let mut c = DeviceBuffer::from_host(&stream, &vec![f32::NAN; p.m * p.n])?;
    let tiled = module.prepare_sgemm_tiled(LaunchConfig {
        grid_dim: (n.div_ceil(32), m.div_ceil(32), 1),
        block_dim: (32, 32, 1),
        shared_mem_bytes: 0,
    })?;
    let reg = LaunchConfig {
        grid_dim: (n.div_ceil(64), m.div_ceil(64), 1),
        block_dim: (16, 16, 1),
        shared_mem_bytes: 0,
    };
    let launch = |c: &mut DeviceBuffer<f32>| match variant {
        Variant::Tiled => module.sgemm_tiled(&stream, &tiled, &p.a, &p.b, c, m, n, k),
        // SAFETY: block (bx, by) writes only C's 64x64 tile at rows by*64.., columns bx*64..,
        // each element from one thread, all inside m x n; 16x16 blocks as the kernel assumes.
        Variant::Reg => unsafe { module.sgemm_reg(&stream, reg, &p.a, &p.b, c, m, n, k) },
    };
    launch(&mut c)?;
    let hc = c.to_host_vec(&stream)?;
    let mut wrong = 0usize;
    let mut first = None;
    for (i, reference, tol) in &p.checked {
        for j in 0..p.n {
            let got = f64::from(hc[i * p.n + j]);
            // A NaN (an unwritten element) fails too.
            if got.is_nan() || (got - reference[j]).abs() > tol[j] {
                wrong += 1;
                first.get_or_insert((*i, j, got, reference[j], tol[j]));
            }
        }
    }
    if let Some((i, j, got, want, tol)) = first {
        eprintln!(
            "FAILED: {} {} on {}: {wrong} of {} checked elements wrong; first C[{i}][{j}] = \
             {got}, reference {want} (tolerance {tol:.3e})",
            variant.case(),
            p.size(),
            ctx.backend(),
            p.checked.len() * p.n
        );
        std::process::exit(1);
    }
    if reps > 0 {
        let ms = median_ms(&stream, 3, reps, || launch(&mut c))?;
        println!(
            "cuprum {} {} median {ms:.4} ms {:.1} GFLOP/s",
            variant.case(),
            p.size(),
            2.0 * p.m as f64 * p.n as f64 * p.k as f64 / (ms * 1e6)
        );
        let (m, n, k) = (p.m as f64, p.n as f64, p.k as f64);
        record::result(
            variant.case(),
            &p.size(),
            4.0 * (m * k + k * n + m * n),
            2.0 * m * n * k,
            ms,
        );
    }
    println!(
        "PASSED: {} {} on {}, {} rows checked",
        variant.case(),
        p.size(),
        ctx.backend(),
        p.checked.len()
    );
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let module = kernels::load(&ctx)?;
    let seed: u64 = rand::random();
    let mut rng = SmallRng::seed_from_u64(seed);
    let gpu = size::benchmark_sizes(ctx.backend() == BackendKind::Cuda);
    // Partial tiles in every dimension, checked in full.
    let edges = if gpu { (517, 389, 301) } else { (133, 97, 170) };
    let small = Problem::new(&stream, &mut rng, edges, usize::MAX)?;
    run(&ctx, &module, &small, Variant::Tiled, 0)?;
    run(&ctx, &module, &small, Variant::Reg, 0)?;
    if gpu {
        let big = Problem::new(&stream, &mut rng, (4096, 4096, 4096), 16)?;
        run(&ctx, &module, &big, Variant::Tiled, 50)?;
        run(&ctx, &module, &big, Variant::Reg, 50)?;
    }
    Ok(())
}
