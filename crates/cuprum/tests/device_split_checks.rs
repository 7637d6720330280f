//! The run-time checks of phased shared memory's split phase: a level whose boundary grows
//! (`s2 > s`), a boundary past the array, a read below the boundary. Each stops the kernel
//! with an error that says which. Alone in its test binary: on a GPU the first trap leaves the
//! CUDA context unusable, as CUDA specifies, so there only the first failure is checked (as a
//! fault naming the kernel); the emulator checks all three, and their messages.

mod common;

use common::ctx;
use cuprum::simt::{DisjointSlice, SharedWrite, kernel, launch_contract};
use cuprum::{DeviceBuffer, Error, LaunchConfig1D, Stream, cuda_module};
use cuprum_testkit::poison::poisoned;

#[cuda_module]
mod kernels {
    use super::*;

    /// A 256-element split phase for 128 threads (two elements each): boundary `first`,
    /// where threads write `1000 + k` into their elements `k` below it, then `second` (which
    /// must be at most `first`), where they read element `at` (which must be at or above
    /// `second`), then the read phase. Each block's first thread reports `got + 10_000 *
    /// boundary + 1_000_000 * element 255`. The run-time checks of the split phase, and the
    /// writes of one level read in the next.
    #[kernel]
    #[launch_contract(domain = 1, block = (128, 1, 1))]
    pub fn split_levels(first: u32, second: u32, at: u32, mut out: DisjointSlice<u32>) {
        let mut tile = SharedWrite::<u32, 256>::new();
        for (i, slot) in tile.mine() {
            *slot = i as u32;
        }
        let mut split = tile.sync_split(first as usize);
        let b = split.boundary() as u32;
        for (k, slot) in split.mine_below() {
            *slot = 1000 + k as u32;
        }
        split = split.sync_split(second as usize);
        let got = split[at as usize];
        let read = split.sync();
        if let Some(o) = out.block_result_mut() {
            *o = got + 10_000 * b + 1_000_000 * read[255];
        }
    }
}

/// Runs `split_levels(first, second, at)` on two blocks of 128 threads: what each block read,
/// or the error that stopped it.
fn split_levels(
    m: &kernels::Module,
    stream: &Stream,
    first: u32,
    second: u32,
    at: u32,
) -> cuprum::Result<Vec<u32>> {
    let mut out = DeviceBuffer::from_host(stream, &poisoned::<u32>(2))?;
    let p = m.prepare_split_levels(LaunchConfig1D::new(2, 128, 0))?;
    m.split_levels(stream, &p, first, second, at, &mut out)
        .and_then(|()| stream.synchronize())?;
    out.to_host_vec(stream)
}

/// `result` is the error of a split-phase check: on the emulator one whose message contains
/// `needle` (`true`), on a GPU a fault naming the kernel (`false`: the context is then
/// unusable).
fn split_trap(result: cuprum::Result<Vec<u32>>, needle: &str) -> bool {
    match result {
        Err(Error::Emulator { kernel, source }) => {
            assert_eq!(kernel, "split_levels");
            let text = source.to_string();
            assert!(text.contains(needle), "{text}");
            true
        }
        Err(Error::KernelFault { kernel, .. }) => {
            assert_eq!(kernel, "split_levels");
            false
        }
        Err(other) => panic!("unexpected error: {other}"),
        Ok(got) => panic!("the broken split went unnoticed: {got:?}"),
    }
}

#[test]
fn split_boundaries_and_reads_below_them_are_checked_at_run_time() -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    // What `split_levels` reports: elements below `first` were rewritten in its level.
    let want = |first: u32, second: u32, at: u32| {
        let _ = second;
        let element = |j: u32| if j < first { 1000 + j } else { j };
        let v = element(at) + 10_000 * first + 1_000_000 * element(255);
        vec![v, v]
    };
    for (first, second, at) in [
        (256, 200, 200),
        (256, 200, 255),
        (100, 100, 100),
        (200, 0, 0),
    ] {
        assert_eq!(
            split_levels(&m, &stream, first, second, at)?,
            want(first, second, at),
            "split_levels({first}, {second}, {at})"
        );
    }
    // A level whose boundary grows (s2 > s).
    if !split_trap(
        split_levels(&m, &stream, 100, 101, 200),
        "is above the current boundary",
    ) {
        return Ok(());
    }
    // A boundary past the array.
    split_trap(
        split_levels(&m, &stream, 257, 200, 200),
        "is above the array's length",
    );
    // A read below the boundary.
    split_trap(
        split_levels(&m, &stream, 256, 200, 199),
        "reads below the split boundary",
    );
    Ok(())
}
