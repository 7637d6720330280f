//! `hypot(x, y)` of `f64`s: both scaled by the same power of two (from the larger one's
//! exponent, so the squares neither overflow nor underflow), the sum of squares kept exactly
//! as a double-double, its square root corrected by the residual, and the scale undone.

use super::exp::keep_nan;
use super::log::sqrt_dd;
use super::{Arith, FCmp, FOp, IOp};

/// `sqrt(x^2 + y^2)`: infinite when either is (even with a NaN), NaN when either is NaN.
pub(super) fn hypot<A: Arith>(m: &mut A, x: A::F, y: A::F) -> A::F {
    let ax = m.abs(x);
    let ay = m.abs(y);
    let a = m.fop(FOp::Max, ax, ay);
    let b = m.fop(FOp::Min, ax, ay);
    // a = 2^e (1.f): scale by 2^-e, e kept in [-1000, 1000] (exact both ways).
    let bits = m.to_bits(a);
    let be = m.iop_k(IOp::ShrU, bits, 52);
    let e = m.iop_k(IOp::Sub, be, 1023);
    let lo = m.i(-1000);
    let hi = m.i(1000);
    let below = m.icmp(super::ICmp::LtS, e, lo);
    let e = m.isel(below, lo, e);
    let above = m.icmp(super::ICmp::LtS, hi, e);
    let e = m.isel(above, hi, e);
    let zero_i = m.i(0);
    let ne = m.iop(IOp::Sub, zero_i, e);
    let down = m.pow2(ne);
    let up = m.pow2(e);
    let sa = m.mul(a, down);
    let sb = m.mul(b, down);
    let (p, pe) = m.two_prod(sa, sa);
    let (q, qe) = m.two_prod(sb, sb);
    let (s, se) = m.two_sum(p, q);
    let l = m.add(pe, qe);
    let l = m.add(se, l);
    let (rh, rl) = sqrt_dd(m, s, l);
    let r = m.add(rh, rl);
    let r = m.mul(r, up);
    // A zero operand: the other's magnitude, exactly.
    let zero = m.f(0.0);
    let b_zero = m.eq(b, zero);
    let r = m.fsel(b_zero, a, r);
    let nan = m.fcmp(FCmp::Nan, x, y);
    let s = m.add(x, y);
    let r = m.fsel(nan, s, r);
    let r = keep_nan(m, r, r);
    let inf = m.f(f64::INFINITY);
    let x_inf = m.eq(ax, inf);
    let y_inf = m.eq(ay, inf);
    let any_inf = m.por(x_inf, y_inf);
    m.fsel(any_inf, inf, r)
}

#[cfg(test)]
mod tests {
    use super::super::model::{Model, samples, ulps, ulps32};
    use super::*;

    fn hypot_of(x: f64, y: f64) -> f64 {
        hypot(&mut Model::default(), x, y)
    }

    #[test]
    fn hypot_model_is_accurate() {
        let xs = samples(-f64::MAX, f64::MAX, 300);
        let (mut worst, mut at) = (0.0f64, (0.0, 0.0));
        let (mut worst32, mut at32) = (0.0f64, (0.0f32, 0.0f32));
        for &x in &xs {
            for &y in xs.iter().step_by(3).chain(&[x * 0.75, x * 1.001]) {
                let e = ulps(hypot_of(x, y), x.hypot(y));
                if e > worst || e.is_nan() {
                    (worst, at) = (e, (x, y));
                }
                let (x32, y32) = (x as f32, y as f32);
                let got = hypot_of(f64::from(x32), f64::from(y32)) as f32;
                let e = ulps32(got, f64::from(x32).hypot(f64::from(y32)));
                if e > worst32 || e.is_nan() {
                    (worst32, at32) = (e, (x32, y32));
                }
            }
        }
        eprintln!("hypot (f64): worst error {worst:.3} ulp at {at:?}");
        eprintln!("hypot (f32 through f64): worst error {worst32:.3} ulp at {at32:?}");
        assert!(worst <= 1.0, "hypot: {worst} ulp at {at:?}");
        assert!(worst32 <= 1.0, "hypot f32: {worst32} ulp at {at32:?}");
        let special = [
            0.0,
            -0.0,
            3.0,
            -4.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
        ];
        for x in special {
            for y in special {
                let (got, want) = (hypot_of(x, y), x.hypot(y));
                assert!(
                    got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                    "hypot({x:e}, {y:e}) = {got:e}, want {want:e}"
                );
            }
        }
        assert_eq!(hypot_of(3.0, 4.0), 5.0);
        assert_eq!(hypot_of(f64::MAX, 1.0), f64::MAX);
        assert_eq!(
            hypot_of(f64::from_bits(3), f64::from_bits(4)),
            f64::from_bits(5)
        );
    }
}
