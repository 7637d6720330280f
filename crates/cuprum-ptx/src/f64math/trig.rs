//! `sin`, `cos` and `tan` of an `f64`: `x = q pi/2 + r`, `|r| <= pi/4` a double-double,
//! Taylor polynomials for `sin r` and `cos r` (double-doubles too), and the quadrant `q mod 4`
//! picks, signs or divides them.
//!
//! The reduction is Cody–Waite with a three-part pi/2 below 2^28 (the first product is exact
//! with `fma`, the second split exactly, so `r` keeps about 100 bits even next to a multiple of
//! pi/2), and above it exact: Payne–Hanek in 64-bit integer arithmetic, the 53-bit mantissa
//! times the 192 bits of 2/pi that matter modulo 4 (from the module-scope table), normalized
//! by its leading zeros so the closest doubles to multiples of pi/2 (about 2^-61 away) keep
//! full precision. The reduction of large arguments is a branch; the rest is straight code.

use super::consts::*;
use super::{Arith, FUn, ICmp, IOp, Table};

/// Which function of the reduced argument.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Which {
    Sin,
    Cos,
    Tan,
}

/// From here on the exact reduction is used.
const CODY_WAITE_LIMIT: f64 = 268_435_456.0;

/// `x = q pi/2 + (rh + rl)`: returns `(rh, rl, q)` (`q` an integer whose low two bits count).
pub(super) fn reduce<A: Arith>(m: &mut A, x: A::F) -> (A::F, A::F, A::I) {
    let c = m.k(TWO_OVER_PI);
    let kx = m.mul(x, c);
    let k = m.fun(FUn::Rint, kx);
    let nk = m.neg(k);
    let (p1, p2, p3) = (m.k(PIO2_1), m.k(PIO2_2), m.k(PIO2_3));
    // Exact: a multiple of ulp(PIO2_1) below 1 in magnitude.
    let t = m.fma(nk, p1, x);
    let (q2, e2) = m.two_prod(k, p2);
    let nq2 = m.neg(q2);
    let (s, se) = m.two_sum(t, nq2);
    let lo = m.sub(se, e2);
    let lo = m.fma(nk, p3, lo);
    let (rh, rl) = m.fast_two_sum(s, lo);
    let q = m.f2s(k);
    let (vh, vl, vq) = (m.var(rh), m.var(rl), m.ivar(q));
    let ax = m.abs(x);
    let limit = m.f(CODY_WAITE_LIMIT);
    let big = m.ge(ax, limit);
    m.when(big, |m| {
        let (rh, rl, q) = payne_hanek(m, x);
        m.set(vh, rh);
        m.set(vl, rl);
        m.iset(vq, q);
    });
    (m.get(vh), m.get(vl), m.iget(vq))
}

/// The exact reduction of `|x| >= 2^28` (finite; infinities give garbage the callers
/// replace).
fn payne_hanek<A: Arith>(m: &mut A, x: A::F) -> (A::F, A::F, A::I) {
    let ib = m.to_bits(x);
    let ib = m.iop_k(IOp::And, ib, i64::MAX);
    let be = m.iop_k(IOp::ShrU, ib, 52);
    let frac = m.iop_k(IOp::And, ib, (1 << 52) - 1);
    let mant = m.iop_k(IOp::Or, frac, 1 << 52);
    // x = mant 2^E, E = be - 1075. The product bits of weight 4 and more drop out mod 4, so
    // the window starts at bit E - 1 of 2/pi (bit i has weight 2^-i), which is bit
    // g = 63 + E - 1 = be - 1013 of the zero-padded table, counting from its first bit.
    let g = m.iop_k(IOp::Sub, be, 1013);
    let j = m.iop_k(IOp::ShrU, g, 6);
    let o = m.iop_k(IOp::And, g, 63);
    let no = m.i(64);
    let no = m.iop(IOp::Sub, no, o);
    let words: Vec<A::I> = (0..4)
        .map(|i| {
            let idx = m.iop_k(IOp::Add, j, i);
            m.load(Table::TwoOverPi, idx)
        })
        .collect();
    let window = |m: &mut A, hi: A::I, lo: A::I| {
        let a = m.iop(IOp::Shl, hi, o);
        let b = m.iop(IOp::ShrU, lo, no);
        m.iop(IOp::Or, a, b)
    };
    let w0 = window(m, words[0], words[1]);
    let w1 = window(m, words[1], words[2]);
    let w2 = window(m, words[2], words[3]);
    // mant * (w0:w1:w2) mod 2^192, as r0:r1:r2; its value is that times 2^-190.
    let r2 = m.iop(IOp::MulLo, mant, w2);
    let h2 = m.iop(IOp::MulHiU, mant, w2);
    let l1 = m.iop(IOp::MulLo, mant, w1);
    let h1 = m.iop(IOp::MulHiU, mant, w1);
    let l0 = m.iop(IOp::MulLo, mant, w0);
    let r1 = m.iop(IOp::Add, h2, l1);
    let carry = m.icmp(ICmp::LtU, r1, h2);
    let (one, zero) = (m.i(1), m.i(0));
    let c1 = m.isel(carry, one, zero);
    let r0 = m.iop(IOp::Add, h1, l0);
    let r0 = m.iop(IOp::Add, r0, c1);
    // Two integer bits: the quadrant; the fraction as a signed 128-bit number f_hi:f_lo in
    // [-1/2, 1/2) of a quadrant (a negative one rounds the quadrant up).
    let q = m.iop_k(IOp::ShrU, r0, 62);
    let a = m.iop_k(IOp::Shl, r0, 2);
    let b = m.iop_k(IOp::ShrU, r1, 62);
    let f_hi = m.iop(IOp::Or, a, b);
    let a = m.iop_k(IOp::Shl, r1, 2);
    let b = m.iop_k(IOp::ShrU, r2, 62);
    let f_lo = m.iop(IOp::Or, a, b);
    let neg = m.icmp(ICmp::LtS, f_hi, zero);
    let q1 = m.iop(IOp::Add, q, one);
    let q = m.isel(neg, q1, q);
    // |f| by two's complement negation across the two words.
    let n_lo = m.iop(IOp::Sub, zero, f_lo);
    let lo_zero = m.icmp(ICmp::Eq, f_lo, zero);
    let borrow = m.isel(lo_zero, zero, one);
    let n_hi = m.iop(IOp::Sub, zero, f_hi);
    let n_hi = m.iop(IOp::Sub, n_hi, borrow);
    let f_hi = m.isel(neg, n_hi, f_hi);
    let f_lo = m.isel(neg, n_lo, f_lo);
    // Normalized: the top 53 bits exactly, the next 64 rounded.
    let lz = m.clz(f_hi);
    let nlz = m.i(64);
    let nlz = m.iop(IOp::Sub, nlz, lz);
    let a = m.iop(IOp::Shl, f_hi, lz);
    let b = m.iop(IOp::ShrU, f_lo, nlz);
    let hi = m.iop(IOp::Or, a, b);
    let lo = m.iop(IOp::Shl, f_lo, lz);
    let top = m.iop_k(IOp::ShrU, hi, 11);
    let a = m.iop_k(IOp::Shl, hi, 53);
    let b = m.iop_k(IOp::ShrU, lo, 11);
    let rest = m.iop(IOp::Or, a, b);
    let fa = m.u2f(top);
    let fb = m.u2f(rest);
    // |f| = top 2^(-53-lz) + rest 2^(-117-lz) quadrants.
    let ea = m.i(-53);
    let ea = m.iop(IOp::Sub, ea, lz);
    let eb = m.i(-117);
    let eb = m.iop(IOp::Sub, eb, lz);
    let sa = m.pow2(ea);
    let sb = m.pow2(eb);
    let fh = m.mul(fa, sa);
    let fl = m.mul(fb, sb);
    // r = f pi/2 as a double-double.
    let (ph, pl) = (m.k(PIO2_1), m.k(PIO2_2));
    let (rh, e) = m.two_prod(fh, ph);
    let e = m.fma(fh, pl, e);
    let e = m.fma(fl, ph, e);
    let (rh, rl) = m.fast_two_sum(rh, e);
    // Signs: of the fraction, and of x (which also negates the quadrant).
    let fz = m.f(0.0);
    let xneg = m.lt(x, fz);
    let flip = m.pxor(neg, xneg);
    let nrh = m.neg(rh);
    let nrl = m.neg(rl);
    let rh = m.fsel(flip, nrh, rh);
    let rl = m.fsel(flip, nrl, rl);
    let nq = m.iop(IOp::Sub, zero, q);
    let q = m.isel(xneg, nq, q);
    (rh, rl, q)
}

/// `sin r` and `cos r` for `r = rh + rl`, `|rh| <= pi/4 + ε`, each a double-double.
#[allow(clippy::type_complexity)]
pub(super) fn sin_cos_dd<A: Arith>(m: &mut A, rh: A::F, rl: A::F) -> ((A::F, A::F), (A::F, A::F)) {
    let (zh, ze) = m.two_prod(rh, rh);
    let rr = m.mul(rh, rl);
    let two = m.f(2.0);
    let zl = m.fma(two, rr, ze);
    // sin r = rh + (rh z S(z) + rl (1 - z/2)).
    let sp = m.poly(zh, &SIN_TAYLOR);
    let rz = m.mul(rh, zh);
    let half = m.f(0.5);
    let nhz = m.mul(half, zh);
    let nhz = m.neg(nhz);
    let lin = m.fma(nhz, rl, rl);
    let ts = m.fma(rz, sp, lin);
    let s = m.fast_two_sum(rh, ts);
    // cos r = (1 - z/2) + z^2 C(z) - zl/2, the first subtraction's error kept.
    let hz = m.mul(half, zh);
    let one = m.f(1.0);
    let w = m.sub(one, hz);
    let d = m.sub(one, w);
    let we = m.sub(d, hz);
    let cp = m.poly(zh, &COS_TAYLOR);
    let z2 = m.mul(zh, zh);
    let nhl = m.mul(half, zl);
    let nhl = m.neg(nhl);
    let tc = m.fma(z2, cp, nhl);
    let tc = m.add(we, tc);
    let c = m.fast_two_sum(w, tc);
    (s, c)
}

/// `sin x`, `cos x` or `tan x`; NaN at infinities, and `sin`/`tan` keep the sign of zero.
pub(super) fn sin_cos_tan<A: Arith>(m: &mut A, x: A::F, which: Which) -> A::F {
    let (rh, rl, q) = reduce(m, x);
    let ((sh, sl), (ch, cl)) = sin_cos_dd(m, rh, rl);
    let q = if which == Which::Cos {
        // cos x = sin(x + pi/2): one quadrant further.
        m.iop_k(IOp::Add, q, 1)
    } else {
        q
    };
    let zero = m.i(0);
    let bit0 = m.iop_k(IOp::And, q, 1);
    let even = m.icmp(ICmp::Eq, bit0, zero);
    let bit1 = m.iop_k(IOp::And, q, 2);
    let pos = m.icmp(ICmp::Eq, bit1, zero);
    let v = if which == Which::Tan {
        // Even quadrants: s / c; odd ones: -c / s. The quotient corrected by its residual.
        let nh = m.fsel(even, sh, ch);
        let nl = m.fsel(even, sl, cl);
        let dh = m.fsel(even, ch, sh);
        let dl = m.fsel(even, cl, sl);
        let t = m.div(nh, dh);
        let nt = m.neg(t);
        let res = m.fma(nt, dh, nh);
        let res = m.add(res, nl);
        let res = m.fma(nt, dl, res);
        let corr = m.div(res, dh);
        let t = m.add(t, corr);
        let negt = m.neg(t);
        m.fsel(even, t, negt)
    } else {
        let v = m.fsel(even, sh, ch);
        let nv = m.neg(v);
        m.fsel(pos, v, nv)
    };
    let ax = m.abs(x);
    let inf = m.f(f64::INFINITY);
    let is_inf = m.eq(ax, inf);
    let v = m.fsel_k(is_inf, f64::NAN, v);
    let v = if which == Which::Cos {
        v
    } else {
        let fz = m.f(0.0);
        let is_zero = m.eq(x, fz);
        m.fsel(is_zero, x, v)
    };
    super::exp::keep_nan(m, x, v)
}

#[cfg(test)]
mod tests {
    use super::super::model::{Model, check, check_specials, eval, ulps};
    use super::*;

    const MAX: f64 = f64::MAX;

    #[test]
    fn sin_cos_tan_models_are_accurate() {
        for (name, which, reference) in [
            ("sin", Which::Sin, f64::sin as fn(f64) -> f64),
            ("cos", Which::Cos, f64::cos),
            ("tan", Which::Tan, f64::tan),
        ] {
            let f = move |m: &mut Model, x| sin_cos_tan(m, x, which);
            check(name, f, reference, -MAX, MAX, 1.0);
            check(name, f, reference, -1e9, 1e9, 1.0);
        }
        let sin = |m: &mut Model, x| sin_cos_tan(m, x, Which::Sin);
        let cos = |m: &mut Model, x| sin_cos_tan(m, x, Which::Cos);
        let tan = |m: &mut Model, x| sin_cos_tan(m, x, Which::Tan);
        let specials = [(f64::INFINITY, f64::NAN), (f64::NEG_INFINITY, f64::NAN)];
        check_specials(sin, &[(0.0, 0.0), (-0.0, -0.0), specials[0], specials[1]]);
        check_specials(tan, &[(0.0, 0.0), (-0.0, -0.0), specials[0], specials[1]]);
        check_specials(cos, &[(0.0, 1.0), (-0.0, 1.0), specials[0], specials[1]]);
    }

    /// Near multiples of pi/2 (the first is the double closest to one, about 2^-61 away),
    /// around the switch to the exact reduction, and at the top: `(x, [sin, cos, tan])`, the
    /// results correctly rounded (computed with 4000-bit arithmetic, mpmath).
    const HARD: [(u64, [u64; 3]); 9] = [
        (
            0x7506AC5B262CA1FF,
            [0x3FF0000000000000, 0xBC214AE72E6BA22F, 0xC3BD9BA9A7975636],
        ),
        (
            0x3FF921FB54442D18,
            [0x3FF0000000000000, 0x3C91A62633145C07, 0x434D02967C31CDB5],
        ),
        (
            0x400921FB54442D18,
            [0x3CA1A62633145C07, 0xBFF0000000000000, 0xBCA1A62633145C07],
        ),
        (
            0x4012D97C7F3321D2,
            [0xBFF0000000000000, 0xBCAA79394C9E8A0A, 0x4333570EFD768923],
        ),
        (
            0x4480F0CF064DD592,
            [0xBFEB453AB76BF397, 0x3FE0BE2CEF01C8F4, 0xBFFA0F79C1B6B257],
        ),
        (
            0x41B0000000000000,
            [0xBFEF8EEF8D66D4EA, 0xBFC5315D441272DE, 0x4017D35F7F371FF6],
        ),
        (
            0x41AFFFFFFFCCCCCD,
            [0xBFEEDF2AA47BD837, 0xBFD0D839B886AE0D, 0x400D52E1F0D3C7C9],
        ),
        (
            0x7FEFFFFFFFFFFFFF,
            [0x3F7452FC98B34E97, 0xBFEFFFE62ECFAB75, 0xBF74530CFE729484],
        ),
        (
            0x7E37E43C8800759C,
            [0xBFEA2C16B010E385, 0xBFE2699022ADC4C1, 0x3FF6BE411F37AC77],
        ),
    ];

    #[test]
    fn reduction_of_hard_cases_is_accurate() {
        for (x, want) in HARD {
            for (which, want) in [Which::Sin, Which::Cos, Which::Tan].into_iter().zip(want) {
                for sign in [1.0, -1.0] {
                    let x = sign * f64::from_bits(x);
                    let want = f64::from_bits(want) * if which == Which::Cos { 1.0 } else { sign };
                    let got = eval(&|m: &mut Model, x| sin_cos_tan(m, x, which), x);
                    let e = ulps(got, want);
                    assert!(e <= 1.0, "{x:e}: {got:e} vs {want:e} ({e} ulp)");
                }
            }
        }
    }
}
