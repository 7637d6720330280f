//! Start-up: what a fresh process pays before its first launch. For each module, a new
//! process of this program gets the module's IR (`kernels::ir()`: read from what `cargo build`
//! compiled) and loads it (`kernels::load`: on a GPU, the compile cache or the driver's JIT);
//! the parent prints the median of several processes, in milliseconds. Then the same for two
//! tile kernels, `tile_add` and `tile_gemm` (cuTile Rust's `gemm` shape, bf16 with an f32
//! accumulator, 128x256x64 tiles: on an H200 the Hopper recipe): a fresh process's first
//! launch (the embedded tile IR decoded, specialized, lowered, optimized, written as PTX and
//! loaded, then launched on 1024 elements, or on 256x256x256, and waited for), with a cold
//! compile cache (an empty folder, and the driver's own JIT cache off) and with a warm one
//! (the folder the cold process filled), beside the second launch of the same process; each
//! tile row also as a `{"record":"first_launch",..}` line for `benches/report.py`.
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

#[cuprum::tile::module]
mod tile_kernels {
    use cuprum::tile::core::*;

    #[cuprum::tile::entry()]
    fn add<const B: i32>(
        z: &mut Tensor<f32, { [B] }>,
        x: &Tensor<f32, { [-1] }>,
        y: &Tensor<f32, { [-1] }>,
    ) {
        z.store(load_tile_like(x, z) + load_tile_like(y, z));
    }

    #[cuprum::tile::entry()]
    fn gemm<const BM: i32, const BN: i32, const BK: i32>(
        z: &mut Tensor<bf16, { [BM, BN] }>,
        x: &Tensor<bf16, { [-1, -1] }>,
        y: &Tensor<bf16, { [-1, -1] }>,
    ) {
        let part_x = x.partition(const_shape![BM, BK]);
        let part_y = y.partition(const_shape![BK, BN]);
        let pid: (i32, i32, i32) = get_tile_block_id();
        let k: i32 = x.shape()[1];
        let mut acc: Tile<f32, { [BM, BN] }> = constant(0.0f32, const_shape![BM, BN]);
        for i in 0i32..ceil_div(k, BK) {
            acc = mma(part_x.load([pid.0, i]), part_y.load([i, pid.1]), acc);
        }
        let out: Tile<bf16, { [BM, BN] }> = convert_tile(acc);
        z.store(out);
    }
}

/// The tile kernels a child may launch.
const TILE_CASES: [&str; 2] = ["tile_add", "tile_gemm"];

/// In a child: the first and the second launch of tile kernel `name` (one of
/// [`TILE_CASES`]), in ms, as `first_ms second_ms`.
fn tile_child(name: &str) -> Result<(), Box<dyn std::error::Error>> {
    use cuprum::tile::prelude::*;
    let device = Device::new(0)?;
    let stream = device.new_stream()?;
    let (first, second) = if name == "tile_add" {
        let x = api::ones::<f32>(&[1024]).sync_on(&stream)?;
        let y = api::ones::<f32>(&[1024]).sync_on(&stream)?;
        let mut z = api::zeros::<f32>(&[1024]).sync_on(&stream)?;
        let mut launch = || -> Result<f64, Box<dyn std::error::Error>> {
            let start = Instant::now();
            tile_kernels::add((&mut z).partition([128]), &x, &y).sync_on(&stream)?;
            Ok(start.elapsed().as_secs_f64() * 1e3)
        };
        let times = (launch()?, launch()?);
        if z.to_host_vec().sync_on(&stream)? != vec![2.0f32; 1024] {
            return Err("tile_add computed a wrong sum".into());
        }
        times
    } else {
        use half::bf16;
        let n = 256;
        let x = api::ones::<bf16>(&[n, n]).sync_on(&stream)?;
        let y = api::ones::<bf16>(&[n, n]).sync_on(&stream)?;
        let mut z = api::zeros::<bf16>(&[n, n]).sync_on(&stream)?;
        let mut launch = || -> Result<f64, Box<dyn std::error::Error>> {
            let start = Instant::now();
            tile_kernels::gemm((&mut z).partition([128, 256]), &x, &y)
                .generics(["128", "256", "64"])
                .sync_on(&stream)?;
            Ok(start.elapsed().as_secs_f64() * 1e3)
        };
        let times = (launch()?, launch()?);
        if z.to_host_vec().sync_on(&stream)? != vec![bf16::from_f32(n as f32); n * n] {
            return Err("tile_gemm computed a wrong product".into());
        }
        times
    };
    println!("{first} {second}");
    Ok(())
}

/// Runs this program as the child of tile kernel `name` with the compile cache in `dir`; `cold` also turns
/// the driver's JIT cache off. Returns (first launch, second launch) in ms.
fn run_tile_child(
    exe: &std::path::Path,
    name: &str,
    dir: &std::path::Path,
    cold: bool,
) -> Result<(f64, f64), Box<dyn std::error::Error>> {
    let mut cmd = Command::new(exe);
    cmd.args(["--child", name]).env("CUPRUM_CACHE_DIR", dir);
    if cold {
        cmd.env("CUDA_CACHE_DISABLE", "1");
    }
    let out = cmd.output()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut nums = text.split_whitespace().map(str::parse::<f64>);
    match (out.status.success(), nums.next(), nums.next()) {
        (true, Some(Ok(a)), Some(Ok(b))) => Ok((a, b)),
        _ => Err(format!(
            "the {name} child failed: {text} {}",
            String::from_utf8_lossy(&out.stderr)
        )
        .into()),
    }
}

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
        if TILE_CASES.contains(&name.as_str()) {
            return tile_child(name);
        }
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
    let folder = tempfile::tempdir()?;
    println!();
    println!(
        "first launch of a tile kernel in a fresh process (tile_add: 1024 f32; tile_gemm: \
         bf16 256x256x256, tiles 128x256x64), median of {procs}"
    );
    println!("| kernel | cold cache (ms) | warm cache (ms) | second launch (ms) |");
    println!("|---|---:|---:|---:|");
    for name in TILE_CASES {
        let (mut cold, mut warm, mut second) = (Vec::new(), Vec::new(), Vec::new());
        for i in 0..procs {
            let dir = folder.path().join(format!("{name}-cache-{i}"));
            let (first, again) = run_tile_child(&exe, name, &dir, true)?;
            cold.push(first);
            second.push(again);
            warm.push(run_tile_child(&exe, name, &dir, false)?.0);
        }
        let (cold, warm, second) = (
            median(cold).expect("procs"),
            median(warm).expect("procs"),
            median(second).expect("procs"),
        );
        println!("| {name} | {cold:.3} | {warm:.3} | {second:.3} |");
        // For `benches/report.py`'s first-launch section.
        println!(
            "{{\"record\":\"first_launch\",\"case\":\"{name}\",\"cold_ms\":{cold:.3},\
             \"warm_ms\":{warm:.3},\"second_ms\":{second:.3},\"procs\":{procs}}}"
        );
    }
    Ok(())
}
