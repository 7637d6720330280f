//! The safe output patterns beyond one element per thread, each in the kernel it exists for:
//! a saxpy with four elements per thread (`chunk_mut`, with a ragged tail), a grid-stride
//! scale over more elements than threads (`grid_stride_mut`), per-block sums written by each
//! block's first thread (`block_result_mut`, in 1-D and 2-D grids), a register-blocked matrix
//! multiply where each thread writes a 4 x 4 tile (`tile_mut`), and in-place updates
//! (`update`, and reading through the `&mut T` a pattern hands out), and block tiles
//! (`block_tile_mut`: which thread gets each element, and a row per block). All are safe kernels,
//! launched through `prepare_*`; the emulator's second-writer detector watches every launch.
//! Each runs against a plain-Rust reference on fresh random inputs (the seed is printed), at
//! ragged sizes, over outputs poisoned first, and every element is checked.

mod common;

use common::{assert_same, blocks_for, ctx};
use cuprum::simt::{DisjointSlice, SharedArray, kernel, launch_contract, sync_threads, thread};
use cuprum::{DeviceBuffer, LaunchConfig, LaunchConfig1D, cuda_module};
use cuprum_testkit::poison::poisoned;
use cuprum_testkit::random::{random, rng};
use rand::Rng;

/// Threads per block of the 1-D kernels below.
const BLOCK: u32 = 128;

#[cuda_module]
mod kernels {
    use super::*;

    /// `out = a * x + y`, four consecutive elements per thread: element `4i + j` is thread
    /// `i`'s; the last thread with elements may have fewer than four.
    #[kernel]
    #[launch_contract(domain = 1, block = (128, 1, 1))]
    pub fn saxpy4(a: f32, x: &[f32], y: &[f32], mut out: DisjointSlice<f32>) {
        let i = thread::index_1d();
        for (j, o) in out.chunk_mut::<4>(i) {
            let k = 4 * i.get() + j;
            *o = a * x[k] + y[k];
        }
    }

    /// `out = x * a` over any length with a fixed grid: a grid-stride loop.
    #[kernel]
    #[launch_contract(domain = 1, block = (128, 1, 1))]
    pub fn scale_strided(a: f32, x: &[f32], mut out: DisjointSlice<f32>) {
        for (k, o) in out.grid_stride_mut() {
            *o = x[k] * a;
        }
    }

    /// Each block's sum of its 128 elements of `x` (wrapping), reduced in shared memory and
    /// written by the block's first thread.
    #[kernel]
    #[launch_contract(domain = 1, block = (128, 1, 1))]
    pub fn block_sums(x: &[u32], mut sums: DisjointSlice<u32>) {
        let s = SharedArray::<u32, 128>::uninit();
        let tid = thread::threadIdx_x() as usize;
        let i = thread::index_1d().get();
        // SAFETY: thread `tid` alone writes slot `tid` before the barrier.
        unsafe { s.set(tid, if i < x.len() { x[i] } else { 0 }) };
        sync_threads();
        let mut half = 64;
        while half > 0 {
            if tid < half {
                // SAFETY: slot `tid` is this thread's; slot `tid + half` is no writer's in
                // this step, and barriers separate the steps.
                unsafe { s.set(tid, s.get(tid).wrapping_add(s.get(tid + half))) };
            }
            sync_threads();
            half /= 2;
        }
        if let Some(o) = sums.block_result_mut() {
            // SAFETY: the last barrier ordered the last write of slot 0 before this read.
            *o = unsafe { s.get(0) };
        }
    }

    /// In a 2-D grid, each block's first thread writes the block's coordinates at the
    /// block's linear index (`x + gridDim_x * y`).
    #[kernel]
    #[launch_contract(domain = 2, block = (8, 4, 1))]
    pub fn block_marks(mut marks: DisjointSlice<u32>) {
        if let Some(o) = marks.block_result_mut() {
            *o = thread::blockIdx_y() * 1000 + thread::blockIdx_x();
        }
    }

    /// `c = a * b` for a row-major `m` x `k` times `k` x `n`: thread (x, y) accumulates the
    /// 4 x 4 tile at rows `4y..`, columns `4x..` in registers and writes it with `tile_mut`.
    #[kernel]
    #[launch_contract(domain = 2, block = (8, 8, 1))]
    pub fn gemm_4x4(a: &[f32], b: &[f32], m: usize, n: usize, k: usize, mut c: DisjointSlice<f32>) {
        let idx = thread::index_2d();
        let (row0, col0) = (4 * idx.y(), 4 * idx.x());
        let mut acc = [[0.0f32; 4]; 4];
        for p in 0..k {
            for r in 0..4 {
                for q in 0..4 {
                    if row0 + r < m && col0 + q < n {
                        acc[r][q] += a[(row0 + r) * k + p] * b[p * n + col0 + q];
                    }
                }
            }
        }
        for (r, q, o) in c.tile_mut::<4, 4>(idx, n) {
            *o = acc[r][q];
        }
    }

    /// `x = x * a + b` in place, through `update`.
    #[kernel]
    #[launch_contract(domain = 1, block = (128, 1, 1))]
    pub fn affine_in_place(a: f32, b: f32, mut x: DisjointSlice<f32>) {
        x.update(thread::index_1d(), |v| v * a + b);
    }

    /// `x = x * a + b` in place, two elements per thread, reading through the references
    /// `chunk_mut` hands out.
    #[kernel]
    #[launch_contract(domain = 1, block = (128, 1, 1))]
    pub fn affine_pairs_in_place(a: f32, b: f32, mut x: DisjointSlice<f32>) {
        for (_, v) in x.chunk_mut::<2>(thread::index_1d()) {
            *v = *v * a + b;
        }
    }

    /// Each thread marks the elements `block_tile_mut` gives it with its block's linear
    /// index and its own linear index in the block (`b * 1000 + t`) and the offsets in the tile
    /// it was handed. The block has two layers along z: the second owns nothing.
    #[kernel]
    #[launch_contract(domain = 1, block = (8, 4, 2))]
    pub fn mark_block_tiles(
        tile_rows: usize,
        tile_cols: usize,
        width: usize,
        mut out: DisjointSlice<[u32; 3]>,
    ) {
        let b = thread::blockIdx_x();
        let t = thread::threadIdx_x() + 8 * (thread::threadIdx_y() + 4 * thread::threadIdx_z());
        for (r, c, o) in out.block_tile_mut(tile_rows, tile_cols, width) {
            *o = [b * 1000 + t, r as u32, c as u32];
        }
    }

    /// `mark_block_tiles` over a grid of up to three dimensions: the mark's block number is
    /// the block's linear index `x + gx * (y + gy * z)`.
    #[kernel]
    #[launch_contract(domain = 3, block = (8, 4, 2))]
    pub fn mark_block_tiles_3d(
        tile_rows: usize,
        tile_cols: usize,
        width: usize,
        mut out: DisjointSlice<[u32; 3]>,
    ) {
        let b = thread::blockIdx_x()
            + thread::gridDim_x()
                * (thread::blockIdx_y() + thread::gridDim_y() * thread::blockIdx_z());
        let t = thread::threadIdx_x() + 8 * (thread::threadIdx_y() + 4 * thread::threadIdx_z());
        for (r, c, o) in out.block_tile_mut(tile_rows, tile_cols, width) {
            *o = [b * 1000 + t, r as u32, c as u32];
        }
    }

    /// A row per block, as llm.c's softmax writes it: block `b` scales row `b` of `x` by
    /// `a`, each thread every `block_dim`-th element of the row.
    #[kernel]
    #[launch_contract(domain = 1, block = (64, 1, 1))]
    pub fn scale_rows(a: f32, x: &[[f32; 2]], cols: usize, mut y: DisjointSlice<[f32; 2]>) {
        let row = thread::blockIdx_x() as usize;
        for (_, c, o) in y.block_tile_mut(1, cols, cols) {
            let v = x[row * cols + c];
            *o = [v[0] * a, v[1] * a];
        }
    }
}

/// What `mark_block_tiles` leaves under `block_tile_mut(th, tw, w)` over `blocks` blocks of
/// 8 x 4 x 2 threads: `[b * 1000 + t, r, c]` of each element's owner (`r`, `c` its offsets
/// in the tile), or the poison where
/// nobody owns it.
fn block_tile_owners(th: usize, tw: usize, w: usize, len: usize, blocks: usize) -> Vec<[u32; 3]> {
    let mut out = vec![POISON3; len];
    if th == 0 || tw == 0 || w == 0 {
        return out;
    }
    let per_row = w.div_ceil(tw);
    for b in 0..blocks {
        let (tr, tc) = (b / per_row, b % per_row);
        for ir in 0..th {
            for ic in 0..tw {
                let (row, col) = (tr * th + ir, tc * tw + ic);
                if col < w && row * w + col < len {
                    let t = (ic % 8) + 8 * (ir % 4);
                    out[row * w + col] = [(b * 1000 + t) as u32, ir as u32, ic as u32];
                }
            }
        }
    }
    out
}

/// The poison of `[u32; 3]` outputs.
const POISON3: [u32; 3] = [0xdead_beef; 3];

#[test]
fn block_tiles_give_each_element_to_the_thread_the_map_names() -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let mut rng = rng("block_tiles");
    let mut cases = vec![
        (4, 8, 8, 64, 2),
        (0, 3, 5, 10, 2),
        (3, 0, 5, 10, 2),
        (2, 2, 0, 10, 3),
    ];
    for _ in 0..12 {
        let (th, tw, w) = (
            rng.random_range(1..12usize),
            rng.random_range(1..20usize),
            rng.random_range(1..50usize),
        );
        // Lengths that end inside a row, and more blocks than tiles.
        let len = rng.random_range(1..(th * w * 4).max(2));
        cases.push((th, tw, w, len, rng.random_range(1..12usize)));
    }
    for (th, tw, w, len, blocks) in cases {
        let mut out = DeviceBuffer::from_host(&stream, &vec![POISON3; len])?;
        let p = m.prepare_mark_block_tiles(LaunchConfig {
            grid_dim: (blocks as u32, 1, 1),
            block_dim: (8, 4, 2),
            shared_mem_bytes: 0,
        })?;
        m.mark_block_tiles(&stream, &p, th, tw, w, &mut out)?;
        assert_same(
            &format!("block tiles {th}x{tw} of width {w}, length {len}, {blocks} blocks"),
            &out.to_host_vec(&stream)?,
            &block_tile_owners(th, tw, w, len, blocks),
        );
    }
    Ok(())
}

#[test]
fn block_tiles_over_grids_of_three_dimensions() -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let mut rng = rng("block_tiles_3d");
    // (th, tw, w, len, grid): grids with as many blocks across x as tiles per row (the
    // tile is then (y + gy * z, x), no division) and with other counts, tiles per row of one,
    // lengths that end inside a row or leave rows without blocks.
    let mut cases = vec![
        (4, 8, 20, 4 * 20 * 6, (3, 2, 3)),
        (4, 8, 20, 4 * 20 * 6 - 7, (3, 3, 2)),
        (3, 16, 10, 3 * 10 * 4, (1, 2, 2)),
        (2, 5, 23, 2 * 23 * 5, (2, 3, 2)),
        (0, 3, 5, 10, (2, 2, 1)),
        (3, 4, 0, 10, (1, 2, 2)),
    ];
    for _ in 0..10 {
        let (th, tw, w) = (
            rng.random_range(1..9usize),
            rng.random_range(1..20usize),
            rng.random_range(1..50usize),
        );
        let per_row = w.div_ceil(tw);
        let gx = if rng.random_bool(0.7) {
            per_row
        } else {
            rng.random_range(1..6usize)
        };
        let grid = (gx, rng.random_range(1..4usize), rng.random_range(1..4usize));
        let blocks = grid.0 * grid.1 * grid.2;
        let len = rng.random_range(1..(th * w * blocks.div_ceil(per_row) + 2 * w).max(2));
        cases.push((th, tw, w, len, grid));
    }
    for (th, tw, w, len, (gx, gy, gz)) in cases {
        let mut out = DeviceBuffer::from_host(&stream, &vec![POISON3; len])?;
        let p = m.prepare_mark_block_tiles_3d(LaunchConfig {
            grid_dim: (gx as u32, gy as u32, gz as u32),
            block_dim: (8, 4, 2),
            shared_mem_bytes: 0,
        })?;
        m.mark_block_tiles_3d(&stream, &p, th, tw, w, &mut out)?;
        assert_same(
            &format!("block tiles {th}x{tw} of width {w}, length {len}, grid {gx}x{gy}x{gz}"),
            &out.to_host_vec(&stream)?,
            &block_tile_owners(th, tw, w, len, gx * gy * gz),
        );
    }
    Ok(())
}

#[test]
fn a_block_writes_a_row_of_aggregates_with_strided_threads() -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let mut rng = rng("scale_rows");
    for (rows, cols) in [(1usize, 1usize), (3, 64), (5, 200), (17, 33)] {
        let flat = random(&mut rng, rows * cols * 2, -10.0f32, 10.0);
        let x: Vec<[f32; 2]> = flat.chunks(2).map(|c| [c[0], c[1]]).collect();
        let a = rng.random_range(-3.0f32..3.0);
        let dx = DeviceBuffer::from_host(&stream, &x)?;
        let mut dy = DeviceBuffer::from_host(&stream, &vec![[f32::NAN; 2]; rows * cols])?;
        let p = m.prepare_scale_rows(LaunchConfig1D::new(rows as u32, 64, 0))?;
        m.scale_rows(&stream, &p, a, &dx, cols, &mut dy)?;
        let want: Vec<[f32; 2]> = x.iter().map(|v| [v[0] * a, v[1] * a]).collect();
        assert_same(
            &format!("scale_rows {rows}x{cols}"),
            &dy.to_host_vec(&stream)?,
            &want,
        );
    }
    Ok(())
}

/// Ragged lengths: below one chunk, not a multiple of 4 or of a block, several blocks.
const SIZES: [usize; 7] = [1, 3, 4, 5, 511, 1001, 70_003];

#[test]
fn chunks_of_four_saxpy_with_a_ragged_tail() -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let mut rng = rng("chunks_of_four_saxpy");
    for n in SIZES {
        let (x, y) = (
            random(&mut rng, n, -10.0f32, 10.0),
            random(&mut rng, n, -10.0f32, 10.0),
        );
        let a = rng.random_range(-3.0f32..3.0);
        let (dx, dy) = (
            DeviceBuffer::from_host(&stream, &x)?,
            DeviceBuffer::from_host(&stream, &y)?,
        );
        let mut out = DeviceBuffer::from_host(&stream, &poisoned::<f32>(n))?;
        // One extra block: threads past the end get no chunk.
        let threads = n.div_ceil(4);
        let p = m.prepare_saxpy4(LaunchConfig1D::new(
            blocks_for(threads, BLOCK) + 1,
            BLOCK,
            0,
        ))?;
        m.saxpy4(&stream, &p, a, &dx, &dy, &mut out)?;
        let want: Vec<f32> = x.iter().zip(&y).map(|(x, y)| a * x + y).collect();
        assert_same(&format!("saxpy4 n={n}"), &out.to_host_vec(&stream)?, &want);
    }
    Ok(())
}

#[test]
fn whole_chunks_are_stored_with_vector_stores() -> Result<(), Box<dyn std::error::Error>> {
    let ir = kernels::ir()?;
    let ptx = cuprum_ptx::write_module(&ir, cuprum_ptx::Target::Sm90)?;
    let saxpy = ptx
        .split(".entry")
        .find(|k| k.trim_start().starts_with("saxpy4"))
        .ok_or("no saxpy4 in the PTX")?;
    assert!(saxpy.contains("st.global.v4.f32"), "{saxpy}");
    Ok(())
}

#[test]
fn grid_stride_scale_covers_more_elements_than_threads() -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let mut rng = rng("grid_stride_scale");
    for n in SIZES {
        let x = random(&mut rng, n, -100.0f32, 100.0);
        let a = rng.random_range(-3.0f32..3.0);
        let dx = DeviceBuffer::from_host(&stream, &x)?;
        let mut out = DeviceBuffer::from_host(&stream, &poisoned::<f32>(n))?;
        // A few blocks whatever the length: most threads take several strides.
        let blocks = rng.random_range(1..4);
        let p = m.prepare_scale_strided(LaunchConfig1D::new(blocks, BLOCK, 0))?;
        m.scale_strided(&stream, &p, a, &dx, &mut out)?;
        let want: Vec<f32> = x.iter().map(|x| x * a).collect();
        assert_same(
            &format!("scale_strided n={n} blocks={blocks}"),
            &out.to_host_vec(&stream)?,
            &want,
        );
    }
    Ok(())
}

#[test]
fn block_sums_are_written_by_each_blocks_first_thread() -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let mut rng = rng("block_sums");
    for n in SIZES {
        let x = random(&mut rng, n, 0u32, u32::MAX);
        let blocks = blocks_for(n, BLOCK) as usize;
        let dx = DeviceBuffer::from_host(&stream, &x)?;
        // One slot more than blocks: nobody may write it.
        let mut sums = DeviceBuffer::from_host(&stream, &poisoned::<u32>(blocks + 1))?;
        let p = m.prepare_block_sums(LaunchConfig1D::new(blocks as u32, BLOCK, 0))?;
        m.block_sums(&stream, &p, &dx, &mut sums)?;
        let mut want: Vec<u32> = x
            .chunks(BLOCK as usize)
            .map(|c| c.iter().fold(0u32, |s, v| s.wrapping_add(*v)))
            .collect();
        want.push(poisoned::<u32>(1)[0]);
        assert_same(
            &format!("block_sums n={n}"),
            &sums.to_host_vec(&stream)?,
            &want,
        );
    }
    Ok(())
}

#[test]
fn block_results_of_a_2d_grid_land_at_each_blocks_linear_index() -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let mut rng = rng("block_marks");
    for _ in 0..4 {
        let (gx, gy) = (rng.random_range(1..9u32), rng.random_range(1..7u32));
        // Fewer slots than blocks at times: the blocks past the end write nothing.
        let len = rng.random_range(1..=(gx * gy + 2)) as usize;
        let mut marks = DeviceBuffer::from_host(&stream, &poisoned::<u32>(len))?;
        let p = m.prepare_block_marks(LaunchConfig {
            grid_dim: (gx, gy, 1),
            block_dim: (8, 4, 1),
            shared_mem_bytes: 0,
        })?;
        m.block_marks(&stream, &p, &mut marks)?;
        let poison = poisoned::<u32>(1)[0];
        let want: Vec<u32> = (0..len as u32)
            .map(|e| {
                if e < gx * gy {
                    (e / gx) * 1000 + e % gx
                } else {
                    poison
                }
            })
            .collect();
        assert_same(
            &format!("block_marks grid ({gx}, {gy}) len {len}"),
            &marks.to_host_vec(&stream)?,
            &want,
        );
    }
    Ok(())
}

#[test]
fn register_blocked_gemm_writes_four_by_four_tiles() -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let module = kernels::load(ctx)?;
    let mut rng = rng("gemm_4x4");
    for (m, n, k) in [
        (1, 1, 1),
        (5, 3, 7),
        (33, 47, 19),
        (64, 32, 8),
        (70, 101, 13),
    ] {
        // Small integers: every sum is exact, whatever the order.
        let small = |rng: &mut rand::rngs::StdRng, len: usize| -> Vec<f32> {
            (0..len).map(|_| rng.random_range(-8..=8) as f32).collect()
        };
        let (a, b) = (small(&mut rng, m * k), small(&mut rng, k * n));
        let (da, db) = (
            DeviceBuffer::from_host(&stream, &a)?,
            DeviceBuffer::from_host(&stream, &b)?,
        );
        let mut c = DeviceBuffer::from_host(&stream, &poisoned::<f32>(m * n))?;
        let grid = (
            blocks_for(n.div_ceil(4), 8),
            blocks_for(m.div_ceil(4), 8),
            1,
        );
        let p = module.prepare_gemm_4x4(LaunchConfig {
            grid_dim: grid,
            block_dim: (8, 8, 1),
            shared_mem_bytes: 0,
        })?;
        module.gemm_4x4(&stream, &p, &da, &db, m, n, k, &mut c)?;
        let want: Vec<f32> = (0..m * n)
            .map(|e| (0..k).map(|p| a[(e / n) * k + p] * b[p * n + e % n]).sum())
            .collect();
        assert_same(
            &format!("gemm_4x4 {m}x{n}x{k}"),
            &c.to_host_vec(&stream)?,
            &want,
        );
    }
    Ok(())
}

#[test]
fn in_place_updates_read_only_the_threads_own_elements() -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let mut rng = rng("affine_in_place");
    for n in SIZES {
        let x = random(&mut rng, n, -100.0f32, 100.0);
        let (a, b) = (
            rng.random_range(-3.0f32..3.0),
            rng.random_range(-3.0f32..3.0),
        );
        // Two roundings, as the kernel's separate `*` and `+` (cuprum never contracts to fma).
        let want: Vec<f32> = x.iter().map(|v| v * a + b).collect();

        let mut dx = DeviceBuffer::from_host(&stream, &x)?;
        let p =
            m.prepare_affine_in_place(LaunchConfig1D::new(blocks_for(n, BLOCK) + 1, BLOCK, 0))?;
        m.affine_in_place(&stream, &p, a, b, &mut dx)?;
        assert_same(
            &format!("affine_in_place n={n}"),
            &dx.to_host_vec(&stream)?,
            &want,
        );

        let mut dx = DeviceBuffer::from_host(&stream, &x)?;
        let blocks = blocks_for(n.div_ceil(2), BLOCK);
        let p = m.prepare_affine_pairs_in_place(LaunchConfig1D::new(blocks, BLOCK, 0))?;
        m.affine_pairs_in_place(&stream, &p, a, b, &mut dx)?;
        assert_same(
            &format!("affine_pairs_in_place n={n}"),
            &dx.to_host_vec(&stream)?,
            &want,
        );
    }
    Ok(())
}
