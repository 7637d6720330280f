//! The step budget: an endless loop, a wait nothing ends, or a grid too large to emulate ends
//! the launch with `EmuError::StepLimit` instead of hanging the process, promptly (every block
//! stops once the budget is spent) and naming the same block and thread every time.
//!
//! `measure_step_rate` (ignored; run with `--ignored --nocapture`) prints the figures behind
//! `DEFAULT_STEP_LIMIT`.

mod common;

use std::time::{Duration, Instant};

use common::*;
use cuprum_emu::{
    DEFAULT_STEP_LIMIT, EmuError, LaunchDims, LaunchOptions, Memory, STEP_LIMIT_ENV, launch_with,
};
use cuprum_ir::*;

fn limited(steps: u64) -> LaunchOptions {
    LaunchOptions::default().with_step_limit(Some(steps))
}

/// Every thread whose block index is at least `from` spins forever (a counter in a loop that
/// never breaks); the others return at once.
fn spin_from_block(from: u32) -> Kernel {
    let mut k = K::new("spin");
    let b = k.special(Special::BlockIdx(Dim::X));
    let f = k.u32(from);
    let spins = k.cmp(CmpOp::Ge, b, f);
    k.if_(spins, |k| {
        let z = k.u32(0);
        let n = k.var("n", ScalarType::U32, z);
        k.loop_(|k| {
            let v = k.read(n);
            let one = k.u32(1);
            let next = k.add(v, one);
            k.write(n, next);
        });
    });
    k.finish()
}

fn expect_step_limit(result: Result<(), EmuError>) -> (Dim3, Dim3, u64, String) {
    match result {
        Err(e @ EmuError::StepLimit { .. }) => {
            let text = e.to_string();
            let EmuError::StepLimit {
                block,
                thread,
                limit,
                ..
            } = e
            else {
                unreachable!()
            };
            (block, thread, limit, text)
        }
        other => panic!("expected a step-limit error, got {other:?}"),
    }
}

type Dim3 = [u32; 3];

/// Block 0 writes `out[threadIdx.x]` (while in bounds); every other block does nothing. (A
/// global index `blockIdx.x * blockDim.x + threadIdx.x` in `u32` would wrap in a grid of
/// 2^31 blocks, and blocks 2^27 apart would write the same elements: the race detector says
/// so.)
fn tiny_kernel() -> Kernel {
    let mut k = K::new("tiny");
    let out = k.slice("out", ScalarType::U32, SliceAccess::Disjoint);
    let b = k.special(Special::BlockIdx(Dim::X));
    let t = k.tid();
    let z = k.u32(0);
    let first = k.cmp(CmpOp::Eq, b, z);
    let t64 = k.cast(t, ScalarType::U64);
    let n = k.len(out);
    let inside = k.cmp(CmpOp::Lt, t64, n);
    let go = k.bin(BinaryOp::And, first, inside);
    k.if_(go, |k| {
        let v = k.u32(7);
        k.store(out, t64, v);
    });
    k.finish()
}

#[test]
fn an_endless_loop_ends_with_a_step_limit_error() {
    let mem = Memory::new();
    let kernel = spin_from_block(0);
    for _ in 0..3 {
        let t = Instant::now();
        let result = launch_with(&mem, &kernel, dims1(64 * 40, 64), &[], &limited(2_000_000));
        let (block, thread, limit, text) = expect_step_limit(result);
        assert!(t.elapsed() < Duration::from_secs(20), "{:?}", t.elapsed());
        // Every block spins; the lowest one that ran is reported, at its first active lane.
        assert_eq!((block, thread, limit), ([0, 0, 0], [0, 0, 0], 2_000_000));
        assert!(
            text.contains("kernel `spin`")
                && text.contains("2000000 emulator steps")
                && text.contains(STEP_LIMIT_ENV)
                && text.contains("LaunchOptions::step_limit"),
            "{text}"
        );
    }
}

/// Blocks below 5 finish at once; block 5 and up spin: block 5 is the one reported, and the
/// launch still ends (the blocks after it are stopped too).
#[test]
fn the_lowest_running_block_is_named() {
    let mem = Memory::new();
    let kernel = spin_from_block(5);
    for _ in 0..3 {
        let result = launch_with(&mem, &kernel, dims1(64 * 64, 64), &[], &limited(3_000_000));
        let (block, thread, ..) = expect_step_limit(result);
        assert_eq!((block, thread), ([5, 0, 0], [0, 0, 0]));
    }
}

/// The largest grid a GPU accepts, of a kernel that does almost nothing: more work than the
/// emulator could finish in a day, stopped within the budget.
#[test]
fn a_grid_of_i32_max_blocks_ends() {
    let kernel = tiny_kernel();
    let mem = Memory::new();
    let dout = output(&mem, ScalarType::U32, 10);
    let dims = LaunchDims {
        grid: [i32::MAX as u32, 1, 1],
        block: [32, 1, 1],
        dynamic_shared_bytes: 0,
    };
    let t = Instant::now();
    let (.., limit, _) = expect_step_limit(launch_with(
        &mem,
        &kernel,
        dims,
        &[dout],
        &limited(5_000_000),
    ));
    assert_eq!(limit, 5_000_000);
    assert!(t.elapsed() < Duration::from_secs(20), "{:?}", t.elapsed());
}

/// A kernel of a known number of steps runs under a budget a little above it and stops under
/// one a little below it: the budget counts what runs, in all blocks together.
#[test]
fn the_budget_counts_the_steps_of_all_blocks() {
    // 100 iterations of a short loop per warp, 8 warps in 4 blocks.
    let mut k = K::new("counted");
    let z = k.u32(0);
    let n = k.var("n", ScalarType::U32, z);
    k.loop_(|k| {
        let v = k.read(n);
        let one = k.u32(1);
        let next = k.add(v, one);
        k.write(n, next);
        let hundred = k.u32(100);
        let done = k.cmp(CmpOp::Ge, next, hundred);
        k.if_(done, |k| k.push(Stmt::Break));
    });
    let kernel = k.finish();
    let mem = Memory::new();
    let dims = dims1(4 * 64, 64);
    // Each iteration: 7 statements, the `if` arm's end and the loop's back edge, about 10
    // steps per warp; 8 warps, 100 iterations: about 8_000 steps.
    launch_with(&mem, &kernel, dims, &[], &limited(20_000)).unwrap();
    expect_step_limit(launch_with(&mem, &kernel, dims, &[], &limited(4_000)));
    // No limit at all also works.
    let unlimited = LaunchOptions::default().with_step_limit(None);
    launch_with(&mem, &kernel, dims, &[], &unlimited).unwrap();
}

#[test]
fn the_default_budget_is_the_documented_one() {
    assert_eq!(
        LaunchOptions::default().step_limit,
        Some(DEFAULT_STEP_LIMIT)
    );
}

/// Steps per second of the emulator on three kinds of runaway kernels, and how long the
/// default budget takes to end the first two. Prints the figures `DEFAULT_STEP_LIMIT`'s docs
/// quote.
#[test]
#[ignore]
fn measure_step_rate() {
    let mem = Memory::new();
    let steps = 200_000_000u64;
    let rate = |name: &str, kernel: &Kernel, dims: LaunchDims, args: &[cuprum_emu::ArgValue]| {
        for races in [true, false] {
            let options = limited(steps).with_global_race_check(races);
            let t = Instant::now();
            expect_step_limit(launch_with(&mem, kernel, dims, args, &options));
            let secs = t.elapsed().as_secs_f64();
            let per_second = steps as f64 / secs;
            eprintln!(
                "{name} (race check {races}): {:.0} M steps/s; the default budget of \
                 {DEFAULT_STEP_LIMIT} would take {:.0} s",
                per_second / 1e6,
                DEFAULT_STEP_LIMIT as f64 / per_second
            );
        }
    };
    // An arithmetic loop in one block (one core) and in many (all cores).
    let alu = spin_from_block(0);
    rate("ALU loop, 1 block", &alu, dims1(256, 256), &[]);
    rate("ALU loop, 64 blocks", &alu, dims1(64 * 256, 256), &[]);
    // A loop that loads and stores its own global element every iteration.
    let mut k = K::new("memory_spin");
    let buf = k.slice("buf", ScalarType::U32, SliceAccess::ReadWrite);
    k.guarded(buf, |k, i| {
        k.loop_(|k| {
            let v = k.load(buf, i);
            let one = k.u32(1);
            let next = k.add(v, one);
            k.store(buf, i, next);
        });
    });
    let memory = k.finish();
    let dbuf = output(&mem, ScalarType::U32, 64 * 256);
    rate("memory loop, 1 block", &memory, dims1(256, 256), &[dbuf]);
    rate(
        "memory loop, 64 blocks",
        &memory,
        dims1(64 * 256, 256),
        &[dbuf],
    );
    // A huge grid of a tiny kernel.
    let tiny = tiny_kernel();
    let dims = LaunchDims {
        grid: [i32::MAX as u32, 1, 1],
        block: [32, 1, 1],
        dynamic_shared_bytes: 0,
    };
    rate("grid of i32::MAX blocks", &tiny, dims, &[dbuf]);
    // How long the default budget takes to stop an endless loop.
    for (name, kernel, args) in [("ALU", &alu, &[][..]), ("memory", &memory, &[dbuf][..])] {
        let t = Instant::now();
        let default = LaunchOptions::default();
        expect_step_limit(launch_with(
            &mem,
            kernel,
            dims1(64 * 256, 256),
            args,
            &default,
        ));
        eprintln!(
            "endless {name} loop in 64 blocks, default budget: stopped after {:.1} s",
            t.elapsed().as_secs_f64()
        );
    }
}
