//! Contexts, streams and events: the public handles through which every device operation
//! goes, and the choice of backend (`CUPRUM_DEVICE`).
//!
//! A [`CudaContext`] is one device (a GPU's primary context, or one emulator instance) with its
//! limits, counters and default stream; [`Stream`]s order work on it; [`Event`]s mark points in
//! a stream and time them. The backend-specific work lives behind `crate::backend` (the CUDA
//! driver and the emulator); this module keeps the shared bookkeeping (which kernel ran
//! last on a stream, for fault messages; launch and allocation counters) and turns driver
//! failures into [`Error`]s.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Once};

pub use crate::backend::BackendKind;
use crate::backend::{self, Backend, EventHandle, Failure, StreamHandle};
use crate::error::{Error, Result};
use crate::graph::Recording;
use crate::limits::DeviceLimits;

/// The environment variable that selects the backend.
pub const DEVICE_ENV_VAR: &str = "CUPRUM_DEVICE";

/// The environment variable that says how many devices the emulator offers (default 1):
/// ordinals `0..N`, each with its own memory, so that programs for several devices run
/// (and are tested) without GPUs.
pub const EMULATOR_DEVICES_ENV_VAR: &str = "CUPRUM_EMU_DEVICES";

/// The most devices the emulator offers.
pub const MAX_EMULATOR_DEVICES: usize = 64;

/// How many devices the emulator offers: `CUPRUM_EMU_DEVICES`, 1 when unset.
pub fn emulator_device_count() -> Result<usize> {
    let Some(v) = std::env::var_os(EMULATOR_DEVICES_ENV_VAR) else {
        return Ok(1);
    };
    let text = v.to_string_lossy();
    match text.trim().parse::<usize>() {
        Ok(n) if (1..=MAX_EMULATOR_DEVICES).contains(&n) => Ok(n),
        _ => Err(Error::InvalidEmulatorDevices {
            value: text.into_owned(),
            max: MAX_EMULATOR_DEVICES,
        }),
    }
}

/// How many devices [`CudaContext::new`] can open (ordinals `0..count`) on the backend
/// `CUPRUM_DEVICE` selects: the GPUs the driver reports, the emulator's devices
/// ([`emulator_device_count`]), or for `auto` the GPUs when there are any, else the
/// emulator's. Never panics without a driver or a GPU: `cuda` without one is
/// [`Error::NoDriver`] (or 0 devices where the driver reports none).
pub fn device_count() -> Result<usize> {
    match DeviceSelection::from_env()? {
        DeviceSelection::Cuda => crate::backend::cuda::device_count(),
        DeviceSelection::Emulator => emulator_device_count(),
        DeviceSelection::Auto => match crate::backend::cuda::device_count() {
            Ok(n) if n > 0 => Ok(n),
            Ok(_) => emulator_device_count(),
            Err(e) if e.is_no_gpu() => emulator_device_count(),
            Err(e) => Err(e),
        },
    }
}

/// The value of `CUPRUM_DEVICE`: which backend [`CudaContext::new`] uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum DeviceSelection {
    /// A GPU when a driver and a device with the requested ordinal exist, else the emulator
    /// (said once per process on stderr). The default.
    #[default]
    Auto,
    /// A GPU, or an error.
    Cuda,
    /// The CPU emulator.
    Emulator,
}

impl DeviceSelection {
    /// Parses a `CUPRUM_DEVICE` value: `auto`, `cuda` (alias `gpu`) or `emu` (aliases
    /// `emulator`, `cpu`), ignoring case and surrounding blanks; empty means `auto`.
    pub fn parse(value: &str) -> Result<Self> {
        match value.trim().to_ascii_lowercase().as_str() {
            "" | "auto" => Ok(Self::Auto),
            "cuda" | "gpu" => Ok(Self::Cuda),
            "emu" | "emulator" | "cpu" => Ok(Self::Emulator),
            _ => Err(Error::InvalidDeviceSelection {
                value: value.to_owned(),
            }),
        }
    }

    /// Reads `CUPRUM_DEVICE` (unset means `auto`).
    pub fn from_env() -> Result<Self> {
        match std::env::var_os(DEVICE_ENV_VAR) {
            None => Ok(Self::Auto),
            Some(v) => match v.to_str() {
                Some(s) => Self::parse(s),
                None => Err(Error::InvalidDeviceSelection {
                    value: v.to_string_lossy().into_owned(),
                }),
            },
        }
    }
}

/// Counters of one context, for tests that prove what ran (e.g. that a fused iterator chain
/// is one launch).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct RuntimeStats {
    /// Kernel launches submitted.
    pub launches: u64,
    /// Device allocations made (zero-length buffers allocate nothing and are not counted).
    pub allocations: u64,
}

pub(crate) struct ContextInner {
    /// Dropped before `backend` (fields drop in order): the default stream owns nothing, but
    /// keep the order obvious.
    default_stream: Arc<StreamInner>,
    limits: DeviceLimits,
    ordinal: usize,
    launches: AtomicU64,
    allocations: AtomicU64,
    /// The kernel launched last on any stream, for faults seen by a context-wide call.
    last_kernel: Mutex<Option<Arc<str>>>,
    /// Set once a stream that is not ordered with the legacy default stream has been made
    /// (another library's non-blocking stream): from then on the default stream's work is
    /// ordered by marks like any other stream's (`ordering.rs`).
    pub(crate) unordered_streams: std::sync::atomic::AtomicBool,
    pub(crate) backend: Backend,
}

/// One device: a GPU's primary CUDA context, or one instance of the CPU emulator.
///
/// Cheap to clone (an `Arc` inside); every buffer, stream, event and module keeps its context
/// alive.
///
/// ```
/// use cuprum_runtime::{BackendKind, CudaContext, DeviceBuffer, Error};
///
/// # fn main() -> cuprum_runtime::Result<()> {
/// // A GPU when there is one (`CUPRUM_DEVICE` unset means `auto`), else the emulator.
/// let ctx = CudaContext::new(0)?;
/// println!("running on {} ({})", ctx.limits().name, ctx.backend());
/// assert_eq!(ctx.limits().warp_size, 32);
///
/// // Objects of one context are refused by another, even on the same device.
/// let other = CudaContext::emulator();
/// assert_eq!(other.backend(), BackendKind::Emulator);
/// let buffer = DeviceBuffer::from_host(&ctx.default_stream(), &[1u32, 2, 3])?;
/// assert!(matches!(
///     buffer.to_host_vec(&other.default_stream()),
///     Err(Error::ContextMismatch)
/// ));
///
/// // Clones are the same context, with shared counters.
/// let clone = ctx.clone();
/// assert!(clone.same_context(&ctx));
/// assert_eq!(clone.stats().allocations, ctx.stats().allocations);
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct CudaContext {
    pub(crate) inner: Arc<ContextInner>,
}

impl fmt::Debug for CudaContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CudaContext")
            .field("backend", &self.backend())
            .field("ordinal", &self.inner.ordinal)
            .field("device", &self.inner.limits.name)
            .finish()
    }
}

impl CudaContext {
    /// Opens device `ordinal` on the backend `CUPRUM_DEVICE` selects (`auto` when unset): the
    /// GPU when there is one, else the CPU emulator (ordinals `0..CUPRUM_EMU_DEVICES`, one by
    /// default; [`device_count`] says how many there are).
    ///
    /// Each call makes a new context with its own counters (and, on the emulator, its own
    /// memory); buffers, streams and modules of one context are refused by another
    /// ([`Error::ContextMismatch`]), even when both use the same GPU. Clone a context to share
    /// it.
    pub fn new(ordinal: usize) -> Result<Self> {
        Self::with_selection(DeviceSelection::from_env()?, ordinal)
    }

    /// Opens device `ordinal` on an explicitly chosen backend selection.
    pub fn with_selection(selection: DeviceSelection, ordinal: usize) -> Result<Self> {
        match selection {
            DeviceSelection::Cuda => Self::cuda(ordinal),
            DeviceSelection::Emulator => Self::emulator_ordinal(ordinal),
            DeviceSelection::Auto => match Self::cuda(ordinal) {
                Ok(ctx) => Ok(ctx),
                Err(e) if e.is_no_gpu() && ordinal < emulator_device_count()? => {
                    announce_fallback(&e);
                    Self::emulator_ordinal(ordinal)
                }
                // Without a driver the emulator is the backend: past its devices, say so.
                Err(Error::NoDriver { .. }) => Self::emulator_ordinal(ordinal),
                Err(e) => Err(e),
            },
        }
    }

    fn emulator_ordinal(ordinal: usize) -> Result<Self> {
        let count = emulator_device_count()?;
        if ordinal < count {
            Ok(Self::from_backend(
                Backend::Emu(backend::emu::EmuDevice::new()),
                DeviceLimits::emulator(),
                ordinal,
            ))
        } else {
            Err(Error::NoDevice { ordinal, count })
        }
    }

    /// A fresh CPU emulator device (its own memory).
    pub fn emulator() -> Self {
        Self::from_backend(
            Backend::Emu(backend::emu::EmuDevice::new()),
            DeviceLimits::emulator(),
            0,
        )
    }

    /// GPU `ordinal` through the CUDA driver (its primary context). Errors, never panics,
    /// when there is no driver ([`Error::NoDriver`]) or no such device ([`Error::NoDevice`]).
    pub fn cuda(ordinal: usize) -> Result<Self> {
        let (device, limits) = backend::cuda::CudaDevice::open(ordinal)?;
        Ok(Self::from_backend(Backend::Cuda(device), limits, ordinal))
    }

    fn from_backend(backend: Backend, limits: DeviceLimits, ordinal: usize) -> Self {
        let default_stream = Arc::new(StreamInner {
            handle: backend.default_stream(),
            last_kernel: Mutex::new(None),
            recording: None,
            owner: None,
        });
        Self {
            inner: Arc::new(ContextInner {
                default_stream,
                limits,
                ordinal,
                launches: AtomicU64::new(0),
                allocations: AtomicU64::new(0),
                last_kernel: Mutex::new(None),
                unordered_streams: std::sync::atomic::AtomicBool::new(false),
                backend,
            }),
        }
    }

    /// Which backend runs this context's work.
    pub fn backend(&self) -> BackendKind {
        self.inner.backend.kind()
    }

    /// The device ordinal this context was opened with.
    pub fn ordinal(&self) -> usize {
        self.inner.ordinal
    }

    /// The device's limits, queried once at creation.
    pub fn limits(&self) -> &DeviceLimits {
        &self.inner.limits
    }

    /// Whether `other` is a handle to this same context.
    pub fn same_context(&self, other: &CudaContext) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// The context's default stream. On CUDA this is the legacy default stream, which is
    /// ordered with every stream made by [`new_stream`](Self::new_stream).
    pub fn default_stream(&self) -> Stream {
        Stream {
            inner: self.inner.default_stream.clone(),
            ctx: self.clone(),
        }
    }

    /// A new stream. On CUDA it is a blocking stream: ordered with the default stream, and
    /// with other streams only where their work shares a buffer (see [`Stream`]).
    pub fn new_stream(&self) -> Result<Stream> {
        let handle = self
            .inner
            .backend
            .new_stream()
            .map_err(|f| self.fail(f, None))?;
        Ok(self.stream_of(handle))
    }

    /// A new stream whose work the GPU schedules before lower-priority streams' pending work
    /// (lower numbers first, within [`stream_priority_range`](Self::stream_priority_range);
    /// the driver clamps others into it). Otherwise as [`new_stream`](Self::new_stream). On
    /// the emulator, where work runs when submitted, priorities change nothing.
    pub fn new_stream_with_priority(&self, priority: i32) -> Result<Stream> {
        let handle = self
            .inner
            .backend
            .new_stream_with_priority(priority)
            .map_err(|f| self.fail(f, None))?;
        Ok(self.stream_of(handle))
    }

    /// The device's stream priorities as `(least, greatest)`: the greatest is the lowest
    /// number (`(0, -5)` on an H200); `(0, 0)` on the emulator.
    pub fn stream_priority_range(&self) -> Result<(i32, i32)> {
        self.inner
            .backend
            .stream_priorities()
            .map_err(|f| self.fail(f, None))
    }

    fn stream_of(&self, handle: StreamHandle) -> Stream {
        Stream {
            inner: Arc::new(StreamInner {
                handle,
                last_kernel: Mutex::new(None),
                recording: None,
                owner: None,
            }),
            ctx: self.clone(),
        }
    }

    /// A stream that records into `recording` what may be recorded and refuses the rest.
    pub(crate) fn recording_stream(&self, recording: Arc<Recording>) -> Stream {
        Stream {
            inner: Arc::new(StreamInner {
                handle: StreamHandle::Recording,
                last_kernel: Mutex::new(None),
                recording: Some(recording),
                owner: None,
            }),
            ctx: self.clone(),
        }
    }

    /// Waits for all work on every stream of this context.
    pub fn synchronize(&self) -> Result<()> {
        self.inner
            .backend
            .synchronize()
            .map_err(|f| self.fail(f, None))
    }

    /// Launch and allocation counters of this context.
    pub fn stats(&self) -> RuntimeStats {
        RuntimeStats {
            launches: self.inner.launches.load(Ordering::Relaxed),
            allocations: self.inner.allocations.load(Ordering::Relaxed),
        }
    }

    pub(crate) fn count_launch(&self) {
        self.inner.launches.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn count_allocation(&self) {
        self.inner.allocations.fetch_add(1, Ordering::Relaxed);
    }

    /// Records `kernel` as the last one launched on `stream` (and on the context).
    pub(crate) fn note_launch(&self, stream: &Stream, kernel: &Arc<str>) {
        if let Ok(mut last) = stream.inner.last_kernel.lock() {
            *last = Some(kernel.clone());
        }
        if let Ok(mut last) = self.inner.last_kernel.lock() {
            *last = Some(kernel.clone());
        }
    }

    /// Turns a failed backend operation into an [`Error`]; driver faults name the last kernel
    /// launched on `stream` (or on the context when there is no stream, or nothing ran on
    /// it).
    pub(crate) fn fail(&self, failure: Failure, stream: Option<&Stream>) -> Error {
        let failure = match failure {
            Failure::Driver(failure) => failure,
            Failure::Error(error) | Failure::Ran(error) => return error,
        };
        let from_stream =
            stream.and_then(|s| s.inner.last_kernel.lock().ok().and_then(|g| g.clone()));
        let last =
            from_stream.or_else(|| self.inner.last_kernel.lock().ok().and_then(|g| g.clone()));
        failure.into_error(last.as_deref())
    }

    pub(crate) fn check_same(&self, other: &CudaContext) -> Result<()> {
        if self.same_context(other) {
            Ok(())
        } else {
            Err(Error::ContextMismatch)
        }
    }
}

fn announce_fallback(reason: &Error) {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let why = match reason {
            Error::NoDriver { .. } => {
                "no CUDA driver library (libcuda.so) could be loaded".to_owned()
            }
            Error::NoDevice { count: 0, .. } => "the CUDA driver reports no device".to_owned(),
            Error::NoDevice { ordinal, count } => {
                format!("no device with ordinal {ordinal}, {count} present")
            }
            other => other.to_string(),
        };
        eprintln!("cuprum: no CUDA GPU found ({why}); running kernels on the CPU emulator");
    });
}

pub(crate) struct StreamInner {
    pub(crate) handle: StreamHandle,
    /// The kernel launched last on this stream, named in fault messages.
    last_kernel: Mutex<Option<Arc<str>>>,
    /// What the stream records, when it is a graph's recording stream (`graph.rs`).
    recording: Option<Arc<Recording>>,
    /// What keeps another library's stream alive while this one may use it
    /// ([`Stream::from_raw_cuda`]); dropped after the handle, which does not destroy it.
    /// Asserted unwind-safe so that a `Stream` stays one: cuprum only keeps the value and
    /// hands it back by shared reference (`Stream::owner`), never mutates it.
    pub(crate) owner: Option<std::panic::AssertUnwindSafe<Box<dyn std::any::Any + Send + Sync>>>,
}

impl StreamInner {
    /// Another library's stream (`crate::foreign`), kept alive by `owner`.
    pub(crate) fn foreign(
        handle: StreamHandle,
        owner: Option<Box<dyn std::any::Any + Send + Sync>>,
    ) -> Self {
        Self {
            handle,
            last_kernel: Mutex::new(None),
            recording: None,
            owner: owner.map(std::panic::AssertUnwindSafe),
        }
    }
}

/// An ordered queue of device work. Cheap to clone (clones are the same stream).
///
/// Work on different streams is ordered where it shares a buffer: a kernel or copy that reads
/// a buffer waits, on the device, for the unfinished work of other streams that wrote it, and
/// one that writes it also for their unfinished reads; work on independent buffers overlaps.
/// The default stream is ordered with every stream. So safe code never reads stale results
/// or overwrites a buffer a kernel on another stream is still reading.
///
/// On the emulator, every operation runs to completion when it is submitted, which trivially
/// keeps the order.
///
/// Work on one stream runs in submission order; [`Event`]s recorded on it time that work:
///
/// ```
/// use cuprum_runtime::{CudaContext, DeviceBuffer};
///
/// # fn main() -> cuprum_runtime::Result<()> {
/// let ctx = CudaContext::new(0)?;
/// let stream = ctx.new_stream()?;
/// assert!(!stream.is_default() && ctx.default_stream().is_default());
///
/// let start = stream.record_event()?;
/// let a = DeviceBuffer::from_host(&stream, &vec![7u64; 1 << 16])?;
/// let mut b = DeviceBuffer::<u64>::zeroed(&stream, a.len())?;
/// b.copy_from_device(&stream, &a)?;
/// let end = stream.record_event()?;
///
/// stream.synchronize()?;
/// assert!(start.elapsed_ms(&end)? >= 0.0);
/// assert!(b.to_host_vec(&stream)?.iter().all(|&v| v == 7));
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Stream {
    // Declared before `ctx` so that the stream is destroyed while its context is still alive.
    pub(crate) inner: Arc<StreamInner>,
    ctx: CudaContext,
}

impl fmt::Debug for Stream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Stream")
            .field("context", &self.ctx)
            .field("default", &self.is_default())
            .finish()
    }
}

impl Stream {
    /// A stream of `ctx` with this shared state (`crate::foreign`).
    pub(crate) fn from_parts(inner: Arc<StreamInner>, ctx: CudaContext) -> Self {
        Self { inner, ctx }
    }

    /// Waits until all work submitted to this stream has finished.
    pub fn synchronize(&self) -> Result<()> {
        self.ctx
            .inner
            .backend
            .stream_synchronize(&self.inner.handle)
            .map_err(|f| self.ctx.fail(f, Some(self)))
    }

    /// The context this stream belongs to.
    pub fn context(&self) -> &CudaContext {
        &self.ctx
    }

    /// The device this stream runs on: its context, which is the device's in cuprum (one
    /// context per device), so `stream.device().ordinal()` is the device's ordinal as in
    /// cuTile Rust.
    pub fn device(&self) -> &CudaContext {
        &self.ctx
    }

    /// Whether this is its context's default stream.
    pub fn is_default(&self) -> bool {
        Arc::ptr_eq(&self.inner, &self.ctx.inner.default_stream)
    }

    /// Whether work on this stream is ordered with the work of every other stream of the
    /// context without marks: the default stream, while every stream of the context is a
    /// blocking stream (see `ordering.rs`).
    pub(crate) fn ordered_with_all(&self) -> bool {
        self.is_default()
            && !self
                .ctx
                .inner
                .unordered_streams
                .load(std::sync::atomic::Ordering::Acquire)
    }

    /// Whether `other` is this same stream.
    pub fn same_stream(&self, other: &Stream) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// Records an event at the current end of the stream.
    pub fn record_event(&self) -> Result<Event> {
        let handle = self
            .ctx
            .inner
            .backend
            .record_event(&self.inner.handle)
            .map_err(|f| self.ctx.fail(f, Some(self)))?;
        Ok(Event {
            handle,
            ctx: self.ctx.clone(),
        })
    }

    /// Makes all work submitted to this stream from now on wait, on the device, until the
    /// work before `event` (recorded on any stream of the same context) has finished; the
    /// host does not wait. [`Error::ContextMismatch`] for an event of another context.
    pub fn wait(&self, event: &Event) -> Result<()> {
        self.ctx.check_same(&event.ctx)?;
        self.ctx
            .inner
            .backend
            .wait_event(&self.inner.handle, &event.handle)
            .map_err(|f| self.ctx.fail(f, Some(self)))
    }

    /// Makes this stream's later work wait for the work submitted to `other` so far (a join
    /// of two branches of work): `self.wait(&other.record_event()?)`.
    pub fn join(&self, other: &Stream) -> Result<()> {
        self.wait(&other.record_event()?)
    }

    /// A new stream of the same context whose work starts after the work submitted to this
    /// one so far (a fork): work on the two then runs concurrently until a
    /// [`join`](Self::join).
    pub fn fork(&self) -> Result<Stream> {
        let branch = self.ctx.new_stream()?;
        branch.join(self)?;
        Ok(branch)
    }

    /// Whether this stream records a graph ([`crate::Graph::capture`] hands one to its
    /// closure) rather than running work.
    pub fn is_recording(&self) -> bool {
        self.inner.recording.is_some()
    }

    /// What this stream records, when it is a graph's recording stream.
    pub(crate) fn recording(&self) -> Option<&Recording> {
        self.inner.recording.as_deref()
    }

    /// The backend's handle of this stream.
    pub(crate) fn handle(&self) -> &StreamHandle {
        &self.inner.handle
    }
}

/// A point in a stream, for waiting and timing. On the emulator it is the host time at which
/// it was recorded (work there runs when submitted).
pub struct Event {
    // Declared before `ctx` so that the event is destroyed while its context is alive.
    handle: EventHandle,
    ctx: CudaContext,
}

impl fmt::Debug for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Event").field("context", &self.ctx).finish()
    }
}

impl Event {
    /// Waits until the work before the event has finished.
    pub fn synchronize(&self) -> Result<()> {
        self.ctx
            .inner
            .backend
            .event_synchronize(&self.handle)
            .map_err(|f| self.ctx.fail(f, None))
    }

    /// Whether the work before the event has finished, without waiting (a fault of that work
    /// is the error).
    pub fn is_complete(&self) -> Result<bool> {
        self.ctx
            .inner
            .backend
            .event_complete(&self.handle)
            .map_err(|f| self.ctx.fail(f, None))
    }

    /// Milliseconds from this event to `later` (waits for both to complete first).
    pub fn elapsed_ms(&self, later: &Event) -> Result<f32> {
        self.ctx.check_same(&later.ctx)?;
        self.ctx
            .inner
            .backend
            .elapsed_ms(&self.handle, &later.handle)
            .map_err(|f| self.ctx.fail(f, None))
    }

    /// The context the event belongs to.
    pub fn context(&self) -> &CudaContext {
        &self.ctx
    }
}
