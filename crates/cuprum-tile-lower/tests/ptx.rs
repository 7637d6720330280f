//! The lowered kernels through the PTX writer: optimized, written for sm_80 and sm_90, and
//! assembled by ptxas when `cuprum_testkit::ptxas` finds it.

mod common;

use common::kernels;
use cuprum_ir::{Module, ScalarType};
use cuprum_ptx::{Target, write_module};
use cuprum_testkit::{numbered, ptxas};
use cuprum_tile_ir::{Combine, Literal};
use cuprum_tile_lower::{LowerOptions, lower_with};

fn write_and_assemble(tile: &cuprum_tile_ir::TileKernel, options: &LowerOptions) {
    let mut lowered = lower_with(tile, options).unwrap_or_else(|e| panic!("{e}"));
    cuprum_opt::optimize_kernel(&mut lowered.kernel);
    let name = lowered.kernel.name.clone();
    let module = Module {
        kernels: vec![lowered.kernel],
    };
    for target in [Target::Sm80, Target::Sm90] {
        let ptx = write_module(&module, target).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(
            ptx.contains(&format!(".target {}\n", target.name())),
            "{ptx}"
        );
        assert!(ptx.contains(&format!(".visible .entry {name}(")), "{ptx}");
        assert!(
            ptx.contains(&format!(".reqntid {}", lowered.block_threads)),
            "{name}: the block size is part of the entry\n{ptx}"
        );
        if let Err(e) = ptxas::check(&ptx, target.name()) {
            panic!("{name}: {e}\n--- PTX ---\n{}", numbered(&ptx));
        }
    }
}

#[test]
fn lowered_kernels_write_and_assemble() {
    let default = LowerOptions::default();
    let kernels = [
        kernels::add(ScalarType::F32, 1024),
        kernels::add(ScalarType::F16, 512),
        kernels::add(ScalarType::F64, 256),
        kernels::add(ScalarType::U8, 2048),
        kernels::softmax([1, 4096]),
        kernels::softmax([2, 128]),
        kernels::softmax([3, 100]),
        kernels::transpose(),
        kernels::control(),
        kernels::row_reduce(ScalarType::U8, |_| Combine::Max, [2, 1024], Literal::Int(0)),
        kernels::row_reduce(
            ScalarType::I64,
            |_| Combine::Sum,
            [2, 1024],
            Literal::Int(0),
        ),
        kernels::row_reduce(
            ScalarType::F16,
            |_| Combine::Max,
            [2, 1024],
            Literal::Int(0),
        ),
        kernels::row_reduce(
            ScalarType::F64,
            |_| Combine::Sum,
            [2, 1024],
            Literal::Int(0),
        ),
        kernels::any_above([4, 512], 0.9),
    ];
    for k in &kernels {
        write_and_assemble(k, &default);
        write_and_assemble(
            k,
            &LowerOptions {
                num_warps: Some(2),
                ..LowerOptions::default()
            },
        );
    }
}

/// `occupancy` becomes the entry's `.minnctapersm` (beside its `.reqntid`), which ptxas
/// honours; values outside 1..=32 are refused before anything is emitted.
#[test]
fn occupancy_is_declared_to_the_ptx_compiler() {
    let tile = kernels::softmax([1, 4096]);
    let options = LowerOptions {
        num_warps: Some(16),
        occupancy: Some(4),
        ..LowerOptions::default()
    };
    write_and_assemble(&tile, &options);
    let mut lowered = lower_with(&tile, &options).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(lowered.block_threads, 512);
    cuprum_opt::optimize_kernel(&mut lowered.kernel);
    let module = Module {
        kernels: vec![lowered.kernel],
    };
    let ptx = write_module(&module, Target::Sm90).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        ptx.contains(".reqntid 512, 1, 1\n.minnctapersm 4\n"),
        "{ptx}"
    );
    for bad in [0, 33] {
        let e = lower_with(
            &tile,
            &LowerOptions {
                occupancy: Some(bad),
                ..LowerOptions::default()
            },
        )
        .expect_err("out of range");
        assert!(e.to_string().contains("1 to 32 is required"), "{e}");
    }
}

/// An occupancy that 2048 threads per multiprocessor cannot hold is lowered to what fits
/// (a hint, as cuTile's), so ptxas does not ignore it.
#[test]
fn occupancy_beyond_the_multiprocessor_is_what_fits() {
    let tile = kernels::softmax([1, 4096]);
    let mut lowered = lower_with(
        &tile,
        &LowerOptions {
            num_warps: Some(16),
            occupancy: Some(8),
            ..LowerOptions::default()
        },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    cuprum_opt::optimize_kernel(&mut lowered.kernel);
    let ptx = write_module(
        &Module {
            kernels: vec![lowered.kernel],
        },
        Target::Sm90,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        ptx.contains(".reqntid 512, 1, 1\n.minnctapersm 4\n"),
        "{ptx}"
    );
}
