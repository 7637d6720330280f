//! Virtual registers: one typed register class per kind of IR scalar.
//!
//! PTX registers are not SSA and ptxas does the real register allocation, so this module only
//! names registers: every IR value and variable gets its own, temporaries get fresh ones, and
//! the entry declares `.reg .<type> %<prefix><N>;` per class at the end. It also holds the one
//! mapping from [`ScalarType`] to register class and PTX type names, so no other module spells
//! those out.
//!
//! Representation invariants the emitters keep:
//! * `Bool` lives in a predicate register.
//! * Integers of 8, 16 and 32 bits live in `.b32` registers, *canonical*: sign-extended
//!   (signed types) or zero-extended (unsigned types) to 32 bits. Every operation that can
//!   produce high garbage (`add`, `sub`, `mul`, `neg`, `not`, `shl`, narrowing casts) is followed
//!   by a re-normalisation, so comparisons, divisions and right shifts can run on the full
//!   32-bit register.
//! * 64-bit integers live in `.b64` registers, `f16`/`bf16` as raw bits in `.b16` registers,
//!   `f32` and `f64` in `.f32`/`.f64` registers.

use std::fmt;

use cuprum_ir::ScalarType;

/// A register class, one `.reg` declaration each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Class {
    Pred,
    B16,
    B32,
    B64,
    F32,
    F64,
}

impl Class {
    pub(crate) const ALL: [Class; 6] = [
        Class::Pred,
        Class::B16,
        Class::B32,
        Class::B64,
        Class::F32,
        Class::F64,
    ];

    const fn slot(self) -> usize {
        match self {
            Class::Pred => 0,
            Class::B16 => 1,
            Class::B32 => 2,
            Class::B64 => 3,
            Class::F32 => 4,
            Class::F64 => 5,
        }
    }

    /// The register name prefix (after `%`).
    pub(crate) const fn prefix(self) -> &'static str {
        match self {
            Class::Pred => "p",
            Class::B16 => "h",
            Class::B32 => "r",
            Class::B64 => "rd",
            Class::F32 => "f",
            Class::F64 => "fd",
        }
    }

    /// The type used in `.reg` declarations and in `mov`/`selp` of the whole register.
    pub(crate) const fn ptx_type(self) -> &'static str {
        match self {
            Class::Pred => "pred",
            Class::B16 => "b16",
            Class::B32 => "b32",
            Class::B64 => "b64",
            Class::F32 => "f32",
            Class::F64 => "f64",
        }
    }
}

/// One virtual register.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Reg {
    pub(crate) class: Class,
    pub(crate) index: u32,
}

impl fmt::Display for Reg {
    /// `%` and the class's prefix and the index (`%rd12`), as one `write_str`: every operand
    /// of every instruction is one of these, and the general formatting machinery was a third
    /// of writing a large kernel's PTX.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // `%`, a prefix of at most 2 bytes, at most 10 digits.
        let mut text = [0u8; 13];
        text[0] = b'%';
        let prefix = self.class.prefix().as_bytes();
        text[1..1 + prefix.len()].copy_from_slice(prefix);
        let mut digits = [0u8; 10];
        let mut first = digits.len();
        let mut n = self.index;
        loop {
            first -= 1;
            digits[first] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        let start = 1 + prefix.len();
        let end = start + digits.len() - first;
        text[start..end].copy_from_slice(&digits[first..]);
        match std::str::from_utf8(&text[..end]) {
            Ok(s) => f.write_str(s),
            Err(_) => Err(fmt::Error),
        }
    }
}

/// Hands out fresh registers and remembers how many of each class to declare.
#[derive(Default)]
pub(crate) struct RegFile {
    next: [u32; 6],
}

impl RegFile {
    pub(crate) fn alloc(&mut self, class: Class) -> Reg {
        let slot = &mut self.next[class.slot()];
        let index = *slot;
        *slot += 1;
        Reg { class, index }
    }

    /// How many registers of `class` were handed out.
    pub(crate) fn count(&self, class: Class) -> u32 {
        self.next[class.slot()]
    }
}

/// The register class holding values of `ty`.
pub(crate) const fn class_of(ty: ScalarType) -> Class {
    use ScalarType as S;
    match ty {
        S::Bool => Class::Pred,
        S::I8 | S::I16 | S::I32 | S::U8 | S::U16 | S::U32 => Class::B32,
        S::I64 | S::U64 => Class::B64,
        S::F16 | S::BF16 => Class::B16,
        // A `tf32` is the `f32` it stands for.
        S::F32 | S::Tf32 => Class::F32,
        S::F64 => Class::F64,
    }
}

/// The integer type an instruction on the (canonical) register of `ty` uses: `s32`/`u32` for
/// integers up to 32 bits, `s64`/`u64` for 64-bit ones. Only meaningful for integer types.
pub(crate) const fn int_op_type(ty: ScalarType) -> &'static str {
    use ScalarType as S;
    match ty {
        S::I64 => "s64",
        S::U64 => "u64",
        S::I8 | S::I16 | S::I32 => "s32",
        _ => "u32",
    }
}

/// The type of a load, store or kernel parameter of `ty` (memory size and extension).
pub(crate) const fn mem_type(ty: ScalarType) -> &'static str {
    use ScalarType as S;
    match ty {
        S::Bool | S::U8 => "u8",
        S::I8 => "s8",
        S::I16 => "s16",
        S::U16 => "u16",
        S::I32 => "s32",
        S::U32 => "u32",
        S::I64 => "s64",
        S::U64 => "u64",
        S::F16 | S::BF16 => "b16",
        S::F32 | S::Tf32 => "f32",
        S::F64 => "f64",
    }
}

/// `f32` or `f64` for the two native float types.
pub(crate) const fn float_type(ty: ScalarType) -> &'static str {
    match ty {
        ScalarType::F64 => "f64",
        _ => "f32",
    }
}

/// Whether `ty` is one of the 16-bit floats computed through `f32`.
pub(crate) const fn is_half(ty: ScalarType) -> bool {
    matches!(ty, ScalarType::F16 | ScalarType::BF16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registers_are_written_as_ptx_names() {
        for class in Class::ALL {
            for index in [0, 7, 10, 99, 1234, u32::MAX] {
                let reg = Reg { class, index };
                assert_eq!(reg.to_string(), format!("%{}{index}", class.prefix()));
            }
        }
    }
}
