//! A 256-bin histogram of byte values, in cuprum: checked exactly against the CPU and (on a
//! GPU) timed against its CUDA C++ peer `benches/peers/histogram.cu`.
//!
//! The values come packed four to a `u32` word (little-endian), so each load brings four.
//! Each 256-thread block strides over the words and counts into a private 256-bin histogram
//! in shared memory with shared atomics, then adds its non-zero bins to the global histogram
//! with global atomics. The global bins start at arbitrary values, not zero, and must end at
//! start + count: a kernel that overwrote instead of adding would fail. 2^28 values (256 MB,
//! four times the L2) on the GPU, about a million on the emulator.

use cuprum::simt::{
    AtomicSlice, SharedArray, kernel, launch_bounds, launch_contract, sync_threads, thread,
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

    /// Adds the counts of the byte values in `words` (four per word) to `bins`.
    #[kernel]
    #[launch_bounds(256)]
    #[launch_contract(domain = 1, block = (256, 1, 1))]
    pub fn histogram(words: &[u32], bins: AtomicSlice<u32>) {
        let hist = SharedArray::<u32, 256>::uninit();
        let t = thread::threadIdx_x() as usize;
        unsafe { hist.set(t, 0) };
        sync_threads();
        let stride = (thread::gridDim_x() * thread::blockDim_x()) as usize;
        let mut i = thread::index_1d().get();
        while i < words.len() {
            let w = words[i];
            hist.fetch_add((w & 255) as usize, 1);
            hist.fetch_add((w >> 8 & 255) as usize, 1);
            hist.fetch_add((w >> 16 & 255) as usize, 1);
            hist.fetch_add((w >> 24) as usize, 1);
            i += stride;
        }
        sync_threads();
        let count = unsafe { hist.get(t) };
        if count != 0 {
            bins.fetch_add(t, count);
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let ctx = CudaContext::new(0)?;
    let gpu = size::benchmark_sizes(ctx.backend() == BackendKind::Cuda);
    // The number of byte values, a multiple of 4; on the emulator not a multiple of the grid.
    let n: usize = if gpu { 1 << 28 } else { 4 * 262_147 };
    let grid = if gpu {
        ctx.limits().multiprocessor_count * 8
    } else {
        40
    };
    let stream = ctx.default_stream();

    let seed: u64 = rand::random();
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut words = vec![0u32; n / 4];
    rng.fill(&mut words[..]);
    let mut want = [0u32; 256];
    for &w in &words {
        for byte in w.to_le_bytes() {
            want[byte as usize] += 1;
        }
    }
    let start: Vec<u32> = (0..256u32)
        .map(|b| 0xDEAD_BEEF ^ b.wrapping_mul(2_654_435_761))
        .collect();

    let dwords = DeviceBuffer::from_host(&stream, &words)?;
    let mut bins = DeviceBuffer::from_host(&stream, &start)?;
    let module = kernels::load(&ctx)?;
    let prepared = module.prepare_histogram(LaunchConfig1D::new(grid, 256, 0))?;
    module.histogram(&stream, &prepared, &dwords, &mut bins)?;
    let got: Vec<u32> = bins
        .to_host_vec(&stream)?
        .iter()
        .zip(&start)
        .map(|(&g, &s)| g.wrapping_sub(s))
        .collect();
    let wrong: Vec<usize> = (0..256).filter(|&b| got[b] != want[b]).collect();
    if let Some(&b) = wrong.first() {
        eprintln!(
            "FAILED: histogram of {n} values on {}: {} of 256 bins wrong; bin {b} counted {}, \
             want {} (seed {seed})",
            ctx.backend(),
            wrong.len(),
            got[b],
            want[b]
        );
        std::process::exit(1);
    }

    if gpu {
        // The bins keep counting across the timed launches; the work is the same.
        let ms = median_ms(&stream, 5, 100, || {
            module.histogram(&stream, &prepared, &dwords, &mut bins)
        })?;
        println!(
            "cuprum histogram n={n} median {ms:.4} ms {:.1} GB/s",
            n as f64 / (ms * 1e6)
        );
        record::result("histogram", &format!("n={n}"), n as f64, 0.0, ms);
    }
    println!(
        "PASSED: histogram of {n} byte values on {}, all 256 bins exact",
        ctx.backend()
    );
    Ok(())
}
