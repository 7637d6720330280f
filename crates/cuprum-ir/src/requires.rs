//! A kernel's launch requirements: relations between its arguments (`input.len() >= w * h`)
//! that every launch must satisfy, as a launch contract's `requires = (..)` states them.
//!
//! They exist so that the optimizer may rely on them: a bounds check `y * w + x < len` under
//! `y < h`, `x < w` can never fail when `len >= w * h` holds, so it can go. That is only
//! sound if no launch runs with the relation false, so this module is the one definition of
//! what a requirement means ([`Requirement::holds`]), and every place that launches IR asks
//! it: the runtime refuses such a launch on both backends, and the emulator's own launch
//! refuses it too (`InvalidLaunch`), before any thread runs.
//!
//! A side of a relation is a [`Term`]: integer literals, scalar integer parameters and slice
//! lengths (in elements) combined by `+`, `-`, `*` and `/`. It is evaluated in checked `u64`
//! arithmetic: a negative parameter, an overflow, a subtraction below zero or a division by
//! zero makes the relation fail (the launch is refused), never wrap. So, in a launch that
//! runs, every side's value is its exact mathematical value and below `2^64`; the optimizer
//! uses exactly that.

use crate::{CmpOp, Kernel, ParamKind};

/// One side of a [`Requirement`].
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Term {
    /// An integer literal.
    Const(u64),
    /// The value of scalar parameter `i` (an integer type), which must be non-negative.
    Param(u32),
    /// The length in elements of slice parameter `i`.
    Len(u32),
    /// An operation on two terms: `Add`, `Sub`, `Mul` or `Div`, checked.
    Bin(TermOp, Box<Term>, Box<Term>),
}

/// The operations of a [`Term`].
#[derive(serde::Serialize, serde::Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TermOp {
    /// `a + b`, failing on overflow.
    Add,
    /// `a - b`, failing below zero.
    Sub,
    /// `a * b`, failing on overflow.
    Mul,
    /// `a / b` rounded down, failing when `b` is zero.
    Div,
}

/// `left op right`, a relation every launch of the kernel satisfies.
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Requirement {
    /// The left side.
    pub left: Term,
    /// The comparison.
    pub op: CmpOp,
    /// The right side.
    pub right: Term,
    /// The relation as the user wrote it, for error messages.
    pub text: String,
}

/// What a launch passes for one parameter, as far as requirements read it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgValue {
    /// A scalar's bits, zero-extended to 64 (of the parameter's own type).
    Scalar(u64),
    /// A slice's length in elements.
    Slice(u64),
    /// Anything else (a tensor map).
    Other,
}

impl Term {
    /// The term's value under `args` (indexed by parameter), `None` where the checked
    /// arithmetic fails or a parameter is not what the term reads.
    pub fn eval(&self, kernel: &Kernel, args: &[ArgValue]) -> Option<u64> {
        match self {
            Term::Const(c) => Some(*c),
            Term::Param(i) => {
                let ArgValue::Scalar(bits) = *args.get(*i as usize)? else {
                    return None;
                };
                let ParamKind::Scalar(ty) = kernel.params.get(*i as usize)?.kind else {
                    return None;
                };
                if !ty.is_int() {
                    return None;
                }
                let negative = ty.is_signed_int() && (bits >> (ty.bits() - 1)) & 1 == 1;
                (!negative).then_some(bits)
            }
            Term::Len(i) => match *args.get(*i as usize)? {
                ArgValue::Slice(len) => Some(len),
                _ => None,
            },
            Term::Bin(op, a, b) => {
                let (a, b) = (a.eval(kernel, args)?, b.eval(kernel, args)?);
                match op {
                    TermOp::Add => a.checked_add(b),
                    TermOp::Sub => a.checked_sub(b),
                    TermOp::Mul => a.checked_mul(b),
                    TermOp::Div => a.checked_div(b),
                }
            }
        }
    }

    /// Every parameter the term reads, with whether it reads a slice's length.
    fn params(&self, out: &mut Vec<(u32, bool)>) {
        match self {
            Term::Const(_) => {}
            Term::Param(i) => out.push((*i, false)),
            Term::Len(i) => out.push((*i, true)),
            Term::Bin(_, a, b) => {
                a.params(out);
                b.params(out);
            }
        }
    }
}

impl Requirement {
    /// Whether the relation holds for `args`: both sides evaluate and compare as `op` says.
    pub fn holds(&self, kernel: &Kernel, args: &[ArgValue]) -> bool {
        match (self.left.eval(kernel, args), self.right.eval(kernel, args)) {
            (Some(a), Some(b)) => match self.op {
                CmpOp::Eq => a == b,
                CmpOp::Ne => a != b,
                CmpOp::Lt => a < b,
                CmpOp::Le => a <= b,
                CmpOp::Gt => a > b,
                CmpOp::Ge => a >= b,
            },
            _ => false,
        }
    }

    /// Why the requirement does not fit `kernel`'s parameters, if it does not: every
    /// `Param` must name an integer scalar parameter and every `Len` a slice parameter.
    pub fn problem(&self, kernel: &Kernel) -> Option<String> {
        let mut params = Vec::new();
        self.left.params(&mut params);
        self.right.params(&mut params);
        params.into_iter().find_map(|(i, len)| {
            let fits = match kernel.params.get(i as usize).map(|p| p.kind) {
                Some(ParamKind::Slice { .. }) => len,
                Some(ParamKind::Scalar(ty)) => !len && ty.is_int(),
                _ => false,
            };
            (!fits).then(|| {
                format!(
                    "requirement `{}` reads parameter {i} as {}, which it is not",
                    self.text,
                    if len { "a slice" } else { "an integer scalar" }
                )
            })
        })
    }
}

/// The first of `kernel`'s requirements that `args` fail, if any.
pub fn first_failing<'k>(kernel: &'k Kernel, args: &[ArgValue]) -> Option<&'k Requirement> {
    kernel.requires.iter().find(|r| !r.holds(kernel, args))
}
