//! cuprum's PTX writer: turns validated kernel IR into PTX text that the CUDA driver
//! JIT-assembles, for `sm_80` and `sm_90`, without LLVM or nvcc.
//!
//! The IR semantics (in `cuprum_ir::kernel`) are the contract: integer arithmetic wraps,
//! float arithmetic is IEEE without contraction, casts are Rust's `as`, and so on. The
//! writer maps each IR construct to PTX with exactly those semantics; where that needs a
//! sequence of instructions (narrow integers, 16-bit floats, `Round`, float `%`, the
//! transcendental functions) the sequence lives in one place and says why. Whatever it
//! cannot express exactly is a [`PtxError::Unsupported`], never silently different code.
//!
//! Module map: `regs` (register classes and type names), `emit` (entry structure, control
//! flow, memory, atomics, warp operations), `ops` (values, casts), `math` and
//! `transcendental` (float sequences, with their measured accuracy), `warp_matrix`
//! (`mma.sync`, `ldmatrix`, `cp.async`), `printf` (device `printf` through `vprintf`).
//! Which loads may use the read-only cache is the IR's address analysis
//! ([`cuprum_ir::Addresses`], shared with the optimizer). (The tests assemble what it writes
//! with `ptxas`, through `cuprum-testkit`.)
//!
//! # Machine parameters
//!
//! The entry takes one PTX parameter per scalar parameter and two per slice parameter, in
//! IR order: see [`machine_params`]. The runtime passes a pointer to each value, in that order,
//! to `cuLaunchKernel`.
//!
//! # Choices the IR leaves to the writer
//!
//! * Warp operations (`shfl.sync`, `vote.sync`) get exact member masks: the full mask at the
//!   top level of the body, the ballot of the branch or loop iteration inside control flow,
//!   with loops that contain one keeping their lanes together per iteration (`control` says
//!   why and how). Lanes that returned early do not block (checked on an H200).
//! * Shuffles follow PTX: only the low 5 bits of the lane operand count (an `Idx` source of 33
//!   reads lane 1, an `Up`/`Down` distance of 33 is a distance of 1).
//! * `Barrier` is `bar.sync 0`, `Fence` is `fence.sc` at the scope, atomics are `.relaxed` at
//!   the scope, `Trap` is `trap` (the launch fails; the host cannot tell which trap).
//! * Dynamic shared memory is one module-scope `.extern .shared` symbol, which the hardware
//!   places after the static shared arrays of the running kernel.
//! * `mma.sync`, `ldmatrix` and `cp.async` are the PTX instructions the IR statements are
//!   named after (the tensor cores' summation order is theirs, within the IR's documented
//!   tolerance); `cp.async` needs sm_80, which both targets are.
//! * `Print` calls the driver's `vprintf` with the format string verbatim.

#![warn(missing_docs)]

mod cluster;
mod control;
mod emit;
mod f64math;
mod math;
mod mbarrier;
mod ops;
mod pack;
mod printf;
mod regs;
mod tma;
mod transcendental;
mod warp_matrix;
mod wgmma;

use std::fmt::Write as _;

use cuprum_ir::{Kernel, Module, Op, ParamKind, Stmt, UnaryOp, ValidationError, validate_module};

/// A GPU architecture the writer targets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    /// Ampere (A100 and later): `sm_80`.
    Sm80,
    /// Hopper (H100, H200): `sm_90`, which later GPUs also run (the driver JITs it).
    Sm90,
    /// Hopper's architecture-specific target `sm_90a`: `sm_90` plus the instructions that
    /// exist on compute capability 9.0 only (`wgmma`, `setmaxnreg`). Code for it runs on 9.0
    /// and on no other GPU, so it is chosen only for modules that need it
    /// ([`Target::for_module`]).
    Sm90a,
}

impl Target {
    /// The PTX target name, as in `.target sm_80`.
    pub fn name(self) -> &'static str {
        match self {
            Target::Sm80 => "sm_80",
            Target::Sm90 => "sm_90",
            Target::Sm90a => "sm_90a",
        }
    }

    /// Whether the target has the architecture-specific instructions of its generation.
    pub fn is_arch_specific(self) -> bool {
        self == Target::Sm90a
    }

    /// The best portable target for a device of compute capability `major.minor`: `Sm90`
    /// from 9.0, `Sm80` from 8.0, `None` below (those GPUs are not supported).
    pub fn from_compute_capability(major: u32, minor: u32) -> Option<Target> {
        match (major, minor) {
            (m, _) if m >= 9 => Some(Target::Sm90),
            (8, _) => Some(Target::Sm80),
            _ => None,
        }
    }

    /// The target to write `module` for on a device of compute capability `major.minor`:
    /// the portable one ([`Target::from_compute_capability`]) unless the module uses an
    /// architecture-specific statement ([`Module::needs_arch_specific`]), which only
    /// compute capability 9.0 runs, as `sm_90a`.
    pub fn for_module(module: &Module, major: u32, minor: u32) -> Result<Target, TargetError> {
        let portable =
            Target::from_compute_capability(major, minor).ok_or(TargetError::TooOld {
                compute_capability: (major, minor),
            })?;
        if !module.needs_arch_specific() {
            return Ok(portable);
        }
        if (major, minor) == (9, 0) {
            Ok(Target::Sm90a)
        } else {
            Err(TargetError::NeedsSm90a {
                compute_capability: (major, minor),
            })
        }
    }
}

/// Why no target can run a module on a device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    /// The device predates `sm_80`.
    #[error(
        "compute capability {}.{} is older than 8.0 (sm_80, Ampere), the oldest cuprum writes code for",
        compute_capability.0, compute_capability.1
    )]
    TooOld {
        /// The device's compute capability.
        compute_capability: (u32, u32),
    },
    /// The module uses Hopper's architecture-specific instructions (`wgmma`, `setmaxnreg`),
    /// which exist on compute capability 9.0 only.
    #[error(
        "the module uses Hopper-only instructions (wgmma or setmaxnreg: target sm_90a), which \
         run on compute capability 9.0 only, not on {}.{}; write the kernel without them for \
         this GPU, or run it on an H100/H200 or the emulator",
        compute_capability.0, compute_capability.1
    )]
    NeedsSm90a {
        /// The device's compute capability.
        compute_capability: (u32, u32),
    },
}

/// Why a module could not be written as PTX.
#[derive(Debug, thiserror::Error)]
pub enum PtxError {
    /// The module breaks an IR invariant.
    #[error(transparent)]
    Invalid(#[from] ValidationError),
    /// The kernel uses something the PTX writer does not support (yet).
    #[error("kernel `{kernel}`: {what} is not supported by the PTX writer")]
    Unsupported {
        /// The kernel's name.
        kernel: String,
        /// The construct it could not write, such as `atomics on local memory`.
        what: String,
    },
}

/// One parameter of a PTX entry, as the launch passes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MachineParam {
    /// The PTX parameter name: `<kernel>_param_<n>`, `n` counting machine parameters.
    pub name: String,
    /// Its size in bytes (also its alignment).
    pub size_bytes: u32,
}

/// The PTX entry parameters of `kernel`, in order: a scalar parameter becomes one parameter of
/// its size (`bool` one byte, `0` or `1`; `f16`/`bf16` two bytes of raw bits); a slice
/// parameter becomes two 8-byte parameters, the base address (a device pointer) and the length
/// in elements.
pub fn machine_params(kernel: &Kernel) -> Vec<MachineParam> {
    let mut out = Vec::with_capacity(kernel.params.len() * 2);
    let mut push = |size_bytes: u32| {
        let name = emit::ParamName(&kernel.name, out.len() as u32).to_string();
        out.push(MachineParam { name, size_bytes });
    };
    for p in &kernel.params {
        match p.kind {
            ParamKind::Scalar(ty) => push(ty.size_bytes()),
            ParamKind::TensorMap { .. } => push(cuprum_ir::tma::TENSOR_MAP_BYTES as u32),
            ParamKind::Slice { .. } => {
                push(8);
                push(8);
            }
        }
    }
    out
}

/// Writes `module` as one PTX module for `target`, after validating it.
pub fn write_module(module: &Module, target: Target) -> Result<String, PtxError> {
    validate_module(module)?;
    if !target.is_arch_specific()
        && let Some(kernel) = module.kernels.iter().find(|k| k.needs_arch_specific())
    {
        return Err(PtxError::Unsupported {
            kernel: kernel.name.clone(),
            what: format!(
                "an sm_90a-only instruction (wgmma, setmaxnreg, a multicast copy) on target {}",
                target.name()
            ),
        });
    }
    let mut out = String::with_capacity(4096);
    let _ = write!(
        out,
        "//\n// Generated by cuprum-ptx {}\n//\n\n.version 8.0\n.target {}\n.address_size 64\n",
        env!("CARGO_PKG_VERSION"),
        target.name()
    );
    let uses =
        |pred: &dyn Fn(&Op) -> bool| module.kernels.iter().any(|k| emit::uses_op(&k.body, &pred));
    // One dynamic shared symbol, 16-byte aligned (kernels that ask for more align their
    // start themselves: `emit::DYN_SHARED_SYMBOL`).
    if module
        .kernels
        .iter()
        .any(|k| emit::uses_op(&k.body, &|op| matches!(op, Op::DynSharedAddr)))
    {
        let _ = writeln!(
            out,
            "\n.extern .shared .align {} .b8 {}[];",
            cuprum_ir::DYN_SHARED_MIN_ALIGN,
            emit::DYN_SHARED_SYMBOL
        );
    }
    if module
        .kernels
        .iter()
        .any(|k| emit::uses_stmt(&k.body, &|s| matches!(s, Stmt::Print { .. })))
    {
        out.push_str(printf::VPRINTF_DECL);
    }
    if uses(&|op| matches!(op, Op::Unary(UnaryOp::Sin | UnaryOp::Cos, _))) {
        let _ = write!(
            out,
            "\n.const .align 4 .b32 {}[{}] = {{",
            transcendental::TWO_OVER_PI_TABLE,
            transcendental::TWO_OVER_PI_WORDS.len()
        );
        for (i, w) in transcendental::TWO_OVER_PI_WORDS.iter().enumerate() {
            let sep = if i == 0 { "" } else { ", " };
            let _ = write!(out, "{sep}0x{w:08X}");
        }
        out.push_str("};\n");
    }
    for table in f64math::Table::ALL {
        if uses(&|op| table.used_by(op)) {
            out.push_str(&table.declaration());
        }
    }
    // Line information: one `.file` per source file the kernels' `SourceLine`s name.
    let mut files: Vec<String> = Vec::new();
    for kernel in &module.kernels {
        emit::source_files(&kernel.body, &mut files);
    }
    for (i, file) in files.iter().enumerate() {
        let escaped = file.replace('\\', "\\\\").replace('"', "\\\"");
        let _ = writeln!(out, ".file {} \"{escaped}\"", i + 1);
    }
    for kernel in &module.kernels {
        emit::write_kernel(kernel, target, &files, &mut out)?;
    }
    Ok(out)
}
