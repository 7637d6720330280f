//! Inclusive prefix sum (scan) of u32 values with wrapping addition, in cuprum: checked
//! exactly against the CPU and (on a GPU) timed against its CUDA C++ peer
//! `benches/peers/scan.cu`.
//!
//! Three phases: (1) `scan_blocks` scans each 1024-element block (a `warp::shuffle_up` scan
//! within each warp, then warp 0 scans the 32 warp totals through shared memory) and writes
//! the block's total; (2) the block totals are scanned by the same kernel, recursively, until
//! one block is left; (3) `add_offsets` adds to every block but the first the scanned total
//! of the blocks before it, level by level back down. 2^26 elements (256 MB, four times the
//! L2) on the GPU; on the emulator just over 2^20, so that it takes three levels too.

use cuprum::simt::{
    AtomicSlice, DisjointSlice, Prepared, SharedArray, kernel, launch_bounds, launch_contract,
    sync_threads, thread, warp,
};
use cuprum::{BackendKind, CudaContext, DeviceBuffer, LaunchConfig1D, Stream, cuda_module};
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

    /// `out` = the inclusive scan of each 1024-element block of `x`; `totals[b]` = the sum of
    /// block `b`.
    #[kernel]
    #[launch_bounds(1024)]
    #[launch_contract(domain = 1, block = (1024, 1, 1))]
    pub fn scan_blocks(x: &[u32], mut out: DisjointSlice<u32>, totals: AtomicSlice<u32>) {
        let warp_sums = SharedArray::<u32, 32>::uninit();
        let i = thread::index_1d();
        let g = i.get();
        let lane = thread::lane_id();
        let warp = thread::warp_id();
        let mut s = if g < x.len() { x[g] } else { 0 };
        let mut d = 1u32;
        while d < 32 {
            let below = warp::shuffle_up(s, d);
            if lane >= d {
                s = s.wrapping_add(below);
            }
            d *= 2;
        }
        if lane == 31 {
            unsafe { warp_sums.set(warp as usize, s) };
        }
        sync_threads();
        if warp == 0 {
            let mut t = unsafe { warp_sums.get(lane as usize) };
            let mut d = 1u32;
            while d < 32 {
                let below = warp::shuffle_up(t, d);
                if lane >= d {
                    t = t.wrapping_add(below);
                }
                d *= 2;
            }
            unsafe { warp_sums.set(lane as usize, t) };
        }
        sync_threads();
        if warp > 0 {
            s = s.wrapping_add(unsafe { warp_sums.get(warp as usize - 1) });
        }
        if let Some(o) = out.get_mut(i) {
            *o = s;
        }
        if thread::threadIdx_x() == 1023 {
            // An atomic exchange as a plain store to an element that is not this thread's.
            totals.swap(thread::blockIdx_x() as usize, s);
        }
    }

    /// Adds `offsets[b - 1]` (the scanned total of blocks `0..b`) to block `b` of `out`.
    #[kernel]
    #[launch_bounds(1024)]
    #[launch_contract(domain = 1, block = (1024, 1, 1))]
    pub fn add_offsets(offsets: &[u32], mut out: DisjointSlice<u32>) {
        let b = thread::blockIdx_x() as usize;
        if b > 0 {
            let offset = offsets[b - 1];
            if let Some(o) = out.get_mut(thread::index_1d()) {
                *o = (*o).wrapping_add(offset);
            }
        }
    }
}

/// One level of the recursion: its input (the data, or the block totals of the level below),
/// its output, and the launch configurations over its blocks.
struct Level {
    input: DeviceBuffer<u32>,
    output: DeviceBuffer<u32>,
    scan: Prepared<kernels::ScanBlocksKernel>,
    add: Prepared<kernels::AddOffsetsKernel>,
}

/// Scans `levels[0].input` into `levels[0].output`, using the other levels as scratch.
fn scan(
    module: &kernels::Module,
    stream: &Stream,
    levels: &mut [Level],
    last_total: &mut DeviceBuffer<u32>,
) -> cuprum::Result<()> {
    for l in 0..levels.len() {
        let (head, tail) = levels.split_at_mut(l + 1);
        let level = &mut head[l];
        let totals = match tail.first_mut() {
            Some(next) => &mut next.input,
            None => &mut *last_total,
        };
        module.scan_blocks(stream, &level.scan, &level.input, &mut level.output, totals)?;
    }
    for l in (1..levels.len()).rev() {
        let (head, tail) = levels.split_at_mut(l);
        let below = &mut head[l - 1];
        module.add_offsets(stream, &below.add, &tail[0].output, &mut below.output)?;
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    const POISON: u32 = 0xDEAD_BEEF;
    let ctx = CudaContext::new(0)?;
    let gpu = size::benchmark_sizes(ctx.backend() == BackendKind::Cuda);
    let n: usize = if gpu { 1 << 26 } else { 1_100_003 };
    let stream = ctx.default_stream();
    let module = kernels::load(&ctx)?;

    let seed: u64 = rand::random();
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut x = vec![0u32; n];
    rng.fill(&mut x[..]);
    let want: Vec<u32> = x
        .iter()
        .scan(0u32, |acc, &v| {
            *acc = acc.wrapping_add(v);
            Some(*acc)
        })
        .collect();

    // Level l scans `len` elements in ceil(len / 1024) blocks; their totals feed level l + 1.
    let mut levels = Vec::new();
    let mut len = n;
    loop {
        let blocks = len.div_ceil(1024);
        let config = LaunchConfig1D::new(u32::try_from(blocks)?, 1024, 0);
        let input = if levels.is_empty() {
            DeviceBuffer::from_host(&stream, &x)?
        } else {
            DeviceBuffer::from_host(&stream, &vec![POISON; len])?
        };
        levels.push(Level {
            input,
            output: DeviceBuffer::from_host(&stream, &vec![POISON; len])?,
            scan: module.prepare_scan_blocks(config)?,
            add: module.prepare_add_offsets(config)?,
        });
        if blocks == 1 {
            break;
        }
        len = blocks;
    }
    let mut last_total = DeviceBuffer::from_host(&stream, &[POISON])?;

    scan(&module, &stream, &mut levels, &mut last_total)?;
    let got = levels[0].output.to_host_vec(&stream)?;
    let wrong: Vec<usize> = (0..n).filter(|&i| got[i] != want[i]).collect();
    if let Some(&i) = wrong.first() {
        eprintln!(
            "FAILED: scan of {n} u32 on {}: {} elements wrong; first at {i}: got {:#x}, want \
             {:#x} (seed {seed})",
            ctx.backend(),
            wrong.len(),
            got[i],
            want[i]
        );
        std::process::exit(1);
    }

    if gpu {
        let ms = median_ms(&stream, 5, 100, || {
            scan(&module, &stream, &mut levels, &mut last_total)
        })?;
        // Counts the 8 bytes per element that a single-pass scan must move.
        println!(
            "cuprum scan n={n} median {ms:.4} ms {:.1} GB/s",
            8.0 * n as f64 / (ms * 1e6)
        );
        record::result("scan", &format!("n={n}"), 8.0 * n as f64, n as f64, ms);
    }
    println!(
        "PASSED: scan of {n} u32 on {}, all elements exact ({} levels)",
        ctx.backend(),
        levels.len()
    );
    Ok(())
}
