//! Dead-code elimination: definitions nothing needs, writes of variables nothing reads, and
//! `If`s left with two empty branches. A block left with nothing but line information
//! (`Stmt::SourceLine`) is empty: markers of code that is gone are dropped, so that line
//! information never keeps a branch (and its code in the PTX) alive.
//!
//! Liveness is computed by marking, from the roots, so that cycles through variables
//! (`x = read $v; $v = x + 1` in a loop, with `$v` read nowhere else) die too. Roots are
//! the operands of every statement with an effect: stores, branches, traps, warp matrix
//! operations, copies, prints, and definitions that must stay (`crate::ir::is_removable`
//! says which: loads, atomics, warp operations and possibly faulting divisions stay even
//! when unused). A removable definition is live when its value is; a variable is live when
//! one of its reads is; a write is live when its variable is.
//!
//! What this pass must not do: delete anything whose execution can be observed (memory,
//! other lanes, traps, errors the emulator reports), or any loop (an empty `loop {}` does
//! not end, and that is observable).

use cuprum_ir::{Block, Kernel, Op, Stmt, Value};

use crate::ir::{compact, constant_bits, is_line_info, is_removable, visit_stmts};

/// Runs the pass; true if the kernel changed.
pub fn run(kernel: &mut Kernel) -> bool {
    let mut changed = false;
    // Deleting an `If` whose branches emptied can free its condition; a few rounds reach
    // the fixed point in practice, and stopping early only leaves dead code behind.
    for _ in 0..4 {
        if !round(kernel) {
            break;
        }
        changed = true;
    }
    if changed {
        compact(kernel);
    }
    changed
}

fn round(kernel: &mut Kernel) -> bool {
    let konst = constant_bits(kernel);
    let types: Vec<_> = kernel.values.iter().map(|(_, d)| d.ty).collect();
    let ty = |v: Value| {
        types
            .get(v.index())
            .copied()
            .unwrap_or(cuprum_ir::ScalarType::Bool)
    };
    let n = kernel.values.len();
    // The removable definition of each value, and the values written to each variable.
    let mut removable: Vec<Option<&Op>> = vec![None; n];
    let mut writes: Vec<Vec<Value>> = vec![Vec::new(); kernel.vars.len()];
    let mut roots: Vec<Value> = Vec::new();
    let mut in_place = Vec::new();
    visit_stmts(&kernel.body, &mut |s| match s {
        Stmt::Def { value, op }
            if is_removable(op, ty, |v| konst.get(v.index()).copied().flatten()) =>
        {
            if let Some(slot) = removable.get_mut(value.index()) {
                *slot = Some(op);
            }
        }
        Stmt::WriteVar { var, value } => {
            if let Some(w) = writes.get_mut(var.index()) {
                w.push(*value);
            }
        }
        other => {
            other.for_each_operand(|v| roots.push(v));
            in_place.extend_from_slice(other.vars_in_place());
        }
    });
    let mut live = vec![false; n];
    let mut live_var = vec![false; kernel.vars.len()];
    // A statement that reads variables in place (wgmma accumulators) keeps them, and so
    // their writes, alive.
    for var in in_place {
        if let Some(lv) = live_var.get_mut(var.index())
            && !*lv
        {
            *lv = true;
            roots.extend(writes.get(var.index()).into_iter().flatten().copied());
        }
    }
    while let Some(v) = roots.pop() {
        match live.get_mut(v.index()) {
            Some(l) if !*l => *l = true,
            _ => continue,
        }
        let Some(op) = removable.get(v.index()).copied().flatten() else {
            continue;
        };
        op.for_each_operand(|w| roots.push(w));
        if let Op::ReadVar(var) = op
            && let Some(lv) = live_var.get_mut(var.index())
            && !*lv
        {
            *lv = true;
            roots.extend(writes.get(var.index()).into_iter().flatten().copied());
        }
    }
    let mut sweep = Sweep {
        removable: removable.iter().map(Option::is_some).collect(),
        live,
        live_var,
        changed: false,
    };
    sweep.block(&mut kernel.body);
    sweep.changed
}

struct Sweep {
    removable: Vec<bool>,
    live: Vec<bool>,
    live_var: Vec<bool>,
    changed: bool,
}

impl Sweep {
    fn block(&mut self, block: &mut Block) {
        let before = block.stmts.len();
        block.stmts.retain_mut(|s| match s {
            Stmt::Def { value, .. } => {
                let i = value.index();
                !self.removable.get(i).copied().unwrap_or(false)
                    || self.live.get(i).copied().unwrap_or(true)
            }
            Stmt::WriteVar { var, .. } => self.live_var.get(var.index()).copied().unwrap_or(true),
            Stmt::If {
                then, otherwise, ..
            } => {
                self.block(then);
                self.block(otherwise);
                !(then.stmts.is_empty() && otherwise.stmts.is_empty())
            }
            Stmt::Loop { body } => {
                self.block(body);
                true
            }
            _ => true,
        });
        if block.stmts.iter().all(is_line_info) {
            block.stmts.clear();
        }
        if block.stmts.len() != before {
            self.changed = true;
        }
    }
}
