//! `mma(a, b, acc)`, exact on every target from sm_80 on and on the emulator.
//!
//! * `f16`/`bf16` inputs: the planner gave the result and the operands the `mma.sync`
//!   fragment layouts (`mma_layout`), so the accumulator stays in registers (across a K loop
//!   too) and the operands reach their fragments through the ordinary layout conversions
//!   (a shared-memory round trip from the coalesced layout their loads take). Each 16x8
//!   result block of each warp is then a chain of `mma.sync m16n8k16` along K in steps of
//!   16, whose sums are the ones `Op::Mma` defines: the result is bit for bit the
//!   interpreter's.
//! * `f32`/`f64` inputs: both operands go to shared memory (row-major), and each thread
//!   computes the accumulator elements it holds, one fused multiply-add per `k` in order.
//!
//! Not yet: `ldmatrix` for the operand conversions, a `cp.async` ring that overlaps the next
//! K step's loads with this one's `mma`s, and the TMA / `wgmma` recipe for sm_90a.

use cuprum_ir::{BinaryOp, CmpOp, MmaShape, Op, ScalarType, Stmt, TernaryOp, Value};
use cuprum_tile_ir::{MmaKind, TileValue};

use super::scratch::Claim;
use super::{Emitter, Lv, R};
use crate::layout::row_major_strides;
use crate::mma_layout::{self, Operand};
use crate::plan::{LayoutId, Repr};

/// The sizes of one `mma` (see `Op::Mma`): products of `[m, k]` by `[k, n]`.
#[derive(Clone, Copy, Debug)]
struct Dims {
    m: u32,
    n: u32,
    k: u32,
}

/// Where the staged operands are in the scratch.
struct Staged {
    a: Claim,
    b: Claim,
}

impl Emitter<'_> {
    /// Lowers `value = mma(a, b, acc)` (see the module docs).
    pub(super) fn mma(
        &mut self,
        value: TileValue,
        a: TileValue,
        b: TileValue,
        acc: TileValue,
    ) -> R<Lv> {
        let (input, accum) = (self.elem(a)?, self.elem(acc)?);
        let kind = MmaKind::of(input, accum)
            .ok_or_else(|| self.internal(format!("mma of {input} into {accum}")))?;
        let [la, lb] = self
            .plan
            .mma_inputs(value)
            .ok_or_else(|| self.internal("an mma's operand layouts were not planned"))?;
        let Repr::Dist(out) = self.repr(value)? else {
            return Err(self.internal("an mma result planned without registers"));
        };
        let (sa, sb) = (self.shape(a)?, self.shape(b)?);
        let r = sa.len();
        let dims = Dims {
            m: sa[r - 2],
            k: sa[r - 1],
            n: sb[r - 1],
        };
        let acc_regs = self.regs_in(acc, out)?;
        match kind {
            MmaKind::FmaChain { elem } => {
                let staged = self.stage_operands(a, la, b, lb)?;
                let regs = self.fma_chain(elem, dims, &staged, out, acc_regs)?;
                Ok(Lv::Dist { layout: out, regs })
            }
            MmaKind::TensorCore { input } => {
                let shape = if input == ScalarType::BF16 {
                    MmaShape::M16n8k16Bf16
                } else {
                    MmaShape::M16n8k16F16
                };
                let a_regs = self.regs_in(a, la)?;
                let b_regs = self.regs_in(b, lb)?;
                let regs =
                    self.tensor_core(shape, dims, [la, lb, out], [a_regs, b_regs, acc_regs])?;
                Ok(Lv::Dist { layout: out, regs })
            }
        }
    }

    /// Stages `a` and `b` (from layouts `la`, `lb`) row-major in one scratch claim; the
    /// block meets at a barrier after the writes.
    fn stage_operands(
        &mut self,
        a: TileValue,
        la: LayoutId,
        b: TileValue,
        lb: LayoutId,
    ) -> R<Staged> {
        let ty = self.elem(a)?;
        let count = |s: &[u32]| s.iter().map(|&n| u64::from(n)).product::<u64>();
        let (sa, sb) = (self.shape(a)?, self.shape(b)?);
        let size = u64::from(ty.size_bytes());
        let a_bytes = (count(&sa) * size).next_multiple_of(16);
        let b_bytes = (count(&sb) * size).next_multiple_of(16);
        let claim = self.claim_scratch(a_bytes + b_bytes, ScalarType::U8)?;
        let ca = claim.part(0, a_bytes as u32);
        let cb = claim.part(a_bytes as u32, b_bytes as u32);
        let a_regs = self.regs_in(a, la)?;
        self.write_tile(ca, la, &a_regs, &sa)?;
        let b_regs = self.regs_in(b, lb)?;
        self.write_tile(cb, lb, &b_regs, &sb)?;
        self.scratch_written(claim);
        Ok(Staged { a: ca, b: cb })
    }

    /// Writes registers `regs` of layout `layout` (a tile of `shape`) row-major into `claim`:
    /// each element once, by the thread that holds it unreplicated.
    fn write_tile(
        &mut self,
        claim: Claim,
        layout: LayoutId,
        regs: &[Value],
        shape: &[u32],
    ) -> R<()> {
        let strides = row_major_strides(shape);
        let primary = self.primary(layout);
        self.if_some(primary, |e| {
            for (r, &v) in regs.iter().enumerate() {
                let index = e.linear_index(layout, r, &strides)?;
                let valid = e.valid(layout, r)?;
                e.if_some(valid, |e| e.shared_store(claim, index, v))?;
            }
            Ok(())
        })
    }

    /// Runs `body(k)` for `k = start, start + step, ...` while `k < end` (all `U32`, `end`
    /// and `step` the same in every iteration), as one kernel IR loop.
    fn counted_loop(
        &mut self,
        start: Value,
        end: Value,
        step: Value,
        body: impl FnOnce(&mut Self, Value) -> R<()>,
    ) -> R<()> {
        let counter = self.var(ScalarType::U32);
        self.write(counter, start);
        let block = self.block(|e| {
            let k = e.read(counter)?;
            let done = e.cmp(CmpOp::Ge, k, end)?;
            e.if_(done, |e| {
                e.push(Stmt::Break);
                Ok(())
            })?;
            body(e, k)?;
            let next = e.add(k, step)?;
            e.write(counter, next);
            Ok(())
        })?;
        self.push(Stmt::Loop { body: block });
        Ok(())
    }

    /// The `f32`/`f64` recipe: each register of the result is its accumulator element plus
    /// a chain of fused multiply-adds along `k`.
    fn fma_chain(
        &mut self,
        elem: ScalarType,
        d: Dims,
        staged: &Staged,
        out: LayoutId,
        acc: Vec<Value>,
    ) -> R<Vec<Value>> {
        let Staged { a: ca, b: cb } = *staged;
        let rank = self.plan.layout(out).rank();
        // Per register: where its row of `a` and its column of `b` start.
        let mut starts = Vec::with_capacity(acc.len());
        for r in 0..acc.len() {
            let i = self.coord(out, r, rank - 2)?;
            let j = self.coord(out, r, rank - 1)?;
            let (mut row, mut col) = (i, j);
            if rank == 3 {
                let batch = self.coord(out, r, 0)?;
                let m = self.u32c(d.m);
                let bm = self.mul(batch, m)?;
                row = self.add(bm, i)?;
                let kn = self.u32c(d.k * d.n);
                let bkn = self.mul(batch, kn)?;
                col = self.add(bkn, j)?;
            }
            let k = self.u32c(d.k);
            let a_start = self.mul(row, k)?;
            starts.push((a_start, col));
        }
        let vars: Vec<_> = acc
            .iter()
            .map(|&v| {
                let var = self.var(elem);
                self.write(var, v);
                var
            })
            .collect();
        let (zero, one, k_end) = (self.u32c(0), self.u32c(1), self.u32c(d.k));
        let n = self.u32c(d.n);
        self.counted_loop(zero, k_end, one, |e, k| {
            let kn = e.mul(k, n)?;
            for (&var, &(a_start, col)) in vars.iter().zip(&starts) {
                let ai = e.add(a_start, k)?;
                let bi = e.add(kn, col)?;
                let x = e.shared_load(ca, ai, elem)?;
                let y = e.shared_load(cb, bi, elem)?;
                let sum = e.read(var)?;
                let next = e.def(Op::Ternary(TernaryOp::MulAdd, x, y, sum))?;
                e.write(var, next);
            }
            Ok(())
        })?;
        vars.iter().map(|&v| self.read(v)).collect()
    }

    /// The `f16`/`bf16` recipe (see the module docs): `regs` are `a`'s, `b`'s and the
    /// accumulator's registers in `layouts`, the `mma_layout` layouts; returns the result's.
    fn tensor_core(
        &mut self,
        shape: MmaShape,
        d: Dims,
        layouts: [LayoutId; 3],
        regs: [Vec<Value>; 3],
    ) -> R<Vec<Value>> {
        let [la, lb, lc] = layouts;
        let [a_regs, b_regs, mut c_regs] = regs;
        let forms = |operand| {
            mma_layout::fragment_forms(shape, operand)
                .ok_or_else(|| self.internal(format!("{shape:?}'s fragments are not lane-affine")))
        };
        let (fa, fb, fc) = (forms(Operand::A)?, forms(Operand::B)?, forms(Operand::C)?);
        let rank = self.plan.layout(lc).rank();
        let at = |e: &Self, layout: LayoutId, batch: u32, row: u32, col: u32| {
            let mut v = vec![0u32; rank];
            if rank == 3 {
                v[0] = batch;
            }
            v[rank - 2] = row;
            v[rank - 1] = col;
            e.plan
                .layout(layout)
                .register_at(&v)
                .ok_or_else(|| e.internal(format!("no register at {v:?} of an mma operand")))
        };
        // The origins of this thread's blocks: every C register that is a fragment's first.
        let first = fc
            .first()
            .map(|f| f.base)
            .ok_or_else(|| self.internal("no accumulator fragment"))?;
        let origins: Vec<[u32; 3]> = (0..c_regs.len())
            .filter_map(|r| {
                let o = self.plan.layout(lc).register(r);
                let (batch, row, col) =
                    (if rank == 3 { o[0] } else { 0 }, o[rank - 2], o[rank - 1]);
                (row % mma_layout::BLOCK_M == first.0 && col % mma_layout::BLOCK_N == first.1)
                    .then_some([batch, row - first.0, col - first.1])
            })
            .collect();
        let pack = |e: &mut Self, lo: Value, hi: Value| -> R<Value> {
            let lo = e.bitcast(lo, ScalarType::U16)?;
            let hi = e.bitcast(hi, ScalarType::U16)?;
            e.pack_halves([lo, hi])
        };
        for [batch, row0, col0] in origins {
            let mut c_at = [0usize; 4];
            for (slot, f) in c_at.iter_mut().zip(&fc) {
                *slot = at(self, lc, batch, row0 + f.base.0, col0 + f.base.1)?;
            }
            let mut c = c_at.map(|i| c_regs[i]);
            for k0 in (0..d.k).step_by(mma_layout::BLOCK_K as usize) {
                let mut a4 = [c[0]; 4];
                for (reg, slot) in a4.iter_mut().enumerate() {
                    let (h0, h1) = (&fa[2 * reg], &fa[2 * reg + 1]);
                    let i0 = at(self, la, batch, row0 + h0.base.0, k0 + h0.base.1)?;
                    let i1 = at(self, la, batch, row0 + h1.base.0, k0 + h1.base.1)?;
                    *slot = pack(self, a_regs[i0], a_regs[i1])?;
                }
                let mut b2 = [c[0]; 2];
                for (reg, slot) in b2.iter_mut().enumerate() {
                    let (h0, h1) = (&fb[2 * reg], &fb[2 * reg + 1]);
                    let i0 = at(self, lb, batch, k0 + h0.base.0, col0 + h0.base.1)?;
                    let i1 = at(self, lb, batch, k0 + h1.base.0, col0 + h1.base.1)?;
                    *slot = pack(self, b_regs[i0], b_regs[i1])?;
                }
                let r = self.b.mma(shape, a4, b2, c);
                c = self.built(r)?;
            }
            for (&i, &v) in c_at.iter().zip(&c) {
                c_regs[i] = v;
            }
        }
        Ok(c_regs)
    }

    /// Two 16-bit elements (`U16`) as one `U32` fragment register, the first in the low half.
    fn pack_halves(&mut self, [lo, hi]: [Value; 2]) -> R<Value> {
        let lo = self.cast(lo, ScalarType::U32)?;
        let hi = self.cast(hi, ScalarType::U32)?;
        let sixteen = self.u32c(16);
        let hi = self.bin(BinaryOp::Shl, hi, sixteen)?;
        self.bin(BinaryOp::Or, lo, hi)
    }
}
