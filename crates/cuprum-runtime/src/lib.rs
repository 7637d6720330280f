//! cuprum's runtime: contexts, streams, events, device buffers, module loading and launches,
//! with one public API over two backends, the CUDA driver and the CPU emulator.
//!
//! This crate exists so that everything above it (the facade, the macros' generated code, the
//! iterator track) talks to devices through one API and one error type ([`Error`]), and never
//! needs to know whether a GPU is there. `CUPRUM_DEVICE=auto|cuda|emu` picks the backend
//! ([`CudaContext::new`]); `auto` uses a GPU when there is one, else the emulator.
//!
//! * [`context`][]: [`CudaContext`], [`Stream`], [`Event`], the backend choice.
//! * [`completion`][]: [`Completion`], a stream's work awaited without blocking a thread (one
//!   waiter thread per process asks the driver about recorded events).
//! * [`buffer`][]: [`DeviceBuffer`] and the element traits [`DeviceCopy`], [`DeviceScalar`].
//! * [`view`][]: [`DeviceSlice`], [`DeviceSliceMut`], views of part of a buffer, usable as
//!   kernel arguments ([`DeviceRead`], [`DeviceWrite`]) and in copies.
//! * [`launch`][]: [`LaunchConfig`], [`LaunchContract`], [`KernelArg`], [`LoadedModule`].
//! * [`pinned`][]: [`PinnedBuffer`], page-locked host memory, and the copies to and from it
//!   that return at once.
//! * [`graph`][]: [`Graph`], kernel launches and device copies recorded once and replayed as
//!   one submission (CUDA graphs).
//! * [`external`][]: modules cuprum did not compile (PTX, cubins) and raw launches
//!   ([`external::Module`], [`external::Function`]).
//! * [`foreign`][]: streams and device memory of other libraries as cuprum's
//!   ([`Stream::from_raw_cuda`], [`DeviceBuffer::from_raw_parts`]) and back, with the
//!   ordering rules across the boundary.
//! * [`interop`][]: cudarc's contexts, streams and slices (`interop::cudarc`), DLPack tensors
//!   (`interop::dlpack`, feature `dlpack`).
//! * [`limits`][]: [`DeviceLimits`].
//! * [`nvtx`][]: NVTX ranges for Nsight Systems and Nsight Compute: the runtime's around
//!   launches and copies, and [`nvtx::range`] / [`nvtx::mark`] for a program's own.
//! * [`error`][]: [`Error`], [`Result`].
//! * [`cache`][]: the compile cache (driver output kept in memory and on disk).
//! * [`diagnostics`][]: what `cargo cuprum doctor` reports (driver, GPUs, emulator, cache).
//!
//! `backend` is the seam between these objects and the devices: one `Device` trait (streams,
//! events, memory, order marks, module loading, launches) implemented by the CUDA backend
//! (`backend/cuda`: `libcuda` loaded at run time through `cudarc`, the library and its
//! symbols checked first, so a missing driver is [`Error::NoDriver`], never a panic) and by
//! the emulator backend (`backend/emu.rs`: kernels run synchronously with `cuprum-emu`).

#![warn(missing_docs)]

mod backend;
pub mod buffer;
pub mod cache;
pub mod collective;
pub mod completion;
mod config;
pub mod context;
pub mod diagnostics;
pub mod error;
pub mod external;
pub mod foreign;
pub mod graph;
pub mod host_work;
pub mod interop;
pub mod launch;
pub mod limits;
pub mod nvtx;
mod ordering;
pub mod oxide;
mod peer;
pub mod pinned;
pub mod staged;
pub mod sys;
mod tensor_float;
pub mod tensor_map;
pub mod view;

pub use buffer::{DeviceBuffer, DeviceCopy, DeviceScalar};
pub use completion::Completion;
pub use context::{
    BackendKind, CudaContext, DEVICE_ENV_VAR, DeviceSelection, Event, RuntimeStats, Stream,
    device_count, emulator_device_count,
};
pub use error::{DriverStatus, Error, Result};
pub use foreign::{ForeignOwner, RawBuffer, RawOwner};
pub use graph::Graph;
pub use host_work::{HostRegion, HostWork};
pub use launch::{
    KernelArg, LaunchConfig, LaunchConfig1D, LaunchConfig2D, LaunchConfig3D, LaunchContract,
    LoadedModule,
};
pub use limits::DeviceLimits;
pub use ordering::{AddressOwner, allocation_containing};
pub use oxide::{ModuleFile, RowWidth};
pub use pinned::PinnedBuffer;
pub use staged::{PendingRead, PendingWrite};
pub use tensor_float::tf32;
pub use tensor_map::TensorMap;
pub use view::{DeviceRead, DeviceSlice, DeviceSliceMut, DeviceWrite};
