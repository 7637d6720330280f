//! How the host cost of an iterator chain grows with the number of operations its closure
//! traces: a closure of `N` chained operations over a one-element input, for `N` = 2,000,
//! 20,000 and 200,000 (or the sizes given as arguments), so that the device's work is nothing
//! and every millisecond is tracing, kernel generation and loading.
//!
//! For each chain the table gives the first call's time split as [`ChainStats`] counts it
//! (trace: running the closures on handles; lookup: the kernel caches, keys included;
//! generate: graph -> kernel IR; load: the IR's cache key, validation and, on a GPU, PTX and
//! the driver's compiler; run: the rest, launches and copies; PTX: writing the new kernels'
//! PTX for sm_90, timed apart on any backend, since it is the GPU's share of loading) and
//! for a repeated call of the same chain the median time, the part of it spent running the
//! closures (replaying their traces), and how many traces, replays and generated kernels the
//! repeats cost. Every result is checked, bit for bit, against the same operations in plain
//! Rust. On the emulator, `run` is mostly the emulator's own work per launch (it validates
//! the kernel and clears a register file sized to it), which is what a repeated call is
//! left with.
//!
//! ```text
//! cargo run --release -p cuprum-iter --example trace_scaling [-- N...] [--budget SECONDS]
//! ```
//!
//! A size whose first call would take longer than the budget (60 s; estimated from the
//! previous size as if the cost were quadratic) is skipped.

use std::time::{Duration, Instant};

use clap::Parser;
use cuprum_iter::ChainStats;
use cuprum_iter::prelude::*;
use cuprum_testkit::timing::median;

/// Repeated calls timed per size (the median is reported).
const REPEATS: usize = 5;

/// The `i`-th operation of a chain: four kinds in turn. With `distinct`, each operation
/// adds a host value of its own (so the kernel has one parameter per operation); without,
/// the chain uses four host values in all.
fn step_host(y: f32, i: usize, distinct: bool) -> f32 {
    match i % 4 {
        0 => y * 1.000_1,
        1 if distinct => y + i as f32 * 1e-7,
        1 => y + 0.5,
        2 => y.min(1e6),
        _ => y - 0.25,
    }
}

fn step_traced(y: Expr<f32>, i: usize, distinct: bool) -> Expr<f32> {
    match i % 4 {
        0 => y * 1.000_1,
        1 if distinct => y + i as f32 * 1e-7,
        1 => y + 0.5,
        2 => y.min(1e6),
        _ => y - 0.25,
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Scenario {
    /// `collect`, four host values.
    Collect,
    /// `collect`, a host value per operation.
    CollectDistinct,
    /// `sum`, four host values.
    Sum,
}

impl Scenario {
    fn name(self) -> &'static str {
        match self {
            Scenario::Collect => "collect, 4 host values",
            Scenario::CollectDistinct => "collect, 1 host value per 4 ops",
            Scenario::Sum => "sum, 4 host values",
        }
    }

    fn distinct(self) -> bool {
        self == Scenario::CollectDistinct
    }
}

/// Runs the chain of `n` operations once on `v` and checks the result against `want`.
fn run(device: &GpuDevice, v: &GpuVec<f32>, n: usize, s: Scenario, want: f32) -> GpuResult<()> {
    let distinct = s.distinct();
    let chain = (v).map(move |x| {
        let mut y = x;
        for i in 0..n {
            y = step_traced(y, i, distinct);
        }
        y
    });
    let got = match s {
        Scenario::Sum => chain.sum()?,
        _ => {
            let out = chain.collect(device)?;
            *out.first().unwrap_or(&f32::NAN)
        }
    };
    if got.to_bits() != want.to_bits() {
        eprintln!(
            "FAILED: {} with {n} operations: got {got}, want {want}",
            s.name()
        );
        std::process::exit(1);
    }
    Ok(())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn delta(after: ChainStats, before: ChainStats) -> ChainStats {
    ChainStats {
        traces: after.traces - before.traces,
        replays: after.replays - before.replays,
        kernels_reused: after.kernels_reused - before.kernels_reused,
        kernels_generated: after.kernels_generated - before.kernels_generated,
        kernels_loaded: after.kernels_loaded - before.kernels_loaded,
        trace_time: after.trace_time - before.trace_time,
        lookup_time: after.lookup_time - before.lookup_time,
        generate_time: after.generate_time - before.generate_time,
        load_time: after.load_time - before.load_time,
    }
}

/// How the host cost of an iterator chain grows with the operations its closure traces.
#[derive(Parser)]
struct Args {
    /// Operations per chain, one table row each (`20_000` and `20,000` read as 20000).
    #[arg(value_name = "N", value_parser = operations)]
    sizes: Vec<usize>,
    /// Skip a size whose first call is estimated to take longer than this many seconds.
    #[arg(long, default_value_t = 60.0)]
    budget: f64,
}

/// A number of operations, with `_` or `,` between its digits allowed.
fn operations(text: &str) -> Result<usize, String> {
    text.replace(['_', ','], "")
        .parse()
        .map_err(|e| format!("{text:?}: {e}"))
}

fn main() -> GpuResult<()> {
    let Args { mut sizes, budget } = Args::parse();
    if sizes.is_empty() {
        sizes = vec![2_000, 20_000, 200_000];
    }
    let device = GpuDevice::default()?;
    println!("device: {}", device.context().backend());
    let x = 0.75f32;
    let v = device.upload(&[x])?;
    for s in [Scenario::Collect, Scenario::CollectDistinct, Scenario::Sum] {
        println!("\n{} (one-element input; times in ms)", s.name());
        println!(
            "| ops | trace | lookup | generate | load | run | first call | PTX | repeat: trace | repeat | per op, repeat | repeats: traces, replays, kernels |"
        );
        println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|");
        let mut last: Option<(usize, f64)> = None;
        for &n in &sizes {
            if let Some((m, secs)) = last {
                let estimate = secs * (n as f64 / m as f64).powi(2);
                if estimate > budget {
                    println!(
                        "| {n} | skipped: about {estimate:.0} s if quadratic | | | | | | | | |"
                    );
                    continue;
                }
            }
            let want = (0..n).fold(x, |y, i| step_host(y, i, s.distinct()));
            let mut known = device.compiled_modules();
            let before = device.chain_stats();
            let start = Instant::now();
            if let Err(e) = run(&device, &v, n, s, want) {
                // A kernel with tens of thousands of parameters is over a GPU's limit.
                println!("| {n} | failed: {e} | | | | | | | | | | |");
                continue;
            }
            let first = start.elapsed();
            let d = delta(device.chain_stats(), before);
            // The PTX writer's share of a GPU load (on any backend: it needs no GPU).
            let new_modules: Vec<_> = device
                .compiled_modules()
                .into_iter()
                .filter(|m| !known.iter().any(|k| std::sync::Arc::ptr_eq(k, m)))
                .collect();
            let ptx_start = Instant::now();
            for m in &new_modules {
                if let Err(e) = cuprum_ptx::write_module(m, cuprum_ptx::Target::Sm90) {
                    eprintln!("FAILED: PTX of {}: {e}", s.name());
                    std::process::exit(1);
                }
            }
            let ptx = ptx_start.elapsed();
            known.extend(new_modules);
            let accounted = d.trace_time + d.lookup_time + d.generate_time + d.load_time;
            let rest = first.saturating_sub(accounted);

            let before = device.chain_stats();
            let mut repeats = Vec::with_capacity(REPEATS);
            let mut replays = Vec::with_capacity(REPEATS);
            for _ in 0..REPEATS {
                let stats = device.chain_stats();
                let start = Instant::now();
                run(&device, &v, n, s, want)?;
                repeats.push(start.elapsed());
                replays.push(device.chain_stats().trace_time - stats.trace_time);
            }
            let r = delta(device.chain_stats(), before);
            let (repeat, replay) = (median(repeats), median(replays));
            let (repeat, replay) = (repeat.expect("repeats"), replay.expect("repeats"));
            println!(
                "| {n} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.2} | {:.2} | {:.0} ns | {}, {}, {} |",
                ms(d.trace_time),
                ms(d.lookup_time),
                ms(d.generate_time),
                ms(d.load_time),
                ms(rest),
                ms(first),
                ms(ptx),
                ms(replay),
                ms(repeat),
                repeat.as_secs_f64() * 1e9 / n as f64,
                r.traces,
                r.replays,
                r.kernels_generated,
            );
            last = Some((n, first.as_secs_f64()));
        }
    }
    Ok(())
}
