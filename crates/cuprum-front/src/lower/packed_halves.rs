//! cuda-oxide's packed half-precision operations: `cuprum::simt::f16x2::add_f16x2(a, b)`,
//! `bf16x2::fma_relu_bf16x2(a, b, c)`, ... on `u32`s that each hold two 16-bit floats (the
//! low half is element 0), `tcgen05::cvt_f32x2_bf16x2(lo, hi)`, which packs two `f32`s, and
//! `convert::cvt_rna_tf32_f32(x)`, an `f32` rounded to `tf32` bits for `mma.sync m16n8k8`.
//!
//! Each operation works on the two halves independently, as the PTX `f16x2`/`bf16x2`
//! instruction it is named after: the halves are taken apart, computed with the IR's
//! `F16`/`BF16` operations (whose meaning the IR defines once, for both backends: `+ - *`
//! correctly rounded; `fma` as an `f32` fma rounded to the half type), and packed again.
//! The name says the operation and its modifiers, in this order:
//!
//! | part | meaning |
//! |---|---|
//! | `add sub mul fma min max neg abs` | the operation |
//! | `ftz` | subnormal inputs and results are zeros of their sign (`f16` only) |
//! | `relu` | a negative result is `+0`, a NaN result the canonical NaN |
//! | `sat` | the result clamped to `[0, 1]`, NaN to `+0` |
//! | `nan` | (`min`/`max`) a NaN input gives the canonical NaN, not the other input |
//! | `xorsign_abs` | (`min`/`max`) of the magnitudes, with the sign `sign(a) ^ sign(b)` |

use cuprum_ir::{BinaryOp, CmpOp, Constant, Op, ScalarType as S, TernaryOp, Value};
use proc_macro2::Span;

use super::*;

/// The operations cuda-oxide's `f16x2` module has (its `bf16x2` module has those without
/// `ftz` and `sat`, and `fma_bf16x2`).
const F16X2: [&str; 27] = [
    "abs",
    "add",
    "fma",
    "fma_ftz",
    "fma_ftz_relu",
    "fma_ftz_sat",
    "fma_relu",
    "fma_sat",
    "max",
    "min",
    "mul",
    "neg",
    "sub",
    "max_ftz",
    "max_ftz_nan",
    "max_ftz_nan_xorsign_abs",
    "max_ftz_xorsign_abs",
    "max_nan",
    "max_nan_xorsign_abs",
    "max_xorsign_abs",
    "min_ftz",
    "min_ftz_nan",
    "min_ftz_nan_xorsign_abs",
    "min_ftz_xorsign_abs",
    "min_nan",
    "min_nan_xorsign_abs",
    "min_xorsign_abs",
];

/// The `bf16x2` operations.
const BF16X2: [&str; 15] = [
    "abs",
    "add",
    "fma",
    "fma_relu",
    "max",
    "min",
    "mul",
    "neg",
    "sub",
    "max_nan",
    "max_nan_xorsign_abs",
    "max_xorsign_abs",
    "min_nan",
    "min_nan_xorsign_abs",
    "min_xorsign_abs",
];

/// The canonical NaN of both half types' bit patterns.
const CANONICAL_NAN: u64 = 0x7FFF;
const SIGN: u64 = 0x8000;

/// One packed operation, read from its name.
struct Packed {
    op: String,
    ftz: bool,
    relu: bool,
    sat: bool,
    nan: bool,
    xorsign_abs: bool,
}

impl Packed {
    fn parse(name: &str) -> Packed {
        let op = name.split('_').next().unwrap_or_default().to_string();
        let has = |m: &str| name.split('_').any(|p| p == m);
        Packed {
            op,
            ftz: has("ftz"),
            relu: has("relu"),
            sat: has("sat"),
            nan: has("nan"),
            xorsign_abs: name.contains("xorsign_abs"),
        }
    }

    fn arity(&self) -> usize {
        match self.op.as_str() {
            "neg" | "abs" => 1,
            "fma" => 3,
            _ => 2,
        }
    }
}

impl Lowerer<'_> {
    /// `<op>_f16x2(..)`, `<op>_bf16x2(..)`, `cvt_f32x2_bf16x2(lo, hi)` and
    /// `cvt_rna_tf32_f32(value)` (an `f32` rounded to `tf32`, as its bits), if `name` is one.
    pub(super) fn packed_half_call(
        &mut self,
        name: &str,
        args: &[&syn::Expr],
        span: Span,
    ) -> Result<Option<Val>> {
        if name == "cvt_rna_tf32_f32" {
            let [x] = args else {
                return err(span, "`cvt_rna_tf32_f32(value)` takes one `f32`");
            };
            let v = self.expr(x)?;
            let v = self.materialize(v, S::F32, span)?;
            let t = self.cast_value(v, S::Tf32, span)?;
            let bits = self.def(
                Op::Bitcast {
                    value: t,
                    to: S::U32,
                },
                span,
            )?;
            return Ok(Some(Val::Scalar(bits)));
        }
        if name == "cvt_f32x2_bf16x2" {
            let [lo, hi] = args else {
                return err(span, "`cvt_f32x2_bf16x2(lo, hi)` takes two `f32`s");
            };
            let mut halves = Vec::with_capacity(2);
            for a in [lo, hi] {
                let v = self.expr(a)?;
                let v = self.materialize(v, S::F32, span)?;
                let h = self.cast_value(v, S::BF16, span)?;
                halves.push(self.def(
                    Op::Bitcast {
                        value: h,
                        to: S::U16,
                    },
                    span,
                )?);
            }
            return Ok(Some(Val::Scalar(self.pack(halves[0], halves[1], span)?)));
        }
        let (stem, ty) = if let Some(stem) = name.strip_suffix("_bf16x2") {
            (stem, S::BF16)
        } else if let Some(stem) = name.strip_suffix("_f16x2") {
            (stem, S::F16)
        } else {
            return Ok(None);
        };
        let known = if ty == S::F16 {
            &F16X2[..]
        } else {
            &BF16X2[..]
        };
        if !known.contains(&stem) {
            return err(
                span,
                format!(
                    "`{name}` is not one of cuda-oxide's packed operations: {}",
                    known
                        .iter()
                        .map(|s| format!("{s}_{}", if ty == S::F16 { "f16x2" } else { "bf16x2" }))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            );
        }
        let packed = Packed::parse(stem);
        if args.len() != packed.arity() {
            return err(
                span,
                format!("`{name}` takes {} packed `u32`s", packed.arity()),
            );
        }
        let mut words = Vec::with_capacity(args.len());
        for a in args {
            let v = self.expr(a)?;
            words.push(self.materialize(v, S::U32, span)?);
        }
        let mut halves = Vec::with_capacity(2);
        for high in [false, true] {
            let mut xs = Vec::with_capacity(words.len());
            for &w in &words {
                xs.push(self.unpack(w, high, span)?);
            }
            halves.push(self.packed_half(&packed, ty, &xs, span)?);
        }
        Ok(Some(Val::Scalar(self.pack(halves[0], halves[1], span)?)))
    }

    /// One half's result bits (`U16`) from the inputs' bits.
    fn packed_half(&mut self, p: &Packed, ty: S, bits: &[Value], span: Span) -> Result<Value> {
        let bits: Vec<Value> = if p.ftz {
            bits.iter()
                .map(|&b| self.flush_subnormal(b, span))
                .collect::<Result<_>>()?
        } else {
            bits.to_vec()
        };
        let sign = self.constant(Constant::new(S::U16, SIGN));
        let result_bits = match p.op.as_str() {
            "neg" => self.def(Op::Binary(BinaryOp::Xor, bits[0], sign), span)?,
            "abs" => {
                let magnitude = self.constant(Constant::new(S::U16, !SIGN & 0xFFFF));
                self.def(Op::Binary(BinaryOp::And, bits[0], magnitude), span)?
            }
            "min" | "max" => self.packed_min_max(p, ty, bits[0], bits[1], span)?,
            op => {
                let xs = bits
                    .iter()
                    .map(|&b| self.def(Op::Bitcast { value: b, to: ty }, span))
                    .collect::<Result<Vec<_>>>()?;
                let r = match op {
                    "add" => self.def(Op::Binary(BinaryOp::Add, xs[0], xs[1]), span)?,
                    "sub" => self.def(Op::Binary(BinaryOp::Sub, xs[0], xs[1]), span)?,
                    "mul" => self.def(Op::Binary(BinaryOp::Mul, xs[0], xs[1]), span)?,
                    _ => self.def(Op::Ternary(TernaryOp::MulAdd, xs[0], xs[1], xs[2]), span)?,
                };
                let r = if p.sat {
                    // 1 from 1 up; +0 for anything else not above 0 (-0 and NaN too).
                    let (zero, one) = (
                        self.constant(Constant::new(ty, 0)),
                        self.constant(Constant::new(ty, one_bits(ty))),
                    );
                    let above_zero = self.def(Op::Compare(CmpOp::Gt, r, zero), span)?;
                    let below_one = self.def(Op::Compare(CmpOp::Lt, r, one), span)?;
                    let low = self.select(above_zero, r, zero, span)?;
                    let high = self.select(above_zero, one, zero, span)?;
                    self.select(below_one, low, high, span)?
                } else {
                    r
                };
                self.def(
                    Op::Bitcast {
                        value: r,
                        to: S::U16,
                    },
                    span,
                )?
            }
        };
        let result_bits = if p.relu {
            // Negative (sign bit set, not NaN) to +0; NaN to the canonical NaN.
            let x = self.def(
                Op::Bitcast {
                    value: result_bits,
                    to: ty,
                },
                span,
            )?;
            let is_nan = self.def(Op::Compare(CmpOp::Ne, x, x), span)?;
            let negative = self.def(Op::Binary(BinaryOp::And, result_bits, sign), span)?;
            let zero = self.constant(Constant::new(S::U16, 0));
            let is_negative = self.def(Op::Compare(CmpOp::Ne, negative, zero), span)?;
            let clamped = self.select(is_negative, zero, result_bits, span)?;
            let nan = self.constant(Constant::new(S::U16, CANONICAL_NAN));
            self.select(is_nan, nan, clamped, span)?
        } else {
            result_bits
        };
        if p.ftz {
            self.flush_subnormal(result_bits, span)
        } else {
            Ok(result_bits)
        }
    }

    /// `min`/`max` with the `nan` and `xorsign_abs` modifiers, on the halves' bits.
    fn packed_min_max(
        &mut self,
        p: &Packed,
        ty: S,
        a: Value,
        b: Value,
        span: Span,
    ) -> Result<Value> {
        let op = if p.op == "min" {
            BinaryOp::Min
        } else {
            BinaryOp::Max
        };
        let sign = self.constant(Constant::new(S::U16, SIGN));
        let magnitude = self.constant(Constant::new(S::U16, !SIGN & 0xFFFF));
        let (x, y) = if p.xorsign_abs {
            (
                self.def(Op::Binary(BinaryOp::And, a, magnitude), span)?,
                self.def(Op::Binary(BinaryOp::And, b, magnitude), span)?,
            )
        } else {
            (a, b)
        };
        let (fx, fy) = (
            self.def(Op::Bitcast { value: x, to: ty }, span)?,
            self.def(Op::Bitcast { value: y, to: ty }, span)?,
        );
        let r = self.def(Op::Binary(op, fx, fy), span)?;
        let mut bits = self.def(
            Op::Bitcast {
                value: r,
                to: S::U16,
            },
            span,
        )?;
        if p.xorsign_abs {
            let signs = self.def(Op::Binary(BinaryOp::Xor, a, b), span)?;
            let signs = self.def(Op::Binary(BinaryOp::And, signs, sign), span)?;
            bits = self.def(Op::Binary(BinaryOp::Or, bits, signs), span)?;
        }
        if p.nan {
            let x_nan = self.def(Op::Compare(CmpOp::Ne, fx, fx), span)?;
            let y_nan = self.def(Op::Compare(CmpOp::Ne, fy, fy), span)?;
            let any = self.def(Op::Binary(BinaryOp::Or, x_nan, y_nan), span)?;
            let nan = self.constant(Constant::new(S::U16, CANONICAL_NAN));
            bits = self.select(any, nan, bits, span)?;
        }
        Ok(bits)
    }

    /// The bits of a half (`U16`) with a subnormal replaced by the zero of its sign.
    fn flush_subnormal(&mut self, bits: Value, span: Span) -> Result<Value> {
        let exponent_mask = self.constant(Constant::new(S::U16, 0x7C00));
        let exponent = self.def(Op::Binary(BinaryOp::And, bits, exponent_mask), span)?;
        let zero = self.constant(Constant::new(S::U16, 0));
        let tiny = self.def(Op::Compare(CmpOp::Eq, exponent, zero), span)?;
        let sign = self.constant(Constant::new(S::U16, SIGN));
        let signed_zero = self.def(Op::Binary(BinaryOp::And, bits, sign), span)?;
        self.select(tiny, signed_zero, bits, span)
    }

    /// Half `high` of `word` (`U32`), as `U16` bits.
    fn unpack(&mut self, word: Value, high: bool, span: Span) -> Result<Value> {
        let w = if high {
            let sixteen = self.constant(Constant::new(S::U32, 16));
            self.def(Op::Binary(BinaryOp::Shr, word, sixteen), span)?
        } else {
            word
        };
        self.cast_value(w, S::U16, span)
    }

    /// `lo | hi << 16`, from two halves' `U16` bits.
    fn pack(&mut self, lo: Value, hi: Value, span: Span) -> Result<Value> {
        let (lo, hi) = (
            self.cast_value(lo, S::U32, span)?,
            self.cast_value(hi, S::U32, span)?,
        );
        let sixteen = self.constant(Constant::new(S::U32, 16));
        let hi = self.def(Op::Binary(BinaryOp::Shl, hi, sixteen), span)?;
        self.def(Op::Binary(BinaryOp::Or, lo, hi), span)
    }

    fn select(
        &mut self,
        cond: Value,
        if_true: Value,
        if_false: Value,
        span: Span,
    ) -> Result<Value> {
        self.def(
            Op::Select {
                cond,
                if_true,
                if_false,
            },
            span,
        )
    }
}

/// The bits of `1.0` in the half type `ty`.
fn one_bits(ty: S) -> u64 {
    if ty == S::F16 { 0x3C00 } else { 0x3F80 }
}
