//! The seam between the runtime's public objects and the devices that run their work.
//!
//! [`Device`] lists every operation a backend provides: streams and events, memory
//! (allocate, free, zero, copy in, out and across), order marks between streams (also asked,
//! without waiting, whether the work before them has completed), loading a
//! module and launching a kernel. It is implemented once for the CUDA driver
//! ([`cuda::CudaDevice`]) and once for the CPU emulator ([`emu::EmuDevice`]). [`Backend`] is
//! the one place that picks between them: each of its methods forwards to the device a
//! context was opened on, with the handles (streams, events, modules) of that same device,
//! so `context`, `buffer`, `launch` and `ordering` never match on a backend themselves.
//!
//! The forwarding methods are also where every launch and copy passes once, so they push the
//! NVTX ranges a profiler shows them by (`crate::nvtx`).
//!
//! Failures come back as [`Failure`]: a driver failure stays raw until the context turns it
//! into an [`Error`] that names the kernel last launched on the stream (`CudaContext::fail`);
//! everything else is already an [`Error`].

pub(crate) mod cuda;
pub(crate) mod emu;

use std::ffi::c_void;
use std::fmt;
use std::sync::Arc;

use cuprum_ir::Kernel;

use crate::cache::ModuleRoute;
use crate::cache::occupancy::KernelUse;
use crate::config::{KernelArg, LaunchConfig};
use crate::error::Error;
use crate::graph::GraphOp;
use crate::limits::DeviceLimits;
use crate::nvtx::{self, Direction};

/// A failed backend operation, before the context names the kernel a fault belongs to.
#[derive(Debug)]
pub(crate) enum Failure {
    /// A CUDA driver call failed; faults among these are reported late, so the context
    /// names the kernel launched last.
    Driver(cuda::CuFail),
    /// A failure already described (emulator errors, refused launches, bad modules).
    Error(Error),
    /// A launch that ran and then failed (the emulator runs a kernel during the call): it
    /// counts as launched.
    Ran(Error),
}

impl From<Error> for Failure {
    fn from(error: Error) -> Self {
        Self::Error(error)
    }
}

impl From<cuda::CuFail> for Failure {
    fn from(failure: cuda::CuFail) -> Self {
        Self::Driver(failure)
    }
}

/// The result of a backend operation.
pub(crate) type Outcome<T> = Result<T, Failure>;

/// Which backend a context runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BackendKind {
    /// An NVIDIA GPU through the CUDA driver.
    Cuda,
    /// The CPU emulator (`cuprum-emu`).
    Emulator,
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Cuda => "cuda",
            Self::Emulator => "emu",
        })
    }
}

/// The names of a module's kernels, for messages.
pub(crate) fn module_label(ir: &cuprum_ir::Module) -> String {
    let names: Vec<&str> = ir.kernels.iter().map(|k| k.name.as_str()).collect();
    if names.is_empty() {
        "<empty module>".to_owned()
    } else {
        names.join(", ")
    }
}

/// Where the PTX a CUDA module load compiles comes from (the emulator runs the IR).
pub(crate) enum PtxText {
    /// The PTX writer makes it from the IR.
    FromIr,
    /// What the PTX writer made of this IR for `target`, kept by the caller (the tile JIT
    /// cache keeps it with the IR, so a warm process does not write it again); used when
    /// `target` is the device's, else written again.
    Written {
        target: cuprum_ptx::Target,
        ptx: String,
    },
    /// Other PTX, loaded instead (tools and runtime tests); never cached per kernel.
    Override(String),
}

/// What a module load needs besides the IR.
pub(crate) struct LoadRequest<'a> {
    /// The device's limits (its compute capability picks the PTX target).
    pub(crate) limits: &'a DeviceLimits,
    /// Where the PTX comes from.
    pub(crate) ptx: PtxText,
    /// How the CUDA driver compiles the module (the emulator ignores it).
    pub(crate) route: &'a ModuleRoute,
}

/// The kernel a launch runs, as the backends need it.
pub(crate) struct LaunchTarget<'a> {
    /// Its index in its module.
    pub(crate) index: usize,
    /// Its IR (what the emulator runs; the CUDA backend takes its name and parameters).
    pub(crate) ir: &'a Kernel,
    /// Bytes of static shared memory it declares.
    pub(crate) static_shared_bytes: u32,
}

/// The operations every backend implements; the rest of the runtime reaches them through
/// [`Backend`].
pub(crate) trait Device: Send + Sync {
    /// A queue of work.
    type Stream: Send + Sync;
    /// A recorded point in a stream, for waiting and timing.
    type Event: Send + Sync;
    /// A point recorded for other streams to wait for.
    type Mark: Send + Sync;
    /// A loaded module.
    type Module: Send + Sync;

    /// The stream every other stream is ordered with.
    fn default_stream(&self) -> Self::Stream;
    /// A new stream, ordered with the default stream.
    fn new_stream(&self) -> Outcome<Self::Stream>;
    /// Waits for all work of every stream.
    fn synchronize(&self) -> Outcome<()>;
    /// Waits for all work of one stream.
    fn stream_synchronize(&self, stream: &Self::Stream) -> Outcome<()>;
    /// A new stream of `priority` (lower numbers first), ordered with the default stream.
    fn new_stream_with_priority(&self, priority: i32) -> Outcome<Self::Stream>;
    /// The stream priorities the device has: (least, greatest); `(0, 0)` where there are none.
    fn stream_priorities(&self) -> Outcome<(i32, i32)>;
    /// Records an event at the end of `stream`.
    fn record_event(&self, stream: &Self::Stream) -> Outcome<Self::Event>;
    /// Makes `stream` wait, on the device, for the work before `event`.
    fn wait_event(&self, stream: &Self::Stream, event: &Self::Event) -> Outcome<()>;
    /// Whether the work before `event` has completed, without waiting.
    fn event_complete(&self, event: &Self::Event) -> Outcome<bool>;
    /// Waits for the work before `event`.
    fn event_synchronize(&self, event: &Self::Event) -> Outcome<()>;
    /// Milliseconds from `earlier` to `later`, both complete.
    fn elapsed_ms(&self, earlier: &Self::Event, later: &Self::Event) -> Outcome<f32>;
    /// A mark at the end of `stream` for other streams to wait for; `None` where work
    /// completes when it is submitted (the emulator).
    fn order_mark(&self, stream: &Self::Stream) -> Outcome<Option<Self::Mark>>;
    /// Makes `stream` wait, on the device, for the work before `mark`.
    fn wait_mark(&self, stream: &Self::Stream, mark: &Self::Mark) -> Outcome<()>;
    /// Whether the work before `mark` has completed, without waiting; a fault of that work
    /// is a failure.
    fn mark_complete(&self, mark: &Self::Mark) -> Outcome<bool>;

    /// Allocates `bytes` (> 0) bytes, usable by the work submitted to `stream` from now on
    /// (other streams wait for the allocation through the buffer's order mark).
    fn alloc(&self, stream: &Self::Stream, bytes: usize) -> Outcome<u64>;
    /// Frees an allocation once the work before each of `after` and all earlier work of the
    /// default stream has finished, without waiting and without ordering other streams after
    /// it (errors are ignored: it runs in `Drop`).
    fn free(&self, addr: u64, after: &[&Self::Mark]);
    /// Sets `bytes` bytes at `addr` to zero, ordered on `stream`.
    fn zero(&self, stream: &Self::Stream, addr: u64, bytes: usize) -> Outcome<()>;
    /// Copies `data` to `addr` after the work on `stream`, complete when this returns.
    ///
    /// # Safety
    /// `addr..addr + data.len()` is inside a live allocation of this device.
    unsafe fn write(&self, stream: &Self::Stream, addr: u64, data: &[u8]) -> Outcome<()>;
    /// Copies from `addr` into `out` after the work on `stream`, complete when this returns
    /// (an empty `out` still waits for the stream).
    ///
    /// # Safety
    /// `addr..addr + out.len()` is inside a live allocation of this device.
    unsafe fn read(&self, stream: &Self::Stream, addr: u64, out: &mut [u8]) -> Outcome<()>;
    /// Copies `bytes` bytes from `src` to `dst`, ordered on `stream`.
    ///
    /// # Safety
    /// Both ranges are inside live allocations of this device.
    unsafe fn copy(&self, stream: &Self::Stream, dst: u64, src: u64, bytes: usize) -> Outcome<()>;
    /// Page-locked host memory of `bytes` (> 0) bytes, which copies fill while the host goes
    /// on; `None` where copies are done when they are submitted (the emulator), so that a
    /// read needs none.
    fn alloc_pinned(&self, bytes: usize) -> Outcome<Option<u64>>;
    /// Frees what [`alloc_pinned`](Self::alloc_pinned) gave (errors are ignored: it runs in
    /// `Drop`).
    fn free_pinned(&self, ptr: u64);
    /// Enqueues a copy of `bytes` bytes from `addr` into the host memory at `dst`, after the
    /// work on `stream`, and returns without waiting for it (the emulator copies at once).
    ///
    /// # Safety
    /// `addr..addr + bytes` is inside a live allocation of this device; `dst..dst + bytes` is
    /// host memory from [`alloc_pinned`](Self::alloc_pinned) (any writable host memory on the
    /// emulator) that nothing reads, writes or frees until the stream's work up to this copy
    /// has completed.
    unsafe fn read_async(
        &self,
        stream: &Self::Stream,
        addr: u64,
        dst: u64,
        bytes: usize,
    ) -> Outcome<()>;
    /// Enqueues a copy of `bytes` bytes from the host memory at `src` to `addr`, after the
    /// work on `stream`, and returns without waiting for it (the emulator copies at once).
    ///
    /// # Safety
    /// `addr..addr + bytes` is inside a live allocation of this device; `src..src + bytes` is
    /// host memory from [`alloc_pinned`](Self::alloc_pinned) (any readable host memory on the
    /// emulator) that nothing writes or frees until the stream's work up to this copy has
    /// completed.
    unsafe fn write_async(
        &self,
        stream: &Self::Stream,
        addr: u64,
        src: u64,
        bytes: usize,
    ) -> Outcome<()>;

    /// Makes a module of `ir` ready to launch; also returns the cubin when the request's route
    /// made one.
    fn load(
        &self,
        ir: &Arc<cuprum_ir::Module>,
        request: LoadRequest<'_>,
    ) -> Result<(Self::Module, Option<Vec<u8>>), Error>;
    /// What the device gave kernel `index` (registers, local memory, largest block), when it
    /// says.
    fn resources(&self, module: &Self::Module, index: usize) -> Option<KernelUse>;
    /// The PTX text the module was loaded from, where there is one.
    fn ptx(module: &Self::Module) -> Option<&str>;
    /// What the device's compiler wrote about the module when this process compiled it
    /// (warnings and notes; empty when it loaded without compiling or there is none).
    fn compile_log(module: &Self::Module) -> &str;
    /// Launches a kernel whose arguments and configuration have been checked.
    ///
    /// # Safety
    /// Every slice argument is inside a live allocation of this device whose element type
    /// is the parameter's, and the kernel's accesses stay within what it was given.
    unsafe fn launch(
        &self,
        module: &Self::Module,
        stream: &Self::Stream,
        kernel: &LaunchTarget<'_>,
        config: &LaunchConfig,
        args: &[KernelArg],
    ) -> Outcome<()>;
}

/// The device a context was opened on.
pub(crate) enum Backend {
    Cuda(cuda::CudaDevice),
    Emu(emu::EmuDevice),
}

/// A stream of one of the devices.
pub(crate) enum StreamHandle {
    Cuda(<cuda::CudaDevice as Device>::Stream),
    Emu(<emu::EmuDevice as Device>::Stream),
    /// A graph's recording stream (`graph.rs`): no work reaches a device through it. What may
    /// be recorded is intercepted before the backend; everything else is refused here.
    Recording,
}

/// The error for handles that do not go together: a recording stream, or objects of two
/// contexts.
fn mismatched(recording: bool) -> Failure {
    Failure::Error(if recording {
        Error::Unsupported {
            what: "this operation on a graph's recording stream, which records kernel launches \
                   and device-to-device copies only: allocate, copy to or from the host, wait \
                   and synchronize on a stream of the context, before the capture or after a \
                   launch of the graph"
                .to_owned(),
        }
    } else {
        Error::ContextMismatch
    })
}

/// Whether a handle is a graph's recording stream (only streams can be).
trait Recordable {
    fn is_recording(&self) -> bool {
        false
    }
}

impl Recordable for StreamHandle {
    fn is_recording(&self) -> bool {
        matches!(self, Self::Recording)
    }
}

impl Recordable for EventHandle {}
impl Recordable for MarkHandle {}
impl Recordable for ModuleHandle {}

/// An instantiated graph of one of the devices (`graph.rs`): the emulator replays the
/// recorded operations themselves, so it needs none.
pub(crate) enum GraphHandle {
    Cuda(cuda::CudaGraphExec),
    Emu,
}

/// An event of one of the devices.
pub(crate) enum EventHandle {
    Cuda(<cuda::CudaDevice as Device>::Event),
    Emu(<emu::EmuDevice as Device>::Event),
}

/// An order mark of one of the devices.
pub(crate) enum MarkHandle {
    Cuda(<cuda::CudaDevice as Device>::Mark),
    Emu(<emu::EmuDevice as Device>::Mark),
}

/// A module loaded on one of the devices.
pub(crate) enum ModuleHandle {
    Cuda(<cuda::CudaDevice as Device>::Module),
    Emu(<emu::EmuDevice as Device>::Module),
}

/// Runs `$body` with the device and a handle of the same backend bound to `$d` and each
/// `$h`; handles of the other backend (objects of another context) are a context mismatch.
macro_rules! same_backend {
    ($backend:expr, $(($handle:expr, $Handle:ident, $h:ident)),+ => |$d:ident| $body:expr) => {
        match ($backend, $($handle),+) {
            (Backend::Cuda($d), $($Handle::Cuda($h)),+) => $body,
            (Backend::Emu($d), $($Handle::Emu($h)),+) => $body,
            #[allow(unreachable_patterns)]
            _ => Err(mismatched(false $(|| $handle.is_recording())+)),
        }
    };
}

impl Backend {
    /// Which backend this is.
    pub(crate) fn kind(&self) -> BackendKind {
        match self {
            Self::Cuda(_) => BackendKind::Cuda,
            Self::Emu(_) => BackendKind::Emulator,
        }
    }

    pub(crate) fn default_stream(&self) -> StreamHandle {
        match self {
            Self::Cuda(d) => StreamHandle::Cuda(d.default_stream()),
            Self::Emu(d) => StreamHandle::Emu(d.default_stream()),
        }
    }

    pub(crate) fn new_stream(&self) -> Outcome<StreamHandle> {
        match self {
            Self::Cuda(d) => d.new_stream().map(StreamHandle::Cuda),
            Self::Emu(d) => d.new_stream().map(StreamHandle::Emu),
        }
    }

    pub(crate) fn new_stream_with_priority(&self, priority: i32) -> Outcome<StreamHandle> {
        match self {
            Self::Cuda(d) => d.new_stream_with_priority(priority).map(StreamHandle::Cuda),
            Self::Emu(d) => d.new_stream_with_priority(priority).map(StreamHandle::Emu),
        }
    }

    pub(crate) fn stream_priorities(&self) -> Outcome<(i32, i32)> {
        match self {
            Self::Cuda(d) => Device::stream_priorities(d),
            Self::Emu(d) => Device::stream_priorities(d),
        }
    }

    pub(crate) fn wait_event(&self, stream: &StreamHandle, event: &EventHandle) -> Outcome<()> {
        same_backend!(self, (stream, StreamHandle, s), (event, EventHandle, e) => |d| d.wait_event(s, e))
    }

    pub(crate) fn event_complete(&self, event: &EventHandle) -> Outcome<bool> {
        same_backend!(self, (event, EventHandle, e) => |d| d.event_complete(e))
    }

    pub(crate) fn synchronize(&self) -> Outcome<()> {
        match self {
            Self::Cuda(d) => d.synchronize(),
            Self::Emu(d) => d.synchronize(),
        }
    }

    pub(crate) fn stream_synchronize(&self, stream: &StreamHandle) -> Outcome<()> {
        same_backend!(self, (stream, StreamHandle, s) => |d| d.stream_synchronize(s))
    }

    pub(crate) fn record_event(&self, stream: &StreamHandle) -> Outcome<EventHandle> {
        match (self, stream) {
            (Self::Cuda(d), StreamHandle::Cuda(s)) => d.record_event(s).map(EventHandle::Cuda),
            (Self::Emu(d), StreamHandle::Emu(s)) => d.record_event(s).map(EventHandle::Emu),
            _ => Err(mismatched(stream.is_recording())),
        }
    }

    pub(crate) fn event_synchronize(&self, event: &EventHandle) -> Outcome<()> {
        same_backend!(self, (event, EventHandle, e) => |d| d.event_synchronize(e))
    }

    pub(crate) fn elapsed_ms(&self, earlier: &EventHandle, later: &EventHandle) -> Outcome<f32> {
        same_backend!(
            self, (earlier, EventHandle, a), (later, EventHandle, b) => |d| d.elapsed_ms(a, b)
        )
    }

    pub(crate) fn order_mark(&self, stream: &StreamHandle) -> Outcome<Option<MarkHandle>> {
        match (self, stream) {
            (Self::Cuda(d), StreamHandle::Cuda(s)) => {
                d.order_mark(s).map(|m| m.map(MarkHandle::Cuda))
            }
            (Self::Emu(d), StreamHandle::Emu(s)) => d.order_mark(s).map(|m| m.map(MarkHandle::Emu)),
            _ => Err(mismatched(stream.is_recording())),
        }
    }

    pub(crate) fn wait_mark(&self, stream: &StreamHandle, mark: &MarkHandle) -> Outcome<()> {
        same_backend!(
            self, (stream, StreamHandle, s), (mark, MarkHandle, m) => |d| d.wait_mark(s, m)
        )
    }

    pub(crate) fn mark_complete(&self, mark: &MarkHandle) -> Outcome<bool> {
        same_backend!(self, (mark, MarkHandle, m) => |d| d.mark_complete(m))
    }

    pub(crate) fn alloc(&self, stream: &StreamHandle, bytes: usize) -> Outcome<u64> {
        same_backend!(self, (stream, StreamHandle, s) => |d| d.alloc(s, bytes))
    }

    /// Frees `addr` after the work before `after` (marks of this backend; others are
    /// ignored: they cannot be).
    pub(crate) fn free(&self, addr: u64, after: &[&MarkHandle]) {
        match self {
            Self::Cuda(d) => {
                let marks: Vec<_> = after
                    .iter()
                    .filter_map(|m| match m {
                        MarkHandle::Cuda(m) => Some(m),
                        MarkHandle::Emu(_) => None,
                    })
                    .collect();
                d.free(addr, &marks);
            }
            Self::Emu(d) => d.free(addr, &[]),
        }
    }

    pub(crate) fn zero(&self, stream: &StreamHandle, addr: u64, bytes: usize) -> Outcome<()> {
        same_backend!(self, (stream, StreamHandle, s) => |d| d.zero(s, addr, bytes))
    }

    /// # Safety
    /// As [`Device::write`].
    pub(crate) unsafe fn write(
        &self,
        stream: &StreamHandle,
        addr: u64,
        data: &[u8],
    ) -> Outcome<()> {
        let _range = nvtx::copy(Direction::HostToDevice, data.len());
        // SAFETY: the caller's contract.
        same_backend!(self, (stream, StreamHandle, s) => |d| unsafe { d.write(s, addr, data) })
    }

    /// # Safety
    /// As [`Device::read`].
    pub(crate) unsafe fn read(
        &self,
        stream: &StreamHandle,
        addr: u64,
        out: &mut [u8],
    ) -> Outcome<()> {
        let _range = nvtx::copy(Direction::DeviceToHost, out.len());
        // SAFETY: the caller's contract.
        same_backend!(self, (stream, StreamHandle, s) => |d| unsafe { d.read(s, addr, out) })
    }

    /// # Safety
    /// As [`Device::copy`].
    pub(crate) unsafe fn copy(
        &self,
        stream: &StreamHandle,
        dst: u64,
        src: u64,
        bytes: usize,
    ) -> Outcome<()> {
        let _range = nvtx::copy(Direction::DeviceToDevice, bytes);
        // SAFETY: the caller's contract.
        same_backend!(self, (stream, StreamHandle, s) => |d| unsafe { d.copy(s, dst, src, bytes) })
    }

    pub(crate) fn alloc_pinned(&self, bytes: usize) -> Outcome<Option<u64>> {
        match self {
            Self::Cuda(d) => d.alloc_pinned(bytes),
            Self::Emu(d) => d.alloc_pinned(bytes),
        }
    }

    pub(crate) fn free_pinned(&self, ptr: u64) {
        match self {
            Self::Cuda(d) => d.free_pinned(ptr),
            Self::Emu(d) => d.free_pinned(ptr),
        }
    }

    /// # Safety
    /// As [`Device::read_async`].
    pub(crate) unsafe fn read_async(
        &self,
        stream: &StreamHandle,
        addr: u64,
        dst: u64,
        bytes: usize,
    ) -> Outcome<()> {
        let _range = nvtx::copy(Direction::DeviceToHost, bytes);
        // SAFETY: the caller's contract.
        same_backend!(self, (stream, StreamHandle, s) => |d| unsafe { d.read_async(s, addr, dst, bytes) })
    }

    /// # Safety
    /// As [`Device::write_async`].
    pub(crate) unsafe fn write_async(
        &self,
        stream: &StreamHandle,
        addr: u64,
        src: u64,
        bytes: usize,
    ) -> Outcome<()> {
        let _range = nvtx::copy(Direction::HostToDevice, bytes);
        // SAFETY: the caller's contract.
        same_backend!(self, (stream, StreamHandle, s) => |d| unsafe { d.write_async(s, addr, src, bytes) })
    }

    pub(crate) fn load(
        &self,
        ir: &Arc<cuprum_ir::Module>,
        request: LoadRequest<'_>,
    ) -> Result<(ModuleHandle, Option<Vec<u8>>), Error> {
        match self {
            Self::Cuda(d) => d
                .load(ir, request)
                .map(|(m, cubin)| (ModuleHandle::Cuda(m), cubin)),
            Self::Emu(d) => d
                .load(ir, request)
                .map(|(m, cubin)| (ModuleHandle::Emu(m), cubin)),
        }
    }

    pub(crate) fn resources(&self, module: &ModuleHandle, index: usize) -> Option<KernelUse> {
        match (self, module) {
            (Self::Cuda(d), ModuleHandle::Cuda(m)) => d.resources(m, index),
            (Self::Emu(d), ModuleHandle::Emu(m)) => d.resources(m, index),
            _ => None,
        }
    }

    /// # Safety
    /// As [`Device::launch`].
    pub(crate) unsafe fn launch(
        &self,
        module: &ModuleHandle,
        stream: &StreamHandle,
        kernel: &LaunchTarget<'_>,
        config: &LaunchConfig,
        args: &[KernelArg],
    ) -> Outcome<()> {
        let _range = nvtx::kernel(&kernel.ir.name);
        same_backend!(
            self, (module, ModuleHandle, m), (stream, StreamHandle, s) =>
            // SAFETY: the caller's contract.
            |d| unsafe { d.launch(m, s, kernel, config, args) }
        )
    }
}

impl Backend {
    /// Makes the recorded `ops` one executable graph (the emulator keeps none).
    pub(crate) fn instantiate_graph(&self, ops: &[GraphOp]) -> Outcome<GraphHandle> {
        match self {
            Self::Cuda(d) => d.instantiate_graph(ops).map(GraphHandle::Cuda),
            Self::Emu(_) => Ok(GraphHandle::Emu),
        }
    }

    /// Updates `exec` in place to run `ops` instead; `false` where the device cannot (other
    /// kernels or another order), and the caller instantiates anew.
    pub(crate) fn update_graph(&self, exec: &GraphHandle, ops: &[GraphOp]) -> Outcome<bool> {
        match (self, exec) {
            (Self::Cuda(d), GraphHandle::Cuda(e)) => d.update_graph(e, ops),
            (Self::Emu(_), GraphHandle::Emu) => Ok(true),
            _ => Err(Failure::Error(Error::ContextMismatch)),
        }
    }

    /// Submits a replay of `exec`, whose recorded operations are `ops`, to `stream`.
    ///
    /// # Safety
    /// Every operation passed its launch's checks when recorded, and the memory and modules
    /// it uses are alive.
    pub(crate) unsafe fn launch_graph(
        &self,
        exec: &GraphHandle,
        ops: &[GraphOp],
        stream: &StreamHandle,
    ) -> Outcome<()> {
        let _range = nvtx::graph(ops.len());
        match (self, exec, stream) {
            // SAFETY: the caller's contract.
            (Self::Cuda(d), GraphHandle::Cuda(e), StreamHandle::Cuda(s)) => {
                Ok(d.launch_graph(e, s)?)
            }
            (Self::Emu(d), GraphHandle::Emu, StreamHandle::Emu(s)) => {
                for op in ops {
                    match op {
                        GraphOp::Launch { .. } => {
                            let Some(launch) = op.own_launch() else {
                                continue;
                            };
                            let (module, target, config, args) = launch?;
                            let ModuleHandle::Emu(m) = module else {
                                return Err(Failure::Error(Error::ContextMismatch));
                            };
                            // SAFETY: the caller's contract.
                            unsafe { d.launch(m, s, &target, config, args) }?;
                        }
                        // SAFETY: the caller's contract.
                        GraphOp::Copy { dst, src, bytes } => {
                            unsafe { d.copy(s, *dst, *src, *bytes) }?
                        }
                        GraphOp::External { name, .. } => {
                            return Err(Failure::Error(Error::Unsupported {
                                what: format!(
                                    "kernel `{name}` of a foreign module on the emulator"
                                ),
                            }));
                        }
                        GraphOp::HostWork {
                            name,
                            regions,
                            work,
                        } => d.host_work(name, regions, work)?,
                    }
                }
                Ok(())
            }
            _ => Err(mismatched(stream.is_recording())),
        }
    }
}

/// Handles of other libraries (`crate::foreign`): only the CUDA backend has any.
impl Backend {
    /// The refusal on the emulator, which has neither raw streams nor raw memory.
    fn no_foreign(what: &str) -> Error {
        Error::Unsupported {
            what: format!(
                "{what} on the CPU emulator, whose streams and memory are not CUDA's: run on a                  GPU (CUPRUM_DEVICE=cuda), or copy through the host"
            ),
        }
    }

    /// Wraps another library's stream `raw` (not null or `CU_STREAM_LEGACY`); whether it is
    /// ordered with the legacy default stream.
    pub(crate) fn borrow_stream(&self, raw: *mut c_void) -> Result<(StreamHandle, bool), Error> {
        match self {
            Self::Cuda(d) => d
                .borrow_stream(raw)
                .map(|(s, blocking)| (StreamHandle::Cuda(s), blocking)),
            Self::Emu(_) => Err(Self::no_foreign("wrapping a CUDA stream")),
        }
    }

    /// Whether this backend has raw CUDA handles at all ([`Error::Unsupported`] if not).
    pub(crate) fn borrow_stream_check(&self) -> Result<(), Error> {
        match self {
            Self::Cuda(_) => Ok(()),
            Self::Emu(_) => Err(Self::no_foreign("wrapping a CUDA stream or CUDA memory")),
        }
    }

    /// Makes `stream` wait for the legacy default stream's work so far.
    pub(crate) fn follow_legacy(&self, stream: &StreamHandle) -> Outcome<()> {
        match (self, stream) {
            (Self::Cuda(d), StreamHandle::Cuda(s)) => Ok(d.follow_legacy(s)?),
            _ => Ok(()),
        }
    }

    /// The raw `CUstream` of `stream` (null for the legacy default stream); `None` on the
    /// emulator and for recording streams.
    pub(crate) fn raw_stream(&self, stream: &StreamHandle) -> Option<*mut c_void> {
        match stream {
            StreamHandle::Cuda(s) => Some(s.raw()),
            _ => None,
        }
    }

    /// The raw `CUcontext`; `None` on the emulator.
    pub(crate) fn raw_context(&self) -> Option<*mut c_void> {
        match self {
            Self::Cuda(d) => Some(d.raw_context()),
            Self::Emu(_) => None,
        }
    }

    /// Checks, as far as the driver can, that `addr` is device memory of this device.
    pub(crate) fn check_device_memory(&self, addr: u64) -> Result<(), Error> {
        match self {
            Self::Cuda(d) => d.check_device_memory(addr),
            Self::Emu(_) => Err(Self::no_foreign(
                "wrapping device memory of another library",
            )),
        }
    }
}

/// A module cuprum did not write (`crate::external`): only the CUDA backend loads one.
pub(crate) enum ExternalHandle {
    Cuda(cuda::CudaModule),
}

/// A kernel of an [`ExternalHandle`].
pub(crate) enum ExternalFunction {
    Cuda(cuda::CudaFunction),
}

impl Backend {
    /// Loads PTX or a cubin from elsewhere; the emulator runs only cuprum's own IR, so there
    /// it is [`Error::Unsupported`].
    pub(crate) fn load_external(
        &self,
        image: crate::external::Image<'_>,
    ) -> Result<ExternalHandle, Error> {
        match self {
            Self::Cuda(d) => d.load_external(image).map(ExternalHandle::Cuda),
            Self::Emu(_) => Err(Error::Unsupported {
                what: format!(
                    "loading {} that cuprum did not compile on the emulator, which runs only \
                     cuprum's own kernels: run on a GPU (CUPRUM_DEVICE=cuda), or launch the \
                     kernel from its `#[cuda_module]`",
                    image.describe()
                ),
            }),
        }
    }

    /// # Safety
    /// As `CudaDevice::launch_external`.
    pub(crate) unsafe fn launch_external(
        &self,
        function: &ExternalFunction,
        stream: &StreamHandle,
        config: &LaunchConfig,
        params: &[Vec<u8>],
    ) -> Outcome<()> {
        match (self, function, stream) {
            // SAFETY: the caller's contract.
            (Self::Cuda(d), ExternalFunction::Cuda(f), StreamHandle::Cuda(s)) => unsafe {
                d.launch_external(f, s, config, params)
            },
            _ => Err(mismatched(stream.is_recording())),
        }
    }
}

impl ExternalHandle {
    /// Its kernel `name`.
    pub(crate) fn function(&self, name: &str) -> Result<ExternalFunction, Error> {
        match self {
            Self::Cuda(m) => m.function(name).map(ExternalFunction::Cuda),
        }
    }
}

impl ModuleHandle {
    /// The PTX text the module was loaded from (CUDA only).
    pub(crate) fn ptx(&self) -> Option<&str> {
        match self {
            Self::Cuda(m) => <cuda::CudaDevice as Device>::ptx(m),
            Self::Emu(m) => <emu::EmuDevice as Device>::ptx(m),
        }
    }

    /// What the device's compiler wrote about the module ([`Device::compile_log`]).
    pub(crate) fn compile_log(&self) -> &str {
        match self {
            Self::Cuda(m) => <cuda::CudaDevice as Device>::compile_log(m),
            Self::Emu(m) => <emu::EmuDevice as Device>::compile_log(m),
        }
    }
}
