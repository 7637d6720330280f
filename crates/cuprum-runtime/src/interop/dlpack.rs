//! DLPack tensors in and out of cuprum: the exchange format of PyTorch, JAX, CuPy, NumPy,
//! TensorFlow and others (<https://dmlc.github.io/dlpack/latest/>), through the
//! [`dlpark`] crate's ABI types and ownership handles (both `DLManagedTensor`, v0.8, and
//! `DLManagedTensorVersioned`, v1).
//!
//! * [`DeviceBuffer::into_dlpack`] (and `_legacy`) exports a buffer as a row-major tensor of
//!   a given shape; [`export_view`] exports any strided view of a buffer shared with others
//!   (what the facade's tile `Tensor` uses). On a GPU the tensor is the buffer's memory
//!   itself (`kDLCUDA`, the context's ordinal); on the emulator, whose memory is not the
//!   host's, it is a host copy (`kDLCPU`, flagged `IS_COPIED` in v1).
//! * [`DeviceBuffer::from_dlpack`] imports a tensor, checking its element type, its layout
//!   (row-major and dense: the strides of the shape, where a dimension has more than one
//!   element) and its device: a `kDLCUDA` tensor of the context's device becomes a buffer
//!   over its memory, without a copy (one of cuprum's own exports coming back shares the
//!   exported buffer's memory and ordering); a `kDLCPU` tensor is copied into a new buffer
//!   (on both backends); anything else is [`Error::Dlpack`].
//!
//! # Streams
//!
//! DLPack leaves synchronization to the Python protocol (`__dlpack__(stream=...)`): the
//! consumer names the stream it will use, and the producer makes the data ready on it. The
//! functions here take that stream:
//! * exporting on `stream`: `stream` waits for every unfinished use of the buffer, so the
//!   consumer's work there follows cuprum's. When the consumer calls the deleter, the
//!   consumer's work queued on `stream` until then counts as a write of the memory, and the
//!   memory is freed after it (cuprum's free is stream-ordered).
//! * importing on `stream`: `stream` must be the stream the producer made the data ready on
//!   (the one passed to `__dlpack__`), and is the imported buffer's home stream (see
//!   [`crate::foreign`]): when the buffer is dropped, that stream waits for cuprum's
//!   unfinished uses, then the producer's deleter runs. The producer must not reuse the
//!   memory before work on that stream, as stream-ordered allocators (PyTorch's) do not.

use std::sync::Arc;

use cuprum_ir::ScalarType;
use dlpark::ffi::{DLDataType, DLDevice, DLDeviceType, DLManagedTensor, DLManagedTensorVersioned};
use dlpark::{DlpackFlags, Managed, ManagedTensorBase};

use crate::buffer::{DeviceBuffer, DeviceCopy, DeviceScalar};
use crate::context::{BackendKind, Stream};
use crate::error::{Error, Result};
use crate::foreign::ForeignOwner;
use crate::ordering::{self, Access, Memory};

pub use dlpark;

/// The [`ForeignOwner::origin`] of memory imported from a DLPack tensor.
pub const ORIGIN: &str = "dlpack";

/// The DLPack element type of cuprum's scalar type `ty`.
pub fn dtype_of(ty: ScalarType) -> DLDataType {
    use dlpark::ffi::DLDataTypeCode as Code;
    let (code, bits) = match ty {
        ScalarType::Bool => (Code::BOOL, 8),
        ScalarType::I8 => (Code::INT, 8),
        ScalarType::I16 => (Code::INT, 16),
        ScalarType::I32 => (Code::INT, 32),
        ScalarType::I64 => (Code::INT, 64),
        ScalarType::U8 => (Code::UINT, 8),
        ScalarType::U16 => (Code::UINT, 16),
        ScalarType::U32 => (Code::UINT, 32),
        ScalarType::U64 => (Code::UINT, 64),
        ScalarType::F16 => (Code::FLOAT, 16),
        ScalarType::BF16 => (Code::BFLOAT, 16),
        // DLPack has no `tf32`: its values are the `f32`s they stand for.
        ScalarType::F32 | ScalarType::Tf32 => (Code::FLOAT, 32),
        ScalarType::F64 => (Code::FLOAT, 64),
    };
    DLDataType::scalar(code, bits)
}

fn describe_dtype(dtype: DLDataType) -> String {
    use dlpark::ffi::DLDataTypeCode as Code;
    let name = match dtype.code {
        Code::INT => "int",
        Code::UINT => "uint",
        Code::FLOAT => "float",
        Code::BFLOAT => "bfloat",
        Code::BOOL => "bool",
        Code::COMPLEX => "complex",
        _ => "code",
    };
    let lanes = if dtype.lanes == 1 {
        String::new()
    } else {
        format!("x{}", dtype.lanes)
    };
    if matches!(
        dtype.code,
        Code::INT | Code::UINT | Code::FLOAT | Code::BFLOAT | Code::BOOL | Code::COMPLEX
    ) {
        format!("{name}{}{lanes}", dtype.bits)
    } else {
        format!("{name} {} with {} bits{lanes}", dtype.code.0, dtype.bits)
    }
}

fn describe_device(device: DLDevice) -> String {
    let kind = match device.device_type {
        DLDeviceType::CPU => "cpu",
        DLDeviceType::CUDA => "cuda",
        DLDeviceType::CUDAHOST => "cuda_host",
        DLDeviceType::CUDAMANAGED => "cuda_managed",
        DLDeviceType::ROCM => "rocm",
        DLDeviceType::METAL => "metal",
        _ => "device type",
    };
    format!("{kind}:{}", device.device_id)
}

fn refuse(reason: String) -> Error {
    Error::Dlpack { reason }
}

/// Row-major strides, in elements, of `shape`.
fn compact_strides(shape: &[usize]) -> Vec<usize> {
    let mut strides = vec![1; shape.len()];
    for axis in (0..shape.len().saturating_sub(1)).rev() {
        strides[axis] = strides[axis + 1] * shape[axis + 1];
    }
    strides
}

fn to_i64(values: &[usize], what: &str) -> Result<Vec<i64>> {
    values
        .iter()
        .map(|&v| i64::try_from(v).map_err(|_| refuse(format!("{what} {v} does not fit in i64"))))
        .collect()
}

/// What a consumer's tensor keeps alive: the storage, and the memory whose free must follow
/// the consumer's work on its stream.
struct Exported {
    /// Noted as written by the consumer's stream when the consumer lets go (GPU exports).
    memory: Option<(Arc<Memory>, Stream)>,
    /// The buffer (or shared storage, or host copy) itself.
    _keep: Box<dyn Send>,
}

impl Drop for Exported {
    fn drop(&mut self) {
        if let Some((memory, stream)) = &self.memory {
            memory
                .exports
                .fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
            // The consumer's work queued on its stream until now used the memory: the free
            // (when `_keep` goes) waits for it. Nothing better to do with a failure in a
            // deleter than to free after the whole device instead.
            let noted = ordering::hold(stream, &[(&memory.uses, Access::Write)])
                .and_then(|held| held.note_after());
            if noted.is_err() {
                let _ = stream.context().synchronize();
            }
        }
    }
}

/// Exports elements of `storage` as a DLPack tensor: `shape` and `strides` (in elements)
/// from element `offset`, the whole view inside the buffer, which the tensor keeps (shared
/// with other views, or not) until the consumer lets go. The
/// consumer's stream is `stream` (see the module docs); `read_only` sets the v1 flag
/// (legacy tensors cannot say so). What the facade's tile `Tensor` export is written with.
pub fn export_view<T: DeviceScalar, M: ManagedTensorBase>(
    storage: Arc<DeviceBuffer<T>>,
    offset: usize,
    shape: &[usize],
    strides: &[usize],
    stream: &Stream,
    read_only: bool,
) -> Result<Managed<M>> {
    let buffer = &*storage;
    buffer.context().check_same(stream.context())?;
    if stream.is_recording() {
        return Err(refuse(
            "exporting on a graph's recording stream: export on the stream the consumer uses"
                .to_owned(),
        ));
    }
    if shape.len() != strides.len() {
        return Err(refuse(format!(
            "{} strides for a shape of {} dimensions",
            strides.len(),
            shape.len()
        )));
    }
    let empty = shape.contains(&0);
    if !empty {
        // The last element's index, checked: the view must lie inside the buffer.
        let last = shape.iter().zip(strides).try_fold(offset, |acc, (&n, &s)| {
            (n - 1).checked_mul(s).and_then(|d| acc.checked_add(d))
        });
        if last.is_none_or(|last| last >= buffer.len()) {
            return Err(refuse(format!(
                "a view of shape {shape:?}, strides {strides:?} from element {offset} does not \
                 lie inside a buffer of {} elements",
                buffer.len()
            )));
        }
    }
    let dtype = dtype_of(T::TYPE);
    let shape_i = to_i64(shape, "dimension")?;
    let strides_i = to_i64(strides, "stride")?;
    let byte_offset = (offset * size_of::<T>()) as u64;
    let (device, data, exported, copied) = match buffer.context().backend() {
        BackendKind::Cuda => {
            // The consumer's work on `stream` follows every use of the buffer so far.
            drop(ordering::hold(
                stream,
                &[(&buffer.memory.uses, Access::Write)],
            )?);
            let device = DLDevice::cuda(i32::try_from(buffer.context().ordinal()).unwrap_or(0));
            buffer
                .memory
                .exports
                .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
            let exported = Exported {
                memory: Some((buffer.memory.clone(), stream.clone())),
                _keep: Box::new(storage.clone()),
            };
            (
                device,
                buffer.device_address() as *mut std::ffi::c_void,
                exported,
                false,
            )
        }
        BackendKind::Emulator => {
            // The emulator's memory is not the host's: the consumer gets a copy, laid out as
            // the buffer is, so the same offset and strides describe it.
            let mut host = buffer.to_host_vec(stream)?;
            let data = host.as_mut_ptr().cast::<std::ffi::c_void>();
            let exported = Exported {
                memory: None,
                _keep: Box::new(host),
            };
            (DLDevice::CPU, data, exported, true)
        }
    };
    let mut init = dlpark::metadata::Dynamic::new(shape_i, strides_i)
        .initialize_as::<M>(Box::new(exported))
        .map_err(|e| refuse(format!("could not describe the tensor: {e}")))?;
    init.set_data(if empty { std::ptr::null_mut() } else { data })
        .set_device(device)
        .set_dtype(dtype)
        .set_byte_offset(if empty { 0 } else { byte_offset });
    let mut flags = DlpackFlags::empty();
    if read_only {
        flags |= DlpackFlags::READ_ONLY;
    }
    if copied {
        flags |= DlpackFlags::IS_COPIED;
    }
    // SAFETY: IS_COPIED only for the host copy made above, which only the consumer holds;
    // READ_ONLY as asked. (Legacy tensors ignore flags.)
    unsafe { init.set_flags_unchecked(flags) };
    // SAFETY: data, shape and strides describe memory that `Exported` keeps alive until the
    // deleter runs; explicit strides are set.
    Ok(unsafe { init.finish() })
}

impl<T: DeviceScalar> DeviceBuffer<T> {
    /// The buffer as a row-major DLPack (v1) tensor of `shape` (whose element count must be
    /// the buffer's length), for a consumer that uses it on `stream` (see the module docs):
    /// zero-copy on a GPU, a host copy on the emulator.
    ///
    /// ```
    /// use cuprum_runtime::{CudaContext, DeviceBuffer};
    ///
    /// # fn main() -> cuprum_runtime::Result<()> {
    /// let ctx = CudaContext::new(0)?;
    /// let stream = ctx.default_stream();
    /// let buffer = DeviceBuffer::from_host(&stream, &[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0])?;
    /// let tensor = buffer.into_dlpack(&[2, 3], &stream)?;
    /// let back = DeviceBuffer::<f32>::from_dlpack(&stream, tensor)?;
    /// assert_eq!(back.shape, [2, 3]);
    /// assert_eq!(back.buffer.to_host_vec(&stream)?, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    /// // The element type is checked.
    /// let tensor = back.buffer.into_dlpack(&[6], &stream)?;
    /// assert!(DeviceBuffer::<i32>::from_dlpack(&stream, tensor).is_err());
    /// # Ok(())
    /// # }
    /// ```
    pub fn into_dlpack(
        self,
        shape: &[usize],
        stream: &Stream,
    ) -> Result<dlpark::versioned::Dlpack> {
        self.into_managed::<DLManagedTensorVersioned>(shape, stream)
    }

    /// [`into_dlpack`](Self::into_dlpack) as a legacy (v0.8) `DLManagedTensor`, for
    /// consumers that predate DLPack 1.0.
    pub fn into_dlpack_legacy(
        self,
        shape: &[usize],
        stream: &Stream,
    ) -> Result<dlpark::legacy::Dlpack> {
        self.into_managed::<DLManagedTensor>(shape, stream)
    }

    fn into_managed<M: ManagedTensorBase>(
        self,
        shape: &[usize],
        stream: &Stream,
    ) -> Result<Managed<M>> {
        let count = shape.iter().try_fold(1usize, |acc, &n| acc.checked_mul(n));
        if count != Some(self.len()) {
            return Err(refuse(format!(
                "shape {shape:?} does not have the buffer's {} elements",
                self.len()
            )));
        }
        let strides = compact_strides(shape);
        export_view(Arc::new(self), 0, shape, &strides, stream, false)
    }
}

/// A DLPack tensor imported as a buffer: its elements (row-major) and its shape.
#[derive(Debug)]
pub struct Imported<T: DeviceCopy> {
    /// The elements, over the tensor's memory (a GPU tensor) or a copy (a host tensor).
    pub buffer: DeviceBuffer<T>,
    /// The tensor's shape.
    pub shape: Vec<usize>,
}

impl<T: DeviceScalar> DeviceBuffer<T> {
    /// Imports a DLPack tensor (v1 or legacy) on `stream`, the stream the producer made its
    /// data ready on (see the module docs): checks its element type (`T`), its layout
    /// (row-major and dense) and its device, then wraps its memory (a `kDLCUDA` tensor of
    /// this context's device: zero-copy; the producer's deleter runs when the buffer is
    /// gone) or copies it (a `kDLCPU` tensor: the deleter runs at once). Everything else is
    /// [`Error::Dlpack`], the tensor released.
    pub fn from_dlpack<M: ManagedTensorBase>(
        stream: &Stream,
        tensor: Managed<M>,
    ) -> Result<Imported<T>> {
        let view = tensor
            .validate()
            .map_err(|e| refuse(format!("malformed tensor: {e}")))?;
        let dtype = view.dtype();
        let want = dtype_of(T::TYPE);
        if dtype.code != want.code || dtype.bits != want.bits || dtype.lanes != want.lanes {
            return Err(refuse(format!(
                "element type {} where `{}` ({}) was expected",
                describe_dtype(dtype),
                std::any::type_name::<T>(),
                describe_dtype(want)
            )));
        }
        let shape: Vec<usize> = view
            .shape()
            .iter()
            .map(|&n| usize::try_from(n).unwrap_or(0))
            .collect();
        let count = view.num_elements();
        if let Some(strides) = view.strides() {
            let compact = compact_strides(&shape);
            let dense = shape
                .iter()
                .zip(strides)
                .zip(&compact)
                .all(|((&n, &s), &c)| n <= 1 || usize::try_from(s) == Ok(c));
            if !dense && count > 0 {
                return Err(refuse(format!(
                    "strides {strides:?} for shape {shape:?}: only row-major, dense tensors \
                     are imported (make it contiguous first, e.g. `.contiguous()`)"
                )));
            }
        }
        let device = view.device();
        let ctx = stream.context();
        let address = (view.data_ptr() as u64).wrapping_add(view.byte_offset());
        let read_only = tensor.flags().contains(DlpackFlags::READ_ONLY);
        match device.device_type {
            DLDeviceType::CPU => {
                // SAFETY: a validated CPU tensor's dense elements of type `T` (checked above).
                let data: &[T] = if count == 0 {
                    &[]
                } else {
                    unsafe { std::slice::from_raw_parts(address as *const T, count) }
                };
                let buffer = DeviceBuffer::from_host(stream, data)?;
                drop(tensor);
                Ok(Imported { buffer, shape })
            }
            DLDeviceType::CUDA if ctx.backend() == BackendKind::Cuda => {
                if usize::try_from(device.device_id) != Ok(ctx.ordinal()) {
                    return Err(refuse(format!(
                        "a tensor on {} imported into a context of cuda:{}",
                        describe_device(device),
                        ctx.ordinal()
                    )));
                }
                if read_only {
                    return Err(refuse(
                        "the tensor is read-only (DLPack flag READ_ONLY), and a buffer may be \
                         written: import a copy instead"
                            .to_owned(),
                    ));
                }
                let bytes = (count * size_of::<T>()) as u64;
                if count > 0
                    && let Some(memory) = ordering::exported_containing(ctx, address, bytes)
                {
                    // One of cuprum's own exports coming back (perhaps through another
                    // library): its memory is still a buffer of this context, so the import
                    // shares it (and its ordering) rather than wrapping it a second time.
                    if !address.is_multiple_of(align_of::<T>() as u64) {
                        return Err(refuse(format!(
                            "data at {address:#x} is not aligned for `{}`",
                            std::any::type_name::<T>()
                        )));
                    }
                    // The producer's work on `stream` so far is the buffer's last write.
                    ordering::hold(stream, &[(&memory.uses, Access::Write)])?.note_after()?;
                    let keep: Arc<dyn std::any::Any + Send + Sync> =
                        Arc::new(tensor.into_deleter());
                    let buffer = DeviceBuffer::sharing(ctx.clone(), address, count, memory, keep);
                    return Ok(Imported { buffer, shape });
                }
                let deleter = tensor.into_deleter();
                let owner = ForeignOwner::new(ORIGIN, move || drop(deleter));
                // SAFETY: a validated, dense CUDA tensor of this device with `count` `T`s at
                // `address`, kept alive by its producer until the deleter runs; the producer
                // made it ready on `stream` (the caller's part, as documented).
                let buffer =
                    unsafe { DeviceBuffer::from_raw_parts(stream, address, count, owner) }?;
                Ok(Imported { buffer, shape })
            }
            DLDeviceType::CUDA => Err(refuse(format!(
                "a tensor on {} imported into a context on the CPU emulator, which has no \
                 CUDA memory: move it to the CPU first (`tensor.cpu()`)",
                describe_device(device)
            ))),
            _ => Err(refuse(format!(
                "a tensor on {}: only cpu and cuda tensors are imported",
                describe_device(device)
            ))),
        }
    }
}
