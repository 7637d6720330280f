//! Ordered atomics in PTX: `atom.{sem}.{scope}` for every ordering, scope, operation and
//! type, `ld.relaxed`/`ld.acquire` and `st.relaxed`/`st.release` at each scope, `fence.sc`
//! before a `SeqCst` access; each kernel assembled by ptxas for sm_80 and sm_90, and an
//! atomic load never `.nc`, even inside a read-only slice.

mod common;

use common::*;
use cuprum_ir::{AddressSpace, AtomicOp, MemOrder, Op, ScalarType as S, Scope, SliceAccess, Stmt};

const SCOPES: [Scope; 3] = [Scope::Block, Scope::Device, Scope::System];

/// One kernel: every read-modify-write of `ty` (floats: add, exchange, compare-exchange) at
/// every scope and ordering on global and shared memory, then atomic loads and stores.
fn kernel(ty: S) -> cuprum_ir::Module {
    let mut k = K::new(&format!("atomics_{ty}"));
    let p = k.slice("x", ty, SliceAccess::ReadWrite);
    let ro = k.slice("ro", ty, SliceAccess::ReadOnly);
    let shared = k.b.shared_array(cuprum_ir::ArrayDecl {
        name: "s".into(),
        elem: ty,
        len: 4,
    });
    let g = k.op(Op::SliceBase(p));
    let s = k.op(Op::SharedAddr(shared));
    let one = k.c(cuprum_ir::Constant::new(
        ty,
        if ty.is_float() { 0 } else { 1 },
    ));
    let ops: Vec<AtomicOp> = AtomicOp::ALL
        .into_iter()
        .filter(|op| op.applies_to(ty))
        .collect();
    for (space, addr) in [(AddressSpace::Global, g), (AddressSpace::Shared, s)] {
        for scope in SCOPES {
            for order in MemOrder::ALL {
                for &op in &ops {
                    let compare = (op == AtomicOp::CompareExchange).then_some(one);
                    k.op(Op::Atomic {
                        op,
                        space,
                        scope,
                        order,
                        addr,
                        value: one,
                        compare,
                    });
                }
                if !matches!(order, MemOrder::Release | MemOrder::AcqRel) {
                    k.op(Op::AtomicLoad {
                        space,
                        scope,
                        order,
                        ty,
                        addr,
                    });
                }
                if !matches!(order, MemOrder::Acquire | MemOrder::AcqRel) {
                    k.b.push(Stmt::AtomicStore {
                        space,
                        scope,
                        order,
                        addr,
                        value: one,
                    });
                }
            }
        }
    }
    // An atomic load inside a read-only slice: coherent all the same.
    let r = k.op(Op::SliceBase(ro));
    k.op(Op::AtomicLoad {
        space: AddressSpace::Global,
        scope: Scope::Device,
        order: MemOrder::Acquire,
        ty,
        addr: r,
    });
    one_module(k)
}

fn one_module(k: K) -> cuprum_ir::Module {
    one(k.finish())
}

#[test]
fn ordered_atomics_assemble_with_their_semantics() {
    for ty in [S::U32, S::I32, S::U64, S::I64, S::F32, S::F64] {
        let ptx = write_and_assemble(&kernel(ty));
        for (sem, sc) in [
            ("relaxed", "cta"),
            ("acquire", "gpu"),
            ("release", "sys"),
            ("acq_rel", "gpu"),
        ] {
            assert!(
                ptx.contains(&format!("atom.{sem}.{sc}.global.")),
                "{ty}: atom.{sem}.{sc}\n{ptx}"
            );
            assert!(ptx.contains(&format!("atom.{sem}.{sc}.shared.")), "{ty}");
        }
        assert!(ptx.contains("ld.acquire.gpu.global."), "{ty}");
        assert!(ptx.contains("ld.relaxed.cta.shared."), "{ty}");
        assert!(ptx.contains("st.release.sys.global."), "{ty}");
        assert!(ptx.contains("st.relaxed.gpu.shared."), "{ty}");
        // SeqCst: a fence.sc at the scope, then acquire (or a relaxed store).
        assert!(ptx.contains("fence.sc.cta;\n"), "{ty}");
        assert!(
            !ptx.contains(".nc"),
            "an atomic load is never non-coherent\n{ptx}"
        );
        if ty == S::F64 {
            assert!(ptx.contains("atom.relaxed.gpu.global.add.f64"), "{ptx}");
        }
        if ty == S::I32 {
            assert!(ptx.contains("atom.relaxed.gpu.global.min.s32"), "{ptx}");
        }
        if ty == S::U64 {
            assert!(ptx.contains("atom.relaxed.gpu.global.max.u64"), "{ptx}");
        }
    }
}

#[test]
fn the_validator_refuses_orders_rust_panics_on() {
    let mut k = K::new("bad_load");
    let p = k.slice("x", S::U32, SliceAccess::ReadWrite);
    let g = k.op(Op::SliceBase(p));
    let r = k.b.def(Op::AtomicLoad {
        space: AddressSpace::Global,
        scope: Scope::Device,
        order: MemOrder::Release,
        ty: S::U32,
        addr: g,
    });
    assert!(r.is_err(), "a release load was accepted");
}
