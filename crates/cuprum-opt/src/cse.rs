//! Common-subexpression elimination of pure operations, over the structured tree.
//!
//! A pure operation (`crate::ir::is_pure`: no loads, atomics, variable reads or warp
//! operations) computes the same bits from the same operands wherever it runs, so a second
//! definition of the same operation on the same operands can read the first, provided the
//! first dominates it: it comes earlier in the same block or in an enclosing block (a loop
//! body included: SSA values do not change between iterations). A scoped table maps each
//! operation to its first value; leaving a block forgets what the block defined, so values
//! are never used outside their scope. Operands of commutative integer operations and of
//! `==`/`!=` are ordered, and `a > b` is looked up as `b < a`, so both spellings meet.
//!
//! The front end emits the same address arithmetic, constants and slice lengths many times;
//! after this pass each is computed once per dominating position. What it must not do: merge
//! operations that read memory, variables or other lanes, or reuse a value defined in a
//! sibling branch.

use std::collections::HashMap;

use cuprum_ir::{
    BinaryOp, Block, CmpOp, Constant, Kernel, Op, ScalarType, Special, Stmt, TernaryOp, UnaryOp,
    Value,
};

use crate::ir::{Subst, compact};

/// Runs the pass; true if the kernel changed.
pub fn run(kernel: &mut Kernel) -> bool {
    let types: Vec<ScalarType> = kernel.values.iter().map(|(_, d)| d.ty).collect();
    let mut cse = Cse {
        types,
        table: HashMap::new(),
        log: Vec::new(),
        subst: Subst::new(kernel.values.len()),
        changed: false,
    };
    cse.block(&mut kernel.body);
    if cse.changed {
        compact(kernel);
    }
    cse.changed
}

/// A pure operation with its operands, as a hash key.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Key {
    Const(Constant),
    Param(u32),
    SliceBase(u32),
    SliceLen(u32),
    SharedAddr(u32),
    DynSharedAddr,
    LocalAddr(u32),
    Special(Special),
    Unary(UnaryOp, Value),
    Binary(BinaryOp, Value, Value),
    Ternary(TernaryOp, Value, Value, Value),
    Compare(CmpOp, Value, Value),
    Select(Value, Value, Value),
    Cast(Value, ScalarType),
    Bitcast(Value, ScalarType),
}

struct Cse {
    types: Vec<ScalarType>,
    table: HashMap<Key, Value>,
    /// Keys added to `table`, in order, so that leaving a block removes its own.
    log: Vec<Key>,
    subst: Subst,
    changed: bool,
}

impl Cse {
    fn ty(&self, v: Value) -> ScalarType {
        self.types
            .get(v.index())
            .copied()
            .unwrap_or(ScalarType::Bool)
    }

    fn key(&self, op: &Op) -> Option<Key> {
        let sorted = |a: Value, b: Value| if b < a { (b, a) } else { (a, b) };
        Some(match *op {
            Op::Const(c) => Key::Const(c),
            Op::Param(i) => Key::Param(i),
            Op::SliceBase(i) => Key::SliceBase(i),
            Op::SliceLen(i) => Key::SliceLen(i),
            Op::SharedAddr(i) => Key::SharedAddr(i),
            Op::DynSharedAddr => Key::DynSharedAddr,
            Op::LocalAddr(i) => Key::LocalAddr(i),
            Op::Special(s) => Key::Special(s),
            Op::Unary(u, a) => Key::Unary(u, a),
            Op::Binary(b, l, r) => {
                // Integer and boolean operations commute exactly; float ones only up to
                // which NaN payload comes out, so their order is kept.
                let commutes = matches!(
                    b,
                    BinaryOp::Add
                        | BinaryOp::Mul
                        | BinaryOp::MulHigh
                        | BinaryOp::And
                        | BinaryOp::Or
                        | BinaryOp::Xor
                        | BinaryOp::Min
                        | BinaryOp::Max
                ) && !self.ty(l).is_float();
                let (l, r) = if commutes { sorted(l, r) } else { (l, r) };
                Key::Binary(b, l, r)
            }
            Op::Ternary(t, a, b, c) => Key::Ternary(t, a, b, c),
            Op::Compare(c, l, r) => match c {
                CmpOp::Eq | CmpOp::Ne => {
                    let (l, r) = sorted(l, r);
                    Key::Compare(c, l, r)
                }
                CmpOp::Gt => Key::Compare(CmpOp::Lt, r, l),
                CmpOp::Ge => Key::Compare(CmpOp::Le, r, l),
                CmpOp::Lt | CmpOp::Le => Key::Compare(c, l, r),
            },
            Op::Select {
                cond,
                if_true,
                if_false,
            } => Key::Select(cond, if_true, if_false),
            Op::Cast { value, to } => Key::Cast(value, to),
            Op::Bitcast { value, to } => Key::Bitcast(value, to),
            Op::ReadVar(_)
            | Op::Load { .. }
            | Op::Atomic { .. }
            | Op::AtomicLoad { .. }
            | Op::Shuffle { .. }
            | Op::Vote { .. } => return None,
        })
    }

    fn block(&mut self, block: &mut Block) {
        let mark = self.log.len();
        let stmts = std::mem::take(&mut block.stmts);
        let mut out = Vec::with_capacity(stmts.len());
        for mut stmt in stmts {
            self.subst.apply(&mut stmt);
            match &mut stmt {
                Stmt::Def { value, op } => {
                    if let Some(key) = self.key(op) {
                        if let Some(&first) = self.table.get(&key) {
                            self.subst.set(*value, first);
                            self.changed = true;
                            continue;
                        }
                        self.table.insert(key.clone(), *value);
                        self.log.push(key);
                    }
                }
                Stmt::If {
                    then, otherwise, ..
                } => {
                    self.block(then);
                    self.block(otherwise);
                }
                Stmt::Loop { body } => self.block(body),
                _ => {}
            }
            out.push(stmt);
        }
        block.stmts = out;
        for key in self.log.drain(mark..) {
            self.table.remove(&key);
        }
    }
}
