//! cuprum: GPU kernels written in Rust and run from Rust, on stable Rust, with no CUDA
//! toolkit and no LLVM. Kernels compile to PTX that the CUDA driver runs; where there is no
//! GPU, a CPU emulator runs the same kernels, so `cargo test` works anywhere.
//!
//! This is the facade users depend on: it re-exports the runtime, the SIMT track's macros and
//! device API, and the IR for those who want to read what the compiler made. The tile track
//! (whole-tile kernels, lazy host code, cuTile Rust's API) is [`tile`].
//!
//! ```
//! use cuprum::simt::{kernel, launch_bounds, launch_contract, thread, DisjointSlice};
//! use cuprum::{cuda_module, CudaContext, DeviceBuffer, LaunchConfig1D};
//!
//! #[cuda_module]
//! mod kernels {
//!     use super::*;
//!
//!     #[kernel]
//!     #[launch_bounds(128)]
//!     #[launch_contract(domain = 1, block = (128, 1, 1))]
//!     pub fn scale(factor: f32, x: &[f32], mut out: DisjointSlice<f32>) {
//!         let i = thread::index_1d();
//!         if let Some(o) = out.get_mut(i) {
//!             *o = factor * x[i.get()];
//!         }
//!     }
//! }
//!
//! # fn main() -> cuprum::Result<()> {
//! let ctx = CudaContext::new(0)?;
//! let stream = ctx.default_stream();
//! let x = DeviceBuffer::from_host(&stream, &[1.0f32, 2.0, 3.0])?;
//! let mut out = DeviceBuffer::from_host(&stream, &[f32::NAN; 3])?;
//! let module = kernels::load(&ctx)?;
//! let prepared = module.prepare_scale(LaunchConfig1D::new(1, 128, 0))?;
//! module.scale(&stream, &prepared, 2.0, &x, &mut out)?;
//! assert_eq!(out.to_host_vec(&stream)?, vec![2.0, 4.0, 6.0]);
//! # Ok(())
//! # }
//! ```

#![warn(missing_docs)]

// Lets the code `#[cuda_module]` generates (which names `::cuprum`) work inside this crate.
extern crate self as cuprum;

pub mod simt;

/// cuda-oxide's `ltoir::load_kernel_module(&ctx, "name")`, with which its programs whose
/// kernels call libdevice math load the module (cuda-oxide builds those through NVVM and
/// links them at run time). cuprum compiles its own math and every `#[cuda_module]` into the
/// program, so, like [`CudaContext::load_module_from_file`], this only names the module for
/// `kernels::from_module(..)`, which loads cuprum's build for the context. Nothing is read and
/// no LTO-IR is linked.
pub mod ltoir {
    use crate::{CudaContext, ModuleFile, Result};

    /// Names the module `name` (cuda-oxide's crate name) on `ctx`, for
    /// `kernels::from_module(..)`.
    ///
    /// ```
    /// let ctx = cuprum::CudaContext::emulator();
    /// let file = cuprum::ltoir::load_kernel_module(&ctx, "math_tan")?;
    /// assert!(file.context().same_context(&ctx));
    /// # Ok::<(), cuprum::Error>(())
    /// ```
    pub fn load_kernel_module(ctx: &CudaContext, name: &str) -> Result<ModuleFile> {
        ctx.load_module_from_file(format!("{name}.ltoir"))
    }
}
pub mod tile;

pub use cuprum_ir as ir;
/// The iterator track: `a.zip(b).map(..).collect(&device)`, fused into one kernel.
pub use cuprum_iter as iter;
pub use cuprum_macros::{DeviceCopy, cuda_module, launch};
/// Collectives across devices in NCCL's shape (all-reduce, all-gather, reduce-scatter,
/// broadcast on [`DeviceBuffer`]s, one [`collective::Communicator`] per device): NCCL on GPUs
/// (loaded at run time), the emulator's own definition on its devices (`CUPRUM_EMU_DEVICES`).
pub use cuprum_runtime::collective;
/// Modules cuprum did not compile (PTX, cubins) and raw launches (`launch!`).
pub use cuprum_runtime::external;
pub use cuprum_runtime::external::{Function, IntoRawArg, Module, RawArg};
/// Exchanging contexts, streams and device memory with other libraries without copies:
/// cudarc (`interop::cudarc`) and DLPack tensors (`interop::dlpack`); the raw handles they
/// share are [`Stream::from_raw_cuda`] and [`DeviceBuffer::from_raw_parts`].
pub use cuprum_runtime::interop;
/// NVTX ranges for Nsight Systems and Nsight Compute: [`nvtx::range`] and [`nvtx::mark`] for
/// a program's own host code, beside the ranges cuprum pushes around its launches and copies.
pub use cuprum_runtime::nvtx;
/// cuda-oxide's `cuda_core::sys` names for encoding tensor maps by hand (checked, see there).
pub use cuprum_runtime::sys;
pub use cuprum_runtime::{
    BackendKind, CudaContext, DeviceBuffer, DeviceCopy, DeviceLimits, DeviceRead, DeviceScalar,
    DeviceSlice, DeviceSliceMut, DeviceWrite, DriverStatus, Error, Event, Graph, LaunchConfig,
    LaunchConfig1D, LaunchConfig2D, LaunchConfig3D, ModuleFile, PinnedBuffer, Result, RowWidth,
    Stream, TensorMap, device_count, emulator_device_count, tf32,
};
pub use cuprum_runtime::{ForeignOwner, RawBuffer, RawOwner};
pub use half;

/// cuda-oxide's (and cudarc's) name for a [`Stream`].
pub type CudaStream = Stream;

/// What most programs need: `use cuprum::prelude::*;`.
pub mod prelude {
    pub use crate::simt::{
        DisjointSlice, Prepared, kernel, launch_bounds, launch_contract, thread,
    };
    pub use crate::{
        CudaContext, DeviceBuffer, Error, LaunchConfig, LaunchConfig1D, Stream, cuda_module,
    };
}

/// Used by the code `#[cuda_module]` generates; not a stable API.
#[doc(hidden)]
pub mod __private {
    pub use crate::simt::constant::ConstantCell;
    pub use cuprum_front::Specialization;
    pub use cuprum_runtime::{KernelArg, LaunchContract, LoadedModule};
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex, OnceLock};

    /// Compiles a module's embedded source to IR (once per process, cached by the caller).
    ///
    /// With `CUPRUM_PTX_DUMP=<dir>` set, also writes the module's PTX for every target that
    /// can express it into that directory, whatever the backend: CI assembles those files
    /// with `ptxas`, so every kernel the tests build is checked on a machine without a GPU.
    pub fn compile_source(source: &str) -> Result<Arc<cuprum_ir::Module>, String> {
        compile_source_with_lines(source, None)
    }

    /// [`compile_source`], with line information naming `line_file` (the file the macro
    /// recorded under `CUPRUM_LINEINFO`, `None` without it).
    fn compile_source_with_lines(
        source: &str,
        line_file: Option<&str>,
    ) -> Result<Arc<cuprum_ir::Module>, String> {
        let mut ir =
            cuprum_front::compile_source_with_lines(source, line_file.map(String::from))?.ir;
        cuprum_opt::optimize(&mut ir);
        if let Some(dir) = std::env::var_os("CUPRUM_PTX_DUMP") {
            dump_ptx(std::path::Path::new(&dir), source, &ir)?;
        }
        Ok(Arc::new(ir))
    }

    /// A module's IR: decoded from what the `#[cuda_module]` macro compiled at `cargo build`
    /// (`embedded`), or compiled from `source` when the macro could not (it then reports the
    /// same error, with line information when `line_file` names the module's file). Honours
    /// `CUPRUM_PTX_DUMP` as [`compile_source`] does.
    pub fn module_ir(
        embedded: Option<&[u8]>,
        source: &str,
        line_file: Option<&str>,
    ) -> Result<Arc<cuprum_ir::Module>, String> {
        let Some(bytes) = embedded else {
            return compile_source_with_lines(source, line_file);
        };
        let ir = cuprum_ir::decode_module(bytes).map_err(|e| {
            format!("the IR compiled at cargo build cannot be read ({e}); rebuild the crate")
        })?;
        if let Some(dir) = std::env::var_os("CUPRUM_PTX_DUMP") {
            dump_ptx(std::path::Path::new(&dir), source, &ir)?;
        }
        Ok(Arc::new(ir))
    }

    /// The IR of one specialization of a generic kernel, compiled once per process; with line
    /// information when `line_file` names the module's file (what the macro recorded under
    /// `CUPRUM_LINEINFO`, one per `source`).
    pub fn compile_specialized(
        source: &'static str,
        line_file: Option<&str>,
        kernel: &str,
        spec: &Specialization,
    ) -> Result<Arc<cuprum_ir::Module>, String> {
        type Cache = Mutex<HashMap<(usize, bool, String), Arc<cuprum_ir::Module>>>;
        static CACHE: OnceLock<Cache> = OnceLock::new();
        let key = (
            source.as_ptr() as usize,
            line_file.is_some(),
            spec.mangle(kernel),
        );
        let cache = CACHE.get_or_init(Cache::default);
        if let Some(ir) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
            return Ok(ir.clone());
        }
        let mut ir = cuprum_front::compile_specialized_with_lines(
            source,
            kernel,
            spec,
            line_file.map(String::from),
        )?;
        cuprum_opt::optimize(&mut ir);
        if let Some(dir) = std::env::var_os("CUPRUM_PTX_DUMP") {
            dump_ptx(
                std::path::Path::new(&dir),
                &format!("{source}{}", key.2),
                &ir,
            )?;
        }
        let ir = Arc::new(ir);
        cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, ir.clone());
        Ok(ir)
    }

    /// The specializations of a module's generic kernels loaded on its context, by entry name.
    #[derive(Default)]
    pub struct Specializations {
        loaded: Mutex<HashMap<String, (Arc<LoadedModule>, usize)>>,
    }

    impl Specializations {
        /// The loaded specialization `spec` of `kernel`, compiling and loading it on first use.
        pub fn get(
            &self,
            ctx: &crate::CudaContext,
            source: &'static str,
            line_file: Option<&str>,
            kernel: &str,
            spec: &Specialization,
        ) -> crate::Result<(Arc<LoadedModule>, usize)> {
            let name = spec.mangle(kernel);
            let mut loaded = self.loaded.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((m, i)) = loaded.get(&name) {
                return Ok((m.clone(), *i));
            }
            let ir = compile_specialized(source, line_file, kernel, spec).map_err(|message| {
                crate::Error::Compile {
                    kernel: name.clone(),
                    message,
                }
            })?;
            let module = Arc::new(LoadedModule::load(ctx, ir)?);
            let index = module.kernel_index(&name)?;
            loaded.insert(name, (module.clone(), index));
            Ok((module, index))
        }
    }

    /// The name (without target and extension) of `ir`'s PTX files in `CUPRUM_PTX_DUMP`'s
    /// folder: its first kernel and a hash of `source` (what tells modules apart).
    pub(crate) fn ptx_file_stem(source: &str, ir: &cuprum_ir::Module) -> String {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        source.hash(&mut hasher);
        match ir.kernels.first() {
            Some(k) => format!("{}-{:016x}", k.name, hasher.finish()),
            None => format!("empty-{:016x}", hasher.finish()),
        }
    }

    /// Writes `ir`'s PTX for every target that can express it into `dir` (`CUPRUM_PTX_DUMP`),
    /// named after its first kernel and a hash of `source` (what tells modules apart).
    pub(crate) fn dump_ptx(
        dir: &std::path::Path,
        source: &str,
        ir: &cuprum_ir::Module,
    ) -> Result<(), String> {
        let stem = ptx_file_stem(source, ir);
        // A module with Hopper-only statements is also written for sm_90a, the one target
        // that has them (CI fails on ptxas's warnings that a wgmma was serialized or a
        // setmaxnreg ignored).
        let arch_specific = ir
            .needs_arch_specific()
            .then_some(cuprum_ptx::Target::Sm90a);
        let portable = [cuprum_ptx::Target::Sm80, cuprum_ptx::Target::Sm90];
        for target in portable.into_iter().chain(arch_specific) {
            let ptx = match cuprum_ptx::write_module(ir, target) {
                Ok(ptx) => ptx,
                // A module for newer GPUs only (e.g. `fence_proxy_async`): loading it for this
                // target is the same error, so there is nothing to assemble.
                Err(cuprum_ptx::PtxError::Unsupported { .. }) => continue,
                Err(e) => return Err(e.to_string()),
            };
            let path = dir.join(format!("{stem}.{}.ptx", target.name()));
            std::fs::write(&path, ptx)
                .map_err(|e| format!("CUPRUM_PTX_DUMP: writing {}: {e}", path.display()))?;
        }
        Ok(())
    }
}
