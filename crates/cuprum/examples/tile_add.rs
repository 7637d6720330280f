//! The tile track's first program: a 1024-element vector add as a tile kernel, launched
//! lazily from host code with cuTile Rust's API (`cuprum::tile`).
//!
//! `z` is partitioned into tiles of 128 elements: the launch has one tile block per tile
//! (8), each adding its tile of `x` and `y`. Nothing runs until `.sync_on(&stream)`. Runs on
//! the GPU when there is one, otherwise on cuprum's CPU emulator (`CUPRUM_DEVICE`), and
//! checks every element.

use cuprum::tile::prelude::*;

#[cuprum::tile::module]
mod kernel {
    use cuprum::tile::core::*;

    #[cuprum::tile::entry()]
    fn add<const B: i32>(
        z: &mut Tensor<f32, { [B] }>,
        x: &Tensor<f32, { [-1] }>,
        y: &Tensor<f32, { [-1] }>,
    ) {
        let tile_x = load_tile_like(x, z);
        let tile_y = load_tile_like(y, z);
        z.store(tile_x + tile_y);
    }
}

fn main() -> Result<(), Error> {
    const N: usize = 1024;
    let device = Device::new(0)?;
    let stream = device.new_stream()?;
    let x = api::arange::<f32>(N);
    let y = api::ones::<f32>(&[N]);
    let z = api::zeros::<f32>(&[N]).partition([128]);
    let v: Vec<f32> = kernel::add(z, x, y)
        .first()
        .unpartition()
        .to_host_vec()
        .sync_on(&stream)?;
    let wrong = (0..N).filter(|&i| v[i] != i as f32 + 1.0).count();
    if wrong > 0 {
        eprintln!("FAILED: {wrong} of {N} elements wrong");
        std::process::exit(1);
    }
    println!("PASSED: all {N} elements correct");
    Ok(())
}
