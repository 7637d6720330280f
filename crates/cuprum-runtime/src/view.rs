//! Views of part of a buffer, without copying: [`DeviceSlice`] (read) and [`DeviceSliceMut`]
//! (write), made by [`DeviceBuffer::slice`], [`slice_mut`](DeviceBuffer::slice_mut) and
//! [`split_at_mut`](DeviceBuffer::split_at_mut), usable wherever a buffer is: copies to and
//! from the host and between buffers, and kernel arguments ([`DeviceRead`], [`DeviceWrite`]).
//!
//! The aliasing rules are the buffers' own, through the borrow checker: a mutable view
//! borrows its buffer mutably, so nothing else names those elements while it lives, and
//! `split_at_mut` hands out two mutable views of disjoint elements. Work on streams is
//! ordered per allocation (a view's use is a use of its buffer), so two views of one buffer
//! written on two streams run one after the other, never racing.
//!
//! A view passed to a kernel must start at a 16-byte boundary of its buffer (every slice a
//! kernel gets is 16-byte aligned, which its compiled code relies on): a launch refuses
//! another with [`Error::ArgumentMismatch`]. Copies have no such rule.

use std::marker::PhantomData;
use std::ops::{Bound, RangeBounds};

use crate::buffer::{DeviceBuffer, DeviceCopy, Span};
use crate::context::Stream;
use crate::error::{Error, Result};

pub(crate) mod sealed {
    /// Only the runtime's buffers and views (and `interop`'s borrows) are device memory.
    pub trait Sealed {}
}

/// Device memory a kernel may read as `&[T]` (and a copy may read): a [`DeviceBuffer`] or a
/// view of part of one. Sealed.
pub trait DeviceRead<T: DeviceCopy>: sealed::Sealed {
    /// The elements, for the runtime.
    #[doc(hidden)]
    fn span(&self) -> Span<'_, T>;

    /// How many elements a kernel sees (what a launch contract's `requires` reads).
    fn len(&self) -> usize {
        self.span().len
    }

    /// Whether there are none.
    fn is_empty(&self) -> bool {
        self.span().len == 0
    }
}

/// Device memory a kernel may write (`DisjointSlice<T>`, `&mut [T]`), taken `&mut`: a
/// [`DeviceBuffer`] or a mutable view of part of one. Sealed.
pub trait DeviceWrite<T: DeviceCopy>: DeviceRead<T> {}

impl<T: DeviceCopy> sealed::Sealed for DeviceBuffer<T> {}
impl<T: DeviceCopy> DeviceRead<T> for DeviceBuffer<T> {
    fn span(&self) -> Span<'_, T> {
        DeviceBuffer::span(self)
    }
}
impl<T: DeviceCopy> DeviceWrite<T> for DeviceBuffer<T> {}

// Through references and `Arc`s, as a `&DeviceBuffer` is read through them.
impl<B: sealed::Sealed + ?Sized> sealed::Sealed for &B {}
impl<T: DeviceCopy, B: DeviceRead<T> + ?Sized> DeviceRead<T> for &B {
    fn span(&self) -> Span<'_, T> {
        (**self).span()
    }
}
impl<B: sealed::Sealed + ?Sized> sealed::Sealed for &mut B {}
impl<T: DeviceCopy, B: DeviceRead<T> + ?Sized> DeviceRead<T> for &mut B {
    fn span(&self) -> Span<'_, T> {
        (**self).span()
    }
}
impl<T: DeviceCopy, B: DeviceWrite<T> + ?Sized> DeviceWrite<T> for &mut B {}
impl<B: sealed::Sealed + ?Sized> sealed::Sealed for std::sync::Arc<B> {}
impl<T: DeviceCopy, B: DeviceRead<T> + ?Sized> DeviceRead<T> for std::sync::Arc<B> {
    fn span(&self) -> Span<'_, T> {
        (**self).span()
    }
}

/// Elements `range` of `len`, or [`Error::RangeOutOfBounds`].
fn bounds(range: impl RangeBounds<usize>, len: usize) -> Result<(usize, usize)> {
    let start = match range.start_bound() {
        Bound::Included(&s) => s,
        Bound::Excluded(&s) => s.saturating_add(1),
        Bound::Unbounded => 0,
    };
    let end = match range.end_bound() {
        Bound::Included(&e) => e.saturating_add(1),
        Bound::Excluded(&e) => e,
        Bound::Unbounded => len,
    };
    if start <= end && end <= len {
        Ok((start, end - start))
    } else {
        Err(Error::RangeOutOfBounds { start, end, len })
    }
}

/// Elements of a buffer, read-only. Cheap to copy.
#[derive(Clone, Copy)]
pub struct DeviceSlice<'a, T: DeviceCopy> {
    span: Span<'a, T>,
}

/// Elements of a buffer, borrowed exclusively: they may be written.
pub struct DeviceSliceMut<'a, T: DeviceCopy> {
    span: Span<'a, T>,
    _exclusive: PhantomData<&'a mut DeviceBuffer<T>>,
}

impl<T: DeviceCopy> std::fmt::Debug for DeviceSlice<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceSlice")
            .field("start", &self.span.start)
            .field("len", &self.span.len)
            .finish()
    }
}

impl<T: DeviceCopy> std::fmt::Debug for DeviceSliceMut<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceSliceMut")
            .field("start", &self.span.start)
            .field("len", &self.span.len)
            .finish()
    }
}

impl<T: DeviceCopy> DeviceBuffer<T> {
    /// Elements `range` of the buffer, read-only ([`Error::RangeOutOfBounds`] past its end).
    ///
    /// ```
    /// use cuprum_runtime::{CudaContext, DeviceBuffer};
    ///
    /// # fn main() -> cuprum_runtime::Result<()> {
    /// let ctx = CudaContext::new(0)?;
    /// let stream = ctx.default_stream();
    /// let mut buffer = DeviceBuffer::from_host(&stream, &[0u32, 1, 2, 3, 4, 5])?;
    /// assert_eq!(buffer.slice(2..4)?.to_host_vec(&stream)?, [2, 3]);
    /// let (mut low, mut high) = buffer.split_at_mut(3)?;
    /// low.copy_from_host(&stream, &[7, 7, 7])?;
    /// high.copy_from_device(&stream, &low)?;
    /// assert_eq!(buffer.to_host_vec(&stream)?, [7, 7, 7, 7, 7, 7]);
    /// assert!(buffer.slice(4..9).is_err());
    /// # Ok(())
    /// # }
    /// ```
    pub fn slice(&self, range: impl RangeBounds<usize>) -> Result<DeviceSlice<'_, T>> {
        let (start, len) = bounds(range, self.len())?;
        Ok(DeviceSlice {
            span: Span {
                buffer: self,
                start,
                len,
            },
        })
    }

    /// Elements `range` of the buffer, to write ([`Error::RangeOutOfBounds`] past its end).
    pub fn slice_mut(&mut self, range: impl RangeBounds<usize>) -> Result<DeviceSliceMut<'_, T>> {
        let (start, len) = bounds(range, self.len())?;
        Ok(DeviceSliceMut {
            span: Span {
                buffer: self,
                start,
                len,
            },
            _exclusive: PhantomData,
        })
    }

    /// The elements before `mid` and those from it, each to write
    /// ([`Error::RangeOutOfBounds`] when `mid` is past the end).
    pub fn split_at_mut(
        &mut self,
        mid: usize,
    ) -> Result<(DeviceSliceMut<'_, T>, DeviceSliceMut<'_, T>)> {
        self.slice_mut(..)?.split_at(mid)
    }
}

macro_rules! view_methods {
    ($view:ident) => {
        impl<'a, T: DeviceCopy> $view<'a, T> {
            /// How many elements the view has.
            pub fn len(&self) -> usize {
                self.span.len
            }

            /// Whether it has none.
            pub fn is_empty(&self) -> bool {
                self.span.len == 0
            }

            /// Where it starts in its buffer, in elements.
            pub fn offset(&self) -> usize {
                self.span.start
            }

            /// The device address of its first element.
            #[doc(hidden)]
            pub fn device_address(&self) -> u64 {
                self.span.address()
            }

            /// Copies the elements into `out` (same length); waits for earlier work on
            /// `stream`.
            pub fn copy_to_host(&self, stream: &Stream, out: &mut [T]) -> Result<()> {
                self.span.read_to_host(stream, out)
            }

            /// Copies the elements into a new `Vec`.
            pub fn to_host_vec(&self, stream: &Stream) -> Result<Vec<T>> {
                let mut out = Vec::with_capacity(self.span.len);
                // SAFETY: all-zero bytes are a valid `T` (`DeviceCopy`'s contract).
                unsafe {
                    std::ptr::write_bytes(out.as_mut_ptr(), 0, self.span.len);
                    out.set_len(self.span.len);
                }
                self.copy_to_host(stream, &mut out)?;
                Ok(out)
            }
        }

        impl<T: DeviceCopy> sealed::Sealed for $view<'_, T> {}
        impl<T: DeviceCopy> DeviceRead<T> for $view<'_, T> {
            fn span(&self) -> Span<'_, T> {
                self.span
            }
        }
    };
}

view_methods!(DeviceSlice);
view_methods!(DeviceSliceMut);

impl<T: DeviceCopy> DeviceWrite<T> for DeviceSliceMut<'_, T> {}

impl<'a, T: DeviceCopy> DeviceSlice<'a, T> {
    /// Elements `range` of this view.
    pub fn slice(&self, range: impl RangeBounds<usize>) -> Result<DeviceSlice<'a, T>> {
        let (start, len) = bounds(range, self.span.len)?;
        Ok(DeviceSlice {
            span: Span {
                buffer: self.span.buffer,
                start: self.span.start + start,
                len,
            },
        })
    }
}

impl<'a, T: DeviceCopy> DeviceSliceMut<'a, T> {
    /// Elements `range` of this view, to write (borrowing this one).
    pub fn slice_mut(&mut self, range: impl RangeBounds<usize>) -> Result<DeviceSliceMut<'_, T>> {
        let (start, len) = bounds(range, self.span.len)?;
        Ok(DeviceSliceMut {
            span: Span {
                buffer: self.span.buffer,
                start: self.span.start + start,
                len,
            },
            _exclusive: PhantomData,
        })
    }

    /// The view read-only.
    pub fn as_slice(&self) -> DeviceSlice<'_, T> {
        DeviceSlice { span: self.span }
    }

    /// Its elements before `mid` and from `mid` on, each to write.
    pub fn split_at(self, mid: usize) -> Result<(DeviceSliceMut<'a, T>, DeviceSliceMut<'a, T>)> {
        let (_, len) = bounds(..mid, self.span.len)?;
        let low = Span { len, ..self.span };
        let high = Span {
            start: self.span.start + mid,
            len: self.span.len - mid,
            ..self.span
        };
        Ok((
            DeviceSliceMut {
                span: low,
                _exclusive: PhantomData,
            },
            DeviceSliceMut {
                span: high,
                _exclusive: PhantomData,
            },
        ))
    }

    /// Overwrites the elements with `data` (same length); waits for the copy.
    pub fn copy_from_host(&mut self, stream: &Stream, data: &[T]) -> Result<()> {
        self.span.write_from_host(stream, data)
    }

    /// Overwrites the elements with `src`'s (same length), ordered on `stream`.
    pub fn copy_from_device(&mut self, stream: &Stream, src: &impl DeviceRead<T>) -> Result<()> {
        self.span.copy_from(stream, src.span())
    }
}
