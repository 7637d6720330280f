//! `prepare_<kernel>` checks a configuration against the kernel's `#[launch_contract]` and the
//! live device's limits, and names what is wrong in a typed error.

mod common;

use common::ctx;
use cuprum::simt::{DisjointSlice, kernel, launch_bounds, launch_contract, thread};
use cuprum::{Error, LaunchConfig, LaunchConfig1D, cuda_module};

#[cuda_module]
mod kernels {
    use super::*;

    #[kernel]
    #[launch_bounds(256)]
    #[launch_contract(domain = 1, block = (256, 1, 1))]
    pub fn fill(v: f32, mut y: DisjointSlice<f32>) {
        if let Some(out) = y.get_mut(thread::index_1d()) {
            *out = v;
        }
    }
}

fn expect_invalid(config: impl Into<LaunchConfig>, needle: &str) {
    let module = match kernels::load(ctx()) {
        Ok(m) => m,
        Err(e) => panic!("load: {e}"),
    };
    match module.prepare_fill(config) {
        Err(Error::InvalidLaunch { kernel, reason }) => {
            assert_eq!(kernel, "fill");
            assert!(reason.contains(needle), "expected `{needle}` in: {reason}");
        }
        Err(other) => panic!("expected InvalidLaunch, got {other}"),
        Ok(p) => panic!("expected InvalidLaunch, got {p:?}"),
    }
}

#[test]
fn a_matching_configuration_is_accepted() -> cuprum::Result<()> {
    let module = kernels::load(ctx())?;
    let prepared = module.prepare_fill(LaunchConfig1D::new(40, 256, 0))?;
    assert_eq!(
        prepared.config(),
        LaunchConfig::from(LaunchConfig1D::new(40, 256, 0))
    );
    Ok(())
}

#[test]
fn wrong_block_shape_is_rejected() {
    expect_invalid(LaunchConfig1D::new(4, 128, 0), "128");
}

#[test]
fn too_many_threads_per_block_are_rejected() {
    expect_invalid(LaunchConfig1D::new(1, 2048, 0), "2048");
}

#[test]
fn a_zero_grid_is_rejected() {
    expect_invalid(LaunchConfig1D::new(0, 256, 0), "grid");
}

#[test]
fn a_2d_grid_for_a_1d_contract_is_rejected() {
    expect_invalid(
        LaunchConfig {
            grid: (4, 2, 1),
            block: (256, 1, 1),
            shared_mem_bytes: 0,
        },
        "grid",
    );
}

#[test]
fn too_much_shared_memory_is_rejected() {
    expect_invalid(LaunchConfig1D::new(1, 256, 64 << 20), "shared");
}
