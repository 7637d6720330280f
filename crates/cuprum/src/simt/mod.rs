//! The SIMT track: kernels that say what one thread does.
//!
//! Kernels live in a `#[cuda_module]` module and are compiled by cuprum's own front end; the
//! items here give them their Rust types, so that rustc can type-check kernel bodies (the macro
//! also emits them as host functions that are never called). Calling the device functions on
//! the host does nothing useful: they exist for the type checker.
//!
//! Elements of device memory may be scalars, arrays and `#[repr(C)]` structs of the module
//! (nested too): `&[[f32; 4]]`, `DisjointSlice<Particle>`, `SharedArray<[f32; 17], 16>`
//! (indexed `tile[r][c]` inside `unsafe`). An element read or written whole is one access per
//! scalar, merged into 16-byte vector accesses where aligned (a `[f32; 4]` is one, as CUDA's
//! `float4`); a path such as `x[i].pos.y` or `out.vel.x = ..` touches only that scalar. On
//! the host such structs take `#[derive(Clone, Copy, DeviceCopy)]` (`cuprum::DeviceCopy`),
//! and every launch checks at compile time that they have the layout the kernel was compiled
//! for (`cuprum_front::layout`).

use std::marker::PhantomData;

/// The same macro as [`cuprum::cuda_module`](crate::cuda_module), where cuda-oxide's device
/// crate has it.
pub use cuprum_macros::cuda_module;
pub use cuprum_macros::{
    cluster_launch, constant, device, kernel, launch_bounds, launch_contract, max_registers,
};

pub mod async_copy;
pub mod atomic;
mod atomic_cells;
pub mod barrier;
pub mod cluster;
pub mod constant;
pub mod disjoint;
pub mod mma;
pub mod num;
pub mod nvptx;
mod packed_halves;
pub mod phased;
pub mod pointer;
pub mod shared;
pub mod thread;
pub mod tiles;
pub mod tma;
pub mod views;
pub mod warp;
pub mod wgmma;

pub use atomic::AtomicSlice;
pub use constant::ConstantMemory;
pub use disjoint::DisjointSlice;
pub use num::Num;
pub use packed_halves::{bf16x2, convert, f16x2, tcgen05};
pub use phased::{
    SharedAtomic, SharedRead, SharedRead2d, SharedSplit, SharedWrite, SharedWrite2d, SyncPhases,
};
pub use pointer::DevicePtr;
pub use shared::{DynamicShared, DynamicSharedArray, SharedArray, dynamic_shared};
pub use thread::{ThreadIndex1D, ThreadIndex2D, ThreadIndex3D};
pub use tiles::{
    ElementMut32, LinearTiles, RowMajorTiles, RuntimeRowMajorTiles, Tile2DMut32, TileMut32,
};
pub use views::{ColView32, MatrixView32, RowView32, Uniform, ZipView32};

/// Waits until every thread of the block has arrived (`__syncthreads`); shared and global
/// memory writes before it are visible to the block after it. Every (non-exited) thread of the
/// block must reach the same call: the emulator reports a barrier reached by only part of it.
pub fn sync_threads() {}

/// Orders this thread's memory accesses as seen by the block (`__threadfence_block`).
pub fn fence_block() {}

/// Orders this thread's memory accesses as seen by the whole device (`__threadfence`).
pub fn fence_device() {}

/// Orders this thread's memory accesses as seen by the host and other devices.
pub fn fence_system() {}

/// Orders this thread's ordinary (generic-proxy) memory accesses against its accesses
/// through the async proxy, both ways (`fence.proxy.async`): shared memory written before it
/// is what a bulk copy or tensor-core operation the thread starts after it reads. Needs
/// compute capability 9.0: loading a module that uses it on an older GPU is an error. On the
/// emulator, which has one proxy, it orders nothing beyond program order.
pub fn fence_proxy_async() {}

/// A launch configuration checked against kernel `K`'s contract and the device by the
/// generated `prepare_<kernel>` method. It only fits the kernel it was made for: `K` is a
/// marker type that `#[cuda_module]` generates per kernel.
///
/// It is the proof that the check passed, so safe code has no other way to make one: the only
/// constructor, used by the generated `prepare_*`, is `unsafe`.
pub struct Prepared<K> {
    config: crate::LaunchConfig,
    _kernel: PhantomData<fn() -> K>,
}

impl<K> Prepared<K> {
    /// A `Prepared` without the check, for the code `#[cuda_module]` generates.
    ///
    /// # Safety
    /// `config` must have passed kernel `K`'s launch-contract check (`LaunchContract::check`
    /// with `K`'s contract, on the context `K`'s module is loaded on): safe launches of `K`
    /// rely on it to give distinct threads distinct output elements.
    #[doc(hidden)]
    pub unsafe fn __new_unchecked(config: crate::LaunchConfig) -> Self {
        Self {
            config,
            _kernel: PhantomData,
        }
    }

    /// The checked configuration.
    pub fn config(&self) -> crate::LaunchConfig {
        self.config
    }
}

impl<K> Clone for Prepared<K> {
    fn clone(&self) -> Self {
        Self {
            config: self.config,
            _kernel: PhantomData,
        }
    }
}

impl<K> std::fmt::Debug for Prepared<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared")
            .field("config", &self.config)
            .finish()
    }
}

/// cuda-oxide's `gpu_printf!`: CUDA's `printf` from device code, with C's specs inside the
/// braces (`{}`, `{:x}`, `{:#o}`, `{:08}`, `{:-8}`, `{:+}`, `{: }`, `{:.2f}`, `{:8.2f}`,
/// `{:e}`, `{:G}`, ...; the length comes from each argument's type), no newline added, and
/// the value CUDA's `printf` returns: the number of arguments (an `i32`). On the host (the
/// copy of the kernel rustc checks) it only evaluates its arguments and gives the same count.
#[macro_export]
macro_rules! gpu_printf {
    ($fmt:literal $(, $arg:expr)* $(,)?) => {{
        let _: &str = $fmt;
        $crate::simt::__gpu_printf_count(&[$({ let _ = &$arg; }),*])
    }};
}

/// What `gpu_printf!` gives on the host: its argument count (a call, so that a statement
/// `gpu_printf!(..);` warns of no unused value).
#[doc(hidden)]
pub fn __gpu_printf_count(args: &[()]) -> i32 {
    i32::try_from(args.len()).unwrap_or(i32::MAX)
}

pub use crate::gpu_printf;
