//! vecadd over 2^28 f32 (3 GiB moved per launch), timed with events: median of 100 launches
//! after warm-up. Its CUDA C++ peer is `benches/peers/vecadd.cu`; run both in one call.

use cuprum::simt::{DisjointSlice, kernel, launch_bounds, launch_contract, thread};
use cuprum::{CudaContext, DeviceBuffer, LaunchConfig1D, cuda_module};

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

#[path = "common/record.rs"]
mod record;
#[path = "common/size.rs"]
mod size;
#[path = "common/timing.rs"]
mod timing;
use timing::median_ms;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let ctx = CudaContext::new(0)?;
    // On the emulator (or with CUPRUM_EXAMPLE_SIZE=small): just show it runs.
    let n: usize = if size::benchmark_sizes(ctx.backend() == cuprum::BackendKind::Cuda) {
        1 << 28
    } else {
        1 << 20
    };
    let stream = ctx.default_stream();
    let data = |seed: u32| -> Vec<f32> {
        (0..n as u32)
            .map(|i| ((i.wrapping_mul(2654435761) ^ seed) % 20001) as f32 * 0.01 - 100.0)
            .collect()
    };
    let (ha, hb) = (data(1), data(2));
    let a = DeviceBuffer::from_host(&stream, &ha)?;
    let b = DeviceBuffer::from_host(&stream, &hb)?;
    let mut c = DeviceBuffer::from_host(&stream, &vec![f32::NAN; n])?;
    let module = kernels::load(&ctx)?;
    let prepared = module.prepare_vecadd(LaunchConfig1D::new((n as u32).div_ceil(256), 256, 0))?;
    let median = median_ms(&stream, 5, 100, || {
        module.vecadd(&stream, &prepared, &a, &b, &mut c)
    })?;
    let hc = c.to_host_vec(&stream)?;
    let wrong = (0..n).filter(|&i| hc[i] != ha[i] + hb[i]).count();
    println!(
        "cuprum vecadd n={n} median {median:.4} ms  {:.1} GB/s ({:?})",
        12.0 * n as f64 / (median * 1e6),
        ctx.backend()
    );
    record::result(
        "vecadd",
        &format!("n={n}"),
        12.0 * n as f64,
        n as f64,
        median,
    );
    if wrong != 0 {
        return Err(format!("FAILED: {wrong} wrong elements").into());
    }
    println!("PASSED");
    Ok(())
}
