//! Numbers known while compiling: literals (`2`, `0.5f32`, `true`), module consts, `f32::MAX`
//! and the like, and arithmetic between untyped literals.
//!
//! A Rust literal without a suffix takes its type from where it is used (`t * 2.0` is an
//! `f16` tile's `2.0` when `t` is `f16`), so a literal stays a [`Lit`] until a use gives it
//! a type, and only then becomes an element ([`Lit::constant`], exactly as `as` would
//! convert it: `cuprum_ir::scalar::cast_constant`, the one definition every layer uses) or,
//! when the type is a kernel's type parameter, a [`cuprum_tile_ir::Literal`] that
//! specialization converts. Unused, it takes Rust's defaults (`i32`, `f64`).

use cuprum_ir::scalar::cast_constant;
use cuprum_ir::{Constant, ScalarType};
use cuprum_tile_ir::{Elem, Literal};
use proc_macro2::Span;

use crate::err;

/// A number or bool known at compile time.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Num {
    /// An integer, exact.
    Int(i128),
    /// A float; `text` is the literal's decimal text when it is one (so that an `f32` is
    /// parsed in `f32`, as rustc does, not rounded twice through `f64`).
    Float { value: f64, text: Option<String> },
    /// `true` or `false`.
    Bool(bool),
}

/// A compile-time value, typed (`2i32`, a module const, a value converted with `as`) or not
/// yet (`2`, `0.5`).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Lit {
    /// The value.
    pub num: Num,
    /// Its type, once known.
    pub ty: Option<ScalarType>,
}

impl Lit {
    /// An untyped integer.
    pub fn int(v: i128) -> Self {
        Lit {
            num: Num::Int(v),
            ty: None,
        }
    }

    /// An integer of type `ty` (which must hold it).
    pub fn typed_int(v: i128, ty: ScalarType) -> Self {
        Lit {
            num: Num::Int(v),
            ty: Some(ty),
        }
    }

    /// A Rust literal (`1`, `0x1Fu8`, `1e-6f32`, `true`).
    pub fn from_syn(lit: &syn::Lit) -> syn::Result<Self> {
        match lit {
            syn::Lit::Int(i) => {
                let ty = suffix_type(i.suffix(), i.span())?;
                let v: i128 = i.base10_parse()?;
                let lit = Lit {
                    num: Num::Int(v),
                    ty: None,
                };
                match ty {
                    Some(t) => lit.typed(t, i.span()),
                    None => Ok(lit),
                }
            }
            syn::Lit::Float(f) => {
                let ty = suffix_type(f.suffix(), f.span())?;
                let lit = Lit {
                    num: Num::Float {
                        value: f.base10_parse()?,
                        text: Some(f.base10_digits().to_string()),
                    },
                    ty: None,
                };
                match ty {
                    Some(t) if t.is_float() => lit.typed(t, f.span()),
                    Some(t) => err(f.span(), format!("a float literal cannot have type `{t}`")),
                    None => Ok(lit),
                }
            }
            syn::Lit::Bool(b) => Ok(Lit {
                num: Num::Bool(b.value),
                ty: Some(ScalarType::Bool),
            }),
            other => err(
                other.span(),
                "only numbers and `true`/`false` are values in a tile kernel",
            ),
        }
    }

    /// The type Rust gives the literal where nothing else does: its own, or `i32`, `f64`,
    /// `bool`.
    pub fn default_type(&self) -> ScalarType {
        self.ty.unwrap_or(match self.num {
            Num::Int(_) => ScalarType::I32,
            Num::Float { .. } => ScalarType::F64,
            Num::Bool(_) => ScalarType::Bool,
        })
    }

    /// The literal as type `ty`, which must be its own type if it has one and must hold its
    /// value (an integer literal may become a float, exactly rounded once; a float literal
    /// never becomes an integer).
    pub fn typed(&self, ty: ScalarType, span: Span) -> syn::Result<Lit> {
        if let Some(own) = self.ty
            && own != ty
        {
            return err(
                span,
                format!("mismatched types: expected `{ty}`, found `{own}`"),
            );
        }
        let constant = self.constant(ty, span)?;
        Ok(Lit::from_constant(constant))
    }

    /// The literal's value as an element of type `ty` (see [`Lit::typed`]).
    pub fn constant(&self, ty: ScalarType, span: Span) -> syn::Result<Constant> {
        if let Some(own) = self.ty
            && own != ty
        {
            return err(
                span,
                format!("mismatched types: expected `{ty}`, found `{own}`"),
            );
        }
        match (&self.num, ty) {
            (Num::Bool(b), ScalarType::Bool) => Ok(Constant::bool(*b)),
            (Num::Bool(_), _) => err(span, format!("a `bool` where `{ty}` is required")),
            (_, ScalarType::Bool) => err(span, "a number where `bool` is required"),
            (Num::Int(v), t) if t.is_int() => int_constant(*v, t, span),
            (Num::Int(v), t) => Ok(int_as_float(*v, t)),
            (Num::Float { .. }, t) if t.is_int() => err(
                span,
                format!("a float literal where the integer type `{t}` is required"),
            ),
            (Num::Float { value, text }, t) => Ok(float_constant(*value, text.as_deref(), t)),
        }
    }

    /// The literal as the element of type `elem`: exact when `elem` is known, else (a type
    /// parameter) as [`Literal`] for specialization to convert.
    pub fn literal(&self, elem: Elem, span: Span) -> syn::Result<Literal> {
        match elem {
            Elem::Known(t) => Ok(Literal::Exact(self.constant(t, span)?)),
            Elem::Param(_) => {
                if let Some(own) = self.ty {
                    return err(
                        span,
                        format!(
                            "mismatched types: expected the kernel's element type parameter, found `{own}` (drop the suffix)"
                        ),
                    );
                }
                Ok(match &self.num {
                    Num::Bool(b) => Literal::Bool(*b),
                    Num::Int(v) => Literal::Int(i64::try_from(*v).map_err(|_| {
                        syn::Error::new(span, format!("literal `{v}` does not fit in 64 bits"))
                    })?),
                    Num::Float { value, .. } => Literal::Float(*value),
                })
            }
        }
    }

    /// The compile-time value of a constant of any type.
    pub fn from_constant(c: Constant) -> Lit {
        let num = match c.ty {
            ScalarType::Bool => Num::Bool(c.bits != 0),
            t if t.is_signed_int() => {
                Num::Int(i128::from(cast_constant(c, ScalarType::I64).bits as i64))
            }
            t if t.is_int() => Num::Int(i128::from(c.bits)),
            _ => Num::Float {
                value: f64::from_bits(cast_constant(c, ScalarType::F64).bits),
                text: None,
            },
        };
        Lit {
            num,
            ty: Some(c.ty),
        }
    }

    /// `self as to`, with Rust's `as` semantics.
    pub fn cast(&self, to: ScalarType, span: Span) -> syn::Result<Lit> {
        if to == ScalarType::Bool {
            return err(span, "`as bool` is not Rust; compare with zero instead");
        }
        let from = self.default_type();
        if from == ScalarType::Bool && to.is_float() {
            return err(
                span,
                "a `bool` cannot be cast to a float; cast to an integer first",
            );
        }
        let c = self.constant(from, span)?;
        Ok(Lit::from_constant(cast_constant(c, to)))
    }

    /// The value as an integer index or axis, when it is an integer.
    pub fn as_int(&self) -> Option<i128> {
        match self.num {
            Num::Int(v) => Some(v),
            _ => None,
        }
    }

    /// `-self` (for untyped literals and typed ones alike; a typed one must stay in range).
    pub fn negate(&self, span: Span) -> syn::Result<Lit> {
        let num = match &self.num {
            Num::Int(v) => Num::Int(-v),
            Num::Float { value, text } => Num::Float {
                value: -value,
                text: text.as_ref().map(|t| match t.strip_prefix('-') {
                    Some(rest) => rest.to_string(),
                    None => format!("-{t}"),
                }),
            },
            Num::Bool(_) => return err(span, "cannot negate a `bool` (use `!`)"),
        };
        if let (Some(t), Num::Int(_)) = (self.ty, &num)
            && t.is_unsigned_int()
        {
            return err(span, format!("cannot negate an unsigned `{t}`"));
        }
        let lit = Lit { num, ty: None };
        match self.ty {
            Some(t) => lit.typed(t, span),
            None => Ok(lit),
        }
    }

    /// Folds `self op other` when both are untyped numbers of one kind (Rust evaluates such
    /// literal arithmetic at the literal's eventual type; integers here are exact and checked
    /// later, floats are computed in `f64`). `None` when the operation is not folded.
    pub fn fold(&self, op: FoldOp, other: &Lit) -> Option<Lit> {
        if self.ty.is_some() || other.ty.is_some() {
            return None;
        }
        let num = match (&self.num, &other.num) {
            (Num::Int(a), Num::Int(b)) => Num::Int(match op {
                FoldOp::Add => a.checked_add(*b)?,
                FoldOp::Sub => a.checked_sub(*b)?,
                FoldOp::Mul => a.checked_mul(*b)?,
                FoldOp::Div => a.checked_div(*b)?,
                FoldOp::Rem => a.checked_rem(*b)?,
            }),
            (Num::Float { value: a, .. }, Num::Float { value: b, .. }) => Num::Float {
                value: match op {
                    FoldOp::Add => a + b,
                    FoldOp::Sub => a - b,
                    FoldOp::Mul => a * b,
                    FoldOp::Div => a / b,
                    FoldOp::Rem => a % b,
                },
                text: None,
            },
            _ => return None,
        };
        Some(Lit { num, ty: None })
    }
}

/// `a op b` for compile-time values of which at least one is typed, computed in that type
/// by `cuprum_ir::scalar` (the device's semantics: wrapping integers, IEEE floats), or, both
/// untyped, by [`Lit::fold`]. A comparison gives a `bool`. `None` when the operation does
/// not apply to these values (the caller then reports it or computes at run time).
pub(crate) fn fold_binary(
    op: cuprum_ir::BinaryOp,
    a: &Lit,
    b: &Lit,
    span: Span,
) -> syn::Result<Option<Lit>> {
    use cuprum_ir::BinaryOp as B;
    if a.ty.is_none() && b.ty.is_none() {
        let f = match op {
            B::Add => FoldOp::Add,
            B::Sub => FoldOp::Sub,
            B::Mul => FoldOp::Mul,
            B::Div => FoldOp::Div,
            B::Rem => FoldOp::Rem,
            _ => return fold_typed(op, a, b, span),
        };
        if matches!(f, FoldOp::Div | FoldOp::Rem) && b.as_int() == Some(0) {
            return err(span, "this divides by zero");
        }
        return Ok(a.fold(f, b));
    }
    fold_typed(op, a, b, span)
}

fn fold_typed(op: cuprum_ir::BinaryOp, a: &Lit, b: &Lit, span: Span) -> syn::Result<Option<Lit>> {
    use cuprum_ir::BinaryOp as B;
    let shift = matches!(op, B::Shl | B::Shr);
    let ty = if shift {
        a.default_type()
    } else {
        a.ty.or(b.ty).unwrap_or_else(|| a.default_type())
    };
    let x = a.constant(ty, span)?;
    let y = if shift {
        let amount = b.constant(b.default_type(), span)?;
        cast_constant(amount, ScalarType::U32)
    } else {
        b.constant(ty, span)?
    };
    let mut out = [0u64];
    match cuprum_ir::scalar::binary(op, ty, &[x.bits], &[y.bits], &mut out, 1) {
        Ok(()) => Ok(Some(Lit::from_constant(Constant::new(ty, out[0])))),
        Err(cuprum_ir::scalar::OpFault::DivideByZero { .. }) => err(span, "this divides by zero"),
        Err(_) => Ok(None),
    }
}

/// `a op b` for compile-time values: a `bool`, computed in their common type.
pub(crate) fn fold_compare(op: cuprum_ir::CmpOp, a: &Lit, b: &Lit, span: Span) -> syn::Result<Lit> {
    let ty = a.ty.or(b.ty).unwrap_or_else(|| {
        // Two untyped literals: floats if either is one.
        if matches!(a.num, Num::Float { .. }) || matches!(b.num, Num::Float { .. }) {
            ScalarType::F64
        } else {
            a.default_type()
        }
    });
    let (x, y) = (a.constant(ty, span)?, b.constant(ty, span)?);
    let mut out = [0u64];
    cuprum_ir::scalar::compare(op, ty, &[x.bits], &[y.bits], &mut out);
    Ok(Lit::from_constant(Constant::bool(out[0] != 0)))
}

/// The arithmetic folded between untyped literals.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FoldOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
}

fn suffix_type(suffix: &str, span: Span) -> syn::Result<Option<ScalarType>> {
    if suffix.is_empty() {
        return Ok(None);
    }
    match ScalarType::from_rust_name(suffix) {
        Some(t) => Ok(Some(t)),
        None => err(span, format!("unknown literal suffix `{suffix}`")),
    }
}

/// An integer literal's value in integer type `ty`, which must hold it (rustc refuses
/// `300u8`).
fn int_constant(value: i128, ty: ScalarType, span: Span) -> syn::Result<Constant> {
    let bits = ty.bits();
    let (min, max) = if ty.is_signed_int() {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        (0, (1i128 << bits) - 1)
    };
    if value < min || value > max {
        return err(span, format!("literal `{value}` out of range for `{ty}`"));
    }
    Ok(Constant::new(ty, value as u64))
}

/// An integer literal's value in float type `ty`, rounded once (as `as` from its integer
/// type rounds it).
fn int_as_float(value: i128, ty: ScalarType) -> Constant {
    let integer = if let Ok(v) = i64::try_from(value) {
        Constant::i64(v)
    } else if let Ok(v) = u64::try_from(value) {
        Constant::u64(v)
    } else {
        return cast_constant(Constant::f64(value as f64), ty);
    };
    cast_constant(integer, ty)
}

/// A float literal in float type `ty`: an `f32` is parsed from its decimal text, as rustc
/// parses `0.1f32`; the others are rounded from `f64` by the IR's `as`.
fn float_constant(value: f64, text: Option<&str>, ty: ScalarType) -> Constant {
    if ty == ScalarType::F32
        && let Some(v) = text.and_then(|t| t.parse::<f32>().ok())
    {
        return Constant::f32(v);
    }
    cast_constant(Constant::f64(value), ty)
}

/// Rust's associated constants of the scalar types that kernels use as identities and
/// bounds: `f32::INFINITY`, `f32::NEG_INFINITY`, `f32::NAN`, `f32::MAX`, `f32::MIN`,
/// `f32::MIN_POSITIVE`, `f32::EPSILON`, `i32::MAX`, `i32::MIN`, `u32::BITS`, ...
pub(crate) fn associated_const(ty: ScalarType, name: &str) -> Option<Lit> {
    use ScalarType as S;
    let float = |f32v: f32, f64v: f64| match ty {
        S::F32 => Some(Lit::from_constant(Constant::f32(f32v))),
        S::F64 => Some(Lit::from_constant(Constant::f64(f64v))),
        S::F16 | S::BF16 => Some(Lit::from_constant(cast_constant(Constant::f64(f64v), ty))),
        _ => None,
    };
    if ty.is_float() {
        return match name {
            "INFINITY" => float(f32::INFINITY, f64::INFINITY),
            "NEG_INFINITY" => float(f32::NEG_INFINITY, f64::NEG_INFINITY),
            "NAN" => float(f32::NAN, f64::NAN),
            "MAX" => match ty {
                S::F16 => Some(Lit::from_constant(Constant::new(S::F16, 0x7bff))),
                S::BF16 => Some(Lit::from_constant(Constant::new(S::BF16, 0x7f7f))),
                _ => float(f32::MAX, f64::MAX),
            },
            "MIN" => match ty {
                S::F16 => Some(Lit::from_constant(Constant::new(S::F16, 0xfbff))),
                S::BF16 => Some(Lit::from_constant(Constant::new(S::BF16, 0xff7f))),
                _ => float(f32::MIN, f64::MIN),
            },
            "MIN_POSITIVE" if matches!(ty, S::F32 | S::F64) => {
                float(f32::MIN_POSITIVE, f64::MIN_POSITIVE)
            }
            "EPSILON" if matches!(ty, S::F32 | S::F64) => float(f32::EPSILON, f64::EPSILON),
            _ => None,
        };
    }
    if ty.is_int() {
        let bits = ty.bits();
        let (min, max) = if ty.is_signed_int() {
            (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
        } else {
            (0, (1i128 << bits) - 1)
        };
        return match name {
            "MAX" => Some(Lit::typed_int(max, ty)),
            "MIN" => Some(Lit::typed_int(min, ty)),
            "BITS" => Some(Lit::typed_int(i128::from(bits), ScalarType::U32)),
            _ => None,
        };
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span() -> Span {
        Span::call_site()
    }

    #[test]
    fn untyped_literals_take_the_type_of_their_use() {
        let two = Lit::int(2);
        assert_eq!(
            two.constant(ScalarType::F32, span()).expect("2 as f32"),
            Constant::f32(2.0)
        );
        assert_eq!(
            two.constant(ScalarType::U8, span()).expect("2u8"),
            Constant::new(ScalarType::U8, 2)
        );
        assert!(Lit::int(300).constant(ScalarType::U8, span()).is_err());
        assert!(Lit::int(-1).constant(ScalarType::U32, span()).is_err());
        let tenth: syn::Lit = syn::parse_str("0.1").expect("literal");
        let tenth = Lit::from_syn(&tenth).expect("0.1");
        assert_eq!(
            tenth.constant(ScalarType::F32, span()).expect("0.1f32"),
            Constant::f32(0.1)
        );
        assert!(tenth.constant(ScalarType::I32, span()).is_err());
        let typed: syn::Lit = syn::parse_str("7i64").expect("literal");
        let typed = Lit::from_syn(&typed).expect("7i64");
        assert!(typed.constant(ScalarType::I32, span()).is_err());
        assert_eq!(typed.default_type(), ScalarType::I64);
    }

    #[test]
    fn casts_negation_and_folding_follow_rust() {
        let big = Lit::int(300);
        let byte = big.cast(ScalarType::U8, span()).expect("300 as u8");
        assert_eq!(byte, Lit::typed_int(44, ScalarType::U8));
        let minus = Lit::int(5).negate(span()).expect("-5");
        assert_eq!(minus.as_int(), Some(-5));
        assert!(Lit::typed_int(5, ScalarType::U32).negate(span()).is_err());
        let sum = Lit::int(7).fold(FoldOp::Div, &Lit::int(2)).expect("7 / 2");
        assert_eq!(sum.as_int(), Some(3));
        assert!(Lit::int(1).fold(FoldOp::Div, &Lit::int(0)).is_none());
        assert_eq!(
            associated_const(ScalarType::I32, "MAX"),
            Some(Lit::typed_int(i128::from(i32::MAX), ScalarType::I32))
        );
        let inf = associated_const(ScalarType::F32, "NEG_INFINITY").expect("-inf");
        assert_eq!(
            inf.constant(ScalarType::F32, span()).expect("f32"),
            Constant::f32(f32::NEG_INFINITY)
        );
    }
}
