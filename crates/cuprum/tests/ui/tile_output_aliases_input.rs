// One tensor cannot be both a tile launch's partitioned output and one of its inputs: the
// launch takes ownership of its arguments, so the second use is a use after move (E0382).
// (Until the tile front end lands, its stub's error comes first.)
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
    let device = Device::new(0)?;
    let stream = device.new_stream()?;
    let z = api::zeros::<f32>(&[1024]).sync_on(&stream)?;
    let y = api::ones::<f32>(&[1024]);
    let _ = kernel::add(z.partition([128]), z, y).sync_on(&stream)?;
    Ok(())
}
