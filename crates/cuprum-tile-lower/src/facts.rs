//! What a launch knows of its tensors that lets the lowering drop run-time tests: the
//! specialization on contiguity and divisibility that Triton and cuTile make too.
//!
//! Without facts, every tile access tests at run time whether its tile lies wholly inside
//! the tensor and whether its runs are aligned, and keeps an edge path that tests every
//! element. With [`TensorFacts`], an access whose tile extents divide the tensor's sizes
//! ([`TensorFacts::size_divisors`]) has tiles that are wholly inside or wholly outside
//! (tile origins are multiples of the extents), so its edge path is "all padding" (loads) or
//! nothing (stores); with [`TensorFacts::aligned_runs`] its runs need no alignment test and
//! the last stride is the constant 1. Smaller code: less for the driver to compile at a
//! first launch, and no join of two paths holding a whole tile, which costs registers.
//!
//! The facts are part of the specialization key: a launch computes them from its tensors
//! ([`TensorFacts::of`]) for the extents the kernel accesses them with ([`access_extents`]),
//! and a kernel lowered with them runs only with tensors that have them. Facts that do not
//! hold would make the kernel read or write outside the tensor, so nothing but
//! [`TensorFacts::of`] should make them.

use cuprum_tile_ir::{Op, Stmt, TileKernel, View};

/// The facts of one tensor argument (see the module docs). [`Default`]: nothing known.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct TensorFacts {
    /// Its last stride is 1, and its allocation's address and its offset and other strides
    /// (in bytes) are multiples of 16: every run of up to 16 bytes along the last axis that
    /// starts at a multiple of its length is aligned.
    pub aligned_runs: bool,
    /// A tensor map can describe it (the tensor memory accelerator can copy its tiles):
    /// rank 1 to 5, runs aligned as above, every other stride positive and below 2^40
    /// bytes, every size 1 to 2^31 - 1 (so that tile coordinates fit the copies' `i32`s).
    pub tensor_map: bool,
    /// Per axis, a number its size is a multiple of (1: nothing known): the access extent
    /// where it divides the size, else on the last axis the elements of a 16-byte chunk
    /// where rows are whole chunks; empty: nothing known on any axis.
    pub size_divisors: Vec<u64>,
}

/// The largest extent [`access_extents`] reports (beyond it: nothing, 1).
const MAX_EXTENT: u64 = 1 << 31;

impl TensorFacts {
    /// The facts of a tensor of `elem_bytes`-byte elements at element `offset` of an
    /// allocation at `address`, of `shape` and `strides` (in elements, any sign), accessed with tile
    /// extents `extents` (per axis, from [`access_extents`]). Rank 0 or a shape and strides
    /// of another rank than `extents`: nothing known.
    pub fn of(
        elem_bytes: u64,
        address: u64,
        offset: u64,
        shape: &[u64],
        strides: &[i64],
        extents: &[u64],
    ) -> TensorFacts {
        if shape.is_empty() || shape.len() != strides.len() || shape.len() != extents.len() {
            return TensorFacts::default();
        }
        let aligned = |elements: i128| (elements * i128::from(elem_bytes)) % 16 == 0;
        let (last, rest) = (strides[strides.len() - 1], &strides[..strides.len() - 1]);
        let aligned_runs = last == 1
            && address.is_multiple_of(16)
            && aligned(i128::from(offset))
            && rest.iter().all(|&s| aligned(i128::from(s)));
        let tensor_map = aligned_runs
            && shape.len() <= 5
            && shape.iter().all(|&n| (1..1 << 31).contains(&n))
            && rest
                .iter()
                .all(|&s| s > 0 && i128::from(s) * i128::from(elem_bytes) < 1 << 40);
        // The extent where it divides the size; else, on the last axis of a matrix a tensor
        // map describes, the elements of a 16-byte chunk where the rows are whole chunks
        // (what a tile store needs: it writes a row's last chunk whole). Contiguous such
        // matrices always have them (their row stride is aligned), so this splits no
        // specialization of theirs.
        let chunk = if tensor_map && shape.len() >= 2 && elem_bytes > 0 && 16 % elem_bytes == 0 {
            16 / elem_bytes
        } else {
            1
        };
        let last_axis = shape.len() - 1;
        let size_divisors = shape
            .iter()
            .zip(extents)
            .enumerate()
            .map(|(axis, (&n, &e))| {
                if e > 1 && n.is_multiple_of(e) {
                    e
                } else if axis == last_axis && chunk > 1 && n.is_multiple_of(chunk) {
                    chunk
                } else {
                    1
                }
            })
            .collect();
        TensorFacts {
            aligned_runs,
            tensor_map,
            size_divisors,
        }
    }

    /// Whether every tile of `shape` whose origin is a multiple of `shape` lies wholly inside
    /// the tensor or wholly outside it: each extent divides a known divisor of its axis.
    pub(crate) fn whole_tiles(&self, shape: &[u32]) -> bool {
        self.size_divisors.len() == shape.len()
            && shape
                .iter()
                .zip(&self.size_divisors)
                .all(|(&n, &d)| n > 0 && d.is_multiple_of(u64::from(n)))
    }

    /// The facts of the view of this tensor whose axis `i` is its axis `dim_map[i]`: the
    /// divisors follow their axes; runs are aligned only if the last axis stays last.
    pub(crate) fn permuted(&self, dim_map: &[usize]) -> TensorFacts {
        if self.size_divisors.len() != dim_map.len() {
            return TensorFacts::default();
        }
        let size_divisors = dim_map
            .iter()
            .map(|&a| self.size_divisors.get(a).copied().unwrap_or(1))
            .collect();
        let last_stays = dim_map.last() == Some(&(dim_map.len() - 1));
        TensorFacts {
            aligned_runs: self.aligned_runs && last_stays,
            // The other axes' order would change too: a map of the view is another map.
            tensor_map: self.tensor_map && dim_map.iter().enumerate().all(|(i, &a)| i == a),
            size_divisors,
        }
    }
}

/// Per parameter of a specialized kernel, per axis of a tensor parameter, the least common
/// multiple of the tile extents the kernel's whole-tile loads and stores of that tensor use
/// along that axis (1 where none does, or where it would exceed 2^31; empty for scalars and
/// generic shapes). A sub-tile store counts its sub-tile's extents: where they divide the
/// own tile's, its sub-tiles are whole or absent too.
pub fn access_extents(kernel: &TileKernel) -> Vec<Vec<u64>> {
    let mut extents: Vec<Vec<u64>> = kernel
        .params
        .iter()
        .map(|p| match &p.kind {
            cuprum_tile_ir::ParamKind::Tensor(t) => vec![1; t.rank()],
            cuprum_tile_ir::ParamKind::Scalar(_) => Vec::new(),
        })
        .collect();
    let shape_of = |v: cuprum_tile_ir::TileValue| -> Option<Vec<u64>> {
        let sizes = cuprum_tile_ir::known_sizes(&kernel.values[v].shape)?;
        Some(sizes.into_iter().map(u64::from).collect())
    };
    let mut add = |tensor: u32, axes: &mut dyn Iterator<Item = (usize, u64)>| {
        let Some(e) = extents.get_mut(tensor as usize) else {
            return;
        };
        for (axis, n) in axes {
            if let Some(slot) = e.get_mut(axis) {
                *slot = lcm(*slot, n).filter(|&l| l <= MAX_EXTENT).unwrap_or(1);
            }
        }
    };
    kernel.body.visit(&mut |s| match s {
        Stmt::Store { tensor, value }
        | Stmt::StorePart { tensor, value, .. }
        | Stmt::StoreMapped { tensor, value } => {
            if let Some(shape) = shape_of(*value) {
                add(*tensor, &mut shape.into_iter().enumerate());
            }
        }
        Stmt::Def {
            value,
            op: Op::Load { view, .. },
        } => {
            let Some(shape) = shape_of(*value) else {
                return;
            };
            match view {
                View::Own { tensor } | View::Tiled { tensor, .. } => {
                    add(*tensor, &mut shape.into_iter().enumerate());
                }
                View::Permuted {
                    tensor, dim_map, ..
                } => {
                    let axes: Option<Vec<usize>> = dim_map
                        .iter()
                        .map(|a| a.known().map(|a| a as usize))
                        .collect();
                    if let Some(axes) = axes {
                        add(*tensor, &mut axes.into_iter().zip(shape));
                    }
                }
            }
        }
        _ => {}
    });
    extents
}

/// The least common multiple of `a` and `b` (`None` on overflow or a zero).
fn lcm(a: u64, b: u64) -> Option<u64> {
    if a == 0 || b == 0 {
        return None;
    }
    let (mut x, mut y) = (a, b);
    while y != 0 {
        (x, y) = (y, x % y);
    }
    (a / x).checked_mul(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facts_need_every_condition() {
        let f = TensorFacts::of(4, 256, 0, &[64, 4096], &[4096, 1], &[1, 4096]);
        assert!(f.aligned_runs);
        assert!(f.tensor_map);
        // A negative row stride keeps runs aligned, but no tensor map describes it.
        let flipped = TensorFacts::of(4, 256, 0, &[64, 4096], &[-4096, 1], &[1, 1]);
        assert!(flipped.aligned_runs && !flipped.tensor_map);
        assert_eq!(f.size_divisors, vec![1, 4096]);
        assert!(f.whole_tiles(&[1, 4096]));
        assert!(f.whole_tiles(&[1, 1024]));
        assert!(!f.whole_tiles(&[2, 4096]));
        // An offset of one element, an odd row stride, a last stride of 2, an odd address.
        assert!(!TensorFacts::of(4, 256, 1, &[64, 4096], &[4096, 1], &[1, 1]).aligned_runs);
        assert!(!TensorFacts::of(4, 256, 0, &[64, 4095], &[4095, 1], &[1, 1]).aligned_runs);
        assert!(!TensorFacts::of(4, 256, 0, &[64, 2048], &[4096, 2], &[1, 1]).aligned_runs);
        assert!(!TensorFacts::of(4, 8, 0, &[64, 4096], &[4096, 1], &[1, 1]).aligned_runs);
        // A size the extent does not divide: nothing known on that axis, but for the rows of
        // a matrix a tensor map describes, whether they are whole 16-byte chunks.
        let ragged = TensorFacts::of(4, 256, 0, &[1000], &[1], &[128]);
        assert_eq!(ragged.size_divisors, vec![1]);
        assert!(!ragged.whole_tiles(&[128]));
        let odd = TensorFacts::of(2, 256, 0, &[300, 1001], &[1008, 1], &[128, 128]);
        assert_eq!(odd.size_divisors, vec![1, 1]);
        let rows = TensorFacts::of(2, 256, 0, &[300, 1000], &[1008, 1], &[128, 128]);
        assert_eq!(rows.size_divisors, vec![1, 8]);
        // Another rank than the extents: nothing.
        assert_eq!(
            TensorFacts::of(4, 256, 0, &[8, 8], &[8, 1], &[8]),
            TensorFacts::default()
        );
    }

    #[test]
    fn permuted_facts_follow_their_axes() {
        let f = TensorFacts::of(4, 256, 0, &[32, 64], &[64, 1], &[32, 64]);
        assert!(TensorFacts::of(4, 256, 0, &[32, 64], &[-64, 1], &[1, 1]).aligned_runs);
        let p = f.permuted(&[1, 0]);
        assert_eq!(p.size_divisors, vec![64, 32]);
        assert!(!p.aligned_runs);
        assert_eq!(f.permuted(&[0, 1]), f);
    }

    #[test]
    fn lcm_overflows_to_none() {
        assert_eq!(lcm(4, 6), Some(12));
        assert_eq!(lcm(u64::MAX, 2), None);
        assert_eq!(lcm(0, 2), None);
    }
}
