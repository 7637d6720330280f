//! Integer division and remainder by a constant become multiplications and shifts.
//!
//! ptxas divides by a constant exactly as by any other number: `div.u32 %r, %x, 7` is a
//! sequence of about twenty instructions around a reciprocal, a 64-bit division is a call
//! of a subroutine of about seventy, and even a power-of-two immediate is divided, not
//! shifted. nvcc's front end never asks it to: it emits a multiply-high and shifts (Granlund
//! and Montgomery, "Division by invariant integers using multiplication", 1994; Warren,
//! "Hacker's Delight", chapter 10). Rust indexing divides often (`i / width`, `i % width`
//! with a constant width), so this pass does the same.
//!
//! [`Division::of`] is the one place that decides how a type's division by a constant is
//! computed; [`Division::quotient`] evaluates that recipe on plain integers (the unit tests
//! check it against Rust's `/` exhaustively for 8- and 16-bit widths), and the pass emits
//! exactly the same steps as IR. A remainder is `x - q * d`.
//!
//! Types narrower than 32 bits are widened to 32 (`mul.hi` exists for 32 and 64 bits only)
//! and the quotient truncated back, except for powers of two, which shift in place.
//!
//! What this pass must not do: change any quotient or remainder. A zero divisor and signed
//! `MIN / -1` are IR precondition violations ([`cuprum_ir::kernel`]); a zero divisor is left
//! as it is, so the emulator still reports it.

use cuprum_ir::{BinaryOp, Block, CmpOp, Constant, Kernel, Op, ScalarType, Stmt, Value, ValueDef};

use crate::analyses::Analyses;
use crate::eval;
use crate::facts::Defs;

use ScalarType as S;

/// Runs the pass; true if the kernel changed.
pub fn run(kernel: &mut Kernel) -> bool {
    run_with(kernel, &mut Analyses::new())
}

/// [`run`], taking the kernel's definitions from `analyses` (and returning them there when
/// nothing changed).
pub fn run_with(kernel: &mut Kernel, analyses: &mut Analyses) -> bool {
    let defs = analyses.take_defs(kernel);
    let mut body = std::mem::take(&mut kernel.body);
    let mut pass = Divide {
        defs,
        values: &mut kernel.values,
        changed: false,
    };
    pass.block(&mut body);
    let Divide { defs, changed, .. } = pass;
    kernel.body = body;
    if !changed {
        analyses.keep_defs(defs);
    }
    changed
}

/// How a quotient `x / d` is computed, for a constant `d` and dividends of `bits` bits.
/// In the steps below, `mulhi` is the high half of the double-width product, of the
/// dividend's signedness; `>>` shifts in the dividend's signedness, `>>>` logically.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Quotient {
    /// `x` (`d` is 1, or -1 with `negate`).
    Dividend,
    /// `x >> shift`: unsigned `d = 2^shift`.
    Shift { shift: u32 },
    /// `x >= d` as an integer: unsigned `d` above half the range, where every quotient is
    /// 0 or 1.
    AtLeast { divisor: u128 },
    /// `mulhi(x >> pre, magic) >> post`.
    MulHigh { pre: u32, magic: u128, post: u32 },
    /// `t = mulhi(x, magic)`, then `(((x - t) >> 1) + t) >> post`: an unsigned magic number
    /// one bit wider than the type, `magic` its low bits.
    MulHighAdd { magic: u128, post: u32 },
    /// Signed `|d| = 2^shift`: `(x + ((x >> (bits - 1)) >>> (bits - shift))) >> shift`
    /// (the bias rounds negative dividends toward zero).
    SignedShift { shift: u32 },
    /// Signed: `t = (mulhi(x, magic) + (x if add)) >> post`, then `t + (t >>> (bits - 1))`
    /// (adding one to negative quotients rounds toward zero). `magic` is the type's bit
    /// pattern; `add` when the magic number, read as signed, is negative.
    SignedMulHigh { magic: u128, add: bool, post: u32 },
}

/// A quotient's recipe and whether the result is negated (signed, negative divisors).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Division {
    pub(crate) quotient: Quotient,
    pub(crate) negate: bool,
    /// The width the steps run at: the type's, or 32 for narrower types (see the module
    /// docs).
    pub(crate) bits: u32,
}

impl Division {
    /// The recipe for dividing `ty` values by the constant whose bits are `divisor`, or
    /// `None` for a zero divisor (left to the division, which reports it). Multiply-highs run
    /// at 32 bits at least (see the module docs).
    pub(crate) fn of(ty: ScalarType, divisor: u64) -> Option<Self> {
        let width = ty.bits();
        if !ty.is_int() || !(8..=64).contains(&width) {
            return None;
        }
        let value = eval::int_value(Constant::new(ty, divisor));
        Self::at_width(ty.is_signed_int(), value, width, width.max(32))
    }

    /// The recipe for `width`-bit dividends and the nonzero divisor `value`, its multiply-
    /// highs at `magic_bits` (at least `width`; shifts stay at `width`).
    fn at_width(signed: bool, value: i128, width: u32, magic_bits: u32) -> Option<Self> {
        if value == 0 {
            return None;
        }
        let magnitude = value.unsigned_abs();
        let negate = value < 0;
        let (quotient, bits) = if magnitude == 1 {
            (Quotient::Dividend, width)
        } else if magnitude.is_power_of_two() {
            let shift = magnitude.trailing_zeros();
            let q = if signed {
                Quotient::SignedShift { shift }
            } else {
                Quotient::Shift { shift }
            };
            (q, width)
        } else if signed {
            (signed_magic(magnitude, magic_bits)?, magic_bits)
        } else {
            (unsigned_magic(magnitude, magic_bits)?, magic_bits)
        };
        Some(Self {
            quotient,
            negate,
            bits,
        })
    }

    /// `x / d` by the recipe, on `bits`-bit integers (`x` as an `i128` in the type's range);
    /// what the emitted IR computes, step by step (the unit tests' model of it).
    #[cfg(test)]
    pub(crate) fn quotient(&self, x: i128, signed: bool) -> i128 {
        let n = self.bits;
        let mask = if n == 128 {
            u128::MAX
        } else {
            (1u128 << n) - 1
        };
        let wrap = |v: i128| -> i128 {
            let u = (v as u128) & mask;
            if signed && u >> (n - 1) == 1 {
                (u as i128) - (1i128 << n)
            } else {
                u as i128
            }
        };
        let unsigned = |v: i128| (v as u128) & mask;
        // `v` is in the type's range, so `>>` shifts in its signedness.
        let shr = |v: i128, s: u32| wrap(v >> s);
        let lshr = |v: i128, s: u32| wrap((unsigned(v) >> s) as i128);
        let mulhi = |a: i128, m: i128| {
            if signed {
                wrap((wrap(a) * wrap(m)) >> n)
            } else {
                wrap(((unsigned(a) * unsigned(m)) >> n) as i128)
            }
        };
        let x = wrap(x);
        let q = match self.quotient {
            Quotient::Dividend => x,
            Quotient::Shift { shift } => lshr(x, shift),
            Quotient::AtLeast { divisor } => i128::from(unsigned(x) >= divisor),
            Quotient::MulHigh { pre, magic, post } => {
                lshr(mulhi(lshr(x, pre), magic as i128), post)
            }
            Quotient::MulHighAdd { magic, post } => {
                let t = mulhi(x, magic as i128);
                lshr(wrap(lshr(wrap(x - t), 1) + t), post)
            }
            Quotient::SignedShift { shift } => {
                let bias = lshr(shr(x, n - 1), n - shift);
                shr(wrap(x + bias), shift)
            }
            Quotient::SignedMulHigh { magic, add, post } => {
                let mut t = mulhi(x, magic as i128);
                if add {
                    t = wrap(t + x);
                }
                let t = shr(t, post);
                wrap(t + lshr(t, n - 1))
            }
        };
        if self.negate { wrap(-q) } else { q }
    }
}

/// Unsigned `x / d` for `bits`-bit `x`, `d` not a power of two.
///
/// `floor(x / d) == floor(m * x / 2^p)` for every `x < 2^bits` when `2^p <= m * d <= 2^p +
/// 2^(p - bits)` (Granlund and Montgomery, theorem 4.2); `m = ceil(2^p / d)` meets it from
/// `p = bits + ceil(log2 d)` on, with `m < 2^(bits + 1)`. The smallest such `p` is taken.
fn unsigned_magic(d: u128, bits: u32) -> Option<Quotient> {
    if d > 1u128 << (bits - 1) {
        return Some(Quotient::AtLeast { divisor: d });
    }
    let smallest = |d: u128, dividend_bits: u32| {
        (bits..2 * bits).find_map(|p| {
            let m = (1u128 << p).div_ceil(d);
            (m * d - (1u128 << p) <= 1u128 << (p - dividend_bits)).then_some((m, p))
        })
    };
    let (m, p) = smallest(d, bits)?;
    if m < 1u128 << bits {
        return Some(Quotient::MulHigh {
            pre: 0,
            magic: m,
            post: p - bits,
        });
    }
    // An even divisor: divide the dividend by its power of two first; the smaller dividend
    // range lets the magic number fit.
    let pre = d.trailing_zeros();
    if pre > 0 {
        let (m, p) = smallest(d >> pre, bits - pre)?;
        if m < 1u128 << bits {
            return Some(Quotient::MulHigh {
                pre,
                magic: m,
                post: p - bits,
            });
        }
    }
    // `m` needs `bits + 1` bits: `m * x / 2^p == (x + mulhi(x, m - 2^bits)) / 2^(p - bits)`,
    // whose sum would overflow; `((x - t) >> 1) + t` is that sum halved without overflow.
    (p > bits).then_some(Quotient::MulHighAdd {
        magic: m - (1u128 << bits),
        post: p - bits - 1,
    })
}

/// Signed `x / d` for `bits`-bit `x`, `d > 0` not a power of two (a negative divisor negates
/// the quotient).
///
/// With `nc` the largest dividend with `nc mod d == d - 1`, the smallest `p >= bits` with
/// `2^p > nc * (d - 2^p mod d)` gives `m = (2^p + d - 2^p mod d) / d < 2^bits` such that
/// `floor(m * x / 2^p)` is the quotient of every `x >= 0` and one less than it for every
/// `x < 0` (Warren, "Hacker's Delight", section 10-4).
fn signed_magic(d: u128, bits: u32) -> Option<Quotient> {
    let half = 1u128 << (bits - 1);
    let nc = half - 1 - half % d;
    let (m, p) = (bits..2 * bits).find_map(|p| {
        let r = (1u128 << p) % d;
        ((1u128 << p) > nc * (d - r)).then(|| (((1u128 << p) + d - r) / d, p))
    })?;
    if m >= 1u128 << bits {
        return None;
    }
    Some(Quotient::SignedMulHigh {
        magic: m,
        add: m >= half,
        post: p - bits,
    })
}

struct Divide<'k> {
    defs: Defs,
    values: &'k mut cuprum_ir::Arena<ValueDef>,
    changed: bool,
}

impl Divide<'_> {
    fn block(&mut self, block: &mut Block) {
        let stmts = std::mem::take(&mut block.stmts);
        let mut out = Vec::with_capacity(stmts.len());
        for mut stmt in stmts {
            match &mut stmt {
                Stmt::Def { value, op } => {
                    if let Some(new) = self.rewrite(*value, op, &mut out) {
                        *op = new;
                        self.changed = true;
                    }
                }
                Stmt::If {
                    then, otherwise, ..
                } => {
                    self.block(then);
                    self.block(otherwise);
                }
                Stmt::Loop { body } => self.block(body),
                _ => {}
            }
            out.push(stmt);
        }
        block.stmts = out;
    }

    /// The final operation of `value = op`'s new computation (its other steps appended to
    /// `out`), if `op` divides by a constant.
    fn rewrite(&mut self, value: Value, op: &Op, out: &mut Vec<Stmt>) -> Option<Op> {
        let &Op::Binary(b @ (BinaryOp::Div | BinaryOp::Rem), x, d) = op else {
            return None;
        };
        let ty = self.defs.ty(value);
        let divisor = self.defs.konst(d)?;
        let division = Division::of(ty, divisor)?;
        if let (BinaryOp::Rem, Quotient::Shift { shift }) = (b, division.quotient) {
            // Unsigned `x % 2^k` is `x & (2^k - 1)`.
            let mask = self.values.append(ValueDef { ty });
            out.push(Stmt::Def {
                value: mask,
                op: Op::Const(Constant::new(ty, (1u64 << shift) - 1)),
            });
            return Some(Op::Binary(BinaryOp::And, x, mask));
        }
        let mut e = Emit {
            values: &mut *self.values,
            out,
        };
        let q = e.quotient(&division, ty, x);
        Some(if b == BinaryOp::Div {
            // An identity cast: the next fold makes `q` the value itself.
            Op::Cast { value: q, to: ty }
        } else {
            let qd = e.def(ty, Op::Binary(BinaryOp::Mul, q, d));
            Op::Binary(BinaryOp::Sub, x, qd)
        })
    }
}

/// Appends a recipe's steps as definitions.
struct Emit<'a> {
    values: &'a mut cuprum_ir::Arena<ValueDef>,
    out: &'a mut Vec<Stmt>,
}

impl Emit<'_> {
    fn def(&mut self, ty: ScalarType, op: Op) -> Value {
        let value = self.values.append(ValueDef { ty });
        self.out.push(Stmt::Def { value, op });
        value
    }

    fn konst(&mut self, ty: ScalarType, bits: u128) -> Value {
        // Every constant here fits the type (a magic number is below 2^bits).
        self.def(ty, Op::Const(Constant::new(ty, bits as u64)))
    }

    fn bin(&mut self, ty: ScalarType, b: BinaryOp, l: Value, r: Value) -> Value {
        self.def(ty, Op::Binary(b, l, r))
    }

    fn shift(&mut self, ty: ScalarType, b: BinaryOp, v: Value, by: u32) -> Value {
        if by == 0 {
            return v;
        }
        let s = self.konst(S::U32, u128::from(by));
        self.bin(ty, b, v, s)
    }

    /// `v >>> by` on a signed `ty` (through its unsigned twin).
    fn logical_shift(&mut self, ty: ScalarType, v: Value, by: u32) -> Value {
        let twin = unsigned_twin(ty);
        let u = self.def(twin, Op::Cast { value: v, to: twin });
        let s = self.shift(twin, BinaryOp::Shr, u, by);
        self.def(ty, Op::Cast { value: s, to: ty })
    }

    /// The quotient `x / d` of `ty` values, by `division` (a value of `ty`).
    fn quotient(&mut self, division: &Division, ty: ScalarType, x: Value) -> Value {
        let n = division.bits;
        let wide = match (ty.is_signed_int(), n > ty.bits()) {
            (_, false) => ty,
            (true, true) => S::I32,
            (false, true) => S::U32,
        };
        let xw = if wide == ty {
            x
        } else {
            self.def(wide, Op::Cast { value: x, to: wide })
        };
        let t = wide;
        let q = match division.quotient {
            Quotient::Dividend => xw,
            Quotient::Shift { shift } => self.shift(t, BinaryOp::Shr, xw, shift),
            Quotient::AtLeast { divisor } => {
                let dv = self.konst(t, divisor);
                let ge = self.def(S::Bool, Op::Compare(CmpOp::Ge, xw, dv));
                let (one, zero) = (self.konst(t, 1), self.konst(t, 0));
                self.def(
                    t,
                    Op::Select {
                        cond: ge,
                        if_true: one,
                        if_false: zero,
                    },
                )
            }
            Quotient::MulHigh { pre, magic, post } => {
                let xs = self.shift(t, BinaryOp::Shr, xw, pre);
                let m = self.konst(t, magic);
                let h = self.bin(t, BinaryOp::MulHigh, xs, m);
                self.shift(t, BinaryOp::Shr, h, post)
            }
            Quotient::MulHighAdd { magic, post } => {
                let m = self.konst(t, magic);
                let h = self.bin(t, BinaryOp::MulHigh, xw, m);
                let diff = self.bin(t, BinaryOp::Sub, xw, h);
                let half = self.shift(t, BinaryOp::Shr, diff, 1);
                let sum = self.bin(t, BinaryOp::Add, half, h);
                self.shift(t, BinaryOp::Shr, sum, post)
            }
            Quotient::SignedShift { shift } => {
                let sign = self.shift(t, BinaryOp::Shr, xw, n - 1);
                let bias = self.logical_shift(t, sign, n - shift);
                let biased = self.bin(t, BinaryOp::Add, xw, bias);
                self.shift(t, BinaryOp::Shr, biased, shift)
            }
            Quotient::SignedMulHigh { magic, add, post } => {
                let m = self.konst(t, magic);
                let mut h = self.bin(t, BinaryOp::MulHigh, xw, m);
                if add {
                    h = self.bin(t, BinaryOp::Add, h, xw);
                }
                let q0 = self.shift(t, BinaryOp::Shr, h, post);
                let round = self.logical_shift(t, q0, n - 1);
                self.bin(t, BinaryOp::Add, q0, round)
            }
        };
        let q = if division.negate {
            self.def(t, Op::Unary(cuprum_ir::UnaryOp::Neg, q))
        } else {
            q
        };
        if wide == ty {
            q
        } else {
            self.def(ty, Op::Cast { value: q, to: ty })
        }
    }
}

/// The unsigned integer type of `ty`'s width.
fn unsigned_twin(ty: ScalarType) -> ScalarType {
    match ty.bits() {
        8 => S::U8,
        16 => S::U16,
        32 => S::U32,
        _ => S::U64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(ty: ScalarType, divisor: i128, xs: impl Iterator<Item = i128>) {
        let bits = Constant::new(ty, divisor as u64 & mask(ty)).bits;
        let Some(division) = Division::of(ty, bits) else {
            assert_eq!(divisor, 0);
            return;
        };
        let signed = ty.is_signed_int();
        for x in xs {
            let d = eval::int_value(Constant::new(ty, bits));
            if signed && d == -1 && x == -(1i128 << (ty.bits() - 1)) {
                continue; // MIN / -1: a precondition violation
            }
            let expect = x / d;
            assert_eq!(
                division.quotient(x, signed),
                expect,
                "{ty}: {x} / {d} by {division:?}"
            );
        }
    }

    fn mask(ty: ScalarType) -> u64 {
        if ty.bits() == 64 {
            u64::MAX
        } else {
            (1u64 << ty.bits()) - 1
        }
    }

    fn range(ty: ScalarType) -> std::ops::RangeInclusive<i128> {
        let n = ty.bits();
        if ty.is_signed_int() {
            -(1i128 << (n - 1))..=(1i128 << (n - 1)) - 1
        } else {
            0..=(1i128 << n) - 1
        }
    }

    /// The recipes run at the type's own width in these tests, so 8- and 16-bit types can be
    /// checked for every dividend and divisor (the pass runs them at 32 bits).
    fn at_own_width(ty: ScalarType, divisor: i128) -> Option<Division> {
        let d = eval::int_value(Constant::new(ty, divisor as u64 & mask(ty)));
        Division::at_width(ty.is_signed_int(), d, ty.bits(), ty.bits())
    }

    #[test]
    fn every_8_and_16_bit_division_at_its_own_width() {
        for ty in [S::U8, S::I8, S::U16, S::I16] {
            let divisors: Vec<i128> = if ty.bits() == 8 {
                range(ty).collect()
            } else {
                range(ty)
                    .step_by(97)
                    .chain([-3, 3, 7, 641, 32767, 65535])
                    .collect()
            };
            for d in divisors.into_iter().filter(|&d| d != 0) {
                let division = at_own_width(ty, d).expect("a recipe for every nonzero divisor");
                let signed = ty.is_signed_int();
                let d = eval::int_value(Constant::new(ty, d as u64 & mask(ty)));
                for x in range(ty) {
                    if signed && d == -1 && x == *range(ty).start() {
                        continue;
                    }
                    assert_eq!(division.quotient(x, signed), x / d, "{ty}: {x} / {d}");
                }
            }
        }
    }

    #[test]
    fn narrow_types_widened_to_32_bits() {
        for ty in [S::U8, S::I8, S::U16, S::I16] {
            for d in [3i128, 7, 10, 100, 127, -3, -100, 255, 1000] {
                check(ty, d, range(ty).step_by(3));
            }
        }
    }

    #[test]
    fn wide_divisions_on_extreme_and_random_dividends() {
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for ty in [S::U32, S::I32, S::U64, S::I64] {
            let n = ty.bits();
            let (lo, hi) = (*range(ty).start(), *range(ty).end());
            let mut divisors: Vec<i128> = vec![
                3,
                5,
                6,
                7,
                10,
                12,
                14,
                25,
                60,
                100,
                641,
                1000,
                6700417,
                0x7FFF_FFFF,
            ];
            divisors.extend([hi, hi - 1, hi / 2, hi / 2 + 1, hi / 3, lo + 1]);
            if ty.is_signed_int() {
                divisors.extend([-3, -7, -1000, lo, -1, -2, -64]);
            }
            for _ in 0..64 {
                divisors.push(eval::int_value(Constant::new(ty, next() & mask(ty))));
                divisors.push(i128::from(next() % 100_000));
            }
            for d in divisors
                .into_iter()
                .filter(|&d| d != 0 && d >= lo && d <= hi)
            {
                let mut xs = vec![lo, lo + 1, hi, hi - 1, 0, 1, -1, d, d - 1, d + 1, 2 * d];
                xs.retain(|x| (lo..=hi).contains(x));
                for _ in 0..2000 {
                    let bits = next() & mask(ty);
                    xs.push(eval::int_value(Constant::new(ty, bits)));
                    xs.push(eval::int_value(Constant::new(
                        ty,
                        bits >> (next() % u64::from(n)),
                    )));
                }
                check(ty, d, xs.into_iter());
            }
        }
    }
}
