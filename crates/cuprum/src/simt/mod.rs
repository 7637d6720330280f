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

pub use cuprum_macros::{kernel, launch_bounds, launch_contract};

pub mod atomic;
pub mod mma;
pub mod num;
pub mod nvptx;
pub mod pointer;
pub mod shared;
pub mod thread;
pub mod warp;

pub use atomic::AtomicSlice;
pub use num::Num;
pub use pointer::DevicePtr;
pub use shared::{DynamicShared, SharedArray, dynamic_shared};
pub use thread::{ThreadIndex1D, ThreadIndex2D, ThreadIndex3D};

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

/// An output slice each thread may touch only at its own index.
///
/// [`get_mut`](Self::get_mut) takes only a [`ThreadIndex1D`] (from [`thread::index_1d`]), which
/// no code can make up, so two threads can never write the same element; the out-of-bounds
/// case is a `None`, not a memory error. On the host, a kernel takes it as
/// `&mut DeviceBuffer<T>`.
///
/// What makes the promise hold, checked when the kernel is compiled: an N-D thread index is
/// accepted only where the kernel's launch contract makes it unique (`domain <= N`, a block of
/// 1 along the axes past N), the extents of [`get_mut_2d`](Self::get_mut_2d) and
/// [`get_mut_3d`](Self::get_mut_3d) are the same in every thread and at every access of the
/// slice, and the linear index is computed without wrapping.
///
/// A thread may read the element it got as well as write it, so `y = a * x + y` needs no
/// second buffer:
///
/// ```
/// use cuprum::simt::{kernel, launch_contract, thread, DisjointSlice};
/// use cuprum::{cuda_module, CudaContext, DeviceBuffer, LaunchConfig1D};
///
/// #[cuda_module]
/// mod kernels {
///     use super::*;
///
///     #[kernel]
///     #[launch_contract(domain = 1, block = (64, 1, 1))]
///     pub fn saxpy(a: f32, x: &[f32], mut y: DisjointSlice<f32>) {
///         let i = thread::index_1d();
///         if let Some(out) = y.get_mut(i) {
///             *out = a * x[i.get()] + *out;
///         }
///     }
/// }
///
/// # fn main() -> cuprum::Result<()> {
/// let ctx = CudaContext::new(0)?; // the emulator when there is no GPU
/// let stream = ctx.default_stream();
/// let x: Vec<f32> = (0..100).map(|i| i as f32).collect();
/// let y: Vec<f32> = (0..100).map(|i| 0.5 * i as f32).collect();
/// let dx = DeviceBuffer::from_host(&stream, &x)?;
/// let mut dy = DeviceBuffer::from_host(&stream, &y)?;
///
/// let module = kernels::load(&ctx)?;
/// // Two blocks of 64 threads: the last 28 threads get `None` and write nothing.
/// let prepared = module.prepare_saxpy(LaunchConfig1D::for_len(x.len(), 64))?;
/// module.saxpy(&stream, &prepared, 3.0, &dx, &mut dy)?;
///
/// let want: Vec<f32> = x.iter().zip(&y).map(|(x, y)| 3.0 * x + y).collect();
/// assert_eq!(dy.to_host_vec(&stream)?, want);
/// # Ok(())
/// # }
/// ```
pub struct DisjointSlice<T> {
    _elements: PhantomData<*mut T>,
}

impl<T> DisjointSlice<T> {
    /// The element of the calling thread, or `None` past the end.
    pub fn get_mut(&mut self, index: ThreadIndex1D) -> Option<&mut T> {
        let _ = index;
        None
    }

    /// The element at (`index.x()`, `index.y()`) of a row-major matrix `width` elements wide,
    /// or `None` when the column is past `width` or the element past the end (computed
    /// exactly: `y * width + x` never wraps). Distinct threads still get distinct elements:
    /// `width` must be the same in every thread of the launch (built from the kernel's scalar
    /// parameters, constants, slice lengths and block/grid sizes, not from thread indices or
    /// memory), and every access of one slice in a kernel must use the same width; both are
    /// checked at `cargo build`.
    pub fn get_mut_2d(&mut self, index: ThreadIndex2D, width: usize) -> Option<&mut T> {
        let _ = (index, width);
        None
    }

    /// The element at (`x`, `y`, `z`) of a `width` × `height` × depth array, `x` fastest, or
    /// `None` when `x >= width`, `y >= height` or the element is past the end; the extents
    /// follow the rules of [`get_mut_2d`](Self::get_mut_2d).
    pub fn get_mut_3d(
        &mut self,
        index: ThreadIndex3D,
        width: usize,
        height: usize,
    ) -> Option<&mut T> {
        let _ = (index, width, height);
        None
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        0
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        true
    }
}

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
