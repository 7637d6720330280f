//! The tensor memory accelerator's statements ([`TmaOp`]): bulk tensor loads and stores,
//! plain bulk copies, and the commit and wait of bulk groups. Kept apart from `emit` because
//! they take a tensor map, which is either a kernel parameter or an address in global memory.
//!
//! All of them are PTX ISA 8.0 and sm_90 (plain `sm_90`: none is architecture-specific);
//! on sm_80 each is [`PtxError::Unsupported`]. A tensor-map parameter is declared
//! `.param .align 64 .b8 name[128]` (CUDA's `const __grid_constant__ CUtensorMap`), and the
//! copy takes the *generic* address of the parameter, which `cvta.param.u64` gives (PTX ISA
//! 7.7). Shared addresses are the `U32` shared-window offsets every shared access uses, so
//! the copies name `.shared::cluster`/`.shared::cta` windows with 32-bit registers (a CTA's
//! own shared addresses are valid cluster addresses).

use cuprum_ir::{TensorMapRef, TmaOp, Value};

use crate::PtxError;
use crate::Target;
use crate::emit::{KernelWriter, ins};
use crate::regs::{Class, Reg};

/// The marker `emit` uses for a tensor-map parameter in its table of parameter types.
pub(crate) const TENSOR_MAP_PARAM: &str = "tensormap";

impl KernelWriter<'_> {
    pub(crate) fn tma(&mut self, op: &TmaOp) -> Result<(), PtxError> {
        if self.target == Target::Sm80 {
            return Err(self.unsupported(format!(
                "{} on sm_80 (the tensor memory accelerator needs compute capability 9.0)",
                name(op)
            )));
        }
        match op {
            TmaOp::LoadTile {
                map,
                coords,
                dst,
                mbar,
                multicast,
            } => {
                if multicast.is_some() && !self.target.is_arch_specific() {
                    return Err(self.unsupported(format!(
                        "a multicast TMA load (`.multicast::cluster`) on {} (it exists on \
                         sm_90a only)",
                        self.target.name()
                    )));
                }
                let m = self.tensor_map(*map);
                let c = self.coords(coords);
                let (d, b) = (self.reg(*dst), self.reg(*mbar));
                let rank = coords.len();
                match multicast {
                    None => ins!(
                        self,
                        "cp.async.bulk.tensor.{rank}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [{d}], [{m}, {{{c}}}], [{b}]"
                    ),
                    Some(mask) => {
                        // A `U16` lives in a 32-bit register; the mask operand is `.b16`.
                        let wide = self.reg(*mask);
                        let k = self.tmp(Class::B16);
                        ins!(self, "cvt.u16.u32 {k}, {wide}");
                        ins!(
                            self,
                            "cp.async.bulk.tensor.{rank}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [{d}], [{m}, {{{c}}}], [{b}], {k}"
                        );
                    }
                }
            }
            TmaOp::StoreTile { map, coords, src } => {
                let m = self.tensor_map(*map);
                let c = self.coords(coords);
                let s = self.reg(*src);
                ins!(
                    self,
                    "cp.async.bulk.tensor.{}d.global.shared::cta.tile.bulk_group [{m}, {{{c}}}], [{s}]",
                    coords.len()
                );
            }
            TmaOp::LoadBulk {
                dst,
                src,
                bytes,
                mbar,
            } => {
                let (d, s, n, b) = (
                    self.reg(*dst),
                    self.reg(*src),
                    self.reg(*bytes),
                    self.reg(*mbar),
                );
                ins!(
                    self,
                    "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [{d}], [{s}], {n}, [{b}]"
                );
            }
            TmaOp::Commit => ins!(self, "cp.async.bulk.commit_group"),
            TmaOp::WaitGroup { pending, read } => {
                let read = if *read { ".read" } else { "" };
                ins!(self, "cp.async.bulk.wait_group{read} {pending}");
            }
        }
        Ok(())
    }

    /// The register holding the generic address of the tensor map `map`.
    fn tensor_map(&mut self, map: TensorMapRef) -> Reg {
        match map {
            TensorMapRef::Global(v) => self.reg(v),
            TensorMapRef::Param(i) => {
                let p = self.param_name(i, 0);
                let r = self.tmp(Class::B64);
                ins!(self, "cvta.param.u64 {r}, {p}");
                r
            }
        }
    }

    /// The coordinate registers, comma-separated.
    fn coords(&self, coords: &[Value]) -> String {
        coords
            .iter()
            .map(|&c| self.reg(c).to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The statement's name in an error message.
fn name(op: &TmaOp) -> &'static str {
    match op {
        TmaOp::LoadTile { .. } => "a TMA tile load (`cp.async.bulk.tensor`)",
        TmaOp::StoreTile { .. } => "a TMA tile store (`cp.async.bulk.tensor`)",
        TmaOp::LoadBulk { .. } => "a bulk copy (`cp.async.bulk`)",
        TmaOp::Commit => "`cp.async.bulk.commit_group`",
        TmaOp::WaitGroup { .. } => "`cp.async.bulk.wait_group`",
    }
}
