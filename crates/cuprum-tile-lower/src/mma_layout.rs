//! The register layouts of `mma.sync`'s operands and accumulator (`m16n8k16` for 16-bit
//! inputs, `m16n8k8` for `tf32`), as [`Layout`]s,
//! so that an `mma`'s accumulator stays in registers across a K loop and its operands reach
//! their fragments through the ordinary layout conversions.
//!
//! The fragment tables are `cuprum_ir::matrix`'s (the one copy of the PTX ISA's): every
//! position there is `base + g * per_g + t * per_t` of the lane's group `g = lane / 4` and
//! thread `t = lane % 4` ([`LaneAffine`], checked for every lane), so the lane bits of a
//! layout are the multiples of `per_g` and `per_t`, and a register's offset is its base: its
//! position in lane 0. A block's warps form a `warps_m x warps_n` grid ([`WarpGrid`]) over
//! 16x8 result blocks, interleaved (warp `w` takes every `warps_m`-th block row), as
//! Triton's MMA layout; registers repeat over the blocks each warp takes, and over `K` in
//! steps of 16 for the operands. Warps the result's blocks leave over go to the batch axis
//! of a rank-3 `mma` (each warp then multiplies its own batches: [`WarpGrid::batched`]);
//! warps that a small tile still leaves without a block of their own hold copies
//! (replication bits). The three layouts agree: the thread holding accumulator
//! block `(i, j)`'s fragment holds A's fragments for block row `i` and B's for block column
//! `j` at every K step.

use cuprum_ir::MmaShape;

use crate::layout::{LANE_BITS, Layout};

/// Rows and columns of one `mma.sync` result block.
pub(crate) const BLOCK_M: u32 = 16;
/// Columns of one result block.
pub(crate) const BLOCK_N: u32 = 8;

/// The K of one `mma.sync` step of `shape` (16 for 16-bit inputs, 8 for `tf32`).
pub(crate) const fn block_k(shape: MmaShape) -> u32 {
    shape.k() as u32
}

/// A fragment position as a function of the lane: `base + g * per_g + t * per_t` (row and
/// column), where `g = lane / 4` and `t = lane % 4`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LaneAffine {
    pub(crate) base: (u32, u32),
    pub(crate) per_g: (u32, u32),
    pub(crate) per_t: (u32, u32),
}

impl LaneAffine {
    /// The affine form of `position`, if every lane's position has it.
    pub(crate) fn of(position: impl Fn(u32) -> (usize, usize)) -> Option<LaneAffine> {
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

    /// The (row, column) offsets of the five lane bits: `t`'s two, then `g`'s three.
    fn lane_bits(&self) -> [(u32, u32); LANE_BITS] {
        let (pt, pg) = (self.per_t, self.per_g);
        [
            pt,
            (pt.0 * 2, pt.1 * 2),
            pg,
            (pg.0 * 2, pg.1 * 2),
            (pg.0 * 4, pg.1 * 4),
        ]
    }
}

/// Which operand of an `mma` a layout is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Operand {
    /// `[M, K]`.
    A,
    /// `[K, N]`.
    B,
    /// The accumulator and result, `[M, N]`.
    C,
}

/// How a block's warps share the result's 16x8 blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct WarpGrid {
    /// Warps along M, then along N, then along the batch axis (powers of two); any more
    /// warps hold copies.
    pub(crate) m: u32,
    pub(crate) n: u32,
    pub(crate) batch: u32,
    /// All warps of the block.
    pub(crate) warps: u32,
}

impl WarpGrid {
    /// The grid for a `[m, n]` result in `warps` warps (a power of two): each warp gets at
    /// least one block, and the warps split the side with more blocks per warp first.
    pub(crate) fn new(m: u32, n: u32, warps: u32) -> WarpGrid {
        let (mut wm, mut wn) = (1u32, 1u32);
        while wm * wn < warps {
            let (rows, cols) = ((m / BLOCK_M) / wm, (n / BLOCK_N) / wn);
            // Compare the warps' sub-tiles in elements: rows of 16, columns of 8.
            if rows >= 2 && rows * BLOCK_M >= cols * BLOCK_N {
                wm *= 2;
            } else if cols >= 2 {
                wn *= 2;
            } else if rows >= 2 {
                wm *= 2;
            } else {
                break;
            }
        }
        WarpGrid {
            m: wm,
            n: wn,
            batch: 1,
            warps,
        }
    }

    /// The grid of a rank-3 `mma` of `batches` `[m, n]` results: [`new`](Self::new)'s, then
    /// the warps it leaves over along the batch axis, as long as they divide the batches
    /// (so every warp has as many), so that many small batches in one tile are shared out
    /// rather than held by every warp.
    pub(crate) fn batched(batches: u32, m: u32, n: u32, warps: u32) -> WarpGrid {
        let mut grid = Self::new(m, n, warps);
        while grid.m * grid.n * grid.batch < warps && batches.is_multiple_of(grid.batch * 2) {
            grid.batch *= 2;
        }
        grid
    }

    /// The grid of a chained `mma` (`mma_chains`): the warps split the rows as far as there
    /// are blocks of 16, and only the warps left over split the columns.
    pub(crate) fn rows(m: u32, n: u32, warps: u32) -> WarpGrid {
        let mut wm = 1u32;
        while wm < warps && (m / BLOCK_M) / wm >= 2 {
            wm *= 2;
        }
        let mut wn = 1u32;
        while wm * wn < warps && (n / BLOCK_N) / wn >= 2 {
            wn *= 2;
        }
        WarpGrid {
            m: wm,
            n: wn,
            batch: 1,
            warps,
        }
    }
}

/// The fragment forms of `shape`: per register and element of it (two halves of 16-bit
/// inputs, one `tf32`; for C, one) its lane-affine position, or `None` if the tables are not
/// affine in the lane.
pub(crate) fn fragment_forms(shape: MmaShape, operand: Operand) -> Option<Vec<LaneAffine>> {
    let mut out = Vec::new();
    match operand {
        Operand::A => {
            for reg in 0..4 {
                for half in 0..shape.elements_per_register() {
                    out.push(LaneAffine::of(|l| shape.a_position(l, reg, half))?);
                }
            }
        }
        Operand::B => {
            for reg in 0..2 {
                for half in 0..shape.elements_per_register() {
                    out.push(LaneAffine::of(|l| shape.b_position(l, reg, half))?);
                }
            }
        }
        Operand::C => {
            for reg in 0..4 {
                out.push(LaneAffine::of(|l| MmaShape::c_position(l, reg))?);
            }
        }
    }
    Some(out)
}

/// The layout of `operand` of an `mma` whose tiles have `shape` (`[.., rows, cols]` of that
/// operand, rank 2 or 3 with a leading batch axis) in `grid`'s warps (see the module docs).
/// The per-block register offsets are `block_origin + form.base`, in the order blocks, then
/// K steps (operands), then [`fragment_forms`]; where `K` is not a multiple of 16, the
/// positions past it have no register (their fragments hold zeros).
pub(crate) fn layout(
    mma: MmaShape,
    operand: Operand,
    shape: &[u32],
    grid: WarpGrid,
) -> Result<Layout, String> {
    let rank = shape.len();
    if rank < 2 {
        return Err(format!("an mma operand of rank {rank}"));
    }
    let (r, c) = (rank - 2, rank - 1);
    let forms = fragment_forms(mma, operand)
        .ok_or_else(|| format!("{mma:?}'s fragment layout is not affine in the lane"))?;
    let first = forms
        .first()
        .ok_or_else(|| "no fragment registers".to_string())?;
    if forms.iter().any(|f| f.lane_bits() != first.lane_bits()) {
        return Err(format!("{mma:?}'s fragments differ in their lane bits"));
    }
    let offsets = |(row, col): (u32, u32)| {
        let mut v = vec![0u32; rank];
        v[r] = row;
        v[c] = col;
        v
    };
    let mut thread_bits: Vec<Vec<u32>> = first.lane_bits().into_iter().map(offsets).collect();
    // Warp bits: along M (the rows of A and C), then along N (the columns of B and C).
    let warp_bits = |count: u32, step: (u32, u32), applies: bool| {
        (0..count.ilog2())
            .map(|i| {
                if applies {
                    offsets((step.0 << i, step.1 << i))
                } else {
                    vec![0; rank]
                }
            })
            .collect::<Vec<_>>()
    };
    let along_m = matches!(operand, Operand::A | Operand::C);
    let along_n = matches!(operand, Operand::B | Operand::C);
    thread_bits.extend(warp_bits(grid.m, (BLOCK_M, 0), along_m));
    thread_bits.extend(warp_bits(grid.n, (0, BLOCK_N), along_n));
    // Warps along the batch axis (every operand has it): warp bit i steps 2^i batches.
    if grid.batch > 1 && rank != 3 {
        return Err(format!("a batch grid for an operand of rank {rank}"));
    }
    thread_bits.extend((0..grid.batch.ilog2()).map(|i| {
        let mut v = vec![0; rank];
        v[0] = 1 << i;
        v
    }));
    let used = grid.m * grid.n * grid.batch;
    thread_bits.extend(warp_bits((grid.warps / used).max(1), (0, 0), false));

    // Register origins: per batch, per block row (A, C) or K step (B), per block column (B, C)
    // or K step (A).
    let (rows, cols) = (shape[r], shape[c]);
    let row_origins: Vec<u32> = match operand {
        Operand::A | Operand::C => (0..rows.div_ceil(BLOCK_M * grid.m))
            .map(|i| i * BLOCK_M * grid.m)
            .collect(),
        Operand::B => (0..rows.div_ceil(block_k(mma)))
            .map(|i| i * block_k(mma))
            .collect(),
    };
    let col_origins: Vec<u32> = match operand {
        Operand::B | Operand::C => (0..cols.div_ceil(BLOCK_N * grid.n))
            .map(|j| j * BLOCK_N * grid.n)
            .collect(),
        Operand::A => (0..cols.div_ceil(block_k(mma)))
            .map(|j| j * block_k(mma))
            .collect(),
    };
    let batches = if rank == 3 { shape[0] } else { 1 };
    let mut regs = Vec::new();
    for b in (0..batches).step_by(grid.batch as usize) {
        for &row in &row_origins {
            for &col in &col_origins {
                for f in &forms {
                    let (r0, c0) = (row + f.base.0, col + f.base.1);
                    // Past a K that is not a multiple of 16 the fragments hold zeros,
                    // which are no elements of the tile.
                    if r0 >= rows || c0 >= cols {
                        continue;
                    }
                    let mut v = offsets((r0, c0));
                    if rank == 3 {
                        v[0] = b;
                    }
                    regs.push(v);
                }
            }
        }
    }
    Layout::linear(shape, thread_bits, regs)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every fragment position of `m16n8k16` is affine in the lane, and the forms give back
    /// each lane's position; a position that is not affine is refused.
    #[test]
    fn fragment_positions_are_affine_in_the_lane() {
        for shape in MmaShape::ALL {
            for reg in 0..4 {
                for half in 0..2 {
                    let f = LaneAffine::of(|l| shape.a_position(l, reg, half)).unwrap();
                    for lane in 0..32 {
                        let (r, c) = shape.a_position(lane, reg, half);
                        assert_eq!(f.at(lane), (r as u32, c as u32));
                    }
                }
            }
        }
        assert!(LaneAffine::of(|l| ((l * l) as usize, 0)).is_none());
    }

    /// A batch grid takes the warps the result's blocks leave over, as long as they divide
    /// the batches; its layouts cover each batch's tiles once, and the warp holding
    /// accumulator element `(b, i, j)` holds A's row `i` and B's column `j` of batch `b`.
    #[test]
    fn batch_grids_share_batches_out_and_cover_their_tiles() {
        let grid = |b, m, n, w| {
            let g = WarpGrid::batched(b, m, n, w);
            (g.m, g.n, g.batch)
        };
        assert_eq!(grid(4, 16, 16, 4), (1, 2, 2));
        assert_eq!(grid(8, 16, 8, 4), (1, 1, 4));
        assert_eq!(grid(6, 16, 8, 4), (1, 1, 2));
        assert_eq!(grid(3, 16, 8, 4), (1, 1, 1));
        assert_eq!(grid(8, 64, 64, 4), (2, 2, 1));
        let shape = MmaShape::M16n8k16F16;
        for (batches, m, n, k, warps) in [(4, 16, 16, 16, 4), (8, 16, 8, 32, 8), (6, 32, 8, 16, 8)]
        {
            let grid = WarpGrid::batched(batches, m, n, warps);
            assert!(grid.batch > 1);
            let threads = warps * 32;
            let a = layout(shape, Operand::A, &[batches, m, k], grid).unwrap();
            let b = layout(shape, Operand::B, &[batches, k, n], grid).unwrap();
            let c = layout(shape, Operand::C, &[batches, m, n], grid).unwrap();
            for (l, [d0, d1, d2]) in [
                (&a, [batches, m, k]),
                (&b, [batches, k, n]),
                (&c, [batches, m, n]),
            ] {
                assert_eq!(l.threads(), threads);
                let mut seen = vec![0u32; (d0 * d1 * d2) as usize];
                for t in 0..threads {
                    for reg in 0..l.registers() {
                        if l.is_owner(t, reg) {
                            let x = l.coords(t, reg);
                            seen[((x[0] * d1 + x[1]) * d2 + x[2]) as usize] += 1;
                        }
                    }
                }
                assert!(
                    seen.iter().all(|&s| s == 1),
                    "{batches}x{m}x{n}x{k} in {warps} warps"
                );
            }
            for warp in 0..warps {
                let lanes = warp * 32..(warp + 1) * 32;
                let held = |l: &Layout, axes: [usize; 2]| -> Vec<(u32, u32)> {
                    lanes
                        .clone()
                        .flat_map(|t| (0..l.registers()).map(move |r| l.coords(t, r)))
                        .map(|x| (x[axes[0]], x[axes[1]]))
                        .collect()
                };
                let (a_rows, b_cols) = (held(&a, [0, 1]), held(&b, [0, 2]));
                for t in lanes.clone() {
                    for reg in 0..c.registers() {
                        let x = c.coords(t, reg);
                        assert!(a_rows.contains(&(x[0], x[1])) && b_cols.contains(&(x[0], x[2])));
                    }
                }
            }
        }
    }

    /// Each layout covers every element of its tile exactly once among its owners, and the
    /// warp holding accumulator element (i, j) holds A's row i and B's column j (the
    /// tensor cores exchange operands between the lanes of a warp, not of a block).
    #[test]
    fn operand_layouts_cover_their_tiles_and_agree() {
        let shape = MmaShape::M16n8k16F16;
        for (m, n, k, warps) in [
            (16, 8, 16, 1),
            (64, 64, 32, 4),
            (48, 24, 16, 8),
            (32, 128, 64, 8),
        ] {
            let grid = WarpGrid::new(m, n, warps);
            let threads = warps * 32;
            let a = layout(shape, Operand::A, &[m, k], grid).unwrap();
            let b = layout(shape, Operand::B, &[k, n], grid).unwrap();
            let c = layout(shape, Operand::C, &[m, n], grid).unwrap();
            for (l, dims) in [(&a, [m, k]), (&b, [k, n]), (&c, [m, n])] {
                assert_eq!(l.threads(), threads);
                let mut seen = vec![0u32; (dims[0] * dims[1]) as usize];
                for t in 0..threads {
                    for reg in 0..l.registers() {
                        if l.is_owner(t, reg) {
                            let x = l.coords(t, reg);
                            seen[(x[0] * dims[1] + x[1]) as usize] += 1;
                        }
                    }
                }
                assert!(seen.iter().all(|&s| s == 1), "{m}x{n}x{k} in {warps} warps");
            }
            for warp in 0..warps {
                let lanes = warp * 32..(warp + 1) * 32;
                let held = |l: &Layout, axis: usize| -> Vec<u32> {
                    lanes
                        .clone()
                        .flat_map(|t| (0..l.registers()).map(move |r| l.coords(t, r)[axis]))
                        .collect()
                };
                let (a_rows, b_cols) = (held(&a, 0), held(&b, 1));
                for t in lanes.clone() {
                    for reg in 0..c.registers() {
                        let x = c.coords(t, reg);
                        assert!(a_rows.contains(&x[0]) && b_cols.contains(&x[1]));
                    }
                }
            }
        }
    }
}
