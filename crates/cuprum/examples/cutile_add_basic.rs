//! cuTile Rust's older `add_basic` example (cutile-examples/examples/add_basic.rs of NVlabs/cutile-rs
//! before it moved to cutile/tests/gpu), with only its paths changed to `cuprum::tile`'s: a vector
//! add whose tiles are loaded by block id with `load_tile`, on an explicit grid; it prints the
//! result.
/*
 * SPDX-FileCopyrightText: Copyright (c) 2026 NVIDIA CORPORATION & AFFILIATES. All rights reserved.
 * SPDX-License-Identifier: Apache-2.0
 */

use cuprum::tile::prelude::*;
use my_module::add;

#[cuprum::tile::module]
mod my_module {
    use cuprum::tile::core::*;
    #[cuprum::tile::entry(print_ir = true)]
    fn add<const S: [i32; 1]>(
        c: &mut Tensor<f32, S>,
        a: &Tensor<f32, { [-1] }>,
        b: &Tensor<f32, { [-1] }>,
    ) {
        let pid = get_tile_block_id().0;
        let tile_a = a.load_tile(const_shape!(S), [pid]);
        let tile_b = b.load_tile(const_shape!(S), [pid]);
        c.store(tile_a + tile_b);
    }
}

fn main() {
    let c_host_vec = add(
        api::zeros(&[32]).partition([4]),
        api::ones(&[32]),
        api::ones(&[32]),
    )
    .grid((8, 1, 1))
    .first()
    .unpartition()
    .to_host_vec()
    .sync();
    println!("{:#?}", c_host_vec);
}
