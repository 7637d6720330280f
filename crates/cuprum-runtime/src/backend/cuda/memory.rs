//! Device memory of the CUDA backend: allocation, freeing and zero-filling on the legacy
//! default stream (ordered with every stream), and copies on a stream; copies with ordinary
//! host memory wait for their stream, so host slices never outlive the call. Page-locked
//! (pinned) host memory, and reads into it that return at once, are what a read awaited
//! without blocking uses (`crate::staged`).

use cudarc::driver::result;

use super::CudaDevice;
use super::fail::{CuFail, fail};
use super::streams::CudaStream;

impl CudaDevice {
    /// Allocates `bytes` (> 0), ordered on the legacy default stream when the device supports
    /// stream-ordered allocation.
    pub(crate) fn allocate(&self, bytes: usize) -> Result<u64, CuFail> {
        self.bind()?;
        // SAFETY: plain allocation calls; the legacy stream handle (null) is always valid.
        unsafe {
            if self.stream_ordered_alloc {
                result::malloc_async(std::ptr::null_mut(), bytes).map_err(fail("cuMemAllocAsync"))
            } else {
                result::malloc_sync(bytes).map_err(fail("cuMemAlloc"))
            }
        }
    }

    /// Frees an allocation made by [`allocate`](Self::allocate). Errors are ignored (this runs in
    /// `Drop`; after a fault the context is unusable anyway).
    pub(crate) fn release(&self, ptr: u64) {
        if self.bind().is_err() {
            return;
        }
        // SAFETY: `ptr` came from `alloc` and is freed once; the legacy stream orders the
        // free after all earlier work on every (blocking) stream.
        unsafe {
            let _ = if self.stream_ordered_alloc {
                result::free_async(ptr, std::ptr::null_mut())
            } else {
                result::free_sync(ptr)
            };
        }
    }

    /// Fills `bytes` at `ptr` with zero, on the legacy default stream.
    pub(crate) fn zero_fill(&self, ptr: u64, bytes: usize) -> Result<(), CuFail> {
        self.bind()?;
        // SAFETY: `ptr..ptr+bytes` is a live allocation.
        unsafe { result::memset_d8_async(ptr, 0, bytes, std::ptr::null_mut()) }
            .map_err(fail("cuMemsetD8Async"))
    }

    /// Copies host bytes to the device and waits for the copy.
    ///
    /// # Safety
    /// `dst..dst+src.len()` must be a live device allocation of this context.
    pub(crate) unsafe fn copy_htod(
        &self,
        dst: u64,
        src: &[u8],
        stream: &CudaStream,
    ) -> Result<(), CuFail> {
        self.bind()?;
        // SAFETY: caller's contract; `src` outlives the call, which waits for the copy.
        unsafe {
            result::memcpy_htod_async(dst, src, stream.raw).map_err(fail("cuMemcpyHtoDAsync"))?;
            result::stream::synchronize(stream.raw).map_err(fail("cuStreamSynchronize"))
        }
    }

    /// Copies device bytes to the host and waits for the copy.
    ///
    /// # Safety
    /// `src..src+dst.len()` must be a live device allocation of this context.
    pub(crate) unsafe fn copy_dtoh(
        &self,
        dst: &mut [u8],
        src: u64,
        stream: &CudaStream,
    ) -> Result<(), CuFail> {
        self.bind()?;
        // SAFETY: caller's contract; `dst` outlives the call, which waits for the copy.
        unsafe {
            result::memcpy_dtoh_async(dst, src, stream.raw).map_err(fail("cuMemcpyDtoHAsync"))?;
            result::stream::synchronize(stream.raw).map_err(fail("cuStreamSynchronize"))
        }
    }

    /// Allocates `bytes` (> 0) of page-locked host memory, which the device can copy into
    /// while the host goes on.
    pub(crate) fn allocate_pinned(&self, bytes: usize) -> Result<u64, CuFail> {
        self.bind()?;
        // SAFETY: a plain allocation call; flags 0 is page-locked memory of this context.
        unsafe { result::malloc_host(bytes, 0) }
            .map(|ptr| ptr as u64)
            .map_err(fail("cuMemHostAlloc"))
    }

    /// Frees what [`allocate_pinned`](Self::allocate_pinned) gave. Errors are ignored (this
    /// runs in `Drop`).
    pub(crate) fn release_pinned(&self, ptr: u64) {
        if self.bind().is_err() {
            return;
        }
        // SAFETY: `ptr` came from `allocate_pinned` and is freed once, with no copy into it
        // running (the caller's contract).
        unsafe {
            let _ = result::free_host(ptr as *mut std::ffi::c_void);
        }
    }

    /// Enqueues a copy of `bytes` device bytes at `src` into the pinned host memory at `dst`
    /// on `stream`, and returns without waiting for it.
    ///
    /// # Safety
    /// `src..src+bytes` must be a live device allocation of this context, and `dst..dst+bytes`
    /// pinned memory from [`allocate_pinned`](Self::allocate_pinned) that nothing reads,
    /// writes or frees until the stream's work up to this copy has completed.
    pub(crate) unsafe fn copy_dtoh_async(
        &self,
        dst: u64,
        src: u64,
        bytes: usize,
        stream: &CudaStream,
    ) -> Result<(), CuFail> {
        self.bind()?;
        // SAFETY: the caller's contract; the slice lives as long as the pinned allocation.
        unsafe {
            let out = std::slice::from_raw_parts_mut(dst as *mut u8, bytes);
            result::memcpy_dtoh_async(out, src, stream.raw).map_err(fail("cuMemcpyDtoHAsync"))
        }
    }

    /// Enqueues a copy of `bytes` bytes from the pinned host memory at `src` to device `dst`
    /// on `stream`, and returns without waiting for it.
    ///
    /// # Safety
    /// `dst..dst+bytes` must be a live device allocation of this context, and `src..src+bytes`
    /// pinned memory from [`allocate_pinned`](Self::allocate_pinned) that nothing writes or
    /// frees until the stream's work up to this copy has completed.
    pub(crate) unsafe fn copy_htod_async(
        &self,
        dst: u64,
        src: u64,
        bytes: usize,
        stream: &CudaStream,
    ) -> Result<(), CuFail> {
        self.bind()?;
        // SAFETY: the caller's contract; the slice lives as long as the pinned allocation.
        unsafe {
            let data = std::slice::from_raw_parts(src as *const u8, bytes);
            result::memcpy_htod_async(dst, data, stream.raw).map_err(fail("cuMemcpyHtoDAsync"))
        }
    }

    /// Copies device bytes to device bytes, ordered on `stream` (asynchronous).
    ///
    /// # Safety
    /// Both ranges must be live device allocations of this context.
    pub(crate) unsafe fn copy_dtod(
        &self,
        dst: u64,
        src: u64,
        bytes: usize,
        stream: &CudaStream,
    ) -> Result<(), CuFail> {
        self.bind()?;
        // SAFETY: caller's contract.
        unsafe { result::memcpy_dtod_async(dst, src, bytes, stream.raw) }
            .map_err(fail("cuMemcpyDtoDAsync"))
    }
}
