//! `ln`, `log2`, `asinh`, `acosh` and `atanh` of an `f64`, from one logarithm of a
//! double-double `xh + xl`: `x = 2^e m` with `m` in [sqrt(1/2), sqrt(2)), `f = m - 1` (exact),
//! `ln(1 + f) = f - (f^2/2 - s (f^2/2 + R(s^2)))` with `s = f / (2 + f)` and `R` the
//! `2 atanh` series, and `xl / xh` added as a first-order correction. Passing the low part
//! keeps `log1p`-like arguments (`1 + v` for small `v`) exact, so the inverse hyperbolic
//! functions need no logarithm of their own.

use super::consts::*;
use super::exp::keep_nan;
use super::{Arith, FUn, IOp};

/// `ln(xh + xl) = e ln 2 + fh + fl` for a positive finite `xh` (subnormal too), `|xl|` at
/// most an ulp of `xh`: returns `(e, fh, fl)`, `e` an integral `f64`.
pub(super) fn ln_core<A: Arith>(m: &mut A, xh: A::F, xl: A::F) -> (A::F, A::F, A::F) {
    let tiny = m.f(f64::MIN_POSITIVE);
    let sub = m.lt(xh, tiny);
    let up = m.f(2f64.powi(54));
    let xs = m.mul(xh, up);
    let xs = m.fsel(sub, xs, xh);
    let zero = m.f(0.0);
    let eadj = m.fsel_k(sub, -54.0, zero);
    let ib = m.to_bits(xs);
    let t = m.iop_k(IOp::Sub, ib, SQRT_HALF as i64);
    let e = m.iop_k(IOp::ShrS, t, 52);
    let eb = m.iop_k(IOp::Shl, e, 52);
    let mb = m.iop(IOp::Sub, ib, eb);
    let mm = m.bits_f(mb);
    let ef = m.s2f(e);
    let ef = m.add(ef, eadj);
    let one = m.f(1.0);
    let f = m.sub(mm, one);
    let two = m.f(2.0);
    let d = m.add(two, f);
    let s = m.div(f, d);
    let z = m.mul(s, s);
    let p = m.poly(z, &LOG_SERIES);
    let r = m.mul(z, p);
    let half = m.f(0.5);
    let hf = m.mul(half, f);
    let hfsq = m.mul(hf, f);
    let hr = m.add(hfsq, r);
    let ns = m.neg(s);
    let t = m.fma(ns, hr, hfsq);
    let nt = m.neg(t);
    let (fh, fl) = m.fast_two_sum(f, nt);
    let c = m.div(xl, xh);
    let fl = m.add(fl, c);
    (ef, fh, fl)
}

/// `e ln 2 + fh + fl`, rounded once (`log2`: `e + (fh + fl) log2 e`).
fn finish<A: Arith>(m: &mut A, ef: A::F, fh: A::F, fl: A::F, base2: bool) -> A::F {
    if base2 {
        let (l, ll) = (m.k(INV_LN2), m.k(LOG2E_LO));
        let (ph, pl) = m.two_prod(fh, l);
        let pl = m.fma(fh, ll, pl);
        let pl = m.fma(fl, l, pl);
        // |ph| <= 1/2 <= |e| unless e is 0.
        let (s1, s2) = m.fast_two_sum(ef, ph);
        let lo = m.add(s2, pl);
        m.add(s1, lo)
    } else {
        let (l1, l2) = (m.k(LN2_1), m.k(LN2_2));
        let (a1, a2) = m.two_prod(ef, l1);
        let (s1, s2) = m.two_sum(a1, fh);
        let lo = m.fma(ef, l2, fl);
        let lo = m.add(lo, a2);
        let lo = m.add(lo, s2);
        m.add(s1, lo)
    }
}

/// `ln(xh + xl) + bump ln 2` (`bump` 0 or 1), rounded once.
fn ln_dd<A: Arith>(m: &mut A, xh: A::F, xl: A::F, bump: A::F) -> A::F {
    let (ef, fh, fl) = ln_core(m, xh, xl);
    let ef = m.add(ef, bump);
    finish(m, ef, fh, fl, false)
}

/// `ln x` or `log2 x`: `-inf` at zeros, NaN below zero, `+inf` at `+inf`.
pub(super) fn ln<A: Arith>(m: &mut A, x: A::F, base2: bool) -> A::F {
    let zero = m.f(0.0);
    let (ef, fh, fl) = ln_core(m, x, zero);
    let r = finish(m, ef, fh, fl, base2);
    let inf = m.f(f64::INFINITY);
    let is_inf = m.eq(x, inf);
    let r = m.fsel(is_inf, inf, r);
    let neg = m.lt(x, zero);
    let r = m.fsel_k(neg, f64::NAN, r);
    let is_zero = m.eq(x, zero);
    let r = m.fsel_k(is_zero, f64::NEG_INFINITY, r);
    keep_nan(m, x, r)
}

/// `ln(1 + x)`: the logarithm of `1 + x` as an exact double-double; NaN below -1, `-inf`
/// at -1, the sign of a zero kept.
pub(super) fn ln_1p<A: Arith>(m: &mut A, x: A::F) -> A::F {
    let one = m.f(1.0);
    let (uh, ul) = m.two_sum(one, x);
    let zero = m.f(0.0);
    let r = ln_dd(m, uh, ul, zero);
    let inf = m.f(f64::INFINITY);
    let is_inf = m.eq(x, inf);
    let r = m.fsel(is_inf, inf, r);
    let minus_one = m.f(-1.0);
    let below = m.lt(x, minus_one);
    let r = m.fsel_k(below, f64::NAN, r);
    let at = m.eq(x, minus_one);
    let r = m.fsel_k(at, f64::NEG_INFINITY, r);
    let is_zero = m.eq(x, zero);
    let r = m.fsel(is_zero, x, r);
    keep_nan(m, x, r)
}

/// `sqrt(q + ql)` as a double-double `(s, sl)`, for `q >= 0` and `|ql|` below an ulp of `q`
/// (zero gives `(0, 0)`).
pub(super) fn sqrt_dd<A: Arith>(m: &mut A, q: A::F, ql: A::F) -> (A::F, A::F) {
    let s = m.fun(FUn::Sqrt, q);
    let ns = m.neg(s);
    let r = m.fma(ns, s, q);
    let r = m.add(r, ql);
    let s2 = m.add(s, s);
    let sl = m.div(r, s2);
    let zero = m.f(0.0);
    let is_zero = m.eq(s, zero);
    let sl = m.fsel(is_zero, zero, sl);
    (s, sl)
}

/// Where `|x| >= 2^28`, `ln(2|x|)` is `asinh`'s and `acosh`'s value to well under an ulp.
const LARGE: f64 = 268_435_456.0;

/// `asinh x = ln(a + sqrt(a^2 + 1))`, `a = |x|`, the argument a double-double (so small `a`
/// keeps its bits, as in `log1p`), `ln(2a)` for large `a`; the sign of `x`.
pub(super) fn asinh<A: Arith>(m: &mut A, x: A::F) -> A::F {
    let a = m.abs(x);
    let one = m.f(1.0);
    let (p, pe) = m.two_prod(a, a);
    let (q, qe) = m.two_sum(p, one);
    let qe = m.add(qe, pe);
    let (s, sl) = sqrt_dd(m, q, qe);
    let (wh, e1) = m.fast_two_sum(s, a);
    let wl = m.add(e1, sl);
    let large = m.f(LARGE);
    let big = m.ge(a, large);
    let zero = m.f(0.0);
    let xh = m.fsel(big, a, wh);
    let xl = m.fsel(big, zero, wl);
    let bump = m.fsel(big, one, zero);
    let r = ln_dd(m, xh, xl, bump);
    let inf = m.f(f64::INFINITY);
    let is_inf = m.eq(a, inf);
    let r = m.fsel(is_inf, inf, r);
    let r = m.copysign(r, x);
    keep_nan(m, x, r)
}

/// `acosh x = ln(x + sqrt(x^2 - 1))` with `x^2 - 1` exact as a double-double (accurate near
/// 1), `ln(2x)` for large `x`; NaN below 1.
pub(super) fn acosh<A: Arith>(m: &mut A, x: A::F) -> A::F {
    let (one, minus_one, zero) = (m.f(1.0), m.f(-1.0), m.f(0.0));
    let (p, pe) = m.two_prod(x, x);
    let (q, qe) = m.two_sum(p, minus_one);
    let qe = m.add(qe, pe);
    let (s, sl) = sqrt_dd(m, q, qe);
    let (wh, e1) = m.fast_two_sum(x, s);
    let wl = m.add(e1, sl);
    let large = m.f(LARGE);
    let big = m.ge(x, large);
    let xh = m.fsel(big, x, wh);
    let xl = m.fsel(big, zero, wl);
    let bump = m.fsel(big, one, zero);
    let r = ln_dd(m, xh, xl, bump);
    let inf = m.f(f64::INFINITY);
    let is_inf = m.eq(x, inf);
    let r = m.fsel(is_inf, inf, r);
    let below = m.lt(x, one);
    let r = m.fsel_k(below, f64::NAN, r);
    keep_nan(m, x, r)
}

/// `atanh x = ln(1 + 2a / (1 - a)) / 2`, `a = |x|`, the quotient a double-double; `±inf` at
/// `±1`, NaN beyond; the sign of `x`.
pub(super) fn atanh<A: Arith>(m: &mut A, x: A::F) -> A::F {
    let a = m.abs(x);
    let one = m.f(1.0);
    let na = m.neg(a);
    let (dh, dl) = m.two_sum(one, na);
    let num = m.add(a, a);
    let q = m.div(num, dh);
    let nq = m.neg(q);
    let c = m.fma(nq, dh, num);
    let c = m.fma(nq, dl, c);
    let ql = m.div(c, dh);
    let (uh, e) = m.two_sum(one, q);
    let ul = m.add(e, ql);
    let zero = m.f(0.0);
    let r = ln_dd(m, uh, ul, zero);
    let half = m.f(0.5);
    let r = m.mul(half, r);
    let is_one = m.eq(a, one);
    let r = m.fsel_k(is_one, f64::INFINITY, r);
    let beyond = m.gt(a, one);
    let r = m.fsel_k(beyond, f64::NAN, r);
    let r = m.copysign(r, x);
    keep_nan(m, x, r)
}

#[cfg(test)]
mod tests {
    use super::super::model::{check, check_specials};
    use super::*;

    const MAX: f64 = f64::MAX;

    #[test]
    fn ln_log2_models_are_accurate() {
        check("ln", |m, x| ln(m, x, false), f64::ln, 0.0, MAX, 1.0);
        check("log2", |m, x| ln(m, x, true), f64::log2, 0.0, MAX, 1.0);
        for base2 in [false, true] {
            check_specials(
                |m, x| ln(m, x, base2),
                &[
                    (0.0, f64::NEG_INFINITY),
                    (-0.0, f64::NEG_INFINITY),
                    (-1.0, f64::NAN),
                    (f64::NEG_INFINITY, f64::NAN),
                    (f64::INFINITY, f64::INFINITY),
                    (1.0, 0.0),
                ],
            );
        }
        check_specials(|m, x| ln(m, x, true), &[(1024.0, 10.0), (0.125, -3.0)]);
    }

    #[test]
    fn ln_1p_model_is_accurate() {
        check("ln_1p", ln_1p, f64::ln_1p, -1.0, MAX, 1.0);
        check("ln_1p near 0", ln_1p, f64::ln_1p, -0.5, 0.5, 1.0);
        check_specials(
            ln_1p,
            &[
                (0.0, 0.0),
                (-0.0, -0.0),
                (-1.0, f64::NEG_INFINITY),
                (-2.0, f64::NAN),
                (f64::INFINITY, f64::INFINITY),
                (f64::NEG_INFINITY, f64::NAN),
            ],
        );
    }

    #[test]
    fn inverse_hyperbolic_models_are_accurate() {
        check(
            "asinh",
            asinh,
            cuprum_ir::scalar::math::asinh,
            -MAX,
            MAX,
            1.0,
        );
        check(
            "acosh",
            acosh,
            cuprum_ir::scalar::math::acosh,
            1.0,
            MAX,
            1.0,
        );
        check(
            "acosh near 1",
            acosh,
            cuprum_ir::scalar::math::acosh,
            1.0,
            1.5,
            2.0,
        );
        check(
            "atanh",
            atanh,
            cuprum_ir::scalar::math::atanh,
            -1.0,
            1.0,
            1.0,
        );
        check_specials(
            asinh,
            &[
                (0.0, 0.0),
                (-0.0, -0.0),
                (f64::INFINITY, f64::INFINITY),
                (f64::NEG_INFINITY, f64::NEG_INFINITY),
            ],
        );
        check_specials(
            acosh,
            &[
                (1.0, 0.0),
                (0.5, f64::NAN),
                (0.0, f64::NAN),
                (-2.0, f64::NAN),
                (f64::INFINITY, f64::INFINITY),
                (f64::NEG_INFINITY, f64::NAN),
            ],
        );
        check_specials(
            atanh,
            &[
                (0.0, 0.0),
                (-0.0, -0.0),
                (1.0, f64::INFINITY),
                (-1.0, f64::NEG_INFINITY),
                (1.5, f64::NAN),
                (f64::INFINITY, f64::NAN),
            ],
        );
    }
}
