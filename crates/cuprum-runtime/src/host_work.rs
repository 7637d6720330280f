//! Work the host does itself, in a stream's order, on an emulated device's memory: the tile
//! track runs its interpreter this way for launches too large to emulate thread by thread
//! (`cuprum::tile`'s emulator route). On the emulator every operation completes when it is
//! submitted, so running host code at submission is running it in stream order; the buffers
//! it touches join the same ordering protocol as launches and copies (`ordering`), and a
//! graph's recording stream records it ([`Stream::host_work`]) for every replay to run again.

use std::sync::Arc;

use crate::backend::emu::EmuDevice;
use crate::backend::{Backend, Failure, Outcome};
use crate::context::Stream;
use crate::error::Error;
use crate::graph::GraphOp;
use crate::ordering::{self, Access, Memory, Owner};

/// Host work a graph can replay: given copies of its regions (in order), changes the written
/// ones, or says why it failed.
pub type HostWork = Arc<dyn Fn(&mut [Vec<u8>]) -> Result<(), String> + Send + Sync>;

/// A range of device memory host work reads, or reads and writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostRegion {
    /// Its first byte's device address.
    pub address: u64,
    /// Its length in bytes.
    pub bytes: u64,
    /// Whether the work may change it (its bytes are written back when the work succeeds).
    pub write: bool,
}

/// Copies of `regions` of `device`'s memory for `work`; the written ones are written back
/// when it returns `Ok`.
fn with_copies<R, E: From<Error>>(
    device: &EmuDevice,
    regions: &[HostRegion],
    work: impl FnOnce(&mut [Vec<u8>]) -> Result<R, E>,
) -> Result<R, E> {
    let memory = device.memory();
    let mut copies = Vec::with_capacity(regions.len());
    for r in regions {
        let len = usize::try_from(r.bytes).map_err(|_| Error::OutOfMemory {
            bytes: u128::from(r.bytes),
            detail: "a host copy of an emulated region this large cannot be made".to_owned(),
        })?;
        let mut bytes = vec![0u8; len];
        if len > 0 {
            memory
                .read(r.address, &mut bytes)
                .map_err(|source| Error::EmulatorMemory {
                    operation: "host work's read",
                    source,
                })?;
        }
        copies.push(bytes);
    }
    let result = work(&mut copies)?;
    for (r, bytes) in regions.iter().zip(&copies) {
        if r.write && !bytes.is_empty() {
            memory
                .write(r.address, bytes)
                .map_err(|source| Error::EmulatorMemory {
                    operation: "host work's write-back",
                    source,
                })?;
        }
    }
    Ok(result)
}

impl EmuDevice {
    /// Runs recorded host work `name` (a graph's replay): its failure is the replay's.
    pub(crate) fn host_work(
        &self,
        name: &str,
        regions: &[HostRegion],
        work: &HostWork,
    ) -> Outcome<()> {
        with_copies(self, regions, |copies| {
            work(copies).map_err(|message| {
                Failure::Ran(Error::HostWork {
                    name: name.to_owned(),
                    message,
                })
            })
        })
    }
}

impl Stream {
    /// The emulated device of this stream's context, or why host work cannot run on it.
    fn emulated_device(&self) -> Result<&EmuDevice, Error> {
        match &self.context().inner.backend {
            Backend::Emu(device) => Ok(device),
            Backend::Cuda(_) => Err(Error::Unsupported {
                what: "host work on device memory needs the CPU emulator (a GPU's memory is \
                       not the host's)"
                    .to_owned(),
            }),
        }
    }

    /// The registered buffers `regions` lie in, each with how the work uses it.
    fn region_buffers(&self, regions: &[HostRegion]) -> Result<Vec<(Arc<Memory>, Access)>, Error> {
        let ranges: Vec<(u64, u64)> = regions.iter().map(|r| (r.address, r.bytes)).collect();
        let mut buffers = Vec::new();
        for (owner, region) in ordering::owners(self.context(), &ranges)
            .into_iter()
            .zip(regions)
        {
            let access = if region.write {
                Access::Write
            } else {
                Access::Read
            };
            match owner {
                Owner::Own(uses) => buffers.push((uses, access)),
                Owner::Foreign => return Err(Error::ContextMismatch),
                Owner::Unknown => {}
            }
        }
        Ok(buffers)
    }

    /// Runs `work` on the host with a copy of each of `regions` of this stream's emulated
    /// device memory (in order, as byte vectors), after every operation submitted to the
    /// stream before and before any submitted after: then writes back the regions marked
    /// `write`, if `work` returned `Ok`. The buffers the regions lie in are ordered with
    /// other streams' work on them as a launch's are (a written region as a launch's output).
    ///
    /// Errors: [`Error::Unsupported`] on a GPU (its memory is not the host's) or a graph's
    /// recording stream (see [`host_work`](Self::host_work), which records);
    /// [`Error::ContextMismatch`] for a region inside another context's buffer;
    /// [`Error::EmulatorMemory`] for a region outside the emulator's allocations; `work`'s
    /// own error, converted, as it is.
    ///
    /// # Safety
    /// The caller may write the regions marked `write` (the aliasing rules of a launch's
    /// outputs: no other live borrow reads or writes them meanwhile) and gives `work` no
    /// region it must not read.
    pub unsafe fn run_on_host<R, E>(
        &self,
        regions: &[HostRegion],
        work: impl FnOnce(&mut [Vec<u8>]) -> Result<R, E>,
    ) -> Result<R, E>
    where
        E: From<Error>,
    {
        let device = self.emulated_device()?;
        if self.is_recording() {
            return Err(Error::Unsupported {
                what: "host work that a graph cannot replay, while recording one".to_owned(),
            }
            .into());
        }
        let buffers = self.region_buffers(regions)?;
        let held = ordering::hold_memory(self, &buffers)?;
        let result = with_copies(device, regions, work)?;
        held.note_after()?;
        Ok(result)
    }

    /// [`run_on_host`](Self::run_on_host) of work a graph can replay: on a graph's recording
    /// stream (of an emulated context) it is recorded, holding the buffers its regions lie
    /// in, and each replay runs it again on what the memory then holds; elsewhere it runs
    /// now. Its failure is [`Error::HostWork`] naming `name`.
    ///
    /// # Safety
    /// As for [`run_on_host`](Self::run_on_host), for every replay too.
    pub unsafe fn host_work(
        &self,
        name: &str,
        regions: Vec<HostRegion>,
        work: HostWork,
    ) -> Result<(), Error> {
        self.emulated_device()?;
        let buffers = self.region_buffers(&regions)?;
        if let Some(recording) = self.recording() {
            return recording.record(
                GraphOp::HostWork {
                    name: name.into(),
                    regions,
                    work,
                },
                buffers,
            );
        }
        // SAFETY: the caller's contract.
        unsafe {
            self.run_on_host(&regions, |copies| {
                work(copies).map_err(|message| Error::HostWork {
                    name: name.to_owned(),
                    message,
                })
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CudaContext, DeviceBuffer};

    /// Host work reads what earlier work left, its written regions are written back, a
    /// failing work writes nothing, and a GPU-less refusal names the emulator.
    #[test]
    fn host_work_reads_and_writes_back_in_stream_order() -> crate::Result<()> {
        let ctx = CudaContext::emulator();
        let stream = ctx.new_stream()?;
        let input = DeviceBuffer::from_host(&stream, &[1u32, 2, 3, 4])?;
        let output = DeviceBuffer::from_host(&stream, &[0xDEAD_BEEFu32; 4])?;
        let regions = [
            HostRegion {
                address: input.device_address(),
                bytes: 16,
                write: false,
            },
            HostRegion {
                address: output.device_address(),
                bytes: 16,
                write: true,
            },
        ];
        // SAFETY: the output is written only here; the input is read.
        let sum = unsafe {
            stream.run_on_host(&regions, |copies| -> crate::Result<u32> {
                let (inp, out) = copies.split_at_mut(1);
                let mut sum = 0;
                for (i, chunk) in inp[0].chunks(4).enumerate() {
                    let v = u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
                    sum += v;
                    out[0][i * 4..i * 4 + 4].copy_from_slice(&(v * 10).to_le_bytes());
                }
                // The read region is a copy: changing it changes nothing.
                inp[0].fill(0);
                Ok(sum)
            })
        }?;
        assert_eq!(sum, 10);
        assert_eq!(output.to_host_vec(&stream)?, vec![10, 20, 30, 40]);
        assert_eq!(input.to_host_vec(&stream)?, vec![1, 2, 3, 4]);
        // SAFETY: as above.
        let failed = unsafe {
            stream.run_on_host(&regions[1..], |copies| -> crate::Result<()> {
                copies[0].fill(0xFF);
                Err(Error::Unsupported {
                    what: "a test's failure".to_owned(),
                })
            })
        };
        assert!(matches!(failed, Err(Error::Unsupported { .. })));
        assert_eq!(output.to_host_vec(&stream)?, vec![10, 20, 30, 40]);
        Ok(())
    }
}
