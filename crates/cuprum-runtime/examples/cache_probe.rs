//! Shows the compile cache at work: the same module loaded by two processes in turn, the first
//! with an empty cache (the driver compiles the PTX), the second from the cubin the first left
//! on disk (nothing compiled), with the times of each.
//!
//! ```sh
//! cargo run --release -p cuprum-runtime --example cache_probe -- --kernels 16 --work 256
//! ```
//!
//! The parent process makes a fresh cache folder (or uses `CUPRUM_CACHE_DIR` when set), runs
//! itself twice as a child with `CUPRUM_CACHE_STATS=1`, and compares. The children run with
//! `CUDA_CACHE_DISABLE=1`, so that the driver's own JIT cache (`~/.nv/ComputeCache`) neither
//! warms the first process nor explains the second; `--driver-cache` leaves it on. Each child builds the
//! module with `cuprum_ir::KernelBuilder` (`--kernels` kernels, each `--work` multiply-adds
//! long, so that compiling costs something measurable), times `CudaContext::new`, the first
//! `LoadedModule::load` and a second load in the same process (a memory hit), launches the
//! first kernel and checks it against the CPU. Without a GPU it runs on the emulator, which
//! needs no cubin, and says so.

use std::process::{Command, ExitCode, Stdio};
use std::sync::Arc;
use std::time::Instant;

use clap::Parser;
use cuprum_ir::{
    AddressSpace, BinaryOp, Block, CmpOp, Constant, Dim, Kernel, KernelBuilder, Module, Op,
    ParamKind, ScalarType, SliceAccess, Special, Stmt, Value,
};
use cuprum_runtime::{
    BackendKind, CudaContext, DeviceBuffer, KernelArg, LaunchConfig1D, LoadedModule, cache,
};

const ROLE_ENV: &str = "CUPRUM_CACHE_PROBE_ROLE";

fn def(b: &mut KernelBuilder, op: Op) -> Result<Value, String> {
    Ok(b.def(op)?)
}

/// `poly_<n>(a: &[f32], b: &[f32], out: DisjointSlice<f32>)`: `v = a[i]`, then `work` times
/// `v = v * a[i] + (b[i] + n)`, then `out[i] = v`; straight-line code whose compile time grows
/// with `work`.
fn poly_kernel(n: usize, work: usize) -> Result<Kernel, String> {
    let slice = |access| ParamKind::Slice {
        elem: ScalarType::F32,
        access,
    };
    let mut b = KernelBuilder::new(format!("poly_{n}"));
    let pa = b.param("a", slice(SliceAccess::ReadOnly));
    let pb = b.param("b", slice(SliceAccess::ReadOnly));
    let pout = b.param("out", slice(SliceAccess::Disjoint));
    let tid = def(&mut b, Op::Special(Special::ThreadIdx(Dim::X)))?;
    let bid = def(&mut b, Op::Special(Special::BlockIdx(Dim::X)))?;
    let bdim = def(&mut b, Op::Special(Special::BlockDim(Dim::X)))?;
    let base = def(&mut b, Op::Binary(BinaryOp::Mul, bid, bdim))?;
    let i32_ = def(&mut b, Op::Binary(BinaryOp::Add, base, tid))?;
    let i = def(
        &mut b,
        Op::Cast {
            value: i32_,
            to: ScalarType::U64,
        },
    )?;
    let len = def(&mut b, Op::SliceLen(pout))?;
    let inside = def(&mut b, Op::Compare(CmpOp::Lt, i, len))?;
    b.begin_block();
    let four = b.constant(Constant::u64(4));
    let offset = def(&mut b, Op::Binary(BinaryOp::Mul, i, four))?;
    let load = |b: &mut KernelBuilder, param: u32| -> Result<Value, String> {
        let base = def(b, Op::SliceBase(param))?;
        let addr = def(b, Op::Binary(BinaryOp::Add, base, offset))?;
        def(
            b,
            Op::Load {
                space: AddressSpace::Global,
                ty: ScalarType::F32,
                addr,
                eviction: cuprum_ir::Eviction::Normal,
            },
        )
    };
    let va = load(&mut b, pa)?;
    let vb = load(&mut b, pb)?;
    let shift = b.constant(Constant::f32(n as f32));
    let addend = def(&mut b, Op::Binary(BinaryOp::Add, vb, shift))?;
    let mut v = va;
    for _ in 0..work {
        let product = def(&mut b, Op::Binary(BinaryOp::Mul, v, va))?;
        v = def(&mut b, Op::Binary(BinaryOp::Add, product, addend))?;
    }
    let out_base = def(&mut b, Op::SliceBase(pout))?;
    let out_addr = def(&mut b, Op::Binary(BinaryOp::Add, out_base, offset))?;
    b.push(Stmt::Store {
        space: AddressSpace::Global,
        addr: out_addr,
        value: v,
    });
    let then = b.end_block();
    b.push(Stmt::If {
        cond: inside,
        then,
        otherwise: Block::default(),
    });
    Ok(b.finish())
}

/// What the CPU computes for element `(a, b)` of kernel `poly_0`.
fn poly_reference(a: f32, b: f32, work: usize) -> f32 {
    let addend = b + 0.0;
    let mut v = a;
    for _ in 0..work {
        v = v * a + addend;
    }
    v
}

/// The compile cache at work: one module loaded by two processes in turn.
#[derive(Parser)]
struct Args {
    /// Kernels in the module (at least 1).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u64).range(1..))]
    kernels: u64,
    /// Multiply-adds per kernel (what makes compiling cost something).
    #[arg(long, default_value_t = 64)]
    work: usize,
    /// Leave the driver's own JIT cache on in the child processes.
    #[arg(long)]
    driver_cache: bool,
}

impl Args {
    /// The arguments that give a child process these options.
    fn to_args(&self) -> Vec<String> {
        let mut args = vec![
            "--kernels".to_owned(),
            self.kernels.to_string(),
            "--work".to_owned(),
            self.work.to_string(),
        ];
        if self.driver_cache {
            args.push("--driver-cache".to_owned());
        }
        args
    }
}

fn ms(start: Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1e3
}

/// One process: build, load twice, launch, check; prints a `RESULT` line for the parent.
fn child(kernels: usize, work: usize) -> Result<(), Box<dyn std::error::Error>> {
    let start = Instant::now();
    let ctx = CudaContext::new(0)?;
    let context_ms = ms(start);
    let ir = Arc::new(Module {
        kernels: (0..kernels)
            .map(|n| poly_kernel(n, work))
            .collect::<Result<_, _>>()?,
    });
    let start = Instant::now();
    let module = LoadedModule::load(&ctx, ir.clone())?;
    let load_ms = ms(start);
    let start = Instant::now();
    let _again = LoadedModule::load(&ctx, ir.clone())?;
    let reload_ms = ms(start);

    const N: usize = 10_000;
    let stream = ctx.default_stream();
    let a: Vec<f32> = (0..N).map(|i| (i % 17) as f32 * 0.0625 - 0.5).collect();
    let b: Vec<f32> = (0..N).map(|i| (i % 5) as f32 * 0.25).collect();
    let da = DeviceBuffer::from_host(&stream, &a)?;
    let db = DeviceBuffer::from_host(&stream, &b)?;
    let mut dout = DeviceBuffer::from_host(&stream, &vec![f32::NAN; N])?;
    let config = LaunchConfig1D::for_len(N, 256).into();
    let args = [
        KernelArg::slice(&da),
        KernelArg::slice(&db),
        KernelArg::slice_mut(&mut dout),
    ];
    // SAFETY: the arguments match the kernel's parameters; the kernel writes only
    // out[i] for i < out.len() and reads a and b at the same index, which have N elements.
    unsafe { module.launch(&stream, 0, &config, &args)? };
    let out = dout.to_host_vec(&stream)?;
    let wrong = (0..N)
        .filter(|&i| out[i].to_bits() != poly_reference(a[i], b[i], work).to_bits())
        .count();
    let s = cache::stats();
    println!(
        "RESULT backend={} context_ms={context_ms:.3} load_ms={load_ms:.3} \
         reload_ms={reload_ms:.3} compiles={} disk_hits={} memory_hits={} disk_writes={} \
         rejected={} ir_reuses={} wrong={wrong}",
        match ctx.backend() {
            BackendKind::Cuda => "cuda",
            BackendKind::Emulator => "emu",
        },
        s.compiles,
        s.disk_hits,
        s.memory_hits,
        s.disk_writes,
        s.rejected,
        s.ir_reuses
    );
    if wrong != 0 {
        return Err(format!("FAILED: {wrong} of {N} elements wrong").into());
    }
    Ok(())
}

fn field<'a>(line: &'a str, name: &str) -> &'a str {
    line.split_whitespace()
        .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
        .unwrap_or("?")
}

/// Runs the two children and compares them.
fn parent(args: &Args) -> Result<(), Box<dyn std::error::Error>> {
    let (kernels, work) = (args.kernels, args.work);
    let (dir, fresh) = match std::env::var_os(cache::CACHE_DIR_ENV) {
        Some(dir) => (std::path::PathBuf::from(dir), false),
        None => (
            std::env::temp_dir().join(format!("cuprum-cache-probe-{}", std::process::id())),
            true,
        ),
    };
    println!(
        "cache probe: {kernels} kernel(s) of {work} multiply-adds, cache folder {}{}",
        dir.display(),
        if fresh {
            " (fresh)"
        } else {
            " (from CUPRUM_CACHE_DIR: the first process may find it warm)"
        }
    );
    let exe = std::env::current_exe()?;
    let mut lines = Vec::new();
    for role in ["first (cold)", "second (warm)"] {
        let out = Command::new(&exe)
            .args(args.to_args())
            .env(ROLE_ENV, "child")
            .env(cache::CACHE_ENV, "on")
            .env(cache::CACHE_DIR_ENV, &dir)
            .env(cache::CACHE_STATS_ENV, "1")
            .env(
                "CUDA_CACHE_DISABLE",
                if args.driver_cache { "0" } else { "1" },
            )
            .stderr(Stdio::inherit())
            .output()?;
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let Some(line) = stdout.lines().find(|l| l.starts_with("RESULT")) else {
            return Err(format!("the {role} process failed:\n{stdout}").into());
        };
        println!(
            "  {role:<14} process on {}: context {} ms, first load {} ms (compiled {}, disk \
             hits {}, stored {}), second load {} ms (memory hits {}, IR reuses {})",
            field(line, "backend"),
            field(line, "context_ms"),
            field(line, "load_ms"),
            field(line, "compiles"),
            field(line, "disk_hits"),
            field(line, "disk_writes"),
            field(line, "reload_ms"),
            field(line, "memory_hits"),
            field(line, "ir_reuses"),
        );
        if !out.status.success() {
            return Err(format!("the {role} process failed:\n{stdout}").into());
        }
        lines.push(line.to_owned());
    }
    if fresh {
        let _ = std::fs::remove_dir_all(&dir);
    }
    let (cold, warm) = (&lines[0], &lines[1]);
    if field(warm, "backend") != "cuda" {
        println!(
            "no GPU: the emulator runs the IR and needs no cubin, so there is nothing to cache \
             on disk (a second load in one process reuses the validated IR)"
        );
        return Ok(());
    }
    let number = |line: &str, name: &str| field(line, name).parse::<f64>().unwrap_or(f64::NAN);
    println!(
        "warm start: {} compilation(s) instead of {}; module load {:.1} ms instead of {:.1} ms \
         ({:.1}x faster)",
        field(warm, "compiles"),
        field(cold, "compiles"),
        number(warm, "load_ms"),
        number(cold, "load_ms"),
        number(cold, "load_ms") / number(warm, "load_ms")
    );
    if field(warm, "compiles") != "0" || field(warm, "disk_hits") != "1" {
        return Err("the second process compiled: the disk cache did not serve it".into());
    }
    Ok(())
}

fn main() -> ExitCode {
    let args = Args::parse();
    let result = if std::env::var_os(ROLE_ENV).is_some() {
        child(args.kernels as usize, args.work)
    } else {
        parent(&args)
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cache_probe: {e}");
            ExitCode::FAILURE
        }
    }
}
