//! Launching kernels: launch configurations, launch contracts, kernel arguments and loaded
//! modules.
//!
//! A [`LoadedModule`] is one compilation unit (a `cuprum_ir::Module`) made ready for one
//! context: PTX compiled by the driver on CUDA (through the compile cache, [`crate::cache`],
//! so a module compiled before is loaded from its cubin), the IR itself on the emulator. Every
//! launch is checked before it reaches a backend: the arguments against the kernel's
//! parameters ([`Error::ArgumentMismatch`]), the configuration against the device limits and
//! the kernel's launch bounds ([`Error::InvalidLaunch`]). What cannot be checked here (aliasing
//! between arguments, which slice element type a buffer holds) is the `unsafe` caller's
//! promise; the safe wrappers the macros generate keep it.

use std::ffi::c_void;
use std::fmt;
use std::sync::Arc;

use cuprum_ir::{Kernel, ParamKind, ScalarType};

use crate::buffer::{DeviceBuffer, DeviceCopy, DeviceScalar};
use crate::cache::ModuleRoute;
use crate::context::{Backend, CudaContext, Stream};
use crate::cuda::{CudaModule, LinkInput};
use crate::error::{Error, Result};
use crate::limits::{KernelFacts, check_config};
use crate::ordering::{self, Access, Owner};

/// Grid and block shape of a launch, and its dynamic shared memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LaunchConfig {
    /// Blocks in the grid along `x`, `y` and `z`; each at least 1 and within the device's
    /// [`DeviceLimits::max_grid_dim`](crate::DeviceLimits::max_grid_dim).
    pub grid: (u32, u32, u32),
    /// Threads per block along `x`, `y` and `z`; each at least 1, with a product of at most
    /// the device's `max_threads_per_block` (1024) and the kernel's launch bounds.
    pub block: (u32, u32, u32),
    /// Bytes of dynamic shared memory per block.
    pub shared_mem_bytes: u32,
}

/// A one-dimensional [`LaunchConfig`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LaunchConfig1D {
    /// Blocks in the grid (along `x`).
    pub grid: u32,
    /// Threads per block (along `x`).
    pub block: u32,
    /// Bytes of dynamic shared memory per block.
    pub shared_mem_bytes: u32,
}

impl LaunchConfig1D {
    /// A configuration of `grid` blocks of `block` threads, with `shared_mem_bytes` bytes of
    /// dynamic shared memory per block. Nothing is checked until the launch.
    pub fn new(grid: u32, block: u32, shared_mem_bytes: u32) -> Self {
        Self {
            grid,
            block,
            shared_mem_bytes,
        }
    }

    /// Enough blocks of `block` threads to cover `len` elements: `ceil(len / block)`, at
    /// least 1 (so an empty input still makes a valid launch whose threads all fall outside
    /// the data), saturating at `u32::MAX` (which the launch check then rejects by name). No
    /// dynamic shared memory.
    ///
    /// ```
    /// use cuprum_runtime::{LaunchConfig, LaunchConfig1D};
    ///
    /// let c = LaunchConfig1D::for_len(1000, 256);
    /// assert_eq!((c.grid, c.block, c.shared_mem_bytes), (4, 256, 0));
    /// assert_eq!(LaunchConfig1D::for_len(1024, 256).grid, 4);
    /// assert_eq!(LaunchConfig1D::for_len(0, 256).grid, 1);
    ///
    /// // Where a 3-D configuration is expected, a 1-D one converts into it.
    /// let full: LaunchConfig = c.into();
    /// assert_eq!((full.grid, full.block), ((4, 1, 1), (256, 1, 1)));
    /// ```
    pub fn for_len(len: usize, block: u32) -> Self {
        let grid = if block == 0 {
            1
        } else {
            u32::try_from(len.div_ceil(block as usize))
                .unwrap_or(u32::MAX)
                .max(1)
        };
        Self::new(grid, block, 0)
    }
}

impl From<LaunchConfig1D> for LaunchConfig {
    fn from(c: LaunchConfig1D) -> Self {
        Self {
            grid: (c.grid, 1, 1),
            block: (c.block, 1, 1),
            shared_mem_bytes: c.shared_mem_bytes,
        }
    }
}

/// The static facts a `#[launch_contract]` (and `#[launch_bounds]`) declares, checked by the
/// generated `prepare_*` before a kernel may be launched safely.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LaunchContract {
    /// The kernel's name, for error messages.
    pub kernel: &'static str,
    /// Dimensions of the indexing domain, 1 to 3: a grid must be 1 along the others.
    pub domain: u32,
    /// The exact block shape the kernel was written for.
    pub block: (u32, u32, u32),
    /// The kernel's launch bounds (`.maxntid`), if any.
    pub max_threads: Option<u32>,
}

impl LaunchContract {
    /// Checks `config` against the contract and the live limits of `ctx`'s device; the error
    /// ([`Error::InvalidLaunch`]) names the kernel and the numbers.
    pub fn check(&self, ctx: &CudaContext, config: &LaunchConfig) -> Result<()> {
        let invalid = |reason: String| {
            Err(Error::InvalidLaunch {
                kernel: self.kernel.to_owned(),
                reason,
            })
        };
        if !(1..=3).contains(&self.domain) {
            return invalid(format!(
                "the launch contract declares domain = {}, but a domain has 1, 2 or 3 dimensions",
                self.domain
            ));
        }
        if config.block != self.block {
            let (x, y, z) = config.block;
            let (cx, cy, cz) = self.block;
            return invalid(format!(
                "block ({x}, {y}, {z}) does not match the block ({cx}, {cy}, {cz}) its launch \
                 contract declares"
            ));
        }
        check_config(
            self.kernel,
            ctx.limits(),
            KernelFacts {
                max_threads: self.max_threads,
                static_shared_bytes: 0,
                block: Some(self.block),
            },
            config,
        )?;
        let grid = [config.grid.0, config.grid.1, config.grid.2];
        for (axis, name) in [(1usize, "y"), (2, "z")] {
            if axis >= self.domain as usize && grid[axis] != 1 {
                return invalid(format!(
                    "grid ({}, {}, {}) has {name} = {}, but the launch contract declares a \
                     {}-dimensional domain, so the grid must be 1 along {name}",
                    grid[0], grid[1], grid[2], grid[axis], self.domain
                ));
            }
        }
        Ok(())
    }
}

/// One argument of a raw launch, matching one IR parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KernelArg {
    /// A scalar: its IR type and its bits, zero-extended to 64.
    Scalar {
        /// The parameter's IR type, which must equal the kernel's.
        ty: ScalarType,
        /// The value's bits in the low `ty.bits()` bits, the rest zero.
        bits: u64,
    },
    /// A slice of device memory: base address and length in elements.
    Slice {
        /// The device address of the first element.
        address: u64,
        /// The number of elements (not bytes).
        len: u64,
    },
}

impl KernelArg {
    /// A scalar argument.
    pub fn scalar<T: DeviceScalar>(v: T) -> Self {
        Self::Scalar {
            ty: T::TYPE,
            bits: v.to_bits(),
        }
    }

    /// A read-only slice argument (`&[T]` in the kernel).
    pub fn slice<T: DeviceCopy>(b: &DeviceBuffer<T>) -> Self {
        Self::Slice {
            address: b.device_address(),
            len: b.len() as u64,
        }
    }

    /// A written slice argument (`DisjointSlice<T>` or `&mut [T]` in the kernel). Taking
    /// `&mut` lets the borrow checker forbid passing the same buffer as another argument.
    pub fn slice_mut<T: DeviceCopy>(b: &mut DeviceBuffer<T>) -> Self {
        Self::Slice {
            address: b.device_address(),
            len: b.len() as u64,
        }
    }
}

/// Per-kernel launch data prepared at load time.
struct KernelInfo {
    name: Arc<str>,
    facts: KernelFacts,
    /// Byte size of each PTX entry parameter, in order (CUDA only).
    machine_sizes: Vec<u32>,
}

enum ModuleBackend {
    Cuda { module: CudaModule, ptx: String },
    Emu,
}

/// A compilation unit loaded into a context, ready to launch its kernels.
pub struct LoadedModule {
    // Declared before `ctx`: the module is unloaded while its context lives.
    backend: ModuleBackend,
    kernels: Vec<KernelInfo>,
    ir: Arc<cuprum_ir::Module>,
    ctx: CudaContext,
}

impl fmt::Debug for LoadedModule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LoadedModule")
            .field("context", &self.ctx)
            .field(
                "kernels",
                &self.kernels.iter().map(|k| &*k.name).collect::<Vec<_>>(),
            )
            .finish()
    }
}

fn module_label(ir: &cuprum_ir::Module) -> String {
    let names: Vec<&str> = ir.kernels.iter().map(|k| k.name.as_str()).collect();
    if names.is_empty() {
        "<empty module>".to_owned()
    } else {
        names.join(", ")
    }
}

/// The PTX target for a device, or why the device cannot run cuprum's code.
fn target_for(ctx: &CudaContext) -> Result<cuprum_ptx::Target> {
    let limits = ctx.limits();
    let (major, minor) = limits.compute_capability;
    if let Some(target) = cuprum_ptx::Target::from_compute_capability(major, minor) {
        return Ok(target);
    }
    // PTX is forward compatible: newer architectures JIT the newest target we write.
    match major {
        8 => Ok(cuprum_ptx::Target::Sm80),
        m if m >= 9 => Ok(cuprum_ptx::Target::Sm90),
        _ => Err(Error::UnsupportedDevice {
            device: limits.name.clone(),
            compute_capability: (major, minor),
            reason: "cuprum needs compute capability 8.0 (sm_80, Ampere) or newer; run on a \
                     newer GPU, or set CUPRUM_DEVICE=emu to use the CPU emulator"
                .to_owned(),
        }),
    }
}

/// The number of PTX parameters an IR kernel's parameters expand to.
fn expected_machine_params(kernel: &Kernel) -> usize {
    kernel
        .params
        .iter()
        .map(|p| match p.kind {
            ParamKind::Scalar(_) => 1,
            ParamKind::Slice { .. } => 2,
        })
        .sum()
}

impl LoadedModule {
    /// Makes `ir` ready to launch on `ctx`. CUDA: writes PTX for the device's architecture
    /// (sm_80 or newer) and has the driver compile it (its error log is in
    /// [`Error::ModuleLoad`]), unless the compile cache ([`crate::cache`]) already holds the
    /// driver's output for this PTX, device and driver; emulator: keeps the IR. Either way the
    /// IR is validated first (once per process for one `Arc`).
    pub fn load(ctx: &CudaContext, ir: Arc<cuprum_ir::Module>) -> Result<Self> {
        Ok(Self::load_inner(ctx, ir, None, &ModuleRoute::Default)?.0)
    }

    /// Like [`load`](Self::load), but the CUDA backend compiles the module the way `route`
    /// says, bypassing the compile cache (unless the route is `Default`), and returns the
    /// cubin when the route made one. For tools that compare how the driver compiles (the
    /// `cache_speed` example); the emulator ignores the route.
    #[doc(hidden)]
    pub fn load_routed(
        ctx: &CudaContext,
        ir: Arc<cuprum_ir::Module>,
        route: &ModuleRoute,
    ) -> Result<(Self, Option<Vec<u8>>)> {
        Self::load_inner(ctx, ir, None, route)
    }

    /// The registers per thread the driver gave kernel number `kernel`
    /// (`CU_FUNC_ATTRIBUTE_NUM_REGS`); `None` on the emulator or when the driver does not say.
    pub fn registers(&self, kernel: usize) -> Option<u32> {
        match (&self.backend, &self.ctx.inner.backend) {
            (ModuleBackend::Cuda { module, .. }, Backend::Cuda(device)) => {
                device.resources(module, kernel).map(|r| r.registers)
            }
            _ => None,
        }
    }

    /// Like [`load`](Self::load), but the CUDA backend JIT-compiles `ptx` instead of what the
    /// PTX writer makes of `ir` (the emulator ignores it and runs `ir`). `ptx` must declare
    /// every kernel of `ir` with the parameter layout of `cuprum_ptx::machine_params`. For
    /// tools and tests of the runtime itself.
    #[doc(hidden)]
    pub fn load_with_ptx(
        ctx: &CudaContext,
        ir: Arc<cuprum_ir::Module>,
        ptx: String,
    ) -> Result<Self> {
        Ok(Self::load_inner(ctx, ir, Some(ptx), &ModuleRoute::Default)?.0)
    }

    fn load_inner(
        ctx: &CudaContext,
        ir: Arc<cuprum_ir::Module>,
        ptx_override: Option<String>,
        route: &ModuleRoute,
    ) -> Result<(Self, Option<Vec<u8>>)> {
        crate::cache::load::validate_once(&ir)?;
        let mut kernels: Vec<KernelInfo> = ir
            .kernels
            .iter()
            .map(|k| KernelInfo {
                name: Arc::from(k.name.as_str()),
                facts: KernelFacts {
                    max_threads: k.launch_bounds.map(|b| b.max_threads),
                    static_shared_bytes: cuprum_ir::array_layout(&k.shared).1,
                    block: k.block,
                },
                machine_sizes: Vec::new(),
            })
            .collect();
        let mut cubin = None;
        let backend = match &ctx.inner.backend {
            Backend::Emu(_) => ModuleBackend::Emu,
            Backend::Cuda(device) => {
                let target = target_for(ctx)?;
                let from_ir = ptx_override.is_none();
                let ptx = match ptx_override {
                    Some(ptx) => ptx,
                    None => cuprum_ptx::write_module(&ir, target).map_err(|e| Error::Compile {
                        kernel: module_label(&ir),
                        message: e.to_string(),
                    })?,
                };
                for (info, kernel) in kernels.iter_mut().zip(&ir.kernels) {
                    let params = cuprum_ptx::machine_params(kernel);
                    if params.len() != expected_machine_params(kernel)
                        || params
                            .iter()
                            .any(|p| !matches!(p.size_bytes, 1 | 2 | 4 | 8))
                    {
                        return Err(Error::Compile {
                            kernel: kernel.name.clone(),
                            message: format!(
                                "internal error: the PTX writer's parameter layout ({} \
                                 parameters) does not match the IR's ({} expected)",
                                params.len(),
                                expected_machine_params(kernel)
                            ),
                        });
                    }
                    info.machine_sizes = params.iter().map(|p| p.size_bytes).collect();
                }
                let names: Vec<&str> = ir.kernels.iter().map(|k| k.name.as_str()).collect();
                // Each kernel's PTX alone, for the register-capped link of the compile cache.
                let split = || -> Result<Vec<String>> {
                    ir.kernels
                        .iter()
                        .map(|k| {
                            let alone = cuprum_ir::Module {
                                kernels: vec![k.clone()],
                            };
                            cuprum_ptx::write_module(&alone, target).map_err(|e| Error::Compile {
                                kernel: k.name.clone(),
                                message: e.to_string(),
                            })
                        })
                        .collect()
                };
                let per_kernel: crate::cache::load::PerKernelPtx<'_> =
                    if from_ir { Some(&split) } else { None };
                let module = match route {
                    ModuleRoute::Default => crate::cache::load::load_cuda(
                        device,
                        ctx.limits().compute_capability,
                        target.name(),
                        &ptx,
                        &names,
                        per_kernel,
                    )?,
                    ModuleRoute::Jit => device.load_module(&ptx, &names)?,
                    ModuleRoute::Link { link, input } => {
                        let linked = device.link_ptx(
                            link,
                            &[LinkInput {
                                ptx: &ptx,
                                options: input,
                            }],
                        )?;
                        let module = device.load_cubin(&linked, &names)?;
                        cubin = Some(linked);
                        module
                    }
                    ModuleRoute::LinkCapped => {
                        let jit = device.load_module(&ptx, &names)?;
                        let (linked, module) =
                            crate::cache::load::capped_cubin(device, &jit, &names, per_kernel)
                                .map_err(|why| Error::ModuleLoad {
                                    message: format!("no register-capped cubin: {why}"),
                                    log: String::new(),
                                })?;
                        cubin = Some(linked);
                        module
                    }
                };
                ModuleBackend::Cuda { module, ptx }
            }
        };
        let loaded = Self {
            backend,
            kernels,
            ir,
            ctx: ctx.clone(),
        };
        Ok((loaded, cubin))
    }

    /// The PTX text the driver loaded (CUDA backend only).
    pub fn ptx(&self) -> Option<&str> {
        match &self.backend {
            ModuleBackend::Cuda { ptx, .. } => Some(ptx),
            ModuleBackend::Emu => None,
        }
    }

    /// The IR this module was loaded from.
    pub fn ir(&self) -> &Arc<cuprum_ir::Module> {
        &self.ir
    }

    /// The context the module is loaded in.
    pub fn context(&self) -> &CudaContext {
        &self.ctx
    }

    /// The index of the kernel called `name`.
    pub fn kernel_index(&self, name: &str) -> Result<usize> {
        self.kernels
            .iter()
            .position(|k| &*k.name == name)
            .ok_or_else(|| Error::KernelNotFound {
                name: name.to_owned(),
            })
    }

    /// Checks that `args` fit the parameters of kernel `kernel` (count, kinds, scalar types).
    pub fn check_args(&self, kernel: usize, args: &[KernelArg]) -> Result<()> {
        check_args(self.kernel_ir(kernel)?, args)
    }

    fn kernel_ir(&self, kernel: usize) -> Result<&Kernel> {
        self.ir
            .kernels
            .get(kernel)
            .ok_or_else(|| Error::KernelNotFound {
                name: format!(
                    "#{kernel} (the module has {} kernel(s): {})",
                    self.ir.kernels.len(),
                    module_label(&self.ir)
                ),
            })
    }

    /// Launches kernel number `kernel` on `stream`.
    ///
    /// Checked: the stream and every buffer argument belong to the module's context
    /// ([`Error::ContextMismatch`], inputs included); the argument count, kinds (scalar or
    /// slice) and scalar types ([`Error::ArgumentMismatch`]); the configuration against the
    /// device limits and the kernel's launch bounds and shared memory
    /// ([`Error::InvalidLaunch`]).
    ///
    /// Ordered: on a GPU stream other than the default stream, the launch first waits (on the
    /// device) for unfinished work of other streams that wrote a buffer it reads, or used a
    /// buffer it writes (`DisjointSlice`, `&mut [T]` and atomic parameters write; `&[T]`
    /// reads), and later work on other streams waits for it in turn.
    ///
    /// # Safety
    /// Each slice argument must be a live buffer of this context whose element type is the
    /// parameter's; the caller guarantees the aliasing rules the kernel relies on (no buffer
    /// passed both as an output and as another argument) and that the kernel's accesses stay
    /// within what it was given (cuprum's front ends emit bounds checks).
    pub unsafe fn launch(
        &self,
        stream: &Stream,
        kernel: usize,
        config: &LaunchConfig,
        args: &[KernelArg],
    ) -> Result<()> {
        self.ctx.check_same(stream.context())?;
        let ir = self.kernel_ir(kernel)?;
        let info = &self.kernels[kernel];
        check_args(ir, args)?;
        check_config(&info.name, self.ctx.limits(), info.facts, config)?;
        let buffers = self.buffers_of(ir, args)?;
        for (uses, access) in &buffers {
            uses.order_before(stream, *access)?;
        }
        // SAFETY: the caller's contract, as above.
        unsafe { self.submit(stream, kernel, config, args) }?;
        if buffers.is_empty() {
            return Ok(());
        }
        let mark = ordering::mark_after(stream)?;
        for (uses, access) in &buffers {
            uses.note(stream, *access, mark.as_ref());
        }
        Ok(())
    }

    /// The registered buffers among `args`, with how the kernel uses each; a buffer of another
    /// context is [`Error::ContextMismatch`]. Slices in no live buffer (raw addresses, only
    /// unsafe code makes them) are the caller's business and are not ordered.
    fn buffers_of(
        &self,
        ir: &Kernel,
        args: &[KernelArg],
    ) -> Result<Vec<(Arc<ordering::BufferUses>, Access)>> {
        let mut ranges = Vec::new();
        let mut accesses = Vec::new();
        for (param, arg) in ir.params.iter().zip(args) {
            let (ParamKind::Slice { elem, access }, KernelArg::Slice { address, len }) =
                (param.kind, *arg)
            else {
                continue;
            };
            if address == 0 && len == 0 {
                continue;
            }
            ranges.push((address, len.saturating_mul(u64::from(elem.size_bytes()))));
            accesses.push(Access::of(access));
        }
        let mut buffers = Vec::with_capacity(ranges.len());
        for (owner, access) in ordering::owners(&self.ctx, &ranges)
            .into_iter()
            .zip(accesses)
        {
            match owner {
                Owner::Own(uses) => buffers.push((uses, access)),
                Owner::Foreign => return Err(Error::ContextMismatch),
                Owner::Unknown => {}
            }
        }
        Ok(buffers)
    }

    /// Hands the checked launch to the backend.
    ///
    /// # Safety
    /// As for [`launch`](Self::launch), whose checks must have passed.
    unsafe fn submit(
        &self,
        stream: &Stream,
        kernel: usize,
        config: &LaunchConfig,
        args: &[KernelArg],
    ) -> Result<()> {
        let ir = self.kernel_ir(kernel)?;
        let info = &self.kernels[kernel];
        match (&self.backend, &self.ctx.inner.backend, stream.cuda_handle()) {
            (ModuleBackend::Emu, Backend::Emu(device), None) => {
                self.ctx.count_launch();
                self.ctx.note_launch(stream, &info.name);
                device.launch(ir, config, args)
            }
            (ModuleBackend::Cuda { module, .. }, Backend::Cuda(device), Some(s)) => {
                let mut storage = pack_params(&info.machine_sizes, args);
                let mut pointers: Vec<*mut c_void> = storage
                    .iter_mut()
                    .map(|slot| (slot as *mut u64).cast::<c_void>())
                    .collect();
                let needs_opt_in = u64::from(config.shared_mem_bytes)
                    + u64::from(info.facts.static_shared_bytes)
                    > u64::from(self.ctx.limits().max_shared_per_block);
                let Some(function) = module.functions.get(kernel) else {
                    return Err(Error::KernelNotFound {
                        name: info.name.to_string(),
                    });
                };
                // SAFETY: `pointers` has one pointer per PTX parameter, each at an 8-byte slot
                // holding the value in its first `size` bytes; `storage` outlives the call
                // (the driver copies parameters at launch). Memory validity is the caller's
                // contract.
                let launched = unsafe {
                    device.launch(
                        function,
                        config.grid,
                        config.block,
                        config.shared_mem_bytes,
                        needs_opt_in,
                        s,
                        &mut pointers,
                    )
                };
                match launched {
                    Ok(()) => {
                        self.ctx.count_launch();
                        self.ctx.note_launch(stream, &info.name);
                        Ok(())
                    }
                    Err(f) if f.is_bad_launch_config() => Err(Error::InvalidLaunch {
                        kernel: info.name.to_string(),
                        reason: format!(
                            "the driver refused grid {:?}, block {:?} with {} bytes of dynamic \
                             shared memory: {}",
                            config.grid,
                            config.block,
                            config.shared_mem_bytes,
                            f.describe()
                        ),
                    }),
                    Err(f) => Err(self.ctx.fail(f, Some(stream))),
                }
            }
            _ => Err(Error::ContextMismatch),
        }
    }
}

/// One 8-byte slot per PTX parameter, the value in its first `size` bytes (native order, as
/// the driver reads it).
fn pack_params(sizes: &[u32], args: &[KernelArg]) -> Vec<u64> {
    let mut words = Vec::with_capacity(sizes.len());
    for arg in args {
        match *arg {
            KernelArg::Scalar { bits, .. } => words.push(bits),
            KernelArg::Slice { address, len } => {
                words.push(address);
                words.push(len);
            }
        }
    }
    words
        .iter()
        .zip(sizes)
        .map(|(&bits, &size)| {
            let mut slot = [0u8; 8];
            match size {
                1 => slot[..1].copy_from_slice(&(bits as u8).to_ne_bytes()),
                2 => slot[..2].copy_from_slice(&(bits as u16).to_ne_bytes()),
                4 => slot[..4].copy_from_slice(&(bits as u32).to_ne_bytes()),
                _ => slot.copy_from_slice(&bits.to_ne_bytes()),
            }
            u64::from_ne_bytes(slot)
        })
        .collect()
}

impl Access {
    /// How a kernel uses a slice parameter with this access.
    fn of(access: cuprum_ir::SliceAccess) -> Self {
        match access {
            cuprum_ir::SliceAccess::ReadOnly => Access::Read,
            cuprum_ir::SliceAccess::Disjoint | cuprum_ir::SliceAccess::ReadWrite => Access::Write,
        }
    }
}

/// The alignment every slice argument's address has (see `cuprum_ir::ParamKind::Slice`).
const SLICE_ALIGN: u64 = 16;

/// Checks argument count, kinds and scalar types against the kernel's parameters, and that
/// slice addresses are aligned to [`SLICE_ALIGN`].
pub(crate) fn check_args(kernel: &Kernel, args: &[KernelArg]) -> Result<()> {
    let mismatch = |reason: String| {
        Err(Error::ArgumentMismatch {
            kernel: kernel.name.clone(),
            reason,
        })
    };
    if args.len() != kernel.params.len() {
        let expected: Vec<String> = kernel
            .params
            .iter()
            .map(|p| format!("{}: {}", p.name, describe_kind(p.kind)))
            .collect();
        return mismatch(format!(
            "the kernel takes {} argument(s) ({}), {} were given",
            kernel.params.len(),
            expected.join(", "),
            args.len()
        ));
    }
    for (index, (param, arg)) in kernel.params.iter().zip(args).enumerate() {
        match (param.kind, *arg) {
            (ParamKind::Scalar(want), KernelArg::Scalar { ty, bits }) => {
                if want != ty {
                    return mismatch(format!(
                        "argument {index} (`{}`) must be a `{want}` scalar, got a `{ty}`",
                        param.name
                    ));
                }
                if ty.bits() < 64 && bits >> ty.bits() != 0 {
                    return mismatch(format!(
                        "argument {index} (`{}`): bits {bits:#x} have bits set above the \
                         width of `{ty}` (build scalar arguments with KernelArg::scalar)",
                        param.name
                    ));
                }
            }
            (ParamKind::Slice { .. }, KernelArg::Slice { address, .. }) => {
                // The IR's promise (`ParamKind::Slice`) that the optimizer's vector accesses
                // rely on; buffers always start 256-byte aligned.
                if address % SLICE_ALIGN != 0 {
                    return mismatch(format!(
                        "argument {index} (`{}`): slice address {address:#x} is not a multiple \
                         of {SLICE_ALIGN} bytes (a slice argument must start where its device \
                         buffer starts)",
                        param.name
                    ));
                }
            }
            (kind, KernelArg::Scalar { ty, .. }) => {
                return mismatch(format!(
                    "argument {index} (`{}`) must be {}, got a `{ty}` scalar",
                    param.name,
                    describe_kind(kind)
                ));
            }
            (kind, KernelArg::Slice { .. }) => {
                return mismatch(format!(
                    "argument {index} (`{}`) must be {}, got a slice (device buffer)",
                    param.name,
                    describe_kind(kind)
                ));
            }
        }
    }
    Ok(())
}

fn describe_kind(kind: ParamKind) -> String {
    match kind {
        ParamKind::Scalar(ty) => format!("a `{ty}` scalar"),
        ParamKind::Slice { elem, access } => {
            let how = match access {
                cuprum_ir::SliceAccess::ReadOnly => "&[{}]",
                cuprum_ir::SliceAccess::Disjoint => "DisjointSlice<{}>",
                cuprum_ir::SliceAccess::ReadWrite => "&mut [{}]",
            };
            format!("a slice `{}`", how.replace("{}", elem.rust_name()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_are_packed_in_native_order_at_their_size() {
        let args = [
            KernelArg::scalar(true),
            KernelArg::scalar(-2i16),
            KernelArg::Slice {
                address: 0x1234_5678_9ABC,
                len: 77,
            },
            KernelArg::scalar(1.5f32),
            KernelArg::scalar(-1i64),
        ];
        let words = pack_params(&[1, 2, 8, 8, 4, 8], &args);
        assert_eq!(words.len(), 6);
        let bytes = |w: u64| w.to_ne_bytes();
        assert_eq!(bytes(words[0])[0], 1);
        assert_eq!(
            u16::from_ne_bytes([bytes(words[1])[0], bytes(words[1])[1]]),
            (-2i16) as u16
        );
        assert_eq!(words[2], 0x1234_5678_9ABC);
        assert_eq!(words[3], 77);
        let w4 = bytes(words[4]);
        assert_eq!(f32::from_ne_bytes([w4[0], w4[1], w4[2], w4[3]]), 1.5);
        assert_eq!(words[5], u64::MAX);
    }

    #[test]
    fn scalar_bits_are_zero_extended() {
        assert_eq!(
            KernelArg::scalar(-1i32),
            KernelArg::Scalar {
                ty: ScalarType::I32,
                bits: 0xFFFF_FFFF
            }
        );
        assert_eq!(
            KernelArg::scalar(-1i8),
            KernelArg::Scalar {
                ty: ScalarType::I8,
                bits: 0xFF
            }
        );
        assert_eq!(
            KernelArg::scalar(usize::MAX),
            KernelArg::Scalar {
                ty: ScalarType::U64,
                bits: u64::MAX
            }
        );
        assert_eq!(
            KernelArg::scalar(-1isize),
            KernelArg::Scalar {
                ty: ScalarType::I64,
                bits: u64::MAX
            }
        );
        assert_eq!(
            KernelArg::scalar(half::f16::ONE),
            KernelArg::Scalar {
                ty: ScalarType::F16,
                bits: 0x3C00
            }
        );
        assert_eq!(
            KernelArg::scalar(half::bf16::ONE),
            KernelArg::Scalar {
                ty: ScalarType::BF16,
                bits: 0x3F80
            }
        );
        assert_eq!(
            KernelArg::scalar(false),
            KernelArg::Scalar {
                ty: ScalarType::Bool,
                bits: 0
            }
        );
        for v in [0i16, 1, -1, i16::MIN, i16::MAX] {
            assert_eq!(<i16 as DeviceScalar>::from_bits(v.to_bits()), v);
        }
        assert_eq!(<f64 as DeviceScalar>::from_bits(2.5f64.to_bits()), 2.5);
    }

    #[test]
    fn handles_are_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<CudaContext>();
        check::<Stream>();
        check::<crate::Event>();
        check::<DeviceBuffer<f32>>();
        check::<LoadedModule>();
        check::<Error>();
    }
}
