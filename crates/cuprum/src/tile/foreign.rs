//! Tensors over device memory another framework owns (cuTile Rust's `DeviceAllocation` and
//! `Tensor::from_foreign`): no copy, no transfer of ownership. The owner's `Arc` travels with
//! the tensor as a liveness token, so the memory outlives every use of the tensor and of
//! what shares it (partitions, launches in flight), even after the framework drops its own
//! handle.
//!
//! Everything positional is checked when the tensor is made: the shape and strides against
//! the owner's length (the addressable extent, overflow-checked), distinct indices naming
//! distinct elements (so a partition's tiles are disjoint, as safe launches assume), the
//! alignment, the device, and the memory itself against the runtime's registry of live
//! allocations (`DeviceBuffer::borrow_allocation`). What stays `unsafe` is temporal: nothing
//! outside cuprum may touch the bytes while cuprum's work on them is unfinished.

use std::any::Any;
use std::sync::Arc;

use crate::DeviceBuffer;
use crate::tile::cuda_core::{DType, Device, sys::CUdeviceptr};
use crate::tile::error::{Error, TensorError};
use crate::tile::tensor::Tensor;

/// A device allocation owned by another framework (cudarc, PyTorch, a VMM range, ...), which
/// a [`Tensor::from_foreign`] borrows (cuTile Rust's trait of the same name).
///
/// # Safety
/// For as long as the implementor is alive, `device_ptr()` is a valid device address on
/// device `device_id()` with at least `len_bytes()` bytes of one allocation from it, and
/// all three return the same values on every call (they are read once, when a tensor is
/// made).
pub unsafe trait DeviceAllocation: Send + Sync + 'static {
    /// The allocation's device address.
    fn device_ptr(&self) -> CUdeviceptr;
    /// The allocation's size in bytes.
    fn len_bytes(&self) -> usize;
    /// The ordinal of the device the allocation is on.
    fn device_id(&self) -> usize;
}

/// The elements a tensor of `shape` with `strides` (both in elements) reaches from its first:
/// one more than its last element's offset, 0 for an empty tensor. Errors name the rule
/// broken: a negative size or stride, ranks that differ, an overflow, or two indices naming
/// one element (a stride smaller than what the axes of smaller strides span).
fn addressable_elements(shape: &[i32], strides: &[i32]) -> Result<usize, String> {
    if shape.len() != strides.len() {
        return Err(format!(
            "{} sizes and {} strides: give one stride per axis",
            shape.len(),
            strides.len()
        ));
    }
    let mut axes = Vec::with_capacity(shape.len());
    for (&size, &stride) in shape.iter().zip(strides) {
        let (Ok(size), Ok(stride)) = (usize::try_from(size), usize::try_from(stride)) else {
            return Err("sizes and strides must not be negative".to_owned());
        };
        axes.push((size, stride));
    }
    if axes.iter().any(|&(size, _)| size == 0) {
        return Ok(0);
    }
    // Distinct indices name distinct elements when, taking the axes of more than one
    // element by increasing stride, each stride passes the span of those before it.
    axes.retain(|&(size, _)| size > 1);
    axes.sort_by_key(|&(_, stride)| stride);
    let mut span = 0usize;
    for &(size, stride) in &axes {
        if stride <= span {
            return Err(
                "two indices would name one element (a stride no larger than what the axes \
                 of smaller strides span): a tensor written by a kernel needs distinct \
                 elements"
                    .to_owned(),
            );
        }
        span = (size - 1)
            .checked_mul(stride)
            .and_then(|far| far.checked_add(span))
            .ok_or_else(|| "the extent overflows the address space".to_owned())?;
    }
    span.checked_add(1)
        .ok_or_else(|| "the extent overflows the address space".to_owned())
}

impl<T: DType> Tensor<T> {
    /// A tensor of `shape` with `strides` (in elements) over the memory `owner` holds,
    /// starting at its first byte: no copy; `owner` is kept alive by the tensor and by
    /// everything sharing it (cuTile Rust's `from_foreign`). See
    /// [`try_from_foreign`](Self::try_from_foreign) for what is checked.
    ///
    /// # Safety
    /// While cuprum's work on the tensor (or anything derived from it) is unfinished, no
    /// other party may write the bytes, nor read them while that work writes them; two
    /// tensors over the same foreign bytes must not be used so that one is written while
    /// the other is used.
    ///
    /// # Panics
    /// Where [`try_from_foreign`](Self::try_from_foreign) returns an error (cuTile Rust's
    /// signature has none to return), with that error's message.
    pub unsafe fn from_foreign(
        owner: Arc<dyn DeviceAllocation>,
        shape: Vec<i32>,
        strides: Vec<i32>,
    ) -> Self {
        // SAFETY: the caller's contract.
        match unsafe { Self::try_from_foreign(owner, shape, strides) } {
            Ok(tensor) => tensor,
            Err(e) => panic!("Tensor::from_foreign: {e}"),
        }
    }

    /// [`from_foreign`](Self::from_foreign), with its refusals as errors: a shape and
    /// strides whose addressable extent is larger than `owner.len_bytes()`, that are
    /// negative, of different ranks, or name one element by two indices
    /// ([`TensorError::Foreign`]); a device that cannot be opened; memory the runtime cannot
    /// borrow (misaligned for `T`, in another device's buffer, on the emulator outside its
    /// allocations: [`crate::Error::Interop`]).
    ///
    /// # Safety
    /// As [`from_foreign`](Self::from_foreign).
    pub unsafe fn try_from_foreign(
        owner: Arc<dyn DeviceAllocation>,
        shape: Vec<i32>,
        strides: Vec<i32>,
    ) -> Result<Self, Error> {
        let refuse = |reason: String| TensorError::Foreign {
            shape: shape.clone(),
            strides: strides.clone(),
            reason,
        };
        let elements = addressable_elements(&shape, &strides).map_err(refuse)?;
        let bytes = elements
            .checked_mul(size_of::<T>())
            .ok_or_else(|| refuse("the extent overflows the address space".to_owned()))?;
        if bytes > owner.len_bytes() {
            return Err(refuse(format!(
                "they reach {bytes} bytes of `{}`, but the allocation has {}",
                T::DTYPE,
                owner.len_bytes()
            ))
            .into());
        }
        let stream = Device::new(owner.device_id())?.default_stream();
        let address = owner.device_ptr();
        let keep: Arc<dyn Any + Send + Sync> = Arc::new(owner);
        // SAFETY: the owner's `DeviceAllocation` contract makes `address` the start of
        // `bytes` live bytes of that device while `keep` lives; the caller's contract covers
        // their use.
        let buffer =
            unsafe { DeviceBuffer::<T>::borrow_allocation(&stream, address, elements, keep) }?;
        let shape = shape.iter().map(|&d| d as usize).collect();
        let strides = strides.iter().map(|&s| s as usize).collect();
        Ok(Tensor::from_strided_buffer(buffer, shape, strides))
    }
}

#[cfg(test)]
mod tests {
    use super::addressable_elements;

    #[test]
    fn the_addressable_extent_follows_the_strides_and_refuses_overlaps() {
        assert_eq!(addressable_elements(&[4, 8], &[8, 1]), Ok(32));
        // Column-major, and a padded row pitch.
        assert_eq!(addressable_elements(&[4, 8], &[1, 4]), Ok(32));
        assert_eq!(addressable_elements(&[4, 8], &[10, 1]), Ok(38));
        // Empty tensors reach nothing; axes of one element never overlap.
        assert_eq!(addressable_elements(&[0, 8], &[8, 1]), Ok(0));
        assert_eq!(addressable_elements(&[1, 8], &[0, 1]), Ok(8));
        assert_eq!(addressable_elements(&[], &[]), Ok(1));
        for (shape, strides) in [
            (&[4, 8][..], &[4, 1][..]),
            (&[4, 8], &[0, 1]),
            (&[8], &[0]),
            (&[4, 8], &[8]),
            (&[-1, 8], &[8, 1]),
            (&[4, 8], &[8, -1]),
        ] {
            assert!(
                addressable_elements(shape, strides).is_err(),
                "{shape:?} {strides:?}"
            );
        }
        assert!(
            addressable_elements(&[i32::MAX, i32::MAX, i32::MAX], &[1, i32::MAX, i32::MAX])
                .is_err()
        );
    }
}
