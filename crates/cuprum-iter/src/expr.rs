//! [`Expr<T>`], the value a chain's closures see, and the element traits that decide which
//! operations each element type has.
//!
//! An `Expr<T>` is not a number: it is a handle to one operation in the trace of the chain
//! being run (see `trace.rs`). Rust's operators and the methods here record operations;
//! nothing is computed on the host. That is why some Rust forms cannot work and are made
//! compile errors instead of silently wrong code:
//!
//! * `if x > 0.0 { .. }` does not compile (`>` is not implemented, and an `if` needs a host
//!   `bool`): compare with [`Expr::gt`] and friends, which give an `Expr<bool>`, and choose
//!   with [`select`] / [`Expr::select`]. Both arms of a `select` are computed for every
//!   element; only the chosen one is kept. A plain `if` on a *host* value (a captured flag) is
//!   fine: it picks which operations are traced.
//! * `&&`, `||` cannot be overloaded: use `&`, `|` and `!` on `Expr<bool>`.
//! * `as` casts cannot be overloaded: use [`Expr::cast`].
//! * Only the operations an element type has in Rust exist (`sqrt` on floats, `<<` on
//!   integers, `-` on signed types); `f64` lacks the transcendental functions (the PTX writer
//!   has no correctly rounded `f64` versions yet), so they are compile errors there.
//!
//! Semantics are Rust's release semantics, as the IR defines them: integer arithmetic wraps;
//! integer division by zero (and `MIN / -1`) stops the kernel with an error, as Rust panics;
//! float arithmetic is IEEE without fused contraction; `min`/`max` ignore a NaN operand as
//! `f32::min` does; `cast` is `as`.

use std::fmt;
use std::marker::PhantomData;
use std::ops;

use cuprum_ir::{BinaryOp, CmpOp, Constant, ScalarType, UnaryOp};
use cuprum_runtime::DeviceScalar;
use half::{bf16, f16};

use crate::trace::{self, Node, Ref};

mod sealed {
    pub trait Sealed {}
}

/// A type that device vectors hold and closures compute with: every [`DeviceScalar`]
/// (`bool`, the integers including `usize`/`isize`, `f32`, `f64`, `f16`, `bf16`).
pub trait Element: DeviceScalar + fmt::Debug + PartialEq {}
impl<T: DeviceScalar + fmt::Debug + PartialEq> Element for T {}

/// Element types with arithmetic (everything but `bool`).
pub trait Numeric: Element + sealed::Sealed {
    /// The identity of `min` (the largest value; NaN for floats, which `min` ignores).
    fn min_identity() -> Self;
    /// The identity of `max` (the smallest value; NaN for floats).
    fn max_identity() -> Self;
    /// Zero, the identity of `+`.
    fn zero() -> Self;
}

/// Types with negation: signed integers and floats.
pub trait Signed: Numeric {}
/// Integer types (bit operations, shifts).
pub trait Integer: Numeric {}
/// Float types (`sqrt`, `floor`, `mul_add`, ...).
pub trait Float: Signed {}
/// Float types with `exp`, `ln`, `sin`, ... (`f32`, `f16`, `bf16`; not `f64`).
pub trait Transcendental: Float {}
/// Types with bitwise `&`, `|`, `^`, `!`: integers and `bool`.
pub trait Bits: Element {}

macro_rules! int_types {
    ($($t:ty),*) => { $(
        impl sealed::Sealed for $t {}
        impl Numeric for $t {
            fn min_identity() -> Self { <$t>::MAX }
            fn max_identity() -> Self { <$t>::MIN }
            fn zero() -> Self { 0 }
        }
        impl Integer for $t {}
        impl Bits for $t {}
    )* };
}
int_types!(i8, i16, i32, i64, isize, u8, u16, u32, u64, usize);
impl Signed for i8 {}
impl Signed for i16 {}
impl Signed for i32 {}
impl Signed for i64 {}
impl Signed for isize {}
impl Bits for bool {}

macro_rules! float_types {
    ($($t:ty => $nan:expr, $zero:expr;)*) => { $(
        impl sealed::Sealed for $t {}
        impl Numeric for $t {
            fn min_identity() -> Self { $nan }
            fn max_identity() -> Self { $nan }
            fn zero() -> Self { $zero }
        }
        impl Signed for $t {}
        impl Float for $t {}
    )* };
}
float_types! {
    f32 => f32::NAN, 0.0;
    f64 => f64::NAN, 0.0;
    f16 => f16::NAN, f16::ZERO;
    bf16 => bf16::NAN, bf16::ZERO;
}
impl Transcendental for f32 {}
impl Transcendental for f16 {}
impl Transcendental for bf16 {}

/// A traced value of type `T`: what a chain's closures receive and return.
///
/// Operators and methods record operations into the chain's kernel; nothing is computed on
/// the host. Compare with [`lt`](Self::lt), [`ge`](Self::ge), [`eq`](Self::eq)... (giving
/// `Expr<bool>`), combine conditions with `&`, `|`, `!`, choose with [`select`] (Rust's `if`
/// needs a host `bool`), convert with [`cast`](Self::cast) (`as`). Host values mix in
/// freely (`x * 2.0`, `x.min(limit)`). See the [crate docs](crate#what-a-closure-may-do-honestly).
pub struct Expr<T> {
    pub(crate) r: Ref,
    _t: PhantomData<fn() -> T>,
}

impl<T> Clone for Expr<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Expr<T> {}

impl<T: Element> fmt::Debug for Expr<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.r {
            Ref::Node { id, .. } => write!(f, "Expr<{}>(#{id})", T::TYPE),
            Ref::Const(c) => write!(f, "Expr<{}>({c})", T::TYPE),
            Ref::Invalid => write!(f, "Expr<{}>(<outside a trace>)", T::TYPE),
        }
    }
}

/// Host values and traced values alike: what operators and methods accept on their right.
pub trait IntoExpr<T> {
    /// The value as an expression: a host value becomes a constant of the traced kernel, a
    /// traced value is returned as it is.
    fn into_expr(self) -> Expr<T>;
}

impl<T: Element> IntoExpr<T> for T {
    fn into_expr(self) -> Expr<T> {
        Expr::lit(self)
    }
}

impl<T: Element> IntoExpr<T> for Expr<T> {
    fn into_expr(self) -> Expr<T> {
        self
    }
}

impl<T: Element> From<T> for Expr<T> {
    fn from(v: T) -> Self {
        Expr::lit(v)
    }
}

impl<T: Element> Expr<T> {
    pub(crate) fn from_ref(r: Ref) -> Self {
        Self { r, _t: PhantomData }
    }

    /// A host value as a traced one (it becomes a kernel parameter, so another value in the
    /// next call reuses the compiled kernel).
    pub fn lit(v: T) -> Self {
        Self::from_ref(Ref::Const(Constant::new(T::TYPE, v.to_bits())))
    }

    fn record<U: Element>(operands: &[Ref], make: impl FnOnce(&[u32]) -> Node) -> Expr<U> {
        Expr::from_ref(trace::record(U::TYPE, operands, make))
    }

    fn unary(self, op: UnaryOp) -> Self {
        Self::record(&[self.r], |o| Node::Unary(op, o[0]))
    }

    fn binary(self, op: BinaryOp, rhs: impl IntoExpr<T>) -> Self {
        let rhs = rhs.into_expr();
        if T::TYPE.is_int() && matches!(op, BinaryOp::Div | BinaryOp::Rem) {
            let guard = trace::current_guard();
            Self::record(&[self.r, rhs.r], |o| Node::IntDiv {
                op,
                a: o[0],
                b: o[1],
                guard,
            })
        } else {
            Self::record(&[self.r, rhs.r], |o| Node::Binary(op, o[0], o[1]))
        }
    }

    fn compare(self, op: CmpOp, rhs: impl IntoExpr<T>) -> Expr<bool> {
        let rhs = rhs.into_expr();
        Self::record(&[self.r, rhs.r], |o| Node::Compare(op, o[0], o[1]))
    }

    /// `self == rhs` (IEEE for floats: false when either is NaN).
    pub fn eq(self, rhs: impl IntoExpr<T>) -> Expr<bool> {
        self.compare(CmpOp::Eq, rhs)
    }

    /// `self != rhs` (IEEE for floats: true when either is NaN).
    pub fn ne(self, rhs: impl IntoExpr<T>) -> Expr<bool> {
        self.compare(CmpOp::Ne, rhs)
    }

    /// Rust's `as`: `x.cast::<f32>()` is `x as f32` (floats to integers round toward zero and
    /// saturate, NaN gives 0; `bool` gives 0 or 1). Casting *to* `bool` is not allowed (compare
    /// with zero instead).
    pub fn cast<U: Numeric>(self) -> Expr<U> {
        Self::record(&[self.r], |o| Node::Cast(o[0], U::TYPE))
    }
}

impl<T: Numeric> Expr<T> {
    /// `self < rhs`.
    pub fn lt(self, rhs: impl IntoExpr<T>) -> Expr<bool> {
        self.compare(CmpOp::Lt, rhs)
    }
    /// `self <= rhs`.
    pub fn le(self, rhs: impl IntoExpr<T>) -> Expr<bool> {
        self.compare(CmpOp::Le, rhs)
    }
    /// `self > rhs`.
    pub fn gt(self, rhs: impl IntoExpr<T>) -> Expr<bool> {
        self.compare(CmpOp::Gt, rhs)
    }
    /// `self >= rhs`.
    pub fn ge(self, rhs: impl IntoExpr<T>) -> Expr<bool> {
        self.compare(CmpOp::Ge, rhs)
    }
    /// The smaller of the two (for floats, `f32::min`: a NaN operand is ignored).
    pub fn min(self, rhs: impl IntoExpr<T>) -> Self {
        self.binary(BinaryOp::Min, rhs)
    }
    /// The larger of the two (for floats, `f32::max`: a NaN operand is ignored).
    pub fn max(self, rhs: impl IntoExpr<T>) -> Self {
        self.binary(BinaryOp::Max, rhs)
    }
    /// `self.max(lo).min(hi)`.
    pub fn clamp(self, lo: impl IntoExpr<T>, hi: impl IntoExpr<T>) -> Self {
        self.max(lo).min(hi)
    }
}

impl<T: Signed> Expr<T> {
    /// The absolute value (integers wrap: `i32::MIN.abs()` is `i32::MIN`, as `wrapping_abs`).
    pub fn abs(self) -> Self {
        if T::TYPE.is_float() {
            self.unary(UnaryOp::Abs)
        } else {
            select(self.lt(T::zero()), -self, self)
        }
    }
}

impl<T: Float> Expr<T> {
    /// Correctly rounded square root.
    pub fn sqrt(self) -> Self {
        self.unary(UnaryOp::Sqrt)
    }
    /// Rounds toward negative infinity, as Rust's `floor`.
    pub fn floor(self) -> Self {
        self.unary(UnaryOp::Floor)
    }
    /// Rounds toward positive infinity, as Rust's `ceil`.
    pub fn ceil(self) -> Self {
        self.unary(UnaryOp::Ceil)
    }
    /// Rounds half away from zero, as Rust's `round`.
    pub fn round(self) -> Self {
        self.unary(UnaryOp::Round)
    }
    /// Rounds toward zero, dropping the fractional part, as Rust's `trunc`.
    pub fn trunc(self) -> Self {
        self.unary(UnaryOp::Trunc)
    }
    /// `self * a + b` with one rounding.
    pub fn mul_add(self, a: impl IntoExpr<T>, b: impl IntoExpr<T>) -> Self {
        let (a, b) = (a.into_expr(), b.into_expr());
        Self::record(&[self.r, a.r, b.r], |o| Node::MulAdd(o[0], o[1], o[2]))
    }
    /// `1 / self`, correctly rounded.
    pub fn recip(self) -> Self {
        Expr::lit(T::from_bits(one_bits(T::TYPE))) / self
    }
    /// Whether the value is NaN.
    pub fn is_nan(self) -> Expr<bool> {
        self.ne(self)
    }
    /// Whether the value is neither infinite nor NaN.
    pub fn is_finite(self) -> Expr<bool> {
        // `x - x` is 0 for finite `x`, NaN for infinities and NaN.
        let copy = self;
        (self - copy).eq(T::zero())
    }
}

/// The bits of 1.0 in a float type.
fn one_bits(ty: ScalarType) -> u64 {
    match ty {
        ScalarType::F64 => 1.0f64.to_bits(),
        ScalarType::F16 => u64::from(f16::ONE.to_bits()),
        ScalarType::BF16 => u64::from(bf16::ONE.to_bits()),
        _ => u64::from(1.0f32.to_bits()),
    }
}

impl<T: Transcendental> Expr<T> {
    /// `e^self`. Like the other functions here, accurate to a few ulp rather than correctly
    /// rounded, so GPU and emulator results may differ in the last bits.
    pub fn exp(self) -> Self {
        self.unary(UnaryOp::Exp)
    }
    /// `2^self`, to a few ulp.
    pub fn exp2(self) -> Self {
        self.unary(UnaryOp::Exp2)
    }
    /// The natural logarithm.
    pub fn ln(self) -> Self {
        self.unary(UnaryOp::Ln)
    }
    /// The base-2 logarithm, to a few ulp; NaN for negative values.
    pub fn log2(self) -> Self {
        self.unary(UnaryOp::Log2)
    }
    /// The sine of an angle in radians, to a few ulp.
    pub fn sin(self) -> Self {
        self.unary(UnaryOp::Sin)
    }
    /// The cosine of an angle in radians, to a few ulp.
    pub fn cos(self) -> Self {
        self.unary(UnaryOp::Cos)
    }
    /// The hyperbolic tangent, to a few ulp.
    pub fn tanh(self) -> Self {
        self.unary(UnaryOp::Tanh)
    }
}

impl Expr<bool> {
    /// `if self { if_true } else { if_false }`, element by element; both arms are computed.
    pub fn select<T: Element>(
        self,
        if_true: impl IntoExpr<T>,
        if_false: impl IntoExpr<T>,
    ) -> Expr<T> {
        select(self, if_true, if_false)
    }
}

/// `if cond { if_true } else { if_false }` for traced values (Rust's `if` needs a host
/// `bool`). Both arms are computed for every element, so an integer division by zero in the
/// arm not taken still stops the kernel: divide by `select(d.eq(0), 1, d)` in that case.
pub fn select<T: Element>(
    cond: Expr<bool>,
    if_true: impl IntoExpr<T>,
    if_false: impl IntoExpr<T>,
) -> Expr<T> {
    let (t, f) = (if_true.into_expr(), if_false.into_expr());
    Expr::<T>::record(&[cond.r, t.r, f.r], |o| Node::Select(o[0], o[1], o[2]))
}

macro_rules! binary_ops {
    ($bound:ident: $($trait:ident $method:ident $assign:ident $assign_method:ident => $op:ident;)*) => { $(
        impl<T: $bound, R: IntoExpr<T>> ops::$trait<R> for Expr<T> {
            type Output = Expr<T>;
            fn $method(self, rhs: R) -> Expr<T> {
                self.binary(BinaryOp::$op, rhs)
            }
        }
        impl<T: $bound, R: IntoExpr<T>> ops::$assign<R> for Expr<T> {
            fn $assign_method(&mut self, rhs: R) {
                *self = self.binary(BinaryOp::$op, rhs);
            }
        }
    )* };
}

binary_ops! { Numeric:
    Add add AddAssign add_assign => Add;
    Sub sub SubAssign sub_assign => Sub;
    Mul mul MulAssign mul_assign => Mul;
    Div div DivAssign div_assign => Div;
    Rem rem RemAssign rem_assign => Rem;
}
binary_ops! { Bits:
    BitAnd bitand BitAndAssign bitand_assign => And;
    BitOr bitor BitOrAssign bitor_assign => Or;
    BitXor bitxor BitXorAssign bitxor_assign => Xor;
}

/// Host scalar on the left: `2.0 * x`.
macro_rules! scalar_lhs {
    ($($t:ty),*) => { $(
        scalar_lhs!(@op $t: Add add Add, Sub sub Sub, Mul mul Mul, Div div Div, Rem rem Rem);
    )* };
    (@op $t:ty: $($trait:ident $method:ident $op:ident),*) => { $(
        impl ops::$trait<Expr<$t>> for $t {
            type Output = Expr<$t>;
            fn $method(self, rhs: Expr<$t>) -> Expr<$t> {
                Expr::lit(self).binary(BinaryOp::$op, rhs)
            }
        }
    )* };
}
scalar_lhs!(
    i8, i16, i32, i64, isize, u8, u16, u32, u64, usize, f32, f64, f16, bf16
);

impl<T: Signed> ops::Neg for Expr<T> {
    type Output = Expr<T>;
    fn neg(self) -> Expr<T> {
        self.unary(UnaryOp::Neg)
    }
}

impl<T: Bits> ops::Not for Expr<T> {
    type Output = Expr<T>;
    fn not(self) -> Expr<T> {
        self.unary(UnaryOp::Not)
    }
}

impl<T: Integer, R: IntoExpr<u32>> ops::Shl<R> for Expr<T> {
    type Output = Expr<T>;
    /// Shifts by `rhs` modulo the bit width (as `wrapping_shl`).
    fn shl(self, rhs: R) -> Expr<T> {
        let rhs = rhs.into_expr();
        Self::record(&[self.r, rhs.r], |o| {
            Node::Binary(BinaryOp::Shl, o[0], o[1])
        })
    }
}

impl<T: Integer, R: IntoExpr<u32>> ops::Shr<R> for Expr<T> {
    type Output = Expr<T>;
    /// Shifts by `rhs` modulo the bit width (arithmetic on signed types, as `wrapping_shr`).
    fn shr(self, rhs: R) -> Expr<T> {
        let rhs = rhs.into_expr();
        Self::record(&[self.r, rhs.r], |o| {
            Node::Binary(BinaryOp::Shr, o[0], o[1])
        })
    }
}

/// Values a closure may take and return: an [`Expr`], or tuples of them (what `zip` and
/// `enumerate` make).
pub trait Traced: Copy {}
impl<T: Element> Traced for Expr<T> {}
impl<A: Traced, B: Traced> Traced for (A, B) {}
impl<A: Traced, B: Traced, C: Traced> Traced for (A, B, C) {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::TraceGuard;

    #[test]
    fn operators_record_typed_nodes() {
        let g = TraceGuard::begin();
        let x = Expr::<f32>::from_ref(g.leaf(Node::Input(0), ScalarType::F32));
        let y = (x * x + 1.0).sqrt().max(2.0 * x);
        let c = y.lt(3.0) & !x.is_nan();
        let s = select(c, y, 0.0);
        let i = Expr::<i32>::from_ref(g.leaf(Node::Input(1), ScalarType::I32));
        let q = (i / 3) << 2u32;
        let _ = (s, q.cast::<f32>());
        let graph = g.finish().unwrap();
        assert!(
            graph
                .nodes
                .iter()
                .any(|(n, _)| matches!(n, Node::IntDiv { guard: None, .. }))
        );
        assert!(
            graph
                .nodes
                .iter()
                .any(|(n, t)| matches!(n, Node::Select(..)) && *t == ScalarType::F32)
        );
    }
}
