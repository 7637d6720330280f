//! `exp`, `exp2`, `sinh`, `cosh` and `tanh` of an `f64`, from one core: `x = k ln 2 + r`
//! (Cody–Waite, `r` kept as a double-double), `e^r` as a double-double from its Taylor
//! polynomial, and `2^k` applied in two exact steps so the result rounds once even where it
//! is subnormal or overflows.

use super::consts::*;
use super::{Arith, FOp, IOp};

/// `e^r` for `r = rh + rl`, `|rh| <= 0.35`, as a double-double `(eh, el)` (in [0.7, 1.42]),
/// to about 2^-60 relative.
pub(super) fn exp_poly<A: Arith>(m: &mut A, rh: A::F, rl: A::F) -> (A::F, A::F) {
    // e^(rh + rl) = e^rh (1 + rl) = 1 + rh + rh^2 Q(rh) + rl (1 + rh).
    let q = m.poly(rh, &EXP_TAYLOR);
    let z = m.mul(rh, rh);
    let q = m.mul(z, q);
    let lin = m.fma(rl, rh, rl);
    let tail = m.add(q, lin);
    let (ah, al) = m.fast_two_sum(rh, tail);
    let one = m.f(1.0);
    let (eh, e2) = m.fast_two_sum(one, ah);
    let el = m.add(e2, al);
    (eh, el)
}

/// `x = k ln 2 + (rh + rl)`: `k` (an integral `f64`) and the double-double remainder, for
/// `|x| <= 746`.
pub(super) fn reduce<A: Arith>(m: &mut A, x: A::F) -> (A::F, A::F, A::F) {
    let inv = m.k(INV_LN2);
    let kx = m.mul(x, inv);
    let k = m.fun(super::FUn::Rint, kx);
    let nk = m.neg(k);
    let (l1, l2, l3) = (m.k(LN2_1), m.k(LN2_2), m.k(LN2_3));
    // Exact: the difference is a multiple of ulp(LN2_1) below 1 in magnitude.
    let t = m.fma(nk, l1, x);
    let (p2, e2) = m.two_prod(k, l2);
    let np2 = m.neg(p2);
    let (s, se) = m.two_sum(t, np2);
    let lo = m.sub(se, e2);
    let lo = m.fma(nk, l3, lo);
    let (rh, rl) = m.fast_two_sum(s, lo);
    (k, rh, rl)
}

/// `y 2^k` for an integral `k` in [-1080, 1030], rounded once: `2^(k/2)` twice.
pub(super) fn scale<A: Arith>(m: &mut A, y: A::F, k: A::F) -> A::F {
    let ki = m.f2s(k);
    let k1 = m.iop_k(IOp::ShrS, ki, 1);
    let k2 = m.iop(IOp::Sub, ki, k1);
    let s1 = m.pow2(k1);
    let s2 = m.pow2(k2);
    let y = m.mul(y, s1);
    m.mul(y, s2)
}

/// `x` clamped to `[lo, hi]` (NaN goes to `lo`; callers restore it).
fn clamp<A: Arith>(m: &mut A, x: A::F, lo: f64, hi: f64) -> A::F {
    let (l, h) = (m.f(lo), m.f(hi));
    let x = m.fop(FOp::Max, x, l);
    m.fop(FOp::Min, x, h)
}

/// `r` where `x` is not NaN, else `x` (quietened).
pub(super) fn keep_nan<A: Arith>(m: &mut A, x: A::F, r: A::F) -> A::F {
    let nan = m.is_nan(x);
    let q = m.add(x, x);
    m.fsel(nan, q, r)
}

/// `e^x`.
pub(super) fn exp<A: Arith>(m: &mut A, x: A::F) -> A::F {
    let xc = clamp(m, x, -746.0, 710.0);
    let (k, rh, rl) = reduce(m, xc);
    let (eh, el) = exp_poly(m, rh, rl);
    let y = m.add(eh, el);
    let r = scale(m, y, k);
    keep_nan(m, x, r)
}

/// `2^x`: `x = k + r` exactly, `r ln 2` as a double-double.
pub(super) fn exp2<A: Arith>(m: &mut A, x: A::F) -> A::F {
    let xc = clamp(m, x, -1080.0, 1030.0);
    let k = m.fun(super::FUn::Rint, xc);
    let r = m.sub(xc, k);
    let (l1, l2) = (m.k(LN2_1), m.k(LN2_2));
    let (ph, pl) = m.two_prod(r, l1);
    let pl = m.fma(r, l2, pl);
    let (rh, rl) = m.fast_two_sum(ph, pl);
    let (eh, el) = exp_poly(m, rh, rl);
    let y = m.add(eh, el);
    let r = scale(m, y, k);
    keep_nan(m, x, r)
}

/// `sinh` or `cosh`. With `a = |x|`: below 1, `sinh` is its Taylor series; below 22,
/// `(E ∓ 1/E) / 2` with `E = e^a` a double-double; from 22 on `e^a / 2`, scaled by `2^(k-1)`
/// so it rounds once (and `sinh(710.4)` does not overflow on the way).
pub(super) fn sinh_cosh<A: Arith>(m: &mut A, x: A::F, cosh: bool) -> A::F {
    let a = m.abs(x);
    let cap = m.f(711.0);
    let ac = m.fop(FOp::Min, a, cap);
    let (k, rh, rl) = reduce(m, ac);
    let (eh, el) = exp_poly(m, rh, rl);
    // Large: e^a / 2.
    let y = m.add(eh, el);
    let one = m.f(1.0);
    let km1 = m.sub(k, one);
    let big = scale(m, y, km1);
    // Middle: k <= 32, so the scaling of both halves is exact.
    let sh = scale(m, eh, k);
    let sl = scale(m, el, k);
    let inv = m.div(one, sh);
    let half = m.f(0.5);
    let mid = if cosh {
        let t = m.add(inv, sl);
        let s = m.add(sh, t);
        m.mul(half, s)
    } else {
        let t = m.sub(inv, sl);
        let s = m.sub(sh, t);
        m.mul(half, s)
    };
    let limit = m.f(22.0);
    let is_big = m.ge(a, limit);
    let mut r = m.fsel(is_big, big, mid);
    if !cosh {
        // Small: a + a^3 (1/3! + a^2/5! + ...).
        let z = m.mul(a, a);
        let p = m.poly(z, &SINH_TAYLOR);
        let az = m.mul(a, z);
        let series = m.fma(az, p, a);
        let small = m.lt(a, one);
        r = m.fsel(small, series, r);
        r = m.copysign(r, x);
    }
    keep_nan(m, x, r)
}

/// `e^x - 1 = 2^k (eh + el) - 1`, the subtraction exact as a two-sum (so small `x` keeps
/// its bits); -1 below -40, the sign of a zero kept.
pub(super) fn exp_m1<A: Arith>(m: &mut A, x: A::F) -> A::F {
    let xc = clamp(m, x, -40.0, 710.0);
    let (k, rh, rl) = reduce(m, xc);
    let (eh, el) = exp_poly(m, rh, rl);
    let sh = scale(m, eh, k);
    let sl = scale(m, el, k);
    let minus_one = m.f(-1.0);
    let (t, te) = m.two_sum(sh, minus_one);
    let lo = m.add(te, sl);
    let r = m.add(t, lo);
    // Overflow: the two-sum of an infinity is NaN.
    let inf = m.f(f64::INFINITY);
    let over = m.eq(sh, inf);
    let r = m.fsel(over, inf, r);
    let zero = m.f(0.0);
    let is_zero = m.eq(x, zero);
    let r = m.fsel(is_zero, x, r);
    keep_nan(m, x, r)
}

/// `tanh x = em / (em + 2)` with `em = e^(2|x|) - 1` a double-double (exact subtraction of 1
/// from `E >= 1`), the division corrected by its residual; 1 from `|x| >= 22` on.
pub(super) fn tanh<A: Arith>(m: &mut A, x: A::F) -> A::F {
    let a = m.abs(x);
    let limit = m.f(22.0);
    let a2 = m.add(a, a);
    let cap = m.f(44.0);
    let ac = m.fop(FOp::Min, a2, cap);
    let (k, rh, rl) = reduce(m, ac);
    let (eh, el) = exp_poly(m, rh, rl);
    let bh = scale(m, eh, k);
    let bl = scale(m, el, k);
    let one = m.f(1.0);
    let bh1 = m.sub(bh, one);
    let (emh, eml) = m.fast_two_sum(bh1, bl);
    let two = m.f(2.0);
    let (dh, dl) = m.two_sum(emh, two);
    let dl = m.add(dl, eml);
    let q = m.div(emh, dh);
    let nq = m.neg(q);
    let res = m.fma(nq, dh, emh);
    let c = m.fma(nq, dl, eml);
    let res = m.add(res, c);
    let corr = m.div(res, dh);
    let t = m.add(q, corr);
    let is_big = m.ge(a, limit);
    let t = m.fsel(is_big, one, t);
    let t = m.copysign(t, x);
    keep_nan(m, x, t)
}

#[cfg(test)]
mod tests {
    use super::super::model::{check, check_specials};
    use super::*;

    #[test]
    fn exp_model_is_accurate() {
        check("exp", exp, f64::exp, -746.0, 710.0, 1.0);
        check_specials(
            exp,
            &[
                (0.0, 1.0),
                (-0.0, 1.0),
                (f64::INFINITY, f64::INFINITY),
                (f64::NEG_INFINITY, 0.0),
                (710.0, f64::INFINITY),
                (-746.0, 0.0),
            ],
        );
    }

    #[test]
    fn exp2_model_is_accurate() {
        check("exp2", exp2, f64::exp2, -1080.0, 1025.0, 1.0);
        check_specials(
            exp2,
            &[
                (0.0, 1.0),
                (10.0, 1024.0),
                (-1074.0, f64::from_bits(1)),
                (1024.0, f64::INFINITY),
                (f64::NEG_INFINITY, 0.0),
                (f64::INFINITY, f64::INFINITY),
            ],
        );
    }

    #[test]
    fn sinh_cosh_models_are_accurate() {
        check(
            "sinh",
            |m, x| sinh_cosh(m, x, false),
            f64::sinh,
            -711.0,
            711.0,
            1.0,
        );
        check(
            "cosh",
            |m, x| sinh_cosh(m, x, true),
            f64::cosh,
            -711.0,
            711.0,
            1.0,
        );
        check_specials(
            |m, x| sinh_cosh(m, x, false),
            &[
                (0.0, 0.0),
                (-0.0, -0.0),
                (f64::INFINITY, f64::INFINITY),
                (f64::NEG_INFINITY, f64::NEG_INFINITY),
                (711.0, f64::INFINITY),
                (-711.0, f64::NEG_INFINITY),
            ],
        );
        check_specials(
            |m, x| sinh_cosh(m, x, true),
            &[
                (0.0, 1.0),
                (-0.0, 1.0),
                (f64::INFINITY, f64::INFINITY),
                (f64::NEG_INFINITY, f64::INFINITY),
                (-711.0, f64::INFINITY),
            ],
        );
    }

    #[test]
    fn exp_m1_model_is_accurate() {
        check("exp_m1", exp_m1, f64::exp_m1, -750.0, 710.0, 1.0);
        check("exp_m1 near 0", exp_m1, f64::exp_m1, -1.0, 1.0, 1.0);
        check_specials(
            exp_m1,
            &[
                (0.0, 0.0),
                (-0.0, -0.0),
                (f64::INFINITY, f64::INFINITY),
                (f64::NEG_INFINITY, -1.0),
                (710.0, f64::INFINITY),
                (-100.0, -1.0),
            ],
        );
    }

    #[test]
    fn tanh_model_is_accurate() {
        check("tanh", tanh, f64::tanh, -30.0, 30.0, 2.0);
        check_specials(
            tanh,
            &[
                (0.0, 0.0),
                (-0.0, -0.0),
                (f64::INFINITY, 1.0),
                (f64::NEG_INFINITY, -1.0),
                (f64::MAX, 1.0),
            ],
        );
    }
}
