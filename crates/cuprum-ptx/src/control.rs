//! Structured control flow (`If`, `Loop`, `Break`, `Continue`) and the member masks of the
//! warp-synchronous instructions inside it.
//!
//! The IR says that a warp operation acts on the lanes that execute it together and that lanes
//! reconverge after each `If` and `Loop`. PTX promises no reconvergence: after a divergent
//! branch or loop the lanes of a warp may arrive at the next instruction at different times,
//! so `activemask` can name only some of the lanes the IR means (measured on an H200: a
//! butterfly shuffle inside a loop that followed a divergent loop read other lanes' values as
//! if they were absent). What PTX does promise is that a `.sync` instruction waits for every
//! non-exited lane of its member mask. So a kernel with warp operations inside `If` or `Loop`
//! is written with *exact* masks:
//!
//! * the top level of the body has the full mask (lanes that returned have exited and do not
//!   block, nor do the absent lanes of a partial warp);
//! * an `If` with a warp operation inside computes its branches' masks with a ballot of the
//!   condition over the enclosing mask, which every lane of that mask reaches;
//! * a `Loop` with a warp operation inside keeps its lanes together for whole iterations:
//!   `Break` and `Continue` set flags instead of jumping, the statements after one that may
//!   have set them run only for the lanes that did not (with a ballot of that over the
//!   enclosing mask), and at the end of each iteration a ballot of "did not break" over the
//!   iteration's mask is the next iteration's mask, which every lane of the iteration reaches.
//!
//! Kernels without warp operations inside control flow, and loops and branches without warp
//! operations in them, are written with plain branches as before, so they pay nothing.

use cuprum_ir::{Block, Op, Stmt, Value};

use crate::PtxError;
use crate::emit::{KernelWriter, Label, WarpMask, ins};
use crate::regs::{Class, Reg};

/// How `Break` and `Continue` reach the end of an enclosing loop.
#[derive(Clone, Copy)]
pub(crate) enum LoopExit {
    /// Plain branches to the loop's head (`Continue`) or exit (`Break`).
    Branch { head: Label, exit: Label },
    /// Flags, for a loop whose lanes stay together for whole iterations (see the module docs):
    /// `left` says this lane skips the rest of the iteration, `broke` that it leaves the loop
    /// at the iteration's end.
    Flags { left: Reg, broke: Reg },
}

/// Whether `stmt` is a warp operation whose member mask matters (shuffles and votes; the
/// matrix operations are whole-warp `.aligned` instructions without a mask).
fn is_masked_warp_op(stmt: &Stmt) -> bool {
    matches!(
        stmt,
        Stmt::Def {
            op: Op::Shuffle { .. } | Op::Vote { .. },
            ..
        }
    )
}

/// Whether `block` (nested blocks included) has a warp operation whose member mask matters.
pub(crate) fn has_warp_op(block: &Block) -> bool {
    let mut found = false;
    block.visit(&mut |s| found |= is_masked_warp_op(s));
    found
}

/// Whether `stmt` is or contains a warp operation whose member mask matters.
fn has_warp_op_stmt(stmt: &Stmt) -> bool {
    is_masked_warp_op(stmt) || stmt.nested().any(has_warp_op)
}

/// Whether some warp operation of `body` is inside an `If` or a `Loop`, so that the kernel
/// needs exact masks.
pub(crate) fn needs_exact_masks(body: &Block) -> bool {
    body.stmts.iter().any(|s| s.nested().any(has_warp_op))
}

/// Whether `stmt` is, or contains outside nested loops, a `Break` or `Continue` (which then
/// refers to the innermost loop around `stmt`).
fn reaches_loop_end(stmt: &Stmt) -> bool {
    match stmt {
        Stmt::Break | Stmt::Continue => true,
        Stmt::Loop { .. } => false,
        other => other.nested().any(|b| b.stmts.iter().any(reaches_loop_end)),
    }
}

impl KernelWriter<'_> {
    /// The innermost enclosing loop's exit, if any.
    fn innermost_loop(&self) -> Option<LoopExit> {
        self.loops.last().copied()
    }

    /// Whether control never reaches the statement after `stmt` in its block: a `Return`,
    /// a `Trap`, or a `Break`/`Continue` written as a branch.
    fn jumps_away(&self, stmt: &Stmt) -> bool {
        match stmt {
            Stmt::Break | Stmt::Continue => {
                matches!(self.innermost_loop(), Some(LoopExit::Branch { .. }) | None)
            }
            other => other.is_terminator(),
        }
    }

    /// Writes the statements of a block in order.
    pub(crate) fn block(&mut self, stmts: &[Stmt]) -> Result<(), PtxError> {
        for (i, stmt) in stmts.iter().enumerate() {
            self.stmt(stmt)?;
            if self.jumps_away(stmt) {
                // The rest of the block is unreachable.
                break;
            }
            if let Some(LoopExit::Flags { left, .. }) = self.innermost_loop()
                && reaches_loop_end(stmt)
            {
                if !matches!(stmt, Stmt::Break | Stmt::Continue) {
                    self.unless_left(left, &stmts[i + 1..])?;
                }
                // After a `Break` or `Continue` itself the rest is unreachable for its lanes.
                break;
            }
        }
        Ok(())
    }

    /// Writes `rest` for the lanes whose `left` flag is clear.
    fn unless_left(&mut self, left: Reg, rest: &[Stmt]) -> Result<(), PtxError> {
        // Nothing but line information: its directives, and no branch around them.
        if rest.iter().all(|s| matches!(s, Stmt::SourceLine { .. })) {
            return self.block(rest);
        }
        let end = self.label();
        let saved = self.mask;
        if self.exact_masks && rest.iter().any(has_warp_op_stmt) {
            let m = self.tmp(Class::B32);
            ins!(self, "vote.sync.ballot.b32 {m}, !{left}, {saved}");
            self.mask = WarpMask::Active(m);
        }
        ins!(self, "@{left} bra {end}");
        let r = self.block(rest);
        self.mask = saved;
        r?;
        self.place(end);
        Ok(())
    }

    /// `If`: a branch over `then`, with `otherwise` after it when it is not empty; masks by
    /// ballot when a warp operation is inside.
    pub(crate) fn if_stmt(
        &mut self,
        cond: Value,
        then: &Block,
        otherwise: &Block,
    ) -> Result<(), PtxError> {
        let c = self.reg(cond);
        let outer = self.mask;
        let then_mask = if self.exact_masks && (has_warp_op(then) || has_warp_op(otherwise)) {
            let m = self.tmp(Class::B32);
            ins!(self, "vote.sync.ballot.b32 {m}, {c}, {outer}");
            Some(m)
        } else {
            None
        };
        let end = self.label();
        if otherwise.stmts.is_empty() {
            ins!(self, "@!{c} bra {end}");
            self.with_mask(then_mask, then)?;
        } else {
            let other = self.label();
            ins!(self, "@!{c} bra {other}");
            self.with_mask(then_mask, then)?;
            if !then.stmts.iter().any(|s| self.jumps_away(s)) {
                ins!(self, "bra {end}");
            }
            self.place(other);
            let else_mask = then_mask.map(|t| {
                let m = self.tmp(Class::B32);
                ins!(self, "not.b32 {m}, {t}");
                ins!(self, "and.b32 {m}, {m}, {outer}");
                m
            });
            self.with_mask(else_mask, otherwise)?;
        }
        self.place(end);
        Ok(())
    }

    /// Writes `block` with the region mask `mask` (unchanged when `None`).
    fn with_mask(&mut self, mask: Option<Reg>, block: &Block) -> Result<(), PtxError> {
        let saved = self.mask;
        if let Some(m) = mask {
            self.mask = WarpMask::Active(m);
        }
        let r = self.block(&block.stmts);
        self.mask = saved;
        r
    }

    /// `Loop`: plain branches, or (with a warp operation inside and exact masks) the lanes
    /// kept together per iteration with flags.
    pub(crate) fn loop_stmt(&mut self, body: &Block) -> Result<(), PtxError> {
        let (head, exit) = (self.label(), self.label());
        if !(self.exact_masks && has_warp_op(body)) {
            self.place(head);
            self.loops.push(LoopExit::Branch { head, exit });
            let r = self.block(&body.stmts);
            self.loops.pop();
            r?;
            if !body.stmts.iter().any(|s| self.jumps_away(s)) {
                ins!(self, "bra {head}");
            }
            self.place(exit);
            return Ok(());
        }
        let outer = self.mask;
        let (left, broke, iteration) = (
            self.tmp(Class::Pred),
            self.tmp(Class::Pred),
            self.tmp(Class::B32),
        );
        ins!(self, "mov.b32 {iteration}, {outer}");
        self.place(head);
        ins!(self, "setp.ne.u32 {left}, 0, 0");
        ins!(self, "setp.ne.u32 {broke}, 0, 0");
        self.loops.push(LoopExit::Flags { left, broke });
        self.mask = WarpMask::Active(iteration);
        let r = self.block(&body.stmts);
        self.mask = outer;
        self.loops.pop();
        r?;
        // Every lane of this iteration that did not return is here.
        ins!(
            self,
            "vote.sync.ballot.b32 {iteration}, !{broke}, {iteration}"
        );
        ins!(self, "@!{broke} bra {head}");
        self.place(exit);
        Ok(())
    }

    /// `Break` or `Continue` (`brk`) of the innermost loop.
    pub(crate) fn loop_jump(&mut self, brk: bool) -> Result<(), PtxError> {
        match self.innermost_loop() {
            None => Err(self.unsupported("break or continue outside a loop")),
            Some(LoopExit::Branch { head, exit }) => {
                let target = if brk { exit } else { head };
                ins!(self, "bra {target}");
                Ok(())
            }
            Some(LoopExit::Flags { left, broke }) => {
                ins!(self, "setp.eq.u32 {left}, 0, 0");
                if brk {
                    ins!(self, "setp.eq.u32 {broke}, 0, 0");
                }
                Ok(())
            }
        }
    }
}
