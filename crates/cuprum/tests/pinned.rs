//! Page-locked host memory (`PinnedBuffer`) and the copies to and from it that return at once:
//! random data through pinned memory, a kernel on a forked stream, and back, on every backend,
//! with every element compared; the typed refusals (lengths, contexts). That safe code cannot
//! touch pinned memory while a copy may write it is a compile-time matter (a copy into it
//! takes it `&mut`; `tests/ui/pinned_copy_needs_exclusive.rs`) plus the waits inside
//! `as_slice`, `as_mut_slice` and the drop.

mod common;

use common::{assert_same, blocks_for, ctx, random_f32};
use cuprum::simt::{DisjointSlice, kernel, launch_bounds, launch_contract, thread};
use cuprum::{CudaContext, DeviceBuffer, Error, LaunchConfig1D, PinnedBuffer, cuda_module};

#[cuda_module]
mod kernels {
    use super::*;

    #[kernel]
    #[launch_bounds(256)]
    #[launch_contract(domain = 1, block = (256, 1, 1))]
    pub fn scale(a: f32, x: &[f32], mut y: DisjointSlice<f32>) {
        let i = thread::index_1d();
        let raw = i.get();
        if let Some(out) = y.get_mut(i) {
            *out = a * x[raw];
        }
    }
}

const POISON: f32 = f32::from_bits(0x7FC0_0BAD);

#[test]
fn data_travels_through_pinned_memory_and_back() {
    let ctx = ctx();
    let module = kernels::load(ctx).expect("loads");
    let upload = ctx.new_stream().expect("stream");
    for n in [1usize, 1000, (1 << 20) + 7] {
        let host = random_f32(n);
        let pinned = PinnedBuffer::from_slice(ctx, &host).expect("pinned");
        assert_eq!(pinned.len(), n);
        let mut x = DeviceBuffer::from_host(&upload, &vec![POISON; n]).expect("x");
        x.copy_from_pinned(&upload, &pinned).expect("upload");
        // The host may read the source while the copy runs.
        assert_same("pinned source", pinned.as_slice().expect("read"), &host);
        let compute = upload.fork().expect("fork");
        let mut y = DeviceBuffer::from_host(&compute, &vec![POISON; n]).expect("y");
        let prepared = module
            .prepare_scale(LaunchConfig1D::new(blocks_for(n, 256), 256, 0))
            .expect("prepared");
        module
            .scale(&compute, &prepared, 3.0, &x, &mut y)
            .expect("launch");
        let mut back = PinnedBuffer::from_slice(ctx, &vec![POISON; n]).expect("pinned out");
        y.copy_to_pinned(&compute, &mut back).expect("download");
        let want: Vec<f32> = host.iter().map(|v| 3.0 * v).collect();
        assert_same(
            "through pinned memory",
            back.as_slice().expect("read back"),
            &want,
        );
        assert!(back.is_idle());
        // Written by the host again, and sent once more.
        back.as_mut_slice().expect("write").fill(1.5);
        y.copy_from_pinned(&compute, &back).expect("upload again");
        assert_same(
            "second upload",
            &y.to_host_vec(&compute).expect("y"),
            &vec![1.5; n],
        );
    }
}

#[test]
fn pinned_copies_refuse_other_lengths_and_contexts() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let mut x = DeviceBuffer::from_host(&stream, &[0.0f32; 8]).expect("x");
    let mut short = PinnedBuffer::<f32>::zeroed(ctx, 7).expect("pinned");
    assert!(matches!(
        x.copy_from_pinned(&stream, &short),
        Err(Error::LengthMismatch { .. })
    ));
    assert!(matches!(
        x.copy_to_pinned(&stream, &mut short),
        Err(Error::LengthMismatch { .. })
    ));
    let other = CudaContext::emulator();
    let mut foreign = PinnedBuffer::<f32>::zeroed(&other, 8).expect("pinned");
    assert!(matches!(
        x.copy_to_pinned(&stream, &mut foreign),
        Err(Error::ContextMismatch)
    ));
    let empty = PinnedBuffer::<f32>::zeroed(ctx, 0).expect("empty");
    assert!(empty.is_empty() && empty.as_slice().expect("empty").is_empty());
}
