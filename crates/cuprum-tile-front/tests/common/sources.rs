//! The source of cuTile Rust's example kernels, with their `cutile` paths changed to
//! `cuprum::tile`, and of a layer norm written in their style: what several test files
//! compile.

/// SPEC §3's kernel and cutile's `async_add` (the vector addition of its tutorials).
pub const ADD: &str = r#"
mod kernel {
    use cuprum::tile::core::*;

    #[cuprum::tile::entry()]
    fn scale<const B: i32>(out: &mut Tensor<f32, { [B] }>, x: &Tensor<f32, { [-1] }>) {
        let t = load_tile_like(x, out);
        out.store(t * 2.0);
    }

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
"#;

pub const HELLO_WORLD: &str = r#"
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
"#;

pub const SAXPY: &str = r#"
mod my_module {
    use cuprum::tile::core::*;

    #[cuprum::tile::entry()]
    fn saxpy<const S: [i32; 2]>(y: &mut Tensor<f32, S>, a: f32, x: &Tensor<f32, { [-1, -1] }>) {
        let tile_a = a.broadcast(y.shape());
        let tile_x = load_tile_like(x, y);
        let tile_y = y.load();
        y.store(tile_a * tile_x + tile_y);
    }
}
"#;

pub const SOFTMAX: &str = r#"
mod my_module {
    use cuprum::tile::core::*;

    #[cuprum::tile::entry()]
    fn softmax<const BM: i32, const BN: i32>(
        y: &mut Tensor<f32, { [BM, BN] }>,
        x: &Tensor<f32, { [-1, -1] }>,
    ) {
        let tile_x: Tile<f32, { [BM, BN] }> = load_tile_like(x, y);
        let tile_x_max: Tile<f32, { [BM] }> = reduce_max(tile_x, 1i32);
        let tile_x_max: Tile<f32, { [BM, BN] }> =
            tile_x_max.reshape(const_shape![BM, 1]).broadcast(y.shape());
        let num: Tile<f32, { [BM, BN] }> = exp(tile_x - tile_x_max);
        let denom: Tile<f32, { [BM] }> = reduce_sum(num, 1);
        let denom = denom.reshape(const_shape![BM, 1]).broadcast(y.shape());
        y.store(num / denom);
    }
}
"#;

pub const RMS_NORM: &str = r#"
mod my_module {
    use cuprum::tile::core::*;

    #[cuprum::tile::entry()]
    fn rms_norm<const N: i32, const BLOCK_SIZE: i32>(
        x: &Tensor<f32, { [-1, N] }>,
        w: &Tensor<f32, { [N] }>,
        out: &mut Tensor<f32, { [1, N] }>,
        eps: f32,
    ) {
        let tile_shape: Shape<{ [1, BLOCK_SIZE] }> = const_shape![1, BLOCK_SIZE];
        let num_tiles: i32 = N / BLOCK_SIZE;
        // The launch grid is (M, 1, 1).
        // row is a pid in [0, M).
        let pid: (i32, i32, i32) = get_tile_block_id();
        let row = pid.0;

        let x_part: Partition<f32, { [1, BLOCK_SIZE] }> = x.partition(tile_shape);
        let mut rms: Tile<f32, { [1, BLOCK_SIZE] }> = constant(0.0, tile_shape);
        for j in 0i32..num_tiles {
            let tx: Tile<f32, { [1, BLOCK_SIZE] }> = x_part.load([row, j]);
            rms = rms + tx * tx;
        }
        let rms: Tile<f32, { [1] }> = reduce_sum(rms, 1i32);
        let rms: Tile<f32, { [] }> = rms.reshape(const_shape![]);
        let rms: f32 = tile_to_scalar(rms);
        let n: f32 = convert_scalar(N);
        let rms: f32 = 1.0f32 / (rms / n + eps);
        let rms: Tile<f32, { [] }> =
            sqrt(scalar_to_tile(rms), rounding::NegativeInf, ftz::Disabled);
        let rms: f32 = tile_to_scalar(rms);
        let rms: Tile<f32, { [1, BLOCK_SIZE] }> = rms.broadcast(tile_shape);

        let w_part: Partition<f32, { [BLOCK_SIZE] }> = w.partition(const_shape![BLOCK_SIZE]);
        let mut out_part: PartitionMut<f32, { [1, BLOCK_SIZE] }> =
            unsafe { out.partition_mut(tile_shape) };
        for j in 0i32..num_tiles {
            let tx: Tile<f32, { [1, BLOCK_SIZE] }> = x_part.load([row, j]);
            let tw: Tile<f32, { [1, BLOCK_SIZE] }> = w_part.load([j]).reshape(tile_shape);
            let tout: Tile<f32, { [1, BLOCK_SIZE] }> = tx * rms * tw;
            out_part.store(tout, [0i32, j]);
        }
    }
}
"#;

/// A layer norm over rows, in the style of cutile's `rms_norm`: one block per row, the row
/// walked in `BLOCK`-wide tiles, `f16` data computed in `f32`.
pub const LAYER_NORM: &str = r#"
mod layer_norm_module {
    use cuprum::tile::core::*;

    const EPS: f32 = 1e-5;

    fn row_sum<const S: [i32; 2]>(t: Tile<f32, S>) -> f32 {
        let r: Tile<f32, { [] }> = reduce_sum(t, 1i32).reshape(const_shape![]);
        tile_to_scalar(r)
    }

    #[cuprum::tile::entry()]
    fn layer_norm<const N: i32, const BLOCK: i32>(
        x: &Tensor<f16, { [-1, N] }>,
        w: &Tensor<f16, { [N] }>,
        b: &Tensor<f16, { [N] }>,
        out: &mut Tensor<f16, { [1, N] }>,
    ) {
        let tile_shape: Shape<{ [1, BLOCK] }> = const_shape![1, BLOCK];
        let row: i32 = get_tile_block_id().0;
        let x_part: Partition<f16, { [1, BLOCK] }> = x.partition(tile_shape);
        let tiles: i32 = num_tiles(&x_part, 1);
        let n: f32 = convert_scalar(N);

        let mut sum: Tile<f32, { [1, BLOCK] }> = constant(0.0, tile_shape);
        for j in 0i32..tiles {
            let tx: Tile<f32, { [1, BLOCK] }> = convert_tile(x_part.load([row, j]));
            sum = sum + tx;
        }
        let mean: f32 = row_sum(sum) / n;

        let mut var: Tile<f32, { [1, BLOCK] }> = constant(0.0, tile_shape);
        for j in 0i32..tiles {
            let tx: Tile<f32, { [1, BLOCK] }> = convert_tile(x_part.load([row, j]));
            // Padding past the row's end must not count: mask it.
            let col: Tile<i32, { [1, BLOCK] }> = iota(const_shape![BLOCK]).reshape(tile_shape)
                + j * BLOCK;
            let inside: Tile<bool, { [1, BLOCK] }> = lt_tile(col, broadcast_scalar(N, tile_shape));
            let d: Tile<f32, { [1, BLOCK] }> = select(inside, tx - mean, 0.0);
            var = var + d * d;
        }
        let inv: f32 = tile_to_scalar(rsqrt(scalar_to_tile(row_sum(var) / n + EPS)));

        let w_part: Partition<f16, { [BLOCK] }> = w.partition(const_shape![BLOCK]);
        let mut out_part: PartitionMut<f16, { [1, BLOCK] }> = out.partition_mut(tile_shape);
        for j in 0i32..tiles {
            let tx: Tile<f32, { [1, BLOCK] }> = convert_tile(x_part.load([row, j]));
            let tw: Tile<f32, { [1, BLOCK] }> = convert_tile(w_part.load([j]).reshape(tile_shape));
            let tb: Tile<f32, { [1, BLOCK] }> =
                convert_tile(b.load_tile(const_shape![BLOCK], [j]).reshape(tile_shape));
            let y: Tile<f32, { [1, BLOCK] }> = (tx - mean) * inv * tw + tb;
            out_part.store(y.convert::<f16>(), [0i32, j]);
        }
    }
}
"#;
