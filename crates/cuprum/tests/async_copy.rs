//! cuda-oxide's pointer `cp.async` (issue 14): `cp_async_ca_{4,8,16}`, `cp_async_cg_16` and
//! their `zfill` forms from `input.as_ptr()` into `core::ptr::addr_of_mut!(TILE) as *mut
//! u32`, committed and waited for, then read back after a barrier. Each thread copies its
//! own words; the zero-filling forms read a random number of source bytes per thread and must
//! leave zeros after them. Against plain Rust on random data, over outputs poisoned first.

mod common;

use common::{assert_same, ctx};
use cuprum::simt::async_copy::{
    cp_async_ca_4, cp_async_ca_8, cp_async_ca_16, cp_async_ca_zfill_4, cp_async_ca_zfill_8,
    cp_async_ca_zfill_16, cp_async_cg_16, cp_async_cg_zfill_16, cp_async_commit_group,
    cp_async_wait_all, cp_async_wait_group,
};
use cuprum::simt::{DisjointSlice, SharedArray, cuda_module, kernel, thread};
use cuprum::{DeviceBuffer, LaunchConfig};
use cuprum_testkit::poison::poisoned;
use cuprum_testkit::random::{random, rng};

/// Threads per block.
const THREADS: usize = 64;

#[cuda_module]
mod kernels {
    use super::*;

    /// Four words per thread, copied as one 16-byte copy (`cg` when `cg`), or 8-byte, or
    /// 4-byte ones, by `width`; `sizes[gid]` bytes of each copy read when `zfill`.
    #[kernel]
    pub fn copy_words(
        input: &[u32],
        sizes: &[u32],
        width: u32,
        zfill: bool,
        cg: bool,
        mut out: DisjointSlice<u32>,
    ) {
        static mut TILE: SharedArray<u32, { 4 * THREADS }> = SharedArray::UNINIT;
        let tid = thread::threadIdx_x() as usize;
        let gid = thread::index_1d();
        let g = gid.get();
        let dst = unsafe { (core::ptr::addr_of_mut!(TILE) as *mut u32).add(4 * tid) };
        let src = unsafe { input.as_ptr().add(4 * g) };
        let bytes = src as *const u8;
        let n = sizes[g];
        unsafe {
            if width == 16 {
                if zfill {
                    if cg {
                        cp_async_cg_zfill_16(dst, bytes, n);
                    } else {
                        cp_async_ca_zfill_16(dst, bytes, n);
                    }
                } else if cg {
                    cp_async_cg_16(dst, src);
                } else {
                    cp_async_ca_16(dst, src);
                }
                cp_async_commit_group();
                cp_async_wait_group(0);
            } else if width == 8 {
                for half in 0..2 {
                    let (d, s) = (dst.add(2 * half), src.add(2 * half));
                    if zfill {
                        cp_async_ca_zfill_8(d, s as *const u8, n.min(8));
                    } else {
                        cp_async_ca_8(d, s);
                    }
                }
                cp_async_commit_group();
                cp_async_wait_all();
            } else {
                for word in 0..4 {
                    let (d, s) = (dst.add(word), src.add(word));
                    if zfill {
                        cp_async_ca_zfill_4(d, s as *const u8, n.min(4));
                    } else {
                        cp_async_ca_4(d, s);
                    }
                }
                cp_async_wait_all();
            }
        }
        thread::sync_threads();
        for (j, o) in out.chunk_mut::<4>(gid) {
            *o = unsafe { TILE[4 * tid + j] };
        }
    }
}

/// What thread `g`'s four words hold: `n` bytes of `input` (per copy), then zeros.
fn expected(input: &[u32], sizes: &[u32], width: u32, zfill: bool) -> Vec<u32> {
    let mut out = Vec::with_capacity(input.len());
    for (g, words) in input.chunks(4).enumerate() {
        let mut bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        if zfill {
            let copy = width as usize;
            let n = sizes[g].min(width) as usize;
            for chunk in bytes.chunks_mut(copy) {
                chunk[n..].fill(0);
            }
        }
        out.extend(
            bytes
                .chunks(4)
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        );
    }
    out
}

#[test]
fn pointer_copies_into_shared_memory_with_and_without_zero_fill() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let mut rng = rng("pointer_cp_async");
    let blocks = 5usize;
    let n = blocks * THREADS;
    let input: Vec<u32> = random(&mut rng, 4 * n, 0, u32::MAX);
    let din = DeviceBuffer::from_host(&stream, &input).unwrap();
    let module = kernels::load(ctx).unwrap();
    let config = LaunchConfig {
        grid_dim: (blocks as u32, 1, 1),
        block_dim: (THREADS as u32, 1, 1),
        shared_mem_bytes: 0,
    };
    for (width, zfill, cg) in [
        (16, false, false),
        (16, false, true),
        (16, true, false),
        (16, true, true),
        (8, false, false),
        (8, true, false),
        (4, false, false),
        (4, true, false),
    ] {
        let sizes: Vec<u32> = random(&mut rng, n, 0, width + 1);
        let dsizes = DeviceBuffer::from_host(&stream, &sizes).unwrap();
        let mut out = DeviceBuffer::from_host(&stream, &poisoned::<u32>(4 * n)).unwrap();
        unsafe { module.copy_words(&stream, config, &din, &dsizes, width, zfill, cg, &mut out) }
            .unwrap();
        assert_same(
            &format!("{width}-byte copies, zfill {zfill}, cg {cg}"),
            &out.to_host_vec(&stream).unwrap(),
            &expected(&input, &sizes, width, zfill),
        );
    }
}
