//! The loops that visit a chain's elements, written for memory bandwidth.
//!
//! * [`grid_stride`]: the grid (sized to the device, not to the data) strides over `[0, n)`.
//!   Each iteration a thread takes `k` elements whose indices are all in range, so their
//!   loads need no bounds test, in runs of `vec` consecutive elements that start at a
//!   multiple of `vec` (so one 16-byte vector access can move a run of four `f32`s): with
//!   [`Layout::WarpStrided`] a warp's `32 k` elements are consecutive and lane `l` takes the
//!   runs at `l vec`, `(32 + l) vec`, ... (each warp-wide access reads one contiguous span);
//!   with [`Layout::Consecutive`] a thread's `k` elements are consecutive. The fewer than
//!   `32 k` (or `k`) elements left at the end go through a scalar grid-stride tail loop.
//!   With `k = 1` (long chains, see `kernels::UNROLLED_NODES`) the scalar loop is all there
//!   is, so the chain is lowered once.
//! * [`chunked_tiles`]: each block owns one contiguous chunk and walks it tile by tile, in
//!   order, with a block-uniform trip count (so tile bodies may contain barriers). Used where
//!   order across blocks matters: `filter` compaction.

use cuprum_ir::{BinaryOp, CmpOp, Dim, Special, Value};

use super::{Gen, R};
use crate::device::Layout;

/// The elements one thread handles at once, all in range: runs of `vec` consecutive
/// elements, the runs `stride` elements apart. Element `p` of the group is at
/// `idxs[0] + (p / vec) * stride + p % vec`; each run's first index is a multiple of `vec`.
pub(crate) struct Group {
    /// Their indices (`U64`).
    pub(crate) idxs: Vec<Value>,
    /// Elements per run (1, 2 or 4; 1 means no vector accesses).
    pub(crate) vec: u32,
    /// The distance in elements between the starts of consecutive runs.
    pub(crate) stride: u64,
}

impl Group {
    fn one(idx: Value) -> Self {
        Self {
            idxs: vec![idx],
            vec: 1,
            stride: 1,
        }
    }

    /// How far element `p` lies from the group's first element, in elements.
    pub(crate) fn offset(&self, p: usize) -> u64 {
        let vec = self.vec.max(1) as usize;
        (p / vec) as u64 * self.stride + (p % vec) as u64
    }
}

/// A visitor of element groups.
pub(crate) type Visit<'a> = dyn FnMut(&mut Gen, &Group) -> R<()> + 'a;

/// The block and grid coordinates every traversal needs, as `U64`.
pub(crate) struct Coords {
    pub(crate) tid: Value,
    pub(crate) bid: Value,
    /// `blockIdx.x * blockDim.x + threadIdx.x`.
    pub(crate) gtid: Value,
    /// `gridDim.x * blockDim.x`.
    pub(crate) gsize: Value,
    /// `gridDim.x`.
    pub(crate) gdim: Value,
}

impl Coords {
    pub(crate) fn new(g: &mut Gen) -> R<Self> {
        let wide = |g: &mut Gen, s: Special| {
            let v = g.special(s)?;
            g.cast(v, cuprum_ir::ScalarType::U64)
        };
        let tid = wide(g, Special::ThreadIdx(Dim::X))?;
        let bid = wide(g, Special::BlockIdx(Dim::X))?;
        let bdim = wide(g, Special::BlockDim(Dim::X))?;
        let gdim = wide(g, Special::GridDim(Dim::X))?;
        let base = g.mul(bid, bdim)?;
        let gtid = g.add(base, tid)?;
        let gsize = g.mul(gdim, bdim)?;
        Ok(Self {
            tid,
            bid,
            gtid,
            gsize,
            gdim,
        })
    }
}

/// `for (i = start; i < end; i += step) visit(i)`, with `i` a `U64` variable.
pub(crate) fn strided_loop(
    g: &mut Gen,
    start: Value,
    end: Value,
    step: Value,
    visit: &mut dyn FnMut(&mut Gen, Value) -> R<()>,
) -> R<()> {
    let var = g.var("i", start);
    g.loop_(|g| {
        let i = g.read(var)?;
        let more = g.cmp(CmpOp::Lt, i, end)?;
        g.break_unless(more);
        visit(g, i)?;
        let next = g.add(i, step)?;
        g.write(var, next);
        Ok(())
    })
}

/// Visits every index of `[0, n)` exactly once across the grid (see the module docs).
/// `k` and `vec` are powers of two, `vec <= k`.
pub(crate) fn grid_stride(
    g: &mut Gen,
    c: &Coords,
    n: Value,
    k: u32,
    vec: u32,
    layout: Layout,
    visit: &mut Visit,
) -> R<()> {
    if k <= 1 {
        // One element per thread and iteration: no runs, no tail, the chain lowered once.
        return strided_loop(g, c.gtid, n, c.gsize, &mut |g, i| visit(g, &Group::one(i)));
    }
    let vec = vec.clamp(1, k);
    let shift = |g: &mut Gen, v: Value, bits: u32| {
        let s = g.u32(bits);
        g.bin(BinaryOp::Shr, v, s)
    };
    let (unit_log2, first, step, lane) = match layout {
        Layout::Consecutive => (k.ilog2(), c.gtid, c.gsize, None),
        Layout::WarpStrided => {
            let warp = shift(g, c.gtid, 5)?;
            let warps = shift(g, c.gsize, 5)?;
            let lane = g.special(Special::LaneId)?;
            let lane = g.cast(lane, cuprum_ir::ScalarType::U64)?;
            (k.ilog2() + 5, warp, warps, Some(lane))
        }
    };
    let units = shift(g, n, unit_log2)?;
    let unit_size = g.u64(1 << unit_log2);
    strided_loop(g, first, units, step, &mut |g, u| {
        let start = g.mul(u, unit_size)?;
        let (start, stride) = match lane {
            Some(lane) => {
                let vv = g.u64(u64::from(vec));
                let lane_start = g.mul(lane, vv)?;
                (g.add(start, lane_start)?, 32 * u64::from(vec))
            }
            None => (start, u64::from(vec)),
        };
        let mut group = Group {
            idxs: vec![start],
            vec,
            stride,
        };
        for p in 1..k as usize {
            let off = g.u64(group.offset(p));
            let idx = g.add(start, off)?;
            group.idxs.push(idx);
        }
        visit(g, &group)
    })?;
    let tail_start = g.mul(units, unit_size)?;
    let first = g.add(tail_start, c.gtid)?;
    strided_loop(g, first, n, c.gsize, &mut |g, i| visit(g, &Group::one(i)))
}

/// One tile of a block's chunk, from one thread's point of view.
pub(crate) struct Tile {
    /// The index of the tile's first element.
    pub(crate) start: Value,
    /// The index of this thread's first element of the tile.
    pub(crate) base: Value,
    /// The distance between the thread's elements (1, or 32 for [`Layout::WarpStrided`]).
    pub(crate) stride: u64,
    /// The end of the block's chunk (exclusive).
    pub(crate) end: Value,
    /// Whether some of the tile lies past `end` (then every element must be tested).
    pub(crate) guarded: bool,
}

/// Block `b` walks `[b * chunk, min((b + 1) * chunk, n))` in tiles of `block * k` elements:
/// with [`Layout::Consecutive`], thread `t` owns the `k` consecutive elements at `t * k` of
/// each tile; with [`Layout::WarpStrided`], warp `w` owns `32 k` consecutive elements and
/// its lanes take every 32nd (coalesced). The trip count is the same for every thread of the
/// block, so tile bodies may contain barriers.
#[allow(clippy::too_many_arguments)]
pub(crate) fn chunked_tiles(
    g: &mut Gen,
    c: &Coords,
    n: Value,
    chunk: Value,
    k: u32,
    block: u32,
    layout: Layout,
    visit: &mut dyn FnMut(&mut Gen, &Tile) -> R<()>,
) -> R<()> {
    let start = g.mul(c.bid, chunk)?;
    let end = g.add(start, chunk)?;
    let end = g.bin(BinaryOp::Min, end, n)?;
    let tile = g.u64(u64::from(block) * u64::from(k));
    let (own, stride) = match layout {
        Layout::Consecutive => {
            let kk = g.u64(u64::from(k));
            (g.mul(c.tid, kk)?, 1)
        }
        Layout::WarpStrided => {
            // warp * 32 k + lane = (tid - lane) * k + lane
            let lane = g.special(Special::LaneId)?;
            let lane = g.cast(lane, cuprum_ir::ScalarType::U64)?;
            let warp_first = g.bin(BinaryOp::Sub, c.tid, lane)?;
            let kk = g.u64(u64::from(k));
            let warp_start = g.mul(warp_first, kk)?;
            (g.add(warp_start, lane)?, 32)
        }
    };
    strided_loop(g, start, end, tile, &mut |g, s| {
        let base = g.add(s, own)?;
        let at = |guarded| Tile {
            start: s,
            base,
            stride,
            end,
            guarded,
        };
        if k <= 1 {
            // One element per thread: a test per element costs less than a second copy.
            return visit(g, &at(true));
        }
        let tile_end = g.add(s, tile)?;
        let full = g.cmp(CmpOp::Le, tile_end, end)?;
        g.if_else(full, |g, full| visit(g, &at(!full)))
    })
}

/// The indices of a tile's `k` elements for this thread; in a guarded tile, each element is
/// visited only when it lies before `end`.
pub(crate) fn visit_tile(g: &mut Gen, tile: &Tile, k: u32, visit: &mut Visit) -> R<()> {
    let mut idxs = vec![tile.base];
    for j in 1..u64::from(k) {
        let off = g.u64(j * tile.stride);
        idxs.push(g.add(tile.base, off)?);
    }
    if !tile.guarded {
        let stride = tile.stride;
        return visit(
            g,
            &Group {
                idxs,
                vec: 1,
                stride,
            },
        );
    }
    for idx in idxs {
        let inside = g.cmp(CmpOp::Lt, idx, tile.end)?;
        g.if_(inside, |g| visit(g, &Group::one(idx)))?;
    }
    Ok(())
}
