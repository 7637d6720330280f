//! `mma` on Hopper's warpgroup tensor cores (`wgmma`) inside the general lowering, for
//! compute capability 9.0 (sm_90a code).
//!
//! `wgmma m64nNk16`'s accumulator is, warp by warp, `mma.sync m16n8k16`'s accumulator
//! fragments repeated over `N / 8` column blocks, the four warps of a warpgroup on 16
//! consecutive rows each; its register `A` is `mma.sync`'s `A` fragment the same way
//! (`cuprum_ir::wgmma::accumulator_position`, `a_register_position`). So where the planner gave
//! an `mma` a row-only warp grid with one 16-row block per warp (`mma_chains`: attention's
//! two products), every warpgroup's registers already are a `wgmma` accumulator and `A`,
//! and the `mma` becomes one `wgmma` per 16 of `K` per warpgroup: `B` (and `A` when it
//! is staged too) read straight from shared memory through matrix descriptors, `A`
//! otherwise from the fragments it is in (an earlier product's registers, or fragments
//! packed before the loop). Nothing around the `mma` changes: the row maxima, the
//! exponentials and the chained operand use the same registers and layouts.
//!
//! The operands read from shared memory are staged loads (`crate::staging`), copied from
//! global memory by `cp.async` into [`SwizzledTile`]s: the tile's contiguous axis in panels
//! of up to 128 bytes, rows one panel-row apart, swizzled as `cuprum_ir::swizzle` defines,
//! which is the layout a descriptor names (`Descriptor::element_address`: K-major for a `B`
//! that is the transpose of a loaded tile (attention's `kᵀ`) and for `A`, MN-major with the
//! transpose flag for a `B` loaded as it is (attention's `v`)). The copies are made visible
//! to the tensor cores' async proxy (`fence.proxy.async`) before the block's barrier.
//!
//! Each `wgmma` adds 16 products of `K` to the accumulator in increasing `K` with the
//! arithmetic `Op::Mma` defines (`cuprum_ir::tensor_core`), as the `mma.sync` chain does:
//! the result is bit for bit the interpreter's. The `wgmma`s of one `mma` are committed as one
//! group and waited for at once, so the accumulator is ready where the `mma`'s result is
//! used, and the shared memory read is free after it.
//!
//! An `A` defined outside the loops that read it (attention's `q`, `Plan::eager_layout`)
//! and read only as the `A` of such `mma`s with `N` of at least [`RESIDENT_MIN_N`], or
//! with the `N` of the kernel's other register-`A` `wgmma` (attention's PV), is
//! written once, where it is defined, into a [`SwizzledTile`] of its own that stays for the
//! rest of the kernel (`Emitter::keep_resident`), and read through descriptors like a
//! staged `A`, as FlashAttention-3 keeps `q` in shared memory. With its fragments held in
//! registers across the loop instead, attention with 128 keys per tile and head dimension
//! 128 (both products reading `A` from registers, `N = 128` each) came out wrong on an H100
//! whenever ptxas optimized (level 1 and above; level 0, `mma.sync` for either product, or
//! `q` read from shared memory all came out right), while 64, 80 and 96 keys per tile, and
//! 128 keys at head dimension 64, were right. A later probe on the H100 (two or more key
//! tiles, `q` in fragments) found the same at 64 keys and head dimension 64 (both `N = 64`),
//! and right results at every other pair of keys per tile and head dimension tried: 64/128,
//! 64/192, 96/64, 96/128, 128/64, 192/64 and 192/192. So a product whose `N` is
//! the other register-`A` product's keeps `q` in shared memory too (at head dimension 64 a
//! tile of 8 KiB). Other narrower products keep the fragments: the tile's shared memory
//! would cost a 64-row block of attention at head dimension 128 a third of its occupancy
//! (2.85 ms with fragments against 3.58 ms resident at 64x64 tiles on the H100).
//!
//! A resident `A` that is a load (or a unit reshape of one) from a tensor nobody writes
//! during the launch (`crate::staging::resident_candidates`) never passes through registers:
//! its tile is copied from global memory into the swizzled tile, sixteen bytes per
//! `cp.async` where it lies inside the tensor, and waited for where the block next enters
//! a loop, after that loop's rings have started their first copies, or first reads it
//! (`Emitter::settle_resident_copies`). Through registers, attention's `q` cost 885
//! instructions a warp before its loop (each element stored on its own) and 6% of the
//! kernel's time on the H100 (ncu, 2026-12-07); copied, 2.9%.
//!
//! The accumulator is a set of `F32` variables the `wgmma`s update in place. Where the
//! `mma`'s result is what the body yields into the innermost loop's variables (attention's
//! output, `acc = mma(p, v, acc)`), those variables are the accumulator
//! (`Emitter::carried_vars_of`), so its registers stay put from one iteration to the next
//! instead of being copied into the `wgmma`'s and back (ptxas kept those copies).

use cuprum_ir::wgmma::{ScaleD, WgmmaA, WgmmaMma, WgmmaShape, WgmmaType, accumulator_position};
use cuprum_ir::{BinaryOp, Constant, ScalarType, Stmt, Swizzle, Value, Var};
use cuprum_tile_ir::TileValue;

use super::matmul::{Dims, Source};
use super::scratch::Claim;
use super::staged::Dest;
use super::{Emitter, R};
use crate::layout::LANE_BITS;
use crate::mma_layout::{self, Operand};
use crate::plan::{LayoutId, Repr};

/// Threads of a warpgroup.
const WARPGROUP: u32 = cuprum_ir::wgmma::WARPGROUP_THREADS;
/// Rows of a warpgroup's share of the product.
const WARPGROUP_ROWS: u32 = cuprum_ir::wgmma::M;
/// The alignment of a swizzled tile: the longest swizzle's period.
pub(super) const SWIZZLE_ALIGN: u32 = 1024;
/// The narrowest `N` of the `mma`s reading a loop-invariant `A` that keeps that `A` in
/// shared memory rather than in fragments (see the module docs).
const RESIDENT_MIN_N: u32 = 128;

/// A 16-bit tile in shared memory as `wgmma`'s descriptors read it (see the module docs):
/// panel `p` holds columns `p * span / 2 ..` of every row, `span` bytes per row, panels one
/// after another; byte offsets within the tile are swizzled with `swizzle`, whose period
/// divides the tile's (1024-byte aligned) start.
#[derive(Clone, Copy, Debug)]
pub(super) struct SwizzledTile {
    pub(super) claim: Claim,
    rows: u32,
    swizzle: Swizzle,
    /// Bytes (`U32`, a multiple of 1024) from the claim's start to the tile's: which buffer
    /// of a `cp.async` ring (`ring`) this iteration's tile is in.
    pub(super) offset: Option<Value>,
}

impl SwizzledTile {
    /// A `[rows, cols]` tile at `claim`, if a swizzle takes its rows.
    pub(super) fn new(claim: Claim, rows: u32, cols: u32) -> Option<SwizzledTile> {
        Some(SwizzledTile {
            claim,
            rows,
            swizzle: Self::swizzle_for(cols)?,
            offset: None,
        })
    }

    /// This tile `offset` bytes (`U32`, a multiple of 1024) further: a ring's other buffer.
    pub(super) fn at(self, offset: Value) -> SwizzledTile {
        SwizzledTile {
            offset: Some(offset),
            ..self
        }
    }

    /// The swizzle for rows of `cols` 16-bit elements: 128-byte panels for rows of a
    /// multiple of 64 elements; `None` for other rows (their `mma`s keep `mma.sync`).
    ///
    /// The 64- and 32-byte swizzles are left out on purpose: tiles of 32- and 16-element
    /// rows laid out in them, which the emulator's model of the descriptors reads as this
    /// module does, came out wrong on the H200 when a `B` read K-major met a register `A`
    /// (the chained Hopper test), while the same layouts read MN-major or as a K-major `A`
    /// came out right. Until a probe pins those modes down, only the layout the H200 has
    /// confirmed everywhere is used.
    fn swizzle_for(cols: u32) -> Option<Swizzle> {
        (cols * 2)
            .is_multiple_of(128)
            .then_some(Swizzle::B128)
            .filter(|_| cols > 0)
    }

    /// Every swizzle a tile of `cols`-element rows could take, for the layout tests.
    #[cfg(test)]
    fn any_swizzle_for(cols: u32) -> Option<Swizzle> {
        match cols * 2 {
            b if b % 128 == 0 => Some(Swizzle::B128),
            64 => Some(Swizzle::B64),
            32 => Some(Swizzle::B32),
            _ => None,
        }
    }

    /// This tile without a ring buffer's offset: buffer 0's.
    pub(super) fn unshifted(self) -> SwizzledTile {
        SwizzledTile {
            offset: None,
            ..self
        }
    }

    /// Bytes from one row of a panel to the next.
    pub(super) fn row_bytes(self) -> u32 {
        self.span()
    }

    /// Bytes of one panel row.
    fn span(self) -> u32 {
        self.swizzle.span_bytes().unwrap_or(16)
    }

    /// Elements of one panel row.
    fn panel_elems(self) -> u32 {
        self.span() / 2
    }

    /// Bytes of one panel.
    pub(super) fn panel_bytes(self) -> u32 {
        self.rows * self.span()
    }

    /// The bytes a `[rows, cols]` tile takes, rounded up to the alignment of the next.
    pub(super) fn bytes(rows: u32, cols: u32) -> u32 {
        (rows * cols * 2).next_multiple_of(SWIZZLE_ALIGN)
    }

    /// The byte offset, before the swizzle, of the 16 bytes of K (elements `k.. k + 8`, `k`
    /// a multiple of 16) that a descriptor for row `row` of a K-major tile starts at.
    fn k_major_start(self, row: u32, k: u32) -> u32 {
        (k / self.panel_elems()) * self.panel_bytes()
            + row * self.span()
            + (k % self.panel_elems()) * 2
    }
}

/// Which operand a swizzled tile is, and how a descriptor names it.
#[derive(Clone, Copy, Debug)]
pub(super) enum Major {
    /// Rows are `M` (or `N`), columns `K`: A as loaded, or B as the transpose of a loaded
    /// tile.
    K,
    /// Rows are `K`, columns `N`: B as loaded (the transpose flag).
    Mn,
}

/// How an `mma` takes `wgmma` ([`Emitter::wgmma_choice`]).
#[derive(Clone, Debug)]
pub(super) struct WgmmaChoice {
    pub(super) shape: WgmmaShape,
    pub(super) d: Dims,
    /// The fragment layouts of `A` and of the accumulator.
    la: LayoutId,
    lc: LayoutId,
    pub(super) b_major: Major,
    /// Where `A` is read from.
    pub(super) a_source: ASource,
    /// The staged loads read from shared memory, `B`'s first: each with its rows and
    /// columns.
    pub(super) tiles: Vec<(TileValue, u32, u32)>,
}

impl WgmmaChoice {
    /// Where each `wgmma` of the product starts along `K`: one per `K` of its shape (16 for
    /// 16-bit inputs).
    pub(super) fn k_steps(&self) -> Vec<u32> {
        (0..self.d.k).step_by(self.shape.ty.k() as usize).collect()
    }
}

/// Where a `wgmma`'s `A` is read from, as [`Emitter::wgmma_choice`] finds it.
#[derive(Clone, Copy, Debug)]
pub(super) enum ASource {
    /// Fragments in registers.
    Fragments,
    /// A staged load's tile, copied where the `mma` stands (the choice's second tile).
    Staged,
    /// A tile kept in shared memory since its definition ([`Emitter::keep_resident`]).
    Resident(SwizzledTile),
}

/// Where `A` comes from.
enum WgA {
    Fragments(Source),
    Shared(SwizzledTile),
}

impl Emitter<'_> {
    /// How `value = mma(a, b, acc)` takes `wgmma` (see the module docs), or `None` where it
    /// does not qualify (the `mma.sync` recipe then lowers it). Asks only the plan and the
    /// staged loads, so a loop may ask it before emitting its body (`ring`).
    pub(super) fn wgmma_choice(
        &self,
        value: TileValue,
        a: TileValue,
        b: TileValue,
        acc: TileValue,
    ) -> R<Option<WgmmaChoice>> {
        let ty = match (self.elem(a)?, self.elem(acc)?) {
            (ScalarType::F16, ScalarType::F32) => WgmmaType::F16,
            (ScalarType::BF16, ScalarType::F32) => WgmmaType::Bf16,
            _ => return Ok(None),
        };
        let (Some([la, _]), Some(Repr::Dist(lc))) =
            (self.plan.mma_inputs(value), self.plan.repr(value).cloned())
        else {
            return Ok(None);
        };
        let (sa, sb) = (self.shape(a)?, self.shape(b)?);
        if sa.len() != 2 || sb.len() != 2 {
            return Ok(None);
        }
        let d = Dims {
            m: sa[0],
            k: sa[1],
            n: sb[1],
        };
        let shape = WgmmaShape { ty, n: d.n };
        let warps = self.plan.threads / 32;
        let qualifies = self.hopper
            && shape.is_valid()
            && d.k.is_multiple_of(ty.k())
            && warps.is_multiple_of(WARPGROUP / 32)
            && d.m == mma_layout::BLOCK_M * warps
            && self.one_row_block_per_warp(la)
            && self.one_row_block_per_warp(lc)
            && self.plan.layout(lc).registers() == d.n as usize / 2;
        if !qualifies {
            return Ok(None);
        }
        // B: a staged load, K-major when it is the transpose of the loaded tile.
        let Some((b_load, b_transposed)) = self.staged_origin(true, b) else {
            return Ok(None);
        };
        let b_major = if b_transposed { Major::K } else { Major::Mn };
        // A: a resident tile, a staged load as it is, or fragments.
        let (a_source, a_load) = match (self.resident.get(&a), self.staged_origin(false, a)) {
            (Some(&tile), _) => (ASource::Resident(tile), None),
            (None, Some((load, false))) => (ASource::Staged, Some(load)),
            (None, Some((_, true))) => return Ok(None),
            (None, None) => (ASource::Fragments, None),
        };
        let mut tiles = Vec::with_capacity(2);
        for load in std::iter::once(b_load).chain(a_load) {
            let s = self.shape(load)?;
            let (rows, cols) = (s[s.len() - 2], s[s.len() - 1]);
            if SwizzledTile::swizzle_for(cols).is_none() {
                return Ok(None);
            }
            tiles.push((load, rows, cols));
        }
        Ok(Some(WgmmaChoice {
            shape,
            d,
            la,
            lc,
            b_major,
            a_source,
            tiles,
        }))
    }

    /// `value = mma(a, b, acc)` as `wgmma`s if it qualifies ([`Emitter::wgmma_choice`]),
    /// `acc` being the accumulator's registers; `None` (nothing emitted) otherwise.
    pub(super) fn try_wgmma(
        &mut self,
        value: TileValue,
        [a, b, acc_value]: [TileValue; 3],
        acc: &[Value],
    ) -> R<Option<Vec<Value>>> {
        let Some(choice) = self.wgmma_choice(value, a, b, acc_value)? else {
            return Ok(None);
        };
        let order = self.accumulator_order(&choice)?;
        let WgmmaChoice {
            shape,
            la,
            b_major,
            a_source,
            ref tiles,
            ..
        } = choice;
        let a_fragments = match a_source {
            ASource::Fragments => Some(self.fragment_source(a, la)?),
            ASource::Staged => None,
            ASource::Resident(_) => {
                self.settle_resident_copies();
                None
            }
        };
        // Tiles with a ring in this loop are read from it (waited for, the next one's copy
        // started); the others are staged here.
        let mut ringed = Vec::with_capacity(tiles.len());
        let mut here = Vec::new();
        for &(load, rows, cols) in tiles {
            let tile = self.ring_tile(load)?;
            if tile.is_none() {
                here.push((load, rows, cols));
            }
            ringed.push(tile);
        }
        let mut fresh = self.stage_swizzled(&here)?.into_iter();
        let staged: Vec<SwizzledTile> = ringed
            .into_iter()
            .map(|t| t.or_else(|| fresh.next()))
            .collect::<Option<_>>()
            .ok_or_else(|| self.internal("a wgmma operand tile was not staged"))?;
        let b_tile = staged[0];
        let a_src = match (a_fragments, a_source) {
            (Some(source), _) => WgA::Fragments(source),
            (None, ASource::Resident(tile)) => WgA::Shared(tile),
            (None, _) => WgA::Shared(staged[1]),
        };
        // The accumulator's variables: the loop's own where the product is what the loop
        // carries (attention's output), so that the registers stay put across iterations;
        // fresh ones otherwise.
        let carried = self
            .carried_vars_of(value)
            .filter(|vs| vs.len() == acc.len());
        let vars: Vec<_> = order
            .iter()
            .map(|&r| {
                let v = match &carried {
                    Some(vs) => vs[r],
                    None => self.var(ScalarType::F32),
                };
                self.write(v, acc[r]);
                v
            })
            .collect();
        let fa = mma_layout::fragment_forms(shape.ty.mma_shape(), Operand::A)
            .ok_or_else(|| self.internal("mma.sync's A fragments are not lane-affine"))?;
        // Row offset of this thread's warpgroup in a staged A (bytes, before the swizzle:
        // whole periods, so the swizzle is unchanged).
        let a_group_offset = match a_src {
            WgA::Shared(tile) => {
                let group = self.u32c(WARPGROUP);
                let g = self.bin(BinaryOp::Div, self.tid(), group)?;
                let bytes = self.u32c(WARPGROUP_ROWS * tile.span());
                Some(self.mul(g, bytes)?)
            }
            WgA::Fragments(_) => None,
        };
        // Every operand register and descriptor is made before the fence: a register a
        // `wgmma` reads must not be written between `wgmma.fence` and it.
        let ks = choice.k_steps();
        let a_descriptors = match &a_src {
            WgA::Shared(tile) => self.tile_descriptors(*tile, Major::K, &ks, a_group_offset)?,
            WgA::Fragments(_) => Vec::new(),
        };
        let b_descriptors = self.tile_descriptors(b_tile, b_major, &ks, None)?;
        let mut steps = Vec::with_capacity(ks.len());
        for (i, &k0) in ks.iter().enumerate() {
            let a_operand = match &a_src {
                WgA::Fragments(source) => {
                    let words = self.fragment(
                        (Operand::A, shape.ty.mma_shape(), &fa),
                        source,
                        la,
                        [0, 0, k0],
                    )?;
                    let words: [Value; 4] = words
                        .try_into()
                        .map_err(|_| self.internal("an A fragment of other than 4 registers"))?;
                    WgmmaA::Registers(words)
                }
                WgA::Shared(_) => WgmmaA::Descriptor(a_descriptors[i]),
            };
            steps.push((a_operand, b_descriptors[i]));
        }
        // The loop's deferred product (`emit::deferred`) keeps its operands for the next
        // iteration; the product it follows issues it (its operands read before the fence).
        if self.defer_product(value, &steps)? {
            return Ok(Some(acc.to_vec()));
        }
        let deferred = self.deferred_operands(value)?;
        self.push(Stmt::WgmmaFence);
        self.push_wgmmas(&choice, steps, &vars);
        self.push(Stmt::WgmmaCommit);
        match deferred {
            Some(operands) => self.issue_deferred_then_wait(operands)?,
            None => self.push(Stmt::WgmmaWait { pending: 0 }),
        }
        for &(load, _, _) in tiles {
            self.release_ring_tile(load)?;
        }
        let mut out = acc.to_vec();
        for (&r, &v) in order.iter().zip(&vars) {
            out[r] = self.read(v)?;
        }
        Ok(Some(out))
    }

    /// One `wgmma` per step of `choice`'s product into accumulator variables `acc`.
    pub(super) fn push_wgmmas(
        &mut self,
        choice: &WgmmaChoice,
        steps: Vec<(WgmmaA, Value)>,
        acc: &[Var],
    ) {
        for (a, b) in steps {
            self.push(Stmt::WgmmaMma(Box::new(WgmmaMma {
                shape: choice.shape,
                a,
                b,
                scale_d: ScaleD::Const(true),
                negate_a: false,
                negate_b: false,
                trans_a: false,
                trans_b: matches!(choice.b_major, Major::Mn),
                acc: acc.to_vec(),
            })));
        }
    }

    /// The accumulator's registers in `wgmma`'s order: register `i` of thread 0 is where
    /// every thread's register `i` is (the layout's warp bits are `wgmma`'s rows).
    pub(super) fn accumulator_order(&self, choice: &WgmmaChoice) -> R<Vec<usize>> {
        (0..choice.d.n / 2)
            .map(|i| {
                let (row, col) = accumulator_position(0, i);
                self.register_at(choice.lc, [0, row, col])
            })
            .collect()
    }

    /// Whether `layout` (rank 2) gives warp `w` rows `16 w ..` of the tile and nothing else
    /// (no copies, no clamped registers): then its four-warp groups are warpgroups' rows.
    fn one_row_block_per_warp(&self, layout: LayoutId) -> bool {
        let l = self.plan.layout(layout);
        l.rank() == 2
            && l.never_clamps()
            && (LANE_BITS..l.thread_bit_count())
                .all(|b| l.thread_bit(b) == [mma_layout::BLOCK_M << (b - LANE_BITS), 0].as_slice())
    }

    /// Stages `tiles` (each a staged load, its rows and columns and swizzle) in one scratch
    /// claim as [`SwizzledTile`]s, and meets the block at one barrier after the copies are
    /// complete and visible to the tensor cores.
    fn stage_swizzled(&mut self, tiles: &[(TileValue, u32, u32)]) -> R<Vec<SwizzledTile>> {
        if tiles.is_empty() {
            return Ok(Vec::new());
        }
        let total: u32 = tiles
            .iter()
            .map(|&(_, rows, cols)| SwizzledTile::bytes(rows, cols))
            .sum();
        let claim = self.claim_scratch_aligned(u64::from(total), SWIZZLE_ALIGN)?;
        let mut out = Vec::with_capacity(tiles.len());
        let mut at = 0;
        for &(load, rows, cols) in tiles {
            let bytes = SwizzledTile::bytes(rows, cols);
            let tile = SwizzledTile::new(claim.part(at, bytes), rows, cols)
                .ok_or_else(|| self.internal("a staged tile no swizzle takes"))?;
            at += bytes;
            self.stage_from_global(Dest::Swizzled(tile), load, false)?;
            out.push(tile);
        }
        self.push(Stmt::CpAsyncWaitAll);
        self.push(Stmt::FenceProxyAsync {
            space: cuprum_ir::ProxyFenceSpace::SharedCta,
        });
        self.scratch_written(claim);
        Ok(out)
    }

    /// The descriptor of the 16 of `K` from `k0` of `tile`, stored `major`; `rows`: bytes to
    /// add for this thread's rows (a warpgroup's share of a K-major `A`).
    fn tile_descriptor(
        &mut self,
        tile: SwizzledTile,
        major: Major,
        k0: u32,
        rows: Option<Value>,
    ) -> R<Value> {
        let (start, lbo) = Self::descriptor_start(tile, major, k0);
        let mut start = self.u32c(start);
        for extra in [rows, tile.offset].into_iter().flatten() {
            start = self.add(start, extra)?;
        }
        let addr = self.shared_addr(tile.claim, start, ScalarType::U8)?;
        self.descriptor(addr, lbo, 8 * tile.span(), tile.swizzle)
    }

    /// The descriptors of the 16s of `K` from each of `ks` of `tile` (as
    /// [`Emitter::tile_descriptor`] makes each): the first made whole, each other one the
    /// first plus its distance in 16-byte units, which the start address field (bits 0..14,
    /// the address over 16) takes without a carry, shared addresses being below 2^18.
    fn tile_descriptors(
        &mut self,
        tile: SwizzledTile,
        major: Major,
        ks: &[u32],
        rows: Option<Value>,
    ) -> R<Vec<Value>> {
        let Some(&first) = ks.first() else {
            return Ok(Vec::new());
        };
        let base = self.tile_descriptor(tile, major, first, rows)?;
        let mut out = Vec::with_capacity(ks.len());
        for (&k0, offset) in ks.iter().zip(Self::descriptor_offsets(tile, major, ks)) {
            out.push(match offset {
                Some(d) => self.descriptor_plus(base, d)?,
                None => self.tile_descriptor(tile, major, k0, rows)?,
            });
        }
        Ok(out)
    }

    /// `U64`: descriptor `base` moved on by `offset` (in the 16 bytes its start address
    /// counts; `base` itself for 0).
    pub(super) fn descriptor_plus(&mut self, base: Value, offset: u64) -> R<Value> {
        if offset == 0 {
            return Ok(base);
        }
        let offset = self.konst(Constant::u64(offset));
        self.add(base, offset)
    }

    /// For each 16 of `K` from `ks` in `tile` stored `major`: its descriptor as the first
    /// one's plus a constant (a descriptor's start address counts 16 bytes), where it is
    /// one; `None` where the step needs a descriptor of its own.
    pub(super) fn descriptor_offsets(
        tile: SwizzledTile,
        major: Major,
        ks: &[u32],
    ) -> Vec<Option<u64>> {
        let Some(&first) = ks.first() else {
            return Vec::new();
        };
        let (from, _) = Self::descriptor_start(tile, major, first);
        ks.iter()
            .map(|&k0| {
                let (at, _) = Self::descriptor_start(tile, major, k0);
                at.checked_sub(from)
                    .filter(|d| d % 16 == 0)
                    .map(|d| u64::from(d / 16))
            })
            .collect()
    }

    /// The byte offset (before the swizzle) in `tile` of the 16 of `K` from `k0`, and the
    /// descriptor's leading byte offset, stored `major`.
    fn descriptor_start(tile: SwizzledTile, major: Major, k0: u32) -> (u32, u32) {
        match major {
            // K-major: 8-row groups one period apart; the leading offset is unused.
            Major::K => (tile.k_major_start(0, k0), 16),
            // MN-major: rows are K; panels (of N) one panel apart.
            Major::Mn => (k0 * tile.span(), tile.panel_bytes()),
        }
    }

    /// The swizzled byte offset (`U32`) of element `(row, col)` (`U32`) in `tile`, from its
    /// claim's start.
    pub(super) fn swizzled_offset(
        &mut self,
        tile: SwizzledTile,
        row: Value,
        col: Value,
    ) -> R<Value> {
        let pe = self.u32c(tile.panel_elems());
        let panel = self.bin(BinaryOp::Div, col, pe)?;
        let within = self.bin(BinaryOp::Rem, col, pe)?;
        let pb = self.u32c(tile.panel_bytes());
        let off = self.mul(panel, pb)?;
        let span = self.u32c(tile.span());
        let down = self.mul(row, span)?;
        let off = self.add(off, down)?;
        let two = self.u32c(2);
        let across = self.mul(within, two)?;
        let off = self.add(off, across)?;
        // `Swizzle::apply`: the 128-byte line (bits 7..10) into the 16-byte chunk bits.
        let seven = self.u32c(7);
        let line = self.bin(BinaryOp::Shr, off, seven)?;
        let mask = self.u32c(7 & tile.swizzle.chunk_mask());
        let line = self.bin(BinaryOp::And, line, mask)?;
        let four = self.u32c(4);
        let flip = self.bin(BinaryOp::Shl, line, four)?;
        let off = self.bin(BinaryOp::Xor, off, flip)?;
        match tile.offset {
            Some(buffer) => self.add(off, buffer),
            None => Ok(off),
        }
    }

    /// Whether tensor-core operand `value`, defined outside the loops that read it
    /// (`Plan::eager_layout`), is read only as the `A` of `mma`s that take `wgmma` with `N`
    /// of at least [`RESIDENT_MIN_N`], or with the `N` of another `wgmma` of the kernel that
    /// reads its `A` from registers, and has rows a swizzle takes: then it is kept in shared
    /// memory ([`Emitter::keep_resident`]).
    pub(super) fn stays_resident(&self, value: TileValue) -> R<bool> {
        if !self.hopper {
            return Ok(false);
        }
        let shape = self.shape(value)?;
        if shape.len() != 2 || SwizzledTile::swizzle_for(shape[1]).is_none() {
            return Ok(false);
        }
        // Its reads as an `A` (and as nothing else of the same `mma`): all of its reads.
        let mut users = Vec::new();
        self.kernel.body.visit(&mut |s| {
            if let cuprum_tile_ir::Stmt::Def {
                value: v,
                op: cuprum_tile_ir::Op::Mma { a, b, acc },
            } = s
                && *a == value
                && *b != value
                && *acc != value
            {
                users.push((*v, *b, *acc));
            }
        });
        let reads = crate::staging::use_counts(&self.kernel.body)
            .get(&value)
            .copied()
            .unwrap_or(0);
        if users.is_empty() || users.len() != reads {
            return Ok(false);
        }
        // The widths of the other `wgmma`s that read `A` from registers (attention's PV).
        let mut others = Vec::new();
        let mut found = Ok(());
        self.kernel.body.visit(&mut |s| {
            if let cuprum_tile_ir::Stmt::Def {
                value: v,
                op: cuprum_tile_ir::Op::Mma { a, b, acc },
            } = s
                && *a != value
                && found.is_ok()
            {
                match self.wgmma_choice(*v, *a, *b, *acc) {
                    Ok(Some(c)) if matches!(c.a_source, ASource::Fragments) => others.push(c.d.n),
                    Ok(_) => {}
                    Err(e) => found = Err(e),
                }
            }
        });
        found?;
        for (v, b, acc) in users {
            match self.wgmma_choice(v, value, b, acc)? {
                Some(choice) if choice.d.n >= RESIDENT_MIN_N || others.contains(&choice.d.n) => {}
                _ => return Ok(false),
            }
        }
        Ok(true)
    }

    /// Writes `value` (see [`Emitter::stays_resident`]) into a swizzled tile of its own,
    /// which no later claim of shared memory reuses, and makes it visible to the tensor
    /// cores: its `mma`s read it from there. A load copied there from global memory (see
    /// the module docs) is waited for later.
    pub(super) fn keep_resident(&mut self, value: TileValue, fragments: LayoutId) -> R<()> {
        let shape = self.shape(value)?;
        let (rows, cols) = (shape[0], shape[1]);
        let claim = self.reserve_shared(SwizzledTile::bytes(rows, cols), SWIZZLE_ALIGN)?;
        let tile = SwizzledTile::new(claim, rows, cols)
            .ok_or_else(|| self.internal("a resident tile no swizzle takes"))?;
        self.resident.insert(value, tile);
        if let Some(load) = self.resident_copy_of(value) {
            // Copied straight from global memory; waited for where the block next enters
            // a loop or the tile is first read, so that the copies overlap what comes
            // between (a ring's first copies among it).
            self.stage_from_global(Dest::Swizzled(tile), load, false)?;
            self.resident_copies_pending = true;
            return Ok(());
        }
        let (layout, regs) = match self.get(value)? {
            super::Lv::Dist { layout, regs } => (layout, regs),
            _ => (fragments, self.regs_in(value, fragments)?),
        };
        self.write_tile_swizzled(tile, layout, &regs)?;
        self.push(Stmt::FenceProxyAsync {
            space: cuprum_ir::ProxyFenceSpace::SharedCta,
        });
        self.barrier();
        Ok(())
    }

    /// Where resident tiles copied from global memory ([`Emitter::keep_resident`]) are
    /// still in flight: waits for the copies, makes them visible to the tensor cores and
    /// meets the block (every thread copied part of each tile).
    pub(super) fn settle_resident_copies(&mut self) {
        if !self.resident_copies_pending {
            return;
        }
        self.resident_copies_pending = false;
        self.push(Stmt::CpAsyncWaitAll);
        self.push(Stmt::FenceProxyAsync {
            space: cuprum_ir::ProxyFenceSpace::SharedCta,
        });
        self.barrier();
    }

    /// Writes a tile's registers (`layout`) into `tile`'s swizzled panels.
    pub(super) fn write_tile_swizzled(
        &mut self,
        tile: SwizzledTile,
        layout: LayoutId,
        regs: &[Value],
    ) -> R<()> {
        let primary = self.primary(layout);
        let rank = self.plan.layout(layout).rank();
        self.if_some(primary, |e| {
            for (r, &v) in regs.iter().enumerate() {
                let row = e.coord(layout, r, rank - 2)?;
                let col = e.coord(layout, r, rank - 1)?;
                let off = e.swizzled_offset(tile, row, col)?;
                let addr = e.shared_addr(tile.claim, off, ScalarType::U8)?;
                let valid = e.valid(layout, r)?;
                e.if_some(valid, |e| e.shared_store_at(addr, v))?;
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use cuprum_ir::MmaShape;
    use cuprum_ir::wgmma::{Descriptor, Major as IrMajor, accumulator_position};

    use super::*;

    #[test]
    fn wgmma_accumulators_are_mma_sync_fragments_over_column_blocks() {
        for thread in 0..WARPGROUP {
            let (lane, warp) = (thread % 32, thread / 32);
            for reg in 0..128u32 {
                let (r, c) = MmaShape::c_position(lane, (reg % 4) as usize);
                let want = (16 * warp + r as u32, 8 * (reg / 4) + c as u32);
                assert_eq!(accumulator_position(thread, reg), want, "{thread} {reg}");
            }
        }
    }

    /// The staged layout is the one the descriptors name, for every element of every
    /// tile shape the recipe takes.
    #[test]
    fn swizzled_tiles_are_what_descriptors_read() {
        for (rows, cols) in [
            (64, 128),
            (128, 64),
            (32, 32),
            (16, 16),
            (64, 256),
            (48, 64),
        ] {
            let swizzle = SwizzledTile::any_swizzle_for(cols).expect("a swizzle");
            let tile = SwizzledTile {
                claim: Claim::for_tests(0, SwizzledTile::bytes(rows, cols)),
                rows,
                swizzle,
                offset: None,
            };
            let stored = |r: u32, c: u32| {
                let off = (c / tile.panel_elems()) * tile.panel_bytes()
                    + r * tile.span()
                    + (c % tile.panel_elems()) * 2;
                swizzle.apply(off)
            };
            for k0 in (0..cols).step_by(16) {
                // K-major: rows are M (or N), columns K.
                let d = Descriptor {
                    start: tile.k_major_start(0, k0),
                    leading_byte_offset: 16,
                    stride_byte_offset: 8 * tile.span(),
                    base_offset: 0,
                    swizzle,
                };
                for mn in 0..rows {
                    for k in 0..16 {
                        let got = d.element_address(IrMajor::K, 2, mn, k);
                        assert_eq!(got, stored(mn, k0 + k), "{rows}x{cols} K-major {mn},{k}");
                    }
                }
            }
            for k0 in (0..rows).step_by(16) {
                if k0 + 16 > rows {
                    continue;
                }
                // MN-major: rows are K, columns N.
                let d = Descriptor {
                    start: k0 * tile.span(),
                    leading_byte_offset: tile.panel_bytes(),
                    stride_byte_offset: 8 * tile.span(),
                    base_offset: 0,
                    swizzle,
                };
                for n in 0..cols {
                    for k in 0..16 {
                        let got = d.element_address(IrMajor::Mn, 2, n, k);
                        assert_eq!(got, stored(k0 + k, n), "{rows}x{cols} MN-major {n},{k}");
                    }
                }
            }
        }
    }
}
