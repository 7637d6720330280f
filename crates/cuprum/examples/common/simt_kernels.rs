//! The kernels of the `bench_simt` example (a grid-stride vector add, SAXPY, a row softmax and
//! a bf16 GEMM on the tensor cores with `mma.sync`), in one file so that `bench_simt` (each
//! case checked and timed against CUDA C++) and `cache_speed --module simt` (the same module
//! through each way the driver can compile it, and through the compile cache in two processes)
//! run the same source, and so load the same PTX under the same cache key.

use cuprum::cuda_module;
use cuprum::simt::mma::mma_m16n8k16_bf16;
use cuprum::simt::{
    SharedArray, kernel, launch_bounds, launch_contract, sync_threads, thread, warp,
};

#[cuda_module]
pub mod kernels {
    use super::*;

    /// c = a + b; each thread handles 4 consecutive elements per step of a grid-stride loop,
    /// and the first threads handle the tail that is not a multiple of 4.
    #[kernel]
    #[launch_bounds(256)]
    #[launch_contract(block = (256, 1, 1))]
    pub unsafe fn vecadd_gridstride(a: &[f32], b: &[f32], c: &mut [f32]) {
        let n = c.len();
        let n4 = n / 4;
        let stride = (thread::gridDim_x() * thread::blockDim_x()) as usize;
        let first = thread::index_1d().get();
        let mut i = first;
        while i < n4 {
            let j = 4 * i;
            // All four sums before the first store: a failing bounds check of a or b must not
            // land between two stores of c, or the optimizer could not merge them (exactly)
            // into one 16-byte store.
            let s0 = a[j] + b[j];
            let s1 = a[j + 1] + b[j + 1];
            let s2 = a[j + 2] + b[j + 2];
            let s3 = a[j + 3] + b[j + 3];
            c[j] = s0;
            c[j + 1] = s1;
            c[j + 2] = s2;
            c[j + 3] = s3;
            i += stride;
        }
        if first < n - 4 * n4 {
            let j = 4 * n4 + first;
            c[j] = a[j] + b[j];
        }
    }

    /// y = alpha * x + y, one element per thread.
    #[kernel]
    #[launch_bounds(256)]
    #[launch_contract(block = (256, 1, 1))]
    pub unsafe fn saxpy(alpha: f32, x: &[f32], y: &mut [f32]) {
        let i = thread::index_1d().get();
        if i < y.len() {
            y[i] = alpha.mul_add(x[i], y[i]);
        }
    }

    /// y[row] = softmax(x[row]) for rows of `cols` elements; one 256-thread block per row:
    /// the row's max, then the sum of exp(x - max), then the normalized values. Each
    /// reduction is a butterfly across the warp, then across the 8 warps through shared memory.
    #[kernel]
    #[launch_bounds(256)]
    #[launch_contract(block = (256, 1, 1))]
    pub unsafe fn softmax_rows(x: &[f32], y: &mut [f32], cols: u32) {
        let maxes = SharedArray::<f32, 8>::uninit();
        let sums = SharedArray::<f32, 8>::uninit();
        let cols = cols as usize;
        let base = thread::blockIdx_x() as usize * cols;
        let tid = thread::threadIdx_x() as usize;
        let lane = thread::lane_id();
        let warp_id = thread::warp_id() as usize;

        let mut m = f32::NEG_INFINITY;
        let mut j = tid;
        while j < cols {
            m = m.max(x[base + j]);
            j += 256;
        }
        let mut offset = 16u32;
        while offset > 0 {
            m = m.max(warp::shuffle_xor(m, offset));
            offset /= 2;
        }
        if lane == 0 {
            unsafe { maxes.set(warp_id, m) };
        }
        sync_threads();
        let mut row_max = unsafe { maxes.get(0) };
        for w in 1..8usize {
            row_max = row_max.max(unsafe { maxes.get(w) });
        }

        let mut s = 0.0f32;
        let mut j = tid;
        while j < cols {
            s += (x[base + j] - row_max).exp();
            j += 256;
        }
        let mut offset = 16u32;
        while offset > 0 {
            s += warp::shuffle_xor(s, offset);
            offset /= 2;
        }
        if lane == 0 {
            unsafe { sums.set(warp_id, s) };
        }
        sync_threads();
        let mut total = 0.0f32;
        for w in 0..8usize {
            total += unsafe { sums.get(w) };
        }
        let inv = 1.0 / total;

        let mut j = tid;
        while j < cols {
            y[base + j] = (x[base + j] - row_max).exp() * inv;
            j += 256;
        }
    }

    /// C (m x n, f32, row-major) = A (m x k, bf16, row-major) · B, with B given transposed
    /// (`bt`: n x k, row-major), both as u32 words of two consecutive bf16 along k. A block
    /// of 4 warps (2 x 2) computes a 64x64 tile of C; each warp a 32x32 tile: 2 x 4 mma tiles
    /// of 16x8, its fragments loaded straight from global memory (through L1) for each
    /// 16-wide step of k. m and n must be multiples of 64, k of 16. Grid: (n/64, m/64).
    #[kernel]
    #[launch_bounds(128)]
    #[launch_contract(block = (128, 1, 1))]
    pub unsafe fn hgemm_mma(a: &[u32], bt: &[u32], c: &mut [f32], n: u32, k: u32) {
        let lane = thread::lane_id() as usize;
        let w = thread::warp_id() as usize;
        let (g, t) = (lane / 4, lane % 4);
        let n = n as usize;
        let kw = k as usize / 2;
        let row0 = thread::blockIdx_y() as usize * 64 + (w / 2) * 32;
        let col0 = thread::blockIdx_x() as usize * 64 + (w % 2) * 32;
        let mut c00 = [0.0f32; 4];
        let mut c01 = [0.0f32; 4];
        let mut c02 = [0.0f32; 4];
        let mut c03 = [0.0f32; 4];
        let mut c10 = [0.0f32; 4];
        let mut c11 = [0.0f32; 4];
        let mut c12 = [0.0f32; 4];
        let mut c13 = [0.0f32; 4];
        // Word offsets of this lane's A rows (g, g + 8 of each 16-row tile) and B columns.
        let ar0 = (row0 + g) * kw + t;
        let ar1 = (row0 + 16 + g) * kw + t;
        let e8 = 8 * kw;
        let bc0 = (col0 + g) * kw + t;
        let bc1 = (col0 + 8 + g) * kw + t;
        let bc2 = (col0 + 16 + g) * kw + t;
        let bc3 = (col0 + 24 + g) * kw + t;
        let mut kk = 0usize;
        while kk < kw {
            let a0 = [
                a[ar0 + kk],
                a[ar0 + e8 + kk],
                a[ar0 + kk + 4],
                a[ar0 + e8 + kk + 4],
            ];
            let a1 = [
                a[ar1 + kk],
                a[ar1 + e8 + kk],
                a[ar1 + kk + 4],
                a[ar1 + e8 + kk + 4],
            ];
            let b0 = [bt[bc0 + kk], bt[bc0 + kk + 4]];
            let b1 = [bt[bc1 + kk], bt[bc1 + kk + 4]];
            let b2 = [bt[bc2 + kk], bt[bc2 + kk + 4]];
            let b3 = [bt[bc3 + kk], bt[bc3 + kk + 4]];
            c00 = mma_m16n8k16_bf16(a0, b0, c00);
            c01 = mma_m16n8k16_bf16(a0, b1, c01);
            c02 = mma_m16n8k16_bf16(a0, b2, c02);
            c03 = mma_m16n8k16_bf16(a0, b3, c03);
            c10 = mma_m16n8k16_bf16(a1, b0, c10);
            c11 = mma_m16n8k16_bf16(a1, b1, c11);
            c12 = mma_m16n8k16_bf16(a1, b2, c12);
            c13 = mma_m16n8k16_bf16(a1, b3, c13);
            kk += 8;
        }
        // Lane (g, t) holds C[g][2t], C[g][2t+1], C[g+8][2t], C[g+8][2t+1] of each tile.
        let r0 = (row0 + g) * n + col0 + 2 * t;
        let r1 = (row0 + 16 + g) * n + col0 + 2 * t;
        let e8 = 8 * n;
        c[r0] = c00[0];
        c[r0 + 1] = c00[1];
        c[r0 + e8] = c00[2];
        c[r0 + e8 + 1] = c00[3];
        c[r1] = c10[0];
        c[r1 + 1] = c10[1];
        c[r1 + e8] = c10[2];
        c[r1 + e8 + 1] = c10[3];
        c[r0 + 8] = c01[0];
        c[r0 + 8 + 1] = c01[1];
        c[r0 + e8 + 8] = c01[2];
        c[r0 + e8 + 8 + 1] = c01[3];
        c[r1 + 8] = c11[0];
        c[r1 + 8 + 1] = c11[1];
        c[r1 + e8 + 8] = c11[2];
        c[r1 + e8 + 8 + 1] = c11[3];
        c[r0 + 16] = c02[0];
        c[r0 + 16 + 1] = c02[1];
        c[r0 + e8 + 16] = c02[2];
        c[r0 + e8 + 16 + 1] = c02[3];
        c[r1 + 16] = c12[0];
        c[r1 + 16 + 1] = c12[1];
        c[r1 + e8 + 16] = c12[2];
        c[r1 + e8 + 16 + 1] = c12[3];
        c[r0 + 24] = c03[0];
        c[r0 + 24 + 1] = c03[1];
        c[r0 + e8 + 24] = c03[2];
        c[r0 + e8 + 24 + 1] = c03[3];
        c[r1 + 24] = c13[0];
        c[r1 + 24 + 1] = c13[1];
        c[r1 + e8 + 24] = c13[2];
        c[r1 + e8 + 24 + 1] = c13[3];
    }
}
