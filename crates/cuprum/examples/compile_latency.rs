//! Compile and start-up latency of every benchmark case's kernels (issue 5): how long the
//! host takes to turn each case's module into PTX, step by step, and, on a GPU, how long the
//! driver takes to load it: JIT-compiled, from an empty compile cache, and from a warm one.
//!
//! ```sh
//! cargo run --release -p cuprum --example compile_latency -- [--runs 50] [--reps 3] [--procs 3]
//! ```
//!
//! The cases are the `#[cuda_module]`s of the benchmark examples (`bench_vecadd`, `reduce`,
//! `sgemm`, `transpose`, `histogram`, `scan`, `bench_simt`: their source files, or the file
//! in `common/` that holds the module, are embedded with `include_str!` and the module item is
//! taken out of them with `syn`, giving the same text the macro embeds) and the two
//! iterator-track chains `benches/run_all.sh` times (`zip` + `map(+)` + `materialize`, and
//! `sum_on_device`). Host columns, each the median of `--runs` runs:
//! * `front_us`: the front end, source text to IR (`cuprum_front::compile_source`); for the
//!   iterator chains, the first run of the chain on a fresh emulator device minus a second
//!   run (tracing, IR building and validation; their IR is final, so no `opt_us`);
//! * `opt_us`: the optimizer's passes (`cuprum_opt::optimize`);
//! * `ptx_us`: the PTX writer for sm_90 (`cuprum_ptx::write_module`, validation included),
//!   with `ptx_bytes` and `kernels`, summed over the case's modules.
//!
//! GPU columns, measured in child processes (this program run again with
//! `CUPRUM_COMPILE_LATENCY_ROLE` set), all with `CUDA_CACHE_DISABLE=1` so that the driver's own
//! JIT cache neither helps nor explains anything:
//! * `jit_ms`: loading the module straight through the driver's JIT (`ModuleRoute::Jit`,
//!   what `CUPRUM_CACHE=off` does), median of `--reps` loads in one process;
//! * `cold_ms`: the first load in a process whose compile cache folder is empty (a miss: the
//!   JIT, the register-capped link, the store on disk);
//! * `warm_ms`: the same load in the next process, on the folder the first one filled (a disk
//!   hit: nothing compiled); `cold_ms` and `warm_ms` are medians over `--procs` such pairs.
//!
//! Each child first loads a small module of its own, so that the driver's one-time start-up
//! is not charged to the first case; that load and the context creation are printed as a
//! JSON record `{"record":"latency_process","role":"jit|cold|warm","context_ms":..,
//! "first_load_ms":..}`, one per child. A cold load that compiled nothing, or a warm one that
//! compiled, is reported as a `latency_warning` record (the numbers are then not what their
//! column says). Without a GPU the driver columns are `-` (`null` in the records), the program
//! says so and exits 0. The output is a table and one `{"record":"latency","case":..,
//! "kernels":..,"ptx_bytes":..,"front_us":..,"opt_us":..,"ptx_us":..,"jit_ms":..,"cold_ms":..,
//! "warm_ms":..,"names":[..]}` line per case, which `benches/report.py` reads.

use std::collections::HashMap;
use std::process::{Command, ExitCode, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use cuprum::iter::prelude::*;
use cuprum::{BackendKind, CudaContext};
use cuprum_ir::Module;
use cuprum_runtime::LoadedModule;
use cuprum_runtime::cache::{self, ModuleRoute};
use cuprum_testkit::timing::median;

#[path = "common/cli.rs"]
mod cli;
#[path = "common/record.rs"]
mod record;
use record::Record;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

const ROLE_ENV: &str = "CUPRUM_COMPILE_LATENCY_ROLE";

/// The SIMT cases: name, and the example file whose `#[cuda_module]` is the case's module.
const SIMT_CASES: [(&str, &str); 7] = [
    ("vecadd", include_str!("bench_vecadd.rs")),
    ("reduce", include_str!("reduce.rs")),
    ("sgemm", include_str!("common/sgemm_kernels.rs")),
    ("transpose", include_str!("transpose.rs")),
    ("histogram", include_str!("histogram.rs")),
    ("scan", include_str!("scan.rs")),
    ("bench_simt", include_str!("common/simt_kernels.rs")),
];

/// The iterator-track cases, as `iter_bench` times them.
const ITER_CASES: [&str; 2] = ["iter_zip_add", "iter_sum"];

/// What each child loads first, to take the driver's start-up out of the first case.
const WARMUP_SOURCE: &str = "mod warmup { use super::*;
    #[kernel] #[launch_bounds(256)]
    pub fn compile_latency_warmup(a: &[f32], mut c: DisjointSlice<f32>) {
        let i = thread::index_1d();
        if let Some(out) = c.get_mut(i) { *out = a[i.get()] * 2.0; }
    } }";

/// One case: its modules (already optimized) and the host-side measurements.
struct Case {
    name: String,
    modules: Vec<Arc<Module>>,
    kernels: usize,
    names: Vec<String>,
    ptx_bytes: usize,
    front: Option<Duration>,
    opt: Option<Duration>,
    ptx: Option<Duration>,
}

/// The `#[cuda_module]` item of an example file, as the text the macro embeds (the module's
/// tokens without the `#[cuda_module]` attribute itself).
fn module_source(file_text: &str) -> Res<String> {
    let file = syn::parse_file(file_text)?;
    for item in file.items {
        if let syn::Item::Mod(mut m) = item {
            let is_cuda = |a: &syn::Attribute| {
                a.path()
                    .segments
                    .last()
                    .is_some_and(|s| s.ident == "cuda_module")
            };
            if let Some(at) = m.attrs.iter().position(is_cuda) {
                m.attrs.remove(at);
                return Ok(quote::quote!(#m).to_string());
            }
        }
    }
    Err("no #[cuda_module] item in the file".into())
}

/// Source to optimized IR, as the facade does at a module's first load.
fn compile(source: &str) -> Res<(Module, Duration, Duration)> {
    let t = Instant::now();
    let mut ir = cuprum_front::compile_source(source)?.ir;
    let front = t.elapsed();
    let t = Instant::now();
    cuprum_opt::optimize(&mut ir);
    Ok((ir, front, t.elapsed()))
}

/// The PTX of `modules` (sm_90): total bytes and the time to write them all.
fn write_ptx(modules: &[Arc<Module>]) -> Res<(usize, Duration)> {
    let t = Instant::now();
    let mut bytes = 0;
    for m in modules {
        bytes += std::hint::black_box(cuprum_ptx::write_module(m, cuprum_ptx::Target::Sm90)?).len();
    }
    Ok((bytes, t.elapsed()))
}

fn simt_case(name: &str, file_text: &str, runs: usize) -> Res<Case> {
    let source = module_source(file_text).map_err(|e| format!("{name}: {e}"))?;
    let (mut fronts, mut opts) = (Vec::new(), Vec::new());
    let mut ir = None;
    for _ in 0..runs {
        let (m, front, opt) = compile(&source).map_err(|e| format!("{name}: {e}"))?;
        fronts.push(front);
        opts.push(opt);
        ir = Some(m);
    }
    let ir = ir.ok_or("no runs")?;
    finish_case(name, vec![Arc::new(ir)], median(fronts), median(opts), runs)
}

/// Runs one iterator chain on `device` (the case's kernels are compiled on the first run).
fn run_chain(name: &str, device: &GpuDevice, a: &GpuVec<f32>, b: &GpuVec<f32>) -> Res<()> {
    match name {
        "iter_zip_add" => drop(a.zip(b).map(|(x, y)| x + y).materialize(device)?),
        "iter_sum" => drop(a.sum_on_device::<f32>()?),
        _ => return Err(format!("unknown iterator case {name}").into()),
    }
    device.synchronize()?;
    Ok(())
}

fn iter_case(name: &str, runs: usize) -> Res<Case> {
    const N: usize = 4096;
    let x: Vec<f32> = (0..N).map(|i| (i % 64) as f32 * 0.5).collect();
    let mut fronts = Vec::new();
    let mut modules = Vec::new();
    for _ in 0..runs {
        // A fresh device has no kernels cached: its first run traces and builds them.
        let device = GpuDevice::from_context(CudaContext::emulator());
        let (a, b) = (device.upload(&x)?, device.upload(&x)?);
        let t = Instant::now();
        run_chain(name, &device, &a, &b)?;
        let first = t.elapsed();
        let t = Instant::now();
        run_chain(name, &device, &a, &b)?;
        fronts.push(first.saturating_sub(t.elapsed()));
        modules = device.compiled_modules();
    }
    // The device's cache is a hash map: a fixed order makes the children agree.
    modules.sort_by_key(|m| cuprum_ir::print_module(m));
    finish_case(name, modules, median(fronts), None, runs)
}

fn finish_case(
    name: &str,
    modules: Vec<Arc<Module>>,
    front: Option<Duration>,
    opt: Option<Duration>,
    runs: usize,
) -> Res<Case> {
    let mut times = Vec::new();
    let mut ptx_bytes = 0;
    for _ in 0..runs {
        let (bytes, time) = write_ptx(&modules).map_err(|e| format!("{name}: {e}"))?;
        ptx_bytes = bytes;
        times.push(time);
    }
    let names: Vec<String> = modules
        .iter()
        .flat_map(|m| m.kernels.iter().map(|k| k.name.clone()))
        .collect();
    Ok(Case {
        name: name.to_owned(),
        kernels: names.len(),
        names,
        modules,
        ptx_bytes,
        front,
        opt,
        ptx: median(times),
    })
}

fn all_cases(runs: usize) -> Res<Vec<Case>> {
    let mut cases = Vec::new();
    for (name, text) in SIMT_CASES {
        cases.push(simt_case(name, text, runs)?);
    }
    for name in ITER_CASES {
        cases.push(iter_case(name, runs)?);
    }
    Ok(cases)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// A child process: loads every case's modules on the GPU and prints one `CHILD` line each.
fn child(role: &str, reps: usize) -> Res<()> {
    let cases = all_cases(1)?;
    let t = Instant::now();
    let ctx = CudaContext::new(0)?;
    let context_ms = ms(t.elapsed());
    if ctx.backend() != BackendKind::Cuda {
        return Err("the child found no GPU".into());
    }
    let (warmup, _, _) = compile(WARMUP_SOURCE)?;
    let warmup = Arc::new(warmup);
    let t = Instant::now();
    match role {
        "jit" => drop(LoadedModule::load_routed(&ctx, warmup, &ModuleRoute::Jit)?),
        _ => drop(LoadedModule::load(&ctx, warmup)?),
    }
    println!(
        "CHILD_START context_ms={context_ms:.3} first_load_ms={:.3}",
        ms(t.elapsed())
    );
    for case in &cases {
        match role {
            "jit" => {
                let mut times = Vec::new();
                for _ in 0..reps {
                    let t = Instant::now();
                    for m in &case.modules {
                        drop(LoadedModule::load_routed(
                            &ctx,
                            m.clone(),
                            &ModuleRoute::Jit,
                        )?);
                    }
                    times.push(t.elapsed());
                }
                let time = median(times).ok_or("no reps")?;
                println!("CHILD case={} ms={:.3}", case.name, ms(time));
            }
            _ => {
                let before = cache::stats();
                let t = Instant::now();
                let mut loaded = Vec::new();
                for m in &case.modules {
                    loaded.push(LoadedModule::load(&ctx, m.clone())?);
                }
                let time = t.elapsed();
                let after = cache::stats();
                println!(
                    "CHILD case={} ms={:.3} compiles={} disk_hits={} memory_hits={} \
                     disk_writes={}",
                    case.name,
                    ms(time),
                    after.compiles - before.compiles,
                    after.disk_hits - before.disk_hits,
                    after.memory_hits - before.memory_hits,
                    after.disk_writes - before.disk_writes
                );
            }
        }
    }
    Ok(())
}

fn field<'a>(line: &'a str, name: &str) -> Option<&'a str> {
    line.split_whitespace()
        .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
}

/// Runs a child with `env`, returning its `CHILD` lines by case and its `CHILD_START` line.
fn spawn(
    role: &str,
    reps: usize,
    env: &[(&str, &std::ffi::OsStr)],
) -> Res<(HashMap<String, String>, String)> {
    let mut cmd = Command::new(std::env::current_exe()?);
    cmd.env(ROLE_ENV, role)
        .env("CUDA_CACHE_DISABLE", "1")
        .arg("--reps")
        .arg(reps.to_string())
        .stderr(Stdio::inherit());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output()?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        return Err(format!("the {role} child failed ({}):\n{stdout}", out.status).into());
    }
    let mut lines = HashMap::new();
    let mut start = String::new();
    for line in stdout.lines() {
        if line.starts_with("CHILD_START") {
            start = line.to_owned();
        } else if let Some(case) = line.strip_prefix("CHILD ").and_then(|l| field(l, "case")) {
            lines.insert(case.to_owned(), line.to_owned());
        }
    }
    Ok((lines, start))
}

/// A child's start-up (context creation, first module load) as a `latency_process` record.
fn process_line(role: &str, start: &str) {
    let number = |name| field(start, name).and_then(|v| v.parse().ok());
    Record::LatencyProcess {
        role,
        context_ms: number("context_ms"),
        first_load_ms: number("first_load_ms"),
    }
    .print();
}

/// The driver columns, by case: (jit ms, cold ms, warm ms).
type Driver = HashMap<String, (Option<f64>, Option<f64>, Option<f64>)>;

fn driver_columns(cases: &[Case], reps: usize, procs: usize) -> Res<Driver> {
    let off = std::ffi::OsStr::new("off");
    let on = std::ffi::OsStr::new("on");
    let (jit, start) = spawn("jit", reps, &[(cache::CACHE_ENV, off)])?;
    process_line("jit", &start);
    let number = |line: Option<&String>, name: &str| {
        line.and_then(|l| field(l, name))
            .and_then(|v| v.parse::<f64>().ok())
    };
    let mut cold: HashMap<&str, Vec<f64>> = HashMap::new();
    let mut warm: HashMap<&str, Vec<f64>> = HashMap::new();
    for pair in 0..procs {
        let dir = std::env::temp_dir().join(format!(
            "cuprum-compile-latency-{}-{pair}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        let env = [
            (cache::CACHE_ENV, on),
            (cache::CACHE_DIR_ENV, dir.as_os_str()),
        ];
        let (first, first_start) = spawn("cache", reps, &env)?;
        let (second, second_start) = spawn("cache", reps, &env)?;
        let _ = std::fs::remove_dir_all(&dir);
        process_line("cold", &first_start);
        process_line("warm", &second_start);
        for case in cases {
            let (c, w) = (first.get(&case.name), second.get(&case.name));
            if number(c, "compiles").is_none_or(|n| n < 1.0) {
                Record::LatencyWarning {
                    case: &case.name,
                    text: &format!("the cold process compiled nothing: {c:?}"),
                }
                .print();
            }
            if number(w, "compiles") != Some(0.0) {
                Record::LatencyWarning {
                    case: &case.name,
                    text: &format!("the warm process compiled (not a disk hit): {w:?}"),
                }
                .print();
            }
            if let Some(v) = number(c, "ms") {
                cold.entry(&case.name).or_default().push(v);
            }
            if let Some(v) = number(w, "ms") {
                warm.entry(&case.name).or_default().push(v);
            }
        }
    }
    let mut columns = Driver::new();
    for case in cases {
        let key = case.name.as_str();
        columns.insert(
            case.name.clone(),
            (
                number(jit.get(key), "ms"),
                cold.remove(key).and_then(median),
                warm.remove(key).and_then(median),
            ),
        );
    }
    Ok(columns)
}

fn us(d: Option<Duration>) -> String {
    d.map_or("-".to_owned(), |d| format!("{:.1}", d.as_secs_f64() * 1e6))
}

fn ms_text(v: Option<f64>) -> String {
    v.map_or("-".to_owned(), |v| format!("{v:.3}"))
}

fn parent(runs: usize, reps: usize, procs: usize) -> Res<()> {
    let cases = all_cases(runs)?;
    let gpu = match CudaContext::new(0) {
        Ok(ctx) => ctx.backend() == BackendKind::Cuda,
        Err(e) => {
            println!("no context: {e}");
            false
        }
    };
    let driver = if gpu {
        driver_columns(&cases, reps, procs)?
    } else {
        Driver::new()
    };

    println!(
        "\nhost: medians of {runs} runs; PTX for sm_90. GPU: jit median of {reps} loads, \
         cold/warm medians of {procs} process pairs; CUDA_CACHE_DISABLE=1\n"
    );
    println!(
        "| case | kernels | PTX bytes | front end µs | optimizer µs | PTX writer µs | JIT load ms \
         | cold process ms | warm process ms |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for case in &cases {
        let (jit, cold, warm) = driver.get(&case.name).copied().unwrap_or_default();
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            case.name,
            case.kernels,
            case.ptx_bytes,
            us(case.front),
            us(case.opt),
            us(case.ptx),
            ms_text(jit),
            ms_text(cold),
            ms_text(warm)
        );
    }
    println!();
    for case in &cases {
        let (jit, cold, warm) = driver.get(&case.name).copied().unwrap_or_default();
        let us = |d: Option<Duration>| d.map(|d| d.as_secs_f64() * 1e6);
        Record::Latency {
            case: &case.name,
            kernels: case.kernels,
            ptx_bytes: case.ptx_bytes,
            front_us: us(case.front),
            opt_us: us(case.opt),
            ptx_us: us(case.ptx),
            jit_ms: jit,
            cold_ms: cold,
            warm_ms: warm,
            names: case.names.iter().map(String::as_str).collect(),
        }
        .print();
    }
    let slow: Vec<String> = cases
        .iter()
        .filter(|c| c.ptx.is_some_and(|t| t > Duration::from_millis(1)))
        .map(|c| format!("{} ({} µs)", c.name, us(c.ptx)))
        .collect();
    if slow.is_empty() {
        println!("PTX writer under 1 ms for every case");
    } else {
        println!("PTX writer over 1 ms: {}", slow.join(", "));
    }
    if !gpu {
        println!("no GPU: driver columns skipped");
    }
    Ok(())
}

/// Compile and start-up latency of every benchmark case's kernels.
#[derive(Parser)]
struct Args {
    /// Runs of each host step (the median is reported).
    #[arg(long, default_value_t = 50, value_parser = cli::positive)]
    runs: usize,
    /// JIT loads per case in one child process (the median is reported).
    #[arg(long, default_value_t = 3, value_parser = cli::positive)]
    reps: usize,
    /// Pairs of cold and warm child processes (the medians are reported).
    #[arg(long, default_value_t = 3, value_parser = cli::positive)]
    procs: usize,
}

fn main() -> ExitCode {
    let Args { runs, reps, procs } = Args::parse();
    let result = match std::env::var(ROLE_ENV) {
        Ok(role) => child(&role, reps),
        Err(_) => parent(runs, reps, procs),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("compile_latency: {e}");
            ExitCode::FAILURE
        }
    }
}
