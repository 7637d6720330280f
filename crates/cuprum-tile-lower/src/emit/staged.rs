//! Staged loads (`crate::staging`): a load that only feeds tensor-core operands read with
//! `ldmatrix` is not made where it stands; the `mma` that reads it copies its tile from
//! global memory into the shared memory it stages operands in, sixteen bytes per
//! `cp.async` where the tile lies inside the tensor and its rows are 16-byte aligned, and
//! through registers otherwise (the tile's edge, padding, strided views): the same bytes
//! either way, so the `mma` reads the same fragments.

use cuprum_ir::matrix::CpAsyncCache;
use cuprum_ir::{BinaryOp, CmpOp, ScalarType, Stmt, Value};
use cuprum_tile_ir::TileValue;

use super::scratch::Claim;
use super::wgmma_mma::SwizzledTile;
use super::{Emitter, Lv, R};
use crate::plan::Repr;

/// Bytes of one `cp.async`.
const COPY_BYTES: u32 = 16;

/// Where a staged tile goes in shared memory.
#[derive(Clone, Copy, Debug)]
pub(super) enum Dest {
    /// Row-major, rows `stride` elements apart (read with `ldmatrix`).
    Rows { part: Claim, stride: u32 },
    /// In `wgmma`'s swizzled panels.
    Swizzled(SwizzledTile),
}

/// Rows of a 128-byte swizzle's period: rows this many apart have their 16-byte chunks in
/// the same order.
const SWIZZLE_PERIOD_ROWS: u32 = 8;

/// The shape of a staged tile's copy: `rows` of `cols` elements of `ty`, `per_copy`
/// elements per `cp.async`.
#[derive(Clone, Copy, Debug)]
pub(super) struct CopyShape {
    pub(super) rows: u32,
    pub(super) cols: u32,
    pub(super) per_copy: u32,
    pub(super) ty: ScalarType,
}

/// Where one thread's `cp.async`s of a staged tile go and come from. Copy `k` of thread
/// `t` moves chunk `t + k * threads` of the tile; when the threads cover whole rows per
/// round, every copy of a thread has the same column and the next copy is a fixed number
/// of rows further, in the tensor and in shared memory (where the swizzle repeats every
/// [`SWIZZLE_PERIOD_ROWS`]). So the addresses are computed once (for a ring, once before
/// its loop) and each copy adds a step, instead of dividing, multiplying and swizzling
/// per copy and per iteration.
#[derive(Clone, Copy, Debug)]
pub(super) struct CopyPattern {
    /// The first copy's shared address (`U32`), without a ring buffer's offset.
    dst: Value,
    /// Bytes between successive copies' shared addresses.
    dst_step: u32,
    /// The first copy's source: bytes (`U64`) from the tile's first element.
    src: Value,
    /// Bytes (`U64`) between successive copies' sources.
    src_step: Value,
}

impl Emitter<'_> {
    /// For a staged load: nothing is loaded yet; its registers are placeholders no use
    /// reads (every use stages it). `None` for other loads.
    /// The same for a load copied straight into the resident tile it makes (see
    /// [`Emitter::keep_resident`]).
    pub(super) fn defer_staged_load(&mut self, value: TileValue, pad: Value) -> R<Option<Lv>> {
        if !self.staged_loads.contains(&value) && !self.copied_resident(value)? {
            return Ok(None);
        }
        let Repr::Dist(layout) = self.repr(value)? else {
            return Err(self.internal("a staged load planned without registers"));
        };
        let regs = vec![pad; self.plan.layout(layout).registers()];
        Ok(Some(Lv::Dist { layout, regs }))
    }

    /// Whether load `value` is not made where it stands but copied into the shared memory
    /// of the resident `A` operand it makes, from global memory (`cp.async` where the tile
    /// lies inside the tensor), without passing through registers.
    fn copied_resident(&mut self, value: TileValue) -> R<bool> {
        let Some(&tile) = self.resident_candidates.get(&value) else {
            return Ok(false);
        };
        let a = matches!(
            self.plan.eager_layout(tile),
            Some((_, crate::mma_layout::Operand::A))
        );
        if !a || !self.stays_resident(tile)? {
            return Ok(false);
        }
        self.resident_copies.insert(tile, value);
        Ok(true)
    }

    /// The load copied into resident tile `tile`'s shared memory, if one was.
    pub(super) fn resident_copy_of(&self, tile: TileValue) -> Option<TileValue> {
        self.resident_copies.get(&tile).copied()
    }

    /// The staged load whose tile operand `v` is (operand `B` may be its transpose:
    /// `true` then), if it is one.
    pub(super) fn staged_origin(&self, is_b: bool, v: TileValue) -> Option<(TileValue, bool)> {
        let (tile, transposed) = match self.transposed_source(v) {
            Some(source) if is_b => (source, true),
            _ => (v, false),
        };
        let load = match self.definition(tile) {
            Some(cuprum_tile_ir::Op::Reshape { value, .. }) => *value,
            _ => tile,
        };
        self.staged_loads
            .contains(&load)
            .then_some((load, transposed))
    }

    /// The tile whose transpose `v` is, when `v` is a rank-2 permutation `[1, 0]`.
    pub(super) fn transposed_source(&self, v: TileValue) -> Option<TileValue> {
        match self.definition(v) {
            Some(cuprum_tile_ir::Op::Permute { value, perm }) if perm[..] == [1, 0] => Some(*value),
            _ => None,
        }
    }

    /// The operation that defines `v`, if a `Def` does.
    fn definition(&self, v: TileValue) -> Option<&cuprum_tile_ir::Op> {
        self.defs.get(&v)
    }

    /// Writes staged load `load`'s tile to `dest` (the caller waits for the copies and
    /// meets the block at a barrier).
    /// `keep_pattern`: compute the copies' pattern here, where the code dominates a ring's
    /// loop, and keep it for the loop's copies (`ring`).
    pub(super) fn stage_from_global(
        &mut self,
        dest: Dest,
        load: TileValue,
        keep_pattern: bool,
    ) -> R<()> {
        // From the load's definition, not from where it was met: a ring (`ring`) copies a
        // loop's first tile before the loop.
        let Some(cuprum_tile_ir::Op::Load { view, padding }) = self.definition(load).cloned()
        else {
            return Err(self.internal("a staged value that is not a load"));
        };
        let ty = self.elem(load)?;
        let pad = padding
            .to_constant(ty)
            .ok_or_else(|| self.unsupported(format!("the padding {padding} cannot be a {ty}")))?;
        let pad = self.konst(pad);
        let eviction = self.evictions.get(&load).copied().unwrap_or_default();
        let Repr::Dist(layout) = self.repr(load)? else {
            return Err(self.internal("a staged load planned without registers"));
        };
        let ty = self.elem(load)?;
        let place = self.placement(load, &view)?;
        let rank = place.shape.len();
        let (rows, cols) = (place.shape[rank - 2], place.shape[rank - 1]);
        let per_copy = COPY_BYTES / ty.size_bytes();
        let shape = CopyShape {
            rows,
            cols,
            per_copy,
            ty,
        };
        if keep_pattern {
            let strides = self.fast_strides(place.tensor, per_copy)?;
            if let Some(pattern) = self.new_copy_pattern(dest, shape, strides[rank - 2])? {
                self.copy_patterns.insert(load, pattern);
            }
        }
        let inside = self.tile_inside(&place, true)?;
        let aligned = self.runs_aligned(place.tensor, per_copy)?;
        let copies = |e: &mut Self, _w: u32| -> R<()> {
            let strides = e.fast_strides(place.tensor, per_copy)?;
            let base_index = e.tensor_index(place.tensor, &place.origin, &strides)?;
            let base = e.tensor(place.tensor)?.base;
            if let Some(pattern) = e.copy_pattern(load, dest, shape, strides[rank - 2])? {
                let first = e.element_address(base, base_index, ty)?;
                return e.patterned_copies(dest, shape, pattern, first);
            }
            let per_row = cols / per_copy;
            let total = rows * per_row;
            let threads = e.plan.threads;
            for first in (0..total).step_by(threads as usize) {
                let k = e.u32c(first);
                let c = e.add(e.tid(), k)?;
                let copy = |e: &mut Self| -> R<()> {
                    let pr = e.u32c(per_row);
                    let row = e.bin(BinaryOp::Div, c, pr)?;
                    let chunk = e.bin(BinaryOp::Rem, c, pr)?;
                    let pc = e.u32c(per_copy);
                    let col = e.mul(chunk, pc)?;
                    let row64 = e.cast(row, ScalarType::I64)?;
                    let col64 = e.cast(col, ScalarType::I64)?;
                    let down = e.mul(row64, strides[rank - 2])?;
                    let i = e.add(base_index, down)?;
                    let i = e.add(i, col64)?;
                    let src = e.element_address(base, i, ty)?;
                    let dst = e.staged_element_addr(dest, row, col, ty)?;
                    e.push(Stmt::CpAsync {
                        cache: CpAsyncCache::Cg,
                        size: COPY_BYTES,
                        dst,
                        src,
                        src_size: None,
                    });
                    Ok(())
                };
                if first + threads <= total {
                    copy(e)?;
                } else {
                    let n = e.u32c(total);
                    let live = e.cmp(CmpOp::Lt, c, n)?;
                    e.if_some(Some(live), copy)?;
                }
            }
            Ok(())
        };
        let through_registers = |e: &mut Self| -> R<()> {
            let regs = e.load_tile(&place, layout, ty, pad, true, eviction)?;
            match dest {
                Dest::Rows { part, stride } => {
                    let mut strides = vec![0u64; rank];
                    strides[rank - 2] = u64::from(stride);
                    strides[rank - 1] = 1;
                    e.write_tile_strided(part, layout, &regs, &strides)
                }
                Dest::Swizzled(tile) => e.write_tile_swizzled(tile, layout, &regs),
            }
        };
        self.inside_or_edge(inside, aligned, per_copy, &copies, through_registers)?;
        Ok(())
    }

    /// The pattern of this thread's copies of staged load `load` into `dest`: the one a ring
    /// computed before its loop (`ring`), else one computed here; `None` where the copies
    /// follow none (see [`CopyPattern`]).
    fn copy_pattern(
        &mut self,
        load: TileValue,
        dest: Dest,
        shape: CopyShape,
        row_stride: Value,
    ) -> R<Option<CopyPattern>> {
        if let Some(&pattern) = self.copy_patterns.get(&load) {
            return Ok(Some(pattern));
        }
        self.new_copy_pattern(dest, shape, row_stride)
    }

    /// Computes the pattern of this thread's copies of a `shape` tile into `dest` (any ring
    /// buffer offset of `dest` left out), rows `row_stride` elements (`I64`) apart in the
    /// tensor; `None` where the copies follow none.
    pub(super) fn new_copy_pattern(
        &mut self,
        dest: Dest,
        shape: CopyShape,
        row_stride: Value,
    ) -> R<Option<CopyPattern>> {
        let per_row = shape.cols / shape.per_copy;
        let threads = self.plan.threads;
        if !threads.is_multiple_of(per_row) {
            return Ok(None);
        }
        let rows_per_round = threads / per_row;
        let dst_step = match dest {
            Dest::Rows { stride, .. } => rows_per_round * stride * shape.ty.size_bytes(),
            // Rows a multiple of the swizzle's period apart keep their chunks' order.
            Dest::Swizzled(tile) if rows_per_round.is_multiple_of(SWIZZLE_PERIOD_ROWS) => {
                rows_per_round * tile.row_bytes()
            }
            Dest::Swizzled(_) => return Ok(None),
        };
        let dest = match dest {
            Dest::Swizzled(tile) => Dest::Swizzled(tile.unshifted()),
            rows => rows,
        };
        let pr = self.u32c(per_row);
        let tid = self.tid();
        let row = self.bin(BinaryOp::Div, tid, pr)?;
        let chunk = self.bin(BinaryOp::Rem, tid, pr)?;
        let pc = self.u32c(shape.per_copy);
        let col = self.mul(chunk, pc)?;
        let dst = self.staged_element_addr(dest, row, col, shape.ty)?;
        let row64 = self.cast(row, ScalarType::I64)?;
        let col64 = self.cast(col, ScalarType::I64)?;
        let down = self.mul(row64, row_stride)?;
        let at = self.add(down, col64)?;
        let src = self.element_bytes(at, shape.ty)?;
        let step = self.i64c(i64::from(rows_per_round));
        let step = self.mul(step, row_stride)?;
        let src_step = self.element_bytes(step, shape.ty)?;
        Ok(Some(CopyPattern {
            dst,
            dst_step,
            src,
            src_step,
        }))
    }

    /// The copies of a `shape` tile whose first element is at `first` (`U64`) into `dest`
    /// along `pattern`: per copy, one addition to the source address and a constant offset
    /// from the destination's.
    fn patterned_copies(
        &mut self,
        dest: Dest,
        shape: CopyShape,
        pattern: CopyPattern,
        first: Value,
    ) -> R<()> {
        let per_row = shape.cols / shape.per_copy;
        let total = shape.rows * per_row;
        let threads = self.plan.threads;
        let mut dst = pattern.dst;
        if let Dest::Swizzled(SwizzledTile {
            offset: Some(buffer),
            ..
        }) = dest
        {
            dst = self.add(dst, buffer)?;
        }
        let mut src = self.add(first, pattern.src)?;
        for (k, first_chunk) in (0..total).step_by(threads as usize).enumerate() {
            let k = u32::try_from(k).map_err(|_| self.internal("too many copies"))?;
            if k > 0 {
                src = self.add(src, pattern.src_step)?;
            }
            let off = self.u32c(k * pattern.dst_step);
            let at = self.add(dst, off)?;
            let copy = |e: &mut Self| -> R<()> {
                e.push(Stmt::CpAsync {
                    cache: CpAsyncCache::Cg,
                    size: COPY_BYTES,
                    dst: at,
                    src,
                    src_size: None,
                });
                Ok(())
            };
            if first_chunk + threads <= total {
                copy(self)?;
            } else {
                let c = self.u32c(first_chunk);
                let c = self.add(self.tid(), c)?;
                let n = self.u32c(total);
                let live = self.cmp(CmpOp::Lt, c, n)?;
                self.if_some(Some(live), copy)?;
            }
        }
        Ok(())
    }

    /// The shared address (`U32`) of element `(row, col)` (`U32`) of a staged tile of `ty`
    /// at `dest`.
    fn staged_element_addr(
        &mut self,
        dest: Dest,
        row: Value,
        col: Value,
        ty: ScalarType,
    ) -> R<Value> {
        match dest {
            Dest::Rows { part, stride } => {
                let s = self.u32c(stride);
                let at = self.mul(row, s)?;
                let at = self.add(at, col)?;
                self.shared_addr(part, at, ty)
            }
            Dest::Swizzled(tile) => {
                let at = self.swizzled_offset(tile, row, col)?;
                self.shared_addr(tile.claim, at, ScalarType::U8)
            }
        }
    }
}
