//! Host-side helpers cuTile Rust programs use to check results (`cutile::utils`).

use half::{bf16, f16};

/// Closeness of floats, for checking results.
pub trait Float: Copy {
    /// Whether `|self - other| < tolerance` (computed in `f64`).
    fn close(&self, other: Self, tolerance: Self) -> bool;
    /// Whether `self` and `other` differ by less than the type's machine epsilon.
    fn epsilon_close(&self, other: Self) -> bool;
}

macro_rules! floats {
    ($($t:ty => $wide:expr, $eps:expr;)*) => { $(
        impl Float for $t {
            fn close(&self, other: Self, tolerance: Self) -> bool {
                let wide = $wide;
                (wide(*self) - wide(other)).abs() < wide(tolerance)
            }
            fn epsilon_close(&self, other: Self) -> bool {
                self.close(other, $eps)
            }
        }
    )* };
}

floats! {
    f16 => |v: f16| v.to_f64(), f16::EPSILON;
    bf16 => |v: bf16| v.to_f64(), bf16::EPSILON;
    f32 => f64::from, f32::EPSILON;
    f64 => |v: f64| v, f64::EPSILON;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closeness_is_strict_and_symmetric() {
        assert!(1.0f32.epsilon_close(1.0 + f32::EPSILON / 2.0));
        assert!(!1.0f32.epsilon_close(1.0 + 2.0 * f32::EPSILON));
        assert!(2.0f64.close(2.5, 0.51) && 2.5f64.close(2.0, 0.51));
        assert!(!2.0f64.close(2.5, 0.5));
        assert!(f16::ONE.epsilon_close(f16::ONE));
        assert!(!f16::ONE.epsilon_close(f16::from_f32(1.01)));
        assert!(!bf16::ONE.epsilon_close(bf16::from_f32(1.1)));
    }
}
