//! `Op::Mma` on whole tiles, exactly as the tile IR defines it: tensor-core sums of 16
//! products for `f16`/`bf16` inputs (through `cuprum_ir::tensor_core`, the arithmetic the
//! emulator's `mma.sync` and `wgmma` also use) and chains of fused multiply-adds for
//! `f32`/`f64`. Tiles are row-major bits, as everywhere in the interpreter.

use cuprum_ir::ScalarType;
use cuprum_ir::scalar::{self, OpFault};
use cuprum_ir::tensor_core::{Num, dot};
use cuprum_tile_ir::MmaKind;

/// The sizes of one `mma`: `batch` products of `[m, k]` by `[k, n]`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct MmaDims {
    pub batch: usize,
    pub m: usize,
    pub n: usize,
    pub k: usize,
}

impl MmaDims {
    /// The sizes of `a · b + acc` from the shapes of `a` and `b` (rank 2, or 3 with a leading
    /// batch axis; the validator checked that they agree).
    pub(crate) fn of(a: &[usize], b: &[usize]) -> MmaDims {
        let r = a.len();
        MmaDims {
            batch: if r == 3 { a[0] } else { 1 },
            m: a[r - 2],
            k: a[r - 1],
            n: b[r - 1],
        }
    }
}

/// `a · b + acc` of kind `kind`, row-major bits in and out.
pub(crate) fn mma(
    kind: MmaKind,
    d: MmaDims,
    a: &[u64],
    b: &[u64],
    acc: &[u64],
) -> Result<Vec<u64>, OpFault> {
    let mut out = Vec::with_capacity(d.batch * d.m * d.n);
    for batch in 0..d.batch {
        let a = &a[batch * d.m * d.k..][..d.m * d.k];
        let b = &b[batch * d.k * d.n..][..d.k * d.n];
        let acc = &acc[batch * d.m * d.n..][..d.m * d.n];
        // B by columns, so that each tensor-core dot product reads both operands in order.
        let column = |j: usize| (0..d.k).map(move |kk| b[kk * d.n + j]);
        match kind {
            MmaKind::TensorCore { input } => {
                let decode = if input == ScalarType::BF16 {
                    Num::bf16
                } else {
                    Num::f16
                };
                let an: Vec<Num> = a.iter().map(|&x| decode(x)).collect();
                let bt: Vec<Num> = (0..d.n).flat_map(column).map(decode).collect();
                let step = MmaKind::TENSOR_CORE_K as usize;
                for i in 0..d.m {
                    let row = &an[i * d.k..][..d.k];
                    for j in 0..d.n {
                        let col = &bt[j * d.k..][..d.k];
                        let mut sum = acc[i * d.n + j] as u32;
                        for (ra, cb) in row.chunks(step).zip(col.chunks(step)) {
                            sum = dot(
                                Num::f32(u64::from(sum)),
                                ra.iter().copied().zip(cb.iter().copied()),
                            );
                        }
                        out.push(u64::from(sum));
                    }
                }
            }
            MmaKind::FmaChain { elem } => {
                // Row by row: every element of a row takes its k-th product at step k, so
                // each one's chain runs in order of k while a step covers the whole row.
                for i in 0..d.m {
                    let mut row = acc[i * d.n..][..d.n].to_vec();
                    for kk in 0..d.k {
                        fma_row(elem, a[i * d.k + kk], &b[kk * d.n..][..d.n], &mut row)?;
                    }
                    out.extend_from_slice(&row);
                }
            }
        }
    }
    Ok(out)
}

/// `d[j] = fma(x, y[j], d[j])` for every `j`, with the kernel IR's fused multiply-add of
/// `elem` (`F32` or `F64`), eight lanes at a time.
fn fma_row(elem: ScalarType, x: u64, y: &[u64], d: &mut [u64]) -> Result<(), OpFault> {
    const LANES: usize = 8;
    let xs = [x; LANES];
    let mut next = [0u64; LANES];
    let (y_chunks, y_rest) = y.as_chunks::<LANES>();
    let (d_chunks, d_rest) = d.as_chunks_mut::<LANES>();
    for (yc, dc) in y_chunks.iter().zip(d_chunks) {
        scalar::mul_add(elem, &xs, yc, dc, &mut next)?;
        *dc = next;
    }
    for (&yj, dj) in y_rest.iter().zip(d_rest) {
        let mut one = [0u64];
        scalar::mul_add(elem, &[x], &[yj], &[*dj], &mut one)?;
        *dj = one[0];
    }
    Ok(())
}
