//! Compile and first-launch latency of vecadd: front end (Rust source to IR), PTX writer,
//! module load (the driver's JIT on a GPU), first launch, and a warm second launch.
//! Prints a table; run on a GPU machine to see the driver's share.

use std::time::Instant;

use cuprum::simt::{DisjointSlice, kernel, launch_bounds, launch_contract, thread};
use cuprum::{CudaContext, DeviceBuffer, LaunchConfig1D, cuda_module};
use cuprum_testkit::timing::median;

#[cuda_module]
mod kernels {
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

const SOURCE: &str = "mod kernels { use super::*;
    #[kernel] #[launch_bounds(256)] #[launch_contract(domain = 1, block = (256, 1, 1))]
    pub fn vecadd(a: &[f32], b: &[f32], mut c: DisjointSlice<f32>) {
        let i = thread::index_1d();
        if let Some(out) = c.get_mut(i) { *out = a[i.get()] + b[i.get()]; }
    } }";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runs = 200;
    let mut front = Vec::new();
    let mut ptx = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        let ir = cuprum::__private::compile_source(SOURCE)?;
        front.push(t.elapsed());
        let t = Instant::now();
        let text = cuprum_ptx::write_module(&ir, cuprum_ptx::Target::Sm90)?;
        ptx.push(t.elapsed());
        std::hint::black_box(text);
    }

    let t = Instant::now();
    let ctx = CudaContext::new(0)?;
    let context_time = t.elapsed();
    let stream = ctx.default_stream();
    let n = 1 << 20;
    let a = DeviceBuffer::from_host(&stream, &vec![1.0f32; n])?;
    let b = DeviceBuffer::from_host(&stream, &vec![2.0f32; n])?;
    let mut c = DeviceBuffer::from_host(&stream, &vec![f32::NAN; n])?;
    stream.synchronize()?;

    let t = Instant::now();
    let module = kernels::load(&ctx)?;
    let load_time = t.elapsed();
    let prepared = module.prepare_vecadd(LaunchConfig1D::new((n as u32).div_ceil(256), 256, 0))?;
    let t = Instant::now();
    module.vecadd(&stream, &prepared, &a, &b, &mut c)?;
    stream.synchronize()?;
    let first_launch = t.elapsed();
    let t = Instant::now();
    module.vecadd(&stream, &prepared, &a, &b, &mut c)?;
    stream.synchronize()?;
    let second_launch = t.elapsed();
    let ok = c.to_host_vec(&stream)?.iter().all(|&v| v == 3.0);

    println!("| step ({:?} backend) | time |", ctx.backend());
    println!("|---|---|");
    println!(
        "| front end: source to IR (median of {runs}) | {:.1} us |",
        median(front).expect("runs").as_secs_f64() * 1e6
    );
    println!(
        "| PTX writer: IR to PTX, sm_90 (median of {runs}) | {:.1} us |",
        median(ptx).expect("runs").as_secs_f64() * 1e6
    );
    println!(
        "| context creation | {:.2} ms |",
        context_time.as_secs_f64() * 1e3
    );
    println!(
        "| module load (IR cached; driver JIT on a GPU) | {:.2} ms |",
        load_time.as_secs_f64() * 1e3
    );
    println!(
        "| first launch + sync, 2^20 elements | {:.3} ms |",
        first_launch.as_secs_f64() * 1e3
    );
    println!(
        "| second launch + sync | {:.3} ms |",
        second_launch.as_secs_f64() * 1e3
    );
    if !ok {
        return Err("FAILED: wrong vecadd result".into());
    }
    println!("PASSED");
    Ok(())
}
