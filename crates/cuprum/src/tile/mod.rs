//! The tile track: kernels that say what one tile block does to whole tiles, launched from
//! lazy host code, with cuTile Rust's API (`cutile`): a cuTile Rust program runs on cuprum
//! with its `cutile` paths changed to `cuprum::tile` (and `cuda_core`, `cuda_async` to
//! `cuprum::tile::cuda_core`, `cuprum::tile::cuda_async`).
//!
//! ```ignore
//! use cuprum::tile::prelude::*;
//!
//! #[cuprum::tile::module]
//! mod kernel {
//!     use cuprum::tile::core::*;
//!
//!     #[cuprum::tile::entry()]
//!     fn add<const B: i32>(
//!         z: &mut Tensor<f32, { [B] }>,
//!         x: &Tensor<f32, { [-1] }>,
//!         y: &Tensor<f32, { [-1] }>,
//!     ) {
//!         z.store(load_tile_like(x, z) + load_tile_like(y, z));
//!     }
//! }
//!
//! fn main() -> Result<(), Error> {
//!     let device = Device::new(0)?;
//!     let stream = device.new_stream()?;
//!     let x = api::ones::<f32>(&[1024]);
//!     let y = api::ones::<f32>(&[1024]);
//!     let z = api::zeros::<f32>(&[1024]).partition([128]);
//!     let v = kernel::add(z, x, y).first().unpartition().to_host_vec().sync_on(&stream)?;
//!     assert!(v.iter().all(|&e| e == 2.0));
//!     Ok(())
//! }
//! ```
//!
//! * Kernels: `#[cuprum::tile::module]` runs the tile front end on the module at
//!   `cargo build` (so shape errors are compile errors at the user's code), embeds the tile
//!   IR, and generates one launcher per `#[cuprum::tile::entry]`; [`core`] documents what
//!   kernels may use.
//! * Host: [`Tensor`](tensor::Tensor)s and their [`Partition`](tensor::Partition)s
//!   ([`tensor`]), made by [`api`]; lazy operations and their combinators
//!   ([`cuda_async::device_operation`]); launches ([`tile_kernel`]); [`error::Error`].
//! * Tuning: cuprum's lowering chooses the threads and layouts; an entry's
//!   `optimization_hints = (sm_90 = (num_worker_warps_per_cta = 16, occupancy = 4))` or a
//!   launch's `.compile_options(..)` ask for warps per block and blocks per multiprocessor
//!   ([`tile_kernel::CompileOptions`]), as in cuTile Rust.
//!
//! Nothing runs before `.sync_on(&stream)`, `.sync()` or `.await` (which submits the
//! operation when first polled and is ready when the device has finished it, without blocking
//! the polling thread meanwhile; see [`cuda_async::device_future::DeviceFuture`]). A launch takes ownership of its
//! arguments and gives them all back, in order; so one tensor cannot be both a launch's
//! output and one of its inputs (the second use is a use after move, E0382). Bad arguments
//! (a partition that does not fit the kernel's tile shape, a wrong rank or element type, an
//! empty tensor, a tensor of another device, outputs whose grids differ) are refused with a
//! typed error before anything runs.

pub mod api;
pub mod core;
pub mod cuda_core;
pub mod error;
mod foreign;
mod graph;
pub mod jit_cache;
pub(crate) mod launch;
mod mapped;
pub(crate) mod op;
mod pointer;
mod random;
pub mod tensor;
pub mod tune;
pub mod utils;

pub use crate::tile::cuda_core::{DType, DTypeId};
pub use cuprum_macros::{tile_entry as entry, tile_module as module};
pub use half;

mod sealed {
    /// Implemented only by this crate's types.
    pub trait Sealed {}
}

/// Lazy device operations (`cuda_async` in cuTile Rust).
pub mod cuda_async {
    /// Raw device pointers (`Tensor::device_pointer`), for `unsafe` entries taking `*mut T`, and
    /// other frameworks' allocations that `Tensor::from_foreign` borrows.
    pub mod device_buffer {
        pub use crate::tile::foreign::DeviceAllocation;
        pub use crate::tile::pointer::DevicePointer;
    }

    /// [`DeviceOp`](device_operation::DeviceOp) and its combinators.
    pub mod device_operation {
        pub use crate::__tile_unzip as unzip;
        pub use crate::__tile_zip as zip;
        pub use crate::tile::op::{
            AndThen, AndThenWithContext, ArcOp, BoxedDeviceOp, DeviceOp, DeviceOpUnwrapArc,
            DeviceOpVec, ExecutionContext, FromFn, Inspect, IntoDeviceOp, Map, SharedDeviceOp,
            Unzippable1, Unzippable2, Unzippable3, Unzippable4, Unzippable5, Unzippable6,
            Unzippable7, Unzippable8, Unzippable9, Unzippable10, Unzippable11, Unzippable12, Value,
            WithContext, Zip, Zippable, shared, value, with_context,
        };
    }

    /// CUDA graphs: operations recorded once and replayed.
    pub mod cuda_graph {
        pub use crate::tile::graph::{CudaGraph, GraphLaunch, GraphOn, Scope};
    }

    /// The future an awaited or scheduled operation becomes.
    pub mod device_future {
        pub use crate::tile::op::DeviceFuture;
    }

    /// Where scheduled operations run.
    pub mod scheduling_policies {
        pub use crate::tile::op::{SchedulingPolicy, SingleStream, StreamPoolRoundRobin};
    }

    /// Each device's scheduling policy.
    pub mod device_context {
        pub use crate::tile::op::{
            global_policy, load_module_from_ptx, with_default_device_policy,
        };
    }

    /// Launches of compiled kernels with their arguments pushed one by one.
    pub mod launch {
        pub use crate::tile::launch::direct::{
            ArcKernelArgument, AsyncKernelLaunch, KernelArgument,
        };
    }

    /// The error of device operations.
    pub mod error {
        pub use crate::tile::error::DeviceError;
    }

    /// The operations' traits and constructors.
    pub mod prelude {
        pub use super::cuda_graph::{CudaGraph, GraphOn};
        pub use super::device_operation::{
            BoxedDeviceOp, DeviceOp, DeviceOpUnwrapArc, DeviceOpVec, ExecutionContext,
            IntoDeviceOp, SharedDeviceOp, Unzippable1, Unzippable2, Unzippable3, Unzippable4,
            Unzippable5, Unzippable6, Unzippable7, Unzippable8, Unzippable9, Unzippable10,
            Unzippable11, Unzippable12, Value, Zippable, unzip, value, with_context, zip,
        };
        pub use super::error::DeviceError;
    }
}

/// Launching kernels: the launchers' configuration and the operations on partitions and
/// tensors that launches chain with.
pub mod tile_kernel {
    pub use crate::tile::cuda_async::device_context::global_policy;
    pub use crate::tile::cuda_async::device_operation::*;
    pub use crate::tile::launch::direct::{
        DivHint, Function, SpecializationBits, Validator, compile_from_context,
    };
    pub use crate::tile::launch::{CompileOptions, TileKernel};
    pub use crate::tile::tensor::{PartitionOp, ToHostVecOp, Unpartition};
}

/// What most tile programs need: `use cuprum::tile::prelude::*;`.
pub mod prelude {
    pub use crate::tile::api::{self, DeviceOpReshape, DeviceOpReshapeShared};
    pub use crate::tile::cuda_async::prelude::*;
    pub use crate::tile::cuda_core::{DType, Device, Stream};
    pub use crate::tile::error::Error;
    pub use crate::tile::tensor::{
        DevicePointer, IntoPartition, KernelInput, KernelOutput, MappedPartition, Partition,
        Reshape, Tensor, TensorView, ToHostVec, TryPartition, Unpartition,
    };
    pub use crate::tile::tile_kernel::{PartitionOp, TileKernel, ToHostVecOp};
    pub use std::sync::Arc;
}

/// Used by the code `#[cuprum::tile::module]` generates; not a stable API.
#[doc(hidden)]
pub mod __private {
    pub use crate::tile::cuda_async::device_operation::{IntoDeviceOp, Zippable};
    pub use crate::tile::cuda_core::DType;
    pub use crate::tile::launch::KernelMapped;
    pub use crate::tile::launch::direct::ModuleAst;
    pub use crate::tile::launch::interpret::interpreted_launches;
    pub use crate::tile::launch::{
        CompileOptions, EmbeddedModule, Entry, KernelInput, KernelOutput, KernelPointer,
        LaunchArgument, Launcher, Lowering,
    };
    pub use crate::tile::pointer::DevicePointer;
}
