//! CUDA kernels people port, in the form they come in: cuda-samples' `reduce4<T, blockSize>`
//! generic over its element type and a `const` block size that sizes shared memory (and a
//! safe port of it: phased shared memory in its split phase, one barrier per level, the block a contract names by the const),
//! `MatrixMulCUDA<BLOCK_SIZE>` with `SharedArray<f32, { BLOCK_SIZE * BLOCK_SIZE }>` tiles and
//! const-generic helpers, a transpose whose tile is padded by a module constant, a
//! Mandelbrot escape test that `return`s from inside its loop, an n-body step over nested
//! structs, and `core::arch::nvptx`-style indices over raw pointers.
//! Each runs against a plain-Rust reference on fresh random inputs (the seed is printed),
//! over outputs poisoned first, and every element is checked.

mod common;

use common::{assert_same, blocks_for, ctx};
use cuprum::simt::{
    DevicePtr, DisjointSlice, Num, SharedArray, SharedWrite, SharedWrite2d, SyncPhases, kernel,
    launch_contract, nvptx, sync_threads, thread, warp,
};
use cuprum::{DeviceBuffer, DeviceScalar, LaunchConfig, LaunchConfig1D, Stream, cuda_module};
use cuprum_testkit::poison::{Poison, poisoned};
use cuprum_testkit::random::{random, rng};
use rand::Rng;

#[cuda_module]
mod kernels {
    use super::*;

    /// Adds the warp's values into lane 0 with shuffles, for any element type.
    pub fn warp_sum<T: Num>(mut sum: T) -> T {
        let mut offset = 16;
        while offset > 0 {
            sum += warp::shuffle_down(sum, offset);
            offset /= 2;
        }
        sum
    }

    /// cuda-samples' `reduce4<T, blockSize>`: each block sums `2 * BLOCK_SIZE` elements
    /// (two per thread), in shared memory down to a warp, then with shuffles.
    #[kernel]
    pub unsafe fn reduce4<T: Num, const BLOCK_SIZE: u32>(g_idata: &[T], g_odata: &mut [T], n: u32) {
        let sdata = SharedArray::<T, { BLOCK_SIZE as usize }>::uninit();
        let tid = thread::threadIdx_x();
        let i = thread::blockIdx_x() * (BLOCK_SIZE * 2) + tid;
        let mut my_sum = if i < n {
            g_idata[i as usize]
        } else {
            T::default()
        };
        if i + BLOCK_SIZE < n {
            my_sum += g_idata[(i + BLOCK_SIZE) as usize];
        }
        sdata.set(tid as usize, my_sum);
        sync_threads();
        let mut s = thread::blockDim_x() / 2;
        while s > 32 {
            if tid < s {
                my_sum = my_sum + sdata.get((tid + s) as usize);
                sdata.set(tid as usize, my_sum);
            }
            sync_threads();
            s >>= 1;
        }
        if tid < 32 {
            if BLOCK_SIZE >= 64 {
                my_sum += sdata.get((tid + 32) as usize);
            }
            my_sum = warp_sum(my_sum);
        }
        if tid == 0 {
            g_odata[thread::blockIdx_x() as usize] = my_sum;
        }
    }

    /// `reduce4` without `unsafe`: the same sums in the same order, through a phased shared
    /// array in its split phase (at each level thread `tid < s` writes its own slot and reads
    /// slot `s + tid` above the boundary: one barrier per halving, as CUDA's), the block under
    /// a contract named by `BLOCK_SIZE`, and each block's sum written by its first thread
    /// (`block_result_mut`).
    #[kernel]
    #[launch_contract(domain = 1, block = (BLOCK_SIZE, 1, 1))]
    pub fn reduce4_safe<T: Num, const BLOCK_SIZE: u32>(
        g_idata: &[T],
        n: u32,
        mut g_odata: DisjointSlice<T>,
    ) {
        let tid = thread::threadIdx_x();
        let i = thread::blockIdx_x() * (BLOCK_SIZE * 2) + tid;
        let mut my_sum = if i < n {
            g_idata[i as usize]
        } else {
            T::default()
        };
        if i + BLOCK_SIZE < n {
            my_sum += g_idata[(i + BLOCK_SIZE) as usize];
        }
        let mut sdata = SharedWrite::<T, { BLOCK_SIZE as usize }>::new();
        for (_, slot) in sdata.mine() {
            *slot = my_sum;
        }
        let mut s = BLOCK_SIZE / 2;
        let mut split = sdata.sync_split(s as usize);
        while s > 32 {
            for (k, slot) in split.mine_below() {
                my_sum += split.above(k);
                *slot = my_sum;
            }
            s >>= 1;
            split = split.sync_split(s as usize);
        }
        if tid < 32 {
            if BLOCK_SIZE >= 64 {
                my_sum += split.above(tid as usize);
            }
            my_sum = warp_sum(my_sum);
        }
        if let Some(o) = g_odata.block_result_mut() {
            *o = my_sum;
        }
    }

    /// Row `row` of an `N` × `N` tile in shared memory, as a local array.
    pub fn tile_row<const N: usize>(tile: &SharedArray<f32, { N * N }>, row: usize) -> [f32; N] {
        let mut out = [0.0f32; N];
        for k in 0..N {
            out[k] = unsafe { tile.get(row * N + k) };
        }
        out
    }

    /// `acc` plus the products of `row` with column `col` of an `N` × `N` tile, in order.
    pub fn accumulate<const N: usize>(
        mut acc: f32,
        row: [f32; N],
        tile: &SharedArray<f32, { N * N }>,
        col: usize,
    ) -> f32 {
        for k in 0..N {
            acc += row[k] * unsafe { tile.get(k * N + col) };
        }
        acc
    }

    /// cuda-samples' `MatrixMulCUDA<BLOCK_SIZE>`: `C = A * B`, `A` `wa` wide and `B` `wb`
    /// wide, every size a multiple of `BLOCK_SIZE`, through square tiles in shared memory.
    #[kernel]
    pub unsafe fn matrix_mul<const BLOCK_SIZE: usize>(
        c: &mut [f32],
        a: &[f32],
        b: &[f32],
        wa: usize,
        wb: usize,
    ) {
        let bx = thread::blockIdx_x() as usize;
        let by = thread::blockIdx_y() as usize;
        let tx = thread::threadIdx_x() as usize;
        let ty = thread::threadIdx_y() as usize;
        let a_begin = wa * BLOCK_SIZE * by;
        let a_end = a_begin + wa - 1;
        let a_step = BLOCK_SIZE;
        let b_begin = BLOCK_SIZE * bx;
        let b_step = BLOCK_SIZE * wb;
        let mut csub = 0.0f32;
        let a_tile = SharedArray::<f32, { BLOCK_SIZE * BLOCK_SIZE }>::uninit();
        let b_tile = SharedArray::<f32, { BLOCK_SIZE * BLOCK_SIZE }>::uninit();
        let mut ia = a_begin;
        let mut ib = b_begin;
        while ia <= a_end {
            a_tile.set(ty * BLOCK_SIZE + tx, a[ia + wa * ty + tx]);
            b_tile.set(ty * BLOCK_SIZE + tx, b[ib + wb * ty + tx]);
            sync_threads();
            let row = tile_row::<BLOCK_SIZE>(&a_tile, ty);
            csub = accumulate(csub, row, &b_tile, tx);
            sync_threads();
            ia += a_step;
            ib += b_step;
        }
        let c0 = wb * BLOCK_SIZE * by + BLOCK_SIZE * bx;
        c[c0 + wb * ty + tx] = csub;
    }

    /// `MatrixMulCUDA<BLOCK_SIZE>` without `unsafe`: a launch contract whose block names the
    /// const parameter, phased shared tiles of `BLOCK_SIZE` x `BLOCK_SIZE`, and each thread's
    /// element of `C` through its 2-D index (any sizes; tiles past the edges read zeros).
    #[kernel]
    #[launch_contract(domain = 2, block = (BLOCK_SIZE, BLOCK_SIZE, 1))]
    pub fn matrix_mul_safe<const BLOCK_SIZE: usize>(
        a: &[f32],
        b: &[f32],
        ha: usize,
        wa: usize,
        wb: usize,
        mut c: DisjointSlice<f32>,
    ) {
        let idx = thread::index_2d();
        let row0 = thread::blockIdx_y() as usize * BLOCK_SIZE;
        let col0 = thread::blockIdx_x() as usize * BLOCK_SIZE;
        let tx = thread::threadIdx_x() as usize;
        let ty = thread::threadIdx_y() as usize;
        let mut a_tile = SharedWrite2d::<f32, BLOCK_SIZE, BLOCK_SIZE>::new();
        let mut b_tile = SharedWrite2d::<f32, BLOCK_SIZE, BLOCK_SIZE>::new();
        let mut acc = 0.0f32;
        for k0 in (0..wa).step_by(BLOCK_SIZE) {
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
            for k in 0..BLOCK_SIZE {
                acc += a_read[ty][k] * b_read[k][tx];
            }
            (a_tile, b_tile) = (a_read, b_read).sync();
        }
        if let Some(out) = c.get_mut_2d(idx, wb) {
            *out = acc;
        }
    }

    /// A cube of `B`^3 threads per block, one block: each writes its linear thread index at
    /// its 3-D index. The build-time check of a generic kernel stands `B` for a size whose
    /// block is launchable.
    #[kernel]
    #[launch_contract(domain = 3, block = (B, B, B))]
    pub fn cube_ids<const B: u32>(mut out: DisjointSlice<u32>) {
        let tid = thread::threadIdx_x() + B * (thread::threadIdx_y() + B * thread::threadIdx_z());
        let side = B as usize;
        if let Some(o) = out.get_mut_3d(thread::index_3d(), side, side) {
            *o = tid;
        }
    }

    /// Shared-memory tiles one column wider than they are tall, so a column's elements fall
    /// in distinct banks.
    const PAD: usize = 1;

    /// `t` (`cols` × `rows`) = `a` (`rows` × `cols`) transposed, through a `TILE` ×
    /// (`TILE + PAD`) tile: its length is an expression of a const parameter and a module
    /// constant.
    #[kernel]
    pub unsafe fn transpose<const TILE: usize>(a: &[f32], rows: usize, cols: usize, t: &mut [f32]) {
        let tile = SharedArray::<f32, { TILE * (TILE + PAD) }>::uninit();
        let tx = thread::threadIdx_x() as usize;
        let ty = thread::threadIdx_y() as usize;
        let bx = thread::blockIdx_x() as usize * TILE;
        let by = thread::blockIdx_y() as usize * TILE;
        if bx + tx < cols && by + ty < rows {
            tile.set(ty * (TILE + PAD) + tx, a[(by + ty) * cols + bx + tx]);
        }
        sync_threads();
        let (ox, oy) = (by + tx, bx + ty);
        if ox < rows && oy < cols {
            t[oy * rows + ox] = tile.get(tx * (TILE + PAD) + ty);
        }
    }

    /// The iteration at which `z = z² + c` leaves the disc of radius 2, or `max_iter`.
    pub fn escape_time(cr: f32, ci: f32, max_iter: u32) -> u32 {
        let mut zr = 0.0f32;
        let mut zi = 0.0f32;
        for i in 0..max_iter {
            let t = zr * zr - zi * zi + cr;
            zi = 2.0 * zr * zi + ci;
            zr = t;
            if zr * zr + zi * zi > 4.0 {
                return i;
            }
        }
        max_iter
    }

    /// The escape time of each point of a `width`-wide grid from (`x0`, `y0`), `step` apart.
    #[kernel]
    #[launch_contract(domain = 2, block = (16, 8, 1))]
    pub fn mandelbrot(
        x0: f32,
        y0: f32,
        step: f32,
        width: usize,
        max_iter: u32,
        mut out: DisjointSlice<u32>,
    ) {
        let idx = thread::index_2d();
        let cr = x0 + idx.x() as f32 * step;
        let ci = y0 + idx.y() as f32 * step;
        if let Some(o) = out.get_mut_2d(idx, width) {
            *o = escape_time(cr, ci, max_iter);
        }
    }

    /// Where `target` first appears in a matrix `cols` wide, row by row: `(row, column)`, or
    /// `(rows, 0)` when it does not.
    pub fn find(m: &[i32], cols: usize, target: i32) -> (usize, usize) {
        let rows = m.len() / cols;
        let mut r = 0;
        while r < rows {
            let mut c = 0;
            loop {
                if c == cols {
                    break;
                }
                if m[r * cols + c] == target {
                    return (r, c);
                }
                c += 1;
            }
            r += 1;
        }
        (rows, 0)
    }

    /// Each thread looks for its own target.
    #[kernel]
    #[launch_contract(domain = 1, block = (64, 1, 1))]
    pub fn find_each(m: &[i32], cols: usize, targets: &[i32], mut found: DisjointSlice<u32>) {
        let i = thread::index_1d();
        if let Some(o) = found.get_mut(i) {
            let (r, c) = find(m, cols, targets[i.get()]);
            *o = (r * cols + c) as u32;
        }
    }

    #[derive(Clone, Copy, Debug, Default, PartialEq)]
    pub struct V3 {
        pub x: f32,
        pub y: f32,
        pub z: f32,
    }

    #[derive(Clone, Copy, Debug, Default, PartialEq)]
    pub struct Body {
        pub pos: V3,
        pub vel: V3,
    }

    pub fn sub(a: V3, b: V3) -> V3 {
        V3 {
            x: a.x - b.x,
            y: a.y - b.y,
            z: a.z - b.z,
        }
    }

    pub fn add_scaled(a: V3, b: V3, s: f32) -> V3 {
        V3 {
            x: a.x + b.x * s,
            y: a.y + b.y * s,
            z: a.z + b.z * s,
        }
    }

    /// The (softened) pull of a unit mass at `at` on `b`.
    pub fn pull(b: Body, at: V3, soft: f32) -> V3 {
        let d = sub(at, b.pos);
        let r2 = d.x * d.x + d.y * d.y + d.z * d.z + soft;
        let inv = 1.0 / (r2 * r2.sqrt());
        V3 {
            x: d.x * inv,
            y: d.y * inv,
            z: d.z * inv,
        }
    }

    /// One step of each body (`pos`, `vel`: three floats per body), pulled by `sun` and by
    /// the next three bodies at half strength; the sun's vertical drift carries every body.
    /// `out` gets each body's new position and velocity, six floats per body.
    #[kernel]
    pub unsafe fn nbody_step(
        sun: Body,
        pos: &[f32],
        vel: &[f32],
        dt: f32,
        soft: f32,
        out: &mut [f32],
    ) {
        let i = thread::index_1d().get();
        let n = pos.len() / 3;
        if i >= n {
            return;
        }
        let mut b = Body::default();
        b.pos = V3 {
            x: pos[3 * i],
            y: pos[3 * i + 1],
            z: pos[3 * i + 2],
        };
        b.vel.x = vel[3 * i];
        b.vel.y = vel[3 * i + 1];
        b.vel.z = vel[3 * i + 2];
        let mut acc = pull(b, sun.pos, soft);
        for k in 1..4 {
            let j = (i + k) % n;
            let other = Body {
                pos: V3 {
                    x: pos[3 * j],
                    y: pos[3 * j + 1],
                    z: pos[3 * j + 2],
                },
                ..sun
            };
            acc = add_scaled(acc, pull(b, other.pos, soft), 0.5);
        }
        b.vel = add_scaled(b.vel, acc, dt);
        b.vel.y += sun.vel.y * dt;
        let moved = Body {
            pos: add_scaled(b.pos, b.vel, dt),
            vel: b.vel,
        };
        out[6 * i] = moved.pos.x;
        out[6 * i + 1] = moved.pos.y;
        out[6 * i + 2] = moved.pos.z;
        out[6 * i + 3] = moved.vel.x;
        out[6 * i + 4] = moved.vel.y;
        out[6 * i + 5] = moved.vel.z;
    }

    /// A vector addition as written for `core::arch::nvptx`.
    #[kernel]
    pub unsafe fn vecadd(a: *const f32, b: *const f32, c: *mut f32, n: i32) {
        let idx = nvptx::_thread_idx_x() + nvptx::_block_idx_x() * nvptx::_block_dim_x();
        if idx < n {
            let i = idx as usize;
            *c.add(i) = *a.add(i) + *b.add(i);
        }
    }

    /// Every thread writes the twelve index registers, as `nvptx` reads them, at its place
    /// in the grid.
    #[kernel]
    pub unsafe fn registers(out: *mut i32) {
        let tx = nvptx::_thread_idx_x();
        let ty = nvptx::_thread_idx_y();
        let tz = nvptx::_thread_idx_z();
        let (nx, ny, nz) = (
            nvptx::_block_dim_x(),
            nvptx::_block_dim_y(),
            nvptx::_block_dim_z(),
        );
        let (bx, by, bz) = (
            nvptx::_block_idx_x(),
            nvptx::_block_idx_y(),
            nvptx::_block_idx_z(),
        );
        let (gx, gy) = (nvptx::_grid_dim_x(), nvptx::_grid_dim_y());
        let block = bx + gx * (by + gy * bz);
        let thread = tx + nx * (ty + ny * tz);
        let at = (block * nx * ny * nz + thread) as usize * 12;
        nvptx::_syncthreads();
        let values = [
            tx,
            ty,
            tz,
            bx,
            by,
            bz,
            nx,
            ny,
            nz,
            gx,
            gy,
            nvptx::_grid_dim_z(),
        ];
        for k in 0..12 {
            *out.add(at + k) = values[k];
        }
    }
}

use kernels::{Body, V3};

/// `reduce4` of `x` as the kernel computes it: the same additions in the same order.
fn reduce4_reference<T: Num>(x: &[T], block: usize) -> Vec<T> {
    let blocks = x.len().div_ceil(2 * block);
    (0..blocks)
        .map(|b| {
            let mut v: Vec<T> = (0..block)
                .map(|tid| {
                    let i = b * 2 * block + tid;
                    let mut s = if i < x.len() { x[i] } else { T::ZERO };
                    if i + block < x.len() {
                        s += x[i + block];
                    }
                    s
                })
                .collect();
            let mut s = block / 2;
            while s > 32 {
                for tid in 0..s {
                    v[tid] = v[tid] + v[tid + s];
                }
                s >>= 1;
            }
            if block >= 64 {
                for tid in 0..32 {
                    let upper = v[tid + 32];
                    v[tid] += upper;
                }
            }
            // Shuffles down: lanes read the values of before the step.
            let mut offset = 16;
            while offset > 0 {
                let before = v.clone();
                for lane in 0..32 - offset {
                    v[lane] = before[lane] + before[lane + offset];
                }
                offset /= 2;
            }
            v[0]
        })
        .collect()
}

/// Runs `reduce4::<T, BLOCK_SIZE>` over `x` and checks every block's sum.
fn check_reduce4<T, const BLOCK_SIZE: u32>(
    m: &kernels::Module,
    stream: &Stream,
    x: &[T],
) -> cuprum::Result<()>
where
    T: Num + DeviceScalar + Poison + std::fmt::Debug,
{
    let block = BLOCK_SIZE as usize;
    let blocks = x.len().div_ceil(2 * block);
    let input = DeviceBuffer::from_host(stream, x)?;
    let mut sums = DeviceBuffer::from_host(stream, &poisoned::<T>(blocks))?;
    let config = LaunchConfig {
        grid_dim: (blocks as u32, 1, 1),
        block_dim: (BLOCK_SIZE, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: a block of BLOCK_SIZE threads reads below `n` and writes its own sum.
    unsafe {
        m.reduce4::<T, BLOCK_SIZE>(stream, config, &input, &mut sums, x.len() as u32)?;
    }
    let what = format!(
        "reduce4::<{}, {BLOCK_SIZE}> of {} elements",
        std::any::type_name::<T>(),
        x.len()
    );
    let want = reduce4_reference(x, block);
    assert_same(&what, &sums.to_host_vec(stream)?, &want);
    // The safe port: the same sums, bit for bit.
    let mut safe_sums = DeviceBuffer::from_host(stream, &poisoned::<T>(blocks))?;
    let prepared = m.prepare_reduce4_safe::<BLOCK_SIZE>(config)?;
    m.reduce4_safe::<T, BLOCK_SIZE>(stream, &prepared, &input, x.len() as u32, &mut safe_sums)?;
    assert_same(
        &format!("safe {what}"),
        &safe_sums.to_host_vec(stream)?,
        &want,
    );
    Ok(())
}

#[test]
fn reduce4_sums_every_block_for_each_element_type_and_block_size() -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let mut rng = rng("reduce4");
    let len = |rng: &mut rand::rngs::StdRng| rng.random_range(1000..30_000usize);
    let n = len(&mut rng);
    check_reduce4::<f32, 256>(&m, &stream, &random(&mut rng, n, -100.0f32, 100.0))?;
    let n = len(&mut rng);
    check_reduce4::<f64, 128>(&m, &stream, &random(&mut rng, n, -100.0f64, 100.0))?;
    // Small integers: no sum wraps, so the host's `+` is the device's.
    let n = len(&mut rng);
    check_reduce4::<i32, 64>(&m, &stream, &random(&mut rng, n, -1000i32, 1000))?;
    let n = len(&mut rng);
    check_reduce4::<u32, 512>(&m, &stream, &random(&mut rng, n, 0u32, 1000))?;
    let n = len(&mut rng);
    check_reduce4::<i32, 32>(&m, &stream, &random(&mut rng, n, -1000i32, 1000))?;
    let n = len(&mut rng);
    check_reduce4::<f32, 1024>(&m, &stream, &random(&mut rng, n, -100.0f32, 100.0))?;
    Ok(())
}

/// `a * b` (`a` is `ha` × `wa`, `b` `wa` × `wb`), each sum in order of `k`, as the kernel adds.
fn matmul_reference(a: &[f32], b: &[f32], ha: usize, wa: usize, wb: usize) -> Vec<f32> {
    let mut c = vec![0.0f32; ha * wb];
    for r in 0..ha {
        for col in 0..wb {
            let mut acc = 0.0f32;
            for k in 0..wa {
                acc += a[r * wa + k] * b[k * wb + col];
            }
            c[r * wb + col] = acc;
        }
    }
    c
}

fn check_matrix_mul<const BLOCK_SIZE: usize>(
    m: &kernels::Module,
    stream: &Stream,
    rng: &mut rand::rngs::StdRng,
) -> cuprum::Result<()> {
    let mut tiles = || rng.random_range(1..5usize) * BLOCK_SIZE;
    let (ha, wa, wb) = (tiles(), tiles(), tiles());
    let a = random(rng, ha * wa, -1.0f32, 1.0);
    let b = random(rng, wa * wb, -1.0f32, 1.0);
    let (da, db) = (
        DeviceBuffer::from_host(stream, &a)?,
        DeviceBuffer::from_host(stream, &b)?,
    );
    let mut dc = DeviceBuffer::from_host(stream, &poisoned::<f32>(ha * wb))?;
    let config = LaunchConfig {
        grid_dim: ((wb / BLOCK_SIZE) as u32, (ha / BLOCK_SIZE) as u32, 1),
        block_dim: (BLOCK_SIZE as u32, BLOCK_SIZE as u32, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: every size is a multiple of the block, so every access is in bounds.
    unsafe { m.matrix_mul::<BLOCK_SIZE>(stream, config, &mut dc, &da, &db, wa, wb)? };
    assert_same(
        &format!("matrix_mul::<{BLOCK_SIZE}> of {ha}x{wa} by {wa}x{wb}"),
        &dc.to_host_vec(stream)?,
        &matmul_reference(&a, &b, ha, wa, wb),
    );
    Ok(())
}

/// The safe `matrix_mul_safe::<BLOCK_SIZE>` at ragged sizes: `prepare_matrix_mul_safe` checks
/// the configuration against the block its const parameter names, and a configuration
/// prepared for one block size is refused at compile time for another (`Prepared` carries it).
fn check_matrix_mul_safe<const BLOCK_SIZE: usize>(
    m: &kernels::Module,
    stream: &Stream,
    rng: &mut rand::rngs::StdRng,
) -> cuprum::Result<()> {
    let (ha, wa, wb) = (
        rng.random_range(1..80usize),
        rng.random_range(1..80usize),
        rng.random_range(1..80usize),
    );
    let a = random(rng, ha * wa, -1.0f32, 1.0);
    let b = random(rng, wa * wb, -1.0f32, 1.0);
    let (da, db) = (
        DeviceBuffer::from_host(stream, &a)?,
        DeviceBuffer::from_host(stream, &b)?,
    );
    let mut dc = DeviceBuffer::from_host(stream, &poisoned::<f32>(ha * wb))?;
    let config = LaunchConfig {
        grid_dim: (
            wb.div_ceil(BLOCK_SIZE) as u32,
            ha.div_ceil(BLOCK_SIZE) as u32,
            1,
        ),
        block_dim: (BLOCK_SIZE as u32, BLOCK_SIZE as u32, 1),
        shared_mem_bytes: 0,
    };
    let prepared = m.prepare_matrix_mul_safe::<BLOCK_SIZE>(config)?;
    m.matrix_mul_safe::<BLOCK_SIZE>(stream, &prepared, &da, &db, ha, wa, wb, &mut dc)?;
    assert_same(
        &format!("matrix_mul_safe::<{BLOCK_SIZE}> of {ha}x{wa} by {wa}x{wb}"),
        &dc.to_host_vec(stream)?,
        &matmul_reference(&a, &b, ha, wa, wb),
    );
    Ok(())
}

#[test]
fn matrix_mul_safe_takes_its_block_from_the_const_parameter() -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let mut rng = rng("matrix_mul_safe");
    check_matrix_mul_safe::<16>(&m, &stream, &mut rng)?;
    check_matrix_mul_safe::<8>(&m, &stream, &mut rng)?;
    // A block other than the one the const parameter names is refused before anything runs.
    let wrong = LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (16, 16, 1),
        shared_mem_bytes: 0,
    };
    let e = m
        .prepare_matrix_mul_safe::<8>(wrong)
        .expect_err("a 16x16 block for an 8x8 contract");
    assert!(e.to_string().contains("(8, 8, 1)"), "{e}");
    Ok(())
}

#[test]
fn a_contract_block_of_three_const_dimensions() -> cuprum::Result<()> {
    fn check<const B: u32>(m: &kernels::Module, stream: &Stream) -> cuprum::Result<()> {
        let threads = (B * B * B) as usize;
        let n = threads;
        let mut out = DeviceBuffer::from_host(stream, &poisoned::<u32>(n))?;
        let config = LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: (B, B, B),
            shared_mem_bytes: 0,
        };
        let prepared = m.prepare_cube_ids::<B>(config)?;
        m.cube_ids::<B>(stream, &prepared, &mut out)?;
        let want: Vec<u32> = (0..n).map(|i| (i % threads) as u32).collect();
        assert_same(
            &format!("cube_ids::<{B}>"),
            &out.to_host_vec(stream)?,
            &want,
        );
        Ok(())
    }
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    check::<4>(&m, &stream)?;
    check::<8>(&m, &stream)
}

#[test]
fn matrix_mul_cuda_tiles_shared_memory_by_its_block_size() -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let mut rng = rng("matrix_mul");
    check_matrix_mul::<16>(&m, &stream, &mut rng)?;
    check_matrix_mul::<8>(&m, &stream, &mut rng)?;
    Ok(())
}

fn check_transpose<const TILE: usize>(
    m: &kernels::Module,
    stream: &Stream,
    rng: &mut rand::rngs::StdRng,
) -> cuprum::Result<()> {
    let (rows, cols) = (rng.random_range(1..100usize), rng.random_range(1..100usize));
    let a = random(rng, rows * cols, -100.0f32, 100.0);
    let da = DeviceBuffer::from_host(stream, &a)?;
    let mut dt = DeviceBuffer::from_host(stream, &poisoned::<f32>(rows * cols))?;
    let config = LaunchConfig {
        grid_dim: (
            blocks_for(cols, TILE as u32),
            blocks_for(rows, TILE as u32),
            1,
        ),
        block_dim: (TILE as u32, TILE as u32, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: every access is guarded by the matrix's extents.
    unsafe { m.transpose::<TILE>(stream, config, &da, rows, cols, &mut dt)? };
    let want: Vec<f32> = (0..rows * cols)
        .map(|k| {
            let (r, c) = (k % rows, k / rows);
            a[r * cols + c]
        })
        .collect();
    assert_same(
        &format!("transpose::<{TILE}> of {rows}x{cols}"),
        &dt.to_host_vec(stream)?,
        &want,
    );
    Ok(())
}

#[test]
fn a_transpose_pads_its_tile_by_a_module_constant() -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let mut rng = rng("transpose");
    check_transpose::<32>(&m, &stream, &mut rng)?;
    check_transpose::<8>(&m, &stream, &mut rng)?;
    Ok(())
}

fn escape_time_reference(cr: f32, ci: f32, max_iter: u32) -> u32 {
    let (mut zr, mut zi) = (0.0f32, 0.0f32);
    for i in 0..max_iter {
        let t = zr * zr - zi * zi + cr;
        zi = 2.0 * zr * zi + ci;
        zr = t;
        if zr * zr + zi * zi > 4.0 {
            return i;
        }
    }
    max_iter
}

#[test]
fn mandelbrot_returns_from_inside_its_escape_loop() -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let mut rng = rng("mandelbrot");
    // A viewport that holds the whole set (x from at most -1.9 to at least 0.8, y from at
    // most -1.1 to at least 0.7): points near its corners escape at once, the main cardioid
    // never does.
    let (width, height) = (
        rng.random_range(90..130usize),
        rng.random_range(60..100usize),
    );
    let x0 = rng.random_range(-2.1f32..-1.9);
    let y0 = rng.random_range(-1.3f32..-1.1);
    let step = rng.random_range(0.03f32..0.045);
    let max_iter = rng.random_range(50..300u32);
    let mut out = DeviceBuffer::from_host(&stream, &poisoned::<u32>(width * height))?;
    let config = LaunchConfig {
        grid_dim: (blocks_for(width, 16), blocks_for(height, 8), 1),
        block_dim: (16, 8, 1),
        shared_mem_bytes: 0,
    };
    let prepared = m.prepare_mandelbrot(config)?;
    m.mandelbrot(&stream, &prepared, x0, y0, step, width, max_iter, &mut out)?;
    let want: Vec<u32> = (0..width * height)
        .map(|k| {
            let (x, y) = (k % width, k / width);
            escape_time_reference(x0 + x as f32 * step, y0 + y as f32 * step, max_iter)
        })
        .collect();
    let got = out.to_host_vec(&stream)?;
    assert!(want.contains(&max_iter) && want.iter().any(|&t| t < max_iter / 2));
    assert_same("mandelbrot", &got, &want);
    Ok(())
}

#[test]
fn a_return_leaves_the_nested_loops_of_a_helper() -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let mut rng = rng("find");
    let (rows, cols) = (rng.random_range(5..40usize), rng.random_range(5..40usize));
    let matrix = random(&mut rng, rows * cols, 0i32, 400);
    let n = 1000;
    // Targets 0..500: many are there (found at their first place), some are not.
    let targets = random(&mut rng, n, 0i32, 500);
    let (dm, dt) = (
        DeviceBuffer::from_host(&stream, &matrix)?,
        DeviceBuffer::from_host(&stream, &targets)?,
    );
    let mut found = DeviceBuffer::from_host(&stream, &poisoned::<u32>(n))?;
    let prepared = m.prepare_find_each(LaunchConfig1D::new(blocks_for(n, 64), 64, 0))?;
    m.find_each(&stream, &prepared, &dm, cols, &dt, &mut found)?;
    let want: Vec<u32> = targets
        .iter()
        .map(|t| match matrix.iter().position(|v| v == t) {
            Some(k) => k as u32,
            None => (rows * cols) as u32,
        })
        .collect();
    assert_same("find_each", &found.to_host_vec(&stream)?, &want);
    Ok(())
}

fn nbody_reference(sun: Body, pos: &[f32], vel: &[f32], dt: f32, soft: f32) -> Vec<f32> {
    let n = pos.len() / 3;
    let pull = |p: [f32; 3], at: [f32; 3]| -> [f32; 3] {
        let d = [at[0] - p[0], at[1] - p[1], at[2] - p[2]];
        let r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + soft;
        let inv = 1.0 / (r2 * r2.sqrt());
        [d[0] * inv, d[1] * inv, d[2] * inv]
    };
    let body = |j: usize| [pos[3 * j], pos[3 * j + 1], pos[3 * j + 2]];
    let mut out = Vec::with_capacity(6 * n);
    for i in 0..n {
        let p = body(i);
        let mut acc = pull(p, [sun.pos.x, sun.pos.y, sun.pos.z]);
        for k in 1..4 {
            let f = pull(p, body((i + k) % n));
            for d in 0..3 {
                acc[d] += f[d] * 0.5;
            }
        }
        let mut v = [vel[3 * i], vel[3 * i + 1], vel[3 * i + 2]];
        for d in 0..3 {
            v[d] += acc[d] * dt;
        }
        v[1] += sun.vel.y * dt;
        for d in 0..3 {
            out.push(p[d] + v[d] * dt);
        }
        out.extend_from_slice(&v);
    }
    out
}

#[test]
fn an_nbody_step_reads_and_writes_nested_struct_fields() -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let mut rng = rng("nbody");
    let n = rng.random_range(100..3000usize);
    let pos = random(&mut rng, 3 * n, -10.0f32, 10.0);
    let vel = random(&mut rng, 3 * n, -1.0f32, 1.0);
    let mut coordinate = || rng.random_range(-5.0f32..5.0);
    let sun = Body {
        pos: V3 {
            x: coordinate(),
            y: coordinate(),
            z: coordinate(),
        },
        vel: V3 {
            x: coordinate(),
            y: coordinate(),
            z: coordinate(),
        },
    };
    let (dt, soft) = (0.01f32, 0.05f32);
    let (dpos, dvel) = (
        DeviceBuffer::from_host(&stream, &pos)?,
        DeviceBuffer::from_host(&stream, &vel)?,
    );
    let mut out = DeviceBuffer::from_host(&stream, &poisoned::<f32>(6 * n))?;
    // SAFETY: each thread below n writes its own six floats.
    unsafe {
        m.nbody_step(
            &stream,
            LaunchConfig1D::new(blocks_for(n, 128), 128, 0),
            sun,
            &dpos,
            &dvel,
            dt,
            soft,
            &mut out,
        )?;
    }
    assert_same(
        "nbody_step",
        &out.to_host_vec(&stream)?,
        &nbody_reference(sun, &pos, &vel, dt, soft),
    );
    Ok(())
}

#[test]
fn an_nvptx_vecadd_over_raw_pointers_compiles_unchanged() -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let mut rng = rng("nvptx vecadd");
    for n in common::SIZES {
        let a = random(&mut rng, n, -100.0f32, 100.0);
        let b = random(&mut rng, n, -100.0f32, 100.0);
        let (da, db) = (
            DeviceBuffer::from_host(&stream, &a)?,
            DeviceBuffer::from_host(&stream, &b)?,
        );
        let dc = DeviceBuffer::from_host(&stream, &poisoned::<f32>(n))?;
        // SAFETY: the kernel touches indices below n, the length of all three buffers.
        unsafe {
            m.vecadd(
                &stream,
                LaunchConfig1D::new(blocks_for(n, 256), 256, 0),
                DevicePtr::of(&da),
                DevicePtr::of(&db),
                DevicePtr::of(&dc),
                n as i32,
            )?;
        }
        let want: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x + y).collect();
        assert_same(&format!("vecadd of {n}"), &dc.to_host_vec(&stream)?, &want);
    }
    Ok(())
}

#[test]
fn nvptx_reads_every_index_register_as_an_i32() -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let mut rng = rng("nvptx registers");
    let mut dim = |hi: u32| rng.random_range(1..=hi);
    let (grid, block) = ((dim(3), dim(3), dim(2)), (dim(8), dim(4), dim(2)));
    let threads = (grid.0 * grid.1 * grid.2 * block.0 * block.1 * block.2) as usize;
    let out = DeviceBuffer::from_host(&stream, &poisoned::<i32>(12 * threads))?;
    let config = LaunchConfig {
        grid_dim: grid,
        block_dim: block,
        shared_mem_bytes: 0,
    };
    // SAFETY: each thread writes its own twelve elements of `out`.
    unsafe { m.registers(&stream, config, DevicePtr::of(&out))? };
    let mut want = vec![0i32; 12 * threads];
    for bz in 0..grid.2 {
        for by in 0..grid.1 {
            for bx in 0..grid.0 {
                for tz in 0..block.2 {
                    for ty in 0..block.1 {
                        for tx in 0..block.0 {
                            let b = bx + grid.0 * (by + grid.1 * bz);
                            let t = tx + block.0 * (ty + block.1 * tz);
                            let at = (b * block.0 * block.1 * block.2 + t) as usize * 12;
                            let values = [
                                tx, ty, tz, bx, by, bz, block.0, block.1, block.2, grid.0, grid.1,
                                grid.2,
                            ];
                            for (k, v) in values.iter().enumerate() {
                                want[at + k] = *v as i32;
                            }
                        }
                    }
                }
            }
        }
    }
    assert_same("registers", &out.to_host_vec(&stream)?, &want);
    Ok(())
}
