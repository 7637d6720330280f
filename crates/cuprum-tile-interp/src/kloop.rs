//! A GEMM's K loop as one computation: a `for` loop whose whole body loads a `[BM, BK]` tile
//! of A at `(row, k)` and a `[BK, BN]` tile of B at `(k, col)` (`k` the loop counter) and
//! `mma`s them into the one value the loop carries, in `f32` (cuTile Rust's `gemm`; a body
//! that ends with `continue` passing the product on is the same loop).
//!
//! Step by step, the loop makes each accumulator element the chain of fused multiply-adds
//! `acc = fma(a[i][k], b[k][j], acc)` over the K of the tiles it visits, in increasing `k`
//! (the tile IR's `mma` of `f32`). [`KLoop::run`] computes the same chains, each in the same
//! order with the same single rounding per step, straight from the tensors' memory, without
//! making the tiles: at a GEMM with small tiles (cuTile Rust's example multiplies
//! 16384x8192 by 8192x16384 in 16x16x8 tiles) the tiles themselves would cost far more than
//! the arithmetic. It takes only loops it can run exactly: unit step, both operand panels
//! inside their tensors (no padding), unit inner strides, non-negative row strides; any
//! other loop runs step by step ([`KLoop::run`] answers `None`).

use cuprum_ir::ScalarType;
use cuprum_tile_ir::{Block, Op, Stmt, TileValue, View};

use crate::memory::TensorView;

/// A recognized K loop (see the module docs): which tensors and tiles it reads.
#[derive(Clone, Debug)]
pub(crate) struct KLoop {
    /// A's parameter, tile rows (`BM`), the tile K (`BK`), and the rank-0 value that picks
    /// the row of tiles.
    pub a: u32,
    pub bm: usize,
    pub bk: usize,
    pub a_row: TileValue,
    /// B's parameter, tile columns (`BN`), and the rank-0 value that picks the column of
    /// tiles.
    pub b: u32,
    pub bn: usize,
    pub b_col: TileValue,
}

/// The K loop `body` is, if it is one: `counter` the loop's counter, `args` its carried
/// values, `elem` every value's element type.
pub(crate) fn recognize(
    counter: TileValue,
    args: &[TileValue],
    body: &Block,
    elem: &[ScalarType],
) -> Option<KLoop> {
    let [acc] = args else { return None };
    // A body that ends with `continue` with the next values is one that yields them.
    let (stmts, yields) = match body.stmts.split_last() {
        Some((Stmt::Continue { values }, rest)) => (rest, values.as_slice()),
        _ => (body.stmts.as_slice(), body.yields.as_slice()),
    };
    let [yielded] = yields else {
        return None;
    };
    let mut loads = Vec::new();
    let mut mma = None;
    for s in stmts {
        match s {
            Stmt::SourceLine { .. } => {}
            Stmt::Def {
                value,
                op:
                    Op::Load {
                        view:
                            View::Tiled {
                                tensor,
                                tile,
                                index,
                            },
                        ..
                    },
            } => {
                let tile: Vec<usize> = tile
                    .iter()
                    .map(|d| d.known().map(|n| n as usize))
                    .collect::<Option<_>>()?;
                loads.push((*value, *tensor, tile, index.clone()));
            }
            Stmt::Def {
                value,
                op: Op::Mma { a, b, acc: from },
            } if mma.is_none() => mma = Some((*value, *a, *b, *from)),
            _ => return None,
        }
    }
    let (d, a, b, from) = mma?;
    if d != *yielded || from != *acc || loads.len() != 2 {
        return None;
    }
    let f32_value = |v: TileValue| elem.get(v.index()) == Some(&ScalarType::F32);
    if ![d, a, b, *acc].into_iter().all(f32_value) {
        return None;
    }
    let load = |v: TileValue| loads.iter().find(|l| l.0 == v);
    let (_, ta, tile_a, index_a) = load(a)?;
    let (_, tb, tile_b, index_b) = load(b)?;
    let (&[bm, bk], &[bk2, bn], [a_row, a_k], [b_k, b_col]) = (
        tile_a.as_slice(),
        tile_b.as_slice(),
        index_a.as_slice(),
        index_b.as_slice(),
    ) else {
        return None;
    };
    // The counter picks the K tile of both and nothing else; the row and the column are
    // defined outside the loop.
    if bk != bk2 || *a_k != counter || *b_k != counter || *a_row == counter || *b_col == counter {
        return None;
    }
    let inside = |v: &TileValue| loads.iter().any(|l| l.0 == *v) || *v == d;
    if inside(a_row) || inside(b_col) {
        return None;
    }
    Some(KLoop {
        a: *ta,
        bm,
        bk,
        a_row: *a_row,
        b: *tb,
        bn,
        b_col: *b_col,
    })
}

/// K loops computed at once so far in this process (see [`fused_k_loops`]).
static FUSED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// How many GEMM K loops the interpreter has computed at once (rather than step by step)
/// in this process: what tests of this path check it was taken.
pub fn fused_k_loops() -> u64 {
    FUSED.load(std::sync::atomic::Ordering::Relaxed)
}

/// What identifies a packed B panel: the launch, the tensor's memory, the panel's first
/// element, row stride, depth and width.
type PanelKey = (u64, usize, usize, usize, usize, usize);

thread_local! {
    /// The B panel this thread packed last, and its key.
    static PACKED_B: std::cell::RefCell<(Option<PanelKey>, Vec<f32>)> =
        const { std::cell::RefCell::new((None, Vec::new())) };
}

/// A panel of a row-major-addressed tensor as `f32`s: element `(r, c)` of the panel at
/// `at + r * row_stride + c`.
struct Panel<'a> {
    data: &'a [f32],
    at: usize,
    row_stride: usize,
}

impl<'a> Panel<'a> {
    /// Rows `rows` and columns `cols` of rank-2 `t`, when they lie inside the tensor and its
    /// allocation, its inner stride is 1 and its row stride is not negative, and its bytes
    /// can be read as `f32`s in place.
    fn of(
        t: &TensorView<'a>,
        rows: std::ops::Range<i128>,
        cols: std::ops::Range<i128>,
    ) -> Option<Self> {
        if t.elem != ScalarType::F32 || !cfg!(target_endian = "little") {
            return None;
        }
        let (&[height, width], &[row_stride, 1]) = (t.shape, t.strides) else {
            return None;
        };
        if rows.start < 0
            || cols.start < 0
            || rows.end > i128::from(height)
            || cols.end > i128::from(width)
            || rows.is_empty()
            || cols.is_empty()
            || row_stride < 0
        {
            return None;
        }
        let data: &[f32] = bytemuck::try_cast_slice(t.bytes).ok()?;
        let at = i128::from(t.offset) + rows.start * i128::from(row_stride) + cols.start;
        let last =
            at + (rows.end - rows.start - 1) * i128::from(row_stride) + (cols.end - cols.start - 1);
        if last >= data.len() as i128 {
            return None;
        }
        Some(Panel {
            data,
            at: usize::try_from(at).ok()?,
            row_stride: usize::try_from(row_stride).ok()?,
        })
    }
}

impl KLoop {
    /// The loop's result from `acc` (row-major `f32` bits, `bm * bn`), for counters
    /// `start..end` (step 1) with the row and column of tiles `row`, `col` in launch number
    /// `launch` (which names the tensors' contents for [`PACKED_B`]); `None` when the
    /// loop is not one this computes exactly (see the module docs), so it must run step by
    /// step.
    pub(crate) fn run(
        &self,
        launch: u64,
        a: &TensorView<'_>,
        b: &TensorView<'_>,
        (row, col): (i128, i128),
        (start, end): (i128, i128),
        acc: &[u64],
    ) -> Option<Vec<u64>> {
        let (bm, bn, bk) = (self.bm as i128, self.bn as i128, self.bk as i128);
        if end <= start || acc.len() != self.bm * self.bn {
            return None;
        }
        let (k0, k1) = (start.checked_mul(bk)?, end.checked_mul(bk)?);
        let pa = Panel::of(a, row * bm..row * bm + bm, k0..k1)?;
        let pb = Panel::of(b, k0..k1, col * bn..col * bn + bn)?;
        let depth = (k1 - k0) as usize;
        let mut c: Vec<f32> = acc.iter().map(|&x| f32::from_bits(x as u32)).collect();
        if pb.row_stride == self.bn {
            chains(&pa, &pb, depth, self.bm, self.bn, &mut c);
        } else {
            // B's panel, `depth` rows each on their own cache line (and, in a large tensor,
            // page): copied to consecutive rows once, and kept for the next blocks of this
            // thread that read the same panel of the same launch.
            let key = (
                launch,
                pb.data.as_ptr() as usize,
                pb.at,
                pb.row_stride,
                depth,
                self.bn,
            );
            PACKED_B.with_borrow_mut(|packed| {
                if packed.0 != Some(key) {
                    packed.1.clear();
                    for k in 0..depth {
                        packed
                            .1
                            .extend_from_slice(&pb.data[pb.at + k * pb.row_stride..][..self.bn]);
                    }
                    packed.0 = Some(key);
                }
                let dense = Panel {
                    data: &packed.1,
                    at: 0,
                    row_stride: self.bn,
                };
                chains(&pa, &dense, depth, self.bm, self.bn, &mut c);
            });
        }
        FUSED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Some(c.into_iter().map(|x| u64::from(x.to_bits())).collect())
    }
}

/// Columns of `c` a step updates together: vectors of the CPU's FMA.
const COLS: usize = 16;

/// `c[i][j] = fma(a[i][k], b[k][j], c[i][j])` for `k` in `0..depth`, in that order, for every
/// `i < m`, `j < n`: with the CPU's vector FMA where it has one (the same single rounding).
fn chains(a: &Panel<'_>, b: &Panel<'_>, depth: usize, m: usize, n: usize, c: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has the features the function is compiled for.
            unsafe { chains_avx512(a, b, depth, m, n, c) };
            return;
        }
        if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
            // SAFETY: as above.
            unsafe { chains_avx2(a, b, depth, m, n, c) };
            return;
        }
    }
    chains_plain::<4>(a, b, depth, m, n, c);
}

/// Eight rows of sixteen accumulators: half of AVX-512's registers.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn chains_avx512(a: &Panel<'_>, b: &Panel<'_>, depth: usize, m: usize, n: usize, c: &mut [f32]) {
    chains_plain::<8>(a, b, depth, m, n, c);
}

/// Four rows of sixteen accumulators: half of AVX2's registers.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn chains_avx2(a: &Panel<'_>, b: &Panel<'_>, depth: usize, m: usize, n: usize, c: &mut [f32]) {
    chains_plain::<4>(a, b, depth, m, n, c);
}

/// [`chains`] in blocks of `ROWS` x [`COLS`] accumulators kept in registers over the whole
/// depth, the rest element by element; every element's chain runs in order of `k`.
#[inline(always)]
fn chains_plain<const ROWS: usize>(
    a: &Panel<'_>,
    b: &Panel<'_>,
    depth: usize,
    m: usize,
    n: usize,
    c: &mut [f32],
) {
    let a_row = |i: usize| &a.data[a.at + i * a.row_stride..][..depth];
    let b_at = |k: usize| b.at + k * b.row_stride;
    let mut j0 = 0;
    while j0 + COLS <= n {
        let mut i0 = 0;
        while i0 + ROWS <= m {
            let mut acc = [[0f32; COLS]; ROWS];
            for (r, row) in acc.iter_mut().enumerate() {
                row.copy_from_slice(&c[(i0 + r) * n + j0..][..COLS]);
            }
            let rows: [&[f32]; ROWS] = std::array::from_fn(|r| a_row(i0 + r));
            for k in 0..depth {
                let bk = &b.data[b_at(k) + j0..][..COLS];
                for (row, a) in acc.iter_mut().zip(&rows) {
                    let x = a[k];
                    for (cj, &bj) in row.iter_mut().zip(bk) {
                        *cj = x.mul_add(bj, *cj);
                    }
                }
            }
            for (r, row) in acc.iter().enumerate() {
                c[(i0 + r) * n + j0..][..COLS].copy_from_slice(row);
            }
            i0 += ROWS;
        }
        for i in i0..m {
            let row = a_row(i);
            let ci = &mut c[i * n + j0..][..COLS];
            for (k, &x) in row.iter().enumerate() {
                let bk = &b.data[b_at(k) + j0..][..COLS];
                for (cj, &bj) in ci.iter_mut().zip(bk) {
                    *cj = x.mul_add(bj, *cj);
                }
            }
        }
        j0 += COLS;
    }
    if j0 < n {
        for i in 0..m {
            let row = a_row(i);
            let ci = &mut c[i * n + j0..(i + 1) * n];
            for (k, &x) in row.iter().enumerate() {
                let bk = &b.data[b_at(k) + j0..][..n - j0];
                for (cj, &bj) in ci.iter_mut().zip(bk) {
                    *cj = x.mul_add(bj, *cj);
                }
            }
        }
    }
}
