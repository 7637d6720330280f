//! Hopper's tensor memory accelerator (TMA): the bulk copy statements ([`TmaOp`]) and the
//! tensor map, the description of a tiled tensor in global memory that a bulk tensor copy
//! reads through ([`TensorMapDesc`]).
//!
//! A tensor map is 128 opaque bytes on the GPU (the driver's `cuTensorMapEncodeTiled` writes
//! them). Everything the hardware requires of one is stated here once, as
//! [`TensorMapDesc::check`] and the constants beside it: the host runtime refuses a map that
//! breaks them before it encodes anything, and the emulator, which has no driver, receives
//! the description itself ([`TensorMapDesc::encode_emulated`]) and checks it the same way.
//! What a copy does with the map (which elements a box covers, where out-of-bounds elements
//! come from, how the box is laid out in shared memory) is in [`TmaOp`]'s docs; the emulator
//! is its executable definition.

use crate::kernel::Value;
use crate::swizzle::Swizzle;
use crate::types::ScalarType;

/// The most dimensions a tensor map has.
pub const MAX_RANK: usize = 5;
/// The most elements a box has along one dimension.
pub const MAX_BOX_DIM: u32 = 256;
/// The largest global dimension (elements): `2^32`.
pub const MAX_GLOBAL_DIM: u64 = 1 << 32;
/// Global strides (bytes) are multiples of this and below [`MAX_GLOBAL_STRIDE`].
pub const STRIDE_ALIGN: u64 = 16;
/// Global strides (bytes) are below this: `2^40`.
pub const MAX_GLOBAL_STRIDE: u64 = 1 << 40;
/// The global address of a tensor is a multiple of this (bytes).
pub const GLOBAL_ADDRESS_ALIGN: u64 = 16;
/// A box's inner dimension spans a multiple of this many bytes.
pub const BOX_INNER_ALIGN: u32 = 16;
/// A box copy's innermost coordinate is a multiple of this many bytes from the tensor's
/// start ([`TensorMapDesc::box_start_problem`]).
pub const BOX_START_ALIGN: u32 = 16;
/// The shared-memory address of a tile copy is a multiple of this (bytes); a swizzled one a
/// multiple of its swizzle's [`Swizzle::period_bytes`] as well (so the pattern lines up).
pub const SHARED_ALIGN: u32 = 128;
/// The size of a tensor map in bytes, and its alignment as a kernel parameter is 64.
pub const TENSOR_MAP_BYTES: usize = 128;

/// Which tensor map a tile copy reads: a kernel parameter (`.param .align 64 .b8 name[128]`,
/// [`crate::ParamKind::TensorMap`]), or 128 bytes in global memory at a `U64` address
/// (cuda-oxide's `*const TmaDescriptor`, a map the host copied into a device buffer).
#[derive(serde::Serialize, serde::Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TensorMapRef {
    /// Tensor-map parameter number `index` (an index into [`crate::Kernel::params`]).
    Param(u32),
    /// A `U64` global address of the 128-byte map, 64-byte aligned.
    Global(Value),
}

/// What a [`crate::Stmt::Tma`] does. Every form is issued by each lane that executes it
/// (usually one elected lane), and runs asynchronously: it is done by the TMA unit, an agent
/// of its own, after the statement returns.
///
/// Tile copies name a box of the tensor by its first element's coordinates `coords` (one
/// `I32` per dimension, innermost first, possibly negative or past the end). The box has the
/// map's box dimensions; in shared memory it is stored densely, innermost dimension fastest,
/// starting at the shared address, and then permuted in 16-byte chunks by the map's swizzle
/// ([`Swizzle::apply`] on the shared address of each byte). Elements of the box outside the
/// tensor read as zero (or as a NaN when the map asks for NaN fill; floats only) and are not
/// written by a store.
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, PartialEq)]
pub enum TmaOp {
    /// `cp.async.bulk.tensor.<N>d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
    /// [dst], [map, {coords}], [mbar]`: copies the box at `coords` into shared memory at
    /// `dst` (`U32`, [`SHARED_ALIGN`]-aligned), then performs a *complete-tx* of the box's
    /// size in bytes on the mbarrier at `mbar` (`U32` shared address): the current phase's
    /// tx-count drops by that much, which completes the phase when it reaches zero with no
    /// arrivals pending. The bytes are visible to a thread after it observes that phase's
    /// completion; reading or writing them before is a data race.
    LoadTile {
        /// The tensor map.
        map: TensorMapRef,
        /// One `I32` coordinate per dimension of the map, innermost first.
        coords: Vec<Value>,
        /// The `U32` shared address of the box.
        dst: Value,
        /// The `U32` shared address of the mbarrier that counts the bytes.
        mbar: Value,
        /// `.multicast::cluster` with this `U16` mask of cluster block ranks
        /// ([`crate::Special::ClusterCtaRank`]): the box lands at `dst` in the shared memory
        /// of every block of the cluster whose bit is set (this block only if its own bit
        /// is), and each of those blocks' mbarrier at `mbar` gets the complete-tx of the
        /// box's bytes. Bits at or above the cluster's block count must be clear. `None`:
        /// this block alone. sm_90a.
        #[serde(default)]
        multicast: Option<Value>,
    },
    /// `cp.async.bulk.tensor.<N>d.global.shared::cta.tile.bulk_group [map, {coords}], [src]`:
    /// copies the box in shared memory at `src` (laid out as a load would leave it) to the
    /// tensor at `coords`, skipping elements outside the tensor. It joins the thread's
    /// current bulk group. The TMA unit reads `src` through the async proxy: the source's
    /// generic writes must be followed by a `fence.proxy.async` (by the writer, or by the
    /// issuing thread after it has synchronised with the writer) before the copy is issued.
    /// The source may be written again only after a [`TmaOp::WaitGroup`] (`.read` suffices)
    /// covering the copy; the global bytes are visible once a plain `WaitGroup` covers it.
    StoreTile {
        /// The tensor map.
        map: TensorMapRef,
        /// One `I32` coordinate per dimension of the map, innermost first.
        coords: Vec<Value>,
        /// The `U32` shared address of the box.
        src: Value,
    },
    /// `cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [dst], [src],
    /// bytes, [mbar]`: copies `bytes` (`U32`, a multiple of 16) from global `src` (`U64`,
    /// 16-byte aligned) to shared `dst` (`U32`, 16-byte aligned), completing them on the
    /// mbarrier at `mbar` as [`TmaOp::LoadTile`] does.
    LoadBulk {
        /// The `U32` shared destination.
        dst: Value,
        /// The `U64` global source.
        src: Value,
        /// The `U32` byte count.
        bytes: Value,
        /// The `U32` shared address of the mbarrier.
        mbar: Value,
    },
    /// `cp.async.bulk.commit_group`: closes the thread's current bulk group (its tile
    /// stores since the last commit; an empty group if none).
    Commit,
    /// `cp.async.bulk.wait_group{.read} pending`: waits until at most `pending` of the
    /// thread's committed bulk groups are incomplete. With `read`, a group counts as complete
    /// once its copies have read their shared sources (which may then be rewritten); without,
    /// once their writes are done and visible to the thread.
    WaitGroup {
        /// How many of the most recent committed groups may still be in flight.
        pending: u32,
        /// Whether only the reads of the sources are waited for (`.read`).
        read: bool,
    },
}

impl TmaOp {
    /// The number of dimensions of a tile copy (its coordinates), 0 for the other forms.
    pub fn rank(&self) -> usize {
        match self {
            TmaOp::LoadTile { coords, .. } | TmaOp::StoreTile { coords, .. } => coords.len(),
            _ => 0,
        }
    }

    /// The tensor map a tile copy reads.
    pub fn map(&self) -> Option<TensorMapRef> {
        match self {
            TmaOp::LoadTile { map, .. } | TmaOp::StoreTile { map, .. } => Some(*map),
            _ => None,
        }
    }
}

/// What fills the elements of a box that lie outside the tensor.
#[derive(serde::Serialize, serde::Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OobFill {
    /// Zeros (`CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE`).
    Zero,
    /// A quiet NaN, for float element types (`CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA`).
    Nan,
}

impl OobFill {
    /// The driver's `CUtensorMapFloatOOBfill` value.
    pub const fn code(self) -> u32 {
        match self {
            OobFill::Zero => 0,
            OobFill::Nan => 1,
        }
    }
}

/// The driver's `CUtensorMapDataType` for elements of `ty`, or `None` when a tensor map
/// cannot hold them (`bool`). Signed 8- and 16-bit integers travel as their unsigned bits.
pub const fn tensor_map_data_type(ty: ScalarType) -> Option<u32> {
    Some(match ty {
        ScalarType::Bool => return None,
        ScalarType::U8 | ScalarType::I8 => 0,
        ScalarType::U16 | ScalarType::I16 => 1,
        // A `tf32` travels as its 32 bits: the driver's TFLOAT32 types are left alone, since
        // what a copy does with their low bits was never measured.
        ScalarType::U32 | ScalarType::Tf32 => 2,
        ScalarType::I32 => 3,
        ScalarType::U64 => 4,
        ScalarType::I64 => 5,
        ScalarType::F16 => 6,
        ScalarType::F32 => 7,
        ScalarType::F64 => 8,
        ScalarType::BF16 => 9,
    })
}

/// The element type the driver's `CUtensorMapDataType` `code` names (unsigned for the bit
/// types), the inverse of [`tensor_map_data_type`] up to signedness.
pub const fn data_type_from_code(code: u32) -> Option<ScalarType> {
    Some(match code {
        0 => ScalarType::U8,
        1 => ScalarType::U16,
        2 => ScalarType::U32,
        3 => ScalarType::I32,
        4 => ScalarType::U64,
        5 => ScalarType::I64,
        6 => ScalarType::F16,
        7 => ScalarType::F32,
        8 => ScalarType::F64,
        9 => ScalarType::BF16,
        _ => return None,
    })
}

/// A tiled tensor map, as `cuTensorMapEncodeTiled` takes it: a tensor of `rank` dimensions
/// (innermost first) at a global address, and the box one copy moves. Entries past `rank`
/// are ignored (and kept at their defaults: dims 1, box 1, element strides 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TensorMapDesc {
    /// The element type.
    pub elem: ScalarType,
    /// The number of dimensions, 1 to [`MAX_RANK`].
    pub rank: usize,
    /// The global address of element `(0, .., 0)`.
    pub address: u64,
    /// The tensor's size in elements along each dimension.
    pub dims: [u64; MAX_RANK],
    /// The distance in bytes between consecutive indices of dimensions `1..rank`
    /// (`strides[d - 1]` is dimension `d`'s; dimension 0's is the element size).
    pub strides: [u64; MAX_RANK - 1],
    /// The box's size in elements along each dimension.
    pub box_dims: [u32; MAX_RANK],
    /// The element strides (traversal steps) along each dimension; cuprum supports 1 only.
    pub element_strides: [u32; MAX_RANK],
    /// The shared-memory layout of a box.
    pub swizzle: Swizzle,
    /// What out-of-bounds elements read as.
    pub oob_fill: OobFill,
}

/// Why a tensor map description is not one the hardware accepts; each names the numbers and
/// what to change.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TensorMapProblem {
    /// The rank is outside `1..=5`.
    #[error("a tensor map has 1 to {MAX_RANK} dimensions, not {0}")]
    Rank(usize),
    /// The element type cannot be in a tensor map.
    #[error("a tensor map cannot hold `{0}` elements (use u8 for bytes of bools)")]
    Element(ScalarType),
    /// The global address is not 16-byte aligned.
    #[error(
        "the tensor's global address {0:#x} is not a multiple of {GLOBAL_ADDRESS_ALIGN} bytes \
         (start the tensor at a 16-byte boundary of its buffer)"
    )]
    Address(u64),
    /// A global dimension is 0 or above `2^32`.
    #[error("dimension {dim} of the tensor has {size} elements; each must be 1 to 2^32")]
    Dim {
        /// Which dimension (0: innermost).
        dim: usize,
        /// Its size.
        size: u64,
    },
    /// A global stride is not a multiple of 16 bytes or not below `2^40`.
    #[error(
        "the stride of dimension {dim} is {stride} bytes; strides must be multiples of \
         {STRIDE_ALIGN} bytes below 2^40 (pad the rows of the tensor to 16 bytes)"
    )]
    Stride {
        /// Which dimension (1 or more).
        dim: usize,
        /// Its stride in bytes.
        stride: u64,
    },
    /// A box dimension is 0 or above 256.
    #[error("box dimension {dim} is {size} elements; each must be 1 to {MAX_BOX_DIM}")]
    BoxDim {
        /// Which dimension.
        dim: usize,
        /// Its size.
        size: u32,
    },
    /// The box's inner dimension is not a multiple of 16 bytes.
    #[error(
        "the box's inner dimension spans {bytes} bytes; it must be a multiple of \
         {BOX_INNER_ALIGN} bytes (choose a box width whose {elem_bytes}-byte elements span a \
         multiple of 16 bytes)"
    )]
    BoxInner {
        /// The inner dimension's span in bytes.
        bytes: u64,
        /// The element size.
        elem_bytes: u32,
    },
    /// The box's inner dimension is wider than the swizzle's span.
    #[error(
        "the box's inner dimension spans {bytes} bytes, more than the {span}-byte rows of \
         its {swizzle:?} swizzle (narrow the box, or choose a wider swizzle)"
    )]
    BoxSwizzle {
        /// The inner dimension's span in bytes.
        bytes: u64,
        /// The swizzle's span.
        span: u32,
        /// The swizzle.
        swizzle: Swizzle,
    },
    /// An element stride other than 1.
    #[error("element stride {stride} along dimension {dim}: only 1 is supported")]
    ElementStride {
        /// Which dimension.
        dim: usize,
        /// The stride.
        stride: u32,
    },
    /// NaN fill asked for integer elements.
    #[error("NaN out-of-bounds fill needs float elements, not `{0}`")]
    NanFill(ScalarType),
    /// The tensor's last element lies outside the buffer that holds it.
    #[error(
        "the tensor spans {need} bytes from its address, but its buffer holds only {have} \
         bytes there (check the dimensions and strides against the buffer's length)"
    )]
    Extent {
        /// Bytes from the tensor's address to the end of its last element.
        need: u64,
        /// Bytes of the buffer from the tensor's address on.
        have: u64,
    },
    /// 128 bytes that are not an emulated tensor map (see [`TensorMapDesc::decode_emulated`]).
    #[error(
        "the 128 bytes are not a tensor map the emulator made (encode it with \
         `cuTensorMapEncodeTiled` or `TensorMap` on the same backend as the launch)"
    )]
    NotEmulated,
}

/// The first word of an emulated tensor map ("cuprTMAP" in ASCII, version 1 in the low byte).
const EMULATED_MAGIC: u64 = 0x6375_7072_544d_4101;

impl TensorMapDesc {
    /// A tensor of `rank` dimensions with everything else at its defaults: dims and box 1,
    /// strides 0 (to be set), no swizzle, zero fill.
    pub fn new(elem: ScalarType, rank: usize, address: u64) -> Self {
        Self {
            elem,
            rank,
            address,
            dims: [1; MAX_RANK],
            strides: [0; MAX_RANK - 1],
            box_dims: [1; MAX_RANK],
            element_strides: [1; MAX_RANK],
            swizzle: Swizzle::None,
            oob_fill: OobFill::Zero,
        }
    }

    /// The bytes one box copy moves (the complete-tx of a load): the product of the box
    /// dimensions times the element size, out-of-bounds elements included.
    pub fn box_bytes(&self) -> u64 {
        self.box_dims[..self.rank.min(MAX_RANK)]
            .iter()
            .map(|&b| u64::from(b))
            .product::<u64>()
            * u64::from(self.elem.size_bytes())
    }

    /// The stride in bytes of dimension `d` (`d = 0`: the element size).
    pub fn stride(&self, d: usize) -> u64 {
        if d == 0 {
            u64::from(self.elem.size_bytes())
        } else {
            self.strides[d - 1]
        }
    }

    /// The bytes from the tensor's address to the end of its last element (0 when a
    /// dimension is empty).
    pub fn extent_bytes(&self) -> u128 {
        let rank = self.rank.min(MAX_RANK);
        if self.dims[..rank].contains(&0) {
            return 0;
        }
        (0..rank)
            .map(|d| u128::from(self.dims[d] - 1) * u128::from(self.stride(d)))
            .sum::<u128>()
            + u128::from(self.elem.size_bytes())
    }

    /// Checks every requirement of the hardware and of cuprum, in the order of the fields.
    /// `buffer_bytes`, when given, is how many bytes the buffer holds from the tensor's
    /// address on, which the tensor must fit in.
    pub fn check(&self, buffer_bytes: Option<u64>) -> Result<(), TensorMapProblem> {
        use TensorMapProblem as P;
        if !(1..=MAX_RANK).contains(&self.rank) {
            return Err(P::Rank(self.rank));
        }
        if tensor_map_data_type(self.elem).is_none() {
            return Err(P::Element(self.elem));
        }
        if !self.address.is_multiple_of(GLOBAL_ADDRESS_ALIGN) {
            return Err(P::Address(self.address));
        }
        for (dim, &size) in self.dims[..self.rank].iter().enumerate() {
            if !(1..=MAX_GLOBAL_DIM).contains(&size) {
                return Err(P::Dim { dim, size });
            }
        }
        for dim in 1..self.rank {
            let stride = self.strides[dim - 1];
            if !stride.is_multiple_of(STRIDE_ALIGN) || stride >= MAX_GLOBAL_STRIDE {
                return Err(P::Stride { dim, stride });
            }
        }
        for (dim, &size) in self.box_dims[..self.rank].iter().enumerate() {
            if !(1..=MAX_BOX_DIM).contains(&size) {
                return Err(P::BoxDim { dim, size });
            }
        }
        let elem_bytes = self.elem.size_bytes();
        let inner = u64::from(self.box_dims[0]) * u64::from(elem_bytes);
        if !inner.is_multiple_of(u64::from(BOX_INNER_ALIGN)) {
            return Err(P::BoxInner {
                bytes: inner,
                elem_bytes,
            });
        }
        if let Some(span) = self.swizzle.span_bytes()
            && inner > u64::from(span)
        {
            return Err(P::BoxSwizzle {
                bytes: inner,
                span,
                swizzle: self.swizzle,
            });
        }
        for (dim, &stride) in self.element_strides[..self.rank].iter().enumerate() {
            if stride != 1 {
                return Err(P::ElementStride { dim, stride });
            }
        }
        if self.oob_fill == OobFill::Nan && !self.elem.is_float() {
            return Err(P::NanFill(self.elem));
        }
        if let Some(have) = buffer_bytes {
            let need = self.extent_bytes();
            if need > u128::from(have) {
                return Err(P::Extent {
                    need: u64::try_from(need).unwrap_or(u64::MAX),
                    have,
                });
            }
        }
        Ok(())
    }

    /// The 128 bytes (as 16 little-endian words) the emulator reads as this map: the
    /// description itself, marked so that other bytes are refused.
    pub fn encode_emulated(&self) -> [u64; 16] {
        let mut w = [0u64; 16];
        w[0] = EMULATED_MAGIC;
        w[1] = self.address;
        let elem = ScalarType::ALL
            .iter()
            .position(|&t| t == self.elem)
            .unwrap_or(0) as u64;
        w[2] = elem
            | (self.rank as u64) << 8
            | u64::from(self.swizzle.tensor_map_code()) << 16
            | u64::from(self.oob_fill.code()) << 24;
        w[3..8].copy_from_slice(&self.dims);
        w[8..12].copy_from_slice(&self.strides);
        for (i, &b) in self.box_dims.iter().enumerate() {
            w[12] |= u64::from(b & 0x1ff) << (9 * i);
        }
        for (i, &s) in self.element_strides.iter().enumerate() {
            w[13] |= u64::from(s & 0xff) << (8 * i);
        }
        w[15] = w[..15].iter().fold(0x9e37_79b9_7f4a_7c15, |h, &x| {
            (h ^ x).wrapping_mul(0x100_0000_01b3)
        });
        w
    }

    /// The description 128 bytes made by [`TensorMapDesc::encode_emulated`] hold, or
    /// [`TensorMapProblem::NotEmulated`].
    pub fn decode_emulated(w: &[u64; 16]) -> Result<Self, TensorMapProblem> {
        let sum = w[..15].iter().fold(0x9e37_79b9_7f4a_7c15, |h: u64, &x| {
            (h ^ x).wrapping_mul(0x100_0000_01b3)
        });
        if w[0] != EMULATED_MAGIC || w[15] != sum {
            return Err(TensorMapProblem::NotEmulated);
        }
        let elem = *ScalarType::ALL
            .get((w[2] & 0xff) as usize)
            .ok_or(TensorMapProblem::NotEmulated)?;
        let swizzle = match (w[2] >> 16) & 0xff {
            0 => Swizzle::None,
            1 => Swizzle::B32,
            2 => Swizzle::B64,
            3 => Swizzle::B128,
            _ => return Err(TensorMapProblem::NotEmulated),
        };
        let oob_fill = match (w[2] >> 24) & 0xff {
            0 => OobFill::Zero,
            1 => OobFill::Nan,
            _ => return Err(TensorMapProblem::NotEmulated),
        };
        let mut d = Self::new(elem, ((w[2] >> 8) & 0xff) as usize, w[1]);
        d.swizzle = swizzle;
        d.oob_fill = oob_fill;
        d.dims.copy_from_slice(&w[3..8]);
        d.strides.copy_from_slice(&w[8..12]);
        for i in 0..MAX_RANK {
            d.box_dims[i] = ((w[12] >> (9 * i)) & 0x1ff) as u32;
            d.element_strides[i] = ((w[13] >> (8 * i)) & 0xff) as u32;
        }
        Ok(d)
    }

    /// Why a box copy starting at `coords` (one entry per dimension, innermost first) is one
    /// the hardware refuses, or `None`: the innermost coordinate must be a whole number of
    /// [`BOX_START_ALIGN`] bytes from the tensor's start, in bounds or not (an H200 stops the
    /// kernel with an illegal instruction otherwise; measured, and reported by others). Asked
    /// by the emulator for every tile copy.
    pub fn box_start_problem(&self, coords: &[i64]) -> Option<String> {
        let size = i64::from(self.elem.size_bytes());
        let x = *coords.first()?;
        let bytes = i128::from(x) * i128::from(size);
        if bytes % i128::from(BOX_START_ALIGN) == 0 {
            return None;
        }
        Some(format!(
            "a tensor copy's innermost coordinate must be a multiple of {BOX_START_ALIGN} bytes \
             ({} `{}` elements) from the tensor's start, and {x} is {bytes} bytes: start boxes \
             at such coordinates (a GPU stops the kernel with an illegal instruction)",
            i64::from(BOX_START_ALIGN) / size,
            self.elem.rust_name()
        ))
    }

    /// How many elements of each innermost row a tile *store* writes: the row's length
    /// rounded up to whole [`BOX_START_ALIGN`]-byte chunks. A store's box that reaches the
    /// end of a row writes the whole last 16-byte chunk, past the tensor's last column (into
    /// the row's padding; measured on an H200: a 45-column `u32` tensor got columns 45..47
    /// written), while a load reads those columns as out of bounds.
    pub fn stored_row_elems(&self) -> u64 {
        let size = u64::from(self.elem.size_bytes());
        (self.dims[0] * size).next_multiple_of(u64::from(BOX_START_ALIGN)) / size
    }

    /// The bytes from the tensor's address to the end of what a tile store may write: as
    /// [`extent_bytes`](Self::extent_bytes), the last row ending at
    /// [`stored_row_elems`](Self::stored_row_elems).
    pub fn store_extent_bytes(&self) -> u128 {
        let size = u128::from(self.elem.size_bytes());
        match self.extent_bytes() {
            0 => 0,
            e => e - u128::from(self.dims[0]) * size + u128::from(self.stored_row_elems()) * size,
        }
    }

    /// The byte offset from the tensor's address that a tile store writes the element at
    /// `index` to, or `None` when the store drops it: as
    /// [`element_offset`](Self::element_offset), the innermost dimension bounded by
    /// [`stored_row_elems`](Self::stored_row_elems).
    pub fn stored_element_offset(&self, index: &[i64]) -> Option<u64> {
        let mut off = 0u64;
        for (d, &i) in index.iter().enumerate().take(self.rank) {
            let bound = if d == 0 {
                self.stored_row_elems()
            } else {
                self.dims[d]
            };
            let i = u64::try_from(i).ok().filter(|&i| i < bound)?;
            off += i * self.stride(d);
        }
        Some(off)
    }

    /// The byte offset from the tensor's address of the element at `index` (one entry per
    /// dimension), or `None` when it lies outside the tensor.
    pub fn element_offset(&self, index: &[i64]) -> Option<u64> {
        let mut off = 0u64;
        for (d, &i) in index.iter().enumerate().take(self.rank) {
            let i = u64::try_from(i).ok().filter(|&i| i < self.dims[d])?;
            off += i * self.stride(d);
        }
        Some(off)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map_2d() -> TensorMapDesc {
        let mut d = TensorMapDesc::new(ScalarType::F32, 2, 0x1000);
        d.dims[..2].copy_from_slice(&[100, 37]);
        d.strides[0] = 400;
        d.box_dims[..2].copy_from_slice(&[32, 8]);
        d.swizzle = Swizzle::B128;
        d
    }

    /// A 45-column `u32` tensor (rows of 192 bytes): loads see 45 columns, stores write 48
    /// (the last 16-byte chunk of each row whole, as the H200 does), and the bytes a store may
    /// write end at the last row's chunk.
    #[test]
    fn stores_write_each_rows_last_chunk_whole() {
        let mut d = TensorMapDesc::new(ScalarType::U32, 2, 0x1000);
        d.dims[..2].copy_from_slice(&[45, 13]);
        d.strides[0] = 192;
        assert_eq!(d.stored_row_elems(), 48);
        assert_eq!(d.element_offset(&[45, 0]), None);
        assert_eq!(d.stored_element_offset(&[45, 0]), Some(180));
        assert_eq!(d.stored_element_offset(&[47, 12]), Some(12 * 192 + 188));
        assert_eq!(d.stored_element_offset(&[48, 0]), None);
        assert_eq!(d.stored_element_offset(&[0, 13]), None);
        assert_eq!(d.extent_bytes(), 12 * 192 + 180);
        assert_eq!(d.store_extent_bytes(), 12 * 192 + 192);
        // Rows already whole chunks: nothing more.
        d.dims[0] = 44;
        assert_eq!(d.store_extent_bytes(), d.extent_bytes());
    }

    /// The innermost coordinate of a copy is a multiple of 16 bytes or refused, in bounds or
    /// not (measured on the H200: x = 1, 2, 3, 29, -1 `f32`s stop the kernel; 0, 4, 28, -4
    /// do not).
    #[test]
    fn box_starts_are_whole_16_byte_chunks() {
        let d = map_2d();
        for x in [0i64, 4, 28, -4, 40] {
            assert_eq!(d.box_start_problem(&[x, 3]), None, "x = {x}");
        }
        for x in [1i64, 2, 3, 29, -1, 99] {
            let problem = d.box_start_problem(&[x, 0]).unwrap_or_default();
            assert!(
                problem.contains("multiple of 16 bytes"),
                "x = {x}: {problem}"
            );
        }
    }

    #[test]
    fn emulated_maps_round_trip_and_refuse_other_bytes() {
        let d = map_2d();
        let w = d.encode_emulated();
        assert_eq!(TensorMapDesc::decode_emulated(&w), Ok(d));
        let mut bad = w;
        bad[3] += 1;
        assert_eq!(
            TensorMapDesc::decode_emulated(&bad),
            Err(TensorMapProblem::NotEmulated)
        );
        assert_eq!(d.box_bytes(), 32 * 8 * 4);
        assert_eq!(d.extent_bytes(), 36 * 400 + 99 * 4 + 4);
    }

    #[test]
    fn each_requirement_is_checked() {
        use TensorMapProblem as P;
        assert_eq!(map_2d().check(Some(36 * 400 + 400)), Ok(()));
        let with = |f: &dyn Fn(&mut TensorMapDesc)| {
            let mut d = map_2d();
            f(&mut d);
            d.check(None)
        };
        assert_eq!(with(&|d| d.rank = 6), Err(P::Rank(6)));
        assert_eq!(with(&|d| d.rank = 0), Err(P::Rank(0)));
        assert_eq!(with(&|d| d.address = 8), Err(P::Address(8)));
        assert_eq!(with(&|d| d.dims[1] = 0), Err(P::Dim { dim: 1, size: 0 }));
        assert_eq!(
            with(&|d| d.strides[0] = 404),
            Err(P::Stride {
                dim: 1,
                stride: 404
            })
        );
        assert_eq!(
            with(&|d| d.box_dims[1] = 257),
            Err(P::BoxDim { dim: 1, size: 257 })
        );
        assert_eq!(
            with(&|d| d.box_dims[0] = 6),
            Err(P::BoxInner {
                bytes: 24,
                elem_bytes: 4
            })
        );
        assert!(matches!(
            with(&|d| d.box_dims[0] = 64),
            Err(P::BoxSwizzle { bytes: 256, .. })
        ));
        assert_eq!(
            with(&|d| d.elem = ScalarType::Bool),
            Err(P::Element(ScalarType::Bool))
        );
        assert!(matches!(
            map_2d().check(Some(100)),
            Err(P::Extent { have: 100, .. })
        ));
    }
}
