//! The run-time half of the safe API's promises (the compile-time half is in `tests/ui`):
//! every element a `DisjointSlice` hands out has exactly one thread, even where its linear
//! index would wrap; a launch touches only buffers of its own context; and work on different
//! streams that uses one buffer is ordered by that buffer.
//!
//! The stream tests make the ordering observable on a GPU: a kernel that spins for a few
//! milliseconds before it reads or writes, and an operation on another stream submitted right
//! after it, which without ordering would run first. On the emulator every operation completes
//! when submitted, so there they check only that results are right.

mod common;

use common::{assert_same, ctx};
use cuprum::simt::{DisjointSlice, kernel, launch_contract, thread};
use cuprum::{BackendKind, CudaContext, DeviceBuffer, Error, LaunchConfig, LaunchConfig1D};
use cuprum::{Stream, cuda_module};
use cuprum_testkit::poison::Poison;
use rand::Rng;

#[cuda_module]
mod kernels {
    use super::*;

    /// Thread (x, y) writes `y * 1000 + x` at its element of a `width`-wide matrix.
    #[kernel]
    #[launch_contract(domain = 2, block = (16, 16, 1))]
    pub fn mark_2d(width: usize, mut out: DisjointSlice<u64>) {
        let idx = thread::index_2d();
        if let Some(o) = out.get_mut_2d(idx, width) {
            *o = (idx.y() * 1000 + idx.x()) as u64;
        }
    }

    /// Thread (x, y, z) writes `z * 1_000_000 + y * 1000 + x` at its element.
    #[kernel]
    #[launch_contract(domain = 3, block = (8, 4, 4))]
    pub fn mark_3d(width: usize, height: usize, mut out: DisjointSlice<u64>) {
        let idx = thread::index_3d();
        if let Some(o) = out.get_mut_3d(idx, width, height) {
            *o = (idx.z() * 1_000_000 + idx.y() * 1000 + idx.x()) as u64;
        }
    }

    #[kernel]
    #[launch_contract(domain = 1, block = (64, 1, 1))]
    pub fn add(a: &[f32], b: &[f32], mut c: DisjointSlice<f32>) {
        let i = thread::index_1d();
        if let Some(o) = c.get_mut(i) {
            *o = a[i.get()] + b[i.get()];
        }
    }

    /// Spins for `rounds` steps of a generator (`zero` is 0; the compiler cannot know it), then
    /// writes `v` at the thread's element.
    #[kernel]
    #[launch_contract(domain = 1, block = (64, 1, 1))]
    pub fn slow_fill(rounds: u32, zero: u32, v: u32, mut out: DisjointSlice<u32>) {
        let mut x = thread::threadIdx_x();
        let mut k = 0u32;
        while k < rounds {
            x = x.wrapping_mul(1664525).wrapping_add(1013904223);
            k += 1;
        }
        if let Some(o) = out.get_mut(thread::index_1d()) {
            *o = v + (x & zero);
        }
    }

    /// Spins like `slow_fill`, then copies `src` into `out`.
    #[kernel]
    #[launch_contract(domain = 1, block = (64, 1, 1))]
    pub fn slow_copy(rounds: u32, zero: u32, src: &[u32], mut out: DisjointSlice<u32>) {
        let mut x = thread::threadIdx_x();
        let mut k = 0u32;
        while k < rounds {
            x = x.wrapping_mul(1664525).wrapping_add(1013904223);
            k += 1;
        }
        let i = thread::index_1d();
        if let Some(o) = out.get_mut(i) {
            *o = src[i.get()] + (x & zero);
        }
    }
}

const POISON: u64 = <u64 as Poison>::POISON;

/// Which thread `get_mut_2d` should give element `e` of a `len`-element matrix `width` wide,
/// in a grid of `cols` x `rows` threads: exact arithmetic, no wrapping.
fn owner_2d(e: u64, width: u64, cols: u64, rows: u64, len: u64) -> Option<(u64, u64)> {
    (0..rows)
        .flat_map(|y| (0..cols).map(move |x| (x, y)))
        .find(|&(x, y)| {
            x < width
                && u128::from(y) * u128::from(width) + u128::from(x) == u128::from(e)
                && e < len
        })
}

#[test]
fn a_2d_linear_index_that_would_wrap_gives_no_element() -> cuprum::Result<()> {
    let stream = ctx().default_stream();
    let module = kernels::load(ctx())?;
    // 16 x 16 threads; with width 2^63, row 2 starts at 2^64: it wraps to element 0 unless the
    // index is computed exactly.
    let (cols, rows) = (16u64, 16u64);
    let prepared = module.prepare_mark_2d(LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (16, 16, 1),
        shared_mem_bytes: 0,
    })?;
    let mut rng = rand::rng();
    let widths = [
        1u64 << 63,
        (1 << 63) + 1,
        u64::MAX,
        1 << 62,
        3,
        16,
        17,
        rng.random_range(1..40),
    ];
    for width in widths {
        let len = 300usize;
        let mut out = DeviceBuffer::from_host(&stream, &vec![POISON; len])?;
        module.mark_2d(&stream, &prepared, width as usize, &mut out)?;
        let want: Vec<u64> = (0..len as u64)
            .map(|e| match owner_2d(e, width, cols, rows, len as u64) {
                Some((x, y)) => y * 1000 + x,
                None => POISON,
            })
            .collect();
        assert_same(&format!("width {width}"), &out.to_host_vec(&stream)?, &want);
    }
    Ok(())
}

#[test]
fn a_3d_linear_index_that_would_wrap_gives_no_element() -> cuprum::Result<()> {
    let stream = ctx().default_stream();
    let module = kernels::load(ctx())?;
    let (gx, gy, gz) = (2u64, 2u64, 2u64);
    let prepared = module.prepare_mark_3d(LaunchConfig {
        grid_dim: (gx as u32, gy as u32, gz as u32),
        block_dim: (8, 4, 4),
        shared_mem_bytes: 0,
    })?;
    let (nx, ny, nz) = (8 * gx, 4 * gy, 4 * gz);
    let mut rng = rand::rng();
    let extents = [
        (1u64 << 32, 1u64 << 32),
        (1 << 32, (1 << 32) + 1),
        (u64::MAX, 2),
        (5, 1 << 63),
        (rng.random_range(1..20), rng.random_range(1..10)),
        (16, 8),
    ];
    for (w, h) in extents {
        let len = 1200u64;
        let mut out = DeviceBuffer::from_host(&stream, &vec![POISON; len as usize])?;
        module.mark_3d(&stream, &prepared, w as usize, h as usize, &mut out)?;
        let mut want = vec![POISON; len as usize];
        let mut writers = vec![0u32; len as usize];
        for z in 0..nz {
            for y in 0..ny {
                for x in 0..nx {
                    let linear = (u128::from(z) * u128::from(h) + u128::from(y)) * u128::from(w)
                        + u128::from(x);
                    if x < w && y < h && linear < u128::from(len) {
                        want[linear as usize] = z * 1_000_000 + y * 1000 + x;
                        writers[linear as usize] += 1;
                    }
                }
            }
        }
        assert!(
            writers.iter().all(|&n| n <= 1),
            "the reference itself maps two threads to one element"
        );
        assert_same(
            &format!("extents {w} x {h}"),
            &out.to_host_vec(&stream)?,
            &want,
        );
    }
    Ok(())
}

#[test]
fn buffers_of_another_context_are_refused_inputs_and_outputs() -> cuprum::Result<()> {
    let here = ctx();
    // On a GPU both are the device's primary context, but cuprum keeps them apart.
    let there = CudaContext::new(0)?;
    let (s_here, s_there) = (here.default_stream(), there.default_stream());
    let module = kernels::load(here)?;
    let n = 200;
    let a = common::random_f32(n);
    let b = common::random_f32(n);
    let da = DeviceBuffer::from_host(&s_here, &a)?;
    let db = DeviceBuffer::from_host(&s_here, &b)?;
    let db_there = DeviceBuffer::from_host(&s_there, &b)?;
    let mut out_here = DeviceBuffer::from_host(&s_here, &vec![f32::NAN; n])?;
    let mut out_there = DeviceBuffer::from_host(&s_there, &vec![f32::NAN; n])?;
    let prepared = module.prepare_add(LaunchConfig1D::for_len(n, 64))?;

    // An output of the other context: refused before anything runs, so it keeps its contents
    // and the inputs of this context (which an emulator context could once alias) keep theirs.
    match module.add(&s_here, &prepared, &da, &db, &mut out_there) {
        Err(Error::ContextMismatch) => {}
        other => panic!("expected ContextMismatch for an output of another context, got {other:?}"),
    }
    // An input of the other context.
    match module.add(&s_here, &prepared, &da, &db_there, &mut out_here) {
        Err(Error::ContextMismatch) => {}
        other => panic!("expected ContextMismatch for an input of another context, got {other:?}"),
    }
    assert!(out_there.to_host_vec(&s_there)?.iter().all(|v| v.is_nan()));
    assert!(out_here.to_host_vec(&s_here)?.iter().all(|v| v.is_nan()));
    assert_same("input a", &da.to_host_vec(&s_here)?, &a);
    assert_same("input b", &db_there.to_host_vec(&s_there)?, &b);

    // The same launch with this context's buffers runs.
    module.add(&s_here, &prepared, &da, &db, &mut out_here)?;
    let want: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x + y).collect();
    assert_same("a + b", &out_here.to_host_vec(&s_here)?, &want);
    Ok(())
}

#[test]
fn emulated_contexts_never_share_an_address() -> cuprum::Result<()> {
    let (one, two) = (CudaContext::emulator(), CudaContext::emulator());
    let a = DeviceBuffer::from_host(&one.default_stream(), &[1u32; 64])?;
    let b = DeviceBuffer::from_host(&two.default_stream(), &[2u32; 64])?;
    assert_ne!(a.device_address(), b.device_address());
    let (a_end, b_end) = (a.device_address() + 256, b.device_address() + 256);
    assert!(a_end <= b.device_address() || b_end <= a.device_address());
    Ok(())
}

/// Spin rounds that take a few milliseconds on a GPU, and almost nothing on the emulator.
fn rounds() -> u32 {
    match ctx().backend() {
        BackendKind::Cuda => 2_000_000,
        BackendKind::Emulator => 20,
    }
}

const N: usize = 4096;

fn streams() -> cuprum::Result<(Stream, Stream, Stream)> {
    Ok((
        ctx().new_stream()?,
        ctx().new_stream()?,
        ctx().new_stream()?,
    ))
}

#[test]
fn a_read_on_another_stream_waits_for_the_kernel_that_writes() -> cuprum::Result<()> {
    let (s1, s2, _) = streams()?;
    let module = kernels::load(ctx())?;
    let prepared = module.prepare_slow_fill(LaunchConfig1D::for_len(N, 64))?;
    let v = rand::rng().random_range(1..1_000_000u32);
    let mut out = DeviceBuffer::from_host(&ctx().default_stream(), &vec![0xCDCD_CDCDu32; N])?;
    module.slow_fill(&s1, &prepared, rounds(), 0, v, &mut out)?;
    // Submitted while the kernel spins: without ordering it would copy the poison.
    assert_same(
        "read on another stream",
        &out.to_host_vec(&s2)?,
        &vec![v; N],
    );
    Ok(())
}

#[test]
fn a_write_on_another_stream_waits_for_the_kernel_that_reads() -> cuprum::Result<()> {
    let (s1, s2, _) = streams()?;
    let module = kernels::load(ctx())?;
    let prepared = module.prepare_slow_copy(LaunchConfig1D::for_len(N, 64))?;
    let old = common::random_u32(N);
    let mut src = DeviceBuffer::from_host(&ctx().default_stream(), &old)?;
    let mut out = DeviceBuffer::from_host(&ctx().default_stream(), &vec![7u32; N])?;
    module.slow_copy(&s1, &prepared, rounds(), 0, &src, &mut out)?;
    // Without ordering, this overwrites `src` before the spinning kernel reads it.
    src.copy_from_host(&s2, &common::random_u32(N))?;
    assert_same("the kernel's copy", &out.to_host_vec(&s1)?, &old);
    Ok(())
}

#[test]
fn a_write_waits_for_the_reads_of_every_other_stream() -> cuprum::Result<()> {
    let (s1, s2, s3) = streams()?;
    let module = kernels::load(ctx())?;
    let prepared = module.prepare_slow_copy(LaunchConfig1D::for_len(N, 64))?;
    let old = common::random_u32(N);
    let mut src = DeviceBuffer::from_host(&ctx().default_stream(), &old)?;
    let mut slow = DeviceBuffer::from_host(&ctx().default_stream(), &vec![7u32; N])?;
    let mut fast = DeviceBuffer::from_host(&ctx().default_stream(), &vec![7u32; N])?;
    // The first reader spins longest: a write that waited only for the last reader's stream
    // would overwrite `src` while the first still spins.
    module.slow_copy(&s1, &prepared, rounds() * 4, 0, &src, &mut slow)?;
    module.slow_copy(&s2, &prepared, rounds() / 4, 0, &src, &mut fast)?;
    src.copy_from_host(&s3, &common::random_u32(N))?;
    assert_same("first reader", &slow.to_host_vec(&s3)?, &old);
    assert_same("second reader", &fast.to_host_vec(&s3)?, &old);
    Ok(())
}

#[test]
fn a_kernel_that_writes_waits_for_a_slower_write_of_another_stream() -> cuprum::Result<()> {
    let (s1, s2, _) = streams()?;
    let module = kernels::load(ctx())?;
    let prepared = module.prepare_slow_fill(LaunchConfig1D::for_len(N, 64))?;
    let mut out = DeviceBuffer::from_host(&ctx().default_stream(), &vec![0u32; N])?;
    module.slow_fill(&s1, &prepared, rounds(), 0, 1, &mut out)?;
    // Fast, but submitted second: it must land last.
    module.slow_fill(&s2, &prepared, 0, 0, 2, &mut out)?;
    assert_same("last write wins", &out.to_host_vec(&s2)?, &vec![2u32; N]);
    // A device-to-device copy on a third stream reads what the second wrote.
    let mut copy = DeviceBuffer::from_host(&ctx().default_stream(), &vec![0u32; N])?;
    let s3 = ctx().new_stream()?;
    module.slow_fill(&s1, &prepared, rounds(), 0, 3, &mut out)?;
    copy.copy_from_device(&s3, &out)?;
    assert_same(
        "copy after a write",
        &copy.to_host_vec(&s2)?,
        &vec![3u32; N],
    );
    Ok(())
}

#[test]
fn the_default_stream_is_ordered_with_every_stream() -> cuprum::Result<()> {
    let (s1, _, _) = streams()?;
    let module = kernels::load(ctx())?;
    let prepared = module.prepare_slow_fill(LaunchConfig1D::for_len(N, 64))?;
    let stream = ctx().default_stream();
    let mut out = DeviceBuffer::from_host(&stream, &vec![0u32; N])?;
    module.slow_fill(&s1, &prepared, rounds(), 0, 5, &mut out)?;
    assert_same(
        "default after s1",
        &out.to_host_vec(&stream)?,
        &vec![5u32; N],
    );
    module.slow_fill(&stream, &prepared, rounds(), 0, 6, &mut out)?;
    assert_same("s1 after default", &out.to_host_vec(&s1)?, &vec![6u32; N]);
    Ok(())
}
