//! Streams and events beyond the default stream: `Stream::wait(&Event)`, `fork`/`join`,
//! stream priorities and `Event::is_complete`. Kernels launched raw from a PTX module with
//! their buffers passed as plain addresses (which cuprum cannot order across streams, so the
//! explicit waits are all that orders them) on a GPU, and cuprum's own kernels on every
//! backend; each result is compared element by element with a plain-Rust reference on fresh
//! random inputs.

mod common;

use common::{assert_same, ctx, random_f32};
use cuprum::simt::{DisjointSlice, kernel, thread};
use cuprum::{BackendKind, CudaContext, DeviceBuffer, Error, Module, Stream, cuda_module, launch};

#[cuda_module]
mod kernels {
    use super::*;

    /// `rounds` steps of `v = v * 0.999 + 0.001` per element: long-running on purpose.
    #[kernel]
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

    #[kernel]
    pub fn saxpy(a: f32, x: &[f32], mut y: DisjointSlice<f32>) {
        let i = thread::index_1d();
        let raw = i.get();
        if let Some(out) = y.get_mut(i) {
            *out = a * x[raw] + *out;
        }
    }
}

/// The PTX nvcc wrote for `data/saxpy.cu` (`saxpy(a, x, y, n)`, `affine(f, y)`).
const NVCC_PTX: &str = include_str!("data/saxpy_nvcc.ptx");

/// `rounds` times `y = a x + y`, as the kernels compute it: cuprum's rounds the product and
/// then the sum, as Rust does; nvcc's fuses them (`fma.rn`, its default `-fmad=true`).
fn repeated_saxpy(a: f32, x: &[f32], y: &[f32], rounds: usize, fused: bool) -> Vec<f32> {
    let mut y = y.to_vec();
    for _ in 0..rounds {
        for (y, &x) in y.iter_mut().zip(x) {
            *y = if fused { a.mul_add(x, *y) } else { a * x + *y };
        }
    }
    y
}

/// Runs `rounds` saxpys of `x` into `y` on `first`, then one more on a stream forked from
/// it and one on `first` after joining the fork back, through the raw launches of `module`'s
/// `saxpy` (`with_n`: the nvcc kernel, given its length and the buffers as plain addresses,
/// so that only the waits order its launches).
fn fork_join_rounds(module: &Module, first: &Stream, with_n: bool, n: usize, rounds: usize) {
    let f = module.get_function("saxpy").expect("saxpy");
    let (x, y0) = (random_f32(n), random_f32(n));
    let a = 0.5f32;
    let dx = DeviceBuffer::from_host(first, &x).expect("x");
    let dy = DeviceBuffer::from_host(first, &y0).expect("y");
    let blocks = n.div_ceil(256) as u32;
    let run = |s: &Stream| {
        // SAFETY: saxpy reads x[i] and writes y[i] below n, the length of both; work on the
        // streams is ordered by the waits below.
        let launched = unsafe {
            if with_n {
                let (x, y) = (dx.device_address(), dy.device_address());
                launch!(f<<<blocks, 256, 0, s>>>(a, x, y, n as i32))
            } else {
                launch!(f<<<blocks, 256, 0, s>>>(a, &dx, &dy))
            }
        };
        launched.expect("launches");
    };
    for _ in 0..rounds {
        run(first);
    }
    let branch = first.fork().expect("fork");
    run(&branch);
    let done = branch.record_event().expect("event");
    first.wait(&done).expect("wait");
    run(first);
    let side = first.fork().expect("fork again");
    run(&side);
    first.join(&side).expect("join");
    let got = dy.to_host_vec(first).expect("y back");
    assert!(
        done.is_complete().expect("query"),
        "the copy back came after the event"
    );
    assert_same(
        &format!("fork/join saxpy n={n}"),
        &got,
        &repeated_saxpy(a, &x, &y0, rounds + 3, with_n),
    );
}

#[test]
fn forks_joins_and_waits_order_cuprum_kernels_on_every_backend() {
    let ctx = ctx();
    let module = Module::from_ir(ctx, kernels::ir().expect("IR")).expect("loads");
    let first = ctx.new_stream().expect("stream");
    for n in [1usize, 1000, 70_001] {
        fork_join_rounds(&module, &first, false, n, 4);
    }
}

#[test]
fn waits_order_raw_launches_of_ptx_on_a_gpu() {
    let ctx = ctx();
    if ctx.backend() != BackendKind::Cuda {
        eprintln!("skipped: external PTX needs a GPU");
        return;
    }
    let module = Module::from_ptx(ctx, NVCC_PTX).expect("nvcc's PTX");
    let first = ctx.new_stream().expect("stream");
    // Enough work before each fork that an unordered branch would overtake it.
    fork_join_rounds(&module, &first, true, 1 << 22, 40);
}

#[test]
fn priorities_and_events_of_other_contexts() {
    let ctx = ctx();
    let (least, greatest) = ctx.stream_priority_range().expect("range");
    assert!(greatest <= least, "({least}, {greatest})");
    if ctx.backend() == BackendKind::Cuda {
        assert!(greatest < least, "an H100/H200 has stream priorities");
    }
    let module = Module::from_ir(ctx, kernels::ir().expect("IR")).expect("loads");
    for priority in [least, greatest, greatest - 10] {
        let s = ctx.new_stream_with_priority(priority).expect("stream");
        fork_join_rounds(&module, &s, false, 513, 1);
    }
    // An event of another context cannot be waited for.
    let other = CudaContext::emulator();
    let foreign = other.default_stream().record_event().expect("event");
    let refused = ctx.default_stream().wait(&foreign);
    assert!(
        matches!(refused, Err(Error::ContextMismatch)),
        "{refused:?}"
    );
}

#[test]
fn buffers_come_and_go_without_waiting_for_other_streams() {
    let ctx = ctx();
    let module = Module::from_ir(ctx, kernels::ir().expect("IR")).expect("loads");
    let busy = module.get_function("busy").expect("busy");
    let saxpy = module.get_function("saxpy").expect("saxpy");
    let (slow, quick) = (
        ctx.new_stream().expect("stream"),
        ctx.new_stream().expect("stream"),
    );
    // A long kernel on one stream (tens of milliseconds on an H200; short on the emulator).
    let on_gpu = ctx.backend() == BackendKind::Cuda;
    let (n, rounds) = if on_gpu {
        (1usize << 22, 1_000_000u32)
    } else {
        (1000, 10)
    };
    let x = random_f32(n);
    let dx = DeviceBuffer::from_host(&slow, &x).expect("x");
    let dy = DeviceBuffer::from_host(&slow, &vec![f32::NAN; n]).expect("y");
    let blocks = n.div_ceil(256) as u32;
    // SAFETY: busy reads x[i] and writes y[i] below n, the length of both.
    unsafe { launch!(busy<<<blocks, 256, 0, slow>>>(rounds, &dx, &dy)) }.expect("busy");
    let slow_done = slow.record_event().expect("event");
    // Meanwhile, on another stream: buffers made, zeroed, used, read back and dropped.
    for m in [1usize, 4096, 100_003] {
        let a = random_f32(m);
        let da = DeviceBuffer::from_host(&quick, &a).expect("a");
        let dz = DeviceBuffer::<f32>::zeroed(&quick, m).expect("zeroed");
        let blocks = m.div_ceil(256) as u32;
        // SAFETY: saxpy reads a[i] and writes z[i] below m, the length of both.
        unsafe { launch!(saxpy<<<blocks, 256, 0, quick>>>(2.0f32, &da, &dz)) }.expect("saxpy");
        let got = dz.to_host_vec(&quick).expect("z back");
        let want: Vec<f32> = a.iter().map(|v| 2.0 * v + 0.0).collect();
        assert_same(
            &format!("allocated beside a long kernel, m={m}"),
            &got,
            &want,
        );
    }
    if on_gpu {
        // Allocating, zeroing and freeing went on the quick stream and a release stream of
        // the device's own, not on the default stream, which would have waited for `busy`.
        assert!(
            !slow_done.is_complete().expect("query"),
            "the quick stream's buffers waited for the slow stream's kernel"
        );
    }
    let got = dy.to_host_vec(&slow).expect("y back");
    for i in (0..n).step_by(n / 100 + 1) {
        let mut v = x[i];
        for _ in 0..rounds {
            v = v * 0.999 + 0.001;
        }
        assert_eq!(got[i].to_bits(), v.to_bits(), "busy element {i}");
    }
}
