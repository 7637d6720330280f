//! Scalar types and constants of the kernel IR.
//!
//! The IR is deliberately scalar: every SSA value and every variable has one [`ScalarType`].
//! Aggregates (slices, arrays, structs, tuples) are taken apart by the front end into scalars
//! and addresses, so the PTX writer and the emulator only ever see scalars.

use std::fmt;

/// The type of every IR value. Addresses are `U64`.
#[derive(
    serde::Serialize, serde::Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord,
)]
pub enum ScalarType {
    /// `bool`: one byte in memory, always 0 or 1.
    Bool,
    /// `i8`, two's complement.
    I8,
    /// `i16`, two's complement.
    I16,
    /// `i32`, two's complement.
    I32,
    /// `i64` (also Rust's `isize`), two's complement.
    I64,
    /// `u8`.
    U8,
    /// `u16`.
    U16,
    /// `u32`; also the type of shared and local addresses and of index registers.
    U32,
    /// `u64` (also Rust's `usize`); also the type of global addresses and slice lengths.
    U64,
    /// IEEE binary16 (`half::f16`); arithmetic on it is done in `F32` and rounded back.
    F16,
    /// bfloat16 (`half::bf16`): the top 16 bits of an `f32`; arithmetic is done in `F32` and
    /// rounded back.
    BF16,
    /// IEEE binary32, `f32`.
    F32,
    /// IEEE binary64, `f64`.
    F64,
    /// TensorFloat-32, the tensor cores' `tf32`: an `f32` whose low 13 mantissa bits are zero
    /// (a sign, `f32`'s 8-bit exponent and 10 mantissa bits), held and stored as those 32
    /// bits. A storage and operand type, not an arithmetic one: it has no arithmetic and no
    /// comparisons; `F32` casts to it by rounding to the nearest `tf32`, ties away from zero
    /// ([`crate::scalar::round_to_tf32`]), and it casts back to `F32` exactly. Tensor cores
    /// multiply it (`mma.sync m16n8k8`, `wgmma ... k8`).
    Tf32,
}

impl ScalarType {
    /// Every scalar type, in declaration order.
    pub const ALL: [ScalarType; 14] = [
        Self::Bool,
        Self::I8,
        Self::I16,
        Self::I32,
        Self::I64,
        Self::U8,
        Self::U16,
        Self::U32,
        Self::U64,
        Self::F16,
        Self::BF16,
        Self::F32,
        Self::F64,
        Self::Tf32,
    ];

    /// Size in bytes in memory (`Bool` is one byte, as in Rust).
    pub const fn size_bytes(self) -> u32 {
        match self {
            Self::Bool | Self::I8 | Self::U8 => 1,
            Self::I16 | Self::U16 | Self::F16 | Self::BF16 => 2,
            Self::I32 | Self::U32 | Self::F32 | Self::Tf32 => 4,
            Self::I64 | Self::U64 | Self::F64 => 8,
        }
    }

    /// Width in bits of the value (`Bool` counts as 1).
    pub const fn bits(self) -> u32 {
        match self {
            Self::Bool => 1,
            other => other.size_bytes() * 8,
        }
    }

    /// Whether this is one of the four floating-point types (`F16`, `BF16`, `F32`, `F64`).
    pub const fn is_float(self) -> bool {
        matches!(self, Self::F16 | Self::BF16 | Self::F32 | Self::F64)
    }

    /// Whether values of this type have arithmetic and comparisons: every type but `Tf32`,
    /// which is cast to `F32` first (the validator's rule).
    pub const fn has_arithmetic(self) -> bool {
        !matches!(self, Self::Tf32)
    }

    /// Whether this is a two's complement integer type (`I8` to `I64`).
    pub const fn is_signed_int(self) -> bool {
        matches!(self, Self::I8 | Self::I16 | Self::I32 | Self::I64)
    }

    /// Whether this is an unsigned integer type (`U8` to `U64`); `Bool` is not one.
    pub const fn is_unsigned_int(self) -> bool {
        matches!(self, Self::U8 | Self::U16 | Self::U32 | Self::U64)
    }

    /// Whether this is an integer type of either signedness; `Bool` and floats are not.
    pub const fn is_int(self) -> bool {
        self.is_signed_int() || self.is_unsigned_int()
    }

    /// The type's name as cuTile Rust's `DType::as_str` gives it, which is its Rust
    /// spelling ([`rust_name`](Self::rust_name)): what `.generics(..)` takes for a type.
    pub const fn as_str(self) -> &'static str {
        self.rust_name()
    }

    /// The Rust spelling of the type (`f32`, `u64`, `bool`, `f16`, `bf16`).
    pub const fn rust_name(self) -> &'static str {
        match self {
            Self::Bool => "bool",
            Self::I8 => "i8",
            Self::I16 => "i16",
            Self::I32 => "i32",
            Self::I64 => "i64",
            Self::U8 => "u8",
            Self::U16 => "u16",
            Self::U32 => "u32",
            Self::U64 => "u64",
            Self::F16 => "f16",
            Self::BF16 => "bf16",
            Self::F32 => "f32",
            Self::F64 => "f64",
            Self::Tf32 => "tf32",
        }
    }

    /// Parses a Rust type name (`"f32"`, `"usize"` maps to `U64`, `"isize"` to `I64`).
    pub fn from_rust_name(name: &str) -> Option<Self> {
        Some(match name {
            "bool" => Self::Bool,
            "i8" => Self::I8,
            "i16" => Self::I16,
            "i32" => Self::I32,
            "i64" | "isize" => Self::I64,
            "u8" => Self::U8,
            "u16" => Self::U16,
            "u32" => Self::U32,
            "u64" | "usize" => Self::U64,
            "f16" => Self::F16,
            "bf16" => Self::BF16,
            "f32" => Self::F32,
            "f64" => Self::F64,
            "tf32" => Self::Tf32,
            _ => return None,
        })
    }
}

impl fmt::Display for ScalarType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.rust_name())
    }
}

/// A constant: a type and its bit pattern, zero-extended into 64 bits.
///
/// Invariant (checked by the validator): bits above `ty.bits()` are zero, so two equal
/// constants have equal `bits`. `Bool` is 0 or 1; floats are IEEE bit patterns (`F16` binary16,
/// `BF16` bfloat16); signed integers are two's complement truncated to their width.
#[derive(serde::Serialize, serde::Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Constant {
    /// The constant's type.
    pub ty: ScalarType,
    /// The bit pattern, in the low `ty.bits()` bits; the bits above are zero.
    pub bits: u64,
}

impl Constant {
    /// Makes a constant, masking `bits` to the width of `ty`.
    pub const fn new(ty: ScalarType, bits: u64) -> Self {
        let width = ty.bits();
        let bits = if width >= 64 {
            bits
        } else {
            bits & ((1u64 << width) - 1)
        };
        Self { ty, bits }
    }
    /// A `Bool` constant (bits 0 or 1).
    pub const fn bool(v: bool) -> Self {
        Self::new(ScalarType::Bool, v as u64)
    }
    /// An `I32` constant; the two's complement bits are kept in the low 32 bits.
    pub const fn i32(v: i32) -> Self {
        Self::new(ScalarType::I32, v as u32 as u64)
    }
    /// A `U32` constant.
    pub const fn u32(v: u32) -> Self {
        Self::new(ScalarType::U32, v as u64)
    }
    /// An `I64` constant (two's complement bits).
    pub const fn i64(v: i64) -> Self {
        Self::new(ScalarType::I64, v as u64)
    }
    /// A `U64` constant.
    pub const fn u64(v: u64) -> Self {
        Self::new(ScalarType::U64, v)
    }
    /// An `F32` constant holding the exact bits of `v` (NaN payloads and the sign of zero are
    /// kept).
    pub fn f32(v: f32) -> Self {
        Self::new(ScalarType::F32, v.to_bits() as u64)
    }
    /// An `F64` constant holding the exact bits of `v`.
    pub fn f64(v: f64) -> Self {
        Self::new(ScalarType::F64, v.to_bits())
    }

    /// Whether the constant respects the masking invariant.
    pub const fn is_canonical(&self) -> bool {
        let width = self.ty.bits();
        width >= 64 || self.bits >> width == 0
    }
}

impl fmt::Display for Constant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.bits;
        match self.ty {
            ScalarType::Bool => write!(f, "{}", b != 0),
            ScalarType::I8 => write!(f, "{}i8", b as u8 as i8),
            ScalarType::I16 => write!(f, "{}i16", b as u16 as i16),
            ScalarType::I32 => write!(f, "{}i32", b as u32 as i32),
            ScalarType::I64 => write!(f, "{}i64", b as i64),
            ScalarType::U8 | ScalarType::U16 | ScalarType::U32 | ScalarType::U64 => {
                write!(f, "{}{}", b, self.ty)
            }
            ScalarType::F32 => write!(f, "{:?}f32", f32::from_bits(b as u32)),
            ScalarType::Tf32 => write!(f, "0x{b:08x}tf32"),
            ScalarType::F64 => write!(f, "{:?}f64", f64::from_bits(b)),
            ScalarType::F16 | ScalarType::BF16 => write!(f, "0x{:04x}{}", b, self.ty),
        }
    }
}
