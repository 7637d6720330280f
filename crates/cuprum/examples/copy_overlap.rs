//! Copies that overlap compute: a host-to-device copy from page-locked memory
//! (`DeviceBuffer::copy_from_pinned`) on one stream, a device-to-host copy into page-locked
//! memory (`copy_to_pinned`) on a second, and a compute-bound kernel on a third, timed each
//! alone and then all together, with events (medians of several runs). On an H200 the copies
//! use the two directions of the PCIe/NVLink-C2C link and the kernel the SMs, so together they
//! take about as long as the longest of them; the table says how much of the shorter work was
//! hidden. The same copies from pageable memory (`copy_from_host`, which stages through the
//! driver) are shown for comparison. Every result is checked.
//!
//! Run: `cargo run --release -p cuprum --example copy_overlap` (on the emulator: small sizes,
//! checked, the times meaningless).

use cuprum::simt::{DisjointSlice, kernel, launch_bounds, launch_contract, thread};
use cuprum::{
    BackendKind, CudaContext, DeviceBuffer, LaunchConfig1D, PinnedBuffer, Stream, cuda_module,
};

#[path = "common/size.rs"]
mod size;

#[cuda_module]
mod kernels {
    use super::*;

    /// `rounds` steps of `v = v * 0.999 + 0.001` per element: compute-bound.
    #[kernel]
    #[launch_bounds(256)]
    #[launch_contract(domain = 1, block = (256, 1, 1))]
    pub fn busy(rounds: u32, x: &[f32], mut y: DisjointSlice<f32>) {
        let i = thread::index_1d();
        let raw = i.get();
        if let Some(out) = y.get_mut(i) {
            let mut v = x[raw];
            let mut r = 0u32;
            while r < rounds {
                v = v * 0.999 + 0.001;
                r += 1;
            }
            *out = v;
        }
    }
}

type Failure = Box<dyn std::error::Error>;

fn busy_reference(x: f32, rounds: u32) -> f32 {
    let mut v = x;
    for _ in 0..rounds {
        v = v * 0.999 + 0.001;
    }
    v
}

/// The median of `runs` timings of `work`, in ms, between an event recorded on `first`
/// before it and one after it (`work` joins its other streams back into `first`).
fn time(
    first: &Stream,
    runs: usize,
    mut work: impl FnMut() -> Result<(), Failure>,
) -> Result<f64, Failure> {
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let start = first.record_event()?;
        work()?;
        let end = first.record_event()?;
        end.synchronize()?;
        times.push(f64::from(start.elapsed_ms(&end)?));
    }
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}

fn main() -> Result<(), Failure> {
    let ctx = CudaContext::new(0)?;
    let on_gpu = ctx.backend() == BackendKind::Cuda;
    let big = size::benchmark_sizes(on_gpu);
    let (n, m, rounds, runs) = if big {
        (1usize << 26, 1usize << 22, 4000u32, 7)
    } else {
        (1 << 12, 1 << 10, 16, 1)
    };
    let bytes = (n * 4) as f64;
    let host: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 0.25).collect();
    let upload = PinnedBuffer::from_slice(&ctx, &host)?;
    let mut download = PinnedBuffer::from_slice(&ctx, &vec![f32::NAN; n])?;
    let (h2d, d2h, compute) = (ctx.new_stream()?, ctx.new_stream()?, ctx.new_stream()?);
    let mut dst = DeviceBuffer::from_host(&h2d, &vec![f32::NAN; n])?;
    let src = DeviceBuffer::from_host(&d2h, &host)?;
    let kx: Vec<f32> = (0..m).map(|i| (i % 97) as f32 / 97.0).collect();
    let kx_dev = DeviceBuffer::from_host(&compute, &kx)?;
    let mut ky = DeviceBuffer::from_host(&compute, &vec![f32::NAN; m])?;
    let module = kernels::load(&ctx)?;
    let prepared = module.prepare_busy(LaunchConfig1D::new(m.div_ceil(256) as u32, 256, 0))?;
    // Everything starts after the buffers are ready.
    ctx.synchronize()?;

    let up = time(&h2d, runs, || Ok(dst.copy_from_pinned(&h2d, &upload)?))?;
    let down = time(&d2h, runs, || Ok(src.copy_to_pinned(&d2h, &mut download)?))?;
    let pageable = time(&h2d, runs, || Ok(dst.copy_from_host(&h2d, &host)?))?;
    let kernel = time(&compute, runs, || {
        Ok(module.busy(&compute, &prepared, rounds, &kx_dev, &mut ky)?)
    })?;
    let together = time(&compute, runs, || {
        h2d.join(&compute)?;
        d2h.join(&compute)?;
        dst.copy_from_pinned(&h2d, &upload)?;
        src.copy_to_pinned(&d2h, &mut download)?;
        module.busy(&compute, &prepared, rounds, &kx_dev, &mut ky)?;
        compute.join(&h2d)?;
        compute.join(&d2h)?;
        Ok(())
    })?;

    // Every result, checked.
    let got = dst.to_host_vec(&h2d)?;
    if got != host {
        return Err("FAILED: the upload from pinned memory differs".into());
    }
    if download.as_slice()? != host.as_slice() {
        return Err("FAILED: the download into pinned memory differs".into());
    }
    let y = ky.to_host_vec(&compute)?;
    for i in (0..m).step_by((m / 64).max(1)) {
        let want = busy_reference(kx[i], rounds);
        if y[i] != want {
            return Err(format!("FAILED: busy[{i}] is {}, want {want}", y[i]).into());
        }
    }

    let gbs = |ms: f64| bytes / (ms * 1e6);
    let serial = up + down + kernel;
    let hidden = (serial - together) / (serial - up.max(down).max(kernel));
    println!(
        "copy/compute overlap on {} ({} MiB each way, busy kernel {rounds} rounds x {m}), median of {runs}",
        ctx.limits().name,
        (n * 4) >> 20
    );
    println!("| work | ms | GB/s |");
    println!("|---|---:|---:|");
    println!("| host to device, pinned | {up:.3} | {:.1} |", gbs(up));
    println!(
        "| host to device, pageable | {pageable:.3} | {:.1} |",
        gbs(pageable)
    );
    println!("| device to host, pinned | {down:.3} | {:.1} |", gbs(down));
    println!("| kernel alone | {kernel:.3} | - |");
    println!("| all three one after another (sum) | {serial:.3} | - |");
    println!("| all three on three streams | {together:.3} | - |");
    if big {
        println!(
            "overlap: {:.0}% of the shorter work hidden (100%: together takes only the longest)",
            100.0 * hidden
        );
    } else {
        println!("(small sizes: the times say nothing about overlap here)");
    }
    println!("PASSED");
    Ok(())
}
