//! `core::arch::nvptx`'s intrinsics under the same names, for kernels ported from code that
//! calls them: that module exists only on the nightly `nvptx64` target, and these stubs let a
//! `#[cuda_module]` kernel call `nvptx::_thread_idx_x()` on stable Rust, unchanged.
//!
//! As in `core::arch::nvptx`, the indices and sizes are `i32`s (the hardware registers,
//! unsigned and far below `i32::MAX`, read as `i32`) and the functions are `unsafe`, so calls
//! sit in an `unsafe fn` kernel or an `unsafe` block. The compiler replaces each call with the
//! register it names; [`thread`](super::thread) has the same registers as `u32`s. Called on
//! the host, they return zero.
//!
//! ```
//! use cuprum::simt::{kernel, nvptx, DevicePtr};
//! use cuprum::{cuda_module, CudaContext, DeviceBuffer, LaunchConfig1D};
//!
//! #[cuda_module]
//! mod kernels {
//!     use super::*;
//!
//!     #[kernel]
//!     pub unsafe fn vecadd(a: *const f32, b: *const f32, c: *mut f32, n: i32) {
//!         let idx = nvptx::_thread_idx_x() + nvptx::_block_idx_x() * nvptx::_block_dim_x();
//!         if idx < n {
//!             let i = idx as usize;
//!             *c.add(i) = *a.add(i) + *b.add(i);
//!         }
//!     }
//! }
//!
//! # fn main() -> cuprum::Result<()> {
//! let ctx = CudaContext::new(0)?;
//! let stream = ctx.default_stream();
//! let a = DeviceBuffer::from_host(&stream, &[1.0f32, 2.0, 3.0])?;
//! let b = DeviceBuffer::from_host(&stream, &[10.0f32, 20.0, 30.0])?;
//! let mut c = DeviceBuffer::from_host(&stream, &[f32::NAN; 3])?;
//! let module = kernels::load(&ctx)?;
//! // SAFETY: one thread per element; the kernel stays below `n`, the buffers' length.
//! unsafe {
//!     let (pa, pb, pc) = (DevicePtr::of(&a), DevicePtr::of(&b), DevicePtr::of(&c));
//!     module.vecadd(&stream, LaunchConfig1D::new(1, 32, 0), pa, pb, pc, 3)?;
//! }
//! assert_eq!(c.to_host_vec(&stream)?, vec![11.0, 22.0, 33.0]);
//! # Ok(())
//! # }
//! ```

macro_rules! registers {
    ($($(#[$doc:meta])* $name:ident),* $(,)?) => {
        $(
            $(#[$doc])*
            ///
            /// # Safety
            /// Meaningful only in device code, as in `core::arch::nvptx`; it reads a register
            /// and has no other effect.
            pub unsafe fn $name() -> i32 {
                0
            }
        )*
    };
}

registers! {
    /// `threadIdx.x`.
    _thread_idx_x,
    /// `threadIdx.y`.
    _thread_idx_y,
    /// `threadIdx.z`.
    _thread_idx_z,
    /// `blockIdx.x`.
    _block_idx_x,
    /// `blockIdx.y`.
    _block_idx_y,
    /// `blockIdx.z`.
    _block_idx_z,
    /// `blockDim.x`.
    _block_dim_x,
    /// `blockDim.y`.
    _block_dim_y,
    /// `blockDim.z`.
    _block_dim_z,
    /// `gridDim.x`.
    _grid_dim_x,
    /// `gridDim.y`.
    _grid_dim_y,
    /// `gridDim.z`.
    _grid_dim_z,
}

/// `__syncthreads()`: the block's barrier, as [`sync_threads`](super::sync_threads).
///
/// # Safety
/// Every (non-exited) thread of the block must reach the same call, as in CUDA.
pub unsafe fn _syncthreads() {}
