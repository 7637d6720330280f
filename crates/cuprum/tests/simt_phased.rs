//! Safe shared memory (`cuprum::simt::phased`) in the kernels it exists for, none of them
//! `unsafe`: a tiled matrix multiply (two 2-D tiles per step, swapped phases in a loop), a
//! transpose through a padded tile, a block reduction through per-warp partials, a
//! histogram counted in an atomic phase, nbody with float4 bodies staged in shared tiles, a
//! tree
//! reduction in the split phase (one barrier per level, block sizes 64 to 1024; its run-time
//! checks are in `device_split_checks.rs`, alone in their binary), a 1-D
//! stencil whose tile has a halo (threads own two elements), and 2-D tiles larger than the
//! block with and without a launch contract (the unrolled and the looping ownership); and
//! the warp numbering that `warp_slot` and `warp_id` share. Each runs against a plain-Rust
//! reference on fresh random inputs, at ragged sizes, over outputs
//! poisoned first, and every element is checked; the emulator's race, uninitialized-read and
//! barrier detectors watch every launch.

mod common;

use common::{assert_same, blocks_for, ctx, integrate_bodies_reference};
use cuprum::simt::{
    AtomicSlice, DisjointSlice, SharedArray, SharedRead, SharedWrite, SharedWrite2d, SyncPhases,
    kernel, launch_contract, sync_threads, thread, warp,
};
use cuprum::{DeviceBuffer, LaunchConfig, LaunchConfig1D, cuda_module};
use cuprum_testkit::poison::poisoned;
use cuprum_testkit::random::{random, rng};
use rand::Rng;

use kernels::{BS, RADIUS, STENCIL_BLOCK, TILE};

#[cuda_module]
mod kernels {
    use super::*;

    /// Each block's sum of its `B` elements of `x` (zeros past the end), wrapping, by a tree
    /// in the split phase: at the level with boundary `s` thread `k < s` adds element `s + k`
    /// into its own element `k`; one barrier per level, down to `s = 0`.
    #[kernel]
    #[launch_contract(domain = 1, block = (B, 1, 1))]
    pub fn split_tree_sum<const B: u32>(x: &[u32], mut sums: DisjointSlice<u32>) {
        let i = thread::index_1d().get();
        let mut tile = SharedWrite::<u32, { B as usize }>::new();
        for (_, slot) in tile.mine() {
            *slot = if i < x.len() { x[i] } else { 0 };
        }
        let mut s = B / 2;
        let mut split = tile.sync_split(s as usize);
        while s > 0 {
            for (k, slot) in split.mine_below() {
                let mine = *slot;
                *slot = mine.wrapping_add(split.above(k));
            }
            s >>= 1;
            split = split.sync_split(s as usize);
        }
        // Boundary 0: every element is at or above it.
        let total = split.get(0);
        if let Some(o) = sums.block_result_mut() {
            *o = total;
        }
    }

    /// `split_tree_sum` for 128 elements with the levels written out with constant boundaries:
    /// the compiler knows each boundary, and its checks fold away.
    #[kernel]
    #[launch_contract(domain = 1, block = (128, 1, 1))]
    pub fn split_constant_tree(x: &[u32], mut sums: DisjointSlice<u32>) {
        let i = thread::index_1d().get();
        let mut tile = SharedWrite::<u32, 128>::new();
        for (_, slot) in tile.mine() {
            *slot = if i < x.len() { x[i] } else { 0 };
        }
        let mut split = tile.sync_split(64);
        for (k, slot) in split.mine_below() {
            let mine = *slot;
            *slot = mine.wrapping_add(split.above(k));
        }
        split = split.sync_split(32);
        for (k, slot) in split.mine_below() {
            let mine = *slot;
            *slot = mine.wrapping_add(split.above(k));
        }
        split = split.sync_split(16);
        for (k, slot) in split.mine_below() {
            let mine = *slot;
            *slot = mine.wrapping_add(split.above(k));
        }
        split = split.sync_split(8);
        for (k, slot) in split.mine_below() {
            let mine = *slot;
            *slot = mine.wrapping_add(split.above(k));
        }
        split = split.sync_split(4);
        for (k, slot) in split.mine_below() {
            let mine = *slot;
            *slot = mine.wrapping_add(split.above(k));
        }
        split = split.sync_split(2);
        for (k, slot) in split.mine_below() {
            let mine = *slot;
            *slot = mine.wrapping_add(split.above(k));
        }
        split = split.sync_split(1);
        for (k, slot) in split.mine_below() {
            let mine = *slot;
            *slot = mine.wrapping_add(split.above(k));
        }
        split = split.sync_split(0);
        let total = split.above(0);
        if let Some(o) = sums.block_result_mut() {
            *o = total;
        }
    }

    /// The matrix multiply's tile edge (and block edge).
    pub const BS: usize = 16;
    /// The transpose's tile edge (and block edge).
    pub const TILE: usize = 16;
    /// The stencil's radius and block size.
    pub const RADIUS: usize = 3;
    pub const STENCIL_BLOCK: usize = 128;

    /// `c = a * b` (`a` is `ha x wa`, `b` is `wa x wb`), any sizes, through `BS x BS` tiles
    /// of both in shared memory: each thread loads one element of each tile, the block
    /// waits, each thread reads a row of one and a column of the other.
    #[kernel]
    #[launch_contract(domain = 2, block = (16, 16, 1))]
    pub fn matmul_tiled(
        a: &[f32],
        b: &[f32],
        ha: usize,
        wa: usize,
        wb: usize,
        mut c: DisjointSlice<f32>,
    ) {
        let idx = thread::index_2d();
        let row0 = thread::blockIdx_y() as usize * BS;
        let col0 = thread::blockIdx_x() as usize * BS;
        let tx = thread::threadIdx_x() as usize;
        let ty = thread::threadIdx_y() as usize;
        let mut a_tile = SharedWrite2d::<f32, BS, BS>::new();
        let mut b_tile = SharedWrite2d::<f32, BS, BS>::new();
        let mut acc = 0.0f32;
        for k0 in (0..wa).step_by(BS) {
            for (r, k, slot) in a_tile.mine() {
                let (gr, gk) = (row0 + r, k0 + k);
                *slot = if gr < ha && gk < wa {
                    a[gr * wa + gk]
                } else {
                    0.0
                };
            }
            for (k, col, slot) in b_tile.mine() {
                let (gk, gc) = (k0 + k, col0 + col);
                *slot = if gk < wa && gc < wb {
                    b[gk * wb + gc]
                } else {
                    0.0
                };
            }
            let (a_read, b_read) = (a_tile, b_tile).sync();
            for k in 0..BS {
                acc += a_read[ty][k] * b_read[k][tx];
            }
            (a_tile, b_tile) = (a_read, b_read).sync();
        }
        if let Some(out) = c.get_mut_2d(idx, wb) {
            *out = acc;
        }
    }

    /// The same multiply with a raw `SharedArray` and `unsafe`, as CUDA writes it: the
    /// baseline the safe version's machine code is compared with.
    #[kernel]
    #[launch_contract(block = (16, 16, 1))]
    pub unsafe fn matmul_tiled_raw(
        a: &[f32],
        b: &[f32],
        ha: usize,
        wa: usize,
        wb: usize,
        c: &mut [f32],
    ) {
        let row0 = thread::blockIdx_y() as usize * BS;
        let col0 = thread::blockIdx_x() as usize * BS;
        let tx = thread::threadIdx_x() as usize;
        let ty = thread::threadIdx_y() as usize;
        let a_tile = SharedArray::<f32, { BS * BS }>::uninit();
        let b_tile = SharedArray::<f32, { BS * BS }>::uninit();
        let mut acc = 0.0f32;
        for k0 in (0..wa).step_by(BS) {
            let (gr, gk) = (row0 + ty, k0 + tx);
            a_tile.set(
                ty * BS + tx,
                if gr < ha && gk < wa {
                    a[gr * wa + gk]
                } else {
                    0.0
                },
            );
            let (gk, gc) = (k0 + ty, col0 + tx);
            b_tile.set(
                ty * BS + tx,
                if gk < wa && gc < wb {
                    b[gk * wb + gc]
                } else {
                    0.0
                },
            );
            sync_threads();
            for k in 0..BS {
                acc += a_tile.get(ty * BS + k) * b_tile.get(k * BS + tx);
            }
            sync_threads();
        }
        let (row, col) = (row0 + ty, col0 + tx);
        if row < ha && col < wb {
            c[row * wb + col] = acc;
        }
    }

    /// `t` (`cols x rows`) = `a` (`rows x cols`) transposed. Block `(bx, by)` loads the
    /// input tile at rows `bx * TILE..`, columns `by * TILE..` with coalesced reads, and
    /// writes the output tile at its own position with coalesced writes, reading the tile
    /// down a column: the padding column keeps those reads in distinct banks.
    #[kernel]
    #[launch_contract(domain = 2, block = (16, 16, 1))]
    pub fn transpose_tiled(a: &[f32], rows: usize, cols: usize, mut t: DisjointSlice<f32>) {
        let mut tile = SharedWrite2d::<f32, TILE, { TILE + 1 }>::new();
        let in_row0 = thread::blockIdx_x() as usize * TILE;
        let in_col0 = thread::blockIdx_y() as usize * TILE;
        for (r, c, slot) in tile.mine() {
            let (ir, ic) = (in_row0 + r, in_col0 + c);
            if c < TILE && ir < rows && ic < cols {
                *slot = a[ir * cols + ic];
            }
        }
        let tile = tile.sync();
        let idx = thread::index_2d();
        let (tx, ty) = (
            thread::threadIdx_x() as usize,
            thread::threadIdx_y() as usize,
        );
        if let Some(out) = t.get_mut_2d(idx, rows) {
            *out = tile[tx][ty];
        }
    }

    /// cuda-samples' `transposeNoBankConflicts`: a 32 x 32 tile (one padding column) per
    /// block of 32 x 8 threads, each loading and storing four rows, both coalesced.
    /// `t` (`cols x rows`) = `a` (`rows x cols`) transposed; block `(bx, by)` writes output
    /// tile `(by, bx)` and so reads input tile `(bx, by)`.
    #[kernel]
    #[launch_contract(domain = 2, block = (32, 8, 1))]
    pub fn transpose_no_bank_conflicts(
        a: &[f32],
        rows: usize,
        cols: usize,
        mut t: DisjointSlice<f32>,
    ) {
        let mut tile = SharedWrite2d::<f32, 32, 33>::new();
        let in_row0 = thread::blockIdx_x() as usize * 32;
        let in_col0 = thread::blockIdx_y() as usize * 32;
        for (r, c, slot) in tile.mine() {
            let (ir, ic) = (in_row0 + r, in_col0 + c);
            if c < 32 && ir < rows && ic < cols {
                *slot = a[ir * cols + ic];
            }
        }
        let tile = tile.sync();
        for (r, c, out) in t.block_tile_mut(32, 32, rows) {
            *out = tile[c][r];
        }
    }

    /// Each block's (wrapping) sum of its 256 elements of `x`: each warp reduces its 32 with
    /// shuffles, lane 0 of each leaves the warp's sum in the shared array, and after the
    /// barrier every warp adds the eight partials; the block's first thread writes them.
    #[kernel]
    #[launch_contract(domain = 1, block = (256, 1, 1))]
    pub fn block_sum(x: &[u32], mut sums: DisjointSlice<u32>) {
        let mut partials = SharedWrite::<u32, 8>::new();
        let i = thread::index_1d().get();
        let v = if i < x.len() { x[i] } else { 0 };
        let warp_total = warp::reduce_add(v);
        if let Some(slot) = partials.warp_slot() {
            *slot = warp_total;
        }
        let partials = partials.sync();
        let lane = (thread::threadIdx_x() % 32) as usize;
        let p = if lane < partials.len() {
            partials[lane]
        } else {
            0
        };
        let total = warp::reduce_add(p);
        if let Some(out) = sums.block_result_mut() {
            *out = total;
        }
    }

    /// cuda-samples' histogram256 in its shared-atomics form: each block zeroes a private
    /// 256-bin histogram (each thread its own bin), counts the four bytes of each word of its
    /// grid-stride share with shared atomics, and adds its bins to the global ones.
    #[kernel]
    #[launch_contract(domain = 1, block = (256, 1, 1))]
    pub fn histogram256(data: &[u32], bins: AtomicSlice<u32>) {
        let mut hist = SharedWrite::<u32, 256>::new();
        for (_, slot) in hist.mine() {
            *slot = 0;
        }
        let hist = hist.sync_atomic();
        let stride = (thread::gridDim_x() * thread::blockDim_x()) as usize;
        let mut i = thread::index_1d().get();
        while i < data.len() {
            let word = data[i];
            hist.fetch_add((word & 0xff) as usize, 1);
            hist.fetch_add(((word >> 8) & 0xff) as usize, 1);
            hist.fetch_add(((word >> 16) & 0xff) as usize, 1);
            hist.fetch_add((word >> 24) as usize, 1);
            i += stride;
        }
        let hist = hist.sync();
        let t = thread::threadIdx_x() as usize;
        bins.fetch_add(t, hist[t]);
    }

    /// cuda-samples' nbody `integrateBodies`: each block stages the bodies in tiles of 64
    /// float4s (`[x, y, z, mass]`) in shared memory, each thread one body per tile, and every
    /// thread sums its body's acceleration over the tile; the last tile is padded with
    /// massless bodies, which pull with zero force.
    #[kernel]
    #[launch_contract(domain = 1, block = (64, 1, 1))]
    pub fn integrate_bodies_tiled(
        pos: &[[f32; 4]],
        vel: &[[f32; 4]],
        dt: f32,
        damping: f32,
        softening: f32,
        mut new_pos: DisjointSlice<[f32; 4]>,
        mut new_vel: DisjointSlice<[f32; 4]>,
    ) {
        let i = thread::index_1d();
        let n = pos.len();
        let me = if i.get() < n {
            pos[i.get()]
        } else {
            [0.0f32; 4]
        };
        let mut acc = [0.0f32; 3];
        let mut shared_pos = SharedWrite::<[f32; 4], 64>::new();
        for tile0 in (0..n).step_by(64) {
            for (j, slot) in shared_pos.mine() {
                let g = tile0 + j;
                *slot = if g < n { pos[g] } else { [0.0f32; 4] };
            }
            let tile = shared_pos.sync();
            for j in 0..64 {
                let other = tile[j];
                let dx = other[0] - me[0];
                let dy = other[1] - me[1];
                let dz = other[2] - me[2];
                let d2 = dx * dx + dy * dy + dz * dz + softening;
                let inv = 1.0 / d2.sqrt();
                let s = other[3] * inv * inv * inv;
                acc[0] += dx * s;
                acc[1] += dy * s;
                acc[2] += dz * s;
            }
            shared_pos = tile.sync();
        }
        if let Some(p_out) = new_pos.get_mut(i) {
            if let Some(v_out) = new_vel.get_mut(i) {
                let v = vel[i.get()];
                let nv = [
                    (v[0] + acc[0] * dt) * damping,
                    (v[1] + acc[1] * dt) * damping,
                    (v[2] + acc[2] * dt) * damping,
                    v[3],
                ];
                *v_out = nv;
                *p_out = [
                    me[0] + nv[0] * dt,
                    me[1] + nv[1] * dt,
                    me[2] + nv[2] * dt,
                    me[3],
                ];
            }
        }
    }

    /// `y[i] = sum_k w[k] * x[i + k - RADIUS]` (zero outside `x`): each block loads its 128
    /// elements and a halo of `RADIUS` on each side, so threads own one or two elements of
    /// the tile.
    #[kernel]
    #[launch_contract(domain = 1, block = (128, 1, 1))]
    pub fn stencil_1d(x: &[f32], w: &[f32], mut y: DisjointSlice<f32>) {
        let mut tile = SharedWrite::<f32, { STENCIL_BLOCK + 2 * RADIUS }>::new();
        let base = thread::blockIdx_x() as usize * STENCIL_BLOCK;
        for (j, slot) in tile.mine() {
            let g = base + j;
            *slot = if g >= RADIUS && g - RADIUS < x.len() {
                x[g - RADIUS]
            } else {
                0.0
            };
        }
        let tile = tile.sync();
        let i = thread::index_1d();
        let t = thread::threadIdx_x() as usize;
        if let Some(out) = y.get_mut(i) {
            let mut acc = 0.0f32;
            for k in 0..(2 * RADIUS + 1) {
                acc += w[k] * tile[t + k];
            }
            *out = acc;
        }
    }

    /// The stencil's load phase in a helper, through `&mut` to the phased array.
    pub fn load_halo(
        tile: &mut SharedWrite<f32, { STENCIL_BLOCK + 2 * RADIUS }>,
        x: &[f32],
        base: usize,
    ) {
        for (j, slot) in tile.mine() {
            let g = base + j;
            *slot = if g >= RADIUS && g - RADIUS < x.len() {
                x[g - RADIUS]
            } else {
                0.0
            };
        }
    }

    /// The stencil's read of one output, through `&` to the phased array's read phase.
    pub fn weighted(
        tile: &SharedRead<f32, { STENCIL_BLOCK + 2 * RADIUS }>,
        w: &[f32],
        t: usize,
    ) -> f32 {
        let mut acc = 0.0f32;
        for k in 0..(2 * RADIUS + 1) {
            acc += w[k] * tile[t + k];
        }
        acc
    }

    /// `stencil_1d` with both phases in helpers that take the phased array by reference.
    #[kernel]
    #[launch_contract(domain = 1, block = (128, 1, 1))]
    pub fn stencil_1d_helpers(x: &[f32], w: &[f32], mut y: DisjointSlice<f32>) {
        let mut tile = SharedWrite::<f32, { STENCIL_BLOCK + 2 * RADIUS }>::new();
        load_halo(&mut tile, x, thread::blockIdx_x() as usize * STENCIL_BLOCK);
        let tile = tile.sync();
        let i = thread::index_1d();
        if let Some(out) = y.get_mut(i) {
            *out = weighted(&tile, w, thread::threadIdx_x() as usize);
        }
    }

    /// A 12 x 17 tile loaded by an 8 x 4 block (two columns and three rows per thread, some
    /// threads fewer), summed with weights by the block's first thread. The contract fixes
    /// the block, so ownership is unrolled.
    #[kernel]
    #[launch_contract(domain = 1, block = (8, 4, 1))]
    pub fn tile_checksum(x: &[u32], mut out: DisjointSlice<u32>) {
        let mut tile = SharedWrite2d::<u32, 12, 17>::new();
        let base = thread::blockIdx_x() as usize * 12 * 17;
        for (r, c, slot) in tile.mine() {
            *slot = x[base + r * 17 + c];
        }
        let tile = tile.sync();
        if let Some(o) = out.block_result_mut() {
            let mut acc = 0u32;
            for r in 0..12 {
                for c in 0..17 {
                    acc = acc.wrapping_add(tile.get(r, c).wrapping_mul((r * 17 + c + 1) as u32));
                }
            }
            *o = acc;
        }
    }

    /// The same without a launch contract: any block shape, so ownership loops by the
    /// block's size read at run time (threads with `z > 0` own nothing).
    #[kernel]
    pub fn tile_checksum_any_block(x: &[u32], mut out: DisjointSlice<u32>) {
        let mut tile = SharedWrite2d::<u32, 12, 17>::new();
        let base = thread::blockIdx_x() as usize * 12 * 17;
        for (r, c, slot) in tile.mine() {
            *slot = x[base + r * 17 + c];
        }
        let tile = tile.sync();
        if let Some(o) = out.block_result_mut() {
            let mut acc = 0u32;
            for r in 0..12 {
                for c in 0..17 {
                    acc = acc.wrapping_add(tile[r][c].wrapping_mul((r * 17 + c + 1) as u32));
                }
            }
            *o = acc;
        }
    }

    /// A 1-D array written and read back over several phases in a loop with a uniform trip
    /// count: each round, thread `t` adds its left neighbour's value to its own.
    #[kernel]
    #[launch_contract(domain = 1, block = (64, 1, 1))]
    pub fn neighbour_rounds(x: &[u32], rounds: u32, mut y: DisjointSlice<u32>) {
        let mut cur = SharedWrite::<u32, 64>::new();
        let i = thread::index_1d();
        let t = thread::threadIdx_x() as usize;
        let mut mine = if i.get() < x.len() { x[i.get()] } else { 0 };
        for (_, slot) in cur.mine() {
            *slot = mine;
        }
        let mut round = 0;
        while round < rounds {
            let read = cur.sync();
            mine = mine.wrapping_add(read[(t + 63) % 64]);
            cur = read.sync();
            for (_, slot) in cur.mine() {
                *slot = mine;
            }
            round += 1;
        }
        if let Some(out) = y.get_mut(i) {
            *out = mine;
        }
    }
}

/// Each thread of a 48 x 2 x 2 block (fixed by the contract) and of the same block launched
/// without one writes its warp number at its linear index.
#[cuda_module]
mod warp_numbers {
    use super::*;

    #[kernel]
    #[launch_contract(block = (48, 2, 2))]
    pub unsafe fn warp_ids_fixed_block(out: &mut [u32]) {
        let (x, y, z) = (
            thread::threadIdx_x() as usize,
            thread::threadIdx_y() as usize,
            thread::threadIdx_z() as usize,
        );
        out[x + 48 * (y + 2 * z)] = thread::warp_id();
    }

    #[kernel]
    pub unsafe fn warp_ids_any_block(out: &mut [u32]) {
        let (x, y, z) = (
            thread::threadIdx_x() as usize,
            thread::threadIdx_y() as usize,
            thread::threadIdx_z() as usize,
        );
        let (nx, ny) = (thread::blockDim_x() as usize, thread::blockDim_y() as usize);
        out[x + nx * (y + ny * z)] = thread::warp_id();
    }
}

#[test]
fn warps_are_numbered_by_the_linear_thread_index_with_and_without_a_contract() -> cuprum::Result<()>
{
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = warp_numbers::load(ctx)?;
    let want: Vec<u32> = (0..192u32).map(|t| t / 32).collect();
    let config = LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (48, 2, 2),
        shared_mem_bytes: 0,
    };
    let mut fixed = DeviceBuffer::from_host(&stream, &poisoned::<u32>(192))?;
    let mut any = DeviceBuffer::from_host(&stream, &poisoned::<u32>(192))?;
    // SAFETY: one block; each thread writes its own linear index, inside the buffer.
    unsafe {
        m.warp_ids_fixed_block(&stream, config, &mut fixed)?;
        m.warp_ids_any_block(&stream, config, &mut any)?;
    }
    assert_same("warp_ids_fixed_block", &fixed.to_host_vec(&stream)?, &want);
    assert_same("warp_ids_any_block", &any.to_host_vec(&stream)?, &want);
    Ok(())
}

fn matmul_reference(a: &[f32], b: &[f32], ha: usize, wa: usize, wb: usize) -> Vec<f32> {
    let mut c = vec![0.0f32; ha * wb];
    for r in 0..ha {
        for col in 0..wb {
            let mut acc = 0.0f32;
            for k0 in (0..wa).step_by(BS) {
                for k in k0..(k0 + BS).min(wa) {
                    acc += a[r * wa + k] * b[k * wb + col];
                }
                // The kernel adds the tile's zero padding too; adding +0.0 changes nothing
                // but a -0.0 sum, which the comparison treats as equal.
            }
            c[r * wb + col] = acc;
        }
    }
    c
}

#[test]
fn a_tiled_matrix_multiply_needs_no_unsafe() -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let mut rng = rng("phased_matmul");
    for _ in 0..3 {
        let (ha, wa, wb) = (
            rng.random_range(1..70usize),
            rng.random_range(1..70usize),
            rng.random_range(1..70usize),
        );
        // Small integers: every sum is exact, whatever the order.
        let mut small = |len: usize| -> Vec<f32> {
            (0..len).map(|_| rng.random_range(-8..=8) as f32).collect()
        };
        let (a, b) = (small(ha * wa), small(wa * wb));
        let (da, db) = (
            DeviceBuffer::from_host(&stream, &a)?,
            DeviceBuffer::from_host(&stream, &b)?,
        );
        let mut dc = DeviceBuffer::from_host(&stream, &poisoned::<f32>(ha * wb))?;
        let p = m.prepare_matmul_tiled(LaunchConfig {
            grid_dim: (blocks_for(wb, BS as u32), blocks_for(ha, BS as u32), 1),
            block_dim: (BS as u32, BS as u32, 1),
            shared_mem_bytes: 0,
        })?;
        m.matmul_tiled(&stream, &p, &da, &db, ha, wa, wb, &mut dc)?;
        let want = matmul_reference(&a, &b, ha, wa, wb);
        assert_same(
            &format!("matmul_tiled {ha}x{wa} by {wa}x{wb}"),
            &dc.to_host_vec(&stream)?,
            &want,
        );
        let mut raw = DeviceBuffer::from_host(&stream, &poisoned::<f32>(ha * wb))?;
        // SAFETY: every thread writes its own element, guarded by the extents; the tiles are
        // written by their owners before a barrier and read after it.
        unsafe { m.matmul_tiled_raw(&stream, p.config(), &da, &db, ha, wa, wb, &mut raw)? };
        assert_same("matmul_tiled_raw", &raw.to_host_vec(&stream)?, &want);
    }
    Ok(())
}

#[test]
fn a_transpose_through_a_padded_tile_needs_no_unsafe() -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let mut rng = rng("phased_transpose");
    for _ in 0..3 {
        let (rows, cols) = (rng.random_range(1..80usize), rng.random_range(1..80usize));
        let a = random(&mut rng, rows * cols, -100.0f32, 100.0);
        let da = DeviceBuffer::from_host(&stream, &a)?;
        let mut dt = DeviceBuffer::from_host(&stream, &poisoned::<f32>(rows * cols))?;
        // Block (bx, by) writes output columns bx * TILE.. (below `rows`) and output rows
        // by * TILE.. (below `cols`).
        let p = m.prepare_transpose_tiled(LaunchConfig {
            grid_dim: (
                blocks_for(rows, TILE as u32),
                blocks_for(cols, TILE as u32),
                1,
            ),
            block_dim: (TILE as u32, TILE as u32, 1),
            shared_mem_bytes: 0,
        })?;
        m.transpose_tiled(&stream, &p, &da, rows, cols, &mut dt)?;
        let want: Vec<f32> = (0..rows * cols)
            .map(|k| {
                let (oy, ox) = (k / rows, k % rows);
                a[ox * cols + oy]
            })
            .collect();
        assert_same(
            &format!("transpose_tiled of {rows}x{cols}"),
            &dt.to_host_vec(&stream)?,
            &want,
        );
    }
    Ok(())
}

#[test]
fn a_transpose_with_four_rows_per_thread_writes_its_blocks_tile() -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let mut rng = rng("phased_transpose_32x8");
    for (rows, cols) in [
        (1usize, 1usize),
        (32, 32),
        (70, 45),
        (rng.random_range(1..130), 100),
    ] {
        let a = random(&mut rng, rows * cols, -100.0f32, 100.0);
        let da = DeviceBuffer::from_host(&stream, &a)?;
        let mut dt = DeviceBuffer::from_host(&stream, &poisoned::<f32>(rows * cols))?;
        let p = m.prepare_transpose_no_bank_conflicts(LaunchConfig {
            grid_dim: (blocks_for(rows, 32), blocks_for(cols, 32), 1),
            block_dim: (32, 8, 1),
            shared_mem_bytes: 0,
        })?;
        m.transpose_no_bank_conflicts(&stream, &p, &da, rows, cols, &mut dt)?;
        let want: Vec<f32> = (0..rows * cols)
            .map(|k| {
                let (oy, ox) = (k / rows, k % rows);
                a[ox * cols + oy]
            })
            .collect();
        assert_same(
            &format!("transpose_no_bank_conflicts of {rows}x{cols}"),
            &dt.to_host_vec(&stream)?,
            &want,
        );
    }
    Ok(())
}

#[test]
fn a_block_reduction_through_per_warp_partials_needs_no_unsafe() -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let mut rng = rng("phased_block_sum");
    for n in [1usize, 255, 256, 1000, 70_001] {
        let x = random(&mut rng, n, 0u32, u32::MAX);
        let blocks = n.div_ceil(256);
        let dx = DeviceBuffer::from_host(&stream, &x)?;
        let mut sums = DeviceBuffer::from_host(&stream, &poisoned::<u32>(blocks + 1))?;
        let p = m.prepare_block_sum(LaunchConfig1D::new(blocks as u32, 256, 0))?;
        m.block_sum(&stream, &p, &dx, &mut sums)?;
        let mut want: Vec<u32> = x
            .chunks(256)
            .map(|c| c.iter().fold(0u32, |a, &v| a.wrapping_add(v)))
            .collect();
        want.push(poisoned::<u32>(1)[0]);
        assert_same(
            &format!("block_sum of {n}"),
            &sums.to_host_vec(&stream)?,
            &want,
        );
    }
    Ok(())
}

#[test]
fn a_stencil_loads_its_halo_with_two_elements_per_thread() -> cuprum::Result<()> {
    // Also with both phases in helpers taking the phased array by reference.
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let mut rng = rng("phased_stencil");
    for n in [1usize, 127, 128, 1000, 4099] {
        let x: Vec<f32> = (0..n).map(|_| rng.random_range(-16..=16) as f32).collect();
        let w: Vec<f32> = (0..2 * RADIUS + 1)
            .map(|_| rng.random_range(-4..=4) as f32)
            .collect();
        let (dx, dw) = (
            DeviceBuffer::from_host(&stream, &x)?,
            DeviceBuffer::from_host(&stream, &w)?,
        );
        let mut dy = DeviceBuffer::from_host(&stream, &poisoned::<f32>(n))?;
        let mut dy_helpers = DeviceBuffer::from_host(&stream, &poisoned::<f32>(n))?;
        let blocks = blocks_for(n, STENCIL_BLOCK as u32);
        let config = LaunchConfig1D::new(blocks, STENCIL_BLOCK as u32, 0);
        let p = m.prepare_stencil_1d(config)?;
        m.stencil_1d(&stream, &p, &dx, &dw, &mut dy)?;
        let p = m.prepare_stencil_1d_helpers(config)?;
        m.stencil_1d_helpers(&stream, &p, &dx, &dw, &mut dy_helpers)?;
        let want: Vec<f32> = (0..n)
            .map(|i| {
                (0..2 * RADIUS + 1).fold(0.0f32, |acc, k| {
                    let g = i + k;
                    let v = if g >= RADIUS && g - RADIUS < n {
                        x[g - RADIUS]
                    } else {
                        0.0
                    };
                    acc + w[k] * v
                })
            })
            .collect();
        assert_same(
            &format!("stencil_1d of {n}"),
            &dy.to_host_vec(&stream)?,
            &want,
        );
        assert_same(
            &format!("stencil_1d_helpers of {n}"),
            &dy_helpers.to_host_vec(&stream)?,
            &want,
        );
    }
    Ok(())
}

#[test]
fn a_histogram_counts_in_an_atomic_phase_without_unsafe() -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let mut rng = rng("phased_histogram256");
    for (n, blocks) in [(1usize, 1u32), (1000, 3), (300_001, 40)] {
        // Skewed bytes, so some bins see many concurrent updates.
        let data: Vec<u32> = (0..n)
            .map(|_| {
                let skewed = rng.random_range(0..16u32) * 0x0101_0101;
                if rng.random_bool(0.5) {
                    skewed
                } else {
                    rng.random()
                }
            })
            .collect();
        let dd = DeviceBuffer::from_host(&stream, &data)?;
        let start: Vec<u32> = random(&mut rng, 256, 0u32, 1000);
        let mut bins = DeviceBuffer::from_host(&stream, &start)?;
        let p = m.prepare_histogram256(LaunchConfig1D::new(blocks, 256, 0))?;
        m.histogram256(&stream, &p, &dd, &mut bins)?;
        let mut want = start.clone();
        for w in &data {
            for byte in w.to_le_bytes() {
                want[byte as usize] += 1;
            }
        }
        assert_same(
            &format!("histogram256 of {n} words"),
            &bins.to_host_vec(&stream)?,
            &want,
        );
    }
    Ok(())
}

#[test]
fn nbody_stages_float4_bodies_in_shared_tiles_without_unsafe() -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let mut rng = rng("phased_nbody");
    for n in [1usize, 64, 250] {
        let flat = random(&mut rng, n * 4, -10.0f32, 10.0);
        let pos: Vec<[f32; 4]> = flat
            .chunks(4)
            .map(|c| [c[0], c[1], c[2], c[3].abs() + 0.5])
            .collect();
        let flat = random(&mut rng, n * 4, -1.0f32, 1.0);
        let vel: Vec<[f32; 4]> = flat.chunks(4).map(|c| [c[0], c[1], c[2], c[3]]).collect();
        let (dt, damping, softening) = (0.01f32, 0.995f32, 0.1f32);
        let (dpos, dvel) = (
            DeviceBuffer::from_host(&stream, &pos)?,
            DeviceBuffer::from_host(&stream, &vel)?,
        );
        let mut npos = DeviceBuffer::from_host(&stream, &vec![[f32::NAN; 4]; n])?;
        let mut nvel = DeviceBuffer::from_host(&stream, &vec![[f32::NAN; 4]; n])?;
        let p = m.prepare_integrate_bodies_tiled(LaunchConfig1D::new(blocks_for(n, 64), 64, 0))?;
        m.integrate_bodies_tiled(
            &stream, &p, &dpos, &dvel, dt, damping, softening, &mut npos, &mut nvel,
        )?;
        let (want_pos, want_vel) = integrate_bodies_reference(&pos, &vel, dt, damping, softening);
        assert_same(
            &format!("velocities of {n}"),
            &nvel.to_host_vec(&stream)?,
            &want_vel,
        );
        assert_same(
            &format!("positions of {n}"),
            &npos.to_host_vec(&stream)?,
            &want_pos,
        );
    }
    Ok(())
}

fn checksum_reference(x: &[u32], blocks: usize) -> Vec<u32> {
    (0..blocks)
        .map(|b| {
            (0..12 * 17).fold(0u32, |acc, e| {
                acc.wrapping_add(x[b * 12 * 17 + e].wrapping_mul(e as u32 + 1))
            })
        })
        .collect()
}

#[test]
fn threads_own_every_element_of_a_tile_larger_than_the_block() -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let mut rng = rng("phased_checksum");
    let blocks = rng.random_range(1..6usize);
    let x = random(&mut rng, blocks * 12 * 17, 0u32, u32::MAX);
    let dx = DeviceBuffer::from_host(&stream, &x)?;
    let want = checksum_reference(&x, blocks);

    let mut out = DeviceBuffer::from_host(&stream, &poisoned::<u32>(blocks))?;
    let p = m.prepare_tile_checksum(LaunchConfig {
        grid_dim: (blocks as u32, 1, 1),
        block_dim: (8, 4, 1),
        shared_mem_bytes: 0,
    })?;
    m.tile_checksum(&stream, &p, &dx, &mut out)?;
    assert_same("tile_checksum", &out.to_host_vec(&stream)?, &want);

    // Without a contract: block shapes smaller than, equal to and larger than the tile, and
    // one with z > 1.
    for block in [(8, 4, 1), (17, 12, 1), (32, 16, 1), (5, 3, 2), (1, 1, 1)] {
        let mut out = DeviceBuffer::from_host(&stream, &poisoned::<u32>(blocks))?;
        let config = LaunchConfig {
            grid_dim: (blocks as u32, 1, 1),
            block_dim: block,
            shared_mem_bytes: 0,
        };
        // SAFETY: a kernel without a contract launches unchecked; its one output is written
        // through `block_result_mut`, one element per block whatever the launch.
        unsafe { m.tile_checksum_any_block(&stream, config, &dx, &mut out)? };
        assert_same(
            &format!("tile_checksum_any_block with block {block:?}"),
            &out.to_host_vec(&stream)?,
            &want,
        );
    }
    Ok(())
}

#[test]
fn phases_alternate_in_a_loop_with_a_uniform_trip_count() -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let mut rng = rng("phased_rounds");
    for (n, rounds) in [(64usize, 0u32), (64, 1), (200, 5), (1000, 17)] {
        let x = random(&mut rng, n, 0u32, u32::MAX);
        let dx = DeviceBuffer::from_host(&stream, &x)?;
        let mut dy = DeviceBuffer::from_host(&stream, &poisoned::<u32>(n))?;
        let blocks = blocks_for(n, 64);
        let p = m.prepare_neighbour_rounds(LaunchConfig1D::new(blocks, 64, 0))?;
        m.neighbour_rounds(&stream, &p, &dx, rounds, &mut dy)?;
        let mut want = Vec::with_capacity(n);
        for b in 0..blocks as usize {
            let mut cur: Vec<u32> = (0..64)
                .map(|t| x.get(b * 64 + t).copied().unwrap_or(0))
                .collect();
            for _ in 0..rounds {
                cur = (0..64)
                    .map(|t| cur[t].wrapping_add(cur[(t + 63) % 64]))
                    .collect();
            }
            want.extend(cur);
        }
        want.truncate(n);
        assert_same(
            &format!("neighbour_rounds of {n}, {rounds} rounds"),
            &dy.to_host_vec(&stream)?,
            &want,
        );
    }
    Ok(())
}

/// Each block of `block` elements' wrapping sum, zeros past the end.
fn block_sums_reference(x: &[u32], block: usize) -> Vec<u32> {
    x.chunks(block)
        .map(|c| c.iter().fold(0u32, |a, &v| a.wrapping_add(v)))
        .collect()
}

/// Runs `split_tree_sum::<B>` over fresh random inputs of ragged lengths.
fn check_split_tree_sum<const B: u32>(
    m: &kernels::Module,
    stream: &cuprum::Stream,
    rng: &mut rand::rngs::StdRng,
) -> cuprum::Result<()> {
    let block = B as usize;
    for n in [
        1usize,
        block - 1,
        block,
        rng.random_range(block + 1..8 * block),
    ] {
        let x = random(rng, n, 0u32, u32::MAX);
        let blocks = n.div_ceil(block);
        let dx = DeviceBuffer::from_host(stream, &x)?;
        let mut sums = DeviceBuffer::from_host(stream, &poisoned::<u32>(blocks + 1))?;
        let config = LaunchConfig {
            grid_dim: (blocks as u32, 1, 1),
            block_dim: (B, 1, 1),
            shared_mem_bytes: 0,
        };
        let p = m.prepare_split_tree_sum::<B>(config)?;
        m.split_tree_sum::<B>(stream, &p, &dx, &mut sums)?;
        let mut want = block_sums_reference(&x, block);
        want.push(poisoned::<u32>(1)[0]);
        assert_same(
            &format!("split_tree_sum::<{B}> of {n}"),
            &sums.to_host_vec(stream)?,
            &want,
        );
    }
    Ok(())
}

#[test]
fn a_tree_reduction_in_the_split_phase_needs_one_barrier_per_level() -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let mut rng = rng("phased_split_tree_sum");
    check_split_tree_sum::<64>(&m, &stream, &mut rng)?;
    check_split_tree_sum::<128>(&m, &stream, &mut rng)?;
    check_split_tree_sum::<256>(&m, &stream, &mut rng)?;
    check_split_tree_sum::<512>(&m, &stream, &mut rng)?;
    check_split_tree_sum::<1024>(&m, &stream, &mut rng)?;
    // The same with constant boundaries, written out.
    for n in [1usize, 128, 1000] {
        let x = random(&mut rng, n, 0u32, u32::MAX);
        let blocks = n.div_ceil(128);
        let dx = DeviceBuffer::from_host(&stream, &x)?;
        let mut sums = DeviceBuffer::from_host(&stream, &poisoned::<u32>(blocks + 1))?;
        let p = m.prepare_split_constant_tree(LaunchConfig1D::new(blocks as u32, 128, 0))?;
        m.split_constant_tree(&stream, &p, &dx, &mut sums)?;
        let mut want = block_sums_reference(&x, 128);
        want.push(poisoned::<u32>(1)[0]);
        assert_same(
            &format!("split_constant_tree of {n}"),
            &sums.to_host_vec(&stream)?,
            &want,
        );
    }
    Ok(())
}
