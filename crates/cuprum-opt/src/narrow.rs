//! 64-bit integer arithmetic narrowed to 32 bits where the result is known to fit.
//!
//! Rust indexes with `usize`, so the front end computes indices in `U64`: a shared-tile
//! index `(ty + j) * 33 + tx` becomes 64-bit multiplies and adds of zero-extended thread
//! indices, then a 64-bit bounds check, then a truncation to the `U32` shared address. A
//! 64-bit multiply or add costs the GPU two to four instructions where a 32-bit one costs one,
//! and ptxas does not know that thread indices are small.
//!
//! Truncation to 32 bits commutes with wrapping `+`, `-`, `*`, `&`, `|`, `^` and with shifts
//! by a constant below 32, so `(a op b) as u32 == (a as u32) op (b as u32)` always, and with
//! unsigned `/` and `%` when both operands are below `2^32` (a 64-bit division costs a
//! subroutine call, and a division by a constant becomes a 32-bit multiply-high in
//! [`crate::divide`] only once narrowed). When, in
//! addition, the known range of a `U64` result (`crate::facts`, with the launch limits on
//! thread and block indices) lies below `2^32`, the result equals the zero extension of that
//! 32-bit value. So its definition `v = a op b` becomes `n = a' op b'` in `U32` (operands:
//! the 32-bit source of a zero extension, an earlier narrowed value, a truncated constant, or
//! a truncation) and `v = n as u64`. [`crate::fold`] then removes `(n as u64) as u32` and
//! turns `(n as u64) < k` into `n < k as u32`, so the 64-bit arithmetic dies.
//!
//! What this pass must not do: narrow a value that may reach `2^32` (the zero extension
//! would differ), or a signed value (no range analysis for those).

use cuprum_ir::{BinaryOp, Block, Constant, Kernel, Op, ScalarType, Stmt, Value, ValueDef};

use crate::analyses::Analyses;
use crate::facts::{Defs, Facts, Ranges};
use crate::ir::always_exits;

use ScalarType as S;

/// Runs the pass; true if the kernel changed.
pub fn run(kernel: &mut Kernel) -> bool {
    run_with(kernel, &mut Analyses::new())
}

/// [`run`], taking the kernel's definitions from `analyses` (and returning them there when
/// nothing changed).
pub fn run_with(kernel: &mut Kernel, analyses: &mut Analyses) -> bool {
    let mut w = Narrow {
        defs: analyses.take_defs(kernel),
        facts: Facts::default(),
        narrowed: vec![None; kernel.values.len()],
        changed: false,
    };
    let mut body = std::mem::take(&mut kernel.body);
    w.block(&mut body, &mut kernel.values);
    kernel.body = body;
    if !w.changed {
        analyses.keep_defs(w.defs);
    }
    w.changed
}

struct Narrow {
    /// The kernel's definitions as they were before the pass (a narrowed value keeps its
    /// bits, so they stay true).
    defs: Defs,
    facts: Facts,
    /// The 32-bit value each narrowed `U64` value is the zero extension of.
    narrowed: Vec<Option<Value>>,
    changed: bool,
}

impl Narrow {
    fn block(&mut self, block: &mut Block, values: &mut cuprum_ir::Arena<ValueDef>) {
        let mark = self.facts.mark();
        let stmts = std::mem::take(&mut block.stmts);
        let mut out = Vec::with_capacity(stmts.len());
        for mut stmt in stmts {
            match &mut stmt {
                Stmt::Def { value, op } => {
                    if let Some(new) = self.narrow(*value, op, values, &mut out) {
                        *op = new;
                        self.changed = true;
                    }
                }
                Stmt::If {
                    cond,
                    then,
                    otherwise,
                } => {
                    let cond = *cond;
                    let m = self.facts.mark();
                    self.facts.assume(&self.defs, cond, true);
                    self.block(then, values);
                    self.facts.undo(m);
                    self.facts.assume(&self.defs, cond, false);
                    self.block(otherwise, values);
                    self.facts.undo(m);
                    match (always_exits(then), always_exits(otherwise)) {
                        (false, true) => self.facts.assume(&self.defs, cond, true),
                        (true, false) => self.facts.assume(&self.defs, cond, false),
                        _ => {}
                    }
                }
                Stmt::Loop { body } => self.block(body, values),
                _ => {}
            }
            out.push(stmt);
        }
        block.stmts = out;
        self.facts.undo(mark);
    }

    /// The new definition of `value = op` (`n as u64`, with `n`'s definition appended to
    /// `out`) if it can be narrowed.
    fn narrow(
        &mut self,
        value: Value,
        op: &Op,
        values: &mut cuprum_ir::Arena<ValueDef>,
        out: &mut Vec<Stmt>,
    ) -> Option<Op> {
        let &Op::Binary(b, l, r) = op else {
            return None;
        };
        if self.defs.ty(value) != S::U64 {
            return None;
        }
        let shift_ok = match b {
            BinaryOp::Add
            | BinaryOp::Sub
            | BinaryOp::Mul
            | BinaryOp::And
            | BinaryOp::Or
            | BinaryOp::Xor => true,
            BinaryOp::Shl => self.defs.konst(r).is_some_and(|s| s < 32),
            BinaryOp::Div | BinaryOp::Rem => true,
            _ => false,
        };
        if !shift_ok {
            return None;
        }
        let ranges = Ranges {
            defs: &self.defs,
            facts: &self.facts,
            locals: &[],
        };
        let below_2_32 = |v: Value| {
            ranges
                .of(v)
                .is_some_and(|(_, hi)| hi <= u64::from(u32::MAX))
        };
        if matches!(b, BinaryOp::Div | BinaryOp::Rem) && !(below_2_32(l) && below_2_32(r)) {
            // Truncation does not commute with division; operands that fit in 32 bits do
            // (the quotient and the remainder are no larger than the dividend).
            return None;
        }
        let (_, hi) = ranges.of(value)?;
        if hi > u64::from(u32::MAX) {
            return None;
        }
        // Narrow the operands only when at least one of them is cheap to narrow: otherwise
        // two truncations would replace one wide operation for no gain.
        if !self.cheap(l) && !self.cheap(r) {
            return None;
        }
        let nl = self.operand(l, values, out);
        let nr = if b == BinaryOp::Shl {
            r
        } else {
            self.operand(r, values, out)
        };
        let n = values.append(ValueDef { ty: S::U32 });
        out.push(Stmt::Def {
            value: n,
            op: Op::Binary(b, nl, nr),
        });
        if let Some(slot) = self.narrowed.get_mut(value.index()) {
            *slot = Some(n);
        }
        Some(Op::Cast {
            value: n,
            to: S::U64,
        })
    }

    /// Whether `v`'s low 32 bits are available without a truncation.
    fn cheap(&self, v: Value) -> bool {
        if self.narrowed.get(v.index()).copied().flatten().is_some() {
            return true;
        }
        match self.defs.op(v) {
            Some(Op::Const(_)) => true,
            Some(&Op::Cast { value: x, .. }) => self.defs.ty(x) == S::U32,
            _ => false,
        }
    }

    /// A `U32` value equal to `v as u32`.
    fn operand(
        &mut self,
        v: Value,
        values: &mut cuprum_ir::Arena<ValueDef>,
        out: &mut Vec<Stmt>,
    ) -> Value {
        if let Some(n) = self.narrowed.get(v.index()).copied().flatten() {
            return n;
        }
        let op = match self.defs.op(v) {
            Some(&Op::Cast { value: x, .. }) if self.defs.ty(x) == S::U32 => return x,
            Some(&Op::Const(c)) => Op::Const(Constant::new(S::U32, c.bits)),
            _ => Op::Cast {
                value: v,
                to: S::U32,
            },
        };
        let n = values.append(ValueDef { ty: S::U32 });
        out.push(Stmt::Def { value: n, op });
        n
    }
}
