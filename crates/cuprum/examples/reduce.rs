//! Sum of a large f32 array: the classic block reduction, in cuprum, checked against an f64
//! sum on the CPU and (on a GPU) timed against its CUDA C++ peer `benches/peers/reduce.cu`.
//!
//! Each 256-thread block strides over the input with four independent accumulators per
//! thread, reduces them across each warp with `warp::shuffle_down`, collects the 8 warp sums
//! in shared memory, and warp 0 reduces those and adds the block's result to the total with
//! one float atomic. 2^26 elements (256 MB, four times the L2) on the GPU, about a million
//! on the emulator.

use cuprum::simt::{
    AtomicSlice, SharedArray, kernel, launch_bounds, launch_contract, sync_threads, thread, warp,
};
use cuprum::{BackendKind, CudaContext, DeviceBuffer, LaunchConfig1D, cuda_module};
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

    /// Adds the sum of `x` to `total[0]` (which the host zeroes first).
    #[kernel]
    #[launch_bounds(256)]
    #[launch_contract(domain = 1, block = (256, 1, 1))]
    pub fn reduce_sum(x: &[f32], total: AtomicSlice<f32>) {
        let warp_sums = SharedArray::<f32, 8>::uninit();
        let n = x.len();
        let stride = (thread::gridDim_x() * thread::blockDim_x()) as usize;
        let mut i = thread::index_1d().get();
        let mut a0 = 0.0f32;
        let mut a1 = 0.0f32;
        let mut a2 = 0.0f32;
        let mut a3 = 0.0f32;
        while i + 3 * stride < n {
            a0 += x[i];
            a1 += x[i + stride];
            a2 += x[i + 2 * stride];
            a3 += x[i + 3 * stride];
            i += 4 * stride;
        }
        while i < n {
            a0 += x[i];
            i += stride;
        }
        let mut acc = (a0 + a1) + (a2 + a3);
        let mut offset = 16u32;
        while offset > 0 {
            acc += warp::shuffle_down(acc, offset);
            offset /= 2;
        }
        let lane = thread::lane_id();
        let warp = thread::warp_id();
        if lane == 0 {
            unsafe { warp_sums.set(warp as usize, acc) };
        }
        sync_threads();
        if warp == 0 {
            let mut v = if lane < 8 {
                unsafe { warp_sums.get(lane as usize) }
            } else {
                0.0
            };
            let mut offset = 4u32;
            while offset > 0 {
                v += warp::shuffle_down(v, offset);
                offset /= 2;
            }
            if lane == 0 {
                total.fetch_add(0, v);
            }
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let ctx = CudaContext::new(0)?;
    let gpu = size::benchmark_sizes(ctx.backend() == BackendKind::Cuda);
    // An odd length on the emulator, so the strided loops end mid-stride.
    let n: usize = if gpu { 1 << 26 } else { (1 << 20) + 12_345 };
    let grid = if gpu {
        ctx.limits().multiprocessor_count * 8
    } else {
        48
    };
    let stream = ctx.default_stream();

    let seed: u64 = rand::random();
    let mut rng = SmallRng::seed_from_u64(seed);
    // Nonnegative terms make the error bound below a bound relative to the sum itself.
    let x: Vec<f32> = (0..n).map(|_| rng.random::<f32>()).collect();
    let want: f64 = x.iter().map(|&v| f64::from(v)).sum();

    let dx = DeviceBuffer::from_host(&stream, &x)?;
    // The total is an accumulator, so it must start at zero; a block that failed to add its
    // part would move the sum by about 1/grid of it, far outside the tolerance.
    let mut total = DeviceBuffer::<f32>::zeroed(&stream, 1)?;
    let module = kernels::load(&ctx)?;
    let prepared = module.prepare_reduce_sum(LaunchConfig1D::new(grid, 256, 0))?;
    module.reduce_sum(&stream, &prepared, &dx, &mut total)?;
    let got = total.to_host_vec(&stream)?[0];

    // Worst-case relative error of an f32 sum of nonnegative terms: the depth of the summation
    // tree times 2^-24. Depth here: the per-thread chain (+2 to combine the four accumulators),
    // 5 warp steps, 3 block steps, and one atomic add per block.
    let threads = grid as usize * 256;
    let chain = n.div_ceil(threads);
    let tol = (chain + 2 + 5 + 3 + grid as usize) as f64 * (-24f64).exp2();
    let rel = (f64::from(got) - want).abs() / want;
    // A NaN (a poisoned or lost result) fails too.
    if rel.is_nan() || rel > tol {
        eprintln!(
            "FAILED: reduce of {n} f32 on {}: got {got}, f64 reference {want}, relative error \
             {rel:.3e} > {tol:.3e} (seed {seed})",
            ctx.backend()
        );
        std::process::exit(1);
    }

    if gpu {
        // The total keeps growing across the timed launches; the work is the same.
        let ms = median_ms(&stream, 5, 100, || {
            module.reduce_sum(&stream, &prepared, &dx, &mut total)
        })?;
        println!(
            "cuprum reduce n={n} median {ms:.4} ms {:.1} GB/s",
            4.0 * n as f64 / (ms * 1e6)
        );
        record::result("reduce", &format!("n={n}"), 4.0 * n as f64, n as f64, ms);
    }
    println!(
        "PASSED: reduce of {n} f32 on {}: {got} vs f64 {want:.3}, relative error {rel:.2e} <= {tol:.2e}",
        ctx.backend()
    );
    Ok(())
}
