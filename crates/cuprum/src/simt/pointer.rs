//! Raw device pointers for `unsafe` kernels that take `*const T` / `*mut T` parameters.
//!
//! The host passes a [`DevicePtr<T>`], made from a buffer; nothing checks what the kernel does
//! with it, which is why such kernels are `unsafe` and launched through the raw method.

use std::marker::PhantomData;

use crate::{DeviceBuffer, DeviceCopy, DeviceScalar};

/// The device address of a buffer's first element (or of any element, with [`offset_by`](Self::offset_by)).
pub struct DevicePtr<T> {
    address: u64,
    _elements: PhantomData<*mut T>,
}

impl<T> Clone for DevicePtr<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for DevicePtr<T> {}

impl<T> std::fmt::Debug for DevicePtr<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DevicePtr({:#x})", self.address)
    }
}

// SAFETY: a device address is a plain 64-bit integer on the host.
unsafe impl<T: 'static> DeviceCopy for DevicePtr<T> {}
// SAFETY (Send/Sync): the pointer is an address on the device; the host never dereferences it.
unsafe impl<T> Send for DevicePtr<T> {}
unsafe impl<T> Sync for DevicePtr<T> {}

impl<T: 'static> DeviceScalar for DevicePtr<T> {
    const TYPE: cuprum_ir::ScalarType = cuprum_ir::ScalarType::U64;
    fn to_bits(self) -> u64 {
        self.address
    }
    fn from_bits(bits: u64) -> Self {
        Self {
            address: bits,
            _elements: PhantomData,
        }
    }
}

impl<T: DeviceCopy> DevicePtr<T> {
    /// The address of `buffer`'s first element.
    pub fn of(buffer: &DeviceBuffer<T>) -> Self {
        Self {
            address: buffer.device_address(),
            _elements: PhantomData,
        }
    }

    /// The address `count` elements further on (no bounds check: the kernel is `unsafe`).
    pub fn offset_by(self, count: usize) -> Self {
        let bytes = (count as u64).wrapping_mul(std::mem::size_of::<T>() as u64);
        Self {
            address: self.address.wrapping_add(bytes),
            _elements: PhantomData,
        }
    }

    /// The raw address.
    pub fn address(self) -> u64 {
        self.address
    }
}

/// A raw pointer made from a device address (cuda-oxide's `buf.cu_deviceptr() as *mut T`),
/// for a pointer parameter of an `unsafe` kernel.
impl<T> From<*mut T> for DevicePtr<T> {
    fn from(ptr: *mut T) -> Self {
        Self {
            address: ptr as u64,
            _elements: PhantomData,
        }
    }
}

/// As the `*mut T` conversion, for `*const T`.
impl<T> From<*const T> for DevicePtr<T> {
    fn from(ptr: *const T) -> Self {
        Self {
            address: ptr as u64,
            _elements: PhantomData,
        }
    }
}
