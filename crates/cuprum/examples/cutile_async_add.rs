//! cuTile Rust's `async_add` example (cutile-examples/examples/async_add.rs of NVlabs/cutile-rs), with
//! only its paths changed to `cuprum::tile`'s: two chained vector adds under tokio, awaited, every
//! element checked.
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
        z: &mut Tensor<f32, S>,
        x: &Tensor<f32, { [-1] }>,
        y: &Tensor<f32, { [-1] }>,
    ) {
        let tile_x = load_tile_like(x, z);
        let tile_y = load_tile_like(y, z);
        z.store(tile_x + tile_y);
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 16)]
async fn main() -> Result<(), cuprum::tile::cuda_async::error::DeviceError> {
    let len = 2usize.pow(5);

    // Run add kernel twice, chaining lazily with .then().
    let z_host: Vec<f32> = add(
        api::zeros(&[len]).partition([2]),
        api::arange(len),
        api::ones(&[len]),
    )
    .then(|(z, x, y)| add(z, x, y))
    .first()
    .unpartition()
    .to_host_vec()
    .await?;

    // Both calls compute z = x + y with the same x, y.
    // The second overwrites the first, so the result is just x + y.
    for (i, &v) in z_host.iter().enumerate() {
        let expected = i as f32 + 1.0;
        assert_eq!(expected, v, "index {}: {} != {}", i, expected, v);
    }
    println!("async_add: all values correct");
    Ok(())
}
