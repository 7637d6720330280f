//! Constant folding and algebraic simplification.
//!
//! One walk over the kernel in program order. Each definition is rewritten, with its
//! operands already rewritten, into the simplest equivalent:
//!
//! * an operation on constants becomes a constant (evaluated by `crate::eval`, which
//!   refuses whatever the GPU might compute differently: NaN results, half floats,
//!   transcendental functions, faulting divisions);
//! * identities on integers and booleans give one of the operands: `x + 0`, `x - 0`, `x * 1`,
//!   `x / 1`, `x | 0`, `x ^ 0`, `x & !0`, `x << 0` (and shifts by a multiple of the width),
//!   `x & x`, `min(x, x)`, `!!x`, `-(-x)` on integers, `select(c, x, x)`, `x as T` for `x: T`,
//!   a widening integer cast cast back; and constants: `x * 0`, `x & 0`, `x - x`, `x ^ x`,
//!   `x % 1`, `x == x` on integers, unsigned `x < 0`. Float identities such as `x * 1.0` are
//!   not applied: they are not bit-exact for NaN operands on the GPU;
//! * `select` with a constant condition gives its arm; a comparison of a zero-extended
//!   integer with a constant that fits compares the narrow integer; a cast of a widening cast
//!   to a type no wider than the source casts the source directly.
//!
//! Control flow: an `If` with a constant condition is replaced by the statements of the
//! branch it takes (values defined there become visible to the rest of the enclosing block,
//! which only widens their scope); an `If` with two empty branches goes; statements after a
//! `Break`, `Continue`, `Return` or `Trap` in the same block are unreachable and go; a `Loop`
//! whose body ends in `Break` and has no other `Break` or `Continue` of its own runs once and
//! is replaced by its body.
//!
//! Definitions that simplify to an existing value are deleted and their uses rewritten;
//! the value arena is compacted afterwards. What this pass must not do: change any bit a
//! thread computes, or delete anything with an effect (dead code is [`crate::dce`]'s job).

use cuprum_ir::{
    BinaryOp, Block, CmpOp, Constant, Kernel, Op, ScalarType, Stmt, UnaryOp, Value, ValueDef,
};

use crate::eval;
use crate::ir::{Subst, all_ones, compact, is_pure, is_terminator};

use ScalarType as S;

/// Runs the pass; true if the kernel changed.
pub fn run(kernel: &mut Kernel) -> bool {
    let n = kernel.values.len();
    let body = std::mem::take(&mut kernel.body);
    let mut f = Folder {
        values: &mut kernel.values,
        consts: vec![None; n],
        defs: vec![None; n],
        subst: Subst::new(n),
        changed: false,
    };
    let body = f.block(body);
    let changed = f.changed;
    kernel.body = body;
    if changed {
        compact(kernel);
    }
    changed
}

/// What a definition simplifies to.
enum Simplified {
    Const(Constant),
    /// An existing value of the same type.
    Value(Value),
    /// A simpler operation (simplified again).
    Op(Op),
}

struct Folder<'k> {
    values: &'k mut cuprum_ir::Arena<ValueDef>,
    /// The constant each value is, if known.
    consts: Vec<Option<Constant>>,
    /// The pure operation defining each value, for patterns that look through operands.
    defs: Vec<Option<Op>>,
    subst: Subst,
    changed: bool,
}

impl Folder<'_> {
    fn ty(&self, v: Value) -> ScalarType {
        self.values.try_get(v).map_or(S::Bool, |d| d.ty)
    }

    fn konst(&self, v: Value) -> Option<Constant> {
        self.consts.get(v.index()).copied().flatten()
    }

    fn def_of(&self, v: Value) -> Option<&Op> {
        self.defs.get(v.index()).and_then(Option::as_ref)
    }

    fn record(&mut self, value: Value, op: &Op) {
        let i = value.index();
        if self.consts.len() <= i {
            self.consts.resize(i + 1, None);
            self.defs.resize(i + 1, None);
        }
        if let Op::Const(c) = op {
            self.consts[i] = Some(*c);
        }
        if is_pure(op) {
            self.defs[i] = Some(op.clone());
        }
    }

    /// A new constant defined at the end of `out`.
    fn new_const(&mut self, c: Constant, out: &mut Vec<Stmt>) -> Value {
        let value = self.values.append(ValueDef { ty: c.ty });
        let op = Op::Const(c);
        self.record(value, &op);
        out.push(Stmt::Def { value, op });
        value
    }

    fn block(&mut self, block: Block) -> Block {
        let mut out = Vec::with_capacity(block.stmts.len());
        let mut rest = block.stmts.into_iter();
        while let Some(stmt) = rest.next() {
            self.stmt(stmt, &mut out);
            if out.last().is_some_and(is_terminator) {
                if rest.next().is_some() {
                    self.changed = true;
                }
                break;
            }
        }
        Block { stmts: out }
    }

    fn stmt(&mut self, mut stmt: Stmt, out: &mut Vec<Stmt>) {
        if self.subst.apply(&mut stmt) {
            self.changed = true;
        }
        match stmt {
            Stmt::Def { value, op } => self.def(value, op, out),
            Stmt::If {
                cond,
                then,
                otherwise,
            } => {
                if let Some(c) = self.konst(cond) {
                    self.changed = true;
                    let taken = if c.bits != 0 { then } else { otherwise };
                    let taken = self.block(taken);
                    out.extend(taken.stmts);
                    return;
                }
                let then = self.block(then);
                let otherwise = self.block(otherwise);
                if then.stmts.is_empty() && otherwise.stmts.is_empty() {
                    self.changed = true;
                    return;
                }
                out.push(Stmt::If {
                    cond,
                    then,
                    otherwise,
                });
            }
            Stmt::Loop { body } => {
                let mut body = self.block(body);
                if matches!(body.stmts.last(), Some(Stmt::Break))
                    && !leaves_loop(&body.stmts[..body.stmts.len() - 1])
                {
                    self.changed = true;
                    body.stmts.pop();
                    out.extend(body.stmts);
                } else {
                    out.push(Stmt::Loop { body });
                }
            }
            other => out.push(other),
        }
    }

    fn def(&mut self, value: Value, op: Op, out: &mut Vec<Stmt>) {
        // Each rewrite makes the operation strictly simpler, so this ends; the bound is a
        // guard against a rule that would not.
        let mut op = op;
        for _ in 0..8 {
            match self.simplify(&op, out) {
                Some(Simplified::Const(c)) => {
                    if op != Op::Const(c) {
                        self.changed = true;
                    }
                    op = Op::Const(c);
                    break;
                }
                Some(Simplified::Value(v)) => {
                    self.changed = true;
                    self.subst.set(value, v);
                    return;
                }
                Some(Simplified::Op(new)) => {
                    self.changed = true;
                    op = new;
                }
                None => break,
            }
        }
        self.record(value, &op);
        out.push(Stmt::Def { value, op });
    }

    fn simplify(&mut self, op: &Op, out: &mut Vec<Stmt>) -> Option<Simplified> {
        use Simplified as R;
        match *op {
            Op::Const(_) => None,
            Op::Unary(u, a) => {
                if let Some(c) = self.konst(a) {
                    return eval::unary(u, c).map(R::Const);
                }
                match self.def_of(a) {
                    Some(&Op::Unary(inner, x))
                        if inner == u
                            && (u == UnaryOp::Not
                                || (u == UnaryOp::Neg && self.ty(a).is_int())) =>
                    {
                        Some(R::Value(x))
                    }
                    _ => None,
                }
            }
            Op::Binary(b, l, r) => self.binary(b, l, r),
            Op::Ternary(_, a, b, c) => {
                eval::mul_add(self.konst(a)?, self.konst(b)?, self.konst(c)?).map(R::Const)
            }
            Op::Compare(c, l, r) => self.compare(c, l, r, out),
            Op::Select {
                cond,
                if_true,
                if_false,
            } => {
                if let Some(c) = self.konst(cond) {
                    return Some(R::Value(if c.bits != 0 { if_true } else { if_false }));
                }
                if if_true == if_false {
                    return Some(R::Value(if_true));
                }
                match (self.konst(if_true), self.konst(if_false)) {
                    (Some(t), Some(f)) if t.ty == S::Bool && t.bits == 1 && f.bits == 0 => {
                        Some(R::Value(cond))
                    }
                    (Some(t), Some(f)) if t.ty == S::Bool && t.bits == 0 && f.bits == 1 => {
                        Some(R::Op(Op::Unary(UnaryOp::Not, cond)))
                    }
                    _ => None,
                }
            }
            Op::Cast { value, to } => {
                if let Some(c) = self.konst(value) {
                    return eval::cast(c, to).map(R::Const);
                }
                let from = self.ty(value);
                if from == to {
                    return Some(R::Value(value));
                }
                if let Some(&Op::Cast { value: x, to: mid }) = self.def_of(value) {
                    let src = self.ty(x);
                    // `x` widened (or reinterpreted) to `mid`: its low bits are intact.
                    if (src.is_int() || src == S::Bool)
                        && mid.is_int()
                        && to.is_int()
                        && mid.bits() >= src.bits()
                    {
                        if to == src {
                            return Some(R::Value(x));
                        }
                        if src.is_int() && to.bits() <= src.bits() {
                            return Some(R::Op(Op::Cast { value: x, to }));
                        }
                    }
                }
                None
            }
            Op::Bitcast { value, to } => {
                if let Some(c) = self.konst(value) {
                    return eval::bitcast(c, to).map(R::Const);
                }
                if self.ty(value) == to {
                    return Some(R::Value(value));
                }
                if let Some(&Op::Bitcast { value: x, .. }) = self.def_of(value) {
                    if self.ty(x) == to {
                        return Some(R::Value(x));
                    }
                    return Some(R::Op(Op::Bitcast { value: x, to }));
                }
                None
            }
            _ => None,
        }
    }

    fn binary(&self, b: BinaryOp, l: Value, r: Value) -> Option<Simplified> {
        use Simplified as R;
        let ty = self.ty(l);
        let (kl, kr) = (self.konst(l), self.konst(r));
        if let (Some(x), Some(y)) = (kl, kr) {
            return eval::binary(b, x, y).map(R::Const);
        }
        let is = |k: Option<Constant>, bits: u64| k.is_some_and(|c| c.bits == bits);
        if ty == S::Bool {
            let (t, f) = (1, 0);
            let fixed = |v: bool| Some(R::Const(Constant::bool(v)));
            // With one constant operand `k` and the other `x`.
            let (x, k) = match (kl, kr) {
                (Some(k), None) => (r, k.bits),
                (None, Some(k)) => (l, k.bits),
                _ => {
                    return match b {
                        BinaryOp::And | BinaryOp::Or if l == r => Some(R::Value(l)),
                        BinaryOp::Xor if l == r => fixed(false),
                        _ => None,
                    };
                }
            };
            return match (b, k) {
                (BinaryOp::And, k) if k == f => fixed(false),
                (BinaryOp::Or, k) if k == t => fixed(true),
                (BinaryOp::And, _) | (BinaryOp::Or | BinaryOp::Xor, 0) => Some(R::Value(x)),
                (BinaryOp::Xor, _) => Some(R::Op(Op::Unary(UnaryOp::Not, x))),
                _ => None,
            };
        }
        if !ty.is_int() {
            return None;
        }
        let zero = Some(R::Const(Constant::new(ty, 0)));
        let ones = all_ones(ty);
        match b {
            BinaryOp::Add if is(kr, 0) => Some(R::Value(l)),
            BinaryOp::Add if is(kl, 0) => Some(R::Value(r)),
            BinaryOp::Sub if is(kr, 0) => Some(R::Value(l)),
            BinaryOp::Sub if l == r => zero,
            BinaryOp::Mul if is(kl, 0) || is(kr, 0) => zero,
            BinaryOp::Mul if is(kr, 1) => Some(R::Value(l)),
            BinaryOp::Mul if is(kl, 1) => Some(R::Value(r)),
            BinaryOp::Div if is(kr, 1) => Some(R::Value(l)),
            BinaryOp::Rem if is(kr, 1) => zero,
            BinaryOp::And if is(kl, 0) || is(kr, 0) => zero,
            BinaryOp::And if is(kr, ones) => Some(R::Value(l)),
            BinaryOp::And if is(kl, ones) => Some(R::Value(r)),
            BinaryOp::Or if is(kl, ones) || is(kr, ones) => Some(R::Const(Constant::new(ty, ones))),
            BinaryOp::Or | BinaryOp::Xor if is(kr, 0) => Some(R::Value(l)),
            BinaryOp::Or | BinaryOp::Xor if is(kl, 0) => Some(R::Value(r)),
            BinaryOp::Xor if l == r => zero,
            BinaryOp::And | BinaryOp::Or | BinaryOp::Min | BinaryOp::Max if l == r => {
                Some(R::Value(l))
            }
            BinaryOp::Shl | BinaryOp::Shr => {
                if kr.is_some_and(|c| c.bits % u64::from(ty.bits()) == 0) {
                    Some(R::Value(l))
                } else if is(kl, 0) {
                    zero
                } else {
                    None
                }
            }
            _ => None,
        }
    }

    fn compare(&mut self, c: CmpOp, l: Value, r: Value, out: &mut Vec<Stmt>) -> Option<Simplified> {
        use Simplified as R;
        let ty = self.ty(l);
        let (kl, kr) = (self.konst(l), self.konst(r));
        if let (Some(x), Some(y)) = (kl, kr) {
            return eval::compare(c, x, y).map(|b| R::Const(Constant::bool(b)));
        }
        if !(ty.is_int() || ty == S::Bool) {
            return None;
        }
        if l == r {
            let b = matches!(c, CmpOp::Eq | CmpOp::Le | CmpOp::Ge);
            return Some(R::Const(Constant::bool(b)));
        }
        let is = |k: Option<Constant>, bits: u64| k.is_some_and(|k| k.bits == bits);
        if ty.is_unsigned_int() || ty == S::Bool {
            // Nothing is below zero.
            match c {
                CmpOp::Lt if is(kr, 0) => return Some(R::Const(Constant::bool(false))),
                CmpOp::Ge if is(kr, 0) => return Some(R::Const(Constant::bool(true))),
                CmpOp::Gt if is(kl, 0) => return Some(R::Const(Constant::bool(false))),
                CmpOp::Le if is(kl, 0) => return Some(R::Const(Constant::bool(true))),
                _ => {}
            }
        }
        if ty == S::Bool {
            let (other, k) = match (kl, kr) {
                (Some(k), None) => (r, k),
                (None, Some(k)) => (l, k),
                _ => return None,
            };
            return match (c, k.bits) {
                (CmpOp::Eq, 1) | (CmpOp::Ne, 0) => Some(R::Value(other)),
                (CmpOp::Eq, 0) | (CmpOp::Ne, 1) => Some(R::Op(Op::Unary(UnaryOp::Not, other))),
                _ => None,
            };
        }
        self.narrow_compare(c, l, r, kl, kr, out)
    }

    /// `(x as W) op k` for an integer `x` widened to `W` and a constant `k` that `x`'s type
    /// holds with the same order: `x op (k as T)`.
    fn narrow_compare(
        &mut self,
        c: CmpOp,
        l: Value,
        r: Value,
        kl: Option<Constant>,
        kr: Option<Constant>,
        out: &mut Vec<Stmt>,
    ) -> Option<Simplified> {
        let wide = self.ty(l);
        let (var, k, var_left) = match (kl, kr) {
            (None, Some(k)) => (l, k, true),
            (Some(k), None) => (r, k, false),
            _ => return None,
        };
        let &Op::Cast { value: x, .. } = self.def_of(var)? else {
            return None;
        };
        let narrow = self.ty(x);
        if !narrow.is_int() || narrow.bits() >= wide.bits() {
            return None;
        }
        let kv = eval::int_value(k);
        let w = narrow.bits();
        let fits = if narrow.is_unsigned_int() {
            // Zero-extended: `x as W` lies in [0, 2^w), where signed and unsigned orders of
            // `W` agree with `x`'s.
            (0..(1i128 << w)).contains(&kv)
        } else if wide.is_signed_int() {
            // Sign-extended into a signed type: the orders agree on `x`'s range.
            (-(1i128 << (w - 1))..(1i128 << (w - 1))).contains(&kv)
        } else {
            false
        };
        if !fits {
            return None;
        }
        let nk = self.new_const(eval::int_const(narrow, kv), out);
        let (a, b) = if var_left { (x, nk) } else { (nk, x) };
        Some(Simplified::Op(Op::Compare(c, a, b)))
    }
}

/// Whether `stmts` contain a `Break` or `Continue` that leaves or restarts the loop they are
/// the body of (those inside nested loops belong to the nested loops).
pub(crate) fn leaves_loop(stmts: &[Stmt]) -> bool {
    stmts.iter().any(|s| match s {
        Stmt::Break | Stmt::Continue => true,
        Stmt::If {
            then, otherwise, ..
        } => leaves_loop(&then.stmts) || leaves_loop(&otherwise.stmts),
        _ => false,
    })
}
