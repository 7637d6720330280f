//! The tensor memory accelerator's statements in PTX: the text of each form (tile loads and
//! stores of 1 to 5 dimensions through a tensor-map parameter and through a map in global
//! memory, the plain bulk copy, commit and both waits), the tensor-map parameter's
//! declaration and 1024-byte-aligned shared arrays, that ptxas assembles them for sm_90 and
//! sm_90a, and their refusal on sm_80.

mod common;

use common::*;
use cuprum_ir::{ArrayDecl, MbarrierOp, Op, ParamKind, ScalarType as S, TensorMapRef, TmaOp};
use cuprum_ptx::{PtxError, Target, write_module};
use cuprum_testkit::{numbered, ptxas};

/// A kernel with a 1024-byte-aligned tile and an mbarrier, doing a `rank`-d tile load and
/// store through tensor-map parameter 0 and through the map at the address in slice
/// parameter 2, a bulk copy from slice 1, a commit and both waits.
fn kernel(rank: usize) -> cuprum_ir::Module {
    let mut k = K::new(&format!("tma_{rank}d"));
    let map = k.b.param(
        "map",
        ParamKind::TensorMap {
            elem: S::F32,
            rank: rank as u8,
        },
    );
    let src = k.slice("src", S::U32, cuprum_ir::SliceAccess::ReadOnly);
    let maps = k.slice("maps", S::U64, cuprum_ir::SliceAccess::ReadOnly);
    let pad = k.b.shared_array(ArrayDecl {
        name: "pad".into(),
        elem: S::U32,
        len: 3,
    });
    let tile = k.b.shared_array_aligned(
        ArrayDecl {
            name: "tile".into(),
            elem: S::F32,
            len: 1024,
        },
        1024,
    );
    let bar = k.b.shared_array(ArrayDecl {
        name: "bar".into(),
        elem: S::U64,
        len: 1,
    });
    let _ = k.op(Op::SharedAddr(pad));
    let dst = k.op(Op::SharedAddr(tile));
    let mbar = k.op(Op::SharedAddr(bar));
    let one = k.u32(1);
    k.b.mbarrier(MbarrierOp::Init, mbar, Some(one)).unwrap();
    let coords: Vec<_> = (0..rank)
        .map(|d| k.c(cuprum_ir::Constant::i32(d as i32 * 8 - 4)))
        .collect();
    let global_map = k.op(Op::SliceBase(maps));
    for m in [TensorMapRef::Param(map), TensorMapRef::Global(global_map)] {
        k.b.tma(TmaOp::LoadTile {
            map: m,
            coords: coords.clone(),
            dst,
            mbar,
            multicast: None,
        })
        .unwrap();
        k.b.tma(TmaOp::StoreTile {
            map: m,
            coords: coords.clone(),
            src: dst,
        })
        .unwrap();
    }
    let from = k.op(Op::SliceBase(src));
    let bytes = k.u32(256);
    k.b.tma(TmaOp::LoadBulk {
        dst,
        src: from,
        bytes,
        mbar,
    })
    .unwrap();
    k.b.tma(TmaOp::Commit).unwrap();
    k.b.tma(TmaOp::WaitGroup {
        pending: 1,
        read: true,
    })
    .unwrap();
    k.b.tma(TmaOp::WaitGroup {
        pending: 0,
        read: false,
    })
    .unwrap();
    one_module(k.finish())
}

fn one_module(k: cuprum_ir::Kernel) -> cuprum_ir::Module {
    one(k)
}

#[test]
fn every_form_assembles_for_sm_90_and_sm_90a() {
    for rank in 1..=5 {
        let module = kernel(rank);
        let ptx = write_module(&module, Target::Sm90).unwrap_or_else(|e| panic!("{e}"));
        let name = format!("tma_{rank}d");
        for text in [
            format!(".param .align 64 .b8 {name}_param_0[128]"),
            ".shared .align 1024 .b8".to_string(),
            "cvta.param.u64 %rd".to_string(),
            format!(
                "cp.async.bulk.tensor.{rank}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r"
            ),
            format!("cp.async.bulk.tensor.{rank}d.global.shared::cta.tile.bulk_group [%rd"),
            "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r".to_string(),
            "cp.async.bulk.commit_group;".to_string(),
            "cp.async.bulk.wait_group.read 1;".to_string(),
            "cp.async.bulk.wait_group 0;".to_string(),
        ] {
            assert!(ptx.contains(&text), "{text}\n{}", numbered(&ptx));
        }
        // The coordinates, innermost first.
        let load = ptx
            .lines()
            .find(|l| l.contains("cp.async.bulk.tensor"))
            .unwrap_or_default();
        let braces = load
            .split_once('{')
            .and_then(|(_, rest)| rest.split_once('}'))
            .map_or("", |(inside, _)| inside);
        assert_eq!(braces.split(", ").count(), rank, "{load}");
        for target in [Target::Sm90, Target::Sm90a] {
            let text = write_module(&module, target).unwrap_or_else(|e| panic!("{e}"));
            if let Err(e) = ptxas::check(&text, target.name()) {
                panic!("{e}\n--- PTX ---\n{}", numbered(&text));
            }
        }
    }
}

#[test]
fn the_tensor_memory_accelerator_needs_sm_90() {
    match write_module(&kernel(2), Target::Sm80) {
        Err(PtxError::Unsupported { kernel, what }) => {
            assert_eq!(kernel, "tma_2d");
            assert!(what.contains("compute capability 9.0"), "{what}");
        }
        other => panic!("sm_80 accepted a TMA copy: {other:?}"),
    }
    // Nothing in them is architecture-specific: a portable sm_90 module.
    assert!(!kernel(3).needs_arch_specific());
}

/// The validator refuses a copy whose coordinates do not match its map's rank, and a map
/// parameter that a scalar read names.
#[test]
fn ill_formed_copies_are_refused() {
    let mut k = K::new("bad");
    let map = k.b.param(
        "map",
        ParamKind::TensorMap {
            elem: S::F32,
            rank: 2,
        },
    );
    let tile = k.b.shared_array_aligned(
        ArrayDecl {
            name: "tile".into(),
            elem: S::F32,
            len: 64,
        },
        128,
    );
    let dst = k.op(Op::SharedAddr(tile));
    let x = k.c(cuprum_ir::Constant::i32(0));
    let wide = k.u64(0);
    assert!(
        k.b.tma(TmaOp::StoreTile {
            map: TensorMapRef::Global(x),
            coords: vec![x],
            src: dst,
        })
        .is_err(),
        "a global map's address is a u64"
    );
    assert!(
        k.b.tma(TmaOp::StoreTile {
            map: TensorMapRef::Param(map),
            coords: vec![wide],
            src: dst,
        })
        .is_err(),
        "coordinates are i32"
    );
    k.b.tma(TmaOp::StoreTile {
        map: TensorMapRef::Param(map),
        coords: vec![x, x, x],
        src: dst,
    })
    .unwrap();
    let e = cuprum_ir::validate_kernel(&k.finish()).expect_err("3 coordinates on a 2-d map");
    assert!(e.message.contains("3-d tensor copy"), "{}", e.message);
}
