//! The mbarrier statements in PTX: the text of each form, that ptxas assembles it on both
//! targets, the sm_80 spellings of `try_wait` and of the blocking waits, and the refusal of
//! the transaction count on sm_80.

mod common;

use common::*;
use cuprum_ir::{ArrayDecl, MbarrierOp, Op, ScalarType as S, Stmt};
use cuprum_ptx::{PtxError, Target, write_module};
use cuprum_testkit::ptxas;

/// A kernel doing `ops` (each with a fresh operand of the type it takes) to a barrier in
/// shared memory, after a 4-byte `cp.async` for the `cp.async.mbarrier.arrive` forms.
fn kernel(name: &str, ops: &[MbarrierOp]) -> cuprum_ir::Module {
    let mut k = K::new(name);
    let src = k.slice("src", S::U32, cuprum_ir::SliceAccess::ReadOnly);
    let bar = k.b.shared_array(ArrayDecl {
        name: "bar".into(),
        elem: S::U64,
        len: 1,
    });
    let data = k.b.shared_array(ArrayDecl {
        name: "data".into(),
        elem: S::U32,
        len: 4,
    });
    let addr = k.op(Op::SharedAddr(bar));
    let dst = k.op(Op::SharedAddr(data));
    let from = k.op(Op::SliceBase(src));
    k.b.push(Stmt::CpAsync {
        cache: cuprum_ir::CpAsyncCache::Ca,
        size: 4,
        dst,
        src: from,
        src_size: None,
    });
    let mut token = k.u64(0);
    for &op in ops {
        let arg = match op.operand() {
            Some(S::U64) => Some(token),
            Some(_) => Some(k.u32(1)),
            None => None,
        };
        let result =
            k.b.mbarrier(op, addr, arg)
                .unwrap_or_else(|e| panic!("{op:?}: {e}"));
        if let Some(r) = result
            && op.result() == Some(S::U64)
        {
            token = r;
        }
    }
    one(k.finish())
}

const BOTH_TARGETS: [MbarrierOp; 10] = [
    MbarrierOp::Init,
    MbarrierOp::Arrive,
    MbarrierOp::TestWait,
    MbarrierOp::TryWait,
    MbarrierOp::TryWaitParity,
    MbarrierOp::Wait,
    MbarrierOp::WaitParity,
    MbarrierOp::CpAsyncArrive { noinc: false },
    MbarrierOp::CpAsyncArrive { noinc: true },
    MbarrierOp::Inval,
];

#[test]
fn every_sm80_form_assembles_on_both_targets() {
    let module = kernel("mbar_all", &BOTH_TARGETS);
    let sm80 = write_and_assemble(&module);
    for text in [
        "mbarrier.init.shared::cta.b64 [",
        "mbarrier.arrive.shared::cta.b64 %rd",
        "mbarrier.test_wait.shared::cta.b64 %p",
        "mbarrier.test_wait.parity.shared::cta.b64 %p",
        "cp.async.mbarrier.arrive.shared::cta.b64 [",
        "cp.async.mbarrier.arrive.noinc.shared::cta.b64 [",
        "mbarrier.inval.shared::cta.b64 [",
    ] {
        assert!(sm80.contains(text), "{text}\n{sm80}");
    }
    // sm_80 has no try_wait: the IR's try_wait is test_wait there.
    assert!(!sm80.contains("try_wait"), "{sm80}");
    let sm90 = write_module(&module, Target::Sm90).unwrap_or_else(|e| panic!("{e}"));
    for text in [
        "mbarrier.try_wait.shared::cta.b64 %p",
        "mbarrier.try_wait.parity.shared::cta.b64 %p",
    ] {
        assert!(sm90.contains(text), "{text}\n{sm90}");
    }
}

/// The blocking waits are loops: a test and a branch back to it while it fails.
#[test]
fn blocking_waits_loop_until_the_phase_completes() {
    for (op, test) in [
        (MbarrierOp::Wait, "test_wait.shared"),
        (MbarrierOp::WaitParity, "test_wait.parity.shared"),
    ] {
        let module = kernel("mbar_wait", &[MbarrierOp::Init, op]);
        let ptx = write_and_assemble(&module);
        let lines: Vec<&str> = ptx.lines().collect();
        let at = lines
            .iter()
            .position(|l| l.contains(test))
            .unwrap_or_else(|| panic!("{test}\n{ptx}"));
        let label = lines[at - 1].trim_end_matches(':');
        assert!(lines[at - 1].ends_with(':'), "{ptx}");
        let pred = lines[at]
            .split_whitespace()
            .nth(1)
            .map(|p| p.trim_end_matches(','))
            .unwrap_or_default();
        assert_eq!(
            lines[at + 1].trim(),
            format!("@!{pred} bra {label};"),
            "{ptx}"
        );
    }
}

#[test]
fn the_transaction_count_needs_sm_90() {
    let ops = [
        MbarrierOp::Init,
        MbarrierOp::ExpectTx,
        MbarrierOp::ArriveExpectTx,
        MbarrierOp::Wait,
    ];
    let module = kernel("mbar_tx", &ops);
    let ptx = write_module(&module, Target::Sm90).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        ptx.contains("mbarrier.arrive.expect_tx.shared::cta.b64 %rd"),
        "{ptx}"
    );
    assert!(
        ptx.contains("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 ["),
        "{ptx}"
    );
    if let Err(e) = ptxas::check(&ptx, Target::Sm90.name()) {
        panic!("{e}\n{ptx}");
    }
    for op in [MbarrierOp::ExpectTx, MbarrierOp::ArriveExpectTx] {
        match write_module(&kernel("mbar_tx", &[MbarrierOp::Init, op]), Target::Sm80) {
            Err(PtxError::Unsupported { kernel, what }) => {
                assert_eq!(kernel, "mbar_tx");
                assert!(what.contains("compute capability 9.0"), "{what}");
            }
            other => panic!("sm_80 accepted {op:?}: {other:?}"),
        }
    }
}

/// The builder refuses operands of the wrong type and the validator a missing result.
#[test]
fn ill_typed_mbarrier_statements_are_refused() {
    let mut k = K::new("bad");
    let bar = k.b.shared_array(ArrayDecl {
        name: "bar".into(),
        elem: S::U64,
        len: 1,
    });
    let addr = k.op(Op::SharedAddr(bar));
    let wide = k.u64(3);
    assert!(k.b.mbarrier(MbarrierOp::Init, addr, Some(wide)).is_err());
    assert!(k.b.mbarrier(MbarrierOp::Init, addr, None).is_err());
    assert!(k.b.mbarrier(MbarrierOp::Arrive, addr, Some(wide)).is_err());
    assert!(k.b.mbarrier(MbarrierOp::Wait, wide, Some(wide)).is_err());
    k.b.push(Stmt::Mbarrier {
        op: MbarrierOp::Arrive,
        addr,
        arg: None,
        result: None,
    });
    let kernel = k.finish();
    let e = cuprum_ir::validate_kernel(&kernel).expect_err("an arrive without its token");
    assert!(e.message.contains("needs a result"), "{}", e.message);
}
