//! Tensor-core intrinsics from SIMT kernels — `mma.sync` (f16, bf16, tf32), `ldmatrix` and
//! `cp.async` — against plain-Rust references built from PTX's documented fragment layouts.
//! Matrix entries are small integers, so every product and partial sum is exact and the
//! comparison can be bit for bit whatever order the tensor cores add in.

mod common;

use common::{assert_same, ctx, random_f32, random_u32};
use cuprum::half::{bf16, f16};
use cuprum::simt::mma::{
    cp_async, cp_async_commit, cp_async_wait_all, ldmatrix_x4, mma_m16n8k8_tf32, mma_m16n8k16_bf16,
    mma_m16n8k16_f16,
};
use cuprum::simt::{DisjointSlice, SharedArray, kernel, launch_contract, sync_threads, thread};
use cuprum::{DeviceBuffer, LaunchConfig, LaunchConfig1D, cuda_module};
use rand::Rng;

#[cuda_module]
mod kernels {
    use super::*;

    /// One warp computes D = A·B + C; each lane reads its fragments and writes its four
    /// results (an `unsafe` kernel: a lane writes four elements).
    #[kernel]
    pub unsafe fn mma_tile(kind: u32, a: &[u32], b: &[u32], c: &[f32], d: &mut [f32]) {
        let l = thread::lane_id() as usize;
        let fa = [a[4 * l], a[4 * l + 1], a[4 * l + 2], a[4 * l + 3]];
        let fb = [b[2 * l], b[2 * l + 1]];
        let fc = [c[4 * l], c[4 * l + 1], c[4 * l + 2], c[4 * l + 3]];
        let r = match kind {
            0 => mma_m16n8k16_f16(fa, fb, fc),
            1 => mma_m16n8k16_bf16(fa, fb, fc),
            _ => mma_m16n8k8_tf32(fa, fb, fc),
        };
        for k in 0..4 {
            d[4 * l + k] = r[k];
        }
    }

    /// One warp loads four 8x8 b16 matrices from shared memory with `ldmatrix`.
    #[kernel]
    pub unsafe fn load_matrices(src: &[u32], out: &mut [u32]) {
        let tile = SharedArray::<u32, 128>::uninit();
        let l = thread::lane_id() as usize;
        for k in 0..4 {
            unsafe { tile.set(32 * k + l, src[32 * k + l]) };
        }
        sync_threads();
        let m = unsafe { ldmatrix_x4(&tile, 4 * l) };
        for k in 0..4 {
            out[32 * k + l] = m[k];
        }
    }

    /// Each thread copies 16 bytes into shared memory with `cp.async`; then all read back.
    #[kernel]
    #[launch_contract(domain = 1, block = (128, 1, 1))]
    pub fn async_copy(src: &[f32], mut out: DisjointSlice<f32>) {
        let tile = SharedArray::<f32, 512>::uninit();
        let t = thread::threadIdx_x() as usize;
        unsafe { cp_async(&tile, 4 * t, src, 4 * t, 16) };
        cp_async_commit();
        cp_async_wait_all();
        sync_threads();
        if let Some(o) = out.get_mut(thread::index_1d()) {
            *o = unsafe { tile.get((4 * t + 7) % 512) } + unsafe { tile.get(511 - t) };
        }
    }
}

fn pack(lo: u16, hi: u16) -> u32 {
    u32::from(lo) | u32::from(hi) << 16
}

/// Runs one mma kind on random small integers and compares with the f64 product.
fn check_mma(kind: u32) -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let k_len = if kind == 2 { 8 } else { 16 };
    let mut rng = rand::rng();
    let mut small = || rng.random_range(-4i32..=4) as f64;
    let a: Vec<Vec<f64>> = (0..16)
        .map(|_| (0..k_len).map(|_| small()).collect())
        .collect();
    let b: Vec<Vec<f64>> = (0..k_len)
        .map(|_| (0..8).map(|_| small()).collect())
        .collect();
    let c: Vec<Vec<f64>> = (0..16)
        .map(|_| (0..8).map(|_| small() * 8.0).collect())
        .collect();
    let bits = |v: f64| -> u16 {
        match kind {
            0 => f16::from_f64(v).to_bits(),
            _ => bf16::from_f64(v).to_bits(),
        }
    };
    let (mut fa, mut fb, mut fc, mut want) = (vec![], vec![], vec![], vec![]);
    for lane in 0..32 {
        let (g, t) = (lane / 4, lane % 4);
        if kind == 2 {
            let f = |v: f64| (v as f32).to_bits();
            fa.extend([
                f(a[g][t]),
                f(a[g + 8][t]),
                f(a[g][t + 4]),
                f(a[g + 8][t + 4]),
            ]);
            fb.extend([f(b[t][g]), f(b[t + 4][g])]);
        } else {
            let (c0, c1) = (2 * t, 2 * t + 1);
            fa.extend([
                pack(bits(a[g][c0]), bits(a[g][c1])),
                pack(bits(a[g + 8][c0]), bits(a[g + 8][c1])),
                pack(bits(a[g][c0 + 8]), bits(a[g][c1 + 8])),
                pack(bits(a[g + 8][c0 + 8]), bits(a[g + 8][c1 + 8])),
            ]);
            fb.extend([
                pack(bits(b[c0][g]), bits(b[c1][g])),
                pack(bits(b[c0 + 8][g]), bits(b[c1 + 8][g])),
            ]);
        }
        for (row, col) in [
            (g, 2 * t),
            (g, 2 * t + 1),
            (g + 8, 2 * t),
            (g + 8, 2 * t + 1),
        ] {
            fc.push(c[row][col] as f32);
            let d: f64 = c[row][col] + (0..k_len).map(|k| a[row][k] * b[k][col]).sum::<f64>();
            want.push(d as f32);
        }
    }
    let (da, db, dc) = (
        DeviceBuffer::from_host(&stream, &fa)?,
        DeviceBuffer::from_host(&stream, &fb)?,
        DeviceBuffer::from_host(&stream, &fc)?,
    );
    let mut dd = DeviceBuffer::from_host(&stream, &[f32::NAN; 128])?;
    // SAFETY: one warp; lane l writes elements 4l..4l+4 of a 128-element buffer.
    unsafe {
        m.mma_tile(
            &stream,
            LaunchConfig1D::new(1, 32, 0),
            kind,
            &da,
            &db,
            &dc,
            &mut dd,
        )?
    };
    assert_same(
        &format!("mma kind {kind}"),
        &dd.to_host_vec(&stream)?,
        &want,
    );
    Ok(())
}

#[test]
fn mma_m16n8k16_f16_matches_the_product() -> cuprum::Result<()> {
    check_mma(0)
}

#[test]
fn mma_m16n8k16_bf16_matches_the_product() -> cuprum::Result<()> {
    check_mma(1)
}

#[test]
fn mma_m16n8k8_tf32_matches_the_product() -> cuprum::Result<()> {
    check_mma(2)
}

#[test]
fn ldmatrix_gives_each_lane_its_fragment() -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let src = random_u32(128);
    let dsrc = DeviceBuffer::from_host(&stream, &src)?;
    let mut out = DeviceBuffer::from_host(&stream, &[0xDEAD_BEEFu32; 128])?;
    // SAFETY: one warp; lane l writes elements l, 32 + l, 64 + l and 96 + l.
    unsafe { m.load_matrices(&stream, LaunchConfig1D::new(1, 32, 0), &dsrc, &mut out)? };
    // Matrix k's rows are 16 bytes (four u32) each: lane l gets row l / 4, u32 l % 4, which is
    // element 32k + l of the source.
    assert_same("ldmatrix", &out.to_host_vec(&stream)?, &src);
    Ok(())
}

#[test]
fn cp_async_copies_into_shared_memory() -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let src = random_f32(512);
    let dsrc = DeviceBuffer::from_host(&stream, &src)?;
    let mut out = DeviceBuffer::from_host(&stream, &[f32::NAN; 128])?;
    let config = LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (128, 1, 1),
        shared_mem_bytes: 0,
    };
    m.async_copy(&stream, &m.prepare_async_copy(config)?, &dsrc, &mut out)?;
    let want: Vec<f32> = (0..128)
        .map(|t| src[(4 * t + 7) % 512] + src[511 - t])
        .collect();
    assert_same("cp.async", &out.to_host_vec(&stream)?, &want);
    Ok(())
}
