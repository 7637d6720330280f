//! cuda-oxide's mbarrier API (`cuprum::simt::barrier`) and the `cp.async` arrivals of
//! `cuprum::simt::async_copy`, read as the IR's [`Stmt::Mbarrier`](cuprum_ir::Stmt::Mbarrier).
//!
//! A barrier is a `static mut BAR: Barrier = Barrier::UNINIT;` in a kernel body: an 8-byte
//! shared array of one `u64` (shared arrays are 16-byte aligned, so the object is 8-byte
//! aligned as PTX requires). The functions take a raw pointer to it (`&raw mut BAR`,
//! `&raw const BAR`, `core::ptr::addr_of_mut!(BAR)`), a pointer into shared memory.
//! `mbarrier_wait` is a blocking statement of its own rather than cuda-oxide's `test_wait`
//! loop, so the emulator can stop the waiting warp and run the others. A ring of barriers is
//! a shared array of `u64`s seen as barriers, `&raw mut RING as *mut Barrier`, stepped with
//! `.add(s)`.

use cuprum_ir::{MbarrierOp, ScalarType as S};
use proc_macro2::Span;
use syn::spanned::Spanned;

use super::*;

/// How a call's arguments after the barrier become the statement's operand.
#[derive(Clone, Copy)]
enum Operand {
    /// No operand.
    None,
    /// The next argument, as this type.
    Next(S),
    /// `mbarrier_arrive_expect_tx(bar, tx_count, bytes)`: cuda-oxide's arrival count is
    /// always one (its generated binding ignores it); the bytes are the operand.
    SkipThenNext,
}

/// Whether a type's last path segment is `Barrier`: pointers to one point at a `u64`.
pub(super) fn is_barrier(ty: &syn::Type) -> bool {
    matches!(ty, syn::Type::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "Barrier"))
}

impl Lowerer<'_> {
    /// The mbarrier functions; `None` when `name` is not one.
    pub(super) fn mbarrier_call(
        &mut self,
        name: &str,
        args: &[&syn::Expr],
        span: Span,
    ) -> Result<Option<Val>> {
        use MbarrierOp as M;
        let (ops, operand): (&[MbarrierOp], Operand) = match name {
            "mbarrier_init" => (&[M::Init], Operand::Next(S::U32)),
            "mbarrier_arrive" => (&[M::Arrive], Operand::None),
            "mbarrier_arrive_expect_tx" => (&[M::ArriveExpectTx], Operand::SkipThenNext),
            "mbarrier_expect_tx" => (&[M::ExpectTx], Operand::Next(S::U32)),
            "mbarrier_test_wait" => (&[M::TestWait], Operand::Next(S::U64)),
            "mbarrier_try_wait" => (&[M::TryWait], Operand::Next(S::U64)),
            "mbarrier_try_wait_parity" => (&[M::TryWaitParity], Operand::Next(S::U32)),
            "mbarrier_wait" => (&[M::Wait], Operand::Next(S::U64)),
            "mbarrier_wait_parity" => (&[M::WaitParity], Operand::Next(S::U32)),
            "mbarrier_arrive_and_wait" => (&[M::Arrive, M::Wait], Operand::None),
            "mbarrier_inval" => (&[M::Inval], Operand::None),
            "cp_async_mbarrier_arrive" | "cp_async_mbarrier_arrive_shared" => {
                (&[M::CpAsyncArrive { noinc: false }], Operand::None)
            }
            "cp_async_mbarrier_arrive_noinc" | "cp_async_mbarrier_arrive_noinc_shared" => {
                (&[M::CpAsyncArrive { noinc: true }], Operand::None)
            }
            _ => return Ok(None),
        };
        let want = match operand {
            Operand::None => 1,
            Operand::Next(_) => 2,
            Operand::SkipThenNext => 3,
        };
        let Some((bar, rest)) = args.split_first().filter(|_| args.len() == want) else {
            let what = match operand {
                Operand::None => "",
                Operand::Next(S::U64) => " and a token",
                Operand::Next(_) if name.contains("parity") => " and a phase parity",
                Operand::Next(_) if name.contains("tx") => " and a byte count",
                Operand::Next(_) => " and an arrival count",
                Operand::SkipThenNext => ", an arrival count (1) and a byte count",
            };
            return err(
                span,
                format!("`{name}` takes a pointer to a shared `Barrier`{what}"),
            );
        };
        let addr = self.barrier_address(name, bar)?;
        let arg = match (&operand, rest) {
            (Operand::Next(ty), [x]) => Some((*ty, *x)),
            (Operand::SkipThenNext, [_, x]) => Some((S::U32, *x)),
            _ => None,
        };
        let arg = match arg {
            Some((ty, x)) => {
                let v = self.expr(x)?;
                Some(self.materialize(v, ty, x.span())?)
            }
            None => None,
        };
        if let Operand::SkipThenNext = operand
            && let [count, _] = rest
        {
            // cuda-oxide ignores it; a constant other than 1 is a misunderstanding.
            if let ConstVal::Int(n) = self.eval_const(count, 0).unwrap_or(ConstVal::Int(1))
                && n != 1
            {
                return err(
                    count.span(),
                    "`mbarrier_arrive_expect_tx` arrives once: its arrival count must be 1",
                );
            }
        }
        let mut out = Val::Unit;
        let mut token = None;
        for &op in ops {
            // `mbarrier_arrive_and_wait`: the wait takes the arrival's token.
            let arg = if op == M::Wait && token.is_some() {
                token
            } else {
                arg
            };
            let result = self
                .b
                .mbarrier(op, addr, arg)
                .or_else(|m| err(span, format!("internal compiler error: {m}")))?;
            token = result.filter(|_| op.result() == Some(S::U64));
            out = result.map_or(Val::Unit, Val::Scalar);
        }
        if ops.len() > 1 {
            out = Val::Unit;
        }
        Ok(Some(out))
    }

    /// The `U32` shared address a barrier pointer argument holds.
    fn barrier_address(&mut self, name: &str, e: &syn::Expr) -> Result<cuprum_ir::Value> {
        match self.expr(e)? {
            Val::Ptr {
                addr,
                space: AddressSpace::Shared,
                ..
            } => Ok(addr),
            other => err(
                e.span(),
                format!(
                    "`{name}` takes a pointer to a `Barrier` in shared memory (`&raw mut BAR` \
                     of a `static mut BAR: Barrier = Barrier::UNINIT;` in the kernel), not {}",
                    describe(&other)
                ),
            ),
        }
    }
}
