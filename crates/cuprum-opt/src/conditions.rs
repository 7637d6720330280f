//! Conditions already decided by a dominating branch: redundant bounds checks and friends.
//!
//! The front end guards every slice and array access with
//! `If { cond: index < len, then: [], otherwise: [Trap(BoundsCheck)] }`. Once such a check
//! has run, lanes that go on know `cond` is true (`crate::facts`); a later `If` on the
//! same value (common subexpression elimination makes re-tested comparisons the same value)
//! is decided, and replaced by the branch it takes: the check disappears. The same holds for
//! any `If` inside a branch on its own condition, and for conditions that the known ranges
//! of unsigned operands decide (`k < 4` with `k < 4` known from the loop's exit test makes
//! `k as u64 < 8` true), and bounds checks that the kernel's launch requirements prove
//! (`y * w + x < len` under `y < h`, `x < w` where every launch has `len >= w * h`:
//! [`crate::relations`]). A decided comparison becomes a constant, a `select` on a decided
//! condition its arm.
//!
//! What this pass must not do: decide anything from a branch that does not dominate the
//! test, or from float comparisons negated (NaN makes `!(a < b)` differ from `a >= b`; the
//! facts only negate integer comparisons).

use cuprum_ir::{Block, CmpOp, Constant, Kernel, Op, Stmt, Value};

use crate::analyses::Analyses;
use crate::facts::{Defs, Facts, Ranges};
use crate::ir::{Subst, always_exits, compact};
use crate::relations::Relations;

/// Runs the pass; true if the kernel changed.
pub fn run(kernel: &mut Kernel) -> bool {
    run_with(kernel, &mut Analyses::new())
}

/// [`run`], taking the kernel's definitions from `analyses` (and returning them there when
/// nothing changed).
pub fn run_with(kernel: &mut Kernel, analyses: &mut Analyses) -> bool {
    let defs = analyses.take_defs(kernel);
    let mut w = Walker {
        subst: Subst::new(kernel.values.len()),
        relations: Relations::new(kernel),
        defs,
        facts: Facts::default(),
        changed: false,
    };
    let body = std::mem::take(&mut kernel.body);
    kernel.body = w.block(body);
    if w.changed {
        compact(kernel);
    } else {
        analyses.keep_defs(w.defs);
    }
    w.changed
}

struct Walker {
    defs: Defs,
    /// What the kernel's launch requirements say of its slice lengths and parameters.
    relations: Relations,
    facts: Facts,
    subst: Subst,
    changed: bool,
}

impl Walker {
    fn block(&mut self, block: Block) -> Block {
        let mark = self.facts.mark();
        let mut out = Vec::with_capacity(block.stmts.len());
        self.stmts(block.stmts, &mut out);
        self.facts.undo(mark);
        Block { stmts: out }
    }

    /// Rewrites `stmts` into `out`, in the current scope.
    fn stmts(&mut self, stmts: Vec<Stmt>, out: &mut Vec<Stmt>) {
        for mut stmt in stmts {
            self.subst.apply(&mut stmt);
            match stmt {
                Stmt::If {
                    cond,
                    then,
                    otherwise,
                } => {
                    if let Some(holds) = self.facts.known(cond) {
                        self.changed = true;
                        let taken = if holds { then } else { otherwise };
                        self.stmts(taken.stmts, out);
                        continue;
                    }
                    let mark = self.facts.mark();
                    self.facts.assume(&self.defs, cond, true);
                    let then = self.block(then);
                    self.facts.undo(mark);
                    self.facts.assume(&self.defs, cond, false);
                    let otherwise = self.block(otherwise);
                    self.facts.undo(mark);
                    let (then_exits, else_exits) = (always_exits(&then), always_exits(&otherwise));
                    out.push(Stmt::If {
                        cond,
                        then,
                        otherwise,
                    });
                    if else_exits && !then_exits {
                        self.facts.assume(&self.defs, cond, true);
                    } else if then_exits && !else_exits {
                        self.facts.assume(&self.defs, cond, false);
                    }
                }
                Stmt::Loop { body } => {
                    let body = self.block(body);
                    out.push(Stmt::Loop { body });
                }
                Stmt::Def {
                    value,
                    op:
                        Op::Select {
                            cond,
                            if_true,
                            if_false,
                        },
                } if self.facts.known(cond).is_some() => {
                    self.changed = true;
                    let arm = if self.facts.known(cond) == Some(true) {
                        if_true
                    } else {
                        if_false
                    };
                    self.subst.set(value, arm);
                }
                Stmt::Def {
                    value,
                    op: Op::Compare(c, l, r),
                } => {
                    // A comparison that is known, or that the ranges decide, is a constant.
                    let op = match self.facts.known(value).or_else(|| self.decide(c, l, r)) {
                        Some(b) => {
                            self.changed = true;
                            self.facts.assume(&self.defs, value, b);
                            Op::Const(Constant::bool(b))
                        }
                        None => Op::Compare(c, l, r),
                    };
                    out.push(Stmt::Def { value, op });
                }
                other => out.push(other),
            }
        }
    }

    /// The value of `l c r` if the operands' ranges decide it.
    fn decide(&self, c: CmpOp, l: Value, r: Value) -> Option<bool> {
        let ranges = Ranges {
            defs: &self.defs,
            facts: &self.facts,
            locals: &[],
        };
        ranges.decide(c, l, r).or_else(|| {
            if self.relations.is_empty() {
                None
            } else {
                self.relations.decide(&ranges, c, l, r)
            }
        })
    }
}
