//! Strength reduction of the addresses a loop computes from its counter.
//!
//! A counted loop whose body reads `tile[j]` computes `base + j * 16` every iteration, and
//! after [`crate::unroll_dynamic`] or [`crate::unroll`] each of the four copies computes
//! `base + (4 * i + k) * 16` again. ptxas keeps that arithmetic (a shift or multiply and an
//! add per access, and in uniform registers a few more to move the result around), where
//! nvcc's output advances one pointer per iteration and addresses the copies at constant
//! offsets from it. This pass makes that pointer.
//!
//! A loop qualifies when, for an unsigned integer variable `$i` (`U32` or `U64`):
//!
//! ```text
//! loop {
//!     ...
//!     x = read $i              // at the body's top level
//!     ...
//!     $i = Add x, step         // the loop's only write of `$i` (nested blocks included),
//!     ...                      // at the top level, `step` defined before the loop
//! }
//! ```
//!
//! An address of a memory access in the body whose linear form ([`cuprum_ir::Addresses`])
//! is `c + beta * x + sum(k_t * t)`, with `beta` nonzero and every `t` defined before the
//! loop (visible where the loop starts), is rewritten as `p + (c - c0)`, where `$p` is a new
//! variable of the address's type that holds `c0 + beta * $i + sum(k_t * t)`. Accesses with
//! the same `beta` and terms share one `$p` (the group's smallest constant is `c0`, so the
//! others are small positive offsets that fit in an instruction's immediate).
//!
//! ```text
//! x0 = read $i; $p = c0 + beta * x0 + sum(k_t * t)      // before the loop
//! loop {
//!     ...
//!     x = read $i; pd = read $p                         // together
//!     ...  access [pd + (c - c0)]  ...
//!     $i = Add x, step
//!     ...
//!     $p = Add pd, beta * step                          // at the body's end
//! }
//! ```
//!
//! Why it keeps the meaning: every form is exact in the type's wrapping arithmetic, and `$p`
//! equals `c0 + beta * $i + sum(k_t * t)` wherever the body starts and wherever `x` is read:
//! it does before the loop (`$i` is not written between there and the first read of `x`, the
//! loop's only write of it coming after that read), and an iteration that writes `$i = x +
//! step` also writes `$p = pd + beta * step` before it reaches the body's start again: the
//! update goes at the body's end when no `continue` of the loop follows the write of `$i`
//! (a `break` leaves the loop, whose next run starts `$p` afresh), else right after that
//! write; an iteration that leaves before the write of `$i` writes neither. `pd`, read beside
//! `x`, is therefore `c0 + beta * x + ...`, and `pd + (c - c0)` is the address the access
//! computed from `x`. The terms `t` do not change inside the loop (they are defined before it). No
//! access moves, none is added or removed, and the old address arithmetic, now unused, is
//! left to [`crate::dce`].
//!
//! The pass runs after [`crate::vectorize`] (which reads the addresses' linear forms, and
//! would see `$p` only as a variable), on innermost loops first. It gives each loop at most
//! [`MAX_POINTERS`] pointers, each a register live through the loop.

use std::collections::{BTreeMap, HashSet};

use cuprum_ir::{
    Addresses, Arena, BinaryOp, Block, Constant, Kernel, Op, ScalarType, Stmt, Value, ValueDef,
    Var, VarDef,
};

use crate::analyses::Analyses;
use crate::ir::{all_ones, constant_bits};

/// The most pointer variables the pass gives one loop.
pub const MAX_POINTERS: usize = 4;

/// Runs the pass with the context's address analysis; true if the kernel changed.
pub fn run_with(kernel: &mut Kernel, analyses: &mut Analyses) -> bool {
    let addresses = analyses.take_addresses(kernel);
    let mut pass = Reducer {
        addresses: &addresses,
        konst: constant_bits(kernel),
        values: std::mem::take(&mut kernel.values),
        vars: std::mem::take(&mut kernel.vars),
        changed: false,
    };
    let mut body = std::mem::take(&mut kernel.body);
    pass.block(&mut body, HashSet::new());
    let changed = pass.changed;
    kernel.values = pass.values;
    kernel.vars = pass.vars;
    kernel.body = body;
    if !changed {
        analyses.keep_addresses(addresses);
    }
    changed
}

struct Reducer<'a> {
    addresses: &'a Addresses,
    /// The bits of every constant of the kernel before the pass, by value index.
    konst: Vec<Option<u64>>,
    values: Arena<ValueDef>,
    vars: Arena<VarDef>,
    changed: bool,
}

/// A loop counter the pass can follow: `x = read $i` at the top level and the one write
/// `$i = Add x, step`.
struct Counter {
    var: Var,
    ty: ScalarType,
    /// The value read, and the index of its definition in the body.
    x: Value,
    read_at: usize,
    /// The increment of the write `$i = Add x, step` (defined before the loop).
    step: Value,
    /// Where the pointers' updates go: the body's end when no `continue` of this loop
    /// follows the write (ptxas then keeps each pointer in one register), else just after it.
    update_at: usize,
}

/// Accesses whose addresses differ only in their constants: one pointer.
struct Group {
    beta: u64,
    /// The loop-invariant terms, with their coefficients (sorted, as the linear form keeps
    /// them).
    terms: Vec<(Value, u64)>,
    /// Each access (its path in the body) and its address's constant.
    members: Vec<(Vec<usize>, u64)>,
}

impl Reducer<'_> {
    /// Visits `block`, in which the values of `visible` are defined where it starts; reduces
    /// its loops, innermost first.
    fn block(&mut self, block: &mut Block, mut visible: HashSet<Value>) {
        let mut i = 0;
        while i < block.stmts.len() {
            match &mut block.stmts[i] {
                Stmt::If {
                    then, otherwise, ..
                } => {
                    self.block(then, visible.clone());
                    self.block(otherwise, visible.clone());
                }
                Stmt::Loop { body } => {
                    self.block(body, visible.clone());
                    let before = self.reduce(body, &visible);
                    for s in &before {
                        visible.extend(s.results());
                    }
                    let n = before.len();
                    block.stmts.splice(i..i, before);
                    i += n;
                }
                _ => {}
            }
            visible.extend(block.stmts[i].results());
            i += 1;
        }
    }

    /// Reduces the addresses of the loop with body `body`, whose operands defined before it
    /// are `visible`; returns the statements to put before the loop.
    fn reduce(&mut self, body: &mut Block, visible: &HashSet<Value>) -> Vec<Stmt> {
        let mut defined = HashSet::new();
        body.visit(&mut |s| defined.extend(s.results()));
        let mut before = Vec::new();
        for counter in self.counters(body, &defined, visible) {
            let groups = self.groups(body, &counter, &defined, visible);
            if groups.is_empty() {
                continue;
            }
            self.rewrite(body, &counter, groups, &mut before);
            // The body's statement indices have moved: one counter per loop and pass.
            break;
        }
        before
    }

    /// The counters of the loop (see the module docs).
    fn counters(
        &self,
        body: &Block,
        defined: &HashSet<Value>,
        visible: &HashSet<Value>,
    ) -> Vec<Counter> {
        let mut writes: BTreeMap<Var, usize> = BTreeMap::new();
        body.visit(&mut |s| {
            if let Stmt::WriteVar { var, .. } = s {
                *writes.entry(*var).or_default() += 1;
            }
        });
        let mut out = Vec::new();
        for (read_at, s) in body.stmts.iter().enumerate() {
            let Stmt::Def {
                value: x,
                op: Op::ReadVar(var),
            } = s
            else {
                continue;
            };
            let ty = self.ty(*x);
            if writes.get(var) != Some(&1)
                || !matches!(ty, ScalarType::U32 | ScalarType::U64)
                || out.iter().any(|c: &Counter| c.var == *var)
            {
                continue;
            }
            let Some((write_at, w)) = body.stmts.iter().enumerate().find_map(|(j, s)| match s {
                Stmt::WriteVar { var: v, value } if v == var => Some((j, *value)),
                _ => None,
            }) else {
                continue;
            };
            if write_at <= read_at {
                continue;
            }
            let step = body.stmts[..write_at].iter().find_map(|s| match s {
                Stmt::Def {
                    value,
                    op: Op::Binary(BinaryOp::Add, a, b),
                } if *value == w => {
                    if a == x {
                        Some(*b)
                    } else if b == x {
                        Some(*a)
                    } else {
                        None
                    }
                }
                _ => None,
            });
            let Some(step) = step.filter(|s| !defined.contains(s) && visible.contains(s)) else {
                continue;
            };
            let update_at = if body.stmts[write_at + 1..].iter().any(continues) {
                write_at + 1
            } else {
                body.stmts.len()
            };
            out.push(Counter {
                var: *var,
                ty,
                x: *x,
                read_at,
                step,
                update_at,
            });
        }
        out
    }

    /// The accesses of the body whose addresses can follow `counter`, grouped.
    fn groups(
        &self,
        body: &Block,
        counter: &Counter,
        defined: &HashSet<Value>,
        visible: &HashSet<Value>,
    ) -> Vec<Group> {
        let mut groups: Vec<Group> = Vec::new();
        let mut path = Vec::new();
        let mut found = Vec::new();
        accesses(body, &mut path, &mut found);
        for (path, addr) in found {
            // Only accesses after the counter's read see its value.
            if path[0] <= counter.read_at || !defined.contains(&addr) || self.ty(addr) != counter.ty
            {
                continue;
            }
            let form = self.addresses.linear(addr);
            let Some(beta) = form
                .terms()
                .iter()
                .find_map(|&(t, k)| (t == counter.x).then_some(k))
            else {
                continue;
            };
            let terms: Vec<(Value, u64)> = form
                .terms()
                .iter()
                .copied()
                .filter(|&(t, _)| t != counter.x)
                .collect();
            if terms
                .iter()
                .any(|(t, _)| defined.contains(t) || !visible.contains(t))
            {
                continue;
            }
            // `x` itself, or `x` plus a constant: nothing to gain.
            if terms.is_empty() && beta == 1 {
                continue;
            }
            if let Some(g) = groups
                .iter_mut()
                .find(|g| g.beta == beta && g.terms == terms)
            {
                g.members.push((path, form.constant()));
            } else if groups.len() < MAX_POINTERS {
                groups.push(Group {
                    beta,
                    terms,
                    members: vec![(path, form.constant())],
                });
            }
        }
        groups
    }

    /// Gives each group its pointer: `before` gets the pointers' first values, the body their
    /// reads and updates, and each access its new address.
    fn rewrite(
        &mut self,
        body: &mut Block,
        counter: &Counter,
        groups: Vec<Group>,
        before: &mut Vec<Stmt>,
    ) {
        let ty = counter.ty;
        let mask = all_ones(ty);
        let x0 = self.def(before, ty, Op::ReadVar(counter.var));
        let mut reads = Vec::new();
        let mut updates = Vec::new();
        let mut new_addrs: Vec<(Vec<usize>, Value)> = Vec::new();
        for group in groups {
            let c0 = group.members.iter().map(|&(_, c)| c).min().unwrap_or(0);
            // $p = c0 + beta * x0 + sum(k_t * t), before the loop.
            let mut start = self.scaled(before, ty, x0, group.beta);
            for &(t, k) in &group.terms {
                let term = self.scaled(before, ty, t, k);
                start = self.def(before, ty, Op::Binary(BinaryOp::Add, start, term));
            }
            if c0 != 0 {
                let c = self.constant(before, ty, c0);
                start = self.def(before, ty, Op::Binary(BinaryOp::Add, start, c));
            }
            let var = self.vars.append(VarDef {
                name: "pointer".into(),
                ty,
            });
            before.push(Stmt::WriteVar { var, value: start });
            let stride = match self.konst.get(counter.step.index()).copied().flatten() {
                Some(step) => self.constant(before, ty, step.wrapping_mul(group.beta) & mask),
                None => self.scaled(before, ty, counter.step, group.beta),
            };
            // Beside the counter's read and write, in the body.
            let pd = self.values.append(ValueDef { ty });
            reads.push(Stmt::Def {
                value: pd,
                op: Op::ReadVar(var),
            });
            let mut offsets: BTreeMap<u64, Value> = BTreeMap::new();
            for (path, c) in group.members {
                let offset = c.wrapping_sub(c0) & mask;
                let addr = match offset {
                    0 => pd,
                    _ => match offsets.get(&offset) {
                        Some(&v) => v,
                        None => {
                            let k = self.constant(before, ty, offset);
                            let v = self.values.append(ValueDef { ty });
                            reads.push(Stmt::Def {
                                value: v,
                                op: Op::Binary(BinaryOp::Add, pd, k),
                            });
                            offsets.insert(offset, v);
                            v
                        }
                    },
                };
                new_addrs.push((path, addr));
            }
            let next = self.values.append(ValueDef { ty });
            updates.push(Stmt::Def {
                value: next,
                op: Op::Binary(BinaryOp::Add, pd, stride),
            });
            updates.push(Stmt::WriteVar { var, value: next });
        }
        for (path, addr) in new_addrs {
            if let Some(slot) = stmt_at(body, &path).and_then(Stmt::access_addr_mut) {
                *slot = addr;
            }
        }
        // The updates' insertion first: they come after the read's.
        body.stmts
            .splice(counter.update_at..counter.update_at, updates);
        body.stmts
            .splice(counter.read_at + 1..counter.read_at + 1, reads);
        self.changed = true;
    }

    fn ty(&self, v: Value) -> ScalarType {
        self.values.try_get(v).map_or(ScalarType::Bool, |d| d.ty)
    }

    /// Defines `op` (of type `ty`) at the end of `out`.
    fn def(&mut self, out: &mut Vec<Stmt>, ty: ScalarType, op: Op) -> Value {
        let value = self.values.append(ValueDef { ty });
        out.push(Stmt::Def { value, op });
        value
    }

    fn constant(&mut self, out: &mut Vec<Stmt>, ty: ScalarType, bits: u64) -> Value {
        self.def(out, ty, Op::Const(Constant { ty, bits }))
    }

    /// `k * v`, as `v` itself when `k` is 1.
    fn scaled(&mut self, out: &mut Vec<Stmt>, ty: ScalarType, v: Value, k: u64) -> Value {
        if k == 1 {
            return v;
        }
        let k = self.constant(out, ty, k);
        self.def(out, ty, Op::Binary(BinaryOp::Mul, v, k))
    }
}

/// Whether `stmt` is or contains a `continue` of the loop it is in (not of a loop nested in
/// it).
fn continues(stmt: &Stmt) -> bool {
    match stmt {
        Stmt::Continue => true,
        Stmt::Loop { .. } => false,
        other => other.nested().any(|b| b.stmts.iter().any(continues)),
    }
}

/// Every plain memory access in `block` and its nested blocks: its path (statement indices
/// from the loop body down) and its address.
fn accesses(block: &Block, path: &mut Vec<usize>, out: &mut Vec<(Vec<usize>, Value)>) {
    for (i, s) in block.stmts.iter().enumerate() {
        path.push(i);
        if let Some(a) = s.access() {
            out.push((path.clone(), a.addr));
        }
        // Nested blocks by position ([`Stmt::nested`]): `then` 0 and `otherwise` 1, a loop's
        // body 0.
        for (b, nested) in s.nested().enumerate() {
            path.push(b);
            accesses(nested, path, out);
            path.pop();
        }
        path.pop();
    }
}

/// The statement at `path` (see [`accesses`]).
fn stmt_at<'a>(block: &'a mut Block, path: &[usize]) -> Option<&'a mut Stmt> {
    let (&i, rest) = path.split_first()?;
    let stmt = block.stmts.get_mut(i)?;
    if rest.is_empty() {
        return Some(stmt);
    }
    let (&b, rest) = rest.split_first()?;
    let nested = stmt.nested_mut().nth(b)?;
    stmt_at(nested, rest)
}
