//! The host model of [`Arith`]: the same calls evaluated with Rust's IEEE `f64` arithmetic
//! and PTX's integer semantics, and the accuracy checks the function tests share.

use super::{Arith, FCmp, FOp, FUn, ICmp, IOp, Table};

/// Evaluates [`Arith`] calls on the host, with variables in a vector.
#[derive(Default)]
pub(crate) struct Model {
    vars: Vec<f64>,
    ivars: Vec<u64>,
}

/// A 64-bit shift as PTX does it: amounts of 64 or more clamp to 64.
fn clamp_shift(b: u64) -> u32 {
    b.min(64) as u32
}

impl Arith for Model {
    type F = f64;
    type I = u64;
    type P = bool;
    type V = usize;
    type VI = usize;

    fn f(&mut self, v: f64) -> f64 {
        v
    }
    fn i(&mut self, v: i64) -> u64 {
        v as u64
    }
    fn fop(&mut self, op: FOp, a: f64, b: f64) -> f64 {
        match op {
            FOp::Add => a + b,
            FOp::Sub => a - b,
            FOp::Mul => a * b,
            FOp::Div => a / b,
            FOp::Min => a.min(b),
            FOp::Max => a.max(b),
        }
    }
    fn fma(&mut self, a: f64, b: f64, c: f64) -> f64 {
        a.mul_add(b, c)
    }
    fn fun(&mut self, op: FUn, a: f64) -> f64 {
        match op {
            FUn::Neg => -a,
            FUn::Abs => a.abs(),
            FUn::Sqrt => a.sqrt(),
            FUn::Rint => a.round_ties_even(),
        }
    }
    fn copysign(&mut self, mag: f64, sign: f64) -> f64 {
        mag.copysign(sign)
    }
    fn fcmp(&mut self, op: FCmp, a: f64, b: f64) -> bool {
        match op {
            FCmp::Lt => a < b,
            FCmp::Gt => a > b,
            FCmp::Ge => a >= b,
            FCmp::Eq => a == b,
            FCmp::Nan => a.is_nan() || b.is_nan(),
        }
    }
    fn fsel(&mut self, p: bool, a: f64, b: f64) -> f64 {
        if p { a } else { b }
    }
    fn isel(&mut self, p: bool, a: u64, b: u64) -> u64 {
        if p { a } else { b }
    }
    fn pand(&mut self, a: bool, b: bool) -> bool {
        a && b
    }
    fn por(&mut self, a: bool, b: bool) -> bool {
        a || b
    }
    fn pxor(&mut self, a: bool, b: bool) -> bool {
        a != b
    }
    fn to_bits(&mut self, a: f64) -> u64 {
        a.to_bits()
    }
    fn bits_f(&mut self, a: u64) -> f64 {
        f64::from_bits(a)
    }
    fn iop(&mut self, op: IOp, a: u64, b: u64) -> u64 {
        match op {
            IOp::Add => a.wrapping_add(b),
            IOp::Sub => a.wrapping_sub(b),
            IOp::And => a & b,
            IOp::Or => a | b,
            IOp::MulLo => a.wrapping_mul(b),
            IOp::MulHiU => ((u128::from(a) * u128::from(b)) >> 64) as u64,
            IOp::Shl => a.checked_shl(clamp_shift(b)).unwrap_or(0),
            IOp::ShrU => a.checked_shr(clamp_shift(b)).unwrap_or(0),
            IOp::ShrS => (a as i64 >> clamp_shift(b).min(63)) as u64,
        }
    }
    fn icmp(&mut self, op: ICmp, a: u64, b: u64) -> bool {
        match op {
            ICmp::Eq => a == b,
            ICmp::LtS => (a as i64) < (b as i64),
            ICmp::LtU => a < b,
        }
    }
    fn clz(&mut self, a: u64) -> u64 {
        u64::from(a.leading_zeros())
    }
    fn s2f(&mut self, a: u64) -> f64 {
        a as i64 as f64
    }
    fn u2f(&mut self, a: u64) -> f64 {
        a as f64
    }
    fn f2s(&mut self, a: f64) -> u64 {
        a as i64 as u64
    }
    fn load(&mut self, table: Table, idx: u64) -> u64 {
        let words = table.words();
        assert!(
            (idx as usize) < words.len(),
            "{table:?}[{idx}] is out of the table"
        );
        words[idx as usize]
    }
    fn var(&mut self, init: f64) -> usize {
        self.vars.push(init);
        self.vars.len() - 1
    }
    fn set(&mut self, v: usize, x: f64) {
        self.vars[v] = x;
    }
    fn get(&mut self, v: usize) -> f64 {
        self.vars[v]
    }
    fn ivar(&mut self, init: u64) -> usize {
        self.ivars.push(init);
        self.ivars.len() - 1
    }
    fn iset(&mut self, v: usize, x: u64) {
        self.ivars[v] = x;
    }
    fn iget(&mut self, v: usize) -> u64 {
        self.ivars[v]
    }
    fn when(&mut self, p: bool, body: impl FnOnce(&mut Self)) {
        if p {
            body(self);
        }
    }
}

/// Runs `f` on the model.
pub(crate) fn eval(f: &impl Fn(&mut Model, f64) -> f64, x: f64) -> f64 {
    f(&mut Model::default(), x)
}

/// Error of `got` against `want`, in ulps of `want` (the spacing of doubles at `want`).
pub(crate) fn ulps(got: f64, want: f64) -> f64 {
    if want.is_nan() || got.is_nan() {
        return if want.is_nan() && got.is_nan() {
            0.0
        } else {
            f64::INFINITY
        };
    }
    if want.is_infinite() || got.is_infinite() {
        return if got == want { 0.0 } else { f64::INFINITY };
    }
    let a = want.abs();
    let ulp = if a < f64::MIN_POSITIVE {
        f64::from_bits(1)
    } else {
        f64::from_bits(a.to_bits() + 1) - a
    };
    let diff = (got - want).abs();
    if diff.is_finite() {
        diff / ulp
    } else {
        // Halved, so the difference of huge values does not overflow.
        ((got / 2.0 - want / 2.0).abs() / ulp) * 2.0
    }
}

/// Error of an `f32` result against an `f64` reference, in ulps of the `f32` result's
/// binade.
pub(crate) fn ulps32(got: f32, want: f64) -> f64 {
    if want.is_nan() || got.is_nan() {
        return if want.is_nan() && got.is_nan() {
            0.0
        } else {
            f64::INFINITY
        };
    }
    let w = want as f32;
    if w.is_infinite() || got.is_infinite() {
        return if got == w { 0.0 } else { f64::INFINITY };
    }
    let a = w.abs();
    let ulp = if a < f32::MIN_POSITIVE {
        f64::from(f32::from_bits(1))
    } else {
        f64::from(f32::from_bits(a.to_bits() + 1) - a)
    };
    (f64::from(got) - want).abs() / ulp
}

/// Inputs in `[lo, hi]`: every binade of magnitudes (from the smallest subnormal) sampled
/// evenly by bit pattern, both signs where the range has them, and a splitmix sequence of
/// uniform ones.
pub(crate) fn samples(lo: f64, hi: f64, n: usize) -> Vec<f64> {
    let top = lo.abs().max(hi.abs());
    let end = top.to_bits();
    let step = (end / n as u64).max(1);
    let mut v: Vec<f64> = (1..=end)
        .step_by(step as usize)
        .map(f64::from_bits)
        .flat_map(|x| [x, -x])
        .filter(|x| (lo..=hi).contains(x))
        .collect();
    let mut s = 0x9E37_79B9_7F4A_7C15u64;
    for _ in 0..n {
        s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        let u = (z >> 11) as f64 / (1u64 << 53) as f64;
        v.push(lo + (hi - lo) * u);
    }
    v
}

/// Asserts that the model of `f` is within `bound` ulps of `reference` on [`samples`] of
/// `[lo, hi]`, and that its `f32` use (widen, compute, round once) is within 1 ulp of the
/// reference's `f64` result; prints the worst errors.
pub(crate) fn check(
    name: &str,
    f: impl Fn(&mut Model, f64) -> f64,
    reference: impl Fn(f64) -> f64,
    lo: f64,
    hi: f64,
    bound: f64,
) {
    let (mut worst, mut at) = (0.0f64, 0.0);
    for x in samples(lo, hi, 60_000) {
        let e = ulps(eval(&f, x), reference(x));
        if e > worst || e.is_nan() {
            (worst, at) = (e, x);
        }
    }
    eprintln!("{name} (f64): worst error {worst:.3} ulp at {at:e}");
    assert!(worst <= bound, "{name}: {worst} ulp at {at:e} ({at:?})");
    let (lo32, hi32) = (lo.max(f64::from(f32::MIN)), hi.min(f64::from(f32::MAX)));
    let (mut worst, mut at) = (0.0f64, 0.0f32);
    for x in samples(lo32, hi32, 20_000) {
        let x = x as f32;
        let got = eval(&f, f64::from(x)) as f32;
        let e = ulps32(got, reference(f64::from(x)));
        if e > worst || e.is_nan() {
            (worst, at) = (e, x);
        }
    }
    eprintln!("{name} (f32 through f64): worst error {worst:.3} ulp at {at:e}");
    assert!(worst <= 1.0, "{name} f32: {worst} ulp at {at:e}");
}

/// Asserts exact results (bit for bit, NaN as any NaN) at special inputs.
pub(crate) fn check_specials(f: impl Fn(&mut Model, f64) -> f64, cases: &[(f64, f64)]) {
    for &(x, want) in cases {
        let got = eval(&f, x);
        assert!(
            got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
            "f({x:e}) = {got:e}, want {want:e}"
        );
    }
    let got = eval(&f, f64::NAN);
    assert!(got.is_nan(), "f(NaN) = {got:e}");
}
