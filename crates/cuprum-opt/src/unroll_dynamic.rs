//! Unrolling by four of counted loops whose trip count is known only at run time.
//!
//! A strided loop such as `while j < cols { m = m.max(x[base + j]); j += 256 }` runs one
//! load per iteration, and the next iteration's load cannot start before this one's compare
//! and branch: a thread has one load in flight at a time. Four iterations in one straight
//! block let the loads issue together (and [`crate::checks`] then gathers the four bounds
//! checks ahead of them), as nvcc's `#pragma unroll 4` does.
//!
//! The loops handled are innermost loops of this shape, with `$i` an unsigned integer
//! variable (`U32` or `U64`), `end` and `step` defined outside the loop:
//!
//! ```text
//! loop {
//!     i = read $i
//!     c = cmp.Lt i, end
//!     if c {} else { break }
//!     ...                      // the rest of the body: `$i = Add i, step` at its top level
//! }
//! ```
//!
//! with no other write of `$i`, no other use of `c`, no `Break` or `Continue` of the loop
//! besides the exit test, no nested loop, nothing that involves other threads (barriers,
//! fences, shuffles, votes, atomics, warp-collective matrix operations, asynchronous
//! copies, prints) and at most [`MAX_BODY`] statements. The loop becomes
//!
//! ```text
//! step3 = step * 3             // a constant when `step` is; or a run-time product with
//! small = cmp.Le step, MAX/3   // the test that it did not wrap
//! loop {
//!     i0 = read $i
//!     if i0 < end && end - i0 > step3 [&& small] {} else { break }
//!     body(i0); i1 = read $i; body(i1); i2 = read $i; body(i2); i3 = read $i; body(i3)
//! }
//! loop { the original loop }  // the remaining 0 to 3 iterations
//! ```
//!
//! where `body(ik)` is a copy of the rest of the body with fresh values and `ik` for `i`.
//!
//! Why this keeps each thread's meaning: when the guard passes, `i0 < end` and
//! `i0 + 3 step < end` without wrapping (`end - i0` cannot wrap once `i0 < end`, and
//! `3 step` does not), so `i0 + k step < end` for `k <= 3`: the four iterations the original
//! loop would run next all pass their exit tests, and the copies are those iterations minus
//! their tests, in order, with the same variable writes (so `$i` reads `i0 + k step` in copy
//! `k`). When the guard fails, the original loop runs from there with its own tests. A
//! thread therefore runs the same sequence of iterations, stores and traps as before. With
//! a step of zero the guard passes whenever `i0 < end`, and both forms loop until the body
//! leaves some other way.
//!
//! What changes is how the iterations of different threads interleave: a lane that has
//! fewer than four iterations left waits at the second loop while the others run the first.
//! The body involves no other thread (the list above), so no value a thread computes
//! changes; what can change is which thread's failed check a launch reports when several
//! threads of one warp fail checks at different iterations (each is a failed launch), and
//! what a thread reads from memory another thread writes without synchronization (a data
//! race, whose outcome the IR does not define).

use std::collections::HashSet;

use cuprum_ir::{
    Arena, BinaryOp, Block, CmpOp, Constant, Kernel, Op, ScalarType, Stmt, Value, ValueDef, Var,
};

use crate::ir::{all_ones, compact, constant_bits, is_line_info, visit_stmts};

/// The most statements (nested ones included) a loop body may have to be unrolled.
pub const MAX_BODY: usize = 48;
/// How many iterations one trip of the unrolled loop runs.
const FACTOR: u64 = 4;
/// The most statements the pass may add to a kernel in all.
const GROWTH_BUDGET: usize = 1024;

/// Runs the pass; true if the kernel changed.
pub fn run(kernel: &mut Kernel) -> bool {
    let mut u = Unroller {
        konst: constant_bits(kernel),
        budget: GROWTH_BUDGET,
        changed: false,
    };
    let mut body = std::mem::take(&mut kernel.body);
    u.block(&mut body, &mut kernel.values);
    kernel.body = body;
    if u.changed {
        compact(kernel);
    }
    u.changed
}

struct Unroller {
    /// The bits of every constant of the kernel before the pass, by value index.
    konst: Vec<Option<u64>>,
    budget: usize,
    changed: bool,
}

/// What the pass found out about a loop it can unroll.
struct Counted {
    /// The loop variable `$i`.
    var: Var,
    /// Its type, `U32` or `U64`.
    ty: ScalarType,
    /// The value of `$i` read at the top of the body.
    index: Value,
    /// The loop-invariant bound and increment.
    end: Value,
    step: Value,
}

impl Unroller {
    fn block(&mut self, block: &mut Block, values: &mut Arena<ValueDef>) {
        let stmts = std::mem::take(&mut block.stmts);
        let mut out: Vec<Stmt> = Vec::with_capacity(stmts.len());
        for mut stmt in stmts {
            match &mut stmt {
                Stmt::If {
                    then, otherwise, ..
                } => {
                    self.block(then, values);
                    self.block(otherwise, values);
                }
                Stmt::Loop { body } => {
                    self.block(body, values);
                    if let Some(counted) = counted_loop(body, values) {
                        let size = block_size(body) * FACTOR as usize;
                        let step = self.konst.get(counted.step.index()).copied().flatten();
                        // A zero step never ends the loop; a huge one leaves no room for four
                        // iterations.
                        let useful = step.is_none_or(|s| s != 0 && s <= all_ones(counted.ty) / 3);
                        if useful && size <= self.budget {
                            self.budget -= size;
                            self.changed = true;
                            unroll(counted, step, stmt, values, &mut out);
                            continue;
                        }
                    }
                }
                _ => {}
            }
            out.push(stmt);
        }
        block.stmts = out;
    }
}

/// The loop's counter, bound and step when `body` is a loop this pass unrolls (see the
/// module docs).
fn counted_loop(body: &Block, values: &Arena<ValueDef>) -> Option<Counted> {
    let [
        Stmt::Def {
            value: index,
            op: Op::ReadVar(var),
        },
        Stmt::Def {
            value: cond,
            op: Op::Compare(CmpOp::Lt, lhs, end),
        },
        Stmt::If {
            cond: test,
            then,
            otherwise,
        },
        rest @ ..,
    ] = body.stmts.as_slice()
    else {
        return None;
    };
    if lhs != index
        || test != cond
        || !then.stmts.is_empty()
        || !matches!(otherwise.stmts.as_slice(), [Stmt::Break])
    {
        return None;
    }
    let ty = values.try_get(*index)?.ty;
    if !matches!(ty, ScalarType::U32 | ScalarType::U64) {
        return None;
    }
    if block_size(body) > MAX_BODY {
        return None;
    }
    // Everything the body defines, to tell loop-invariant operands from the others.
    let mut defined = HashSet::new();
    visit_stmts(body, &mut |s| {
        s.results().iter().for_each(|&v| {
            defined.insert(v);
        })
    });
    if defined.contains(end) {
        return None;
    }
    // The one write of `$i`, at the top level: `$i = index + step`.
    let mut step = None;
    for s in rest {
        if let Stmt::WriteVar { var: w, value } = s
            && w == var
        {
            if step.is_some() {
                return None;
            }
            step = Some(increment(rest, *value, *index)?);
        }
    }
    let step = step?;
    if defined.contains(&step) {
        return None;
    }
    // Nothing else may write `$i`, use `c`, leave the loop or involve other threads.
    let mut ok = true;
    for s in rest {
        if matches!(s, Stmt::Break | Stmt::Continue) {
            return None;
        }
        let top_write = matches!(s, Stmt::WriteVar { var: w, .. } if w == var);
        let mut check = |s: &Stmt| {
            ok &= allowed(s);
            ok &= top_write || !matches!(s, Stmt::WriteVar { var: w, .. } if w == var);
            s.for_each_operand(|v| ok &= v != *cond);
        };
        check(s);
        if let Stmt::If {
            then, otherwise, ..
        } = s
        {
            // `Break`/`Continue` in a branch leave this loop (there are no nested loops).
            visit_stmts(then, &mut check);
            visit_stmts(otherwise, &mut check);
            visit_stmts(then, &mut |s| {
                ok &= !matches!(s, Stmt::Break | Stmt::Continue)
            });
            visit_stmts(otherwise, &mut |s| {
                ok &= !matches!(s, Stmt::Break | Stmt::Continue)
            });
        }
    }
    ok.then_some(Counted {
        var: *var,
        ty,
        index: *index,
        end: *end,
        step,
    })
}

/// The `step` of `value = Add index, step` (or `Add step, index`) defined in `stmts`.
fn increment(stmts: &[Stmt], value: Value, index: Value) -> Option<Value> {
    stmts.iter().find_map(|s| match s {
        Stmt::Def {
            value: v,
            op: Op::Binary(BinaryOp::Add, a, b),
        } if *v == value => {
            if *a == index && *b != index {
                Some(*b)
            } else if *b == index && *a != index {
                Some(*a)
            } else {
                None
            }
        }
        _ => None,
    })
}

/// Whether `stmt` (not looking into its nested blocks) may be in an unrolled body: nothing
/// that involves other threads or another loop.
fn allowed(stmt: &Stmt) -> bool {
    let e = stmt.effects(|| true);
    // A `Def` that writes memory is an atomic: other threads see its order.
    let atomic = matches!(stmt, Stmt::Def { .. }) && !e.writes.is_empty();
    !(matches!(stmt, Stmt::Loop { .. })
        || atomic
        || e.block_barrier
        || e.fence
        || e.warp_collective
        || e.asynchronous
        || e.prints)
}

/// Statements in `block`, nested ones included (line information counts for nothing).
fn block_size(block: &Block) -> usize {
    let mut n = 0;
    visit_stmts(block, &mut |s| n += usize::from(!is_line_info(s)));
    n
}

/// Appends `value = op` (of type `ty`) to `out`; returns `value`.
fn def(values: &mut Arena<ValueDef>, op: Op, ty: ScalarType, out: &mut Vec<Stmt>) -> Value {
    let value = values.append(ValueDef { ty });
    out.push(Stmt::Def { value, op });
    value
}

/// Appends to `out` the unrolled loop followed by `original` (see the module docs); `step`
/// is the step's bits when it is a constant.
fn unroll(
    c: Counted,
    step: Option<u64>,
    original: Stmt,
    values: &mut Arena<ValueDef>,
    out: &mut Vec<Stmt>,
) {
    let Stmt::Loop { body } = &original else {
        out.push(original);
        return;
    };
    // `3 step`, and whether it did not wrap (None: it does not).
    let (step3, small) = match step {
        Some(s) => (
            def(
                values,
                Op::Const(Constant::new(c.ty, s * (FACTOR - 1))),
                c.ty,
                out,
            ),
            None,
        ),
        None => {
            let three = def(
                values,
                Op::Const(Constant::new(c.ty, FACTOR - 1)),
                c.ty,
                out,
            );
            let limit = def(
                values,
                Op::Const(Constant::new(c.ty, all_ones(c.ty) / (FACTOR - 1))),
                c.ty,
                out,
            );
            let step3 = def(values, Op::Binary(BinaryOp::Mul, c.step, three), c.ty, out);
            let small = def(
                values,
                Op::Compare(CmpOp::Le, c.step, limit),
                ScalarType::Bool,
                out,
            );
            (step3, Some(small))
        }
    };
    let mut main: Vec<Stmt> = Vec::new();
    let i0 = def(values, Op::ReadVar(c.var), c.ty, &mut main);
    let more = def(
        values,
        Op::Compare(CmpOp::Lt, i0, c.end),
        ScalarType::Bool,
        &mut main,
    );
    let left = def(
        values,
        Op::Binary(BinaryOp::Sub, c.end, i0),
        c.ty,
        &mut main,
    );
    let room = def(
        values,
        Op::Compare(CmpOp::Gt, left, step3),
        ScalarType::Bool,
        &mut main,
    );
    let mut guard = def(
        values,
        Op::Binary(BinaryOp::And, more, room),
        ScalarType::Bool,
        &mut main,
    );
    if let Some(small) = small {
        guard = def(
            values,
            Op::Binary(BinaryOp::And, guard, small),
            ScalarType::Bool,
            &mut main,
        );
    }
    main.push(Stmt::If {
        cond: guard,
        then: Block::default(),
        otherwise: Block {
            stmts: vec![Stmt::Break],
        },
    });
    for k in 0..FACTOR {
        let ik = if k == 0 {
            i0
        } else {
            def(values, Op::ReadVar(c.var), c.ty, &mut main)
        };
        let mut copy = Copier {
            map: std::collections::HashMap::from([(c.index, ik)]),
            values: &mut *values,
        };
        for s in &body.stmts[3..] {
            main.push(copy.stmt(s));
        }
    }
    out.push(Stmt::Loop {
        body: Block { stmts: main },
    });
    out.push(original);
}

/// Copies statements with fresh values for everything they define.
struct Copier<'a> {
    map: std::collections::HashMap<Value, Value>,
    values: &'a mut Arena<ValueDef>,
}

impl Copier<'_> {
    fn get(&self, v: Value) -> Value {
        self.map.get(&v).copied().unwrap_or(v)
    }

    fn stmt(&mut self, stmt: &Stmt) -> Stmt {
        let mut s = match stmt {
            Stmt::If {
                cond,
                then,
                otherwise,
            } => Stmt::If {
                cond: *cond,
                then: self.block(then),
                otherwise: self.block(otherwise),
            },
            Stmt::Loop { body } => Stmt::Loop {
                body: self.block(body),
            },
            other => other.clone(),
        };
        // Operands first (the values a statement defines are not among its operands).
        s.for_each_operand_mut(|v| *v = self.get(*v));
        s.results_mut().iter_mut().for_each(|old| {
            let ty = self.values.try_get(*old).map_or(ScalarType::Bool, |d| d.ty);
            let new = self.values.append(ValueDef { ty });
            self.map.insert(*old, new);
            *old = new;
        });
        s
    }

    fn block(&mut self, block: &Block) -> Block {
        Block {
            stmts: block.stmts.iter().map(|s| self.stmt(s)).collect(),
        }
    }
}
