//! cuTile Rust's hello world in cuprum's tile track: every tile block of a 2-D grid prints
//! its block id and the grid's size, and writes them into the tile it owns of an `i32`
//! tensor; the tensor's 5x7 elements in 2x3 tiles make a ragged 3x3 grid (the last row and
//! column of tiles hang over the edge, their outside elements are dropped). Every element
//! is checked against the block that owns it. Runs on the GPU when there is one, else on
//! cuprum's CPU emulator.

use cuprum::tile::prelude::*;

#[path = "common/check.rs"]
mod check;

#[cuprum::tile::module]
mod kernels {
    use cuprum::tile::core::*;

    #[cuprum::tile::entry()]
    fn hello<const S: [i32; 2]>(ids: &mut Tensor<i32, S>) {
        let pid: (i32, i32, i32) = get_tile_block_id();
        let grid: (i32, i32, i32) = get_num_tile_blocks();
        cuda_tile_print!(
            "Hello from tile block ({}, {}) of a {} x {} grid\n",
            pid.0,
            pid.1,
            grid.0,
            grid.1
        );
        let code: i32 = grid.0 * 10000 + grid.1 * 1000 + pid.0 * 100 + pid.1;
        ids.store(code.broadcast(ids.shape()));
    }
}

fn main() -> Result<(), Error> {
    let device = Device::new(0)?;
    let stream = device.new_stream()?;
    let (rows, cols, tile) = (5usize, 7usize, [2usize, 3]);
    let ids = api::full(i32::MIN, &[rows, cols]).partition(tile);
    let got: Vec<i32> = kernels::hello(ids)
        .first()
        .unpartition()
        .to_host_vec()
        .sync_on(&stream)?;
    let grid = (rows.div_ceil(tile[0]), cols.div_ceil(tile[1]));
    let want: Vec<i32> = (0..rows * cols)
        .map(|i| {
            let (r, c) = (i / cols, i % cols);
            (grid.0 * 10000 + grid.1 * 1000 + (r / tile[0]) * 100 + c / tile[1]) as i32
        })
        .collect();
    let wrong = (0..want.len()).filter(|&i| got[i] != want[i]).count();
    check::finish(
        "tile_hello_world",
        if wrong == 0 {
            Ok(format!(
                "{} tile blocks, each wrote its id into its own tile",
                grid.0 * grid.1
            ))
        } else {
            Err(format!("{wrong} of {} elements wrong: {got:?}", want.len()))
        },
    );
    Ok(())
}
