//! Running many cases on a device through `cuprum_runtime`: their kernels as one module (the
//! CUDA driver's JIT costs tens of milliseconds per module load, so one module holds many
//! kernels), all their buffers in one allocation (each at a 256-byte boundary), one upload,
//! one launch per kernel, one download.
//!
//! The same code runs on the CUDA backend and on the runtime's emulator
//! (`CudaContext::emulator()`), so CI exercises it without a GPU.

use std::sync::Arc;

use cuprum_ir::{Kernel, Module};
use cuprum_runtime::cache::ModuleRoute;
use cuprum_runtime::{
    BackendKind, CudaContext, DeviceBuffer, Error, KernelArg, LaunchConfig, LoadedModule,
};

use crate::inputs::{Fault, Inputs, Outcome};
use crate::program::{Param, Program};

/// Where each buffer of each case lies in the shared allocation.
struct Layout {
    /// Per case, per parameter: the byte offset of its buffer (0 for scalars).
    offsets: Vec<Vec<usize>>,
    bytes: usize,
}

const ALIGN: usize = 256;

fn layout(cases: &[(&Program, &Inputs)]) -> Layout {
    let mut end = 0usize;
    let offsets = cases
        .iter()
        .map(|(_, inputs)| {
            inputs
                .buffers
                .iter()
                .map(|b| {
                    let at = end;
                    if !b.is_empty() {
                        end = (end + b.len()).next_multiple_of(ALIGN);
                    }
                    at
                })
                .collect()
        })
        .collect();
    Layout {
        offsets,
        bytes: end.max(ALIGN),
    }
}

fn failed(e: &Error) -> Fault {
    match e {
        Error::Emulator { source, .. } => crate::classify(source),
        other => Fault::Invalid(format!("launch failed: {other}")),
    }
}

/// Loads `kernels` as one module on `ctx`: on CUDA, the PTX writer's text compiled by the
/// driver's JIT (not through the compile cache, which would link every kernel again and keep
/// thousands of one-off cubins on disk). Safe to call from several threads at once.
pub fn load(ctx: &CudaContext, kernels: Vec<Kernel>) -> Result<LoadedModule, Error> {
    let module = Arc::new(Module { kernels });
    Ok(LoadedModule::load_routed(ctx, module, &ModuleRoute::Jit)?.0)
}

/// Runs `kernels[i]` (the IR of `cases[i].0`) on `cases[i].1`, all as one module on `ctx`;
/// returns each case's outcome (see [`launch_all`]).
pub fn run_batch(
    ctx: &CudaContext,
    kernels: Vec<Kernel>,
    cases: &[(&Program, &Inputs)],
) -> Result<Vec<Outcome>, Error> {
    let module = load(ctx, kernels)?;
    launch_all(ctx, &module, cases)
}

/// Launches kernel `i` of `module` on `cases[i]` for every `i`, each case's buffers in one
/// shared allocation; returns each case's outcome. An error allocating or copying is the
/// `Err`; a failed launch is that case's [`Fault::Invalid`] (on CUDA, the cases after it are
/// not run: the context may be lost).
pub fn launch_all(
    ctx: &CudaContext,
    module: &LoadedModule,
    cases: &[(&Program, &Inputs)],
) -> Result<Vec<Outcome>, Error> {
    let lay = layout(cases);
    let mut arena = vec![0u8; lay.bytes];
    for ((_, inputs), offsets) in cases.iter().zip(&lay.offsets) {
        for (b, &at) in inputs.buffers.iter().zip(offsets) {
            arena[at..at + b.len()].copy_from_slice(b);
        }
    }
    let stream = ctx.default_stream();
    let device = DeviceBuffer::from_host(&stream, &arena)?;
    let base = device.device_address();
    let cuda = ctx.backend() == BackendKind::Cuda;
    let mut outcomes: Vec<Option<Fault>> = vec![None; cases.len()];
    let mut lost = false;
    for (k, ((program, inputs), offsets)) in cases.iter().zip(&lay.offsets).enumerate() {
        if lost {
            outcomes[k] = Some(Fault::Invalid(
                "not run: an earlier launch of its module failed".into(),
            ));
            continue;
        }
        let args: Vec<KernelArg> = program
            .params
            .iter()
            .enumerate()
            .map(|(i, p)| match *p {
                Param::Scalar(ty) => KernelArg::Scalar {
                    ty,
                    bits: inputs.scalars[i],
                },
                Param::Buffer { .. } => KernelArg::Slice {
                    address: base + offsets[i] as u64,
                    len: u64::from(program.buffer_len(i as u32)),
                },
            })
            .collect();
        let config = LaunchConfig {
            grid_dim: (program.grid, 1, 1),
            block_dim: (program.block, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: every slice argument lies inside `device`, which outlives the launches,
        // at an offset where this case's buffer of that parameter's element type was
        // written; no two arguments of one launch overlap.
        let launched = unsafe { module.launch(&stream, k, &config, &args) };
        if let Err(e) = launched {
            outcomes[k] = Some(failed(&e));
            lost = cuda;
        }
    }
    stream.synchronize()?;
    let bytes = device.to_host_vec(&stream)?;
    Ok(cases
        .iter()
        .zip(&lay.offsets)
        .zip(outcomes)
        .map(|(((_, inputs), offsets), fault)| match fault {
            Some(f) => Err(f),
            None => Ok(inputs
                .buffers
                .iter()
                .zip(offsets)
                .map(|(b, &at)| bytes[at..at + b.len()].to_vec())
                .collect()),
        })
        .collect())
}
