//! The emulator finds the bugs that make GPU code hard: each kernel here plants one (a shared
//! memory race, a barrier only part of a block reaches, a read of shared memory nothing wrote,
//! an index past a shared array) and the test asserts the typed error names the kernel, the
//! block, the thread and the address. Correct kernels elsewhere in the suite assert that
//! nothing is reported. On a GPU these kernels are undefined behaviour, so there the tests
//! only check that they do not run unnoticed on the emulator path.

mod common;

use common::ctx;
use cuprum::simt::{DisjointSlice, SharedArray, kernel, launch_contract, sync_threads, thread};
use cuprum::{BackendKind, DeviceBuffer, Error, LaunchConfig1D, cuda_module};
use cuprum_emu::{EmuError, RaceKind};

#[cuda_module]
mod kernels {
    use super::*;

    /// Reads a neighbour's element with no barrier after the writes: a read/write race.
    #[kernel]
    #[launch_contract(domain = 1, block = (64, 1, 1))]
    pub fn missing_barrier(mut out: DisjointSlice<f32>) {
        let tile = SharedArray::<f32, 64>::uninit();
        let t = thread::threadIdx_x() as usize;
        unsafe { tile.set(t, t as f32) };
        let next = unsafe { tile.get((t + 1) % 64) };
        if let Some(o) = out.get_mut(thread::index_1d()) {
            *o = next;
        }
    }

    /// Every thread writes element 0: a write/write race.
    #[kernel]
    #[launch_contract(domain = 1, block = (64, 1, 1))]
    pub fn everyone_writes_one(mut out: DisjointSlice<f32>) {
        let tile = SharedArray::<f32, 64>::uninit();
        let t = thread::threadIdx_x();
        unsafe { tile.set(0, t as f32) };
        sync_threads();
        if let Some(o) = out.get_mut(thread::index_1d()) {
            *o = unsafe { tile.get(0) };
        }
    }

    /// Threads 0..48 wait at one barrier, threads 48..64 at another: the second warp splits.
    /// (A whole warp that skips a barrier and exits is fine, as on the GPU.)
    #[kernel]
    #[launch_contract(domain = 1, block = (64, 1, 1))]
    pub fn divergent_barrier(mut out: DisjointSlice<f32>) {
        let t = thread::threadIdx_x();
        if t < 48 {
            sync_threads();
        }
        sync_threads();
        if let Some(o) = out.get_mut(thread::index_1d()) {
            *o = t as f32;
        }
    }

    /// Reads shared memory that nothing wrote.
    #[kernel]
    #[launch_contract(domain = 1, block = (64, 1, 1))]
    pub fn uninitialized_read(mut out: DisjointSlice<f32>) {
        let tile = SharedArray::<f32, 64>::uninit();
        let t = thread::threadIdx_x() as usize;
        if t > 0 {
            unsafe { tile.set(t, 1.0) };
        }
        sync_threads();
        if let Some(o) = out.get_mut(thread::index_1d()) {
            *o = unsafe { tile.get(t) };
        }
    }

    /// Indexes past the end of a shared array.
    #[kernel]
    #[launch_contract(domain = 1, block = (64, 1, 1))]
    pub fn shared_overrun(mut out: DisjointSlice<f32>) {
        let tile = SharedArray::<f32, 64>::uninit();
        let t = thread::threadIdx_x() as usize;
        unsafe { tile.set(t, 2.0) };
        sync_threads();
        if let Some(o) = out.get_mut(thread::index_1d()) {
            *o = unsafe { tile.get(t + 10) };
        }
    }
}

/// Runs one planted-bug kernel on the emulator and returns its error. `None` on a GPU, where
/// the bug is undefined behaviour rather than a diagnosable error.
fn planted(
    launch: impl FnOnce(&kernels::Module, &cuprum::Stream, &mut DeviceBuffer<f32>) -> cuprum::Result<()>,
) -> Option<EmuError> {
    let ctx = ctx();
    if ctx.backend() != BackendKind::Emulator {
        eprintln!("planted-bug kernels only run on the emulator");
        return None;
    }
    let stream = ctx.default_stream();
    let module = match kernels::load(ctx) {
        Ok(m) => m,
        Err(e) => panic!("load: {e}"),
    };
    let mut out = match DeviceBuffer::from_host(&stream, &[f32::NAN; 128]) {
        Ok(b) => b,
        Err(e) => panic!("buffer: {e}"),
    };
    match launch(&module, &stream, &mut out) {
        Err(Error::Emulator { source, .. }) => Some(source),
        Err(other) => panic!("expected an emulator diagnostic, got {other}"),
        Ok(()) => panic!("the planted bug went unnoticed"),
    }
}

fn config() -> LaunchConfig1D {
    LaunchConfig1D::new(2, 64, 0)
}

#[test]
fn a_missing_barrier_is_a_read_write_race() {
    let Some(e) =
        planted(|m, s, out| m.missing_barrier(s, &m.prepare_missing_barrier(config())?, out))
    else {
        return;
    };
    match &e {
        EmuError::SharedRace {
            kernel,
            kind,
            threads,
            ..
        } => {
            assert_eq!(kernel, "missing_barrier");
            assert_eq!(*kind, RaceKind::ReadWrite);
            assert_ne!(threads.0, threads.1);
        }
        other => panic!("expected a read/write race, got {other}"),
    }
    let text = e.to_string();
    assert!(
        text.contains("missing_barrier") && text.contains("block"),
        "{text}"
    );
}

#[test]
fn two_writers_of_one_element_are_a_write_write_race() {
    let Some(e) = planted(|m, s, out| {
        m.everyone_writes_one(s, &m.prepare_everyone_writes_one(config())?, out)
    }) else {
        return;
    };
    assert!(
        matches!(
            &e,
            EmuError::SharedRace {
                kind: RaceKind::WriteWrite,
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn a_barrier_reached_by_half_the_block_is_reported() {
    let Some(e) =
        planted(|m, s, out| m.divergent_barrier(s, &m.prepare_divergent_barrier(config())?, out))
    else {
        return;
    };
    assert!(matches!(&e, EmuError::BarrierDivergence { .. }), "{e}");
}

#[test]
fn reading_shared_memory_nothing_wrote_is_reported() {
    let Some(e) =
        planted(|m, s, out| m.uninitialized_read(s, &m.prepare_uninitialized_read(config())?, out))
    else {
        return;
    };
    match &e {
        EmuError::UninitializedSharedRead { kernel, thread, .. } => {
            assert_eq!(kernel, "uninitialized_read");
            assert_eq!(thread[0], 0, "only thread 0 reads an unwritten element");
        }
        other => panic!("expected an uninitialized read, got {other}"),
    }
}

#[test]
fn an_index_past_a_shared_array_is_a_bounds_check_failure() {
    let Some(e) =
        planted(|m, s, out| m.shared_overrun(s, &m.prepare_shared_overrun(config())?, out))
    else {
        return;
    };
    match &e {
        EmuError::BoundsCheck {
            kernel,
            index,
            len,
            site,
            ..
        } => {
            assert_eq!(kernel, "shared_overrun");
            assert_eq!(*len, 64);
            assert!(*index >= 64, "{index}");
            assert!(site.contains("tile"), "{site}");
        }
        other => panic!("expected a bounds-check failure, got {other}"),
    }
}
