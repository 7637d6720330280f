//! Modules cuprum did not compile, and raw launches: PTX text or a cubin from elsewhere (nvcc,
//! a file on disk, another compiler) loaded into a context ([`Module::from_ptx`],
//! [`Module::from_cubin`]), their kernels looked up by name ([`Module::get_function`]) and
//! launched with raw arguments ([`Function::launch`], or the facade's `launch!` macro in CUDA
//! C++'s shape, `launch!(f<<<grid, block, shared_bytes, stream>>>(args..))`). A raw launch of
//! one of cuprum's own kernels ([`Function::of_loaded`]) goes through [`LoadedModule::launch`]
//! and all its checks, on the GPU and on the emulator.
//!
//! What cuprum can check of foreign code, it checks: the PTX's `.entry` declarations give each
//! kernel's parameters and their sizes ([`ptx_entries`]), so a name that is not a kernel, a
//! wrong argument count or an argument of the wrong size is an [`Error`] before anything
//! runs; a cubin's parameters are not read, so there only the driver's own checks apply.
//! Everything else (what a pointer argument points at, the kernel's accesses) is the caller's
//! promise: that is why [`Function::launch`] is `unsafe`. Buffers passed as buffers are ordered
//! as for cuprum's own kernels (each counted as written: later work on other streams, and the
//! buffer's free, wait for the launch); addresses passed as numbers are not.
//!
//! The emulator runs cuprum's IR: PTX loaded there is translated into it first
//! (`cuprum_ptx_import`: a subset of PTX, the rest refused with [`Error::ModuleLoad`] naming
//! the line), and its kernels launch as on a GPU, raw arguments and all, with the emulator's
//! checks of every access. A cubin cannot run there ([`Error::Unsupported`]).

use std::sync::Arc;

use cuprum_ir::ScalarType;

use crate::backend::{ExternalFunction, ExternalHandle};
use crate::buffer::{DeviceBuffer, DeviceCopy, DeviceScalar};
use crate::config::{KernelArg, LaunchConfig};
use crate::context::{CudaContext, Stream};
use crate::error::{Error, Result};
use crate::graph::GraphOp;
use crate::launch::LoadedModule;
use crate::ordering::{self, Access, Memory, Owner};

/// What a module is loaded from.
#[derive(Clone, Copy, Debug)]
pub enum Image<'a> {
    /// PTX text, which the driver JIT-compiles for the device.
    Ptx(&'a str),
    /// A cubin (an ELF image for the device's architecture).
    Cubin(&'a [u8]),
}

impl Image<'_> {
    /// "PTX" or "a cubin", for messages.
    pub(crate) fn describe(&self) -> &'static str {
        match self {
            Image::Ptx(_) => "PTX",
            Image::Cubin(_) => "a cubin",
        }
    }
}

/// One `.entry` of a PTX text: the kernel's name and each parameter's size in bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PtxEntry {
    /// The kernel's (mangled, as in the PTX) name.
    pub name: String,
    /// Each parameter's size in bytes, in order.
    pub params: Vec<u32>,
}

/// The kernels a PTX text declares (`.entry name(.param .u64 a, .param .align 8 .b8 s[24],
/// ..)`), with their parameters' sizes; declarations it cannot read are left out.
pub fn ptx_entries(ptx: &str) -> Vec<PtxEntry> {
    let mut entries = Vec::new();
    let mut rest = ptx;
    while let Some(at) = find_word(rest, ".entry") {
        rest = &rest[at + ".entry".len()..];
        let Some(open) = rest.find('(') else { break };
        let name = rest[..open].trim();
        let Some(close) = rest[open..].find(')') else {
            break;
        };
        let list = &rest[open + 1..open + close];
        rest = &rest[open + close..];
        let params: Option<Vec<u32>> = list
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(param_size)
            .collect();
        if let (false, Some(params)) = (name.is_empty(), params) {
            entries.push(PtxEntry {
                name: name.to_owned(),
                params,
            });
        }
    }
    entries
}

/// The byte offset of `word` in `text` where it stands alone (not part of a longer name).
fn find_word(text: &str, word: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = text[from..].find(word) {
        let at = from + i;
        let after = text[at + word.len()..].chars().next();
        if after.is_none_or(|c| c.is_whitespace()) {
            return Some(at);
        }
        from = at + word.len();
    }
    None
}

/// The size of one `.param` declaration: `.param .u32 n`, `.param .u64 .ptr .global .align 16
/// p`, `.param .align 8 .b8 s[24]`.
fn param_size(decl: &str) -> Option<u32> {
    let mut words = decl.split_whitespace();
    if words.next()? != ".param" {
        return None;
    }
    let words: Vec<&str> = words.collect();
    let ty = words.iter().find_map(|w| type_size(w))?;
    let name = words.last()?;
    let count = match (name.find('['), name.find(']')) {
        (Some(l), Some(r)) if l < r => name[l + 1..r].parse::<u32>().ok()?,
        _ => 1,
    };
    ty.checked_mul(count)
}

/// The size of a PTX fundamental type (`.u32`, `.f64`, `.b8`, `.pred`), if `word` is one.
fn type_size(word: &str) -> Option<u32> {
    let bits = match word {
        ".pred" => return Some(1),
        _ => word
            .strip_prefix(".u")
            .or_else(|| word.strip_prefix(".s"))
            .or_else(|| word.strip_prefix(".b"))
            .or_else(|| word.strip_prefix(".f"))?,
    };
    match bits.parse::<u32>().ok()? {
        b @ (8 | 16 | 32 | 64) => Some(b / 8),
        _ => None,
    }
}

/// A module whose kernels launch with raw arguments: PTX or a cubin cuprum did not compile,
/// or one of cuprum's own ([`Module::from_ir`]). See the module docs. Cheap to clone.
#[derive(Clone)]
pub struct Module {
    inner: Arc<ModuleInner>,
    cuprum: Option<Arc<LoadedModule>>,
}

struct ModuleInner {
    // Declared before `ctx`: the module is unloaded while its context lives.
    handle: Option<ExternalHandle>,
    /// PTX translated into cuprum's IR for the emulator (`cuprum_ptx_import`).
    imported: Option<Arc<LoadedModule>>,
    /// The kernels the PTX declares (`None` for a cubin, whose parameters are not read).
    entries: Option<Vec<PtxEntry>>,
    ctx: CudaContext,
}

impl std::fmt::Debug for Module {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.cuprum {
            Some(m) => m.fmt(f),
            None => f
                .debug_struct("Module")
                .field("context", &self.inner.ctx)
                .field(
                    "kernels",
                    &self
                        .inner
                        .entries
                        .as_ref()
                        .map(|e| e.iter().map(|e| e.name.as_str()).collect::<Vec<_>>()),
                )
                .finish(),
        }
    }
}

impl Module {
    /// Loads PTX text into `ctx`: the driver JIT-compiles it for the device (a refusal is
    /// [`Error::ModuleLoad`] with the driver's log). On the emulator it is translated into
    /// cuprum's IR (`cuprum_ptx_import`); PTX it does not model is [`Error::ModuleLoad`]
    /// naming the line and what is missing.
    pub fn from_ptx(ctx: &CudaContext, ptx: &str) -> Result<Module> {
        if ctx.backend() == crate::BackendKind::Emulator {
            let ir = cuprum_ptx_import::import(ptx).map_err(|e| Error::ModuleLoad {
                message: format!("the emulator could not import the PTX: {e}"),
                log: String::new(),
            })?;
            return Ok(Module {
                inner: Arc::new(ModuleInner {
                    handle: None,
                    imported: Some(Arc::new(LoadedModule::load(ctx, Arc::new(ir))?)),
                    entries: Some(ptx_entries(ptx)),
                    ctx: ctx.clone(),
                }),
                cuprum: None,
            });
        }
        Self::load(ctx, Image::Ptx(ptx), Some(ptx_entries(ptx)))
    }

    /// Loads a cubin into `ctx` (built for the device's architecture; a refusal is
    /// [`Error::ModuleLoad`]). On the emulator: [`Error::Unsupported`].
    pub fn from_cubin(ctx: &CudaContext, cubin: &[u8]) -> Result<Module> {
        Self::load(ctx, Image::Cubin(cubin), None)
    }

    fn load(ctx: &CudaContext, image: Image<'_>, entries: Option<Vec<PtxEntry>>) -> Result<Module> {
        let handle = ctx.inner.backend.load_external(image)?;
        Ok(Module {
            inner: Arc::new(ModuleInner {
                handle: Some(handle),
                imported: None,
                entries,
                ctx: ctx.clone(),
            }),
            cuprum: None,
        })
    }

    /// One of cuprum's own modules (a `#[cuda_module]`'s `kernels::ir()`), loaded into `ctx`
    /// as [`LoadedModule::load`] loads it: its kernels launch raw with every check of
    /// [`LoadedModule::launch`], on the GPU and on the emulator.
    pub fn from_ir(ctx: &CudaContext, ir: Arc<cuprum_ir::Module>) -> Result<Module> {
        Ok(Module {
            inner: Arc::new(ModuleInner {
                handle: None,
                imported: None,
                entries: None,
                ctx: ctx.clone(),
            }),
            cuprum: Some(Arc::new(LoadedModule::load(ctx, ir)?)),
        })
    }

    /// The kernels the PTX declares (`None` for a cubin).
    pub fn entries(&self) -> Option<&[PtxEntry]> {
        self.inner.entries.as_deref()
    }

    /// The kernel called `name` (as the PTX spells it: `extern "C"` names as they are, C++
    /// ones mangled); [`Error::KernelNotFound`] if the module has none.
    pub fn get_function(&self, name: &str) -> Result<Function> {
        if let Some(loaded) = &self.inner.imported {
            let index = loaded.kernel_index(name)?;
            return Ok(Function {
                inner: FunctionInner::Imported {
                    module: self.inner.clone(),
                    loaded: loaded.clone(),
                    index,
                },
                name: Arc::from(name),
            });
        }
        let (Some(handle), None) = (&self.inner.handle, &self.cuprum) else {
            return match &self.cuprum {
                Some(m) => Function::of_loaded(m.clone(), name),
                None => Err(Error::KernelNotFound {
                    name: name.to_owned(),
                }),
            };
        };
        let params = match &self.inner.entries {
            Some(entries) => Some(
                entries
                    .iter()
                    .find(|e| e.name == name)
                    .ok_or_else(|| Error::KernelNotFound {
                        name: format!(
                            "{name} (the PTX declares {})",
                            entries
                                .iter()
                                .map(|e| e.name.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    })?
                    .params
                    .clone(),
            ),
            None => None,
        };
        let function = handle.function(name)?;
        Ok(Function {
            inner: FunctionInner::External {
                module: self.inner.clone(),
                function: Arc::new(function),
                params,
            },
            name: Arc::from(name),
        })
    }
}

/// A kernel to launch with raw arguments: of an external [`Module`], or one of cuprum's own
/// ([`Function::of_loaded`]). Cheap to clone.
#[derive(Clone)]
pub struct Function {
    inner: FunctionInner,
    name: Arc<str>,
}

#[derive(Clone)]
enum FunctionInner {
    External {
        module: Arc<ModuleInner>,
        function: Arc<ExternalFunction>,
        /// Each parameter's size, where the PTX says.
        params: Option<Vec<u32>>,
    },
    Loaded {
        module: Arc<LoadedModule>,
        index: usize,
    },
    /// A kernel of PTX the emulator imported: launched raw, as on a GPU.
    Imported {
        module: Arc<ModuleInner>,
        loaded: Arc<LoadedModule>,
        index: usize,
    },
}

impl std::fmt::Debug for Function {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Function")
            .field("name", &self.name)
            .finish()
    }
}

impl Function {
    /// Kernel `name` of one of cuprum's own loaded modules: a raw launch of it is a
    /// [`LoadedModule::launch`], with every check that makes (argument kinds and types,
    /// buffers' contexts, launch limits and requirements) and the ordering of buffers across
    /// streams; it runs on the emulator too.
    pub fn of_loaded(module: Arc<LoadedModule>, name: &str) -> Result<Function> {
        let index = module.kernel_index(name)?;
        Ok(Function {
            inner: FunctionInner::Loaded { module, index },
            name: Arc::from(name),
        })
    }

    /// The kernel's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Launches the kernel on `stream` with `config` and `args`, one per parameter. Checked
    /// first: the stream's context; for PTX, the argument count and each argument's size
    /// against the `.entry` ([`Error::ArgumentMismatch`]); for cuprum's own kernels, all of
    /// [`LoadedModule::launch`]'s checks.
    ///
    /// # Safety
    /// The arguments must be what the kernel expects (a pointer where it reads a pointer, to
    /// live memory of this context large enough for every access), and the kernel must not
    /// race with other work on the memory it touches. Nothing of this can be checked for
    /// foreign code.
    pub unsafe fn launch(
        &self,
        stream: &Stream,
        config: &LaunchConfig,
        args: &[RawArg],
    ) -> Result<()> {
        match &self.inner {
            FunctionInner::Loaded { module, index } => {
                if let Some(i) = args.iter().position(|a| matches!(a, RawArg::Bytes(_))) {
                    return Err(Error::ArgumentMismatch {
                        kernel: self.name.to_string(),
                        reason: format!(
                            "argument {i} is a value passed by its bytes; cuprum's own kernels \
                             take numbers and buffers (launch them through their module's \
                             methods to pass structs)"
                        ),
                    });
                }
                let args: Vec<KernelArg> = args.iter().filter_map(RawArg::kernel_arg).collect();
                // SAFETY: the caller's contract, which includes LoadedModule::launch's.
                unsafe { module.launch(stream, *index, config, &args) }
            }
            FunctionInner::Imported {
                module,
                loaded,
                index,
            } => {
                let ctx = &module.ctx;
                ctx.check_same(stream.context())?;
                let bytes: Vec<Vec<u8>> = args.iter().map(RawArg::bytes).collect();
                let kernel = &loaded.ir().kernels[*index];
                let types: Vec<ScalarType> = kernel
                    .params
                    .iter()
                    .map(|p| match p.kind {
                        cuprum_ir::ParamKind::Scalar(t) => t,
                        _ => ScalarType::U64,
                    })
                    .collect();
                // The PTX's parameters (a struct passed by value is one), then their bytes
                // over the IR's (such a struct is one `U8` parameter per byte).
                let declared = module
                    .entries
                    .as_ref()
                    .and_then(|es| es.iter().find(|e| *e.name == *self.name))
                    .map(|e| e.params.clone())
                    .unwrap_or_else(|| types.iter().map(|t| t.size_bytes()).collect());
                check_sizes(&self.name, &declared, &bytes)?;
                let mut all = bytes.concat().into_iter();
                let bytes: Vec<Vec<u8>> = types
                    .iter()
                    .map(|t| all.by_ref().take(t.size_bytes() as usize).collect())
                    .collect();
                if stream.recording().is_some() {
                    return Err(Error::Unsupported {
                        what: format!(
                            "recording kernel `{}` of imported PTX in a graph on the emulator:                              launch it outside the graph",
                            self.name
                        ),
                    });
                }
                let kernel_args: Vec<KernelArg> = types
                    .iter()
                    .zip(&bytes)
                    .map(|(&ty, b)| {
                        let mut word = [0u8; 8];
                        word[..b.len().min(8)].copy_from_slice(&b[..b.len().min(8)]);
                        KernelArg::Scalar {
                            ty,
                            bits: u64::from_le_bytes(word),
                        }
                    })
                    .collect();
                let buffers = buffers(stream, args)?;
                let held = ordering::hold_memory(stream, &buffers)?;
                // SAFETY: the caller's contract; the arguments have the kernel's parameter
                // types (checked by size against the PTX's).
                unsafe { loaded.launch(stream, *index, config, &kernel_args) }?;
                held.note_after()
            }
            FunctionInner::External {
                module,
                function,
                params,
            } => {
                let ctx = &module.ctx;
                ctx.check_same(stream.context())?;
                let bytes: Vec<Vec<u8>> = args.iter().map(RawArg::bytes).collect();
                if let Some(params) = params {
                    check_sizes(&self.name, params, &bytes)?;
                }
                let buffers = buffers(stream, args)?;
                if let Some(recording) = stream.recording() {
                    let held_module: Arc<dyn std::any::Any + Send + Sync> = module.clone();
                    recording.record(
                        GraphOp::External {
                            function: function.clone(),
                            _module: held_module,
                            name: self.name.clone(),
                            config: *config,
                            params: bytes,
                        },
                        buffers,
                    )?;
                    return Ok(());
                }
                let held = ordering::hold_memory(stream, &buffers)?;
                let _range = crate::nvtx::kernel(&self.name);
                // SAFETY: the sizes match the PTX's parameters where it declares them; the
                // rest is the caller's contract.
                let launched = unsafe {
                    ctx.inner
                        .backend
                        .launch_external(function, stream.handle(), config, &bytes)
                };
                if launched.is_ok() {
                    ctx.count_launch();
                    ctx.note_launch(stream, &self.name);
                }
                launched.map_err(|f| ctx.fail(f, Some(stream)))?;
                held.note_after()
            }
        }
    }
}

/// The live buffers of the stream's context among a foreign kernel's buffer arguments
/// (another context's is [`Error::ContextMismatch`]). A foreign kernel may write any of them,
/// so each counts as written: the launch waits for their unfinished uses on other streams,
/// later work on other streams waits for the launch, and so does the buffer's free (its drop
/// frees it after its recorded uses only). Addresses passed as plain numbers are not buffers:
/// ordering them is the caller's (`Stream::wait`).
fn buffers(stream: &Stream, args: &[RawArg]) -> Result<Vec<(Arc<Memory>, Access)>> {
    let ranges: Vec<(u64, u64)> = args
        .iter()
        .filter_map(|a| match a {
            RawArg::Buffer { address, .. } if *address != 0 => Some((*address, 0)),
            _ => None,
        })
        .collect();
    let mut buffers = Vec::with_capacity(ranges.len());
    for owner in ordering::owners(stream.context(), &ranges) {
        match owner {
            Owner::Own(memory) => buffers.push((memory, Access::Write)),
            Owner::Foreign => return Err(Error::ContextMismatch),
            Owner::Unknown => {}
        }
    }
    Ok(buffers)
}

/// Refuses arguments whose count or sizes differ from the PTX's parameters.
fn check_sizes(kernel: &str, params: &[u32], args: &[Vec<u8>]) -> Result<()> {
    let mismatch = |reason: String| Error::ArgumentMismatch {
        kernel: kernel.to_owned(),
        reason,
    };
    if params.len() != args.len() {
        return Err(mismatch(format!(
            "the PTX declares {} parameter(s), the launch gives {} argument(s)",
            params.len(),
            args.len()
        )));
    }
    for (i, (&want, got)) in params.iter().zip(args).enumerate() {
        if want as usize != got.len() {
            return Err(mismatch(format!(
                "parameter {i} is {want} bytes in the PTX, the argument {} bytes (a pointer is \
                 8: pass a buffer or a device address; integers and floats their own size)",
                got.len()
            )));
        }
    }
    Ok(())
}

/// One argument of a raw launch: a scalar, a device buffer (its address; for cuprum's own
/// kernels also its length), or the bytes of a plain value passed by value (a `#[repr(C)]`
/// struct, at most 128 bytes).
#[derive(Clone, Debug, PartialEq)]
pub enum RawArg {
    /// A number of a scalar type.
    Scalar {
        /// Its type.
        ty: ScalarType,
        /// Its bits, in the low bits.
        bits: u64,
    },
    /// A device buffer: its address and length in elements.
    Buffer {
        /// The device address of its first element.
        address: u64,
        /// Its length in elements.
        len: u64,
    },
    /// A value's bytes, passed as they are.
    Bytes(Vec<u8>),
}

impl RawArg {
    /// The bytes the kernel receives (a buffer: its 8-byte address).
    fn bytes(&self) -> Vec<u8> {
        match self {
            RawArg::Scalar { ty, bits } => {
                let n = ty.size_bytes().max(1) as usize;
                bits.to_le_bytes()[..n.min(8)].to_vec()
            }
            RawArg::Buffer { address, .. } => address.to_le_bytes().to_vec(),
            RawArg::Bytes(b) => b.clone(),
        }
    }

    /// The argument of a launch of one of cuprum's own kernels (`None` for bytes, which
    /// have no kernel IR parameter kind).
    fn kernel_arg(&self) -> Option<KernelArg> {
        match self {
            RawArg::Scalar { ty, bits } => Some(KernelArg::Scalar {
                ty: *ty,
                bits: *bits,
            }),
            RawArg::Buffer { address, len } => Some(KernelArg::Slice {
                address: *address,
                len: *len,
            }),
            RawArg::Bytes(_) => None,
        }
    }

    /// The bytes of `value`, passed by value (a `#[repr(C)]` struct the kernel takes as
    /// `.param .align A .b8 name[N]`).
    pub fn value<T: DeviceCopy>(value: &T) -> RawArg {
        let size = std::mem::size_of::<T>();
        // SAFETY: a `DeviceCopy` type is plain data without padding (its contract), so each
        // of its `size` bytes is initialized; the slice lives only for the copy.
        let bytes = unsafe { std::slice::from_raw_parts((value as *const T).cast::<u8>(), size) };
        RawArg::Bytes(bytes.to_vec())
    }
}

/// What `launch!` passes for each argument: scalars by value, buffers as their address.
pub trait IntoRawArg {
    /// The raw argument.
    fn raw_arg(&self) -> RawArg;
}

macro_rules! scalar_raw_arg {
    ($($t:ty),* $(,)?) => { $(
        impl IntoRawArg for $t {
            fn raw_arg(&self) -> RawArg {
                RawArg::Scalar {
                    ty: <$t as DeviceScalar>::TYPE,
                    bits: DeviceScalar::to_bits(*self),
                }
            }
        }
    )* };
}

scalar_raw_arg!(
    bool,
    i8,
    i16,
    i32,
    i64,
    isize,
    u8,
    u16,
    u32,
    u64,
    usize,
    f32,
    f64,
    half::f16,
    half::bf16,
);

impl<T: DeviceCopy> IntoRawArg for DeviceBuffer<T> {
    fn raw_arg(&self) -> RawArg {
        RawArg::Buffer {
            address: self.device_address(),
            len: self.len() as u64,
        }
    }
}

impl<T: IntoRawArg + ?Sized> IntoRawArg for &T {
    fn raw_arg(&self) -> RawArg {
        (**self).raw_arg()
    }
}

impl<T: IntoRawArg + ?Sized> IntoRawArg for &mut T {
    fn raw_arg(&self) -> RawArg {
        (**self).raw_arg()
    }
}

impl IntoRawArg for RawArg {
    fn raw_arg(&self) -> RawArg {
        self.clone()
    }
}

/// A grid or block size as `launch!` takes it: `n`, `(x, y)` or `(x, y, z)`.
pub trait IntoDim3 {
    /// The three sizes.
    fn dim3(self) -> (u32, u32, u32);
}

impl IntoDim3 for u32 {
    fn dim3(self) -> (u32, u32, u32) {
        (self, 1, 1)
    }
}

impl IntoDim3 for (u32, u32) {
    fn dim3(self) -> (u32, u32, u32) {
        (self.0, self.1, 1)
    }
}

impl IntoDim3 for (u32, u32, u32) {
    fn dim3(self) -> (u32, u32, u32) {
        self
    }
}

/// What `launch!` expands to: `function` on `stream` with `grid`, `block` and
/// `shared_bytes` of dynamic shared memory.
///
/// # Safety
/// As [`Function::launch`].
pub unsafe fn launch_raw(
    function: &Function,
    grid: impl IntoDim3,
    block: impl IntoDim3,
    shared_bytes: u32,
    stream: &Stream,
    args: &[RawArg],
) -> Result<()> {
    let config = LaunchConfig {
        grid_dim: grid.dim3(),
        block_dim: block.dim3(),
        shared_mem_bytes: shared_bytes,
    };
    // SAFETY: the caller's contract.
    unsafe { function.launch(stream, &config, args) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_and_parameter_sizes_are_read_from_ptx() {
        let ptx = r#"
.version 8.0
.target sm_90
.address_size 64
.visible .entry _Z6vecaddPKfS0_Pfi(
	.param .u64 .ptr .global .align 1 _Z6vecaddPKfS0_Pfi_param_0,
	.param .u64 _Z6vecaddPKfS0_Pfi_param_1,
	.param .u64 _Z6vecaddPKfS0_Pfi_param_2,
	.param .u32 _Z6vecaddPKfS0_Pfi_param_3
)
{ ret; }
.entry scale(.param .f32 s, .param .align 8 .b8 pair[16], .param .u16 h)
{ ret; }
// .entryish is not an entry
.func helper(.param .u32 x) { ret; }
"#;
        let entries = ptx_entries(ptx);
        assert_eq!(
            entries,
            vec![
                PtxEntry {
                    name: "_Z6vecaddPKfS0_Pfi".into(),
                    params: vec![8, 8, 8, 4],
                },
                PtxEntry {
                    name: "scale".into(),
                    params: vec![4, 16, 2],
                },
            ]
        );
        assert_eq!(
            ptx_entries(".entry empty()\n{ ret; }"),
            vec![PtxEntry {
                name: "empty".into(),
                params: vec![],
            }]
        );
    }

    #[test]
    fn argument_counts_and_sizes_are_checked() {
        let ok = check_sizes("k", &[8, 4], &[vec![0; 8], vec![0; 4]]);
        assert!(ok.is_ok());
        let few = check_sizes("k", &[8, 4], &[vec![0; 8]]);
        assert!(matches!(few, Err(Error::ArgumentMismatch { .. })));
        let wide = check_sizes("k", &[8, 4], &[vec![0; 8], vec![0; 8]]);
        let Err(Error::ArgumentMismatch { reason, .. }) = wide else {
            panic!("an 8-byte argument for a 4-byte parameter must be refused");
        };
        assert!(reason.contains("parameter 1 is 4 bytes"), "{reason}");
    }

    #[test]
    fn buffer_arguments_are_ordered_and_other_contexts_refused() {
        let ctx = CudaContext::emulator();
        let stream = ctx.default_stream();
        let own = DeviceBuffer::from_host(&stream, &[1.0f32; 8]).expect("buffer");
        let args = [
            own.raw_arg(),
            2u32.raw_arg(),
            RawArg::Scalar {
                ty: ScalarType::U64,
                bits: own.device_address(),
            },
        ];
        let found = buffers(&stream, &args).expect("ordered");
        assert_eq!(
            found.len(),
            1,
            "the buffer, not the address passed as a number"
        );
        assert_eq!(found[0].1, Access::Write, "a foreign kernel may write it");
        let other = CudaContext::emulator();
        let foreign = DeviceBuffer::from_host(&other.default_stream(), &[0u8; 4]).expect("other");
        assert!(matches!(
            buffers(&stream, &[foreign.raw_arg()]),
            Err(Error::ContextMismatch)
        ));
    }

    #[test]
    fn raw_arguments_have_their_sizes() {
        assert_eq!(3u32.raw_arg().bytes(), 3u32.to_le_bytes());
        assert_eq!((-2.5f64).raw_arg().bytes(), (-2.5f64).to_le_bytes());
        assert_eq!(half::f16::ONE.raw_arg().bytes().len(), 2);
        assert_eq!(RawArg::value(&[1u32, 2, 3]).bytes().len(), 12);
    }
}
