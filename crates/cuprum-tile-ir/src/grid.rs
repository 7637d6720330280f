//! The grid of a launch: one tile block per tile of the partitioned tensors.
//!
//! The semantic rule ([`crate`] docs, *Launch*): a partitioned tensor of rank `r <= 3` and
//! sizes `n_d`, cut into tiles `t_d` (its declared dims), gives `ceil(n_d / t_d)` blocks
//! along grid axis `d` and 1 along the others; every partitioned tensor of a launch must give
//! the same grid. [`grid_of`] is its one definition, for the host, the interpreter and the
//! tests. A tensor with no element along some axis gives 0 blocks there: the launch runs no
//! block.

use crate::kernel::{ParamKind, TensorAccess, TileKernel};
use crate::types::known_sizes;

/// Why the partitioned tensors of a launch do not give a grid.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GridError {
    /// A tile dimension is not a known size (still a const parameter): specialize the kernel
    /// first.
    #[error("tile kernel `{kernel}` is generic: its tile shapes are known once it is specialized")]
    Generic {
        /// The kernel.
        kernel: String,
    },
    /// No shape was given for a partitioned tensor.
    #[error("tile kernel `{kernel}`: no shape given for partitioned tensor `{param}`")]
    MissingShape {
        /// The kernel.
        kernel: String,
        /// The tensor parameter's name.
        param: String,
    },
    /// A partitioned tensor's rank differs from its tile's.
    #[error(
        "tile kernel `{kernel}`: partitioned tensor `{param}` has rank {got}, but its tiles have rank {expected}"
    )]
    Rank {
        /// The kernel.
        kernel: String,
        /// The tensor parameter's name.
        param: String,
        /// The tile's rank.
        expected: usize,
        /// The tensor's rank.
        got: usize,
    },
    /// More blocks along one axis than a grid axis counts (`u32`).
    #[error(
        "tile kernel `{kernel}`: partitioned tensor `{param}` needs {blocks} blocks along axis {axis}, more than a grid axis holds"
    )]
    TooManyBlocks {
        /// The kernel.
        kernel: String,
        /// The tensor parameter's name.
        param: String,
        /// The axis.
        axis: usize,
        /// The blocks it needs.
        blocks: u64,
    },
    /// Two partitioned tensors give different grids.
    #[error(
        "tile kernel `{kernel}`: partitioned tensors `{first}` and `{other}` give different grids, {first_grid:?} and {other_grid:?}"
    )]
    Disagree {
        /// The kernel.
        kernel: String,
        /// The first partitioned tensor's name.
        first: String,
        /// Its grid.
        first_grid: [u32; 3],
        /// The first tensor giving another grid.
        other: String,
        /// That grid.
        other_grid: [u32; 3],
    },
}

/// The grid of a launch of `kernel` whose tensor parameter `p` has shape `shapes[p]` (in
/// elements per axis; `None`, or a missing entry, for a scalar parameter): `Ok(None)` when
/// the kernel has no partitioned tensor, so that the launch gives its grid explicitly (see
/// the module docs for the rule).
pub fn grid_of(
    kernel: &TileKernel,
    shapes: &[Option<&[u64]>],
) -> Result<Option<[u32; 3]>, GridError> {
    let mut found: Option<([u32; 3], &str)> = None;
    for (p, param) in kernel.params.iter().enumerate() {
        let ParamKind::Tensor(t) = &param.kind else {
            continue;
        };
        if t.access != TensorAccess::Partitioned {
            continue;
        }
        let tile = t
            .partition_tile()
            .and_then(|tile| known_sizes(&tile))
            .ok_or_else(|| GridError::Generic {
                kernel: kernel.name.clone(),
            })?;
        let shape = shapes
            .get(p)
            .copied()
            .flatten()
            .ok_or_else(|| GridError::MissingShape {
                kernel: kernel.name.clone(),
                param: param.name.clone(),
            })?;
        if shape.len() != tile.len() || tile.len() > 3 {
            return Err(GridError::Rank {
                kernel: kernel.name.clone(),
                param: param.name.clone(),
                expected: tile.len(),
                got: shape.len(),
            });
        }
        let mut grid = [1u32; 3];
        for (axis, (&n, &t)) in shape.iter().zip(&tile).enumerate() {
            let blocks = n.div_ceil(u64::from(t.max(1)));
            grid[axis] = u32::try_from(blocks).map_err(|_| GridError::TooManyBlocks {
                kernel: kernel.name.clone(),
                param: param.name.clone(),
                axis,
                blocks,
            })?;
        }
        match found {
            None => found = Some((grid, &param.name)),
            Some((first_grid, first)) if first_grid != grid => {
                return Err(GridError::Disagree {
                    kernel: kernel.name.clone(),
                    first: first.to_string(),
                    first_grid,
                    other: param.name.clone(),
                    other_grid: grid,
                });
            }
            Some(_) => {}
        }
    }
    Ok(found.map(|(g, _)| g))
}

/// The tile coordinates of tile `t` (`t` below the product of `tiles`) in the schedule of a
/// mapped output ([`crate::Stmt::ForTiles`]) with `tiles[d]` tiles along axis `d` and map
/// shape `map`: its one definition, which the interpreter runs and the lowering emits.
///
/// Rank 1: tile `t`. Otherwise the axes before the last two are walked row-major, slowest,
/// one 2-D slice of tiles after another; within a slice of `m x n` tiles, tiles come in bands
/// of `g = map[rank - 2]` rows (the last band `min(g, m - first)` rows high), each band
/// column by column: `band = r / (g n)`, `first = band g`, `rows = min(g, m - first)`,
/// `row = first + (r mod g n) mod rows`, `col = (r mod g n) / rows`, where `r` is `t`'s
/// position in its slice. Consecutive tiles (those the blocks running at once take) then
/// share rows of the first operand and columns of the second, as Triton's grouped order.
pub fn mapped_tile(t: u64, tiles: &[u64], map: &[u64]) -> Vec<u64> {
    let rank = tiles.len();
    if rank <= 1 {
        return vec![t];
    }
    let (m, n) = (tiles[rank - 2].max(1), tiles[rank - 1].max(1));
    let (lead, r) = (t / (m * n), t % (m * n));
    let mut coords = vec![0u64; rank];
    let mut rest = lead;
    for d in (0..rank - 2).rev() {
        let size = tiles[d].max(1);
        coords[d] = rest % size;
        rest /= size;
    }
    let g = map.get(rank - 2).copied().unwrap_or(1).max(1);
    let band = r / (g * n);
    let first = band * g;
    let rows = g.min(m - first);
    let within = r % (g * n);
    coords[rank - 2] = first + within % rows;
    coords[rank - 1] = within / rows;
    coords
}

#[cfg(test)]
mod mapped_tests {
    use super::mapped_tile;

    #[test]
    fn the_schedule_visits_every_tile_once_in_bands() {
        for (tiles, map) in [
            (vec![7u64], vec![1u64]),
            (vec![5, 3], vec![1, 1]),
            (vec![5, 3], vec![2, 1]),
            (vec![4, 4], vec![4, 1]),
            (vec![2, 5, 3], vec![1, 3, 1]),
        ] {
            let total: u64 = tiles.iter().product();
            let mut seen = std::collections::HashSet::new();
            for t in 0..total {
                let c = mapped_tile(t, &tiles, &map);
                assert!(
                    c.iter().zip(&tiles).all(|(c, n)| c < n),
                    "{c:?} of {tiles:?}"
                );
                assert!(seen.insert(c), "tile {t} visited twice");
            }
        }
        // Bands of two rows, column by column: (0,0), (1,0), (0,1), (1,1), .., then row 2.
        let order: Vec<Vec<u64>> = (0..6).map(|t| mapped_tile(t, &[3, 2], &[2, 1])).collect();
        assert_eq!(order, [[0, 0], [1, 0], [0, 1], [1, 1], [2, 0], [2, 1]]);
    }
}
