//! Streams, events and order marks of the CUDA backend. Our streams are blocking streams:
//! ordered with the legacy default stream, and with each other only through order marks
//! (events without timing, pooled per device), which `ordering.rs` records and waits for, and
//! which `completion.rs` queries to learn, without waiting, that a stream's work is done.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use cudarc::driver::result::{self, DriverError};
use cudarc::driver::sys;

use super::fail::{CuFail, fail};
use super::{CudaDevice, bind};

impl CudaDevice {
    pub(crate) fn legacy_stream(&self) -> CudaStream {
        CudaStream {
            raw: std::ptr::null_mut(),
            owned: false,
            ctx: self.ctx,
        }
    }

    pub(crate) fn create_stream(&self) -> Result<CudaStream, CuFail> {
        self.bind()?;
        let raw = result::stream::create(result::stream::StreamKind::Default)
            .map_err(fail("cuStreamCreate"))?;
        Ok(CudaStream {
            raw,
            owned: true,
            ctx: self.ctx,
        })
    }

    /// A stream that does not synchronize with the legacy default stream (graph capture must
    /// not touch it).
    pub(crate) fn create_nonblocking_stream(&self) -> Result<CudaStream, CuFail> {
        self.bind()?;
        let raw = result::stream::create(result::stream::StreamKind::NonBlocking)
            .map_err(fail("cuStreamCreate"))?;
        Ok(CudaStream {
            raw,
            owned: true,
            ctx: self.ctx,
        })
    }

    /// A stream of `priority` (lower numbers run first; the driver clamps it to
    /// [`stream_priorities`](Self::stream_priorities)).
    pub(crate) fn create_stream_with_priority(&self, priority: i32) -> Result<CudaStream, CuFail> {
        self.bind()?;
        let mut raw: sys::CUstream = std::ptr::null_mut();
        // SAFETY: `raw` is a valid out pointer; flag 0 is a blocking stream, as `create_stream`.
        unsafe { sys::cuStreamCreateWithPriority(&mut raw, 0, priority) }
            .result()
            .map_err(fail("cuStreamCreateWithPriority"))?;
        Ok(CudaStream {
            raw,
            owned: true,
            ctx: self.ctx,
        })
    }

    /// The device's stream priorities: (least, greatest), the greatest the lowest number.
    pub(crate) fn stream_priorities(&self) -> Result<(i32, i32), CuFail> {
        self.bind()?;
        let (mut least, mut greatest) = (0, 0);
        // SAFETY: both are valid out pointers.
        unsafe { sys::cuCtxGetStreamPriorityRange(&mut least, &mut greatest) }
            .result()
            .map_err(fail("cuCtxGetStreamPriorityRange"))?;
        Ok((least, greatest))
    }

    /// Makes `stream` wait, on the device, for the work before `event`.
    pub(crate) fn stream_wait_event(
        &self,
        stream: &CudaStream,
        event: &CudaEvent,
    ) -> Result<(), CuFail> {
        self.bind()?;
        // SAFETY: both handles are alive.
        unsafe {
            result::stream::wait_event(
                stream.raw,
                event.raw,
                sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT,
            )
        }
        .map_err(fail("cuStreamWaitEvent"))
    }

    /// Whether the work before `event` has completed, without waiting.
    pub(crate) fn query_event(&self, event: &CudaEvent) -> Result<bool, CuFail> {
        self.bind()?;
        // SAFETY: the event is alive.
        match unsafe { result::event::query(event.raw) } {
            Ok(()) => Ok(true),
            Err(DriverError(sys::CUresult::CUDA_ERROR_NOT_READY)) => Ok(false),
            Err(err) => Err(CuFail {
                call: "cuEventQuery",
                err,
            }),
        }
    }

    pub(crate) fn synchronize_context(&self) -> Result<(), CuFail> {
        self.bind()?;
        result::ctx::synchronize().map_err(fail("cuCtxSynchronize"))
    }

    pub(crate) fn synchronize_stream(&self, stream: &CudaStream) -> Result<(), CuFail> {
        self.bind()?;
        // SAFETY: the stream is alive (owned by a live StreamInner) or the legacy stream.
        unsafe { result::stream::synchronize(stream.raw) }.map_err(fail("cuStreamSynchronize"))
    }

    pub(crate) fn record_timing_event(&self, stream: &CudaStream) -> Result<CudaEvent, CuFail> {
        self.bind()?;
        let raw = result::event::create(sys::CUevent_flags::CU_EVENT_DEFAULT)
            .map_err(fail("cuEventCreate"))?;
        let event = CudaEvent { raw, ctx: self.ctx };
        // SAFETY: both handles are alive.
        unsafe { result::event::record(event.raw, stream.raw) }.map_err(fail("cuEventRecord"))?;
        Ok(event)
    }

    /// Records a point of `stream` that other streams can wait for ([`stream_wait`]): an
    /// event without timing, the cheap kind, taken from the device's pool (back there when the
    /// last holder drops the mark).
    ///
    /// [`stream_wait`]: Self::stream_wait
    pub(crate) fn record_order_mark(&self, stream: &CudaStream) -> Result<OrderMark, CuFail> {
        self.bind()?;
        let reused = self.marks.lock().pop();
        let raw = match reused {
            Some(e) => e.0,
            None => result::event::create(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING)
                .map_err(fail("cuEventCreate"))?,
        };
        let mark = OrderMark {
            raw,
            pool: self.marks.clone(),
        };
        // SAFETY: both handles are alive; re-recording a reused event is allowed (a stream
        // that waited on its earlier recording captured that one when it called).
        unsafe { result::event::record(mark.raw, stream.raw) }.map_err(fail("cuEventRecord"))?;
        Ok(mark)
    }

    /// Makes all work submitted to `stream` from now on wait until `mark` has completed (on
    /// the device; the host does not wait).
    pub(crate) fn stream_wait(&self, stream: &CudaStream, mark: &OrderMark) -> Result<(), CuFail> {
        self.bind()?;
        // SAFETY: both handles are alive.
        unsafe {
            result::stream::wait_event(
                stream.raw,
                mark.raw,
                sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT,
            )
        }
        .map_err(fail("cuStreamWaitEvent"))
    }

    /// Whether the work before `mark` has completed (`cuEventQuery`, which does not wait); a
    /// fault of that work comes back as the failure.
    pub(crate) fn query_order_mark(&self, mark: &OrderMark) -> Result<bool, CuFail> {
        self.bind()?;
        // SAFETY: the event is alive (the mark holds it until dropped).
        match unsafe { result::event::query(mark.raw) } {
            Ok(()) => Ok(true),
            Err(DriverError(sys::CUresult::CUDA_ERROR_NOT_READY)) => Ok(false),
            Err(err) => Err(CuFail {
                call: "cuEventQuery",
                err,
            }),
        }
    }

    pub(crate) fn synchronize_event(&self, event: &CudaEvent) -> Result<(), CuFail> {
        self.bind()?;
        // SAFETY: the event is alive.
        unsafe { result::event::synchronize(event.raw) }.map_err(fail("cuEventSynchronize"))
    }

    pub(crate) fn event_elapsed_ms(&self, a: &CudaEvent, b: &CudaEvent) -> Result<f32, CuFail> {
        if !self.event_timing {
            return Err(CuFail {
                call: "cuEventElapsedTime",
                err: DriverError(sys::CUresult::CUDA_ERROR_NOT_SUPPORTED),
            });
        }
        self.bind()?;
        // SAFETY: both events are alive and were created with timing enabled.
        unsafe { result::event::elapsed(a.raw, b.raw) }.map_err(fail("cuEventElapsedTime"))
    }
}

/// A stream handle: the legacy default stream (null, not owned) or one we created.
pub(crate) struct CudaStream {
    pub(super) raw: sys::CUstream,
    owned: bool,
    ctx: sys::CUcontext,
}

impl CudaStream {
    /// Another library's stream of context `ctx`: used, never destroyed.
    pub(super) fn borrowed(raw: sys::CUstream, ctx: sys::CUcontext) -> Self {
        Self {
            raw,
            owned: false,
            ctx,
        }
    }

    /// The raw handle (`CUstream`; null for the legacy default stream).
    pub(crate) fn raw(&self) -> *mut std::ffi::c_void {
        self.raw.cast()
    }
}

// SAFETY: stream handles may be used from any thread (the context is bound per call).
unsafe impl Send for CudaStream {}
// SAFETY: as above.
unsafe impl Sync for CudaStream {}

/// Destroys a stream we created (not the default stream). Errors are ignored: the driver
/// releases a stream's resources once its work is done.
impl Drop for CudaStream {
    fn drop(&mut self) {
        if self.owned && bind(self.ctx).is_ok() {
            // SAFETY: destroyed once, here; its owner (a `Stream`) keeps the context alive.
            let _ = unsafe { result::stream::destroy(self.raw) };
        }
    }
}

/// An event created with timing enabled.
pub(crate) struct CudaEvent {
    raw: sys::CUevent,
    ctx: sys::CUcontext,
}

impl Drop for CudaEvent {
    fn drop(&mut self) {
        if bind(self.ctx).is_ok() {
            // SAFETY: destroyed once, here; its owner (an `Event`) keeps the context alive.
            let _ = unsafe { result::event::destroy(self.raw) };
        }
    }
}

// SAFETY: event handles may be used from any thread.
unsafe impl Send for CudaEvent {}
// SAFETY: as above.
unsafe impl Sync for CudaEvent {}

/// A point recorded in a stream for other streams to wait for (an event without timing);
/// its event goes back to the device's pool on drop.
pub(crate) struct OrderMark {
    raw: sys::CUevent,
    pool: Arc<MarkPool>,
}

// SAFETY: event handles may be used from any thread (the context is bound per call).
unsafe impl Send for OrderMark {}
// SAFETY: as above.
unsafe impl Sync for OrderMark {}

impl Drop for OrderMark {
    fn drop(&mut self) {
        if self.pool.closed.load(Ordering::Acquire) {
            return; // the context is gone, and its events with it
        }
        let mut free = self.pool.lock();
        if free.len() < MarkPool::KEPT {
            free.push(PooledEvent(self.raw));
        } else if bind(self.pool.ctx).is_ok() {
            // SAFETY: destroyed once, here; no stream waits on it after the call returns.
            let _ = unsafe { result::event::destroy(self.raw) };
        }
    }
}

/// An event handle in the pool.
pub(super) struct PooledEvent(sys::CUevent);

// SAFETY: event handles may be used from any thread.
unsafe impl Send for PooledEvent {}

/// Events without timing, for order marks, kept for reuse; destroyed with the last holder.
pub(crate) struct MarkPool {
    pub(super) ctx: sys::CUcontext,
    pub(super) free: Mutex<Vec<PooledEvent>>,
    /// Set when the device lets its context go: events then need no destroying.
    pub(super) closed: std::sync::atomic::AtomicBool,
}

// SAFETY: the context handle is only bound, from any thread; the events are behind a mutex.
unsafe impl Send for MarkPool {}
// SAFETY: as above.
unsafe impl Sync for MarkPool {}

impl MarkPool {
    /// Events kept at most (more are destroyed when their mark drops).
    const KEPT: usize = 256;

    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, Vec<PooledEvent>> {
        self.free.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl MarkPool {
    /// Destroys the pooled events now.
    pub(super) fn destroy_free(&self) {
        let free = std::mem::take(&mut *self.lock());
        if self.closed.load(Ordering::Acquire) {
            return;
        }
        if !free.is_empty() && bind(self.ctx).is_ok() {
            for e in free {
                // SAFETY: each pooled event is destroyed once, here.
                let _ = unsafe { result::event::destroy(e.0) };
            }
        }
    }
}

impl Drop for MarkPool {
    fn drop(&mut self) {
        self.destroy_free();
    }
}
