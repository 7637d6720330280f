//! RMS norm in cuprum's tile track, in the shape of cuTile Rust's `rms_norm` example: one
//! tile block per row; a `for` loop over the row's column blocks (`x.partition(..)` and
//! `.load([row, j])`) sums the squares, and a second loop scales each block by the weights
//! and stores it through `out.partition_mut(..).store(t, [0, j])`. The row length is a const
//! generic given with `.generics(..)`, and it is not a multiple of the column block: the
//! last block's loads past the row read zeros and its stores there are dropped. Seeded
//! random data; every element is compared with plain Rust in `f64`. Runs on the GPU when
//! there is one (4096 x 4000), else on cuprum's CPU emulator (23 x 1000).

use cuprum::tile::prelude::*;

#[path = "common/check.rs"]
mod check;
#[path = "common/size.rs"]
mod size;

#[cuprum::tile::module]
mod kernels {
    use cuprum::tile::core::*;

    #[cuprum::tile::entry()]
    fn rms_norm<const N: i32, const BLOCK: i32>(
        x: &Tensor<f32, { [-1, N] }>,
        w: &Tensor<f32, { [N] }>,
        out: &mut Tensor<f32, { [1, N] }>,
        eps: f32,
    ) {
        let tile_shape: Shape<{ [1, BLOCK] }> = const_shape![1, BLOCK];
        let blocks: i32 = (N + BLOCK - 1) / BLOCK;
        let pid: (i32, i32, i32) = get_tile_block_id();
        let row = pid.0;
        let x_part: Partition<f32, { [1, BLOCK] }> = x.partition(tile_shape);
        let mut squares: Tile<f32, { [1, BLOCK] }> = constant(0.0f32, tile_shape);
        for j in 0i32..blocks {
            let tx: Tile<f32, { [1, BLOCK] }> = x_part.load([row, j]);
            squares = squares + tx * tx;
        }
        let total: Tile<f32, { [1] }> = reduce_sum(squares, 1i32);
        let total: f32 = tile_to_scalar(total.reshape(const_shape![]));
        let n: f32 = convert_scalar(N);
        let scale: f32 = tile_to_scalar(rsqrt(scalar_to_tile(total / n + eps)));
        let w_part: Partition<f32, { [BLOCK] }> = w.partition(const_shape![BLOCK]);
        let mut out_part: PartitionMut<f32, { [1, BLOCK] }> = out.partition_mut(tile_shape);
        for j in 0i32..blocks {
            let tx: Tile<f32, { [1, BLOCK] }> = x_part.load([row, j]);
            let tw: Tile<f32, { [1, BLOCK] }> = w_part.load([j]).reshape(tile_shape);
            out_part.store(tx * scale * tw, [0i32, j]);
        }
    }
}

fn main() -> Result<(), Error> {
    let device = Device::new(0)?;
    let stream = device.new_stream()?;
    let on_gpu = device.context().backend() == cuprum::BackendKind::Cuda;
    let (rows, cols, block) = if size::benchmark_sizes(on_gpu) {
        (4096usize, 4000usize, 512usize)
    } else {
        (23, 1000, 128)
    };
    let eps = 1e-6f32;
    let mut rng = check::rng("tile_rms_norm");
    let hx = check::uniform(&mut rng, rows * cols, -4.0, 4.0);
    let hw = check::uniform(&mut rng, cols, 0.5, 1.5);
    let x = api::from_host(&hx, &[rows, cols]);
    let w = api::from_host(&hw, &[cols]);
    let out = api::full(f32::NAN, &[rows, cols]).partition([1, cols]);
    let (_, _, out, _) = kernels::rms_norm(x, w, out, eps)
        .generics(vec![cols.to_string(), block.to_string()])
        .sync_on(&stream)?;
    let got: Vec<f32> = out.unpartition().to_host_vec().sync_on(&stream)?;
    let want: Vec<f64> = hx
        .chunks(cols)
        .flat_map(|row| {
            let mean_square = row.iter().map(|&v| f64::from(v).powi(2)).sum::<f64>() / cols as f64;
            let scale = 1.0 / (mean_square + f64::from(eps)).sqrt();
            row.iter()
                .zip(&hw)
                .map(move |(&v, &wv)| f64::from(v) * scale * f64::from(wv))
                .collect::<Vec<_>>()
        })
        .collect();
    check::finish(
        "tile_rms_norm",
        check::compare("rms_norm", &got, &want, 1e-5, 1e-6)
            .map(|()| format!("{rows} x {cols}, column blocks of {block}")),
    );
    Ok(())
}
