//! The values of the transcendental functions the IR has beyond the oldest few (`Tan`,
//! `Atan`, `Atan2`, `Sinh`, `Cosh`, `Asinh`, `Acosh`, `Atanh`, `ExpM1`, `Ln1p`, `Hypot`): what
//! the emulator computes and what the GPU's sequences are measured against.
//!
//! Each is defined on `f64` by Rust's `std` (the platform's libm, within about an ulp), except
//! the inverse hyperbolic functions, whose `std` versions lose accuracy (`acosh` near 1 and
//! `atanh` near -1 by thousands of ulp or more, `asinh` and `acosh` overflow to infinity above
//! `f64::MAX / 2`): they use the usual accurate forms (`log1p` near the origin, `ln(2x)` for
//! large `x`). `f32` and the 16-bit floats compute in
//! `f64` and round once ([`Real::via`]), so they are almost always correctly rounded.

use std::f64::consts::LN_2;

/// Above this, `asinh` and `acosh` are `ln(2x)` to well under an ulp.
const LARGE: f64 = 268_435_456.0;

/// A float type computed through the `f64` definitions here.
pub trait Real: Copy {
    /// `f(self)` computed in `f64`, rounded once to `Self`.
    fn via(self, f: fn(f64) -> f64) -> Self;
    /// `f(self, other)` computed in `f64`, rounded once to `Self`.
    fn via2(self, other: Self, f: fn(f64, f64) -> f64) -> Self;
    /// `self`, or a zero of its sign where it is an `f32` subnormal: PTX's `.ftz` (flush to
    /// zero), which applies to `f32` only, so `f64` keeps every value.
    fn flushed(self) -> Self;
}

impl Real for f64 {
    fn via(self, f: fn(f64) -> f64) -> f64 {
        f(self)
    }
    fn via2(self, other: f64, f: fn(f64, f64) -> f64) -> f64 {
        f(self, other)
    }
    fn flushed(self) -> f64 {
        self
    }
}

impl Real for f32 {
    fn via(self, f: fn(f64) -> f64) -> f32 {
        f(f64::from(self)) as f32
    }
    fn via2(self, other: f32, f: fn(f64, f64) -> f64) -> f32 {
        f(f64::from(self), f64::from(other)) as f32
    }
    fn flushed(self) -> f32 {
        if self.is_subnormal() {
            0.0f32.copysign(self)
        } else {
            self
        }
    }
}

/// Tangent.
pub fn tan(x: f64) -> f64 {
    x.tan()
}

/// Arctangent.
pub fn atan(x: f64) -> f64 {
    x.atan()
}

/// `atan2(y, x)`, C's special values.
pub fn atan2(y: f64, x: f64) -> f64 {
    y.atan2(x)
}

/// Hyperbolic sine.
pub fn sinh(x: f64) -> f64 {
    x.sinh()
}

/// Hyperbolic cosine.
pub fn cosh(x: f64) -> f64 {
    x.cosh()
}

/// Inverse hyperbolic tangent: `log1p(2a / (1 - a)) / 2` of `a = |x|`, the sign of `x`
/// (`std`'s loses accuracy near -1, where its `log1p` argument nears -1).
pub fn atanh(x: f64) -> f64 {
    let a = x.abs();
    (0.5 * (2.0 * a / (1.0 - a)).ln_1p()).copysign(x)
}

/// `e^x - 1`.
pub fn exp_m1(x: f64) -> f64 {
    x.exp_m1()
}

/// `ln(1 + x)`.
pub fn ln_1p(x: f64) -> f64 {
    x.ln_1p()
}

/// `sqrt(x^2 + y^2)` without overflow on the way, C's special values.
pub fn hypot(x: f64, y: f64) -> f64 {
    x.hypot(y)
}

/// Inverse hyperbolic sine, accurate over the whole range.
pub fn asinh(x: f64) -> f64 {
    let a = x.abs();
    let r = if a >= LARGE {
        a.ln() + LN_2
    } else if a >= 2.0 {
        (2.0 * a + 1.0 / ((a * a + 1.0).sqrt() + a)).ln()
    } else {
        let a2 = a * a;
        (a + a2 / (1.0 + (a2 + 1.0).sqrt())).ln_1p()
    };
    r.copysign(x)
}

/// Inverse hyperbolic cosine, accurate over the whole range (NaN below 1).
pub fn acosh(x: f64) -> f64 {
    if x.is_nan() || x < 1.0 {
        f64::NAN
    } else if x >= LARGE {
        x.ln() + LN_2
    } else if x >= 2.0 {
        (2.0 * x - 1.0 / (x + (x * x - 1.0).sqrt())).ln()
    } else {
        let t = x - 1.0;
        (t + (2.0 * t + t * t).sqrt()).ln_1p()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inverse_hyperbolic_functions_are_accurate_where_std_is_not() {
        // acosh(1 + d) = sqrt(2d) (1 - d/12 + ...).
        let d = 2f64.powi(-40);
        let want = (2.0 * d).sqrt() * (1.0 - d / 12.0);
        assert!((acosh(1.0 + d) - want).abs() <= want * 2.0 * f64::EPSILON);
        assert!(((asinh(f64::MAX) - 710.475_860_073_943_9) / 710.0).abs() < 1e-15);
        assert!(((acosh(f64::MAX) - 710.475_860_073_943_9) / 710.0).abs() < 1e-15);
        assert!(asinh(-0.0).is_sign_negative() && asinh(-0.0) == 0.0);
        assert_eq!(acosh(1.0), 0.0);
        assert!(acosh(0.999).is_nan() && acosh(f64::NAN).is_nan());
        assert_eq!(asinh(f64::NEG_INFINITY), f64::NEG_INFINITY);
        assert_eq!(acosh(f64::INFINITY), f64::INFINITY);
        assert!(f32::MAX.via(asinh).is_finite());
        assert_eq!(atanh(-1.0), f64::NEG_INFINITY);
        assert!(atanh(-0.0).is_sign_negative() && atanh(1.5).is_nan());
        let x = -0.999_999_999_993_626_5;
        assert!((atanh(x) + 13.236_013_112_071_067).abs() < 1e-14);
    }
}
