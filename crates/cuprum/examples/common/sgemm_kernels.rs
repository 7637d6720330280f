//! The two SGEMM kernels (shared-memory tiled, and register-blocked), in one file so that the
//! `sgemm` example (correctness and timing against CUDA C++) and the `cache_speed` example
//! (the same kernels through each way the driver can compile them) run the same source.

use cuprum::cuda_module;
use cuprum::simt::{
    DisjointSlice, SharedArray, SharedWrite2d, SyncPhases, kernel, launch_bounds, launch_contract,
    sync_threads, thread,
};

#[cuda_module]
pub mod kernels {
    use super::*;

    const TILE: usize = 32;

    /// C (m x n) = A (m x k) · B (k x n); a (ceil(n/32), ceil(m/32)) grid of 32x32 blocks.
    #[kernel]
    #[launch_bounds(1024)]
    #[launch_contract(domain = 2, block = (32, 32, 1))]
    pub fn sgemm_tiled(a: &[f32], b: &[f32], mut c: DisjointSlice<f32>, m: u32, n: u32, k: u32) {
        let mut a_tile = SharedWrite2d::<f32, TILE, TILE>::new();
        let mut b_tile = SharedWrite2d::<f32, TILE, TILE>::new();
        let tx = thread::threadIdx_x() as usize;
        let ty = thread::threadIdx_y() as usize;
        let row0 = thread::blockIdx_y() * 32;
        let col0 = thread::blockIdx_x() * 32;
        let mut acc = 0.0f32;
        let mut t = 0u32;
        while t < k {
            // Each thread loads element (ty, tx) of both tiles: the one it owns.
            for (r, kk, slot) in a_tile.mine() {
                let (row, kc) = (row0 + r as u32, t + kk as u32);
                *slot = if row < m && kc < k {
                    a[(row * k + kc) as usize]
                } else {
                    0.0
                };
            }
            for (kk, cc, slot) in b_tile.mine() {
                let (kr, col) = (t + kk as u32, col0 + cc as u32);
                *slot = if kr < k && col < n {
                    b[(kr * n + col) as usize]
                } else {
                    0.0
                };
            }
            let (a_read, b_read) = (a_tile, b_tile).sync();
            for kk in 0..TILE {
                acc = a_read[ty][kk].mul_add(b_read[kk][tx], acc);
            }
            (a_tile, b_tile) = (a_read, b_read).sync();
            t += 32;
        }
        if let Some(out) = c.get_mut_2d(thread::index_2d(), n as usize) {
            *out = acc;
        }
    }

    /// C (m x n) = A (m x k) · B (k x n); a (ceil(n/64), ceil(m/64)) grid of 16x16 blocks.
    #[kernel]
    #[launch_bounds(256)]
    #[launch_contract(block = (16, 16, 1))]
    pub unsafe fn sgemm_reg(a: &[f32], b: &[f32], c: &mut [f32], m: u32, n: u32, k: u32) {
        // A's tile is stored transposed (k-major) with a padded stride of 65, so that both the
        // stores (k varying across threads) and the reads (row varying) avoid bank conflicts.
        let a_tile = SharedArray::<f32, { 16 * 65 }>::uninit();
        let b_tile = SharedArray::<f32, { 16 * 64 }>::uninit();
        let tx = thread::threadIdx_x();
        let ty = thread::threadIdx_y();
        let tid = ty * 16 + tx;
        let row0 = thread::blockIdx_y() * 64;
        let col0 = thread::blockIdx_x() * 64;
        let (mut c00, mut c01, mut c02, mut c03) = (0.0f32, 0.0f32, 0.0f32, 0.0f32);
        let (mut c10, mut c11, mut c12, mut c13) = (0.0f32, 0.0f32, 0.0f32, 0.0f32);
        let (mut c20, mut c21, mut c22, mut c23) = (0.0f32, 0.0f32, 0.0f32, 0.0f32);
        let (mut c30, mut c31, mut c32, mut c33) = (0.0f32, 0.0f32, 0.0f32, 0.0f32);
        let mut t = 0u32;
        while t < k {
            // Each thread loads 4 elements of A's 64x16 tile and 4 of B's 16x64 tile.
            for p in 0..4u32 {
                let e = tid + 256 * p;
                let (r, kc) = (e / 16, e % 16);
                let av = if row0 + r < m && t + kc < k {
                    a[((row0 + r) * k + t + kc) as usize]
                } else {
                    0.0
                };
                unsafe { a_tile.set((kc * 65 + r) as usize, av) };
                let (kr, cc) = (e / 64, e % 64);
                let bv = if t + kr < k && col0 + cc < n {
                    b[((t + kr) * n + col0 + cc) as usize]
                } else {
                    0.0
                };
                unsafe { b_tile.set((kr * 64 + cc) as usize, bv) };
            }
            sync_threads();
            for kk in 0..16u32 {
                let a0 = unsafe { a_tile.get((kk * 65 + ty) as usize) };
                let a1 = unsafe { a_tile.get((kk * 65 + ty + 16) as usize) };
                let a2 = unsafe { a_tile.get((kk * 65 + ty + 32) as usize) };
                let a3 = unsafe { a_tile.get((kk * 65 + ty + 48) as usize) };
                let b0 = unsafe { b_tile.get((kk * 64 + tx) as usize) };
                let b1 = unsafe { b_tile.get((kk * 64 + tx + 16) as usize) };
                let b2 = unsafe { b_tile.get((kk * 64 + tx + 32) as usize) };
                let b3 = unsafe { b_tile.get((kk * 64 + tx + 48) as usize) };
                c00 = a0.mul_add(b0, c00);
                c01 = a0.mul_add(b1, c01);
                c02 = a0.mul_add(b2, c02);
                c03 = a0.mul_add(b3, c03);
                c10 = a1.mul_add(b0, c10);
                c11 = a1.mul_add(b1, c11);
                c12 = a1.mul_add(b2, c12);
                c13 = a1.mul_add(b3, c13);
                c20 = a2.mul_add(b0, c20);
                c21 = a2.mul_add(b1, c21);
                c22 = a2.mul_add(b2, c22);
                c23 = a2.mul_add(b3, c23);
                c30 = a3.mul_add(b0, c30);
                c31 = a3.mul_add(b1, c31);
                c32 = a3.mul_add(b2, c32);
                c33 = a3.mul_add(b3, c33);
            }
            sync_threads();
            t += 16;
        }
        let (r0, r1, r2, r3) = (row0 + ty, row0 + ty + 16, row0 + ty + 32, row0 + ty + 48);
        let (q0, q1, q2, q3) = (col0 + tx, col0 + tx + 16, col0 + tx + 32, col0 + tx + 48);
        if r0 < m {
            if q0 < n {
                c[(r0 * n + q0) as usize] = c00;
            }
            if q1 < n {
                c[(r0 * n + q1) as usize] = c01;
            }
            if q2 < n {
                c[(r0 * n + q2) as usize] = c02;
            }
            if q3 < n {
                c[(r0 * n + q3) as usize] = c03;
            }
        }
        if r1 < m {
            if q0 < n {
                c[(r1 * n + q0) as usize] = c10;
            }
            if q1 < n {
                c[(r1 * n + q1) as usize] = c11;
            }
            if q2 < n {
                c[(r1 * n + q2) as usize] = c12;
            }
            if q3 < n {
                c[(r1 * n + q3) as usize] = c13;
            }
        }
        if r2 < m {
            if q0 < n {
                c[(r2 * n + q0) as usize] = c20;
            }
            if q1 < n {
                c[(r2 * n + q1) as usize] = c21;
            }
            if q2 < n {
                c[(r2 * n + q2) as usize] = c22;
            }
            if q3 < n {
                c[(r2 * n + q3) as usize] = c23;
            }
        }
        if r3 < m {
            if q0 < n {
                c[(r3 * n + q0) as usize] = c30;
            }
            if q1 < n {
                c[(r3 * n + q1) as usize] = c31;
            }
            if q2 < n {
                c[(r3 * n + q2) as usize] = c32;
            }
            if q3 < n {
                c[(r3 * n + q3) as usize] = c33;
            }
        }
    }
}
