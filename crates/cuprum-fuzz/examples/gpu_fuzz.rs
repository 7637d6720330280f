//! The differential fuzzer on a GPU: thousands of random kernels, each run on the GPU (its
//! PTX through the CUDA driver) and held bit for bit to the host reference, while every CPU
//! core checks the emulator against the same reference (before and after the optimizer).
//!
//! ```sh
//! cargo run --release -p cuprum-fuzz --example gpu_fuzz -- [--count 10000] [--seed 0]
//!     [--per-module 150] [--both] [--shrink 2] [--jit-threads J] [--time-limit 270]
//!     [--stmts 60] [--emu-only]
//! ```
//!
//! Packed by `gpu-pack` as `.gpu/bin/example-gpu_fuzz` (run with no arguments: 10,000
//! kernels). `--emu-only` uses the runtime's emulator as the device, so everything but the
//! GPU itself can be checked anywhere. For every mismatch it prints the seed, the kernel's IR
//! and the first differing elements (the first `--shrink` of them also shrunk to a small
//! program); the last line is `fuzz: N kernels, T threads, M mismatches`, and the exit code is
//! 1 when M > 0, 3 when the time limit stopped it early, 2 without a GPU.

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use cuprum_fuzz::Config;
use cuprum_fuzz::campaign::{self, Options};
use cuprum_runtime::{BackendKind, CudaContext};

/// Differential fuzzing of cuprum's back end on a GPU.
#[derive(Parser, Debug)]
struct Args {
    /// Kernels (seeds) to run.
    #[arg(long, default_value_t = 10_000)]
    count: u64,
    /// The first seed.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Kernels per module (one driver JIT per module).
    #[arg(long, default_value_t = 150)]
    per_module: usize,
    /// Run every seed's kernel both optimized and not on the device (default: alternate).
    #[arg(long)]
    both: bool,
    /// Device mismatches to shrink to a small program.
    #[arg(long, default_value_t = 2)]
    shrink: usize,
    /// Use the runtime's emulator as the device (no GPU needed).
    #[arg(long)]
    emu_only: bool,
    /// Modules the driver compiles at once, on as many threads (default: a quarter of the
    /// cores, at least 1 and at most 8).
    #[arg(long)]
    jit_threads: Option<usize>,
    /// Stop starting new modules after this many seconds (0: never); the run then reports
    /// itself incomplete and exits with 3. The default stays inside gpu-pack's 300 s.
    #[arg(long, default_value_t = 270)]
    time_limit: u64,
    /// Statements per generated kernel, about (the driver's JIT time grows with it).
    #[arg(long)]
    stmts: Option<usize>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let ctx = if args.emu_only {
        CudaContext::emulator()
    } else {
        match CudaContext::new(0) {
            Ok(ctx) if ctx.backend() == BackendKind::Cuda => ctx,
            Ok(_) => {
                eprintln!(
                    "gpu_fuzz: no GPU (CUPRUM_DEVICE chose the emulator); pass --emu-only to \
                     fuzz without one"
                );
                return ExitCode::from(2);
            }
            Err(e) => {
                eprintln!("gpu_fuzz: no GPU: {e}\n(pass --emu-only to fuzz without one)");
                return ExitCode::from(2);
            }
        }
    };
    println!(
        "gpu_fuzz: {} kernels from seed {}, {} per module, device: {}",
        args.count,
        args.seed,
        args.per_module,
        if args.emu_only {
            "the runtime's emulator".to_string()
        } else {
            ctx.limits().name.clone()
        }
    );
    let cores = std::thread::available_parallelism().map_or(4, |n| n.get());
    let opts = Options {
        count: args.count,
        seed: args.seed,
        per_module: args.per_module,
        both: args.both,
        shrink: args.shrink,
        jit_threads: args.jit_threads.unwrap_or((cores / 4).clamp(1, 8)),
        time_limit: (args.time_limit > 0).then(|| Duration::from_secs(args.time_limit)),
        cfg: Config {
            stmts: args.stmts.unwrap_or(Config::gpu().stmts),
            ..Config::gpu()
        },
        ..Options::default()
    };
    let summary = campaign::run(&ctx, &opts, &mut |line| println!("{line}"));
    println!(
        "{} device launches in {} modules, {:.1} s on the device",
        summary.device_launches,
        summary.modules,
        summary.device_time.as_secs_f64()
    );
    println!("{}", summary.line());
    if !summary.mismatches.is_empty() {
        ExitCode::FAILURE
    } else if summary.incomplete {
        ExitCode::from(3)
    } else {
        ExitCode::SUCCESS
    }
}
