//! Why cubins from the driver's linker ran slower than the JIT's, measured: loads the two SGEMM
//! kernels of the `sgemm` example (same source) through each way the CUDA driver can compile
//! them, and prints, per way and kernel, the registers per thread the driver allocated and
//! the median time of `--reps` launches (CUDA events, after warm-up) on a `--size`^3 product.
//!
//! ```sh
//! cargo run --release -p cuprum --example cache_speed -- [--size 4096] [--reps 20]
//! ```
//!
//! The ways (see `cuprum_runtime::cache::ModuleRoute`):
//! * `jit`: `cuModuleLoadDataEx` of the PTX, whole-program compilation (the default load);
//! * `link`: the driver's linker with no options, which compiles its input as relocatable
//!   code: what the compile cache kept before;
//! * `link-O4-ctx`: the same with `CU_JIT_OPTIMIZATION_LEVEL=4` and
//!   `CU_JIT_TARGET_FROM_CUCONTEXT` spelled out (both documented defaults);
//! * `link-pic0`: with `CU_JIT_POSITION_INDEPENDENT_CODE=0` (documented as ignored);
//! * `link-lto`: with `CU_JIT_LTO=1` (documented as for LTO-IR only; the driver may refuse);
//! * `link-capped`: what a compile-cache miss keeps now: the JIT first, then the linker with
//!   one input per kernel, each capped at the JIT's register count
//!   (`CU_JIT_MAX_REGISTERS` + `CU_JIT_OVERRIDE_DIRECTIVE_VALUES`).
//!
//! Every way's result is checked against the CPU on a small product first. With `$OUT` set,
//! the PTX and every cubin are written there (`cuobjdump -sass` compares them with
//! `ptxas -arch=sm_90` and `ptxas -arch=sm_90 -c`). Without a GPU it says so and exits 0.

use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use cuprum::{BackendKind, CudaContext, DeviceBuffer, LaunchConfig, Stream};
use cuprum_runtime::cache::{LinkOption, ModuleRoute};
use cuprum_runtime::{KernelArg, LoadedModule};

#[path = "common/cli.rs"]
mod cli;
#[path = "common/timing.rs"]
mod timing;
use timing::median_ms;

#[path = "common/sgemm_kernels.rs"]
mod sgemm_kernels;
#[path = "common/size.rs"]
mod size;
use sgemm_kernels::kernels;

/// The ways to compile, by name.
fn routes() -> Vec<(&'static str, ModuleRoute)> {
    let link = |link: Vec<LinkOption>| ModuleRoute::Link {
        link,
        input: Vec::new(),
    };
    vec![
        ("jit", ModuleRoute::Jit),
        ("link", link(Vec::new())),
        (
            "link-O4-ctx",
            link(vec![
                LinkOption::OptimizationLevel(4),
                LinkOption::TargetFromContext,
            ]),
        ),
        (
            "link-pic0",
            link(vec![LinkOption::PositionIndependentCode(false)]),
        ),
        ("link-lto", link(vec![LinkOption::Lto])),
        ("link-capped", ModuleRoute::LinkCapped),
    ]
}

/// The kernels, with their launch shapes for an n x n x n product.
const KERNELS: [&str; 2] = ["sgemm_tiled", "sgemm_reg"];

fn config(kernel: &str, n: u32) -> LaunchConfig {
    match kernel {
        "sgemm_tiled" => LaunchConfig {
            grid: (n.div_ceil(32), n.div_ceil(32), 1),
            block: (32, 32, 1),
            shared_mem_bytes: 0,
        },
        _ => LaunchConfig {
            grid: (n.div_ceil(64), n.div_ceil(64), 1),
            block: (16, 16, 1),
            shared_mem_bytes: 0,
        },
    }
}

/// Launches `kernel` of `module` once on n x n matrices.
fn launch(
    module: &LoadedModule,
    stream: &Stream,
    kernel: usize,
    name: &str,
    n: u32,
    (a, b, c): (
        &DeviceBuffer<f32>,
        &DeviceBuffer<f32>,
        &mut DeviceBuffer<f32>,
    ),
) -> cuprum::Result<()> {
    let args = [
        KernelArg::slice(a),
        KernelArg::slice(b),
        KernelArg::slice_mut(c),
        KernelArg::scalar(n),
        KernelArg::scalar(n),
        KernelArg::scalar(n),
    ];
    // SAFETY: a, b and c hold n*n elements; both kernels write only C's elements inside
    // n x n, each from one thread, with the block shapes `config` gives.
    unsafe { module.launch(stream, kernel, &config(name, n), &args) }
}

/// Checks both kernels of `module` against the CPU on a 150^3 product (partial tiles).
fn check(module: &LoadedModule, stream: &Stream) -> Result<(), Box<dyn std::error::Error>> {
    let n = 150usize;
    let ha: Vec<f32> = (0..n * n)
        .map(|i| ((i * 7) % 13) as f32 * 0.125 - 0.75)
        .collect();
    let hb: Vec<f32> = (0..n * n)
        .map(|i| ((i * 5) % 11) as f32 * 0.25 - 1.25)
        .collect();
    let a = DeviceBuffer::from_host(stream, &ha)?;
    let b = DeviceBuffer::from_host(stream, &hb)?;
    for name in KERNELS {
        let mut c = DeviceBuffer::from_host(stream, &vec![f32::NAN; n * n])?;
        let index = module.kernel_index(name)?;
        launch(module, stream, index, name, n as u32, (&a, &b, &mut c))?;
        let hc = c.to_host_vec(stream)?;
        for i in 0..n {
            for j in 0..n {
                let want: f64 = (0..n)
                    .map(|p| f64::from(ha[i * n + p]) * f64::from(hb[p * n + j]))
                    .sum();
                let got = f64::from(hc[i * n + j]);
                if got.is_nan() || (got - want).abs() > 1e-3 * (1.0 + want.abs()) {
                    return Err(format!("{name}: C[{i}][{j}] = {got}, expected {want}").into());
                }
            }
        }
    }
    Ok(())
}

/// Writes `bytes` to `$OUT/<name>` when `$OUT` is set.
fn save(name: &str, bytes: &[u8]) -> Result<(), Box<dyn std::error::Error>> {
    if let Some(out) = std::env::var_os("OUT").filter(|o| !o.is_empty()) {
        let dir = std::path::PathBuf::from(out);
        std::fs::create_dir_all(&dir)?;
        let path = dir.join(name);
        std::fs::write(&path, bytes).map_err(|e| format!("writing {}: {e}", path.display()))?;
    }
    Ok(())
}

/// Times the SGEMM kernels through each way the driver can compile them.
#[derive(Parser)]
struct Args {
    /// The order of the square matrices of the timed product (default 4096; 256 with
    /// `CUPRUM_EXAMPLE_SIZE=small`, the sanitizer's runs).
    #[arg(long, value_parser = cli::positive)]
    size: Option<usize>,
    /// Timed launches per way and kernel, the median printed (default 20; 3 when small).
    #[arg(long, value_parser = cli::positive)]
    reps: Option<usize>,
}

fn run(args: &Args) -> Result<(), Box<dyn std::error::Error>> {
    let (default_n, default_reps) = if size::benchmark_sizes(true) {
        (4096, 20)
    } else {
        (256, 3)
    };
    let (n, reps) = (
        args.size.unwrap_or(default_n),
        args.reps.unwrap_or(default_reps),
    );
    let ctx = match CudaContext::new(0) {
        Ok(ctx) if ctx.backend() == BackendKind::Cuda => ctx,
        Ok(emu) => {
            // The launches and the check still run, so the probe itself stays tested.
            let module = LoadedModule::load(&emu, kernels::ir()?)?;
            check(&module, &emu.default_stream())?;
            println!(
                "no GPU: the emulator runs the IR and compiles no cubin; nothing to compare \
                 (both kernels checked on the emulator)"
            );
            return Ok(());
        }
        Err(e) => {
            println!("no GPU: {e}");
            return Ok(());
        }
    };
    let limits = ctx.limits();
    println!(
        "{} (compute capability {}.{}), {n}x{n}x{n} SGEMM, median of {reps} launches",
        limits.name, limits.compute_capability.0, limits.compute_capability.1
    );
    let ir: Arc<cuprum::ir::Module> = kernels::ir()?;
    let stream = ctx.default_stream();
    let elems = n * n;
    let ha: Vec<f32> = (0..elems)
        .map(|i| ((i % 17) as f32) * 0.0625 - 0.5)
        .collect();
    let a = DeviceBuffer::from_host(&stream, &ha)?;
    let b = DeviceBuffer::from_host(&stream, &ha)?;
    let mut c = DeviceBuffer::<f32>::zeroed(&stream, elems)?;
    let n32 = u32::try_from(n)?;
    println!(
        "{:<12} {:>9} {:>12} {:>10} {:>12} {:>10}",
        "way", "load ms", "tiled regs", "tiled ms", "reg regs", "reg ms"
    );
    for (name, route) in routes() {
        let start = std::time::Instant::now();
        let (module, cubin) = match LoadedModule::load_routed(&ctx, ir.clone(), &route) {
            Ok(loaded) => loaded,
            Err(e) => {
                println!(
                    "{name:<12} refused: {}",
                    e.to_string().lines().next().unwrap_or("")
                );
                continue;
            }
        };
        let load_ms = start.elapsed().as_secs_f64() * 1e3;
        if let Some(ptx) = module.ptx().filter(|_| name == "jit") {
            save("sgemm.ptx", ptx.as_bytes())?;
        }
        if let Some(cubin) = &cubin {
            save(&format!("sgemm-{name}.cubin"), cubin)?;
        }
        check(&module, &stream).map_err(|e| format!("{name}: wrong result: {e}"))?;
        let mut cells = Vec::new();
        for kernel in KERNELS {
            let index = module.kernel_index(kernel)?;
            let regs = module
                .registers(index)
                .map_or_else(|| "?".to_owned(), |r| r.to_string());
            let ms = median_ms(&stream, 3, reps, || {
                launch(&module, &stream, index, kernel, n32, (&a, &b, &mut c))
            })?;
            cells.push((regs, ms));
        }
        println!(
            "{name:<12} {load_ms:>9.1} {:>12} {:>10.3} {:>12} {:>10.3}",
            cells[0].0, cells[0].1, cells[1].0, cells[1].1
        );
    }
    Ok(())
}

fn main() -> ExitCode {
    match run(&Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cache_speed: {e}");
            ExitCode::FAILURE
        }
    }
}
