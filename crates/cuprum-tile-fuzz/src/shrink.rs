//! Shrinking a failing case: its statements removed one at a time (the last first, so
//! that uses go before their definitions), each removal kept when the kernel still
//! validates and the case still fails the same way; passes repeat until one keeps none.

use cuprum_tile_ir::{Block, Stmt, validate_kernel};

use crate::Case;

/// Where a statement is: its index in the body, then, for each level of nesting, which
/// nested block of that statement and the index in it.
type Location = Vec<usize>;

/// The blocks nested in `s` that the shrinker enters (not reduce closures, whose one
/// yield must stay).
fn nested_mut(s: &mut Stmt) -> Vec<&mut Block> {
    match s {
        Stmt::If {
            then, otherwise, ..
        } => vec![then, otherwise],
        Stmt::For { body, .. } | Stmt::Loop { body, .. } => vec![body],
        _ => Vec::new(),
    }
}

fn nested(s: &Stmt) -> Vec<&Block> {
    match s {
        Stmt::If {
            then, otherwise, ..
        } => vec![then, otherwise],
        Stmt::For { body, .. } | Stmt::Loop { body, .. } => vec![body],
        _ => Vec::new(),
    }
}

/// Every statement's location in `block`, parents before their nested statements.
fn locations(block: &Block, prefix: &[usize], out: &mut Vec<Location>) {
    for (i, s) in block.stmts.iter().enumerate() {
        let mut here = prefix.to_vec();
        here.push(i);
        out.push(here.clone());
        for (b, inner) in nested(s).into_iter().enumerate() {
            let mut p = here.clone();
            p.push(b);
            locations(inner, &p, out);
        }
    }
}

/// Removes the statement at `loc` from `block`; false when there is none.
fn remove(block: &mut Block, loc: &[usize]) -> bool {
    match loc {
        [i] if *i < block.stmts.len() => {
            block.stmts.remove(*i);
            true
        }
        [i, b, rest @ ..] => match block.stmts.get_mut(*i) {
            Some(s) => match nested_mut(s).into_iter().nth(*b) {
                Some(inner) => remove(inner, rest),
                None => false,
            },
            None => false,
        },
        _ => false,
    }
}

/// `case` with as many statements removed as can be while `fails` still holds of it (see
/// the module docs). `fails` should say whether a candidate fails the way `case` does.
pub fn shrink(case: &Case, mut fails: impl FnMut(&Case) -> bool) -> Case {
    let mut best = case.clone();
    loop {
        let mut locs = Vec::new();
        locations(&best.kernel.body, &[], &mut locs);
        let mut changed = false;
        for loc in locs.iter().rev() {
            let mut candidate = best.clone();
            if !remove(&mut candidate.kernel.body, loc) {
                continue;
            }
            if validate_kernel(&candidate.kernel).is_err() {
                continue;
            }
            // In reverse pre-order, a removal moves no location still to be tried.
            if fails(&candidate) {
                best = candidate;
                changed = true;
            }
        }
        if !changed {
            return best;
        }
    }
}
