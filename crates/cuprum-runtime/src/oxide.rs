//! cuda-oxide's (and cudarc's) names for what the runtime already does, so that a cuda-oxide
//! host program runs on cuprum with only its crate paths changed: `ctx.compute_capability()`,
//! `ctx.device_name()`, `stream.as_ref()` where a launch takes the stream, and the
//! `ctx.load_module_from_file("<crate>.ptx")` + `kernels::from_module(..)` pair that loads a
//! `#[cuda_module]`'s kernels.
//!
//! The last one differs in what happens, not in what the program gets. cuda-oxide's build
//! writes the module's PTX to a file and the program loads that file; cuprum compiles every
//! `#[cuda_module]` into the program itself (and caches the machine code), so there is no file
//! to read. [`CudaContext::load_module_from_file`] therefore only names the module;
//! `kernels::from_module(file)` loads cuprum's own build of the module's kernels for the file's
//! context, exactly as `kernels::load(&ctx)` does. Loading PTX or a cubin that cuprum did not
//! compile is a different operation, with its own API.

use std::path::{Path, PathBuf};

use crate::buffer::{DeviceBuffer, DeviceCopy};
use crate::context::{CudaContext, Stream};
use crate::error::Result;

impl CudaContext {
    /// The device's compute capability `(major, minor)`, e.g. `(9, 0)` on an H200; the
    /// emulator reports the capability it models. The same as
    /// [`limits().compute_capability`](crate::DeviceLimits::compute_capability), in
    /// cuda-oxide's and cudarc's shape.
    ///
    /// ```
    /// let ctx = cuprum_runtime::CudaContext::emulator();
    /// let (major, minor) = ctx.compute_capability()?;
    /// assert!(major >= 8 && minor < 10);
    /// # Ok::<(), cuprum_runtime::Error>(())
    /// ```
    pub fn compute_capability(&self) -> Result<(i32, i32)> {
        let (major, minor) = self.limits().compute_capability;
        Ok((major as i32, minor as i32))
    }

    /// The device's name (`"NVIDIA H200"`, or the emulator's), as
    /// [`limits().name`](crate::DeviceLimits::name).
    pub fn device_name(&self) -> Result<String> {
        Ok(self.limits().name.clone())
    }

    /// Names the module file of a cuda-oxide program, for `kernels::from_module(file)` (see
    /// the [module docs](self)): cuprum compiles the `#[cuda_module]` into the program, so the
    /// file is neither needed nor read, and `from_module` loads the module's kernels for this
    /// context as `kernels::load(&ctx)` does.
    ///
    /// ```
    /// let ctx = cuprum_runtime::CudaContext::emulator();
    /// let file = ctx.load_module_from_file("vecadd.ptx")?;
    /// assert_eq!(file.path(), std::path::Path::new("vecadd.ptx"));
    /// assert!(file.context().same_context(&ctx));
    /// # Ok::<(), cuprum_runtime::Error>(())
    /// ```
    pub fn load_module_from_file(&self, path: impl AsRef<Path>) -> Result<ModuleFile> {
        Ok(ModuleFile {
            path: path.as_ref().to_path_buf(),
            ctx: self.clone(),
        })
    }
}

/// What [`CudaContext::load_module_from_file`] returns: the context and the file's name, for
/// a `#[cuda_module]`'s `from_module`.
#[derive(Clone, Debug)]
pub struct ModuleFile {
    path: PathBuf,
    ctx: CudaContext,
}

impl ModuleFile {
    /// The file the program named.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The context the module is for.
    pub fn context(&self) -> &CudaContext {
        &self.ctx
    }
}

impl<T: DeviceCopy> DeviceBuffer<T> {
    /// The device address of the first element (cuda-oxide's and the driver API's
    /// `CUdeviceptr`), for a raw pointer argument of an `unsafe` kernel
    /// (`buf.cu_deviceptr() as *mut f32`). On the emulator it is the emulated address.
    pub fn cu_deviceptr(&self) -> u64 {
        self.device_address()
    }
}

/// `stream.as_ref()`, which cuda-oxide programs write where a launch takes `&CudaStream`
/// (their streams are `Arc<CudaStream>`); a cuprum [`Stream`] is already the handle.
impl AsRef<Stream> for Stream {
    fn as_ref(&self) -> &Stream {
        self
    }
}

/// A buffer bound to the row width of a `DisjointSlice<T, Runtime2DIndex>` (or
/// `DisjointSlice<T, RuntimeRowMajorTiles<R, C>>`) kernel parameter (cuda-oxide's `RowWidth`): thread `(row, col)` of the launch reaches element
/// `row * width + col` of `buffer` when `col < width` (and the element exists). The launch
/// passes the buffer and the width; the kernel reads the width as its own.
pub struct RowWidth<'a, T: DeviceCopy> {
    buffer: &'a mut DeviceBuffer<T>,
    width: u32,
}

impl<'a, T: DeviceCopy> RowWidth<'a, T> {
    /// `buffer` seen as rows of `width` elements.
    pub fn new(buffer: &'a mut DeviceBuffer<T>, width: u32) -> Self {
        Self { buffer, width }
    }

    /// The row width.
    pub fn width(&self) -> u32 {
        self.width
    }

    /// The buffer's length in elements (what a launch contract's `requires = (c.len() >=
    /// ..)` reads of this parameter).
    pub fn len(&self) -> usize {
        self.buffer.len()
    }

    /// Whether the buffer is empty.
    pub fn is_empty(&self) -> bool {
        self.buffer.len() == 0
    }

    /// The launch argument of the buffer (what `#[cuda_module]` launchers pass first).
    #[doc(hidden)]
    pub fn slice_arg(&self) -> crate::KernelArg {
        crate::KernelArg::slice(self.buffer)
    }

    /// The launch argument of the width (what `#[cuda_module]` launchers pass second).
    #[doc(hidden)]
    pub fn width_arg(&self) -> crate::KernelArg {
        crate::KernelArg::scalar(u64::from(self.width))
    }
}
