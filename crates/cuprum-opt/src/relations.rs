//! Bounds checks that a kernel's launch requirements prove: `y * w + x < input.len()` where
//! `y < h` and `x < w` hold and every launch satisfies `input.len() >= w * h`.
//!
//! Value ranges ([`crate::facts::Ranges`]) bound a value by a constant, which a 2-D index
//! over run-time extents never has. The launch requirements ([`cuprum_ir::requires`]) relate
//! the extents to the slice lengths instead; this module proves `v < len` from them, with
//! polynomials over the launch's parameters and slice lengths (its *atoms*).
//!
//! Each requirement `len >= R` (or `len > R`, `R <= len`, ..., an atom on the greater side,
//! `R` made of literals, atoms, `+` and `*`) says that, in every launch that runs, the exact
//! value of `R` is at most `len` (a launch that fails it is refused by both backends), and
//! below `2^64` (the host evaluates it in checked `u64` arithmetic and refuses an overflow).
//! To decide `v < len`, [`Relations::below`] looks for a proof that `v < G` for a
//! polynomial `G` that `R` dominates (no larger coefficient on any monomial; atoms are
//! never negative, so then `G <= R` for every launch), by these rules, each one sound when
//! `G`'s value is below `2^64`:
//!
//! * `v <= hi` by its range: `hi + 1` at most `G`'s constant term;
//! * a dominating fact `v < b` (or `v <= b`) where `b` is an atom, a constant, or a wrapping
//!   sum or product of those: its value is at most the exact sum or product `P`, so
//!   `v < P` (`v < P + 1`), and `P` (`P + 1`) must be dominated by `G`;
//! * `v` a zero extension of `x`: `x < G`;
//! * `v = q * B + c` in `U64` (either operand order), `B` an atom or a non-zero constant:
//!   with `Q` the monomials of `G` that are multiples of `B`, divided by it (so `Q * B <= G`),
//!   `q < Q` and `c < B` give `q * B + c <= (Q - 1) * B + B - 1 < Q * B <= G`. No step wraps:
//!   every partial result is at most `Q * B - 1 < 2^64`. `c < B` makes `B >= 1`, so
//!   `Q <= Q * B <= G` and the sub-goal's value is below `2^64` as well.
//!
//! What this must not do: use a relation of signed values (the facts keep unsigned ones
//! only), read a requirement's subtraction or division as exact on the smaller side, or
//! treat a value computed in fewer than 64 bits as unwrapped beyond its range.

use std::collections::BTreeMap;

use cuprum_ir::requires::{Requirement, Term, TermOp};
use cuprum_ir::{BinaryOp, CmpOp, Kernel, Op, ParamKind, ScalarType, Value};

use crate::facts::{Defs, Facts, Ranges};

/// A launch quantity that is never negative: an unsigned scalar parameter or a slice length.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Atom {
    Param(u32),
    Len(u32),
}

/// A polynomial over atoms with non-negative coefficients: monomial (sorted atoms) to
/// coefficient.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Poly(BTreeMap<Vec<Atom>, u128>);

impl Poly {
    fn constant(c: u128) -> Self {
        let mut p = Poly::default();
        if c > 0 {
            p.0.insert(Vec::new(), c);
        }
        p
    }

    fn atom(a: Atom) -> Self {
        Poly(BTreeMap::from([(vec![a], 1)]))
    }

    fn add(&self, other: &Poly) -> Option<Poly> {
        let mut out = self.clone();
        for (m, c) in &other.0 {
            let e = out.0.entry(m.clone()).or_insert(0);
            *e = e.checked_add(*c)?;
        }
        Some(out)
    }

    fn mul(&self, other: &Poly) -> Option<Poly> {
        let mut out = Poly::default();
        for (ma, ca) in &self.0 {
            for (mb, cb) in &other.0 {
                let mut m: Vec<Atom> = ma.iter().chain(mb).copied().collect();
                m.sort();
                let e = out.0.entry(m).or_insert(0);
                *e = e.checked_add(ca.checked_mul(*cb)?)?;
            }
        }
        Some(out)
    }

    fn constant_term(&self) -> u128 {
        self.0.get(&Vec::new()).copied().unwrap_or(0)
    }

    /// Whether `self <= other` for every value of the atoms (each coefficient at most
    /// `other`'s).
    fn dominated_by(&self, other: &Poly) -> bool {
        self.0
            .iter()
            .all(|(m, c)| other.0.get(m).is_some_and(|o| c <= o))
    }

    /// `Q` with `Q * divisor <= self` for every value of the atoms: the monomials of `self`
    /// that are multiples of `divisor` (an atom or a non-zero constant), divided by it.
    fn quotient(&self, divisor: &Divisor) -> Poly {
        let mut out = Poly::default();
        for (m, &c) in &self.0 {
            match *divisor {
                Divisor::Atom(a) => {
                    if let Some(i) = m.iter().position(|&x| x == a) {
                        let mut rest = m.clone();
                        rest.remove(i);
                        out.0.insert(rest, c);
                    }
                }
                Divisor::Const(k) => {
                    if c / k > 0 {
                        out.0.insert(m.clone(), c / k);
                    }
                }
            }
        }
        out
    }
}

/// What a multiplier `B` of the mixed-radix rule is exactly.
enum Divisor {
    Atom(Atom),
    Const(u128),
}

/// A term's exact value as a polynomial, when it has only literals, atoms, `+` and `*`.
fn term_poly(t: &Term, kernel: &Kernel) -> Option<Poly> {
    match t {
        Term::Const(c) => Some(Poly::constant(u128::from(*c))),
        Term::Param(i) => unsigned_param(kernel, *i).then(|| Poly::atom(Atom::Param(*i))),
        Term::Len(i) => Some(Poly::atom(Atom::Len(*i))),
        Term::Bin(TermOp::Add, a, b) => term_poly(a, kernel)?.add(&term_poly(b, kernel)?),
        Term::Bin(TermOp::Mul, a, b) => term_poly(a, kernel)?.mul(&term_poly(b, kernel)?),
        Term::Bin(TermOp::Sub | TermOp::Div, ..) => None,
    }
}

fn unsigned_param(kernel: &Kernel, i: u32) -> bool {
    matches!(
        kernel.params.get(i as usize).map(|p| p.kind),
        Some(ParamKind::Scalar(ty)) if ty.is_unsigned_int()
    )
}

/// An atom alone as a term, when `t` is one.
fn term_atom(t: &Term) -> Option<Atom> {
    match t {
        Term::Param(i) => Some(Atom::Param(*i)),
        Term::Len(i) => Some(Atom::Len(*i)),
        _ => None,
    }
}

/// `greater >= lesser + extra` holds in every launch: the lower bound it gives an atom.
fn lower_bound(
    kernel: &Kernel,
    greater: &Term,
    lesser: &Term,
    extra: u128,
) -> Option<(Atom, Poly)> {
    // `a - b >= R` (checked, so `a >= b`) is `a >= R + b`.
    if let Term::Bin(TermOp::Sub, a, b) = greater {
        let moved = Term::Bin(TermOp::Add, Box::new(lesser.clone()), b.clone());
        return lower_bound(kernel, a, &moved, extra);
    }
    let atom = term_atom(greater)?;
    if let Atom::Param(i) = atom
        && !unsigned_param(kernel, i)
    {
        return None;
    }
    Some((
        atom,
        term_poly(lesser, kernel)?.add(&Poly::constant(extra))?,
    ))
}

/// The lower bounds the launch requirements give the launch's atoms.
pub(crate) struct Relations {
    lower: Vec<(Atom, Poly)>,
}

impl Relations {
    /// What `kernel`'s requirements say; nothing for a kernel without any.
    pub(crate) fn new(kernel: &Kernel) -> Self {
        let mut lower = Vec::new();
        for Requirement {
            left, op, right, ..
        } in &kernel.requires
        {
            let mut add = |g: &Term, l: &Term, extra: u128| {
                if let Some(b) = lower_bound(kernel, g, l, extra) {
                    lower.push(b);
                }
            };
            match op {
                CmpOp::Ge => add(left, right, 0),
                CmpOp::Gt => add(left, right, 1),
                CmpOp::Le => add(right, left, 0),
                CmpOp::Lt => add(right, left, 1),
                CmpOp::Eq => {
                    add(left, right, 0);
                    add(right, left, 0);
                }
                CmpOp::Ne => {}
            }
        }
        Self { lower }
    }

    /// Whether there is nothing to use.
    pub(crate) fn is_empty(&self) -> bool {
        self.lower.is_empty()
    }

    /// The value of `l op r` when the requirements decide it (`v < len` proved: true).
    pub(crate) fn decide(
        &self,
        ranges: &Ranges<'_>,
        op: CmpOp,
        l: Value,
        r: Value,
    ) -> Option<bool> {
        let (v, len, proves) = match op {
            CmpOp::Lt => (l, r, true),
            CmpOp::Ge => (l, r, false),
            CmpOp::Gt => (r, l, true),
            CmpOp::Le => (r, l, false),
            _ => return None,
        };
        let defs = ranges.defs;
        if !defs.ty(v).is_unsigned_int() || defs.ty(v) != defs.ty(len) {
            return None;
        }
        let atom = atom_of(defs, len)?;
        let prover = Prover { ranges };
        self.lower
            .iter()
            .filter(|(a, _)| *a == atom)
            .any(|(_, bound)| prover.below(v, bound, 0))
            .then_some(proves)
    }
}

/// The atom `v` is exactly: an unsigned scalar parameter (or its zero extension) or a
/// slice's length.
fn atom_of(defs: &Defs, v: Value) -> Option<Atom> {
    match *defs.op(v)? {
        Op::Param(i) if defs.ty(v).is_unsigned_int() => Some(Atom::Param(i)),
        Op::SliceLen(i) => Some(Atom::Len(i)),
        Op::Cast { value, .. } if zero_extension(defs, v, value) => atom_of(defs, value),
        _ => None,
    }
}

/// Whether `v = value as T` reads the same number (unsigned to a wider unsigned type).
fn zero_extension(defs: &Defs, v: Value, value: Value) -> bool {
    let (from, to) = (defs.ty(value), defs.ty(v));
    from.is_unsigned_int() && to.is_unsigned_int() && from.bits() <= to.bits()
}

/// The exact value of `b` as a polynomial, or one at least its value: atoms, constants,
/// and `U64` wrapping sums and products of those (a wrapped result is smaller than the
/// exact one).
fn upper_poly(defs: &Defs, b: Value, depth: u32) -> Option<Poly> {
    if depth > 8 {
        return None;
    }
    if let Some(a) = atom_of(defs, b) {
        return Some(Poly::atom(a));
    }
    if !defs.ty(b).is_unsigned_int() {
        return None;
    }
    match *defs.op(b)? {
        Op::Const(c) => Some(Poly::constant(u128::from(c.bits))),
        Op::Binary(BinaryOp::Add, x, y) => {
            upper_poly(defs, x, depth + 1)?.add(&upper_poly(defs, y, depth + 1)?)
        }
        Op::Binary(BinaryOp::Mul, x, y) => {
            upper_poly(defs, x, depth + 1)?.mul(&upper_poly(defs, y, depth + 1)?)
        }
        _ => None,
    }
}

struct Prover<'r, 'a> {
    ranges: &'r Ranges<'a>,
}

impl Prover<'_, '_> {
    fn defs(&self) -> &Defs {
        self.ranges.defs
    }

    fn facts(&self) -> &Facts {
        self.ranges.facts
    }

    /// Whether `v < goal` (unsigned) is proved, given that `goal`'s value is below `2^64`.
    fn below(&self, v: Value, goal: &Poly, depth: u32) -> bool {
        if depth > 8 || goal.0.is_empty() {
            return false;
        }
        if let Some((_, hi)) = self.ranges.of(v)
            && u128::from(hi) < goal.constant_term()
        {
            return true;
        }
        for &(b, strict) in self.facts().below(v) {
            let bound = upper_poly(self.defs(), b, 0)
                .and_then(|p| p.add(&Poly::constant(u128::from(!strict))));
            if bound.is_some_and(|p| p.dominated_by(goal)) {
                return true;
            }
        }
        let defs = self.defs();
        match defs.op(v) {
            Some(&Op::Cast { value, .. }) if zero_extension(defs, v, value) => {
                self.below(value, goal, depth + 1)
            }
            Some(&Op::Binary(BinaryOp::Add, x, y)) if defs.ty(v) == ScalarType::U64 => {
                self.mixed_radix(x, y, goal, depth) || self.mixed_radix(y, x, goal, depth)
            }
            _ => false,
        }
    }

    /// `product + c < goal` with `product = q * B` (either order): see the module docs.
    fn mixed_radix(&self, product: Value, c: Value, goal: &Poly, depth: u32) -> bool {
        let defs = self.defs();
        let Some(&Op::Binary(BinaryOp::Mul, x, y)) = defs.op(product) else {
            return false;
        };
        if defs.ty(product) != ScalarType::U64 {
            return false;
        }
        [(x, y), (y, x)].into_iter().any(|(q, b)| {
            let divisor = match (atom_of(defs, b), defs.konst(b)) {
                (Some(a), _) => Divisor::Atom(a),
                (None, Some(k)) if k > 0 => Divisor::Const(u128::from(k)),
                _ => return false,
            };
            let b_poly = match divisor {
                Divisor::Atom(a) => Poly::atom(a),
                Divisor::Const(k) => Poly::constant(k),
            };
            let q_goal = goal.quotient(&divisor);
            self.below(c, &b_poly, depth + 1) && self.below(q, &q_goal, depth + 1)
        })
    }
}
