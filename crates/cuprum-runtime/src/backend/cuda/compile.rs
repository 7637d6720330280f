//! IR to a loaded CUDA module: the PTX target for the device, the PTX writer, the parameter
//! layout every launch packs, and the route the driver compiles by (through the compile
//! cache by default).

use std::sync::Arc;

use cuprum_ir::{Kernel, ParamKind};

use super::CudaDevice;
use super::cached::{self, PerKernel, PerKernelPtx};
use super::module::{CudaModule, LinkInput};
use crate::backend::module_label;
use crate::backend::{LoadRequest, PtxText};
use crate::cache::ModuleRoute;
use crate::cache::occupancy::SmLimits;
use crate::config::KernelArg;
use crate::error::{Error, Result};
use crate::limits::DeviceLimits;

/// A module loaded by the CUDA backend.
pub(crate) struct CudaProgram {
    pub(crate) module: CudaModule,
    /// The PTX text the driver loaded.
    pub(crate) ptx: String,
    /// Per kernel, the byte size of each PTX parameter (`cuprum_ptx::machine_params`).
    pub(crate) machine_sizes: Vec<Vec<u32>>,
}

/// The PTX target for `module` on a device, or why the device cannot run it: the portable
/// target of its generation, or `sm_90a` for a module with Hopper-only instructions.
fn target_for(limits: &DeviceLimits, module: &cuprum_ir::Module) -> Result<cuprum_ptx::Target> {
    let (major, minor) = limits.compute_capability;
    cuprum_ptx::Target::for_module(module, major, minor).map_err(|e| match e {
        cuprum_ptx::TargetError::TooOld { .. } => Error::UnsupportedDevice {
            device: limits.name.clone(),
            compute_capability: (major, minor),
            reason: "cuprum needs compute capability 8.0 (sm_80, Ampere) or newer; run on a \
                     newer GPU, or set CUPRUM_DEVICE=emu to use the CPU emulator"
                .to_owned(),
        },
        cuprum_ptx::TargetError::NeedsSm90a { .. } => Error::UnsupportedDevice {
            device: limits.name.clone(),
            compute_capability: (major, minor),
            reason: e.to_string(),
        },
    })
}

/// The number of PTX parameters an IR kernel's parameters expand to.
fn expected_machine_params(kernel: &Kernel) -> usize {
    kernel
        .params
        .iter()
        .map(|p| match p.kind {
            ParamKind::Scalar(_) | ParamKind::TensorMap { .. } => 1,
            ParamKind::Slice { .. } => 2,
        })
        .sum()
}

/// The byte sizes of `kernel`'s PTX parameters, checked against its IR parameters.
fn machine_sizes(kernel: &Kernel) -> Result<Vec<u32>> {
    let params = cuprum_ptx::machine_params(kernel);
    if params.len() != expected_machine_params(kernel)
        || params
            .iter()
            .any(|p| !matches!(p.size_bytes, 1 | 2 | 4 | 8 | 128))
    {
        return Err(Error::Compile {
            kernel: kernel.name.clone(),
            message: format!(
                "internal error: the PTX writer's parameter layout ({} parameters) does not \
                 match the IR's ({} expected)",
                params.len(),
                expected_machine_params(kernel)
            ),
        });
    }
    Ok(params.iter().map(|p| p.size_bytes).collect())
}

impl CudaDevice {
    /// Writes PTX for `ir` (unless the request brings its own) and has the driver compile it
    /// the way the request's route says; returns the cubin when the route made one.
    pub(crate) fn load_ir(
        &self,
        ir: &Arc<cuprum_ir::Module>,
        request: LoadRequest<'_>,
    ) -> Result<(CudaProgram, Option<Vec<u8>>)> {
        let target = target_for(request.limits, ir)?;
        let (ptx, from_ir) = match request.ptx {
            PtxText::Override(ptx) => (ptx, false),
            PtxText::Written { target: t, ptx } if t == target => (ptx, true),
            PtxText::FromIr | PtxText::Written { .. } => {
                let ptx = cuprum_ptx::write_module(ir, target).map_err(|e| Error::Compile {
                    kernel: module_label(ir),
                    message: e.to_string(),
                })?;
                (ptx, true)
            }
        };
        let machine_sizes = ir
            .kernels
            .iter()
            .map(machine_sizes)
            .collect::<Result<Vec<_>>>()?;
        let names: Vec<&str> = ir.kernels.iter().map(|k| k.name.as_str()).collect();
        let over_aligned = linker_misaligns(ir);
        // Each kernel's PTX alone, for the register-capped link of the compile cache.
        let split = || -> Result<Vec<String>> {
            if let Some(k) = over_aligned {
                return Err(Error::Compile {
                    kernel: k.name.clone(),
                    message: "its shared memory is aligned above 16 bytes, which the driver's \
                              linker does not keep (the JIT does): not cached"
                        .to_owned(),
                });
            }
            ir.kernels
                .iter()
                .map(|k| {
                    let alone = cuprum_ir::Module {
                        kernels: vec![k.clone()],
                    };
                    cuprum_ptx::write_module(&alone, target).map_err(|e| Error::Compile {
                        kernel: k.name.clone(),
                        message: e.to_string(),
                    })
                })
                .collect()
        };
        let facts = PerKernel {
            ptx: &split,
            exact_block: ir
                .kernels
                .iter()
                .map(|k| {
                    k.block
                        .map(|(x, y, z)| x.saturating_mul(y).saturating_mul(z))
                })
                .collect(),
            sm: SmLimits::of(request.limits),
        };
        let per_kernel: PerKernelPtx<'_> = if from_ir { Some(&facts) } else { None };
        let mut cubin = None;
        let module = match request.route {
            ModuleRoute::Default => cached::load_cuda(
                self,
                request.limits.compute_capability,
                target.name(),
                &ptx,
                &names,
                per_kernel,
            )?,
            ModuleRoute::Jit => self.load_module(&ptx, &names)?,
            ModuleRoute::Link { link, input } => {
                let linked = self.link_ptx(
                    link,
                    &[LinkInput {
                        ptx: &ptx,
                        options: input,
                    }],
                )?;
                let module = self.load_cubin(&linked.cubin, &names)?;
                cubin = Some(linked.cubin);
                module
            }
            ModuleRoute::LinkCapped => {
                let jit = self.load_module(&ptx, &names)?;
                let capped =
                    cached::capped_cubin(self, &jit, &names, per_kernel).map_err(|why| {
                        Error::ModuleLoad {
                            message: format!("no register-capped cubin: {why}"),
                            log: String::new(),
                        }
                    })?;
                cubin = Some(capped.cubin);
                capped.module
            }
        };
        Ok((
            CudaProgram {
                module,
                ptx,
                machine_sizes,
            },
            cubin,
        ))
    }
}

/// The storage of one PTX parameter: its value in its first `size` bytes (native order, as
/// the driver reads it); 128 bytes, 64-byte aligned, so that a tensor map fits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C, align(64))]
pub(super) struct ParamSlot(pub(super) [u64; 16]);

/// One slot per PTX parameter (see [`ParamSlot`]).
pub(super) fn pack_params(sizes: &[u32], args: &[KernelArg]) -> Vec<ParamSlot> {
    let mut words: Vec<ParamSlot> = Vec::with_capacity(sizes.len());
    let word = |w: u64| {
        let mut slot = [0u64; 16];
        slot[0] = w;
        ParamSlot(slot)
    };
    for arg in args {
        match *arg {
            KernelArg::Scalar { bits, .. } => words.push(word(bits)),
            KernelArg::Slice { address, len } => {
                words.push(word(address));
                words.push(word(len));
            }
            KernelArg::TensorMap { map, .. } => words.push(ParamSlot(map)),
        }
    }
    words
        .iter()
        .zip(sizes)
        .map(|(slot, &size)| {
            let bits = slot.0[0];
            let mut first = [0u8; 8];
            match size {
                1 => first[..1].copy_from_slice(&(bits as u8).to_ne_bytes()),
                2 => first[..2].copy_from_slice(&(bits as u16).to_ne_bytes()),
                4 => first[..4].copy_from_slice(&(bits as u32).to_ne_bytes()),
                _ => return *slot,
            }
            let mut out = *slot;
            out.0[0] = u64::from_ne_bytes(first);
            out
        })
        .collect()
}

/// The first kernel of `ir` whose static shared memory is aligned above 16 bytes, if any.
/// The driver's linker (which alone returns a cubin) drops that alignment where the JIT
/// keeps it: its cubin of a TMA/wgmma kernel placed a 1024-aligned dynamic tile at 1088 and
/// faulted on an H200 (misaligned address) when a later process loaded it from the cache.
/// Such modules are compiled by the JIT every time. Dynamic shared memory is declared
/// 16-byte aligned whatever the kernel needs and aligned by the kernel itself
/// ([`cuprum_ir::Kernel::dyn_shared_padding`]), so it does not keep a module from the cache.
fn linker_misaligns(ir: &cuprum_ir::Module) -> Option<&cuprum_ir::Kernel> {
    ir.kernels.iter().find(|k| {
        (0..k.shared.len()).any(|i| k.shared_alignment(i) > cuprum_ir::kernel::ARRAY_ALIGN)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modules_with_static_shared_memory_aligned_above_16_bytes_are_not_linked() {
        use cuprum_ir::{ArrayDecl, KernelBuilder, ScalarType};
        let decl = |name: &str| ArrayDecl {
            name: name.to_owned(),
            elem: ScalarType::U32,
            len: 64,
        };
        let mut plain = KernelBuilder::new("plain");
        plain.shared_array_aligned(decl("a"), 16);
        plain.align_dyn_shared(16);
        let mut dynamic = KernelBuilder::new("dynamic");
        dynamic.align_dyn_shared(1024);
        let mut fixed = KernelBuilder::new("fixed");
        fixed.shared_array(decl("a"));
        fixed.shared_array_aligned(decl("b"), 128);
        let module = |kernels: Vec<cuprum_ir::Kernel>| cuprum_ir::Module { kernels };
        let (plain, dynamic, fixed) = (plain.finish(), dynamic.finish(), fixed.finish());
        assert!(linker_misaligns(&module(vec![plain.clone()])).is_none());
        let named = |m: &cuprum_ir::Module| linker_misaligns(m).map(|k| k.name.clone());
        // Dynamic shared memory aligns itself at run time: linkable.
        assert_eq!(named(&module(vec![plain.clone(), dynamic])), None);
        assert_eq!(named(&module(vec![plain, fixed])), Some("fixed".into()));
    }

    #[test]
    fn params_are_packed_in_native_order_at_their_size() {
        let args = [
            KernelArg::scalar(true),
            KernelArg::scalar(-2i16),
            KernelArg::Slice {
                address: 0x1234_5678_9ABC,
                len: 77,
            },
            KernelArg::scalar(1.5f32),
            KernelArg::scalar(-1i64),
        ];
        let words = pack_params(&[1, 2, 8, 8, 4, 8], &args);
        assert_eq!(words.len(), 6);
        let words: Vec<u64> = words.iter().map(|s| s.0[0]).collect();
        let bytes = |w: u64| w.to_ne_bytes();
        assert_eq!(bytes(words[0])[0], 1);
        assert_eq!(
            u16::from_ne_bytes([bytes(words[1])[0], bytes(words[1])[1]]),
            (-2i16) as u16
        );
        assert_eq!(words[2], 0x1234_5678_9ABC);
        assert_eq!(words[3], 77);
        let w4 = bytes(words[4]);
        assert_eq!(f32::from_ne_bytes([w4[0], w4[1], w4[2], w4[3]]), 1.5);
        assert_eq!(words[5], u64::MAX);
    }
}
