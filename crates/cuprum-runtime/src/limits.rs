//! What a device can do ([`DeviceLimits`]), queried once when a context is created, and the
//! checks of a launch configuration against those limits.
//!
//! Launch contracts (`prepare_*`) and raw launches both go through `check_config`, so the
//! user gets one precise [`Error::InvalidLaunch`] naming the kernel and the numbers instead of
//! the driver's generic `CUDA_ERROR_INVALID_VALUE` (or, on the emulator, a different error than
//! the GPU would give). This module only checks; it never talks to a device.

use crate::config::LaunchConfig;
use crate::error::{Error, Result};

/// The limits of one device, queried once at context creation.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeviceLimits {
    /// The device's marketing name (`"NVIDIA H200"`, `"cuprum CPU emulator"`).
    pub name: String,
    /// `(major, minor)`, e.g. `(9, 0)`.
    pub compute_capability: (u32, u32),
    /// Most threads in one block (1024 on every supported GPU).
    pub max_threads_per_block: u32,
    /// Largest block size along `x`, `y` and `z`.
    pub max_block_dim: [u32; 3],
    /// Largest grid size, in blocks, along `x`, `y` and `z`.
    pub max_grid_dim: [u32; 3],
    /// Shared memory a block may use without opting in (48 KiB on every sm_80+ device).
    pub max_shared_per_block: u32,
    /// Shared memory a block may use after opting in (the runtime opts in when a launch needs
    /// it): 163 KiB on sm_80, 227 KiB on sm_90.
    pub max_shared_per_block_optin: u32,
    /// Number of streaming multiprocessors (132 on an H100/H200 SXM).
    pub multiprocessor_count: u32,
    /// Threads per warp: 32.
    pub warp_size: u32,
    /// Device memory in bytes.
    pub total_memory: u64,
    /// 32-bit registers per multiprocessor (65536 on every sm_80+ part); 0 if the driver did
    /// not say. With the three below, what the compile cache's occupancy arithmetic
    /// ([`crate::cache::occupancy`]) needs.
    pub registers_per_sm: u32,
    /// 32-bit registers one block may use (65536); 0 if unknown.
    pub registers_per_block: u32,
    /// Resident threads per multiprocessor (2048 on sm_80 and sm_90, 1536 on sm_86 and
    /// sm_89); 0 if unknown.
    pub max_threads_per_sm: u32,
    /// Resident blocks per multiprocessor (32 on sm_80 and sm_90); 0 if unknown.
    pub max_blocks_per_sm: u32,
}

impl DeviceLimits {
    /// The limits the emulator reports: those of an sm_90 part (H100/H200 class).
    pub fn emulator() -> Self {
        Self {
            name: "cuprum CPU emulator".to_owned(),
            compute_capability: (9, 0),
            max_threads_per_block: 1024,
            max_block_dim: [1024, 1024, 64],
            max_grid_dim: [i32::MAX as u32, 65535, 65535],
            max_shared_per_block: 48 * 1024,
            max_shared_per_block_optin: cuprum_emu::MAX_SHARED_BYTES,
            multiprocessor_count: 132,
            warp_size: 32,
            total_memory: 16 << 30,
            registers_per_sm: 65536,
            registers_per_block: 65536,
            max_threads_per_sm: 2048,
            max_blocks_per_sm: 32,
        }
    }
}

/// Kernel facts that a configuration is checked against, beside the device limits.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct KernelFacts {
    /// `.maxntid` of the kernel, if declared.
    pub max_threads: Option<u32>,
    /// Bytes of static shared memory the kernel declares.
    pub static_shared_bytes: u32,
    /// Bytes a GPU launch adds to the dynamic shared memory, so that the kernel can align
    /// it ([`cuprum_ir::Kernel::dyn_shared_padding`]); counted on both backends.
    pub dyn_shared_padding: u32,
    /// The exact block shape the kernel declares (`#[launch_contract(block = ...)]`), which
    /// every launch, raw ones included, must have: the compiler relies on it.
    pub block: Option<(u32, u32, u32)>,
    /// The cluster shape the kernel declares ([`cuprum_ir::Kernel::cluster`]): the grid must
    /// be made of whole clusters, on a device that has clusters (compute capability 9.0+).
    pub cluster: Option<(u32, u32, u32)>,
}

fn fmt3(v: (u32, u32, u32)) -> String {
    format!("({}, {}, {})", v.0, v.1, v.2)
}

/// Checks `config` against the device limits and the kernel facts. The reason names the
/// numbers; the caller's kernel name goes into the error.
pub(crate) fn check_config(
    kernel: &str,
    limits: &DeviceLimits,
    facts: KernelFacts,
    config: &LaunchConfig,
) -> Result<()> {
    let invalid = |reason: String| {
        Err(Error::InvalidLaunch {
            kernel: kernel.to_owned(),
            reason,
        })
    };
    let block = [config.block_dim.0, config.block_dim.1, config.block_dim.2];
    let grid = [config.grid_dim.0, config.grid_dim.1, config.grid_dim.2];
    const AXES: [&str; 3] = ["x", "y", "z"];
    for axis in 0..3 {
        if block[axis] == 0 {
            return invalid(format!(
                "block dimension {} is 0 in block {}: every dimension must be at least 1",
                AXES[axis],
                fmt3(config.block_dim)
            ));
        }
        if block[axis] > limits.max_block_dim[axis] {
            return invalid(format!(
                "block dimension {} is {}, above the device limit of {} ({})",
                AXES[axis], block[axis], limits.max_block_dim[axis], limits.name
            ));
        }
    }
    if let Some(required) = facts.block
        && required != config.block_dim
    {
        return invalid(format!(
            "block {} does not match the block {} the kernel declares in its \
             #[launch_contract]; the kernel is compiled for that block shape (its thread \
             indices are assumed below it), so launch it with block {}",
            fmt3(config.block_dim),
            fmt3(required),
            fmt3(required)
        ));
    }
    let threads = u64::from(block[0]) * u64::from(block[1]) * u64::from(block[2]);
    if threads > u64::from(limits.max_threads_per_block) {
        return invalid(format!(
            "block {} has {threads} threads, above the device limit of {} threads per block ({})",
            fmt3(config.block_dim),
            limits.max_threads_per_block,
            limits.name
        ));
    }
    if let Some(max) = facts.max_threads
        && threads > u64::from(max)
    {
        return invalid(format!(
            "block {} has {threads} threads, above the kernel's launch bounds of {max} threads",
            fmt3(config.block_dim)
        ));
    }
    for axis in 0..3 {
        if grid[axis] == 0 {
            return invalid(format!(
                "grid dimension {} is 0 in grid {}: every dimension must be at least 1 (an \
                 empty launch is not allowed; skip the launch instead)",
                AXES[axis],
                fmt3(config.grid_dim)
            ));
        }
        if grid[axis] > limits.max_grid_dim[axis] {
            return invalid(format!(
                "grid dimension {} is {}, above the device limit of {} ({})",
                AXES[axis], grid[axis], limits.max_grid_dim[axis], limits.name
            ));
        }
    }
    if let Some(cluster) = facts.cluster {
        if limits.compute_capability.0 < 9 {
            return invalid(format!(
                "the kernel runs in clusters of {} blocks, which need compute capability 9.0 \
                 or later; {} has {}.{}",
                fmt3(cluster),
                limits.name,
                limits.compute_capability.0,
                limits.compute_capability.1
            ));
        }
        let shape = [cluster.0, cluster.1, cluster.2];
        if let Some(axis) = (0..3).find(|&a| !grid[a].is_multiple_of(shape[a])) {
            return invalid(format!(
                "grid {} is not made of whole clusters of {} blocks (the kernel's cluster \
                 shape): grid dimension {} must be a multiple of {}",
                fmt3(config.grid_dim),
                fmt3(cluster),
                AXES[axis],
                shape[axis]
            ));
        }
    }
    let shared = u64::from(config.shared_mem_bytes)
        + u64::from(facts.static_shared_bytes)
        + u64::from(facts.dyn_shared_padding);
    if shared > u64::from(limits.max_shared_per_block_optin) {
        let static_note = if facts.static_shared_bytes > 0 || facts.dyn_shared_padding > 0 {
            format!(
                " ({} dynamic + {} static + {} to align the dynamic region)",
                config.shared_mem_bytes, facts.static_shared_bytes, facts.dyn_shared_padding
            )
        } else {
            String::new()
        };
        return invalid(format!(
            "{shared} bytes of shared memory requested{static_note}, above the device limit of \
             {} bytes per block ({})",
            limits.max_shared_per_block_optin, limits.name
        ));
    }
    Ok(())
}
