//! cuda-oxide's (and CUDA's) spellings of warp operations, in terms of the ones cuprum has.
//!
//! * Typed forms (`shuffle_xor_f32`, `reduce_sum_f64`, ...) name the generic operation with
//!   its type spelled out: the suffix is dropped (rustc has checked the type on the host).
//! * `_sync` forms (`shuffle_sync(mask, ..)`, `ballot_sync(mask, p)`, `redux_sync_add(mask,
//!   v)`) take a member mask first. cuprum's warp operations act on the lanes that execute
//!   them together, and the PTX writer computes that exact mask itself, so a mask is accepted
//!   where it means the same: the full mask `0xFFFF_FFFF` (`u32::MAX`) or `active_mask()`
//!   (called there, or a value it made).
//!   Any other mask names a subset of the lanes taking part, which cuprum cannot express: a
//!   compile error says so.
//! * New operations built from votes and bit counts: `active_mask()` (a ballot of `true`:
//!   the lanes executing together), `popc(p)`, `lanemask_lt/le/eq/ge/gt()`, `elect_sync(mask)`
//!   and `is_elected_sync(mask)` (the lowest lane executing), and the `and`/`or`/`xor`
//!   reductions of `redux_sync`.

use cuprum_ir::{
    BinaryOp, CmpOp, Constant, Dim, Op, ScalarType as S, ShuffleMode, Special, Stmt, UnaryOp,
    Value, VoteMode,
};
use proc_macro2::Span;
use syn::spanned::Spanned;

use super::*;

/// The operations of `redux_sync_*`.
const REDUX: [&str; 8] = [
    "add", "min_u32", "min_i32", "max_u32", "max_i32", "and", "or", "xor",
];
/// The votes with a `_sync` form.
const VOTES: [&str; 3] = ["all", "any", "ballot"];

/// The shuffle a (possibly typed) shuffle name stands for: `shuffle_xor_f32` → `shuffle_xor`.
fn shuffle_base(name: &str) -> Option<&'static str> {
    let base = ["shuffle_xor", "shuffle_down", "shuffle_up", "shuffle"]
        .into_iter()
        .find(|b| name.starts_with(b))?;
    let rest = &name[base.len()..];
    let typed = ["", "_f32", "_f64", "_u32", "_i32", "_u64", "_i64"].contains(&rest);
    typed.then_some(base)
}

/// A warp call after its cuda-oxide spelling was read: cuprum's name and the arguments left
/// once a member mask was checked and dropped.
pub(super) struct WarpCall<'a> {
    pub name: String,
    pub args: Vec<&'a syn::Expr>,
}

impl Lowerer<'_> {
    /// Reads cuda-oxide's spelling of a warp call (see the module docs); other names pass
    /// through unchanged.
    pub(super) fn warp_spelling<'a>(
        &mut self,
        name: &str,
        args: &[&'a syn::Expr],
        span: Span,
    ) -> Result<WarpCall<'a>> {
        let mut args = args.to_vec();
        let mut name = name.to_string();
        if let Some(op) = name.strip_prefix("redux_sync_")
            && REDUX.contains(&op)
        {
            self.member_mask(&name, &args, span)?;
            args.remove(0);
            let op = op.split('_').next().unwrap_or(op);
            name = format!("reduce_{op}");
        } else if let Some(base) = name.strip_suffix("_sync")
            && (VOTES.contains(&base) || shuffle_base(base).is_some())
        {
            self.member_mask(&name, &args, span)?;
            args.remove(0);
            name = base.to_string();
        }
        if let Some(base) = shuffle_base(&name) {
            name = base.to_string();
        }
        if let Some(base) = name
            .strip_suffix("_f32")
            .or_else(|| name.strip_suffix("_f64"))
        {
            match base {
                "reduce_sum" => name = "reduce_add".into(),
                "reduce_max" | "reduce_min" => name = base.into(),
                _ => {}
            }
        }
        Ok(WarpCall { name, args })
    }

    /// Checks that the member mask (the first argument of a `_sync` form) names every lane
    /// taking part: `0xFFFF_FFFF`, `u32::MAX` or `active_mask()`.
    fn member_mask(&mut self, name: &str, args: &[&syn::Expr], span: Span) -> Result<()> {
        let Some(mask) = args.first() else {
            return err(span, format!("`{name}` takes a member mask first"));
        };
        let active = matches!(mask, syn::Expr::Call(c)
            if matches!(&*c.func, syn::Expr::Path(p)
                if p.path.segments.last().is_some_and(|s| s.ident == "active_mask")));
        let full = match self.expr(mask)? {
            Val::Int(v) => v == i128::from(u32::MAX),
            Val::Scalar(v) => {
                self.active_masks.contains(&v)
                    || self
                        .constant_value(v)
                        .is_some_and(|c| c == u64::from(u32::MAX))
            }
            _ => false,
        };
        if active || full {
            return Ok(());
        }
        err(
            mask.span(),
            format!(
                "`{name}`: cuprum's warp operations act on the lanes that execute them \
                 together, with a member mask it computes itself, so the mask must be \
                 `0xFFFF_FFFF` or `warp::active_mask()`; to leave lanes out, branch around \
                 the call (`if lane_in_set {{ .. }}`)"
            ),
        )
    }

    /// The warp operations built from votes and bit counts (see the module docs). `None`
    /// when `name` is not one of them.
    pub(super) fn warp_derived(
        &mut self,
        name: &str,
        args: &[&syn::Expr],
        span: Span,
    ) -> Result<Option<Val>> {
        let lanemask = match name {
            "lanemask_lt" | "lanemask_le" | "lanemask_eq" | "lanemask_ge" | "lanemask_gt" => {
                Some(&name["lanemask_".len()..])
            }
            _ => None,
        };
        if let Some(which) = lanemask {
            if !args.is_empty() {
                return err(span, format!("`{name}` takes no arguments"));
            }
            return Ok(Some(Val::Scalar(self.lane_mask(which, span)?)));
        }
        match (name, args) {
            ("live_lanes_1d", []) => Ok(Some(Val::Scalar(self.live_lanes(span)?))),
            (
                "match_any_sync" | "match_any_i64_sync" | "match_all_sync" | "match_all_i64_sync",
                [_, v],
            ) => {
                self.member_mask(name, args, span)?;
                let wide = name.contains("i64");
                let v = self.expr(v)?;
                let v = self.materialize(v, if wide { S::U64 } else { S::U32 }, span)?;
                Ok(Some(Val::Scalar(if name.starts_with("match_any") {
                    self.match_any(v, span)?
                } else {
                    self.match_all(v, span)?
                })))
            }
            (
                "reduce_sum_f32_partial"
                | "reduce_sum_f64_partial"
                | "reduce_max_f32_partial"
                | "reduce_max_f64_partial"
                | "reduce_min_f32_partial"
                | "reduce_min_f64_partial",
                [v, live],
            ) => {
                let op = match &name[7..10] {
                    "sum" => BinaryOp::Add,
                    "max" => BinaryOp::Max,
                    _ => BinaryOp::Min,
                };
                let ty = if name.contains("f64") { S::F64 } else { S::F32 };
                let v = self.expr(v)?;
                let v = self.materialize(v, ty, span)?;
                let live = self.expr(live)?;
                let live = self.materialize(live, S::U32, span)?;
                Ok(Some(Val::Scalar(self.partial_reduce(op, v, live, span)?)))
            }
            ("active_mask", []) => {
                let lanes = self.active_lanes(span)?;
                self.active_masks.insert(lanes);
                Ok(Some(Val::Scalar(lanes)))
            }
            ("popc", [p]) => {
                let p = self.boolean(p)?;
                let votes = self.def(
                    Op::Vote {
                        mode: VoteMode::Ballot,
                        pred: p,
                    },
                    span,
                )?;
                let n = self.def(Op::Unary(UnaryOp::CountOnes, votes), span)?;
                Ok(Some(Val::Scalar(n)))
            }
            ("elect_sync" | "is_elected_sync", [_]) => {
                self.member_mask(name, args, span)?;
                let lanes = self.active_lanes(span)?;
                let leader = self.def(Op::Unary(UnaryOp::TrailingZeros, lanes), span)?;
                let lane = self.def(Op::Special(Special::LaneId), span)?;
                let elected = self.def(Op::Compare(CmpOp::Eq, lane, leader), span)?;
                Ok(Some(if name == "elect_sync" {
                    Val::Tuple(vec![Val::Scalar(leader), Val::Scalar(elected)])
                } else {
                    Val::Scalar(elected)
                }))
            }
            _ => Ok(None),
        }
    }

    /// `live_lanes_1d()`: the launched lanes of the calling warp in a 1-D block,
    /// `min(32, blockDim.x - 32 * (threadIdx.x / 32))`.
    fn live_lanes(&mut self, span: Span) -> Result<Value> {
        let t = self.def(Op::Special(Special::ThreadIdx(Dim::X)), span)?;
        let bdim = self.def(Op::Special(Special::BlockDim(Dim::X)), span)?;
        let low = self.constant(Constant::new(S::U32, !31u32 as u64));
        let first = self.def(Op::Binary(BinaryOp::And, t, low), span)?;
        let launched = self.def(Op::Binary(BinaryOp::Sub, bdim, first), span)?;
        let warp = self.constant(Constant::new(S::U32, 32));
        self.def(Op::Binary(BinaryOp::Min, launched, warp), span)
    }

    /// `reduce_*_partial(v, live)`: `op` over lanes `0..live` (clamped to `1..=32`) of a warp
    /// whose other lanes were never launched, on every live lane. The span of lanes still
    /// to combine halves each step (its upper part folded onto its lower), five steps in all
    /// (the span only shrinks, and a span of one changes nothing), and every shuffle reads a
    /// lane below `live`; lane 0's total is then broadcast.
    fn partial_reduce(&mut self, op: BinaryOp, v: Value, live: Value, span: Span) -> Result<Value> {
        let u = |this: &mut Self, n: u64| this.constant(Constant::new(S::U32, n));
        let (one, thirty_two) = (u(self, 1), u(self, 32));
        let live = self.def(Op::Binary(BinaryOp::Max, live, one), span)?;
        let live = self.def(Op::Binary(BinaryOp::Min, live, thirty_two), span)?;
        let last = self.def(Op::Binary(BinaryOp::Sub, live, one), span)?;
        let lane = self.def(Op::Special(Special::LaneId), span)?;
        let (mut acc, mut extent) = (v, live);
        for _ in 0..5 {
            let bumped = self.def(Op::Binary(BinaryOp::Add, extent, one), span)?;
            let half = self.def(Op::Binary(BinaryOp::Shr, bumped, one), span)?;
            let source = self.def(Op::Binary(BinaryOp::Add, lane, half), span)?;
            let inside = self.def(Op::Compare(CmpOp::Lt, source, live), span)?;
            let clamped = self.def(
                Op::Select {
                    cond: inside,
                    if_true: source,
                    if_false: last,
                },
                span,
            )?;
            let other = self.def(
                Op::Shuffle {
                    mode: ShuffleMode::Idx,
                    value: acc,
                    lane: clamped,
                },
                span,
            )?;
            let combined = self.def(Op::Binary(op, acc, other), span)?;
            let low = self.def(Op::Compare(CmpOp::Lt, lane, half), span)?;
            let paired = self.def(Op::Compare(CmpOp::Lt, source, extent), span)?;
            let takes = self.def(Op::Binary(BinaryOp::And, low, paired), span)?;
            acc = self.def(
                Op::Select {
                    cond: takes,
                    if_true: combined,
                    if_false: acc,
                },
                span,
            )?;
            extent = half;
        }
        let zero = u(self, 0);
        self.def(
            Op::Shuffle {
                mode: ShuffleMode::Idx,
                value: acc,
                lane: zero,
            },
            span,
        )
    }

    /// `__match_any_sync`: the lanes executing together whose `v` equals this lane's. Each
    /// executing lane's value is broadcast in turn (the condition is the same in every lane,
    /// so the shuffle runs on all of them together).
    fn match_any(&mut self, v: Value, span: Span) -> Result<Value> {
        let lanes = self.active_lanes(span)?;
        let (zero, one) = (
            self.constant(Constant::new(S::U32, 0)),
            self.constant(Constant::new(S::U32, 1)),
        );
        let found = self.b.var("match_any", S::U32);
        self.b.push(Stmt::WriteVar {
            var: found,
            value: zero,
        });
        for l in 0..32u64 {
            let source = self.constant(Constant::new(S::U32, l));
            let bit = self.def(Op::Binary(BinaryOp::Shl, one, source), span)?;
            let has = self.def(Op::Binary(BinaryOp::And, lanes, bit), span)?;
            let present = self.def(Op::Compare(CmpOp::Ne, has, zero), span)?;
            self.b.begin_block();
            let other = self.def(
                Op::Shuffle {
                    mode: ShuffleMode::Idx,
                    value: v,
                    lane: source,
                },
                span,
            )?;
            let same = self.def(Op::Compare(CmpOp::Eq, other, v), span)?;
            let so_far = self.def(Op::ReadVar(found), span)?;
            let with = self.def(Op::Binary(BinaryOp::Or, so_far, bit), span)?;
            let next = self.def(
                Op::Select {
                    cond: same,
                    if_true: with,
                    if_false: so_far,
                },
                span,
            )?;
            self.b.push(Stmt::WriteVar {
                var: found,
                value: next,
            });
            let then = self.b.end_block();
            self.b.push(Stmt::If {
                cond: present,
                then,
                otherwise: Default::default(),
            });
        }
        self.def(Op::ReadVar(found), span)
    }

    /// `__match_all_sync`: the lanes executing together if they all hold the same `v`, else 0.
    fn match_all(&mut self, v: Value, span: Span) -> Result<Value> {
        let lanes = self.active_lanes(span)?;
        let leader = self.def(Op::Unary(UnaryOp::TrailingZeros, lanes), span)?;
        let first = self.def(
            Op::Shuffle {
                mode: ShuffleMode::Idx,
                value: v,
                lane: leader,
            },
            span,
        )?;
        let same = self.def(Op::Compare(CmpOp::Eq, first, v), span)?;
        let all = self.def(
            Op::Vote {
                mode: VoteMode::All,
                pred: same,
            },
            span,
        )?;
        let zero = self.constant(Constant::new(S::U32, 0));
        self.def(
            Op::Select {
                cond: all,
                if_true: lanes,
                if_false: zero,
            },
            span,
        )
    }

    /// The lanes executing this operation together: a ballot of `true`.
    fn active_lanes(&mut self, span: Span) -> Result<Value> {
        let yes = self.constant(Constant::bool(true));
        self.def(
            Op::Vote {
                mode: VoteMode::Ballot,
                pred: yes,
            },
            span,
        )
    }

    /// `%lanemask_lt` and the others: the lanes below, at or above this one.
    fn lane_mask(&mut self, which: &str, span: Span) -> Result<Value> {
        let lane = self.def(Op::Special(Special::LaneId), span)?;
        let one = self.constant(Constant::new(S::U32, 1));
        let eq = self.def(Op::Binary(BinaryOp::Shl, one, lane), span)?;
        let lt = self.def(Op::Binary(BinaryOp::Sub, eq, one), span)?;
        Ok(match which {
            "eq" => eq,
            "lt" => lt,
            "ge" => self.def(Op::Unary(UnaryOp::Not, lt), span)?,
            _ => {
                let le = self.def(Op::Binary(BinaryOp::Or, lt, eq), span)?;
                if which == "le" {
                    le
                } else {
                    self.def(Op::Unary(UnaryOp::Not, le), span)?
                }
            }
        })
    }
}
