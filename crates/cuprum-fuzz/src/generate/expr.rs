//! Expressions: one new value of a given type from the values in scope, by every operation
//! the IR defines bit for bit on that type, and the warp composites (reductions, scans,
//! broadcasts) built from shuffles.

use cuprum_ir::{BinaryOp, CmpOp, ScalarType, ShuffleMode, UnaryOp, VoteMode};
use rand::Rng;
use rand::seq::IndexedRandom;

use super::{Gen, Level};
use crate::program::{Id, Node, Place};

use ScalarType as S;

const INT_BINARY: [BinaryOp; 8] = [
    BinaryOp::Add,
    BinaryOp::Sub,
    BinaryOp::Mul,
    BinaryOp::And,
    BinaryOp::Or,
    BinaryOp::Xor,
    BinaryOp::Min,
    BinaryOp::Max,
];

const FLOAT_BINARY: [BinaryOp; 5] = [
    BinaryOp::Add,
    BinaryOp::Sub,
    BinaryOp::Mul,
    BinaryOp::Div,
    BinaryOp::Rem,
];

/// The float functions whose results the IR specifies exactly (the transcendental ones are
/// approximate on the GPU).
const FLOAT_UNARY: [UnaryOp; 7] = [
    UnaryOp::Neg,
    UnaryOp::Abs,
    UnaryOp::Sqrt,
    UnaryOp::Floor,
    UnaryOp::Ceil,
    UnaryOp::Round,
    UnaryOp::Trunc,
];

const COMPARISONS: [CmpOp; 6] = [
    CmpOp::Eq,
    CmpOp::Ne,
    CmpOp::Lt,
    CmpOp::Le,
    CmpOp::Gt,
    CmpOp::Ge,
];

/// The integer type of the same size as a float type (for bitcasts).
fn same_size_int(ty: ScalarType, signed: bool) -> ScalarType {
    match (ty.size_bytes(), signed) {
        (1, false) => S::U8,
        (1, true) => S::I8,
        (2, false) => S::U16,
        (2, true) => S::I16,
        (4, false) => S::U32,
        (4, true) => S::I32,
        (_, false) => S::U64,
        (_, true) => S::I64,
    }
}

impl Gen {
    fn choose<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.rng.random_range(0..items.len())]
    }

    /// `op(a, b)` on floats, with `+ 0.0` after `Min`/`Max` (the sign of their zero result
    /// is not specified when the operands are `+0` and `-0`).
    pub(super) fn float_binary(&mut self, op: BinaryOp, a: Id, b: Id, level: Level) -> Id {
        let ty = self.ty_of(a);
        if matches!(op, BinaryOp::Min | BinaryOp::Max) {
            let m = self.def_hidden(Node::Binary(op, a, b), ty);
            let zero = self.konst(ty, 0);
            return self.def(Node::Binary(BinaryOp::Add, m, zero), ty, level);
        }
        self.def(Node::Binary(op, a, b), ty, level)
    }

    /// A division or remainder whose divisor is made safe: never zero, never `-1` under a
    /// signed `MIN`.
    fn safe_division(&mut self, ty: ScalarType) -> Id {
        let op = if self.chance(0.5) {
            BinaryOp::Div
        } else {
            BinaryOp::Rem
        };
        let a = self.pick(ty, Level::Thread);
        let d = self.pick(ty, Level::Thread);
        let zero = self.konst(ty, 0);
        let one = self.konst(ty, 1);
        let is_zero = self.def_hidden(Node::Compare(CmpOp::Eq, d, zero), S::Bool);
        let d = self.def_hidden(Node::Select(is_zero, one, d), ty);
        let d = if ty.is_signed_int() {
            let min = self.konst(ty, 1u64 << (ty.bits() - 1));
            let minus_one = self.konst(ty, u64::MAX);
            let a_min = self.def_hidden(Node::Compare(CmpOp::Eq, a, min), S::Bool);
            let d_m1 = self.def_hidden(Node::Compare(CmpOp::Eq, d, minus_one), S::Bool);
            let both = self.def_hidden(Node::Binary(BinaryOp::And, a_min, d_m1), S::Bool);
            self.def_hidden(Node::Select(both, one, d), ty)
        } else {
            d
        };
        let l = self.lv(&[a, d]);
        self.def(Node::Binary(op, a, d), ty, l)
    }

    fn shuffle(&mut self, ty: ScalarType) -> Id {
        let v = self.pick(ty, Level::Thread);
        let mode = self.choose(&[
            ShuffleMode::Idx,
            ShuffleMode::Up,
            ShuffleMode::Down,
            ShuffleMode::Xor,
        ]);
        let lane = if self.chance(0.5) {
            let n = self.rng.random_range(0..40);
            self.konst(S::U32, n)
        } else {
            self.pick(S::U32, Level::Thread)
        };
        // From one lane for the whole warp: as uniform as the warp.
        let level = if mode == ShuffleMode::Idx && self.lv(&[lane]) <= Level::Warp {
            Level::Warp
        } else {
            Level::Thread
        };
        self.def(Node::Shuffle(mode, v, lane), ty, level)
    }

    fn votes_ok(&self) -> bool {
        self.ctx() <= Level::Warp && (!self.exited || self.cfg.votes_after_return)
    }

    /// One new value of type `ty` (offered to later statements).
    pub(super) fn expr(&mut self, ty: ScalarType) -> Id {
        for _ in 0..8 {
            if let Some(v) = self.try_expr(ty) {
                return v;
            }
        }
        // Always possible: a select.
        let c = self.cond(Level::Thread);
        let (a, b) = (self.pick(ty, Level::Thread), self.pick(ty, Level::Thread));
        let l = self.lv(&[c, a, b]);
        self.def(Node::Select(c, a, b), ty, l)
    }

    fn try_expr(&mut self, ty: ScalarType) -> Option<Id> {
        let t = Level::Thread;
        match self.rng.random_range(0..20) {
            0 => {
                let c = self.cond(t);
                let (a, b) = (self.pick(ty, t), self.pick(ty, t));
                let l = self.lv(&[c, a, b]);
                Some(self.def(Node::Select(c, a, b), ty, l))
            }
            1 | 2 if ty != S::Bool => {
                let from = self.ty();
                let v = self.pick(from, t);
                Some(self.cast(v, ty))
            }
            3 => {
                let inputs: Vec<(u32, u32)> = self
                    .inputs
                    .iter()
                    .filter(|i| i.1 == ty)
                    .map(|i| (i.0, i.2))
                    .collect();
                let &(param, len) = inputs.choose(&mut self.rng)?;
                let max = self.choose(&[Level::Block, Level::Warp, Level::Thread, t]);
                let index = self.index(len, max);
                if self.chance(0.3) {
                    self.push(crate::program::Stmt::Check(crate::program::Check::Bounds {
                        param,
                        index,
                    }));
                }
                let l = self.lv(&[index]);
                Some(self.def(Node::Load(Place::Buffer { param, index }), ty, l))
            }
            4 if self.warp_ok() => Some(self.shuffle(ty)),
            5 => {
                let at = self
                    .exchanges
                    .iter()
                    .position(|e| e.ty == ty && e.written)?;
                Some(self.shared_read(at))
            }
            6 => {
                let (array, elem, len) = self.local?;
                if elem != ty {
                    return None;
                }
                let index = self.index(len, t);
                Some(self.def(Node::Load(Place::Local { array, index }), ty, t))
            }
            7 => {
                let outputs: Vec<u32> = self
                    .outputs
                    .iter()
                    .filter(|o| o.1 == ty)
                    .map(|o| o.0)
                    .collect();
                let param = *outputs.choose(&mut self.rng)?;
                let index = self.gid;
                Some(self.def(Node::Load(Place::Buffer { param, index }), ty, t))
            }
            8 if ty != S::Bool => {
                // Same bits, another type: a float's NaNs made canonical first.
                let from = if ty.is_float() {
                    same_size_int(ty, self.chance(0.5))
                } else {
                    let mut options = vec![same_size_int(ty, !ty.is_signed_int())];
                    match ty.size_bytes() {
                        2 => options.extend([S::F16, S::BF16]),
                        4 => options.push(S::F32),
                        8 => options.push(S::F64),
                        _ => {}
                    }
                    self.choose(&options)
                };
                let v = self.pick(from, t);
                let v = self.canonical(v);
                let l = self.lv(&[v]);
                Some(self.def(Node::Bitcast(v, ty), ty, l))
            }
            _ if ty == S::Bool => Some(self.bool_expr()),
            _ if ty.is_float() => Some(self.float_expr(ty)),
            _ => Some(self.int_expr(ty)),
        }
    }

    fn int_expr(&mut self, ty: ScalarType) -> Id {
        let t = Level::Thread;
        match self.rng.random_range(0..10) {
            0..=4 => {
                let op = self.choose(&INT_BINARY);
                let (a, b) = (self.pick(ty, t), self.pick(ty, t));
                let l = self.lv(&[a, b]);
                self.def(Node::Binary(op, a, b), ty, l)
            }
            5 => {
                let op = self.choose(&[BinaryOp::Shl, BinaryOp::Shr]);
                let a = self.pick(ty, t);
                let s = self.pick(S::U32, t);
                let l = self.lv(&[a, s]);
                self.def(Node::Binary(op, a, s), ty, l)
            }
            6 => self.safe_division(ty),
            7 => {
                let op = self.choose(&[
                    UnaryOp::Neg,
                    UnaryOp::Not,
                    UnaryOp::CountOnes,
                    UnaryOp::LeadingZeros,
                    UnaryOp::TrailingZeros,
                ]);
                let a = self.pick(ty, t);
                let l = self.lv(&[a]);
                self.def(Node::Unary(op, a), ty, l)
            }
            8 if ty == S::U32 && self.votes_ok() => {
                let p = self.pick(S::Bool, t);
                self.def(Node::Vote(VoteMode::Ballot, p), S::U32, Level::Warp)
            }
            _ => {
                // The high half of the product exists for 32- and 64-bit integers only.
                let op = if ty.bits() >= 32 && self.chance(0.1) {
                    BinaryOp::MulHigh
                } else {
                    self.choose(&INT_BINARY)
                };
                let (a, b) = (self.pick(ty, t), self.pick(ty, t));
                let l = self.lv(&[a, b]);
                self.def(Node::Binary(op, a, b), ty, l)
            }
        }
    }

    fn float_expr(&mut self, ty: ScalarType) -> Id {
        let t = Level::Thread;
        match self.rng.random_range(0..10) {
            0..=3 => {
                let op = self.choose(&FLOAT_BINARY);
                let (a, b) = (self.pick(ty, t), self.pick(ty, t));
                let l = self.lv(&[a, b]);
                self.def(Node::Binary(op, a, b), ty, l)
            }
            4 => {
                let op = self.choose(&[BinaryOp::Min, BinaryOp::Max]);
                let (a, b) = (self.pick(ty, t), self.pick(ty, t));
                let l = self.lv(&[a, b]);
                self.float_binary(op, a, b, l)
            }
            5..=7 => {
                let op = self.choose(&FLOAT_UNARY);
                let a = self.pick(ty, t);
                let l = self.lv(&[a]);
                self.def(Node::Unary(op, a), ty, l)
            }
            _ => {
                let (a, b, c) = (self.pick(ty, t), self.pick(ty, t), self.pick(ty, t));
                let l = self.lv(&[a, b, c]);
                self.def(Node::MulAdd(a, b, c), ty, l)
            }
        }
    }

    fn bool_expr(&mut self) -> Id {
        let t = Level::Thread;
        match self.rng.random_range(0..10) {
            0..=4 => {
                let ty = self.ty();
                let op = self.choose(&COMPARISONS);
                let (a, b) = (self.pick(ty, t), self.pick(ty, t));
                let l = self.lv(&[a, b]);
                self.def(Node::Compare(op, a, b), S::Bool, l)
            }
            5..=6 => {
                let op = self.choose(&[BinaryOp::And, BinaryOp::Or, BinaryOp::Xor]);
                let (a, b) = (self.pick(S::Bool, t), self.pick(S::Bool, t));
                let l = self.lv(&[a, b]);
                self.def(Node::Binary(op, a, b), S::Bool, l)
            }
            7 => {
                let a = self.pick(S::Bool, t);
                let l = self.lv(&[a]);
                self.def(Node::Unary(UnaryOp::Not, a), S::Bool, l)
            }
            _ if self.votes_ok() => {
                let mode = self.choose(&[VoteMode::All, VoteMode::Any]);
                let p = self.pick(S::Bool, t);
                self.def(Node::Vote(mode, p), S::Bool, Level::Warp)
            }
            _ => {
                let ty = self.ty();
                let (a, b) = (self.pick(ty, t), self.pick(ty, t));
                let l = self.lv(&[a, b]);
                self.def(Node::Compare(CmpOp::Lt, a, b), S::Bool, l)
            }
        }
    }

    /// A reduction, scan or broadcast over the warp, from shuffles. Only where every lane of
    /// the warp is active.
    pub(super) fn warp_composite(&mut self) {
        let ty = self.ty();
        let ty = if ty == S::Bool { S::U32 } else { ty };
        // Commutative operations only: in a butterfly, lane `l` computes `op(x_l, x_m)` and
        // its partner `op(x_m, x_l)`, which must be the same for the result to be uniform.
        let op = if ty.is_float() {
            self.choose(&[BinaryOp::Add, BinaryOp::Min, BinaryOp::Max, BinaryOp::Mul])
        } else {
            self.choose(&[
                BinaryOp::Add,
                BinaryOp::Mul,
                BinaryOp::And,
                BinaryOp::Or,
                BinaryOp::Xor,
                BinaryOp::Min,
                BinaryOp::Max,
            ])
        };
        let mut x = self.pick(ty, Level::Thread);
        let step = |g: &mut Self, x: Id, y: Id| {
            if ty.is_float() {
                let r = g.float_binary(op, x, y, Level::Thread);
                g.pool.pop();
                r
            } else {
                g.def_hidden(Node::Binary(op, x, y), ty)
            }
        };
        let shfl = |g: &mut Self, mode: ShuffleMode, x: Id, by: u32| {
            let c = g.konst(S::U32, u64::from(by));
            g.def_hidden(Node::Shuffle(mode, x, c), ty)
        };
        // Integer all-reductions leave every lane the same value; float ones too in fact,
        // but their zeros' signs and NaNs need not agree, so they stay per thread.
        let all_level = if ty.is_float() {
            Level::Thread
        } else {
            Level::Warp
        };
        match self.rng.random_range(0..4) {
            0 => {
                // Butterfly: every lane ends with the reduction of the warp.
                for by in [16, 8, 4, 2, 1] {
                    let y = shfl(self, ShuffleMode::Xor, x, by);
                    x = step(self, x, y);
                }
                self.pool.push(super::Avail {
                    id: x,
                    ty,
                    level: all_level,
                });
            }
            1 => {
                // A tree down to lane 0, then lane 0's result to everyone.
                for by in [16, 8, 4, 2, 1] {
                    let y = shfl(self, ShuffleMode::Down, x, by);
                    x = step(self, x, y);
                }
                let zero = self.konst(S::U32, 0);
                let r = self.def_hidden(Node::Shuffle(ShuffleMode::Idx, x, zero), ty);
                self.pool.push(super::Avail {
                    id: r,
                    ty,
                    level: all_level,
                });
            }
            2 => {
                // Inclusive scan: lanes below the distance keep their value.
                for by in [1, 2, 4, 8, 16] {
                    let y = shfl(self, ShuffleMode::Up, x, by);
                    let s = step(self, x, y);
                    let c = self.konst(S::U32, u64::from(by));
                    let lane = self.lane;
                    let high = self.def_hidden(Node::Compare(CmpOp::Ge, lane, c), S::Bool);
                    x = self.def_hidden(Node::Select(high, s, x), ty);
                }
                self.pool.push(super::Avail {
                    id: x,
                    ty,
                    level: Level::Thread,
                });
            }
            _ => {
                // Reductions within segments of 2, 4, 8 or 16 lanes.
                let width = self.choose(&[2u32, 4, 8, 16]);
                let mut by = width / 2;
                while by >= 1 {
                    let y = shfl(self, ShuffleMode::Xor, x, by);
                    x = step(self, x, y);
                    by /= 2;
                }
                self.pool.push(super::Avail {
                    id: x,
                    ty,
                    level: Level::Thread,
                });
            }
        }
    }
}
