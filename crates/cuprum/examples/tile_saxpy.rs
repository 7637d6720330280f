//! SAXPY in cuprum's tile track, in the shape of cuTile Rust's example: `y = a * x + y` on
//! `f32`, one tile of 1024 elements per tile block, on a length that is not a multiple of
//! the tile (the last tile's loads past the end read zeros and its stores there are
//! dropped). The inputs are seeded random data; every element is compared with plain Rust,
//! bit for bit (the kernel IR rounds `a * x` and the sum separately, as Rust does). Runs on
//! the GPU when there is one (at 2^26 + 3 elements), else on cuprum's CPU emulator.

use cuprum::tile::prelude::*;

#[path = "common/check.rs"]
mod check;
#[path = "common/size.rs"]
mod size;

#[cuprum::tile::module]
mod kernels {
    use cuprum::tile::core::*;

    #[cuprum::tile::entry()]
    fn saxpy<const B: i32>(y: &mut Tensor<f32, { [B] }>, a: f32, x: &Tensor<f32, { [-1] }>) {
        let tile_x = load_tile_like(x, y);
        let tile_y = y.load();
        y.store(a * tile_x + tile_y);
    }
}

fn main() -> Result<(), Error> {
    let device = Device::new(0)?;
    let stream = device.new_stream()?;
    let on_gpu = device.context().backend() == cuprum::BackendKind::Cuda;
    let n = if size::benchmark_sizes(on_gpu) {
        (1 << 26) + 3
    } else {
        100_003
    };
    let mut rng = check::rng("tile_saxpy");
    let a = check::uniform(&mut rng, 1, -4.0, 4.0)[0];
    let hx = check::uniform(&mut rng, n, -100.0, 100.0);
    let hy = check::uniform(&mut rng, n, -100.0, 100.0);
    let x = api::from_host(&hx, &[n]);
    let y = api::from_host(&hy, &[n]).partition([1024]);
    let got: Vec<f32> = kernels::saxpy(y, a, x)
        .first()
        .unpartition()
        .to_host_vec()
        .sync_on(&stream)?;
    let wrong: Vec<usize> = (0..n)
        .filter(|&i| got[i].to_bits() != (a * hx[i] + hy[i]).to_bits())
        .collect();
    check::finish(
        "tile_saxpy",
        match wrong.first() {
            None => Ok(format!("{n} elements, a = {a}, bit for bit")),
            Some(&i) => Err(format!(
                "{} of {n} elements wrong; element {i} is {}, want {}",
                wrong.len(),
                got[i],
                a * hx[i] + hy[i]
            )),
        },
    );
    Ok(())
}
