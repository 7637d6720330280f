//! Tensor cores for SIMT kernels: warp-wide `mma.sync` matrix products, `ldmatrix` loads of
//! fragments from shared memory, and `cp.async` copies from global to shared memory.
//!
//! Fragment layouts are PTX's (`mma.m16n8k16` with row-major A and column-major B): with
//! `g = lane / 4` and `t = lane % 4`, a lane's A registers hold `A[g][2t..2t+2]`,
//! `A[g+8][2t..2t+2]`, `A[g][2t+8..2t+10]`, `A[g+8][2t+8..2t+10]` (two 16-bit values per
//! `u32`, the lower column in the low half); its B registers hold `B[2t..2t+2][g]` and
//! `B[2t+8..2t+10][g]`; its C and D values are `C[g][2t]`, `C[g][2t+1]`, `C[g+8][2t]`,
//! `C[g+8][2t+1]`. All 32 lanes of the warp must execute these together. The emulator runs
//! them with the same layouts.

use super::SharedArray;
use super::shared::unreachable_on_host;

/// D = A·B + C for a 16x8 tile with K = 16, `f16` inputs, `f32` accumulation.
pub fn mma_m16n8k16_f16(a: [u32; 4], b: [u32; 2], c: [f32; 4]) -> [f32; 4] {
    let _ = (a, b, c);
    unreachable_on_host()
}

/// D = A·B + C for a 16x8 tile with K = 16, `bf16` inputs, `f32` accumulation.
pub fn mma_m16n8k16_bf16(a: [u32; 4], b: [u32; 2], c: [f32; 4]) -> [f32; 4] {
    let _ = (a, b, c);
    unreachable_on_host()
}

/// D = A·B + C for a 16x8 tile with K = 8, `tf32` inputs (the bits of `f32`s, of which the
/// tensor cores read the top 19), `f32` accumulation. A's four registers hold `A[g][t]`,
/// `A[g+8][t]`, `A[g][t+4]`, `A[g+8][t+4]`; B's two hold `B[t][g]`, `B[t+4][g]`.
pub fn mma_m16n8k8_tf32(a: [u32; 4], b: [u32; 2], c: [f32; 4]) -> [f32; 4] {
    let _ = (a, b, c);
    unreachable_on_host()
}

macro_rules! ldmatrix {
    ($($(#[$doc:meta])* $name:ident -> $out:ty),* $(,)?) => {
        $(
            $(#[$doc])*
            ///
            /// # Safety
            /// Every lane of the warp must call it together, each with the element where its row
            /// starts (16 bytes, 16-byte aligned); no thread may write those rows concurrently.
            pub unsafe fn $name<T: Copy, const N: usize, const A: usize>(
                tile: &SharedArray<T, N, A>,
                row_start: usize,
            ) -> $out {
                let _ = (tile, row_start);
                unreachable_on_host()
            }
        )*
    };
}

ldmatrix! {
    /// Loads one 8x8 matrix of 16-bit elements; lanes 0..8 give its rows.
    ldmatrix_x1 -> u32,
    /// Loads two 8x8 matrices; lanes 0..16 give their rows.
    ldmatrix_x2 -> [u32; 2],
    /// Loads four 8x8 matrices; lanes 0..32 give their rows.
    ldmatrix_x4 -> [u32; 4],
    /// `ldmatrix_x1`, transposed.
    ldmatrix_x1_trans -> u32,
    /// `ldmatrix_x2`, transposed.
    ldmatrix_x2_trans -> [u32; 2],
    /// `ldmatrix_x4`, transposed.
    ldmatrix_x4_trans -> [u32; 4],
}

/// Starts copying `bytes` (4, 8 or 16, a constant) from `src[src_index..]` to
/// `dst[dst_index..]`, asynchronously; both ends must be aligned to `bytes`.
///
/// # Safety
/// Nothing may read the destination before a [`cp_async_wait`] (or [`cp_async_wait_all`])
/// covering this copy, followed by a barrier if other threads read it.
pub unsafe fn cp_async<T: Copy, const N: usize, const A: usize>(
    dst: &SharedArray<T, N, A>,
    dst_index: usize,
    src: &[T],
    src_index: usize,
    bytes: u32,
) {
    let _ = (dst, dst_index, src, src_index, bytes);
}

/// Closes the current group of [`cp_async`] copies.
pub fn cp_async_commit() {}

/// Waits until at most `pending` (a constant) committed groups are still in flight.
pub fn cp_async_wait(pending: u32) {
    let _ = pending;
}

/// Waits for every [`cp_async`] copy of the thread.
pub fn cp_async_wait_all() {}
