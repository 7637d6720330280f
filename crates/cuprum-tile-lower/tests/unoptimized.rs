//! The lowering's own output, before `cuprum-opt` cleans it, computes the same bits as the
//! optimized kernel (which the other tests compare with plain Rust): the lowering does not
//! lean on a pass to be right.

mod common;

use common::kernels;
use common::*;
use cuprum_ir::ScalarType;
use cuprum_testkit::compare::assert_bits_eq;
use cuprum_testkit::poison::poisoned;
use cuprum_testkit::random::random;
use cuprum_tile_lower::LowerOptions;

/// Runs `kernel` (output first: `f32` of `out_shape`, then one `f32` input of `in_shape`,
/// then `scalars`) optimized and not, on the same random input, and compares the outputs.
fn same_both_ways(
    name: &str,
    kernel: &cuprum_tile_ir::TileKernel,
    out_shape: &[usize],
    in_shape: &[usize],
) {
    let dev = dev();
    let mut rng = rng(name);
    let xs = random(&mut rng, in_shape.iter().product(), -10.0f32, 10.0);
    let mut outs = Vec::new();
    for optimize in [true, false] {
        let c = compile_as(&dev, kernel, &LowerOptions::default(), optimize);
        let o = Tensor::new(
            &dev,
            &poisoned::<f32>(out_shape.iter().product()),
            out_shape,
        );
        let x = Tensor::new(&dev, &xs, in_shape);
        launch(&dev, &c, &[o.arg(), x.arg()]).expect("launch");
        outs.push(o.to_host(&dev));
    }
    let poison = poisoned::<f32>(1)[0].to_bits();
    assert!(
        outs[0].iter().all(|v| v.to_bits() != poison),
        "{name}: the kernel left an element unwritten"
    );
    assert_bits_eq(name, &outs[1], &outs[0]);
}

#[test]
fn softmax_transpose_and_reductions_need_no_optimizer() {
    same_both_ways("softmax", &kernels::softmax([2, 128]), &[9, 100], &[9, 100]);
    same_both_ways(
        "softmax_wide",
        &kernels::softmax([1, 4096]),
        &[2, 4096],
        &[2, 4096],
    );
    same_both_ways("transpose", &kernels::transpose(), &[70, 40], &[40, 70]);
    let sum = kernels::row_reduce(
        ScalarType::F32,
        |_| cuprum_tile_ir::Combine::Sum,
        [3, 100],
        cuprum_tile_ir::Literal::Float(0.0),
    );
    same_both_ways("row_sum", &sum, &[10], &[10, 100]);
}
