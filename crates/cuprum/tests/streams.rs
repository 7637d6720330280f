//! Streams and events beyond the default stream: `Stream::wait(&Event)`, `fork`/`join`,
//! stream priorities and `Event::is_complete`. Kernels launched raw from a PTX module (which
//! cuprum does not order across streams by their buffers, so the explicit waits are all that
//! orders them) on a GPU, and cuprum's own kernels on every backend; each result is compared
//! element by element with a plain-Rust reference on fresh random inputs.

mod common;

use common::{assert_same, ctx, random_f32};
use cuprum::simt::{DisjointSlice, kernel, thread};
use cuprum::{BackendKind, CudaContext, DeviceBuffer, Error, Module, Stream, cuda_module, launch};

#[cuda_module]
mod kernels {
    use super::*;

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
/// `saxpy` (`with_n`: the nvcc kernel's extra length argument).
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
                launch!(f<<<blocks, 256, 0, s>>>(a, &dx, &dy, n as i32))
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
