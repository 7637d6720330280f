//! `prepare_<kernel>` checks a configuration against the kernel's `#[launch_contract]` and the
//! live device's limits, and names what is wrong in a typed error; the raw launch of an
//! `unsafe` kernel that declares its block refuses any other block.

mod common;

use common::ctx;
use cuprum::simt::{DisjointSlice, kernel, launch_bounds, launch_contract, thread};
use cuprum::{DeviceBuffer, Error, LaunchConfig, LaunchConfig1D, cuda_module};

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

    /// Writes `v + threadIdx.y * 32 + threadIdx.x` at the thread's place in its block's 256
    /// elements; compiled for 32x8 blocks, so it indexes without checks it could drop.
    #[kernel]
    #[launch_contract(block = (32, 8, 1))]
    pub unsafe fn fill_tiles(v: f32, y: &mut [f32]) {
        let t = thread::threadIdx_y() * 32 + thread::threadIdx_x();
        let i = thread::blockIdx_x() as usize * 256 + t as usize;
        if i < y.len() {
            y[i] = v + t as f32;
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
            grid_dim: (4, 2, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        },
        "grid",
    );
}

#[test]
fn too_much_shared_memory_is_rejected() {
    expect_invalid(LaunchConfig1D::new(1, 256, 64 << 20), "shared");
}

fn launch_tiles(block: (u32, u32, u32)) -> cuprum::Result<Vec<f32>> {
    let module = kernels::load(ctx())?;
    let stream = ctx().default_stream();
    let mut y = DeviceBuffer::from_host(&stream, &[f32::NAN; 512])?;
    let config = LaunchConfig {
        grid_dim: (2, 1, 1),
        block_dim: block,
        shared_mem_bytes: 0,
    };
    // SAFETY: every thread writes its own element, inside `y`.
    unsafe { module.fill_tiles(&stream, config, 1.0, &mut y)? };
    y.to_host_vec(&stream)
}

#[test]
fn an_unsafe_kernel_runs_with_the_block_it_declares() -> cuprum::Result<()> {
    let got = launch_tiles((32, 8, 1))?;
    let want: Vec<f32> = (0..512).map(|i| 1.0 + (i % 256) as f32).collect();
    assert_eq!(got, want);
    Ok(())
}

#[test]
fn a_raw_launch_with_another_block_is_refused() {
    for block in [(256, 1, 1), (8, 32, 1), (32, 4, 1)] {
        match launch_tiles(block) {
            Err(Error::InvalidLaunch { kernel, reason }) => {
                assert_eq!(kernel, "fill_tiles");
                assert!(
                    reason.contains("(32, 8, 1)") && reason.contains("#[launch_contract]"),
                    "{reason}"
                );
            }
            Err(other) => panic!("block {block:?}: expected InvalidLaunch, got {other}"),
            Ok(_) => panic!("block {block:?}: the launch was not refused"),
        }
    }
}
