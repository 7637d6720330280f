//! Thread-block clusters in PTX: a cluster kernel's entry directives, its special registers,
//! the cluster barrier, the mbarrier-initialisation fence, remote arrivals and multicast tile
//! loads, distributed shared memory; that ptxas assembles them (sm_90, sm_90a); what sm_80
//! writes for a kernel without a cluster (constants, the block barrier) and what it and
//! sm_90 refuse.

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

/// A kernel that reads and writes its neighbour's shared memory (distributed shared memory)
/// in every element type, `bool` included, between cluster barriers.
fn dsmem_kernel(cluster: Option<(u32, u32, u32)>) -> cuprum_ir::Kernel {
    let mut k = K::new("neighbours");
    k.b.set_cluster(cluster);
    let out = k.slice("out", S::U64, SliceAccess::ReadWrite);
    let words = k.b.shared_array(ArrayDecl {
        name: "words".into(),
        elem: S::U64,
        len: 64,
    });
    let base = k.op(Op::SharedAddr(words));
    let rank = k.special(Special::ClusterCtaRank);
    let size = k.special(Special::ClusterDim(Dim::X));
    let one = k.u32(1);
    let next = k.bin(cuprum_ir::BinaryOp::Add, rank, one);
    let next = k.bin(cuprum_ir::BinaryOp::Rem, next, size);
    k.b.push(Stmt::ClusterArrive);
    k.b.push(Stmt::ClusterWait);
    let i = k.global_index();
    for (n, ty) in [
        S::Bool,
        S::U8,
        S::I16,
        S::F16,
        S::BF16,
        S::U32,
        S::F32,
        S::I64,
        S::F64,
    ]
    .into_iter()
    .enumerate()
    {
        let at = k.u32(8 * n as u32);
        let addr = k.bin(cuprum_ir::BinaryOp::Add, base, at);
        let v = k.b.cluster_load(ty, addr, next).unwrap();
        k.b.cluster_store(addr, next, v).unwrap();
        if ty.is_int() || ty == S::Bool {
            let wide = k.cast(v, S::U64);
            let at = k.u64(n as u64);
            let at = k.bin(cuprum_ir::BinaryOp::Add, i, at);
            let dst = k.elem_addr(out, at, S::U64);
            k.store(AddressSpace::Global, dst, wide);
        }
    }
    k.b.push(Stmt::ClusterArrive);
    k.b.push(Stmt::ClusterWait);
    k.finish()
}

#[test]
fn distributed_shared_memory_maps_the_address_to_the_rank() {
    let module = one(dsmem_kernel(Some((4, 1, 1))));
    assert!(
        !module.needs_arch_specific(),
        "distributed shared memory is sm_90's"
    );
    let ptx = write_module(&module, Target::Sm90).unwrap_or_else(|e| panic!("{e}"));
    for text in [
        "mapa.shared::cluster.u32 %r",
        "ld.shared::cluster.u8 %r",
        "st.shared::cluster.u8 [%r",
        "ld.shared::cluster.s16 %r",
        "ld.shared::cluster.b16 %h",
        "st.shared::cluster.b16 [%r",
        "ld.shared::cluster.u32 %r",
        "st.shared::cluster.u32 [%r",
        "ld.shared::cluster.f32 %f",
        "st.shared::cluster.f32 [%r",
        "ld.shared::cluster.s64 %rd",
        "st.shared::cluster.u64 [%r",
        "ld.shared::cluster.f64 %fd",
        "st.shared::cluster.f64 [%r",
    ] {
        assert!(ptx.contains(text), "{text}\n{}", numbered(&ptx));
    }
    // One `mapa` per access, each access through the address it made.
    assert_eq!(
        ptx.matches("mapa.shared::cluster").count(),
        18,
        "{}",
        numbered(&ptx)
    );
    for target in [Target::Sm90, Target::Sm90a] {
        let ptx = write_module(&module, target).unwrap_or_else(|e| panic!("{e}"));
        if let Err(e) = ptxas::check(&ptx, target.name()) {
            panic!("{e}\n--- PTX ---\n{}", numbered(&ptx));
        }
    }
    // Without a declared cluster (a cluster of one block), sm_90 still has the forms.
    let alone = one(dsmem_kernel(None));
    let ptx = write_module(&alone, Target::Sm90).unwrap_or_else(|e| panic!("{e}"));
    assert!(ptx.contains("ld.shared::cluster.u32"), "{}", numbered(&ptx));
    if let Err(e) = ptxas::check(&ptx, Target::Sm90.name()) {
        panic!("{e}\n--- PTX ---\n{}", numbered(&ptx));
    }
}

#[test]
fn sm_80_refuses_distributed_shared_memory() {
    match write_module(&one(dsmem_kernel(None)), Target::Sm80) {
        Err(PtxError::Unsupported { kernel, what }) => {
            assert_eq!(kernel, "neighbours");
            assert!(what.contains("another block's shared memory"), "{what}");
            assert!(what.contains("compute capability 9.0"), "{what}");
        }
        other => panic!("sm_80 accepted distributed shared memory: {other:?}"),
    }
}

/// The validator and the builder refuse a rank or an address of the wrong type.
#[test]
fn distributed_shared_memory_operands_are_typed() {
    let mut k = K::new("typed");
    let words = k.b.shared_array(ArrayDecl {
        name: "words".into(),
        elem: S::U32,
        len: 4,
    });
    let base = k.op(Op::SharedAddr(words));
    let wide_rank = k.u64(1);
    let e = k.b.cluster_load(S::U32, base, wide_rank).unwrap_err();
    assert!(e.reason.contains("rank must be u32"), "{}", e.reason);
    let rank = k.u32(0);
    let global = k.u64(0);
    let e = k.b.cluster_store(global, rank, rank).unwrap_err();
    assert!(
        e.reason.contains("Shared address must be u32"),
        "{}",
        e.reason
    );
    let v = k.b.cluster_load(S::U32, base, rank).unwrap();
    k.b.cluster_store(base, rank, v).unwrap();
    let kernel = k.finish();
    cuprum_ir::validate_kernel(&kernel).unwrap();
    let text = cuprum_ir::print_module(&one(kernel));
    assert!(text.contains("load.cluster.u32 shared[%"), "{text}");
    assert!(text.contains("store.cluster shared[%"), "{text}");
}
