//! Warp-level matrix operations of the IR: the tensor-core multiply-accumulate
//! ([`Stmt::Mma`](crate::Stmt::Mma)), the shared-memory matrix load
//! ([`Stmt::LdMatrix`](crate::Stmt::LdMatrix)) and the asynchronous global-to-shared copy
//! ([`Stmt::CpAsync`](crate::Stmt::CpAsync)).
//!
//! This module exists so that the fragment layouts, which say which lane holds which matrix
//! element in which register, are written down once, as functions, next to the types. The
//! emulator executes them; front ends use them to place data; the PTX writer relies on the
//! hardware doing the same. They transcribe the PTX ISA ("Matrix Fragments for mma.m16n8k16
//! with floating point type", "... for mma.m16n8k8", and "Warp-level matrix load instruction:
//! ldmatrix", PTX ISA 8.x section 9.7.14.5), and were checked on an H200 for every shape and
//! every `ldmatrix` variant (`cuprum-ptx/tests/gpu_warp.rs`). In all of them
//!
//! ```text
//! groupID           = laneid >> 2        (0..8)
//! threadID_in_group = laneid % 4         (0..4)
//! ```
//!
//! # `mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32`
//!
//! `D (16x8, f32) = A (16x16) * B (16x8) + C (16x8, f32)`. Per lane:
//!
//! * A: four `.b32` registers, each holding two 16-bit elements, the lower-numbered element in
//!   bits 0..16. Elements `a0..a7` (register `i / 2`, half `i % 2`) sit at
//!   `row = groupID` for `a0, a1, a4, a5`, `groupID + 8` otherwise;
//!   `col = threadID_in_group * 2 + (i & 1)` for `i < 4`, that `+ 8` for `i >= 4`.
//!   So register 0 holds `A[g][2t..2t+2]`, 1 `A[g+8][2t..2t+2]`, 2 `A[g][2t+8..2t+10]`,
//!   3 `A[g+8][2t+8..2t+10]`.
//! * B: two `.b32` registers, elements `b0..b3`: `row (k) = threadID_in_group * 2 + (i & 1)`
//!   for `i < 2`, that `+ 8` for `i >= 2`; `col (n) = groupID`.
//! * C and D: four `f32` registers `c0..c3`: `row = groupID` for `c0, c1`, `groupID + 8` for
//!   `c2, c3`; `col = threadID_in_group * 2 + (i & 1)`.
//!
//! # `mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32`
//!
//! `D (16x8) = A (16x8) * B (8x8) + C`. A and B elements are `tf32` values held in whole `.b32`
//! registers (the bits of an `f32`; see [`MmaShape::M16n8k8Tf32`] for the low 13 bits):
//!
//! * A: four registers `a0..a3`: `row = groupID` for `a0, a2`, `groupID + 8` for `a1, a3`;
//!   `col = threadID_in_group` for `a0, a1`, `threadID_in_group + 4` for `a2, a3`.
//! * B: two registers: `row (k) = threadID_in_group` for `b0`, `threadID_in_group + 4` for
//!   `b1`; `col (n) = groupID`.
//! * C and D: as for m16n8k16.
//!
//! # `ldmatrix.sync.aligned.m8n8.{x1,x2,x4}{.trans}.shared.b16`
//!
//! Loads one, two or four 8x8 matrices of 16-bit elements from shared memory. Each matrix row
//! is 16 contiguous bytes somewhere in shared memory, 16-byte aligned; lanes `8 m .. 8 m + 8`
//! supply the addresses of rows `0..8` of matrix `m` (lane `l` gives row `l % 8` of matrix
//! `l / 8`); the addresses of the other lanes (16..32 for `.x2`, 8..32 for `.x1`) are ignored.
//! Every lane receives one `.b32` register per matrix: without `.trans`, lane `l` gets
//! elements `(row, col) = (l / 4, 2 (l % 4))` (bits 0..16) and `(l / 4, 2 (l % 4) + 1)`
//! (bits 16..32) of matrix `m` in register `m`, the same distribution as one register of an
//! mma A/B fragment; with `.trans` it gets the same positions of the transposed matrix, i.e.
//! elements `(2 (l % 4), l / 4)` and `(2 (l % 4) + 1, l / 4)` of the matrix as stored.
//!
//! # `cp.async`
//!
//! See [`CpAsyncCache`] and [`Stmt::CpAsync`](crate::Stmt::CpAsync).

use crate::types::ScalarType;

/// The shape and input type of a tensor-core [`Stmt::Mma`](crate::Stmt::Mma). Every shape
/// multiplies row-major A by column-major B (`.row.col`) and accumulates in `f32`.
#[derive(serde::Serialize, serde::Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MmaShape {
    /// `mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32`: A and B hold IEEE binary16 values.
    M16n8k16F16,
    /// `mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32`: A and B hold bfloat16 values.
    M16n8k16Bf16,
    /// `mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32`: A and B hold `tf32` values: the
    /// bits of an `f32` of which only the sign, the exponent and the top 10 mantissa bits
    /// count. The ISA asks for `tf32` data (rounded with `cvt.rna.tf32.f32`); the tensor cores
    /// ignore the low 13 bits of whatever they are given (checked on an H200), so the IR
    /// defines the operands as truncated to `tf32` (toward zero, `bits & 0xFFFF_E000`). Front
    /// ends that want rounding round before the `Mma`.
    M16n8k8Tf32,
}

impl MmaShape {
    /// Every shape, in declaration order.
    pub const ALL: [MmaShape; 3] = [Self::M16n8k16F16, Self::M16n8k16Bf16, Self::M16n8k8Tf32];

    /// The shape whose A and B elements have type `ty` (`F16`, `BF16` or `Tf32`), or `None`
    /// when no tensor-core shape multiplies them.
    pub const fn for_input(ty: ScalarType) -> Option<MmaShape> {
        match ty {
            ScalarType::F16 => Some(Self::M16n8k16F16),
            ScalarType::BF16 => Some(Self::M16n8k16Bf16),
            ScalarType::Tf32 => Some(Self::M16n8k8Tf32),
            _ => None,
        }
    }

    /// The type of the A and B elements.
    pub const fn input_scalar(self) -> ScalarType {
        match self {
            Self::M16n8k16F16 => ScalarType::F16,
            Self::M16n8k16Bf16 => ScalarType::BF16,
            Self::M16n8k8Tf32 => ScalarType::Tf32,
        }
    }

    /// An A or B element of this shape as the tensor cores read it, from its bits (the low
    /// 16 of them for the 16-bit types; a `tf32` truncated, see [`Self::M16n8k8Tf32`]).
    pub fn element(self, bits: u64) -> crate::tensor_core::Num {
        use crate::tensor_core::Num;
        match self {
            Self::M16n8k16F16 => Num::f16(bits & 0xFFFF),
            Self::M16n8k16Bf16 => Num::bf16(bits & 0xFFFF),
            Self::M16n8k8Tf32 => Num::tf32(bits & 0xFFFF_FFFF),
        }
    }
    /// Rows of A, C and D.
    pub const M: usize = 16;
    /// Columns of B, C and D.
    pub const N: usize = 8;

    /// The reduction length: columns of A, rows of B.
    pub const fn k(self) -> usize {
        match self {
            Self::M16n8k16F16 | Self::M16n8k16Bf16 => 16,
            Self::M16n8k8Tf32 => 8,
        }
    }

    /// The PTX shape qualifier (`m16n8k16`).
    pub const fn ptx_shape(self) -> &'static str {
        match self {
            Self::M16n8k16F16 | Self::M16n8k16Bf16 => "m16n8k16",
            Self::M16n8k8Tf32 => "m16n8k8",
        }
    }

    /// The PTX type of the A and B elements (`f16`, `bf16`, `tf32`).
    pub const fn input_type(self) -> &'static str {
        match self {
            Self::M16n8k16F16 => "f16",
            Self::M16n8k16Bf16 => "bf16",
            Self::M16n8k8Tf32 => "tf32",
        }
    }

    /// How many A or B elements one `.b32` fragment register holds: 2 (16-bit types) or 1.
    pub const fn elements_per_register(self) -> usize {
        match self {
            Self::M16n8k16F16 | Self::M16n8k16Bf16 => 2,
            Self::M16n8k8Tf32 => 1,
        }
    }

    /// `(row, col)` in A of the element that `lane` holds in A register `reg` (0..4), half
    /// `half` (0: bits 0..16, 1: bits 16..32; always 0 for tf32).
    pub const fn a_position(self, lane: u32, reg: usize, half: usize) -> (usize, usize) {
        let (g, t) = ((lane as usize % 32) >> 2, lane as usize % 4);
        match self {
            Self::M16n8k16F16 | Self::M16n8k16Bf16 => {
                let i = reg * 2 + half;
                let row = if i < 2 || (4 <= i && i < 6) { g } else { g + 8 };
                let col = t * 2 + (i & 1) + if i >= 4 { 8 } else { 0 };
                (row, col)
            }
            Self::M16n8k8Tf32 => {
                let row = if reg & 1 == 0 { g } else { g + 8 };
                let col = if reg < 2 { t } else { t + 4 };
                (row, col)
            }
        }
    }

    /// `(row, col)` in B (row = k index, col = n index) of the element that `lane` holds in B
    /// register `reg` (0..2), half `half` (always 0 for tf32).
    pub const fn b_position(self, lane: u32, reg: usize, half: usize) -> (usize, usize) {
        let (g, t) = ((lane as usize % 32) >> 2, lane as usize % 4);
        match self {
            Self::M16n8k16F16 | Self::M16n8k16Bf16 => {
                let i = reg * 2 + half;
                let row = t * 2 + (i & 1) + if i >= 2 { 8 } else { 0 };
                (row, g)
            }
            Self::M16n8k8Tf32 => (if reg == 0 { t } else { t + 4 }, g),
        }
    }

    /// `(row, col)` in C and D of accumulator register `reg` (0..4) of `lane`, for every shape.
    pub const fn c_position(lane: u32, reg: usize) -> (usize, usize) {
        let (g, t) = ((lane as usize % 32) >> 2, lane as usize % 4);
        let row = if reg < 2 { g } else { g + 8 };
        (row, t * 2 + (reg & 1))
    }
}

/// `(row, col)` in matrix `m` (as stored in shared memory) of the 16-bit element that `lane`
/// receives in bits `16 * half ..` of its register `m` from an `ldmatrix` (see the module
/// docs); `trans` selects `.trans`.
pub const fn ldmatrix_position(lane: u32, half: usize, trans: bool) -> (usize, usize) {
    let l = lane as usize % 32;
    let (r, c) = (l / 4, 2 * (l % 4) + half);
    if trans { (c, r) } else { (r, c) }
}

/// The cache policy of a [`Stmt::CpAsync`](crate::Stmt::CpAsync) (it does not change what the
/// copy does).
#[derive(serde::Serialize, serde::Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CpAsyncCache {
    /// `.ca`: cache at all levels; copies of 4, 8 or 16 bytes.
    Ca,
    /// `.cg`: cache in L2 only, bypassing L1; copies of 16 bytes only.
    Cg,
}

impl CpAsyncCache {
    /// The PTX qualifier, without the dot.
    pub const fn ptx_name(self) -> &'static str {
        match self {
            Self::Ca => "ca",
            Self::Cg => "cg",
        }
    }

    /// Whether a copy of `size` bytes may use this policy.
    pub const fn allows_size(self, size: u32) -> bool {
        match self {
            Self::Ca => matches!(size, 4 | 8 | 16),
            Self::Cg => size == 16,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every element of A, B and C is held by exactly one (lane, register, half).
    #[test]
    fn fragments_cover_each_element_once() {
        for shape in MmaShape::ALL {
            let k = shape.k();
            let halves = shape.elements_per_register();
            let mut a = vec![0u32; MmaShape::M * k];
            let mut b = vec![0u32; k * MmaShape::N];
            let mut c = [0u32; MmaShape::M * MmaShape::N];
            for lane in 0..32 {
                for h in 0..halves {
                    for reg in 0..4 {
                        let (r, col) = shape.a_position(lane, reg, h);
                        a[r * k + col] += 1;
                    }
                    for reg in 0..2 {
                        let (r, col) = shape.b_position(lane, reg, h);
                        b[r * MmaShape::N + col] += 1;
                    }
                }
                for reg in 0..4 {
                    let (r, col) = MmaShape::c_position(lane, reg);
                    c[r * MmaShape::N + col] += 1;
                }
            }
            assert!(a.iter().all(|&n| n == 1), "{shape:?} A");
            assert!(b.iter().all(|&n| n == 1), "{shape:?} B");
            assert!(c.iter().all(|&n| n == 1), "{shape:?} C");
        }
    }

    #[test]
    fn ldmatrix_covers_each_element_once() {
        for trans in [false, true] {
            let mut seen = [0u32; 64];
            for lane in 0..32 {
                for half in 0..2 {
                    let (r, c) = ldmatrix_position(lane, half, trans);
                    seen[r * 8 + c] += 1;
                }
            }
            assert!(seen.iter().all(|&n| n == 1));
        }
        assert_eq!(ldmatrix_position(5, 1, false), (1, 3));
        assert_eq!(ldmatrix_position(5, 1, true), (3, 1));
    }

    #[test]
    fn cache_sizes() {
        assert!(CpAsyncCache::Ca.allows_size(4));
        assert!(!CpAsyncCache::Cg.allows_size(8));
        assert!(CpAsyncCache::Cg.allows_size(16));
        assert!(!CpAsyncCache::Ca.allows_size(2));
    }
}
