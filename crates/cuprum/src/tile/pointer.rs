//! Raw device pointers for the `unsafe` tile entries that take `*mut T` (cuTile Rust's
//! `DevicePointer`, from `Tensor::device_pointer`).
//!
//! A pointer is only an address. A launch finds the live allocation of its context that
//! holds it and passes the elements from the pointer to the allocation's end as the
//! kernel's raw tensor; a pointer outside every live allocation of the context, or not
//! aligned to its element type, is refused before anything runs
//! ([`LaunchProblem::BadPointer`](crate::tile::error::LaunchProblem::BadPointer)), and in
//! the kernel an offset past the allocation reads padding and writes nothing. What calling
//! the entry `unsafe` leaves to its caller: no two tile blocks race on an element, and the
//! allocation outlives the launch's work.

use std::fmt;
use std::marker::PhantomData;

use crate::tile::cuda_core::DType;
use crate::tile::launch::bind::ArgDesc;
use crate::tile::launch::{KernelPointer, LaunchArgument};
use crate::tile::op::{IntoDeviceOp, Value, value};
use crate::tile::sealed::Sealed;

/// The device address of an element of type `T`: what an `unsafe` entry's `*mut T`
/// parameter takes.
pub struct DevicePointer<T> {
    address: u64,
    elem: PhantomData<fn() -> T>,
}

impl<T> DevicePointer<T> {
    /// The pointer at `address`.
    ///
    /// # Safety
    ///
    /// None for memory: a launch checks the address against its context's live
    /// allocations. `unsafe` as in cuTile Rust, whose launches do not.
    pub unsafe fn from_cu_deviceptr(address: u64) -> Self {
        Self {
            address,
            elem: PhantomData,
        }
    }

    /// The raw device address.
    pub fn cu_deviceptr(&self) -> u64 {
        self.address
    }

    /// The pointer `count` elements further on (wrapping; a launch checks the result).
    pub fn add(&self, count: usize) -> Self {
        let bytes = (count as u64).wrapping_mul(size_of::<T>() as u64);
        Self {
            address: self.address.wrapping_add(bytes),
            elem: PhantomData,
        }
    }
}

impl<T> Clone for DevicePointer<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for DevicePointer<T> {}

impl<T> PartialEq for DevicePointer<T> {
    fn eq(&self, other: &Self) -> bool {
        self.address == other.address
    }
}

impl<T> Eq for DevicePointer<T> {}

impl<T> fmt::Debug for DevicePointer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DevicePointer({:#x})", self.address)
    }
}

impl<T: DType> Sealed for DevicePointer<T> {}

impl<T: DType> LaunchArgument for DevicePointer<T> {
    #[allow(private_interfaces)]
    fn describe(&self) -> ArgDesc<'_> {
        ArgDesc::RawPointer {
            elem: T::DTYPE,
            address: self.address,
        }
    }
}

impl<T: DType> KernelPointer<T> for DevicePointer<T> {}

impl<T: DType> IntoDeviceOp<DevicePointer<T>> for DevicePointer<T> {
    type Op = Value<DevicePointer<T>>;
    fn into_op(self) -> Value<DevicePointer<T>> {
        value(self)
    }
}
