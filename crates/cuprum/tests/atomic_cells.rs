//! cuda-oxide's typed atomic cells (`DeviceAtomicU32`, `BlockAtomicU32`, `DeviceAtomicF32`,
//! ..) made from slice pointers in `unsafe` code, with orderings: every read-modify-write
//! checked against a plain-Rust model over random inputs and poisoned outputs (each old value
//! consistent with some serial order, the final value exact), float sums within a tolerance,
//! block-scope counters per block, a release/acquire handoff between blocks, and, on the
//! emulator, the race an unordered handoff is.

mod common;

use common::{assert_same, ctx};
use cuprum::simt::atomic::{
    AtomicOrdering, BlockAtomicU32, DeviceAtomicF32, DeviceAtomicF64, DeviceAtomicI32,
    DeviceAtomicU32,
};
use cuprum::simt::{cuda_module, kernel, thread};
use cuprum::{BackendKind, DeviceBuffer, Error, LaunchConfig};
use cuprum_testkit::poison::poisoned;
use cuprum_testkit::random::{random, rng};

const THREADS: u32 = 128;
const BLOCKS: u32 = 6;
const N: usize = (THREADS * BLOCKS) as usize;

#[cuda_module]
mod kernels {
    use super::*;

    /// Each thread adds one to `counter[0]` (a read-only parameter: the atomic makes it
    /// written) and keeps the value it saw.
    #[kernel]
    pub unsafe fn count(counter: &[u32], olds: &mut [u32]) {
        let g = thread::index_1d().get();
        let c = unsafe { &*(counter.as_ptr() as *const DeviceAtomicU32) };
        olds[g] = c.fetch_add(1, AtomicOrdering::Relaxed);
    }

    /// `op` on `cells[0]` with `vals[g]`: 0 min, 1 max, 2 and, 3 or, 4 xor, 5 swap (signed).
    #[kernel]
    pub unsafe fn rmw(cells: &mut [i32], vals: &[i32], op: u32, olds: &mut [i32]) {
        let g = thread::index_1d().get();
        let c = unsafe { &*(cells.as_mut_ptr() as *const DeviceAtomicI32) };
        let v = vals[g];
        let old = if op == 0 {
            c.fetch_min(v, AtomicOrdering::Relaxed)
        } else if op == 1 {
            c.fetch_max(v, AtomicOrdering::AcqRel)
        } else if op == 2 {
            c.fetch_and(v, AtomicOrdering::Release)
        } else if op == 3 {
            c.fetch_or(v, AtomicOrdering::Acquire)
        } else if op == 4 {
            c.fetch_xor(v, AtomicOrdering::SeqCst)
        } else {
            c.swap(v, AtomicOrdering::Relaxed)
        };
        olds[g] = old;
    }

    /// Every thread tries to claim `cell` (zero) with its index plus one; `won[g]` is 1 for
    /// the winner, `seen[g]` the value each found.
    #[kernel]
    pub unsafe fn claim(cell: &mut [u32], won: &mut [u32], seen: &mut [u32]) {
        let g = thread::index_1d().get();
        let c = unsafe { &*(cell.as_mut_ptr().add(1) as *const DeviceAtomicU32) };
        let r = c.compare_exchange(
            0,
            g as u32 + 1,
            AtomicOrdering::AcqRel,
            AtomicOrdering::Relaxed,
        );
        won[g] = if r.is_ok() { 1 } else { 0 };
        seen[g] = r.unwrap_or_else(|v| v);
    }

    /// Float sums: `fetch_add` on an `f32` and an `f64` cell.
    #[kernel]
    pub unsafe fn float_sums(x: &[f32], y: &[f64], s32: &mut [f32], s64: &mut [f64]) {
        let g = thread::index_1d().get();
        let a = unsafe { &*(s32.as_mut_ptr() as *const DeviceAtomicF32) };
        let b = unsafe { &*(s64.as_mut_ptr() as *const DeviceAtomicF64) };
        a.fetch_add(x[g], AtomicOrdering::Relaxed);
        b.fetch_add(y[g], AtomicOrdering::Relaxed);
    }

    /// A block-scope counter per block.
    #[kernel]
    pub unsafe fn block_counts(counters: &mut [u32], olds: &mut [u32]) {
        let g = thread::index_1d().get();
        let b = thread::blockIdx_x() as usize;
        let c = unsafe { &*((counters.as_mut_ptr() as *const BlockAtomicU32).add(b)) };
        olds[g] = c.fetch_add(1, AtomicOrdering::Relaxed);
    }

    /// Thread 0 of each block writes a word and publishes it with a store-release; after a
    /// barrier every thread reads the flag with a load-acquire, then the word. Then the
    /// blocks hand their data to the last one to finish through an acq_rel counter.
    #[kernel]
    pub unsafe fn handoff(x: &[u32], data: &mut [u32], flags: &mut [u32], sums: &mut [u32]) {
        let g = thread::index_1d().get();
        let t = thread::threadIdx_x();
        let b = thread::blockIdx_x() as usize;
        let flag = unsafe { &*(flags.as_mut_ptr().add(b) as *const DeviceAtomicU32) };
        if t == 0 {
            data[b] = x[b];
            flag.store(42, AtomicOrdering::Release);
        }
        thread::sync_threads();
        let f = flag.load(AtomicOrdering::Acquire);
        sums[g] = f + data[b];
        thread::sync_threads();
        if t == 0 {
            let done = unsafe { &*(flags.as_mut_ptr().add(64) as *const DeviceAtomicU32) };
            let before = done.fetch_add(1, AtomicOrdering::AcqRel);
            if before == thread::gridDim_x() - 1 {
                let mut total = 0u32;
                for i in 0..thread::gridDim_x() as usize {
                    total = total.wrapping_add(data[i]);
                }
                flags[65] = total;
            }
        }
    }

    /// The handoff without ordering: the last block reads the others' data after a relaxed
    /// counter. A race.
    #[kernel]
    pub unsafe fn handoff_relaxed(x: &[u32], data: &mut [u32], flags: &mut [u32]) {
        let t = thread::threadIdx_x();
        let b = thread::blockIdx_x() as usize;
        if t == 0 {
            data[b] = x[b];
            let done = unsafe { &*(flags.as_mut_ptr() as *const DeviceAtomicU32) };
            let before = done.fetch_add(1, AtomicOrdering::Relaxed);
            if before == thread::gridDim_x() - 1 {
                let mut total = 0u32;
                for i in 0..thread::gridDim_x() as usize {
                    total = total.wrapping_add(data[i]);
                }
                flags[1] = total;
            }
        }
    }
}

fn config() -> LaunchConfig {
    LaunchConfig {
        grid_dim: (BLOCKS, 1, 1),
        block_dim: (THREADS, 1, 1),
        shared_mem_bytes: 0,
    }
}

#[test]
fn a_read_only_slice_written_by_an_atomic_cell_is_not_read_only() {
    let module = kernels::ir().unwrap();
    let k = module.kernels.iter().find(|k| k.name == "count").unwrap();
    assert!(
        matches!(
            k.params[0].kind,
            cuprum::ir::ParamKind::Slice {
                access: cuprum::ir::SliceAccess::ReadWrite,
                ..
            }
        ),
        "{:?}",
        k.params[0].kind
    );
    // `vals` of `rmw` is only read: it stays read-only.
    let k = module.kernels.iter().find(|k| k.name == "rmw").unwrap();
    assert!(matches!(
        k.params[1].kind,
        cuprum::ir::ParamKind::Slice {
            access: cuprum::ir::SliceAccess::ReadOnly,
            ..
        }
    ));
}

#[test]
fn fetch_add_counters_hand_out_every_value_once() {
    let stream = ctx().default_stream();
    let module = kernels::load(ctx()).unwrap();
    let counter = DeviceBuffer::from_host(&stream, &[0u32]).unwrap();
    let mut olds = DeviceBuffer::from_host(&stream, &poisoned::<u32>(N)).unwrap();
    unsafe { module.count(&stream, config(), &counter, &mut olds) }.unwrap();
    let mut got = olds.to_host_vec(&stream).unwrap();
    got.sort_unstable();
    assert_same(
        "sorted old values",
        &got,
        &(0..N as u32).collect::<Vec<_>>(),
    );
    assert_eq!(counter.to_host_vec(&stream).unwrap(), vec![N as u32]);
}

#[test]
fn read_modify_writes_match_a_serial_order() {
    let stream = ctx().default_stream();
    let module = kernels::load(ctx()).unwrap();
    let mut r = rng("atomic_cells_rmw");
    for op in 0..6u32 {
        let vals: Vec<i32> = random(&mut r, N, i32::MIN, i32::MAX);
        let init: i32 = random(&mut r, 1, i32::MIN, i32::MAX)[0];
        let dv = DeviceBuffer::from_host(&stream, &vals).unwrap();
        let mut cell = DeviceBuffer::from_host(&stream, &[init]).unwrap();
        let mut olds = DeviceBuffer::from_host(&stream, &poisoned::<i32>(N)).unwrap();
        unsafe { module.rmw(&stream, config(), &mut cell, &dv, op, &mut olds) }.unwrap();
        let olds = olds.to_host_vec(&stream).unwrap();
        let fin = cell.to_host_vec(&stream).unwrap()[0];
        let all = |f: fn(i32, i32) -> i32| vals.iter().fold(init, |a, &v| f(a, v));
        match op {
            0 => {
                assert_eq!(fin, all(i32::min), "min");
                for (g, &o) in olds.iter().enumerate() {
                    assert!(
                        o >= fin && (o == init || vals.contains(&o)),
                        "min old {g}: {o}"
                    );
                    assert!(o <= init, "min old {g} above the initial value");
                }
            }
            1 => {
                assert_eq!(fin, all(i32::max), "max");
                for (g, &o) in olds.iter().enumerate() {
                    assert!(
                        o <= fin && o >= init && (o == init || vals.contains(&o)),
                        "max old {g}"
                    );
                }
            }
            2 => {
                assert_eq!(fin, all(|a, b| a & b), "and");
                for &o in &olds {
                    assert!(o & fin == fin && o & init == o, "and old {o:#x}");
                }
            }
            3 => {
                assert_eq!(fin, all(|a, b| a | b), "or");
                for &o in &olds {
                    assert!(o | init == o && o | fin == fin, "or old {o:#x}");
                }
            }
            4 => {
                assert_eq!(fin, all(|a, b| a ^ b), "xor");
                // Serially, each old is the initial value xor the operands applied before.
                // So the olds xor the own operands chain: their xor-fold is checked through
                // the final value when the order is the olds' chain.
                let mut seen: Vec<(i32, i32)> =
                    olds.iter().copied().zip(vals.iter().copied()).collect();
                let mut cur = init;
                for _ in 0..N {
                    let Some(i) = seen.iter().position(|&(o, _)| o == cur) else {
                        panic!("xor: no thread saw {cur:#x}: not a serial order");
                    };
                    cur ^= seen.swap_remove(i).1;
                }
                assert_eq!(cur, fin);
            }
            _ => {
                // Swaps chain: each old is the initial value or another thread's operand,
                // and together with the final value they are the initial value and operands.
                let mut a: Vec<i32> = olds.clone();
                a.push(fin);
                let mut b = vals.clone();
                b.push(init);
                a.sort_unstable();
                b.sort_unstable();
                assert_same("swap values", &a, &b);
            }
        }
    }
}

#[test]
fn compare_exchange_has_one_winner() {
    let stream = ctx().default_stream();
    let module = kernels::load(ctx()).unwrap();
    let mut cell = DeviceBuffer::from_host(&stream, &[7u32, 0]).unwrap();
    let mut won = DeviceBuffer::from_host(&stream, &poisoned::<u32>(N)).unwrap();
    let mut seen = DeviceBuffer::from_host(&stream, &poisoned::<u32>(N)).unwrap();
    unsafe { module.claim(&stream, config(), &mut cell, &mut won, &mut seen) }.unwrap();
    let won = won.to_host_vec(&stream).unwrap();
    let seen = seen.to_host_vec(&stream).unwrap();
    let cell = cell.to_host_vec(&stream).unwrap();
    let winners: Vec<usize> = (0..N).filter(|&g| won[g] == 1).collect();
    assert_eq!(winners.len(), 1, "one winner");
    let w = winners[0];
    assert_eq!(cell, vec![7, w as u32 + 1]);
    for g in 0..N {
        assert!(won[g] <= 1);
        let want = if g == w { 0 } else { w as u32 + 1 };
        assert_eq!(seen[g], want, "thread {g}");
    }
}

#[test]
fn float_fetch_add_sums() {
    let stream = ctx().default_stream();
    let module = kernels::load(ctx()).unwrap();
    let mut r = rng("atomic_cells_float");
    let x: Vec<f32> = random(&mut r, N, 0.0, 1.0);
    let y: Vec<f64> = random(&mut r, N, -1.0, 1.0);
    let dx = DeviceBuffer::from_host(&stream, &x).unwrap();
    let dy = DeviceBuffer::from_host(&stream, &y).unwrap();
    let mut s32 = DeviceBuffer::from_host(&stream, &[0.5f32]).unwrap();
    let mut s64 = DeviceBuffer::from_host(&stream, &[0.25f64]).unwrap();
    unsafe { module.float_sums(&stream, config(), &dx, &dy, &mut s32, &mut s64) }.unwrap();
    let exact32: f64 = 0.5 + x.iter().map(|&v| f64::from(v)).sum::<f64>();
    let exact64: f64 = 0.25 + y.iter().sum::<f64>();
    let got32 = f64::from(s32.to_host_vec(&stream).unwrap()[0]);
    let got64 = s64.to_host_vec(&stream).unwrap()[0];
    // Any order of N roundings: at most N half-ulps of the largest partial sum.
    assert!(
        (got32 - exact32).abs() <= N as f64 * exact32 * f64::from(f32::EPSILON),
        "{got32} vs {exact32}"
    );
    let mag: f64 = 0.25 + y.iter().map(|v| v.abs()).sum::<f64>();
    assert!(
        (got64 - exact64).abs() <= N as f64 * mag * f64::EPSILON,
        "{got64} vs {exact64}"
    );
}

#[test]
fn block_scope_counters_count_per_block() {
    let stream = ctx().default_stream();
    let module = kernels::load(ctx()).unwrap();
    let mut counters = DeviceBuffer::from_host(&stream, &vec![0u32; BLOCKS as usize]).unwrap();
    let mut olds = DeviceBuffer::from_host(&stream, &poisoned::<u32>(N)).unwrap();
    unsafe { module.block_counts(&stream, config(), &mut counters, &mut olds) }.unwrap();
    assert_eq!(
        counters.to_host_vec(&stream).unwrap(),
        vec![THREADS; BLOCKS as usize]
    );
    let olds = olds.to_host_vec(&stream).unwrap();
    for block in olds.chunks(THREADS as usize) {
        let mut b = block.to_vec();
        b.sort_unstable();
        assert_same(
            "a block's old values",
            &b,
            &(0..THREADS).collect::<Vec<_>>(),
        );
    }
}

#[test]
fn release_acquire_hands_data_over_without_a_race() {
    let stream = ctx().default_stream();
    let module = kernels::load(ctx()).unwrap();
    let mut r = rng("atomic_cells_handoff");
    let x: Vec<u32> = random(&mut r, BLOCKS as usize, 0, 1 << 20);
    let dx = DeviceBuffer::from_host(&stream, &x).unwrap();
    let mut data = DeviceBuffer::from_host(&stream, &poisoned::<u32>(BLOCKS as usize)).unwrap();
    let mut flags = DeviceBuffer::from_host(&stream, &vec![0u32; 66]).unwrap();
    let mut sums = DeviceBuffer::from_host(&stream, &poisoned::<u32>(N)).unwrap();
    unsafe { module.handoff(&stream, config(), &dx, &mut data, &mut flags, &mut sums) }.unwrap();
    let want: Vec<u32> = (0..N).map(|g| 42 + x[g / THREADS as usize]).collect();
    assert_same("flag plus data", &sums.to_host_vec(&stream).unwrap(), &want);
    let flags = flags.to_host_vec(&stream).unwrap();
    assert_eq!(flags[64], BLOCKS);
    assert_eq!(flags[65], x.iter().fold(0u32, |a, &v| a.wrapping_add(v)));
}

#[test]
fn an_unordered_handoff_is_a_race_on_the_emulator() {
    if ctx().backend() != BackendKind::Emulator {
        eprintln!("planted races only run on the emulator");
        return;
    }
    let stream = ctx().default_stream();
    let module = kernels::load(ctx()).unwrap();
    let x = vec![1u32; BLOCKS as usize];
    let dx = DeviceBuffer::from_host(&stream, &x).unwrap();
    let mut data = DeviceBuffer::from_host(&stream, &vec![0u32; BLOCKS as usize]).unwrap();
    let mut flags = DeviceBuffer::from_host(&stream, &[0u32, 0]).unwrap();
    let result = unsafe { module.handoff_relaxed(&stream, config(), &dx, &mut data, &mut flags) };
    match result {
        Err(Error::Emulator { source, .. }) => {
            assert!(
                matches!(source, cuprum_emu::EmuError::GlobalRace(_)),
                "{source}"
            );
        }
        Err(other) => panic!("expected a race, got {other}"),
        Ok(()) => panic!("the unordered handoff went unnoticed"),
    }
}
