//! Hopper's warpgroup statements: `wgmma` (fence, mma_async, commit, wait), `setmaxnreg`,
//! named barriers and `stmatrix`.
//!
//! Each IR statement is one PTX instruction with its meaning ([`cuprum_ir::wgmma`]), so this
//! module spells them. What matters for speed is the accumulator: a `wgmma.mma_async` names
//! the registers of its accumulator *variables* directly in its `{..}` list and nothing here
//! copies them, so the same registers carry the accumulator from the `wgmma.fence` to the
//! covering `wgmma.wait_group` and ptxas never serializes the pipeline (warning C7510;
//! `tests/wgmma.rs` runs ptxas on an accumulating K loop and fails on it). `scale-d` is a
//! predicate register; a constant one gets a fresh predicate set right before the instruction,
//! which touches no accumulator.

use std::fmt::Write as _;

use cuprum_ir::{ScaleD, Value, WgmmaA, WgmmaMma};

use crate::emit::{KernelWriter, ins};
use crate::regs::Class;
use crate::{PtxError, Target};

impl KernelWriter<'_> {
    fn arch_specific(&self, what: &str) -> Result<(), PtxError> {
        if self.target.is_arch_specific() {
            Ok(())
        } else {
            Err(self.unsupported(format!(
                "`{what}` on {} (it exists on sm_90a only)",
                self.target.name()
            )))
        }
    }

    pub(crate) fn wgmma_fence(&mut self) -> Result<(), PtxError> {
        self.arch_specific("wgmma.fence")?;
        ins!(self, "wgmma.fence.sync.aligned");
        Ok(())
    }

    pub(crate) fn wgmma_commit(&mut self) -> Result<(), PtxError> {
        self.arch_specific("wgmma.commit_group")?;
        ins!(self, "wgmma.commit_group.sync.aligned");
        Ok(())
    }

    pub(crate) fn wgmma_wait(&mut self, pending: u32) -> Result<(), PtxError> {
        self.arch_specific("wgmma.wait_group")?;
        ins!(self, "wgmma.wait_group.sync.aligned {pending}");
        Ok(())
    }

    pub(crate) fn wgmma_mma(&mut self, m: &WgmmaMma) -> Result<(), PtxError> {
        self.arch_specific("wgmma.mma_async")?;
        // One string, not one per register (a wgmma names up to 128).
        let mut acc = String::with_capacity(m.acc.len() * 7);
        for (i, &v) in m.acc.iter().enumerate() {
            let sep = if i == 0 { "" } else { ", " };
            let _ = write!(acc, "{sep}{}", self.var(v));
        }
        let scale_d = match m.scale_d {
            ScaleD::Pred(p) => self.reg(p),
            ScaleD::Const(c) => {
                let p = self.tmp(Class::Pred);
                ins!(self, "setp.ne.u32 {p}, {}, 0", u32::from(c));
                p
            }
        };
        let b = self.reg(m.b);
        let t = m.shape.ty.ptx_name();
        let sa = if m.negate_a { -1 } else { 1 };
        let sb = if m.negate_b { -1 } else { 1 };
        let a = match &m.a {
            WgmmaA::Descriptor(d) => self.reg(*d).to_string(),
            WgmmaA::Registers(r) => self.reg_list(r),
        };
        // tf32 has no transpose operands; register A has no `imm-trans-a`.
        let trans = match (m.shape.ty.transposable(), &m.a) {
            (false, _) => String::new(),
            (true, WgmmaA::Descriptor(_)) => {
                format!(", {}, {}", u8::from(m.trans_a), u8::from(m.trans_b))
            }
            (true, WgmmaA::Registers(_)) => format!(", {}", u8::from(m.trans_b)),
        };
        ins!(
            self,
            "wgmma.mma_async.sync.aligned.{}.f32.{t}.{t} {{{}}}, {a}, {b}, {scale_d}, {sa}, {sb}{trans}",
            m.shape.ptx_shape(),
            acc
        );
        Ok(())
    }

    pub(crate) fn setmaxnreg(&mut self, increase: bool, count: u32) -> Result<(), PtxError> {
        self.arch_specific("setmaxnreg")?;
        let dir = if increase { "inc" } else { "dec" };
        ins!(self, "setmaxnreg.{dir}.sync.aligned.u32 {count}");
        Ok(())
    }

    pub(crate) fn named_barrier(&mut self, arrive: bool, id: u32, threads: u32) {
        let op = if arrive { "arrive" } else { "sync" };
        ins!(self, "bar.{op} {id}, {threads}");
    }

    pub(crate) fn stmatrix(
        &mut self,
        trans: bool,
        addr: Value,
        values: &[Value],
    ) -> Result<(), PtxError> {
        if self.target == Target::Sm80 {
            return Err(self.unsupported("`stmatrix` on sm_80 (it needs compute capability 9.0)"));
        }
        let (a, list) = (self.reg(addr), self.reg_list(values));
        let t = if trans { ".trans" } else { "" };
        ins!(
            self,
            "stmatrix.sync.aligned.m8n8.x{}{t}.shared.b16 [{a}], {list}",
            values.len()
        );
        Ok(())
    }
}
