//! Launch contracts: every way a configuration can break a contract or the device limits is
//! an `InvalidLaunch` that names the kernel and the numbers; a fitting one passes.

mod common;

use common::ctx;
use cuprum_runtime::{CudaContext, Error, LaunchConfig, LaunchConfig1D, LaunchContract};

const SAXPY: LaunchContract = LaunchContract {
    kernel: "saxpy",
    domain: 1,
    block: (128, 1, 1),
    max_threads: Some(128),
    dynamic_shared: None,
};

fn invalid(ctx: &CudaContext, contract: &LaunchContract, config: LaunchConfig) -> String {
    match contract.check(ctx, &config) {
        Err(Error::InvalidLaunch { kernel, reason }) => {
            assert_eq!(kernel, contract.kernel);
            let message = Error::InvalidLaunch {
                kernel: kernel.clone(),
                reason: reason.clone(),
            }
            .to_string();
            assert!(message.contains(contract.kernel), "{message}");
            reason
        }
        other => panic!("{config:?} against {contract:?}: expected InvalidLaunch, got {other:?}"),
    }
}

fn assert_mentions(reason: &str, needles: &[&str]) {
    for needle in needles {
        assert!(
            reason.contains(needle),
            "reason `{reason}` lacks `{needle}`"
        );
    }
}

#[test]
fn fitting_configs_pass() {
    let ctx = ctx();
    SAXPY
        .check(&ctx, &LaunchConfig1D::new(32, 128, 0).into())
        .unwrap();
    SAXPY
        .check(&ctx, &LaunchConfig1D::for_len(4096, 128).into())
        .unwrap();
    let tile = LaunchContract {
        kernel: "tile",
        domain: 2,
        block: (16, 16, 1),
        max_threads: None,
        dynamic_shared: None,
    };
    let config = LaunchConfig {
        grid_dim: (7, 9, 1),
        block_dim: (16, 16, 1),
        shared_mem_bytes: 4096,
    };
    tile.check(&ctx, &config).unwrap();
}

#[test]
fn wrong_block_shape() {
    let ctx = ctx();
    let reason = invalid(&ctx, &SAXPY, LaunchConfig1D::new(32, 256, 0).into());
    assert_mentions(&reason, &["(256, 1, 1)", "(128, 1, 1)"]);
    let reason = invalid(
        &ctx,
        &SAXPY,
        LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: (64, 2, 1),
            shared_mem_bytes: 0,
        },
    );
    assert_mentions(&reason, &["(64, 2, 1)"]);
}

#[test]
fn too_many_threads() {
    let ctx = ctx();
    let max = ctx.limits().max_threads_per_block;
    // Above the device limit, with a block dimension the device would accept alone.
    let big = LaunchContract {
        kernel: "big",
        domain: 2,
        block: (32, max / 32 + 1, 1),
        max_threads: None,
        dynamic_shared: None,
    };
    let reason = invalid(
        &ctx,
        &big,
        LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: big.block,
            shared_mem_bytes: 0,
        },
    );
    assert_mentions(
        &reason,
        &[&(32 * (max / 32 + 1)).to_string(), &max.to_string()],
    );
    // Above the kernel's launch bounds.
    let bounded = LaunchContract {
        kernel: "bounded",
        domain: 1,
        block: (256, 1, 1),
        max_threads: Some(128),
        dynamic_shared: None,
    };
    let reason = invalid(&ctx, &bounded, LaunchConfig1D::new(4, 256, 0).into());
    assert_mentions(&reason, &["256 threads", "launch bounds of 128"]);
    // A block dimension above the device's limit for that axis.
    let zmax = ctx.limits().max_block_dim[2];
    let deep = LaunchContract {
        kernel: "deep",
        domain: 3,
        block: (1, 1, zmax + 1),
        max_threads: None,
        dynamic_shared: None,
    };
    let reason = invalid(
        &ctx,
        &deep,
        LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: deep.block,
            shared_mem_bytes: 0,
        },
    );
    assert_mentions(&reason, &["dimension z", &(zmax + 1).to_string()]);
}

#[test]
fn zero_sizes() {
    let ctx = ctx();
    let reason = invalid(&ctx, &SAXPY, LaunchConfig1D::new(0, 128, 0).into());
    assert_mentions(&reason, &["grid dimension x is 0"]);
    let flat = LaunchContract {
        kernel: "flat",
        domain: 1,
        block: (0, 1, 1),
        max_threads: None,
        dynamic_shared: None,
    };
    let reason = invalid(&ctx, &flat, LaunchConfig1D::new(1, 0, 0).into());
    assert_mentions(&reason, &["block dimension x is 0"]);
}

#[test]
fn grid_too_large() {
    let ctx = ctx();
    let [gx, gy, _] = ctx.limits().max_grid_dim;
    if let Some(too_big) = gx.checked_add(1) {
        let reason = invalid(&ctx, &SAXPY, LaunchConfig1D::new(too_big, 128, 0).into());
        assert_mentions(&reason, &[&too_big.to_string(), &gx.to_string()]);
    }
    let planar = LaunchContract {
        kernel: "planar",
        domain: 2,
        block: (32, 4, 1),
        max_threads: None,
        dynamic_shared: None,
    };
    let reason = invalid(
        &ctx,
        &planar,
        LaunchConfig {
            grid_dim: (1, gy + 1, 1),
            block_dim: (32, 4, 1),
            shared_mem_bytes: 0,
        },
    );
    assert_mentions(&reason, &["dimension y", &(gy + 1).to_string()]);
}

#[test]
fn grid_outside_the_domain() {
    let ctx = ctx();
    let reason = invalid(
        &ctx,
        &SAXPY,
        LaunchConfig {
            grid_dim: (4, 2, 1),
            block_dim: (128, 1, 1),
            shared_mem_bytes: 0,
        },
    );
    assert_mentions(&reason, &["y = 2", "1-dimensional"]);
    let planar = LaunchContract {
        kernel: "planar",
        domain: 2,
        block: (16, 16, 1),
        max_threads: None,
        dynamic_shared: None,
    };
    let reason = invalid(
        &ctx,
        &planar,
        LaunchConfig {
            grid_dim: (4, 4, 3),
            block_dim: (16, 16, 1),
            shared_mem_bytes: 0,
        },
    );
    assert_mentions(&reason, &["z = 3", "2-dimensional"]);
    let bad_domain = LaunchContract { domain: 4, ..SAXPY };
    let reason = invalid(&ctx, &bad_domain, LaunchConfig1D::new(1, 128, 0).into());
    assert_mentions(&reason, &["domain = 4"]);
}

#[test]
fn too_much_shared_memory() {
    let ctx = ctx();
    let limit = ctx.limits().max_shared_per_block_optin;
    assert!(limit >= ctx.limits().max_shared_per_block);
    SAXPY
        .check(&ctx, &LaunchConfig1D::new(1, 128, limit).into())
        .unwrap();
    let reason = invalid(&ctx, &SAXPY, LaunchConfig1D::new(1, 128, limit + 1).into());
    assert_mentions(&reason, &[&(limit + 1).to_string(), &limit.to_string()]);
}

#[test]
fn limits_are_plausible() {
    let ctx = ctx();
    let l = ctx.limits();
    assert!(!l.name.is_empty());
    assert!(l.compute_capability.0 >= 1);
    assert!(l.max_threads_per_block >= 1024);
    assert!(l.max_block_dim[0] >= 1024 && l.max_block_dim[2] >= 64);
    assert!(l.max_grid_dim[0] >= 65535 && l.max_grid_dim[1] >= 65535);
    assert!(l.max_shared_per_block >= 48 * 1024);
    assert_eq!(l.warp_size, 32);
    assert!(l.multiprocessor_count >= 1);
    assert!(l.total_memory > 0);
    // What the compile cache's occupancy arithmetic reads (every sm_80+ part: 64K registers
    // per SM and per block, at least 1536 threads and 16 blocks per SM).
    let sm = cuprum_runtime::cache::occupancy::SmLimits::of(l).expect("SM limits reported");
    assert!(sm.registers_per_sm >= 65536 && sm.registers_per_block >= 65536);
    assert!(sm.max_threads_per_sm >= 1536 && sm.max_blocks_per_sm >= 16);
    assert_eq!(sm.register_step(), 8);
}
