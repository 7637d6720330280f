//! The numbers generic device code computes with: [`Num`], so that a kernel or helper generic
//! over its element type (`fn reduce<T: Num>(..)`) can start a sum at `T::ZERO`, a product at
//! `T::ONE`, a maximum at `T::MIN`, and add, compare and assign `T`s, then be specialized to
//! `f32`, `f64`, `i32`, `u32`, ... when launched.
//!
//! The compiler reads `T::ZERO`, `T::ONE`, `T::MIN`, `T::MAX`, `T::default()` and
//! `Default::default()` (whose type comes from where its value goes) as constants of the
//! specialization's type; the trait itself exists for rustc, which type-checks kernel bodies
//! on the host. Its operators are the scalar types' own, with Rust's meaning (integer
//! arithmetic wraps in device code, as in a release build).
//!
//! ```
//! use cuprum::simt::{kernel, launch_contract, thread, DisjointSlice, Num};
//! use cuprum::{cuda_module, CudaContext, DeviceBuffer, LaunchConfig1D};
//!
//! #[cuda_module]
//! mod kernels {
//!     use super::*;
//!
//!     /// The sum of each row of `width` elements.
//!     #[kernel]
//!     #[launch_contract(domain = 1, block = (32, 1, 1))]
//!     pub fn row_sums<T: Num>(x: &[T], width: usize, mut sums: DisjointSlice<T>) {
//!         let i = thread::index_1d();
//!         if let Some(out) = sums.get_mut(i) {
//!             let mut acc = T::ZERO;
//!             for k in 0..width {
//!                 acc += x[i.get() * width + k];
//!             }
//!             *out = acc;
//!         }
//!     }
//! }
//!
//! # fn main() -> cuprum::Result<()> {
//! let ctx = CudaContext::new(0)?;
//! let stream = ctx.default_stream();
//! let module = kernels::load(&ctx)?;
//! let prepared = module.prepare_row_sums(LaunchConfig1D::new(1, 32, 0))?;
//! let x = DeviceBuffer::from_host(&stream, &[1u32, 2, 3, 4, 5, 6])?;
//! let mut sums = DeviceBuffer::from_host(&stream, &[u32::MAX; 2])?;
//! module.row_sums(&stream, &prepared, &x, 3, &mut sums)?;
//! assert_eq!(sums.to_host_vec(&stream)?, vec![6, 15]);
//! # Ok(())
//! # }
//! ```

use std::ops::{Add, AddAssign, Div, DivAssign, Mul, MulAssign, Rem, RemAssign, Sub, SubAssign};

use crate::DeviceScalar;

/// A scalar type that device code does arithmetic with: the integers (`i8` to `u64`,
/// `isize`, `usize`) and the floats (`f16`, `bf16`, `f32`, `f64`). See the [module
/// docs](self).
pub trait Num:
    DeviceScalar
    + Copy
    + Default
    + PartialEq
    + PartialOrd
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Rem<Output = Self>
    + AddAssign
    + SubAssign
    + MulAssign
    + DivAssign
    + RemAssign
{
    /// Zero (also what `T::default()` is).
    const ZERO: Self;
    /// One.
    const ONE: Self;
    /// The smallest value: the type's `MIN` (for floats the most negative finite value, not
    /// negative infinity).
    const MIN: Self;
    /// The largest value: the type's `MAX` (for floats the largest finite value).
    const MAX: Self;
}

macro_rules! num {
    ($($t:ty => $zero:expr, $one:expr;)*) => {
        $(
            impl Num for $t {
                const ZERO: Self = $zero;
                const ONE: Self = $one;
                const MIN: Self = <$t>::MIN;
                const MAX: Self = <$t>::MAX;
            }
        )*
    };
}

num! {
    i8 => 0, 1;
    i16 => 0, 1;
    i32 => 0, 1;
    i64 => 0, 1;
    isize => 0, 1;
    u8 => 0, 1;
    u16 => 0, 1;
    u32 => 0, 1;
    u64 => 0, 1;
    usize => 0, 1;
    f32 => 0.0, 1.0;
    f64 => 0.0, 1.0;
    half::f16 => half::f16::ZERO, half::f16::ONE;
    half::bf16 => half::bf16::ZERO, half::bf16::ONE;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sum<T: Num>(xs: &[T]) -> T {
        let mut acc = T::ZERO;
        for &x in xs {
            acc += x;
        }
        acc
    }

    #[test]
    fn the_constants_are_the_types_own() {
        assert_eq!(sum(&[1u32, 2, 3]), 6);
        assert_eq!(<f64 as Num>::ONE, 1.0);
        assert_eq!(<i32 as Num>::MIN, i32::MIN);
        assert_eq!(<half::f16 as Num>::MAX, half::f16::MAX);
        assert_eq!(<f32 as Num>::ZERO, f32::default());
    }
}
