//! Layouts: which thread of a block holds which elements of a tile, in which registers.
//!
//! A tile lives in the registers of the block's threads. A [`Layout`] says where: each thread
//! holds the same number of registers, and register `r` of thread `t` holds the element whose
//! coordinates [`Layout::coords`] gives. It is built from Triton's kinds:
//!
//! * [`Blocked`] (`Layout::blocked`): per axis, `size_per_thread` consecutive elements in one
//!   thread's registers, `threads_per_warp` lanes and `warps_per_block` warps side by side,
//!   `order` saying which axis is fastest. What the threads cover is repeated (more registers)
//!   where the tile is larger, and replicated (several threads hold one element) where it is
//!   smaller. [`Blocked::coalesced`] is the layout loads and stores are anchored on.
//! * Slice ([`Layout::slice`]): a reduction's result, the parent layout without the reduced
//!   axis; the threads that held different elements along that axis now hold the same
//!   result (replicas).
//!
//! Permutations ([`Layout::permute`]) and reshapes that only insert or remove axes of size 1
//! ([`Layout::reshape_unit`]) act on a layout directly, so they cost nothing.
//!
//! Every layout is kept in one normal form (Triton's *linear layouts*, restricted to what
//! these kinds produce), which the code generator reads and conversions compare:
//!
//! * bit `b` of the thread index adds a fixed offset to one axis of the *raw* coordinates
//!   (or to none: a replication bit, whose threads hold copies);
//! * register `r` adds its own constant offsets;
//! * the element held is the raw coordinate clamped to the tile, `min(raw, size - 1)` per
//!   axis. A thread bit or register whose offset alone reaches past the tile is removed (the
//!   bit becomes a replication bit), so clamping happens only where a sum of offsets passes
//!   the end: never for sizes that are powers of two, and at the end of an axis otherwise.
//!
//! So each register's coordinate is a per-thread base (from the thread index, computed once)
//! plus a compile-time constant, and per-register code is straight-line with constant
//! offsets. Several (thread, register) pairs may hold one element (replicas, and clamped
//! copies of the last element of an axis); exactly one of them is its *owner*
//! ([`Layout::is_owner`]): the one whose raw coordinates are inside the tile and whose
//! replication bits are zero. Stores, shared-memory writes and reductions count owners only.

use std::collections::HashMap;

/// Threads in a warp.
pub const WARP_THREADS: u32 = 32;
/// Bits of the thread index that select the lane.
pub const LANE_BITS: usize = 5;

/// Triton's blocked layout, per axis (see the module docs). Every entry is a power of two.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Blocked {
    /// Consecutive elements along each axis that one thread holds in consecutive registers.
    pub size_per_thread: Vec<u32>,
    /// Lanes along each axis; their product is 32.
    pub threads_per_warp: Vec<u32>,
    /// Warps along each axis; their product is the block's warp count.
    pub warps_per_block: Vec<u32>,
    /// The axes from fastest to slowest: registers, then lanes, then warps go along
    /// `order[0]` first.
    pub order: Vec<usize>,
}

impl Blocked {
    /// The layout loads and stores use for a tile of `shape` with elements of `elem_bytes`
    /// bytes, in a block of `warps` warps (a power of two): the last axis fastest; each thread
    /// holds up to 16 bytes of consecutive elements along it (the largest power of two that
    /// divides its size, so that one vector access moves them), or one element when the tile
    /// has fewer elements than the block has threads (spread over many threads, a small
    /// tile's reductions are shuffle trees rather than long sums in a few threads, whose
    /// rounding grows with their length); lanes and then warps go along
    /// the last axis as far as it needs, the rest along the axes before it; what is left over
    /// replicates along the first axis. Consecutive lanes so read consecutive 16-byte pieces
    /// of a row.
    pub fn coalesced(shape: &[u32], elem_bytes: u32, warps: u32) -> Blocked {
        let rank = shape.len();
        let order: Vec<usize> = (0..rank).rev().collect();
        let mut spt = vec![1u32; rank];
        let mut tpw = vec![1u32; rank];
        let mut wpb = vec![1u32; rank];
        if rank == 0 {
            return Blocked {
                size_per_thread: spt,
                threads_per_warp: tpw,
                warps_per_block: wpb,
                order,
            };
        }
        let last = rank - 1;
        let elements: u64 = shape.iter().map(|&d| u64::from(d)).product();
        let max_vector = if elements < u64::from(warps.max(1) * WARP_THREADS) {
            1
        } else {
            (16 / elem_bytes.max(1)).max(1)
        };
        spt[last] = largest_power_of_two_dividing(shape[last], max_vector);
        let mut lanes = WARP_THREADS;
        for &d in &order {
            let want = shape[d].div_ceil(spt[d]).next_power_of_two();
            tpw[d] = want.min(lanes);
            lanes /= tpw[d];
        }
        tpw[order[rank - 1]] *= lanes;
        let mut left = warps.max(1);
        for &d in &order {
            let want = shape[d].div_ceil(spt[d] * tpw[d]).next_power_of_two();
            wpb[d] = want.min(left);
            left /= wpb[d];
        }
        wpb[order[rank - 1]] *= left;
        Blocked {
            size_per_thread: spt,
            threads_per_warp: tpw,
            warps_per_block: wpb,
            order,
        }
    }
}

/// The largest power of two that divides `n` and is at most `cap`.
fn largest_power_of_two_dividing(n: u32, cap: u32) -> u32 {
    let mut p = 1;
    while p * 2 <= cap && n.is_multiple_of(p * 2) {
        p *= 2;
    }
    p
}

/// Where a tile's elements live (see the module docs): the normal form of every layout kind.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Layout {
    shape: Vec<u32>,
    /// Per bit of the thread index (bit 0 first), its raw offset along each axis; at most one
    /// axis is nonzero.
    thread_bits: Vec<Vec<u32>>,
    /// Per register, its raw offset along each axis.
    regs: Vec<Vec<u32>>,
}

impl Layout {
    /// `blocked` applied to a tile of `shape` in a block of `threads` threads.
    pub fn blocked(shape: &[u32], blocked: &Blocked, threads: u32) -> Result<Layout, String> {
        let rank = shape.len();
        let fields = [
            &blocked.size_per_thread,
            &blocked.threads_per_warp,
            &blocked.warps_per_block,
        ];
        if fields.iter().any(|f| f.len() != rank) || blocked.order.len() != rank {
            return Err(format!("a blocked layout of another rank than {rank}"));
        }
        let mut seen = vec![false; rank];
        for &d in &blocked.order {
            match seen.get_mut(d) {
                Some(s) if !*s => *s = true,
                _ => return Err(format!("order {:?} is not a permutation", blocked.order)),
            }
        }
        if fields
            .iter()
            .any(|f| f.iter().any(|x| !x.is_power_of_two()))
        {
            return Err(format!(
                "{blocked:?} has an entry that is not a power of two"
            ));
        }
        let lanes: u32 = blocked.threads_per_warp.iter().product();
        let warps: u32 = blocked.warps_per_block.iter().product();
        if lanes != WARP_THREADS || !threads.is_power_of_two() || warps * WARP_THREADS != threads {
            return Err(format!(
                "{blocked:?} does not place {threads} threads as warps of 32 lanes"
            ));
        }
        if shape.contains(&0) {
            return Err("a tile dimension of size 0".into());
        }
        let unit = |d: usize, offset: u32| {
            let mut v = vec![0u32; rank];
            // An offset past the tile only ever makes copies: a replication bit.
            if offset < shape[d] {
                v[d] = offset;
            }
            v
        };
        let mut thread_bits = Vec::new();
        for &d in &blocked.order {
            for i in 0..blocked.threads_per_warp[d].ilog2() {
                thread_bits.push(unit(d, blocked.size_per_thread[d] << i));
            }
        }
        for &d in &blocked.order {
            let step = blocked.size_per_thread[d] * blocked.threads_per_warp[d];
            for i in 0..blocked.warps_per_block[d].ilog2() {
                thread_bits.push(unit(d, step << i));
            }
        }
        // Per axis, the register offsets: the elements of one thread, then the repetitions.
        let per_axis: Vec<Vec<u32>> = (0..rank)
            .map(|d| {
                let spt = blocked.size_per_thread[d];
                let cover = spt * blocked.threads_per_warp[d] * blocked.warps_per_block[d];
                let reps = shape[d].div_ceil(cover);
                (0..reps)
                    .flat_map(|r| (0..spt).map(move |e| r * cover + e))
                    .filter(|&o| o < shape[d])
                    .collect()
            })
            .collect();
        // The fastest axis innermost, so that a thread's consecutive elements along it are
        // consecutive registers.
        let mut regs = vec![vec![0u32; rank]];
        for &d in blocked.order.iter().rev() {
            regs = regs
                .iter()
                .flat_map(|outer| {
                    per_axis[d].iter().map(move |&o| {
                        let mut r = outer.clone();
                        r[d] = o;
                        r
                    })
                })
                .collect();
        }
        Ok(Layout {
            shape: shape.to_vec(),
            thread_bits,
            regs,
        })
    }

    /// A layout given in the normal form directly (see the module docs): per bit of the
    /// thread index its raw offset along each axis (at most one nonzero), per register its
    /// raw offsets. A thread bit whose offset reaches past the tile becomes a replication
    /// bit, as in [`Layout::blocked`]; a register whose offset does is an error (it would
    /// hold nothing of its own).
    pub fn linear(
        shape: &[u32],
        thread_bits: Vec<Vec<u32>>,
        regs: Vec<Vec<u32>>,
    ) -> Result<Layout, String> {
        let rank = shape.len();
        if shape.contains(&0) {
            return Err("a tile dimension of size 0".into());
        }
        let mut bits = Vec::with_capacity(thread_bits.len());
        for b in thread_bits {
            if b.len() != rank || b.iter().filter(|&&x| x != 0).count() > 1 {
                return Err(format!("thread bit offsets {b:?} of a rank-{rank} layout"));
            }
            let past = b.iter().zip(shape).any(|(&x, &n)| x >= n);
            bits.push(if past { vec![0; rank] } else { b });
        }
        if regs.is_empty() {
            return Err("a layout without registers".into());
        }
        for r in &regs {
            if r.len() != rank || r.iter().zip(shape).any(|(&x, &n)| x >= n) {
                return Err(format!("register offsets {r:?} outside the tile {shape:?}"));
            }
        }
        Ok(Layout {
            shape: shape.to_vec(),
            thread_bits: bits,
            regs,
        })
    }

    /// The register holding raw offsets `offsets` (the first, if several do).
    pub fn register_at(&self, offsets: &[u32]) -> Option<usize> {
        self.regs.iter().position(|r| r == offsets)
    }

    /// The [`Blocked::coalesced`] layout of `shape` for elements of `elem_bytes` bytes in a
    /// block of `threads` threads (a power of two, at least 32).
    pub fn coalesced(shape: &[u32], elem_bytes: u32, threads: u32) -> Layout {
        let warps = (threads / WARP_THREADS).max(1);
        let blocked = Blocked::coalesced(shape, elem_bytes, warps);
        match Layout::blocked(shape, &blocked, warps * WARP_THREADS) {
            Ok(l) => l,
            // `coalesced` only makes valid parameters; keep a total function regardless.
            Err(_) => Layout::replicated(shape, warps * WARP_THREADS),
        }
    }

    /// Every thread holds every element (one register per element): the fallback no caller
    /// should reach.
    fn replicated(shape: &[u32], threads: u32) -> Layout {
        let rank = shape.len();
        let mut regs = vec![vec![0u32; rank]];
        for d in 0..rank {
            regs = regs
                .iter()
                .flat_map(|outer| {
                    (0..shape[d]).map(move |o| {
                        let mut r = outer.clone();
                        r[d] = o;
                        r
                    })
                })
                .collect();
        }
        Layout {
            shape: shape.to_vec(),
            thread_bits: vec![vec![0; rank]; threads.max(1).ilog2() as usize],
            regs,
        }
    }

    /// The tile's shape.
    pub fn shape(&self) -> &[u32] {
        &self.shape
    }

    /// The tile's rank.
    pub fn rank(&self) -> usize {
        self.shape.len()
    }

    /// The threads of the block.
    pub fn threads(&self) -> u32 {
        1 << self.thread_bits.len()
    }

    /// Registers per thread.
    pub fn registers(&self) -> usize {
        self.regs.len()
    }

    /// The raw offsets bit `bit` of the thread index adds, per axis.
    pub fn thread_bit(&self, bit: usize) -> &[u32] {
        &self.thread_bits[bit]
    }

    /// Bits of the thread index.
    pub fn thread_bit_count(&self) -> usize {
        self.thread_bits.len()
    }

    /// The raw offsets of register `reg`, per axis.
    pub fn register(&self, reg: usize) -> &[u32] {
        &self.regs[reg]
    }

    /// The thread-index bits whose threads hold copies of each other's elements.
    pub fn replication_mask(&self) -> u32 {
        self.thread_bits
            .iter()
            .enumerate()
            .filter(|(_, o)| o.iter().all(|&x| x == 0))
            .fold(0, |m, (b, _)| m | (1 << b))
    }

    /// The thread-index bits that move along `axis`.
    pub fn axis_mask(&self, axis: usize) -> u32 {
        self.thread_bits
            .iter()
            .enumerate()
            .filter(|(_, o)| o[axis] != 0)
            .fold(0, |m, (b, _)| m | (1 << b))
    }

    /// The largest per-thread base along `axis` (all its thread bits set).
    pub fn max_thread_offset(&self, axis: usize) -> u32 {
        self.thread_bits.iter().map(|o| o[axis]).sum()
    }

    /// Whether register `reg`'s raw coordinate along `axis` can pass the tile's end in some
    /// thread (so that it must be clamped, and may not be its element's owner).
    pub fn may_clamp(&self, reg: usize, axis: usize) -> bool {
        self.max_thread_offset(axis) + self.regs[reg][axis] >= self.shape[axis]
    }

    /// Whether no register of any thread is ever clamped.
    pub fn never_clamps(&self) -> bool {
        (0..self.regs.len()).all(|r| (0..self.rank()).all(|d| !self.may_clamp(r, d)))
    }

    /// The raw coordinates of register `reg` of thread `thread`.
    pub fn raw(&self, thread: u32, reg: usize) -> Vec<u32> {
        let mut c = self.regs[reg].clone();
        for (b, offsets) in self.thread_bits.iter().enumerate() {
            if thread >> b & 1 == 1 {
                for (x, o) in c.iter_mut().zip(offsets) {
                    *x += o;
                }
            }
        }
        c
    }

    /// The owner function: the coordinates of the element register `reg` of thread `thread`
    /// holds (its raw coordinates clamped to the tile).
    pub fn coords(&self, thread: u32, reg: usize) -> Vec<u32> {
        let mut c = self.raw(thread, reg);
        for (x, n) in c.iter_mut().zip(&self.shape) {
            *x = (*x).min(n - 1);
        }
        c
    }

    /// Whether register `reg` of thread `thread` is the owner of its element (see the module
    /// docs): exactly one (thread, register) pair owns each element.
    pub fn is_owner(&self, thread: u32, reg: usize) -> bool {
        thread & self.replication_mask() == 0
            && self
                .raw(thread, reg)
                .iter()
                .zip(&self.shape)
                .all(|(x, n)| x < n)
    }

    /// The layout of a reduction along `axis` (Triton's slice layout): this layout without
    /// the axis, the threads along it now holding copies of one result. Also gives, for each
    /// register of the result, the registers of this layout it combines.
    pub fn slice(&self, axis: usize) -> (Layout, Vec<Vec<usize>>) {
        let drop = |o: &Vec<u32>| {
            let mut o = o.clone();
            o.remove(axis);
            o
        };
        let mut shape = self.shape.clone();
        shape.remove(axis);
        let mut regs: Vec<Vec<u32>> = Vec::new();
        let mut groups: Vec<Vec<usize>> = Vec::new();
        let mut index: HashMap<Vec<u32>, usize> = HashMap::new();
        for (r, o) in self.regs.iter().enumerate() {
            let key = drop(o);
            match index.get(&key) {
                Some(&g) => groups[g].push(r),
                None => {
                    index.insert(key.clone(), regs.len());
                    regs.push(key);
                    groups.push(vec![r]);
                }
            }
        }
        let layout = Layout {
            shape,
            thread_bits: self.thread_bits.iter().map(drop).collect(),
            regs,
        };
        (layout, groups)
    }

    /// The layout of the tile with its axes reordered: result axis `i` is axis `perm[i]`
    /// (free: the same registers).
    pub fn permute(&self, perm: &[u32]) -> Layout {
        let pick = |o: &Vec<u32>| perm.iter().map(|&p| o[p as usize]).collect::<Vec<u32>>();
        Layout {
            shape: pick(&self.shape),
            thread_bits: self.thread_bits.iter().map(pick).collect(),
            regs: self.regs.iter().map(pick).collect(),
        }
    }

    /// The layout of the tile reshaped to `shape` when that only inserts or removes axes of
    /// size 1 (free: the same registers); `None` for any other reshape.
    pub fn reshape_unit(&self, shape: &[u32]) -> Option<Layout> {
        let map = unit_axes_map(&self.shape, shape)?;
        let pick = |o: &Vec<u32>| {
            map.iter()
                .map(|m| m.map_or(0, |e| o[e]))
                .collect::<Vec<u32>>()
        };
        Some(Layout {
            shape: shape.to_vec(),
            thread_bits: self.thread_bits.iter().map(pick).collect(),
            regs: self.regs.iter().map(pick).collect(),
        })
    }

    /// The widest vector (a power of two, at most `max`) along the last axis: every thread's
    /// base along it is a multiple of the width, and the registers come in runs of that many
    /// consecutive elements along it, each run starting at a multiple of the width. 1 when
    /// there is none (or the tile has rank 0).
    pub fn vector_width(&self, max: u32) -> u32 {
        let Some(last) = self.rank().checked_sub(1) else {
            return 1;
        };
        let mut w = max.max(1).next_power_of_two();
        if w > max {
            w /= 2;
        }
        while w > 1 {
            let bits_ok = self.thread_bits.iter().all(|o| o[last] % w == 0);
            let runs_ok = self.regs.len().is_multiple_of(w as usize)
                && self.regs.chunks(w as usize).all(|run| {
                    run[0][last] % w == 0
                        && run.iter().enumerate().all(|(j, o)| {
                            (0..self.rank()).all(|d| {
                                let want = if d == last {
                                    run[0][d] + j as u32
                                } else {
                                    run[0][d]
                                };
                                o[d] == want
                            })
                        })
                });
            if bits_ok && runs_ok {
                return w;
            }
            w /= 2;
        }
        1
    }

    /// The per-thread base along `axis` as runs of thread-index bits: each `(shift, count,
    /// step)` adds `((thread >> shift) & (2^count - 1)) * step`.
    pub fn bit_runs(&self, axis: usize) -> Vec<(u32, u32, u32)> {
        let mut runs: Vec<(u32, u32, u32)> = Vec::new();
        for (b, o) in self.thread_bits.iter().enumerate() {
            let off = o[axis];
            if off == 0 {
                continue;
            }
            match runs.last_mut() {
                Some((shift, count, step))
                    if *shift + *count == b as u32
                        && step.checked_shl(*count).is_some_and(|s| s == off) =>
                {
                    *count += 1
                }
                _ => runs.push((b as u32, 1, off)),
            }
        }
        runs
    }
}

/// For a reshape from `from` to `to` that only inserts or removes axes of size 1: for each
/// axis of `to`, the axis of `from` it is (`None` for an axis of size 1). `None` when the
/// reshape moves elements otherwise.
pub fn unit_axes_map(from: &[u32], to: &[u32]) -> Option<Vec<Option<usize>>> {
    let kept: Vec<usize> = (0..from.len()).filter(|&e| from[e] != 1).collect();
    let mut next = kept.iter();
    let map: Vec<Option<usize>> = to
        .iter()
        .map(|&n| {
            if n == 1 {
                Ok(None)
            } else {
                match next.next() {
                    Some(&e) if from[e] == n => Ok(Some(e)),
                    _ => Err(()),
                }
            }
        })
        .collect::<Result<_, ()>>()
        .ok()?;
    next.next().is_none().then_some(map)
}

/// How a conversion's destination coordinates find their source element.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CoordMap {
    /// Destination axis `d` is source axis `axes[d]`; `None` for a destination axis the
    /// source has with size 1 or not at all (a broadcast, an inserted unit axis), read at
    /// source coordinate 0. Source axes no destination axis names have size 1.
    Axes(Vec<Option<usize>>),
    /// Source and destination hold the same elements in row-major order (a reshape).
    RowMajor,
}

impl CoordMap {
    /// The identity on a tile of `rank` axes.
    pub fn identity(rank: usize) -> CoordMap {
        CoordMap::Axes((0..rank).map(Some).collect())
    }

    /// A broadcast from `from` to `to` (same rank; `from` has 1 where they differ).
    pub fn broadcast(from: &[u32], to: &[u32]) -> CoordMap {
        CoordMap::Axes(
            from.iter()
                .zip(to)
                .enumerate()
                .map(|(d, (f, t))| (f == t).then_some(d))
                .collect(),
        )
    }

    /// A permutation: destination axis `i` is source axis `perm[i]`.
    pub fn permute(perm: &[u32]) -> CoordMap {
        CoordMap::Axes(perm.iter().map(|&p| Some(p as usize)).collect())
    }

    /// A reshape from `from` to `to`.
    pub fn reshape(from: &[u32], to: &[u32]) -> CoordMap {
        match unit_axes_map(from, to) {
            Some(axes) => CoordMap::Axes(axes),
            None => CoordMap::RowMajor,
        }
    }

    /// Per destination axis, how far one step along it moves in the source's row-major
    /// element order: the source element of destination coordinates `c` is
    /// `sum(c[d] * weights[d])`.
    pub fn weights(&self, from: &[u32], to: &[u32]) -> Vec<u64> {
        match self {
            CoordMap::Axes(axes) => {
                let strides = row_major_strides(from);
                axes.iter().map(|a| a.map_or(0, |e| strides[e])).collect()
            }
            CoordMap::RowMajor => row_major_strides(to),
        }
    }

    /// The source coordinates of destination coordinates `c` (for tests and checks).
    pub fn source_of(&self, from: &[u32], to: &[u32], c: &[u32]) -> Vec<u32> {
        let linear: u64 = c
            .iter()
            .zip(self.weights(from, to))
            .map(|(&x, w)| u64::from(x) * w)
            .sum();
        let strides = row_major_strides(from);
        strides
            .iter()
            .zip(from)
            .map(|(&s, &n)| ((linear / s) % u64::from(n)) as u32)
            .collect()
    }
}

/// Row-major strides of `shape`, in elements.
pub fn row_major_strides(shape: &[u32]) -> Vec<u64> {
    let mut strides = vec![1u64; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * u64::from(shape[d + 1]);
    }
    strides
}

/// When converting `src` to `dst` under `map` needs no data movement: for each register of
/// `dst`, the register of `src` that holds the same element in every thread. `None` when
/// some thread would need another thread's element (a shared-memory round trip then).
pub fn register_sources(src: &Layout, dst: &Layout, map: &CoordMap) -> Option<Vec<usize>> {
    if src.thread_bits.len() != dst.thread_bits.len() {
        return None;
    }
    match map {
        CoordMap::Axes(axes) => {
            if axes.len() != dst.rank() {
                return None;
            }
            // Which destination axis shows each source axis.
            let mut shown: Vec<Option<usize>> = vec![None; src.rank()];
            for (d, a) in axes.iter().enumerate() {
                if let Some(e) = *a {
                    if e >= src.rank() || shown[e].is_some() || src.shape[e] != dst.shape[d] {
                        return None;
                    }
                    shown[e] = Some(d);
                }
            }
            if (0..src.rank()).any(|e| shown[e].is_none() && src.shape[e] != 1) {
                return None;
            }
            let project =
                |o: &[u32]| -> Vec<u32> { shown.iter().map(|s| s.map_or(0, |d| o[d])).collect() };
            for (s, d) in src.thread_bits.iter().zip(&dst.thread_bits) {
                if *s != project(d) {
                    return None;
                }
            }
            let index: HashMap<&[u32], usize> = src
                .regs
                .iter()
                .enumerate()
                .map(|(r, o)| (o.as_slice(), r))
                .collect();
            dst.regs
                .iter()
                .map(|o| index.get(project(o).as_slice()).copied())
                .collect()
        }
        CoordMap::RowMajor => {
            let count = |s: &[u32]| s.iter().map(|&n| u64::from(n)).product::<u64>();
            if count(&src.shape) != count(&dst.shape) || !src.never_clamps() || !dst.never_clamps()
            {
                return None;
            }
            let (ss, ds) = (row_major_strides(&src.shape), row_major_strides(&dst.shape));
            let linear = |o: &[u32], strides: &[u64]| -> u64 {
                o.iter().zip(strides).map(|(&x, s)| u64::from(x) * s).sum()
            };
            for (s, d) in src.thread_bits.iter().zip(&dst.thread_bits) {
                if linear(s, &ss) != linear(d, &ds) {
                    return None;
                }
            }
            let index: HashMap<u64, usize> = src
                .regs
                .iter()
                .enumerate()
                .map(|(r, o)| (linear(o, &ss), r))
                .collect();
            dst.regs
                .iter()
                .map(|o| index.get(&linear(o, &ds)).copied())
                .collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every element of `layout`'s tile has exactly one owner, and every register of every
    /// thread holds an element of the tile.
    fn assert_covers_once(layout: &Layout) {
        let count: usize = layout.shape().iter().map(|&n| n as usize).product();
        let strides = row_major_strides(layout.shape());
        let mut owners = vec![0u32; count];
        for t in 0..layout.threads() {
            for r in 0..layout.registers() {
                let c = layout.coords(t, r);
                for (x, n) in c.iter().zip(layout.shape()) {
                    assert!(x < n, "{layout:?}: thread {t} register {r} at {c:?}");
                }
                let i: u64 = c.iter().zip(&strides).map(|(&x, s)| u64::from(x) * s).sum();
                if layout.is_owner(t, r) {
                    owners[i as usize] += 1;
                }
            }
        }
        for (i, n) in owners.iter().enumerate() {
            assert_eq!(*n, 1, "{layout:?}: element {i} has {n} owners");
        }
    }

    fn shapes() -> Vec<Vec<u32>> {
        vec![
            vec![],
            vec![1],
            vec![7],
            vec![32],
            vec![50],
            vec![1024],
            vec![4096],
            vec![1, 1],
            vec![16, 16],
            vec![2, 8],
            vec![37, 50],
            vec![1, 4096],
            vec![4, 512],
            vec![64, 1],
            vec![3, 5, 7],
            vec![2, 16, 64],
        ]
    }

    #[test]
    fn coalesced_layouts_cover_every_element_once() {
        for shape in shapes() {
            for warps in [1, 2, 4, 8] {
                for bytes in [1, 2, 4, 8] {
                    let l = Layout::coalesced(&shape, bytes, warps * 32);
                    assert_eq!(l.threads(), warps * 32);
                    assert_covers_once(&l);
                }
            }
        }
    }

    #[test]
    fn the_coalesced_layout_of_a_row_is_16_bytes_per_thread_lanes_along_the_row() {
        let b = Blocked::coalesced(&[1, 4096], 4, 8);
        assert_eq!(b.size_per_thread, vec![1, 4]);
        assert_eq!(b.threads_per_warp, vec![1, 32]);
        assert_eq!(b.warps_per_block, vec![1, 8]);
        let l = Layout::coalesced(&[1, 4096], 4, 256);
        assert_eq!(l.registers(), 16);
        assert_eq!(l.vector_width(4), 4);
        assert!(l.never_clamps());
        assert_eq!(l.replication_mask(), 0);
        // Lane 1 starts 4 elements after lane 0; register 5 is element 1 of the second run.
        assert_eq!(l.coords(1, 0), vec![0, 4]);
        assert_eq!(l.coords(0, 5), vec![0, 1024 + 1]);
        assert_eq!(l.bit_runs(1), vec![(0, 8, 4)]);
    }

    #[test]
    fn small_tiles_replicate_and_ragged_tiles_clamp() {
        // 16x16 f32 on 4 warps: 64 threads cover it, the other 64 are copies.
        let l = Layout::coalesced(&[16, 16], 4, 128);
        assert_ne!(l.replication_mask(), 0);
        assert_covers_once(&l);
        // 50 elements: pairs of f32 (50 is even), and the last lanes clamp.
        let l = Layout::coalesced(&[50], 4, 32);
        assert_eq!(l.vector_width(4), 2);
        assert!(!l.never_clamps());
        assert_eq!(l.coords(31, 1), vec![49]);
        assert!(!l.is_owner(31, 1));
        // Fewer elements than threads: one element per thread, the rest copies.
        let l = Layout::coalesced(&[2, 8], 4, 32);
        assert_eq!(l.registers(), 1);
        assert_ne!(l.replication_mask(), 0);
        assert_covers_once(&l);
    }

    #[test]
    fn explicit_blocked_layouts_cover_every_element_once() {
        let b = Blocked {
            size_per_thread: vec![2, 1],
            threads_per_warp: vec![4, 8],
            warps_per_block: vec![1, 2],
            order: vec![0, 1],
        };
        for shape in [[8, 16], [3, 5], [64, 64], [1, 1], [9, 33]] {
            let l = Layout::blocked(&shape, &b, 64).expect("valid");
            assert_covers_once(&l);
        }
        let bad = Blocked {
            threads_per_warp: vec![4, 4],
            ..b
        };
        assert!(Layout::blocked(&[8, 8], &bad, 64).is_err());
    }

    #[test]
    fn slices_cover_their_shape_and_group_the_reduced_registers() {
        for shape in shapes() {
            for axis in 0..shape.len() {
                for warps in [1, 4] {
                    let l = Layout::coalesced(&shape, 4, warps * 32);
                    let (s, groups) = l.slice(axis);
                    assert_covers_once(&s);
                    // Each group holds, in every thread, elements of one line along `axis`.
                    for t in 0..l.threads() {
                        for (g, members) in groups.iter().enumerate() {
                            for &r in members {
                                let mut c = l.coords(t, r);
                                c.remove(axis);
                                assert_eq!(c, s.coords(t, g));
                            }
                        }
                    }
                    // A slice of a slice, too.
                    if s.rank() > 0 {
                        assert_covers_once(&s.slice(0).0);
                    }
                }
            }
        }
    }

    /// Checks a conversion that `register_sources` calls free against the owner functions.
    fn assert_free_conversion_is_right(src: &Layout, dst: &Layout, map: &CoordMap) {
        let regs = register_sources(src, dst, map).expect("free");
        for t in 0..dst.threads() {
            for (r, &s) in regs.iter().enumerate() {
                let want = map.source_of(src.shape(), dst.shape(), &dst.coords(t, r));
                assert_eq!(src.coords(t, s), want, "thread {t} register {r}");
            }
        }
    }

    #[test]
    fn a_slice_reshaped_and_broadcast_back_to_its_parent_stays_in_registers() {
        for (shape, warps) in [([4, 512], 4), ([1, 4096], 8), ([37, 50], 4), ([16, 16], 1)] {
            let parent = Layout::coalesced(&shape, 4, warps * 32);
            let (row, _) = parent.slice(1);
            let column = row.reshape_unit(&[shape[0], 1]).expect("unit reshape");
            assert_covers_once(&column);
            let map = CoordMap::broadcast(&[shape[0], 1], &shape);
            assert_free_conversion_is_right(&column, &parent, &map);
        }
    }

    #[test]
    fn a_row_vector_broadcasts_for_free_and_a_column_does_not() {
        let full = Layout::coalesced(&[64, 256], 4, 128);
        let row = Layout::coalesced(&[1, 256], 4, 128);
        assert_free_conversion_is_right(&row, &full, &CoordMap::broadcast(&[1, 256], &[64, 256]));
        let column = Layout::coalesced(&[64, 1], 4, 128);
        let map = CoordMap::broadcast(&[64, 1], &[64, 256]);
        assert!(register_sources(&column, &full, &map).is_none());
    }

    #[test]
    fn reshapes_and_permutations_keep_registers() {
        let flat = Layout::coalesced(&[4096], 4, 128);
        let square = Layout::coalesced(&[32, 128], 4, 128);
        assert_free_conversion_is_right(&flat, &square, &CoordMap::RowMajor);
        let l = Layout::coalesced(&[8, 16, 32], 4, 128);
        let p = l.permute(&[2, 0, 1]);
        assert_covers_once(&p);
        assert_free_conversion_is_right(&l, &p, &CoordMap::permute(&[2, 0, 1]));
        // A transposed layout is not the coalesced one of the transposed shape.
        let t = Layout::coalesced(&[64, 32], 4, 128).permute(&[1, 0]);
        let c = Layout::coalesced(&[32, 64], 4, 128);
        assert!(register_sources(&t, &c, &CoordMap::identity(2)).is_none());
    }

    /// Random shapes, block sizes and element sizes: coalesced layouts, their slices,
    /// permutations and unit-axis reshapes cover every element once, and every conversion
    /// `register_sources` calls free gives each register its element.
    #[test]
    fn random_layouts_and_conversions() {
        use rand::Rng;
        let mut rng = cuprum_testkit::random::rng("random_layouts_and_conversions");
        for _ in 0..200 {
            let rank = rng.random_range(1..=3);
            let shape: Vec<u32> = (0..rank)
                .map(|_| {
                    if rng.random_bool(0.5) {
                        1 << rng.random_range(0..7)
                    } else {
                        rng.random_range(1..70)
                    }
                })
                .collect();
            // Tiles the lowering would hold in registers (at most 128 per thread).
            if shape.iter().product::<u32>() > 8192 {
                continue;
            }
            let threads = 32 << rng.random_range(0..3);
            let bytes = [1, 2, 4, 8][rng.random_range(0..4)];
            let l = Layout::coalesced(&shape, bytes, threads);
            assert_covers_once(&l);
            let axis = rng.random_range(0..rank);
            let (s, _) = l.slice(axis);
            assert_covers_once(&s);
            let mut perm: Vec<u32> = (0..rank as u32).collect();
            perm.rotate_left(rng.random_range(0..rank));
            let p = l.permute(&perm);
            assert_covers_once(&p);
            assert_free_conversion_is_right(&l, &p, &CoordMap::permute(&perm));
            // The slice with a unit axis where the reduced one was, broadcast back.
            let mut unit = shape.clone();
            unit[axis] = 1;
            let column = s.reshape_unit(&unit).expect("unit reshape");
            assert_covers_once(&column);
            assert_free_conversion_is_right(&column, &l, &CoordMap::broadcast(&unit, &shape));
            // Any conversion called free must be right, to the coalesced layout of the
            // same shape or of a flattened one.
            let other = Layout::coalesced(&shape, [1, 4, 8][rng.random_range(0..3)], threads);
            if register_sources(&p, &other.permute(&perm), &CoordMap::identity(rank)).is_some() {
                assert_free_conversion_is_right(
                    &p,
                    &other.permute(&perm),
                    &CoordMap::identity(rank),
                );
            }
            let flat = [shape.iter().product::<u32>()];
            let f = Layout::coalesced(&flat, bytes, threads);
            if register_sources(&l, &f, &CoordMap::RowMajor).is_some() {
                assert_free_conversion_is_right(&l, &f, &CoordMap::RowMajor);
            }
        }
    }

    #[test]
    fn unit_axis_maps() {
        assert_eq!(unit_axes_map(&[4], &[4, 1]), Some(vec![Some(0), None]));
        assert_eq!(unit_axes_map(&[1, 4, 1], &[4]), Some(vec![Some(1)]));
        assert_eq!(unit_axes_map(&[4, 2], &[2, 4]), None);
        assert_eq!(unit_axes_map(&[4], &[2, 2]), None);
        assert_eq!(CoordMap::reshape(&[8], &[2, 4]), CoordMap::RowMajor);
    }
}
