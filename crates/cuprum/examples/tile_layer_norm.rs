//! Layer norm in cuprum's tile track: each tile block holds `BM` whole rows in registers
//! (loaded once), computes each row's mean and variance with reductions, and stores
//! `(x - mean) / sqrt(var + eps) * w + b`. The tile is `[4, BN]` with `BN` the row length
//! rounded up to a multiple of 64, so rows (23 of them) and columns are both ragged: loads
//! past the row read zeros, which add nothing to the mean, and the centered values there
//! are masked to zero so that they add nothing to the variance either; stores past either
//! end are dropped. Seeded random data; every element is compared with plain Rust in `f64`.
//! Runs on the GPU when there is one (4097 x 3001), else on cuprum's CPU emulator.

use cuprum::tile::prelude::*;

#[path = "common/check.rs"]
mod check;
#[path = "common/size.rs"]
mod size;

#[cuprum::tile::module]
mod kernels {
    use cuprum::tile::core::*;

    #[cuprum::tile::entry()]
    fn layer_norm<const BM: i32, const BN: i32>(
        y: &mut Tensor<f32, { [BM, BN] }>,
        x: &Tensor<f32, { [-1, -1] }>,
        w: &Tensor<f32, { [-1] }>,
        b: &Tensor<f32, { [-1] }>,
        eps: f32,
    ) {
        let n: f32 = x.shape()[1] as f32;
        let n_cols: i32 = x.shape()[1] as i32;
        let tx: Tile<f32, { [BM, BN] }> = load_tile_like(x, y);
        let sum: Tile<f32, { [BM] }> = reduce_sum(tx, 1i32);
        let mean = (sum / n).reshape(const_shape![BM, 1]).broadcast(y.shape());
        let cols: Tile<i32, { [BM, BN] }> = iota(const_shape![BN])
            .reshape(const_shape![1, BN])
            .broadcast(y.shape());
        let inside = lt_tile(cols, n_cols.broadcast(y.shape()));
        let zeros: Tile<f32, { [BM, BN] }> = constant(0.0f32, y.shape());
        let centered = select(inside, tx - mean, zeros);
        let var: Tile<f32, { [BM] }> = reduce_sum(centered * centered, 1i32);
        let scale = rsqrt(var / n + eps);
        let scale = scale.reshape(const_shape![BM, 1]).broadcast(y.shape());
        let tw: Tile<f32, { [BN] }> = w.load_tile(const_shape![BN], [0i32]);
        let tb: Tile<f32, { [BN] }> = b.load_tile(const_shape![BN], [0i32]);
        let tw = tw.reshape(const_shape![1, BN]).broadcast(y.shape());
        let tb = tb.reshape(const_shape![1, BN]).broadcast(y.shape());
        y.store(centered * scale * tw + tb);
    }
}

fn main() -> Result<(), Error> {
    let device = Device::new(0)?;
    let stream = device.new_stream()?;
    let on_gpu = device.context().backend() == cuprum::BackendKind::Cuda;
    let (rows, cols) = if size::benchmark_sizes(on_gpu) {
        (4097usize, 3001usize)
    } else {
        (23, 1000)
    };
    let (bm, bn) = (4usize, cols.next_multiple_of(64));
    let eps = 1e-5f32;
    let mut rng = check::rng("tile_layer_norm");
    let hx = check::uniform(&mut rng, rows * cols, -4.0, 6.0);
    let hw = check::uniform(&mut rng, cols, 0.5, 1.5);
    let hb = check::uniform(&mut rng, cols, -0.5, 0.5);
    let x = api::from_host(&hx, &[rows, cols]);
    let w = api::from_host(&hw, &[cols]);
    let b = api::from_host(&hb, &[cols]);
    let y = api::full(f32::NAN, &[rows, cols]).partition([bm, bn]);
    let got: Vec<f32> = kernels::layer_norm(y, x, w, b, eps)
        .first()
        .unpartition()
        .to_host_vec()
        .sync_on(&stream)?;
    let want: Vec<f64> = hx
        .chunks(cols)
        .flat_map(|row| {
            let mean = row.iter().map(|&v| f64::from(v)).sum::<f64>() / cols as f64;
            let var = row
                .iter()
                .map(|&v| (f64::from(v) - mean).powi(2))
                .sum::<f64>()
                / cols as f64;
            let scale = 1.0 / (var + f64::from(eps)).sqrt();
            (0..cols)
                .map(|j| (f64::from(row[j]) - mean) * scale * f64::from(hw[j]) + f64::from(hb[j]))
                .collect::<Vec<_>>()
        })
        .collect();
    check::finish(
        "tile_layer_norm",
        check::compare("layer_norm", &got, &want, 1e-4, 1e-5)
            .map(|()| format!("{rows} x {cols} in tiles of {bm} x {bn}")),
    );
    Ok(())
}
