//! The tensor memory accelerator through the user-facing API (`cuprum::simt::tma` in kernels,
//! `cuprum::TensorMap` on the host), on the emulator and, through gpu-pack, on a Hopper GPU.
//!
//! - Tile loads of ragged boxes in every swizzle mode, some hanging over the tensor's edges:
//!   each block copies the raw shared words of its box out, and every word is compared with a
//!   host model built on `Swizzle::apply` with zero fill outside the tensor. On the H200 this
//!   is the probe that pins the swizzle (and the fill) bit for bit.
//! - Tile stores from every swizzle layout, clipped at the edges, with `commit`/`wait_group`:
//!   the tensor starts poisoned, and elements outside every box (and the rows' padding) must
//!   keep their poison.
//! - A double-buffered ring: two tiles and two mbarriers whose phases alternate in parity
//!   over many rounds, each thread summing its element of every round.
//! - Planted bugs on the emulator (missing wait, missing `fence_proxy_async` before a store,
//!   a wait on the wrong parity, more bytes expected than a copy brings) give their errors.
//! - Every precondition of a tensor map is a typed `Error::TensorMap` (no GPU needed), and
//!   cuda-oxide's raw `sys::cuTensorMapEncodeTiled` refuses the same maps.
//!
//! Inputs are fresh random values (the seed is printed), outputs are poisoned first.

mod common;

use common::{assert_same, ctx};
use cuprum::ir::{OobFill, Swizzle, TensorMapProblem};
use cuprum::simt::barrier::fence_proxy_async_shared_cta;
use cuprum::simt::barrier::{
    Barrier, mbarrier_arrive, mbarrier_arrive_expect_tx, mbarrier_init, mbarrier_wait,
    mbarrier_wait_parity,
};
use cuprum::simt::tma::{
    TensorMap, TmaDescriptor, cp_async_bulk_commit_group, cp_async_bulk_tensor_2d_g2s,
    cp_async_bulk_tensor_2d_s2g, cp_async_bulk_tensor_3d_g2s, cp_async_bulk_wait_group,
    cp_async_bulk_wait_group_read,
};
use cuprum::simt::{
    DisjointSlice, SharedArray, cuda_module, fence_proxy_async, kernel, launch_contract, thread,
};
use cuprum::{BackendKind, DeviceBuffer, Error, LaunchConfig};
use cuprum_emu::EmuError;
use cuprum_testkit::poison::poisoned;
use cuprum_testkit::random::{random, rng};

/// The tensor: `W x H` `u32`s, rows padded to `PITCH` elements (a multiple of 16 bytes).
const W: u64 = 45;
const H: u64 = 13;
const PITCH: u64 = 48;

/// Flags of the kernels that plant a bug when set (0 in the correct runs).
const NO_WAIT: u32 = 1;
const NO_FENCE: u32 = 2;
const WRONG_PARITY: u32 = 4;
const EXTRA_BYTES: u32 = 8;

#[cuda_module]
mod kernels {
    use super::*;

    /// Block `b` loads the box at `(xs[b], ys[b])` (its `bytes` bytes, one thread per word)
    /// and copies the tile's raw shared words to its part of `out`.
    #[kernel]
    pub fn load_raw(
        map: TensorMap<u32, 2>,
        xs: &[i32],
        ys: &[i32],
        bytes: u32,
        flags: u32,
        mut out: DisjointSlice<u32>,
    ) {
        static mut TILE: SharedArray<u32, 1024, 1024> = SharedArray::UNINIT;
        static mut BAR: Barrier = Barrier::UNINIT;
        let t = thread::threadIdx_x();
        let b = thread::blockIdx_x() as usize;
        if t == 0 {
            // SAFETY: one thread initialises the barrier before the block barrier.
            unsafe { mbarrier_init(&raw mut BAR, 1) };
            fence_proxy_async();
        }
        thread::sync_threads();
        // SAFETY: thread 0 alone starts the copy and announces its bytes; every thread reads
        // TILE only after the wait on that phase (unless the planted bug skips it).
        unsafe {
            if t == 0 {
                let extra = if flags & EXTRA_BYTES != 0 { 16 } else { 0 };
                mbarrier_arrive_expect_tx(&raw const BAR, 1, bytes + extra);
                cp_async_bulk_tensor_2d_g2s(
                    &raw mut TILE as *mut u8,
                    map.as_ptr(),
                    xs[b],
                    ys[b],
                    &raw mut BAR,
                );
            }
            if flags & NO_WAIT == 0 {
                mbarrier_wait_parity(&raw const BAR, 0);
            }
            if let Some(o) = out.get_mut(thread::index_1d()) {
                *o = TILE[t as usize];
            }
        }
    }

    /// Block `b` fills a tile with its part of `src` (raw shared words, one per thread) and
    /// stores it as the box at `(xs[b], ys[b])`.
    #[kernel]
    pub fn store_raw(map: TensorMap<u32, 2>, xs: &[i32], ys: &[i32], src: &[u32], flags: u32) {
        static mut TILE: SharedArray<u32, 1024, 1024> = SharedArray::UNINIT;
        let t = thread::threadIdx_x();
        let b = thread::blockIdx_x() as usize;
        let i = thread::index_1d().get();
        // SAFETY: each thread writes its own word; the fence and the block barrier hand the
        // tile to the TMA unit; thread 0 waits for the store to finish before the block ends.
        unsafe {
            TILE[t as usize] = src[i];
            if flags & NO_FENCE == 0 {
                fence_proxy_async();
            }
            thread::sync_threads();
            if t == 0 {
                cp_async_bulk_tensor_2d_s2g(
                    &raw const TILE as *const u8,
                    map.as_ptr(),
                    xs[b],
                    ys[b],
                );
                cp_async_bulk_commit_group();
                cp_async_bulk_wait_group_read(0);
                cp_async_bulk_wait_group(0);
            }
        }
    }

    /// A ring of two tiles: round `k` (of `rounds`, even) loads the box of rows
    /// `k * rows..` into tile `k % 2`, counted on barrier `k % 2`, whose phase for it has
    /// parity `(k / 2) % 2`; thread 0 refills a tile for round `k + 2` once every thread has
    /// read it. Each thread sums (wrapping) its word of every round.
    #[kernel]
    pub fn ring_sum(
        map: TensorMap<u32, 2>,
        rounds: u32,
        rows: i32,
        bytes: u32,
        flags: u32,
        mut out: DisjointSlice<u32>,
    ) {
        static mut TILE0: SharedArray<u32, 512, 128> = SharedArray::UNINIT;
        static mut TILE1: SharedArray<u32, 512, 128> = SharedArray::UNINIT;
        static mut BAR0: Barrier = Barrier::UNINIT;
        static mut BAR1: Barrier = Barrier::UNINIT;
        let t = thread::threadIdx_x();
        let lap = if flags & WRONG_PARITY != 0 { 1 } else { 0 };
        // SAFETY: thread 0 initialises both barriers before the block barrier, then alone
        // starts copies, each into a tile no thread reads until the wait on its phase, and
        // refills a tile only after the block barrier that follows every thread's read.
        unsafe {
            if t == 0 {
                mbarrier_init(&raw mut BAR0, 1);
                mbarrier_init(&raw mut BAR1, 1);
                fence_proxy_async();
            }
            thread::sync_threads();
            if t == 0 {
                mbarrier_arrive_expect_tx(&raw const BAR0, 1, bytes);
                cp_async_bulk_tensor_2d_g2s(
                    &raw mut TILE0 as *mut u8,
                    map.as_ptr(),
                    0,
                    0,
                    &raw mut BAR0,
                );
                mbarrier_arrive_expect_tx(&raw const BAR1, 1, bytes);
                cp_async_bulk_tensor_2d_g2s(
                    &raw mut TILE1 as *mut u8,
                    map.as_ptr(),
                    0,
                    rows,
                    &raw mut BAR1,
                );
            }
            let mut acc = 0u32;
            let mut k = 0u32;
            while k < rounds {
                let parity = ((k / 2) % 2) ^ lap;
                mbarrier_wait_parity(&raw const BAR0, parity);
                acc = acc.wrapping_add(TILE0[t as usize]);
                thread::sync_threads();
                if t == 0 && k + 2 < rounds {
                    mbarrier_arrive_expect_tx(&raw const BAR0, 1, bytes);
                    let y = (k + 2) as i32 * rows;
                    cp_async_bulk_tensor_2d_g2s(
                        &raw mut TILE0 as *mut u8,
                        map.as_ptr(),
                        0,
                        y,
                        &raw mut BAR0,
                    );
                }
                mbarrier_wait_parity(&raw const BAR1, parity);
                acc = acc.wrapping_add(TILE1[t as usize]);
                thread::sync_threads();
                if t == 0 && k + 3 < rounds {
                    mbarrier_arrive_expect_tx(&raw const BAR1, 1, bytes);
                    let y = (k + 3) as i32 * rows;
                    cp_async_bulk_tensor_2d_g2s(
                        &raw mut TILE1 as *mut u8,
                        map.as_ptr(),
                        0,
                        y,
                        &raw mut BAR1,
                    );
                }
                k += 2;
            }
            if let Some(o) = out.get_mut(thread::index_1d()) {
                *o = acc;
            }
        }
    }

    /// cuda-oxide's form: the map is a `*const TmaDescriptor` into device memory (its launch
    /// is `unsafe` even with a contract). Loads the box at the origin and copies it out.
    #[kernel]
    #[launch_contract(domain = 1, block = (256, 1, 1))]
    pub fn load_through_pointer(tensor_map: *const TmaDescriptor, mut out: DisjointSlice<u32>) {
        static mut TILE: SharedArray<u32, 256, 128> = SharedArray::UNINIT;
        static mut BAR: Barrier = Barrier::UNINIT;
        let t = thread::threadIdx_x();
        if t == 0 {
            // SAFETY: as in `load_raw`.
            unsafe { mbarrier_init(&raw mut BAR, 1) };
            unsafe { fence_proxy_async_shared_cta() };
        }
        thread::sync_threads();
        // SAFETY: as in `load_raw`; the caller passes a valid map of a 32x8 box of u32.
        unsafe {
            if t == 0 {
                mbarrier_arrive_expect_tx(&raw const BAR, 1, 1024);
                cp_async_bulk_tensor_2d_g2s(
                    &raw mut TILE as *mut u8,
                    tensor_map,
                    0,
                    0,
                    &raw mut BAR,
                );
            }
            mbarrier_wait_parity(&raw const BAR, 0);
            if let Some(o) = out.get_mut(thread::index_1d()) {
                *o = TILE[t as usize];
            }
        }
    }

    /// A 3-D box of `u16` at `(x, y, z)`, copied out (one element per thread), and a 2-D box
    /// of `f32` from a map that fills with NaN, to `nan_out`.
    #[kernel]
    pub fn load_3d_and_nan(
        map3: TensorMap<u16, 3>,
        x: i32,
        y: i32,
        z: i32,
        bytes3: u32,
        nan_map: TensorMap<f32, 2>,
        bytes2: u32,
        mut out: DisjointSlice<u16>,
        mut nan_out: DisjointSlice<f32>,
    ) {
        static mut T3: SharedArray<u16, 512, 128> = SharedArray::UNINIT;
        static mut T2: SharedArray<f32, 256, 128> = SharedArray::UNINIT;
        static mut BAR: Barrier = Barrier::UNINIT;
        let t = thread::threadIdx_x();
        if t == 0 {
            // SAFETY: as in `load_raw`.
            unsafe { mbarrier_init(&raw mut BAR, 1) };
            fence_proxy_async();
        }
        thread::sync_threads();
        // SAFETY: as in `load_raw`: both copies complete on the one phase the wait covers.
        unsafe {
            if t == 0 {
                mbarrier_arrive_expect_tx(&raw const BAR, 1, bytes3 + bytes2);
                cp_async_bulk_tensor_3d_g2s(
                    &raw mut T3 as *mut u8,
                    map3.as_ptr(),
                    x,
                    y,
                    z,
                    &raw mut BAR,
                );
                cp_async_bulk_tensor_2d_g2s(
                    &raw mut T2 as *mut u8,
                    nan_map.as_ptr(),
                    40,
                    10,
                    &raw mut BAR,
                );
            }
            mbarrier_wait_parity(&raw const BAR, 0);
            let i = thread::index_1d();
            let j = thread::index_1d();
            if let Some(o) = out.get_mut(i) {
                *o = T3[t as usize];
            }
            if let Some(o) = nan_out.get_mut(j) {
                *o = T2[t as usize];
            }
        }
    }

    /// All threads arrive, thread 0 with the box's bytes; all wait with a token (the form
    /// cuda-oxide's example uses), then copy the tile out.
    #[kernel]
    pub fn load_with_tokens(map: TensorMap<u32, 2>, bytes: u32, mut out: DisjointSlice<u32>) {
        static mut TILE: SharedArray<u32, 256, 128> = SharedArray::UNINIT;
        static mut BAR: Barrier = Barrier::UNINIT;
        let t = thread::threadIdx_x();
        if t == 0 {
            // SAFETY: as in `load_raw`.
            unsafe { mbarrier_init(&raw mut BAR, thread::blockDim_x()) };
            fence_proxy_async();
        }
        thread::sync_threads();
        // SAFETY: as in `load_raw`; the phase needs every thread's arrival and the bytes.
        unsafe {
            let token = if t == 0 {
                cp_async_bulk_tensor_2d_g2s(
                    &raw mut TILE as *mut u8,
                    map.as_ptr(),
                    0,
                    0,
                    &raw mut BAR,
                );
                mbarrier_arrive_expect_tx(&raw const BAR, 1, bytes)
            } else {
                mbarrier_arrive(&raw const BAR)
            };
            mbarrier_wait(&raw const BAR, token);
            if let Some(o) = out.get_mut(thread::index_1d()) {
                *o = TILE[t as usize];
            }
        }
    }
}

/// The boxes every swizzle mode is tested with: (swizzle, box width, box height). Swizzled
/// boxes span their swizzle's whole row; heights are ragged.
const BOXES: [(Swizzle, u32, u32); 4] = [
    (Swizzle::None, 40, 5),
    (Swizzle::B32, 8, 7),
    (Swizzle::B64, 16, 6),
    (Swizzle::B128, 32, 8),
];

/// Box origins per box width: inside, over the right and bottom edges, before the start,
/// and wholly outside. Each x is a multiple of 16 bytes (4 `u32`s): the hardware refuses a
/// box whose innermost coordinate is not (an illegal instruction on the H200; the emulator
/// reports it, see `an_unaligned_innermost_coordinate_is_reported`).
fn origins(bw: u32, bh: u32) -> Vec<(i32, i32)> {
    let (bw, bh) = (bw as i32, bh as i32);
    let aligned = |x: i32| x.div_euclid(4) * 4;
    vec![
        (0, 0),
        (aligned(W as i32 - bw / 2), 1),
        (4, H as i32 - bh / 2),
        (aligned(-bw / 2), -2),
        (aligned(W as i32 - 3), H as i32 - 1),
        (aligned(W as i32 + 4), 0),
    ]
}

/// The element of the padded tensor of `height` rows at `(x, y)`, or 0 outside
/// `W x height`.
fn element(data: &[u32], height: u64, x: i64, y: i64) -> u32 {
    if (0..W as i64).contains(&x) && (0..height as i64).contains(&y) {
        data[(y as u64 * PITCH + x as u64) as usize]
    } else {
        0
    }
}

/// The raw shared words the box at `(x, y)` leaves under `swizzle` (the tile 1024-aligned).
fn load_model(data: &[u32], x: i32, y: i32, bw: u32, bh: u32, swizzle: Swizzle) -> Vec<u32> {
    let mut words = vec![0u32; (bw * bh) as usize];
    for r in 0..bh {
        for c in 0..bw {
            let dense = (r * bw + c) * 4;
            let at = swizzle.apply(dense) / 4;
            words[at as usize] = element(data, H, i64::from(x + c as i32), i64::from(y + r as i32));
        }
    }
    words
}

/// A map of the padded `W x H` tensor of `buf` in boxes of `bw x bh` under `swizzle`.
fn tensor_map<'b>(
    buf: &'b DeviceBuffer<u32>,
    bw: u32,
    bh: u32,
    swizzle: Swizzle,
) -> cuprum::Result<cuprum::TensorMap<'b, u32, 2>> {
    cuprum::TensorMap::with_layout(
        buf,
        0,
        [W, H],
        [4, PITCH * 4],
        [bw, bh],
        swizzle,
        OobFill::Zero,
    )
}

fn config(blocks: usize, threads: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (blocks as u32, 1, 1),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// Whether the context can run TMA (compute capability 9.0; the emulator models it).
fn hopper() -> bool {
    let ok = ctx()
        .compute_capability()
        .is_ok_and(|(major, _)| major >= 9);
    if !ok {
        eprintln!("TMA needs compute capability 9.0; skipped");
    }
    ok
}

#[test]
fn tile_loads_land_swizzled_with_zero_fill_at_the_edges() {
    if !hopper() {
        return;
    }
    let ctx = ctx();
    let stream = ctx.default_stream();
    let module = kernels::load(ctx).unwrap();
    let mut rng = rng("tma tile loads");
    let data: Vec<u32> = random(&mut rng, (PITCH * H) as usize, 1, u32::MAX);
    let dev = DeviceBuffer::from_host(&stream, &data).unwrap();
    for (swizzle, bw, bh) in BOXES {
        let map = tensor_map(&dev, bw, bh, swizzle).unwrap();
        let at = origins(bw, bh);
        let xs: Vec<i32> = at.iter().map(|p| p.0).collect();
        let ys: Vec<i32> = at.iter().map(|p| p.1).collect();
        let n = (bw * bh) as usize;
        let dxs = DeviceBuffer::from_host(&stream, &xs).unwrap();
        let dys = DeviceBuffer::from_host(&stream, &ys).unwrap();
        let mut out = DeviceBuffer::from_host(&stream, &poisoned::<u32>(n * at.len())).unwrap();
        let cfg = config(at.len(), n as u32);
        // Named before the launch: a fault on a GPU leaves the context unusable.
        eprintln!("tma tile load: {swizzle:?} box {bw}x{bh} at {at:?}");
        unsafe { module.load_raw(&stream, cfg, &map, &dxs, &dys, map.box_bytes(), 0, &mut out) }
            .unwrap();
        let want: Vec<u32> = at
            .iter()
            .flat_map(|&(x, y)| load_model(&data, x, y, bw, bh, swizzle))
            .collect();
        assert_same(
            &format!("{swizzle:?} box {bw}x{bh} raw shared words"),
            &out.to_host_vec(&stream).unwrap(),
            &want,
        );
    }
}

#[test]
fn three_dimensional_boxes_and_nan_fill() {
    if !hopper() {
        return;
    }
    let ctx = ctx();
    let stream = ctx.default_stream();
    let module = kernels::load(ctx).unwrap();
    let mut rng = rng("tma 3-d and nan fill");
    // A 3-D tensor of u16: 21 x 5 x 4, rows padded to 24 elements (48 bytes), planes of
    // 5 rows; boxes of 8 x 4 x 3 at an origin over the x, y and z edges.
    let (dims, pitch) = ([21u64, 5, 4], 24u64);
    let data3: Vec<u16> = random(&mut rng, (pitch * 5 * 4) as usize, 1, u16::MAX);
    let d3 = DeviceBuffer::from_host(&stream, &data3).unwrap();
    let map3 = cuprum::TensorMap::with_layout(
        &d3,
        0,
        dims,
        [2, pitch * 2, pitch * 2 * 5],
        [8, 4, 3],
        Swizzle::None,
        OobFill::Zero,
    )
    .unwrap();
    let (x, y, z) = (16i32, 3i32, 2i32);
    let want3: Vec<u16> = (0..8 * 4 * 3)
        .map(|i| {
            let (gx, gy, gz) = (x + i % 8, y + (i / 8) % 4, z + i / 32);
            let inside = (0..21).contains(&gx) && (0..5).contains(&gy) && (0..4).contains(&gz);
            if inside {
                data3[(gz as u64 * pitch * 5 + gy as u64 * pitch + gx as u64) as usize]
            } else {
                0
            }
        })
        .collect();
    // A 2-D tensor of f32 (the usual W x H) whose box at (40, 10) of 16 x 8 hangs over the
    // right and bottom edges, filled with NaN there.
    let data2: Vec<f32> = random(&mut rng, (PITCH * H) as usize, -100.0, 100.0);
    let d2 = DeviceBuffer::from_host(&stream, &data2).unwrap();
    let map2 = cuprum::TensorMap::with_layout(
        &d2,
        0,
        [W, H],
        [4, PITCH * 4],
        [16, 8],
        Swizzle::None,
        OobFill::Nan,
    )
    .unwrap();
    let mut out3 = DeviceBuffer::from_host(&stream, &[0xBEEFu16; 96]).unwrap();
    let mut out2 = DeviceBuffer::from_host(&stream, &poisoned::<f32>(128)).unwrap();
    unsafe {
        module.load_3d_and_nan(
            &stream,
            config(1, 128),
            &map3,
            x,
            y,
            z,
            map3.box_bytes(),
            &map2,
            map2.box_bytes(),
            &mut out3,
            &mut out2,
        )
    }
    .unwrap();
    assert_same("3-d box", &out3.to_host_vec(&stream).unwrap(), &want3);
    let got2 = out2.to_host_vec(&stream).unwrap();
    for (i, v) in got2.iter().enumerate() {
        let (gx, gy) = (40 + i as u64 % 16, 10 + i as u64 / 16);
        if gx < W && gy < H {
            assert_eq!(
                v.to_bits(),
                data2[(gy * PITCH + gx) as usize].to_bits(),
                "element {i}"
            );
        } else {
            assert!(v.is_nan(), "element {i} outside the tensor: {v}");
        }
    }
}

#[test]
fn arrivals_with_tokens_wait_for_the_bytes_too() {
    if !hopper() {
        return;
    }
    let ctx = ctx();
    let stream = ctx.default_stream();
    let module = kernels::load(ctx).unwrap();
    let mut rng = rng("tma token waits");
    let data: Vec<u32> = random(&mut rng, (PITCH * H) as usize, 1, u32::MAX);
    let dev = DeviceBuffer::from_host(&stream, &data).unwrap();
    let map = tensor_map(&dev, 16, 13, Swizzle::None).unwrap();
    let mut out = DeviceBuffer::from_host(&stream, &poisoned::<u32>(16 * 13)).unwrap();
    unsafe {
        module.load_with_tokens(&stream, config(1, 16 * 13), &map, map.box_bytes(), &mut out)
    }
    .unwrap();
    let want = load_model(&data, 0, 0, 16, 13, Swizzle::None);
    assert_same("tile", &out.to_host_vec(&stream).unwrap(), &want);
}

/// The tensor after stores of `src`'s boxes at `at` over `before`: each box's words
/// unswizzled, clipped to `W x H`.
fn store_model(
    before: &[u32],
    src: &[u32],
    at: &[(i32, i32)],
    bw: u32,
    bh: u32,
    swizzle: Swizzle,
) -> Vec<u32> {
    let mut t = before.to_vec();
    let n = (bw * bh) as usize;
    // A store writes each row's last 16-byte chunk whole: columns up to 48, not 45 (as the
    // H200 does; a load reads columns 45..47 as out of bounds).
    let stored_cols = W.next_multiple_of(4) as i64;
    for (b, &(x, y)) in at.iter().enumerate() {
        for r in 0..bh {
            for c in 0..bw {
                let (gx, gy) = (i64::from(x) + i64::from(c), i64::from(y) + i64::from(r));
                if !(0..stored_cols).contains(&gx) || !(0..H as i64).contains(&gy) {
                    continue;
                }
                let word = swizzle.apply((r * bw + c) * 4) / 4;
                t[(gy as u64 * PITCH + gx as u64) as usize] = src[b * n + word as usize];
            }
        }
    }
    t
}

#[test]
fn tile_stores_are_clipped_at_the_edges() {
    if !hopper() {
        return;
    }
    let ctx = ctx();
    let stream = ctx.default_stream();
    let module = kernels::load(ctx).unwrap();
    let mut rng = rng("tma tile stores");
    for (swizzle, bw, bh) in BOXES {
        // Boxes that tile the tensor without overlapping, the last ones over the edges.
        let mut at = Vec::new();
        for y in (0..H as i32).step_by(bh as usize) {
            for x in (0..W as i32).step_by(bw as usize) {
                at.push((x, y));
            }
        }
        let n = (bw * bh) as usize;
        let src: Vec<u32> = random(&mut rng, n * at.len(), 1, u32::MAX);
        let before = poisoned::<u32>((PITCH * H) as usize);
        let dev = DeviceBuffer::from_host(&stream, &before).unwrap();
        let map = tensor_map(&dev, bw, bh, swizzle).unwrap();
        let xs: Vec<i32> = at.iter().map(|p| p.0).collect();
        let ys: Vec<i32> = at.iter().map(|p| p.1).collect();
        let dxs = DeviceBuffer::from_host(&stream, &xs).unwrap();
        let dys = DeviceBuffer::from_host(&stream, &ys).unwrap();
        let dsrc = DeviceBuffer::from_host(&stream, &src).unwrap();
        let cfg = config(at.len(), n as u32);
        unsafe { module.store_raw(&stream, cfg, &map, &dxs, &dys, &dsrc, 0) }.unwrap();
        let want = store_model(&before, &src, &at, bw, bh, swizzle);
        assert_same(
            &format!("{swizzle:?} box {bw}x{bh} stored tensor"),
            &dev.to_host_vec(&stream).unwrap(),
            &want,
        );
    }
}

#[test]
fn a_stored_tensor_that_another_argument_reads_is_refused_at_launch() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let module = kernels::load(ctx).unwrap();
    let dev = DeviceBuffer::from_host(&stream, &poisoned::<u32>((PITCH * H) as usize)).unwrap();
    let map = tensor_map(&dev, 32, 8, Swizzle::None).unwrap();
    let at = DeviceBuffer::from_host(&stream, &[0i32]).unwrap();
    // `src` is the stored tensor's own buffer: both are shared borrows, so rustc allows it.
    match unsafe { module.store_raw(&stream, config(1, 256), &map, &at, &at, &dev, 0) } {
        Err(Error::InvalidLaunch { kernel, reason }) => {
            assert_eq!(kernel, "store_raw");
            assert!(
                reason.contains("`map`") && reason.contains("`src`"),
                "{reason}"
            );
        }
        other => panic!("expected InvalidLaunch, got {other:?}"),
    }
}

/// What each thread of `ring_sum` sums: its word of every round's box of `rows` rows.
fn ring_model(data: &[u32], rounds: u32, rows: u32, bw: u32) -> Vec<u32> {
    (0..rows * bw)
        .map(|t| {
            (0..rounds).fold(0u32, |acc, k| {
                let (r, c) = (t / bw, t % bw);
                let y = i64::from(k * rows + r);
                acc.wrapping_add(element(data, RING_H, i64::from(c), y))
            })
        })
        .collect()
}

/// A tall tensor for the ring: `W x RING_H`, padded rows.
const RING_H: u64 = 61;

fn ring_map(buf: &DeviceBuffer<u32>, bw: u32, rows: u32) -> cuprum::TensorMap<'_, u32, 2> {
    cuprum::TensorMap::with_layout(
        buf,
        0,
        [W, RING_H],
        [4, PITCH * 4],
        [bw, rows],
        Swizzle::None,
        OobFill::Zero,
    )
    .unwrap()
}

#[test]
fn a_double_buffered_ring_alternates_parity_over_many_rounds() {
    if !hopper() {
        return;
    }
    let ctx = ctx();
    let stream = ctx.default_stream();
    let module = kernels::load(ctx).unwrap();
    let mut rng = rng("tma ring");
    let data: Vec<u32> = random(&mut rng, (PITCH * RING_H) as usize, 1, u32::MAX);
    let dev = DeviceBuffer::from_host(&stream, &data).unwrap();
    let (bw, rows) = (32u32, 4u32);
    let map = ring_map(&dev, bw, rows);
    // 16 rounds of 4 rows: 64 rows of a 61-row tensor, so the last round is partly fill.
    let rounds = 16;
    let n = (bw * rows) as usize;
    let mut out = DeviceBuffer::from_host(&stream, &poisoned::<u32>(n)).unwrap();
    unsafe {
        module.ring_sum(
            &stream,
            config(1, n as u32),
            &map,
            rounds,
            rows as i32,
            map.box_bytes(),
            0,
            &mut out,
        )
    }
    .unwrap();
    assert_same(
        "ring sums",
        &out.to_host_vec(&stream).unwrap(),
        &ring_model(&data, rounds, rows, bw),
    );
}

/// Runs a planted bug on the emulator and returns its error; `None` on a GPU, where it is
/// undefined behaviour (a hang, for the deadlock).
fn planted(
    run: impl FnOnce(&kernels::Module, &cuprum::Stream) -> cuprum::Result<()>,
) -> Option<EmuError> {
    let ctx = ctx();
    if ctx.backend() != BackendKind::Emulator {
        eprintln!("planted-bug kernels only run on the emulator");
        return None;
    }
    let stream = ctx.default_stream();
    let module = kernels::load(ctx).unwrap();
    match run(&module, &stream) {
        Err(Error::Emulator { source, .. }) => Some(source),
        Err(other) => panic!("expected an emulator diagnostic, got {other}"),
        Ok(()) => panic!("the planted bug went unnoticed"),
    }
}

/// `load_raw` of one 32x8 box at the origin with `flags`.
fn load_with(flags: u32) -> Option<EmuError> {
    load_at(0, flags)
}

/// `load_raw` of one 32x8 box at `(x, 0)` with `flags`.
fn load_at(x: i32, flags: u32) -> Option<EmuError> {
    planted(|m, s| {
        let data: Vec<u32> = (1..=(PITCH * H) as u32).collect();
        let dev = DeviceBuffer::from_host(s, &data)?;
        let map = tensor_map(&dev, 32, 8, Swizzle::B128)?;
        let xs = DeviceBuffer::from_host(s, &[x])?;
        let ys = DeviceBuffer::from_host(s, &[0i32])?;
        let mut out = DeviceBuffer::from_host(s, &poisoned::<u32>(256))?;
        unsafe {
            m.load_raw(
                s,
                config(1, 256),
                &map,
                &xs,
                &ys,
                map.box_bytes(),
                flags,
                &mut out,
            )
        }
    })
}

/// A box whose innermost coordinate is not a multiple of 16 bytes from the tensor's start
/// (x = 3 and x = -1 `u32`s, in bounds or not) stops an H200 with an illegal instruction;
/// the emulator names the coordinate and the rule instead.
#[test]
fn an_unaligned_innermost_coordinate_is_reported() {
    for x in [3, -1, 6] {
        let Some(e) = load_at(x, 0) else { return };
        match &e {
            EmuError::TmaMisuse { message, .. } => assert!(
                message.contains("multiple of 16 bytes") && message.contains(&format!(" {x} is")),
                "x = {x}: {message}"
            ),
            other => panic!("x = {x}: expected a TMA misuse, got {other}"),
        }
    }
}

#[test]
fn reading_a_tile_without_waiting_is_a_race_with_the_tma() {
    let Some(e) = load_with(NO_WAIT) else { return };
    assert!(matches!(e, EmuError::AsyncProxyRace { .. }), "got {e}");
}

#[test]
fn expecting_more_bytes_than_arrive_is_a_deadlock() {
    let Some(e) = load_with(EXTRA_BYTES) else {
        return;
    };
    assert!(matches!(e, EmuError::MbarrierDeadlock { .. }), "got {e}");
}

#[test]
fn a_store_without_the_proxy_fence_is_reported() {
    let Some(e) = planted(|m, s| {
        let dev = DeviceBuffer::from_host(s, &poisoned::<u32>((PITCH * H) as usize))?;
        let map = tensor_map(&dev, 32, 8, Swizzle::None)?;
        let xs = DeviceBuffer::from_host(s, &[0i32])?;
        let ys = DeviceBuffer::from_host(s, &[0i32])?;
        let src = DeviceBuffer::from_host(s, &vec![7u32; 256])?;
        unsafe { m.store_raw(s, config(1, 256), &map, &xs, &ys, &src, NO_FENCE) }
    }) else {
        return;
    };
    assert!(matches!(e, EmuError::MissingProxyFence { .. }), "got {e}");
}

#[test]
fn waiting_on_the_wrong_parity_reads_a_tile_still_in_flight() {
    let Some(e) = planted(|m, s| {
        let dev = DeviceBuffer::from_host(s, &vec![1u32; (PITCH * RING_H) as usize])?;
        let map = ring_map(&dev, 32, 4);
        let mut out = DeviceBuffer::from_host(s, &poisoned::<u32>(128))?;
        unsafe {
            m.ring_sum(
                s,
                config(1, 128),
                &map,
                8,
                4,
                map.box_bytes(),
                WRONG_PARITY,
                &mut out,
            )
        }
    }) else {
        return;
    };
    assert!(matches!(e, EmuError::AsyncProxyRace { .. }), "got {e}");
}

/// The problem a `TensorMap` construction reports.
fn problem<T>(r: cuprum::Result<T>) -> TensorMapProblem {
    match r {
        Err(Error::TensorMap { problem }) => problem,
        Err(other) => panic!("expected Error::TensorMap, got {other}"),
        Ok(_) => panic!("the map was accepted"),
    }
}

#[test]
fn every_tensor_map_precondition_is_a_typed_error() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let buf = DeviceBuffer::from_host(&stream, &vec![0u32; 4096]).unwrap();
    let map = |offset, dims: [u64; 2], pitch, box_dims: [u32; 2], swizzle| {
        cuprum::TensorMap::with_layout(
            &buf,
            offset,
            dims,
            [4, pitch],
            box_dims,
            swizzle,
            OobFill::Zero,
        )
    };
    // The control: the same map, well formed, is accepted.
    assert!(map(0, [45, 13], 192, [32, 8], Swizzle::B128).is_ok());
    assert_eq!(
        problem(map(1, [45, 13], 192, [32, 8], Swizzle::None)),
        TensorMapProblem::Address(buf.cu_deviceptr() + 4)
    );
    assert_eq!(
        problem(map(0, [45, 13], 180, [32, 8], Swizzle::None)),
        TensorMapProblem::Stride {
            dim: 1,
            stride: 180
        }
    );
    assert_eq!(
        problem(map(0, [400, 2], 1600, [300, 1], Swizzle::None)),
        TensorMapProblem::BoxDim { dim: 0, size: 300 }
    );
    assert_eq!(
        problem(map(0, [45, 13], 192, [6, 8], Swizzle::None)),
        TensorMapProblem::BoxInner {
            bytes: 24,
            elem_bytes: 4
        }
    );
    assert_eq!(
        problem(map(0, [45, 13], 192, [16, 8], Swizzle::B32)),
        TensorMapProblem::BoxSwizzle {
            bytes: 64,
            span: 32,
            swizzle: Swizzle::B32
        }
    );
    assert!(matches!(
        problem(map(0, [45, 100], 192, [32, 8], Swizzle::None)),
        TensorMapProblem::Extent { have: 16384, .. }
    ));
    assert_eq!(
        problem(cuprum::TensorMap::<u32, 0>::tiled(&buf, [], [])),
        TensorMapProblem::Rank(0)
    );
    assert_eq!(
        problem(cuprum::TensorMap::<u32, 6>::tiled(&buf, [2; 6], [1; 6])),
        TensorMapProblem::Rank(6)
    );
}

#[test]
fn the_raw_encode_call_refuses_what_tensor_map_refuses() {
    use cuprum::sys::*;
    let ctx = ctx();
    let stream = ctx.default_stream();
    let buf = DeviceBuffer::from_host(&stream, &vec![0u32; 4096]).unwrap();
    let encode = |address: u64, pitch: u64, box_w: u32| {
        let mut map = std::mem::MaybeUninit::<CUtensorMap>::uninit();
        let (dims, strides, boxes, ones) = ([45u64, 13], [pitch], [box_w, 8u32], [1u32, 1]);
        // SAFETY: every array has the rank's entries; `map` is 128 writable bytes.
        unsafe {
            cuTensorMapEncodeTiled(
                map.as_mut_ptr(),
                CUtensorMapDataType_enum_CU_TENSOR_MAP_DATA_TYPE_UINT32,
                2,
                address as *mut std::ffi::c_void,
                dims.as_ptr(),
                strides.as_ptr(),
                boxes.as_ptr(),
                ones.as_ptr(),
                CUtensorMapInterleave_enum_CU_TENSOR_MAP_INTERLEAVE_NONE,
                CUtensorMapSwizzle_enum_CU_TENSOR_MAP_SWIZZLE_NONE,
                CUtensorMapL2promotion_enum_CU_TENSOR_MAP_L2_PROMOTION_NONE,
                CUtensorMapFloatOOBfill_enum_CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
            )
        }
    };
    let base = buf.cu_deviceptr();
    assert_eq!(encode(base, 192, 32), cudaError_enum_CUDA_SUCCESS);
    let invalid = cudaError_enum_CUDA_ERROR_INVALID_VALUE;
    assert_eq!(encode(base + 4, 192, 32), invalid, "misaligned address");
    assert_eq!(encode(base, 180, 32), invalid, "stride");
    assert_eq!(encode(base, 192, 6), invalid, "box inner bytes");
    // 13 rows of 192 bytes need 2484 bytes; 16 KiB less 14 KiB leaves 2 KiB.
    assert_eq!(
        encode(base + 14 * 1024, 192, 32),
        invalid,
        "buffer too small"
    );
}

#[test]
fn a_map_encoded_by_hand_and_copied_to_the_device_is_read_through_its_pointer() {
    use cuprum::sys::*;
    if !hopper() {
        return;
    }
    let ctx = ctx();
    let stream = ctx.default_stream();
    let module = kernels::load(ctx).unwrap();
    let mut rng = rng("tma map by pointer");
    let data: Vec<u32> = random(&mut rng, (PITCH * H) as usize, 1, u32::MAX);
    let dev = DeviceBuffer::from_host(&stream, &data).unwrap();
    let mut map = std::mem::MaybeUninit::<CUtensorMap>::uninit();
    let (dims, strides, boxes, ones) = ([W, H], [PITCH * 4], [32u32, 8], [1u32, 1]);
    // SAFETY: every array has the rank's entries; `map` is 128 writable bytes.
    let status = unsafe {
        cuTensorMapEncodeTiled(
            map.as_mut_ptr(),
            CUtensorMapDataType_enum_CU_TENSOR_MAP_DATA_TYPE_UINT32,
            2,
            dev.cu_deviceptr() as *mut std::ffi::c_void,
            dims.as_ptr(),
            strides.as_ptr(),
            boxes.as_ptr(),
            ones.as_ptr(),
            CUtensorMapInterleave_enum_CU_TENSOR_MAP_INTERLEAVE_NONE,
            CUtensorMapSwizzle_enum_CU_TENSOR_MAP_SWIZZLE_NONE,
            CUtensorMapL2promotion_enum_CU_TENSOR_MAP_L2_PROMOTION_NONE,
            CUtensorMapFloatOOBfill_enum_CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        )
    };
    assert_eq!(status, cudaError_enum_CUDA_SUCCESS);
    // SAFETY: the call succeeded, so it wrote the map.
    let map = unsafe { map.assume_init() };
    let dmap = DeviceBuffer::from_host(&stream, &map.opaque[..]).unwrap();
    let mut out = DeviceBuffer::from_host(&stream, &poisoned::<u32>(256)).unwrap();
    let prepared = module.prepare_load_through_pointer(config(1, 256)).unwrap();
    let ptr = dmap.cu_deviceptr() as *const TmaDescriptor;
    // SAFETY: `ptr` is the map just copied to the device, over `dev`, both alive.
    unsafe { module.load_through_pointer(&stream, &prepared, ptr, &mut out) }.unwrap();
    let want = load_model(&data, 0, 0, 32, 8, Swizzle::None);
    assert_same("tile", &out.to_host_vec(&stream).unwrap(), &want);
}

#[test]
fn the_module_assembles_for_hopper() {
    let ir = kernels::ir().unwrap();
    let ptx = cuprum_ptx::write_module(&ir, cuprum_ptx::Target::Sm90).unwrap();
    assert!(ptx.contains("cp.async.bulk.tensor.2d"), "{ptx}");
    cuprum_testkit::ptxas::check(&ptx, "sm_90").unwrap();
}
