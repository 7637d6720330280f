//! mbarriers (`cuprum::simt::barrier`, cuda-oxide's API): producer and consumer warps that
//! meet through a barrier's phases instead of `sync_threads()`, a pipeline whose two
//! barriers alternate in parity over many phases, polling with `try_wait`/`test_wait`, and
//! `cp.async` copies that arrive on a barrier when they land. Random inputs, outputs
//! poisoned first, every element against plain Rust.
//!
//! The consumers are the block's first warps, which the emulator runs first: a wait that did
//! not wait would read shared memory nothing wrote yet (an error there, garbage on a GPU).
//! On the emulator, planted bugs (a wait nothing ends, a barrier used before `init` or
//! without a barrier after it, a read with no wait) must give their typed errors, and the
//! correct kernels run with race detection on, so the phases must order their accesses.

mod common;

use common::{assert_same, ctx};
use cuprum::simt::async_copy::{
    cp_async_cg_16, cp_async_mbarrier_arrive, cp_async_mbarrier_arrive_noinc,
    cp_async_mbarrier_arrive_noinc_shared, cp_async_mbarrier_arrive_shared,
};
use cuprum::simt::barrier::{
    Barrier, mbarrier_arrive, mbarrier_init, mbarrier_inval, mbarrier_test_wait, mbarrier_try_wait,
    mbarrier_try_wait_parity, mbarrier_wait, mbarrier_wait_parity,
};
use cuprum::simt::{DisjointSlice, SharedArray, cuda_module, kernel, thread};
use cuprum::{BackendKind, DeviceBuffer, Error, LaunchConfig};
use cuprum_emu::{EmuError, RaceKind};
use cuprum_testkit::poison::poisoned;
use cuprum_testkit::random::{random, rng};

/// Threads per block in the producer/consumer kernels: two consumer warps, then two
/// producer warps.
const THREADS: usize = 128;
/// Threads on each side.
const HALF: usize = 64;
/// Blocks per launch.
const BLOCKS: usize = 3;

#[cuda_module]
mod kernels {
    use super::*;

    /// Producers (threads 64..128) each write one transformed input into `DATA` and arrive on
    /// `FULL`; consumers (threads 0..64) wait for phase 0 and combine two producers' values.
    #[kernel]
    pub fn producer_consumer(x: &[u32], mut out: DisjointSlice<u32>) {
        static mut FULL: Barrier = Barrier::UNINIT;
        static mut DATA: SharedArray<u32, 64> = SharedArray::UNINIT;
        let t = thread::threadIdx_x();
        let gid = thread::index_1d();
        let g = gid.get();
        if t == 0 {
            unsafe { mbarrier_init(&raw mut FULL, 64) };
        }
        thread::sync_threads();
        if t >= 64 {
            unsafe {
                DATA[(t - 64) as usize] = x[g].wrapping_mul(3).wrapping_add(1);
                mbarrier_arrive(&raw const FULL);
            }
            if let Some(o) = out.get_mut(gid) {
                *o = x[g];
            }
        } else {
            let v = unsafe {
                mbarrier_wait_parity(&raw const FULL, 0);
                DATA[t as usize] ^ DATA[((t + 1) % 64) as usize].wrapping_mul(7)
            };
            if let Some(o) = out.get_mut(gid) {
                *o = v;
            }
        }
    }

    /// `rounds` phases through one slot: producers wait until the consumers freed it
    /// (`EMPTY`, phase `r - 1`), fill it and arrive on `FULL`; consumers wait for `FULL`'s
    /// phase `r`, fold two values into an accumulator and arrive on `EMPTY`.
    #[kernel]
    pub fn pipeline(x: &[u32], rounds: u32, mut out: DisjointSlice<u32>) {
        static mut FULL: Barrier = Barrier::UNINIT;
        static mut EMPTY: Barrier = Barrier::UNINIT;
        static mut SLOT: SharedArray<u32, 64> = SharedArray::UNINIT;
        let t = thread::threadIdx_x();
        let gid = thread::index_1d();
        let g = gid.get();
        if t == 0 {
            unsafe {
                mbarrier_init(&raw mut FULL, 64);
                mbarrier_init(&raw mut EMPTY, 64);
            }
        }
        thread::sync_threads();
        let mut acc = 0u32;
        let mut r = 0u32;
        while r < rounds {
            if t >= 64 {
                unsafe {
                    if r > 0 {
                        mbarrier_wait_parity(&raw const EMPTY, (r - 1) & 1);
                    }
                    SLOT[(t - 64) as usize] = x[g].wrapping_add(r.wrapping_mul(0x9E37_79B9));
                    mbarrier_arrive(&raw const FULL);
                }
            } else {
                unsafe {
                    mbarrier_wait_parity(&raw const FULL, r & 1);
                    let v = SLOT[t as usize] ^ SLOT[((t + 5) % 64) as usize];
                    acc = acc.wrapping_mul(31).wrapping_add(v);
                    mbarrier_arrive(&raw const EMPTY);
                }
            }
            r += 1;
        }
        if t >= 64 {
            acc = x[g];
        }
        if let Some(o) = out.get_mut(gid) {
            *o = acc;
        }
        thread::sync_threads();
        if t == 0 {
            unsafe {
                mbarrier_inval(&raw mut FULL);
                mbarrier_inval(&raw mut EMPTY);
            }
        }
    }

    /// Consumers arrive on `BAR` (which expects every thread), test their token at once
    /// (false: the producers wait on `GO`, which the consumers arrive on only after the
    /// test), then poll with `try_wait` until the producers have written and arrived; a
    /// `test_wait` after that must be true. Producers poll `GO` with `try_wait_parity`.
    /// A consumer whose tests said otherwise writes `u32::MAX`.
    #[kernel]
    pub fn polling(x: &[u32], mut out: DisjointSlice<u32>) {
        static mut BAR: Barrier = Barrier::UNINIT;
        static mut GO: Barrier = Barrier::UNINIT;
        static mut DATA: SharedArray<u32, 64> = SharedArray::UNINIT;
        let t = thread::threadIdx_x();
        let gid = thread::index_1d();
        let g = gid.get();
        if t == 0 {
            unsafe {
                mbarrier_init(&raw mut BAR, 128);
                mbarrier_init(&raw mut GO, 64);
            }
        }
        thread::sync_threads();
        if t < 64 {
            let v = unsafe {
                let token = mbarrier_arrive(&raw const BAR);
                let early = mbarrier_test_wait(&raw const BAR, token);
                mbarrier_arrive(&raw const GO);
                while !mbarrier_try_wait(&raw const BAR, token) {}
                let late = mbarrier_test_wait(&raw const BAR, token);
                if early || !late {
                    u32::MAX
                } else {
                    DATA[t as usize].wrapping_add(DATA[((t + 7) % 64) as usize])
                }
            };
            if let Some(o) = out.get_mut(gid) {
                *o = v;
            }
        } else {
            unsafe {
                while !mbarrier_try_wait_parity(&raw const GO, 0) {}
                DATA[(t - 64) as usize] = x[g] >> 1;
                mbarrier_arrive(&raw const BAR);
            }
            if let Some(o) = out.get_mut(gid) {
                *o = x[g];
            }
        }
    }

    /// Each thread copies its four words into `TILE` with `cp.async` and lets the copies
    /// arrive on `BAR` (`noinc`: as one of the 64 expected arrivals; else on top of the
    /// thread's own arrival; `shared`: the `_shared` spelling), waits, and writes out its
    /// neighbour's four words.
    #[kernel]
    pub fn copies_arrive(x: &[u32], noinc: bool, shared: bool, mut out: DisjointSlice<u32>) {
        static mut BAR: Barrier = Barrier::UNINIT;
        static mut TILE: SharedArray<u32, 256, 16> = SharedArray::UNINIT;
        let t = thread::threadIdx_x() as usize;
        let gid = thread::index_1d();
        let g = gid.get();
        if t == 0 {
            unsafe { mbarrier_init(&raw mut BAR, 64) };
        }
        thread::sync_threads();
        unsafe {
            let dst = (core::ptr::addr_of_mut!(TILE) as *mut u32).add(4 * t);
            cp_async_cg_16(dst, x.as_ptr().add(4 * g));
            if noinc {
                if shared {
                    cp_async_mbarrier_arrive_noinc_shared(&raw mut BAR);
                } else {
                    cp_async_mbarrier_arrive_noinc(&raw mut BAR);
                }
                mbarrier_wait_parity(&raw const BAR, 0);
            } else {
                if shared {
                    cp_async_mbarrier_arrive_shared(&raw mut BAR);
                } else {
                    cp_async_mbarrier_arrive(&raw mut BAR);
                }
                let token = mbarrier_arrive(&raw const BAR);
                mbarrier_wait(&raw const BAR, token);
            }
        }
        let n = (t + 1) % 64;
        for (j, o) in out.chunk_mut::<4>(gid) {
            *o = unsafe { TILE[4 * n + j] };
        }
    }

    /// Expects one arrival more than the block makes: the wait never ends.
    #[kernel]
    pub fn one_arrival_short(mut out: DisjointSlice<u32>) {
        static mut BAR: Barrier = Barrier::UNINIT;
        let t = thread::threadIdx_x();
        if t == 0 {
            unsafe { mbarrier_init(&raw mut BAR, 65) };
        }
        thread::sync_threads();
        unsafe {
            let token = mbarrier_arrive(&raw const BAR);
            mbarrier_wait(&raw const BAR, token);
        }
        if let Some(o) = out.get_mut(thread::index_1d()) {
            *o = t;
        }
    }

    /// Arrives on a barrier nothing initialised.
    #[kernel]
    pub fn never_initialised(mut out: DisjointSlice<u32>) {
        static mut BAR: Barrier = Barrier::UNINIT;
        let token = unsafe { mbarrier_arrive(&raw const BAR) };
        if let Some(o) = out.get_mut(thread::index_1d()) {
            *o = token as u32;
        }
    }

    /// Thread 0 initialises the barrier and everyone arrives with no `sync_threads()`
    /// between: thread 1 may find it uninitialised on a GPU.
    #[kernel]
    pub fn init_unordered(mut out: DisjointSlice<u32>) {
        static mut BAR: Barrier = Barrier::UNINIT;
        let t = thread::threadIdx_x();
        if t == 0 {
            unsafe { mbarrier_init(&raw mut BAR, 64) };
        }
        let token = unsafe { mbarrier_arrive(&raw const BAR) };
        if let Some(o) = out.get_mut(thread::index_1d()) {
            *o = token as u32;
        }
    }

    /// Everyone writes its slot and arrives, but reads its left neighbour's slot without
    /// waiting for the phase: a race, though the writer has arrived.
    #[kernel]
    pub fn read_without_wait(mut out: DisjointSlice<u32>) {
        static mut BAR: Barrier = Barrier::UNINIT;
        static mut DATA: SharedArray<u32, 64> = SharedArray::UNINIT;
        let t = thread::threadIdx_x();
        if t == 0 {
            unsafe { mbarrier_init(&raw mut BAR, 64) };
        }
        thread::sync_threads();
        let v = unsafe {
            DATA[t as usize] = t;
            mbarrier_arrive(&raw const BAR);
            if t > 0 { DATA[(t - 1) as usize] } else { 0 }
        };
        if let Some(o) = out.get_mut(thread::index_1d()) {
            *o = v;
        }
    }
}

fn config(threads: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (BLOCKS as u32, 1, 1),
        block_dim: (threads as u32, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// `f(block, thread)` for every thread of the launch, in order.
fn per_thread(threads: usize, f: impl Fn(usize, usize) -> u32) -> Vec<u32> {
    (0..BLOCKS)
        .flat_map(|b| (0..threads).map(move |t| (b, t)))
        .map(|(b, t)| f(b, t))
        .collect()
}

#[test]
fn consumer_warps_wait_for_producer_warps() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let module = kernels::load(ctx).unwrap();
    let n = BLOCKS * THREADS;
    let x: Vec<u32> = random(&mut rng("mbarrier_producer_consumer"), n, 0, u32::MAX);
    let dx = DeviceBuffer::from_host(&stream, &x).unwrap();
    let mut out = DeviceBuffer::from_host(&stream, &poisoned::<u32>(n)).unwrap();
    unsafe { module.producer_consumer(&stream, config(THREADS), &dx, &mut out) }.unwrap();
    let produced = |b: usize, p: usize| x[b * THREADS + HALF + p].wrapping_mul(3).wrapping_add(1);
    let want = per_thread(THREADS, |b, t| {
        if t >= HALF {
            x[b * THREADS + t]
        } else {
            produced(b, t) ^ produced(b, (t + 1) % HALF).wrapping_mul(7)
        }
    });
    assert_same(
        "producer_consumer",
        &out.to_host_vec(&stream).unwrap(),
        &want,
    );
}

#[test]
fn a_pipeline_alternates_phase_parity_over_many_rounds() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let module = kernels::load(ctx).unwrap();
    let n = BLOCKS * THREADS;
    let x: Vec<u32> = random(&mut rng("mbarrier_pipeline"), n, 0, u32::MAX);
    let dx = DeviceBuffer::from_host(&stream, &x).unwrap();
    for rounds in [1u32, 2, 7] {
        let mut out = DeviceBuffer::from_host(&stream, &poisoned::<u32>(n)).unwrap();
        unsafe { module.pipeline(&stream, config(THREADS), &dx, rounds, &mut out) }.unwrap();
        let slot = |b: usize, p: usize, r: u32| {
            x[b * THREADS + HALF + p].wrapping_add(r.wrapping_mul(0x9E37_79B9))
        };
        let want = per_thread(THREADS, |b, t| {
            if t >= HALF {
                return x[b * THREADS + t];
            }
            (0..rounds).fold(0u32, |acc, r| {
                let v = slot(b, t, r) ^ slot(b, (t + 5) % HALF, r);
                acc.wrapping_mul(31).wrapping_add(v)
            })
        });
        assert_same(
            &format!("pipeline over {rounds} rounds"),
            &out.to_host_vec(&stream).unwrap(),
            &want,
        );
    }
}

#[test]
fn try_wait_and_test_wait_see_the_phase_complete_only_when_it_has() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let module = kernels::load(ctx).unwrap();
    let n = BLOCKS * THREADS;
    let x: Vec<u32> = random(&mut rng("mbarrier_polling"), n, 0, u32::MAX);
    let dx = DeviceBuffer::from_host(&stream, &x).unwrap();
    let mut out = DeviceBuffer::from_host(&stream, &poisoned::<u32>(n)).unwrap();
    unsafe { module.polling(&stream, config(THREADS), &dx, &mut out) }.unwrap();
    let data = |b: usize, p: usize| x[b * THREADS + HALF + p] >> 1;
    let want = per_thread(THREADS, |b, t| {
        if t >= HALF {
            x[b * THREADS + t]
        } else {
            data(b, t).wrapping_add(data(b, (t + 7) % HALF))
        }
    });
    assert_same("polling", &out.to_host_vec(&stream).unwrap(), &want);
}

#[test]
fn cp_async_copies_arrive_on_a_barrier_when_they_land() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let module = kernels::load(ctx).unwrap();
    let threads = 64;
    let n = BLOCKS * threads;
    let x: Vec<u32> = random(&mut rng("mbarrier_cp_async"), 4 * n, 0, u32::MAX);
    let dx = DeviceBuffer::from_host(&stream, &x).unwrap();
    let want: Vec<u32> = per_thread(threads, |_, _| 0)
        .iter()
        .enumerate()
        .flat_map(|(g, _)| {
            let (b, t) = (g / threads, g % threads);
            let from = 4 * (b * threads + (t + 1) % threads);
            x[from..from + 4].to_vec()
        })
        .collect();
    for (noinc, shared) in [(false, false), (false, true), (true, false), (true, true)] {
        let mut out = DeviceBuffer::from_host(&stream, &poisoned::<u32>(4 * n)).unwrap();
        unsafe { module.copies_arrive(&stream, config(threads), &dx, noinc, shared, &mut out) }
            .unwrap();
        assert_same(
            &format!("cp.async arrivals, noinc {noinc}, shared {shared}"),
            &out.to_host_vec(&stream).unwrap(),
            &want,
        );
    }
}

/// Runs a planted-bug kernel of 64 threads per block on the emulator and returns its error;
/// `None` on a GPU, where the bug is undefined behaviour (a hang, for the deadlock).
fn planted(
    launch: impl FnOnce(
        &kernels::Module,
        &cuprum::Stream,
        LaunchConfig,
        &mut DeviceBuffer<u32>,
    ) -> cuprum::Result<()>,
) -> Option<EmuError> {
    let ctx = ctx();
    if ctx.backend() != BackendKind::Emulator {
        eprintln!("planted-bug kernels only run on the emulator");
        return None;
    }
    let stream = ctx.default_stream();
    let module = kernels::load(ctx).unwrap();
    let mut out = DeviceBuffer::from_host(&stream, &poisoned::<u32>(BLOCKS * 64)).unwrap();
    match launch(&module, &stream, config(64), &mut out) {
        Err(Error::Emulator { source, .. }) => Some(source),
        Err(other) => panic!("expected an emulator diagnostic, got {other}"),
        Ok(()) => panic!("the planted bug went unnoticed"),
    }
}

#[test]
fn a_wait_no_thread_can_end_is_a_deadlock() {
    let Some(e) = planted(|m, s, c, out| unsafe { m.one_arrival_short(s, c, out) }) else {
        return;
    };
    match &e {
        EmuError::MbarrierDeadlock {
            kernel,
            block,
            message,
            ..
        } => {
            assert_eq!(kernel, "one_arrival_short");
            assert_eq!(*block, [0, 0, 0]);
            assert!(message.contains("1 of its 65 arrivals"), "{message}");
        }
        other => panic!("expected a deadlock, got {other}"),
    }
}

#[test]
fn a_barrier_nothing_initialised_is_misuse() {
    let Some(e) = planted(|m, s, c, out| unsafe { m.never_initialised(s, c, out) }) else {
        return;
    };
    match &e {
        EmuError::MbarrierMisuse {
            kernel,
            thread,
            message,
            ..
        } => {
            assert_eq!(kernel, "never_initialised");
            assert_eq!(*thread, [0, 0, 0]);
            assert!(message.contains("before `mbarrier_init`"), "{message}");
        }
        other => panic!("expected mbarrier misuse, got {other}"),
    }
}

#[test]
fn a_use_nothing_orders_after_the_init_is_misuse() {
    let Some(e) = planted(|m, s, c, out| unsafe { m.init_unordered(s, c, out) }) else {
        return;
    };
    match &e {
        EmuError::MbarrierMisuse {
            thread, message, ..
        } => {
            assert_eq!(*thread, [1, 0, 0]);
            assert!(message.contains("nothing ordering the use"), "{message}");
        }
        other => panic!("expected mbarrier misuse, got {other}"),
    }
}

#[test]
fn reading_without_waiting_for_the_phase_is_a_race() {
    let Some(e) = planted(|m, s, c, out| unsafe { m.read_without_wait(s, c, out) }) else {
        return;
    };
    match &e {
        EmuError::SharedRace {
            kernel,
            kind,
            threads,
            ..
        } => {
            assert_eq!(kernel, "read_without_wait");
            assert_eq!(*kind, RaceKind::ReadWrite);
            assert_eq!(*threads, ([0, 0, 0], [1, 0, 0]));
        }
        other => panic!("expected a shared-memory race, got {other}"),
    }
}
