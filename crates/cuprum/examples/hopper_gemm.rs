//! A Hopper GEMM in the SIMT track: `C = A B^T` with `bf16` inputs and `f32` accumulation and
//! output, A row-major `M x K` and B given as `N x K` (K contiguous), so both operands are
//! K-major, as `wgmma` reads them without a transpose.
//!
//! The kernel is the warp-specialized shape of CUTLASS's Hopper GEMMs, written with
//! cuda-oxide's device API (`cuprum::simt::{tma, barrier, wgmma}`):
//!
//! - a block computes a `128 x BN` tile of C with three warpgroups (384 threads);
//! - warpgroup 0, the *producer*, gives registers back (`setmaxnreg_dec::<40>`) and one of
//!   its threads streams `BK = 64`-wide slices of A and B into a ring of [`STAGES`] shared
//!   stages with TMA (128-byte swizzle, each stage 1024-aligned), each stage's arrival counted
//!   on its *full* mbarrier;
//! - warpgroups 1 and 2, the *consumers*, take registers (`setmaxnreg_inc::<232>`), wait on a
//!   stage's full barrier, multiply their 64 rows of it into an `m64nBNk16` accumulator held
//!   in registers (four `wgmma`s per stage), and release the stage on its *empty* mbarrier
//!   once the MMAs that read it have completed: every consumer thread arrives (256 a phase),
//!   as in CUTLASS, so that each thread's share of the MMAs' reads is ordered before the
//!   producer's next copy into the stage (the emulator's race tracker checks exactly that);
//! - the consumers write their accumulators to C.
//!
//! Three rungs of the ladder, each checked and (on a GPU) timed:
//!
//! 1. `gemm_128x128_wait0`: `128 x 128` tiles, each stage's MMAs waited for
//!    (`wgmma_wait_group::<0>`) before the stage is released;
//! 2. `gemm_128x128`: one MMA group left in flight (`wgmma_wait_group::<1>`), the previous
//!    stage released;
//! 3. `gemm_128x256`: rung 2 with `128 x 256` tiles and `m64n256k16` (128 accumulator
//!    registers per consumer thread);
//! 4. `gemm_128x256_bf16`: rung 3 with a `bf16` C (pairs of columns rounded into words), and
//!    its tiles in a grouped order (`GROUP_M` rows of tiles at a time, for L2 reuse);
//! 5. `gemm_128x256_persistent`: rung 3 with one block per SM looping over the tiles, the
//!    ring running on across them, so loads of a tile overlap the last one's epilogue.
//!
//! Not yet: clusters and TMA multicast, an epilogue through shared memory
//! (`stmatrix`) and TMA stores; C is stored straight from registers.
//!
//! Run: `cargo run --release -p cuprum --example hopper_gemm` (on the emulator: 256 x 512 x
//! 512, checked element by element; on an sm_90 GPU: 4096^3, checked on sampled rows, and timed:
//! the event-timed median, in TFLOP/s). `CUPRUM_EXAMPLE_SIZE=small` keeps the small size on
//! a GPU; `--ptx FILE` writes the kernel's sm_90a PTX instead (for `ptxas -v`).

use cuprum::half::bf16;
use cuprum::ir::Swizzle;
use cuprum::simt::barrier::{
    Barrier, fence_proxy_async_shared_cta, mbarrier_arrive, mbarrier_arrive_expect_tx,
    mbarrier_init, mbarrier_wait_parity,
};
use cuprum::simt::shared::DynamicSharedArray;
use cuprum::simt::tcgen05::cvt_f32x2_bf16x2;
use cuprum::simt::tma::{TensorMap, cp_async_bulk_tensor_2d_g2s};
use cuprum::simt::wgmma::{
    make_smem_desc_swizzled, setmaxnreg_dec, setmaxnreg_inc, wgmma_commit_group, wgmma_fence,
    wgmma_mma_m64n128k16_f32_bf16, wgmma_mma_m64n256k16_f32_bf16, wgmma_wait_group,
};
use cuprum::simt::{SharedArray, kernel, launch_bounds, max_registers, sync_threads, thread};
use cuprum::{BackendKind, CudaContext, DeviceBuffer, LaunchConfig, cuda_module};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

#[path = "common/record.rs"]
mod record;
#[path = "common/size.rs"]
mod size;
#[path = "common/timing.rs"]
mod timing;

/// Rows of C per block: two consumer warpgroups of 64.
const BM: usize = 128;
/// K per stage: one 128-byte swizzled row of `bf16`s.
const BK: usize = 64;
/// Stages in the ring.
const STAGES: usize = 4;
/// Rows of tiles a group of consecutive blocks of rung 4 covers (Triton's `GROUP_M`).
const GROUP_M: usize = 8;
/// Bytes of A in a stage (`BM x BK` `bf16`s); B's (`BN x BK`) follow.
const A_BYTES: usize = BM * BK * 2;
/// Bytes of a stage of the `128 x 128` kernels, and of the `128 x 256` one.
const STAGE_128: usize = A_BYTES + 128 * BK * 2;
const STAGE_256: usize = A_BYTES + 256 * BK * 2;

#[cuda_module]
mod kernels {
    use super::*;

    /// Rung 1: one `128 x 128` tile of `C = A B^T` (see the module docs); `n` and `k` are the
    /// problem's N and K (multiples of the tile), the grid `(N / 128, M / 128)`. Each stage's
    /// MMAs are waited for (`wgmma_wait_group::<0>`) before the stage is released.
    #[kernel]
    #[launch_bounds(384, 1)]
    #[max_registers(168)]
    pub unsafe fn gemm_128x128_wait0(
        a: TensorMap<bf16, 2>,
        b: TensorMap<bf16, 2>,
        c: &mut [f32],
        n: u32,
        k: u32,
    ) {
        static mut FULL: SharedArray<u64, STAGES> = SharedArray::UNINIT;
        static mut EMPTY: SharedArray<u64, STAGES> = SharedArray::UNINIT;
        let t = thread::threadIdx_x() as usize;
        let m0 = thread::blockIdx_y() as usize * BM;
        let n0 = thread::blockIdx_x() as usize * 128;
        let k_tiles = k as usize / BK;
        // SAFETY: thread 0 initialises the barriers before the block barrier. The producer
        // fills a stage only after every consumer thread released it (its empty barrier's
        // phase),
        // announcing the bytes the copies complete on its full barrier; a consumer reads a
        // stage only after that barrier's phase, and releases it only after the wgmma
        // groups that read it completed. The accumulator is touched only outside the
        // fence..wait windows. Each consumer thread writes its own elements of C, inside C
        // since the grid covers it exactly.
        unsafe {
            let smem = DynamicSharedArray::<u8, 1024>::get_raw();
            let full = &raw mut FULL as *mut Barrier;
            let empty = &raw mut EMPTY as *mut Barrier;
            if t == 0 {
                for s in 0..STAGES {
                    mbarrier_init(full.add(s), 1);
                    mbarrier_init(empty.add(s), 256);
                }
                fence_proxy_async_shared_cta();
            }
            sync_threads();
            if t < 128 {
                setmaxnreg_dec::<40>();
                if t == 0 {
                    for kt in 0..k_tiles {
                        let s = kt % STAGES;
                        if kt >= STAGES {
                            mbarrier_wait_parity(empty.add(s), ((kt / STAGES) as u32 + 1) & 1);
                        }
                        let stage = smem.add(s * STAGE_128);
                        let _ = mbarrier_arrive_expect_tx(full.add(s), 1, STAGE_128 as u32);
                        let kx = (kt * BK) as i32;
                        cp_async_bulk_tensor_2d_g2s(stage, a.as_ptr(), kx, m0 as i32, full.add(s));
                        cp_async_bulk_tensor_2d_g2s(
                            stage.add(A_BYTES),
                            b.as_ptr(),
                            kx,
                            n0 as i32,
                            full.add(s),
                        );
                    }
                }
            } else {
                setmaxnreg_inc::<232>();
                let w = t / 128 - 1;
                let wt = t % 128;
                let mut acc = [[0.0f32; 8]; 8];
                for kt in 0..k_tiles {
                    let s = kt % STAGES;
                    mbarrier_wait_parity(full.add(s), (kt / STAGES) as u32 & 1);
                    let a_rows = smem.add(s * STAGE_128 + w * (A_BYTES / 2));
                    let b_rows = smem.add(s * STAGE_128 + A_BYTES);
                    wgmma_fence();
                    for kk in 0..BK / 16 {
                        let da = make_smem_desc_swizzled(a_rows.add(32 * kk), 16, 1024, 128);
                        let db = make_smem_desc_swizzled(b_rows.add(32 * kk), 16, 1024, 128);
                        wgmma_mma_m64n128k16_f32_bf16(&mut acc, da, db);
                    }
                    wgmma_commit_group();
                    wgmma_wait_group::<0>();
                    let _ = mbarrier_arrive(empty.add(s));
                }
                // Thread `wt` holds D[16 (wt / 32) + (wt % 32) / 4 + 8 ((f / 2) % 2)]
                // [8 (f / 4) + 2 (wt % 4) + f % 2] in its element f (row-major).
                let out = c.as_mut_ptr();
                let row0 = m0 + 64 * w + 16 * (wt / 32) + (wt % 32) / 4;
                let col0 = n0 + 2 * (wt % 4);
                for i in 0..8 {
                    for j in 0..8 {
                        let f = i * 8 + j;
                        let row = row0 + 8 * ((f / 2) % 2);
                        out.add(row * n as usize + col0 + 8 * (f / 4) + f % 2)
                            .write(acc[i][j]);
                    }
                }
            }
        }
    }

    /// Rung 2: as rung 1, with one wgmma group left in flight: a consumer waits only for
    /// the previous stage's MMAs (`wgmma_wait_group::<1>`) and releases that stage, so the
    /// tensor cores never idle between stages.
    #[kernel]
    #[launch_bounds(384, 1)]
    #[max_registers(168)]
    pub unsafe fn gemm_128x128(
        a: TensorMap<bf16, 2>,
        b: TensorMap<bf16, 2>,
        c: &mut [f32],
        n: u32,
        k: u32,
    ) {
        static mut FULL: SharedArray<u64, STAGES> = SharedArray::UNINIT;
        static mut EMPTY: SharedArray<u64, STAGES> = SharedArray::UNINIT;
        let t = thread::threadIdx_x() as usize;
        let m0 = thread::blockIdx_y() as usize * BM;
        let n0 = thread::blockIdx_x() as usize * 128;
        let k_tiles = k as usize / BK;
        // SAFETY: as rung 1's; a stage is released once `wait_group::<1>` has covered the
        // group that read it (the one committed before the newest).
        unsafe {
            let smem = DynamicSharedArray::<u8, 1024>::get_raw();
            let full = &raw mut FULL as *mut Barrier;
            let empty = &raw mut EMPTY as *mut Barrier;
            if t == 0 {
                for s in 0..STAGES {
                    mbarrier_init(full.add(s), 1);
                    mbarrier_init(empty.add(s), 256);
                }
                fence_proxy_async_shared_cta();
            }
            sync_threads();
            if t < 128 {
                setmaxnreg_dec::<40>();
                if t == 0 {
                    for kt in 0..k_tiles {
                        let s = kt % STAGES;
                        if kt >= STAGES {
                            mbarrier_wait_parity(empty.add(s), ((kt / STAGES) as u32 + 1) & 1);
                        }
                        let stage = smem.add(s * STAGE_128);
                        let _ = mbarrier_arrive_expect_tx(full.add(s), 1, STAGE_128 as u32);
                        let kx = (kt * BK) as i32;
                        cp_async_bulk_tensor_2d_g2s(stage, a.as_ptr(), kx, m0 as i32, full.add(s));
                        cp_async_bulk_tensor_2d_g2s(
                            stage.add(A_BYTES),
                            b.as_ptr(),
                            kx,
                            n0 as i32,
                            full.add(s),
                        );
                    }
                }
            } else {
                setmaxnreg_inc::<232>();
                let w = t / 128 - 1;
                let wt = t % 128;
                let mut acc = [[0.0f32; 8]; 8];
                for kt in 0..k_tiles {
                    let s = kt % STAGES;
                    mbarrier_wait_parity(full.add(s), (kt / STAGES) as u32 & 1);
                    let a_rows = smem.add(s * STAGE_128 + w * (A_BYTES / 2));
                    let b_rows = smem.add(s * STAGE_128 + A_BYTES);
                    wgmma_fence();
                    for kk in 0..BK / 16 {
                        let da = make_smem_desc_swizzled(a_rows.add(32 * kk), 16, 1024, 128);
                        let db = make_smem_desc_swizzled(b_rows.add(32 * kk), 16, 1024, 128);
                        wgmma_mma_m64n128k16_f32_bf16(&mut acc, da, db);
                    }
                    wgmma_commit_group();
                    wgmma_wait_group::<1>();
                    if kt > 0 {
                        let _ = mbarrier_arrive(empty.add((kt - 1) % STAGES));
                    }
                }
                wgmma_wait_group::<0>();
                let out = c.as_mut_ptr();
                let row0 = m0 + 64 * w + 16 * (wt / 32) + (wt % 32) / 4;
                let col0 = n0 + 2 * (wt % 4);
                for i in 0..8 {
                    for j in 0..8 {
                        let f = i * 8 + j;
                        let row = row0 + 8 * ((f / 2) % 2);
                        out.add(row * n as usize + col0 + 8 * (f / 4) + f % 2)
                            .write(acc[i][j]);
                    }
                }
            }
        }
    }

    /// Rung 3: rung 2 with `128 x 256` tiles, each consumer's MMAs `m64n256k16` (128
    /// accumulator registers per thread): twice the MMA work per byte of A loaded. The grid is
    /// `(N / 256, M / 128)`.
    #[kernel]
    #[launch_bounds(384, 1)]
    #[max_registers(168)]
    pub unsafe fn gemm_128x256(
        a: TensorMap<bf16, 2>,
        b: TensorMap<bf16, 2>,
        c: &mut [f32],
        n: u32,
        k: u32,
    ) {
        static mut FULL: SharedArray<u64, STAGES> = SharedArray::UNINIT;
        static mut EMPTY: SharedArray<u64, STAGES> = SharedArray::UNINIT;
        let t = thread::threadIdx_x() as usize;
        let m0 = thread::blockIdx_y() as usize * BM;
        let n0 = thread::blockIdx_x() as usize * 256;
        let k_tiles = k as usize / BK;
        // SAFETY: as rung 2's.
        unsafe {
            let smem = DynamicSharedArray::<u8, 1024>::get_raw();
            let full = &raw mut FULL as *mut Barrier;
            let empty = &raw mut EMPTY as *mut Barrier;
            if t == 0 {
                for s in 0..STAGES {
                    mbarrier_init(full.add(s), 1);
                    mbarrier_init(empty.add(s), 256);
                }
                fence_proxy_async_shared_cta();
            }
            sync_threads();
            if t < 128 {
                setmaxnreg_dec::<40>();
                if t == 0 {
                    for kt in 0..k_tiles {
                        let s = kt % STAGES;
                        if kt >= STAGES {
                            mbarrier_wait_parity(empty.add(s), ((kt / STAGES) as u32 + 1) & 1);
                        }
                        let stage = smem.add(s * STAGE_256);
                        let _ = mbarrier_arrive_expect_tx(full.add(s), 1, STAGE_256 as u32);
                        let kx = (kt * BK) as i32;
                        cp_async_bulk_tensor_2d_g2s(stage, a.as_ptr(), kx, m0 as i32, full.add(s));
                        cp_async_bulk_tensor_2d_g2s(
                            stage.add(A_BYTES),
                            b.as_ptr(),
                            kx,
                            n0 as i32,
                            full.add(s),
                        );
                    }
                }
            } else {
                setmaxnreg_inc::<232>();
                let w = t / 128 - 1;
                let wt = t % 128;
                let mut acc = [[0.0f32; 8]; 16];
                for kt in 0..k_tiles {
                    let s = kt % STAGES;
                    mbarrier_wait_parity(full.add(s), (kt / STAGES) as u32 & 1);
                    let a_rows = smem.add(s * STAGE_256 + w * (A_BYTES / 2));
                    let b_rows = smem.add(s * STAGE_256 + A_BYTES);
                    wgmma_fence();
                    for kk in 0..BK / 16 {
                        let da = make_smem_desc_swizzled(a_rows.add(32 * kk), 16, 1024, 128);
                        let db = make_smem_desc_swizzled(b_rows.add(32 * kk), 16, 1024, 128);
                        wgmma_mma_m64n256k16_f32_bf16(&mut acc, da, db);
                    }
                    wgmma_commit_group();
                    wgmma_wait_group::<1>();
                    if kt > 0 {
                        let _ = mbarrier_arrive(empty.add((kt - 1) % STAGES));
                    }
                }
                wgmma_wait_group::<0>();
                let out = c.as_mut_ptr();
                let row0 = m0 + 64 * w + 16 * (wt / 32) + (wt % 32) / 4;
                let col0 = n0 + 2 * (wt % 4);
                for i in 0..16 {
                    for j in 0..8 {
                        let f = i * 8 + j;
                        let row = row0 + 8 * ((f / 2) % 2);
                        out.add(row * n as usize + col0 + 8 * (f / 4) + f % 2)
                            .write(acc[i][j]);
                    }
                }
            }
        }
    }

    /// Rung 4: rung 3 with a `bf16` C, each pair of neighbouring columns rounded to nearest
    /// even into one word (`cvt_f32x2_bf16x2`): half the bytes stored. `c` holds the pairs,
    /// row-major (`N / 2` words a row).
    #[kernel]
    #[launch_bounds(384, 1)]
    #[max_registers(168)]
    pub unsafe fn gemm_128x256_bf16(
        a: TensorMap<bf16, 2>,
        b: TensorMap<bf16, 2>,
        c: &mut [u32],
        n: u32,
        k: u32,
    ) {
        static mut FULL: SharedArray<u64, STAGES> = SharedArray::UNINIT;
        static mut EMPTY: SharedArray<u64, STAGES> = SharedArray::UNINIT;
        let t = thread::threadIdx_x() as usize;
        // Tiles in groups of GROUP_M rows, taken column by column: the blocks running at
        // once share a few rows of A and columns of B in L2 instead of sweeping all of B.
        let (gx, gy) = (thread::gridDim_x() as usize, thread::gridDim_y() as usize);
        let linear = thread::blockIdx_y() as usize * gx + thread::blockIdx_x() as usize;
        let per_group = GROUP_M * gx;
        let first_row = linear / per_group * GROUP_M;
        let rows = (gy - first_row).min(GROUP_M);
        let m0 = (first_row + linear % per_group % rows) * BM;
        let n0 = linear % per_group / rows * 256;
        let k_tiles = k as usize / BK;
        // SAFETY: as rung 2's; each thread writes the words of its own column pairs.
        unsafe {
            let smem = DynamicSharedArray::<u8, 1024>::get_raw();
            let full = &raw mut FULL as *mut Barrier;
            let empty = &raw mut EMPTY as *mut Barrier;
            if t == 0 {
                for s in 0..STAGES {
                    mbarrier_init(full.add(s), 1);
                    mbarrier_init(empty.add(s), 256);
                }
                fence_proxy_async_shared_cta();
            }
            sync_threads();
            if t < 128 {
                setmaxnreg_dec::<40>();
                if t == 0 {
                    for kt in 0..k_tiles {
                        let s = kt % STAGES;
                        if kt >= STAGES {
                            mbarrier_wait_parity(empty.add(s), ((kt / STAGES) as u32 + 1) & 1);
                        }
                        let stage = smem.add(s * STAGE_256);
                        let _ = mbarrier_arrive_expect_tx(full.add(s), 1, STAGE_256 as u32);
                        let kx = (kt * BK) as i32;
                        cp_async_bulk_tensor_2d_g2s(stage, a.as_ptr(), kx, m0 as i32, full.add(s));
                        cp_async_bulk_tensor_2d_g2s(
                            stage.add(A_BYTES),
                            b.as_ptr(),
                            kx,
                            n0 as i32,
                            full.add(s),
                        );
                    }
                }
            } else {
                setmaxnreg_inc::<232>();
                let w = t / 128 - 1;
                let wt = t % 128;
                let mut acc = [[0.0f32; 8]; 16];
                for kt in 0..k_tiles {
                    let s = kt % STAGES;
                    mbarrier_wait_parity(full.add(s), (kt / STAGES) as u32 & 1);
                    let a_rows = smem.add(s * STAGE_256 + w * (A_BYTES / 2));
                    let b_rows = smem.add(s * STAGE_256 + A_BYTES);
                    wgmma_fence();
                    for kk in 0..BK / 16 {
                        let da = make_smem_desc_swizzled(a_rows.add(32 * kk), 16, 1024, 128);
                        let db = make_smem_desc_swizzled(b_rows.add(32 * kk), 16, 1024, 128);
                        wgmma_mma_m64n256k16_f32_bf16(&mut acc, da, db);
                    }
                    wgmma_commit_group();
                    wgmma_wait_group::<1>();
                    if kt > 0 {
                        let _ = mbarrier_arrive(empty.add((kt - 1) % STAGES));
                    }
                }
                wgmma_wait_group::<0>();
                let out = c.as_mut_ptr();
                let row0 = m0 + 64 * w + 16 * (wt / 32) + (wt % 32) / 4;
                let col0 = n0 + 2 * (wt % 4);
                for i in 0..16 {
                    for j in 0..4 {
                        // Elements f and f + 1 are columns col and col + 1 of one row.
                        let f = i * 8 + 2 * j;
                        let row = row0 + 8 * ((f / 2) % 2);
                        let pair = cvt_f32x2_bf16x2(acc[i][2 * j], acc[i][2 * j + 1]);
                        out.add((row * n as usize + col0 + 8 * (f / 4)) / 2)
                            .write(pair);
                    }
                }
            }
        }
    }

    /// Rung 5: rung 3 made persistent: one block per SM (the grid's x), each taking tiles
    /// `blockIdx.x, blockIdx.x + gridDim.x, ..` of the `(M / 128) x (N / 256)` tiles in
    /// row-major order. The ring's stages and phases run on across tiles, so the producer
    /// loads the next tile's first stages while the consumers store the last one; a consumer
    /// releases a tile's last stage before its epilogue. `m` is the problem's M.
    #[kernel]
    #[launch_bounds(384, 1)]
    #[max_registers(168)]
    pub unsafe fn gemm_128x256_persistent(
        a: TensorMap<bf16, 2>,
        b: TensorMap<bf16, 2>,
        c: &mut [f32],
        m: u32,
        n: u32,
        k: u32,
    ) {
        static mut FULL: SharedArray<u64, STAGES> = SharedArray::UNINIT;
        static mut EMPTY: SharedArray<u64, STAGES> = SharedArray::UNINIT;
        let t = thread::threadIdx_x() as usize;
        let k_tiles = k as usize / BK;
        let tiles_n = n as usize / 256;
        let tiles = m as usize / BM * tiles_n;
        let first = thread::blockIdx_x() as usize;
        let step = thread::gridDim_x() as usize;
        // SAFETY: as rung 2's, with the ring's k-tile count `g` running on across tiles: the
        // producer's g-th load waits for the release of load g - STAGES, and a consumer
        // releases load g once the group that read it is covered by a wait.
        unsafe {
            let smem = DynamicSharedArray::<u8, 1024>::get_raw();
            let full = &raw mut FULL as *mut Barrier;
            let empty = &raw mut EMPTY as *mut Barrier;
            if t == 0 {
                for s in 0..STAGES {
                    mbarrier_init(full.add(s), 1);
                    mbarrier_init(empty.add(s), 256);
                }
                fence_proxy_async_shared_cta();
            }
            sync_threads();
            if t < 128 {
                setmaxnreg_dec::<40>();
                if t == 0 {
                    let mut g = 0usize;
                    let mut tile = first;
                    while tile < tiles {
                        let m0 = (tile / tiles_n * BM) as i32;
                        let n0 = (tile % tiles_n * 256) as i32;
                        for kt in 0..k_tiles {
                            let s = g % STAGES;
                            if g >= STAGES {
                                mbarrier_wait_parity(empty.add(s), ((g / STAGES) as u32 + 1) & 1);
                            }
                            let stage = smem.add(s * STAGE_256);
                            let _ = mbarrier_arrive_expect_tx(full.add(s), 1, STAGE_256 as u32);
                            let kx = (kt * BK) as i32;
                            cp_async_bulk_tensor_2d_g2s(stage, a.as_ptr(), kx, m0, full.add(s));
                            cp_async_bulk_tensor_2d_g2s(
                                stage.add(A_BYTES),
                                b.as_ptr(),
                                kx,
                                n0,
                                full.add(s),
                            );
                            g += 1;
                        }
                        tile += step;
                    }
                }
            } else {
                setmaxnreg_inc::<232>();
                let w = t / 128 - 1;
                let wt = t % 128;
                let mut g = 0usize;
                let mut tile = first;
                while tile < tiles {
                    let m0 = tile / tiles_n * BM;
                    let n0 = tile % tiles_n * 256;
                    let mut acc = [[0.0f32; 8]; 16];
                    for kt in 0..k_tiles {
                        let s = g % STAGES;
                        mbarrier_wait_parity(full.add(s), (g / STAGES) as u32 & 1);
                        let a_rows = smem.add(s * STAGE_256 + w * (A_BYTES / 2));
                        let b_rows = smem.add(s * STAGE_256 + A_BYTES);
                        wgmma_fence();
                        for kk in 0..BK / 16 {
                            let da = make_smem_desc_swizzled(a_rows.add(32 * kk), 16, 1024, 128);
                            let db = make_smem_desc_swizzled(b_rows.add(32 * kk), 16, 1024, 128);
                            wgmma_mma_m64n256k16_f32_bf16(&mut acc, da, db);
                        }
                        wgmma_commit_group();
                        wgmma_wait_group::<1>();
                        if kt > 0 {
                            let _ = mbarrier_arrive(empty.add((g - 1) % STAGES));
                        }
                        g += 1;
                    }
                    wgmma_wait_group::<0>();
                    let _ = mbarrier_arrive(empty.add((g - 1) % STAGES));
                    let out = c.as_mut_ptr();
                    let row0 = m0 + 64 * w + 16 * (wt / 32) + (wt % 32) / 4;
                    let col0 = n0 + 2 * (wt % 4);
                    for i in 0..16 {
                        for j in 0..8 {
                            let f = i * 8 + j;
                            let row = row0 + 8 * ((f / 2) % 2);
                            out.add(row * n as usize + col0 + 8 * (f / 4) + f % 2)
                                .write(acc[i][j]);
                        }
                    }
                    tile += step;
                }
            }
        }
    }
}

/// The host's `A B^T` for the rows in `rows`, in `f64`, with each element's sum of magnitudes
/// (for the bound of an `f32` accumulation).
fn reference(a: &[bf16], b: &[bf16], n: usize, k: usize, row: usize) -> Vec<(f64, f64)> {
    (0..n)
        .map(|col| {
            (0..k).fold((0.0, 0.0), |(sum, mag), j| {
                let p = f64::from(a[row * k + j].to_f32()) * f64::from(b[col * k + j].to_f32());
                (sum + p, mag + p.abs())
            })
        })
        .collect()
}

/// Checks C against the host (every row on the small size, sampled rows on the large one);
/// exits with the first wrong element.
fn check(name: &str, got: &[f32], a: &[bf16], b: &[bf16], dims: Dims, big: bool) {
    check_within(name, got, a, b, dims, big, 0.0);
}

/// [`check`], allowing also `rounding` times each element's magnitude (the rounding of a
/// narrower C).
fn check_within(
    name: &str,
    got: &[f32],
    a: &[bf16],
    b: &[bf16],
    (m, n, k): Dims,
    big: bool,
    rounding: f64,
) {
    let rows: Vec<usize> = if big {
        vec![0, 1, 17, 1000, 2049, m - 1]
    } else {
        (0..m).collect()
    };
    let mut wrong = 0usize;
    let mut first = None;
    for &i in &rows {
        for (j, (want, mag)) in reference(a, b, n, k, i).into_iter().enumerate() {
            // f32 accumulation over k terms: well within 2^-12 of the sum of magnitudes.
            let tol = mag * (-12f64).exp2() + want.abs() * rounding + 1e-6;
            let g = f64::from(got[i * n + j]);
            if g.is_nan() || (g - want).abs() > tol {
                wrong += 1;
                first.get_or_insert((i, j, g, want));
            }
        }
    }
    if wrong > 0 {
        eprintln!(
            "FAILED: {name} {m}x{n}x{k}: {wrong} checked elements wrong, first (row, col, got, \
             want) {first:?}"
        );
        std::process::exit(1);
    }
    println!(
        "{name} {m}x{n}x{k}: {} rows checked against the host",
        rows.len()
    );
}

/// M, N, K.
type Dims = (usize, usize, usize);

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // `--ptx FILE`: write the module's sm_90a PTX (for `ptxas -v`) and stop.
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--ptx") {
        let file = args.get(i + 1).ok_or("--ptx takes a file name")?;
        let ptx = cuprum_ptx::write_module(&*kernels::ir()?, cuprum_ptx::Target::Sm90a)?;
        std::fs::write(file, ptx)?;
        return Ok(());
    }
    let ctx = CudaContext::new(0)?;
    let gpu = ctx.backend() == BackendKind::Cuda;
    if gpu && ctx.limits().compute_capability.0 != 9 {
        println!("skipping: wgmma needs an sm_90 GPU (H100, H200)");
        return Ok(());
    }
    let big = size::benchmark_sizes(gpu);
    // The small size has twice as many K-slices as stages, so every rung's ring wraps.
    // `--size S`: an S^3 problem instead (S a multiple of 256).
    let size = match args.iter().position(|a| a == "--size") {
        Some(i) => Some(
            args.get(i + 1)
                .and_then(|s| s.parse::<usize>().ok())
                .filter(|s| *s > 0 && s % 256 == 0)
                .ok_or("--size takes a positive multiple of 256")?,
        ),
        None => None,
    };
    let (m, n, k) = match size {
        Some(s) => (s, s, s),
        None if big => (4096, 4096, 4096),
        None => (256, 512, 512),
    };
    let stream = ctx.default_stream();
    let mut rng = SmallRng::seed_from_u64(15);
    let mut rand_bf16 = |len: usize| -> Vec<bf16> {
        (0..len)
            .map(|_| bf16::from_f32(rng.random_range(-1.0f32..1.0)))
            .collect()
    };
    let ha = rand_bf16(m * k);
    let hb = rand_bf16(n * k);
    let da = DeviceBuffer::from_host(&stream, &ha)?;
    let db = DeviceBuffer::from_host(&stream, &hb)?;
    let module = kernels::load(&ctx)?;
    let amap = cuprum::TensorMap::tiled(&da, [k as u64, m as u64], [BK as u32, BM as u32])?
        .swizzled(Swizzle::B128)?;
    let rungs: [(&str, &str, usize, usize); 3] = [
        (
            "gemm_128x128_wait0",
            "128x128 tile, m64n128k16, each stage's MMAs waited for",
            128,
            STAGE_128,
        ),
        (
            "gemm_128x128",
            "128x128 tile, m64n128k16, one MMA group in flight",
            128,
            STAGE_128,
        ),
        (
            "gemm_128x256",
            "128x256 tile, m64n256k16, one MMA group in flight",
            256,
            STAGE_256,
        ),
    ];
    let mut table = Vec::new();
    for (name, what, bn, stage_bytes) in rungs {
        let bmap = cuprum::TensorMap::tiled(&db, [k as u64, n as u64], [BK as u32, bn as u32])?
            .swizzled(Swizzle::B128)?;
        let config = LaunchConfig {
            grid_dim: ((n / bn) as u32, (m / BM) as u32, 1),
            block_dim: (384, 1, 1),
            shared_mem_bytes: (STAGES * stage_bytes) as u32,
        };
        let mut dc = DeviceBuffer::from_host(&stream, &vec![f32::NAN; m * n])?;
        // SAFETY: the maps describe `da` and `db` (M x K and N x K) in boxes of the kernel's
        // tile; `dc` holds M x N, which the grid covers exactly (M, N, K multiples of the
        // tile), each thread writing its own elements.
        let (nn, kk) = (n as u32, k as u32);
        let run = |c: &mut DeviceBuffer<f32>| unsafe {
            match bn {
                256 => module.gemm_128x256(&stream, config, &amap, &bmap, c, nn, kk),
                _ if name.ends_with("wait0") => {
                    module.gemm_128x128_wait0(&stream, config, &amap, &bmap, c, nn, kk)
                }
                _ => module.gemm_128x128(&stream, config, &amap, &bmap, c, nn, kk),
            }
        };
        run(&mut dc)?;
        check(name, &dc.to_host_vec(&stream)?, &ha, &hb, (m, n, k), big);
        if gpu {
            let ms = timing::median_ms(&stream, 5, 50, || run(&mut dc))?;
            let flops = 2.0 * (m * n * k) as f64;
            let bytes = (2 * (m * k + n * k) + 4 * m * n) as f64;
            record::result(
                &format!("hopper_{name}"),
                &format!("{m}x{n}x{k}"),
                bytes,
                flops,
                ms,
            );
            table.push((name, what, ms, flops / (ms * 1e-3) / 1e12));
        }
    }
    {
        let name = "gemm_128x256_bf16";
        let bmap = cuprum::TensorMap::tiled(&db, [k as u64, n as u64], [BK as u32, 256])?
            .swizzled(Swizzle::B128)?;
        let config = LaunchConfig {
            grid_dim: ((n / 256) as u32, (m / BM) as u32, 1),
            block_dim: (384, 1, 1),
            shared_mem_bytes: (STAGES * STAGE_256) as u32,
        };
        let mut dc = DeviceBuffer::from_host(&stream, &vec![u32::MAX; m * n / 2])?;
        let (nn, kk) = (n as u32, k as u32);
        // SAFETY: as for the other rungs; `dc` holds M x N `bf16`s in pairs.
        let run = |c: &mut DeviceBuffer<u32>| unsafe {
            module.gemm_128x256_bf16(&stream, config, &amap, &bmap, c, nn, kk)
        };
        run(&mut dc)?;
        let got: Vec<f32> = dc
            .to_host_vec(&stream)?
            .into_iter()
            .flat_map(|w| [w as u16, (w >> 16) as u16].map(|h| bf16::from_bits(h).to_f32()))
            .collect();
        // Rounded to nearest with 8 significant bits: within 2^-8 of each element, relatively.
        check_within(name, &got, &ha, &hb, (m, n, k), big, (-8f64).exp2());
        if gpu {
            let ms = timing::median_ms(&stream, 5, 50, || run(&mut dc))?;
            let flops = 2.0 * (m * n * k) as f64;
            let bytes = (2 * (m * k + n * k) + 2 * m * n) as f64;
            record::result(
                &format!("hopper_{name}"),
                &format!("{m}x{n}x{k}"),
                bytes,
                flops,
                ms,
            );
            let what = "128x256 tile, m64n256k16, one MMA group in flight, bf16 C";
            table.push((name, what, ms, flops / (ms * 1e-3) / 1e12));
        }
    }
    {
        let name = "gemm_128x256_persistent";
        let bmap = cuprum::TensorMap::tiled(&db, [k as u64, n as u64], [BK as u32, 256])?
            .swizzled(Swizzle::B128)?;
        // One block per SM; on the small size one block in all, so that the ring runs on
        // across tiles there too.
        let blocks = if big {
            ctx.limits().multiprocessor_count
        } else {
            1
        };
        let config = LaunchConfig {
            grid_dim: (blocks.min(((m / BM) * (n / 256)) as u32), 1, 1),
            block_dim: (384, 1, 1),
            shared_mem_bytes: (STAGES * STAGE_256) as u32,
        };
        let mut dc = DeviceBuffer::from_host(&stream, &vec![f32::NAN; m * n])?;
        let (mm, nn, kk) = (m as u32, n as u32, k as u32);
        // SAFETY: as for the other rungs; each tile is one block's, once.
        let run = |c: &mut DeviceBuffer<f32>| unsafe {
            module.gemm_128x256_persistent(&stream, config, &amap, &bmap, c, mm, nn, kk)
        };
        run(&mut dc)?;
        check(name, &dc.to_host_vec(&stream)?, &ha, &hb, (m, n, k), big);
        if gpu {
            let ms = timing::median_ms(&stream, 5, 50, || run(&mut dc))?;
            let flops = 2.0 * (m * n * k) as f64;
            let bytes = (2 * (m * k + n * k) + 4 * m * n) as f64;
            record::result(
                &format!("hopper_{name}"),
                &format!("{m}x{n}x{k}"),
                bytes,
                flops,
                ms,
            );
            let what = "rung 3, one block per SM over the tiles";
            table.push((name, what, ms, flops / (ms * 1e-3) / 1e12));
        }
    }
    if gpu {
        println!("| kernel | what | size | median ms | TFLOP/s |");
        println!("|---|---|---|---|---|");
        for (name, what, ms, tflops) in table {
            println!("| {name} | {what} | {m}x{n}x{k} | {ms:.3} | {tflops:.1} |");
        }
    }
    println!("PASSED: hopper_gemm on {:?}", ctx.backend());
    Ok(())
}
