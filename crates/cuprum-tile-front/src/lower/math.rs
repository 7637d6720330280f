//! The element-wise math functions of the kernel language, each either one operation of the
//! kernel IR or composed here, in this one place, from operations it has:
//!
//! | function | computed as |
//! |---|---|
//! | `exp exp2 log log2 sqrt sin cos tan sinh cosh tanh ceil floor round trunc` | the IR's operation |
//! | `absf`, `abs` of a float | `Abs` |
//! | `absi`, `abs` of an integer | `max(x, -x)` (wrapping: `absi(MIN) = MIN`, as Rust's `wrapping_abs`) |
//! | `negf negi` | `Neg` |
//! | `rsqrt` | `1 / sqrt(x)` |
//! | `pow(a, b)` | `exp2(b * log2(abs(a)))`, negated for a negative `a` and an odd integer `b`, NaN for a negative `a` and a non-integer `b`, and 1 when `b == 0` |
//!
//! `exp2_ftz(x)` and `exp2(x, ftz::Enabled)` are `Exp2Ftz` (`f32` subnormals flushed to
//! zero, one instruction on the GPU). The other `_ftz` variants (`sqrt_ftz`, `maxf_ftz`,
//! `fma_ftz`, ...) are the plain functions: flush-to-zero is **not** applied (subnormals are
//! kept), and rounding-mode arguments (`rounding::NegativeInf`, ...) are accepted and
//! ignored: every operation rounds as the kernel IR defines (to nearest even; transcendental
//! functions approximately).

use cuprum_ir::{BinaryOp, CmpOp, UnaryOp};
use cuprum_tile_ir::{Elem, Op, TileValue};
use proc_macro2::Span;

use super::*;
use crate::err;

/// An element-wise function of one or two tiles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MathFn {
    /// One operation of the IR.
    Unary(UnaryOp),
    /// `abs`: `Abs` on floats, `max(x, -x)` on integers.
    Abs,
    /// `absi`: integers only.
    AbsInt,
    Rsqrt,
    Pow,
}

impl MathFn {
    /// How many tiles it takes.
    pub fn arity(self) -> usize {
        match self {
            MathFn::Pow => 2,
            _ => 1,
        }
    }
}

impl Lowerer<'_> {
    /// `f(args)` element-wise; `args` are tiles of one type and shape.
    pub(super) fn math(&mut self, f: MathFn, args: &[TileValue], span: Span) -> Result<TileValue> {
        let (Some(&x), rest) = (args.first(), args.get(1..).unwrap_or_default()) else {
            return err(span, "internal error: a math function without operands");
        };
        let ty = self.ty(x);
        let float_only = |lw: &Self, name: &str| -> Result<()> {
            match ty.elem {
                Elem::Known(e) if !e.is_float() => err(
                    span,
                    format!("`{name}` of `{}`: a float tile is required", lw.show(&ty)),
                ),
                _ => Ok(()),
            }
        };
        match f {
            MathFn::Unary(UnaryOp::Neg) | MathFn::Unary(UnaryOp::Not) => {
                let u = if let MathFn::Unary(u) = f {
                    u
                } else {
                    UnaryOp::Neg
                };
                self.unary_op(u, x, span)
            }
            MathFn::Unary(u) => self.def(Op::Unary(u, x), span),
            MathFn::Abs => match ty.elem {
                Elem::Known(e) if e.is_int() => self.math(MathFn::AbsInt, args, span),
                _ => self.def(Op::Unary(UnaryOp::Abs, x), span),
            },
            MathFn::AbsInt => {
                if let Elem::Known(e) = ty.elem
                    && !e.is_signed_int()
                {
                    return err(
                        span,
                        format!(
                            "`absi` of `{}`: a signed integer tile is required",
                            self.show(&ty)
                        ),
                    );
                }
                let neg = self.def(Op::Unary(UnaryOp::Neg, x), span)?;
                self.def(Op::Binary(BinaryOp::Max, x, neg), span)
            }
            MathFn::Rsqrt => {
                float_only(self, "rsqrt")?;
                let root = self.def(Op::Unary(UnaryOp::Sqrt, x), span)?;
                let one = self.constant(&Lit::int(1), ty.elem, ty.shape.clone(), span)?;
                self.def(Op::Binary(BinaryOp::Div, one, root), span)
            }
            MathFn::Pow => {
                float_only(self, "pow")?;
                let Some(&y) = rest.first() else {
                    return err(span, "`pow` takes a base and an exponent");
                };
                self.pow(x, y, span)
            }
        }
    }

    fn pow(&mut self, a: TileValue, b: TileValue, span: Span) -> Result<TileValue> {
        let ty = self.ty(a);
        let (elem, shape) = (ty.elem, ty.shape.clone());
        let c = |lw: &mut Self, v: i128| lw.constant(&Lit::int(v), elem, shape.clone(), span);
        let abs = self.def(Op::Unary(UnaryOp::Abs, a), span)?;
        let lg = self.def(Op::Unary(UnaryOp::Log2, abs), span)?;
        let prod = self.def(Op::Binary(BinaryOp::Mul, b, lg), span)?;
        let magnitude = self.def(Op::Unary(UnaryOp::Exp2, prod), span)?;
        // b's integer-ness and parity: floor(b) == b, and b - 2 * floor(b / 2) == 1.
        let fl = self.def(Op::Unary(UnaryOp::Floor, b), span)?;
        let integral = self.def(Op::Compare(CmpOp::Eq, fl, b), span)?;
        let two = c(self, 2)?;
        let half = self.def(Op::Binary(BinaryOp::Div, b, two), span)?;
        let half_floor = self.def(Op::Unary(UnaryOp::Floor, half), span)?;
        let twice = self.def(Op::Binary(BinaryOp::Mul, two, half_floor), span)?;
        let parity = self.def(Op::Binary(BinaryOp::Sub, b, twice), span)?;
        let one = c(self, 1)?;
        let odd = self.def(Op::Compare(CmpOp::Eq, parity, one), span)?;
        let negated = self.def(Op::Unary(UnaryOp::Neg, magnitude), span)?;
        let signed = self.def(
            Op::Select {
                cond: odd,
                if_true: negated,
                if_false: magnitude,
            },
            span,
        )?;
        let nan = self.constant(
            &Lit {
                num: crate::literal::Num::Float {
                    value: f64::NAN,
                    text: None,
                },
                ty: None,
            },
            elem,
            shape.clone(),
            span,
        )?;
        let negative_base = self.def(
            Op::Select {
                cond: integral,
                if_true: signed,
                if_false: nan,
            },
            span,
        )?;
        let zero = c(self, 0)?;
        let is_negative = self.def(Op::Compare(CmpOp::Lt, a, zero), span)?;
        let r = self.def(
            Op::Select {
                cond: is_negative,
                if_true: negative_base,
                if_false: magnitude,
            },
            span,
        )?;
        let b_zero = self.def(Op::Compare(CmpOp::Eq, b, zero), span)?;
        self.def(
            Op::Select {
                cond: b_zero,
                if_true: one,
                if_false: r,
            },
            span,
        )
    }
}
