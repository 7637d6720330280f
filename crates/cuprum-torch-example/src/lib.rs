//! `cuprum_torch`: an example Python extension that runs cuprum kernels on PyTorch tensors
//! without copies, to show how cuprum meets a Python framework: tensors come in through
//! DLPack (`__dlpack__`, read by the `dlpark` crate) and become cuprum buffers over their
//! memory (`DeviceBuffer::from_dlpack`), and the kernel runs on PyTorch's current stream
//! (`Stream::from_raw_cuda`), so it is ordered with the PyTorch work before and after it
//! exactly as a PyTorch operation would be.
//!
//! ```python
//! import torch, cuprum_torch
//! x, y = torch.rand(1 << 20, device="cuda"), torch.rand(1 << 20, device="cuda")
//! z = cuprum_torch.add(x, y)                 # a new tensor, like torch.add
//! cuprum_torch.saxpy(2.0, x, y, out=z)       # into an existing tensor (no allocation)
//! ```
//!
//! * CUDA tensors (all on one device) run on that GPU, on `stream` (a `cudaStream_t` as an
//!   integer) or, by default, `torch.cuda.current_stream(device)`: the tensors are asked for
//!   with `__dlpack__(stream=...)` on that stream, so PyTorch makes them ready there, and the
//!   kernel is queued there; the call returns without waiting for it.
//! * CPU tensors run on cuprum's CPU emulator: DLPack cannot hand host memory to the
//!   emulator (whose memory is its own), so inputs are copied in and the result copied out
//!   into the output's memory; the call returns when it is done.
//! * `float32` only, contiguous, same shape; otherwise `TypeError` or `ValueError` with the
//!   reason. `out` must not overlap an input, nor inputs overlap each other unless they are
//!   the same tensor. A CUDA tensor must start at a multiple of 16 bytes (a kernel's slices
//!   are 16-byte aligned), which views like `x[1:]` do not: `ValueError`.

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::{Mutex, OnceLock};

use cuprum::interop::dlpack::dlpark::ffi::{DLDevice, DLDeviceType};
use cuprum::simt::{DisjointSlice, kernel, launch_bounds, launch_contract, thread};
use cuprum::{CudaContext, DeviceBuffer, Error, LaunchConfig1D, Stream, cuda_module};
use dlpark::python::consumer::{ImportRequest, ImportedDlpack, stream as dlstream};
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;

#[cuda_module]
mod kernels {
    use super::*;

    #[kernel]
    #[launch_bounds(256)]
    #[launch_contract(domain = 1, block = (256, 1, 1))]
    pub fn add(x: &[f32], y: &[f32], mut out: DisjointSlice<f32>) {
        let i = thread::index_1d();
        if let Some(o) = out.get_mut(i) {
            *o = x[i.get()] + y[i.get()];
        }
    }

    #[kernel]
    #[launch_bounds(256)]
    #[launch_contract(domain = 1, block = (256, 1, 1))]
    pub fn saxpy(alpha: f32, x: &[f32], y: &[f32], mut out: DisjointSlice<f32>) {
        let i = thread::index_1d();
        if let Some(o) = out.get_mut(i) {
            *o = alpha * x[i.get()] + y[i.get()];
        }
    }
}

/// cuprum's errors as Python exceptions: element types are `TypeError`s, other refusals of
/// the arguments `ValueError`s, the rest (driver, device) `RuntimeError`s.
fn py_err(e: Error) -> PyErr {
    match &e {
        Error::Dlpack { reason } if reason.contains("element type") => {
            PyTypeError::new_err(format!("cuprum_torch: {e}"))
        }
        Error::Dlpack { .. }
        | Error::Interop { .. }
        | Error::LengthMismatch { .. }
        | Error::ArgumentMismatch { .. } => PyValueError::new_err(format!("cuprum_torch: {e}")),
        _ => PyRuntimeError::new_err(format!("cuprum_torch: {e}")),
    }
}

/// A context and its loaded kernels; one per GPU, and one emulator, for the process.
struct Device {
    ctx: CudaContext,
    module: kernels::Module,
}

fn device(ordinal: Option<usize>) -> PyResult<&'static Device> {
    static DEVICES: OnceLock<Mutex<HashMap<Option<usize>, &'static Device>>> = OnceLock::new();
    let mut devices = DEVICES
        .get_or_init(|| Mutex::new(HashMap::new()))
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(d) = devices.get(&ordinal) {
        return Ok(d);
    }
    let ctx = match ordinal {
        Some(n) => CudaContext::cuda(n).map_err(py_err)?,
        None => CudaContext::emulator(),
    };
    let module = kernels::load(&ctx).map_err(py_err)?;
    // Kept for the life of the process, as a framework keeps its device state.
    let d: &'static Device = Box::leak(Box::new(Device { ctx, module }));
    devices.insert(ordinal, d);
    Ok(d)
}

/// Where the arguments live: one CUDA device, or the host.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Place {
    Cuda(usize),
    Cpu,
}

fn place_of(request: &ImportRequest<'_>, name: &str) -> PyResult<Place> {
    let DLDevice {
        device_type,
        device_id,
    } = request.device()?;
    match device_type {
        DLDeviceType::CUDA => Ok(Place::Cuda(usize::try_from(device_id).unwrap_or(0))),
        DLDeviceType::CPU => Ok(Place::Cpu),
        other => Err(PyValueError::new_err(format!(
            "cuprum_torch: `{name}` is on DLPack device type {} (id {device_id}); only CUDA \
             and CPU tensors are supported",
            other.0
        ))),
    }
}

/// The consumer stream of a DLPack import: the producer (PyTorch) makes the tensor ready on
/// it (`__dlpack__(stream=...)`); through DLPack's C exchange API, a producer already
/// working on this very stream needs nothing more, and any other falls back to the Python
/// protocol.
struct OnStream(*mut c_void);

// SAFETY: `as_python_arg` names the stream the kernel runs on; `wait_for_producer` claims
// readiness only when the producer's stream is that same stream (in-order).
unsafe impl dlpark::python::consumer::DlpackStream for OnStream {
    fn as_python_arg(
        &self,
        _py: Python<'_>,
        _device: DLDevice,
    ) -> PyResult<dlpark::python::consumer::StreamArg> {
        Ok(dlstream::cuda(self.0))
    }

    unsafe fn wait_for_producer(&self, _device: DLDevice, producer: *mut c_void) -> PyResult<bool> {
        Ok(producer == self.0)
    }
}

fn import(
    request: ImportRequest<'_>,
    place: Place,
    raw_stream: *mut c_void,
) -> PyResult<ImportedDlpack> {
    match place {
        Place::Cuda(_) => request.import(Some(&OnStream(raw_stream)), None),
        Place::Cpu => request.import(None, None),
    }
}

fn to_buffer(
    stream: &Stream,
    tensor: ImportedDlpack,
) -> cuprum::Result<(DeviceBuffer<f32>, Vec<usize>)> {
    let imported = match tensor {
        ImportedDlpack::Legacy(t) => DeviceBuffer::<f32>::from_dlpack(stream, t)?,
        ImportedDlpack::Versioned(t) => DeviceBuffer::<f32>::from_dlpack(stream, t)?,
    };
    Ok((imported.buffer, imported.shape))
}

/// The stream to run on: the caller's, or PyTorch's current stream of device `ordinal`.
fn stream_handle(py: Python<'_>, ordinal: usize, stream: Option<usize>) -> PyResult<*mut c_void> {
    let raw = match stream {
        Some(s) => s,
        None => py
            .import("torch")?
            .getattr("cuda")?
            .call_method1("current_stream", (ordinal,))?
            .getattr("cuda_stream")?
            .extract::<usize>()?,
    };
    Ok(raw as *mut c_void)
}

/// Copies `data` into the host tensor `out` (a CPU tensor: its DLPack memory is the host's),
/// after the same checks an import makes.
fn write_host(out: ImportedDlpack, data: &[f32]) -> PyResult<()> {
    use cuprum::interop::dlpack::dlpark::{DlpackFlags, ffi::DLDataType};
    if out.flags().contains(DlpackFlags::READ_ONLY) {
        return Err(PyValueError::new_err("cuprum_torch: `out` is read-only"));
    }
    let view = out
        .validate()
        .map_err(|e| PyValueError::new_err(format!("cuprum_torch: `out` is malformed: {e}")))?;
    if !view.dtype().matches(DLDataType::F32) || view.num_elements() != data.len() {
        return Err(PyValueError::new_err(
            "cuprum_torch: `out` must be a float32 tensor of the inputs' shape",
        ));
    }
    if data.is_empty() {
        return Ok(());
    }
    let dst = (view.data_ptr() as usize + view.byte_offset() as usize) as *mut f32;
    // SAFETY: a validated, writable host tensor of `data.len()` f32s (dense: `out` was
    // imported as a buffer first, which checks the layout), not aliasing `data`.
    unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), dst, data.len()) };
    Ok(())
}

/// What a binary element-wise call launches, given its device and buffers.
type Launch = fn(
    &Device,
    &Stream,
    f32,
    &DeviceBuffer<f32>,
    &DeviceBuffer<f32>,
    &mut DeviceBuffer<f32>,
) -> cuprum::Result<()>;

/// One thread per element, in blocks of 256.
fn grid(n: usize) -> cuprum::Result<LaunchConfig1D> {
    let blocks = u32::try_from(n.div_ceil(256)).map_err(|_| Error::Unsupported {
        what: format!("tensors of {n} elements (more than 2^32 blocks of 256)"),
    })?;
    Ok(LaunchConfig1D::new(blocks, 256, 0))
}

fn launch_add(
    d: &Device,
    s: &Stream,
    _: f32,
    x: &DeviceBuffer<f32>,
    y: &DeviceBuffer<f32>,
    out: &mut DeviceBuffer<f32>,
) -> cuprum::Result<()> {
    if out.is_empty() {
        return Ok(());
    }
    let prepared = d.module.prepare_add(grid(out.len())?)?;
    d.module.add(s, &prepared, x, y, out)
}

fn launch_saxpy(
    d: &Device,
    s: &Stream,
    alpha: f32,
    x: &DeviceBuffer<f32>,
    y: &DeviceBuffer<f32>,
    out: &mut DeviceBuffer<f32>,
) -> cuprum::Result<()> {
    if out.is_empty() {
        return Ok(());
    }
    let prepared = d.module.prepare_saxpy(grid(out.len())?)?;
    d.module.saxpy(s, &prepared, alpha, x, y, out)
}

fn data_ptr(t: &Bound<'_, PyAny>) -> PyResult<usize> {
    t.call_method0("data_ptr")?.extract()
}

fn elementwise<'py>(
    py: Python<'py>,
    launch: Launch,
    alpha: f32,
    x: &Bound<'py, PyAny>,
    y: &Bound<'py, PyAny>,
    out: Option<&Bound<'py, PyAny>>,
    stream: Option<usize>,
) -> PyResult<Bound<'py, PyAny>> {
    let out = match out {
        Some(o) => o.clone(),
        None => py.import("torch")?.call_method1("empty_like", (x,))?,
    };
    let (xp, yp, op) = (data_ptr(x)?, data_ptr(y)?, data_ptr(&out)?);
    let rx = ImportRequest::new(x.as_borrowed())?;
    let ry = ImportRequest::new(y.as_borrowed())?;
    let ro = ImportRequest::new(out.as_borrowed())?;
    let place = place_of(&rx, "x")?;
    for (r, name) in [(&ry, "y"), (&ro, "out")] {
        let p = place_of(r, name)?;
        if p != place {
            return Err(PyValueError::new_err(format!(
                "cuprum_torch: `{name}` is on {p:?} but `x` is on {place:?}: all tensors must be \
                 on one device"
            )));
        }
    }
    let (d, raw_stream) = match place {
        Place::Cuda(n) => (device(Some(n))?, stream_handle(py, n, stream)?),
        Place::Cpu => (device(None)?, std::ptr::null_mut()),
    };
    let cuprum_stream = match place {
        // SAFETY: PyTorch's stream (or the caller's), alive during this call, which is as long
        // as the cuprum stream lives (no owner needed).
        Place::Cuda(_) => {
            unsafe { Stream::from_raw_cuda(&d.ctx, raw_stream, None) }.map_err(py_err)?
        }
        Place::Cpu => d.ctx.default_stream(),
    };
    let s = &cuprum_stream;
    let (bx, shape) = to_buffer(s, import(rx, place, raw_stream)?).map_err(py_err)?;
    // The same tensor twice (`add(x, x)`) is one buffer: one allocation, one wrapper.
    let by = if yp == xp && xp != 0 {
        None
    } else {
        Some(to_buffer(s, import(ry, place, raw_stream)?).map_err(py_err)?)
    };
    let (by, yshape) = match &by {
        Some((b, sh)) => (b, sh.clone()),
        None => (&bx, shape.clone()),
    };
    if yshape != shape {
        return Err(PyValueError::new_err(format!(
            "cuprum_torch: `x` has shape {shape:?} but `y` has {yshape:?}"
        )));
    }
    // (An empty tensor's pointer may be null: it aliases nothing.)
    if op != 0 && (op == xp || op == yp) {
        return Err(PyValueError::new_err(
            "cuprum_torch: `out` must not be an input (in place is not supported)",
        ));
    }
    match place {
        Place::Cuda(_) => {
            // `out` wrapped too: zero-copy, written by the kernel on the stream.
            let (mut bo, oshape) = to_buffer(s, import(ro, place, raw_stream)?).map_err(py_err)?;
            if oshape != shape {
                return Err(PyValueError::new_err(format!(
                    "cuprum_torch: `out` has shape {oshape:?}, the inputs {shape:?}"
                )));
            }
            launch(d, s, alpha, &bx, by, &mut bo).map_err(py_err)?;
            // The buffers let go here: PyTorch's stream is already the one the kernel is on.
        }
        Place::Cpu => {
            let mut bo = DeviceBuffer::from_host(s, &vec![f32::NAN; bx.len()]).map_err(py_err)?;
            launch(d, s, alpha, &bx, by, &mut bo).map_err(py_err)?;
            let result = bo.to_host_vec(s).map_err(py_err)?;
            // Checked like an input first (type, shape, layout), then written in place.
            let checked = ro.import(None, None)?;
            let layout = match &checked {
                ImportedDlpack::Legacy(t) => t.validate().map(|v| v.is_compact()),
                ImportedDlpack::Versioned(t) => t.validate().map(|v| v.is_compact()),
            };
            if !matches!(layout, Ok(Ok(true))) {
                return Err(PyValueError::new_err(
                    "cuprum_torch: `out` must be contiguous (row-major, dense)",
                ));
            }
            write_host(checked, &result)?;
        }
    }
    Ok(out)
}

/// `x + y` of two float32 tensors of one shape, into `out` (a new tensor when `None`), on
/// `stream` (a CUDA stream handle; PyTorch's current stream when `None`). Returns `out`.
#[pyfunction]
#[pyo3(signature = (x, y, out=None, stream=None))]
fn add<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    y: &Bound<'py, PyAny>,
    out: Option<&Bound<'py, PyAny>>,
    stream: Option<usize>,
) -> PyResult<Bound<'py, PyAny>> {
    elementwise(py, launch_add, 0.0, x, y, out, stream)
}

/// `alpha * x + y`, as [`add`].
#[pyfunction]
#[pyo3(signature = (alpha, x, y, out=None, stream=None))]
fn saxpy<'py>(
    py: Python<'py>,
    alpha: f32,
    x: &Bound<'py, PyAny>,
    y: &Bound<'py, PyAny>,
    out: Option<&Bound<'py, PyAny>>,
    stream: Option<usize>,
) -> PyResult<Bound<'py, PyAny>> {
    elementwise(py, launch_saxpy, alpha, x, y, out, stream)
}

/// Which backend runs tensors on `device` ("cuda" or "cpu"): "cuda" or "emu".
#[pyfunction]
fn backend(device: &str) -> PyResult<&'static str> {
    let d = if device.starts_with("cuda") {
        let n = device
            .split(':')
            .nth(1)
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        self::device(Some(n))?
    } else {
        self::device(None)?
    };
    Ok(match d.ctx.backend() {
        cuprum::BackendKind::Cuda => "cuda",
        cuprum::BackendKind::Emulator => "emu",
    })
}

#[pymodule]
fn cuprum_torch(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(add, m)?)?;
    m.add_function(wrap_pyfunction!(saxpy, m)?)?;
    m.add_function(wrap_pyfunction!(backend, m)?)?;
    Ok(())
}
