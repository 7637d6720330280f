//! Which global loads may use the non-coherent read-only path (`ld.global.nc`).
//!
//! A `&[T]` parameter ([`SliceAccess::ReadOnly`]) is not written by anyone during the launch,
//! so loads from it may go through the read-only data cache. The PTX writer only knows an
//! address is inside such a slice when it can trace the address back to that slice's base;
//! this module does that tracing, conservatively: an address is "rooted" in slice `i` when it
//! is `SliceBase(i)` plus or minus integers that are provably not addresses themselves. Values
//! flowing through variables are followed with a small fixpoint over the whole body, so loop
//! counters kept in variables do not defeat the analysis. Anything unclear is `Unknown` and
//! gets a plain `ld.global`. This is an optimisation only: getting `Unknown` is always safe.

use cuprum_ir::{BinaryOp, Block, Kernel, Op, ParamKind, SliceAccess, Stmt};

/// What a value is, as far as addresses go. A small lattice: `Unset` below everything,
/// `Unknown` above everything.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Origin {
    /// Not computed yet (a variable not written so far in the fixpoint).
    Unset,
    /// An integer derived from no slice base.
    Int,
    /// `SliceBase(i)` plus or minus integers.
    Base(u32),
    Unknown,
}

impl Origin {
    fn join(self, other: Origin) -> Origin {
        match (self, other) {
            (Origin::Unset, x) | (x, Origin::Unset) => x,
            (a, b) if a == b => a,
            _ => Origin::Unknown,
        }
    }
}

struct Tracer {
    values: Vec<Origin>,
    vars: Vec<Origin>,
    changed: bool,
}

/// For every value of `kernel`: whether it is an address inside a read-only slice parameter.
pub(crate) fn read_only_addresses(kernel: &Kernel) -> Vec<bool> {
    let any_read_only = kernel.params.iter().any(|p| {
        matches!(
            p.kind,
            ParamKind::Slice {
                access: SliceAccess::ReadOnly,
                ..
            }
        )
    });
    if !any_read_only {
        return vec![false; kernel.values.len()];
    }
    let mut t = Tracer {
        values: vec![Origin::Unset; kernel.values.len()],
        vars: vec![Origin::Unset; kernel.vars.len()],
        changed: true,
    };
    // Variables only move up the lattice, so this ends after at most 2 * vars + 1 rounds.
    let mut rounds = 0;
    while t.changed && rounds <= 2 * kernel.vars.len() + 1 {
        t.changed = false;
        t.block(&kernel.body);
        rounds += 1;
    }
    if t.changed {
        return vec![false; kernel.values.len()];
    }
    t.values
        .iter()
        .map(|o| match *o {
            Origin::Base(i) => matches!(
                kernel.params.get(i as usize).map(|p| p.kind),
                Some(ParamKind::Slice {
                    access: SliceAccess::ReadOnly,
                    ..
                })
            ),
            _ => false,
        })
        .collect()
}

impl Tracer {
    fn get(&self, v: cuprum_ir::Value) -> Origin {
        self.values
            .get(v.index())
            .copied()
            .unwrap_or(Origin::Unknown)
    }

    fn block(&mut self, block: &Block) {
        for stmt in &block.stmts {
            match stmt {
                Stmt::Def { value, op } => {
                    let o = self.op(op);
                    if let Some(slot) = self.values.get_mut(value.index()) {
                        *slot = o;
                    }
                }
                Stmt::WriteVar { var, value } => {
                    let o = self.get(*value);
                    if let Some(slot) = self.vars.get_mut(var.index()) {
                        let joined = slot.join(o);
                        if joined != *slot {
                            *slot = joined;
                            self.changed = true;
                        }
                    }
                }
                // Results of other statements (matrix fragments, vector loads) are data, never
                // trusted as addresses into a slice.
                other => {
                    self.unknown(other.results());
                    for b in other.nested() {
                        self.block(b);
                    }
                }
            }
        }
    }

    fn unknown(&mut self, values: &[cuprum_ir::Value]) {
        for v in values {
            if let Some(slot) = self.values.get_mut(v.index()) {
                *slot = Origin::Unknown;
            }
        }
    }

    fn op(&self, op: &Op) -> Origin {
        use Origin::*;
        let int_only = |os: &[Origin]| {
            if os.contains(&Unset) {
                Unset
            } else if os.iter().all(|o| *o == Int) {
                Int
            } else {
                Unknown
            }
        };
        match op {
            Op::Const(_) | Op::Param(_) | Op::SliceLen(_) | Op::Special(_) => Int,
            Op::SliceBase(i) => Base(*i),
            Op::Binary(b, l, r) => {
                let (l, r) = (self.get(*l), self.get(*r));
                match (b, l, r) {
                    (_, Unset, _) | (_, _, Unset) => Unset,
                    (BinaryOp::Add, Base(i), Int) | (BinaryOp::Add, Int, Base(i)) => Base(i),
                    (BinaryOp::Sub, Base(i), Int) => Base(i),
                    (BinaryOp::Sub, Base(i), Base(j)) if i == j => Int,
                    _ => int_only(&[l, r]),
                }
            }
            Op::Unary(_, v) | Op::Cast { value: v, .. } | Op::Bitcast { value: v, .. } => {
                int_only(&[self.get(*v)])
            }
            Op::Select {
                if_true, if_false, ..
            } => {
                let (t, f) = (self.get(*if_true), self.get(*if_false));
                if t == f { t } else { t.join(f) }
            }
            Op::ReadVar(var) => self.vars.get(var.index()).copied().unwrap_or(Unknown),
            Op::Compare(..) | Op::Vote { .. } => Int,
            Op::SharedAddr(_) | Op::DynSharedAddr | Op::LocalAddr(_) => Int,
            Op::Ternary(_, a, b, c) => int_only(&[self.get(*a), self.get(*b), self.get(*c)]),
            Op::Load { .. } | Op::Atomic { .. } | Op::Shuffle { .. } => Unknown,
        }
    }
}
