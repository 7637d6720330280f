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

use std::fmt;
use std::sync::Arc;

use cuprum_ir::{Kernel, ParamKind, SliceAccess};

use crate::backend::{Failure, LaunchTarget, LoadRequest, ModuleHandle, PtxText, module_label};
use crate::buffer::{DeviceCopy, DeviceScalar};
use crate::cache::ModuleRoute;
pub use crate::config::{KernelArg, LaunchConfig, LaunchConfig1D, LaunchConfig2D, LaunchConfig3D};
use crate::context::{CudaContext, Stream};
use crate::error::{Error, Result};
use crate::graph::GraphOp;
use crate::limits::{KernelFacts, check_config};
use crate::ordering::{self, Access, Owner};
use crate::view::{DeviceRead, DeviceWrite};

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
    /// The bytes of dynamic shared memory the kernel relies on (`dynamic_shared = N`): a
    /// launch must give at least that many.
    pub dynamic_shared: Option<u32>,
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
        if config.block_dim != self.block {
            let (x, y, z) = config.block_dim;
            let (cx, cy, cz) = self.block;
            return invalid(format!(
                "block ({x}, {y}, {z}) does not match the block ({cx}, {cy}, {cz}) its launch \
                 contract declares"
            ));
        }
        if let Some(need) = self.dynamic_shared
            && config.shared_mem_bytes < need
        {
            return invalid(format!(
                "the launch gives {} bytes of dynamic shared memory, but the launch contract \
                 declares dynamic_shared = {need}",
                config.shared_mem_bytes
            ));
        }
        check_config(
            self.kernel,
            ctx.limits(),
            KernelFacts {
                max_threads: self.max_threads,
                static_shared_bytes: 0,
                dyn_shared_padding: 0,
                block: Some(self.block),
                cluster: None,
            },
            config,
        )?;
        let grid = [config.grid_dim.0, config.grid_dim.1, config.grid_dim.2];
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

impl KernelArg {
    /// A scalar argument.
    pub fn scalar<T: DeviceScalar>(v: T) -> Self {
        Self::Scalar {
            ty: T::TYPE,
            bits: v.to_bits(),
        }
    }

    /// A read-only slice argument (`&[T]` in the kernel): a buffer or a view of one.
    pub fn slice<T: DeviceCopy>(b: &impl DeviceRead<T>) -> Self {
        let span = b.span();
        Self::Slice {
            address: span.address(),
            len: span.len as u64,
        }
    }

    /// A read-only slice of aggregate elements (`&[[f32; 4]]`, `&[Particle]` in the kernel):
    /// the kernel sees it as bytes, so its length is in bytes.
    pub fn slice_bytes<T: DeviceCopy>(b: &impl DeviceRead<T>) -> Self {
        let span = b.span();
        Self::Slice {
            address: span.address(),
            len: (span.len * std::mem::size_of::<T>()) as u64,
        }
    }

    /// A written slice of aggregate elements (`DisjointSlice<[f32; 4]>`), its length in bytes.
    pub fn slice_bytes_mut<T: DeviceCopy>(b: &mut impl DeviceWrite<T>) -> Self {
        Self::slice_bytes(b)
    }

    /// A written slice argument (`DisjointSlice<T>` or `&mut [T]` in the kernel): a buffer or
    /// a mutable view of one. Taking `&mut` lets the borrow checker forbid passing the same
    /// elements as another argument.
    pub fn slice_mut<T: DeviceCopy>(b: &mut impl DeviceWrite<T>) -> Self {
        Self::slice(b)
    }
}

/// Per-kernel launch data prepared at load time.
struct KernelInfo {
    name: Arc<str>,
    facts: KernelFacts,
    /// The tensor-map parameters the kernel stores through (TMA tile stores), whose tensors
    /// must not overlap any other argument of a launch.
    stored_maps: Vec<u32>,
}

/// The tensor-map parameters `k` has TMA tile stores through.
fn stored_maps(k: &Kernel) -> Vec<u32> {
    let mut maps = Vec::new();
    k.body.visit(&mut |s| {
        if let cuprum_ir::Stmt::Tma(cuprum_ir::TmaOp::StoreTile {
            map: cuprum_ir::TensorMapRef::Param(i),
            ..
        }) = s
            && !maps.contains(i)
        {
            maps.push(*i);
        }
    });
    maps
}

/// Refuses a launch in which the tensor of a map the kernel stores through overlaps another
/// map's or a read-only slice's memory: both come from shared borrows on the host (a
/// `TensorMap` borrows its buffer as `&[T]` does), so the borrow checker cannot, and a
/// read-only slice may be read through the non-coherent cache while the TMA writes it. A
/// writable slice comes from an exclusive borrow, which the borrow checker already keeps
/// apart from a map's shared one; where one does cover a stored map's tensor, it is the
/// same output on purpose (a tile kernel's partitioned output, stored tile by tile through
/// a map of it).
fn check_stored_maps(name: &str, ir: &Kernel, stored: &[u32], args: &[KernelArg]) -> Result<()> {
    let range = |arg: &KernelArg, param: &cuprum_ir::Param| match (*arg, param.kind) {
        (KernelArg::TensorMap { address, bytes, .. }, _) => Some((address, bytes)),
        (KernelArg::Slice { address, len }, ParamKind::Slice { elem, .. }) => {
            Some((address, len.saturating_mul(u64::from(elem.size_bytes()))))
        }
        _ => None,
    };
    for &i in stored {
        let i = i as usize;
        let (Some(arg), Some(param)) = (args.get(i), ir.params.get(i)) else {
            continue;
        };
        let Some((start, bytes)) = range(arg, param).filter(|r| r.1 > 0) else {
            continue;
        };
        for (j, (other, p)) in args.iter().zip(&ir.params).enumerate() {
            if matches!(p.kind, ParamKind::Slice { access, .. } if access != SliceAccess::ReadOnly)
            {
                continue;
            }
            let Some((o, n)) = range(other, p).filter(|r| r.1 > 0) else {
                continue;
            };
            if j != i && o < start.saturating_add(bytes) && start < o.saturating_add(n) {
                return Err(Error::InvalidLaunch {
                    kernel: name.to_string(),
                    reason: format!(
                        "the kernel stores tiles through tensor map `{}`, whose tensor overlaps \
                         the memory of parameter `{}`: pass a buffer that no other argument of \
                         the launch uses",
                        param.name, p.name
                    ),
                });
            }
        }
    }
    Ok(())
}

/// A compilation unit loaded into a context, ready to launch its kernels.
pub struct LoadedModule {
    // Declared before `ctx`: the module is unloaded while its context lives (shared with the
    // graphs that launch its kernels, which keep the context too).
    backend: Arc<ModuleHandle>,
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

impl LoadedModule {
    /// Makes `ir` ready to launch on `ctx`. CUDA: writes PTX for the device's architecture
    /// (sm_80 or newer) and has the driver compile it (its error log is in
    /// [`Error::ModuleLoad`]), unless the compile cache ([`crate::cache`]) already holds the
    /// driver's output for this PTX, device and driver; emulator: keeps the IR. Either way the
    /// IR is validated first (once per process for one `Arc`).
    pub fn load(ctx: &CudaContext, ir: Arc<cuprum_ir::Module>) -> Result<Self> {
        Ok(Self::load_inner(ctx, ir, PtxText::FromIr, &ModuleRoute::Default)?.0)
    }

    /// Like [`load`](Self::load), with `ptx`: what `cuprum_ptx::write_module(&ir, target)`
    /// returned, kept from an earlier process (the tile JIT cache keeps it with the IR), so
    /// that the load does not write it again. The caller vouches that it is exactly that
    /// text; it is used where `target` is the device's PTX target, and the PTX is written
    /// from `ir` otherwise. The emulator runs `ir`.
    #[doc(hidden)]
    pub fn load_written(
        ctx: &CudaContext,
        ir: Arc<cuprum_ir::Module>,
        target: cuprum_ptx::Target,
        ptx: String,
    ) -> Result<Self> {
        let written = PtxText::Written { target, ptx };
        Ok(Self::load_inner(ctx, ir, written, &ModuleRoute::Default)?.0)
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
        Self::load_inner(ctx, ir, PtxText::FromIr, route)
    }

    /// The registers per thread the driver gave kernel number `kernel`
    /// (`CU_FUNC_ATTRIBUTE_NUM_REGS`); `None` on the emulator or when the driver does not say.
    pub fn registers(&self, kernel: usize) -> Option<u32> {
        self.resources(kernel).map(|r| r.registers)
    }

    /// What the driver gave kernel number `kernel`: registers and local memory per thread,
    /// the largest block it can launch with; `None` on the emulator or when the driver does
    /// not say. For tools that compare compiles (the `cache_speed` example).
    pub fn resources(&self, kernel: usize) -> Option<crate::cache::occupancy::KernelUse> {
        self.ctx.inner.backend.resources(&self.backend, kernel)
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
        Ok(Self::load_inner(ctx, ir, PtxText::Override(ptx), &ModuleRoute::Default)?.0)
    }

    fn load_inner(
        ctx: &CudaContext,
        ir: Arc<cuprum_ir::Module>,
        ptx: PtxText,
        route: &ModuleRoute,
    ) -> Result<(Self, Option<Vec<u8>>)> {
        crate::cache::stats::validate_once(&ir)?;
        let kernels: Vec<KernelInfo> = ir
            .kernels
            .iter()
            .map(|k| KernelInfo {
                name: Arc::from(k.name.as_str()),
                facts: KernelFacts {
                    max_threads: k.launch_bounds.map(|b| b.max_threads),
                    static_shared_bytes: k.shared_layout().1,
                    dyn_shared_padding: k.dyn_shared_padding(),
                    block: k.block,
                    cluster: k.cluster,
                },
                stored_maps: stored_maps(k),
            })
            .collect();
        let (backend, cubin) = ctx.inner.backend.load(
            &ir,
            LoadRequest {
                limits: ctx.limits(),
                ptx,
                route,
            },
        )?;
        let loaded = Self {
            backend: Arc::new(backend),
            kernels,
            ir,
            ctx: ctx.clone(),
        };
        Ok((loaded, cubin))
    }

    /// The PTX text the driver loaded (CUDA backend only).
    pub fn ptx(&self) -> Option<&str> {
        self.backend.ptx()
    }

    /// What the driver's JIT (ptxas) wrote when it compiled this module in this process:
    /// its warnings and notes, empty when the module came from the compile cache as a cubin
    /// (load it with `ModuleRoute::Jit` to see them) and on the emulator.
    pub fn jit_log(&self) -> &str {
        self.backend.compile_log()
    }

    /// ptxas's performance warnings in [`jit_log`](Self::jit_log): the lines naming a
    /// warning code (`C7510`: `wgmma` serialized; `C7508`: `setmaxnreg` ignored; ...). A
    /// Hopper kernel's test asserts this is empty.
    pub fn jit_warnings(&self) -> Vec<&str> {
        self.jit_log()
            .lines()
            .filter(|line| line.contains("warning") || line.contains("(C7"))
            .collect()
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
    /// device limits and the kernel's launch bounds and shared memory, the kernel's launch
    /// requirements (`requires`, which the optimizer may have relied on), and that no other
    /// argument overlaps the tensor of a map the kernel stores through
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
        check_requirements(ir, args)?;
        check_config(&info.name, self.ctx.limits(), info.facts, config)?;
        if !info.stored_maps.is_empty() {
            check_stored_maps(&info.name, ir, &info.stored_maps, args)?;
        }
        let buffers = self.buffers_of(ir, args)?;
        if let Some(recording) = stream.recording() {
            recording.record(
                GraphOp::Launch {
                    module: self.backend.clone(),
                    ir: self.ir.clone(),
                    kernel,
                    static_shared_bytes: info.facts.static_shared_bytes,
                    name: info.name.clone(),
                    config: *config,
                    args: args.to_vec(),
                },
                buffers,
            )?;
            return Ok(());
        }
        let held = ordering::hold_memory(stream, &buffers)?;
        // SAFETY: the caller's contract, as above.
        unsafe { self.submit(stream, kernel, ir, config, args) }?;
        held.note_after()
    }

    /// The registered buffers among `args`, with how the kernel uses each; a buffer of another
    /// context is [`Error::ContextMismatch`]. Slices in no live buffer (raw addresses, only
    /// unsafe code makes them) are the caller's business and are not ordered.
    fn buffers_of(
        &self,
        ir: &Kernel,
        args: &[KernelArg],
    ) -> Result<Vec<(Arc<ordering::Memory>, Access)>> {
        let mut ranges = Vec::new();
        let mut accesses = Vec::new();
        for (param, arg) in ir.params.iter().zip(args) {
            match (param.kind, *arg) {
                (ParamKind::Slice { elem, access }, KernelArg::Slice { address, len }) => {
                    if address == 0 && len == 0 {
                        continue;
                    }
                    ranges.push((address, len.saturating_mul(u64::from(elem.size_bytes()))));
                    accesses.push(Access::of(access));
                }
                // A tensor map's copies may store into its tensor.
                (ParamKind::TensorMap { .. }, KernelArg::TensorMap { address, bytes, .. }) => {
                    ranges.push((address, bytes));
                    accesses.push(Access::Write);
                }
                _ => {}
            }
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

    /// Hands the checked launch of kernel number `kernel` (whose IR is `ir`) to the backend.
    ///
    /// # Safety
    /// As for [`launch`](Self::launch), whose checks must have passed.
    unsafe fn submit(
        &self,
        stream: &Stream,
        kernel: usize,
        ir: &Kernel,
        config: &LaunchConfig,
        args: &[KernelArg],
    ) -> Result<()> {
        let info = &self.kernels[kernel];
        let target = LaunchTarget {
            index: kernel,
            ir,
            static_shared_bytes: info.facts.static_shared_bytes,
        };
        // SAFETY: the caller's contract, as above.
        let launched = unsafe {
            self.ctx
                .inner
                .backend
                .launch(&self.backend, stream.handle(), &target, config, args)
        };
        if matches!(launched, Ok(()) | Err(Failure::Ran(_))) {
            self.ctx.count_launch();
            self.ctx.note_launch(stream, &info.name);
        }
        launched.map_err(|f| self.ctx.fail(f, Some(stream)))
    }
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
/// Refuses a launch whose arguments fail one of the kernel's launch requirements
/// ([`cuprum_ir::requires`]): its optimized code may rely on them.
pub(crate) fn check_requirements(kernel: &Kernel, args: &[KernelArg]) -> Result<()> {
    use cuprum_ir::requires::ArgValue as Read;
    if kernel.requires.is_empty() {
        return Ok(());
    }
    let read: Vec<Read> = args
        .iter()
        .map(|a| match *a {
            KernelArg::Scalar { bits, .. } => Read::Scalar(bits),
            KernelArg::Slice { len, .. } => Read::Slice(len),
            _ => Read::Other,
        })
        .collect();
    match cuprum_ir::requires::first_failing(kernel, &read) {
        Some(r) => Err(Error::InvalidLaunch {
            kernel: kernel.name.clone(),
            reason: format!("the launch contract's size requirement `{}` fails", r.text),
        }),
        None => Ok(()),
    }
}

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
                         of {SLICE_ALIGN} bytes (a slice argument is a whole buffer, or a view \
                         starting a multiple of {SLICE_ALIGN} bytes into one)",
                        param.name
                    ));
                }
            }
            (ParamKind::TensorMap { .. }, KernelArg::TensorMap { .. }) => {}
            (kind, KernelArg::TensorMap { .. }) => {
                return mismatch(format!(
                    "argument {index} (`{}`) must be {}, got a tensor map",
                    param.name,
                    describe_kind(kind)
                ));
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
        ParamKind::TensorMap { elem, rank } => {
            format!("a tensor map `TensorMap<{}, {rank}>`", elem.rust_name())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buffer::DeviceBuffer;
    use cuprum_ir::ScalarType;

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
