// The tile front end runs at `cargo build`: shape and rank errors, unknown operations and an
// output without a static tile shape are compile errors at the user's span.

#[cuprum::tile::module]
mod kernels {
    use cuprum::tile::core::*;

    #[cuprum::tile::entry()]
    fn wrong_reduction<const BM: i32, const BN: i32>(
        y: &mut Tensor<f32, { [BM, BN] }>,
        x: &Tensor<f32, { [-1, -1] }>,
    ) {
        let t: Tile<f32, { [BM, BN] }> = load_tile_like(x, y);
        let m: Tile<f32, { [BM, BN] }> = reduce_max(t, 1i32);
        y.store(m);
    }

    #[cuprum::tile::entry()]
    fn mismatched_operands<const B: i32>(
        y: &mut Tensor<f32, { [B, B] }>,
        x: &Tensor<f32, { [-1] }>,
    ) {
        let row: Tile<f32, { [B] }> = x.load_tile(const_shape![B], [0i32]);
        y.store(y.load() + row);
    }

    #[cuprum::tile::entry()]
    fn unknown_operation<const B: i32>(y: &mut Tensor<f32, { [B] }>) {
        y.store(softplus(y.load()));
    }

    #[cuprum::tile::entry()]
    fn dynamic_output(y: &mut Tensor<f32, { [-1] }>) {
        y.store(y.load());
    }
}

fn main() {}
