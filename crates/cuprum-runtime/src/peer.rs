//! Devices of one process reaching each other's memory: [`CudaContext::can_access_peer`]
//! (whether a device reads another's memory directly) and [`DeviceBuffer::copy_from_peer`]
//! (a copy from a buffer of another device, ordered on a stream of the destination's).
//!
//! On GPUs the copy is the driver's device-to-device copy between the two allocations, which
//! unified addressing lets name memory of another device: over NVLink or PCIe where the
//! devices can reach each other, staged through the host where they cannot (it is always
//! correct; `can_access_peer` says whether it is direct). On the emulator every device's
//! memory is the host's, so emulated devices always reach each other.

use crate::backend::{Backend, Failure, StreamHandle};
use crate::buffer::{DeviceBuffer, DeviceCopy};
use crate::context::{CudaContext, Stream};
use crate::error::{Error, Result};
use crate::ordering::{self, Access};

impl CudaContext {
    /// Whether this device reads and writes `peer`'s memory directly (NVLink or PCIe
    /// peer-to-peer; `cuDeviceCanAccessPeer`). A device reaches itself; emulated devices
    /// reach each other; an emulated device and a GPU never do.
    pub fn can_access_peer(&self, peer: &CudaContext) -> Result<bool> {
        match (&self.inner.backend, &peer.inner.backend) {
            (Backend::Emu(_), Backend::Emu(_)) => Ok(true),
            (Backend::Cuda(a), Backend::Cuda(b)) => a
                .can_access_peer(b)
                .map_err(|f| self.fail(Failure::Driver(f), None)),
            _ => Ok(false),
        }
    }
}

impl<T: DeviceCopy> DeviceBuffer<T> {
    /// Overwrites this buffer with `src`'s elements (same length), where `src` may be a
    /// buffer of another device of this process: ordered on `stream` (of this buffer's
    /// device) after the unfinished work of any stream on either buffer, and before later
    /// work on them. Between a GPU and an emulated device, or while recording a graph,
    /// [`Error::Unsupported`].
    pub fn copy_from_peer(&mut self, stream: &Stream, src: &DeviceBuffer<T>) -> Result<()> {
        if src.context().same_context(self.context()) {
            return self.copy_from_device(stream, src);
        }
        let ctx = self.context().clone();
        ctx.check_same(stream.context())?;
        if src.len() != self.len() {
            return Err(Error::LengthMismatch {
                what: "copy_from_peer source buffer".to_owned(),
                expected: self.len(),
                actual: src.len(),
            });
        }
        if stream.is_recording() {
            return Err(Error::Unsupported {
                what: "recording a copy between devices in a graph".to_owned(),
            });
        }
        let bytes = self.len() * size_of::<T>();
        if bytes == 0 {
            return Ok(());
        }
        let held = ordering::hold(
            stream,
            &[
                (&self.memory.uses, Access::Write),
                (&src.memory.uses, Access::Read),
            ],
        )?;
        match (
            &ctx.inner.backend,
            &src.context().inner.backend,
            stream.handle(),
        ) {
            (Backend::Emu(dst), Backend::Emu(from), _) => {
                let mut data = vec![0u8; bytes];
                from.memory()
                    .read(src.addr, &mut data)
                    .and_then(|()| dst.memory().write(self.addr, &data))
                    .map_err(|source| Error::EmulatorMemory {
                        operation: "a copy between emulated devices",
                        source,
                    })?;
                held.note(None);
                Ok(())
            }
            (Backend::Cuda(dst), Backend::Cuda(_), StreamHandle::Cuda(s)) => {
                // SAFETY: both ranges are whole live allocations of `bytes` bytes; unified
                // addressing names the source's from this device.
                unsafe { dst.copy_dtod(self.addr, src.addr, bytes, s) }
                    .map_err(|f| ctx.fail(Failure::Driver(f), Some(stream)))?;
                held.note_after()
            }
            _ => Err(Error::Unsupported {
                what: "a copy between a GPU and an emulated device: copy through the host"
                    .to_owned(),
            }),
        }
    }
}
