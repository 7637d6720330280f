//! cuprum's kernel IR, shared by every front end (SIMT macros, iterator tracing, the tile
//! lowering) and every back end (the PTX writer, the emulator).
//!
//! Plain data: arenas with typed handles ([`arena`]), scalar types ([`types`]), kernels with
//! structured control flow and their semantics ([`kernel`]), a builder ([`builder`]), a
//! validator for every documented invariant ([`validate`]), a text printer
//! ([`print`](mod@print)) and the executable definition of scalar operations ([`scalar`]),
//! which the emulator runs and the optimizer folds with.
//! Warp matrix operations have their fragment layouts in [`matrix`], Hopper's warpgroup ones
//! (`wgmma`, its descriptors, `stmatrix`) in [`wgmma`]; device `printf` has its
//! format subset in [`printf`]; a kernel's launch requirements (relations between its
//! arguments that every launch satisfies) are defined in [`requires`]. What is known about each value as an address (linear form,
//! root, alignment, read-only-ness) is one analysis, [`address`], which the optimizer's passes
//! and the PTX writer share.
//! This crate depends on nothing else of cuprum's and must stay that way.

#![warn(missing_docs)]

pub mod address;
pub mod arena;
pub mod builder;
pub mod effects;
pub mod kernel;
pub mod matrix;
pub mod print;
pub mod printf;
pub mod requires;
pub mod scalar;
pub mod serial;
pub mod swizzle;
pub mod tensor_core;
pub mod tma;
pub mod types;
pub mod uniformity;
pub mod validate;
pub mod wgmma;

pub use address::{Addresses, Linear, Root};
pub use arena::{Arena, Handle};
pub use builder::{BuildError, KernelBuilder};
pub use effects::{Access, Effects, Spaces};
pub use kernel::*;
pub use matrix::{CpAsyncCache, MmaShape};
pub use print::{print_kernel, print_module};
pub use serial::{SerialError, decode_module, encode_module};
pub use swizzle::Swizzle;
pub use tma::{OobFill, TensorMapDesc, TensorMapProblem, TensorMapRef, TmaOp};
pub use types::{Constant, ScalarType};
pub use validate::{ValidationError, validate_kernel, validate_module};
pub use wgmma::{Descriptor, ScaleD, WgmmaA, WgmmaMma, WgmmaShape, WgmmaType};
