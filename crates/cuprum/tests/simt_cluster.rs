//! Thread-block clusters in SIMT kernels (`#[cluster_launch]`, `cuprum::simt::cluster`), on
//! the emulator and, through gpu-pack, on a Hopper GPU:
//!
//! - the cluster registers and the values derived from them (`block_rank`, `cluster_size`,
//!   `cluster_idx`, `num_clusters`) in every block of 3-D grids of 2-D and 3-D clusters;
//! - distributed shared memory: each block pulls its neighbour's tile through
//!   `map_shared_rank` and `dsmem_read_u32` and pushes words into another block's inbox
//!   through `map_shared_rank_mut`, between cluster barriers in several spellings;
//! - a distributed reduction: every block sums its part, rank 0 gathers the cluster's sums;
//! - multicast tensor copies: each block of a pair copies one box into both blocks' shared
//!   memory, on barriers set up with `fence_mbarrier_init_release_cluster`;
//! - a grid that is not whole clusters is a typed launch error, and below compute
//!   capability 9.0 a cluster kernel does not load.
//!
//! Inputs are fresh random values (the seed is printed), outputs are poisoned first, every
//! element is compared with plain Rust.

mod common;

use core::ptr::{addr_of, addr_of_mut};

use common::{assert_same, ctx};
use cuprum::simt::barrier::{
    Barrier, fence_mbarrier_init_release_cluster, mbarrier_arrive_expect_tx, mbarrier_init,
    mbarrier_wait_parity,
};
use cuprum::simt::thread;
use cuprum::simt::tma::{TensorMap, cp_async_bulk_tensor_2d_g2s_multicast};
use cuprum::simt::{DisjointSlice, SharedArray, cluster, cluster_launch, cuda_module, kernel};
use cuprum::{BackendKind, DeviceBuffer, Error, LaunchConfig};
use cuprum_testkit::poison::poisoned;
use cuprum_testkit::random::{random, rng};

/// What `registers` writes per block.
const FIELDS: usize = 10;
/// Threads per block of the distributed shared-memory kernels.
const THREADS: usize = 128;
/// The multicast kernel's tensor (`u32`, `TW` wide) and box.
const TW: u64 = 64;
const BW: u32 = 16;
const BH: u32 = 8;
const BOX: usize = (BW * BH) as usize;

#[cuda_module]
mod kernels {
    use super::*;

    /// Thread 0 of each block writes the cluster's registers at its block's slot of `out`.
    #[kernel]
    #[cluster_launch(2, 2, 1)]
    pub fn registers(mut out: DisjointSlice<u32>) {
        registers_of(&mut out);
    }

    /// The same in clusters of 1 x 2 x 4 blocks.
    #[kernel]
    #[cluster_launch(1, 2, 4)]
    pub fn registers_z(mut out: DisjointSlice<u32>) {
        registers_of(&mut out);
    }

    pub fn registers_of(out: &mut DisjointSlice<u32>) {
        let b = thread::blockIdx_x()
            + thread::blockIdx_y() * thread::gridDim_x()
            + thread::blockIdx_z() * thread::gridDim_x() * thread::gridDim_y();
        if thread::threadIdx_x() == 0 {
            let fields = [
                cluster::cluster_ctaidX(),
                cluster::cluster_ctaidY(),
                cluster::cluster_ctaidZ(),
                cluster::cluster_nctaidX(),
                cluster::cluster_nctaidY(),
                cluster::cluster_nctaidZ(),
                cluster::block_rank(),
                cluster::cluster_size(),
                cluster::cluster_idx(),
                cluster::num_clusters(),
            ];
            let mut f = 0;
            while f < 10 {
                // SAFETY: thread 0 of block `b` alone writes slots `10 b..10 b + 10`.
                unsafe { *out.get_unchecked_mut(b as usize * 10 + f) = fields[f] };
                f += 1;
            }
        }
        // SAFETY: every thread of the cluster arrives once, then waits once.
        unsafe {
            cluster::barrier_cluster_arrive();
            cluster::barrier_cluster_wait();
        }
    }

    /// Each block keeps its part of `x` and of `words` in shared memory; after a cluster
    /// barrier, thread `t` reads element `127 - t` of the next rank's tile and word `t` of
    /// the previous rank's, and writes `words[g] ^ rank` into word `t` of the previous
    /// rank's inbox; after another barrier it reads its own inbox.
    #[kernel]
    #[cluster_launch(4, 1, 1)]
    pub fn neighbours(
        x: &[f32],
        words: &[u32],
        mut pulled: DisjointSlice<f32>,
        mut read: DisjointSlice<u32>,
        mut inbox: DisjointSlice<u32>,
    ) {
        static mut TILE: SharedArray<f32, 128> = SharedArray::UNINIT;
        static mut WORDS: SharedArray<u32, 128> = SharedArray::UNINIT;
        static mut INBOX: SharedArray<u32, 128> = SharedArray::UNINIT;
        let t = thread::threadIdx_x() as usize;
        let i = thread::index_1d();
        let g = i.get();
        let rank = cluster::block_rank();
        let n = cluster::cluster_size();
        // SAFETY: thread `t` writes slot `t` of its block's arrays.
        unsafe {
            TILE[t] = x[g];
            WORDS[t] = words[g];
        }
        cluster::cluster_sync();
        let next = (rank + 1) % n;
        let prev = (rank + n - 1) % n;
        // SAFETY: the cluster barrier ordered every block's writes before these reads, and
        // each inbox word has one writer; the barrier below orders those writes before the
        // owners' reads, and keeps every block alive until the others are done with it.
        let (v, w) = unsafe {
            let p = cluster::map_shared_rank(addr_of!(TILE) as *const f32, next);
            let v = *p.add(127 - t);
            let w = cluster::dsmem_read_u32((addr_of!(WORDS) as *const u32).add(t), prev);
            let q = cluster::map_shared_rank_mut(addr_of_mut!(INBOX) as *mut u32, prev);
            *q.add(t) = words[g] ^ rank;
            (v, w)
        };
        unsafe {
            cluster::barrier_cluster_arrive_relaxed_aligned();
            cluster::barrier_cluster_wait_aligned();
        }
        if let Some(o) = pulled.get_mut(i) {
            *o = v * 2.0 + 1.0;
        }
        if let Some(o) = read.get_mut(i) {
            *o = w;
        }
        if let Some(o) = inbox.get_mut(i) {
            *o = unsafe { INBOX[t] };
        }
        cluster::cluster_sync();
    }

    /// Each block sums (wrapping) its 128 elements of `x`; thread 0 of rank 0 adds the
    /// cluster's sums, read from the other blocks' shared memory, into `out[cluster_idx()]`.
    #[kernel]
    #[cluster_launch(2, 2, 2)]
    pub fn cluster_sum(x: &[u32], mut out: DisjointSlice<u32>) {
        static mut PART: SharedArray<u32, 128> = SharedArray::UNINIT;
        static mut TOTAL: SharedArray<u32, 1> = SharedArray::UNINIT;
        let t = thread::threadIdx_x() as usize;
        let b = thread::blockIdx_x()
            + thread::blockIdx_y() * thread::gridDim_x()
            + thread::blockIdx_z() * thread::gridDim_x() * thread::gridDim_y();
        // SAFETY: slot `t` is thread `t`'s; thread 0 reads them all after the block
        // barrier and alone writes `TOTAL`, which the other blocks read after the cluster
        // barrier; the last barrier keeps every block until rank 0 has read it.
        unsafe {
            PART[t] = x[b as usize * 128 + t];
            thread::sync_threads();
            if t == 0 {
                let mut s = 0u32;
                let mut k = 0;
                while k < 128 {
                    s = s.wrapping_add(PART[k]);
                    k += 1;
                }
                TOTAL[0] = s;
            }
            cluster::cluster_sync();
            if t == 0 && cluster::block_rank() == 0 {
                let mut total = TOTAL[0];
                let mut r = 1;
                while r < cluster::cluster_size() {
                    total = total
                        .wrapping_add(cluster::dsmem_read_u32(addr_of!(TOTAL) as *const u32, r));
                    r += 1;
                }
                let c = cluster::cluster_idx() as usize;
                if c < out.len() && out.len() == cluster::num_clusters() as usize {
                    *out.get_unchecked_mut(c) = total;
                }
            }
        }
        cluster::cluster_sync();
    }

    /// In each pair of blocks, rank `r` copies the box at `(16 r, 8 c)` of cluster `c` into
    /// part `r` of both blocks' `TILE`; every thread then writes its word of both parts.
    #[kernel]
    #[cluster_launch(2, 1, 1)]
    pub fn multicast_pair(map: TensorMap<u32, 2>, mut out: DisjointSlice<u32>) {
        static mut TILE: SharedArray<u32, 256, 128> = SharedArray::UNINIT;
        static mut BAR: Barrier = Barrier::UNINIT;
        let t = thread::threadIdx_x() as usize;
        let rank = cluster::block_rank();
        let c = cluster::cluster_idx() as i32;
        let b = thread::blockIdx_x() as usize;
        // SAFETY: thread 0 sets the barrier up and shows it to the cluster before the
        // cluster barrier; then it expects both boxes on it and starts its block's copy into
        // both blocks; every thread reads the tile after the phase completed, and the last
        // cluster barrier keeps both blocks until every copy has landed.
        unsafe {
            if t == 0 {
                mbarrier_init(&raw mut BAR, 1);
                fence_mbarrier_init_release_cluster();
            }
            cluster::cluster_sync();
            if t == 0 {
                mbarrier_arrive_expect_tx(&raw const BAR, 1, 2 * 128 * 4);
                let dst = (addr_of_mut!(TILE) as *mut u32).add(rank as usize * 128) as *mut u8;
                cp_async_bulk_tensor_2d_g2s_multicast(
                    dst,
                    map.as_ptr(),
                    16 * rank as i32,
                    8 * c,
                    &raw mut BAR,
                    0b11,
                );
            }
            mbarrier_wait_parity(&raw const BAR, 0);
            *out.get_unchecked_mut(b * 256 + t) = TILE[t];
            *out.get_unchecked_mut(b * 256 + 128 + t) = TILE[128 + t];
        }
        cluster::cluster_sync();
    }
}

/// Whether the context runs clusters (compute capability 9.0; the emulator models it). On
/// an older GPU a cluster kernel's module must not load, with a message saying why.
fn clusters() -> bool {
    let ok = ctx()
        .compute_capability()
        .is_ok_and(|(major, _)| major >= 9);
    if !ok {
        match kernels::load(ctx()) {
            Err(e) => assert!(e.to_string().contains("cluster"), "{e}"),
            Ok(_) => panic!("a cluster kernel's module loaded below compute capability 9.0"),
        }
    }
    ok
}

fn config(grid: (u32, u32, u32), threads: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: grid,
        block_dim: (threads, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// What `registers_of` writes, for a grid `g` of clusters of shape `c`.
fn registers_reference(g: [u32; 3], c: [u32; 3]) -> Vec<u32> {
    let mut out = Vec::new();
    for bz in 0..g[2] {
        for by in 0..g[1] {
            for bx in 0..g[0] {
                let b = [bx, by, bz];
                let at = [0, 1, 2].map(|d| b[d] % c[d]);
                let id = [0, 1, 2].map(|d| b[d] / c[d]);
                let count = [0, 1, 2].map(|d| g[d] / c[d]);
                out.extend(at);
                out.extend(c);
                out.push(at[0] + at[1] * c[0] + at[2] * c[0] * c[1]);
                out.push(c.iter().product());
                out.push(id[0] + id[1] * count[0] + id[2] * count[0] * count[1]);
                out.push(count.iter().product());
            }
        }
    }
    out
}

#[test]
fn cluster_registers_name_every_block_of_3d_grids() -> cuprum::Result<()> {
    if !clusters() {
        return Ok(());
    }
    let m = kernels::load(ctx())?;
    let stream = ctx().default_stream();
    for (grid, shape) in [
        ((4, 2, 3), [2, 2, 1]),
        ((6, 4, 1), [2, 2, 1]),
        ((2, 4, 8), [1, 2, 4]),
    ] {
        let n = (grid.0 * grid.1 * grid.2) as usize * FIELDS;
        let mut out = DeviceBuffer::from_host(&stream, &poisoned::<u32>(n))?;
        // SAFETY: one slot of `FIELDS` words per block, `out` has them all.
        unsafe {
            if shape == [2, 2, 1] {
                m.registers(&stream, config(grid, 64), &mut out)?;
            } else {
                m.registers_z(&stream, config(grid, 64), &mut out)?;
            }
        }
        let want = registers_reference([grid.0, grid.1, grid.2], shape);
        assert_same(
            &format!("registers, grid {grid:?}, clusters {shape:?}"),
            &out.to_host_vec(&stream)?,
            &want,
        );
    }
    Ok(())
}

#[test]
fn distributed_shared_memory_pulls_and_pushes_between_neighbours() -> cuprum::Result<()> {
    if !clusters() {
        return Ok(());
    }
    let m = kernels::load(ctx())?;
    let stream = ctx().default_stream();
    let mut rng = rng("simt_cluster_neighbours");
    let blocks = 12usize;
    let n = blocks * THREADS;
    let x: Vec<f32> = random(&mut rng, n, -1000.0f32, 1000.0);
    let words: Vec<u32> = random(&mut rng, n, 0, u32::MAX);
    let dx = DeviceBuffer::from_host(&stream, &x)?;
    let dw = DeviceBuffer::from_host(&stream, &words)?;
    let mut pulled = DeviceBuffer::from_host(&stream, &poisoned::<f32>(n))?;
    let mut read = DeviceBuffer::from_host(&stream, &poisoned::<u32>(n))?;
    let mut inbox = DeviceBuffer::from_host(&stream, &poisoned::<u32>(n))?;
    // SAFETY: one thread per element of every buffer.
    unsafe {
        m.neighbours(
            &stream,
            config((blocks as u32, 1, 1), THREADS as u32),
            &dx,
            &dw,
            &mut pulled,
            &mut read,
            &mut inbox,
        )?;
    }
    let cl = 4;
    let (mut want_pulled, mut want_read, mut want_inbox) = (vec![], vec![], vec![]);
    for b in 0..blocks {
        let (first, rank) = (b - b % cl, b % cl);
        let next = first + (rank + 1) % cl;
        let prev = first + (rank + cl - 1) % cl;
        for t in 0..THREADS {
            want_pulled.push(x[next * THREADS + THREADS - 1 - t] * 2.0 + 1.0);
            want_read.push(words[prev * THREADS + t]);
            // Block `b`'s inbox is written by the block whose previous rank it is.
            let from = first + (rank + 1) % cl;
            want_inbox.push(words[from * THREADS + t] ^ (from % cl) as u32);
        }
    }
    assert_same("pulled", &pulled.to_host_vec(&stream)?, &want_pulled);
    assert_same("read", &read.to_host_vec(&stream)?, &want_read);
    assert_same("inbox", &inbox.to_host_vec(&stream)?, &want_inbox);
    Ok(())
}

#[test]
fn rank_zero_gathers_its_clusters_sums() -> cuprum::Result<()> {
    if !clusters() {
        return Ok(());
    }
    let m = kernels::load(ctx())?;
    let stream = ctx().default_stream();
    let mut rng = rng("simt_cluster_sum");
    let grid = (4u32, 2u32, 4u32);
    let blocks = (grid.0 * grid.1 * grid.2) as usize;
    let x: Vec<u32> = random(&mut rng, blocks * 128, 0, u32::MAX);
    let dx = DeviceBuffer::from_host(&stream, &x)?;
    let clusters = blocks / 8;
    let mut out = DeviceBuffer::from_host(&stream, &poisoned::<u32>(clusters))?;
    // SAFETY: rank 0 of each cluster writes its cluster's slot.
    unsafe { m.cluster_sum(&stream, config(grid, 128), &dx, &mut out)? };
    let mut want = vec![0u32; clusters];
    for bz in 0..grid.2 {
        for by in 0..grid.1 {
            for bx in 0..grid.0 {
                let b = (bx + by * grid.0 + bz * grid.0 * grid.1) as usize;
                let c = (bx / 2 + by / 2 * (grid.0 / 2) + bz / 2 * (grid.0 / 2) * (grid.1 / 2))
                    as usize;
                for v in &x[b * 128..(b + 1) * 128] {
                    want[c] = want[c].wrapping_add(*v);
                }
            }
        }
    }
    assert_same("cluster sums", &out.to_host_vec(&stream)?, &want);
    Ok(())
}

#[test]
fn a_multicast_copy_lands_in_both_blocks_of_a_pair() -> cuprum::Result<()> {
    if !clusters() {
        return Ok(());
    }
    let m = kernels::load(ctx())?;
    let stream = ctx().default_stream();
    let mut rng = rng("simt_cluster_multicast");
    let pairs = 3u32;
    let th = u64::from(BH * pairs);
    let data: Vec<u32> = random(&mut rng, (TW * th) as usize, 0, u32::MAX);
    let buf = DeviceBuffer::from_host(&stream, &data)?;
    let map = cuprum::TensorMap::tiled(&buf, [TW, th], [BW, BH])?;
    let blocks = 2 * pairs as usize;
    let mut out = DeviceBuffer::from_host(&stream, &poisoned::<u32>(blocks * 2 * BOX))?;
    // SAFETY: every block writes its 256 words.
    unsafe { m.multicast_pair(&stream, config((blocks as u32, 1, 1), 128), &map, &mut out)? };
    let mut want = Vec::new();
    for b in 0..blocks {
        let c = b / 2;
        for r in 0..2 {
            for j in 0..BOX {
                let (row, col) = (8 * c + j / 16, 16 * r + j % 16);
                want.push(data[row * TW as usize + col]);
            }
        }
    }
    assert_same("multicast tiles", &out.to_host_vec(&stream)?, &want);
    Ok(())
}

#[test]
fn a_grid_that_is_not_whole_clusters_is_refused() -> cuprum::Result<()> {
    if !clusters() {
        return Ok(());
    }
    let m = kernels::load(ctx())?;
    let stream = ctx().default_stream();
    let mut out = DeviceBuffer::from_host(&stream, &poisoned::<u32>(64 * FIELDS))?;
    // SAFETY: refused before it runs.
    let refused = unsafe { m.registers(&stream, config((3, 2, 1), 32), &mut out) };
    match refused {
        Err(Error::InvalidLaunch {
            reason: message, ..
        }) => {
            assert!(message.contains("whole clusters"), "{message}");
            assert!(message.contains("multiple of 2"), "{message}");
        }
        other => panic!("a grid of partial clusters was not refused: {other:?}"),
    }
    if ctx().backend() == BackendKind::Emulator {
        // Nothing ran: the output keeps its poison.
        assert_same(
            "untouched",
            &out.to_host_vec(&stream)?,
            &poisoned::<u32>(64 * FIELDS),
        );
    }
    Ok(())
}
