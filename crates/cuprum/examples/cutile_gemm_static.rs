//! cuTile Rust's `gemm_static` example (cutile-examples/examples/gemm_static.rs of
//! NVlabs/cutile-rs), with only its paths changed to `cuprum::tile`'s: `gemm` with every
//! size a const generic and the grid given as a constant, 16384 x 16384 x 8192 `f32` ones in
//! 16x16 tiles with K steps of 8; cuprum adds a check of every element (each is K). The size
//! is the published one, for a GPU; `tests/tile_mma.rs` runs such kernels at small sizes on
//! the emulator.
/*
 * SPDX-FileCopyrightText: Copyright (c) 2026 NVIDIA CORPORATION & AFFILIATES. All rights reserved.
 * SPDX-License-Identifier: Apache-2.0
 */
#![allow(clippy::needless_range_loop, clippy::unnecessary_cast)]

use cuprum::tile::DType;
use cuprum::tile::api;
use cuprum::tile::cuda_async::device_operation::*;
use cuprum::tile::cuda_core::CudaContext;
use cuprum::tile::error::Error;
use cuprum::tile::tensor::*;
use cuprum::tile::tile_kernel::*;
use my_module::gemm as gemm_kernel;
use std::sync::Arc;

#[cuprum::tile::module]
mod my_module {

    use cuprum::tile::core::*;

    #[cuprum::tile::entry(print_ir = true)]
    fn gemm<
        E: ElementType,
        const BM: i32,
        const BN: i32,
        const BK: i32,
        const M: i32,
        const N: i32,
        const K: i32,
    >(
        z: &mut Tensor<E, { [BM, BN] }>,
        x: &Tensor<E, { [M, K] }>,
        y: &Tensor<E, { [K, N] }>,
    ) {
        let part_x = x.partition(const_shape![BM, BK]);
        let part_y = y.partition(const_shape![BK, BN]);
        let mut tile_z = load_tile_mut(z);
        let pid: (i32, i32, i32) = get_tile_block_id();
        for i in 0i32..(K / BK) {
            let tile_x = part_x.load([pid.0, i]);
            let tile_y = part_y.load([i, pid.1]);
            tile_z = mma(tile_x, tile_y, tile_z);
            continue;
        }
        z.store(tile_z);
    }
}

fn gemm<T: DType + std::fmt::Display>() -> Result<(), Error> {
    let ctx = CudaContext::new(0)?;
    let stream = ctx.new_stream()?;
    let scale = 2usize.pow(10); // On the order of megabytes.
    let (bm, bn, bk) = (16, 16, 8);
    let (m, n, k) = (
        scale * bm as usize,
        scale * bn as usize,
        scale * bk as usize,
    );
    let generics = vec![
        T::DTYPE.as_str().to_string(),
        bm.to_string(),
        bn.to_string(),
        bk.to_string(),
        m.to_string(),
        n.to_string(),
        k.to_string(),
    ];
    let z = api::zeros(&[m, n]).partition([bm, bn]).sync_on(&stream)?;
    let x: Arc<Tensor<T>> = api::ones(&[m, k]).sync_on(&stream)?.into();
    let y: Arc<Tensor<T>> = api::ones(&[k, n]).sync_on(&stream)?.into();
    println!(
        "Everything created. x size(mb)={}, y size(mb)={}, z size(mb)={}",
        x.num_bytes() / 1_000_000,
        y.num_bytes() / 1_000_000,
        z.num_bytes() / 1_000_000
    );
    let grid = z.grid()?;
    let (z, _x, _y) = gemm_kernel(z, x, y)
        .const_grid(grid)
        .generics(generics)
        .sync_on(&stream)?;
    println!("CUDA_GEMM Done.");
    let z_host: Vec<T> = z.unpartition().to_host_vec().sync_on(&stream)?;
    for i in 0..10 {
        println!("z_host[{i}] = {} answer = {}", z_host[i], k);
    }
    // cuprum's addition: every element is K.
    let want = k.to_string();
    let wrong = z_host.iter().filter(|z| z.to_string() != want).count();
    assert_eq!(
        wrong,
        0,
        "{wrong} of {} elements differ from {k}",
        z_host.len()
    );
    println!("PASSED: all {} elements are {k}", z_host.len());
    Ok(())
}

fn main() -> Result<(), Error> {
    gemm::<f32>()
}
