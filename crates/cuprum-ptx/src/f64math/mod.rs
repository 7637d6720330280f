//! The `f64` math functions (and the `f32` ones computed through them), written once as
//! generic code over [`Arith`], a small machine of exactly rounded operations.
//!
//! PTX has no `f64` approximation instructions worth using (only `rcp`/`rsqrt` seeds), so
//! every `f64` function is pure arithmetic: `fma.rn.f64`, `div.rn.f64`, `sqrt.rn.f64`,
//! comparisons, selects and integer operations on the bits. Writing each algorithm against a
//! trait gives two implementations of one text: [`Ptx`] emits one instruction per call, and
//! the tests' model evaluates the same calls on the host with the same IEEE semantics (Rust's
//! `f64` arithmetic, `mul_add`, wrapping integers, PTX's clamped shifts). The model tests run
//! the very code that writes the PTX, so the two cannot drift apart.
//!
//! The algorithms keep intermediate results as unevaluated sums of two doubles (`hi + lo`,
//! built with exact `two_sum`/`two_prod` steps) where a rounding would otherwise cost more
//! than half an ulp, so every function ends in one final rounding plus a small error: within
//! about 1 ulp of the exact result (the bounds per function are in the `math` module docs).
//!
//! * `exp`: `exp`, `exp2`, `exp_m1`, `sinh`, `cosh`, `tanh` (Cody–Waite reduction by ln 2,
//!   Taylor polynomial for `e^r`, scaling in two steps so subnormal and overflowing results
//!   round once);
//! * `log`: `ln`, `log2`, `ln_1p`, `asinh`, `acosh`, `atanh` (one logarithm of a
//!   double-double input, so `log1p`-like arguments keep their low bits);
//! * `trig`: `sin`, `cos`, `tan` (Cody–Waite reduction by pi/2 below 2^28, exact Payne–Hanek
//!   reduction in 64-bit integer arithmetic above);
//! * `atan`: `atan`, `atan2` (a table of `atan(j/16)` and a short odd series);
//! * `hypot`: `hypot` (scaled, the sum of squares exact).
//!
//! `f32` functions that have no `f32` sequence of their own (`tan`, `atan`, `atan2`, the
//! hyperbolic functions but `tanh`, their inverses, `exp_m1`, `ln_1p`, `hypot`) widen exactly
//! to `f64`, run these and round once: the result is within an ulp of `f32` and almost always
//! correctly rounded.

mod atan;
mod consts;
mod exp;
mod hypot;
mod log;
#[cfg(test)]
mod model;
#[cfg(test)]
mod ptx_check;
mod trig;

pub(crate) use consts::TWO_OVER_PI_BITS;
use cuprum_ir::{BinaryOp, UnaryOp};

use crate::emit::{KernelWriter, Label, ins};
use crate::regs::{Class, Reg};

/// A float operation of two operands, rounded to nearest.
#[derive(Clone, Copy, Debug)]
pub(crate) enum FOp {
    Add,
    Sub,
    Mul,
    Div,
    /// `min.f64`: a NaN operand yields the other one.
    Min,
    /// `max.f64`, NaN as `Min`.
    Max,
}

/// A float operation of one operand.
#[derive(Clone, Copy, Debug)]
pub(crate) enum FUn {
    Neg,
    Abs,
    Sqrt,
    /// To the nearest integral value, ties to even.
    Rint,
}

/// A float comparison (false when an operand is NaN, but `Nan`, true when one is).
#[derive(Clone, Copy, Debug)]
pub(crate) enum FCmp {
    Lt,
    Gt,
    Ge,
    Eq,
    Nan,
}

/// A 64-bit integer operation (wrapping; shifts by 64 or more give 0, or the sign for
/// `ShrS`, as PTX clamps the amount).
#[derive(Clone, Copy, Debug)]
pub(crate) enum IOp {
    Add,
    Sub,
    And,
    Or,
    Shl,
    ShrU,
    ShrS,
    MulLo,
    /// The high 64 bits of the unsigned 128-bit product.
    MulHiU,
}

/// A 64-bit integer comparison.
#[derive(Clone, Copy, Debug)]
pub(crate) enum ICmp {
    Eq,
    LtS,
    LtU,
}

/// A module-scope table of 64-bit words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Table {
    /// [`consts::TWO_OVER_PI_BITS`].
    TwoOverPi,
    /// [`consts::ATAN_HI`].
    AtanHi,
    /// [`consts::ATAN_LO`].
    AtanLo,
}

impl Table {
    pub(crate) const ALL: [Table; 3] = [Table::TwoOverPi, Table::AtanHi, Table::AtanLo];

    /// The PTX symbol of the table.
    pub(crate) const fn symbol(self) -> &'static str {
        match self {
            Table::TwoOverPi => "$cuprum_two_over_pi_64",
            Table::AtanHi => "$cuprum_atan_hi",
            Table::AtanLo => "$cuprum_atan_lo",
        }
    }

    pub(crate) const fn words(self) -> &'static [u64] {
        match self {
            Table::TwoOverPi => &consts::TWO_OVER_PI_BITS,
            Table::AtanHi => &consts::ATAN_HI,
            Table::AtanLo => &consts::ATAN_LO,
        }
    }

    /// Whether a kernel using `op` (of any float type) reads the table.
    pub(crate) fn used_by(self, op: &cuprum_ir::Op) -> bool {
        use cuprum_ir::Op;
        match self {
            Table::TwoOverPi => {
                matches!(op, Op::Unary(UnaryOp::Sin | UnaryOp::Cos | UnaryOp::Tan, _))
            }
            Table::AtanHi | Table::AtanLo => matches!(
                op,
                Op::Unary(UnaryOp::Atan, _) | Op::Binary(BinaryOp::Atan2, ..)
            ),
        }
    }

    /// The module-scope declaration of the table.
    pub(crate) fn declaration(self) -> String {
        let words: Vec<String> = self.words().iter().map(|w| format!("0x{w:016X}")).collect();
        format!(
            "\n.const .align 8 .b64 {}[{}] = {{{}}};\n",
            self.symbol(),
            words.len(),
            words.join(", ")
        )
    }
}

/// The machine the algorithms are written for: registers of `f64`s (`F`), 64-bit integers
/// (`I`) and predicates (`P`), and mutable variables (`V`, `VI`) for values a branch changes.
pub(crate) trait Arith {
    type F: Copy;
    type I: Copy;
    type P: Copy;
    type V: Copy;
    type VI: Copy;

    fn f(&mut self, v: f64) -> Self::F;
    fn i(&mut self, v: i64) -> Self::I;
    fn fop(&mut self, op: FOp, a: Self::F, b: Self::F) -> Self::F;
    fn fma(&mut self, a: Self::F, b: Self::F, c: Self::F) -> Self::F;
    fn fun(&mut self, op: FUn, a: Self::F) -> Self::F;
    /// `mag` with the sign of `sign`.
    fn copysign(&mut self, mag: Self::F, sign: Self::F) -> Self::F;
    fn fcmp(&mut self, op: FCmp, a: Self::F, b: Self::F) -> Self::P;
    fn fsel(&mut self, p: Self::P, a: Self::F, b: Self::F) -> Self::F;
    fn isel(&mut self, p: Self::P, a: Self::I, b: Self::I) -> Self::I;
    fn pand(&mut self, a: Self::P, b: Self::P) -> Self::P;
    fn por(&mut self, a: Self::P, b: Self::P) -> Self::P;
    fn pxor(&mut self, a: Self::P, b: Self::P) -> Self::P;
    fn to_bits(&mut self, a: Self::F) -> Self::I;
    fn bits_f(&mut self, a: Self::I) -> Self::F;
    fn iop(&mut self, op: IOp, a: Self::I, b: Self::I) -> Self::I;
    fn icmp(&mut self, op: ICmp, a: Self::I, b: Self::I) -> Self::P;
    /// The number of leading zero bits.
    fn clz(&mut self, a: Self::I) -> Self::I;
    /// Signed integer to `f64`, rounded to nearest.
    fn s2f(&mut self, a: Self::I) -> Self::F;
    /// Unsigned integer to `f64`, rounded to nearest.
    fn u2f(&mut self, a: Self::I) -> Self::F;
    /// `f64` to signed integer toward zero (saturating, NaN to 0).
    fn f2s(&mut self, a: Self::F) -> Self::I;
    /// Word `idx` of `table`.
    fn load(&mut self, table: Table, idx: Self::I) -> Self::I;
    fn var(&mut self, init: Self::F) -> Self::V;
    fn set(&mut self, v: Self::V, x: Self::F);
    fn get(&mut self, v: Self::V) -> Self::F;
    fn ivar(&mut self, init: Self::I) -> Self::VI;
    fn iset(&mut self, v: Self::VI, x: Self::I);
    fn iget(&mut self, v: Self::VI) -> Self::I;
    /// Runs `body` only where `p` holds (a branch on the GPU).
    fn when(&mut self, p: Self::P, body: impl FnOnce(&mut Self));

    // Shorthands.
    fn k(&mut self, bits: u64) -> Self::F {
        self.f(f64::from_bits(bits))
    }
    fn add(&mut self, a: Self::F, b: Self::F) -> Self::F {
        self.fop(FOp::Add, a, b)
    }
    fn sub(&mut self, a: Self::F, b: Self::F) -> Self::F {
        self.fop(FOp::Sub, a, b)
    }
    fn mul(&mut self, a: Self::F, b: Self::F) -> Self::F {
        self.fop(FOp::Mul, a, b)
    }
    fn div(&mut self, a: Self::F, b: Self::F) -> Self::F {
        self.fop(FOp::Div, a, b)
    }
    fn neg(&mut self, a: Self::F) -> Self::F {
        self.fun(FUn::Neg, a)
    }
    fn abs(&mut self, a: Self::F) -> Self::F {
        self.fun(FUn::Abs, a)
    }
    fn lt(&mut self, a: Self::F, b: Self::F) -> Self::P {
        self.fcmp(FCmp::Lt, a, b)
    }
    fn ge(&mut self, a: Self::F, b: Self::F) -> Self::P {
        self.fcmp(FCmp::Ge, a, b)
    }
    fn gt(&mut self, a: Self::F, b: Self::F) -> Self::P {
        self.fcmp(FCmp::Gt, a, b)
    }
    fn eq(&mut self, a: Self::F, b: Self::F) -> Self::P {
        self.fcmp(FCmp::Eq, a, b)
    }
    fn is_nan(&mut self, a: Self::F) -> Self::P {
        self.fcmp(FCmp::Nan, a, a)
    }
    /// `a` where `p`, else `b`, for a constant `a`.
    fn fsel_k(&mut self, p: Self::P, a: f64, b: Self::F) -> Self::F {
        let a = self.f(a);
        self.fsel(p, a, b)
    }
    /// `a op b` for a constant `b`.
    fn iop_k(&mut self, op: IOp, a: Self::I, b: i64) -> Self::I {
        let b = self.i(b);
        self.iop(op, a, b)
    }
    /// Horner's rule: `c[0] + z (c[1] + z (c[2] + ...))` for coefficients given as bits.
    fn poly(&mut self, z: Self::F, c: &[u64]) -> Self::F {
        let Some((&last, rest)) = c.split_last() else {
            return self.f(0.0);
        };
        let mut p = self.k(last);
        for &ci in rest.iter().rev() {
            let ci = self.k(ci);
            p = self.fma(p, z, ci);
        }
        p
    }
    /// `a + b` exactly as `s + e` (Knuth's TwoSum).
    fn two_sum(&mut self, a: Self::F, b: Self::F) -> (Self::F, Self::F) {
        let s = self.add(a, b);
        let bb = self.sub(s, a);
        let ab = self.sub(s, bb);
        let da = self.sub(a, ab);
        let db = self.sub(b, bb);
        (s, self.add(da, db))
    }
    /// `a + b` exactly as `s + e`, when `a` is zero or its exponent is at least `b`'s.
    fn fast_two_sum(&mut self, a: Self::F, b: Self::F) -> (Self::F, Self::F) {
        let s = self.add(a, b);
        let t = self.sub(s, a);
        (s, self.sub(b, t))
    }
    /// `a * b` exactly as `p + e`.
    fn two_prod(&mut self, a: Self::F, b: Self::F) -> (Self::F, Self::F) {
        let p = self.mul(a, b);
        let np = self.neg(p);
        (p, self.fma(a, b, np))
    }
    /// `2^k` for an integer `k` in [-1022, 1023].
    fn pow2(&mut self, k: Self::I) -> Self::F {
        let b = self.iop_k(IOp::Add, k, 1023);
        let b = self.iop_k(IOp::Shl, b, 52);
        self.bits_f(b)
    }
}

/// [`Arith`] as PTX: one instruction (or two) per call, fresh registers for every result.
pub(crate) struct Ptx<'w, 'k> {
    pub(crate) w: &'w mut KernelWriter<'k>,
}

impl Ptx<'_, '_> {
    fn fresh(&mut self, class: Class) -> Reg {
        self.w.tmp(class)
    }
    /// A shift amount: the low 32 bits of `b`.
    fn amount(&mut self, b: Reg) -> Reg {
        let s = self.fresh(Class::B32);
        ins!(self.w, "cvt.u32.u64 {s}, {b}");
        s
    }
}

impl Arith for Ptx<'_, '_> {
    type F = Reg;
    type I = Reg;
    type P = Reg;
    type V = Reg;
    type VI = Reg;

    fn f(&mut self, v: f64) -> Reg {
        let d = self.fresh(Class::F64);
        ins!(self.w, "mov.f64 {d}, 0d{:016X}", v.to_bits());
        d
    }
    fn i(&mut self, v: i64) -> Reg {
        let d = self.fresh(Class::B64);
        ins!(self.w, "mov.b64 {d}, {v}");
        d
    }
    fn fop(&mut self, op: FOp, a: Reg, b: Reg) -> Reg {
        let d = self.fresh(Class::F64);
        let name = match op {
            FOp::Add => "add.rn",
            FOp::Sub => "sub.rn",
            FOp::Mul => "mul.rn",
            FOp::Div => "div.rn",
            FOp::Min => "min",
            FOp::Max => "max",
        };
        ins!(self.w, "{name}.f64 {d}, {a}, {b}");
        d
    }
    fn fma(&mut self, a: Reg, b: Reg, c: Reg) -> Reg {
        let d = self.fresh(Class::F64);
        ins!(self.w, "fma.rn.f64 {d}, {a}, {b}, {c}");
        d
    }
    fn fun(&mut self, op: FUn, a: Reg) -> Reg {
        let d = self.fresh(Class::F64);
        match op {
            FUn::Neg => ins!(self.w, "neg.f64 {d}, {a}"),
            FUn::Abs => ins!(self.w, "abs.f64 {d}, {a}"),
            FUn::Sqrt => ins!(self.w, "sqrt.rn.f64 {d}, {a}"),
            FUn::Rint => ins!(self.w, "cvt.rni.f64.f64 {d}, {a}"),
        }
        d
    }
    fn copysign(&mut self, mag: Reg, sign: Reg) -> Reg {
        let d = self.fresh(Class::F64);
        ins!(self.w, "copysign.f64 {d}, {sign}, {mag}");
        d
    }
    fn fcmp(&mut self, op: FCmp, a: Reg, b: Reg) -> Reg {
        let p = self.fresh(Class::Pred);
        let name = match op {
            FCmp::Lt => "lt",
            FCmp::Gt => "gt",
            FCmp::Ge => "ge",
            FCmp::Eq => "eq",
            FCmp::Nan => "nan",
        };
        ins!(self.w, "setp.{name}.f64 {p}, {a}, {b}");
        p
    }
    fn fsel(&mut self, p: Reg, a: Reg, b: Reg) -> Reg {
        let d = self.fresh(Class::F64);
        ins!(self.w, "selp.f64 {d}, {a}, {b}, {p}");
        d
    }
    fn isel(&mut self, p: Reg, a: Reg, b: Reg) -> Reg {
        let d = self.fresh(Class::B64);
        ins!(self.w, "selp.b64 {d}, {a}, {b}, {p}");
        d
    }
    fn pand(&mut self, a: Reg, b: Reg) -> Reg {
        let d = self.fresh(Class::Pred);
        ins!(self.w, "and.pred {d}, {a}, {b}");
        d
    }
    fn por(&mut self, a: Reg, b: Reg) -> Reg {
        let d = self.fresh(Class::Pred);
        ins!(self.w, "or.pred {d}, {a}, {b}");
        d
    }
    fn pxor(&mut self, a: Reg, b: Reg) -> Reg {
        let d = self.fresh(Class::Pred);
        ins!(self.w, "xor.pred {d}, {a}, {b}");
        d
    }
    fn to_bits(&mut self, a: Reg) -> Reg {
        let d = self.fresh(Class::B64);
        ins!(self.w, "mov.b64 {d}, {a}");
        d
    }
    fn bits_f(&mut self, a: Reg) -> Reg {
        let d = self.fresh(Class::F64);
        ins!(self.w, "mov.b64 {d}, {a}");
        d
    }
    fn iop(&mut self, op: IOp, a: Reg, b: Reg) -> Reg {
        let d = self.fresh(Class::B64);
        match op {
            IOp::Add => ins!(self.w, "add.s64 {d}, {a}, {b}"),
            IOp::Sub => ins!(self.w, "sub.s64 {d}, {a}, {b}"),
            IOp::And => ins!(self.w, "and.b64 {d}, {a}, {b}"),
            IOp::Or => ins!(self.w, "or.b64 {d}, {a}, {b}"),
            IOp::MulLo => ins!(self.w, "mul.lo.u64 {d}, {a}, {b}"),
            IOp::MulHiU => ins!(self.w, "mul.hi.u64 {d}, {a}, {b}"),
            IOp::Shl | IOp::ShrU | IOp::ShrS => {
                let s = self.amount(b);
                let name = match op {
                    IOp::Shl => "shl.b64",
                    IOp::ShrU => "shr.u64",
                    _ => "shr.s64",
                };
                ins!(self.w, "{name} {d}, {a}, {s}");
            }
        }
        d
    }
    fn icmp(&mut self, op: ICmp, a: Reg, b: Reg) -> Reg {
        let p = self.fresh(Class::Pred);
        let name = match op {
            ICmp::Eq => "eq.s64",
            ICmp::LtS => "lt.s64",
            ICmp::LtU => "lt.u64",
        };
        ins!(self.w, "setp.{name} {p}, {a}, {b}");
        p
    }
    fn clz(&mut self, a: Reg) -> Reg {
        let (n, d) = (self.fresh(Class::B32), self.fresh(Class::B64));
        ins!(self.w, "clz.b64 {n}, {a}");
        ins!(self.w, "cvt.u64.u32 {d}, {n}");
        d
    }
    fn s2f(&mut self, a: Reg) -> Reg {
        let d = self.fresh(Class::F64);
        ins!(self.w, "cvt.rn.f64.s64 {d}, {a}");
        d
    }
    fn u2f(&mut self, a: Reg) -> Reg {
        let d = self.fresh(Class::F64);
        ins!(self.w, "cvt.rn.f64.u64 {d}, {a}");
        d
    }
    fn f2s(&mut self, a: Reg) -> Reg {
        let d = self.fresh(Class::B64);
        ins!(self.w, "cvt.rzi.s64.f64 {d}, {a}");
        d
    }
    fn load(&mut self, table: Table, idx: Reg) -> Reg {
        let (base, off, d) = (
            self.fresh(Class::B64),
            self.fresh(Class::B64),
            self.fresh(Class::B64),
        );
        ins!(self.w, "mov.u64 {base}, {}", table.symbol());
        ins!(self.w, "shl.b64 {off}, {idx}, 3");
        ins!(self.w, "add.s64 {base}, {base}, {off}");
        ins!(self.w, "ld.const.u64 {d}, [{base}]");
        d
    }
    fn var(&mut self, init: Reg) -> Reg {
        let d = self.fresh(Class::F64);
        self.w.mov(d, init);
        d
    }
    fn set(&mut self, v: Reg, x: Reg) {
        self.w.mov(v, x);
    }
    fn get(&mut self, v: Reg) -> Reg {
        // A copy: a later `set` must not change what this read gave.
        let d = self.fresh(Class::F64);
        self.w.mov(d, v);
        d
    }
    fn ivar(&mut self, init: Reg) -> Reg {
        let d = self.fresh(Class::B64);
        self.w.mov(d, init);
        d
    }
    fn iset(&mut self, v: Reg, x: Reg) {
        self.w.mov(v, x);
    }
    fn iget(&mut self, v: Reg) -> Reg {
        let d = self.fresh(Class::B64);
        self.w.mov(d, v);
        d
    }
    fn when(&mut self, p: Reg, body: impl FnOnce(&mut Self)) {
        let skip: Label = self.w.label();
        ins!(self.w, "@!{p} bra {skip}");
        body(self);
        self.w.place(skip);
    }
}

/// A function of one `f64`.
pub(crate) fn unary<A: Arith>(m: &mut A, op: UnaryOp, x: A::F) -> Option<A::F> {
    Some(match op {
        UnaryOp::Exp => exp::exp(m, x),
        // `.ftz` flushes `f32` subnormals only.
        UnaryOp::Exp2 | UnaryOp::Exp2Ftz => exp::exp2(m, x),
        UnaryOp::Sinh => exp::sinh_cosh(m, x, false),
        UnaryOp::Cosh => exp::sinh_cosh(m, x, true),
        UnaryOp::Tanh => exp::tanh(m, x),
        UnaryOp::Ln => log::ln(m, x, false),
        UnaryOp::Log2 => log::ln(m, x, true),
        UnaryOp::Asinh => log::asinh(m, x),
        UnaryOp::Acosh => log::acosh(m, x),
        UnaryOp::Atanh => log::atanh(m, x),
        UnaryOp::ExpM1 => exp::exp_m1(m, x),
        UnaryOp::Ln1p => log::ln_1p(m, x),
        UnaryOp::Sin => trig::sin_cos_tan(m, x, trig::Which::Sin),
        UnaryOp::Cos => trig::sin_cos_tan(m, x, trig::Which::Cos),
        UnaryOp::Tan => trig::sin_cos_tan(m, x, trig::Which::Tan),
        UnaryOp::Atan => atan::atan(m, x),
        _ => return None,
    })
}

impl KernelWriter<'_> {
    /// The `f64` function `op` of `a` into `d`; `false` if it is not one of them.
    pub(crate) fn f64_function(&mut self, op: UnaryOp, d: Reg, a: Reg) -> bool {
        let mut m = Ptx { w: self };
        let Some(r) = unary(&mut m, op, a) else {
            return false;
        };
        self.mov(d, r);
        true
    }

    /// `atan2(l, r)` or `hypot(l, r)` of two `f64`s into `d`.
    pub(crate) fn f64_binary(&mut self, op: BinaryOp, d: Reg, l: Reg, r: Reg) {
        let mut m = Ptx { w: self };
        let v = if op == BinaryOp::Hypot {
            hypot::hypot(&mut m, l, r)
        } else {
            atan::atan2(&mut m, l, r)
        };
        self.mov(d, v);
    }

    /// An `f32` function computed in `f64` and rounded once: `f` gets the widened operands.
    pub(crate) fn through_f64(
        &mut self,
        d: Reg,
        operands: &[Reg],
        f: impl FnOnce(&mut Self, Reg, &[Reg]),
    ) {
        let wide: Vec<Reg> = operands
            .iter()
            .map(|&s| {
                let w = self.tmp(Class::F64);
                ins!(self, "cvt.f64.f32 {w}, {s}");
                w
            })
            .collect();
        let r = self.tmp(Class::F64);
        f(self, r, &wide);
        ins!(self, "cvt.rn.f32.f64 {d}, {r}");
    }
}
