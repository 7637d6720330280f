//! What is known about values at a point of the structured tree, from the branches that
//! dominate it: which `Bool` values are known true or false, and upper and lower bounds of
//! unsigned integers. Scoped: facts learnt inside a block are forgotten when the walk leaves it.
//!
//! A fact comes from an `If` on `cond`: inside `then`, `cond` is true, inside `otherwise`
//! false; and after an `If` one of whose branches always leaves the block (it contains a
//! `Break`, `Continue`, `Return` or `Trap` at its top level), the lanes that go on took the
//! other branch. From a known comparison of an unsigned integer with a constant follows an
//! upper or a lower bound of the integer (`i < 16` true: `i <= 15`; `w > 0` true: `w >= 1`,
//! so that `w - 1` cannot wrap). SSA values never change, so a
//! fact about a value holds wherever the walk is while its scope is open, loops included.
//!
//! Between two unsigned values (`y < h`, `h` a parameter) the fact is kept as it is, for
//! [`crate::relations`] to combine with the kernel's launch requirements.
//!
//! Used by [`crate::conditions`] (to drop re-tested conditions) and [`crate::promote`] (to
//! bound dynamic local-memory addresses). It proves nothing else.

use std::collections::HashMap;

use cuprum_ir::{BinaryOp, CmpOp, Dim, Kernel, Op, ScalarType, Special, Stmt, UnaryOp, Value};

use crate::ir::visit_stmts;

/// The pure definition and the type of every value of a kernel.
pub(crate) struct Defs {
    pub(crate) ops: Vec<Option<Op>>,
    pub(crate) types: Vec<ScalarType>,
    /// The most threads a block of this kernel can have (its launch bounds, or 1024).
    pub(crate) max_threads: u32,
    /// The exact block shape of every launch, when the kernel declares one.
    pub(crate) block: Option<(u32, u32, u32)>,
}

impl Defs {
    pub(crate) fn new(kernel: &Kernel) -> Self {
        let mut ops = vec![None; kernel.values.len()];
        visit_stmts(&kernel.body, &mut |s| {
            if let Stmt::Def { value, op } = s
                && crate::ir::is_pure(op)
                && let Some(slot) = ops.get_mut(value.index())
            {
                *slot = Some(op.clone());
            }
        });
        let types = kernel.values.iter().map(|(_, d)| d.ty).collect();
        let max_threads = kernel
            .launch_bounds
            .map_or(1024, |b| b.max_threads.clamp(1, 1024));
        Self {
            ops,
            types,
            max_threads,
            block: kernel.block,
        }
    }

    /// Whether `other` holds the same definitions, types and launch facts.
    pub(crate) fn same_as(&self, other: &Defs) -> bool {
        self.ops == other.ops
            && self.types == other.types
            && self.max_threads == other.max_threads
            && self.block == other.block
    }

    /// Records the pure definition of a value a pass has just created.
    pub(crate) fn add(&mut self, v: Value, op: Op, ty: ScalarType) {
        let i = v.index();
        if self.ops.len() <= i {
            self.ops.resize(i + 1, None);
            self.types.resize(i + 1, ScalarType::Bool);
        }
        self.ops[i] = Some(op);
        self.types[i] = ty;
    }

    pub(crate) fn op(&self, v: Value) -> Option<&Op> {
        self.ops.get(v.index()).and_then(Option::as_ref)
    }

    pub(crate) fn ty(&self, v: Value) -> ScalarType {
        self.types
            .get(v.index())
            .copied()
            .unwrap_or(ScalarType::Bool)
    }

    /// Whether a definition by `op` may be deleted when nothing uses it
    /// ([`crate::ir::is_removable`]).
    pub(crate) fn is_removable(&self, op: &Op) -> bool {
        crate::ir::is_removable(op, |v| self.ty(v), |v| self.konst(v))
    }

    /// The bits of `v` if it is a constant.
    pub(crate) fn konst(&self, v: Value) -> Option<u64> {
        match self.op(v) {
            Some(Op::Const(c)) => Some(c.bits),
            _ => None,
        }
    }
}

enum Undo {
    Known(Value, Option<bool>),
    Upper(Value, Option<u64>),
    Lower(Value, Option<u64>),
    Implies((Value, bool)),
    Below(Value),
}

/// The facts holding at the current point of a walk.
#[derive(Default)]
pub(crate) struct Facts {
    known: HashMap<Value, bool>,
    upper: HashMap<Value, u64>,
    lower: HashMap<Value, u64>,
    /// `(c, b) -> [x...]`: once `c` is known to be `b`, each `x` holds (from `a || x` holding,
    /// as a check lifted out of a branch reads).
    implies: HashMap<(Value, bool), Vec<Value>>,
    /// `x -> [(b, strict)...]`: `x < b` (`strict`) or `x <= b` holds, unsigned, for values
    /// `b` that are not constants (`y < h` with `h` a parameter), for [`crate::relations`].
    below: HashMap<Value, Vec<(Value, bool)>>,
    log: Vec<Undo>,
}

impl Facts {
    /// A point to [`undo`](Self::undo) back to when the current scope closes.
    pub(crate) fn mark(&self) -> usize {
        self.log.len()
    }

    /// Forgets every fact learnt since `mark`.
    pub(crate) fn undo(&mut self, mark: usize) {
        while self.log.len() > mark {
            match self.log.pop() {
                Some(Undo::Known(v, old)) => restore(&mut self.known, v, old),
                Some(Undo::Upper(v, old)) => restore(&mut self.upper, v, old),
                Some(Undo::Lower(v, old)) => restore(&mut self.lower, v, old),
                Some(Undo::Implies(key)) => {
                    if let Some(list) = self.implies.get_mut(&key) {
                        list.pop();
                    }
                }
                Some(Undo::Below(x)) => {
                    if let Some(list) = self.below.get_mut(&x) {
                        list.pop();
                    }
                }
                None => break,
            }
        }
    }

    /// Whether `cond` is known true or false here.
    pub(crate) fn known(&self, cond: Value) -> Option<bool> {
        self.known.get(&cond).copied()
    }

    /// The largest value `v` (an unsigned integer) can have here, if known.
    pub(crate) fn upper(&self, v: Value) -> Option<u64> {
        self.upper.get(&v).copied()
    }

    /// The smallest value `v` (an unsigned integer) can have here, if known.
    pub(crate) fn lower(&self, v: Value) -> Option<u64> {
        self.lower.get(&v).copied()
    }

    /// The values `b` known here to bound `x` from above (unsigned), each with whether
    /// `x < b` (`true`) or only `x <= b` holds.
    pub(crate) fn below(&self, x: Value) -> &[(Value, bool)] {
        self.below.get(&x).map_or(&[], Vec::as_slice)
    }

    /// Records that `cond` is `holds` from here to the end of the current scope, with what
    /// follows from it.
    pub(crate) fn assume(&mut self, defs: &Defs, cond: Value, holds: bool) {
        self.assume_depth(defs, cond, holds, 0);
    }

    fn assume_depth(&mut self, defs: &Defs, cond: Value, holds: bool, depth: u32) {
        if depth > 8 || self.known(cond) == Some(holds) {
            return;
        }
        let old = self.known.insert(cond, holds);
        self.log.push(Undo::Known(cond, old));
        if let Some(implied) = self.implies.get(&(cond, holds)).cloned() {
            for x in implied {
                self.assume_depth(defs, x, true, depth + 1);
            }
        }
        match defs.op(cond) {
            Some(&Op::Unary(UnaryOp::Not, x)) => self.assume_depth(defs, x, !holds, depth + 1),
            Some(&Op::Compare(op, l, r)) => self.bound(defs, op, l, r, holds),
            Some(&Op::Binary(BinaryOp::And, a, b)) if holds => {
                self.assume_depth(defs, a, true, depth + 1);
                self.assume_depth(defs, b, true, depth + 1);
            }
            Some(&Op::Binary(BinaryOp::Or, a, b)) if !holds => {
                self.assume_depth(defs, a, false, depth + 1);
                self.assume_depth(defs, b, false, depth + 1);
            }
            Some(&Op::Binary(BinaryOp::Or, a, b)) if defs.ty(cond) == ScalarType::Bool => {
                self.imply(defs, a, b, depth + 1);
                self.imply(defs, b, a, depth + 1);
            }
            _ => {}
        }
    }

    /// Records that `x` holds wherever `a` is false (`a || x` holds), and where `a` is
    /// `!c`, wherever `c` is true.
    fn imply(&mut self, defs: &Defs, a: Value, x: Value, depth: u32) {
        if self.known(a) == Some(false) {
            self.assume_depth(defs, x, true, depth);
            return;
        }
        let mut keys = vec![(a, false)];
        if let Some(&Op::Unary(UnaryOp::Not, c)) = defs.op(a) {
            keys.push((c, true));
        }
        for key in keys {
            self.implies.entry(key).or_default().push(x);
            self.log.push(Undo::Implies(key));
        }
    }

    /// Upper and lower bounds from `l op r` being `holds`, one side a constant.
    fn bound(&mut self, defs: &Defs, op: CmpOp, l: Value, r: Value, holds: bool) {
        if !defs.ty(l).is_unsigned_int() {
            return;
        }
        // Normalise to `x op k` holding.
        let (x, k, op) = match (defs.konst(l), defs.konst(r)) {
            (None, Some(k)) => (l, k, op),
            (Some(k), None) => (r, k, mirror(op)),
            (None, None) => {
                let op = if holds { op } else { negate(op) };
                // `x < b`, `x <= b` between two values: one bounds the other.
                let (x, b, strict) = match op {
                    CmpOp::Lt => (l, r, true),
                    CmpOp::Le => (l, r, false),
                    CmpOp::Gt => (r, l, true),
                    CmpOp::Ge => (r, l, false),
                    _ => return,
                };
                self.below.entry(x).or_default().push((b, strict));
                self.log.push(Undo::Below(x));
                return;
            }
            _ => return,
        };
        let op = if holds { op } else { negate(op) };
        let min = match op {
            CmpOp::Gt => k.checked_add(1),
            CmpOp::Ge | CmpOp::Eq => Some(k),
            _ => None,
        };
        if let Some(min) = min
            && self.lower(x).is_none_or(|l| l < min)
        {
            let old = self.lower.insert(x, min);
            self.log.push(Undo::Lower(x, old));
        }
        let max = match op {
            CmpOp::Lt => match k.checked_sub(1) {
                Some(m) => m,
                None => return,
            },
            CmpOp::Le | CmpOp::Eq => k,
            _ => return,
        };
        if self.upper(x).is_some_and(|u| u <= max) {
            return;
        }
        let old = self.upper.insert(x, max);
        self.log.push(Undo::Upper(x, old));
    }
}

fn restore<T>(map: &mut HashMap<Value, T>, v: Value, old: Option<T>) {
    match old {
        Some(o) => {
            map.insert(v, o);
        }
        None => {
            map.remove(&v);
        }
    }
}

/// `a op b` == `b (mirror op) a`.
pub(crate) fn mirror(op: CmpOp) -> CmpOp {
    match op {
        CmpOp::Lt => CmpOp::Gt,
        CmpOp::Le => CmpOp::Ge,
        CmpOp::Gt => CmpOp::Lt,
        CmpOp::Ge => CmpOp::Le,
        other => other,
    }
}

/// `!(a op b)` == `a (negate op) b`, for integers (not for floats, because of NaN).
fn negate(op: CmpOp) -> CmpOp {
    match op {
        CmpOp::Eq => CmpOp::Ne,
        CmpOp::Ne => CmpOp::Eq,
        CmpOp::Lt => CmpOp::Ge,
        CmpOp::Le => CmpOp::Gt,
        CmpOp::Gt => CmpOp::Le,
        CmpOp::Ge => CmpOp::Lt,
    }
}

/// The values a hardware index register can hold in a launch of a kernel whose blocks have
/// at most `max_threads` threads, or exactly the shape `block` when given. These are launch
/// limits that both backends enforce (CUDA refuses the launch, the emulator and the runtime
/// report `InvalidLaunch`): blocks of at most 1024 threads and `[1024, 1024, 64]` per
/// dimension, no more than the kernel's launch bounds, and the declared block shape; grids
/// of at most `[2^31 - 1, 65535, 65535]` blocks; clusters of at most
/// [`cuprum_ir::MAX_CLUSTER_BLOCKS`] blocks; 32 lanes per warp.
pub(crate) fn special_range(
    s: Special,
    max_threads: u32,
    block: Option<(u32, u32, u32)>,
) -> (u64, u64) {
    let t = u64::from(max_threads.clamp(1, 1024));
    let block = |d: Dim| match (block, d) {
        (Some((x, _, _)), Dim::X) => u64::from(x.max(1)),
        (Some((_, y, _)), Dim::Y) => u64::from(y.max(1)),
        (Some((_, _, z)), Dim::Z) => u64::from(z.max(1)),
        (None, Dim::X | Dim::Y) => t,
        (None, Dim::Z) => t.min(64),
    };
    let grid = |d: Dim| match d {
        Dim::X => (1 << 31) - 1,
        Dim::Y | Dim::Z => 65535,
    };
    match s {
        Special::ThreadIdx(d) => (0, block(d) - 1),
        Special::BlockDim(d) => (1, block(d)),
        Special::BlockIdx(d) => (0, grid(d) - 1),
        Special::GridDim(d) => (1, grid(d)),
        Special::LaneId => (0, 31),
        // Clusters have at most `MAX_CLUSTER_BLOCKS` blocks (the validator's rule), so a
        // block's place in one is below it; a cluster index is at most a block index.
        Special::ClusterCtaRank | Special::ClusterCtaIdx(_) => {
            (0, u64::from(cuprum_ir::MAX_CLUSTER_BLOCKS) - 1)
        }
        Special::ClusterDim(_) => (1, u64::from(cuprum_ir::MAX_CLUSTER_BLOCKS)),
        Special::ClusterIdx(d) => (0, grid(d) - 1),
        Special::ClusterCount(d) => (1, grid(d)),
    }
}

/// Ranges of integer values at the current point of a walk.
///
/// A range bounds the value's bits read as an unsigned integer. Wrapping `+`, `-`, `*` and
/// `<<` act on the bits of signed integers exactly as on unsigned ones, so the same interval
/// arithmetic (refused where it could wrap) serves both; operations whose result depends on
/// the sign (`>>`, `/`, `%`, `min`, `max`, widening casts) are followed only for operands
/// known to be non-negative.
pub(crate) struct Ranges<'a> {
    pub(crate) defs: &'a Defs,
    pub(crate) facts: &'a Facts,
    /// The byte offset of each local array ([`cuprum_ir::array_layout`]), to give
    /// `LocalAddr` its value; empty where unknown.
    pub(crate) locals: &'a [u32],
}

impl Ranges<'_> {
    /// The smallest and largest bits `v` can have here (inclusive), for an integer; `None`
    /// for other types.
    pub(crate) fn of(&self, v: Value) -> Option<(u64, u64)> {
        let ty = self.defs.ty(v);
        ty.is_int().then(|| self.range(v, 0))
    }

    fn range(&self, v: Value, depth: u32) -> (u64, u64) {
        let ty = self.defs.ty(v);
        let tmax = crate::ir::all_ones(ty);
        let full = (0, tmax);
        let (mut lo, mut hi) = if depth > 8 || !ty.is_int() {
            full
        } else {
            self.derive(v, tmax, depth + 1).unwrap_or(full)
        };
        if let Some(u) = self.facts.upper(v) {
            hi = hi.min(u);
        }
        if let Some(l) = self.facts.lower(v) {
            lo = lo.max(l);
        }
        // `lo > hi` would mean that this point is unreachable; stay sound anyway.
        (lo.min(hi), hi)
    }

    fn derive(&self, v: Value, tmax: u64, depth: u32) -> Option<(u64, u64)> {
        use cuprum_ir::BinaryOp as B;
        let ty = self.defs.ty(v);
        let fit = |lo: u128, hi: u128| (hi <= u128::from(tmax)).then_some((lo as u64, hi as u64));
        let r = |x: Value| {
            let (lo, hi) = self.range(x, depth);
            (u128::from(lo), u128::from(hi))
        };
        // Whether a value of type `t` with largest bits `hi` is non-negative.
        let nonneg = |t: ScalarType, hi: u128| {
            t.is_unsigned_int() || t == ScalarType::Bool || hi < (1u128 << (t.bits() - 1))
        };
        match *self.defs.op(v)? {
            Op::Const(c) => Some((c.bits, c.bits)),
            Op::LocalAddr(i) => self
                .locals
                .get(i as usize)
                .map(|&o| (u64::from(o), u64::from(o))),
            Op::Special(s) => Some(special_range(s, self.defs.max_threads, self.defs.block)),
            Op::Cast { value: x, to } => {
                let from = self.defs.ty(x);
                if from == ScalarType::Bool {
                    return Some((0, 1));
                }
                if !from.is_int() || !to.is_int() {
                    return None;
                }
                let (lo, hi) = r(x);
                if from.bits() >= to.bits() || nonneg(from, hi) {
                    // A truncation or reinterpretation (checked by `fit`), or an extension of a value whose
                    // sign bit is clear: the bits read the same.
                    fit(lo, hi)
                } else {
                    None
                }
            }
            Op::Binary(b, x, y) => {
                let ((xl, xh), (yl, yh)) = (r(x), r(y));
                let width = u128::from(ty.bits());
                let both_nonneg = nonneg(ty, xh) && nonneg(ty, yh);
                match b {
                    B::Add => fit(xl + yl, xh + yh),
                    B::Mul => fit(xl * yl, xh * yh),
                    B::Sub if xl >= yh => fit(xl - yh, xh - yl),
                    // A constant shift amount below the width (others are taken modulo it).
                    B::Shl if yh == yl && yl < width => fit(xl << yl, xh << yl),
                    B::Shr if yh == yl && yl < width && nonneg(ty, xh) => {
                        Some(((xl >> yl) as u64, (xh >> yl) as u64))
                    }
                    B::Div if both_nonneg && yl >= 1 => Some(((xl / yh) as u64, (xh / yl) as u64)),
                    B::Shr | B::Div if nonneg(ty, xh) && (b == B::Shr || both_nonneg) => {
                        Some((0, xh as u64))
                    }
                    // The high half of the product (an unsigned division by a constant,
                    // `crate::divide`).
                    B::MulHigh if !ty.is_signed_int() => {
                        Some((((xl * yl) >> width) as u64, ((xh * yh) >> width) as u64))
                    }
                    B::And => Some((0, xh.min(yh) as u64)),
                    B::Rem if yl >= 1 && both_nonneg => Some((0, xh.min(yh - 1) as u64)),
                    B::Min if both_nonneg => Some((xl.min(yl) as u64, xh.min(yh) as u64)),
                    B::Max if both_nonneg => Some((xl.max(yl) as u64, xh.max(yh) as u64)),
                    _ => None,
                }
            }
            Op::Select {
                if_true, if_false, ..
            } => {
                let ((tl, th), (fl, fh)) = (r(if_true), r(if_false));
                Some((tl.min(fl) as u64, th.max(fh) as u64))
            }
            _ => None,
        }
    }

    /// The value of `l op r` if the ranges of its integer operands decide it.
    pub(crate) fn decide(&self, op: CmpOp, l: Value, r: Value) -> Option<bool> {
        let ((al, ah), (bl, bh)) = (self.of(l)?, self.of(r)?);
        let ty = self.defs.ty(l);
        // Signed comparisons order like unsigned ones when both sign bits are clear.
        if ty.is_signed_int() && (ah | bh) >> (ty.bits() - 1) != 0 {
            return None;
        }
        let lt = if ah < bl {
            Some(true)
        } else if al >= bh {
            Some(false)
        } else {
            None
        };
        let gt = if al > bh {
            Some(true)
        } else if ah <= bl {
            Some(false)
        } else {
            None
        };
        let eq = if al == ah && bl == bh && al == bl {
            Some(true)
        } else if ah < bl || bh < al {
            Some(false)
        } else {
            None
        };
        match op {
            CmpOp::Lt => lt,
            CmpOp::Ge => lt.map(|b| !b),
            CmpOp::Gt => gt,
            CmpOp::Le => gt.map(|b| !b),
            CmpOp::Eq => eq,
            CmpOp::Ne => eq.map(|b| !b),
        }
    }
}
