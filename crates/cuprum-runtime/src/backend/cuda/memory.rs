//! Device memory of the CUDA backend: stream-ordered allocation and zero-filling on the
//! stream that asks (`cuMemAllocAsync` from the device's default pool), frees on a release
//! stream of the device's own after exactly the work that used the memory (its order marks,
//! and earlier work of the legacy default stream, which a blocking stream follows), so that
//! buffers come and go without serializing the program's streams; and copies on a stream; copies with ordinary
//! host memory wait for their stream, so host slices never outlive the call. Page-locked
//! (pinned) host memory, and reads into it that return at once, are what a read awaited
//! without blocking uses (`crate::staged`).

use cudarc::driver::result;

use super::CudaDevice;
use super::fail::{CuFail, fail};
use super::streams::CudaStream;

impl CudaDevice {
    /// Allocates `bytes` (> 0), ordered on `stream` when the device supports stream-ordered
    /// allocation (synchronously otherwise).
    pub(crate) fn allocate(&self, stream: &CudaStream, bytes: usize) -> Result<u64, CuFail> {
        self.bind()?;
        // SAFETY: plain allocation calls on a live stream (or the legacy one, null).
        unsafe {
            if self.stream_ordered_alloc {
                result::malloc_async(stream.raw, bytes).map_err(fail("cuMemAllocAsync"))
            } else {
                result::malloc_sync(bytes).map_err(fail("cuMemAlloc"))
            }
        }
    }

    /// Frees an allocation made by [`allocate`](Self::allocate) once the work before each of
    /// `after` (every unfinished use of the memory on a stream other than the default one)
    /// and the default stream's earlier work have finished: on the release stream, a blocking
    /// stream, so no other stream waits for the free. Errors are ignored (this runs in
    /// `Drop`; after a fault the context is unusable anyway).
    pub(crate) fn release(&self, ptr: u64, after: &[&super::OrderMark]) {
        if self.bind().is_err() {
            return;
        }
        let release = self
            .release_stream
            .get_or_init(|| self.create_stream().ok())
            .as_ref()
            .filter(|_| self.stream_ordered_alloc);
        let Some(stream) = release else {
            // SAFETY: `ptr` came from `allocate` and is freed once; the legacy stream (or the
            // synchronous free) orders it after all earlier work on every blocking stream.
            unsafe {
                let _ = if self.stream_ordered_alloc {
                    result::free_async(ptr, std::ptr::null_mut())
                } else {
                    result::free_sync(ptr)
                };
            }
            return;
        };
        for mark in after {
            if self.stream_wait(stream, mark).is_err() {
                // Could not order the free after a use: free after everything instead.
                // SAFETY: as above.
                let _ = unsafe { result::free_async(ptr, std::ptr::null_mut()) };
                return;
            }
        }
        // SAFETY: `ptr` came from `allocate` and is freed once, on a stream that waits for
        // every unfinished use of it: those on other streams through their marks, those on
        // the legacy stream because the release stream is a blocking stream.
        let _ = unsafe { result::free_async(ptr, stream.raw) };
    }

    /// Fills `bytes` at `ptr` with zero, on `stream`.
    pub(crate) fn zero_fill(
        &self,
        stream: &CudaStream,
        ptr: u64,
        bytes: usize,
    ) -> Result<(), CuFail> {
        self.bind()?;
        // SAFETY: `ptr..ptr+bytes` is a live allocation; the stream is alive.
        unsafe { result::memset_d8_async(ptr, 0, bytes, stream.raw) }
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
