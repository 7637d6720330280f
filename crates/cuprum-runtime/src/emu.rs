//! The emulator backend: device memory is one `cuprum_emu::Memory` per context, and a launch
//! runs the kernel's IR in `cuprum_emu::launch` before returning.
//!
//! Because every operation completes when it is submitted, streams and events need no state
//! here: in-order execution holds trivially. This module only adapts calls and errors; the
//! semantics of kernels are the emulator crate's business.

use std::sync::atomic::{AtomicU64, Ordering};

use cuprum_emu::{ArgValue, EmuError, LaunchDims, Memory};
use cuprum_ir::Kernel;

use crate::error::{Error, Result};
use crate::launch::{KernelArg, LaunchConfig};

/// One emulated device.
pub(crate) struct EmuDevice {
    memory: Memory,
}

fn memory_error(operation: &'static str, bytes: usize) -> impl FnOnce(EmuError) -> Error {
    move |source| match source {
        EmuError::OutOfMemory {
            requested,
            available,
        } => Error::OutOfMemory {
            bytes: u128::from(requested),
            detail: format!(
                "the CPU emulator has {available} bytes of its capacity free ({operation} of \
                 {bytes} bytes)"
            ),
        },
        source => Error::EmulatorMemory { operation, source },
    }
}

/// Bytes of address space each emulated context hands its allocations out of.
const ADDRESS_WINDOW: u64 = 1 << 40;
/// Where the first context's window starts (the emulator's usual first address).
const FIRST_WINDOW: u64 = 0x7f00_0000_0000;
/// Windows that fit above [`FIRST_WINDOW`] in a 64-bit address space.
const WINDOWS: u64 = (u64::MAX - FIRST_WINDOW) / ADDRESS_WINDOW;

impl EmuDevice {
    /// A new emulated device whose addresses no other emulated context of the process uses
    /// (each gets its own window of the address space, as a GPU process has one), so an
    /// address always names one buffer of one context.
    pub(crate) fn new() -> Self {
        static NEXT_WINDOW: AtomicU64 = AtomicU64::new(0);
        let window = NEXT_WINDOW.fetch_add(1, Ordering::Relaxed) % WINDOWS;
        Self {
            memory: Memory::with_address_window(
                FIRST_WINDOW + window * ADDRESS_WINDOW,
                ADDRESS_WINDOW,
                cuprum_emu::DEFAULT_CAPACITY,
            ),
        }
    }

    /// Allocates `bytes` (> 0) bytes.
    pub(crate) fn alloc(&self, bytes: usize) -> Result<u64> {
        self.memory
            .alloc(bytes)
            .map_err(memory_error("allocation", bytes))
    }

    /// Frees an allocation; errors are ignored (this runs in `Drop`).
    pub(crate) fn free(&self, addr: u64) {
        let _ = self.memory.free(addr);
    }

    pub(crate) fn write(&self, addr: u64, data: &[u8]) -> Result<()> {
        self.memory
            .write(addr, data)
            .map_err(memory_error("host-to-device copy", data.len()))
    }

    pub(crate) fn read(&self, addr: u64, out: &mut [u8]) -> Result<()> {
        let len = out.len();
        self.memory
            .read(addr, out)
            .map_err(memory_error("device-to-host copy", len))
    }

    pub(crate) fn zero(&self, addr: u64, len: usize) -> Result<()> {
        self.memory
            .fill(addr, len, 0)
            .map_err(memory_error("zero fill", len))
    }

    pub(crate) fn copy(&self, dst: u64, src: u64, len: usize) -> Result<()> {
        self.memory
            .copy(dst, src, len)
            .map_err(memory_error("device-to-device copy", len))
    }

    /// Runs `kernel` to completion. The caller has checked the arguments and configuration.
    pub(crate) fn launch(
        &self,
        kernel: &Kernel,
        config: &LaunchConfig,
        args: &[KernelArg],
    ) -> Result<()> {
        let values: Vec<ArgValue> = args
            .iter()
            .map(|a| match *a {
                KernelArg::Scalar { bits, .. } => ArgValue::Scalar(bits),
                KernelArg::Slice { address, len } => ArgValue::Slice { base: address, len },
            })
            .collect();
        let dims = LaunchDims {
            grid: [config.grid.0, config.grid.1, config.grid.2],
            block: [config.block.0, config.block.1, config.block.2],
            dynamic_shared_bytes: config.shared_mem_bytes,
        };
        cuprum_emu::launch(&self.memory, kernel, dims, &values).map_err(|source| Error::Emulator {
            kernel: kernel.name.clone(),
            source,
        })
    }
}
