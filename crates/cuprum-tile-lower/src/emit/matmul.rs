//! `mma(a, b, acc)`: the portable recipe, exact on every target from sm_80 on and on the
//! emulator. Both operands go to shared memory (row-major, one staging of each per `mma`);
//! then
//!
//! * `f16`/`bf16` inputs: each warp takes 16x8 blocks of the result in turn and computes
//!   them with `mma.sync m16n8k16`, K in steps of 16, the accumulator going through shared
//!   memory in and out. The tensor cores' sums are the ones `Op::Mma` defines, so the
//!   result is bit for bit the interpreter's. Fragment positions come from
//!   `cuprum_ir::matrix` (the one copy of the PTX ISA's fragment tables), each as a
//!   function `base + g * per_g + t * per_t` of the lane's group `g = lane / 4` and thread
//!   `t = lane % 4`, checked for every lane when emitted.
//! * `f32`/`f64` inputs: each thread computes the accumulator elements it holds, one fused
//!   multiply-add per `k` in order, reading `a`'s row and `b`'s column from shared memory.
//!
//! This recipe is for correctness on every target, not speed: it stages every operand once
//! per `mma` and keeps no operand in registers across `mma`s (the pipelined `ldmatrix` /
//! `cp.async` and TMA / `wgmma` recipes of `TILE.md` replace it where they apply).

use cuprum_ir::{BinaryOp, CmpOp, MmaShape, Op, ScalarType, Stmt, TernaryOp, Value};
use cuprum_tile_ir::{MmaKind, TileValue};

use super::scratch::Claim;
use super::{Emitter, Lv, R};
use crate::layout::row_major_strides;
use crate::plan::{LayoutId, Repr};

/// A fragment position as a function of the lane: `base + g * per_g + t * per_t` (row and
/// column), where `g = lane / 4` and `t = lane % 4`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct LaneAffine {
    base: (u32, u32),
    per_g: (u32, u32),
    per_t: (u32, u32),
}

impl LaneAffine {
    /// The affine form of `position`, if every lane's position has it.
    fn of(position: impl Fn(u32) -> (usize, usize)) -> Option<LaneAffine> {
        let at = |lane: u32| {
            let (r, c) = position(lane);
            (r as u32, c as u32)
        };
        let base = at(0);
        let (g1, t1) = (at(4), at(1));
        let per_g = (g1.0.checked_sub(base.0)?, g1.1.checked_sub(base.1)?);
        let per_t = (t1.0.checked_sub(base.0)?, t1.1.checked_sub(base.1)?);
        let form = LaneAffine { base, per_g, per_t };
        (0..32)
            .all(|lane| at(lane) == form.at(lane))
            .then_some(form)
    }

    fn at(&self, lane: u32) -> (u32, u32) {
        let (g, t) = (lane / 4, lane % 4);
        (
            self.base.0 + g * self.per_g.0 + t * self.per_t.0,
            self.base.1 + g * self.per_g.1 + t * self.per_t.1,
        )
    }
}

/// The sizes of one `mma` (see `Op::Mma`): `batch` products of `[m, k]` by `[k, n]`.
#[derive(Clone, Copy, Debug)]
struct Dims {
    batch: u32,
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
            batch: if r == 3 { sa[0] } else { 1 },
            m: sa[r - 2],
            k: sa[r - 1],
            n: sb[r - 1],
        };
        let acc_regs = self.regs_in(acc, out)?;
        match kind {
            MmaKind::FmaChain { elem } => {
                let staged = self.stage_operands(a, la, b, lb, None)?;
                let regs = self.fma_chain(elem, dims, &staged, out, acc_regs)?;
                Ok(Lv::Dist { layout: out, regs })
            }
            MmaKind::TensorCore { input } => {
                if !dims.m.is_multiple_of(16) || !dims.n.is_multiple_of(8) {
                    return Err(self.unsupported(format!(
                        "mma of {input} tiles of {} x {} (M x N): the tensor-core recipe \
                         needs M a multiple of 16 and N a multiple of 8 (use larger tiles: \
                         loads pad past the tensor's edge)",
                        dims.m, dims.n
                    )));
                }
                let shape = if input == ScalarType::BF16 {
                    MmaShape::M16n8k16Bf16
                } else {
                    MmaShape::M16n8k16F16
                };
                let regs = self.tensor_core(shape, dims, (a, la), (b, lb), out, acc_regs)?;
                Ok(Lv::Dist { layout: out, regs })
            }
        }
    }

    /// Stages `a` and `b` (from layouts `la`, `lb`) row-major in one scratch claim, and the
    /// accumulator registers `acc` (of layout `out`, `f32`) after them when given; the
    /// block meets at a barrier after the writes.
    fn stage_operands(
        &mut self,
        a: TileValue,
        la: LayoutId,
        b: TileValue,
        lb: LayoutId,
        acc: Option<(LayoutId, &[Value], u64)>,
    ) -> R<(Staged, Option<Claim>)> {
        let ty = self.elem(a)?;
        let count = |s: &[u32]| s.iter().map(|&n| u64::from(n)).product::<u64>();
        let (sa, sb) = (self.shape(a)?, self.shape(b)?);
        let size = u64::from(ty.size_bytes());
        let a_bytes = (count(&sa) * size).next_multiple_of(16);
        let b_bytes = (count(&sb) * size).next_multiple_of(16);
        let c_bytes = acc.map_or(0, |(_, _, n)| n * 4);
        let claim = self.claim_scratch(a_bytes + b_bytes + c_bytes, ScalarType::U8)?;
        let ca = claim.part(0, a_bytes as u32);
        let cb = claim.part(a_bytes as u32, b_bytes as u32);
        let cc = acc.map(|_| claim.part((a_bytes + b_bytes) as u32, c_bytes as u32));
        let a_regs = self.regs_in(a, la)?;
        self.write_tile(ca, la, &a_regs, &sa)?;
        let b_regs = self.regs_in(b, lb)?;
        self.write_tile(cb, lb, &b_regs, &sb)?;
        if let (Some((lc, regs, _)), Some(cc)) = (acc, cc) {
            let shape = self.plan.layout(lc).shape().to_vec();
            self.write_tile(cc, lc, regs, &shape)?;
        }
        self.scratch_written(claim);
        Ok((Staged { a: ca, b: cb }, cc))
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
        staged: &(Staged, Option<Claim>),
        out: LayoutId,
        acc: Vec<Value>,
    ) -> R<Vec<Value>> {
        let (Staged { a: ca, b: cb }, _) = *staged;
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

    /// The `f16`/`bf16` recipe (see the module docs).
    fn tensor_core(
        &mut self,
        shape: MmaShape,
        d: Dims,
        (a, la): (TileValue, LayoutId),
        (b, lb): (TileValue, LayoutId),
        out: LayoutId,
        acc: Vec<Value>,
    ) -> R<Vec<Value>> {
        let forms = self.fragment_forms(shape)?;
        let acc_elems = u64::from(d.batch) * u64::from(d.m) * u64::from(d.n);
        let (Staged { a: ca, b: cb }, cc) =
            self.stage_operands(a, la, b, lb, Some((out, &acc, acc_elems)))?;
        let cc = cc.ok_or_else(|| self.internal("the accumulator was not staged"))?;

        let five = self.u32c(5);
        let warp = self.bin(BinaryOp::Shr, self.tid(), five)?;
        let lane_mask = self.u32c(31);
        let lane = self.bin(BinaryOp::And, self.tid(), lane_mask)?;
        let two = self.u32c(2);
        let g = self.bin(BinaryOp::Shr, lane, two)?;
        let three = self.u32c(3);
        let t = self.bin(BinaryOp::And, lane, three)?;
        let (mb, nb) = (d.m / 16, d.n / 8);
        let blocks = self.u32c(d.batch * mb * nb);
        let warps = self.u32c(self.plan.threads / 32);
        self.counted_loop(warp, blocks, warps, |e, blk| {
            let per_batch = e.u32c(mb * nb);
            let bi = e.bin(BinaryOp::Div, blk, per_batch)?;
            let rem = e.bin(BinaryOp::Rem, blk, per_batch)?;
            let nbc = e.u32c(nb);
            let mi = e.bin(BinaryOp::Div, rem, nbc)?;
            let ni = e.bin(BinaryOp::Rem, rem, nbc)?;
            let sixteen = e.u32c(16);
            let eight = e.u32c(8);
            let row0 = e.mul(mi, sixteen)?;
            let col0 = e.mul(ni, eight)?;
            // Element offsets of this batch in A, B and C.
            let mk = e.u32c(d.m * d.k);
            let a_base = e.mul(bi, mk)?;
            let kn = e.u32c(d.k * d.n);
            let b_base = e.mul(bi, kn)?;
            let mn = e.u32c(d.m * d.n);
            let c_base = e.mul(bi, mn)?;

            let mut c = [row0; 4];
            let mut c_index = [row0; 4];
            for (reg, form) in forms.c.iter().enumerate() {
                let (row, col) = e.lane_position(form, g, t)?;
                let row = e.add(row, row0)?;
                let col = e.add(col, col0)?;
                c_index[reg] = e.matrix_index(c_base, row, d.n, col)?;
                c[reg] = e.shared_load(cc, c_index[reg], ScalarType::F32)?;
            }
            for ks in 0..d.k / 16 {
                let k0 = e.u32c(ks * 16);
                let mut fa = [row0; 4];
                for (reg, halves) in forms.a.iter().enumerate() {
                    let mut words = [row0; 2];
                    for (h, form) in halves.iter().enumerate() {
                        let (row, col) = e.lane_position(form, g, t)?;
                        let row = e.add(row, row0)?;
                        let col = e.add(col, k0)?;
                        let index = e.matrix_index(a_base, row, d.k, col)?;
                        words[h] = e.shared_load(ca, index, ScalarType::U16)?;
                    }
                    fa[reg] = e.pack_halves(words)?;
                }
                let mut fb = [row0; 2];
                for (reg, halves) in forms.b.iter().enumerate() {
                    let mut words = [row0; 2];
                    for (h, form) in halves.iter().enumerate() {
                        let (row, col) = e.lane_position(form, g, t)?;
                        let row = e.add(row, k0)?;
                        let col = e.add(col, col0)?;
                        let index = e.matrix_index(b_base, row, d.n, col)?;
                        words[h] = e.shared_load(cb, index, ScalarType::U16)?;
                    }
                    fb[reg] = e.pack_halves(words)?;
                }
                let r = e.b.mma(shape, fa, fb, c);
                c = e.built(r)?;
            }
            for (reg, &v) in c.iter().enumerate() {
                e.shared_store(cc, c_index[reg], v)?;
            }
            Ok(())
        })?;
        // Every warp's blocks are written before any thread reads its registers back.
        self.scratch_written(cc);
        let strides = row_major_strides(self.plan.layout(out).shape());
        (0..acc.len())
            .map(|r| {
                let index = self.linear_index(out, r, &strides)?;
                self.shared_load(cc, index, ScalarType::F32)
            })
            .collect()
    }

    /// The lane-affine forms of `shape`'s fragment positions.
    fn fragment_forms(&self, shape: MmaShape) -> R<Forms> {
        let form = |f: &dyn Fn(u32) -> (usize, usize)| {
            LaneAffine::of(f).ok_or_else(|| {
                self.internal(format!(
                    "{shape:?}'s fragment layout is not affine in the lane"
                ))
            })
        };
        let mut a = Vec::with_capacity(4);
        for reg in 0..4 {
            a.push([
                form(&|l| shape.a_position(l, reg, 0))?,
                form(&|l| shape.a_position(l, reg, 1))?,
            ]);
        }
        let mut b = Vec::with_capacity(2);
        for reg in 0..2 {
            b.push([
                form(&|l| shape.b_position(l, reg, 0))?,
                form(&|l| shape.b_position(l, reg, 1))?,
            ]);
        }
        let mut c = Vec::with_capacity(4);
        for reg in 0..4 {
            c.push(form(&|l| MmaShape::c_position(l, reg))?);
        }
        Ok(Forms { a, b, c })
    }

    /// `form`'s (row, column) for the lane with group `g` and thread `t` (`U32`s).
    fn lane_position(&mut self, form: &LaneAffine, g: Value, t: Value) -> R<(Value, Value)> {
        let mut out = [g; 2];
        let parts = [
            (form.base.0, form.per_g.0, form.per_t.0),
            (form.base.1, form.per_g.1, form.per_t.1),
        ];
        for (slot, (base, per_g, per_t)) in out.iter_mut().zip(parts) {
            let mut acc = self.u32c(base);
            for (x, k) in [(g, per_g), (t, per_t)] {
                if k != 0 {
                    let kc = self.u32c(k);
                    let term = self.mul(x, kc)?;
                    acc = self.add(acc, term)?;
                }
            }
            *slot = acc;
        }
        Ok((out[0], out[1]))
    }

    /// `base + row * cols + col` (`U32`).
    fn matrix_index(&mut self, base: Value, row: Value, cols: u32, col: Value) -> R<Value> {
        let cols = self.u32c(cols);
        let at = self.mul(row, cols)?;
        let at = self.add(at, col)?;
        self.add(base, at)
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

/// The lane-affine forms of one shape's fragments: A's four registers and B's two (each two
/// halves), C's four.
struct Forms {
    a: Vec<[LaneAffine; 2]>,
    b: Vec<[LaneAffine; 2]>,
    c: Vec<LaneAffine>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every fragment position of `m16n8k16` is affine in the lane, and the forms give back
    /// each lane's position.
    #[test]
    fn fragment_positions_are_affine_in_the_lane() {
        for shape in [MmaShape::M16n8k16F16, MmaShape::M16n8k16Bf16] {
            for reg in 0..4 {
                for half in 0..2 {
                    let f = LaneAffine::of(|l| shape.a_position(l, reg, half)).unwrap();
                    for lane in 0..32 {
                        let (r, c) = shape.a_position(lane, reg, half);
                        assert_eq!(f.at(lane), (r as u32, c as u32));
                    }
                }
                let f = LaneAffine::of(|l| MmaShape::c_position(l, reg)).unwrap();
                assert_eq!(f.per_g, (1, 0));
                assert_eq!(f.per_t, (0, 2));
            }
        }
        // A position that is not affine is refused.
        assert!(LaneAffine::of(|l| ((l * l) as usize, 0)).is_none());
    }
}
