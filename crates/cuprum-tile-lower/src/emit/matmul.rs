//! `mma(a, b, acc)`, exact on every target from sm_80 on and on the emulator.
//!
//! * `f16`/`bf16` inputs: the planner gave the result and the operands the `mma.sync`
//!   fragment layouts (`mma_layout`), so the accumulator stays in registers (across a K loop
//!   too). An operand reaches its fragments from registers already in its fragment layout
//!   (an earlier `mma`'s result in a chain), from fragment words packed before the loop (a
//!   loop-invariant operand), or from shared memory by `ldmatrix`: written there row-major
//!   from its registers, or copied there from global memory by `cp.async` (a staged load,
//!   `emit::staged`); a transposed `B` is staged as its source is and read without
//!   `.trans`. Each 16x8
//!   result block of each warp is then a chain of `mma.sync m16n8k16` along K in steps of
//!   16, whose sums are the ones `Op::Mma` defines: the result is bit for bit the
//!   interpreter's.
//! * `f32`/`f64` inputs: both operands go to shared memory (row-major), and each thread
//!   computes the accumulator elements it holds, one fused multiply-add per `k` in order.
//!
//! On compute capability 9.0, an `mma` whose warps are warpgroups' rows takes `wgmma`
//! instead (`wgmma_mma`, with the `cp.async` ring of `ring` in `for` loops); GEMM-shaped
//! kernels take the whole-kernel TMA / `wgmma` recipe (`wgmma_gemm`). Not yet: a ring for
//! the `mma.sync` path (an experiment lost on the H200: its buffers cut residency).

use std::collections::HashMap;

use cuprum_ir::matrix::ldmatrix_position;
use cuprum_ir::{BinaryOp, CmpOp, Constant, MmaShape, Op, ScalarType, Stmt, TernaryOp, Value};
use cuprum_tile_ir::{MmaKind, TileValue};

use super::scratch::Claim;
use super::{Emitter, Lv, R};
use crate::layout::LANE_BITS;
use crate::mma_layout::{self, LaneAffine, Operand};
use crate::plan::{LayoutId, Repr};

/// Elements of padding after each row of an operand staged for `ldmatrix`: 16 bytes, so that
/// the eight rows one `ldmatrix` matrix reads start in eight different groups of four banks
/// (rows of a multiple of 128 bytes would all start in the same banks).
const ROW_PAD: u32 = 8;

/// A tensor-core operand's fragments made ahead of the loop that reads them: its registers
/// in its fragment layout and, per block origin `[batch, row, col]` of this thread, the
/// block's packed fragment words.
#[derive(Clone)]
pub(super) struct Packed {
    regs: Vec<Value>,
    words: HashMap<[u32; 3], Vec<Value>>,
}

/// Where a tensor-core operand's fragments come from.
pub(super) enum Source {
    /// Its registers in its fragment layout.
    Regs(Vec<Value>),
    /// Its fragments, packed ahead (blocks not among them from the registers).
    Packed(Packed),
    /// Its tile, row-major in shared memory: `rows` per batch, each `stride` elements, read
    /// with `ldmatrix` as `plan` says; `transposed`: shared memory holds the tile's
    /// transpose (a `B` that is a permuted `[N, K]` tile, such as attention's `kᵀ`, staged
    /// as its source is, with whole-row stores, and read without `.trans`).
    Shared {
        claim: Claim,
        rows: u32,
        stride: u32,
        plan: LdMatrixPlan,
        transposed: bool,
    },
}

/// A tile an `mma` stages in shared memory: from the registers it is in (the value, their
/// layout and the registers), or a staged load's, from global memory.
#[derive(Clone)]
enum Staged {
    Regs(TileValue, LayoutId, Vec<Value>),
    Global(TileValue),
}

impl Staged {
    fn value(&self) -> TileValue {
        match self {
            Staged::Regs(v, ..) | Staged::Global(v) => *v,
        }
    }
}

/// How `ldmatrix` reads one operand's fragment from a row-major tile.
#[derive(Clone, Copy, Debug)]
pub(super) struct LdMatrixPlan {
    /// The origins (row, column) of matrices 1 and 2: matrix `m` starts at bit 0 of `m`
    /// times the first plus bit 1 times the second.
    base1: (u32, u32),
    base2: (u32, u32),
    /// Matrices read (the fragment's registers).
    count: usize,
    /// `.trans`.
    trans: bool,
}

/// How `ldmatrix` reads `operand`'s fragment of `shape` from a row-major tile (of its
/// transpose when `transposed`; the plan's origins are then in the transpose's coordinates);
/// `None` when the fragment tables are not what `ldmatrix` gives (every lane's every
/// element is checked).
fn ldmatrix_bases(shape: MmaShape, operand: Operand, transposed: bool) -> Option<LdMatrixPlan> {
    let (count, trans) = match operand {
        Operand::A => (4, transposed),
        Operand::B => (2, !transposed),
        Operand::C => return None,
    };
    let position = |lane: u32, reg: usize, half: usize| {
        let (r, c) = match operand {
            Operand::A => shape.a_position(lane, reg, half),
            _ => shape.b_position(lane, reg, half),
        };
        if transposed { (c, r) } else { (r, c) }
    };
    let base = |m: usize| {
        let (r, c) = position(0, m, 0);
        (r as u32, c as u32)
    };
    let (b1, b2) = (base(1), if count == 4 { base(2) } else { (0, 0) });
    for m in 0..count {
        let origin = (
            (m as u32 & 1) * b1.0 + (m as u32 >> 1) * b2.0,
            (m as u32 & 1) * b1.1 + (m as u32 >> 1) * b2.1,
        );
        for lane in 0..32 {
            for half in 0..2 {
                let (r, c) = ldmatrix_position(lane, half, trans);
                let (pr, pc) = position(lane, m, half);
                if (pr as u32, pc as u32) != (origin.0 + r as u32, origin.1 + c as u32) {
                    return None;
                }
            }
        }
    }
    Some(LdMatrixPlan {
        base1: b1,
        base2: b2,
        count,
        trans,
    })
}

/// The sizes of one `mma` (see `Op::Mma`): products of `[m, k]` by `[k, n]`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Dims {
    pub(super) m: u32,
    pub(super) n: u32,
    pub(super) k: u32,
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
                let (a_regs, b_regs) = (self.regs_in(a, la)?, self.regs_in(b, lb)?);
                let parts = self.stage_rows(
                    &[Staged::Regs(a, la, a_regs), Staged::Regs(b, lb, b_regs)],
                    0,
                )?;
                let [(ca, _), (cb, _)] = parts[..] else {
                    return Err(self.internal("two operands staged, not two parts"));
                };
                let regs = self.fma_chain(elem, dims, [ca, cb], out, acc_regs)?;
                Ok(Lv::Dist { layout: out, regs })
            }
            MmaKind::TensorCore { .. } => {
                let shape = kind
                    .shape()
                    .ok_or_else(|| self.internal("a tensor-core mma without a shape"))?;
                if let Some(regs) = self.try_wgmma(value, [a, b, acc], &acc_regs)? {
                    return Ok(Lv::Dist { layout: out, regs });
                }
                let sources = self.operand_sources(shape, [(a, la), (b, lb)])?;
                let regs = self.tensor_core(shape, dims, [la, lb, out], sources, acc_regs)?;
                Ok(Lv::Dist { layout: out, regs })
            }
        }
    }

    /// Where each tensor-core operand's fragments come from: its registers when it already
    /// is in its fragment layout (or costs nothing to put there: a uniform or iota tile),
    /// when a fragment layout clamps (warps past the tile's end) or when `K` is not a
    /// multiple of 16 (`ldmatrix` would read past its rows); else shared memory, where it is
    /// written row-major from the registers it is in and read back with `ldmatrix` (one
    /// barrier for both operands).
    fn operand_sources(
        &mut self,
        shape: MmaShape,
        operands: [(TileValue, LayoutId); 2],
    ) -> R<[Source; 2]> {
        // Where warps reach past the tile, their registers must hold copies of the last
        // row or column (a later `max` may read them), which only the register path gives.
        let k = self.shape(operands[0].0)?.last().copied();
        let plans = [
            ldmatrix_bases(shape, Operand::A, false),
            ldmatrix_bases(shape, Operand::B, false),
        ];
        let ldmatrix_ok = plans.iter().all(Option::is_some)
            && crate::staging::ldmatrix_reads(self.plan, shape, k, [operands[0].1, operands[1].1]);
        let mut staged = Vec::new();
        let mut sources = [Source::Regs(Vec::new()), Source::Regs(Vec::new())];
        for (i, &(v, l)) in operands.iter().enumerate() {
            // A staged load: copied from global memory into the staging below.
            if let Some((load, transposed)) = self.staged_origin(i == 1, v) {
                let operand = if i == 0 { Operand::A } else { Operand::B };
                let plan = ldmatrix_bases(shape, operand, transposed)
                    .filter(|_| ldmatrix_ok)
                    .ok_or_else(|| self.internal("a staged load that ldmatrix cannot read"))?;
                staged.push((i, Staged::Global(load), plan, transposed));
                continue;
            }
            if let Some(packed) = self.packed_in(v, l) {
                sources[i] = Source::Packed(packed);
                continue;
            }
            // A `B` that is the transpose of a rank-2 tile in registers: that tile staged.
            if i == 1
                && ldmatrix_ok
                && let Some(source) = self.transposed_source(v)
                && let Lv::Dist { layout, regs } = self.get(source)?
                && let Some(plan) = ldmatrix_bases(shape, Operand::B, true)
            {
                staged.push((i, Staged::Regs(source, layout, regs), plan, true));
                continue;
            }
            match self.get(v)? {
                Lv::Dist { layout, regs } if layout != l && ldmatrix_ok => {
                    let plan = plans[i]
                        .ok_or_else(|| self.internal("ldmatrix does not give these fragments"))?;
                    staged.push((i, Staged::Regs(v, layout, regs), plan, false));
                }
                _ => sources[i] = Source::Regs(self.regs_in(v, l)?),
            }
        }
        if staged.is_empty() {
            return Ok(sources);
        }
        let tiles: Vec<Staged> = staged.iter().map(|(_, t, ..)| t.clone()).collect();
        let parts = self.stage_rows(&tiles, ROW_PAD)?;
        for ((i, tile, plan, transposed), (claim, stride)) in staged.into_iter().zip(parts) {
            let s = self.shape(tile.value())?;
            sources[i] = Source::Shared {
                claim,
                rows: s[s.len() - 2],
                stride,
                plan,
                transposed,
            };
        }
        Ok(sources)
    }

    /// `v`'s fragments made ahead in layout `l`, if they were.
    fn packed_in(&self, v: TileValue, l: LayoutId) -> Option<Packed> {
        match self.fragments.get(&v) {
            Some((layout, packed)) if *layout == l => Some(packed.clone()),
            _ => None,
        }
    }

    /// Where an operand not read from shared memory takes its fragments in layout `l` from:
    /// fragments made ahead, or its registers put in `l`.
    pub(super) fn fragment_source(&mut self, v: TileValue, l: LayoutId) -> R<Source> {
        match self.packed_in(v, l) {
            Some(packed) => Ok(Source::Packed(packed)),
            None => Ok(Source::Regs(self.regs_in(v, l)?)),
        }
    }

    /// Writes `tiles` (each a value, the layout its registers are in, and the registers) to
    /// one scratch claim, row-major with rows of their last dimension plus `pad` elements,
    /// then meets the block at one barrier; gives each tile's part of the claim and its row
    /// stride in elements.
    fn stage_rows(&mut self, tiles: &[Staged], pad: u32) -> R<Vec<(Claim, u32)>> {
        let mut sizes = Vec::with_capacity(tiles.len());
        for tile in tiles {
            let v = tile.value();
            let s = self.shape(v)?;
            let r = s.len();
            let rows: u64 = s[..r - 1].iter().map(|&n| u64::from(n)).product();
            let bytes = rows * u64::from(s[r - 1] + pad) * u64::from(self.elem(v)?.size_bytes());
            sizes.push(bytes.next_multiple_of(16));
        }
        let claim = self.claim_scratch(sizes.iter().sum(), ScalarType::U8)?;
        let mut out = Vec::with_capacity(tiles.len());
        let mut at = 0u32;
        let mut copies = false;
        for (tile, bytes) in tiles.iter().zip(sizes) {
            let part = claim.part(at, bytes as u32);
            at += bytes as u32;
            let s = self.shape(tile.value())?;
            let r = s.len();
            let stride = s[r - 1] + pad;
            match tile {
                Staged::Regs(_, layout, regs) => {
                    let mut strides = vec![u64::from(stride); r];
                    strides[r - 1] = 1;
                    if r == 3 {
                        strides[0] = u64::from(s[1] * stride);
                    }
                    self.write_tile_strided(part, *layout, regs, &strides)?;
                }
                Staged::Global(load) => {
                    self.stage_from_global(
                        super::staged::Dest::Rows { part, stride },
                        *load,
                        false,
                    )?;
                    copies = true;
                }
            }
            out.push((part, stride));
        }
        if copies {
            self.push(Stmt::CpAsyncWaitAll);
        }
        self.scratch_written(claim);
        Ok(out)
    }

    /// The `f32`/`f64` recipe: each register of the result is its accumulator element plus
    /// a chain of fused multiply-adds along `k`.
    fn fma_chain(
        &mut self,
        elem: ScalarType,
        d: Dims,
        [ca, cb]: [Claim; 2],
        out: LayoutId,
        acc: Vec<Value>,
    ) -> R<Vec<Value>> {
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

    /// The `f16`/`bf16` recipe (see the module docs): `a` and `b` come from `sources`, the
    /// accumulator's registers `acc` are in `layouts[2]` (`layouts` are the `mma_layout`
    /// layouts of A, B and C); returns the result's registers.
    fn tensor_core(
        &mut self,
        shape: MmaShape,
        d: Dims,
        layouts: [LayoutId; 3],
        sources: [Source; 2],
        mut c_regs: Vec<Value>,
    ) -> R<Vec<Value>> {
        let [la, lb, lc] = layouts;
        let forms = |operand| {
            mma_layout::fragment_forms(shape, operand)
                .ok_or_else(|| self.internal(format!("{shape:?}'s fragments are not lane-affine")))
        };
        let (fa, fb, fc) = (forms(Operand::A)?, forms(Operand::B)?, forms(Operand::C)?);
        let rank = self.plan.layout(lc).rank();
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
        let [sa, sb] = sources;
        // Each fragment is read once, however many blocks use it.
        let mut fragments: HashMap<(Operand, [u32; 3]), Vec<Value>> = HashMap::new();
        for [batch, row0, col0] in origins {
            let mut c_at = [0usize; 4];
            for (slot, f) in c_at.iter_mut().zip(&fc) {
                *slot = self.register_at(lc, [batch, row0 + f.base.0, col0 + f.base.1])?;
            }
            let mut c = c_at.map(|i| c_regs[i]);
            for k0 in (0..d.k).step_by(mma_layout::block_k(shape) as usize) {
                let mut get = |e: &mut Self,
                               (operand, forms): (Operand, &[LaneAffine]),
                               source: &Source,
                               layout,
                               at|
                 -> R<Vec<Value>> {
                    if let Some(f) = fragments.get(&(operand, at)) {
                        return Ok(f.clone());
                    }
                    let f = e.fragment((operand, shape, forms), source, layout, at)?;
                    fragments.insert((operand, at), f.clone());
                    Ok(f)
                };
                let a = get(self, (Operand::A, &fa), &sa, la, [batch, row0, k0])?;
                let b = get(self, (Operand::B, &fb), &sb, lb, [batch, k0, col0])?;
                let a4: [Value; 4] = a
                    .try_into()
                    .map_err(|_| self.internal("an A fragment of other than 4 registers"))?;
                let b2: [Value; 2] = b
                    .try_into()
                    .map_err(|_| self.internal("a B fragment of other than 2 registers"))?;
                let r = self.b.mma(shape, a4, b2, c);
                c = self.built(r)?;
            }
            for (&i, &v) in c_at.iter().zip(&c) {
                c_regs[i] = v;
            }
        }
        Ok(c_regs)
    }

    /// The register of `layout` (of rank 2, or 3 with a batch axis) at raw offsets
    /// `[batch, row, col]`.
    pub(super) fn register_at(&self, layout: LayoutId, [batch, row, col]: [u32; 3]) -> R<usize> {
        let l = self.plan.layout(layout);
        let rank = l.rank();
        let mut v = vec![0u32; rank];
        if rank == 3 {
            v[0] = batch;
        }
        v[rank - 2] = row;
        v[rank - 1] = col;
        l.register_at(&v)
            .ok_or_else(|| self.internal(format!("no register at {v:?} of an mma operand")))
    }

    /// The fragment registers (`U32`: two 16-bit elements each, or one `tf32`) of `operand`
    /// of `shape` for the 16xK (A) or Kx8 (B) block at `[batch, row, col]` of its tile.
    pub(super) fn fragment(
        &mut self,
        (operand, shape, forms): (Operand, MmaShape, &[LaneAffine]),
        source: &Source,
        layout: LayoutId,
        [batch, row0, col0]: [u32; 3],
    ) -> R<Vec<Value>> {
        match source {
            Source::Packed(packed) => match packed.words.get(&[batch, row0, col0]) {
                Some(words) => Ok(words.clone()),
                None => self.fragment(
                    (operand, shape, forms),
                    &Source::Regs(packed.regs.clone()),
                    layout,
                    [batch, row0, col0],
                ),
            },
            Source::Regs(regs) => forms
                .chunks(shape.elements_per_register())
                .map(|elements| {
                    let mut words = Vec::with_capacity(2);
                    // Each element's bits: 16 (packed in pairs below) or a whole `tf32`.
                    let bits_ty = if shape.elements_per_register() == 2 {
                        ScalarType::U16
                    } else {
                        ScalarType::U32
                    };
                    for f in elements {
                        let at = [batch, row0 + f.base.0, col0 + f.base.1];
                        let extent = self.plan.layout(layout).shape();
                        let r = extent.len();
                        let zero = self.konst(Constant::new(bits_ty, 0));
                        // Past K (not a multiple of the step) a fragment holds zeros, which the
                        // sums skip: where the block's position is past it in every lane...
                        if at[1] >= extent[r - 2] || at[2] >= extent[r - 1] {
                            words.push(zero);
                            continue;
                        }
                        let reg = self.register_at(layout, at)?;
                        let bits = self.bitcast(regs[reg], bits_ty)?;
                        // ...and where only some lanes' positions are (the layout gives them
                        // copies: clamped, or replicas where a lane bit's step passes K).
                        // K is A's columns and B's rows.
                        let (base, per_g, per_t, k) = if operand == Operand::A {
                            (at[2], f.per_g.1, f.per_t.1, extent[r - 1])
                        } else {
                            (at[1], f.per_g.0, f.per_t.0, extent[r - 2])
                        };
                        let word = if base + 7 * per_g + 3 * per_t < k {
                            bits
                        } else {
                            let lane_mask = self.u32c(31);
                            let lane = self.bin(BinaryOp::And, self.tid(), lane_mask)?;
                            let two = self.u32c(2);
                            let g = self.bin(BinaryOp::Shr, lane, two)?;
                            let three = self.u32c(3);
                            let t = self.bin(BinaryOp::And, lane, three)?;
                            let pos = self.lane_offset(base, (g, per_g), (t, per_t))?;
                            let kc = self.u32c(k);
                            let inside = self.cmp(CmpOp::Lt, pos, kc)?;
                            self.select(inside, bits, zero)?
                        };
                        words.push(word);
                    }
                    match words[..] {
                        [lo, hi] => self.pack_halves([lo, hi]),
                        [word] => Ok(word),
                        _ => {
                            Err(self.internal("a fragment register of other than 1 or 2 elements"))
                        }
                    }
                })
                .collect(),
            &Source::Shared {
                claim,
                rows,
                stride,
                plan:
                    LdMatrixPlan {
                        base1,
                        base2,
                        count,
                        trans,
                    },
                transposed,
            } => {
                // Lane l gives the address of row l % 8 of matrix (l / 8) % count; matrix m
                // starts at m's bit 0 times `base1` plus its bit 1 times `base2`.
                let lane_mask = self.u32c(31);
                let lane = self.bin(BinaryOp::And, self.tid(), lane_mask)?;
                let seven = self.u32c(7);
                let r = self.bin(BinaryOp::And, lane, seven)?;
                let three = self.u32c(3);
                let m = self.bin(BinaryOp::Shr, lane, three)?;
                let one = self.u32c(1);
                let bit0 = self.bin(BinaryOp::And, m, one)?;
                let m1 = self.bin(BinaryOp::Shr, m, one)?;
                let bit1 = self.bin(BinaryOp::And, m1, one)?;
                let mut row = r;
                let mut col = self.u32c(0);
                for (bit, base) in [(bit0, base1), (bit1, base2)] {
                    for (slot, k) in [(&mut row, base.0), (&mut col, base.1)] {
                        if k != 0 {
                            let kc = self.u32c(k);
                            let t = self.mul(bit, kc)?;
                            *slot = self.add(*slot, t)?;
                        }
                    }
                }
                // The block's origin in the staged tile's coordinates.
                let (origin, axes) = if transposed {
                    ((col0, row0), (1, 0))
                } else {
                    ((row0, col0), (0, 1))
                };
                // The lane's and warp's part of the address is the same for every block
                // (computed once, by CSE); the block adds a constant.
                let warp_rows = self.warp_offset(layout, axes.0)?;
                let row = self.add(row, warp_rows)?;
                let warp_cols = self.warp_offset(layout, axes.1)?;
                let col = self.add(col, warp_cols)?;
                let stride_c = self.u32c(stride);
                let index = self.mul(row, stride_c)?;
                let index = self.add(index, col)?;
                // A warp of a batch grid reads its own batches (`WarpGrid::batched`).
                let index = if self.plan.layout(layout).rank() == 3 {
                    let warp_batches = self.warp_axis_offset(layout, 0)?;
                    let per_batch = self.u32c(rows * stride);
                    let skip = self.mul(warp_batches, per_batch)?;
                    self.add(index, skip)?
                } else {
                    index
                };
                let lane_addr = self.shared_addr(claim, index, ScalarType::U16)?;
                let block_bytes = ((batch * rows + origin.0) * stride + origin.1) * 2;
                let addr = if block_bytes == 0 {
                    lane_addr
                } else {
                    let offset = self.u32c(block_bytes);
                    self.add(lane_addr, offset)?
                };
                let r = self.b.ldmatrix(count, trans, addr);
                self.built(r)
            }
        }
    }

    /// `value` (an `f16`/`bf16` operand) in fragment layout `layout` of `operand`, with the
    /// packed words of every block this thread holds: made where the operand is defined, so
    /// that a loop reading it packs nothing.
    pub(super) fn packed_fragments(
        &mut self,
        value: TileValue,
        layout: LayoutId,
        operand: Operand,
    ) -> R<Packed> {
        let regs = self.regs_in(value, layout)?;
        let input = self.elem(value)?;
        let shape = MmaShape::for_input(input)
            .ok_or_else(|| self.internal(format!("{input} fragments for a tensor core")))?;
        let forms = mma_layout::fragment_forms(shape, operand)
            .ok_or_else(|| self.internal(format!("{shape:?}'s fragments are not lane-affine")))?;
        let (block_rows, block_cols) = match operand {
            Operand::A => (mma_layout::BLOCK_M, mma_layout::block_k(shape)),
            Operand::B => (mma_layout::block_k(shape), mma_layout::BLOCK_N),
            Operand::C => return Err(self.internal("an accumulator packed as an operand")),
        };
        let first = forms
            .first()
            .map(|f| f.base)
            .ok_or_else(|| self.internal("no operand fragment"))?;
        let l = self.plan.layout(layout);
        let rank = l.rank();
        let mut origins: Vec<[u32; 3]> = (0..l.registers())
            .filter_map(|r| {
                let o = l.register(r);
                let (batch, row, col) =
                    (if rank == 3 { o[0] } else { 0 }, o[rank - 2], o[rank - 1]);
                (row % block_rows == first.0 && col % block_cols == first.1).then_some([
                    batch,
                    row - first.0,
                    col - first.1,
                ])
            })
            .collect();
        origins.sort_unstable();
        origins.dedup();
        let source = Source::Regs(regs.clone());
        let mut words = HashMap::with_capacity(origins.len());
        for origin in origins {
            let w = self.fragment((operand, shape, &forms), &source, layout, origin)?;
            words.insert(origin, w);
        }
        Ok(Packed { regs, words })
    }

    /// `base + g * per_g + t * per_t` (`U32`), the terms with a zero factor left out.
    fn lane_offset(
        &mut self,
        base: u32,
        (g, per_g): (Value, u32),
        (t, per_t): (Value, u32),
    ) -> R<Value> {
        let mut acc = self.u32c(base);
        for (x, k) in [(g, per_g), (t, per_t)] {
            if k != 0 {
                let kc = self.u32c(k);
                let term = self.mul(x, kc)?;
                acc = self.add(acc, term)?;
            }
        }
        Ok(acc)
    }

    /// What this thread's warp adds to the raw coordinates of `layout` (an operand layout)
    /// along its row (`which` 0) or column (1) axis: the sum of the offsets of its warp bits.
    fn warp_offset(&mut self, layout: LayoutId, which: usize) -> R<Value> {
        let axis = self.plan.layout(layout).rank() - 2 + which;
        self.warp_axis_offset(layout, axis)
    }

    /// What this thread's warp adds to the raw coordinate `axis` of `layout`.
    fn warp_axis_offset(&mut self, layout: LayoutId, axis: usize) -> R<Value> {
        let l = self.plan.layout(layout);
        let bits: Vec<(usize, u32)> = (LANE_BITS..l.thread_bit_count())
            .map(|b| (b, l.thread_bit(b)[axis]))
            .filter(|&(_, off)| off != 0)
            .collect();
        let mut acc = self.u32c(0);
        for (b, off) in bits {
            let shift = self.u32c(b as u32);
            let shifted = self.bin(BinaryOp::Shr, self.tid(), shift)?;
            let one = self.u32c(1);
            let bit = self.bin(BinaryOp::And, shifted, one)?;
            let k = self.u32c(off);
            let term = self.mul(bit, k)?;
            acc = self.add(acc, term)?;
        }
        Ok(acc)
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
