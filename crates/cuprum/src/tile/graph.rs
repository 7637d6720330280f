//! cuTile Rust's CUDA graphs with its names (`CudaGraph::scope`, `capture`, `graph_on`,
//! `launch`, `update`), over the runtime's [`Graph`](cuprum_runtime::Graph): the operations
//! a scope records (or one operation captured) run on a recording stream, where kernel
//! launches and device-to-device copies are recorded and anything a replay could not repeat
//! (allocating, copying to or from the host) is an error.
//!
//! Unlike the CUDA stream capture cuTile Rust uses, the graph holds the memory of every
//! tensor it reads or writes, and each replay is ordered with other work on them like a
//! launch, so a graph that outlives its tensors, or replays while they are used elsewhere,
//! is still sound (see `cuprum_runtime::graph`).

use std::marker::PhantomData;
use std::sync::Arc;

use cuprum_runtime::Graph;

use crate::tile::cuda_core::Stream;
use crate::tile::error::Error;
use crate::tile::op::{DeviceOp, ExecutionContext};

/// A recorded and instantiated graph, ready for replay, with the output the recorded
/// operation gave (its tensors' metadata; their contents are computed by each replay).
pub struct CudaGraph<T> {
    graph: Arc<Graph>,
    stream: Arc<Stream>,
    output: Option<T>,
}

impl<T> std::fmt::Debug for CudaGraph<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaGraph")
            .field("graph", &self.graph)
            .finish()
    }
}

/// Runs `record` with the recording stream of a new graph of `stream`'s context and keeps
/// its error as it is.
fn record_graph<R>(
    stream: &Stream,
    record: impl FnOnce(&ExecutionContext) -> Result<R, Error>,
) -> Result<(Graph, R), Error> {
    let mut failed = None;
    let (graph, out) = Graph::capture_with(stream.context(), |recording| {
        match record(&ExecutionContext::new(recording.clone())) {
            Ok(out) => Ok(Some(out)),
            Err(e) => {
                failed = Some(e);
                Ok(None)
            }
        }
    })?;
    match (failed, out) {
        (Some(e), _) => Err(e),
        (None, Some(out)) => Ok((graph, out)),
        (None, None) => Err(Error::from(cuprum_runtime::Error::Unsupported {
            what: "a graph capture that recorded no outcome".to_owned(),
        })),
    }
}

impl<T: Send> CudaGraph<T> {
    /// Records `op` into a graph for `stream`: its kernel launches and device copies are
    /// recorded, not run (the first [`launch`](Self::launch) computes them); its output is
    /// [`take_output`](Self::take_output)'s.
    pub fn capture(stream: Arc<Stream>, op: impl DeviceOp<Output = T>) -> Result<Self, Error> {
        // SAFETY: recorded, not run: the output describes what replays compute, read only
        // through the operations that follow them on a stream.
        let (graph, output) = record_graph(&stream, |ctx| unsafe { op.execute(ctx) })?;
        Ok(Self {
            graph: Arc::new(graph),
            stream,
            output: Some(output),
        })
    }

    /// The output of the recorded operation, the first time.
    pub fn take_output(&mut self) -> Option<T> {
        self.output.take()
    }

    /// Runs `op` now on the graph's stream (not recorded): how new inputs reach the buffers
    /// a graph reads before a [`launch`](Self::launch) on that stream.
    /// Returns once the stream's work up to here has completed.
    pub fn update<O: Send>(&self, op: impl DeviceOp<Output = O>) -> Result<O, Error> {
        op.sync_on(&self.stream)
    }

    /// The operation that replays the graph on the stream it is run on.
    pub fn launch(&self) -> GraphLaunch {
        GraphLaunch {
            graph: self.graph.clone(),
        }
    }

    /// The stream the graph was recorded for.
    pub fn stream(&self) -> &Arc<Stream> {
        &self.stream
    }

    /// How many kernel launches and copies a replay runs.
    pub fn num_nodes(&self) -> usize {
        self.graph.len()
    }
}

impl CudaGraph<()> {
    /// Records what `f` records through its [`Scope`], in order.
    pub fn scope<F>(stream: &Arc<Stream>, f: F) -> Result<Self, Error>
    where
        F: FnOnce(&Scope) -> Result<(), Error>,
    {
        let (graph, ()) = record_graph(stream, |ctx| {
            f(&Scope {
                ctx: ctx.clone(),
                _not_send: PhantomData,
            })
        })?;
        Ok(Self {
            graph: Arc::new(graph),
            stream: stream.clone(),
            output: Some(()),
        })
    }
}

/// What [`CudaGraph::scope`]'s closure records with: each [`record`](Self::record) consumes
/// its operation (releasing the borrows it held), so a tensor written by one recorded kernel
/// can be read by the next.
pub struct Scope {
    ctx: ExecutionContext,
    _not_send: PhantomData<*const ()>,
}

impl Scope {
    /// Records `op`'s kernel launches and device copies; its output describes tensors whose
    /// contents a replay computes.
    pub fn record<T: Send>(&self, op: impl DeviceOp<Output = T>) -> Result<T, Error> {
        // SAFETY: recorded, not run (as in `CudaGraph::capture`).
        unsafe { op.execute(&self.ctx) }
    }
}

/// The operation [`CudaGraph::launch`] gives: one replay of the graph.
pub struct GraphLaunch {
    graph: Arc<Graph>,
}

impl DeviceOp for GraphLaunch {
    type Output = ();
    unsafe fn execute(self, ctx: &ExecutionContext) -> Result<(), Error> {
        Ok(self.graph.launch(ctx.stream())?)
    }
}
crate::tile::op::awaitable!([] GraphLaunch => ());

/// `op.graph_on(stream)`: [`CudaGraph::capture`] as a method of every operation.
pub trait GraphOn: DeviceOp {
    /// Records the operation into a graph for `stream`.
    fn graph_on(self, stream: Arc<Stream>) -> Result<CudaGraph<<Self as DeviceOp>::Output>, Error> {
        CudaGraph::capture(stream, self)
    }
}

impl<D: DeviceOp> GraphOn for D {}
