//! Shrinking a failing program: statements are dropped or simplified one at a time, and a
//! change is kept while the failure persists, until no single change keeps it. A failure
//! found among thousands of random kernels becomes a program of a few statements, which is
//! what a bug report (and a regression test) needs.
//!
//! Every change keeps the program well formed: a definition becomes a constant of its type
//! (so later uses stay valid), other statements are removed, an `If` is replaced by one of its
//! arms (whose definitions are used only inside it), a loop by its body run once. Whether a
//! change keeps the program *meaningful* is the caller's predicate's business (typically:
//! the reference still accepts it and the two outcomes still differ).

use cuprum_ir::Constant;

use crate::program::{Node, Program, Stmt};

/// The candidate edits of one statement list, in the order tried.
fn edits(stmts: &[Stmt], at: usize) -> Vec<Vec<Stmt>> {
    let mut out = Vec::new();
    let s = &stmts[at];
    let with = |replacement: Vec<Stmt>| {
        let mut v = stmts[..at].to_vec();
        v.extend(replacement);
        v.extend_from_slice(&stmts[at + 1..]);
        v
    };
    match s {
        Stmt::Def(..) => {}
        Stmt::If {
            then, otherwise, ..
        } => {
            out.push(with(Vec::new()));
            out.push(with(then.clone()));
            out.push(with(otherwise.clone()));
        }
        Stmt::Loop(_) => out.push(with(Vec::new())),
        _ => out.push(with(Vec::new())),
    }
    out
}

/// One pass over the statement list at `path` and the lists nested in it: tries every edit,
/// keeping those `keep` accepts.
fn pass(
    program: &mut Program,
    path: &mut Vec<usize>,
    keep: &mut dyn FnMut(&Program) -> bool,
) -> bool {
    let mut changed = false;
    let mut at = 0;
    loop {
        let Some(list) = list_at(&program.body, path) else {
            return changed;
        };
        if at >= list.len() {
            return changed;
        }
        let list = list.clone();
        let mut accepted = false;
        // A definition: its value replaced by a constant of its type.
        if let Stmt::Def(id, node) = &list[at]
            && !matches!(node, Node::Const(_))
        {
            let ty = program.types[*id as usize];
            for bits in [0u64, 1] {
                let mut l = list.clone();
                l[at] = Stmt::Def(*id, Node::Const(Constant::new(ty, bits)));
                let candidate = with_list(program, path, l);
                if keep(&candidate) {
                    *program = candidate;
                    accepted = true;
                    break;
                }
            }
        }
        if !accepted {
            for l in edits(&list, at) {
                let candidate = with_list(program, path, l);
                if keep(&candidate) {
                    *program = candidate;
                    accepted = true;
                    break;
                }
            }
        }
        if accepted {
            changed = true;
            continue;
        }
        // Into nested blocks.
        let nested = match &list[at] {
            Stmt::If { .. } => 2,
            Stmt::Loop(_) => 1,
            _ => 0,
        };
        for arm in 0..nested {
            path.push(at * 2 + arm);
            changed |= pass(program, path, keep);
            path.pop();
        }
        at += 1;
    }
}

/// The statement list at `path` (each step: `2 * index + arm` of an `If` or `Loop`).
fn list_at<'a>(body: &'a Vec<Stmt>, path: &[usize]) -> Option<&'a Vec<Stmt>> {
    let mut list = body;
    for &step in path {
        list = match list.get(step / 2)? {
            Stmt::If { then, .. } if step % 2 == 0 => then,
            Stmt::If { otherwise, .. } => otherwise,
            Stmt::Loop(body) => body,
            _ => return None,
        };
    }
    Some(list)
}

fn list_at_mut<'a>(body: &'a mut Vec<Stmt>, path: &[usize]) -> Option<&'a mut Vec<Stmt>> {
    let mut list = body;
    for &step in path {
        list = match list.get_mut(step / 2)? {
            Stmt::If { then, .. } if step % 2 == 0 => then,
            Stmt::If { otherwise, .. } => otherwise,
            Stmt::Loop(body) => body,
            _ => return None,
        };
    }
    Some(list)
}

fn with_list(program: &Program, path: &[usize], list: Vec<Stmt>) -> Program {
    let mut p = program.clone();
    if let Some(l) = list_at_mut(&mut p.body, path) {
        *l = list;
    }
    p
}

/// Shrinks `program` while `keep` holds (it must hold for `program` itself), and returns
/// the smallest program found; `keep` is asked at most `budget` times.
pub fn reduce(program: &Program, budget: usize, mut keep: impl FnMut(&Program) -> bool) -> Program {
    let mut asked = 0;
    let mut keep = |p: &Program| {
        asked += 1;
        asked <= budget && keep(p)
    };
    let mut p = program.clone();
    for _ in 0..20 {
        if !pass(&mut p, &mut Vec::new(), &mut keep) {
            break;
        }
    }
    let mut pruned = p.clone();
    prune(&mut pruned);
    if keep(&pruned) { pruned } else { p }
}

/// Statements in `program`, nested ones included.
pub fn size(program: &Program) -> usize {
    let mut n = 0;
    program.walk(|_| n += 1);
    n
}

/// Drops the definitions nothing uses (pure ones only), until none is left.
pub fn prune(program: &mut Program) {
    loop {
        let mut used = vec![false; program.types.len()];
        program.walk(|s| {
            for id in s.operands() {
                used[id as usize] = true;
            }
        });
        fn sweep(stmts: &mut Vec<Stmt>, used: &[bool]) -> bool {
            let before = stmts.len();
            stmts.retain(|s| match s {
                Stmt::Def(id, node) => used[*id as usize] || !node.is_pure(),
                _ => true,
            });
            let mut changed = stmts.len() != before;
            for s in stmts.iter_mut() {
                match s {
                    Stmt::If {
                        then, otherwise, ..
                    } => {
                        changed |= sweep(then, used);
                        changed |= sweep(otherwise, used);
                    }
                    Stmt::Loop(body) => changed |= sweep(body, used),
                    _ => {}
                }
            }
            changed
        }
        if !sweep(&mut program.body, &used) {
            return;
        }
    }
}
