//! cuTile Rust's `async_gemm` example (cutile-examples/examples/async_gemm.rs of
//! NVlabs/cutile-rs), with only its paths changed to `cuprum::tile`'s (its support crate's to
//! `cuprum_tile_examples`): a GEMM of `f16` inputs into an `f32` result, 64x64x16 in 16x16
//! tiles with K steps of 8, built as a lazy operation and awaited under tokio; it prints each
//! element beside candle's `f16` product (it checks nothing; `tests/tile_mma.rs` checks such
//! GEMMs element by element).
/*
 * SPDX-FileCopyrightText: Copyright (c) 2026 NVIDIA CORPORATION & AFFILIATES. All rights reserved.
 * SPDX-License-Identifier: Apache-2.0
 */
// The published code's casts and type names are kept as they are.
#![allow(clippy::unnecessary_cast, clippy::upper_case_acronyms)]

#[allow(unused_imports)]
use cuprum::tile;
use cuprum::tile::DType;
use cuprum::tile::api;
use cuprum::tile::cuda_async::device_operation::*;
use cuprum::tile::half::f16;
use cuprum::tile::tensor::{Tensor, ToHostVec, Unpartition};
use cuprum::tile::tile_kernel::{PartitionOp, TileKernel};
// Kernel function accessed via my_module::gemm below (not imported to avoid shadowing local fn gemm)
use std::sync::Arc;

#[cuprum::tile::module]
mod my_module {

    use cuprum::tile::core::*;

    #[cuprum::tile::entry()]
    fn gemm<
        E1: ElementType,
        E2: ElementType,
        const BM: i32,
        const BN: i32,
        const BK: i32,
        const K: i32,
    >(
        z: &mut Tensor<E1, { [BM, BN] }>,
        x: &Tensor<E2, { [-1, K] }>,
        y: &Tensor<E2, { [K, -1] }>,
    ) {
        let part_x = x.partition(const_shape![BM, BK]);
        let part_y = y.partition(const_shape![BK, BN]);
        let pid = get_tile_block_id();
        let mut tile_z = z.load();
        for i in 0i32..(K / BK) {
            let tile_x = part_x.load([pid.0, i]);
            let tile_y = part_y.load([i, pid.1]);
            tile_z = mma(tile_x, tile_y, tile_z);
            continue;
        }
        z.store(tile_z);
    }
}

fn gemm<T1: DType, T2: DType>(
    x: Arc<Tensor<T2>>,
    y: Arc<Tensor<T2>>,
) -> impl DeviceOp<Output = Tensor<T1>> {
    let (m, n, k) = (
        x.shape()[0] as usize,
        y.shape()[1] as usize,
        x.shape()[1] as usize,
    );
    let (bm, bn, bk) = (16, 16, 8);
    let generics = [
        T1::DTYPE.as_str().to_string(),
        T2::DTYPE.as_str().to_string(),
        bm.to_string(),
        bn.to_string(),
        bk.to_string(),
        k.to_string(),
    ];
    let z = api::zeros(&[m, n]).partition([bm, bn]); // impl DeviceOp
    let (z, _x, _y) = my_module::gemm(z, x, y).generics(generics.to_vec()).unzip();
    z.unpartition()
}

use cuprum_tile_examples::to_candle_tensor;

#[tokio::main(flavor = "multi_thread", worker_threads = 16)]
async fn main() -> Result<(), cuprum::tile::cuda_async::error::DeviceError> {
    type IN = f16;
    type OUT = f32;
    let (m, n, k) = (64, 64, 16);
    let x: Arc<Tensor<IN>> = api::randn_f16(IN::zero(), IN::one(), [m, k], None)
        .await?
        .into();
    let y: Arc<Tensor<IN>> = api::randn_f16(IN::zero(), IN::one(), [k, n], None)
        .await?
        .into();
    let z = gemm::<OUT, IN>(x.clone(), y.clone()).await?;
    let z_host: Vec<OUT> = z.to_host_vec().await?;
    let x_host: Vec<IN> = x.to_host_vec().await?;
    let y_host: Vec<IN> = y.to_host_vec().await?;
    let x_candle = to_candle_tensor(&x_host, &[m, k]);
    let y_candle = to_candle_tensor(&y_host, &[k, n]);
    let answer_host: Vec<f16> = x_candle
        .matmul(&y_candle)
        .unwrap()
        .reshape(((),))
        .unwrap()
        .to_vec1()
        .unwrap();
    for i in 0..(m * n) as usize {
        println!(
            "z_host[{i}] == answer_host[{i}]? {} == {}",
            z_host[i], answer_host[i]
        );
    }
    Ok(())
}
