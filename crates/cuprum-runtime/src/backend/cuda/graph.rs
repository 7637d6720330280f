//! CUDA graphs from recorded operations (`crate::graph`): the operations are submitted once,
//! through the very launch and copy paths every other submission takes, to a private stream
//! in capture mode; the captured graph is instantiated (or an instantiated one updated) and
//! replayed with one `cuGraphLaunch`.

use std::ptr;

use cudarc::driver::result;
use cudarc::driver::sys;

use super::fail::{CuFail, fail};
use super::{CudaDevice, CudaStream, bind};
use crate::backend::{Device, ExternalFunction, Failure, ModuleHandle, Outcome};
use crate::error::Error;
use crate::graph::GraphOp;

/// An instantiated graph, destroyed on drop.
pub(crate) struct CudaGraphExec {
    raw: sys::CUgraphExec,
    ctx: sys::CUcontext,
}

// SAFETY: driver handles may be used from any thread (the context is bound per call).
unsafe impl Send for CudaGraphExec {}
// SAFETY: as above; the driver API is thread-safe.
unsafe impl Sync for CudaGraphExec {}

impl Drop for CudaGraphExec {
    fn drop(&mut self) {
        if bind(self.ctx).is_ok() {
            // SAFETY: destroyed once, here; its owner (a `Graph`) keeps the context alive.
            let _ = unsafe { sys::cuGraphExecDestroy(self.raw) };
        }
    }
}

/// A captured (not instantiated) graph, destroyed on drop.
struct Captured(sys::CUgraph);

impl Drop for Captured {
    fn drop(&mut self) {
        // SAFETY: destroyed once, here (the context is bound by the capturing call).
        let _ = unsafe { sys::cuGraphDestroy(self.0) };
    }
}

impl CudaDevice {
    /// Captures `ops` into a graph: on a private non-blocking stream (capture must not touch
    /// the legacy stream), in thread-local capture mode (other threads' work is not captured).
    fn capture(&self, ops: &[GraphOp]) -> Outcome<Captured> {
        let stream = self.create_nonblocking_stream()?;
        // SAFETY: the stream is alive and ours.
        unsafe {
            sys::cuStreamBeginCapture_v2(
                stream.raw,
                sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
            )
        }
        .result()
        .map_err(fail("cuStreamBeginCapture"))?;
        let submitted = self.submit_all(ops, &stream);
        let mut graph: sys::CUgraph = ptr::null_mut();
        // SAFETY: the stream is capturing; `graph` is a valid out pointer.
        let ended = unsafe { sys::cuStreamEndCapture(stream.raw, &mut graph) }
            .result()
            .map_err(fail("cuStreamEndCapture"));
        let captured = (!graph.is_null()).then_some(Captured(graph));
        submitted?;
        ended?;
        captured.ok_or_else(|| {
            Failure::Error(Error::Unsupported {
                what: "a CUDA graph capture that ended without a graph".to_owned(),
            })
        })
    }

    /// Submits each operation to the capturing `stream`.
    fn submit_all(&self, ops: &[GraphOp], stream: &CudaStream) -> Outcome<()> {
        for op in ops {
            match op {
                GraphOp::Launch { .. } => {
                    let Some(launch) = op.own_launch() else {
                        continue;
                    };
                    let (module, target, config, args) = launch?;
                    let ModuleHandle::Cuda(program) = module else {
                        return Err(Failure::Error(Error::ContextMismatch));
                    };
                    // SAFETY: checked when recorded; the graph holds its memory and module.
                    unsafe { Device::launch(self, program, stream, &target, config, args) }?;
                }
                GraphOp::External {
                    function,
                    config,
                    params,
                    ..
                } => {
                    let ExternalFunction::Cuda(f) = &**function;
                    // SAFETY: as above; the raw launch's caller promised the rest.
                    unsafe { self.launch_external(f, stream, config, params) }?;
                }
                // SAFETY: both ranges are inside memory the graph holds.
                GraphOp::Copy { dst, src, bytes } => {
                    unsafe { self.copy_dtod(*dst, *src, *bytes, stream) }?
                }
                // Only an emulator's recording stream records host work.
                GraphOp::HostWork { name, .. } => {
                    return Err(Failure::Error(Error::Unsupported {
                        what: format!("host work `{name}` in a graph on a GPU"),
                    }));
                }
            }
        }
        Ok(())
    }

    /// Captures and instantiates `ops`.
    pub(crate) fn instantiate_graph(&self, ops: &[GraphOp]) -> Outcome<CudaGraphExec> {
        let graph = self.capture(ops)?;
        let mut raw: sys::CUgraphExec = ptr::null_mut();
        // SAFETY: `graph` is a complete captured graph; `raw` a valid out pointer.
        unsafe { sys::cuGraphInstantiateWithFlags(&mut raw, graph.0, 0) }
            .result()
            .map_err(fail("cuGraphInstantiateWithFlags"))?;
        Ok(CudaGraphExec { raw, ctx: self.ctx })
    }

    /// Captures `ops` and updates `exec` to them in place; `false` where the driver cannot
    /// (another topology or other kernels), leaving `exec` as it was.
    pub(crate) fn update_graph(&self, exec: &CudaGraphExec, ops: &[GraphOp]) -> Outcome<bool> {
        let graph = self.capture(ops)?;
        // SAFETY: a zeroed result record is valid for the driver to fill.
        let mut info: sys::CUgraphExecUpdateResultInfo = unsafe { std::mem::zeroed() };
        // SAFETY: both graphs are alive; `info` is a valid out pointer.
        let status = unsafe { sys::cuGraphExecUpdate_v2(exec.raw, graph.0, &mut info) };
        match status {
            sys::CUresult::CUDA_SUCCESS => Ok(true),
            sys::CUresult::CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE => Ok(false),
            other => Err(Failure::Driver(CuFail {
                call: "cuGraphExecUpdate",
                err: result::DriverError(other),
            })),
        }
    }

    /// Submits a replay of `exec` to `stream`.
    pub(crate) fn launch_graph(
        &self,
        exec: &CudaGraphExec,
        stream: &CudaStream,
    ) -> Result<(), CuFail> {
        self.bind()?;
        // SAFETY: both handles are alive.
        unsafe { sys::cuGraphLaunch(exec.raw, stream.raw) }
            .result()
            .map_err(fail("cuGraphLaunch"))
    }
}
