//! Global-memory races through the front end: `unsafe` kernels with `&mut [T]` and raw
//! launches plant the bugs a safe kernel cannot express (two threads writing one element, an
//! in-place stencil, a missing barrier, a broken fence + atomic handshake, a `DisjointSlice`
//! element shared by two threads), and the emulator must name both threads, the address and
//! the parameter. Correct kernels with the same features (the last-block reduction, double
//! buffering with barriers, neighbour reads, grid-stride loops, warp shuffles, atomics) must
//! compute the right result and report nothing, on the emulator and on a GPU alike; the
//! planted bugs only run on the emulator (on a GPU they are undefined behaviour).

mod common;

use common::{assert_same, blocks_for, ctx, random_f32, random_u32};
use cuprum::simt::{
    AtomicSlice, DisjointSlice, SharedArray, fence_device, kernel, launch_contract, sync_threads,
    thread, warp,
};
use cuprum::{BackendKind, DeviceBuffer, Error, LaunchConfig, LaunchConfig1D, cuda_module};
use cuprum_emu::{AccessKind, DisjointWrite, EmuError, GlobalRace, RaceKind};

#[cuda_module]
mod kernels {
    use super::*;

    const BLOCK: usize = 128;

    /// Every thread stores its index into element 0.
    #[kernel]
    pub unsafe fn all_write_one(out: &mut [u32]) {
        out[0] = thread::threadIdx_x();
    }

    /// A three-point stencil computed in place: a thread overwrites what its neighbours read.
    #[kernel]
    pub unsafe fn stencil_in_place(x: &mut [f32]) {
        let i = thread::index_1d().get();
        let n = x.len();
        if i < n {
            let v = x[(i + n - 1) % n] + x[i] + x[(i + 1) % n];
            x[i] = v;
        }
    }

    /// Each thread writes its element of `buf`, then reads its right neighbour's, with a
    /// barrier between the two only if `barrier` is set.
    #[kernel]
    pub unsafe fn neighbour_exchange(buf: &mut [u32], out: &mut [u32], barrier: u32) {
        let t = thread::threadIdx_x() as usize;
        let n = thread::blockDim_x() as usize;
        buf[t] = (t * 7) as u32;
        if barrier != 0 {
            sync_threads();
        }
        out[t] = buf[(t + 1) % n];
    }

    /// Sums `x` into `total[0]`: a tree reduction per block in shared memory, thread 0 stores
    /// the block's partial sum, and the last block to take a ticket adds the partials up
    /// (CUDA's threadFenceReduction). `mode` plants a bug: 1 drops the fence before the
    /// ticket, 2 stores the partial after taking the ticket, 3 drops the fence the last block
    /// executes before reading the partials (and its barrier: thread 0 reads them itself).
    #[kernel]
    pub unsafe fn last_block_sum(
        x: &[u32],
        partial: &mut [u32],
        count: AtomicSlice<u32>,
        total: &mut [u32],
        mode: u32,
    ) {
        let s = SharedArray::<u32, BLOCK>::uninit();
        let am_last = SharedArray::<u32, 1>::uninit();
        let t = thread::threadIdx_x() as usize;
        let i = thread::index_1d().get();
        unsafe { s.set(t, if i < x.len() { x[i] } else { 0 }) };
        sync_threads();
        let mut stride = BLOCK / 2;
        while stride > 0 {
            if t < stride {
                unsafe { s.set(t, s.get(t).wrapping_add(s.get(t + stride))) };
            }
            sync_threads();
            stride /= 2;
        }
        let b = thread::blockIdx_x() as usize;
        let grid = thread::gridDim_x();
        if t == 0 {
            if mode != 2 {
                partial[b] = unsafe { s.get(0) };
            }
            if mode != 1 {
                fence_device();
            }
            let ticket = count.fetch_add(0, 1);
            if mode == 2 {
                partial[b] = unsafe { s.get(0) };
            }
            let last = ticket == grid - 1;
            unsafe { am_last.set(0, last as u32) };
            if mode == 3 && last {
                let mut sum = 0u32;
                for j in 0..grid as usize {
                    sum = sum.wrapping_add(partial[j]);
                }
                total[0] = sum;
            }
        }
        if mode != 3 {
            sync_threads();
            if unsafe { am_last.get(0) } != 0 && t == 0 {
                fence_device();
                let mut sum = 0u32;
                for j in 0..grid as usize {
                    sum = sum.wrapping_add(partial[j]);
                }
                total[0] = sum;
            }
        }
    }

    /// Double buffering in global memory: `steps` rounds of `b[t] = a[t-1] + a[t] + a[t+1]`
    /// and back, in one block, with a barrier after each round.
    #[kernel]
    pub unsafe fn ping_pong(a: &mut [u32], b: &mut [u32], steps: u32) {
        let t = thread::threadIdx_x() as usize;
        let n = a.len();
        let (l, r) = ((t + n - 1) % n, (t + 1) % n);
        let mut step = 0;
        while step < steps {
            if step % 2 == 0 {
                b[t] = a[l].wrapping_add(a[t]).wrapping_add(a[r]);
            } else {
                a[t] = b[l].wrapping_add(b[t]).wrapping_add(b[r]);
            }
            sync_threads();
            step += 1;
        }
    }

    /// `y[i] = x[i-1] + x[i] + x[i+1]` (wrapping around): every input read by three threads.
    #[kernel]
    #[launch_contract(domain = 1, block = (128, 1, 1))]
    pub fn stencil(x: &[f32], mut y: DisjointSlice<f32>) {
        let i = thread::index_1d();
        let n = x.len();
        let k = i.get();
        if let Some(o) = y.get_mut(i) {
            *o = x[(k + n - 1) % n] + x[k] + x[(k + 1) % n];
        }
    }

    /// A grid-stride loop: a small grid covers all of `y`, with a warp reduction and a
    /// global counter on the side. Safe: `grid_stride_mut` gives each thread its own
    /// elements, `t, t + grid threads, ..`.
    #[kernel]
    #[launch_contract(domain = 1, block = (128, 1, 1))]
    pub fn grid_stride(x: &[u32], mut y: DisjointSlice<u32>, warp_sums: AtomicSlice<u32>) {
        let mut mine = 0u32;
        for (i, o) in y.grid_stride_mut() {
            *o = x[i].wrapping_mul(3);
            mine = mine.wrapping_add(x[i]);
        }
        let sum = warp::reduce_add(mine);
        if thread::lane_id() == 0 {
            warp_sums.fetch_add(0, sum);
        }
    }

    /// Uses `index_1d`, which ignores `threadIdx.y`: launched with two rows of threads, two
    /// threads get each element.
    #[kernel]
    pub fn fill_by_index(mut out: DisjointSlice<u32>) {
        if let Some(o) = out.get_mut(thread::index_1d()) {
            *o = thread::threadIdx_y();
        }
    }
}

fn emulator_only() -> bool {
    let on_emulator = ctx().backend() == BackendKind::Emulator;
    if !on_emulator {
        eprintln!("planted races only run on the emulator");
    }
    on_emulator
}

fn race_of(result: cuprum::Result<()>) -> EmuError {
    match result {
        Err(Error::Emulator { source, .. }) => source,
        Err(other) => panic!("expected an emulator diagnostic, got {other}"),
        Ok(()) => panic!("the planted race went unnoticed"),
    }
}

fn one_block(threads: u32) -> LaunchConfig {
    LaunchConfig1D::new(1, threads, 0).into()
}

#[test]
fn threads_writing_one_element_race() -> cuprum::Result<()> {
    if !emulator_only() {
        return Ok(());
    }
    let stream = ctx().default_stream();
    let m = kernels::load(ctx())?;
    let mut out = DeviceBuffer::from_host(&stream, &[u32::MAX; 4])?;
    let e = race_of(unsafe { m.all_write_one(&stream, one_block(64), &mut out) });
    let text = e.to_string();
    match e {
        EmuError::GlobalRace(race) => {
            let GlobalRace {
                kernel,
                first,
                second,
                location,
                kind,
                ..
            } = *race;
            assert_eq!(kernel, "all_write_one");
            assert_eq!(kind, RaceKind::WriteWrite);
            assert_eq!((first.thread, second.thread), ([0, 0, 0], [1, 0, 0]));
            assert_eq!((first.block, second.block), ([0, 0, 0], [0, 0, 0]));
            assert_eq!(location, "element 0 of parameter `out` (u32)");
        }
        other => panic!("expected a global race, got {other}"),
    }
    assert!(
        text.contains("all_write_one") && text.contains("write/write"),
        "{text}"
    );
    Ok(())
}

#[test]
fn an_in_place_stencil_races() -> cuprum::Result<()> {
    if !emulator_only() {
        return Ok(());
    }
    let stream = ctx().default_stream();
    let m = kernels::load(ctx())?;
    let mut x = DeviceBuffer::from_host(&stream, &random_f32(1000))?;
    let config = LaunchConfig1D::new(blocks_for(1000, 128), 128, 0);
    match race_of(unsafe { m.stencil_in_place(&stream, config, &mut x) }) {
        EmuError::GlobalRace(race) => {
            let GlobalRace {
                first,
                second,
                kind,
                location,
                ..
            } = *race;
            assert_eq!(kind, RaceKind::ReadWrite);
            assert_eq!(
                (first.access, second.access),
                (AccessKind::Load, AccessKind::Store)
            );
            assert!(location.contains("parameter `x` (f32)"), "{location}");
        }
        other => panic!("expected a global race, got {other}"),
    }
    Ok(())
}

#[test]
fn a_missing_barrier_races_and_a_barrier_fixes_it() -> cuprum::Result<()> {
    let stream = ctx().default_stream();
    let m = kernels::load(ctx())?;
    let mut buf = DeviceBuffer::from_host(&stream, &[u32::MAX; 128])?;
    let mut out = DeviceBuffer::from_host(&stream, &[u32::MAX; 128])?;
    if emulator_only() {
        let launched =
            unsafe { m.neighbour_exchange(&stream, one_block(128), &mut buf, &mut out, 0) };
        match race_of(launched) {
            EmuError::GlobalRace(race) => {
                let GlobalRace {
                    first,
                    second,
                    kind,
                    location,
                    ..
                } = *race;
                assert_eq!(kind, RaceKind::ReadWrite);
                assert_eq!((first.thread, first.access), ([1, 0, 0], AccessKind::Store));
                assert_eq!(
                    (second.thread, second.access),
                    ([0, 0, 0], AccessKind::Load)
                );
                assert_eq!(location, "element 1 of parameter `buf` (u32)");
            }
            other => panic!("expected a global race, got {other}"),
        }
    }
    unsafe { m.neighbour_exchange(&stream, one_block(128), &mut buf, &mut out, 1)? };
    let want: Vec<u32> = (0..128).map(|t| ((t + 1) % 128) * 7).collect();
    assert_same("neighbour exchange", &out.to_host_vec(&stream)?, &want);
    Ok(())
}

struct LastBlock {
    x: DeviceBuffer<u32>,
    partial: DeviceBuffer<u32>,
    count: DeviceBuffer<u32>,
    total: DeviceBuffer<u32>,
    want: u32,
    config: LaunchConfig1D,
}

fn last_block_inputs(stream: &cuprum::Stream, n: usize) -> cuprum::Result<LastBlock> {
    let x: Vec<u32> = random_u32(n).iter().map(|v| v % 1000).collect();
    let blocks = blocks_for(n, 128);
    Ok(LastBlock {
        want: x.iter().sum(),
        x: DeviceBuffer::from_host(stream, &x)?,
        partial: DeviceBuffer::from_host(stream, &vec![0xDEAD_BEEF; blocks as usize])?,
        count: DeviceBuffer::from_host(stream, &[0u32])?,
        total: DeviceBuffer::from_host(stream, &[0xDEAD_BEEF])?,
        config: LaunchConfig1D::new(blocks, 128, 0),
    })
}

#[test]
fn the_last_block_reduction_is_race_free() -> cuprum::Result<()> {
    let stream = ctx().default_stream();
    let m = kernels::load(ctx())?;
    for n in [1, 128, 1000, 100_003] {
        let mut s = last_block_inputs(&stream, n)?;
        unsafe {
            m.last_block_sum(
                &stream,
                s.config,
                &s.x,
                &mut s.partial,
                &mut s.count,
                &mut s.total,
                0,
            )?
        };
        assert_eq!(s.total.to_host_vec(&stream)?, vec![s.want], "n = {n}");
        assert_eq!(
            s.count.to_host_vec(&stream)?,
            vec![s.config.grid],
            "n = {n}"
        );
    }
    Ok(())
}

#[test]
fn a_broken_fence_handshake_races_on_the_partials() -> cuprum::Result<()> {
    if !emulator_only() {
        return Ok(());
    }
    let stream = ctx().default_stream();
    let m = kernels::load(ctx())?;
    for mode in [1, 2, 3] {
        let mut s = last_block_inputs(&stream, 20_000)?;
        let launched = unsafe {
            m.last_block_sum(
                &stream,
                s.config,
                &s.x,
                &mut s.partial,
                &mut s.count,
                &mut s.total,
                mode,
            )
        };
        match race_of(launched) {
            EmuError::GlobalRace(race) => {
                let GlobalRace {
                    kernel,
                    first,
                    second,
                    kind,
                    location,
                    ..
                } = *race;
                assert_eq!(kernel, "last_block_sum");
                assert_eq!(kind, RaceKind::ReadWrite, "mode {mode}");
                assert!(
                    location.contains("parameter `partial`"),
                    "mode {mode}: {location}"
                );
                assert_eq!((first.thread, second.thread), ([0, 0, 0], [0, 0, 0]));
                assert_ne!(first.block, second.block, "mode {mode}");
            }
            other => panic!("mode {mode}: expected a global race, got {other}"),
        }
    }
    Ok(())
}

#[test]
fn double_buffering_with_barriers_is_race_free() -> cuprum::Result<()> {
    let stream = ctx().default_stream();
    let m = kernels::load(ctx())?;
    let n = 256;
    let init: Vec<u32> = random_u32(n).iter().map(|v| v % 100).collect();
    let mut a = DeviceBuffer::from_host(&stream, &init)?;
    let mut b = DeviceBuffer::from_host(&stream, &vec![0xDEAD_BEEF; n])?;
    unsafe { m.ping_pong(&stream, one_block(n as u32), &mut a, &mut b, 5)? };
    let mut cur = init;
    let mut other = vec![0; n];
    for _ in 0..5 {
        other = (0..n)
            .map(|i| {
                cur[(i + n - 1) % n]
                    .wrapping_add(cur[i])
                    .wrapping_add(cur[(i + 1) % n])
            })
            .collect();
        std::mem::swap(&mut cur, &mut other);
    }
    // After an odd number of rounds the last result is in `b`.
    assert_same("ping pong", &b.to_host_vec(&stream)?, &cur);
    assert_same(
        "ping pong (previous round)",
        &a.to_host_vec(&stream)?,
        &other,
    );
    Ok(())
}

#[test]
fn neighbour_reads_are_race_free() -> cuprum::Result<()> {
    let stream = ctx().default_stream();
    let m = kernels::load(ctx())?;
    for n in [1, 255, 1000, (1 << 20) + 3] {
        let x = random_f32(n);
        let dx = DeviceBuffer::from_host(&stream, &x)?;
        let mut y = DeviceBuffer::from_host(&stream, &vec![f32::NAN; n])?;
        let config = LaunchConfig1D::new(blocks_for(n, 128), 128, 0);
        m.stencil(&stream, &m.prepare_stencil(config)?, &dx, &mut y)?;
        let want: Vec<f32> = (0..n)
            .map(|i| x[(i + n - 1) % n] + x[i] + x[(i + 1) % n])
            .collect();
        assert_same("stencil", &y.to_host_vec(&stream)?, &want);
    }
    Ok(())
}

#[test]
fn grid_stride_loops_with_warp_sums_and_atomics_are_race_free() -> cuprum::Result<()> {
    let stream = ctx().default_stream();
    let m = kernels::load(ctx())?;
    let n = 100_003;
    let x = random_u32(n);
    let dx = DeviceBuffer::from_host(&stream, &x)?;
    let mut y = DeviceBuffer::from_host(&stream, &vec![0xDEAD_BEEF; n])?;
    let mut total = DeviceBuffer::from_host(&stream, &[0u32])?;
    let prepared = m.prepare_grid_stride(LaunchConfig1D::new(6, 128, 0))?;
    m.grid_stride(&stream, &prepared, &dx, &mut y, &mut total)?;
    let want: Vec<u32> = x.iter().map(|v| v.wrapping_mul(3)).collect();
    assert_same("grid stride", &y.to_host_vec(&stream)?, &want);
    let sum = x.iter().fold(0u32, |a, &b| a.wrapping_add(b));
    assert_eq!(total.to_host_vec(&stream)?, vec![sum]);
    Ok(())
}

#[test]
fn two_threads_given_one_disjoint_element_are_reported() -> cuprum::Result<()> {
    if !emulator_only() {
        return Ok(());
    }
    let stream = ctx().default_stream();
    let m = kernels::load(ctx())?;
    let mut out = DeviceBuffer::from_host(&stream, &[u32::MAX; 64])?;
    let config = LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (32, 2, 1),
        shared_mem_bytes: 0,
    };
    match race_of(unsafe { m.fill_by_index(&stream, config, &mut out) }) {
        EmuError::DisjointWrite(w) => {
            let DisjointWrite {
                kernel,
                param,
                index,
                first,
                second,
            } = *w;
            assert_eq!((kernel.as_str(), param.as_str()), ("fill_by_index", "out"));
            // Warp 0 (row 0) writes first; thread (0, 1) is the second writer of element 0.
            assert_eq!(index, 0);
            assert_eq!(first, ([0, 0, 0], [0, 0, 0]));
            assert_eq!(second, ([0, 0, 0], [0, 1, 0]));
        }
        other => panic!("expected a DisjointSlice violation, got {other}"),
    }
    Ok(())
}
