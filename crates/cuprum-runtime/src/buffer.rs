//! Device memory: the element traits ([`DeviceCopy`], [`DeviceScalar`]) and
//! [`DeviceBuffer`], a typed, owned allocation freed on drop.
//!
//! Buffers move bytes only; what the bytes mean to a kernel is the launch's business
//! (`launch.rs`). Zero-length buffers allocate nothing (address 0). Host data is always
//! copied before a call returns (the stream is synchronized), so no host slice has to outlive
//! a call; a read that returns first owns its host memory (`staged`).

use std::fmt;
use std::marker::PhantomData;

use cuprum_ir::ScalarType;

use crate::context::{CudaContext, Stream};
use crate::error::{Error, Result};
use crate::ordering::{self, Access, Memory};

/// Element types that may live in device memory (plain old data). For a struct, write
/// `#[repr(C)] #[derive(Clone, Copy, DeviceCopy)]` (the facade's derive checks the rules
/// below at compile time) rather than implementing it by hand.
///
/// # Safety
/// Implementors must be plain data: no padding or otherwise uninitialized bytes (values are
/// copied as raw bytes), no pointers or references to host memory, and every bit pattern that
/// the device may store, including all zeros ([`DeviceBuffer::zeroed`]), must be a valid
/// value of the type.
pub unsafe trait DeviceCopy: Copy + Send + Sync + 'static {
    /// Evaluated (at compile time, per type) wherever a `DeviceCopy` value's bytes are copied
    /// or allocated on the device: `#[derive(DeviceCopy)]` on a generic struct asserts here
    /// that the instantiation has no padding, which only an instantiation can tell. Not for
    /// implementing by hand.
    #[doc(hidden)]
    const __ASSERT_NO_PADDING: () = ();
}

macro_rules! device_copy {
    ($($t:ty),* $(,)?) => { $(
        // SAFETY: primitive plain data; every value a kernel may store is valid (for `bool`,
        // kernels store only 0 or 1, the IR's `Bool` representation).
        unsafe impl DeviceCopy for $t {}
    )* };
}

device_copy!(
    bool,
    i8,
    i16,
    i32,
    i64,
    i128,
    isize,
    u8,
    u16,
    u32,
    u64,
    u128,
    usize,
    f32,
    f64,
    half::f16,
    half::bf16,
);

// SAFETY: an array of plain data is plain data without padding.
unsafe impl<T: DeviceCopy, const N: usize> DeviceCopy for [T; N] {}

/// Scalars that map to one IR type: what a kernel's scalar parameter may be.
pub trait DeviceScalar: DeviceCopy {
    /// The IR type (`usize`/`isize` map to `U64`/`I64`).
    const TYPE: ScalarType;
    /// The value's bits, zero-extended to 64 (`-1i32` is `0xFFFF_FFFF`; `bool` is 0 or 1;
    /// `f16`/`bf16` are their raw 16 bits).
    fn to_bits(self) -> u64;
    /// The value whose [`to_bits`](Self::to_bits) are the low bits of `bits`.
    fn from_bits(bits: u64) -> Self;
}

macro_rules! device_scalar_int {
    ($($t:ty => $ir:ident, $unsigned:ty;)*) => { $(
        impl DeviceScalar for $t {
            const TYPE: ScalarType = ScalarType::$ir;
            #[inline]
            fn to_bits(self) -> u64 {
                self as $unsigned as u64
            }
            #[inline]
            fn from_bits(bits: u64) -> Self {
                bits as $unsigned as $t
            }
        }
    )* };
}

device_scalar_int! {
    i8 => I8, u8;
    i16 => I16, u16;
    i32 => I32, u32;
    i64 => I64, u64;
    isize => I64, u64;
    u8 => U8, u8;
    u16 => U16, u16;
    u32 => U32, u32;
    u64 => U64, u64;
    usize => U64, u64;
}

impl DeviceScalar for bool {
    const TYPE: ScalarType = ScalarType::Bool;
    #[inline]
    fn to_bits(self) -> u64 {
        u64::from(self)
    }
    #[inline]
    fn from_bits(bits: u64) -> Self {
        bits & 1 != 0
    }
}

impl DeviceScalar for f32 {
    const TYPE: ScalarType = ScalarType::F32;
    #[inline]
    fn to_bits(self) -> u64 {
        u64::from(f32::to_bits(self))
    }
    #[inline]
    fn from_bits(bits: u64) -> Self {
        f32::from_bits(bits as u32)
    }
}

impl DeviceScalar for f64 {
    const TYPE: ScalarType = ScalarType::F64;
    #[inline]
    fn to_bits(self) -> u64 {
        f64::to_bits(self)
    }
    #[inline]
    fn from_bits(bits: u64) -> Self {
        f64::from_bits(bits)
    }
}

impl DeviceScalar for half::f16 {
    const TYPE: ScalarType = ScalarType::F16;
    #[inline]
    fn to_bits(self) -> u64 {
        u64::from(half::f16::to_bits(self))
    }
    #[inline]
    fn from_bits(bits: u64) -> Self {
        half::f16::from_bits(bits as u16)
    }
}

impl DeviceScalar for half::bf16 {
    const TYPE: ScalarType = ScalarType::BF16;
    #[inline]
    fn to_bits(self) -> u64 {
        u64::from(half::bf16::to_bits(self))
    }
    #[inline]
    fn from_bits(bits: u64) -> Self {
        half::bf16::from_bits(bits as u16)
    }
}

pub(crate) fn as_bytes<T: DeviceCopy>(data: &[T]) -> &[u8] {
    let () = T::__ASSERT_NO_PADDING;
    // SAFETY: `DeviceCopy` types have no uninitialized bytes; the length is the slice's size.
    unsafe { std::slice::from_raw_parts(data.as_ptr().cast::<u8>(), size_of_val(data)) }
}

fn as_bytes_mut<T: DeviceCopy>(data: &mut [T]) -> &mut [u8] {
    let () = T::__ASSERT_NO_PADDING;
    // SAFETY: as above, and every byte pattern the device stores is a valid `T`.
    unsafe { std::slice::from_raw_parts_mut(data.as_mut_ptr().cast::<u8>(), size_of_val(data)) }
}

/// A typed allocation of device memory (GPU or emulator), freed when dropped.
///
/// Not `Clone`: copying device memory is explicit ([`copy_from_device`](Self::copy_from_device)).
///
/// Every copy checks lengths and contexts and returns an [`Error`] rather than panicking:
///
/// ```
/// use cuprum_runtime::{CudaContext, DeviceBuffer, Error};
///
/// # fn main() -> cuprum_runtime::Result<()> {
/// let ctx = CudaContext::new(0)?;
/// let stream = ctx.default_stream();
///
/// let mut buffer = DeviceBuffer::from_host(&stream, &[1.5f32, 2.5, 3.5])?;
/// assert_eq!((buffer.len(), buffer.size_bytes()), (3, 12));
/// assert_eq!(buffer.to_host_vec(&stream)?, [1.5, 2.5, 3.5]);
///
/// buffer.copy_from_host(&stream, &[4.0, 5.0, 6.0])?;
/// let mut out = [0.0f32; 3];
/// buffer.copy_to_host(&stream, &mut out)?;
/// assert_eq!(out, [4.0, 5.0, 6.0]);
///
/// // A slice of the wrong length is an error that names both lengths.
/// match buffer.copy_from_host(&stream, &[1.0, 2.0]) {
///     Err(Error::LengthMismatch { expected, actual, .. }) => {
///         assert_eq!((expected, actual), (3, 2))
///     }
///     other => panic!("expected a length mismatch, got {other:?}"),
/// }
///
/// // Zero-filled buffers, and device-to-device copies.
/// let mut copy = DeviceBuffer::<f32>::zeroed(&stream, 3)?;
/// assert_eq!(copy.to_host_vec(&stream)?, [0.0; 3]);
/// copy.copy_from_device(&stream, &buffer)?;
/// assert_eq!(copy.to_host_vec(&stream)?, [4.0, 5.0, 6.0]);
/// # Ok(())
/// # }
/// ```
pub struct DeviceBuffer<T: DeviceCopy> {
    ctx: CudaContext,
    /// Device address; 0 for a zero-length buffer (nothing allocated).
    pub(crate) addr: u64,
    len: usize,
    /// The allocation and its unfinished uses on streams (see `ordering`), in the registry of
    /// live buffers under `addr`, which launches consult; shared with the graphs that replay
    /// into it.
    pub(crate) memory: std::sync::Arc<Memory>,
    /// What else the buffer keeps alive (a DLPack producer's tensor, for a buffer sharing
    /// the memory of one of cuprum's own exports: `interop::dlpack`). Only kept, never
    /// touched, so asserted unwind-safe: a buffer stays one.
    _keep: Option<std::panic::AssertUnwindSafe<std::sync::Arc<dyn std::any::Any + Send + Sync>>>,
    _elem: PhantomData<T>,
}

impl<T: DeviceCopy> fmt::Debug for DeviceBuffer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceBuffer")
            .field("elem", &std::any::type_name::<T>())
            .field("len", &self.len)
            .field("address", &format_args!("{:#x}", self.addr))
            .finish()
    }
}

impl<T: DeviceCopy> DeviceBuffer<T> {
    fn byte_len(len: usize) -> Result<usize> {
        len.checked_mul(size_of::<T>())
            .ok_or_else(|| Error::OutOfMemory {
                bytes: len as u128 * size_of::<T>() as u128,
                detail: format!(
                    "{len} elements of {} bytes do not fit in the address space",
                    size_of::<T>()
                ),
            })
    }

    /// Allocates without initializing.
    pub(crate) fn alloc(stream: &Stream, len: usize) -> Result<Self> {
        let () = T::__ASSERT_NO_PADDING;
        let ctx = stream.context().clone();
        let bytes = Self::byte_len(len)?;
        let addr = if bytes == 0 {
            0
        } else {
            let addr = ctx
                .inner
                .backend
                .alloc(stream.handle(), bytes)
                .map_err(|f| ctx.fail(f, Some(stream)))?;
            ctx.count_allocation();
            addr
        };
        let memory = Memory::register(&ctx, addr, bytes as u64);
        if addr != 0 {
            // The memory exists for `stream`'s later work: other streams wait for the
            // allocation as for a write.
            ordering::hold(stream, &[(&memory.uses, Access::Write)])?.note_after()?;
        }
        Ok(Self {
            ctx,
            addr,
            len,
            memory,
            _keep: None,
            _elem: PhantomData,
        })
    }

    /// A buffer over `memory` (already registered), for `crate::foreign`.
    pub(crate) fn from_memory(
        ctx: CudaContext,
        addr: u64,
        len: usize,
        memory: std::sync::Arc<Memory>,
    ) -> Self {
        Self {
            ctx,
            addr,
            len,
            memory,
            _keep: None,
            _elem: PhantomData,
        }
    }

    /// A buffer over elements of an allocation another buffer already holds (its `memory`),
    /// keeping `keep` alive with it: `interop::dlpack`'s import of cuprum's own export.
    pub(crate) fn sharing(
        ctx: CudaContext,
        addr: u64,
        len: usize,
        memory: std::sync::Arc<Memory>,
        keep: std::sync::Arc<dyn std::any::Any + Send + Sync>,
    ) -> Self {
        Self {
            _keep: Some(std::panic::AssertUnwindSafe(keep)),
            ..Self::from_memory(ctx, addr, len, memory)
        }
    }

    /// The buffer's parts, for `crate::foreign`; `None` for a buffer sharing another's
    /// allocation ([`sharing`](Self::sharing)), whose memory is not its own to hand out.
    pub(crate) fn into_memory(self) -> Option<(CudaContext, u64, usize, std::sync::Arc<Memory>)> {
        if self._keep.is_some() {
            return None;
        }
        Some((self.ctx, self.addr, self.len, self.memory))
    }

    /// Copies `data` into a new buffer (waits for the copy).
    pub fn from_host(stream: &Stream, data: &[T]) -> Result<Self> {
        let buffer = Self::alloc(stream, data.len())?;
        buffer.span().write_from_host(stream, data)?;
        Ok(buffer)
    }

    /// A new buffer of `len` elements with every byte zero.
    pub fn zeroed(stream: &Stream, len: usize) -> Result<Self> {
        let buffer = Self::alloc(stream, len)?;
        let bytes = buffer.size_bytes();
        if bytes > 0 {
            let held = ordering::hold(stream, &[(&buffer.memory.uses, Access::Write)])?;
            buffer
                .ctx
                .inner
                .backend
                .zero(stream.handle(), buffer.addr, bytes)
                .map_err(|f| buffer.ctx.fail(f, Some(stream)))?;
            held.note_after()?;
        }
        Ok(buffer)
    }

    /// A new buffer of `len` elements whose contents are whatever the memory held.
    ///
    /// # Safety
    /// Reading an element before a kernel or copy has written it yields arbitrary bits: the
    /// caller must write every element before reading it, or `T` must accept every bit
    /// pattern.
    pub unsafe fn uninit(stream: &Stream, len: usize) -> Result<Self> {
        Self::alloc(stream, len)
    }

    /// Copies the buffer into a new `Vec` (waits for all earlier work on `stream`).
    pub fn to_host_vec(&self, stream: &Stream) -> Result<Vec<T>> {
        let mut out = Vec::<T>::with_capacity(self.len);
        // SAFETY: all-zero bytes are a valid `T` (`DeviceCopy`'s contract), so after the
        // fill the first `len` elements are initialized.
        unsafe {
            std::ptr::write_bytes(out.as_mut_ptr(), 0, self.len);
            out.set_len(self.len);
        }
        self.copy_to_host(stream, &mut out)?;
        Ok(out)
    }

    /// Overwrites the buffer with `data`, which must have the buffer's length (waits for the
    /// copy).
    pub fn copy_from_host(&mut self, stream: &Stream, data: &[T]) -> Result<()> {
        self.span().write_from_host(stream, data)
    }

    /// Copies the buffer into `out`, which must have the buffer's length (waits for all
    /// earlier work on `stream`).
    pub fn copy_to_host(&self, stream: &Stream, out: &mut [T]) -> Result<()> {
        self.span().read_to_host(stream, out)
    }

    /// Overwrites the buffer with the contents of `src` (same length; a buffer or a view of
    /// one), ordered on `stream`.
    pub fn copy_from_device(
        &mut self,
        stream: &Stream,
        src: &impl crate::view::DeviceRead<T>,
    ) -> Result<()> {
        self.span().copy_from(stream, src.span())
    }

    /// [`copy_from_device`](Self::copy_from_device) into a buffer other handles share (the
    /// tile track's tensors over one allocation), ordered like every use of it.
    ///
    /// # Safety
    /// The caller's types must give it the right to write the buffer, as `&mut` does: no
    /// handle through which safe code may expect the contents unchanged.
    #[doc(hidden)]
    pub unsafe fn copy_from_device_shared(
        &self,
        stream: &Stream,
        src: &DeviceBuffer<T>,
    ) -> Result<()> {
        self.span().copy_from(stream, src.span())
    }

    /// The whole buffer as a span.
    pub(crate) fn span(&self) -> Span<'_, T> {
        Span {
            buffer: self,
            start: 0,
            len: self.len,
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Size in bytes.
    pub fn size_bytes(&self) -> usize {
        // Cannot overflow: checked at allocation.
        self.len * size_of::<T>()
    }

    /// The device address of the first element (a `CUdeviceptr`, or an emulator address);
    /// 0 for an empty buffer.
    #[doc(hidden)]
    pub fn device_address(&self) -> u64 {
        self.addr
    }

    /// The context that owns the memory.
    pub fn context(&self) -> &CudaContext {
        &self.ctx
    }
}

/// Elements `start..start + len` of a buffer (inside it): what the copies of buffers and of
/// their views ([`crate::view`]) are written once for. Writing through one is the caller's
/// right to check (`&mut` on the buffer or a mutable view).
#[doc(hidden)]
#[derive(Clone, Copy)]
pub struct Span<'a, T: DeviceCopy> {
    pub(crate) buffer: &'a DeviceBuffer<T>,
    pub(crate) start: usize,
    pub(crate) len: usize,
}

impl<T: DeviceCopy> Span<'_, T> {
    /// The device address of the first element.
    pub(crate) fn address(&self) -> u64 {
        self.buffer.addr + (self.start * size_of::<T>()) as u64
    }

    fn bytes(&self) -> usize {
        self.len * size_of::<T>()
    }

    fn check_len(&self, what: &str, actual: usize) -> Result<()> {
        if actual == self.len {
            Ok(())
        } else {
            Err(Error::LengthMismatch {
                what: format!(
                    "{what} ({} `{}` on the device)",
                    self.len,
                    std::any::type_name::<T>()
                ),
                expected: self.len,
                actual,
            })
        }
    }

    /// Copies the elements into `out` (same length); complete when this returns.
    pub(crate) fn read_to_host(&self, stream: &Stream, out: &mut [T]) -> Result<()> {
        self.check_len("copy_to_host destination slice", out.len())?;
        let ctx = &self.buffer.ctx;
        ctx.check_same(stream.context())?;
        let held = ordering::hold(stream, &[(&self.buffer.memory.uses, Access::Read)])?;
        let bytes = as_bytes_mut(out);
        // SAFETY: the span is inside the buffer's live allocation.
        unsafe {
            ctx.inner
                .backend
                .read(stream.handle(), self.address(), bytes)
        }
        .map_err(|f| ctx.fail(f, Some(stream)))?;
        // The copy has completed (it synchronizes the stream).
        held.note(None);
        Ok(())
    }

    /// Overwrites the elements with `data` (same length); complete when this returns.
    pub(crate) fn write_from_host(&self, stream: &Stream, data: &[T]) -> Result<()> {
        self.check_len("copy_from_host source slice", data.len())?;
        let ctx = &self.buffer.ctx;
        ctx.check_same(stream.context())?;
        if data.is_empty() {
            return Ok(());
        }
        let held = ordering::hold(stream, &[(&self.buffer.memory.uses, Access::Write)])?;
        // SAFETY: the span is inside the buffer's live allocation.
        unsafe {
            ctx.inner
                .backend
                .write(stream.handle(), self.address(), as_bytes(data))
        }
        .map_err(|f| ctx.fail(f, Some(stream)))?;
        // The copy has completed (it synchronizes the stream), and so has all it waited for.
        held.note(None);
        Ok(())
    }

    /// Overwrites the elements with `src`'s (same length), ordered on `stream` (recorded on
    /// a graph's recording stream).
    pub(crate) fn copy_from(&self, stream: &Stream, src: Span<'_, T>) -> Result<()> {
        self.check_len("copy_from_device source", src.len)?;
        let ctx = &self.buffer.ctx;
        ctx.check_same(stream.context())?;
        ctx.check_same(&src.buffer.ctx)?;
        let bytes = self.bytes();
        if bytes == 0 {
            return Ok(());
        }
        let (dst_memory, src_memory) = (&self.buffer.memory, &src.buffer.memory);
        if let Some(recording) = stream.recording() {
            return recording.record(
                crate::graph::GraphOp::Copy {
                    dst: self.address(),
                    src: src.address(),
                    bytes,
                },
                [
                    (dst_memory.clone(), Access::Write),
                    (src_memory.clone(), Access::Read),
                ],
            );
        }
        let held = ordering::hold(
            stream,
            &[
                (&dst_memory.uses, Access::Write),
                (&src_memory.uses, Access::Read),
            ],
        )?;
        // SAFETY: both spans are inside live allocations of this context.
        unsafe {
            ctx.inner
                .backend
                .copy(stream.handle(), self.address(), src.address(), bytes)
        }
        .map_err(|f| ctx.fail(f, Some(stream)))?;
        held.note_after()
    }
}
