//! The SIMT track: kernels that say what one thread does.
//!
//! Kernels live in a `#[cuda_module]` module and are compiled by cuprum's own front end; the
//! items here give them their Rust types, so that rustc can type-check kernel bodies (the macro
//! also emits them as host functions that are never called). Calling the device functions on
//! the host does nothing useful: they exist for the type checker.

use std::marker::PhantomData;

pub use cuprum_macros::{kernel, launch_bounds, launch_contract};

pub mod thread;

pub use thread::ThreadIndex1D;

/// An output slice each thread may touch only at its own index.
///
/// [`get_mut`](Self::get_mut) takes only a [`ThreadIndex1D`] (from [`thread::index_1d`]), which
/// no code can make up, so two threads can never write the same element; the out-of-bounds
/// case is a `None`, not a memory error. On the host, a kernel takes it as
/// `&mut DeviceBuffer<T>`.
pub struct DisjointSlice<T> {
    _elements: PhantomData<*mut T>,
}

impl<T> DisjointSlice<T> {
    /// The element of the calling thread, or `None` past the end.
    pub fn get_mut(&mut self, index: ThreadIndex1D) -> Option<&mut T> {
        let _ = index;
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
pub struct Prepared<K> {
    config: crate::LaunchConfig,
    _kernel: PhantomData<fn() -> K>,
}

impl<K> Prepared<K> {
    #[doc(hidden)]
    pub fn __new(config: crate::LaunchConfig) -> Self {
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
        Self::__new(self.config)
    }
}

impl<K> std::fmt::Debug for Prepared<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared")
            .field("config", &self.config)
            .finish()
    }
}
