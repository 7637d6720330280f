//! Why cubins from the driver's linker ran slower than the JIT's, measured: loads a module
//! through each way the CUDA driver can compile it and prints, per way, the registers per
//! thread (and local memory) the driver gave its kernels and the median time of `--reps`
//! launches (CUDA events, after warm-up) of the timed kernels on a `--size`^3 product.
//!
//! ```sh
//! cargo run --release -p cuprum --example cache_speed -- [--module sgemm|simt] [--size N] [--reps R]
//! ```
//!
//! `--module sgemm` (the default) is the two SGEMM kernels of the `sgemm` example, both timed.
//! `--module simt` is `bench_simt`'s module (its four kernels, `hgemm_mma` timed), whose
//! `hgemm_mma` spilled when capped at the JIT's registers: the ways then also compile
//! `hgemm_mma` alone (as the cache's capped link compiles each kernel) through the JIT, the
//! linker at the JIT's register count and the next two allocation units above it, and the
//! linker told to fit the JIT's blocks per SM, each row with `hgemm_mma`'s registers, local
//! memory and blocks per SM (the cache's occupancy arithmetic), so one run shows what each
//! cap costs. Then two child processes load the module
//! through the compile cache, on an empty cache folder and again on what the first left
//! (`CUDA_CACHE_DISABLE=1`, `CUPRUM_CACHE_STATS=1`, so their cache lines are printed), and time
//! `hgemm_mma` from what they loaded; the last lines compare it with the JIT's and say whether
//! the second process was a disk hit (`RESULT: ...`).
//!
//! The ways (see `cuprum_runtime::cache::ModuleRoute`):
//! * `jit`: `cuModuleLoadDataEx` of the PTX, whole-program compilation (the default load);
//! * `link`: the driver's linker with no options, which compiles its input as relocatable
//!   code: what the compile cache kept before;
//! * `link-O4-ctx`: the same with `CU_JIT_OPTIMIZATION_LEVEL=4` and
//!   `CU_JIT_TARGET_FROM_CUCONTEXT` spelled out (both documented defaults; sgemm only);
//! * `link-pic0`: with `CU_JIT_POSITION_INDEPENDENT_CODE=0` (documented as ignored; sgemm
//!   only);
//! * `link-lto`: with `CU_JIT_LTO=1` (documented as for LTO-IR only; the driver may refuse;
//!   sgemm only);
//! * `link-capped`: what a compile-cache miss keeps: the JIT first, then the linker with one
//!   input per kernel, each capped at the JIT's register count (`CU_JIT_MAX_REGISTERS` +
//!   `CU_JIT_OVERRIDE_DIRECTIVE_VALUES`), a kernel that spills there at the lowest higher cap
//!   that keeps its blocks per SM; refused (with the reason) when the cache would keep none;
//! * `alone: jit` (simt only): `hgemm_mma` alone through the JIT (the same registers as in
//!   the module, or the rows below compare against the wrong count);
//! * `alone: cap-<r>` (simt only): `hgemm_mma` alone through the linker capped at `r`;
//! * `alone: min-blocks-<b>` (simt only): `hgemm_mma` alone through the linker told to fit
//!   `b` of its 128-thread blocks per SM (`CU_JIT_MIN_CTA_PER_SM` + `CU_JIT_MAX_THREADS_PER_
//!   BLOCK`; `b` is what the JIT's registers give it) instead of a register cap.
//!
//! Every way's result is checked against the CPU on a small product first. With `$OUT` set,
//! the PTX and every cubin are written there (`cuobjdump -sass` compares them with
//! `ptxas -arch=sm_90` and `ptxas -arch=sm_90 -c`). Without a GPU it says so and exits 0.

use std::process::{Command, ExitCode, Stdio};
use std::sync::Arc;

use clap::{Parser, ValueEnum};
use cuprum::half::bf16;
use cuprum::{BackendKind, CudaContext, DeviceBuffer, LaunchConfig, Stream};
use cuprum_runtime::cache::occupancy::{SmLimits, blocks_per_sm};
use cuprum_runtime::cache::{self, LinkOption, ModuleRoute};
use cuprum_runtime::{KernelArg, LoadedModule};

#[path = "common/cli.rs"]
mod cli;
#[path = "common/timing.rs"]
mod timing;
use timing::median_ms;

#[path = "common/sgemm_kernels.rs"]
mod sgemm_kernels;
#[path = "common/simt_kernels.rs"]
mod simt_kernels;
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
            grid_dim: (n.div_ceil(32), n.div_ceil(32), 1),
            block_dim: (32, 32, 1),
            shared_mem_bytes: 0,
        },
        _ => LaunchConfig {
            grid_dim: (n.div_ceil(64), n.div_ceil(64), 1),
            block_dim: (16, 16, 1),
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

/// The module to compare the ways on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Which {
    /// The SGEMM examples' two kernels, both timed.
    Sgemm,
    /// `bench_simt`'s module, `hgemm_mma` timed, and two processes through the compile cache.
    Simt,
}

/// Times a module's kernels through each way the driver can compile them.
#[derive(Parser)]
struct Args {
    /// The module.
    #[arg(long, value_enum, default_value_t = Which::Sgemm)]
    module: Which,
    /// The order of the square matrices of the timed product (default 4096; 256 with
    /// `CUPRUM_EXAMPLE_SIZE=small`, the sanitizer's runs); a multiple of 64 for `simt`.
    #[arg(long, value_parser = cli::positive)]
    size: Option<usize>,
    /// Timed launches per way and kernel, the median printed (default 20; 3 when small).
    #[arg(long, value_parser = cli::positive)]
    reps: Option<usize>,
}

/// Set in the child processes of `--module simt` (the parent runs this program again).
const ROLE_ENV: &str = "CUPRUM_CACHE_SPEED_ROLE";

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
    if args.module == Which::Simt && n % 64 != 0 {
        return Err(format!("--size {n}: hgemm_mma needs a multiple of 64").into());
    }
    if std::env::var_os(ROLE_ENV).is_some() {
        return simt_child(n, reps);
    }
    let ctx = match CudaContext::new(0) {
        Ok(ctx) if ctx.backend() == BackendKind::Cuda => ctx,
        Ok(emu) => {
            // The launches and the check still run, so the probe itself stays tested.
            match args.module {
                Which::Sgemm => {
                    let module = LoadedModule::load(&emu, kernels::ir()?)?;
                    check(&module, &emu.default_stream())?;
                }
                Which::Simt => {
                    let module = LoadedModule::load(&emu, simt_kernels::kernels::ir()?)?;
                    check_hgemm(&module, &emu.default_stream())?;
                }
            }
            println!(
                "no GPU: the emulator runs the IR and compiles no cubin; nothing to compare \
                 (the timed kernels checked on the emulator)"
            );
            return Ok(());
        }
        Err(e) => {
            println!("no GPU: {e}");
            return Ok(());
        }
    };
    match args.module {
        Which::Sgemm => run_sgemm(&ctx, n, reps),
        Which::Simt => run_simt(&ctx, n, reps),
    }
}

fn run_sgemm(ctx: &CudaContext, n: usize, reps: usize) -> Result<(), Box<dyn std::error::Error>> {
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
        let (module, cubin) = match LoadedModule::load_routed(ctx, ir.clone(), &route) {
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

/// `hgemm_mma`'s block: 4 warps.
const HGEMM_THREADS: u32 = 128;

/// The bf16 operands of an n x n x n product, packed two per u32 word along k: A (n x k)
/// and B transposed (n x k). Small multiples of 1/8, so every product and partial sum is
/// exact in f32 and the result does not depend on the order of the additions.
fn hgemm_operands(n: usize) -> (Vec<bf16>, Vec<bf16>) {
    let value =
        |i: usize, p: usize, s: usize| bf16::from_f32(((i * s + p * 3) % 17) as f32 / 8.0 - 1.0);
    let a = (0..n * n).map(|e| value(e / n, e % n, 7)).collect();
    let bt = (0..n * n).map(|e| value(e / n, e % n, 5)).collect();
    (a, bt)
}

fn pack(v: &[bf16]) -> Vec<u32> {
    v.chunks_exact(2)
        .map(|p| u32::from(p[0].to_bits()) | u32::from(p[1].to_bits()) << 16)
        .collect()
}

/// Launches `hgemm_mma` (kernel `index` of `module`) once on n x n x n.
fn launch_hgemm(
    module: &LoadedModule,
    stream: &Stream,
    index: usize,
    n: u32,
    (a, bt, c): (
        &DeviceBuffer<u32>,
        &DeviceBuffer<u32>,
        &mut DeviceBuffer<f32>,
    ),
) -> cuprum::Result<()> {
    let config = LaunchConfig {
        grid_dim: (n / 64, n / 64, 1),
        block_dim: (HGEMM_THREADS, 1, 1),
        shared_mem_bytes: 0,
    };
    let args = [
        KernelArg::slice(a),
        KernelArg::slice(bt),
        KernelArg::slice_mut(c),
        KernelArg::scalar(n),
        KernelArg::scalar(n),
    ];
    // SAFETY: a and bt hold n x n bf16 (n*n/2 words), c n*n elements; each lane writes its
    // own elements of its warp's 32x32 tile, the tiles disjoint and covering c (n a multiple
    // of 64), with the 128-thread blocks the kernel declares.
    unsafe { module.launch(stream, index, &config, &args) }
}

/// The three device buffers of an n x n x n `hgemm_mma`, and the host operands.
type HgemmData = (
    DeviceBuffer<u32>,
    DeviceBuffer<u32>,
    DeviceBuffer<f32>,
    Vec<bf16>,
    Vec<bf16>,
);

fn hgemm_data(stream: &Stream, n: usize) -> cuprum::Result<HgemmData> {
    let (ha, hbt) = hgemm_operands(n);
    let a = DeviceBuffer::from_host(stream, &pack(&ha))?;
    let bt = DeviceBuffer::from_host(stream, &pack(&hbt))?;
    let c = DeviceBuffer::from_host(stream, &vec![f32::NAN; n * n])?;
    Ok((a, bt, c, ha, hbt))
}

/// Checks `hgemm_mma` of `module` against the CPU on a 128^3 product (exact).
fn check_hgemm(module: &LoadedModule, stream: &Stream) -> Result<(), Box<dyn std::error::Error>> {
    let n = 128usize;
    let (a, bt, mut c, ha, hbt) = hgemm_data(stream, n)?;
    let index = module.kernel_index("hgemm_mma")?;
    launch_hgemm(module, stream, index, n as u32, (&a, &bt, &mut c))?;
    let hc = c.to_host_vec(stream)?;
    for i in 0..n {
        for j in 0..n {
            let want: f32 = (0..n)
                .map(|p| ha[i * n + p].to_f32() * hbt[j * n + p].to_f32())
                .sum();
            let got = hc[i * n + j];
            if got != want {
                return Err(format!("hgemm_mma: C[{i}][{j}] = {got}, expected {want}").into());
            }
        }
    }
    Ok(())
}

/// The ways for `--module simt`, each with whether it compiles `hgemm_mma` alone: the whole
/// module through the JIT, the plain linker and the cache's capped link; then `hgemm_mma`
/// alone (as the cache's capped link compiles each kernel) through the JIT, the linker capped
/// at the JIT's register count `jit` and the next two allocation units above it, and the
/// linker told to fit `blocks` of its blocks per SM.
fn simt_routes(jit: u32, step: u32, blocks: u32) -> Vec<(String, ModuleRoute, bool)> {
    let link = |options: Vec<LinkOption>| ModuleRoute::Link {
        link: Vec::new(),
        input: options,
    };
    let mut ways = vec![
        ("jit".to_owned(), ModuleRoute::Jit, false),
        ("link".to_owned(), link(Vec::new()), false),
        ("link-capped".to_owned(), ModuleRoute::LinkCapped, false),
        ("alone: jit".to_owned(), ModuleRoute::Jit, true),
    ];
    let mut cap = jit;
    for _ in 0..3 {
        ways.push((
            format!("alone: cap-{cap}"),
            link(vec![
                LinkOption::MaxRegisters(cap),
                LinkOption::OverrideDirectiveValues,
            ]),
            true,
        ));
        cap = (cap / step + 1) * step;
    }
    if blocks > 0 {
        ways.push((
            format!("alone: min-blocks-{blocks}"),
            link(vec![
                LinkOption::MinBlocksPerSm(blocks),
                LinkOption::MaxThreadsPerBlock(HGEMM_THREADS),
                LinkOption::OverrideDirectiveValues,
            ]),
            true,
        ));
    }
    ways
}

fn run_simt(ctx: &CudaContext, n: usize, reps: usize) -> Result<(), Box<dyn std::error::Error>> {
    let limits = ctx.limits();
    let sm = SmLimits::of(limits).ok_or("the driver did not report the SM's limits")?;
    println!(
        "{} (compute capability {}.{}), bench_simt's module, hgemm_mma on {n}x{n}x{n} bf16, \
         median of {reps} launches",
        limits.name, limits.compute_capability.0, limits.compute_capability.1
    );
    let ir: Arc<cuprum::ir::Module> = simt_kernels::kernels::ir()?;
    let alone = Arc::new(cuprum::ir::Module {
        kernels: ir
            .kernels
            .iter()
            .filter(|k| k.name == "hgemm_mma")
            .cloned()
            .collect(),
    });
    let stream = ctx.default_stream();
    let (a, bt, mut c, _, _) = hgemm_data(&stream, n)?;
    let n32 = u32::try_from(n)?;
    // What the JIT gives hgemm_mma decides the caps worth showing.
    let jit = LoadedModule::load_routed(ctx, ir.clone(), &ModuleRoute::Jit)?.0;
    let jit_use = jit
        .resources(jit.kernel_index("hgemm_mma")?)
        .ok_or("the driver did not say what the JIT gave hgemm_mma")?;
    drop(jit);
    let blocks = |regs: u32| blocks_per_sm(&sm, regs, HGEMM_THREADS);
    println!(
        "{:<24} {:>9} {:>6} {:>8} {:>10} {:>10}  other kernels (registers/local bytes)",
        "way", "load ms", "regs", "local B", "blocks/SM", "hgemm ms"
    );
    let mut jit_ms = None;
    let routes = simt_routes(
        jit_use.registers,
        sm.register_step(),
        blocks(jit_use.registers),
    );
    for (name, route, hgemm_alone) in routes {
        let module_ir = if hgemm_alone { &alone } else { &ir };
        let start = std::time::Instant::now();
        let (module, cubin) = match LoadedModule::load_routed(ctx, module_ir.clone(), &route) {
            Ok(loaded) => loaded,
            Err(e) => {
                println!("{name:<24} refused: {}", e.to_string().replace('\n', " "));
                continue;
            }
        };
        let load_ms = start.elapsed().as_secs_f64() * 1e3;
        if let Some(ptx) = module.ptx().filter(|_| name == "jit") {
            save("bench_simt.ptx", ptx.as_bytes())?;
        }
        if let Some(cubin) = &cubin {
            let file = name.replace(": ", "-");
            save(&format!("bench_simt-{file}.cubin"), cubin)?;
        }
        check_hgemm(&module, &stream).map_err(|e| format!("{name}: wrong result: {e}"))?;
        let index = module.kernel_index("hgemm_mma")?;
        let used = module.resources(index).ok_or("the driver did not say")?;
        let ms = median_ms(&stream, 3, reps, || {
            launch_hgemm(&module, &stream, index, n32, (&a, &bt, &mut c))
        })?;
        if name == "jit" {
            jit_ms = Some(ms);
        }
        let others: Vec<String> = module_ir
            .kernels
            .iter()
            .enumerate()
            .filter(|&(i, _)| i != index)
            .map(|(i, k)| match module.resources(i) {
                Some(u) => format!("{} {}/{}", k.name, u.registers, u.local_bytes),
                None => format!("{} ?", k.name),
            })
            .collect();
        println!(
            "{name:<24} {load_ms:>9.1} {:>6} {:>8} {:>10} {ms:>10.3}  {}",
            used.registers,
            used.local_bytes,
            blocks(used.registers),
            if others.is_empty() {
                "-".to_owned()
            } else {
                others.join(", ")
            }
        );
    }
    let jit_ms = jit_ms.ok_or("the JIT's way did not run")?;
    simt_processes(n, reps, jit_ms)
}

/// One child's report: its load time, cache counters and hgemm_mma's median.
struct ChildReport {
    load_ms: f64,
    hgemm_ms: f64,
    stats: cache::CacheStats,
}

/// Runs this program as a child on the cache folder `dir`; its `CHILD` line.
fn spawn_child(
    dir: &std::path::Path,
    n: usize,
    reps: usize,
) -> Result<ChildReport, Box<dyn std::error::Error>> {
    let out = Command::new(std::env::current_exe()?)
        .args([
            "--module",
            "simt",
            "--size",
            &n.to_string(),
            "--reps",
            &reps.to_string(),
        ])
        .env(ROLE_ENV, "child")
        .env(cache::CACHE_ENV, "on")
        .env(cache::CACHE_DIR_ENV, dir)
        .env(cache::CACHE_STATS_ENV, "1")
        .env("CUDA_CACHE_DISABLE", "1")
        .stderr(Stdio::inherit())
        .output()?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!("a child failed ({}):\n{stdout}", out.status).into());
    }
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("CHILD "))
        .ok_or_else(|| format!("a child printed no CHILD line:\n{stdout}"))?;
    let field = |name: &str| -> Result<f64, String> {
        line.split_whitespace()
            .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| format!("no {name} in the child's line {line:?}"))
    };
    let count = |name: &str| field(name).map(|v| v as u64);
    Ok(ChildReport {
        load_ms: field("load_ms")?,
        hgemm_ms: field("hgemm_ms")?,
        stats: cache::CacheStats {
            compiles: count("compiles")?,
            disk_hits: count("disk_hits")?,
            disk_writes: count("disk_writes")?,
            raised_caps: count("raised_caps")?,
            not_cached: count("not_cached")?,
            skipped_links: count("skipped_links")?,
            ..cache::CacheStats::default()
        },
    })
}

/// In a child: loads bench_simt's module through the compile cache (as `bench_simt` does),
/// checks and times hgemm_mma, prints one `CHILD` line.
fn simt_child(n: usize, reps: usize) -> Result<(), Box<dyn std::error::Error>> {
    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let (a, bt, mut c, _, _) = hgemm_data(&stream, n)?;
    let before = cache::stats();
    let start = std::time::Instant::now();
    let module = LoadedModule::load(&ctx, simt_kernels::kernels::ir()?)?;
    let load_ms = start.elapsed().as_secs_f64() * 1e3;
    let after = cache::stats();
    check_hgemm(&module, &stream)?;
    let index = module.kernel_index("hgemm_mma")?;
    let n32 = u32::try_from(n)?;
    let hgemm_ms = median_ms(&stream, 3, reps, || {
        launch_hgemm(&module, &stream, index, n32, (&a, &bt, &mut c))
    })?;
    println!(
        "CHILD load_ms={load_ms:.3} hgemm_ms={hgemm_ms:.4} compiles={} disk_hits={} \
         disk_writes={} raised_caps={} not_cached={} skipped_links={}",
        after.compiles - before.compiles,
        after.disk_hits - before.disk_hits,
        after.disk_writes - before.disk_writes,
        after.raised_caps - before.raised_caps,
        after.not_cached - before.not_cached,
        after.skipped_links - before.skipped_links,
    );
    Ok(())
}

/// Two processes through the compile cache on a fresh folder; prints what each did and the
/// verdict.
fn simt_processes(n: usize, reps: usize, jit_ms: f64) -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join(format!("cuprum-cache-speed-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    println!(
        "\ntwo processes through the compile cache in {} (CUDA_CACHE_DISABLE=1; their cache \
         lines on stderr):",
        dir.display()
    );
    let first = spawn_child(&dir, n, reps);
    let second = first.as_ref().ok().map(|_| spawn_child(&dir, n, reps));
    let _ = std::fs::remove_dir_all(&dir);
    let (first, second) = (first?, second.ok_or("no second process")??);
    for (label, r) in [
        ("first (empty cache)", &first),
        ("second (same cache)", &second),
    ] {
        let s = &r.stats;
        println!(
            "  {label}: load {:.1} ms: compiled {}, disk hits {}, entries written {}, kept with \
             a raised cap {}, not cached {} (link skipped {}); hgemm_mma {:.4} ms",
            r.load_ms,
            s.compiles,
            s.disk_hits,
            s.disk_writes,
            s.raised_caps,
            s.not_cached,
            s.skipped_links,
            r.hgemm_ms
        );
    }
    let hit = second.stats.disk_hits > 0 && second.stats.compiles == 0;
    println!(
        "hgemm_mma median of {reps} launches: JIT {jit_ms:.4} ms, second process {:.4} ms \
         ({}), second / JIT = {:.3}",
        second.hgemm_ms,
        if hit {
            "from the cached cubin"
        } else {
            "from the JIT"
        },
        second.hgemm_ms / jit_ms
    );
    if hit {
        println!(
            "RESULT: bench_simt's module was a disk hit in the second process (nothing compiled)"
        );
    } else {
        println!(
            "RESULT: bench_simt's module was NOT a disk hit in the second process (it compiled; \
             the cache lines above say why)"
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
