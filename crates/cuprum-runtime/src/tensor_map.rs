//! Tensor maps for the tensor memory accelerator: a checked description of a tiled tensor in
//! one of a context's buffers ([`TensorMap`]), encoded for the backend that runs the launch.
//!
//! Every requirement of the hardware is checked first, by [`cuprum_ir::TensorMapDesc::check`]
//! (the one statement of the limits, which the emulator applies too), so a bad map is
//! [`Error::TensorMap`] naming what to change, never a driver status code. Then the CUDA
//! backend has the driver encode it (`cuTensorMapEncodeTiled`), and the emulator keeps the
//! description itself ([`cuprum_ir::TensorMapDesc::encode_emulated`]).
//!
//! A [`TensorMap`] borrows its buffer, so the buffer outlives every launch that is given the
//! map, and a launch is ordered after other streams' work on the buffer as if the map were a
//! written slice.

use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, Ordering};

use cuprum_ir::{OobFill, Swizzle, TensorMapDesc, tma::MAX_RANK};

use crate::backend::BackendKind;
use crate::buffer::{DeviceBuffer, DeviceScalar};
use crate::config::KernelArg;
use crate::context::CudaContext;
use crate::error::{Error, Result};

/// Whether a CUDA context was opened in this process (so raw encodings are the driver's).
static CUDA_IN_USE: AtomicBool = AtomicBool::new(false);

/// Notes that a CUDA context exists (called when one is opened).
pub(crate) fn note_cuda() {
    CUDA_IN_USE.store(true, Ordering::Relaxed);
}

/// The backend a raw encoding with no context is for: CUDA once a CUDA context was opened
/// in this process, else the emulator.
pub fn default_backend() -> BackendKind {
    if CUDA_IN_USE.load(Ordering::Relaxed) {
        BackendKind::Cuda
    } else {
        BackendKind::Emulator
    }
}

/// Checks `desc` (against `buffer_bytes` when given) and encodes it for `backend`.
pub fn encode(
    backend: BackendKind,
    desc: &TensorMapDesc,
    buffer_bytes: Option<u64>,
) -> Result<[u64; 16]> {
    desc.check(buffer_bytes)
        .map_err(|problem| Error::TensorMap { problem })?;
    match backend {
        BackendKind::Emulator => Ok(desc.encode_emulated()),
        BackendKind::Cuda => crate::backend::cuda::encode_tensor_map(desc),
    }
}

/// A tiled tensor map over a buffer of `T` with `RANK` dimensions: what a kernel's
/// `TensorMap<T, RANK>` parameter takes. Dimensions are innermost first (`dims[0]` is the
/// row length of a row-major matrix).
#[derive(Clone, Copy, Debug)]
pub struct TensorMap<'b, T, const RANK: usize> {
    encoded: [u64; 16],
    desc: TensorMapDesc,
    _buffer: PhantomData<&'b [T]>,
}

impl<'b, T: DeviceScalar, const RANK: usize> TensorMap<'b, T, RANK> {
    /// A map of the dense row-major tensor of `dims` elements (innermost first) at the start
    /// of `buffer`, copied in boxes of `box_dims` elements, unswizzled, out-of-bounds
    /// elements read as zero. Every requirement is checked ([`Error::TensorMap`]).
    pub fn tiled(
        buffer: &'b DeviceBuffer<T>,
        dims: [u64; RANK],
        box_dims: [u32; RANK],
    ) -> Result<Self> {
        let size = std::mem::size_of::<T>() as u64;
        let mut strides = [0u64; RANK];
        let mut stride = size;
        for d in 0..RANK {
            strides[d] = stride;
            stride = stride.saturating_mul(dims[d]);
        }
        Self::with_layout(
            buffer,
            0,
            dims,
            strides,
            box_dims,
            Swizzle::None,
            OobFill::Zero,
        )
    }

    /// The same map with its boxes laid out in shared memory under `swizzle`.
    pub fn swizzled(self, swizzle: Swizzle) -> Result<Self> {
        let mut d = self.desc;
        d.swizzle = swizzle;
        self.reencoded(d)
    }

    /// The same map with out-of-bounds elements read as NaN (float elements only).
    pub fn nan_fill(self) -> Result<Self> {
        let mut d = self.desc;
        d.oob_fill = OobFill::Nan;
        self.reencoded(d)
    }

    fn reencoded(self, desc: TensorMapDesc) -> Result<Self> {
        Ok(Self {
            encoded: encode(self.backend(), &desc, None)?,
            desc,
            _buffer: PhantomData,
        })
    }

    fn backend(&self) -> BackendKind {
        if desc_is_emulated(&self.encoded) {
            BackendKind::Emulator
        } else {
            BackendKind::Cuda
        }
    }

    /// The general form: the tensor starts `offset` elements into `buffer`; `strides[d]` is
    /// the distance in bytes between consecutive indices of dimension `d` (`strides[0]` must
    /// be the element size: cuprum supports dense innermost dimensions only).
    pub fn with_layout(
        buffer: &'b DeviceBuffer<T>,
        offset: u64,
        dims: [u64; RANK],
        strides: [u64; RANK],
        box_dims: [u32; RANK],
        swizzle: Swizzle,
        oob_fill: OobFill,
    ) -> Result<Self> {
        let size = std::mem::size_of::<T>() as u64;
        let elem = T::TYPE;
        let mut desc = TensorMapDesc::new(elem, RANK, 0);
        if RANK == 0 || RANK > MAX_RANK {
            return Err(Error::TensorMap {
                problem: cuprum_ir::TensorMapProblem::Rank(RANK),
            });
        }
        if strides[0] != size {
            return Err(Error::TensorMap {
                problem: cuprum_ir::TensorMapProblem::ElementStride {
                    dim: 0,
                    stride: u32::try_from(strides[0] / size.max(1)).unwrap_or(u32::MAX),
                },
            });
        }
        let start = offset.saturating_mul(size);
        desc.address = buffer.device_address().saturating_add(start);
        desc.dims[..RANK].copy_from_slice(&dims);
        desc.strides[..RANK - 1].copy_from_slice(&strides[1..]);
        desc.box_dims[..RANK].copy_from_slice(&box_dims);
        desc.swizzle = swizzle;
        desc.oob_fill = oob_fill;
        let have = (buffer.len() as u64)
            .saturating_mul(size)
            .saturating_sub(start);
        let encoded = encode(buffer.context().backend(), &desc, Some(have))?;
        Ok(Self {
            encoded,
            desc,
            _buffer: PhantomData,
        })
    }

    /// The checked description.
    pub fn desc(&self) -> &TensorMapDesc {
        &self.desc
    }

    /// The bytes one box moves (what a load completes on its mbarrier).
    pub fn box_bytes(&self) -> u32 {
        u32::try_from(self.desc.box_bytes()).unwrap_or(u32::MAX)
    }

    /// The 128 encoded bytes (the driver's or the emulator's), as `CUtensorMap::opaque`.
    pub fn encoded(&self) -> [u64; 16] {
        self.encoded
    }

    /// The launch argument for a tensor-map parameter.
    pub fn arg(&self) -> KernelArg {
        KernelArg::TensorMap {
            map: self.encoded,
            address: self.desc.address,
            // What a store through the map may write (its rows' last 16-byte chunks
            // whole): the bytes the launch keeps other arguments out of.
            bytes: u64::try_from(self.desc.store_extent_bytes()).unwrap_or(u64::MAX),
        }
    }
}

/// Whether 128 bytes are the emulator's encoding.
fn desc_is_emulated(words: &[u64; 16]) -> bool {
    TensorMapDesc::decode_emulated(words).is_ok()
}

/// A context's backend, for callers that hold one.
pub fn backend_of(ctx: &CudaContext) -> BackendKind {
    ctx.backend()
}
