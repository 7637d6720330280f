//! Bounds checks gathered ahead of the loads they guard, so that the loads issue together.
//!
//! The front end puts each check right before its access:
//! `check(i < n); a = x[i]; check(i + s < n); b = x[i + s]`, a check being
//! `If { cond, then: [], otherwise: [Trap] }`. For the GPU each check is a branch, and ptxas
//! never moves a load across a branch to a `trap`, nor the load's first use below the next
//! one: the loads of one thread wait for each other, one memory latency each, where the same
//! code without checks has all of them in flight at once (measured: four dependent 600-cycle
//! waits per iteration of a strided reduction instead of one). This pass moves each check up,
//! with the pure arithmetic its condition needs, above the statements that cannot tell the
//! difference, so that the checks run first and the loads follow in one straight block:
//!
//! * within a block, a check moves up past pure definitions, variable reads and writes,
//!   global loads that cannot fault (their address is `base(s) + i * size` with `i < len(s)`
//!   known there: an earlier check), stores to any memory, shared and local loads, and
//!   branches holding only those (an unrolled tile copy: `if ok { tile[..] = x[i] }` per
//!   element; a transpose's output: `if ok { y[j] = tile[..] }`). It stops at anything else:
//!   global loads that may fault, atomics, barriers, fences, warp operations, loops, other
//!   checks (so checks keep their order and the first failing one is still the one that
//!   traps).
//! * checks (and the pure definitions they need) at the start of an `If`'s branch move out
//!   of it, before the `If`, as `check(!cond || ok)` (`cond || ok` for the `else` branch);
//!   then the pure definitions that cannot fault of a short branch without nested control
//!   flow (its address arithmetic) move out too. The branch keeps only its loads and
//!   stores, which ptxas can then predicate instead of branching around, so that the
//!   accesses of consecutive branches issue together.
//!
//! Why this keeps the kernel's meaning: moving a check up changes only launches in which it
//! fails, and those trap. A trap ends the launch; what the moved check passed over has no
//! effect anyone can see after that: a variable write, a load that cannot fault,
//! arithmetic, a store to the block's shared memory or the thread's local memory (which die
//! with the launch), and a store to global memory, whose contents after a trapping launch
//! the IR leaves unspecified (`cuprum_ir::kernel`: on the GPU a trap leaves the context
//! unusable, so nothing reads that memory). Nothing passed over can wait for another thread
//! (barriers, atomics and fences stop a check), so a launch that failed the check still
//! fails it, and lanes that pass the check do exactly what they did before. The one
//! difference a shared access makes: a launch that both races on it (or reads uninitialised
//! shared memory) and fails the check reports the failed check where it reported the race;
//! both are failed launches. The definitions taken out of a branch are pure and cannot
//! fault (no division by a divisor that may be zero), so computing them on lanes that skip
//! the branch changes nothing either.
//!
//! What this pass must not do: move a check past anything with an effect or a possible error
//! of its own, past another check, or into or out of a loop.

use std::collections::{HashMap, HashSet};

use cuprum_ir::{
    AddressSpace, Addresses, Arena, BinaryOp, Block, CmpOp, Kernel, Linear, Op, ParamKind, Root,
    ScalarType, Stmt, UnaryOp, Value, ValueDef, Var,
};

use crate::analyses::Analyses;
use crate::facts::{Defs, Facts, Ranges};
use crate::ir::{always_exits, check_cond, compact, is_line_info, is_pure, written_vars};

/// Runs the pass; true if the kernel changed.
pub fn run(kernel: &mut Kernel) -> bool {
    run_with(kernel, &mut Analyses::new())
}

/// [`run`], taking the kernel's definitions and address analysis from `analyses` (and
/// returning them there when nothing changed).
pub fn run_with(kernel: &mut Kernel, analyses: &mut Analyses) -> bool {
    let defs = analyses.take_defs(kernel);
    let addresses = analyses.take_addresses(kernel);
    let elem_size: HashMap<u32, u32> = kernel
        .params
        .iter()
        .enumerate()
        .filter_map(|(i, p)| match p.kind {
            ParamKind::Slice { elem, .. } => Some((i as u32, elem.size_bytes())),
            ParamKind::Scalar(_) | ParamKind::TensorMap { .. } => None,
        })
        .collect();
    let mut bounds: HashMap<(u32, Linear), Vec<Value>> = HashMap::new();
    // The 32-bit values whose zero extension is a checked index.
    let mut widened: HashMap<Value, Vec<Value>> = HashMap::new();
    for (cmp, _) in kernel.values.iter() {
        if let Some(&Op::Compare(CmpOp::Lt, index, len)) = defs.op(cmp)
            && let Some(&Op::SliceLen(s)) = defs.op(len)
            && let Some(&size) = elem_size.get(&s)
        {
            let offset = addresses.linear(index).scaled(u64::from(size));
            bounds.entry((s, offset)).or_default().push(cmp);
            if let Some(&Op::Cast {
                value: m,
                to: ScalarType::U64,
            }) = defs.op(index)
                && defs.ty(m) == ScalarType::U32
            {
                widened.entry(m).or_default().push(index);
            }
        }
    }
    let mut w = Gather {
        defs,
        addresses,
        bounds,
        widened,
        elem_size,
        facts: Facts::default(),
        changed: false,
    };
    let mut body = std::mem::take(&mut kernel.body);
    w.block(&mut body, &mut kernel.values);
    kernel.body = body;
    if w.changed {
        compact(kernel);
    } else {
        analyses.keep_defs(w.defs);
        analyses.keep_addresses(w.addresses);
    }
    w.changed
}

/// The most statements a branch may hold for [`Gather::speculate`] to take its arithmetic
/// out: short branches, an access or two with its address computation.
const SPECULATE_MAX: usize = 16;

/// A statement of the block being rebuilt, with whether a check may move up past it when it
/// is a global load, a shared store or a branch (known when the statement is reached, from
/// the facts there).
struct Entry {
    stmt: Stmt,
    passable: bool,
}

struct Gather {
    defs: Defs,
    addresses: Addresses,
    /// The comparisons `index < len(slice)`, by slice and the linear form of the byte offset
    /// of element `index` (`index * size`, the slice's element size).
    bounds: HashMap<(u32, Linear), Vec<Value>>,
    /// For a `U32` value `m`, the checked indices `m as u64`.
    widened: HashMap<Value, Vec<Value>>,
    /// The element size in bytes of each slice parameter, by parameter index.
    elem_size: HashMap<u32, u32>,
    facts: Facts,
    changed: bool,
}

/// Whether `stmt` is a memory access a check may always move up past: any store to global,
/// shared or local memory, and a load from shared or local memory. (Global loads may pass
/// only where they cannot fault, see [`Gather::in_bounds`].)
fn passable_access(stmt: &Stmt) -> bool {
    let e = stmt.effects(|| true);
    // A statement that does nothing (line information) is passed like no statement.
    if e == cuprum_ir::Effects::default()
        && stmt.results().is_empty()
        && !matches!(stmt, Stmt::Def { .. })
    {
        return true;
    }
    // Nothing but the access itself (no barrier, warp operation, asynchronous copy, ...).
    let rest = cuprum_ir::Effects {
        reads: cuprum_ir::Spaces::NONE,
        writes: cuprum_ir::Spaces::NONE,
        may_fault: false,
        ..e
    };
    if !rest.is_computation() {
        return false;
    }
    match (e.reads.is_empty(), e.writes.is_empty()) {
        // A store (scalar or vector), to any space.
        (true, false) => true,
        // A load (scalar or vector) from shared or local memory.
        (false, true) => !e.reads.contains(AddressSpace::Global),
        // Atomics read and write; the rest touches no memory.
        _ => false,
    }
}

/// Every value a check reads: its condition and the trap's operands.
fn check_operands(stmt: &Stmt, mut f: impl FnMut(Value)) {
    stmt.for_each_operand(&mut f);
    if let Stmt::If { otherwise, .. } = stmt {
        for s in &otherwise.stmts {
            s.for_each_operand(&mut f);
        }
    }
}

impl Gather {
    fn block(&mut self, block: &mut Block, values: &mut Arena<ValueDef>) {
        let mark = self.facts.mark();
        let mut out: Vec<Entry> = Vec::with_capacity(block.stmts.len());
        for stmt in std::mem::take(&mut block.stmts) {
            if let Some(cond) = check_cond(&stmt) {
                self.push_check(&mut out, stmt);
                self.facts.assume(&self.defs, cond, true);
                continue;
            }
            match stmt {
                Stmt::If {
                    cond,
                    mut then,
                    mut otherwise,
                } => {
                    let m = self.facts.mark();
                    self.facts.assume(&self.defs, cond, true);
                    self.block(&mut then, values);
                    self.facts.undo(m);
                    self.facts.assume(&self.defs, cond, false);
                    self.block(&mut otherwise, values);
                    self.facts.undo(m);
                    let mut lifted = self.lift(cond, true, &mut then, values);
                    lifted.extend(self.lift(cond, false, &mut otherwise, values));
                    lifted.extend(self.speculate(&mut then));
                    lifted.extend(self.speculate(&mut otherwise));
                    for s in lifted {
                        if let Some(c) = check_cond(&s) {
                            self.push_check(&mut out, s);
                            self.facts.assume(&self.defs, c, true);
                        } else {
                            out.push(Entry {
                                stmt: s,
                                passable: false,
                            });
                        }
                    }
                    match (always_exits(&then), always_exits(&otherwise)) {
                        (false, true) => self.facts.assume(&self.defs, cond, true),
                        (true, false) => self.facts.assume(&self.defs, cond, false),
                        _ => {}
                    }
                    let passable = self.branch_passable(cond, true, &then)
                        && self.branch_passable(cond, false, &otherwise);
                    out.push(Entry {
                        stmt: Stmt::If {
                            cond,
                            then,
                            otherwise,
                        },
                        passable,
                    });
                }
                Stmt::Loop { mut body } => {
                    self.block(&mut body, values);
                    out.push(Entry {
                        stmt: Stmt::Loop { body },
                        passable: false,
                    });
                }
                stmt => {
                    let passable = match &stmt {
                        Stmt::Def {
                            op:
                                Op::Load {
                                    space: AddressSpace::Global,
                                    addr,
                                    ty,
                                    ..
                                },
                            ..
                        } => self.in_bounds(*addr, *ty),
                        s => passable_access(s),
                    };
                    out.push(Entry { stmt, passable });
                }
            }
        }
        block.stmts = out.into_iter().map(|e| e.stmt).collect();
        self.facts.undo(mark);
    }

    /// Whether a check may move up past `block`, the branch of `If { cond }` taken when
    /// `cond` is `taken`: it holds only statements a check may pass (pure definitions,
    /// variable reads and writes, global loads that cannot fault there, shared stores, and
    /// branches of those).
    fn branch_passable(&mut self, cond: Value, taken: bool, block: &Block) -> bool {
        let m = self.facts.mark();
        self.facts.assume(&self.defs, cond, taken);
        let ok = block.stmts.iter().all(|s| match s {
            Stmt::Def { op, .. } if is_pure(op) || matches!(op, Op::ReadVar(_)) => true,
            Stmt::Def {
                op:
                    Op::Load {
                        space: AddressSpace::Global,
                        addr,
                        ty,
                        ..
                    },
                ..
            } => self.in_bounds(*addr, *ty),
            Stmt::WriteVar { .. } => true,
            s if passable_access(s) => true,
            Stmt::If {
                cond,
                then,
                otherwise,
            } if check_cond(s).is_none() => {
                self.branch_passable(*cond, true, then)
                    && self.branch_passable(*cond, false, otherwise)
            }
            _ => false,
        });
        self.facts.undo(m);
        ok
    }

    /// Whether a global load of a `ty` from `addr` cannot fault here: `addr` is
    /// `base(s) + i * size` (as linear forms: [`Addresses::root_offset`]) with `size` the size
    /// of `s`'s elements, at least that of `ty`, and `i < len(s)` known. The offset may also be
    /// the form [`crate::narrow`] leaves, `((i as u32) * size) as u64` or `(m * size) as u64`
    /// with `i = m as u64`, when the known ranges show that the 32-bit product cannot wrap (nor
    /// `i as u32` drop bits), so that it is the same number.
    fn in_bounds(&self, addr: Value, ty: ScalarType) -> bool {
        let Some((Root::Slice(slice), offset)) = self.addresses.root_offset(addr) else {
            return false;
        };
        let Some(&size) = self.elem_size.get(&slice) else {
            return false;
        };
        if ty.size_bytes() > size {
            return false;
        }
        // Whether `i < len(slice)` is known for an `i` whose element is at `offset`.
        let known_at = |offset: Linear| {
            self.bounds
                .get(&(slice, offset))
                .is_some_and(|cmps| cmps.iter().any(|&c| self.facts.known(c) == Some(true)))
        };
        let known = |index: Value| known_at(self.addresses.linear(index).scaled(u64::from(size)));
        // The narrowed form: the offset is one `n as u64`, `n` a `U32`.
        let narrowed = match offset.single_term() {
            Some((x, 1)) if offset.constant() == 0 => match self.defs.op(x) {
                Some(&Op::Cast {
                    value: n,
                    to: ScalarType::U64,
                }) if self.defs.ty(n) == ScalarType::U32 => Some(n),
                _ => None,
            },
            _ => None,
        };
        if known_at(offset) {
            return true;
        }
        // `v * size` or `v << log2(size)`: `v`.
        let scaled = |v: Value| -> Option<Value> {
            let (i, k, shift) = match *self.defs.op(v)? {
                Op::Binary(BinaryOp::Mul, i, k) if self.defs.konst(k).is_some() => (i, k, false),
                Op::Binary(BinaryOp::Mul, k, i) if self.defs.konst(k).is_some() => (i, k, false),
                Op::Binary(BinaryOp::Shl, i, k) => (i, k, true),
                _ => return None,
            };
            let k = self.defs.konst(k)?;
            let factor = if shift {
                (k < 32).then(|| 1u64 << k)?
            } else {
                k
            };
            (factor == u64::from(size)).then_some(i)
        };
        let Some(m) = narrowed.and_then(scaled) else {
            return false;
        };
        let ranges = Ranges {
            defs: &self.defs,
            facts: &self.facts,
            locals: &[],
        };
        let fits = |v: Value, factor: u64| {
            ranges
                .of(v)
                .is_some_and(|(_, hi)| u128::from(hi) * u128::from(factor) <= u128::from(u32::MAX))
        };
        if !fits(m, u64::from(size)) {
            return false;
        }
        // `m = i as u32` with `i < 2^32`: the index is `i`.
        if let Some(&Op::Cast { value: i, .. }) = self.defs.op(m)
            && self.defs.ty(i) == ScalarType::U64
            && fits(i, 1)
            && known(i)
        {
            return true;
        }
        // An index `w = m as u64`.
        self.widened
            .get(&m)
            .is_some_and(|ws| ws.iter().any(|&w| known(w)))
    }

    /// Appends the check `check` to `out`, moved up (with the definitions its operands need)
    /// past the statements at the end of `out` that cannot tell the difference.
    fn push_check(&mut self, out: &mut Vec<Entry>, check: Stmt) {
        let mut needed: HashSet<Value> = HashSet::new();
        check_operands(&check, |v| {
            needed.insert(v);
        });
        let mut read_vars: HashSet<Var> = HashSet::new();
        let mut carried: Vec<usize> = Vec::new();
        let mut p = out.len();
        while p > 0 {
            let e = &out[p - 1];
            match &e.stmt {
                Stmt::Def { value, op } if needed.contains(value) => {
                    if !is_pure(op) && !matches!(op, Op::ReadVar(_)) {
                        break;
                    }
                    if let Op::ReadVar(var) = op {
                        read_vars.insert(*var);
                    }
                    op.for_each_operand(|v| {
                        needed.insert(v);
                    });
                    carried.push(p - 1);
                }
                Stmt::Def { op, .. } if is_pure(op) || matches!(op, Op::ReadVar(_)) => {}
                Stmt::WriteVar { var, .. } if !read_vars.contains(var) => {}
                s if e.passable && !written_vars(s).iter().any(|v| read_vars.contains(v)) => {}
                _ => break,
            }
            p -= 1;
        }
        if p == out.len() {
            out.push(Entry {
                stmt: check,
                passable: false,
            });
            return;
        }
        self.changed = true;
        let rest = out.split_off(p);
        let carried: HashSet<usize> = carried.into_iter().map(|i| i - p).collect();
        let (moved, stay): (Vec<_>, Vec<_>) = rest
            .into_iter()
            .enumerate()
            .partition(|(i, _)| carried.contains(i));
        out.extend(moved.into_iter().map(|(_, e)| e));
        out.push(Entry {
            stmt: check,
            passable: false,
        });
        out.extend(stay.into_iter().map(|(_, e)| e));
    }

    /// Takes the pure definitions that cannot fault out of `block`, a branch with no nested
    /// control flow, and returns them, in order, to go before its `If`: those whose operands
    /// are defined outside the branch or by definitions taken out too. What stays is the
    /// branch's memory accesses (and whatever depends on what they load), which ptxas can then
    /// predicate instead of branching around, so that the accesses of consecutive branches
    /// issue together. Computing a pure definition on lanes that skip the branch changes
    /// nothing they do.
    fn speculate(&mut self, block: &mut Block) -> Vec<Stmt> {
        // Line information is no code: it neither makes a branch nested nor longer.
        let flat = block.stmts.iter().all(|s| {
            matches!(
                s,
                Stmt::Def { .. } | Stmt::Store { .. } | Stmt::WriteVar { .. }
            ) || is_line_info(s)
        });
        let code = block.stmts.iter().filter(|s| !is_line_info(s)).count();
        if !flat || code > SPECULATE_MAX {
            return Vec::new();
        }
        let mut inside: HashSet<Value> = HashSet::new();
        for s in &block.stmts {
            if let Stmt::Def { value, .. } = s {
                inside.insert(*value);
            }
        }
        let mut out = Vec::new();
        for s in std::mem::take(&mut block.stmts) {
            let up = match &s {
                Stmt::Def { op, .. } => {
                    let mut free = true;
                    op.for_each_operand(|v| free &= !inside.contains(&v));
                    free && is_pure(op) && self.defs.is_removable(op)
                }
                _ => false,
            };
            if up {
                if let Stmt::Def { value, .. } = &s {
                    inside.remove(value);
                }
                out.push(s);
            } else {
                block.stmts.push(s);
            }
        }
        if !out.is_empty() {
            self.changed = true;
        }
        out
    }

    /// Takes the checks at the start of `block` (a branch of `If { cond }`, the `then` branch
    /// if `then`) out of it, with the definitions they need, rewritten to hold where the
    /// branch is not taken; returns them, in order, to go before the `If`.
    fn lift(
        &mut self,
        cond: Value,
        then: bool,
        block: &mut Block,
        values: &mut Arena<ValueDef>,
    ) -> Vec<Stmt> {
        // The prefix of speculable definitions and checks.
        let prefix = block
            .stmts
            .iter()
            .take_while(|s| match s {
                Stmt::Def { op, .. } => self.defs.is_removable(op),
                s => check_cond(s).is_some(),
            })
            .count();
        if !block.stmts[..prefix]
            .iter()
            .any(|s| check_cond(s).is_some())
        {
            return Vec::new();
        }
        let mut needed: HashSet<Value> = HashSet::new();
        let mut lift = vec![false; prefix];
        for (i, s) in block.stmts[..prefix].iter().enumerate().rev() {
            match s {
                Stmt::Def { value, op } => {
                    if needed.contains(value) {
                        lift[i] = true;
                        op.for_each_operand(|v| {
                            needed.insert(v);
                        });
                    }
                }
                s => {
                    lift[i] = true;
                    check_operands(s, |v| {
                        needed.insert(v);
                    });
                }
            }
        }
        self.changed = true;
        let rest = block.stmts.split_off(prefix);
        let mut out = Vec::new();
        // `!cond` for the `then` branch, `cond` for the `else` branch: true where the branch
        // is skipped, so the check passes there.
        let mut skipped = None;
        for (s, up) in std::mem::take(&mut block.stmts).into_iter().zip(lift) {
            if !up {
                block.stmts.push(s);
                continue;
            }
            match s {
                Stmt::If {
                    cond: ok,
                    then: t,
                    otherwise,
                } => {
                    let skip = *skipped.get_or_insert_with(|| {
                        if then {
                            let not = values.append(ValueDef {
                                ty: ScalarType::Bool,
                            });
                            let op = Op::Unary(UnaryOp::Not, cond);
                            self.defs.add(not, op.clone(), ScalarType::Bool);
                            out.push(Stmt::Def { value: not, op });
                            not
                        } else {
                            cond
                        }
                    });
                    let either = values.append(ValueDef {
                        ty: ScalarType::Bool,
                    });
                    let op = Op::Binary(BinaryOp::Or, skip, ok);
                    self.defs.add(either, op.clone(), ScalarType::Bool);
                    out.push(Stmt::Def { value: either, op });
                    out.push(Stmt::If {
                        cond: either,
                        then: t,
                        otherwise,
                    });
                }
                s => out.push(s),
            }
        }
        block.stmts.extend(rest);
        out
    }
}
