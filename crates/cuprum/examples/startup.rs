//! Start-up: what a fresh process pays before its first launch. For each module, a new
//! process of this program gets the module's IR (`kernels::ir()`: read from what `cargo build`
//! compiled) and loads it (`kernels::load`: on a GPU, the compile cache or the driver's JIT);
//! the parent prints the median of several processes, in milliseconds.
//!
//!     cargo run --release -p cuprum --example startup [-- --procs 9]

use std::process::Command;
use std::time::Instant;

use clap::Parser;
use cuprum::simt::{DisjointSlice, kernel, launch_bounds, launch_contract, thread};
use cuprum::{CudaContext, cuda_module};
use cuprum_testkit::timing::median;

#[path = "common/cli.rs"]
mod cli;
#[path = "common/sgemm_kernels.rs"]
mod sgemm_kernels;

#[cuda_module]
mod vecadd {
    use super::*;

    #[kernel]
    #[launch_bounds(256)]
    #[launch_contract(domain = 1, block = (256, 1, 1))]
    pub fn vecadd(a: &[f32], b: &[f32], mut c: DisjointSlice<f32>) {
        let i = thread::index_1d();
        if let Some(out) = c.get_mut(i) {
            *out = a[i.get()] + b[i.get()];
        }
    }
}

/// The modules measured, by name.
const MODULES: [&str; 2] = ["vecadd", "sgemm"];

/// In a child: the module's IR and load times, in ms, as one line `ir_ms load_ms`.
fn child(name: &str) -> Result<(), Box<dyn std::error::Error>> {
    let ctx = CudaContext::new(0)?;
    let start = Instant::now();
    let ir_ms;
    match name {
        "vecadd" => {
            vecadd::ir()?;
            ir_ms = start.elapsed().as_secs_f64() * 1e3;
            vecadd::load(&ctx)?;
        }
        _ => {
            sgemm_kernels::kernels::ir()?;
            ir_ms = start.elapsed().as_secs_f64() * 1e3;
            sgemm_kernels::kernels::load(&ctx)?;
        }
    }
    let total_ms = start.elapsed().as_secs_f64() * 1e3;
    println!("{ir_ms} {total_ms}");
    Ok(())
}

/// What a fresh process pays before its first launch, per module.
#[derive(Parser)]
struct Args {
    /// Processes per module (the median is printed).
    #[arg(long, default_value_t = 9, value_parser = cli::positive)]
    procs: usize,
    /// Be the child process for the module named (the parent runs these).
    #[arg(long, value_name = "MODULE")]
    child: Option<String>,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    if let Some(name) = &args.child {
        return child(name);
    }
    let procs = args.procs;
    let exe = std::env::current_exe()?;
    let backend = CudaContext::new(0)?.backend();
    println!("start-up of a fresh process ({backend:?}), median of {procs} processes");
    println!("| module | IR ready (ms) | IR + load (ms) |");
    println!("|---|---:|---:|");
    for name in MODULES {
        let (mut irs, mut totals) = (Vec::new(), Vec::new());
        for _ in 0..procs {
            let out = Command::new(&exe).args(["--child", name]).output()?;
            if !out.status.success() {
                return Err(format!(
                    "the {name} child failed: {}",
                    String::from_utf8_lossy(&out.stderr)
                )
                .into());
            }
            let text = String::from_utf8_lossy(&out.stdout);
            let mut nums = text.split_whitespace().map(str::parse::<f64>);
            match (nums.next(), nums.next()) {
                (Some(Ok(ir)), Some(Ok(total))) => {
                    irs.push(ir);
                    totals.push(total);
                }
                _ => return Err(format!("the {name} child printed {text:?}").into()),
            }
        }
        println!(
            "| {name} | {:.3} | {:.3} |",
            median(irs).expect("procs"),
            median(totals).expect("procs")
        );
    }
    Ok(())
}
