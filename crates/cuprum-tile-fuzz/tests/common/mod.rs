//! What the tile fuzz tests share: the device every test of a binary runs on (the one
//! `CudaContext::new(0)` picks: the emulator here, the GPU where `gpu-pack` runs the test
//! binaries with `CUPRUM_DEVICE=cuda`), and running cases there with readable failures.

#![allow(dead_code)]

use std::sync::OnceLock;

use cuprum_runtime::{BackendKind, CudaContext};
use cuprum_tile_fuzz::{Case, check_batch};

/// The context every test of the binary shares.
pub fn ctx() -> &'static CudaContext {
    static CTX: OnceLock<CudaContext> = OnceLock::new();
    CTX.get_or_init(|| match CudaContext::new(0) {
        Ok(c) => c,
        Err(e) => panic!("no device for the tests: {e}"),
    })
}

/// Whether the tests run on a GPU.
pub fn on_gpu() -> bool {
    ctx().backend() == BackendKind::Cuda
}

/// Checks `cases` three ways on the shared device; panics with a report of every failure
/// (the case's seed, what differed, its arguments and tile IR).
#[track_caller]
pub fn check_all(what: &str, cases: &[Case]) {
    let results = check_batch(ctx(), cases);
    let failures: Vec<String> = cases
        .iter()
        .zip(results)
        .filter_map(|(c, r)| r.err().map(|f| c.report(&f)))
        .collect();
    assert!(
        failures.is_empty(),
        "{what}: {} of {} case(s) failed on {}:\n\n{}",
        failures.len(),
        cases.len(),
        ctx().backend(),
        failures.join("\n\n")
    );
}
