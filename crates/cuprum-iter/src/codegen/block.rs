//! Block-wide collectives built from warp shuffles and a few words of shared memory: the
//! reduction that ends every reduce kernel and the exclusive scan that gives `filter`'s
//! survivors their output positions.
//!
//! Both must be reached by every thread of the block (they contain barriers), and both are
//! written so that the emulator's race detector has nothing to report: a shared word is
//! written in one barrier interval and read only in a later one.

use cuprum_ir::{AddressSpace, BinaryOp, CmpOp, Op, ScalarType, ShuffleMode, Special, Value};

use super::{Accum, Gen, R};

/// Lane, warp and their common comparisons, as `U32`.
struct WarpCoords {
    lane: Value,
    warp: Value,
    zero: Value,
}

impl WarpCoords {
    fn new(g: &mut Gen) -> R<Self> {
        let tid = g.tid()?;
        let lane = g.special(Special::LaneId)?;
        let five = g.u32(5);
        let warp = g.bin(BinaryOp::Shr, tid, five)?;
        let zero = g.u32(0);
        Ok(Self { lane, warp, zero })
    }
}

/// Combines each lane's values with those of the lanes above it; lane 0 ends with the
/// combination of all 32 lanes (the other lanes hold partial results).
fn warp_reduce(g: &mut Gen, accs: &[Accum], mut vals: Vec<Value>) -> R<Vec<Value>> {
    for off in [16, 8, 4, 2, 1] {
        let lane = g.u32(off);
        for (v, acc) in vals.iter_mut().zip(accs) {
            let other = g.def(Op::Shuffle {
                mode: ShuffleMode::Down,
                value: *v,
                lane,
            })?;
            *v = g.combine(acc, *v, other)?;
        }
    }
    Ok(vals)
}

/// Reduces each accumulator's per-thread value over the block; `done` runs in thread 0 only,
/// with the block's results. The combining functions must be associative and commutative
/// (the order is a tree, not the element order).
pub(crate) fn block_reduce(
    g: &mut Gen,
    accs: &[Accum],
    vals: Vec<Value>,
    block: u32,
    done: impl FnOnce(&mut Gen, &[Value]) -> R<()>,
) -> R<()> {
    let w = WarpCoords::new(g)?;
    let vals = warp_reduce(g, accs, vals)?;
    let lane0 = g.cmp(CmpOp::Eq, w.lane, w.zero)?;
    let nwarps = block / 32;
    if nwarps <= 1 {
        return g.if_(lane0, |g| done(g, &vals));
    }
    let arrays = accs
        .iter()
        .enumerate()
        .map(|(i, a)| g.shared_array(&format!("warp_acc{i}"), a.ty, nwarps))
        .collect::<R<Vec<_>>>()?;
    g.if_(lane0, |g| {
        for ((&arr, &v), a) in arrays.iter().zip(&vals).zip(accs) {
            let addr = g.shared_elem(arr, w.warp, a.ty)?;
            g.store(AddressSpace::Shared, addr, v);
        }
        Ok(())
    })?;
    g.barrier();
    let warp0 = g.cmp(CmpOp::Eq, w.warp, w.zero)?;
    g.if_(warp0, |g| {
        let last = g.u32(nwarps - 1);
        let slot = g.bin(BinaryOp::Min, w.lane, last)?;
        let count = g.u32(nwarps);
        let live = g.cmp(CmpOp::Lt, w.lane, count)?;
        let mut vs = Vec::with_capacity(accs.len());
        for (&arr, a) in arrays.iter().zip(accs) {
            let addr = g.shared_elem(arr, slot, a.ty)?;
            let v = g.load(AddressSpace::Shared, a.ty, addr)?;
            let identity = g.uniform(a.identity)?;
            vs.push(g.select(live, v, identity)?);
        }
        let vs = warp_reduce(g, accs, vs)?;
        g.if_(lane0, |g| done(g, &vs))
    })
}

/// Shared memory of [`block_exclusive_scan`], declared once per kernel.
pub(crate) struct ScanArrays {
    /// Each warp's total.
    sums: Value,
    /// Inclusive prefix sums of the warp totals.
    prefix: Value,
}

pub(crate) fn scan_arrays(g: &mut Gen, block: u32) -> R<ScanArrays> {
    let nwarps = (block / 32).max(1);
    Ok(ScanArrays {
        sums: g.shared_array("scan_warp_sums", ScalarType::U32, nwarps)?,
        prefix: g.shared_array("scan_warp_prefix", ScalarType::U32, nwarps)?,
    })
}

/// Inclusive prefix sum of `x` (`U32`) over the lanes of a warp.
fn warp_inclusive_scan(g: &mut Gen, w: &WarpCoords, mut x: Value) -> R<Value> {
    for d in [1, 2, 4, 8, 16] {
        let dist = g.u32(d);
        let y = g.def(Op::Shuffle {
            mode: ShuffleMode::Up,
            value: x,
            lane: dist,
        })?;
        let has = g.cmp(CmpOp::Ge, w.lane, dist)?;
        let add = g.select(has, y, w.zero)?;
        x = g.add(x, add)?;
    }
    Ok(x)
}

/// The exclusive prefix sum of each thread's `count` (`U32`) in thread order, and the block
/// total. Every thread of the block must call it (two barriers).
pub(crate) fn block_exclusive_scan(
    g: &mut Gen,
    arrays: &ScanArrays,
    count: Value,
    block: u32,
) -> R<(Value, Value)> {
    let w = WarpCoords::new(g)?;
    let nwarps = (block / 32).max(1);
    let ty = ScalarType::U32;
    let inclusive = warp_inclusive_scan(g, &w, count)?;
    let thirty_one = g.u32(31);
    let last_lane = g.cmp(CmpOp::Eq, w.lane, thirty_one)?;
    g.if_(last_lane, |g| {
        let addr = g.shared_elem(arrays.sums, w.warp, ty)?;
        g.store(AddressSpace::Shared, addr, inclusive);
        Ok(())
    })?;
    g.barrier();
    let warp0 = g.cmp(CmpOp::Eq, w.warp, w.zero)?;
    g.if_(warp0, |g| {
        let last = g.u32(nwarps - 1);
        let slot = g.bin(BinaryOp::Min, w.lane, last)?;
        let n = g.u32(nwarps);
        let live = g.cmp(CmpOp::Lt, w.lane, n)?;
        let addr = g.shared_elem(arrays.sums, slot, ty)?;
        let s = g.load(AddressSpace::Shared, ty, addr)?;
        let s = g.select(live, s, w.zero)?;
        let s = warp_inclusive_scan(g, &w, s)?;
        g.if_(live, |g| {
            let addr = g.shared_elem(arrays.prefix, w.lane, ty)?;
            g.store(AddressSpace::Shared, addr, s);
            Ok(())
        })
    })?;
    g.barrier();
    let one = g.u32(1);
    let at_least_one = g.bin(BinaryOp::Max, w.warp, one)?;
    let before = g.bin(BinaryOp::Sub, at_least_one, one)?;
    let addr = g.shared_elem(arrays.prefix, before, ty)?;
    let p = g.load(AddressSpace::Shared, ty, addr)?;
    let not_first = g.cmp(CmpOp::Gt, w.warp, w.zero)?;
    let prefix = g.select(not_first, p, w.zero)?;
    let own = g.bin(BinaryOp::Sub, inclusive, count)?;
    let exclusive = g.add(own, prefix)?;
    let last = g.u32(nwarps - 1);
    let addr = g.shared_elem(arrays.prefix, last, ty)?;
    let total = g.load(AddressSpace::Shared, ty, addr)?;
    Ok((exclusive, total))
}
