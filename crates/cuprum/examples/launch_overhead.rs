//! Host time per launch of a small kernel with three buffer arguments: what the checks and
//! the stream ordering of buffers cost on the host. Cases: all launches on the default stream;
//! all on one new stream (each launch records one mark for its buffers); alternating between
//! two new streams that share the buffers (each launch also waits for the other stream's
//! marks); and a tile kernel (`z = x + y` on one 1024-element tile) launched with
//! `.execute(..)` on one stream, which also looks up its specialization, its tensors' facts
//! and its tuning hints each time; and raw launches (`launch!`) of the same kernel through
//! `Module::from_ir` (every check of a typed launch) and, on a GPU, of a PTX kernel of the same
//! parameters loaded with `Module::from_ptx` (only the PTX's parameter sizes checked: the
//! floor of what cuprum adds to `cuLaunchKernel`); and a `Graph` of 32 of the typed launches,
//! replayed (µs per node and per replay). Its CUDA C++ peer is
//! `benches/peers/launch_overhead.cu` (`benches/run_launch_overhead.sh` runs both). Prints a
//! table of medians (µs per launch, over rounds of `--launches` launches)
//! and a JSON record `{"record":"launch_overhead","case":..,"us":..}` per case;
//! run on a GPU machine (on the emulator the kernel itself dominates).
//!
//! cargo run --release -p cuprum --example launch_overhead -- [--launches 20000] [--rounds 7]

use std::time::Instant;

use clap::Parser;
use cuprum::simt::{DisjointSlice, kernel, launch_contract, thread};
use cuprum::{
    BackendKind, CudaContext, DeviceBuffer, Graph, LaunchConfig1D, Module, Stream, cuda_module,
    launch,
};
use cuprum_testkit::timing::median;

#[path = "common/cli.rs"]
mod cli;
#[path = "common/record.rs"]
mod record;

#[cuda_module]
mod kernels {
    use super::*;

    #[kernel]
    #[launch_contract(domain = 1, block = (256, 1, 1))]
    pub fn axpy(a: f32, x: &[f32], y: &[f32], mut out: DisjointSlice<f32>) {
        let i = thread::index_1d();
        if let Some(o) = out.get_mut(i) {
            *o = a * x[i.get()] + y[i.get()];
        }
    }
}

/// A kernel with axpy's parameters (a, x, y, out) that does nothing.
const NOOP_PTX: &str = ".version 8.0
.target sm_80
.address_size 64
.visible .entry noop(.param .f32 a, .param .u64 x, .param .u64 y, .param .u64 out)
{
	ret;
}
";

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
}

/// The host's cost of one launch, on one stream and across two.
#[derive(Parser)]
struct Args {
    /// Launches per timed round.
    #[arg(long, default_value_t = 20_000, value_parser = cli::positive)]
    launches: usize,
    /// Timed rounds per case (the median is printed).
    #[arg(long, default_value_t = 7, value_parser = cli::positive)]
    rounds: usize,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let Args { launches, rounds } = Args::parse();
    let ctx = CudaContext::new(0)?;
    let n = 1024;
    let stream = ctx.default_stream();
    let x = DeviceBuffer::from_host(&stream, &vec![1.0f32; n])?;
    let y = DeviceBuffer::from_host(&stream, &vec![2.0f32; n])?;
    let mut out = DeviceBuffer::from_host(&stream, &vec![0.0f32; n])?;
    let module = kernels::load(&ctx)?;
    let prepared = module.prepare_axpy(LaunchConfig1D::for_len(n, 256))?;
    let (s1, s2) = (ctx.new_stream()?, ctx.new_stream()?);
    let cases: [(&str, Vec<&Stream>); 3] = [
        ("default stream", vec![&stream]),
        ("one new stream", vec![&s1]),
        ("two streams, shared buffers", vec![&s1, &s2]),
    ];
    println!("| case | µs per launch (median of {rounds} x {launches}) |");
    println!("|---|---|");
    for (name, streams) in cases {
        let mut per_launch = Vec::new();
        for _ in 0..rounds {
            let start = Instant::now();
            for k in 0..launches {
                let s = streams[k % streams.len()];
                module.axpy(s, &prepared, 3.0, &x, &y, &mut out)?;
            }
            per_launch.push(start.elapsed().as_secs_f64() * 1e6 / launches as f64);
            ctx.synchronize()?;
        }
        let median = median(per_launch).expect("rounds");
        println!("| {name} | {median:.2} |");
        record::Record::LaunchOverhead {
            case: name,
            us: median,
        }
        .print();
    }
    // Raw launches: cuprum's kernel through `launch!`, and a PTX kernel that does nothing.
    let own = Module::from_ir(&ctx, kernels::ir()?)?.get_function("axpy")?;
    let foreign = if ctx.backend() == BackendKind::Cuda {
        Some(Module::from_ptx(&ctx, NOOP_PTX)?.get_function("noop")?)
    } else {
        None
    };
    let raw_cases = [
        ("launch! of the cuprum kernel", Some(own)),
        ("launch! of a PTX kernel", foreign),
    ];
    for (name, function) in raw_cases {
        let Some(f) = function else { continue };
        let mut per_launch = Vec::new();
        for _ in 0..rounds {
            let start = Instant::now();
            for _ in 0..launches {
                // SAFETY: axpy reads x, y and writes out below n, the length of all three;
                // the PTX kernel touches nothing.
                unsafe { launch!(f<<<(n / 256) as u32, 256, 0, s1>>>(3.0f32, &x, &y, &out)) }?;
            }
            per_launch.push(start.elapsed().as_secs_f64() * 1e6 / launches as f64);
            ctx.synchronize()?;
        }
        let median = median(per_launch).expect("rounds");
        println!("| {name} | {median:.2} |");
        record::Record::LaunchOverhead {
            case: name,
            us: median,
        }
        .print();
    }
    graph_cases(
        &module,
        &prepared,
        (&x, &y, &mut out),
        &s1,
        launches,
        rounds,
    )?;
    let tile_ok = tile_case(n, launches, rounds)?;
    let got = out.to_host_vec(&stream)?;
    if tile_ok && got.iter().all(|&v| v == 5.0) {
        println!("PASSED: all {n} elements correct");
        Ok(())
    } else {
        Err("wrong results".into())
    }
}

/// Host time per node and per replay of a graph of 32 typed launches of `axpy`.
fn graph_cases(
    module: &kernels::Module,
    prepared: &cuprum::simt::Prepared<kernels::AxpyKernel>,
    (x, y, out): (
        &DeviceBuffer<f32>,
        &DeviceBuffer<f32>,
        &mut DeviceBuffer<f32>,
    ),
    stream: &Stream,
    launches: usize,
    rounds: usize,
) -> Result<(), Box<dyn std::error::Error>> {
    const NODES: usize = 32;
    let graph = Graph::capture(stream.context(), |s| {
        for _ in 0..NODES {
            module.axpy(s, prepared, 3.0, x, y, &mut *out)?;
        }
        Ok(())
    })?;
    let replays = (launches / NODES).max(1);
    let (mut per_node, mut per_replay) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let start = Instant::now();
        for _ in 0..replays {
            graph.launch(stream)?;
        }
        let us = start.elapsed().as_secs_f64() * 1e6 / replays as f64;
        per_replay.push(us);
        per_node.push(us / NODES as f64);
        stream.synchronize()?;
    }
    for (name, values) in [
        ("graph of 32 launches, per node", per_node),
        ("graph of 32 launches, per replay", per_replay),
    ] {
        let median = median(values).expect("rounds");
        println!("| {name} | {median:.2} |");
        record::Record::LaunchOverhead {
            case: name,
            us: median,
        }
        .print();
    }
    Ok(())
}

/// The tile case: host time per `.execute(..)` of a tile launch on one stream; whether its
/// result is right.
fn tile_case(n: usize, launches: usize, rounds: usize) -> Result<bool, Box<dyn std::error::Error>> {
    use cuprum::tile::cuda_async::device_operation::ExecutionContext;
    use cuprum::tile::prelude::*;

    let stream = Device::new(0)?.new_stream()?;
    let x = api::from_host(&vec![1.0f32; n], &[n]).sync_on(&stream)?;
    let y = api::from_host(&vec![2.0f32; n], &[n]).sync_on(&stream)?;
    let mut z = api::full(f32::NAN, &[n]).sync_on(&stream)?;
    let ectx = ExecutionContext::new((*stream).clone());
    let mut per_launch = Vec::new();
    for _ in 0..rounds {
        let start = Instant::now();
        for _ in 0..launches {
            // SAFETY: `z` is read on the host only after the stream is synchronized.
            unsafe { tile_kernels::add((&mut z).partition([1024]), &x, &y).execute(&ectx) }?;
        }
        per_launch.push(start.elapsed().as_secs_f64() * 1e6 / launches as f64);
        stream.synchronize()?;
    }
    let median = median(per_launch).expect("rounds");
    let name = "tile kernel, one stream";
    println!("| {name} | {median:.2} |");
    record::Record::LaunchOverhead {
        case: name,
        us: median,
    }
    .print();
    let got: Vec<f32> = z.to_host_vec().sync_on(&stream)?;
    Ok(got.iter().all(|&v| v == 3.0))
}
