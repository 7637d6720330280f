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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::{Config, generate};
    use cuprum_tile_ir::Op;

    fn count(block: &Block) -> usize {
        let mut n = 0;
        block.visit(&mut |_| n += 1);
        n
    }

    fn has_reduce(case: &Case) -> bool {
        let mut found = false;
        case.kernel.body.visit(&mut |s| {
            found |= matches!(
                s,
                Stmt::Def {
                    op: Op::Reduce { .. },
                    ..
                }
            );
        });
        found
    }

    /// Shrinking keeps the property and validity, removes most statements, and leaves none
    /// that could go: every remaining one is needed for validity or for the property.
    #[test]
    fn shrinks_to_a_valid_case_where_no_statement_can_go() {
        let cfg = Config::ci(0xA5);
        let mut shrunk = 0;
        for seed in 0..40u64 {
            let Ok(case) = generate(seed, &cfg) else {
                continue;
            };
            if !has_reduce(&case) {
                continue;
            }
            let small = shrink(&case, has_reduce);
            assert!(has_reduce(&small), "seed {seed}");
            assert!(validate_kernel(&small.kernel).is_ok(), "seed {seed}");
            assert!(
                count(&small.kernel.body) < count(&case.kernel.body),
                "seed {seed}"
            );
            let mut locs = Vec::new();
            locations(&small.kernel.body, &[], &mut locs);
            for loc in &locs {
                let mut c = small.clone();
                assert!(remove(&mut c.kernel.body, loc));
                assert!(
                    validate_kernel(&c.kernel).is_err() || !has_reduce(&c),
                    "seed {seed}: the statement at {loc:?} could have gone"
                );
            }
            shrunk += 1;
        }
        assert!(shrunk >= 5, "only {shrunk} programs had a reduction");
    }
}
