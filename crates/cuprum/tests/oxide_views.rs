//! cuda-oxide's proof-carrying views and witnesses, each in a kernel against a plain-Rust
//! reference on fresh random data (the seed is printed), at ragged sizes, over outputs
//! poisoned first, with every element checked:
//! * output handles checked once: `element_thread32`, `tile_thread32` on `LinearTiles<4>`,
//!   `tile_2d32` on `RowMajorTiles<2, 3, 50>`, `tile_2d32_rt` on `RuntimeRowMajorTiles<2, 2>`
//!   (only whole tiles, inside their rows, are handed out: the rest stays poison);
//! * read views: `MatrixView32::row`/`col` exist exactly when their strip is inside the slice,
//!   `get(i).unwrap_or(..)`, `zip_exact` and its loop in a matrix product, with empty views in
//!   a tiled product with barriers;
//! * `thread::index_2d_runtime` witnesses bound, paired, chosen between at run time and passed
//!   by value to a helper, each resolved against the slice it addresses.
//!
//! And the point of the views: the dot-product loop has no bounds check in the PTX.

mod common;

use common::{assert_same, ctx};
use cuprum::simt::{
    ColView32, DisjointSlice, LinearTiles, MatrixView32, RowMajorTiles, RowView32,
    RuntimeRowMajorTiles, SharedArray, Uniform, kernel, launch_contract, thread,
};
use cuprum::{DeviceBuffer, LaunchConfig, LaunchConfig1D, LaunchConfig2D, RowWidth, cuda_module};
use cuprum_testkit::poison::poisoned;
use cuprum_testkit::random::{random, rng};
use rand::Rng;

/// The column count of `RowMajorTiles<2, 3, 50>`: 16 whole tiles of 3, two columns left.
const EPI_STRIDE: usize = 50;

#[cuda_module]
mod kernels {
    use super::*;
    use cuprum::simt::thread::{Runtime2DIndex, ThreadIndex};

    /// `out[i] = 3 x[i] + 1` through the element handle.
    #[kernel(launch_context = lc)]
    #[launch_contract(domain = 1, coordinates = u32, block = (64, 1, 1))]
    pub fn element(x: &[u32], mut out: DisjointSlice<u32>) {
        let i = thread::index_1d_u32(lc);
        if let Some(mut e) = out.element_thread32(i) {
            e.write(x[i.get() as usize].wrapping_mul(3).wrapping_add(1));
        }
    }

    /// In place: `v[4i + j] += j + 1` for whole tiles only.
    #[kernel(launch_context = lc)]
    #[launch_contract(domain = 1, coordinates = u32, block = (64, 1, 1))]
    pub fn linear_tiles(mut v: DisjointSlice<u32, LinearTiles<4>>) {
        let i = thread::index_1d_u32(lc);
        if let Some(mut t) = v.tile_thread32(i) {
            let a = t.at_const::<0>().read();
            let b = t.at_const::<1>().read();
            let c = t.at_const::<2>().read();
            let d = t.at_const::<3>().read();
            t.at_const::<0>().write(a.wrapping_add(1));
            t.at_const::<1>().write(b.wrapping_add(2));
            t.at_const::<2>().write(c.wrapping_add(3));
            t.at_const::<3>().write(d.wrapping_add(4));
        }
    }

    /// Each thread's 2 x 3 tile of a 50-wide matrix: `x + 10 r + c` at tile offset (r, c).
    #[kernel(launch_context = lc)]
    #[launch_contract(domain = 2, coordinates = u32, block = (8, 8, 1))]
    pub fn static_tiles(x: &[f32], mut out: DisjointSlice<f32, RowMajorTiles<2, 3, 50>>) {
        let coord = thread::coord_2d_u32(lc);
        if let Some(mut t) = out.tile_2d32(coord) {
            let base = (2 * coord.row() as usize) * 50 + 3 * coord.col() as usize;
            t.at_const::<0, 0>().write(x[base]);
            t.at_const::<0, 1>().write(x[base + 1] + 1.0);
            t.at_const::<0, 2>().write(x[base + 2] + 2.0);
            t.at_const::<1, 0>().write(x[base + 50] + 10.0);
            t.at_const::<1, 1>().write(x[base + 51] + 11.0);
            t.at_const::<1, 2>().write(x[base + 52] + 12.0);
        }
    }

    /// Each thread's 2 x 2 tile of a matrix of the bound width: the tile's first element's
    /// linear index plus `100 r + 10 c`.
    #[kernel(launch_context = lc)]
    #[launch_contract(domain = 2, coordinates = u32, block = (8, 8, 1))]
    pub fn runtime_tiles(mut out: DisjointSlice<u32, RuntimeRowMajorTiles<2, 2>>) {
        let coord = thread::coord_2d_u32(lc);
        let width = out.row_width();
        let first = 2 * coord.row() * width + 2 * coord.col();
        if let Some(mut t) = out.tile_2d32_rt(coord) {
            t.at_const::<0, 0>().write(first);
            t.at_const::<0, 1>().write(first + 10);
            t.at_const::<1, 0>().write(first + 100);
            t.at_const::<1, 1>().write(first + 110);
        }
    }

    /// Per thread `r`: the sum of row `r`'s first `n` elements (or -1 where that strip is
    /// not inside `a`), of column `r`'s first `n` (or -1), and element `j` of the row strip
    /// (or -7 where there is no strip or no element `j`).
    #[kernel(launch_context = lc)]
    #[launch_contract(domain = 1, coordinates = u32, block = (64, 1, 1))]
    pub fn strips(
        a: &[f32],
        stride: u32,
        n: u32,
        j: u32,
        mut rows: DisjointSlice<f32>,
        mut cols: DisjointSlice<f32>,
        mut picks: DisjointSlice<f32>,
    ) {
        let i = thread::index_1d_u32(lc);
        let r = i.get();
        let m = MatrixView32::new(a, stride);
        let mut row_sum = -1.0f32;
        if let Some(row) = m.row(r, n) {
            row_sum = 0.0;
            for x in row.iter() {
                row_sum += x;
            }
        }
        let mut col_sum = -1.0f32;
        if let Some(col) = m.col(r, n) {
            col_sum = 0.0;
            for x in col.iter() {
                col_sum += x;
            }
        }
        let pick = m
            .row(r, n)
            .unwrap_or(RowView32::empty())
            .get(j)
            .unwrap_or(-7.0);
        if let Some(mut e) = rows.element_thread32(i) {
            e.write(row_sum);
        }
        if let Some(mut e) = cols.element_thread32(i) {
            e.write(col_sum);
        }
        if let Some(mut e) = picks.element_thread32(i) {
            e.write(pick);
        }
    }

    /// gemm_views' naive product: `c = alpha a b + beta c`, the dot product over a zipped
    /// row and column.
    #[kernel(launch_context = lc)]
    #[launch_contract(domain = 2, coordinates = u32, block = (8, 8, 1),
        requires = (k >= 1, a.len() >= m * k, b.len() >= k * n, c.len() >= m * n))]
    pub fn gemm_naive(
        m: u32,
        n: Uniform<u32>,
        k: u32,
        alpha: f32,
        a: &[f32],
        b: &[f32],
        beta: f32,
        mut c: DisjointSlice<f32, RuntimeRowMajorTiles<1, 1>>,
    ) {
        let coord = thread::coord_2d_u32(lc);
        if coord.row() >= m || coord.col() >= n.get() {
            return;
        }
        let a_mat = MatrixView32::new(a, k);
        let b_mat = MatrixView32::new(b, n.get());
        if let Some(a_row) = a_mat.row(coord.row(), k)
            && let Some(b_col) = b_mat.col(coord.col(), k)
            && let Some(pair) = a_row.zip_exact(b_col)
        {
            let mut sum = 0.0f32;
            for (x, y) in pair {
                sum += x * y;
            }
            if let Some(mut cell) = c.tile_2d32_rt(coord) {
                let previous = cell.at_const::<0, 0>().read();
                cell.at_const::<0, 0>().write(alpha * sum + beta * previous);
            }
        }
    }

    /// gemm_views' tiled product: staging reads through hoisted views, empty views where a
    /// strip does not exist, so every thread reaches the barriers.
    #[kernel(launch_context = lc)]
    #[launch_contract(domain = 2, coordinates = u32, block = (8, 8, 1))]
    pub fn gemm_tiled(
        n: Uniform<u32>,
        k: u32,
        a: &[f32],
        b: &[f32],
        mut c: DisjointSlice<f32, RuntimeRowMajorTiles<1, 1>>,
    ) {
        static mut TILE_A: SharedArray<f32, 64> = SharedArray::UNINIT;
        static mut TILE_B: SharedArray<f32, 64> = SharedArray::UNINIT;
        let coord = thread::coord_2d_u32(lc);
        let tx = thread::threadIdx_x();
        let ty = thread::threadIdx_y();
        let a_row = MatrixView32::new(a, k)
            .row(coord.row(), k)
            .unwrap_or(RowView32::empty());
        let b_col = MatrixView32::new(b, n.get())
            .col(coord.col(), k)
            .unwrap_or(ColView32::empty());
        let mut sum = 0.0f32;
        let mut tile = 0u32;
        while tile < k.div_ceil(8) {
            let start = tile * 8;
            let slot = (ty * 8 + tx) as usize;
            let av = a_row.get(start + tx).unwrap_or(0.0);
            let bv = b_col.get(start + ty).unwrap_or(0.0);
            // SAFETY: slot `ty * 8 + tx` is this thread's alone before the barrier.
            unsafe {
                TILE_A[slot] = av;
                TILE_B[slot] = bv;
            }
            thread::sync_threads();
            // SAFETY: the barrier ordered every write before these reads.
            unsafe {
                let mut i = 0usize;
                while i < 8 {
                    sum += TILE_A[ty as usize * 8 + i] * TILE_B[i * 8 + tx as usize];
                    i += 1;
                }
            }
            thread::sync_threads();
            tile += 1;
        }
        if let Some(mut cell) = c.tile_2d32_rt(coord) {
            cell.at_const::<0, 0>().write(sum);
        }
    }

    /// row_width_slice's witness mixing: witnesses of `a` and `b` bound, paired and chosen
    /// between at run time; `b` resolves the choice against its own width.
    #[kernel]
    pub fn two_witnesses(
        a: DisjointSlice<u32, Runtime2DIndex>,
        mut b: DisjointSlice<u32, Runtime2DIndex>,
        flip: u32,
    ) {
        let row = thread::index_2d_row();
        let col = thread::index_2d_col();
        let wa = thread::index_2d_runtime(&a);
        let wb = thread::index_2d_runtime(&b);
        let pair = (wa, wb);
        if let (Some(wa), Some(wb)) = pair {
            let chosen = if (row + col + flip as usize).is_multiple_of(2) {
                wa
            } else {
                wb
            };
            write_own(b, chosen, (row * 1000 + col) as u32);
        }
    }

    /// The slice and the witness by value.
    fn write_own(
        mut s: DisjointSlice<u32, Runtime2DIndex>,
        at: ThreadIndex<Runtime2DIndex>,
        v: u32,
    ) {
        if let Some(cell) = s.get_mut(at) {
            *cell = v;
        }
    }
}

/// The PTX entry of `name` in the module.
fn entry(name: &str) -> Result<String, Box<dyn std::error::Error>> {
    let ir = kernels::ir()?;
    let ptx = cuprum_ptx::write_module(&ir, cuprum_ptx::Target::Sm90)?;
    let body = ptx
        .split(".entry")
        .find(|k| k.trim_start().starts_with(name))
        .ok_or_else(|| format!("no {name} in the PTX"))?;
    Ok(body.to_owned())
}

#[test]
fn element_handles_write_each_element_once() -> cuprum::Result<()> {
    let (ctx, mut rng) = (ctx(), rng("element_handles"));
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    for n in [1usize, 63, 64, 1000, rng.random_range(1..5000)] {
        let x: Vec<u32> = random(&mut rng, n, 0, u32::MAX);
        let dx = DeviceBuffer::from_host(&stream, &x)?;
        let mut out = DeviceBuffer::from_host(&stream, &poisoned::<u32>(n))?;
        let p = m.prepare_element(LaunchConfig1D::new(n.div_ceil(64) as u32 + 1, 64, 0))?;
        m.element(&stream, &p, &dx, &mut out)?;
        let want: Vec<u32> = x
            .iter()
            .map(|v| v.wrapping_mul(3).wrapping_add(1))
            .collect();
        assert_same(&format!("element n={n}"), &out.to_host_vec(&stream)?, &want);
    }
    Ok(())
}

#[test]
fn linear_tiles_are_handed_out_whole() -> cuprum::Result<()> {
    let (ctx, mut rng) = (ctx(), rng("linear_tiles"));
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    for n in [1usize, 3, 4, 257, rng.random_range(1..5000)] {
        let v: Vec<u32> = random(&mut rng, n, 0, u32::MAX);
        let mut dv = DeviceBuffer::from_host(&stream, &v)?;
        let p = m.prepare_linear_tiles(LaunchConfig1D::new(n.div_ceil(256) as u32 + 1, 64, 0))?;
        m.linear_tiles(&stream, &p, &mut dv)?;
        let whole = n / 4 * 4;
        let want: Vec<u32> = v
            .iter()
            .enumerate()
            .map(|(k, x)| {
                if k < whole {
                    x.wrapping_add(k as u32 % 4 + 1)
                } else {
                    *x
                }
            })
            .collect();
        assert_same(
            &format!("linear_tiles n={n}"),
            &dv.to_host_vec(&stream)?,
            &want,
        );
    }
    Ok(())
}

#[test]
fn static_row_major_tiles_stay_in_their_rows() -> cuprum::Result<()> {
    let (ctx, mut rng) = (ctx(), rng("static_tiles"));
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    for _ in 0..4 {
        let rows = rng.random_range(1..40usize);
        // A ragged last row: the tiles reaching past the end are not handed out.
        let n = rows * EPI_STRIDE - rng.random_range(0..EPI_STRIDE.min(rows * EPI_STRIDE));
        // Inputs cover every tile a thread could read, handed out or not.
        let x = random(&mut rng, (rows + 2) * EPI_STRIDE, -100.0f32, 100.0);
        let dx = DeviceBuffer::from_host(&stream, &x)?;
        let mut out = DeviceBuffer::from_host(&stream, &poisoned::<f32>(n))?;
        // Threads past the 16 whole tile columns and past the rows get nothing.
        let grid = (3, (rows as u32).div_ceil(16) + 1);
        let p = m.prepare_static_tiles(LaunchConfig2D::new(grid, (8, 8), 0))?;
        m.static_tiles(&stream, &p, &dx, &mut out)?;
        let mut want = poisoned::<f32>(n);
        for ty in 0..rows.div_ceil(2) {
            for tx in 0..EPI_STRIDE / 3 {
                let base = 2 * ty * EPI_STRIDE + 3 * tx;
                if base + EPI_STRIDE + 2 >= n {
                    continue;
                }
                for r in 0..2 {
                    for c in 0..3 {
                        let k = base + r * EPI_STRIDE + c;
                        want[k] = x[k] + (10 * r + c) as f32;
                    }
                }
            }
        }
        assert_same(
            &format!("static_tiles rows={rows} n={n}"),
            &out.to_host_vec(&stream)?,
            &want,
        );
    }
    Ok(())
}

#[test]
fn runtime_row_major_tiles_use_the_bound_width() -> cuprum::Result<()> {
    let (ctx, mut rng) = (ctx(), rng("runtime_tiles"));
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    for _ in 0..5 {
        let width = rng.random_range(1..70u32);
        let rows = rng.random_range(1..30usize);
        let n = rows * width as usize - rng.random_range(0..width as usize);
        let mut out = DeviceBuffer::from_host(&stream, &poisoned::<u32>(n))?;
        let grid = (width.div_ceil(16) + 1, (rows as u32).div_ceil(16) + 1);
        let p = m.prepare_runtime_tiles(LaunchConfig2D::new(grid, (8, 8), 0))?;
        m.runtime_tiles(&stream, &p, RowWidth::new(&mut out, width))?;
        let w = width as usize;
        let mut want = poisoned::<u32>(n);
        for ty in 0..rows.div_ceil(2) {
            for tx in 0..w / 2 {
                let first = 2 * ty * w + 2 * tx;
                if first + w + 1 >= n {
                    continue;
                }
                for (r, c) in [(0, 0), (0, 1), (1, 0), (1, 1)] {
                    want[first + r * w + c] = (first + 100 * r + 10 * c) as u32;
                }
            }
        }
        assert_same(
            &format!("runtime_tiles width={width} rows={rows} n={n}"),
            &out.to_host_vec(&stream)?,
            &want,
        );
    }
    Ok(())
}

#[test]
fn strips_exist_exactly_when_inside_the_slice() -> cuprum::Result<()> {
    let (ctx, mut rng) = (ctx(), rng("strips"));
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    for _ in 0..8 {
        let stride = rng.random_range(0..20u32);
        let n_strip = rng.random_range(0..25u32);
        let j = rng.random_range(0..25u32);
        let len = rng.random_range(0..400usize);
        // Small integers: every sum is exact, in any order.
        let a: Vec<f32> = random::<i32>(&mut rng, len, -8, 8)
            .into_iter()
            .map(|v| v as f32)
            .collect();
        let threads = rng.random_range(1..100usize);
        let da = DeviceBuffer::from_host(&stream, &a)?;
        let mut rows = DeviceBuffer::from_host(&stream, &poisoned::<f32>(threads))?;
        let mut cols = DeviceBuffer::from_host(&stream, &poisoned::<f32>(threads))?;
        let mut picks = DeviceBuffer::from_host(&stream, &poisoned::<f32>(threads))?;
        let p = m.prepare_strips(LaunchConfig1D::new(threads.div_ceil(64) as u32, 64, 0))?;
        m.strips(
            &stream, &p, &da, stride, n_strip, j, &mut rows, &mut cols, &mut picks,
        )?;
        let (s, n, len64) = (u64::from(stride), u64::from(n_strip), len as u64);
        let (mut want_rows, mut want_cols, mut want_picks) = (vec![], vec![], vec![]);
        for r in 0..threads as u64 {
            let row_ok = n != 0 && n <= s && r * s + n - 1 < len64;
            let col_ok = n != 0 && r < s && (n - 1) * s + r < len64;
            let row_at = |i: u64| a[(r * s + i) as usize];
            want_rows.push(if row_ok {
                (0..n).map(row_at).sum()
            } else {
                -1.0
            });
            want_cols.push(if col_ok {
                (0..n).map(|i| a[(i * s + r) as usize]).sum()
            } else {
                -1.0
            });
            want_picks.push(if row_ok && u64::from(j) < n {
                row_at(u64::from(j))
            } else {
                -7.0
            });
        }
        let what = format!("stride={stride} n={n_strip} j={j} len={len}");
        assert_same(
            &format!("row sums {what}"),
            &rows.to_host_vec(&stream)?,
            &want_rows,
        );
        assert_same(
            &format!("col sums {what}"),
            &cols.to_host_vec(&stream)?,
            &want_cols,
        );
        assert_same(
            &format!("picks {what}"),
            &picks.to_host_vec(&stream)?,
            &want_picks,
        );
    }
    Ok(())
}

/// `alpha a b + beta c` in `f32`, summed in order (the inputs are small integers, so every
/// value is exact and the order does not matter).
fn gemm_reference(
    (m, n, k): (usize, usize, usize),
    alpha: f32,
    a: &[f32],
    b: &[f32],
    beta: f32,
    c: &[f32],
) -> Vec<f32> {
    let mut out = c.to_vec();
    for r in 0..m {
        for col in 0..n {
            let sum: f32 = (0..k).map(|i| a[r * k + i] * b[i * n + col]).sum();
            out[r * n + col] = alpha * sum + beta * c[r * n + col];
        }
    }
    out
}

#[test]
fn view_gemms_match_the_reference_at_ragged_sizes() -> cuprum::Result<()> {
    let (ctx, mut rng) = (ctx(), rng("view_gemms"));
    let stream = ctx.default_stream();
    let module = kernels::load(ctx)?;
    let ints = |rng: &mut rand::rngs::StdRng, len: usize| -> Vec<f32> {
        random::<i32>(rng, len, -8, 8)
            .into_iter()
            .map(|v| v as f32)
            .collect()
    };
    for _ in 0..3 {
        let (m, n, k) = (
            rng.random_range(1..40usize),
            rng.random_range(1..40usize),
            rng.random_range(1..30usize),
        );
        let (a, b, c) = (
            ints(&mut rng, m * k),
            ints(&mut rng, k * n),
            ints(&mut rng, m * n),
        );
        let (da, db) = (
            DeviceBuffer::from_host(&stream, &a)?,
            DeviceBuffer::from_host(&stream, &b)?,
        );
        let grid = ((n as u32).div_ceil(8), (m as u32).div_ceil(8));
        let config = LaunchConfig2D::new(grid, (8, 8), 0);
        let size = format!("m={m} n={n} k={k}");

        let mut dc = DeviceBuffer::from_host(&stream, &c)?;
        let p = module.prepare_gemm_naive(config)?;
        let dims = (m as u32, n as u32, k as u32);
        module.gemm_naive(
            &stream,
            &p,
            dims.0,
            dims.1,
            dims.2,
            2.0,
            &da,
            &db,
            0.5,
            RowWidth::new(&mut dc, dims.1),
        )?;
        let want = gemm_reference((m, n, k), 2.0, &a, &b, 0.5, &c);
        assert_same(
            &format!("gemm_naive {size}"),
            &dc.to_host_vec(&stream)?,
            &want,
        );

        let mut dc = DeviceBuffer::from_host(&stream, &poisoned::<f32>(m * n))?;
        let p = module.prepare_gemm_tiled(config)?;
        module.gemm_tiled(
            &stream,
            &p,
            dims.1,
            dims.2,
            &da,
            &db,
            RowWidth::new(&mut dc, dims.1),
        )?;
        let want = gemm_reference((m, n, k), 1.0, &a, &b, 0.0, &vec![0.0; m * n]);
        assert_same(
            &format!("gemm_tiled {size}"),
            &dc.to_host_vec(&stream)?,
            &want,
        );
    }
    Ok(())
}

#[test]
fn the_zipped_dot_product_has_no_bounds_check() -> Result<(), Box<dyn std::error::Error>> {
    let naive = entry("gemm_naive")?;
    assert!(!naive.contains("trap"), "{naive}");
    // Both strips are read (through the read-only path) in the loop.
    assert!(naive.matches("ld.global.nc.f32").count() >= 2, "{naive}");
    // The strips' reads are the views' own; the slices are read nowhere else.
    let strips = entry("strips")?;
    assert!(!strips.contains("trap"), "{strips}");
    Ok(())
}

#[test]
fn witnesses_resolve_against_the_addressed_slice() -> cuprum::Result<()> {
    let (ctx, mut rng) = (ctx(), rng("witnesses"));
    let stream = ctx.default_stream();
    let module = kernels::load(ctx)?;
    for _ in 0..6 {
        let (wa, wb) = (rng.random_range(1..40u32), rng.random_range(1..40u32));
        let len_a = rng.random_range(0..600usize);
        let len_b = rng.random_range(0..600usize);
        let flip = rng.random_range(0..2u32);
        let mut a = DeviceBuffer::from_host(&stream, &poisoned::<u32>(len_a))?;
        let mut b = DeviceBuffer::from_host(&stream, &poisoned::<u32>(len_b))?;
        let config = LaunchConfig {
            grid_dim: (3, 3, 1),
            block_dim: (16, 8, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: one layer along z, so every thread has its own (row, col).
        unsafe {
            module.two_witnesses(
                &stream,
                config,
                RowWidth::new(&mut a, wa),
                RowWidth::new(&mut b, wb),
                flip,
            )?;
        }
        let mut want = poisoned::<u32>(len_b);
        let (wa, wb) = (wa as usize, wb as usize);
        for row in 0..24 {
            for col in 0..48 {
                // Each witness exists where the column is inside its slice's rows; `b`
                // resolves the chosen one against its own width and length.
                if col < wa && col < wb && row * wb + col < len_b {
                    want[row * wb + col] = (row * 1000 + col) as u32;
                }
            }
        }
        let what = format!("wa={wa} wb={wb} len_a={len_a} len_b={len_b}");
        assert_same(&format!("b {what}"), &b.to_host_vec(&stream)?, &want);
        assert_same(
            &format!("a {what}"),
            &a.to_host_vec(&stream)?,
            &poisoned(len_a),
        );
    }
    Ok(())
}
