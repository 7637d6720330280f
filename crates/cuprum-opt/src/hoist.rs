//! Hoisting of operations without operands to the start of the kernel.
//!
//! Constants, parameter reads, slice bases and lengths, array addresses and hardware index
//! registers have no operands and cannot fault: defining them at the top of the body gives
//! the same bits and makes their one definition dominate every use, so that
//! [`crate::cse`] can merge the copies the front end emits in sibling branches (every
//! bounds check reads the slice length, every branch its own constants). Their relative order
//! is kept. ptxas rematerializes constants and parameter reads where registers are short, so
//! the longer live ranges cost nothing.
//!
//! What this pass must not move: anything with an operand (its operand might not be visible
//! at the top) or anything that is not pure.

use cuprum_ir::{Block, Kernel, Op, Stmt};

/// Runs the pass; true if the kernel changed.
pub fn run(kernel: &mut Kernel) -> bool {
    let mut hoisted = Vec::new();
    let mut rest = Vec::new();
    let mut changed = false;
    for stmt in std::mem::take(&mut kernel.body.stmts) {
        let top_leaf = matches!(&stmt, Stmt::Def { op, .. } if is_leaf(op));
        // A top-level leaf after another statement moves up.
        changed |= top_leaf && !rest.is_empty();
        collect(stmt, &mut hoisted, &mut rest);
    }
    changed |= hoisted.iter().any(|(nested, _)| *nested);
    let mut body: Vec<Stmt> = hoisted.into_iter().map(|(_, s)| s).collect();
    body.append(&mut rest);
    kernel.body = Block { stmts: body };
    changed
}

/// Whether `op` has no operands and no effect (constants, parameters, addresses of arrays,
/// special registers).
fn is_leaf(op: &Op) -> bool {
    let mut operands = 0;
    op.for_each_operand(|_| operands += 1);
    operands == 0 && op.is_pure()
}

/// Moves the leaf definitions of a top-level `stmt` (and of its nested blocks) to `hoisted`
/// (flagged `true` when they came from a nested block) and the rest to `rest`.
fn collect(stmt: Stmt, hoisted: &mut Vec<(bool, Stmt)>, rest: &mut Vec<Stmt>) {
    match stmt {
        Stmt::Def { value, op } if is_leaf(&op) => hoisted.push((false, Stmt::Def { value, op })),
        mut other => {
            nested(&mut other, hoisted);
            rest.push(other);
        }
    }
}

fn nested(stmt: &mut Stmt, hoisted: &mut Vec<(bool, Stmt)>) {
    let blocks: Vec<&mut Block> = match stmt {
        Stmt::If {
            then, otherwise, ..
        } => vec![then, otherwise],
        Stmt::Loop { body } => vec![body],
        _ => return,
    };
    for block in blocks {
        let stmts = std::mem::take(&mut block.stmts);
        for mut s in stmts {
            match s {
                Stmt::Def { value, op } if is_leaf(&op) => {
                    hoisted.push((true, Stmt::Def { value, op }))
                }
                _ => {
                    nested(&mut s, hoisted);
                    block.stmts.push(s);
                }
            }
        }
    }
}
