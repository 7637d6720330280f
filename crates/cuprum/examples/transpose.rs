//! Matrix transpose through shared memory, in cuprum: checked exactly against the CPU and (on
//! a GPU) timed against its CUDA C++ peer `benches/peers/transpose.cu`.
//!
//! Each block moves one 32x32 tile: its 32x8 threads read four rows each (coalesced along the
//! input's rows) into a 32x33 shared tile, whose padding column keeps the transposed reads
//! free of bank conflicts, then write four rows each of the output (coalesced along its
//! rows). The kernel is safe: the shared tile is a phased array (each thread writes the rows
//! it owns, `sync()`, then any thread reads), and the output is the block's tile of a
//! `DisjointSlice` (`block_tile_mut`). Its `unsafe` twin, written as CUDA C++ writes it with a
//! raw `SharedArray` and `&mut [f32]`, is timed beside it. Both state in their contracts that
//! the matrices fit their slices (`requires`, checked at every launch), which proves their
//! guarded reads and writes in bounds, so neither tests an index. The safe kernel once asked
//! for 8 blocks per SM (`#[launch_bounds(256, 8)]`): its 64-bit bounds and address
//! arithmetic took 38 registers, 6 blocks per SM, and the transpose is bound by how many loads
//! are in flight. With those checks proved and each row's address one add from the previous
//! row's, it takes 31 registers (ptxas 13.5, sm_90), 8 blocks per SM, without the hint.
//! 8192x8192 (256 MB each way) on the GPU; odd rectangles exercise the partial edge tiles.

use cuprum::simt::{
    DisjointSlice, SharedArray, SharedWrite2d, kernel, launch_bounds, launch_contract,
    sync_threads, thread,
};
use cuprum::{BackendKind, CudaContext, DeviceBuffer, LaunchConfig, cuda_module};
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

    const TILE: usize = 32;

    /// `output` (w rows of h) = transpose of `input` (h rows of w). Launch with 32x8-thread
    /// blocks and a (ceil(h/32), ceil(w/32)) grid: block b writes output tile b (row-major,
    /// ceil(h/32) per row), i.e. output rows by*32.. and columns bx*32.., so it reads input
    /// rows bx*32.. and columns by*32... The contract requires `input` to hold the h x w
    /// matrix (`input.len() >= w * h`, checked at every launch), so the reads under
    /// `y < h && x < w` need no bounds check: the optimizer proves `y * w + x < w * h`.
    #[kernel]
    #[launch_bounds(256)]
    #[launch_contract(domain = 2, block = (32, 8, 1), requires = (input.len() >= w * h))]
    pub fn transpose(input: &[f32], mut output: DisjointSlice<f32>, w: usize, h: usize) {
        let mut tile = SharedWrite2d::<f32, TILE, { TILE + 1 }>::new();
        let in_row0 = thread::blockIdx_x() as usize * TILE;
        let in_col0 = thread::blockIdx_y() as usize * TILE;
        for (r, c, slot) in tile.mine() {
            let (y, x) = (in_row0 + r, in_col0 + c);
            if c < TILE && y < h && x < w {
                *slot = input[y * w + x];
            }
        }
        let tile = tile.sync();
        for (r, c, out) in output.block_tile_mut(TILE, TILE, h) {
            *out = tile[c][r];
        }
    }

    /// The same transpose as CUDA C++ writes it, `unsafe`: launch with 32x8-thread blocks
    /// and a (ceil(w/32), ceil(h/32)) grid. Its contract requires both matrices to fit their
    /// slices (checked at every launch), which proves its guarded accesses in bounds.
    #[kernel]
    #[launch_bounds(256)]
    #[launch_contract(block = (32, 8, 1), requires = (input.len() >= w * h, output.len() >= w * h))]
    pub unsafe fn transpose_raw(input: &[f32], output: &mut [f32], w: usize, h: usize) {
        let tile = SharedArray::<f32, { TILE * (TILE + 1) }>::uninit();
        let tx = thread::threadIdx_x() as usize;
        let ty = thread::threadIdx_y() as usize;
        let bx = thread::blockIdx_x() as usize * TILE;
        let by = thread::blockIdx_y() as usize * TILE;
        let x = bx + tx;
        for j in (0..TILE).step_by(8) {
            let y = by + ty + j;
            if x < w && y < h {
                unsafe { tile.set((ty + j) * (TILE + 1) + tx, input[y * w + x]) };
            }
        }
        sync_threads();
        let x = by + tx;
        for j in (0..TILE).step_by(8) {
            let y = bx + ty + j;
            if x < h && y < w {
                output[y * h + x] = unsafe { tile.get(tx * (TILE + 1) + ty + j) };
            }
        }
    }
}

/// Checks every element of `out` (w rows of h) bit for bit against `input` (h rows of w)
/// transposed; exits with `FAILED` on the first wrong one.
fn check(ctx: &CudaContext, name: &str, input: &[f32], out: &[f32], w: usize, h: usize) {
    let mut wrong = 0usize;
    let mut first = None;
    for r in 0..h {
        for c in 0..w {
            if out[c * h + r].to_bits() != input[r * w + c].to_bits() {
                wrong += 1;
                first.get_or_insert((r, c));
            }
        }
    }
    if let Some((r, c)) = first {
        eprintln!(
            "FAILED: {name} {h}x{w} on {}: {wrong} of {} elements wrong; first: out[{c}][{r}] \
             = {}, want in[{r}][{c}] = {}",
            ctx.backend(),
            w * h,
            out[c * h + r],
            input[r * w + c]
        );
        std::process::exit(1);
    }
}

/// Transposes a random `h` x `w` matrix with the safe kernel and its unsafe twin, checks
/// every element of both bit for bit, and times both over `reps` launches when `reps > 0`.
fn run(
    ctx: &CudaContext,
    module: &kernels::Module,
    rng: &mut SmallRng,
    w: usize,
    h: usize,
    reps: usize,
) -> Result<(), Box<dyn std::error::Error>> {
    let stream = ctx.default_stream();
    let input: Vec<f32> = (0..w * h)
        .map(|_| rng.random_range(-1000.0f32..1000.0))
        .collect();
    let din = DeviceBuffer::from_host(&stream, &input)?;
    // Poisoned, so an element a kernel fails to write cannot pass the check.
    let mut dout = DeviceBuffer::from_host(&stream, &vec![f32::NAN; w * h])?;
    let prepared = module.prepare_transpose(LaunchConfig {
        grid_dim: (h.div_ceil(32) as u32, w.div_ceil(32) as u32, 1),
        block_dim: (32, 8, 1),
        shared_mem_bytes: 0,
    })?;
    let launch =
        |dout: &mut DeviceBuffer<f32>| module.transpose(&stream, &prepared, &din, dout, w, h);
    let raw_config = LaunchConfig {
        grid_dim: (w.div_ceil(32) as u32, h.div_ceil(32) as u32, 1),
        block_dim: (32, 8, 1),
        shared_mem_bytes: 0,
    };
    let launch_raw = |dout: &mut DeviceBuffer<f32>| {
        // SAFETY: block (bx, by) writes only the output tile at rows bx*32.., columns by*32..,
        // inside the w x h output, so no two threads write one element; the block shape and
        // grid are the ones the kernel is written for.
        unsafe { module.transpose_raw(&stream, raw_config, &din, dout, w, h) }
    };
    for (name, safe) in [("transpose", true), ("transpose_raw", false)] {
        let mut dout = DeviceBuffer::from_host(&stream, &vec![f32::NAN; w * h])?;
        if safe {
            launch(&mut dout)?;
        } else {
            launch_raw(&mut dout)?;
        }
        check(ctx, name, &input, &dout.to_host_vec(&stream)?, w, h);
    }
    if reps > 0 {
        let raw_ms = median_ms(&stream, 5, reps, || launch_raw(&mut dout))?;
        println!(
            "cuprum transpose_raw (unsafe twin) {h}x{w} median {raw_ms:.4} ms {:.1} GB/s",
            8.0 * (w * h) as f64 / (raw_ms * 1e6)
        );
    }
    if reps > 0 {
        let ms = median_ms(&stream, 5, reps, || launch(&mut dout))?;
        println!(
            "cuprum transpose {h}x{w} median {ms:.4} ms {:.1} GB/s",
            8.0 * (w * h) as f64 / (ms * 1e6)
        );
        record::result(
            "transpose",
            &format!("{h}x{w}"),
            8.0 * (w * h) as f64,
            0.0,
            ms,
        );
    }
    println!(
        "PASSED: transpose {h}x{w} on {}, all {} elements exact (safe kernel and unsafe twin)",
        ctx.backend(),
        w * h
    );
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let ctx = CudaContext::new(0)?;
    let module = kernels::load(&ctx)?;
    let seed: u64 = rand::random();
    let mut rng = SmallRng::seed_from_u64(seed);
    if size::benchmark_sizes(ctx.backend() == BackendKind::Cuda) {
        run(&ctx, &module, &mut rng, 3001, 1999, 0)?; // partial tiles on both edges
        run(&ctx, &module, &mut rng, 8192, 8192, 100)?;
    } else {
        run(&ctx, &module, &mut rng, 1000, 627, 0)?;
        run(&ctx, &module, &mut rng, 37, 70, 0)?;
    }
    Ok(())
}
