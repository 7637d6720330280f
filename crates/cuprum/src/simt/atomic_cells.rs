//! cuda-oxide's typed atomic cells with memory orderings and scopes, on stable Rust.
//!
//! Real cuda-oxide kernels make a cell from a raw pointer into a slice and call its methods:
//! `let c = unsafe { &*(counter.as_ptr() as *const DeviceAtomicU32) };` then
//! `c.fetch_add(1, AtomicOrdering::Relaxed)`. These types are the host stubs rustc checks
//! such code against; the front end compiles the calls to the IR's ordered atomics
//! (`atom.{sem}.{scope}`, `ld.acquire`, `st.release`, `fence.sc` before a `SeqCst` one).
//!
//! The scope is in the type: `DeviceAtomic*` (the GPU, `.gpu`), `BlockAtomic*` (the block,
//! `.cta`), `SystemAtomic*` (host and peers too, `.sys`); `core::sync::atomic::AtomicU32`
//! and its siblings work as system-scope cells. Dereferencing the pointer is `unsafe`, as in
//! Rust: the caller promises the memory is valid and that no plain access races with the
//! atomics. A slice whose pointer becomes a cell is compiled as written, even a `&[T]`
//! parameter (never read through the non-coherent cache), so its reads see the atomics.
//!
//! ```
//! use cuprum::simt::atomic::{AtomicOrdering, DeviceAtomicU32};
//! use cuprum::simt::{kernel, thread};
//! use cuprum::cuda_module;
//!
//! #[cuda_module]
//! mod kernels {
//!     use super::*;
//!
//!     #[kernel]
//!     pub unsafe fn count(counter: &mut [u32], out: &mut [u32]) {
//!         let i = thread::index_1d().get();
//!         let c = unsafe { &*(counter.as_mut_ptr() as *const DeviceAtomicU32) };
//!         let old = c.fetch_add(1, AtomicOrdering::Relaxed);
//!         if i < out.len() {
//!             out[i] = old;
//!         }
//!     }
//! }
//! # fn main() {}
//! ```

use std::cell::UnsafeCell;

use super::shared::unreachable_on_host;

/// The memory ordering of an atomic cell's operation, as Rust's `Ordering` (which the cells
/// accept too, by name).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AtomicOrdering {
    /// Atomic, ordering nothing else (`.relaxed`).
    Relaxed,
    /// Later accesses happen after the release whose value this reads (`.acquire`; loads and
    /// read-modify-writes).
    Acquire,
    /// Earlier accesses happen before an acquire that reads this value (`.release`; stores
    /// and read-modify-writes).
    Release,
    /// Both (`.acq_rel`; read-modify-writes).
    AcqRel,
    /// Sequentially consistent: a `fence.sc` at the cell's scope, then an acquire (a store:
    /// a relaxed store).
    SeqCst,
}

macro_rules! cells {
    ($( $(#[$doc:meta])* $name:ident($t:ty, $scope:literal, int = $int:tt) ),* $(,)?) => {$(
        $(#[$doc])*
        ///
        #[doc = concat!("Atomic at ", $scope, " scope. Made from a raw pointer in `unsafe` device code (`&*(ptr as *const ", stringify!($name), ")`); every method takes an [`AtomicOrdering`] (or `core::sync::atomic::Ordering`).")]
        #[repr(transparent)]
        pub struct $name {
            _value: UnsafeCell<$t>,
        }

        // Shared between threads by design: every access is atomic.
        unsafe impl Sync for $name {}

        impl $name {
            /// Loads the value (`Relaxed`, `Acquire` or `SeqCst`).
            pub fn load(&self, _order: AtomicOrdering) -> $t {
                unreachable_on_host()
            }
            /// Stores `value` (`Relaxed`, `Release` or `SeqCst`).
            pub fn store(&self, _value: $t, _order: AtomicOrdering) {
                unreachable_on_host()
            }
            /// Stores `value`, returns the previous value.
            pub fn swap(&self, _value: $t, _order: AtomicOrdering) -> $t {
                unreachable_on_host()
            }
            /// Adds `value` (integers wrap), returns the previous value.
            pub fn fetch_add(&self, _value: $t, _order: AtomicOrdering) -> $t {
                unreachable_on_host()
            }
            /// Subtracts `value` (integers wrap; floats add its negation), returns the
            /// previous value.
            pub fn fetch_sub(&self, _value: $t, _order: AtomicOrdering) -> $t {
                unreachable_on_host()
            }
            /// Stores `new` if memory holds `current` (bit for bit): `Ok(previous)` then,
            /// else `Err(previous)`. One atomic (`atom.cas`) with the stronger of the two
            /// orderings; `failure` is not `Release` or `AcqRel`.
            pub fn compare_exchange(
                &self,
                _current: $t,
                _new: $t,
                _success: AtomicOrdering,
                _failure: AtomicOrdering,
            ) -> Result<$t, $t> {
                unreachable_on_host()
            }
            /// As [`Self::compare_exchange`] (it never fails spuriously on the GPU).
            pub fn compare_exchange_weak(
                &self,
                current: $t,
                new: $t,
                success: AtomicOrdering,
                failure: AtomicOrdering,
            ) -> Result<$t, $t> {
                self.compare_exchange(current, new, success, failure)
            }
        }
        cells!(@int $int $name $t);
    )*};
    (@int true $name:ident $t:ty) => {
        impl $name {
            /// Stores the smaller of memory and `value` (by the type's signedness), returns
            /// the previous value.
            pub fn fetch_min(&self, _value: $t, _order: AtomicOrdering) -> $t {
                unreachable_on_host()
            }
            /// Stores the larger of memory and `value`, returns the previous value.
            pub fn fetch_max(&self, _value: $t, _order: AtomicOrdering) -> $t {
                unreachable_on_host()
            }
            /// Bitwise and, returns the previous value.
            pub fn fetch_and(&self, _value: $t, _order: AtomicOrdering) -> $t {
                unreachable_on_host()
            }
            /// Bitwise or, returns the previous value.
            pub fn fetch_or(&self, _value: $t, _order: AtomicOrdering) -> $t {
                unreachable_on_host()
            }
            /// Bitwise exclusive or, returns the previous value.
            pub fn fetch_xor(&self, _value: $t, _order: AtomicOrdering) -> $t {
                unreachable_on_host()
            }
        }
    };
    (@int false $name:ident $t:ty) => {};
}

cells! {
    /// A `u32` cell for the whole GPU.
    DeviceAtomicU32(u32, "device (`.gpu`)", int = true),
    /// An `i32` cell for the whole GPU.
    DeviceAtomicI32(i32, "device (`.gpu`)", int = true),
    /// A `u64` cell for the whole GPU.
    DeviceAtomicU64(u64, "device (`.gpu`)", int = true),
    /// An `i64` cell for the whole GPU.
    DeviceAtomicI64(i64, "device (`.gpu`)", int = true),
    /// An `f32` cell for the whole GPU (`atom.add.f32`; subnormals flush to zero).
    DeviceAtomicF32(f32, "device (`.gpu`)", int = false),
    /// An `f64` cell for the whole GPU (`atom.add.f64`).
    DeviceAtomicF64(f64, "device (`.gpu`)", int = false),
    /// A `u32` cell for the threads of one block.
    BlockAtomicU32(u32, "block (`.cta`)", int = true),
    /// An `i32` cell for the threads of one block.
    BlockAtomicI32(i32, "block (`.cta`)", int = true),
    /// A `u64` cell for the threads of one block.
    BlockAtomicU64(u64, "block (`.cta`)", int = true),
    /// An `i64` cell for the threads of one block.
    BlockAtomicI64(i64, "block (`.cta`)", int = true),
    /// An `f32` cell for the threads of one block.
    BlockAtomicF32(f32, "block (`.cta`)", int = false),
    /// An `f64` cell for the threads of one block.
    BlockAtomicF64(f64, "block (`.cta`)", int = false),
    /// A `u32` cell for the GPU, the host and peer GPUs.
    SystemAtomicU32(u32, "system (`.sys`)", int = true),
    /// An `i32` cell for the GPU, the host and peer GPUs.
    SystemAtomicI32(i32, "system (`.sys`)", int = true),
    /// A `u64` cell for the GPU, the host and peer GPUs.
    SystemAtomicU64(u64, "system (`.sys`)", int = true),
    /// An `i64` cell for the GPU, the host and peer GPUs.
    SystemAtomicI64(i64, "system (`.sys`)", int = true),
    /// An `f32` cell for the GPU, the host and peer GPUs.
    SystemAtomicF32(f32, "system (`.sys`)", int = false),
    /// An `f64` cell for the GPU, the host and peer GPUs.
    SystemAtomicF64(f64, "system (`.sys`)", int = false),
}
