//! Block-level cooperation: shared memory (static and dynamic), barriers, atomics on global
//! and shared memory, warp shuffles, votes and reductions, 2-D indexing and module constants,
//! each against a plain-Rust reference on random data.

mod common;

use common::{assert_same, blocks_for, ctx, random_f32, random_i32, random_u32};
use cuprum::simt::{
    AtomicSlice, DisjointSlice, SharedArray, dynamic_shared, kernel, launch_contract, sync_threads,
    thread, warp,
};
use cuprum::{DeviceBuffer, LaunchConfig, LaunchConfig1D, cuda_module};

#[cuda_module]
mod kernels {
    use super::*;

    const BLOCK: usize = 256;
    const TILE: usize = 32;

    /// Tree reduction of each block's elements in shared memory (wrapping u32 sums).
    #[kernel]
    #[launch_contract(domain = 1, block = (256, 1, 1))]
    pub fn block_sums(x: &[u32], mut sums: DisjointSlice<u32>) {
        let partial = SharedArray::<u32, BLOCK>::uninit();
        let t = thread::threadIdx_x() as usize;
        let i = thread::index_1d().get();
        let v = if i < x.len() { x[i] } else { 0 };
        unsafe { partial.set(t, v) };
        sync_threads();
        let mut stride = BLOCK / 2;
        while stride > 0 {
            if t < stride {
                unsafe { partial.set(t, partial.get(t).wrapping_add(partial.get(t + stride))) };
            }
            sync_threads();
            stride /= 2;
        }
        // Every thread writes its own slot with its block's sum.
        if let Some(out) = sums.get_mut(thread::index_1d()) {
            *out = unsafe { partial.get(0) };
        }
    }

    /// Warp shuffles, votes and reductions.
    #[kernel]
    #[launch_contract(domain = 1, block = (128, 1, 1))]
    pub fn warp_ops(x: &[i32], mut out: DisjointSlice<i32>, mut votes: DisjointSlice<u32>) {
        let i = thread::index_1d();
        let v = x[i.get()];
        let lane = thread::lane_id();
        let sum = warp::reduce_add(v.wrapping_mul(3) % 1000);
        let max = warp::reduce_max(v);
        let up = warp::shuffle_up(v, 1);
        let down = warp::shuffle_down(v, 2);
        let from7 = warp::shuffle(v, 7);
        let flip = warp::shuffle_xor(v, 5);
        if let Some(o) = out.get_mut(i) {
            *o = sum
                ^ max.wrapping_add(up).wrapping_sub(down)
                ^ from7.wrapping_mul(flip)
                ^ lane as i32;
        }
        let positive = v > 0;
        let ballot = warp::ballot(positive);
        let all = warp::all(positive);
        let any = warp::any(v % 7 == 0);
        if let Some(o) = votes.get_mut(i) {
            *o = ballot ^ (all as u32) << 1 ^ (any as u32);
        }
    }

    /// Types only later uses give, as rustc infers them: `j` starts as a bare literal, goes
    /// through shuffles and becomes a `u64` by the `+=`; `total` goes through a reduction
    /// before it meets an `f32`; `salt` is a `mut` parameter reassigned from a shuffle.
    #[kernel]
    #[launch_contract(domain = 1, block = (64, 1, 1))]
    pub fn warp_inferred_types(
        mut salt: u64,
        x: &[u64],
        y: &[f32],
        mut out: DisjointSlice<u64>,
        mut sums: DisjointSlice<f32>,
    ) {
        let i = thread::index_1d();
        let k = i.get();
        let mut j = 1;
        j = warp::shuffle_xor(j, 1);
        j += x[k] >> 1;
        j = warp::shuffle_down(j, 3);
        salt = salt.wrapping_mul(j);
        salt = warp::shuffle(salt, 9);
        let mut total = 0.0;
        total = warp::reduce_max(total);
        total += y[k];
        total = warp::reduce_add(total);
        if let Some(o) = out.get_mut(i) {
            *o = salt ^ j;
        }
        if let Some(s) = sums.get_mut(i) {
            *s = total;
        }
    }

    /// A histogram privatized in shared memory, merged with global atomics.
    #[kernel]
    #[launch_contract(domain = 1, block = (256, 1, 1))]
    pub fn histogram(x: &[u32], hist: AtomicSlice<u32>) {
        let local = SharedArray::<u32, 64>::uninit();
        let t = thread::threadIdx_x() as usize;
        if t < 64 {
            unsafe { local.set(t, 0) };
        }
        sync_threads();
        let mut i = thread::index_1d().get();
        let stride = (thread::gridDim_x() * thread::blockDim_x()) as usize;
        while i < x.len() {
            local.fetch_add((x[i] % 64) as usize, 1);
            i += stride;
        }
        sync_threads();
        if t < 64 {
            hist.fetch_add(t, unsafe { local.get(t) });
        }
    }

    /// Float atomic add, min/max, and compare-exchange on global memory.
    #[kernel]
    #[launch_contract(domain = 1, block = (64, 1, 1))]
    pub fn atomics(
        x: &[i32],
        totals: AtomicSlice<f32>,
        extremes: AtomicSlice<i32>,
        flags: AtomicSlice<u32>,
    ) {
        let i = thread::index_1d().get();
        if i < x.len() {
            let v = x[i];
            totals.fetch_add(0, (v % 100) as f32);
            extremes.fetch_min(0, v);
            extremes.fetch_max(1, v);
            extremes.fetch_xor_block(2, v);
            flags.compare_exchange((i % 4) as usize, 0, i as u32 + 1);
        }
    }

    /// Transpose through a padded shared tile, with 2-D indices: each block makes a 32 x 8
    /// tile of the output from the input's 8 x 32 tile, read with coalesced rows.
    #[kernel]
    #[launch_contract(domain = 2, block = (32, 8, 1))]
    pub fn transpose(input: &[f32], rows: usize, cols: usize, mut output: DisjointSlice<f32>) {
        let tile = SharedArray::<f32, { TILE * (8 + 1) }>::uninit();
        let t = (thread::threadIdx_y() * 32 + thread::threadIdx_x()) as usize;
        let r0 = thread::blockIdx_x() as usize * TILE;
        let c0 = thread::blockIdx_y() as usize * 8;
        let (i, j) = (t / 8, t % 8);
        if r0 + i < rows && c0 + j < cols {
            unsafe { tile.set(i * 9 + j, input[(r0 + i) * cols + c0 + j]) };
        }
        sync_threads();
        let idx = thread::index_2d();
        let (tx, ty) = (
            thread::threadIdx_x() as usize,
            thread::threadIdx_y() as usize,
        );
        // Output is `cols` x `rows`: x runs along an output row (an input column).
        if let Some(o) = output.get_mut_2d(idx, rows) {
            *o = unsafe { tile.get(tx * 9 + ty) };
        }
    }

    /// Reverses each block's elements through dynamic shared memory.
    #[kernel]
    #[launch_contract(domain = 1, block = (128, 1, 1))]
    pub fn reverse_blocks(x: &[f32], mut y: DisjointSlice<f32>) {
        let smem = dynamic_shared::<f32>();
        let t = thread::threadIdx_x() as usize;
        let n = thread::blockDim_x() as usize;
        let i = thread::index_1d();
        unsafe { smem.set(t, x[i.get()]) };
        sync_threads();
        if let Some(o) = y.get_mut(i) {
            *o = unsafe { smem.get(n - 1 - t) };
        }
    }
}

#[test]
fn shared_memory_tree_reduction_per_block() -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let n = 100_003;
    let x = random_u32(n);
    let blocks = blocks_for(n, 256);
    let dx = DeviceBuffer::from_host(&stream, &x)?;
    let mut sums = DeviceBuffer::from_host(&stream, &vec![0xDEAD_BEEFu32; blocks as usize * 256])?;
    m.block_sums(
        &stream,
        &m.prepare_block_sums(LaunchConfig1D::new(blocks, 256, 0))?,
        &dx,
        &mut sums,
    )?;
    let got = sums.to_host_vec(&stream)?;
    let want: Vec<u32> = (0..blocks as usize * 256)
        .map(|t| {
            x.iter()
                .skip(t / 256 * 256)
                .take(256)
                .fold(0u32, |a, &b| a.wrapping_add(b))
        })
        .collect();
    assert_same("block sums", &got, &want);
    Ok(())
}

#[test]
fn warp_shuffles_votes_and_reductions() -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let n = 128 * 9;
    let x: Vec<i32> = random_i32(n).iter().map(|v| v % 5000).collect();
    let dx = DeviceBuffer::from_host(&stream, &x)?;
    let mut out = DeviceBuffer::from_host(&stream, &vec![i32::MIN; n])?;
    let mut votes = DeviceBuffer::from_host(&stream, &vec![0xDEAD_BEEFu32; n])?;
    m.warp_ops(
        &stream,
        &m.prepare_warp_ops(LaunchConfig1D::new(9, 128, 0))?,
        &dx,
        &mut out,
        &mut votes,
    )?;
    let (mut want, mut want_votes) = (vec![0; n], vec![0; n]);
    for w in 0..n / 32 {
        let lanes = &x[w * 32..w * 32 + 32];
        let sum = lanes
            .iter()
            .fold(0i32, |a, &v| a.wrapping_add(v.wrapping_mul(3) % 1000));
        let max = *lanes.iter().max().unwrap_or(&0);
        let ballot = (0..32).fold(0u32, |b, l| b | ((lanes[l] > 0) as u32) << l);
        let all = lanes.iter().all(|&v| v > 0);
        let any = lanes.iter().any(|&v| v % 7 == 0);
        for l in 0..32 {
            let up = if l >= 1 { lanes[l - 1] } else { lanes[l] };
            let down = if l + 2 < 32 { lanes[l + 2] } else { lanes[l] };
            let (from7, flip) = (lanes[7], lanes[l ^ 5]);
            want[w * 32 + l] =
                sum ^ max.wrapping_add(up).wrapping_sub(down) ^ from7.wrapping_mul(flip) ^ l as i32;
            want_votes[w * 32 + l] = ballot ^ (all as u32) << 1 ^ (any as u32);
        }
    }
    assert_same("warp ops", &out.to_host_vec(&stream)?, &want);
    assert_same("votes", &votes.to_host_vec(&stream)?, &want_votes);
    Ok(())
}

#[test]
fn types_inferred_through_warp_intrinsics_and_mut_parameters() -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let n = 64 * 5;
    let x: Vec<u64> = random_u32(2 * n)
        .chunks(2)
        .map(|p| u64::from(p[0]) << 32 | u64::from(p[1]))
        .collect();
    let y = random_f32(n);
    let salt = 0x9E37_79B9_7F4A_7C15u64;
    let (dx, dy) = (
        DeviceBuffer::from_host(&stream, &x)?,
        DeviceBuffer::from_host(&stream, &y)?,
    );
    let mut out = DeviceBuffer::from_host(&stream, &vec![0xDEAD_BEEFu64; n])?;
    let mut sums = DeviceBuffer::from_host(&stream, &vec![f32::NAN; n])?;
    m.warp_inferred_types(
        &stream,
        &m.prepare_warp_inferred_types(LaunchConfig1D::new(5, 64, 0))?,
        salt,
        &dx,
        &dy,
        &mut out,
        &mut sums,
    )?;
    let (mut want, mut want_sums) = (vec![0u64; n], vec![0f32; n]);
    for w in 0..n / 32 {
        let base = w * 32;
        let j: Vec<u64> = (0..32).map(|l| 1 + (x[base + l] >> 1)).collect();
        let j: Vec<u64> = (0..32)
            .map(|l| j[if l + 3 < 32 { l + 3 } else { l }])
            .collect();
        let salted = salt.wrapping_mul(j[9]);
        // The butterfly of `reduce_add`: every lane adds its partner's partial sum.
        let mut total: Vec<f32> = (0..32).map(|l| 0.0 + y[base + l]).collect();
        for mask in [16, 8, 4, 2, 1] {
            total = (0..32).map(|l| total[l] + total[l ^ mask]).collect();
        }
        for l in 0..32 {
            want[base + l] = salted ^ j[l];
            want_sums[base + l] = total[l];
        }
    }
    assert_same("shuffled u64", &out.to_host_vec(&stream)?, &want);
    assert_same("reduced f32", &sums.to_host_vec(&stream)?, &want_sums);
    Ok(())
}

#[test]
fn histogram_with_shared_and_global_atomics() -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let n = 300_001;
    let x = random_u32(n);
    let dx = DeviceBuffer::from_host(&stream, &x)?;
    let mut hist = DeviceBuffer::<u32>::zeroed(&stream, 64)?;
    m.histogram(
        &stream,
        &m.prepare_histogram(LaunchConfig1D::new(40, 256, 0))?,
        &dx,
        &mut hist,
    )?;
    let mut want = vec![0u32; 64];
    for v in &x {
        want[(v % 64) as usize] += 1;
    }
    assert_same("histogram", &hist.to_host_vec(&stream)?, &want);
    Ok(())
}

#[test]
fn float_add_min_max_xor_and_compare_exchange_atomics() -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let n = 5000;
    let x = random_i32(n);
    let dx = DeviceBuffer::from_host(&stream, &x)?;
    let mut totals = DeviceBuffer::from_host(&stream, &[0.0f32])?;
    let mut extremes = DeviceBuffer::from_host(&stream, &[i32::MAX, i32::MIN, 0])?;
    let mut flags = DeviceBuffer::<u32>::zeroed(&stream, 4)?;
    let config = LaunchConfig1D::new(blocks_for(n, 64), 64, 0);
    m.atomics(
        &stream,
        &m.prepare_atomics(config)?,
        &dx,
        &mut totals,
        &mut extremes,
        &mut flags,
    )?;
    // Small integers: every partial sum is exact in f32, whatever the order.
    let total: f32 = x.iter().map(|v| (v % 100) as f32).sum();
    assert_same("float atomic add", &totals.to_host_vec(&stream)?, &[total]);
    let xor = x.iter().fold(0, |a, &v| a ^ v);
    let want = [
        *x.iter().min().unwrap_or(&0),
        *x.iter().max().unwrap_or(&0),
        xor,
    ];
    assert_same("min/max/xor", &extremes.to_host_vec(&stream)?, &want);
    // Each flag was claimed by exactly one thread i with i % 4 == slot.
    for (slot, f) in flags.to_host_vec(&stream)?.iter().enumerate() {
        assert!(
            *f != 0 && (*f - 1) as usize % 4 == slot,
            "flag {slot} = {f}"
        );
    }
    Ok(())
}

#[test]
fn two_dimensional_indices_and_constants() -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let (rows, cols) = (70usize, 45usize);
    let input = random_f32(rows * cols);
    let di = DeviceBuffer::from_host(&stream, &input)?;
    let mut out = DeviceBuffer::from_host(&stream, &vec![f32::NAN; rows * cols])?;
    // One thread per output element: x runs over the output's columns (input rows).
    let config = LaunchConfig {
        grid_dim: ((rows as u32).div_ceil(32), (cols as u32).div_ceil(8), 1),
        block_dim: (32, 8, 1),
        shared_mem_bytes: 0,
    };
    m.transpose(
        &stream,
        &m.prepare_transpose(config)?,
        &di,
        rows,
        cols,
        &mut out,
    )?;
    let mut want = vec![0.0f32; rows * cols];
    for r in 0..rows {
        for c in 0..cols {
            want[c * rows + r] = input[r * cols + c];
        }
    }
    assert_same("transpose", &out.to_host_vec(&stream)?, &want);
    Ok(())
}

#[test]
fn dynamic_shared_memory_reverses_blocks() -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let n = 128 * 13;
    let x = random_f32(n);
    let dx = DeviceBuffer::from_host(&stream, &x)?;
    let mut y = DeviceBuffer::from_host(&stream, &vec![f32::NAN; n])?;
    let config = LaunchConfig1D::new(13, 128, 128 * 4);
    m.reverse_blocks(&stream, &m.prepare_reverse_blocks(config)?, &dx, &mut y)?;
    let want: Vec<f32> = (0..n).map(|i| x[i / 128 * 128 + 127 - i % 128]).collect();
    assert_same("reverse", &y.to_host_vec(&stream)?, &want);
    Ok(())
}
