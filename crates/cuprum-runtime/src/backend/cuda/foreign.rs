//! Handles of other libraries on the CUDA backend: streams this context did not create
//! (borrowed, never destroyed) and checks of device memory it did not allocate. What
//! `crate::foreign` and `crate::interop` need from the driver, kept here so that nothing but
//! the backend calls it.

use std::ffi::c_void;

use cudarc::driver::result::DriverError;
use cudarc::driver::sys;

use super::CudaDevice;
use super::fail::{CuFail, fail};
use super::streams::CudaStream;
use crate::error::Error;

/// `CU_STREAM_LEGACY`: the legacy default stream, by its special handle.
const STREAM_LEGACY: usize = 0x1;
/// `CU_STREAM_PER_THREAD`: the calling thread's default stream, by its special handle.
const STREAM_PER_THREAD: usize = 0x2;

impl CudaDevice {
    /// The primary context's handle (`CUcontext`).
    pub(crate) fn raw_context(&self) -> *mut c_void {
        self.ctx.cast()
    }

    /// Wraps another library's stream `raw`, which must belong to this device's primary
    /// context (null and `CU_STREAM_LEGACY` are the legacy default stream). Returns it (never
    /// destroyed by us) and whether it is a blocking stream (ordered with the legacy default
    /// stream).
    pub(crate) fn borrow_stream(&self, raw: *mut c_void) -> Result<(CudaStream, bool), Error> {
        if raw.is_null() || raw as usize == STREAM_LEGACY {
            return Ok((CudaStream::borrowed(std::ptr::null_mut(), self.ctx), true));
        }
        self.bind().map_err(|f| f.into_error(None))?;
        let stream: sys::CUstream = raw.cast();
        if raw as usize != STREAM_PER_THREAD {
            let mut owner: sys::CUcontext = std::ptr::null_mut();
            // SAFETY: the caller promises `raw` is a live stream; `owner` is a valid out slot.
            unsafe { sys::cuStreamGetCtx(stream, &mut owner) }
                .result()
                .map_err(fail("cuStreamGetCtx"))
                .map_err(|f| f.into_error(None))?;
            if owner != self.ctx {
                return Err(Error::Interop {
                    what: format!("CUDA stream {raw:p}"),
                    reason: "it belongs to another CUDA context than this device's primary \
                             context (cuprum, cudarc and PyTorch all use the primary context; \
                             a stream of a context made with cuCtxCreate cannot be wrapped)"
                        .to_owned(),
                });
            }
        }
        let mut flags: std::ffi::c_uint = 0;
        // SAFETY: as above.
        unsafe { sys::cuStreamGetFlags(stream, &mut flags) }
            .result()
            .map_err(fail("cuStreamGetFlags"))
            .map_err(|f| f.into_error(None))?;
        let non_blocking = sys::CUstream_flags::CU_STREAM_NON_BLOCKING as std::ffi::c_uint;
        Ok((
            CudaStream::borrowed(stream, self.ctx),
            flags & non_blocking == 0,
        ))
    }

    /// Checks that `addr` is device memory of this device (`cuPointerGetAttribute`), as far
    /// as the driver can tell: the rest of a foreign buffer's promise is its caller's.
    pub(crate) fn check_device_memory(&self, addr: u64) -> Result<(), Error> {
        self.bind().map_err(|f| f.into_error(None))?;
        let refuse = |reason: String| Error::Interop {
            what: format!("device memory at {addr:#x}"),
            reason,
        };
        let mut kind: std::ffi::c_uint = 0;
        // SAFETY: `kind` is a valid out slot of the attribute's size (an unsigned int).
        let asked = unsafe {
            sys::cuPointerGetAttribute(
                (&raw mut kind).cast(),
                sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                addr,
            )
        }
        .result();
        match asked {
            Ok(()) => {}
            Err(DriverError(sys::CUresult::CUDA_ERROR_INVALID_VALUE)) => {
                return Err(refuse(
                    "the CUDA driver does not know this address: it is not memory allocated \
                     through CUDA"
                        .to_owned(),
                ));
            }
            Err(err) => return Err(fail("cuPointerGetAttribute")(err).into_error(None)),
        }
        let device = sys::CUmemorytype::CU_MEMORYTYPE_DEVICE as std::ffi::c_uint;
        let unified = sys::CUmemorytype::CU_MEMORYTYPE_UNIFIED as std::ffi::c_uint;
        if kind != device && kind != unified {
            return Err(refuse(
                "it is host memory (page-locked or mapped), not device memory".to_owned(),
            ));
        }
        let mut ordinal: std::ffi::c_int = -1;
        // SAFETY: as above (an int).
        let asked = unsafe {
            sys::cuPointerGetAttribute(
                (&raw mut ordinal).cast(),
                sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                addr,
            )
        }
        .result();
        if asked.is_ok() && ordinal != self.device {
            return Err(refuse(format!(
                "it is memory of device {ordinal}, not of this context's device {}",
                self.device
            )));
        }
        Ok(())
    }

    /// Makes `stream` wait for the work submitted so far to the legacy default stream (which
    /// a non-blocking stream does not otherwise wait for).
    pub(crate) fn follow_legacy(&self, stream: &CudaStream) -> Result<(), CuFail> {
        let mark = self.record_order_mark(&self.legacy_stream())?;
        self.stream_wait(stream, &mark)
    }
}
