//! Row softmax in cuprum's tile track, fused as Triton's tutorial does it: each tile block
//! loads its rows once, keeps them in registers, and computes the maximum, the
//! exponentials, their sum and the quotients from there. The tile is `[2, BN]` with `BN` the
//! row length rounded up to a multiple of 64, so both the rows (an odd count) and the
//! columns are ragged: the columns past the row's end are masked to `-inf` (they then add
//! `exp(-inf) = 0` to the sum) and the stores past either end are dropped. Seeded random
//! data; every element is compared with a plain-Rust `f64` softmax. Runs on the GPU when
//! there is one (4097 x 4001), else on cuprum's CPU emulator (37 x 1000).

use cuprum::tile::prelude::*;

#[path = "common/check.rs"]
mod check;
#[path = "common/size.rs"]
mod size;

#[cuprum::tile::module]
mod kernels {
    use cuprum::tile::core::*;

    #[cuprum::tile::entry()]
    fn softmax<const BM: i32, const BN: i32>(
        y: &mut Tensor<f32, { [BM, BN] }>,
        x: &Tensor<f32, { [-1, -1] }>,
    ) {
        let n: i32 = x.shape()[1] as i32;
        let cols: Tile<i32, { [BM, BN] }> = iota(const_shape![BN])
            .reshape(const_shape![1, BN])
            .broadcast(y.shape());
        let inside = lt_tile(cols, n.broadcast(y.shape()));
        let minus_inf: Tile<f32, { [BM, BN] }> = constant(f32::NEG_INFINITY, y.shape());
        let tile_x: Tile<f32, { [BM, BN] }> = select(inside, load_tile_like(x, y), minus_inf);
        let max: Tile<f32, { [BM] }> = reduce_max(tile_x, 1i32);
        let max = max.reshape(const_shape![BM, 1]).broadcast(y.shape());
        let num = exp(tile_x - max);
        let den: Tile<f32, { [BM] }> = reduce_sum(num, 1i32);
        let den = den.reshape(const_shape![BM, 1]).broadcast(y.shape());
        y.store(num / den);
    }
}

fn main() -> Result<(), Error> {
    let device = Device::new(0)?;
    let stream = device.new_stream()?;
    let on_gpu = device.context().backend() == cuprum::BackendKind::Cuda;
    let (rows, cols) = if size::benchmark_sizes(on_gpu) {
        (4097usize, 4001usize)
    } else {
        (37, 1000)
    };
    let (bm, bn) = (2usize, cols.next_multiple_of(64));
    let mut rng = check::rng("tile_softmax");
    let hx = check::uniform(&mut rng, rows * cols, -10.0, 10.0);
    let x = api::from_host(&hx, &[rows, cols]);
    let y = api::full(f32::NAN, &[rows, cols]).partition([bm, bn]);
    let got: Vec<f32> = kernels::softmax(y, x)
        .first()
        .unpartition()
        .to_host_vec()
        .sync_on(&stream)?;
    let want: Vec<f64> = hx
        .chunks(cols)
        .flat_map(|row| {
            let max = row
                .iter()
                .fold(f64::NEG_INFINITY, |m, &v| m.max(f64::from(v)));
            let exps: Vec<f64> = row.iter().map(|&v| (f64::from(v) - max).exp()).collect();
            let sum: f64 = exps.iter().sum();
            exps.into_iter().map(move |e| e / sum)
        })
        .collect();
    check::finish(
        "tile_softmax",
        check::compare("softmax", &got, &want, 1e-5, 1e-9)
            .map(|()| format!("{rows} x {cols} in tiles of {bm} x {bn}")),
    );
    Ok(())
}
