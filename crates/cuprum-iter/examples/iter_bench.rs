//! Memory bandwidth of fused iterator chains, for comparison with PyTorch
//! (`benches/peers/iter_torch.py` times `a + b` and `a.sum()` on the same sizes).
//!
//! Checks, then times on the GPU (2^28 `f32`, 1 GiB per vector):
//! * `a.zip(b).map(|(x, y)| x + y).materialize(&device)`: 12 bytes per element (two reads,
//!   one write); `materialize` keeps the result on the device, so no host copy is timed;
//! * `a.sum_on_device()`: 4 bytes per element;
//! * `a.zip(b).map(|(x, y)| x * y).sum_on_device()` (a dot product): 8 bytes per element.
//!
//! Each is event-timed 50 times after 5 warm-up runs and the median reported. All runs are
//! queued before any is waited for, so the host's own work (tracing, the kernel-cache
//! lookup) overlaps the previous run and each event pair measures the device's time: the
//! kernels, and the allocation of the output from the stream-ordered pool.
//!
//! `--sweep` repeats the timings for a few launch tunings (block size, blocks per SM, bytes
//! per thread, layout; see `cuprum_iter::Tuning`). On the emulator the example checks a
//! smaller input and times nothing. Set `CUPRUM_ITER_DUMP=1` to print the kernels' IR and
//! PTX.

use clap::Parser;
use cuprum_iter::prelude::*;
use cuprum_iter::{Layout, Tuning};
use cuprum_runtime::{BackendKind, Error, Event, Stream};
use cuprum_testkit::timing::{self, EventClock, Timing};

const WARMUP: usize = 5;
const REPS: usize = 50;

/// The device's stream, timed by the events recorded on it.
struct Events<'a>(&'a Stream);

impl EventClock for Events<'_> {
    type Event = Event;
    type Error = Error;
    fn synchronize(&self) -> GpuResult<()> {
        self.0.synchronize()
    }
    fn record(&self) -> GpuResult<Event> {
        self.0.record_event()
    }
    fn wait(&self, event: &Event) -> GpuResult<()> {
        event.synchronize()
    }
    fn elapsed_ms(&self, start: &Event, end: &Event) -> GpuResult<f32> {
        start.elapsed_ms(end)
    }
}

/// The median over `REPS` event-timed runs of `run`, after `WARMUP` untimed ones, in ms. The
/// runs are queued, not waited for one by one; what one returns is freed in stream order,
/// after its end event.
fn median_ms<T>(device: &GpuDevice, run: impl FnMut() -> GpuResult<T>) -> GpuResult<f64> {
    timing::median_ms(
        &Events(device.stream()),
        Timing::new(WARMUP, REPS).queued(),
        run,
    )
}

/// Prints the timing of one chain: a line for people, and the JSON record
/// `benches/report.py` reads (as `case`).
fn report(
    what: &str,
    case: &str,
    n: usize,
    bytes_per_elem: usize,
    flops_per_elem: usize,
    ms: f64,
    tuning: Option<&Tuning>,
) {
    let gbs = (bytes_per_elem * n) as f64 / (ms * 1e6);
    let tuning = tuning.map_or(String::new(), |t| {
        format!(
            " [block {} blocks/SM {} bytes/thread {} {:?} vector {} B]",
            t.block, t.blocks_per_sm, t.bytes_per_thread, t.layout, t.vector_bytes
        )
    });
    println!("cuprum-iter {what} n={n} median {ms:.4} ms {gbs:.1} GB/s{tuning}");
    let record = serde_json::json!({
        "record": "result",
        "case": case,
        "impl": "cuprum",
        "size": format!("n={n}"),
        "bytes": (bytes_per_elem * n) as f64,
        "flops": (flops_per_elem * n) as f64,
        "ms": ms,
        "tuning": tuning.trim(),
    });
    println!("{record}");
}

#[path = "../../cuprum/examples/common/size.rs"]
mod size;

fn fail(message: String) -> ! {
    eprintln!("FAILED: {message}");
    std::process::exit(1);
}

/// Memory bandwidth of fused iterator chains.
#[derive(Parser)]
struct Args {
    /// Also time a few launch tunings (block size, blocks per SM, bytes per thread, layout).
    #[arg(long)]
    sweep: bool,
}

fn main() -> GpuResult<()> {
    let Args { sweep } = Args::parse();
    let device = GpuDevice::default()?;
    let gpu = size::benchmark_sizes(device.context().backend() == BackendKind::Cuda);
    let n: usize = if gpu { 1 << 28 } else { (1 << 20) + 77 };

    // Exact in f32: small multiples of 1/4, so every sum below is exact too.
    let a: Vec<f32> = (0..n).map(|i| (i % 1024) as f32 * 0.25).collect();
    let b: Vec<f32> = (0..n).map(|i| (i % 777) as f32).collect();
    let da = device.upload(&a)?;
    let db = device.upload(&b)?;

    let c = (&da).zip(&db).map(|(x, y)| x + y).collect(&device)?;
    if let Some(i) = (0..n).find(|&i| c[i].to_bits() != (a[i] + b[i]).to_bits()) {
        fail(format!("zip-add element {i}: {} != {}", c[i], a[i] + b[i]));
    }
    drop(c);
    // Sums of up to 2^28 terms of at most 255.75 exceed f32's exact range: compare with the
    // f64 sum within the tree-summation bound (depth ~ elements per thread + 20 steps).
    let check_sum = |what: &str, got: f32, terms: &mut dyn Iterator<Item = f64>| {
        let (want, magnitude) = terms.fold((0.0, 0.0), |(s, m), t| (s + t, m + t.abs()));
        let t = device.reduction_tuning();
        let threads = device.context().limits().multiprocessor_count * t.blocks_per_sm * t.block;
        let depth = n.div_ceil(threads as usize) + 64;
        let tol = depth as f64 * (-24f64).exp2() * magnitude;
        if (f64::from(got) - want).abs() > tol {
            fail(format!("{what}: got {got}, f64 {want}, tolerance {tol:e}"));
        }
    };
    check_sum("sum", (&da).sum()?, &mut a.iter().map(|&x| f64::from(x)));
    check_sum(
        "dot",
        (&da).zip(&db).map(|(x, y)| x * y).sum()?,
        &mut a.iter().zip(&b).map(|(&x, &y)| f64::from(x * y)),
    );
    println!(
        "PASSED: zip-add, sum and dot of {n} f32 on {}",
        device.context().backend()
    );
    if !gpu {
        println!("(no GPU: nothing timed)");
        return Ok(());
    }

    let tunings: Vec<Option<Tuning>> = if sweep {
        let mut v = vec![None];
        for (block, blocks_per_sm, bytes_per_thread, layout, vector_bytes) in [
            (256, 4, 32, Layout::WarpStrided, 0),
            (256, 4, 32, Layout::WarpStrided, 16),
            (256, 2, 32, Layout::WarpStrided, 16),
            (256, 2, 64, Layout::WarpStrided, 16),
            (256, 3, 32, Layout::WarpStrided, 16),
            (512, 1, 32, Layout::WarpStrided, 16),
            (128, 4, 32, Layout::WarpStrided, 16),
            (256, 2, 16, Layout::WarpStrided, 16),
            (256, 4, 64, Layout::WarpStrided, 16),
            (256, 8, 64, Layout::WarpStrided, 16),
            (1024, 2, 64, Layout::WarpStrided, 16),
            (256, 2, 32, Layout::Consecutive, 16),
        ] {
            v.push(Some(Tuning {
                block,
                blocks_per_sm,
                bytes_per_thread,
                layout,
                vector_bytes,
            }));
        }
        v
    } else {
        vec![None]
    };
    for tuning in &tunings {
        match tuning {
            Some(t) => device.set_tuning(*t)?,
            None => device.reset_tuning(),
        }
        let ms = median_ms(&device, || {
            (&da).zip(&db).map(|(x, y)| x + y).materialize(&device)
        })?;
        report(
            "zip-map-add materialize",
            "iter_zip_add",
            n,
            12,
            1,
            ms,
            tuning.as_ref(),
        );
        let ms = median_ms(&device, || (&da).sum_on_device())?;
        report("sum", "iter_sum", n, 4, 1, ms, tuning.as_ref());
        let ms = median_ms(&device, || {
            (&da).zip(&db).map(|(x, y)| x * y).sum_on_device()
        })?;
        report(
            "zip-map-mul sum (dot)",
            "iter_dot",
            n,
            8,
            2,
            ms,
            tuning.as_ref(),
        );
    }
    Ok(())
}
