//! Thread-block clusters in PTX: a cluster kernel's entry directives, its special registers,
//! the cluster barrier, the mbarrier-initialisation fence, remote arrivals and multicast tile
//! loads; that ptxas assembles them (sm_90a); what sm_80 writes for a kernel without a
//! cluster (constants, the block barrier) and what it and sm_90 refuse.

mod common;

use common::*;
use cuprum_ir::{
    AddressSpace, ArrayDecl, Dim, MbarrierOp, Op, ParamKind, ScalarType as S, SliceAccess, Special,
    Stmt, TensorMapRef, TmaOp,
};
use cuprum_ptx::{PtxError, Target, write_module};
use cuprum_testkit::{numbered, ptxas};

/// Every cluster statement and special; `cluster` is the declared shape, `remote` adds the
/// remote arrival and the multicast load (which need sm_90 and sm_90a).
fn kernel(cluster: Option<(u32, u32, u32)>, remote: bool) -> cuprum_ir::Kernel {
    let mut k = K::new("clustered");
    k.b.set_cluster(cluster);
    let out = k.slice("out", S::U32, SliceAccess::ReadWrite);
    let map = k.b.param(
        "map",
        ParamKind::TensorMap {
            elem: S::U16,
            rank: 2,
        },
    );
    let tile = k.b.shared_array_aligned(
        ArrayDecl {
            name: "tile".into(),
            elem: S::U16,
            len: 64 * 64,
        },
        1024,
    );
    let bar = k.b.shared_array(ArrayDecl {
        name: "bar".into(),
        elem: S::U64,
        len: 1,
    });
    let mbar = k.op(Op::SharedAddr(bar));
    let two = k.u32(2);
    k.b.mbarrier(MbarrierOp::Init, mbar, Some(two)).unwrap();
    k.b.push(Stmt::FenceMbarrierInit);
    k.b.push(Stmt::ClusterArrive);
    k.b.push(Stmt::ClusterWait);
    let specials = [
        Special::ClusterCtaRank,
        Special::ClusterCtaIdx(Dim::X),
        Special::ClusterCtaIdx(Dim::Y),
        Special::ClusterDim(Dim::X),
        Special::ClusterDim(Dim::Z),
        Special::ClusterIdx(Dim::X),
        Special::ClusterIdx(Dim::Y),
        Special::ClusterCount(Dim::X),
    ];
    let i = k.global_index();
    let eight = k.u64(specials.len() as u64);
    let first = k.bin(cuprum_ir::BinaryOp::Mul, i, eight);
    for (n, s) in specials.into_iter().enumerate() {
        let v = k.special(s);
        let at = k.u64(n as u64);
        let at = k.bin(cuprum_ir::BinaryOp::Add, first, at);
        let addr = k.elem_addr(out, at, S::U32);
        k.store(AddressSpace::Global, addr, v);
    }
    if remote {
        let dst = k.op(Op::SharedAddr(tile));
        let zero = k.c(cuprum_ir::Constant::i32(0));
        let mask = k.c(cuprum_ir::Constant {
            ty: S::U16,
            bits: 0b11,
        });
        k.b.tma(TmaOp::LoadTile {
            map: TensorMapRef::Param(map),
            coords: vec![zero, zero],
            dst,
            mbar,
            multicast: Some(mask),
        })
        .unwrap();
        let rank = k.special(Special::ClusterCtaRank);
        let one = k.u32(1);
        let other = k.bin(cuprum_ir::BinaryOp::Xor, rank, one);
        k.b.mbarrier(MbarrierOp::ArriveCluster, mbar, Some(other))
            .unwrap();
    }
    k.b.push(Stmt::ClusterArrive);
    k.b.push(Stmt::ClusterWait);
    k.finish()
}

#[test]
fn a_cluster_kernel_says_its_shape_and_uses_the_cluster_registers() {
    let module = one(kernel(Some((2, 1, 1)), true));
    assert!(module.needs_arch_specific(), "multicast is sm_90a's");
    let ptx = write_module(&module, Target::Sm90a).unwrap_or_else(|e| panic!("{e}"));
    for text in [
        ".explicitcluster\n",
        ".reqnctapercluster 2, 1, 1\n",
        "mov.u32 %r",
        "%cluster_ctarank;",
        "%cluster_ctaid.x;",
        "%cluster_ctaid.y;",
        "%cluster_nctaid.x;",
        "%cluster_nctaid.z;",
        "%clusterid.x;",
        "%clusterid.y;",
        "%nclusterid.x;",
        "fence.mbarrier_init.release.cluster;",
        "barrier.cluster.arrive.release.aligned;",
        "barrier.cluster.wait.acquire.aligned;",
        "mapa.shared::cluster.u32 %r",
        "mbarrier.arrive.shared::cluster.b64 _, [%r",
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%r",
    ] {
        assert!(ptx.contains(text), "{text}\n{}", numbered(&ptx));
    }
    // The mask is the copy's last operand, a 16-bit register.
    let load = ptx
        .lines()
        .find(|l| l.contains("multicast::cluster"))
        .unwrap_or_default();
    assert!(load.trim_end().ends_with(';'), "{load}");
    assert!(
        load.rsplit(", ")
            .next()
            .is_some_and(|m| m.starts_with("%h")),
        "{load}"
    );
    if let Err(e) = ptxas::check(&ptx, Target::Sm90a.name()) {
        panic!("{e}\n--- PTX ---\n{}", numbered(&ptx));
    }
}

#[test]
fn clusters_without_remote_copies_are_portable_sm_90() {
    let module = one(kernel(Some((1, 2, 2)), false));
    assert!(!module.needs_arch_specific());
    let ptx = write_module(&module, Target::Sm90).unwrap_or_else(|e| panic!("{e}"));
    assert!(ptx.contains(".reqnctapercluster 1, 2, 2\n"), "{ptx}");
    if let Err(e) = ptxas::check(&ptx, Target::Sm90.name()) {
        panic!("{e}\n--- PTX ---\n{}", numbered(&ptx));
    }
}

/// Without a cluster, sm_80 runs the same statements as a cluster of one block: the
/// specials are constants or the block's indices, the wait is the block barrier.
#[test]
fn without_a_cluster_sm_80_writes_a_cluster_of_one_block() {
    let module = one(kernel(None, false));
    let ptx = write_and_assemble(&module);
    assert!(!ptx.contains("%cluster"), "{}", numbered(&ptx));
    assert!(!ptx.contains("barrier.cluster"), "{}", numbered(&ptx));
    for text in [
        "mov.u32 %r",
        "%ctaid.x;",
        "%ctaid.y;",
        "%nctaid.x;",
        "bar.sync 0;",
    ] {
        assert!(ptx.contains(text), "{text}\n{}", numbered(&ptx));
    }
    // One block barrier per arrive/wait pair (two pairs), none for the arrivals.
    assert_eq!(ptx.matches("bar.sync 0;").count(), 2, "{}", numbered(&ptx));
    let sm90 = write_module(&module, Target::Sm90).unwrap_or_else(|e| panic!("{e}"));
    assert!(!sm90.contains(".reqnctapercluster"), "{sm90}");
    assert!(sm90.contains("%cluster_ctarank;"), "{sm90}");
}

#[test]
fn sm_80_refuses_clusters_and_sm_90_refuses_multicast() {
    for (cluster, remote, target, says) in [
        (
            Some((2, 1, 1)),
            false,
            Target::Sm80,
            "compute capability 9.0",
        ),
        (None, true, Target::Sm80, "sm_90a"),
        (Some((2, 1, 1)), true, Target::Sm90, "multicast"),
    ] {
        match write_module(&one(kernel(cluster, remote)), target) {
            Err(PtxError::Unsupported { kernel, what }) => {
                assert_eq!(kernel, "clustered");
                assert!(what.contains(says), "{what}");
            }
            other => panic!(
                "{} accepted {cluster:?}, remote {remote}: {other:?}",
                target.name()
            ),
        }
    }
}

/// The validator refuses a cluster shape the hardware cannot launch.
#[test]
fn cluster_shapes_out_of_range_are_refused() {
    for bad in [(0, 1, 1), (3, 3, 1), (16, 1, 1)] {
        let e = cuprum_ir::validate_kernel(&kernel(Some(bad), false))
            .expect_err("an impossible cluster");
        assert!(e.message.contains("cluster"), "{}", e.message);
    }
    cuprum_ir::validate_kernel(&kernel(Some((2, 2, 2)), true)).unwrap();
}
