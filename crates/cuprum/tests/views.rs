//! Views of part of a buffer (`slice`, `slice_mut`, `split_at_mut`): copies through them and
//! kernel arguments made of them, on every backend, compared element by element with a
//! plain-Rust reference on fresh random inputs, outputs poisoned first; the typed refusals
//! (ranges past the end, a kernel argument off a 16-byte boundary). That a mutable view is
//! exclusive is a compile-time matter (`tests/ui/view_mut_is_exclusive.rs`).

mod common;

use common::{assert_same, blocks_for, ctx, random_f32};
use cuprum::simt::{DisjointSlice, kernel, launch_bounds, launch_contract, thread};
use cuprum::{DeviceBuffer, Error, Graph, LaunchConfig1D, cuda_module};

#[cuda_module]
mod kernels {
    use super::*;

    /// `y = a * x`, over `y`'s length.
    #[kernel]
    #[launch_bounds(128)]
    #[launch_contract(domain = 1, block = (128, 1, 1))]
    pub fn scale(a: f32, x: &[f32], mut y: DisjointSlice<f32>) {
        let i = thread::index_1d();
        let raw = i.get();
        if let Some(out) = y.get_mut(i) {
            *out = a * x[raw];
        }
    }
}

const POISON: f32 = f32::from_bits(0x7FC0_0BAD);

fn config(n: usize) -> LaunchConfig1D {
    LaunchConfig1D::new(blocks_for(n, 128), 128, 0)
}

#[test]
fn copies_through_views_touch_only_their_elements() {
    let ctx = ctx();
    let stream = ctx.new_stream().expect("stream");
    for n in [2usize, 1001, (1 << 20) + 5] {
        let host = random_f32(n);
        let mut buffer = DeviceBuffer::from_host(&stream, &vec![POISON; n]).expect("buffer");
        let (a, b) = (n / 3, n - n / 4);
        buffer
            .slice_mut(a..b)
            .expect("view")
            .copy_from_host(&stream, &host[a..b])
            .expect("write");
        let mut want = vec![POISON; n];
        want[a..b].copy_from_slice(&host[a..b]);
        assert_same(
            "one range written",
            &buffer.to_host_vec(&stream).expect("all"),
            &want,
        );
        let view = buffer.slice(a..).expect("view");
        assert_eq!((view.len(), view.offset()), (n - a, a));
        assert_same(
            "read back",
            &view
                .slice(..b - a)
                .expect("sub")
                .to_host_vec(&stream)
                .expect("r"),
            &host[a..b],
        );
        // One half copied onto the other, on the device.
        let mid = n / 2;
        let (mut low, high) = buffer.split_at_mut(mid).expect("split");
        let len = mid.min(high.len());
        low.slice_mut(..len)
            .expect("low")
            .copy_from_device(&stream, &high.as_slice().slice(..len).expect("high"))
            .expect("device copy");
        let before = want.clone();
        want[..len].copy_from_slice(&before[mid..mid + len]);
        assert_same("halves", &buffer.to_host_vec(&stream).expect("all"), &want);
    }
}

#[test]
fn views_are_kernel_arguments() {
    let ctx = ctx();
    let module = kernels::load(ctx).expect("loads");
    let stream = ctx.new_stream().expect("stream");
    for n in [8usize, 4096, (1 << 20) + 4] {
        let host = random_f32(n);
        let mut buffer = DeviceBuffer::from_host(&stream, &host).expect("buffer");
        // Elements from `mid` (a multiple of 4 `f32`s: a 16-byte boundary) become 2.5 times
        // the elements before it; the first half is read while the second is written.
        let mid = (n / 2) & !3;
        let (low, mut high) = buffer.split_at_mut(mid).expect("split");
        let count = mid.min(high.len());
        let mut out = high.slice_mut(..count).expect("out");
        module
            .scale(
                &stream,
                &module.prepare_scale(config(count)).expect("prepared"),
                2.5,
                &low.as_slice(),
                &mut out,
            )
            .expect("launch");
        let mut want = host.clone();
        for i in 0..count {
            want[mid + i] = 2.5 * host[i];
        }
        assert_same(
            "views as arguments",
            &buffer.to_host_vec(&stream).expect("all"),
            &want,
        );
    }
}

#[test]
fn views_are_recorded_in_graphs() {
    let ctx = ctx();
    let module = kernels::load(ctx).expect("loads");
    let stream = ctx.new_stream().expect("stream");
    let n = 3000;
    let host = random_f32(n);
    let x = DeviceBuffer::from_host(&stream, &host).expect("x");
    let mut y = DeviceBuffer::from_host(&stream, &vec![POISON; 2 * n]).expect("y");
    let graph = Graph::capture(ctx, |s| {
        let (mut first, mut second) = y.split_at_mut(n)?;
        module.scale(s, &module.prepare_scale(config(n))?, -1.0, &x, &mut first)?;
        second.copy_from_device(s, &first)
    })
    .expect("captured");
    graph.launch(&stream).expect("replay");
    let negated: Vec<f32> = host.iter().map(|v| -v).collect();
    let want: Vec<f32> = negated.iter().chain(&negated).copied().collect();
    assert_same("both halves", &y.to_host_vec(&stream).expect("y"), &want);
}

#[test]
fn views_refuse_ranges_past_the_end_and_unaligned_kernel_arguments() {
    let ctx = ctx();
    let module = kernels::load(ctx).expect("loads");
    let stream = ctx.default_stream();
    let mut buffer = DeviceBuffer::from_host(&stream, &[1.0f32; 16]).expect("buffer");
    for (start, end) in [(0usize, 17usize), (9, 8), (17, 17)] {
        match buffer.slice(start..end) {
            Err(Error::RangeOutOfBounds { len: 16, .. }) => {}
            other => panic!("{start}..{end} of 16 must be refused, got {other:?}"),
        }
    }
    assert!(buffer.split_at_mut(17).is_err());
    assert!(
        buffer
            .slice(16..16)
            .expect("an empty view at the end")
            .is_empty()
    );
    // A view starting at element 1 is 4 bytes past a 16-byte boundary.
    let (low, mut high) = buffer.split_at_mut(8).expect("split");
    let mut off = high.slice_mut(1..5).expect("unaligned");
    let prepared = module.prepare_scale(config(4)).expect("prepared");
    match module.scale(&stream, &prepared, 1.0, &low.as_slice(), &mut off) {
        Err(Error::ArgumentMismatch { reason, .. }) => {
            assert!(reason.contains("multiple of 16 bytes"), "{reason}")
        }
        other => panic!("an unaligned slice argument must be refused, got {other:?}"),
    }
}
