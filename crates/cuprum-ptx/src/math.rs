//! Float operations: IEEE arithmetic with explicit rounding, 16-bit float conversions, and
//! the instruction sequences for `Round`, float `Rem` and the transcendental functions (the
//! `f32` ones in `transcendental`, the `f64` ones, and the `f32` ones computed through them,
//! in `f64math`).
//!
//! Every float arithmetic instruction carries an explicit rounding modifier (`add.rn.f32`,
//! `mul.rn.f32`, ...): with it ptxas may not contract a multiply and an add into an `fma`,
//! which the IR forbids. Nothing uses `.ftz` where a subnormal could matter, but `Exp2Ftz`,
//! whose meaning flushes them.
//!
//! `f16`/`bf16` arithmetic is done in `f32` and rounded back once (`cvt.rn`), as the IR
//! says; for `+ - * / sqrt` this equals the correctly rounded 16-bit result.
//!
//! # Accuracy of the `f32` functions
//!
//! | op | sequence | max error measured |
//! |---|---|---|
//! | `Sqrt`, `Div` | `sqrt.rn`, `div.rn` | correctly rounded |
//! | `Floor`, `Ceil`, `Trunc`, `Round`, `Abs` | `cvt.r?i`, `add.rz` | exact |
//! | `Rem` | subtraction loop | exact (Rust's `%`, C's `fmod`) |
//! | `Exp` | `2^n * 2^f`, `ex2.approx.ftz` on `f` in about [0, 1) | 2 ulp |
//! | `Exp2` | `ex2.approx.f32` | 2 ulp |
//! | `Exp2Ftz` | `ex2.approx.ftz.f32` (one instruction; `Exp2`'s subnormal range costs two more) | 2 ulp |
//! | `Ln`, `Log2` | `x = 2^e m`, `m` in [2/3, 4/3), `ln m = 2 atanh((m-1)/(m+1))` series | 1 ulp |
//! | `Sin`, `Cos` | Cody–Waite reduction below 105615, exact (Payne–Hanek) above; Taylor polynomials | 1 ulp, whole range |
//! | `Tanh` | abs(x) >= 0.6: `1 - 2/(2^(2x log2 e) + 1)` with `ex2.approx`, `rcp.approx`; below: odd minimax polynomial | 2 ulp |
//!
//! "Measured": on an H200 (`sm_90`), 80 000 to 140 000 inputs per function spread over every
//! binade and the interesting interval, against the `f64` result rounded once; an ulp is the
//! spacing of `f32` at that result (`tests/gpu_semantics.rs` repeats the measurement). The
//! `f16`/`bf16` versions compute in `f32` and round once, and matched the correctly rounded
//! result on every input tried.
//!
//! The other `f32` functions (`Tan`, `Atan`, `Atan2`, `Sinh`, `Cosh`, `Asinh`, `Acosh`,
//! `Atanh`, `ExpM1`, `Ln1p`, `Hypot`) widen to `f64`, run the `f64` sequence below and round once (`cvt.rn.f32.f64`):
//! within 0.5 ulp of the `f64` reference rounded once on every input the model tests tried,
//! so essentially correctly rounded (`f16`/`bf16` go through `f32` as above). They cost the
//! `f64` sequence: cheap on an H100/H200, slow on GPUs with few `f64` units.
//!
//! # Accuracy of the `f64` functions (`f64math`)
//!
//! Pure arithmetic (`fma.rn.f64`, `div.rn.f64`, `sqrt.rn.f64`, integer operations on the
//! bits); `Sqrt`, `Div` and the rounding functions are exact as above. Bounds below are from
//! the model tests (the generic code that writes the PTX, run on the host: 60 000 inputs over
//! every binade of each range plus uniform ones, both signs, and the special values), against
//! Rust's `std` or, for the inverse hyperbolic functions, `cuprum_ir::scalar::math`'s accurate
//! forms. On an H200 (2026-12-03), `cuprum/tests/device_math.rs` checks every one of them,
//! `f32` and `f64`, on 4096 random inputs over the whole domain plus the special values:
//! all within its 2-ulp bound of Rust's `f64` result, special values exact.
//!
//! | op | sequence | max error vs reference |
//! |---|---|---|
//! | `Exp`, `Exp2` | `x = k ln 2 + r` (Cody–Waite, `r` double-double), Taylor to `r^14`, `2^k` in two exact steps | 1 ulp |
//! | `ExpM1` | as `Exp`, then `2^k (eh + el) - 1` as an exact two-sum | 1 ulp |
//! | `Ln1p` | `Ln` of `1 + x` as an exact double-double | 1 ulp |
//! | `Hypot` | both scaled by the larger's power of two, exact sum of squares, corrected square root | 1 ulp |
//! | `Ln`, `Log2` | `x = 2^e m`, `m` in [0.71, 1.41), `ln(1+f)` by the `2 atanh` series, double-double sum | 1 ulp |
//! | `Sin`, `Cos`, `Tan` | Cody–Waite (three-part pi/2) below 2^28, exact Payne–Hanek (1216 bits of 2/pi) above; Taylor for `sin`/`cos` of the double-double `r`; `tan` a corrected quotient | 1 ulp, whole range (and correctly rounded on the hardest reduction cases) |
//! | `Atan`, `Atan2` | reciprocal or ratio as a double-double in [0, 1], table of `atan(j/16)`, six-term odd series, quadrant sum with pi/2 or pi; C's special values | 1 ulp |
//! | `Sinh`, `Cosh` | Taylor below 1 (`sinh`), `(E ∓ 1/E)/2` below 22, `e^a/2` scaled once above | 1 ulp |
//! | `Tanh` | `em/(em+2)`, `em = e^(2a) - 1` a double-double, corrected quotient; 1 from 22 | 2 ulp vs `std` (1 ulp where checked against a 300-bit reference: `std` is the one off) |
//! | `Asinh`, `Acosh`, `Atanh` | one `ln` of a double-double argument (`a + sqrt(a^2 ± 1)` with exact `a^2 ± 1`, `1 + 2a/(1-a)`), `ln(2a)` above 2^28 | 1 ulp (`acosh` near 1: 2 ulp vs the reference, whose own error it is) |

use cuprum_ir::{BinaryOp, ScalarType, UnaryOp};

use crate::PtxError;
use crate::emit::{KernelWriter, ins};
use crate::regs::{Class, Reg, float_type, int_op_type, is_half};

use ScalarType as S;

/// `f32` constants, as PTX hex literals.
pub(crate) mod k {
    pub(crate) const ONE: &str = "0f3F800000";
    pub(crate) const HALF: &str = "0f3F000000";
    pub(crate) const INF: &str = "0f7F800000";
    pub(crate) const NEG_INF: &str = "0fFF800000";
    pub(crate) const NAN: &str = "0f7FFFFFFF";
}

impl KernelWriter<'_> {
    /// Converts a 16-bit float (raw bits in `s`) to a fresh `f32` register, exactly.
    pub(crate) fn widen_half(&mut self, s: Reg, ty: ScalarType) -> Reg {
        let f = self.tmp(Class::F32);
        self.widen_half_into(f, s, ty);
        f
    }

    pub(crate) fn widen_half_into(&mut self, d: Reg, s: Reg, ty: ScalarType) {
        if ty == S::BF16 {
            // bf16 is the high half of an f32 (`cvt.f32.bf16` needs sm_90).
            let t = self.tmp(Class::B32);
            ins!(self, "cvt.u32.u16 {t}, {s}");
            ins!(self, "shl.b32 {t}, {t}, 16");
            ins!(self, "mov.b32 {d}, {t}");
        } else {
            ins!(self, "cvt.f32.f16 {d}, {s}");
        }
    }

    /// Rounds the `f32` in `f` to the 16-bit float `ty` (nearest even) into `d`.
    pub(crate) fn narrow_half(&mut self, d: Reg, f: Reg, ty: ScalarType) {
        let t = if ty == S::BF16 { "bf16" } else { "f16" };
        ins!(self, "cvt.rn.{t}.f32 {d}, {f}");
    }

    /// Sets the last mantissa bit of `f` when `inexact`: round-to-odd from round-toward-zero.
    fn set_sticky(&mut self, f: Reg, inexact: Reg) -> Reg {
        let (b, o) = (self.tmp(Class::B32), self.tmp(Class::B32));
        let r = self.tmp(Class::F32);
        ins!(self, "mov.b32 {b}, {f}");
        ins!(self, "or.b32 {o}, {b}, 1");
        ins!(self, "selp.b32 {b}, {o}, {b}, {inexact}");
        ins!(self, "mov.b32 {r}, {b}");
        r
    }

    /// The integer `s` (32 or 64 bits) rounded to odd into a fresh `f32` register.
    pub(crate) fn int_to_f32_odd(&mut self, from: ScalarType, s: Reg) -> Reg {
        let t = int_op_type(from);
        let (f, back, p) = (
            self.tmp(Class::F32),
            self.tmp(s.class),
            self.tmp(Class::Pred),
        );
        ins!(self, "cvt.rz.f32.{t} {f}, {s}");
        ins!(self, "cvt.rzi.{t}.f32 {back}, {f}");
        ins!(self, "setp.ne.{t} {p}, {s}, {back}");
        self.set_sticky(f, p)
    }

    /// The `f64` in `s` rounded to odd into a fresh `f32` register.
    pub(crate) fn f64_to_f32_odd(&mut self, s: Reg) -> Reg {
        let (f, back, p) = (
            self.tmp(Class::F32),
            self.tmp(Class::F64),
            self.tmp(Class::Pred),
        );
        ins!(self, "cvt.rz.f32.f64 {f}, {s}");
        ins!(self, "cvt.f64.f32 {back}, {f}");
        ins!(self, "setp.neu.f64 {p}, {s}, {back}");
        self.set_sticky(f, p)
    }

    /// Runs `op` on the `f32` widenings of 16-bit float operands and rounds the result back.
    fn through_f32(
        &mut self,
        ty: ScalarType,
        d: Reg,
        operands: &[Reg],
        op: impl FnOnce(&mut Self, Reg, &[Reg]) -> Result<(), PtxError>,
    ) -> Result<(), PtxError> {
        let mut wide = [d; 3];
        for (w, &s) in wide.iter_mut().zip(operands) {
            *w = self.widen_half(s, ty);
        }
        let fd = self.tmp(Class::F32);
        op(self, fd, &wide[..operands.len()])?;
        self.narrow_half(d, fd, ty);
        Ok(())
    }

    pub(crate) fn float_binary(
        &mut self,
        b: BinaryOp,
        ty: ScalarType,
        d: Reg,
        l: Reg,
        r: Reg,
    ) -> Result<(), PtxError> {
        if is_half(ty) {
            return self.through_f32(ty, d, &[l, r], |w, fd, x| {
                w.float_binary(b, S::F32, fd, x[0], x[1])
            });
        }
        let f = float_type(ty);
        match b {
            BinaryOp::Add => ins!(self, "add.rn.{f} {d}, {l}, {r}"),
            BinaryOp::Sub => ins!(self, "sub.rn.{f} {d}, {l}, {r}"),
            BinaryOp::Mul => ins!(self, "mul.rn.{f} {d}, {l}, {r}"),
            BinaryOp::Div => ins!(self, "div.rn.{f} {d}, {l}, {r}"),
            // Without `.ftz`, `min`/`max` return the other operand when one is NaN.
            BinaryOp::Min => ins!(self, "min.{f} {d}, {l}, {r}"),
            BinaryOp::Max => ins!(self, "max.{f} {d}, {l}, {r}"),
            BinaryOp::Rem => self.fmod(ty, d, l, r),
            BinaryOp::Atan2 | BinaryOp::Hypot if ty == S::F64 => self.f64_binary(b, d, l, r),
            BinaryOp::Atan2 | BinaryOp::Hypot => {
                self.through_f64(d, &[l, r], |w, o, x| w.f64_binary(b, o, x[0], x[1]))
            }
            _ => return Err(self.unsupported(format!("{b:?} on {ty}"))),
        }
        Ok(())
    }

    pub(crate) fn mul_add(
        &mut self,
        ty: ScalarType,
        d: Reg,
        a: Reg,
        b: Reg,
        c: Reg,
    ) -> Result<(), PtxError> {
        if is_half(ty) {
            return self.through_f32(ty, d, &[a, b, c], |w, fd, x| {
                w.mul_add(S::F32, fd, x[0], x[1], x[2])
            });
        }
        if !ty.is_float() {
            return Err(self.unsupported(format!("MulAdd on {ty}")));
        }
        ins!(self, "fma.rn.{} {d}, {a}, {b}, {c}", float_type(ty));
        Ok(())
    }

    /// The float-only unary operations other than `Abs` (`Neg`/`Abs` are bit operations).
    pub(crate) fn float_unary(
        &mut self,
        u: UnaryOp,
        ty: ScalarType,
        d: Reg,
        a: Reg,
    ) -> Result<(), PtxError> {
        if is_half(ty) {
            return self.through_f32(ty, d, &[a], |w, fd, x| w.float_unary(u, S::F32, fd, x[0]));
        }
        let f = float_type(ty);
        match u {
            UnaryOp::Sqrt => ins!(self, "sqrt.rn.{f} {d}, {a}"),
            UnaryOp::Floor => ins!(self, "cvt.rmi.{f}.{f} {d}, {a}"),
            UnaryOp::Ceil => ins!(self, "cvt.rpi.{f}.{f} {d}, {a}"),
            UnaryOp::Trunc => ins!(self, "cvt.rzi.{f}.{f} {d}, {a}"),
            UnaryOp::Round => {
                // Half away from zero: add 0.5 with the sign of `a`, rounding toward zero (so
                // 0.49999997 + 0.5 stays below 1), then truncate. Exact; keeps -0.0 and the
                // sign of results that round to zero.
                let half = if ty == S::F64 {
                    "0d3FE0000000000000"
                } else {
                    k::HALF
                };
                let (h, t) = (self.tmp(a.class), self.tmp(a.class));
                ins!(self, "mov.{f} {h}, {half}");
                ins!(self, "copysign.{f} {h}, {a}, {h}");
                ins!(self, "add.rz.{f} {t}, {a}, {h}");
                ins!(self, "cvt.rzi.{f}.{f} {d}, {t}");
            }
            _ if ty == S::F64 => {
                if !self.f64_function(u, d, a) {
                    return Err(self.unsupported(format!("{u:?} on f64")));
                }
            }
            UnaryOp::Exp => self.exp_f32(d, a),
            UnaryOp::Exp2 => ins!(self, "ex2.approx.f32 {d}, {a}"),
            UnaryOp::Exp2Ftz => ins!(self, "ex2.approx.ftz.f32 {d}, {a}"),
            UnaryOp::Ln => self.log_f32(d, a, false),
            UnaryOp::Log2 => self.log_f32(d, a, true),
            UnaryOp::Sin => self.sin_cos_f32(d, a, false),
            UnaryOp::Cos => self.sin_cos_f32(d, a, true),
            UnaryOp::Tanh => self.tanh_f32(d, a),
            UnaryOp::Tan
            | UnaryOp::Atan
            | UnaryOp::Sinh
            | UnaryOp::Cosh
            | UnaryOp::Asinh
            | UnaryOp::Acosh
            | UnaryOp::Atanh
            | UnaryOp::ExpM1
            | UnaryOp::Ln1p => self.through_f64(d, &[a], |w, r, x| {
                w.f64_function(u, r, x[0]);
            }),
            UnaryOp::Neg
            | UnaryOp::Not
            | UnaryOp::Abs
            | UnaryOp::CountOnes
            | UnaryOp::LeadingZeros
            | UnaryOp::TrailingZeros => {
                return Err(self.unsupported(format!("{u:?} as a float function")));
            }
        }
        Ok(())
    }

    /// Rust's float `%` (C's `fmod`), exactly: the remainder of `|x|` by the largest
    /// `|y| * 2^k` not above it is subtracted while halving down to `|y|` (each subtraction
    /// is exact by Sterbenz's lemma), and the result takes the sign of `x`.
    fn fmod(&mut self, ty: ScalarType, d: Reg, x: Reg, y: Reg) {
        let f = float_type(ty);
        let (zero, inf, nan, half) = if ty == S::F64 {
            (
                "0d0000000000000000",
                "0d7FF0000000000000",
                "0d7FFFFFFFFFFFFFFF",
                "0d3FE0000000000000",
            )
        } else {
            ("0f00000000", k::INF, k::NAN, k::HALF)
        };
        let c = x.class;
        let (ax, ay, r, bs, t) = (
            self.tmp(c),
            self.tmp(c),
            self.tmp(c),
            self.tmp(c),
            self.tmp(c),
        );
        let (p, q, ok) = (
            self.tmp(Class::Pred),
            self.tmp(Class::Pred),
            self.tmp(Class::Pred),
        );
        let (nan_l, up, down, done) = (self.label(), self.label(), self.label(), self.label());
        ins!(self, "abs.{f} {ax}, {x}");
        ins!(self, "abs.{f} {ay}, {y}");
        // NaN operands, infinite x, or a zero divisor give NaN.
        ins!(self, "setp.lt.{f} {p}, {ax}, {inf}");
        ins!(self, "setp.gt.{f} {q}, {ay}, {zero}");
        ins!(self, "and.pred {ok}, {p}, {q}");
        ins!(self, "mov.{f} {r}, {ax}");
        ins!(self, "@!{ok} bra {nan_l}");
        ins!(self, "mov.{f} {bs}, {ay}");
        self.place(up);
        ins!(self, "add.rn.{f} {t}, {bs}, {bs}");
        ins!(self, "setp.gt.{f} {p}, {t}, {r}");
        ins!(self, "@{p} bra {down}");
        ins!(self, "mov.{f} {bs}, {t}");
        ins!(self, "bra {up}");
        self.place(down);
        ins!(self, "setp.ge.{f} {p}, {r}, {bs}");
        ins!(self, "@{p} sub.rn.{f} {r}, {r}, {bs}");
        ins!(self, "setp.eq.{f} {p}, {bs}, {ay}");
        ins!(self, "@{p} bra {done}");
        ins!(self, "mul.rn.{f} {bs}, {bs}, {half}");
        ins!(self, "bra {down}");
        self.place(nan_l);
        ins!(self, "mov.{f} {r}, {nan}");
        self.place(done);
        ins!(self, "copysign.{f} {d}, {x}, {r}");
    }
}
