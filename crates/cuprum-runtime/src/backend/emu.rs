//! The emulator backend: device memory is one `cuprum_emu::Memory` per context, and a launch
//! runs the kernel's IR in `cuprum_emu::launch` before returning.
//!
//! Because every operation completes when it is submitted, streams and events need no state
//! here: in-order execution holds trivially. This module only adapts calls and errors; the
//! semantics of kernels are the emulator crate's business.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use cuprum_emu::{ArgValue, EmuError, LaunchDims, Memory};

use super::{Device, Failure, LaunchTarget, LoadRequest, Outcome};
use crate::cache::occupancy::KernelUse;
use crate::config::{KernelArg, LaunchConfig};
use crate::error::Error;

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
    /// The emulated device memory (`host_work` reads and writes it).
    pub(crate) fn memory(&self) -> &Memory {
        &self.memory
    }

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
}

/// An emulated stream: work runs when it is submitted, so a stream has no state.
pub(crate) struct EmuStream;

/// An emulated module: its IR, which each launch is given, is all it needs.
pub(crate) struct EmuModule;

impl Device for EmuDevice {
    type Stream = EmuStream;
    /// The host time at which the event was recorded.
    type Event = Instant;
    /// Never made: nothing is left unfinished for another stream to wait for.
    type Mark = Infallible;
    type Module = EmuModule;

    fn default_stream(&self) -> EmuStream {
        EmuStream
    }

    fn new_stream(&self) -> Outcome<EmuStream> {
        Ok(EmuStream)
    }

    fn new_stream_with_priority(&self, _priority: i32) -> Outcome<EmuStream> {
        // Work runs when submitted: there is nothing to schedule first.
        Ok(EmuStream)
    }

    fn stream_priorities(&self) -> Outcome<(i32, i32)> {
        Ok((0, 0))
    }

    fn wait_event(&self, _: &EmuStream, _: &Instant) -> Outcome<()> {
        // The work before the event ran when it was submitted.
        Ok(())
    }

    fn event_complete(&self, _: &Instant) -> Outcome<bool> {
        Ok(true)
    }

    fn synchronize(&self) -> Outcome<()> {
        Ok(())
    }

    fn stream_synchronize(&self, _: &EmuStream) -> Outcome<()> {
        Ok(())
    }

    fn record_event(&self, _: &EmuStream) -> Outcome<Instant> {
        Ok(Instant::now())
    }

    fn event_synchronize(&self, _: &Instant) -> Outcome<()> {
        Ok(())
    }

    fn elapsed_ms(&self, earlier: &Instant, later: &Instant) -> Outcome<f32> {
        Ok(if later >= earlier {
            later.duration_since(*earlier).as_secs_f32() * 1e3
        } else {
            -(earlier.duration_since(*later).as_secs_f32() * 1e3)
        })
    }

    fn order_mark(&self, _: &EmuStream) -> Outcome<Option<Infallible>> {
        Ok(None)
    }

    fn wait_mark(&self, _: &EmuStream, mark: &Infallible) -> Outcome<()> {
        match *mark {}
    }

    fn mark_complete(&self, mark: &Infallible) -> Outcome<bool> {
        match *mark {}
    }

    fn alloc(&self, _: &EmuStream, bytes: usize) -> Outcome<u64> {
        Ok(self
            .memory
            .alloc(bytes)
            .map_err(memory_error("allocation", bytes))?)
    }

    fn free(&self, addr: u64, _: &[&Self::Mark]) {
        let _ = self.memory.free(addr);
    }

    fn zero(&self, _: &EmuStream, addr: u64, bytes: usize) -> Outcome<()> {
        Ok(self
            .memory
            .fill(addr, bytes, 0)
            .map_err(memory_error("zero fill", bytes))?)
    }

    unsafe fn write(&self, _: &EmuStream, addr: u64, data: &[u8]) -> Outcome<()> {
        if data.is_empty() {
            return Ok(());
        }
        Ok(self
            .memory
            .write(addr, data)
            .map_err(memory_error("host-to-device copy", data.len()))?)
    }

    /// The emulator's copies are done when submitted: a read needs no pinned memory.
    fn alloc_pinned(&self, _bytes: usize) -> Outcome<Option<u64>> {
        Ok(None)
    }

    fn free_pinned(&self, _ptr: u64) {}

    unsafe fn read_async(
        &self,
        stream: &EmuStream,
        addr: u64,
        dst: u64,
        bytes: usize,
    ) -> Outcome<()> {
        // SAFETY: the caller's contract (`dst..dst+bytes` is writable host memory).
        unsafe {
            let out = std::slice::from_raw_parts_mut(dst as *mut u8, bytes);
            self.read(stream, addr, out)
        }
    }

    unsafe fn write_async(
        &self,
        stream: &EmuStream,
        addr: u64,
        src: u64,
        bytes: usize,
    ) -> Outcome<()> {
        // SAFETY: the caller's contract (`src..src+bytes` is readable host memory).
        unsafe {
            let data = std::slice::from_raw_parts(src as *const u8, bytes);
            self.write(stream, addr, data)
        }
    }

    unsafe fn read(&self, _: &EmuStream, addr: u64, out: &mut [u8]) -> Outcome<()> {
        let len = out.len();
        if len == 0 {
            return Ok(());
        }
        Ok(self
            .memory
            .read(addr, out)
            .map_err(memory_error("device-to-host copy", len))?)
    }

    unsafe fn copy(&self, _: &EmuStream, dst: u64, src: u64, bytes: usize) -> Outcome<()> {
        Ok(self
            .memory
            .copy(dst, src, bytes)
            .map_err(memory_error("device-to-device copy", bytes))?)
    }

    fn load(
        &self,
        _: &Arc<cuprum_ir::Module>,
        _: LoadRequest<'_>,
    ) -> Result<(EmuModule, Option<Vec<u8>>), Error> {
        Ok((EmuModule, None))
    }

    fn resources(&self, _: &EmuModule, _: usize) -> Option<KernelUse> {
        None
    }

    fn ptx(_: &EmuModule) -> Option<&str> {
        None
    }

    fn compile_log(_: &EmuModule) -> &str {
        ""
    }

    /// Runs the kernel to completion; its failures are [`Failure::Ran`].
    unsafe fn launch(
        &self,
        _: &EmuModule,
        _: &EmuStream,
        kernel: &LaunchTarget<'_>,
        config: &LaunchConfig,
        args: &[KernelArg],
    ) -> Outcome<()> {
        let values: Vec<ArgValue> = args
            .iter()
            .map(|a| match *a {
                KernelArg::Scalar { bits, .. } => ArgValue::Scalar(bits),
                KernelArg::Slice { address, len } => ArgValue::Slice { base: address, len },
                KernelArg::TensorMap { map, .. } => ArgValue::TensorMap(map),
            })
            .collect();
        let dims = LaunchDims {
            grid: [config.grid_dim.0, config.grid_dim.1, config.grid_dim.2],
            block: [config.block_dim.0, config.block_dim.1, config.block_dim.2],
            dynamic_shared_bytes: config.shared_mem_bytes,
        };
        cuprum_emu::launch(&self.memory, kernel.ir, dims, &values).map_err(|source| {
            Failure::Ran(Error::Emulator {
                kernel: kernel.ir.name.clone(),
                source,
            })
        })
    }
}
