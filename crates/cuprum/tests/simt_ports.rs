//! Public CUDA kernels ported as a new user would write them, in their natural form and
//! without `unsafe`: cuda-samples' convolutionSeparable rows kernel, a CSR sparse
//! matrix-vector product, llm.c's `softmax_forward_kernel4`, the particles of NVIDIA's blog
//! post on C++ classes in kernels (`p.advance(dt)` on each element, in place, and `&self`
//! methods of read-only elements). Each runs against a plain-Rust reference on fresh random
//! inputs, over outputs poisoned first, and every element is checked.
//!
//! The other ports of issue 13's twelve live beside the features they exercise:
//! `simt_phased.rs` (transposeNoBankConflicts, MatrixMulCUDA's tiling, histogram256,
//! nbody's integrateBodies with shared tiles), `simt_porting.rs` (the numba mandelbrot,
//! `reduce4<T, blockSize>` as CUDA writes it and, without `unsafe`, through a phased shared
//! array in its split phase, one barrier per halving), `simt_methods.rs` (bitonicSortShared with its
//! by-reference comparator, `unsafe`: its pairs change owners every step). GPU Gems 3's work-efficient (Blelloch)
//! prescan is here, and `unsafe` for the same reason.

mod common;

use common::{assert_same, blocks_for, ctx};
use cuprum::simt::{
    DisjointSlice, SharedArray, SharedWrite, SharedWrite2d, kernel, launch_contract, sync_threads,
    thread, warp,
};
use cuprum::{DeviceBuffer, DeviceCopy, LaunchConfig, LaunchConfig1D, cuda_module};
use cuprum_testkit::poison::poisoned;
use cuprum_testkit::random::{random, rng};
use rand::Rng;

use kernels::{KERNEL_RADIUS, Particle, ROWS_BLOCKDIM_X, ROWS_BLOCKDIM_Y, ROWS_RESULT_STEPS, V3};

#[cuda_module]
mod kernels {
    use super::*;

    pub const KERNEL_RADIUS: usize = 8;
    pub const ROWS_BLOCKDIM_X: usize = 16;
    pub const ROWS_BLOCKDIM_Y: usize = 4;
    pub const ROWS_RESULT_STEPS: usize = 8;
    pub const ROWS_HALO_STEPS: usize = 1;

    /// cuda-samples' `convolutionRowsKernel`: each 16 x 4 block convolves a 4-row strip of
    /// 128 pixels, staging it with a 16-pixel halo on each side in shared memory (each
    /// thread ten pixels of its row, sixteen apart), and each thread writes eight results,
    /// sixteen apart. Pixels outside the image read as zero; any image size.
    #[kernel]
    #[launch_contract(domain = 2, block = (16, 4, 1))]
    pub fn convolution_rows(
        src: &[f32],
        taps: &[f32],
        image_w: usize,
        image_h: usize,
        mut dst: DisjointSlice<f32>,
    ) {
        let mut s_data = SharedWrite2d::<
            f32,
            ROWS_BLOCKDIM_Y,
            { (ROWS_RESULT_STEPS + 2 * ROWS_HALO_STEPS) * ROWS_BLOCKDIM_X },
        >::new();
        // The strip's left edge, halo included, is column x0 - 16 (which may be negative).
        let x0 = thread::blockIdx_x() as usize * ROWS_RESULT_STEPS * ROWS_BLOCKDIM_X;
        let y0 = thread::blockIdx_y() as usize * ROWS_BLOCKDIM_Y;
        let halo = ROWS_HALO_STEPS * ROWS_BLOCKDIM_X;
        for (r, c, slot) in s_data.mine() {
            let y = y0 + r;
            *slot = if x0 + c >= halo && x0 + c - halo < image_w && y < image_h {
                src[y * image_w + x0 + c - halo]
            } else {
                0.0
            };
        }
        let s_data = s_data.sync();
        let strip = ROWS_RESULT_STEPS * ROWS_BLOCKDIM_X;
        for (r, c, out) in dst.block_tile_mut(ROWS_BLOCKDIM_Y, strip, image_w) {
            let mut sum = 0.0f32;
            for j in 0..(2 * KERNEL_RADIUS + 1) {
                sum += taps[2 * KERNEL_RADIUS - j] * s_data[r][c + halo + j - KERNEL_RADIUS];
            }
            *out = sum;
        }
    }

    /// The scalar CSR kernel: one row per thread, `y[row] = sum vals[k] * x[cols[k]]` over
    /// the row's nonzeros.
    #[kernel]
    #[launch_contract(domain = 1, block = (128, 1, 1))]
    pub fn spmv_csr(
        row_ptr: &[u32],
        cols: &[u32],
        vals: &[f32],
        x: &[f32],
        mut y: DisjointSlice<f32>,
    ) {
        let i = thread::index_1d();
        if let Some(out) = y.get_mut(i) {
            let row = i.get();
            let mut sum = 0.0f32;
            for k in row_ptr[row]..row_ptr[row + 1] {
                sum += vals[k as usize] * x[cols[k as usize] as usize];
            }
            *out = sum;
        }
    }

    /// llm.c's `warpReduceMax`.
    pub fn warp_reduce_max(mut val: f32) -> f32 {
        let mut offset = 16;
        while offset > 0 {
            val = val.max(warp::shuffle_xor(val, offset));
            offset /= 2;
        }
        val
    }

    /// llm.c's `warpReduceSum`.
    pub fn warp_reduce_sum(mut val: f32) -> f32 {
        let mut offset = 16;
        while offset > 0 {
            val += warp::shuffle_xor(val, offset);
            offset /= 2;
        }
        val
    }

    /// llm.c's `softmax_forward_kernel4`: one row of `c` per block, the threads striding
    /// over it; each warp reduces with shuffles and leaves its maximum (then its sum) in
    /// shared memory, and every thread combines the warps' values.
    #[kernel]
    #[launch_contract(domain = 1, block = (256, 1, 1))]
    pub fn softmax_forward_kernel4(inp: &[f32], c: usize, mut out: DisjointSlice<f32>) {
        let idx = thread::blockIdx_x() as usize;
        let tid = thread::threadIdx_x() as usize;
        let block = thread::blockDim_x() as usize;
        let warps_per_block = block / 32;
        let mut maxvals = SharedWrite::<f32, 32>::new();
        let mut sumvals = SharedWrite::<f32, 32>::new();
        let mut maxval = f32::NEG_INFINITY;
        let mut i = tid;
        while i < c {
            maxval = maxval.max(inp[idx * c + i]);
            i += block;
        }
        maxval = warp_reduce_max(maxval);
        if let Some(slot) = maxvals.warp_slot() {
            *slot = maxval;
        }
        let maxvals = maxvals.sync();
        let mut offset = maxvals[0];
        for w in 1..warps_per_block {
            offset = offset.max(maxvals[w]);
        }
        for (_, i, o) in out.block_tile_mut(1, c, c) {
            *o = (inp[idx * c + i] - offset).exp();
        }
        let mut sumval = 0.0f32;
        for (_, _, o) in out.block_tile_mut(1, c, c) {
            sumval += *o;
        }
        sumval = warp_reduce_sum(sumval);
        if let Some(slot) = sumvals.warp_slot() {
            *slot = sumval;
        }
        let sumvals = sumvals.sync();
        let mut sum = sumvals[0];
        for w in 1..warps_per_block {
            sum += sumvals[w];
        }
        for (_, _, o) in out.block_tile_mut(1, c, c) {
            *o /= sum;
        }
    }

    #[repr(C)]
    #[derive(Clone, Copy, Debug, PartialEq, DeviceCopy)]
    pub struct V3 {
        pub x: f32,
        pub y: f32,
        pub z: f32,
    }

    impl V3 {
        pub fn add_scaled(&mut self, o: V3, s: f32) {
            self.x += o.x * s;
            self.y += o.y * s;
            self.z += o.z * s;
        }

        pub fn length(&self) -> f32 {
            (self.x * self.x + self.y * self.y + self.z * self.z).sqrt()
        }
    }

    /// The blog post's `particle`: position, velocity and the distance travelled so far.
    #[repr(C)]
    #[derive(Clone, Copy, Debug, PartialEq, DeviceCopy)]
    pub struct Particle {
        pub position: V3,
        pub velocity: V3,
        pub total_distance: f32,
    }

    impl Particle {
        /// Moves by `dist` along the velocity, bouncing off the floor at `y = 0`.
        pub fn advance(&mut self, dist: f32) {
            self.position.add_scaled(self.velocity, dist);
            if self.position.y < 0.0 {
                self.position.y = -self.position.y;
                self.velocity.y = -self.velocity.y;
            }
            self.total_distance += self.velocity.length() * dist;
        }

        pub fn distance(&self) -> f32 {
            self.total_distance
        }
    }

    /// Each particle's speed times its distance so far, through `&self` methods of elements
    /// (and of a field of one) of a read-only slice.
    #[kernel]
    #[launch_contract(domain = 1, block = (128, 1, 1))]
    pub fn speed_times_distance(particles: &[Particle], mut out: DisjointSlice<f32>) {
        let i = thread::index_1d();
        if let Some(o) = out.get_mut(i) {
            *o = particles[i.get()].velocity.length() * particles[i.get()].distance();
        }
    }

    /// GPU Gems 3's work-efficient (Blelloch) `prescan`: each block of 128 threads scans
    /// its 256 elements exclusively (wrapping) in shared memory, an up-sweep that builds
    /// partial sums in place and a down-sweep that distributes them. `unsafe`: in each step
    /// a thread writes an element whose index depends on the step, not one it owns.
    #[kernel]
    #[launch_contract(block = (128, 1, 1))]
    pub unsafe fn prescan(g_idata: &[u32], g_odata: &mut [u32]) {
        let temp = SharedArray::<u32, 256>::uninit();
        let n = 256;
        let thid = thread::threadIdx_x() as usize;
        let base = thread::blockIdx_x() as usize * n;
        temp.set(
            2 * thid,
            if base + 2 * thid < g_idata.len() {
                g_idata[base + 2 * thid]
            } else {
                0
            },
        );
        temp.set(
            2 * thid + 1,
            if base + 2 * thid + 1 < g_idata.len() {
                g_idata[base + 2 * thid + 1]
            } else {
                0
            },
        );
        let mut offset = 1;
        let mut d = n >> 1;
        while d > 0 {
            sync_threads();
            if thid < d {
                let ai = offset * (2 * thid + 1) - 1;
                let bi = offset * (2 * thid + 2) - 1;
                temp.set(bi, temp.get(bi).wrapping_add(temp.get(ai)));
            }
            offset *= 2;
            d >>= 1;
        }
        if thid == 0 {
            temp.set(n - 1, 0);
        }
        let mut d = 1;
        while d < n {
            offset >>= 1;
            sync_threads();
            if thid < d {
                let ai = offset * (2 * thid + 1) - 1;
                let bi = offset * (2 * thid + 2) - 1;
                let t = temp.get(ai);
                temp.set(ai, temp.get(bi));
                temp.set(bi, temp.get(bi).wrapping_add(t));
            }
            d *= 2;
        }
        sync_threads();
        for k in 2 * thid..2 * thid + 2 {
            if base + k < g_odata.len() {
                g_odata[base + k] = temp.get(k);
            }
        }
    }

    /// `advanceParticles`: `pArray[idx].advance(dt)` for each particle, in place.
    #[kernel]
    #[launch_contract(domain = 1, block = (128, 1, 1))]
    pub fn advance_particles(dt: f32, mut particles: DisjointSlice<Particle>) {
        if let Some(p) = particles.get_mut(thread::index_1d()) {
            p.advance(dt);
        }
    }
}

/// `got` equals `want` to within `rel` of each element's magnitude (plus `abs`), element by
/// element, naming the first that is not.
fn assert_close(what: &str, got: &[f32], want: &[f32], rel: f32, abs: f32) {
    assert_eq!(got.len(), want.len(), "{what}: lengths differ");
    for (k, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= rel * w.abs() + abs,
            "{what}: element {k} is {g}, want {w}"
        );
    }
}

#[test]
fn convolution_rows_stages_a_strip_with_its_halo_and_writes_eight_results_per_thread()
-> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let mut rng = rng("convolution_rows");
    let strip = ROWS_RESULT_STEPS * ROWS_BLOCKDIM_X;
    for (w, h) in [
        (1usize, 1usize),
        (128, 4),
        (300, 9),
        (rng.random_range(1..400), 13),
    ] {
        // Small integers: every sum is exact, whatever the order.
        let src: Vec<f32> = (0..w * h)
            .map(|_| rng.random_range(-8..=8) as f32)
            .collect();
        let taps: Vec<f32> = (0..2 * KERNEL_RADIUS + 1)
            .map(|_| rng.random_range(-4..=4) as f32)
            .collect();
        let (ds, dt) = (
            DeviceBuffer::from_host(&stream, &src)?,
            DeviceBuffer::from_host(&stream, &taps)?,
        );
        let mut dd = DeviceBuffer::from_host(&stream, &poisoned::<f32>(w * h))?;
        let p = m.prepare_convolution_rows(LaunchConfig {
            grid_dim: (
                blocks_for(w, strip as u32),
                blocks_for(h, ROWS_BLOCKDIM_Y as u32),
                1,
            ),
            block_dim: (ROWS_BLOCKDIM_X as u32, ROWS_BLOCKDIM_Y as u32, 1),
            shared_mem_bytes: 0,
        })?;
        m.convolution_rows(&stream, &p, &ds, &dt, w, h, &mut dd)?;
        let r = KERNEL_RADIUS as isize;
        let want: Vec<f32> = (0..w * h)
            .map(|k| {
                let (y, x) = ((k / w) as isize, (k % w) as isize);
                (-r..=r).fold(0.0f32, |sum, j| {
                    let xs = x + j;
                    let v = if (0..w as isize).contains(&xs) {
                        src[(y * w as isize + xs) as usize]
                    } else {
                        0.0
                    };
                    sum + taps[(r - j) as usize] * v
                })
            })
            .collect();
        assert_same(
            &format!("convolution_rows of {w}x{h}"),
            &dd.to_host_vec(&stream)?,
            &want,
        );
    }
    Ok(())
}

#[test]
fn spmv_csr_sums_each_rows_nonzeros() -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let mut rng = rng("spmv_csr");
    for (rows, ncols) in [(1usize, 1usize), (300, 200), (1000, 37)] {
        let mut row_ptr = vec![0u32];
        let (mut cols, mut vals) = (Vec::new(), Vec::new());
        for _ in 0..rows {
            // Empty rows too.
            for _ in 0..rng.random_range(0..6) {
                cols.push(rng.random_range(0..ncols as u32));
                vals.push(rng.random_range(-8..=8) as f32);
            }
            row_ptr.push(cols.len() as u32);
        }
        let x: Vec<f32> = (0..ncols)
            .map(|_| rng.random_range(-8..=8) as f32)
            .collect();
        let bufs = (
            DeviceBuffer::from_host(&stream, &row_ptr)?,
            DeviceBuffer::from_host(&stream, &cols)?,
            DeviceBuffer::from_host(&stream, &vals)?,
            DeviceBuffer::from_host(&stream, &x)?,
        );
        let mut y = DeviceBuffer::from_host(&stream, &poisoned::<f32>(rows))?;
        let p = m.prepare_spmv_csr(LaunchConfig1D::for_len(rows, 128))?;
        m.spmv_csr(&stream, &p, &bufs.0, &bufs.1, &bufs.2, &bufs.3, &mut y)?;
        let want: Vec<f32> = (0..rows)
            .map(|r| {
                (row_ptr[r]..row_ptr[r + 1]).fold(0.0f32, |s, k| {
                    s + vals[k as usize] * x[cols[k as usize] as usize]
                })
            })
            .collect();
        assert_same(
            &format!("spmv_csr of {rows} rows"),
            &y.to_host_vec(&stream)?,
            &want,
        );
    }
    Ok(())
}

#[test]
fn softmax_forward_kernel4_normalizes_each_row() -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let mut rng = rng("softmax_forward_kernel4");
    for (n, c) in [(1usize, 1usize), (4, 256), (7, 1000), (3, 50)] {
        let inp = random(&mut rng, n * c, -20.0f32, 20.0);
        let di = DeviceBuffer::from_host(&stream, &inp)?;
        let mut out = DeviceBuffer::from_host(&stream, &poisoned::<f32>(n * c))?;
        let p = m.prepare_softmax_forward_kernel4(LaunchConfig1D::new(n as u32, 256, 0))?;
        m.softmax_forward_kernel4(&stream, &p, &di, c, &mut out)?;
        let mut want = Vec::with_capacity(n * c);
        for row in inp.chunks(c) {
            let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let e: Vec<f64> = row.iter().map(|&v| f64::from(v - max).exp()).collect();
            let sum: f64 = e.iter().sum();
            want.extend(e.iter().map(|v| (v / sum) as f32));
        }
        assert_close(
            &format!("softmax of {n}x{c}"),
            &out.to_host_vec(&stream)?,
            &want,
            1e-5,
            1e-12,
        );
    }
    Ok(())
}

#[test]
fn blelloch_prescan_scans_each_block_exclusively() -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let mut rng = rng("blelloch_prescan");
    for n in [1usize, 255, 256, 1000, 70_001] {
        let x = random(&mut rng, n, 0u32, u32::MAX);
        let dx = DeviceBuffer::from_host(&stream, &x)?;
        let mut dy = DeviceBuffer::from_host(&stream, &poisoned::<u32>(n))?;
        let config = LaunchConfig {
            grid_dim: (n.div_ceil(256) as u32, 1, 1),
            block_dim: (128, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: block b writes only elements [256 b, 256 b + 256) of the output, each once,
        // and its shared-memory steps are separated by barriers every thread reaches.
        unsafe { m.prescan(&stream, config, &dx, &mut dy)? };
        let mut want = Vec::with_capacity(n);
        for chunk in x.chunks(256) {
            let mut sum = 0u32;
            for &v in chunk {
                want.push(sum);
                sum = sum.wrapping_add(v);
            }
        }
        assert_same(&format!("prescan of {n}"), &dy.to_host_vec(&stream)?, &want);
    }
    Ok(())
}

#[test]
fn particles_advance_in_place_through_a_mut_self_method() -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let mut rng = rng("advance_particles");
    for n in [1usize, 129, 5000] {
        let mut v3 = |lo: f32, hi: f32| V3 {
            x: rng.random_range(lo..hi),
            y: rng.random_range(lo..hi),
            z: rng.random_range(lo..hi),
        };
        let ps: Vec<Particle> = (0..n)
            .map(|_| Particle {
                position: v3(-1.0, 1.0),
                velocity: v3(-5.0, 5.0),
                total_distance: 0.0,
            })
            .collect();
        let dt = 0.05f32;
        let mut dp = DeviceBuffer::from_host(&stream, &ps)?;
        let p = m.prepare_advance_particles(LaunchConfig1D::for_len(n, 128))?;
        for _ in 0..3 {
            m.advance_particles(&stream, &p, dt, &mut dp)?;
        }
        let want: Vec<Particle> = ps
            .iter()
            .map(|&q| {
                let mut q = q;
                for _ in 0..3 {
                    q.advance(dt);
                }
                q
            })
            .collect();
        assert_same(&format!("{n} particles"), &dp.to_host_vec(&stream)?, &want);
        let mut out = DeviceBuffer::from_host(&stream, &poisoned::<f32>(n))?;
        let p = m.prepare_speed_times_distance(LaunchConfig1D::for_len(n, 128))?;
        m.speed_times_distance(&stream, &p, &dp, &mut out)?;
        let want: Vec<f32> = want
            .iter()
            .map(|q| q.velocity.length() * q.distance())
            .collect();
        assert_same("speed times distance", &out.to_host_vec(&stream)?, &want);
    }
    Ok(())
}
