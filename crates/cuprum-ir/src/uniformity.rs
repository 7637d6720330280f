//! Which block barriers every thread of a block is sure to reach together.
//!
//! A barrier (`bar.sync 0`) counts arrivals; it does not know which call site a thread came
//! from. If some threads of a block skip a barrier (a condition that differs between them,
//! a loop they leave after different numbers of iterations, an earlier `return` only some of
//! them take), the others' arrivals pair with a *different* barrier, and code meant to run
//! after the first runs beside code meant to run before it. Safe shared memory (the phased
//! arrays of `cuprum::simt::phased`) depends on barriers pairing up, so the front end asks
//! this analysis about every barrier of a kernel that uses them.
//!
//! It is conservative: a value is *block-uniform* (the same in every thread of a block) when
//! it is a constant, a parameter, a slice length, a block or grid index or size, an address
//! of a shared or local array, a pure computation of block-uniform values, or a read of a
//! variable that every write gives a block-uniform value in block-uniform control flow.
//! Thread and lane indices, memory loads, atomics and warp operations are not. Control flow
//! is *divergent* inside an `If` whose condition is not block-uniform, in a whole `Loop` that
//! some thread may leave (`Break`, `Continue` or `Return` in divergent control flow inside
//! it) on another iteration than its neighbours, and everywhere after a `Return` in divergent
//! control flow. A barrier in divergent control flow is reported. `Trap` ends the whole
//! kernel with an error, so it does not count as leaving.

use std::collections::HashSet;

use crate::kernel::{Block, Kernel, Op, Special, Stmt, Value, Var};

/// The barriers (`Stmt::Barrier`) of `kernel` that some thread of a block may not reach
/// together with the others, by their position among the kernel's barriers in program order
/// (the order [`Block::visit`] gives): `0` is the first barrier.
pub fn divergent_barriers(kernel: &Kernel) -> Vec<usize> {
    analyze(kernel).pass.divergent_barriers
}

/// Which of `values` (of `kernel`) may differ between threads of a block, by their position
/// in `values`: the same conservative rules as for barriers.
pub fn varying_values(kernel: &Kernel, values: &[Value]) -> Vec<usize> {
    let state = analyze(kernel);
    values
        .iter()
        .enumerate()
        .filter(|(_, v)| state.varying.contains(v))
        .map(|(k, _)| k)
        .collect()
}

/// The analysis run to its fixed point.
fn analyze(kernel: &Kernel) -> State {
    let mut state = State::default();
    loop {
        let before = (
            state.varying.len(),
            state.varying_vars.len(),
            state.loops.len(),
        );
        state.pass = Pass::default();
        state.block(&kernel.body, false);
        let after = (
            state.varying.len(),
            state.varying_vars.len(),
            state.loops.len(),
        );
        if before == after {
            return state;
        }
    }
}

#[derive(Default)]
struct State {
    /// Values that may differ between threads of a block.
    varying: HashSet<Value>,
    /// Variables some write may give a varying value, or that are written in divergent
    /// control flow.
    varying_vars: HashSet<Var>,
    /// Loops (by position among the kernel's loops in program order) that threads may leave
    /// on different iterations.
    loops: HashSet<usize>,
    /// What one walk over the kernel found.
    pass: Pass,
}

#[derive(Default)]
struct Pass {
    /// Loops seen so far in this walk.
    loops_seen: usize,
    /// The loops enclosing the statement being walked, innermost last.
    enclosing: Vec<usize>,
    /// Barriers seen so far in this walk.
    barriers_seen: usize,
    /// Whether some thread may have returned already (a `Return` in divergent control flow).
    returned: bool,
    divergent_barriers: Vec<usize>,
}

impl State {
    fn block(&mut self, block: &Block, divergent: bool) {
        for stmt in &block.stmts {
            self.stmt(stmt, divergent);
        }
    }

    fn stmt(&mut self, stmt: &Stmt, divergent: bool) {
        let divergent = divergent || self.pass.returned;
        match stmt {
            Stmt::Def { value, op } => {
                if !self.uniform_op(op) {
                    self.varying.insert(*value);
                }
            }
            Stmt::WriteVar { var, value } => {
                if divergent || self.varying.contains(value) {
                    self.varying_vars.insert(*var);
                }
            }
            Stmt::If {
                cond,
                then,
                otherwise,
            } => {
                let inner = divergent || self.varying.contains(cond);
                self.block(then, inner);
                self.block(otherwise, inner);
            }
            Stmt::Loop { body } => {
                let id = self.pass.loops_seen;
                self.pass.loops_seen += 1;
                self.pass.enclosing.push(id);
                self.block(body, divergent || self.loops.contains(&id));
                self.pass.enclosing.pop();
            }
            Stmt::Break | Stmt::Continue => {
                if divergent && let Some(&innermost) = self.pass.enclosing.last() {
                    self.loops.insert(innermost);
                }
            }
            Stmt::Return => {
                if divergent {
                    self.loops.extend(self.pass.enclosing.iter().copied());
                    self.pass.returned = true;
                }
            }
            Stmt::Barrier => {
                if divergent {
                    self.pass.divergent_barriers.push(self.pass.barriers_seen);
                }
                self.pass.barriers_seen += 1;
            }
            other => {
                // Statements that define values (vector loads, tensor-core results) define
                // per-thread ones.
                self.varying.extend(other.results().iter().copied());
                // Variables written in place (wgmma accumulators) hold per-thread values.
                self.varying_vars
                    .extend(other.vars_in_place().iter().copied());
            }
        }
    }

    /// Whether `op` gives every thread of a block the same value.
    fn uniform_op(&self, op: &Op) -> bool {
        match op {
            Op::Special(Special::ThreadIdx(_) | Special::LaneId) => false,
            Op::ReadVar(var) => !self.varying_vars.contains(var),
            op if op.is_pure() => {
                let mut uniform = true;
                op.for_each_operand(|v| uniform &= !self.varying.contains(&v));
                uniform
            }
            // Loads, atomics and warp operations.
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::KernelBuilder;
    use crate::kernel::{BinaryOp, CmpOp, Dim};
    use crate::types::{Constant, ScalarType};

    fn thread_x(b: &mut KernelBuilder) -> Value {
        b.def(Op::Special(Special::ThreadIdx(Dim::X)))
            .expect("a thread index is a valid op")
    }

    fn is_below(b: &mut KernelBuilder, x: Value, n: u32) -> Value {
        let n = b.constant(Constant::u32(n));
        b.def(Op::Compare(CmpOp::Lt, x, n))
            .expect("comparing two u32 values is valid")
    }

    fn finish(b: KernelBuilder) -> Kernel {
        b.finish()
    }

    /// Pushes `if cond { stmt }`, or `if !cond { stmt }` when `negated`.
    fn push_if(b: &mut KernelBuilder, cond: Value, negated: bool, stmt: Stmt) {
        b.begin_block();
        b.push(stmt);
        let block = b.end_block();
        let (then, otherwise) = if negated {
            (Block::default(), block)
        } else {
            (block, Block::default())
        };
        b.push(Stmt::If {
            cond,
            then,
            otherwise,
        });
    }

    #[test]
    fn a_barrier_under_a_block_uniform_condition_is_reached_together() {
        let mut b = KernelBuilder::new("k");
        let bx = b
            .def(Op::Special(Special::BlockIdx(Dim::X)))
            .expect("valid");
        let cond = is_below(&mut b, bx, 4);
        push_if(&mut b, cond, false, Stmt::Barrier);
        assert!(divergent_barriers(&finish(b)).is_empty());
    }

    #[test]
    fn a_barrier_under_a_thread_dependent_condition_is_reported() {
        let mut b = KernelBuilder::new("k");
        b.push(Stmt::Barrier);
        let tx = thread_x(&mut b);
        let cond = is_below(&mut b, tx, 4);
        push_if(&mut b, cond, false, Stmt::Barrier);
        assert_eq!(divergent_barriers(&finish(b)), vec![1]);
    }

    #[test]
    fn a_thread_dependent_break_makes_its_whole_loop_divergent() {
        // loop { barrier; if tx < 4 { break } }
        let mut b = KernelBuilder::new("k");
        let tx = thread_x(&mut b);
        let cond = is_below(&mut b, tx, 4);
        b.begin_block();
        b.push(Stmt::Barrier);
        push_if(&mut b, cond, false, Stmt::Break);
        let body = b.end_block();
        b.push(Stmt::Loop { body });
        assert_eq!(divergent_barriers(&finish(b)), vec![0]);
    }

    /// `i = start; loop { if !(i < 8) { break } barrier; i = i + 1 }`, with the first
    /// value of `i` from `start`.
    fn counted_loop(start: impl FnOnce(&mut KernelBuilder) -> Value) -> Kernel {
        let mut b = KernelBuilder::new("k");
        let i = b.var("i", ScalarType::U32);
        let first = start(&mut b);
        b.push(Stmt::WriteVar {
            var: i,
            value: first,
        });
        b.begin_block();
        let cur = b.def(Op::ReadVar(i)).expect("valid");
        let more = is_below(&mut b, cur, 8);
        push_if(&mut b, more, true, Stmt::Break);
        b.push(Stmt::Barrier);
        let one = b.constant(Constant::u32(1));
        let next = b.def(Op::Binary(BinaryOp::Add, cur, one)).expect("valid");
        b.push(Stmt::WriteVar {
            var: i,
            value: next,
        });
        let body = b.end_block();
        b.push(Stmt::Loop { body });
        finish(b)
    }

    #[test]
    fn a_counter_written_only_uniform_values_keeps_its_loop_uniform() {
        let k = counted_loop(|b| b.constant(Constant::u32(0)));
        assert!(divergent_barriers(&k).is_empty());
    }

    #[test]
    fn a_counter_started_at_the_thread_index_makes_its_loop_divergent() {
        let k = counted_loop(thread_x);
        assert_eq!(divergent_barriers(&k), vec![0]);
    }

    #[test]
    fn values_from_the_thread_index_or_memory_vary_and_block_values_do_not() {
        // s = blockDim.x / 2 (uniform); t = threadIdx.x + s (varying); a variable written
        // `s` at the top level (uniform) and one written under `if t < 4` (varying).
        let mut b = KernelBuilder::new("k");
        let bd = b
            .def(Op::Special(Special::BlockDim(Dim::X)))
            .expect("valid");
        let two = b.constant(Constant::u32(2));
        let s = b.def(Op::Binary(BinaryOp::Div, bd, two)).expect("valid");
        let tx = thread_x(&mut b);
        let t = b.def(Op::Binary(BinaryOp::Add, tx, s)).expect("valid");
        let uniform = b.var("u", ScalarType::U32);
        b.push(Stmt::WriteVar {
            var: uniform,
            value: s,
        });
        let divergent = b.var("d", ScalarType::U32);
        let cond = is_below(&mut b, t, 4);
        push_if(
            &mut b,
            cond,
            false,
            Stmt::WriteVar {
                var: divergent,
                value: s,
            },
        );
        let u = b.def(Op::ReadVar(uniform)).expect("valid");
        let d = b.def(Op::ReadVar(divergent)).expect("valid");
        let k = finish(b);
        assert_eq!(varying_values(&k, &[s, t, u, d, bd]), vec![1, 3]);
    }

    #[test]
    fn every_barrier_after_a_thread_dependent_return_is_reported() {
        let mut b = KernelBuilder::new("k");
        let tx = thread_x(&mut b);
        let cond = is_below(&mut b, tx, 4);
        push_if(&mut b, cond, false, Stmt::Return);
        b.push(Stmt::Barrier);
        b.push(Stmt::Barrier);
        assert_eq!(divergent_barriers(&finish(b)), vec![0, 1]);
    }
}
