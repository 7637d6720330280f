//! Hopper's warpgroup matrix multiply-accumulate (`wgmma`) and the warp-specialization
//! statements around it, written down once: the instruction shapes, the 64-bit shared-memory
//! matrix descriptor (encode and decode), where each operand element lives in shared memory
//! under a descriptor, which thread holds which accumulator element, and the `stmatrix` store.
//!
//! This module exists so that the device API's descriptor helper, the emulator's operand
//! reads, the PTX writer and the tests all ask one definition; nothing here depends on a
//! back end. The layouts transcribe the PTX ISA ("Asynchronous Warpgroup Level Matrix
//! Multiply-Accumulate": "Matrix Descriptor Format", "Shared Memory Matrix Layout", "Register
//! Fragments") and CUTLASS's canonical GMMA layouts; the GPU probe tests in
//! `crates/cuprum/tests/wgmma.rs` pin them on an H100/H200 bit for bit.
//!
//! # The statement
//!
//! [`Stmt::WgmmaMma`](crate::Stmt::WgmmaMma) computes `D = A * B + scale_d * D` for a
//! `64 x N` tile with `K = 16` (`f16`, `bf16`) or `K = 8` (`tf32`), accumulating in `f32`. A
//! *warpgroup* is four consecutive warps whose first warp index is a multiple of four (128
//! threads); all 128 threads run the statement together. The accumulator is `N / 2` `F32`
//! [`Var`]s per thread that the statement reads and writes *in place* ([`WgmmaMma::acc`]):
//! they are the same registers from the `wgmma.fence` to the covering `wgmma.wait_group`, so
//! ptxas never has to serialize the pipeline (its warning C7510).
//!
//! # Accumulator layout ([`accumulator_position`])
//!
//! Thread `t` of the warpgroup (warp `w = t / 32`, lane `l = t % 32`, `g = l / 4`,
//! `q = l % 4`) holds, in accumulator register `i` (`0 .. N / 2`),
//! `D[16 w + g + 8 * ((i / 2) % 2)][8 * (i / 4) + 2 q + i % 2]`: each block of eight columns
//! is one `mma.m16n8` C fragment per warp, warp `w` owning rows `16 w .. 16 w + 16`.
//!
//! # A in registers ([`a_register_position`])
//!
//! Warp `w` supplies rows `16 w .. 16 w + 16` of A in four `.b32` registers per thread, laid
//! out as the `mma.sync` A fragment of [`crate::matrix`] (`m16n8k16` for `f16`/`bf16`,
//! `m16n8k8` for `tf32`).
//!
//! # A and B through descriptors ([`operand_address`])
//!
//! A is `64 x K` and B is `K x N`; each is stored *K-major* (the default: the `K` elements of
//! one row of A, or one column of B, are contiguous) or, for `f16`/`bf16` with the transpose
//! flag, *MN-major*. Memory is organised in *core matrices* of eight 16-byte rows. Let
//! `T = 16 / element bytes` (elements per 16 bytes), `sw` the swizzle's row span in bytes (32,
//! 64, 128), and LBO/SBO the descriptor's byte offsets; for element `(mn, k)` (`mn` a row of A
//! or a column of B):
//!
//! | layout | byte offset from the start address |
//! |---|---|
//! | K-major, no swizzle | `(mn / 8) SBO + (k / T) LBO + (mn % 8) 16 + (k % T) bytes` |
//! | K-major, swizzle `sw` | `(mn / 8) SBO + (mn % 8) sw + k bytes` (LBO unused) |
//! | MN-major, no swizzle | `(mn / T) SBO + (k / 8) LBO + (k % 8) 16 + (mn % T) bytes` |
//! | MN-major, swizzle `sw` | `(mn / (sw / bytes)) LBO + (k / 8) SBO + (k % 8) sw + (mn % (sw / bytes)) bytes` |
//!
//! The start address plus that offset is then swizzled as a shared-memory address
//! ([`Swizzle::apply`]): the swizzle acts on address bits, so a swizzled tile starts at a
//! multiple of the pattern's period ([`Swizzle::period_bytes`]) for the base offset to be 0,
//! and stepping K inside a swizzled row is adding the bytes to the start address.

use serde::{Deserialize, Serialize};

use crate::kernel::{Value, Var};
use crate::swizzle::Swizzle;
use crate::types::ScalarType;

/// Threads in a warpgroup.
pub const WARPGROUP_THREADS: u32 = 128;
/// Rows of A, D (every `wgmma` shape has `M = 64`).
pub const M: u32 = 64;

/// The input element type of a `wgmma` (the accumulator is always `f32`).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WgmmaType {
    /// IEEE binary16, `K = 16`.
    F16,
    /// bfloat16, `K = 16`.
    Bf16,
    /// `tf32` (the bits of an `f32`, of which the low 13 mantissa bits are ignored, as for
    /// [`crate::MmaShape::M16n8k8Tf32`]), `K = 8`.
    Tf32,
}

impl WgmmaType {
    /// Every type.
    pub const ALL: [WgmmaType; 3] = [Self::F16, Self::Bf16, Self::Tf32];

    /// The reduction length of one instruction.
    pub const fn k(self) -> u32 {
        match self {
            Self::F16 | Self::Bf16 => 16,
            Self::Tf32 => 8,
        }
    }

    /// Bytes of one element in shared memory.
    pub const fn bytes(self) -> u32 {
        match self {
            Self::F16 | Self::Bf16 => 2,
            Self::Tf32 => 4,
        }
    }

    /// The PTX type name.
    pub const fn ptx_name(self) -> &'static str {
        match self {
            Self::F16 => "f16",
            Self::Bf16 => "bf16",
            Self::Tf32 => "tf32",
        }
    }

    /// Whether the operands may be stored MN-major (the transpose flags): 16-bit types only.
    pub const fn transposable(self) -> bool {
        !matches!(self, Self::Tf32)
    }

    /// The `mma.sync` shape whose A fragment a warp's share of register A follows.
    pub const fn mma_shape(self) -> crate::MmaShape {
        match self {
            Self::F16 => crate::MmaShape::M16n8k16F16,
            Self::Bf16 => crate::MmaShape::M16n8k16Bf16,
            Self::Tf32 => crate::MmaShape::M16n8k8Tf32,
        }
    }
}

/// The shape of a `wgmma.mma_async`: `m64nNkK` with the input type.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct WgmmaShape {
    /// The input type, which fixes `K`.
    pub ty: WgmmaType,
    /// Columns of B and D: a multiple of 8 in `8..=256`.
    pub n: u32,
}

impl WgmmaShape {
    /// Whether PTX has this shape.
    pub const fn is_valid(self) -> bool {
        self.n >= 8 && self.n <= 256 && self.n.is_multiple_of(8)
    }

    /// The `F32` accumulator registers per thread: `N / 2`.
    pub const fn accumulators(self) -> u32 {
        self.n / 2
    }

    /// The PTX shape qualifier, `m64n128k16`.
    pub fn ptx_shape(self) -> String {
        format!("m64n{}k{}", self.n, self.ty.k())
    }
}

/// Where a `wgmma` takes A from.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub enum WgmmaA {
    /// A `U64` shared-memory matrix descriptor ([`Descriptor`]), the same in every thread.
    Descriptor(Value),
    /// Four `U32` registers per thread ([`a_register_position`]).
    Registers([Value; 4]),
}

/// How `scale-d` chooses between accumulating and overwriting.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq)]
pub enum ScaleD {
    /// Known when the kernel is written: `true` accumulates (`D = A B + D`), `false`
    /// overwrites (`D = A B`).
    Const(bool),
    /// A `Bool` value, the same in every thread of the warpgroup.
    Pred(Value),
}

/// One `wgmma.mma_async.sync.aligned` (see [`Stmt::WgmmaMma`](crate::Stmt::WgmmaMma)).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct WgmmaMma {
    /// The shape and input type.
    pub shape: WgmmaShape,
    /// A: a descriptor or registers.
    pub a: WgmmaA,
    /// B's `U64` shared-memory descriptor.
    pub b: Value,
    /// Whether D is accumulated into or overwritten.
    pub scale_d: ScaleD,
    /// `imm-scale-a = -1`: A is negated.
    pub negate_a: bool,
    /// `imm-scale-b = -1`: B is negated.
    pub negate_b: bool,
    /// `imm-trans-a`: A is stored MN-major (descriptor A, 16-bit types only).
    pub trans_a: bool,
    /// `imm-trans-b`: B is stored MN-major (16-bit types only).
    pub trans_b: bool,
    /// The `N / 2` `F32` accumulator variables, read and written in place, in register order
    /// ([`accumulator_position`]); no variable twice.
    pub acc: Vec<Var>,
}

impl WgmmaMma {
    /// Calls `f` on every value operand.
    pub fn for_each_operand(&self, mut f: impl FnMut(Value)) {
        match &self.a {
            WgmmaA::Descriptor(d) => f(*d),
            WgmmaA::Registers(r) => r.iter().for_each(|&v| f(v)),
        }
        f(self.b);
        if let ScaleD::Pred(p) = self.scale_d {
            f(p);
        }
    }

    /// Calls `f` on every value operand, which it may rewrite.
    pub fn for_each_operand_mut(&mut self, mut f: impl FnMut(&mut Value)) {
        match &mut self.a {
            WgmmaA::Descriptor(d) => f(d),
            WgmmaA::Registers(r) => r.iter_mut().for_each(&mut f),
        }
        f(&mut self.b);
        if let ScaleD::Pred(p) = &mut self.scale_d {
            f(p);
        }
    }

    /// Checks the statement's shape, flags and operand types (`value_ty`, `var_ty` give the
    /// types of visible values and of variables).
    pub fn check(
        &self,
        value_ty: impl Fn(Value) -> Result<ScalarType, String>,
        var_ty: impl Fn(Var) -> Result<ScalarType, String>,
    ) -> Result<(), String> {
        let s = self.shape;
        if !s.is_valid() {
            return Err(format!(
                "wgmma N must be a multiple of 8 in 8..=256, not {}",
                s.n
            ));
        }
        let is = |v: Value, want: ScalarType, what: &str| -> Result<(), String> {
            let t = value_ty(v)?;
            if t == want {
                Ok(())
            } else {
                Err(format!("wgmma {what} must be {want}, got {t}"))
            }
        };
        match &self.a {
            WgmmaA::Descriptor(d) => is(*d, ScalarType::U64, "A descriptor")?,
            WgmmaA::Registers(r) => {
                for &v in r {
                    is(v, ScalarType::U32, "A register")?;
                }
                if self.trans_a {
                    return Err("wgmma A from registers cannot be transposed".into());
                }
            }
        }
        is(self.b, ScalarType::U64, "B descriptor")?;
        if let ScaleD::Pred(p) = self.scale_d {
            is(p, ScalarType::Bool, "scale-d")?;
        }
        if (self.trans_a || self.trans_b) && !s.ty.transposable() {
            return Err("wgmma tf32 operands cannot be transposed".into());
        }
        if self.acc.len() != s.accumulators() as usize {
            return Err(format!(
                "wgmma m64n{} has {} accumulator registers per thread, not {}",
                s.n,
                s.accumulators(),
                self.acc.len()
            ));
        }
        for (i, &v) in self.acc.iter().enumerate() {
            let t = var_ty(v)?;
            if t != ScalarType::F32 {
                return Err(format!(
                    "wgmma accumulator {i} must be an f32 variable, not {t}"
                ));
            }
        }
        // Sorted, a repeated variable is next to itself (up to 128 of them: no pairwise
        // search, which PTX writing, repeated per module load, paid for).
        let mut sorted = self.acc.clone();
        sorted.sort_unstable();
        if let Some(pair) = sorted.windows(2).find(|p| p[0] == p[1]) {
            return Err(format!(
                "wgmma accumulator variable {:?} appears twice",
                pair[0]
            ));
        }
        Ok(())
    }
}

/// `(row, col)` in D of accumulator register `reg` of thread `thread` of the warpgroup (see
/// the module docs).
pub const fn accumulator_position(thread: u32, reg: u32) -> (u32, u32) {
    let (w, l) = ((thread % WARPGROUP_THREADS) / 32, thread % 32);
    let (g, q) = (l / 4, l % 4);
    (
        16 * w + g + 8 * ((reg / 2) % 2),
        8 * (reg / 4) + 2 * q + reg % 2,
    )
}

/// `(row, col)` in A of the element that thread `thread` of the warpgroup holds in A register
/// `reg` (0..4), half `half` (0 or 1; always 0 for `tf32`).
pub const fn a_register_position(ty: WgmmaType, thread: u32, reg: u32, half: u32) -> (u32, u32) {
    let w = (thread % WARPGROUP_THREADS) / 32;
    let (r, c) = ty
        .mma_shape()
        .a_position(thread % 32, reg as usize, half as usize);
    (16 * w + r as u32, c as u32)
}

/// Whether an operand is stored K-major or MN-major (transposed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Major {
    /// The `K` elements of a row of A (a column of B) are contiguous: no transpose flag.
    K,
    /// The `M` (or `N`) elements are contiguous: the transpose flag.
    Mn,
}

/// The 64-bit shared-memory matrix descriptor of `wgmma`, decoded. Fields are in bytes; the
/// encoding keeps bits 4.. of each address and offset ([`Descriptor::encode`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Descriptor {
    /// The shared address of the matrix (bits 0–13: `start >> 4`; below 256 KiB).
    pub start: u32,
    /// The leading-dimension byte offset (bits 16–29: `>> 4`).
    pub leading_byte_offset: u32,
    /// The stride-dimension byte offset (bits 32–45: `>> 4`).
    pub stride_byte_offset: u32,
    /// The matrix base offset (bits 49–51): 0 when the swizzled tile starts at a multiple of
    /// its pattern's period, the only case cuprum supports (see the module docs).
    pub base_offset: u32,
    /// The layout type (bits 62–63, [`Swizzle::descriptor_code`]).
    pub swizzle: Swizzle,
}

impl Descriptor {
    /// The descriptor's bits. Addresses and offsets lose their low four bits; the start
    /// address and offsets keep 14 bits each (so at most 256 KiB), the base offset 3.
    pub const fn encode(self) -> u64 {
        const fn field(bytes: u32) -> u64 {
            ((bytes as u64) >> 4) & 0x3FFF
        }
        field(self.start)
            | field(self.leading_byte_offset) << 16
            | field(self.stride_byte_offset) << 32
            | ((self.base_offset as u64) & 7) << 49
            | self.swizzle.descriptor_code() << 62
    }

    /// The fields of descriptor bits `bits` (bits outside the fields are ignored).
    pub const fn decode(bits: u64) -> Descriptor {
        const fn field(bits: u64, shift: u32) -> u32 {
            (((bits >> shift) & 0x3FFF) as u32) << 4
        }
        Descriptor {
            start: field(bits, 0),
            leading_byte_offset: field(bits, 16),
            stride_byte_offset: field(bits, 32),
            base_offset: ((bits >> 49) & 7) as u32,
            swizzle: Swizzle::from_descriptor_code(bits >> 62),
        }
    }

    /// The shared address of element `(mn, k)` of the operand this descriptor names (`mn` a
    /// row of A or a column of B), stored `major` with elements of `bytes` bytes (see the
    /// module docs' table).
    pub const fn element_address(self, major: Major, bytes: u32, mn: u32, k: u32) -> u32 {
        let (lbo, sbo) = (self.leading_byte_offset, self.stride_byte_offset);
        let t = 16 / bytes;
        let offset = match (major, self.swizzle.span_bytes()) {
            (Major::K, None) => (mn / 8) * sbo + (k / t) * lbo + (mn % 8) * 16 + (k % t) * bytes,
            (Major::K, Some(sw)) => (mn / 8) * sbo + (mn % 8) * sw + k * bytes,
            (Major::Mn, None) => (mn / t) * sbo + (k / 8) * lbo + (k % 8) * 16 + (mn % t) * bytes,
            (Major::Mn, Some(sw)) => {
                let row = sw / bytes;
                (mn / row) * lbo + (k / 8) * sbo + (k % 8) * sw + (mn % row) * bytes
            }
        };
        self.swizzle.apply(self.start.wrapping_add(offset))
    }
}

/// `(row, col)` in 8x8 matrix `reg % count` (as it lands in shared memory) of the 16-bit
/// element that `lane` supplies in bits `16 * half ..` of its register `reg` to a `stmatrix`
/// (the inverse of `ldmatrix`: [`crate::matrix::ldmatrix_position`]).
pub const fn stmatrix_position(lane: u32, half: usize, trans: bool) -> (usize, usize) {
    crate::matrix::ldmatrix_position(lane, half, trans)
}

/// The register count `setmaxnreg` may ask for: a multiple of 8 in `24..=256`.
pub const fn valid_register_count(count: u32) -> bool {
    count >= 24 && count <= 256 && count.is_multiple_of(8)
}

/// The largest named-barrier id (`bar.sync id`; id 0 is the block's `Barrier`).
pub const MAX_BARRIER_ID: u32 = 15;

#[cfg(test)]
mod tests {
    use super::*;

    /// Accumulators must be distinct `f32` variables, wherever a repeated one stands.
    #[test]
    fn a_repeated_accumulator_variable_is_refused() {
        let vars: Vec<Var> = (0..64).map(Var::from_index).collect();
        let value = Value::from_index(0);
        let mma = |acc: Vec<Var>| WgmmaMma {
            shape: WgmmaShape {
                ty: WgmmaType::F16,
                n: 128,
            },
            a: WgmmaA::Descriptor(value),
            b: value,
            scale_d: ScaleD::Const(true),
            negate_a: false,
            negate_b: false,
            trans_a: false,
            trans_b: false,
            acc,
        };
        let check = |m: &WgmmaMma| m.check(|_| Ok(ScalarType::U64), |_| Ok(ScalarType::F32));
        assert_eq!(check(&mma(vars.clone())), Ok(()));
        for (i, j) in [(0, 1), (0, 63), (40, 17)] {
            let mut acc = vars.clone();
            acc[i] = acc[j];
            let err = check(&mma(acc)).expect_err("a repeated accumulator");
            assert!(err.contains("appears twice"), "{err}");
        }
    }

    #[test]
    fn descriptor_fields_round_trip() {
        let d = Descriptor {
            start: 0x1_2340,
            leading_byte_offset: 16,
            stride_byte_offset: 1024,
            base_offset: 0,
            swizzle: Swizzle::B128,
        };
        let bits = d.encode();
        assert_eq!(bits & 0x3FFF, 0x1234);
        assert_eq!(bits >> 16 & 0x3FFF, 1);
        assert_eq!(bits >> 32 & 0x3FFF, 64);
        assert_eq!(bits >> 62, 1);
        assert_eq!(Descriptor::decode(bits), d);
        // The fixed descriptor cuda-oxide's `make_smem_desc` ORs in: layout 3, LBO and SBO 128.
        let oxide = Descriptor::decode(0xC000_0008_0008_0000);
        assert_eq!(oxide.swizzle, Swizzle::B32);
        assert_eq!(oxide.leading_byte_offset, 128);
        assert_eq!(oxide.stride_byte_offset, 128);
    }

    #[test]
    fn accumulators_cover_d_once() {
        for n in (8..=256).step_by(8) {
            let shape = WgmmaShape {
                ty: WgmmaType::Bf16,
                n,
            };
            let mut seen = vec![0u8; (M * n) as usize];
            for t in 0..WARPGROUP_THREADS {
                for r in 0..shape.accumulators() {
                    let (row, col) = accumulator_position(t, r);
                    seen[(row * n + col) as usize] += 1;
                }
            }
            assert!(seen.iter().all(|&c| c == 1), "N = {n}");
        }
    }

    #[test]
    fn register_a_covers_a_once() {
        for ty in WgmmaType::ALL {
            let k = ty.k();
            let halves = if ty == WgmmaType::Tf32 { 1 } else { 2 };
            let mut seen = vec![0u8; (M * k) as usize];
            for t in 0..WARPGROUP_THREADS {
                for r in 0..4 {
                    for h in 0..halves {
                        let (row, col) = a_register_position(ty, t, r, h);
                        seen[(row * k + col) as usize] += 1;
                    }
                }
            }
            assert!(seen.iter().all(|&c| c == 1), "{ty:?}");
        }
    }

    /// Every layout places the elements of one instruction's operand at distinct addresses.
    #[test]
    fn operand_layouts_are_injective() {
        for s in Swizzle::ALL {
            for major in [Major::K, Major::Mn] {
                for ty in [WgmmaType::Bf16, WgmmaType::Tf32] {
                    if major == Major::Mn && !ty.transposable() {
                        continue;
                    }
                    let (bytes, k) = (ty.bytes(), ty.k());
                    let mn_count = 64;
                    let (lbo, sbo) = match (major, s.span_bytes()) {
                        (Major::K, None) => (128, 256),
                        (Major::K, Some(sw)) => (16, 8 * sw),
                        (Major::Mn, None) => (128, 256),
                        (Major::Mn, Some(sw)) => (8 * sw * (k / 8).max(1) * 2, 8 * sw),
                    };
                    let d = Descriptor {
                        start: 0,
                        leading_byte_offset: lbo,
                        stride_byte_offset: sbo,
                        base_offset: 0,
                        swizzle: s,
                    };
                    let mut seen = std::collections::HashSet::new();
                    for mn in 0..mn_count {
                        for kk in 0..k {
                            let a = d.element_address(major, bytes, mn, kk);
                            assert_eq!(a % bytes, 0);
                            assert!(seen.insert(a), "{s:?} {major:?} {ty:?} ({mn}, {kk})");
                        }
                    }
                }
            }
        }
    }
}
