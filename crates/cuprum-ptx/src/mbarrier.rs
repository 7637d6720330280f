//! The mbarrier statements: asynchronous transaction barriers in shared memory
//! (`mbarrier.*`, and `cp.async.mbarrier.arrive`), kept apart from `emit` because two of them
//! are loops and some exist only on sm_90.
//!
//! Every form names the state space `.shared::cta` and leaves the memory semantics at their
//! defaults (`.release` for arrivals, `.acquire` for tests, scope `.cta`), which is what the
//! IR's [`Stmt::Mbarrier`](cuprum_ir::Stmt::Mbarrier) promises. The address is the `U32`
//! shared-window offset every shared access uses. Per target:
//! * `try_wait` (PTX ISA 7.8) needs sm_90. On sm_80 `TryWait` is `test_wait`: both return
//!   true exactly when the phase has completed, `try_wait` only may wait a while first.
//! * The blocking waits are loops of `try_wait` (sm_90, which suspends the thread in the
//!   hardware for a while on each turn) or `test_wait` (sm_80).
//! * The transaction count (`expect_tx`, `arrive.expect_tx`) exists only on sm_90; on sm_80
//!   they are [`PtxError::Unsupported`](crate::PtxError::Unsupported).

use cuprum_ir::{MbarrierOp, Value};

use crate::PtxError;
use crate::Target;
use crate::emit::{KernelWriter, ins};
use crate::regs::Class;

impl KernelWriter<'_> {
    pub(crate) fn mbarrier(
        &mut self,
        op: MbarrierOp,
        addr: Value,
        arg: Option<Value>,
        result: Option<Value>,
    ) -> Result<(), PtxError> {
        let sm90 = self.target != Target::Sm80;
        if op.needs_sm90() && !sm90 {
            return Err(self.unsupported(format!(
                "mbarrier {op:?} on sm_80 (the transaction count needs compute capability 9.0)"
            )));
        }
        if let (MbarrierOp::ArriveCluster, Some(rank)) = (op, arg) {
            return self.arrive_cluster(addr, rank);
        }
        let a = self.reg(addr);
        let arg = arg.map(|v| self.reg(v));
        let result = result.map(|v| self.reg(v));
        let (arg, result) = match (op.operand(), arg, op.result(), result) {
            (None, None, None, None) => (String::new(), String::new()),
            (Some(_), Some(x), None, None) => (x.to_string(), String::new()),
            (None, None, Some(_), Some(r)) => (String::new(), r.to_string()),
            (Some(_), Some(x), Some(_), Some(r)) => (x.to_string(), r.to_string()),
            _ => {
                return Err(self.unsupported(format!(
                    "mbarrier {op:?} without the operand or result it needs (invalid IR)"
                )));
            }
        };
        let test = if sm90 { "try_wait" } else { "test_wait" };
        match op {
            MbarrierOp::Init => ins!(self, "mbarrier.init.shared::cta.b64 [{a}], {arg}"),
            MbarrierOp::Arrive => ins!(self, "mbarrier.arrive.shared::cta.b64 {result}, [{a}]"),
            MbarrierOp::ArriveExpectTx => ins!(
                self,
                "mbarrier.arrive.expect_tx.shared::cta.b64 {result}, [{a}], {arg}"
            ),
            MbarrierOp::ExpectTx => {
                ins!(
                    self,
                    "mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [{a}], {arg}"
                )
            }
            MbarrierOp::TestWait => {
                ins!(
                    self,
                    "mbarrier.test_wait.shared::cta.b64 {result}, [{a}], {arg}"
                )
            }
            MbarrierOp::TryWait => {
                ins!(
                    self,
                    "mbarrier.{test}.shared::cta.b64 {result}, [{a}], {arg}"
                )
            }
            MbarrierOp::TryWaitParity => {
                ins!(
                    self,
                    "mbarrier.{test}.parity.shared::cta.b64 {result}, [{a}], {arg}"
                )
            }
            MbarrierOp::Wait | MbarrierOp::WaitParity => {
                let parity = if op == MbarrierOp::WaitParity {
                    ".parity"
                } else {
                    ""
                };
                let done = self.tmp(Class::Pred);
                let again = self.label();
                self.place(again);
                ins!(
                    self,
                    "mbarrier.{test}{parity}.shared::cta.b64 {done}, [{a}], {arg}"
                );
                ins!(self, "@!{done} bra {again}");
            }
            MbarrierOp::Inval => ins!(self, "mbarrier.inval.shared::cta.b64 [{a}]"),
            MbarrierOp::ArriveCluster => {
                return Err(self.unsupported(
                    "a remote mbarrier arrival without the block rank it needs (invalid IR)",
                ));
            }
            MbarrierOp::CpAsyncArrive { noinc } => {
                let noinc = if noinc { ".noinc" } else { "" };
                ins!(
                    self,
                    "cp.async.mbarrier.arrive{noinc}.shared::cta.b64 [{a}]"
                )
            }
        }
        Ok(())
    }
}
