//! Hopper's `wgmma` written in Rust source (`cuprum::simt::wgmma`, cuda-oxide's names and
//! cuprum's general forms), on whichever backend `CUPRUM_DEVICE` selects.
//!
//! `tests/wgmma.rs` pins the IR statements against the hardware; this file checks what the
//! front end makes of the device API: descriptors computed in the kernel
//! (`make_smem_desc_swizzled`), accumulators that are local arrays (nested and flat, rows of
//! them), K loops accumulating in place, each input type, N from 8 to 256, A from registers,
//! run-time `scale_d`, negation and a transposed B, elements at run-time positions; a K loop
//! of run-time length, and that ptxas does not serialize the module's wgmma pipelines;
//! `setmaxnreg` with named barriers between warpgroups; `stmatrix`. Each kernel copies an image of A and B
//! (laid out K-major with the 128-byte swizzle, as a TMA box of 64 `bf16`s per row lands, by
//! `cuprum_ir::wgmma::Descriptor::element_address`) into a 1024-aligned shared array, runs
//! one warpgroup's MMAs and stores every accumulator element; the host compares each with a
//! plain-Rust `D = A B + C` on small random integers, whose products and sums are exact, so
//! the comparison is bit for bit. Outputs are poisoned. On the emulator only: the planted
//! bugs written in source (an accumulator read before the wait, a missing fence).

mod common;

use common::ctx;
use cuprum::ir::Swizzle;
use cuprum::ir::wgmma::{Descriptor, Major, WgmmaType};
use cuprum::simt::wgmma::*;
use cuprum::simt::{SharedArray, fence_proxy_async, kernel, max_registers, sync_threads, thread};
use cuprum::{BackendKind, DeviceBuffer, Error, LaunchConfig, cuda_module};
use cuprum_emu::EmuError;
use cuprum_testkit::poison::poisoned;
use half::{bf16, f16};
use rand::Rng;

/// 32-bit words of the shared image: A (64 rows of 128 bytes) at 0, B (up to 256 rows of 128
/// bytes) at [`B_AT`].
const IMAGE_WORDS: usize = 10240;
/// Where B starts, in bytes (a multiple of the swizzle's 1024-byte period).
const B_AT: u32 = 8192;

#[cuda_module]
mod kernels {
    use super::*;

    /// cuda-oxide's own call: one `m64n64k16` bf16 MMA into its `Acc64x64` from
    /// `zero_accumulator()`.
    #[kernel]
    pub unsafe fn bf16_n64(img: &[u32], cin: &[f32], out: &mut [f32]) {
        static mut SMEM: SharedArray<u32, IMAGE_WORDS, 1024> = SharedArray::UNINIT;
        let t = thread::threadIdx_x() as usize;
        unsafe {
            for j in 0..IMAGE_WORDS / 128 {
                SMEM[t + 128 * j] = img[t + 128 * j];
            }
            // wgmma reads through the async proxy: the generic writes are fenced for it.
            fence_proxy_async();
            sync_threads();
            let base = &raw const SMEM as *const u8;
            let da = make_smem_desc_swizzled(base, 16, 1024, 128);
            let db = make_smem_desc_swizzled(base.add(B_AT as usize), 16, 1024, 128);
            let mut acc: Acc64x64 = zero_accumulator();
            for i in 0..4 {
                for j in 0..8 {
                    acc[i][j] += cin[t * 32 + i * 8 + j];
                }
            }
            wgmma_fence();
            wgmma_mma_m64n64k16_f32_bf16(&mut acc, da, db);
            wgmma_commit_group();
            wgmma_wait_group::<0>();
            for i in 0..4 {
                for j in 0..8 {
                    out[t * 32 + i * 8 + j] = acc[i][j];
                }
            }
        }
    }

    /// The widest tile, `m64n256`, over K = 64: four MMAs accumulating in place, the
    /// descriptors stepped 32 bytes (16 `bf16`s) along the swizzled rows.
    #[kernel]
    pub unsafe fn bf16_n256_k64(img: &[u32], cin: &[f32], out: &mut [f32]) {
        static mut SMEM: SharedArray<u32, IMAGE_WORDS, 1024> = SharedArray::UNINIT;
        let t = thread::threadIdx_x() as usize;
        unsafe {
            for j in 0..IMAGE_WORDS / 128 {
                SMEM[t + 128 * j] = img[t + 128 * j];
            }
            // wgmma reads through the async proxy: the generic writes are fenced for it.
            fence_proxy_async();
            sync_threads();
            let base = &raw const SMEM as *const u8;
            let mut acc = [[0.0f32; 8]; 16];
            for i in 0..16 {
                for j in 0..8 {
                    acc[i][j] = cin[t * 128 + i * 8 + j];
                }
            }
            wgmma_fence();
            for s in 0..4 {
                let da = make_smem_desc_swizzled(base.add(32 * s), 16, 1024, 128);
                let db = make_smem_desc_swizzled(base.add(B_AT as usize + 32 * s), 16, 1024, 128);
                wgmma_mma_m64n256k16_f32_bf16(&mut acc, da, db);
            }
            wgmma_commit_group();
            wgmma_wait_group::<0>();
            for i in 0..16 {
                for j in 0..8 {
                    out[t * 128 + i * 8 + j] = acc[i][j];
                }
            }
        }
    }

    /// The narrowest tile, `m64n8k16` with `f16` inputs, into a flat `[f32; 4]`.
    #[kernel]
    pub unsafe fn f16_n8(img: &[u32], cin: &[f32], out: &mut [f32]) {
        static mut SMEM: SharedArray<u32, IMAGE_WORDS, 1024> = SharedArray::UNINIT;
        let t = thread::threadIdx_x() as usize;
        unsafe {
            for j in 0..IMAGE_WORDS / 128 {
                SMEM[t + 128 * j] = img[t + 128 * j];
            }
            // wgmma reads through the async proxy: the generic writes are fenced for it.
            fence_proxy_async();
            sync_threads();
            let base = &raw const SMEM as *const u8;
            let da = make_smem_desc_swizzled(base, 16, 1024, 128);
            let db = make_smem_desc_swizzled(base.add(B_AT as usize), 16, 1024, 128);
            let mut acc = [0.0f32; 4];
            for i in 0..4 {
                acc[i] = cin[t * 4 + i];
            }
            wgmma_fence();
            wgmma_mma_m64n8k16_f32_f16(&mut acc, da, db);
            wgmma_commit_group();
            wgmma_wait_group::<0>();
            for i in 0..4 {
                out[t * 4 + i] = acc[i];
            }
        }
    }

    /// `tf32` (K = 8) at `N = 24` (a flat `[f32; 12]`): two MMAs make K = 16, in two
    /// committed groups, with a partial wait between the commits.
    #[kernel]
    pub unsafe fn tf32_n24_k16(img: &[u32], cin: &[f32], out: &mut [f32]) {
        static mut SMEM: SharedArray<u32, IMAGE_WORDS, 1024> = SharedArray::UNINIT;
        let t = thread::threadIdx_x() as usize;
        unsafe {
            for j in 0..IMAGE_WORDS / 128 {
                SMEM[t + 128 * j] = img[t + 128 * j];
            }
            // wgmma reads through the async proxy: the generic writes are fenced for it.
            fence_proxy_async();
            sync_threads();
            let base = &raw const SMEM as *const u8;
            let mut acc = [0.0f32; 12];
            for i in 0..12 {
                acc[i] = cin[t * 12 + i];
            }
            wgmma_fence();
            let da = make_smem_desc_swizzled(base, 16, 1024, 128);
            let db = make_smem_desc_swizzled(base.add(B_AT as usize), 16, 1024, 128);
            wgmma_mma_m64n24k8_f32_tf32(&mut acc, da, db);
            wgmma_commit_group();
            let da = make_smem_desc_swizzled(base.add(32), 16, 1024, 128);
            let db = make_smem_desc_swizzled(base.add(B_AT as usize + 32), 16, 1024, 128);
            wgmma_mma_m64n24k8_f32_tf32(&mut acc, da, db);
            wgmma_commit_group();
            wgmma_wait_group::<1>();
            wgmma_wait_group::<0>();
            for i in 0..12 {
                out[t * 12 + i] = acc[i];
            }
        }
    }

    /// cuprum's general form with A from registers (`afrag`: each thread's four words), B
    /// negated, and `scale_d` computed at run time (`accumulate`), into the second row of two
    /// `m64n32` accumulators (`accs[1]`).
    #[kernel]
    pub unsafe fn bf16_reg_a_n32(
        img: &[u32],
        afrag: &[u32],
        cin: &[f32],
        accumulate: u32,
        out: &mut [f32],
    ) {
        static mut SMEM: SharedArray<u32, IMAGE_WORDS, 1024> = SharedArray::UNINIT;
        let t = thread::threadIdx_x() as usize;
        unsafe {
            for j in 0..IMAGE_WORDS / 128 {
                SMEM[t + 128 * j] = img[t + 128 * j];
            }
            // wgmma reads through the async proxy: the generic writes are fenced for it.
            fence_proxy_async();
            sync_threads();
            let base = &raw const SMEM as *const u8;
            let db = make_smem_desc_swizzled(base.add(B_AT as usize), 16, 1024, 128);
            let mut accs = [[[0.0f32; 8]; 2]; 2];
            for i in 0..2 {
                for j in 0..8 {
                    accs[1][i][j] = cin[t * 16 + i * 8 + j];
                }
            }
            let a = [
                afrag[4 * t],
                afrag[4 * t + 1],
                afrag[4 * t + 2],
                afrag[4 * t + 3],
            ];
            wgmma_fence();
            wgmma_mma_f32_bf16_reg_a(
                &mut accs[1],
                a,
                db,
                WgmmaFlags {
                    scale_d: accumulate != 0,
                    negate_b: true,
                    ..WgmmaFlags::ACCUMULATE
                },
            );
            wgmma_commit_group();
            wgmma_wait_group::<0>();
            for i in 0..2 {
                for j in 0..8 {
                    out[t * 16 + i * 8 + j] = accs[1][i][j];
                }
            }
        }
    }

    /// The general form with `f16` inputs, B stored MN-major (`transpose_b`) and A negated,
    /// `m64n16`.
    #[kernel]
    pub unsafe fn f16_n16_transposed_b(img: &[u32], cin: &[f32], out: &mut [f32]) {
        static mut SMEM: SharedArray<u32, IMAGE_WORDS, 1024> = SharedArray::UNINIT;
        let t = thread::threadIdx_x() as usize;
        unsafe {
            for j in 0..IMAGE_WORDS / 128 {
                SMEM[t + 128 * j] = img[t + 128 * j];
            }
            // wgmma reads through the async proxy: the generic writes are fenced for it.
            fence_proxy_async();
            sync_threads();
            let base = &raw const SMEM as *const u8;
            let da = make_smem_desc_swizzled(base, 16, 1024, 128);
            let db = make_smem_desc_swizzled(base.add(B_AT as usize), 2048, 1024, 128);
            let mut acc = [[0.0f32; 8]; 1];
            for j in 0..8 {
                acc[0][j] = cin[t * 8 + j];
            }
            wgmma_fence();
            wgmma_mma_f32_f16(
                &mut acc,
                da,
                db,
                WgmmaFlags {
                    transpose_b: true,
                    negate_a: true,
                    ..WgmmaFlags::ACCUMULATE
                },
            );
            wgmma_commit_group();
            wgmma_wait_group::<0>();
            for j in 0..8 {
                out[t * 8 + j] = acc[0][j];
            }
        }
    }

    /// An accumulating K loop with a run-time trip count (`k_steps` MMAs of `m64n128k16`), one
    /// fence before it and one wait after it: the shape ptxas must not serialize.
    #[kernel]
    pub unsafe fn k_loop_n128(img: &[u32], cin: &[f32], k_steps: u32, out: &mut [f32]) {
        static mut SMEM: SharedArray<u32, IMAGE_WORDS, 1024> = SharedArray::UNINIT;
        let t = thread::threadIdx_x() as usize;
        unsafe {
            for j in 0..IMAGE_WORDS / 128 {
                SMEM[t + 128 * j] = img[t + 128 * j];
            }
            // wgmma reads through the async proxy: the generic writes are fenced for it.
            fence_proxy_async();
            sync_threads();
            let base = &raw const SMEM as *const u8;
            let mut acc = [[0.0f32; 8]; 8];
            for i in 0..8 {
                for j in 0..8 {
                    acc[i][j] = cin[t * 64 + i * 8 + j];
                }
            }
            wgmma_fence();
            for s in 0..k_steps as usize {
                let da = make_smem_desc_swizzled(base.add(32 * s), 16, 1024, 128);
                let db = make_smem_desc_swizzled(base.add(B_AT as usize + 32 * s), 16, 1024, 128);
                wgmma_mma_m64n128k16_f32_bf16(&mut acc, da, db);
            }
            wgmma_commit_group();
            wgmma_wait_group::<0>();
            for i in 0..8 {
                for j in 0..8 {
                    out[t * 64 + i * 8 + j] = acc[i][j];
                }
            }
        }
    }

    /// Warp specialization without the MMAs: warpgroup 0 (the producer) gives registers back
    /// and fills a shared array, then arrives on named barrier 1; warpgroup 1 (the consumer)
    /// takes registers, waits on the barrier and copies the array out.
    #[kernel]
    #[max_registers(168)]
    pub unsafe fn producer_consumer(x: &[u32], out: &mut [u32]) {
        static mut STAGE: SharedArray<u32, 128> = SharedArray::UNINIT;
        let t = thread::threadIdx_x() as usize;
        unsafe {
            if t < 128 {
                setmaxnreg_dec::<40>();
                STAGE[t] = x[t] ^ 0x0F0F_0F0F;
                named_barrier_arrive(1, 256);
            } else {
                setmaxnreg_inc::<232>();
                named_barrier_sync(1, 256);
                out[t - 128] = STAGE[255 - t];
            }
        }
    }

    /// One warp stores four 8x8 matrices of 16-bit elements with `stmatrix` (transposed when
    /// `trans` is set), and every lane reads back four words of them.
    #[kernel]
    pub unsafe fn stmatrix_x4(vals: &[u32], trans: u32, out: &mut [u32]) {
        static mut TILE: SharedArray<u32, 128> = SharedArray::UNINIT;
        let l = thread::threadIdx_x() as usize;
        unsafe {
            let row = (&raw mut TILE as *mut u8).add(16 * l);
            let r = [
                vals[4 * l],
                vals[4 * l + 1],
                vals[4 * l + 2],
                vals[4 * l + 3],
            ];
            if trans != 0 {
                stmatrix_m8n8_x4_trans(row, r[0], r[1], r[2], r[3]);
            } else {
                stmatrix_m8n8_x4(row, r[0], r[1], r[2], r[3]);
            }
            sync_threads();
            for j in 0..4 {
                out[4 * l + j] = TILE[4 * l + j];
            }
        }
    }

    /// An accumulator reset by assignment, then written and read at positions known only at
    /// run time (`count` is 8): through the chains of selects and guarded writes over its
    /// registers.
    #[kernel]
    pub unsafe fn run_time_positions(img: &[u32], cin: &[f32], count: u32, out: &mut [f32]) {
        static mut SMEM: SharedArray<u32, IMAGE_WORDS, 1024> = SharedArray::UNINIT;
        let t = thread::threadIdx_x() as usize;
        unsafe {
            for j in 0..IMAGE_WORDS / 128 {
                SMEM[t + 128 * j] = img[t + 128 * j];
            }
            // wgmma reads through the async proxy: the generic writes are fenced for it.
            fence_proxy_async();
            sync_threads();
            let base = &raw const SMEM as *const u8;
            let da = make_smem_desc_swizzled(base, 16, 1024, 128);
            let db = make_smem_desc_swizzled(base.add(B_AT as usize), 16, 1024, 128);
            let mut acc = [[1.0f32; 8]; 1];
            if count > 0 {
                acc = [[0.0; 8]; 1];
            }
            for f in 0..count as usize {
                acc[f / 8][f % 8] += cin[t * 8 + f];
            }
            wgmma_fence();
            wgmma_mma_m64n16k16_f32_bf16(&mut acc, da, db);
            wgmma_commit_group();
            wgmma_wait_group::<0>();
            for f in 0..count as usize {
                out[t * 8 + f] = acc[0][f];
            }
        }
    }

    /// One K-step of `m64n32k16`, in a helper that takes the accumulator by reference.
    fn mma_step(acc: &mut [[f32; 8]; 2], base: *const u8, k_bytes: usize) {
        unsafe {
            let da = make_smem_desc_swizzled(base.add(k_bytes), 16, 1024, 128);
            let db = make_smem_desc_swizzled(base.add(B_AT as usize + k_bytes), 16, 1024, 128);
            wgmma_mma_m64n32k16_f32_bf16(acc, da, db);
        }
    }

    /// Two K-steps through [`mma_step`], the accumulator passed on as `&mut acc`.
    #[kernel]
    pub unsafe fn through_a_helper(img: &[u32], cin: &[f32], out: &mut [f32]) {
        static mut SMEM: SharedArray<u32, IMAGE_WORDS, 1024> = SharedArray::UNINIT;
        let t = thread::threadIdx_x() as usize;
        unsafe {
            for j in 0..IMAGE_WORDS / 128 {
                SMEM[t + 128 * j] = img[t + 128 * j];
            }
            // wgmma reads through the async proxy: the generic writes are fenced for it.
            fence_proxy_async();
            sync_threads();
            let base = &raw const SMEM as *const u8;
            let mut acc = [[0.0f32; 8]; 2];
            for i in 0..2 {
                for j in 0..8 {
                    acc[i][j] = cin[t * 16 + i * 8 + j];
                }
            }
            wgmma_fence();
            mma_step(&mut acc, base, 0);
            mma_step(&mut acc, base, 32);
            wgmma_commit_group();
            wgmma_wait_group::<0>();
            for i in 0..2 {
                for j in 0..8 {
                    out[t * 16 + i * 8 + j] = acc[i][j];
                }
            }
        }
    }

    /// An accumulator copied with `let` (Rust copies arrays): the MMA into the copy leaves
    /// the original as it was. `out` gets the copy's elements, then the original's.
    #[kernel]
    pub unsafe fn copied_accumulator(img: &[u32], cin: &[f32], out: &mut [f32]) {
        static mut SMEM: SharedArray<u32, IMAGE_WORDS, 1024> = SharedArray::UNINIT;
        let t = thread::threadIdx_x() as usize;
        unsafe {
            for j in 0..IMAGE_WORDS / 128 {
                SMEM[t + 128 * j] = img[t + 128 * j];
            }
            // wgmma reads through the async proxy: the generic writes are fenced for it.
            fence_proxy_async();
            sync_threads();
            let base = &raw const SMEM as *const u8;
            let da = make_smem_desc_swizzled(base, 16, 1024, 128);
            let db = make_smem_desc_swizzled(base.add(B_AT as usize), 16, 1024, 128);
            let mut acc = [[0.0f32; 8]; 1];
            for j in 0..8 {
                acc[0][j] = cin[t * 8 + j];
            }
            let mut copy = acc;
            wgmma_fence();
            wgmma_mma_m64n16k16_f32_bf16(&mut copy, da, db);
            wgmma_commit_group();
            wgmma_wait_group::<0>();
            for j in 0..8 {
                out[t * 8 + j] = copy[0][j];
                out[1024 + t * 8 + j] = acc[0][j];
            }
        }
    }

    /// A planted bug: the accumulator is read after the commit, before the wait.
    #[kernel]
    pub unsafe fn read_before_wait(img: &[u32], out: &mut [f32]) {
        static mut SMEM: SharedArray<u32, IMAGE_WORDS, 1024> = SharedArray::UNINIT;
        let t = thread::threadIdx_x() as usize;
        unsafe {
            for j in 0..IMAGE_WORDS / 128 {
                SMEM[t + 128 * j] = img[t + 128 * j];
            }
            // wgmma reads through the async proxy: the generic writes are fenced for it.
            fence_proxy_async();
            sync_threads();
            let base = &raw const SMEM as *const u8;
            let da = make_smem_desc_swizzled(base, 16, 1024, 128);
            let db = make_smem_desc_swizzled(base.add(B_AT as usize), 16, 1024, 128);
            let mut acc = [[0.0f32; 8]; 1];
            wgmma_fence();
            wgmma_mma_m64n16k16_f32_bf16(&mut acc, da, db);
            wgmma_commit_group();
            out[t] = acc[0][0];
            wgmma_wait_group::<0>();
        }
    }

    /// A planted bug: the accumulator is written, then multiplied into without a fence.
    #[kernel]
    pub unsafe fn missing_fence(img: &[u32], cin: &[f32], out: &mut [f32]) {
        static mut SMEM: SharedArray<u32, IMAGE_WORDS, 1024> = SharedArray::UNINIT;
        let t = thread::threadIdx_x() as usize;
        unsafe {
            for j in 0..IMAGE_WORDS / 128 {
                SMEM[t + 128 * j] = img[t + 128 * j];
            }
            // wgmma reads through the async proxy: the generic writes are fenced for it.
            fence_proxy_async();
            sync_threads();
            let base = &raw const SMEM as *const u8;
            let da = make_smem_desc_swizzled(base, 16, 1024, 128);
            let db = make_smem_desc_swizzled(base.add(B_AT as usize), 16, 1024, 128);
            let mut acc = [[0.0f32; 8]; 1];
            for j in 0..8 {
                acc[0][j] = cin[t * 8 + j];
            }
            wgmma_mma_m64n16k16_f32_bf16(&mut acc, da, db);
            wgmma_commit_group();
            wgmma_wait_group::<0>();
            for j in 0..8 {
                out[t * 8 + j] = acc[0][j];
            }
        }
    }
}

/// Whether the context runs wgmma (the emulator, or an sm_90 GPU).
fn runs_wgmma() -> bool {
    let ctx = ctx();
    if ctx.backend() == BackendKind::Emulator {
        return true;
    }
    let (major, _) = ctx.limits().compute_capability;
    if major != 9 {
        eprintln!("wgmma needs compute capability 9.0; skipped");
    }
    major == 9
}

/// One warpgroup.
fn config() -> LaunchConfig {
    LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (128, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// A problem: A (64 x K), B (K x N, B[k][n] at `k * N + n`), C (64 x N), small integers.
struct Problem {
    ty: WgmmaType,
    n: u32,
    k: u32,
    a: Vec<f32>,
    b: Vec<f32>,
    c: Vec<f32>,
}

impl Problem {
    fn random(ty: WgmmaType, n: u32, k: u32) -> Self {
        let mut rng = cuprum_testkit::random::rng(&format!("wgmma_front {ty:?} n{n} k{k}"));
        let mut ints = |len: u32, span: i32| -> Vec<f32> {
            (0..len)
                .map(|_| rng.random_range(-span..=span) as f32)
                .collect()
        };
        let (a, b, c) = (ints(64 * k, 3), ints(k * n, 3), ints(64 * n, 8));
        Self { ty, n, k, a, b, c }
    }

    /// The shared image: A K-major at 0, B K-major (or MN-major) at [`B_AT`], both with the
    /// 128-byte swizzle, as `make_smem_desc_swizzled(.., lbo, 1024, 128)` describes them.
    fn image(&self, b_mn_major: bool) -> Vec<u32> {
        let mut bytes = vec![0u8; IMAGE_WORDS * 4];
        let size = self.ty.bytes();
        let desc = |start, lbo| Descriptor {
            start,
            leading_byte_offset: lbo,
            stride_byte_offset: 1024,
            base_offset: 0,
            swizzle: Swizzle::B128,
        };
        let mut put = |d: Descriptor, major, mn, k, x: f32| {
            let at = d.element_address(major, size, mn, k) as usize;
            let bits = bits_of(self.ty, x).to_le_bytes();
            bytes[at..at + size as usize].copy_from_slice(&bits[..size as usize]);
        };
        for m in 0..64 {
            for k in 0..self.k {
                put(
                    desc(0, 16),
                    Major::K,
                    m,
                    k,
                    self.a[(m * self.k + k) as usize],
                );
            }
        }
        let (b_desc, b_major) = if b_mn_major {
            (desc(B_AT, 2048), Major::Mn)
        } else {
            (desc(B_AT, 16), Major::K)
        };
        for n in 0..self.n {
            for k in 0..self.k {
                put(b_desc, b_major, n, k, self.b[(k * self.n + n) as usize]);
            }
        }
        bytes
            .chunks_exact(4)
            .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
            .collect()
    }

    /// C in accumulator order: thread `t`'s element `i` at `t * N / 2 + i`.
    fn c_by_thread(&self) -> Vec<f32> {
        self.by_thread(&self.c)
    }

    /// `d` (64 x N, row-major) in accumulator order.
    fn by_thread(&self, d: &[f32]) -> Vec<f32> {
        let per = self.n / 2;
        (0..128 * per)
            .map(|x| {
                let (row, col) = acc_pos(x / per, x % per);
                d[(row * self.n + col) as usize]
            })
            .collect()
    }

    /// `sign_ab * A B + (accumulate ? C : 0)`, in accumulator order; exact for these inputs.
    fn want(&self, sign_ab: f32, accumulate: bool) -> Vec<f32> {
        let (n, k) = (self.n as usize, self.k as usize);
        let mut d = vec![0.0f32; 64 * n];
        for r in 0..64 {
            for col in 0..n {
                let dot: f32 = (0..k)
                    .map(|j| self.a[r * k + j] * self.b[j * n + col])
                    .sum();
                let c = if accumulate { self.c[r * n + col] } else { 0.0 };
                d[r * n + col] = sign_ab * dot + c;
            }
        }
        self.by_thread(&d)
    }
}

fn bits_of(ty: WgmmaType, x: f32) -> u32 {
    match ty {
        WgmmaType::F16 => u32::from(f16::from_f32(x).to_bits()),
        WgmmaType::Bf16 => u32::from(bf16::from_f32(x).to_bits()),
        WgmmaType::Tf32 => x.to_bits(),
    }
}

/// Thread `t`'s accumulator element `i`: (row, col) of D, transcribed from the PTX ISA's
/// `wgmma` D fragment figure.
fn acc_pos(t: u32, i: u32) -> (u32, u32) {
    let (w, lane) = (t / 32, t % 32);
    let row = 16 * w + lane / 4 + if i % 4 >= 2 { 8 } else { 0 };
    let col = 8 * (i / 4) + 2 * (lane % 4) + i % 2;
    (row, col)
}

/// Thread `t`'s four A words for A from registers (bf16): the `mma.m16n8k16` A fragment of
/// warp `t / 32`'s sixteen rows.
fn a_fragments(p: &Problem) -> Vec<u32> {
    let k = p.k as usize;
    let at = |r: usize, c: usize| bits_of(p.ty, p.a[r * k + c]);
    let pair = |r: usize, c: usize| at(r, c) | at(r, c + 1) << 16;
    (0..128usize)
        .flat_map(|t| {
            let (g, q) = ((t % 32) / 4 + 16 * (t / 32), t % 32 % 4);
            [
                pair(g, 2 * q),
                pair(g + 8, 2 * q),
                pair(g, 2 * q + 8),
                pair(g + 8, 2 * q + 8),
            ]
        })
        .collect()
}

type Launch = fn(
    &kernels::LoadedModule,
    &cuprum::Stream,
    &DeviceBuffer<u32>,
    &DeviceBuffer<f32>,
    &mut DeviceBuffer<f32>,
) -> cuprum::Result<()>;

/// Runs a kernel of the common signature on `p` and compares every output element.
fn check(what: &str, p: &Problem, b_mn_major: bool, sign: f32, launch: Launch) {
    if !runs_wgmma() {
        return;
    }
    let ctx = ctx();
    let stream = ctx.default_stream();
    let module = kernels::load(ctx).unwrap_or_else(|e| panic!("{e}"));
    let img = DeviceBuffer::from_host(&stream, &p.image(b_mn_major)).unwrap();
    let cin = DeviceBuffer::from_host(&stream, &p.c_by_thread()).unwrap();
    let count = 64 * p.n as usize;
    let mut out = DeviceBuffer::from_host(&stream, &poisoned::<f32>(count)).unwrap();
    launch(&module, &stream, &img, &cin, &mut out).unwrap_or_else(|e| panic!("{what}: {e}"));
    common::assert_same(
        what,
        &out.to_host_vec(&stream).unwrap(),
        &p.want(sign, true),
    );
}

#[test]
fn oxides_m64n64k16_bf16() {
    let p = Problem::random(WgmmaType::Bf16, 64, 16);
    check("m64n64k16 bf16", &p, false, 1.0, |m, s, img, cin, out| {
        // SAFETY: the buffers hold the image, 32 inputs and 32 outputs per thread.
        unsafe { m.bf16_n64(s, config(), img, cin, out) }
    });
}

#[test]
fn m64n256_over_k64_accumulates_in_place() {
    let p = Problem::random(WgmmaType::Bf16, 256, 64);
    check(
        "m64n256k16 x4 bf16",
        &p,
        false,
        1.0,
        |m, s, img, cin, out| {
            // SAFETY: the buffers hold the image, 128 inputs and 128 outputs per thread.
            unsafe { m.bf16_n256_k64(s, config(), img, cin, out) }
        },
    );
}

#[test]
fn m64n8k16_f16_into_a_flat_array() {
    let p = Problem::random(WgmmaType::F16, 8, 16);
    check("m64n8k16 f16", &p, false, 1.0, |m, s, img, cin, out| {
        // SAFETY: the buffers hold the image, 4 inputs and 4 outputs per thread.
        unsafe { m.f16_n8(s, config(), img, cin, out) }
    });
}

#[test]
fn tf32_m64n24k8_twice_with_a_partial_wait() {
    let p = Problem::random(WgmmaType::Tf32, 24, 16);
    check("m64n24k8 tf32 x2", &p, false, 1.0, |m, s, img, cin, out| {
        // SAFETY: the buffers hold the image, 12 inputs and 12 outputs per thread.
        unsafe { m.tf32_n24_k16(s, config(), img, cin, out) }
    });
}

#[test]
fn accumulator_elements_at_run_time_positions() {
    let p = Problem::random(WgmmaType::Bf16, 16, 16);
    check(
        "m64n16k16 bf16, run-time positions",
        &p,
        false,
        1.0,
        |m, s, img, cin, out| {
            // SAFETY: the buffers hold the image, 8 inputs and 8 outputs per thread.
            unsafe { m.run_time_positions(s, config(), img, cin, 8, out) }
        },
    );
}

#[test]
fn an_accumulator_passed_through_a_helper() {
    let p = Problem::random(WgmmaType::Bf16, 32, 32);
    check(
        "m64n32k16 x2 through a helper",
        &p,
        false,
        1.0,
        |m, s, img, cin, out| {
            // SAFETY: the buffers hold the image, 16 inputs and 16 outputs per thread.
            unsafe { m.through_a_helper(s, config(), img, cin, out) }
        },
    );
}

#[test]
fn f16_with_b_transposed_and_a_negated() {
    let p = Problem::random(WgmmaType::F16, 16, 16);
    check(
        "m64n16k16 f16, B MN-major, -A",
        &p,
        true,
        -1.0,
        |m, s, img, cin, out| {
            // SAFETY: the buffers hold the image, 8 inputs and 8 outputs per thread.
            unsafe { m.f16_n16_transposed_b(s, config(), img, cin, out) }
        },
    );
}

#[test]
fn a_from_registers_with_b_negated_and_scale_d_at_run_time() {
    if !runs_wgmma() {
        return;
    }
    let ctx = ctx();
    let stream = ctx.default_stream();
    let module = kernels::load(ctx).unwrap();
    for accumulate in [true, false] {
        let p = Problem::random(WgmmaType::Bf16, 32, 16);
        let img = DeviceBuffer::from_host(&stream, &p.image(false)).unwrap();
        let afrag = DeviceBuffer::from_host(&stream, &a_fragments(&p)).unwrap();
        let cin = DeviceBuffer::from_host(&stream, &p.c_by_thread()).unwrap();
        let mut out = DeviceBuffer::from_host(&stream, &poisoned::<f32>(64 * 32)).unwrap();
        // SAFETY: the buffers hold the image, four A words, 16 inputs and 16 outputs per
        // thread.
        unsafe {
            module.bf16_reg_a_n32(
                &stream,
                config(),
                &img,
                &afrag,
                &cin,
                u32::from(accumulate),
                &mut out,
            )
        }
        .unwrap();
        common::assert_same(
            &format!("A from registers, -B, accumulate {accumulate}"),
            &out.to_host_vec(&stream).unwrap(),
            &p.want(-1.0, accumulate),
        );
    }
}

/// Runs a planted bug on the emulator; its message, or `None` on a GPU (where the bug is
/// undefined behaviour).
fn misuse(launch: Launch) -> Option<String> {
    if ctx().backend() != BackendKind::Emulator {
        eprintln!("planted-bug kernels only run on the emulator");
        return None;
    }
    let ctx = ctx();
    let stream = ctx.default_stream();
    let module = kernels::load(ctx).unwrap();
    let p = Problem::random(WgmmaType::Bf16, 16, 16);
    let img = DeviceBuffer::from_host(&stream, &p.image(false)).unwrap();
    let cin = DeviceBuffer::from_host(&stream, &p.c_by_thread()).unwrap();
    let mut out = DeviceBuffer::from_host(&stream, &poisoned::<f32>(64 * 16)).unwrap();
    match launch(&module, &stream, &img, &cin, &mut out) {
        Err(Error::Emulator {
            source: e @ EmuError::WgmmaMisuse { .. },
            ..
        }) => Some(e.to_string()),
        Err(e) => panic!("{e}"),
        Ok(()) => panic!("no error reported"),
    }
}

#[test]
fn an_accumulator_read_before_the_wait_is_reported_from_source() {
    let Some(m) = misuse(|m, s, img, _, out| {
        // SAFETY: the planted bug is the kernel's point; the emulator reports it.
        unsafe { m.read_before_wait(s, config(), img, out) }
    }) else {
        return;
    };
    assert!(m.contains("early accumulator access"), "{m}");
}

#[test]
fn a_missing_fence_is_reported_from_source() {
    let Some(m) = misuse(|m, s, img, cin, out| {
        // SAFETY: the planted bug is the kernel's point; the emulator reports it.
        unsafe { m.missing_fence(s, config(), img, cin, out) }
    }) else {
        return;
    };
    assert!(m.contains("fence"), "{m}");
}

#[test]
fn a_k_loop_with_a_run_time_trip_count() {
    if !runs_wgmma() {
        return;
    }
    let ctx = ctx();
    let stream = ctx.default_stream();
    let module = kernels::load(ctx).unwrap();
    for k_steps in [1u32, 4] {
        let p = Problem::random(WgmmaType::Bf16, 128, 16 * k_steps);
        let img = DeviceBuffer::from_host(&stream, &p.image(false)).unwrap();
        let cin = DeviceBuffer::from_host(&stream, &p.c_by_thread()).unwrap();
        let mut out = DeviceBuffer::from_host(&stream, &poisoned::<f32>(64 * 128)).unwrap();
        // SAFETY: the buffers hold the image, 64 inputs and 64 outputs per thread.
        unsafe { module.k_loop_n128(&stream, config(), &img, &cin, k_steps, &mut out) }.unwrap();
        common::assert_same(
            &format!("m64n128k16 x{k_steps}"),
            &out.to_host_vec(&stream).unwrap(),
            &p.want(1.0, true),
        );
    }
}

/// The module's PTX for sm_90a has no local memory (the accumulators are registers), and goes
/// through ptxas without C7510 ("wgmma ... serialized") or C7517 (a `wait_group` injected to
/// use the accumulators), which ptxas prints when anything copies the accumulator registers
/// between the fence and the wait; and without C7508 (`setmaxnreg` ignored for want of a
/// register cap).
#[test]
fn the_modules_wgmma_pipelines_are_not_serialized() {
    let module = kernels::ir().unwrap_or_else(|e| panic!("{e}"));
    let ptx = cuprum_ptx::write_module(&module, cuprum_ptx::Target::Sm90a)
        .unwrap_or_else(|e| panic!("{e}"));
    // Every accumulator (and every other local array) ended in registers.
    let with_local: Vec<&str> = ptx
        .split(".entry ")
        .skip(1)
        .filter(|k| k.contains(".local"))
        .map(|k| k.split('(').next().unwrap_or(k))
        .collect();
    assert!(with_local.is_empty(), "local memory in {with_local:?}");
    for text in [
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16",
        "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16",
        "setmaxnreg.dec.sync.aligned.u32 40;",
        ".maxnreg 168",
    ] {
        assert!(ptx.contains(text), "no `{text}` in the PTX");
    }
    match cuprum_testkit::ptxas::check_messages(&ptx, "sm_90a") {
        Ok(Some(m)) => assert!(
            !m.contains("C7510") && !m.contains("C7517") && !m.contains("C7508"),
            "ptxas:\n{m}"
        ),
        Ok(None) => {}
        Err(e) => panic!("{e}\n--- PTX ---\n{}", cuprum_testkit::numbered(&ptx)),
    }
}

#[test]
fn setmaxnreg_and_named_barriers_between_warpgroups() {
    if !runs_wgmma() {
        return;
    }
    let ctx = ctx();
    let stream = ctx.default_stream();
    let module = kernels::load(ctx).unwrap();
    let x = common::random_u32(128);
    let dx = DeviceBuffer::from_host(&stream, &x).unwrap();
    let mut out = DeviceBuffer::from_host(&stream, &poisoned::<u32>(128)).unwrap();
    let cfg = LaunchConfig {
        block_dim: (256, 1, 1),
        ..config()
    };
    // SAFETY: `x` and `out` hold 128 words each.
    unsafe { module.producer_consumer(&stream, cfg, &dx, &mut out) }.unwrap();
    let want: Vec<u32> = (0..128).map(|i| x[127 - i] ^ 0x0F0F_0F0F).collect();
    common::assert_same(
        "through named barrier 1",
        &out.to_host_vec(&stream).unwrap(),
        &want,
    );
}

#[test]
fn stmatrix_stores_four_matrices() {
    if !runs_wgmma() {
        return;
    }
    let ctx = ctx();
    let stream = ctx.default_stream();
    let module = kernels::load(ctx).unwrap();
    for trans in [false, true] {
        let vals = common::random_u32(128);
        let dv = DeviceBuffer::from_host(&stream, &vals).unwrap();
        let mut out = DeviceBuffer::from_host(&stream, &poisoned::<u32>(128)).unwrap();
        let cfg = LaunchConfig {
            block_dim: (32, 1, 1),
            ..config()
        };
        // SAFETY: `vals` and `out` hold four words per lane.
        unsafe { module.stmatrix_x4(&stream, cfg, &dv, u32::from(trans), &mut out) }.unwrap();
        // Lane `l`'s half `h` of matrix `m`'s register is (row l / 4, column 2 (l % 4) + h),
        // or its transpose (the PTX ISA's `ldmatrix`/`stmatrix` fragment).
        let mut halves = vec![0u16; 256];
        for l in 0..32 {
            for m in 0..4 {
                for h in 0..2 {
                    let (r, c) = if trans {
                        (2 * (l % 4) + h, l / 4)
                    } else {
                        (l / 4, 2 * (l % 4) + h)
                    };
                    halves[m * 64 + r * 8 + c] = (vals[4 * l + m] >> (16 * h)) as u16;
                }
            }
        }
        let want: Vec<u32> = halves
            .chunks_exact(2)
            .map(|p| u32::from(p[0]) | u32::from(p[1]) << 16)
            .collect();
        common::assert_same(
            &format!("stmatrix x4 trans {trans}"),
            &out.to_host_vec(&stream).unwrap(),
            &want,
        );
    }
}

#[test]
fn a_copied_accumulator_is_a_copy() {
    if !runs_wgmma() {
        return;
    }
    let ctx = ctx();
    let stream = ctx.default_stream();
    let module = kernels::load(ctx).unwrap();
    let p = Problem::random(WgmmaType::Bf16, 16, 16);
    let img = DeviceBuffer::from_host(&stream, &p.image(false)).unwrap();
    let cin = DeviceBuffer::from_host(&stream, &p.c_by_thread()).unwrap();
    let mut out = DeviceBuffer::from_host(&stream, &poisoned::<f32>(2 * 64 * 16)).unwrap();
    // SAFETY: the buffers hold the image, 8 inputs and 16 outputs per thread.
    unsafe { module.copied_accumulator(&stream, config(), &img, &cin, &mut out) }.unwrap();
    let mut want = p.want(1.0, true);
    want.extend(p.c_by_thread());
    common::assert_same(
        "the copy, then the original",
        &out.to_host_vec(&stream).unwrap(),
        &want,
    );
}
