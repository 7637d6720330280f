//! The lowered side: a case's kernel lowered (`cuprum-tile-lower`), optimized
//! (`cuprum-opt`), written as PTX for sm_80 and sm_90 (a refusal is a failure even without a
//! GPU), and run through `cuprum-runtime` on a context: the emulator, or the GPU where the
//! test binaries run with `CUPRUM_DEVICE=cuda`. Kernels of many cases load as one module
//! (on a GPU the driver's JIT costs tens of milliseconds per module), each case's tensors in
//! their own allocations, passed as the launch contract's [`ArgSlot`]s say.

use std::sync::Arc;

use cuprum_emu::EmuError;
use cuprum_ir::{Kernel, Module, ScalarType};
use cuprum_runtime::cache::ModuleRoute;
use cuprum_runtime::{
    BackendKind, CudaContext, DeviceBuffer, Error, KernelArg, LaunchConfig, LoadedModule,
};
use cuprum_tile_lower::{ArgSlot, LowerOptions, Lowered, lower_with};

use crate::{ArgData, Case, Fault, Outcome, TrapClass};

/// The multiprocessors a persistent kernel's launch here is sized for
/// ([`cuprum_tile_lower::BlockCount::grid`]), whatever the device has: few, so that each
/// block runs several tiles, which is what such a kernel's loop (and whatever it carries
/// from one tile to the next) must get right.
pub const PERSISTENT_MULTIPROCESSORS: u32 = 2;

/// A case's kernel, lowered: as the lowering emits it and after the optimizer.
#[derive(Clone, Debug)]
pub struct Compiled {
    /// The lowering's output (its kernel unoptimized).
    pub lowered: Lowered,
    /// The kernel after `cuprum_opt::optimize_kernel`.
    pub optimized: Kernel,
}

impl Compiled {
    /// The kernel run: optimized or as lowered.
    pub fn kernel(&self, optimized: bool) -> &Kernel {
        if optimized {
            &self.optimized
        } else {
            &self.lowered.kernel
        }
    }
}

/// Lowers `case`'s kernel with `options`, optimizes it and writes its PTX for sm_80 and
/// sm_90, or for sm_90a only where the options name a compute capability 9.0 device (thrown
/// away, unless `CUPRUM_PTX_DUMP` names a folder to write it to, as the runtime's launches
/// do); `Err` says which step failed and why.
pub fn compile(case: &Case, options: &LowerOptions) -> Result<Compiled, String> {
    let lowered = lower_with(&case.kernel, options).map_err(|e| format!("the lowering: {e}"))?;
    let mut optimized = lowered.kernel.clone();
    cuprum_opt::optimize_kernel(&mut optimized);
    cuprum_ir::validate_kernel(&optimized)
        .map_err(|e| format!("the optimizer made invalid IR: {e}"))?;
    let module = Module {
        kernels: vec![optimized.clone()],
    };
    let hopper = options.compute_capability == Some((9, 0));
    let targets: &[cuprum_ptx::Target] = if hopper {
        &[cuprum_ptx::Target::Sm90a]
    } else {
        &[cuprum_ptx::Target::Sm80, cuprum_ptx::Target::Sm90]
    };
    let dump = std::env::var_os("CUPRUM_PTX_DUMP").map(std::path::PathBuf::from);
    for &target in targets {
        let ptx = cuprum_ptx::write_module(&module, target)
            .map_err(|e| format!("the PTX writer ({}): {e}", target.name()))?;
        if let Some(dir) = &dump {
            let path = dir.join(format!("{}.{}.ptx", case.kernel.name, target.name()));
            std::fs::write(&path, ptx)
                .map_err(|e| format!("CUPRUM_PTX_DUMP: writing {}: {e}", path.display()))?;
        }
    }
    Ok(Compiled { lowered, optimized })
}

/// The fault a launch error stands for: the emulator's traps by class, a GPU's launch
/// failure as a trap of unknown class (the driver does not say which), anything else a
/// failure.
pub fn fault_of(e: &Error) -> Fault {
    match e {
        Error::Emulator { source, .. } => match source {
            EmuError::DivideByZero { .. } => Fault::Trap(TrapClass::DivideByZero),
            EmuError::DivideOverflow { .. } => Fault::Trap(TrapClass::DivideOverflow),
            EmuError::AssertFailed { .. } => Fault::Trap(TrapClass::Assert),
            other => Fault::Failed(format!("the emulator: {other}")),
        },
        Error::KernelFault { .. } => Fault::Trap(TrapClass::Unknown),
        other => Fault::Failed(format!("the launch: {other}")),
    }
}

/// Runs `cases[i]` with kernel `kernels[i]` (its lowered kernel, optimized or not), all
/// kernels as one module on `ctx`; returns each case's outcome. Loading the module failing
/// is every case's failure; on a GPU, a failed launch loses the context, so the cases after
/// it fail too (the generator never makes a program that traps).
pub fn run_batch(ctx: &CudaContext, cases: &[(&Case, &Compiled)], optimized: bool) -> Vec<Outcome> {
    let module = Module {
        kernels: cases
            .iter()
            .map(|(_, c)| c.kernel(optimized).clone())
            .collect(),
    };
    let loaded = match LoadedModule::load_routed(ctx, Arc::new(module), &ModuleRoute::Jit) {
        Ok((m, _)) => m,
        Err(e) => {
            let f = Fault::Failed(format!("loading the module: {e}"));
            return cases.iter().map(|_| Err(f.clone())).collect();
        }
    };
    let cuda = ctx.backend() == BackendKind::Cuda;
    let mut lost = false;
    let mut outcomes = Vec::with_capacity(cases.len());
    for (k, (case, compiled)) in cases.iter().enumerate() {
        if lost {
            outcomes.push(Err(Fault::Failed(
                "not run: an earlier launch on this GPU context failed".into(),
            )));
            continue;
        }
        let outcome = launch(ctx, &loaded, k, case, &compiled.lowered);
        lost = cuda && outcome.is_err();
        outcomes.push(outcome);
    }
    outcomes
}

/// Runs one case with kernel `kernel` of `module` (lowered as `lowered` says).
fn launch(
    ctx: &CudaContext,
    module: &LoadedModule,
    kernel: usize,
    case: &Case,
    lowered: &Lowered,
) -> Outcome {
    let stream = ctx.default_stream();
    let failed = |e: Error| fault_of(&e);
    let mut buffers: Vec<Option<DeviceBuffer<u8>>> = Vec::with_capacity(case.args.len());
    for a in &case.args {
        buffers.push(match a {
            ArgData::Tensor(t) => {
                // A zero-length allocation has no address: give it one element.
                let bytes = if t.bytes.is_empty() {
                    vec![0u8; t.elem.size_bytes() as usize]
                } else {
                    t.bytes.clone()
                };
                Some(DeviceBuffer::from_host(&stream, &bytes).map_err(failed)?)
            }
            ArgData::Scalar(_) => None,
        });
    }
    let mut args = Vec::with_capacity(lowered.args.len());
    for slot in &lowered.args {
        let param = slot.param() as usize;
        let i64arg = |v: i64| KernelArg::Scalar {
            ty: ScalarType::I64,
            bits: v as u64,
        };
        let arg = match (slot, case.args.get(param), buffers.get(param)) {
            (ArgSlot::Scalar { .. }, Some(ArgData::Scalar(c)), _) => KernelArg::Scalar {
                ty: c.ty,
                bits: c.bits,
            },
            (ArgSlot::TensorData { .. }, Some(ArgData::Tensor(t)), Some(Some(b))) => {
                KernelArg::Slice {
                    address: b.device_address(),
                    len: t.len(),
                }
            }
            (ArgSlot::TensorOffset { .. }, Some(ArgData::Tensor(t)), _) => i64arg(t.offset as i64),
            (ArgSlot::TensorDim { axis, .. }, Some(ArgData::Tensor(t)), _) => {
                i64arg(t.shape[*axis as usize] as i64)
            }
            (ArgSlot::TensorStride { axis, .. }, Some(ArgData::Tensor(t)), _) => {
                i64arg(t.strides[*axis as usize])
            }
            (
                ArgSlot::TensorMap {
                    box_dims, swizzle, ..
                },
                Some(ArgData::Tensor(t)),
                Some(Some(b)),
            ) => tensor_map(ctx, t, b, *box_dims, *swizzle).map_err(failed)?,
            _ => {
                return Err(Fault::Failed(format!(
                    "argument {param} does not fit the lowered kernel's slot {slot:?}"
                )));
            }
        };
        args.push(arg);
    }
    let [x, y, z] = lowered
        .blocks
        .grid(case.grid, PERSISTENT_MULTIPROCESSORS)
        .ok_or_else(|| {
            Fault::Failed(format!(
                "the grid {:?} has more tile blocks than a persistent kernel counts",
                case.grid
            ))
        })?;
    let config = LaunchConfig {
        grid_dim: (x, y, z),
        block_dim: (lowered.block_threads, 1, 1),
        shared_mem_bytes: lowered.shared_bytes,
    };
    // SAFETY: every slice argument is a live `u8` allocation of this context holding whole
    // elements of the parameter's type (the runtime moves bytes; the element type only
    // sizes the slice), no two arguments share an allocation, and every element the view
    // reaches lies inside it (the generator's views and the lowering's contract: elements
    // outside the tensor are never touched).
    unsafe { module.launch(&stream, kernel, &config, &args) }.map_err(failed)?;
    stream.synchronize().map_err(failed)?;
    buffers
        .iter()
        .map(|b| match b {
            Some(b) => b.to_host_vec(&stream).map_err(failed),
            None => Ok(Vec::new()),
        })
        .zip(&case.args)
        .map(|(r, a)| {
            // Drop the element added to an empty allocation.
            r.map(|mut v| {
                if let ArgData::Tensor(t) = a {
                    v.truncate(t.bytes.len());
                }
                v
            })
        })
        .collect()
}

/// The tensor map [`ArgSlot::TensorMap`] asks for (`cuprum_tile_lower::slot_tensor_map`), of
/// tensor `t` in buffer `b`, from its first element.
fn tensor_map(
    ctx: &CudaContext,
    t: &crate::Tensor,
    b: &DeviceBuffer<u8>,
    box_dims: [u32; 2],
    swizzle: cuprum_ir::Swizzle,
) -> Result<KernelArg, Error> {
    let size = u64::from(t.elem.size_bytes());
    let start = t.offset * size;
    let strides: Vec<u64> = t.strides.iter().map(|s| s.unsigned_abs()).collect();
    let desc = cuprum_tile_lower::slot_tensor_map(
        t.elem,
        b.device_address() + start,
        &t.shape,
        &strides,
        box_dims,
        swizzle,
    )
    .ok_or(Error::TensorMap {
        problem: cuprum_ir::TensorMapProblem::Rank(t.shape.len()),
    })?;
    let have = (t.bytes.len() as u64).saturating_sub(start);
    let map = cuprum_runtime::tensor_map::encode(ctx.backend(), &desc, Some(have))?;
    Ok(KernelArg::TensorMap {
        map,
        address: desc.address,
        bytes: have,
    })
}
