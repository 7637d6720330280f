//! `atan` and `atan2` of `f64`s. Both reduce to `atan t` for `t` in [0, 1] given as a
//! double-double (`1/|x|` or the smaller magnitude over the larger, each with its division's
//! residual), then `atan t = atan(j/16) + atan(u)`, `u = (t - j/16) / (1 + t j/16)` with `j`
//! the nearest sixteenth: `|u| <= 1/32`, so six terms of the odd series suffice, and the table
//! value (`atan(j/16)` as two doubles, from the module-scope tables) is added last. The
//! quadrant is a double-double sum with pi/2 or pi, rounded once.

use super::consts::*;
use super::exp::keep_nan;
use super::{Arith, FCmp, FUn, ICmp, Table};

/// `atan(th + tl)` for `th` in [0, 1], `|tl|` at most an ulp of `th`, as a double-double.
pub(super) fn atan_core<A: Arith>(m: &mut A, th: A::F, tl: A::F) -> (A::F, A::F) {
    let sixteen = m.f(16.0);
    let jt = m.mul(th, sixteen);
    let j = m.fun(FUn::Rint, jt);
    let step = m.f(0.0625);
    let c = m.mul(j, step);
    // Exact: th and c are within a factor 2 (or c is 0).
    let nh = m.sub(th, c);
    let (ph, pl) = m.two_prod(th, c);
    let one = m.f(1.0);
    let (dh, de) = m.fast_two_sum(one, ph);
    let dl = m.add(de, pl);
    let dl = m.fma(tl, c, dl);
    let u = m.div(nh, dh);
    let nu = m.neg(u);
    let r = m.fma(nu, dh, nh);
    let r = m.add(r, tl);
    let r = m.fma(nu, dl, r);
    let ul = m.div(r, dh);
    let z = m.mul(u, u);
    let p = m.poly(z, &ATAN_SERIES);
    let uz = m.mul(u, z);
    let tail = m.fma(uz, p, ul);
    let (sh, sl) = m.fast_two_sum(u, tail);
    // The table index, kept inside the table whatever `th` was (NaN gives 0).
    let ji = m.f2s(j);
    let last = m.i(16);
    let outside = m.icmp(ICmp::LtU, last, ji);
    let first = m.i(0);
    let ji = m.isel(outside, first, ji);
    let hi = m.load(Table::AtanHi, ji);
    let hi = m.bits_f(hi);
    let lo = m.load(Table::AtanLo, ji);
    let lo = m.bits_f(lo);
    let (ah, e) = m.two_sum(hi, sh);
    let al = m.add(e, sl);
    let al = m.add(al, lo);
    (ah, al)
}

/// `atan x`: `pi/2 - atan(1/|x|)` beyond 1 (exact subtraction of the high parts), the sign
/// of `x`.
pub(super) fn atan<A: Arith>(m: &mut A, x: A::F) -> A::F {
    let a = m.abs(x);
    let one = m.f(1.0);
    let inv = m.gt(a, one);
    let r = m.div(one, a);
    let nr = m.neg(r);
    let res = m.fma(nr, a, one);
    let rl = m.mul(res, r);
    let inf = m.f(f64::INFINITY);
    let is_inf = m.eq(a, inf);
    let zero = m.f(0.0);
    let rl = m.fsel(is_inf, zero, rl);
    let th = m.fsel(inv, r, a);
    let tl = m.fsel(inv, rl, zero);
    let (ah, al) = atan_core(m, th, tl);
    let (p1, p2) = (m.k(PIO2_1), m.k(PIO2_2));
    let bh = m.sub(p1, ah);
    let bl = m.sub(p2, al);
    let big = m.add(bh, bl);
    let small = m.add(ah, al);
    let v = m.fsel(inv, big, small);
    let v = m.copysign(v, x);
    keep_nan(m, x, v)
}

/// `atan2(y, x)` with C's and Rust's special values: `atan t`, `t` the smaller magnitude over
/// the larger, then `A`, `pi/2 - A`, `pi/2 + A` or `pi - A` by which is larger and the sign
/// bit of `x`, and the sign of `y`. Zeros over zeros give `t = 0`, infinities over
/// infinities `t = 1`.
pub(super) fn atan2<A: Arith>(m: &mut A, y: A::F, x: A::F) -> A::F {
    let ax = m.abs(x);
    let ay = m.abs(y);
    let swap = m.gt(ay, ax);
    let num = m.fsel(swap, ax, ay);
    let den = m.fsel(swap, ay, ax);
    let t = m.div(num, den);
    let nt = m.neg(t);
    let res = m.fma(nt, den, num);
    let tl = m.div(res, den);
    let (zero, one, inf) = (m.f(0.0), m.f(1.0), m.f(f64::INFINITY));
    let den_zero = m.eq(den, zero);
    let den_inf = m.eq(den, inf);
    let num_inf = m.eq(num, inf);
    let both_inf = m.pand(den_inf, num_inf);
    let t = m.fsel(den_zero, zero, t);
    let t = m.fsel(both_inf, one, t);
    let no_low = m.por(den_zero, den_inf);
    let tl = m.fsel(no_low, zero, tl);
    let (ah, al) = atan_core(m, t, tl);
    let xb = m.to_bits(x);
    let izero = m.i(0);
    let xneg = m.icmp(ICmp::LtS, xb, izero);
    let flip = m.pxor(swap, xneg);
    let nah = m.neg(ah);
    let nal = m.neg(al);
    let sah = m.fsel(flip, nah, ah);
    let sal = m.fsel(flip, nal, al);
    let (pih, pil, p1, p2) = (m.k(PI_HI), m.k(PI_LO), m.k(PIO2_1), m.k(PIO2_2));
    let bh = m.fsel(xneg, pih, zero);
    let bh = m.fsel(swap, p1, bh);
    let bl = m.fsel(xneg, pil, zero);
    let bl = m.fsel(swap, p2, bl);
    let (rh, re) = m.two_sum(bh, sah);
    let lo = m.add(bl, sal);
    let lo = m.add(lo, re);
    let r = m.add(rh, lo);
    let r = m.copysign(r, y);
    let nan = m.fcmp(FCmp::Nan, x, y);
    let s = m.add(x, y);
    m.fsel(nan, s, r)
}

#[cfg(test)]
mod tests {
    use super::super::model::{Model, check, check_specials, samples, ulps, ulps32};
    use super::*;

    #[test]
    fn atan_model_is_accurate() {
        check("atan", atan, f64::atan, -f64::MAX, f64::MAX, 1.0);
        check("atan near 1", atan, f64::atan, -4.0, 4.0, 1.0);
        let pio2 = std::f64::consts::FRAC_PI_2;
        check_specials(
            atan,
            &[
                (0.0, 0.0),
                (-0.0, -0.0),
                (f64::INFINITY, pio2),
                (f64::NEG_INFINITY, -pio2),
                (1.0, std::f64::consts::FRAC_PI_4),
            ],
        );
    }

    fn atan2_of(y: f64, x: f64) -> f64 {
        atan2(&mut Model::default(), y, x)
    }

    #[test]
    fn atan2_model_is_accurate() {
        let ys = samples(-f64::MAX, f64::MAX, 400);
        let xs = samples(-1e6, 1e6, 150);
        let (mut worst, mut at) = (0.0f64, (0.0, 0.0));
        let (mut worst32, mut at32) = (0.0f64, (0.0f32, 0.0f32));
        for &y in &ys {
            for &x in xs.iter().chain(&ys[..200]) {
                let e = ulps(atan2_of(y, x), y.atan2(x));
                if e > worst || e.is_nan() {
                    (worst, at) = (e, (y, x));
                }
                let (y32, x32) = (y as f32, x as f32);
                let got = atan2_of(f64::from(y32), f64::from(x32)) as f32;
                let e = ulps32(got, f64::from(y32).atan2(f64::from(x32)));
                if e > worst32 || e.is_nan() {
                    (worst32, at32) = (e, (y32, x32));
                }
            }
        }
        eprintln!("atan2 (f64): worst error {worst:.3} ulp at {at:?}");
        eprintln!("atan2 (f32 through f64): worst error {worst32:.3} ulp at {at32:?}");
        assert!(worst <= 1.0, "atan2: {worst} ulp at {at:?}");
        assert!(worst32 <= 1.0, "atan2 f32: {worst32} ulp at {at32:?}");
        let special = [
            0.0,
            -0.0,
            1.0,
            -1.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            f64::MIN_POSITIVE,
            f64::MAX,
        ];
        for y in special {
            for x in special {
                let (got, want) = (atan2_of(y, x), y.atan2(x));
                assert!(
                    got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                    "atan2({y:e}, {x:e}) = {got:e}, want {want:e}"
                );
            }
        }
    }
}
