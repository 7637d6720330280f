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
//! Addresses whose distance is not a constant but a constant multiple of one value get the
//! same treatment from the latest such address: a transpose reads `x[(y0 + 8k) * w + x0]`
//! for `k = 0..4`, whose addresses are `4 * ((y0 + 8k) * w + x0)` apart from the slice's
//! base, `32 * w` from each other; each was a 64-bit multiply and three adds, and becomes
//! one add of `step = w * 32` (defined once per scope). For that the pass reads each address
//! as a polynomial over the values it does not look into (its *atoms*), with coefficients
//! in the type's wrapping arithmetic, which `+`, `-`, `*` and `<<` by a constant keep exact
//! (the integers modulo `2^w` are a ring); a zero extension of `a + c` (`c` a constant) is
//! read as the extension of `a` plus `c` where `a`'s range ([`crate::facts::Ranges`], with
//! no facts, so true everywhere) shows that the narrow sum cannot wrap. When `P_v - P_b` is
//! `c * a` for one atom `a` that is a value of `v`'s type (it is one of the values `v` is
//! computed from, so it dominates `v`), `v = b + a * c` exactly.
//!
//! What this must not do: rebase onto a value of a branch or loop body that the address is
//! not inside (the scopes are closed on the way out), or across types.

use std::collections::{BTreeMap, HashMap, HashSet};

use cuprum_ir::{
    Addresses, Arena, BinaryOp, Block, Constant, Kernel, Op, ScalarType, Stmt, Value, ValueDef,
};

use crate::analyses::Analyses;
use crate::facts::{Defs, Facts, Ranges};
use crate::ir::{all_ones, visit_stmts};

/// How many of the latest addresses in the open scopes a new one is compared with for a
/// distance that is a multiple of one value.
const RECENT: usize = 8;

/// The most monomials a polynomial keeps (addresses have a handful).
const MAX_MONOMIALS: usize = 16;

/// Runs the pass; true if the kernel changed.
pub fn run(kernel: &mut Kernel) -> bool {
    run_with(kernel, &mut Analyses::new())
}

/// [`run`], taking the kernel's address analysis from `analyses` (and returning it there
/// when nothing changed).
pub fn run_with(kernel: &mut Kernel, analyses: &mut Analyses) -> bool {
    let addresses = analyses.take_addresses(kernel);
    let defs = analyses.take_defs(kernel);
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
        defs,
        polys: HashMap::new(),
        used,
        first: HashMap::new(),
        log: Vec::new(),
        recent: Vec::new(),
        steps: Vec::new(),
        changed: false,
    };
    let mut body = std::mem::take(&mut kernel.body);
    w.block(&mut body, &mut kernel.values);
    kernel.body = body;
    if !w.changed {
        analyses.keep_addresses(w.addresses);
        analyses.keep_defs(w.defs);
    }
    w.changed
}

/// What a polynomial does not look into: a value, or the zero extension of a value (which
/// the kernel may not have as a value of its own).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Atom {
    Value(Value),
    Zext(Value),
}

/// `sum(coefficient * product of atoms)` modulo `2^w`: monomials (sorted atoms, the empty
/// one the constant) to nonzero coefficients.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Poly {
    terms: BTreeMap<Vec<Atom>, u64>,
    mask: u64,
}

impl Poly {
    fn constant(c: u64, mask: u64) -> Self {
        let mut p = Poly {
            terms: BTreeMap::new(),
            mask,
        };
        p.add_term(Vec::new(), c);
        p
    }

    fn atom(a: Atom, mask: u64) -> Self {
        let mut p = Poly::constant(0, mask);
        p.add_term(vec![a], 1);
        p
    }

    fn add_term(&mut self, monomial: Vec<Atom>, c: u64) {
        let e = self.terms.entry(monomial).or_insert(0);
        *e = e.wrapping_add(c) & self.mask;
        self.terms.retain(|_, c| *c != 0);
    }

    fn plus(&self, other: &Poly, sign: u64) -> Option<Poly> {
        let mut out = self.clone();
        for (m, &c) in &other.terms {
            out.add_term(m.clone(), c.wrapping_mul(sign));
        }
        (out.terms.len() <= MAX_MONOMIALS).then_some(out)
    }

    fn times(&self, other: &Poly) -> Option<Poly> {
        let mut out = Poly::constant(0, self.mask);
        for (ma, &ca) in &self.terms {
            for (mb, &cb) in &other.terms {
                let mut m: Vec<Atom> = ma.iter().chain(mb).copied().collect();
                if m.len() > 4 {
                    return None;
                }
                m.sort();
                out.add_term(m, ca.wrapping_mul(cb));
                if out.terms.len() > MAX_MONOMIALS {
                    return None;
                }
            }
        }
        Some(out)
    }

    /// `c * a` when the polynomial is one atom times a constant.
    fn single_atom(&self) -> Option<(Atom, u64)> {
        match self.terms.iter().collect::<Vec<_>>()[..] {
            [(m, &c)] if m.len() == 1 => Some((m[0], c)),
            _ => None,
        }
    }
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
    defs: Defs,
    /// Each address's polynomial, once read (`None`: too large).
    polys: HashMap<Value, Option<Poly>>,
    /// The addresses of the open scopes with their polynomials, latest last.
    /// Recent addresses with their polynomials, and whether each was itself redefined by a
    /// step (such an address is never a base: steps stay one add deep, so the loads after
    /// them do not wait on a chain of dependent adds).
    recent: Vec<(Value, Poly, bool)>,
    /// The steps `a * c` defined in the open scopes, latest last.
    steps: Vec<((Value, u64), Value)>,
    changed: bool,
}

impl Rebase {
    fn block(&mut self, block: &mut Block, values: &mut Arena<ValueDef>) {
        let mark = self.log.len();
        let (recent, steps) = (self.recent.len(), self.steps.len());
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
        self.recent.truncate(recent);
        self.steps.truncate(steps);
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
            self.by_step(value, ty, op, values, out);
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

    /// Redefines `value` as `b + a * c` from the latest recent address `b` whose polynomial
    /// differs from its own by `c * a`, `a` a value of its type and `b` not itself stepped;
    /// records it as recent.
    fn by_step(
        &mut self,
        value: Value,
        ty: ScalarType,
        op: &mut Op,
        values: &mut Arena<ValueDef>,
        out: &mut Vec<Stmt>,
    ) {
        let Some(p) = self.poly(value, 0) else {
            return;
        };
        let root = self.addresses.root(value);
        let read_only = self.addresses.is_read_only(value);
        let found = self
            .recent
            .iter()
            .rev()
            .take(RECENT)
            .find_map(|(b, pb, stepped)| {
                if *stepped {
                    return None;
                }
                // Same type, and the same slice or array as far as the address analysis tells
                // (what the PTX writer reads of an address, `ld.global.nc` included, stays true).
                if self.defs.ty(*b) != ty
                    || self.addresses.root(*b) != root
                    || self.addresses.is_read_only(*b) != read_only
                {
                    return None;
                }
                match p.plus(pb, u64::MAX)?.single_atom()? {
                    // `a` is one of the values `value` or `b` is computed from, never `value`
                    // itself (an address read as its own atom).
                    (Atom::Value(a), c) if a != value && self.defs.ty(a) == ty => Some((*b, a, c)),
                    _ => None,
                }
            });
        self.recent.push((value, p, found.is_some()));
        let Some((base, a, c)) = found else {
            return;
        };
        let step = match self.steps.iter().rev().find(|(key, _)| *key == (a, c)) {
            Some(&(_, step)) => step,
            None => {
                let k = values.append(ValueDef { ty });
                out.push(Stmt::Def {
                    value: k,
                    op: Op::Const(Constant::new(ty, c)),
                });
                let step = values.append(ValueDef { ty });
                out.push(Stmt::Def {
                    value: step,
                    op: Op::Binary(BinaryOp::Mul, a, k),
                });
                self.steps.push(((a, c), step));
                step
            }
        };
        *op = Op::Binary(BinaryOp::Add, base, step);
        self.changed = true;
    }

    /// `v` as a polynomial over its atoms in its type's wrapping arithmetic (see the module
    /// docs), `None` when too large.
    fn poly(&mut self, v: Value, depth: u32) -> Option<Poly> {
        if let Some(p) = self.polys.get(&v) {
            return p.clone();
        }
        let p = self.read_poly(v, depth);
        self.polys.insert(v, p.clone());
        p
    }

    fn read_poly(&mut self, v: Value, depth: u32) -> Option<Poly> {
        let ty = self.defs.ty(v);
        if !matches!(ty, ScalarType::U32 | ScalarType::U64) {
            return None;
        }
        let mask = all_ones(ty);
        let atom = Poly::atom(Atom::Value(v), mask);
        if depth > 12 {
            return Some(atom);
        }
        let Some(op) = self.defs.op(v).cloned() else {
            return Some(atom);
        };
        let same = |this: &Self, x: Value| this.defs.ty(x) == ty;
        Some(match op {
            Op::Const(c) => Poly::constant(c.bits, mask),
            Op::Binary(b @ (BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul), x, y)
                if same(self, x) && same(self, y) =>
            {
                let (px, py) = (self.poly(x, depth + 1)?, self.poly(y, depth + 1)?);
                match b {
                    BinaryOp::Add => px.plus(&py, 1)?,
                    BinaryOp::Sub => px.plus(&py, u64::MAX)?,
                    _ => px.times(&py)?,
                }
            }
            Op::Binary(BinaryOp::Shl, x, y) if same(self, x) => match self.defs.konst(y) {
                Some(s) if s < u64::from(ty.bits()) => self
                    .poly(x, depth + 1)?
                    .times(&Poly::constant(1 << s, mask))?,
                _ => atom,
            },
            Op::Cast { value: x, .. }
                if self.defs.ty(x) == ScalarType::U32 && ty == ScalarType::U64 =>
            {
                self.zext(x, mask)
            }
            _ => atom,
        })
    }

    /// The zero extension of the `U32` value `x` to `U64`: of `a + c` (`c` a constant), the
    /// extension of `a` plus `c` where `a`'s range shows the sum does not wrap.
    fn zext(&self, x: Value, mask: u64) -> Poly {
        let ranges = Ranges {
            defs: &self.defs,
            facts: &Facts::default(),
            locals: &[],
        };
        if let Some(Op::Binary(BinaryOp::Add, a, c)) = self.defs.op(x)
            && let Some(c) = self.defs.konst(*c)
            && let Some((_, hi)) = ranges.of(*a)
            && hi
                .checked_add(c)
                .is_some_and(|top| top <= u64::from(u32::MAX))
        {
            let mut p = Poly::atom(Atom::Zext(*a), mask);
            p.add_term(Vec::new(), c);
            return p;
        }
        Poly::atom(Atom::Zext(x), mask)
    }
}
