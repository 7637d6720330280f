//! Addresses at a constant distance from an earlier address, defined as that address plus
//! the constant, so that the PTX writer addresses them `[%r+imm]` from one register.
//!
//! An unrolled copy loop writes a shared tile at `(ty + 8k) * 33 + tx` for `k = 0..4`: four
//! addresses that differ only by constants, each computed from scratch (a multiply, two adds
//! and a shift per access in the SASS), where nvcc's code computes the first and reaches the
//! others as `[R+0x420]`, `[R+0x840]`, .... [`crate::strength`] does this for addresses that
//! vary with a loop's counter; this pass does it for straight-line code. ptxas does not
//! reassociate the arithmetic itself.
//!
//! The pass walks the kernel in program order, keeping, per scope, the first address value
//! (of a load or store, `U32` or `U64`) of each linear form up to its constant
//! ([`cuprum_ir::Addresses`]: the same terms with the same coefficients). A later address `v`
//! with the form of an earlier `b` that dominates it (defined before it, in its block or an
//! enclosing one) is redefined as `v = b + (c_v - c_b)`.
//!
//! Why this keeps the meaning: the two linear forms are exact in the type's wrapping
//! arithmetic over the same SSA terms, so `v - b` is the constant `c_v - c_b` (modulo the
//! type's width) in every thread, and `b` has been computed wherever `v` is (it dominates
//! `v`; a term defined in a loop is defined before `b` in the same iteration, so both read the
//! same instance). `v` keeps its bits; only how they are computed changes. The old arithmetic
//! is left to [`crate::dce`].
//!
//! What this must not do: rebase onto a value of a branch or loop body that the address is
//! not inside (the scopes are closed on the way out), or across types.

use std::collections::{HashMap, HashSet};

use cuprum_ir::{
    Addresses, Arena, BinaryOp, Block, Constant, Kernel, Op, ScalarType, Stmt, Value, ValueDef,
};

use crate::analyses::Analyses;
use crate::ir::visit_stmts;

/// Runs the pass; true if the kernel changed.
pub fn run(kernel: &mut Kernel) -> bool {
    run_with(kernel, &mut Analyses::new())
}

/// [`run`], taking the kernel's address analysis from `analyses` (and returning it there
/// when nothing changed).
pub fn run_with(kernel: &mut Kernel, analyses: &mut Analyses) -> bool {
    let addresses = analyses.take_addresses(kernel);
    let mut used = HashSet::new();
    visit_stmts(&kernel.body, &mut |s| match s {
        Stmt::Def {
            op: Op::Load { addr, .. },
            ..
        }
        | Stmt::Store { addr, .. }
        | Stmt::VectorLoad { addr, .. }
        | Stmt::VectorStore { addr, .. } => {
            used.insert(*addr);
        }
        _ => {}
    });
    let mut w = Rebase {
        constants: crate::ir::constant_bits(kernel),
        addresses,
        used,
        first: HashMap::new(),
        log: Vec::new(),
        changed: false,
    };
    let mut body = std::mem::take(&mut kernel.body);
    w.block(&mut body, &mut kernel.values);
    kernel.body = body;
    if !w.changed {
        analyses.keep_addresses(w.addresses);
    }
    w.changed
}

/// A linear form without its constant: the type and the terms with their coefficients.
type Shape = (ScalarType, Vec<(Value, u64)>);

struct Rebase {
    /// The bits of every constant the kernel defined before the pass.
    constants: Vec<Option<u64>>,
    addresses: Addresses,
    /// The values used as the address of a load or store.
    used: HashSet<Value>,
    /// The first address of each shape in the open scopes, with its constant.
    first: HashMap<Shape, (Value, u64)>,
    /// The shapes recorded, in order, to forget at the end of their scope.
    log: Vec<Shape>,
    changed: bool,
}

impl Rebase {
    fn block(&mut self, block: &mut Block, values: &mut Arena<ValueDef>) {
        let mark = self.log.len();
        let stmts = std::mem::take(&mut block.stmts);
        let mut out = Vec::with_capacity(stmts.len());
        for mut stmt in stmts {
            if let Stmt::Def { value, op } = &mut stmt {
                self.address(*value, op, values, &mut out);
            }
            for nested in stmt.nested_mut() {
                self.block(nested, values);
            }
            out.push(stmt);
        }
        block.stmts = out;
        while self.log.len() > mark {
            if let Some(shape) = self.log.pop() {
                self.first.remove(&shape);
            }
        }
    }

    /// Redefines `value` (defined by `op`) from an earlier address of its shape, or records
    /// it as the first of its shape.
    fn address(
        &mut self,
        value: Value,
        op: &mut Op,
        values: &mut Arena<ValueDef>,
        out: &mut Vec<Stmt>,
    ) {
        let Some(ty) = values.try_get(value).map(|d| d.ty) else {
            return;
        };
        if !self.used.contains(&value) || !matches!(ty, ScalarType::U32 | ScalarType::U64) {
            return;
        }
        let form = self.addresses.linear(value);
        if form.terms().is_empty() {
            return;
        }
        let shape: Shape = (ty, form.terms().to_vec());
        let Some(&(base, c0)) = self.first.get(&shape) else {
            self.first.insert(shape.clone(), (value, form.constant()));
            self.log.push(shape);
            return;
        };
        let offset = Constant::new(ty, form.constant().wrapping_sub(c0));
        // Already `base + offset`: nothing to do.
        if let Op::Binary(BinaryOp::Add, a, k) = *op
            && a == base
            && self.constants.get(k.index()).copied().flatten() == Some(offset.bits)
        {
            return;
        }
        let k = values.append(ValueDef { ty });
        out.push(Stmt::Def {
            value: k,
            op: Op::Const(offset),
        });
        *op = Op::Binary(BinaryOp::Add, base, k);
        self.changed = true;
    }
}
