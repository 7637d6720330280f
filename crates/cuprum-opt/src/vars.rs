//! Variable reads that repeat a value already in hand: forwarding of variables to their reads.
//!
//! The front end reads a variable afresh at every use (`x[i]`, `x[i + s]` and `i += s` are
//! three `read $i`), so two reads of an unchanged variable are two values, and nothing that
//! works on values sees that they are equal: [`crate::cse`] keeps `i < n` twice and
//! [`crate::conditions`] cannot drop the second bounds check. A thread's variable changes
//! only where it writes it, so a read that follows a write (`x = v`) or another read of the
//! same variable, with no write in between on any path, gives that value: this pass
//! replaces it by that value.
//!
//! The walk keeps, per variable, the value it is known to hold. A write or a read sets it;
//! entering a branch keeps what was known before it, and after the `If` every variable
//! written in either branch is forgotten; in a loop every variable the body writes is
//! forgotten at its top (the next iteration sees the last one's writes) and after it. A value
//! known inside a block is forgotten when the walk leaves the block, so every replacement is
//! defined earlier in the same block or in an enclosing one.
//!
//! What this pass must not do: forward a value past a write of the variable on any path, or
//! forward a value defined in a block to a read outside it.

use std::collections::{HashMap, HashSet};

use cuprum_ir::{Block, Kernel, Op, Stmt, Value, Var};

use crate::ir::{Subst, compact, visit_stmts};

/// Runs the pass; true if the kernel changed.
pub fn run(kernel: &mut Kernel) -> bool {
    let mut w = Forward {
        known: HashMap::new(),
        subst: Subst::new(kernel.values.len()),
        changed: false,
    };
    w.block(&mut kernel.body);
    if w.changed {
        compact(kernel);
    }
    w.changed
}

struct Forward {
    /// The value each variable holds at the current point of the walk, where known.
    known: HashMap<Var, Value>,
    subst: Subst,
    changed: bool,
}

impl Forward {
    fn block(&mut self, block: &mut Block) {
        let stmts = std::mem::take(&mut block.stmts);
        let mut out = Vec::with_capacity(stmts.len());
        for mut stmt in stmts {
            self.subst.apply(&mut stmt);
            match &mut stmt {
                &mut Stmt::Def {
                    value,
                    op: Op::ReadVar(var),
                } => {
                    if let Some(&held) = self.known.get(&var) {
                        self.subst.set(value, held);
                        self.changed = true;
                        continue;
                    }
                    self.known.insert(var, value);
                }
                &mut Stmt::WriteVar { var, value } => {
                    self.known.insert(var, value);
                }
                Stmt::If {
                    then, otherwise, ..
                } => {
                    let before = self.known.clone();
                    self.block(then);
                    self.known.clone_from(&before);
                    self.block(otherwise);
                    self.known = before;
                    self.forget_written(then);
                    self.forget_written(otherwise);
                }
                Stmt::Loop { body } => {
                    self.forget_written(body);
                    let before = self.known.clone();
                    self.block(body);
                    self.known = before;
                }
                // Variables a statement writes in place (wgmma accumulators) hold unknown
                // values after it.
                other => {
                    for var in other.vars_in_place() {
                        self.known.remove(var);
                    }
                }
            }
            out.push(stmt);
        }
        block.stmts = out;
    }

    /// Forgets the value of every variable that `block` (or a block nested in it) writes.
    fn forget_written(&mut self, block: &Block) {
        let mut written = HashSet::new();
        visit_stmts(block, &mut |s| {
            if let Stmt::WriteVar { var, .. } = s {
                written.insert(*var);
            }
            written.extend(s.vars_in_place().iter().copied());
        });
        self.known.retain(|var, _| !written.contains(var));
    }
}
