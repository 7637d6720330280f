//! Modules of the CUDA backend: PTX through the driver's JIT (`cuModuleLoadDataEx`, whole
//! program), PTX through the driver's linker (`cuLink*`, PTX in, cubin out, for the compile
//! cache), cubins loaded, the resources the driver gave each kernel, and `cuLaunchKernel`.
//! The linker treats every input as relocatable code (`-rdc=true`, `ptxas -c`), which can cost
//! registers and so occupancy; `cached.rs` says how the cache compensates.

use std::ffi::{CString, c_void};
use std::sync::atomic::{AtomicU32, Ordering};

use cudarc::driver::result::{self, DriverError};
use cudarc::driver::sys;

use super::fail::{CuFail, fail};
use super::streams::CudaStream;
use super::{CudaDevice, bind};
use crate::cache::LinkOption;
use crate::cache::occupancy::KernelUse;
use crate::error::Error;

impl CudaDevice {
    /// JIT-compiles `ptx` and looks up every kernel in `names`. A JIT failure is
    /// [`Error::ModuleLoad`] with the driver's error log.
    pub(crate) fn load_module(&self, ptx: &str, names: &[&str]) -> Result<CudaModule, Error> {
        let image = ptx_image(ptx)?;
        // SAFETY: a NUL-terminated PTX text is a valid module image.
        unsafe { self.load_image(image.as_ptr().cast::<c_void>(), names) }
    }

    /// Loads a cubin the driver made earlier ([`link_ptx`](Self::link_ptx)) and looks up
    /// every kernel in `names`; no PTX compilation happens. A refused image (say, one made by
    /// another driver) is [`Error::ModuleLoad`].
    pub(crate) fn load_cubin(&self, cubin: &[u8], names: &[&str]) -> Result<CudaModule, Error> {
        // ELF images are read with 8-byte alignment in mind: give the driver an aligned copy.
        let mut aligned = vec![0u64; cubin.len().div_ceil(8)];
        bytemuck::cast_slice_mut::<u64, u8>(&mut aligned)[..cubin.len()].copy_from_slice(cubin);
        // SAFETY: the bytes are a cubin the driver wrote (checked against a checksum when it
        // came from the disk cache); the driver validates the ELF image it is given.
        unsafe { self.load_image(aligned.as_ptr().cast::<c_void>(), names) }
    }

    /// `cuModuleLoadDataEx` of `image` (PTX or cubin), with the driver's error log.
    ///
    /// # Safety
    /// `image` must point at a NUL-terminated PTX text or a complete cubin, alive for the call.
    unsafe fn load_image(&self, image: *const c_void, names: &[&str]) -> Result<CudaModule, Error> {
        self.bind().map_err(|f| f.into_error(None))?;
        let mut error_log = vec![0u8; LOG_SIZE];
        let mut info_log = vec![0u8; LOG_SIZE];
        let mut options = [
            sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
            sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
            sys::CUjit_option::CU_JIT_INFO_LOG_BUFFER,
            sys::CUjit_option::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
        ];
        // The driver reads option values by value; sizes travel in the pointer itself.
        let mut values: [*mut c_void; 4] = [
            error_log.as_mut_ptr().cast::<c_void>(),
            LOG_SIZE as *mut c_void,
            info_log.as_mut_ptr().cast::<c_void>(),
            LOG_SIZE as *mut c_void,
        ];
        let mut module: sys::CUmodule = std::ptr::null_mut();
        // SAFETY: the caller vouches for `image`; the options and values arrays have the
        // length given and stay alive for the call; the log buffer has the size announced.
        let loaded = unsafe {
            sys::cuModuleLoadDataEx(
                &mut module,
                image,
                options.len() as u32,
                options.as_mut_ptr(),
                values.as_mut_ptr(),
            )
        }
        .result();
        if let Err(err) = loaded {
            let fail = CuFail {
                call: "cuModuleLoadDataEx",
                err,
            };
            if fail.is_fault() {
                return Err(fail.into_error(None));
            }
            return Err(Error::ModuleLoad {
                message: fail.describe(),
                log: log_text(&error_log),
            });
        }
        let jit_log = joined_logs(&error_log, &info_log);
        let mut cuda_module = CudaModule {
            raw: module,
            ctx: self.ctx,
            functions: Vec::with_capacity(names.len()),
            jit_log,
        };
        for name in names {
            let cname = CString::new(*name).map_err(|_| Error::KernelNotFound {
                name: (*name).to_owned(),
            })?;
            // SAFETY: the module is loaded and alive.
            let function =
                unsafe { result::module::get_function(module, cname) }.map_err(|err| {
                    Error::ModuleLoad {
                        message: format!(
                            "kernel `{name}` is missing from the loaded module: {}",
                            CuFail {
                                call: "cuModuleGetFunction",
                                err
                            }
                            .describe()
                        ),
                        log: String::new(),
                    }
                })?;
            cuda_module.functions.push(CudaFunction {
                raw: function,
                dynamic_shared_opt_in: AtomicU32::new(0),
            });
        }
        Ok(cuda_module)
    }

    /// Compiles `inputs` (PTX texts, each with its own options) for this context's device with
    /// the driver's linker (`cuLinkCreate` with `options`, one `cuLinkAddData(CU_JIT_INPUT_PTX)`
    /// per input, `cuLinkComplete`) and returns the cubin, which
    /// [`load_cubin`](Self::load_cubin) loads without compiling again, with what ptxas wrote.
    /// The linker compiles each input as relocatable code. A refused PTX or option is
    /// [`Error::ModuleLoad`] with the linker's error log.
    pub(crate) fn link_ptx(
        &self,
        options: &[LinkOption],
        inputs: &[LinkInput<'_>],
    ) -> Result<LinkOutput, Error> {
        let images = inputs
            .iter()
            .map(|input| ptx_image(input.ptx))
            .collect::<Result<Vec<_>, _>>()?;
        self.bind().map_err(|f| f.into_error(None))?;
        let mut error_log = vec![0u8; LOG_SIZE];
        // ptxas's notes, verbose (so that its performance advisories are among them, which
        // the compile cache reads): a few lines per kernel, hence the larger buffer.
        let mut info_log = vec![0u8; LINK_INFO_LOG_SIZE];
        let (mut keys, mut values) = jit_options(options);
        keys.extend([
            sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
            sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
            sys::CUjit_option::CU_JIT_INFO_LOG_BUFFER,
            sys::CUjit_option::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
            sys::CUjit_option::CU_JIT_LOG_VERBOSE,
        ]);
        values.extend([
            error_log.as_mut_ptr().cast::<c_void>(),
            LOG_SIZE as *mut c_void,
            info_log.as_mut_ptr().cast::<c_void>(),
            LINK_INFO_LOG_SIZE as *mut c_void,
            std::ptr::without_provenance_mut::<c_void>(1),
        ]);
        let mut state: sys::CUlinkState = std::ptr::null_mut();
        // SAFETY: the options and values arrays have the length given; the log buffer outlives
        // the link state, which is destroyed below before the buffer is dropped.
        unsafe {
            sys::cuLinkCreate_v2(
                keys.len() as u32,
                keys.as_mut_ptr(),
                values.as_mut_ptr(),
                &mut state,
            )
        }
        .result()
        .map_err(|err| link_error("cuLinkCreate", err, &error_log))?;
        let linked = (|| {
            let name = c"cuprum.ptx";
            for (input, image) in inputs.iter().zip(&images) {
                let (mut keys, mut values) = jit_options(input.options);
                // SAFETY: `image` is NUL-terminated PTX of the length given (NUL included);
                // the option arrays have the length given and live for the call; the state is
                // live.
                unsafe {
                    sys::cuLinkAddData_v2(
                        state,
                        sys::CUjitInputType::CU_JIT_INPUT_PTX,
                        image.as_ptr().cast_mut().cast::<c_void>(),
                        image.as_bytes_with_nul().len(),
                        name.as_ptr(),
                        keys.len() as u32,
                        if keys.is_empty() {
                            std::ptr::null_mut()
                        } else {
                            keys.as_mut_ptr()
                        },
                        if values.is_empty() {
                            std::ptr::null_mut()
                        } else {
                            values.as_mut_ptr()
                        },
                    )
                }
                .result()
                .map_err(|err| link_error("cuLinkAddData", err, &error_log))?;
            }
            let mut cubin: *mut c_void = std::ptr::null_mut();
            let mut size = 0usize;
            // SAFETY: the state is live; the driver returns a buffer it owns until
            // cuLinkDestroy, copied out before that.
            unsafe { sys::cuLinkComplete(state, &mut cubin, &mut size) }
                .result()
                .map_err(|err| link_error("cuLinkComplete", err, &error_log))?;
            if cubin.is_null() || size == 0 {
                return Err(Error::ModuleLoad {
                    message: "cuLinkComplete returned an empty image".to_owned(),
                    log: log_text(&error_log),
                });
            }
            // SAFETY: the driver gave `size` readable bytes at `cubin`, alive until the state
            // is destroyed.
            Ok(unsafe { std::slice::from_raw_parts(cubin.cast::<u8>(), size) }.to_vec())
        })();
        // SAFETY: destroyed once; the cubin was copied out.
        let _ = unsafe { sys::cuLinkDestroy(state) };
        let cubin = linked?;
        Ok(LinkOutput {
            cubin,
            log: joined_logs(&error_log, &info_log),
        })
    }

    /// What the driver allocated to kernel `index` of `module`: registers per thread
    /// (`CU_FUNC_ATTRIBUTE_NUM_REGS`), local memory per thread, spills included
    /// (`CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES`), and the largest block it can launch with
    /// (`CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK`); `None` if the driver does not say.
    pub(crate) fn kernel_use(&self, module: &CudaModule, index: usize) -> Option<KernelUse> {
        let function = module.functions.get(index)?;
        self.bind().ok()?;
        let get = |attribute| {
            // SAFETY: the function belongs to a live module of this context.
            let value =
                unsafe { result::function::get_function_attribute(function.raw, attribute) };
            value.ok().and_then(|v| u32::try_from(v).ok())
        };
        use sys::CUfunction_attribute as A;
        Some(KernelUse {
            registers: get(A::CU_FUNC_ATTRIBUTE_NUM_REGS)?,
            local_bytes: get(A::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)?,
            max_threads_per_block: get(A::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
        })
    }

    /// Launches `function`.
    ///
    /// # Safety
    /// `params` must point at one correctly sized value per PTX parameter of the function,
    /// alive for the call; the kernel's memory accesses must be valid.
    #[allow(clippy::too_many_arguments)]
    pub(crate) unsafe fn launch_function(
        &self,
        function: &CudaFunction,
        grid: (u32, u32, u32),
        block: (u32, u32, u32),
        dynamic_shared: u32,
        needs_opt_in: bool,
        stream: &CudaStream,
        params: &mut [*mut c_void],
    ) -> Result<(), CuFail> {
        self.bind()?;
        if needs_opt_in && dynamic_shared > function.dynamic_shared_opt_in.load(Ordering::Relaxed) {
            // SAFETY: the function belongs to a live module of this context.
            unsafe {
                result::function::set_function_attribute(
                    function.raw,
                    sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    dynamic_shared as i32,
                )
            }
            .map_err(fail("cuFuncSetAttribute"))?;
            function
                .dynamic_shared_opt_in
                .fetch_max(dynamic_shared, Ordering::Relaxed);
        }
        // SAFETY: caller's contract.
        unsafe {
            result::launch_kernel(
                function.raw,
                grid,
                block,
                dynamic_shared,
                stream.raw,
                params,
            )
        }
        .map_err(fail("cuLaunchKernel"))
    }
}

impl CudaModule {
    /// The kernel called `name` (`cuModuleGetFunction`), for modules loaded without naming
    /// their kernels (external cubins); a missing one is [`Error::KernelNotFound`].
    pub(crate) fn function(&self, name: &str) -> Result<CudaFunction, Error> {
        let missing = || Error::KernelNotFound {
            name: name.to_owned(),
        };
        let cname = CString::new(name).map_err(|_| missing())?;
        // SAFETY: the module is loaded and alive.
        let raw =
            unsafe { result::module::get_function(self.raw, cname) }.map_err(|_| missing())?;
        Ok(CudaFunction {
            raw,
            dynamic_shared_opt_in: AtomicU32::new(0),
        })
    }
}

/// What [`CudaDevice::link_ptx`] made: the cubin, and what ptxas wrote making it.
pub(crate) struct LinkOutput {
    pub(crate) cubin: Vec<u8>,
    /// ptxas's warnings, then its notes (as [`joined_logs`] keeps them).
    pub(crate) log: String,
}

/// ptxas's warnings (they go to the error log even when a compile succeeds) and its notes (to
/// the info log), warnings first, as one text.
fn joined_logs(error_log: &[u8], info_log: &[u8]) -> String {
    [log_text(error_log), log_text(info_log)]
        .into_iter()
        .filter(|t| !t.trim().is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

/// One PTX input of [`CudaDevice::link_ptx`] and the options it is compiled with.
pub(crate) struct LinkInput<'a> {
    pub(crate) ptx: &'a str,
    pub(crate) options: &'a [LinkOption],
}

/// The driver's option keys and values for `options` (values travel in the pointer itself).
fn jit_options(options: &[LinkOption]) -> (Vec<sys::CUjit_option>, Vec<*mut c_void>) {
    use sys::CUjit_option as O;
    let value = |v: u32| v as usize as *mut c_void;
    options
        .iter()
        .map(|option| match *option {
            LinkOption::OptimizationLevel(level) => (O::CU_JIT_OPTIMIZATION_LEVEL, value(level)),
            LinkOption::TargetFromContext => (O::CU_JIT_TARGET_FROM_CUCONTEXT, value(0)),
            LinkOption::MaxRegisters(n) => (O::CU_JIT_MAX_REGISTERS, value(n)),
            LinkOption::MinBlocksPerSm(n) => (O::CU_JIT_MIN_CTA_PER_SM, value(n)),
            LinkOption::MaxThreadsPerBlock(n) => (O::CU_JIT_MAX_THREADS_PER_BLOCK, value(n)),
            LinkOption::OverrideDirectiveValues => (O::CU_JIT_OVERRIDE_DIRECTIVE_VALUES, value(1)),
            LinkOption::Lto => (O::CU_JIT_LTO, value(1)),
            LinkOption::PositionIndependentCode(on) => {
                (O::CU_JIT_POSITION_INDEPENDENT_CODE, value(u32::from(on)))
            }
            LinkOption::GenerateLineInfo => (O::CU_JIT_GENERATE_LINE_INFO, value(1)),
        })
        .unzip()
}

/// `ptx` as the NUL-terminated image the driver reads; a NUL inside is [`Error::ModuleLoad`].
fn ptx_image(ptx: &str) -> Result<CString, Error> {
    CString::new(ptx).map_err(|_| Error::ModuleLoad {
        message: "the generated PTX contains a NUL byte".to_owned(),
        log: String::new(),
    })
}

/// Size of the driver's JIT error log buffers.
const LOG_SIZE: usize = 16 * 1024;
/// Size of the linker's verbose info log buffer.
const LINK_INFO_LOG_SIZE: usize = 256 * 1024;

/// The text the driver wrote into a log buffer (up to its first NUL).
fn log_text(buffer: &[u8]) -> String {
    let used = buffer.iter().position(|&b| b == 0).unwrap_or(buffer.len());
    String::from_utf8_lossy(&buffer[..used]).into_owned()
}

fn link_error(call: &'static str, err: DriverError, log: &[u8]) -> Error {
    let fail = CuFail { call, err };
    if fail.is_fault() {
        return fail.into_error(None);
    }
    Error::ModuleLoad {
        message: fail.describe(),
        log: log_text(log),
    }
}

/// A kernel of a loaded module.
pub(crate) struct CudaFunction {
    raw: sys::CUfunction,
    /// The largest dynamic shared memory size this function was opted in for.
    dynamic_shared_opt_in: AtomicU32,
}

// SAFETY: a function handle may be used from any thread of its context's process; the
// opt-in size is atomic. (Its module must outlive it: every holder keeps the module.)
unsafe impl Send for CudaFunction {}
// SAFETY: as above.
unsafe impl Sync for CudaFunction {}

/// A loaded PTX module; unloaded on drop.
pub(crate) struct CudaModule {
    raw: sys::CUmodule,
    ctx: sys::CUcontext,
    pub(crate) functions: Vec<CudaFunction>,
    /// What the driver's JIT wrote about this module when it compiled it (ptxas's warnings
    /// and notes); empty for a cubin, which loads without compiling.
    pub(crate) jit_log: String,
}

// SAFETY: module and function handles may be used from any thread.
unsafe impl Send for CudaModule {}
// SAFETY: as above; the opt-in size is atomic.
unsafe impl Sync for CudaModule {}

impl Drop for CudaModule {
    fn drop(&mut self) {
        if bind(self.ctx).is_ok() {
            // Kernels of this module may still be running: wait for them first.
            let _ = result::ctx::synchronize();
            // SAFETY: unloaded once; the owning LoadedModule keeps its context alive.
            let _ = unsafe { result::module::unload(self.raw) };
        }
    }
}
