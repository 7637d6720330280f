//! Graphs: a sequence of kernel launches and device-to-device copies recorded once and then
//! replayed, each replay one submission (a CUDA graph on a GPU: one `cuGraphLaunch` instead of
//! a launch per kernel).
//!
//! [`Graph::capture`] hands its closure a *recording* stream of the context. Kernel launches
//! (typed, iterator, tile and raw ones all end in `LoadedModule::launch` or an external
//! `Function::launch`) and `DeviceBuffer::copy_from_device` on it are checked as always and
//! then recorded instead of run; everything else on it (allocating, copying to or from the
//! host, waiting, synchronizing) is refused with [`Error::Unsupported`], because a replay
//! could not repeat it. On the GPU the recorded operations are then submitted once to a
//! private stream in capture mode and instantiated; on the emulator a replay runs them in
//! order.
//!
//! Why replays are sound:
//! * **Memory stays.** The graph holds every buffer's memory it uses (`ordering::Memory`), so
//!   dropping a buffer while a graph that writes it lives frees nothing; the memory goes when
//!   both are gone, after its last use. The modules of its kernels stay loaded likewise.
//! * **Replays are ordered like launches.** A replay is one operation that reads and writes
//!   the buffers the recorded operations read and write: it waits for their unfinished uses
//!   on other streams and later work waits for it (`ordering::hold`, which also keeps a
//!   replay on one thread and a use of the same buffer on another apart, since the graph
//!   aliases memory whose owner may use it meanwhile).
//! * **Within a replay** the operations run one after another in recorded order, as on one
//!   stream, each with the launch-time checks it passed when recorded.

use std::any::Any;
use std::fmt;
use std::sync::{Arc, Mutex};

use crate::backend::{ExternalFunction, GraphHandle, LaunchTarget, ModuleHandle};
use crate::config::{KernelArg, LaunchConfig};
use crate::context::{CudaContext, Stream};
use crate::error::{Error, Result};
use crate::ordering::{self, Access, Memory};

/// One recorded operation, with what keeps its code loaded.
pub(crate) enum GraphOp {
    /// A kernel of one of cuprum's modules.
    Launch {
        module: Arc<ModuleHandle>,
        ir: Arc<cuprum_ir::Module>,
        kernel: usize,
        static_shared_bytes: u32,
        name: Arc<str>,
        config: LaunchConfig,
        args: Vec<KernelArg>,
    },
    /// A kernel of a module cuprum did not compile (GPU only).
    External {
        function: Arc<ExternalFunction>,
        /// Its module, held only to keep it loaded.
        _module: Arc<dyn Any + Send + Sync>,
        name: Arc<str>,
        config: LaunchConfig,
        params: Vec<Vec<u8>>,
    },
    /// `bytes` bytes from `src` to `dst`, both inside held memory.
    Copy { dst: u64, src: u64, bytes: usize },
    /// Host work on copies of held memory (emulator only: `host_work`).
    HostWork {
        name: Arc<str>,
        regions: Vec<crate::host_work::HostRegion>,
        work: crate::host_work::HostWork,
    },
}

/// A recorded launch of one of cuprum's kernels as the backends take it: its module, the
/// kernel, the configuration and the arguments.
pub(crate) type OwnLaunch<'a> = (
    &'a ModuleHandle,
    LaunchTarget<'a>,
    &'a LaunchConfig,
    &'a [KernelArg],
);

impl GraphOp {
    /// What the operation is, for messages.
    fn describe(&self) -> String {
        match self {
            Self::Launch { name, .. } | Self::External { name, .. } => {
                format!("kernel `{name}`")
            }
            Self::Copy { bytes, .. } => format!("a copy of {bytes} bytes"),
            Self::HostWork { name, .. } => format!("host work `{name}`"),
        }
    }

    /// The recorded launch of one of cuprum's kernels, as both backends' replays ask it
    /// (`None` for other operations).
    pub(crate) fn own_launch(&self) -> Option<Result<OwnLaunch<'_>, Error>> {
        let Self::Launch {
            module,
            ir,
            kernel,
            static_shared_bytes,
            name,
            config,
            args,
        } = self
        else {
            return None;
        };
        Some(match ir.kernels.get(*kernel) {
            Some(k) => Ok((
                &**module,
                LaunchTarget {
                    index: *kernel,
                    ir: k,
                    static_shared_bytes: *static_shared_bytes,
                },
                config,
                args,
            )),
            None => Err(Error::KernelNotFound {
                name: name.to_string(),
            }),
        })
    }
}

/// What a recording stream has recorded so far.
#[derive(Default)]
struct Recorded {
    ops: Vec<GraphOp>,
    memory: Vec<(Arc<Memory>, Access)>,
    /// Set when the capture ended: a stream kept past it records nothing more.
    closed: bool,
}

/// The state of a recording stream (`StreamInner::recording`).
#[derive(Default)]
pub(crate) struct Recording {
    state: Mutex<Recorded>,
}

impl Recording {
    fn lock(&self) -> std::sync::MutexGuard<'_, Recorded> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Appends `op`, which uses `used`; refused once the capture has ended.
    pub(crate) fn record(
        &self,
        op: GraphOp,
        used: impl IntoIterator<Item = (Arc<Memory>, Access)>,
    ) -> Result<()> {
        let used: Vec<(Arc<Memory>, Access)> = used.into_iter().collect();
        if used.iter().any(|(m, _)| !m.recordable()) {
            return Err(Error::Unsupported {
                what: format!(
                    "{} on memory lent for a scope (a borrowed cudarc `CudaSlice`): a graph \
                     would outlive the borrow; move the slice into a `DeviceBuffer` \
                     (`interop::cudarc::from_slice`) to record it",
                    op.describe()
                ),
            });
        }
        let mut state = self.lock();
        if state.closed {
            return Err(Error::Unsupported {
                what: format!(
                    "{} on a stream whose graph capture has ended: work on a stream made by \
                     the context (`new_stream`), or record it in a new `Graph::capture`",
                    op.describe()
                ),
            });
        }
        state.ops.push(op);
        state.memory.extend(used);
        Ok(())
    }

    /// Ends the recording: its operations, and each memory they use once (written if any
    /// operation writes it).
    fn finish(&self) -> (Vec<GraphOp>, Vec<(Arc<Memory>, Access)>) {
        let mut state = self.lock();
        state.closed = true;
        let ops = std::mem::take(&mut state.ops);
        let memory = std::mem::take(&mut state.memory);
        (
            ops,
            ordering::each_once(memory, |m| Arc::as_ptr(m) as usize),
        )
    }
}

/// A recorded sequence of kernel launches and device-to-device copies, replayed by
/// [`launch`](Self::launch) as one submission (a CUDA graph on a GPU). See the module docs
/// for why a replay is sound whatever happens to the buffers meanwhile.
///
/// ```
/// use cuprum_runtime::{CudaContext, DeviceBuffer, Graph};
///
/// # fn main() -> cuprum_runtime::Result<()> {
/// let ctx = CudaContext::new(0)?;
/// let stream = ctx.new_stream()?;
/// let a = DeviceBuffer::from_host(&stream, &[1u32, 2, 3])?;
/// let mut b = DeviceBuffer::<u32>::zeroed(&stream, 3)?;
/// let graph = Graph::capture(&ctx, |s| b.copy_from_device(s, &a))?;
/// assert_eq!(b.to_host_vec(&stream)?, [0, 0, 0], "recorded, not run");
/// graph.launch(&stream)?;
/// assert_eq!(b.to_host_vec(&stream)?, [1, 2, 3]);
/// # Ok(())
/// # }
/// ```
pub struct Graph {
    // Declared first: the executable graph is destroyed while the modules it launches are
    // loaded and the memory it uses is allocated.
    exec: GraphHandle,
    ops: Vec<GraphOp>,
    memory: Vec<(Arc<Memory>, Access)>,
    ctx: CudaContext,
}

impl fmt::Debug for Graph {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Graph")
            .field("context", &self.ctx)
            .field(
                "operations",
                &self.ops.iter().map(GraphOp::describe).collect::<Vec<_>>(),
            )
            .field("buffers", &self.memory.len())
            .finish()
    }
}

impl Graph {
    /// Records what `record` submits to the stream it is given: kernel launches and
    /// [`DeviceBuffer::copy_from_device`](crate::DeviceBuffer::copy_from_device), checked as
    /// when they run (an invalid launch is its error now, and the capture's). Anything else on
    /// that stream is [`Error::Unsupported`]: allocate buffers and fill them from the host
    /// before, and read results after a [`launch`](Self::launch). Nothing runs until then.
    pub fn capture(ctx: &CudaContext, record: impl FnOnce(&Stream) -> Result<()>) -> Result<Graph> {
        Self::capture_with(ctx, record).map(|(graph, ())| graph)
    }

    /// [`capture`](Self::capture), also returning what `record` returns.
    pub fn capture_with<R>(
        ctx: &CudaContext,
        record: impl FnOnce(&Stream) -> Result<R>,
    ) -> Result<(Graph, R)> {
        let (ops, memory, out) = recorded(ctx, record)?;
        let exec = ctx
            .inner
            .backend
            .instantiate_graph(&ops)
            .map_err(|f| ctx.fail(f, None))?;
        Ok((
            Graph {
                exec,
                ops,
                memory,
                ctx: ctx.clone(),
            },
            out,
        ))
    }

    /// Records the graph anew with `record` (new arguments: other buffers, scalars, grids):
    /// where the operations are the same kernels and copies in the same order, the
    /// executable graph is updated in place (`cuGraphExecUpdate`, far cheaper than a new
    /// capture's instantiation); otherwise it is instantiated anew. On an error the graph
    /// stays as it was.
    pub fn update(&mut self, record: impl FnOnce(&Stream) -> Result<()>) -> Result<()> {
        let (ops, memory, ()) = recorded(&self.ctx, record)?;
        let backend = &self.ctx.inner.backend;
        let updated = backend
            .update_graph(&self.exec, &ops)
            .map_err(|f| self.ctx.fail(f, None))?;
        if !updated {
            self.exec = backend
                .instantiate_graph(&ops)
                .map_err(|f| self.ctx.fail(f, None))?;
        }
        self.ops = ops;
        self.memory = memory;
        Ok(())
    }

    /// Replays the recorded operations on `stream`, in order, after the unfinished work of
    /// other streams on the buffers they use (and later work waits for them, as for any
    /// launch). Returns once submitted.
    pub fn launch(&self, stream: &Stream) -> Result<()> {
        self.ctx.check_same(stream.context())?;
        if stream.recording().is_some() {
            return Err(Error::Unsupported {
                what: "launching a graph inside another graph's capture: launch it on a stream \
                       of the context"
                    .to_owned(),
            });
        }
        let held = ordering::hold_memory(stream, &self.memory)?;
        // SAFETY: every operation passed its launch's checks when recorded, and the memory it
        // uses and the modules it runs are held by this graph (the module docs).
        unsafe {
            self.ctx
                .inner
                .backend
                .launch_graph(&self.exec, &self.ops, stream.handle())
        }
        .map_err(|f| self.ctx.fail(f, Some(stream)))?;
        self.ctx.count_launch();
        held.note_after()
    }

    /// How many operations a replay runs.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// Whether the graph records nothing.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// The context the graph belongs to.
    pub fn context(&self) -> &CudaContext {
        &self.ctx
    }
}

type Captured<R> = (Vec<GraphOp>, Vec<(Arc<Memory>, Access)>, R);

/// Runs `record` on a new recording stream of `ctx` and returns what it recorded.
fn recorded<R>(
    ctx: &CudaContext,
    record: impl FnOnce(&Stream) -> Result<R>,
) -> Result<Captured<R>> {
    let recording = Arc::new(Recording::default());
    let stream = ctx.recording_stream(recording.clone());
    let out = record(&stream);
    let (ops, memory) = recording.finish();
    Ok((ops, memory, out?))
}
