//! Full unrolling of loops whose trip count is a constant.
//!
//! The front end copies and fills local arrays (an mma result bound to a new name, an array
//! passed by value) with counted loops, lowers `for i in 0..n` over variables, and users
//! write short loops over constant ranges. Unrolled, each iteration's index is a constant:
//! [`crate::promote`] can then keep the arrays in registers, and the loop's compares,
//! branches and counter arithmetic disappear.
//!
//! The pass simulates the loop's control on constants. It knows the constant each variable
//! holds when the loop starts (the last write before the loop in the same block, if that is
//! a constant) and walks the body's top-level statements iteration by iteration, copying
//! them with fresh values: a read of a variable whose value is known becomes that constant,
//! a pure operation on constants becomes its result (`crate::eval`), a write records the
//! variable's new value (a write inside a nested block makes it unknown). An exit test,
//! `if c {} else { break }` (or `if c { break }`) at the top level, must have a known
//! condition: if it passes, it is dropped from the copy; if it exits, the copy ends there and
//! so does the unrolled code. The loop becomes the concatenation of the copies.
//!
//! Every lane runs the same copies: the exit tests are constants. The copies do what the
//! iterations did, in the same order, with the same variables (writes are kept), so the
//! variables end as the loop leaves them. The pass gives up, leaving the loop as it is, when
//! a test is not a known constant, when the body has another `Break` or a `Continue` of this
//! loop (a lane could leave early), or past [`MAX_TRIPS`] iterations or [`MAX_STATEMENTS`]
//! copied statements. Loops nested in an unrolled loop are tried again in each copy.

use std::collections::HashMap;

use cuprum_ir::{Arena, Block, Constant, Kernel, Op, Stmt, Value, ValueDef, Var};

use crate::eval;
use crate::fold::leaves_loop;
use crate::ir::{compact, is_line_info, is_pure, visit_nested, visit_stmts, written_vars};

/// The most iterations a loop may have to be unrolled.
pub const MAX_TRIPS: usize = 16;
/// The most statements (nested ones included) one unrolled loop may become.
pub const MAX_STATEMENTS: usize = 1024;
/// The most statements the pass may add to a kernel in all.
const GROWTH_BUDGET: usize = 8192;

/// Runs the pass; true if the kernel changed.
pub fn run(kernel: &mut Kernel) -> bool {
    let mut u = Unroll {
        consts: constants(kernel),
        budget: GROWTH_BUDGET,
        changed: false,
    };
    let values_before = kernel.values.len();
    let mut body = std::mem::take(&mut kernel.body);
    u.block(&mut body, &mut kernel.values);
    kernel.body = body;
    // An attempt given up half way leaves unused values in the arena.
    if u.changed || kernel.values.len() != values_before {
        compact(kernel);
    }
    u.changed
}

/// Every constant of the kernel, by value index.
fn constants(kernel: &Kernel) -> HashMap<Value, Constant> {
    let mut out = HashMap::new();
    visit_stmts(&kernel.body, &mut |s| {
        if let Stmt::Def {
            value,
            op: Op::Const(c),
        } = s
        {
            out.insert(*value, *c);
        }
    });
    out
}

struct Unroll {
    /// Constants known anywhere (values defined by `Const`, in the kernel or in copies).
    consts: HashMap<Value, Constant>,
    budget: usize,
    changed: bool,
}

impl Unroll {
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
                    // Inner loops first: an unrolled inner loop may make this one simple.
                    self.block(body, values);
                    if let Some(copies) = self.unroll(body, &out, values) {
                        self.changed = true;
                        // Loops nested in the copies may have constant bounds now.
                        let mut copies = Block { stmts: copies };
                        self.block(&mut copies, values);
                        out.extend(copies.stmts);
                        continue;
                    }
                }
                _ => {}
            }
            out.push(stmt);
        }
        block.stmts = out;
    }

    /// The statements replacing the loop `body` (preceded in its block by `before`), if its
    /// trip count is a known constant (see the module docs).
    fn unroll(
        &mut self,
        body: &Block,
        before: &[Stmt],
        values: &mut Arena<ValueDef>,
    ) -> Option<Vec<Stmt>> {
        // Only top-level exit tests and a final top-level `Break` may leave the loop.
        let nested_exit = body.stmts.iter().any(|s| match s {
            Stmt::If { .. } if exit_test(s).is_some() => false,
            Stmt::If {
                then, otherwise, ..
            } => leaves_loop(&then.stmts) || leaves_loop(&otherwise.stmts),
            Stmt::Continue => true,
            _ => false,
        });
        if nested_exit {
            return None;
        }
        let mut env: HashMap<Var, Option<Constant>> = HashMap::new();
        let size: usize = body.stmts.iter().map(stmt_size).sum();
        let mut out = Vec::new();
        let mut emitted = 0usize;
        for _ in 0..=MAX_TRIPS {
            let mut copy = Copy {
                map: HashMap::new(),
                consts: &mut self.consts,
                values,
            };
            for s in &body.stmts {
                match copy.step(s, &mut env, before)? {
                    Step::Emit(stmt) => out.push(stmt),
                    Step::Skip => {}
                    Step::Exit => return self.accept(out, emitted),
                }
            }
            emitted += size;
            if emitted > MAX_STATEMENTS || emitted > self.budget {
                return None;
            }
        }
        None
    }

    fn accept(&mut self, out: Vec<Stmt>, emitted: usize) -> Option<Vec<Stmt>> {
        self.budget = self.budget.saturating_sub(emitted);
        Some(out)
    }
}

/// What one statement of an iteration becomes.
enum Step {
    Emit(Stmt),
    /// A passed exit test.
    Skip,
    /// The loop ends here.
    Exit,
}

/// The condition of an exit test and the value that makes the loop go on.
fn exit_test(stmt: &Stmt) -> Option<(Value, bool)> {
    let Stmt::If {
        cond,
        then,
        otherwise,
    } = stmt
    else {
        return None;
    };
    // Line information in a branch (the `break`'s line) is no code.
    fn code(b: &Block) -> Vec<&Stmt> {
        b.stmts.iter().filter(|s| !is_line_info(s)).collect()
    }
    match (code(then).as_slice(), code(otherwise).as_slice()) {
        ([], [Stmt::Break]) => Some((*cond, true)),
        ([Stmt::Break], []) => Some((*cond, false)),
        _ => None,
    }
}

/// One iteration being copied.
struct Copy<'a> {
    /// Old value to its copy.
    map: HashMap<Value, Value>,
    consts: &'a mut HashMap<Value, Constant>,
    values: &'a mut Arena<ValueDef>,
}

impl Copy<'_> {
    fn get(&self, v: Value) -> Value {
        self.map.get(&v).copied().unwrap_or(v)
    }

    /// The value of variable `var` at the loop's entry when `env` has not seen it: the last
    /// write before the loop, if a constant at the top level of the loop's block.
    fn entry_value(&self, var: Var, before: &[Stmt]) -> Option<Constant> {
        for s in before.iter().rev() {
            if let Stmt::WriteVar { var: w, value } = s
                && *w == var
            {
                return self.consts.get(value).copied();
            }
            if written_vars(s).contains(&var) {
                return None;
            }
        }
        None
    }

    /// The value `var` is known to hold at this point of the iteration.
    fn known(
        &self,
        var: Var,
        env: &mut HashMap<Var, Option<Constant>>,
        before: &[Stmt],
    ) -> Option<Constant> {
        if let Some(&c) = env.get(&var) {
            return c;
        }
        let c = self.entry_value(var, before);
        env.insert(var, c);
        c
    }

    fn step(
        &mut self,
        stmt: &Stmt,
        env: &mut HashMap<Var, Option<Constant>>,
        before: &[Stmt],
    ) -> Option<Step> {
        if let Some((cond, go_on)) = exit_test(stmt) {
            let c = self.consts.get(&self.get(cond)).copied()?;
            return Some(if (c.bits != 0) == go_on {
                Step::Skip
            } else {
                Step::Exit
            });
        }
        match stmt {
            Stmt::Break => Some(Step::Exit),
            Stmt::Def { value, op } => {
                let op = match op {
                    Op::ReadVar(var) => self
                        .known(*var, env, before)
                        .map_or_else(|| op.clone(), Op::Const),
                    _ => {
                        let mut op = op.clone();
                        op.for_each_operand_mut(|v| *v = self.get(*v));
                        if is_pure(&op) {
                            match eval::op(&op, |v| self.consts.get(&v).copied()) {
                                Some(c) => Op::Const(c),
                                None => op,
                            }
                        } else {
                            op
                        }
                    }
                };
                let new = self.fresh(*value);
                if let Op::Const(c) = op {
                    self.consts.insert(new, c);
                }
                Some(Step::Emit(Stmt::Def { value: new, op }))
            }
            Stmt::WriteVar { var, value } => {
                let value = self.get(*value);
                env.insert(*var, self.consts.get(&value).copied());
                Some(Step::Emit(Stmt::WriteVar { var: *var, value }))
            }
            other => {
                // A nested statement: copied with fresh values; reads of variables it never
                // writes see the known values; what it writes becomes unknown.
                let written = written_vars(other);
                let mut inner: HashMap<Var, Constant> = HashMap::new();
                let mut read = Vec::new();
                visit_reads(other, &mut |var| read.push(var));
                for var in read {
                    if !written.contains(&var)
                        && let Some(c) = self.known(var, env, before)
                    {
                        inner.insert(var, c);
                    }
                }
                let s = self.clone_stmt(other, &inner);
                for var in written {
                    env.insert(var, None);
                }
                Some(Step::Emit(s))
            }
        }
    }

    fn fresh(&mut self, old: Value) -> Value {
        let ty = self
            .values
            .try_get(old)
            .map_or(cuprum_ir::ScalarType::Bool, |d| d.ty);
        let new = self.values.append(ValueDef { ty });
        self.map.insert(old, new);
        new
    }

    /// A copy of `stmt` and its nested blocks with fresh values, reads of the variables in
    /// `known` replaced by their constants.
    fn clone_stmt(&mut self, stmt: &Stmt, known: &HashMap<Var, Constant>) -> Stmt {
        let mut s = match stmt {
            Stmt::If {
                cond,
                then,
                otherwise,
            } => Stmt::If {
                cond: *cond,
                then: self.clone_block(then, known),
                otherwise: self.clone_block(otherwise, known),
            },
            Stmt::Loop { body } => Stmt::Loop {
                body: self.clone_block(body, known),
            },
            Stmt::Def {
                value,
                op: Op::ReadVar(var),
            } if known.contains_key(var) => Stmt::Def {
                value: *value,
                op: Op::Const(known[var]),
            },
            other => other.clone(),
        };
        s.for_each_operand_mut(|v| *v = self.get(*v));
        s.results_mut().iter_mut().for_each(|v| *v = self.fresh(*v));
        if let Stmt::Def {
            value,
            op: Op::Const(c),
        } = &s
        {
            self.consts.insert(*value, *c);
        }
        s
    }

    fn clone_block(&mut self, block: &Block, known: &HashMap<Var, Constant>) -> Block {
        Block {
            stmts: block
                .stmts
                .iter()
                .map(|s| self.clone_stmt(s, known))
                .collect(),
        }
    }
}

/// Calls `f` on every variable `stmt` (with its nested blocks) reads.
fn visit_reads(stmt: &Stmt, f: &mut impl FnMut(Var)) {
    let mut one = |s: &Stmt| {
        if let Stmt::Def {
            op: Op::ReadVar(var),
            ..
        } = s
        {
            f(*var);
        }
    };
    one(stmt);
    visit_nested(stmt, &mut one);
}

/// Statements in `stmt`, nested ones included.
fn stmt_size(stmt: &Stmt) -> usize {
    // Line information is no code: it counts for nothing.
    let mut n = usize::from(!is_line_info(stmt));
    visit_nested(stmt, &mut |s| n += usize::from(!is_line_info(s)));
    n
}
