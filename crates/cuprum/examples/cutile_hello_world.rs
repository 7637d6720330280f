//! cuTile Rust's `hello_world` example (cutile-examples/examples/hello_world.rs of NVlabs/cutile-rs),
//! with only its `cutile`, `cuda_core` and `cuda_async` paths changed to `cuprum::tile`'s: one tile
//! block prints its block id and the grid's size.
/*
 * SPDX-FileCopyrightText: Copyright (c) 2026 NVIDIA CORPORATION & AFFILIATES. All rights reserved.
 * SPDX-License-Identifier: Apache-2.0
 */
#![allow(unused_variables)]

use cuprum::tile::cuda_async::device_operation::DeviceOp;
use cuprum::tile::cuda_core::Device;
use cuprum::tile::error::Error;
use cuprum::tile::tile_kernel::TileKernel;

#[cuprum::tile::module]
mod hello_world_module {

    use cuprum::tile::core::*;

    #[cuprum::tile::entry(print_ir = true)]
    fn hello_world_kernel() {
        let pids: (i32, i32, i32) = get_tile_block_id();
        let npids: (i32, i32, i32) = get_num_tile_blocks();
        cuda_tile_print!(
            "Hello, I am tile <{}, {}, {}> in a kernel with <{}, {}, {}> tiles.\n",
            pids.0,
            pids.1,
            pids.2,
            npids.0,
            npids.1,
            npids.2
        );
    }
}

use hello_world_module::hello_world_kernel;

fn main() -> Result<(), Error> {
    let device = Device::new(0)?;
    let stream = device.new_stream()?;
    let launcher = hello_world_kernel();
    launcher.grid((1, 1, 1)).sync_on(&stream)?;
    Ok(())
}
