//! Kernels lowered with what a launch knows of its tensors (`TensorFacts`: aligned runs,
//! sizes that the tile extents divide) against the same kernels lowered without, and against
//! plain Rust, on random inputs with every output poisoned first: the code without run-time
//! tests must compute the same elements, leave everything outside its tensors untouched
//! (also from blocks of a grid larger than the tensor), and be smaller.

mod common;

use common::*;
use cuprum_ir::ScalarType;
use cuprum_testkit::poison::poisoned;
use cuprum_testkit::random::random;
use cuprum_tile_lower::LowerOptions;

/// Statements of the optimized kernel IR, as printed: a measure of its size.
fn ir_lines(c: &Compiled) -> usize {
    cuprum_ir::print_kernel(&c.lowered.kernel).lines().count()
}

/// `z = x + y` on 3 tiles of 128 whose output lies at the start of a larger allocation (its
/// tail poisoned), launched on the grid of the tensor and on a grid of 5 blocks.
#[test]
fn whole_tiles_add_writes_its_tensor_and_nothing_else() {
    let dev = dev();
    let mut rng = rng("facts_add");
    let tile = kernels::add(ScalarType::F32, 128);
    let n = 384;
    let xs = random(&mut rng, n, -100.0f32, 100.0);
    let ys = random(&mut rng, n, -100.0f32, 100.0);
    let want: Vec<f32> = xs.iter().zip(&ys).map(|(x, y)| x + y).collect();
    let (tx, ty) = (Tensor::new(&dev, &xs, &[n]), Tensor::new(&dev, &ys, &[n]));
    for grid in [None, Some((5, 1, 1))] {
        let alloc = poisoned::<f32>(n + 256);
        let z = Tensor::view(&dev, &alloc, 0, &[n], &[1]);
        let args = [z.arg(), tx.arg(), ty.arg()];
        let facts = facts_of(&tile, &args);
        assert!(
            facts
                .iter()
                .all(|f| f.aligned_runs && f.size_divisors == [128])
        );
        let options = LowerOptions {
            tensor_facts: facts,
            ..LowerOptions::default()
        };
        let with = compile_with(&dev, &tile, &options);
        let without = compile(&dev, &tile);
        assert!(ir_lines(&with) < ir_lines(&without));
        launch_grid(&dev, &with, &args, grid).expect("launch");
        let got = z.to_host(&dev);
        assert_eq!(got[..n], want[..], "grid {grid:?}");
        assert!(
            got[n..]
                .iter()
                .zip(&alloc[n..])
                .all(|(a, b)| a.to_bits() == b.to_bits()),
            "grid {grid:?}: a block wrote past the tensor"
        );
    }
}

/// Softmax along rows of tiles of `[2, 64]` of a `[6, 128]` tensor read through a view at an
/// aligned offset of a larger allocation with a row stride of 132: rows of the view and
/// padding between them; lowered with and without facts, each against plain Rust.
#[test]
fn whole_tiles_softmax_matches_the_tested_code() {
    let dev = dev();
    let mut rng = rng("facts_softmax");
    let tile = kernels::softmax([2, 64]);
    let (rows, cols, stride, offset) = (6usize, 128usize, 132i64, 4i64);
    let data = random(
        &mut rng,
        offset as usize + rows * stride as usize,
        -8.0f32,
        8.0,
    );
    let x = Tensor::view(&dev, &data, offset, &[rows, cols], &[stride, 1]);
    // Each tile block normalizes its own 64 columns of a row.
    let mut want = vec![0.0f32; rows * cols];
    for r in 0..rows {
        for part in (0..cols).step_by(64) {
            let at = |c: usize| data[offset as usize + r * stride as usize + part + c];
            let m = (0..64).map(at).fold(f32::NEG_INFINITY, f32::max);
            let s: f64 = (0..64).map(|c| f64::from((at(c) - m).exp())).sum();
            for c in 0..64 {
                want[r * cols + part + c] = (f64::from((at(c) - m).exp()) / s) as f32;
            }
        }
    }
    let y0 = Tensor::new(&dev, &poisoned::<f32>(rows * cols), &[rows, cols]);
    let facts = facts_of(&tile, &[y0.arg(), x.arg()]);
    assert!(facts[1].aligned_runs, "{facts:?}");
    assert_eq!(facts[1].size_divisors, vec![2, 64]);
    let options = LowerOptions {
        tensor_facts: facts,
        ..LowerOptions::default()
    };
    for (name, c) in [
        ("with facts", compile_with(&dev, &tile, &options)),
        ("without", compile(&dev, &tile)),
    ] {
        let y = Tensor::new(&dev, &poisoned::<f32>(rows * cols), &[rows, cols]);
        launch(&dev, &c, &[y.arg(), x.arg()]).expect("launch");
        for (i, (g, w)) in y.to_host(&dev).iter().zip(&want).enumerate() {
            assert!(
                (g - w).abs() <= 1e-6 + 1e-5 * w.abs(),
                "{name}: element {i}: {g} against {w}"
            );
        }
    }
}

/// Facts that a view breaks are not claimed: a misaligned offset, a row stride that is not a
/// multiple of 16 bytes, a size the tile does not divide (on the last axis, rows of whole
/// 16-byte chunks are still known, or not: 100 and 102 `f32` columns).
#[test]
fn facts_are_not_claimed_for_views_that_break_them() {
    let dev = dev();
    let tile = kernels::softmax([2, 64]);
    let data = poisoned::<f32>(4096);
    let y = Tensor::new(&dev, &poisoned::<f32>(6 * 128), &[6, 128]);
    for (offset, shape, stride, aligned, divisors) in [
        (1, [6, 128], 132, false, vec![2, 64]),
        (0, [6, 128], 130, false, vec![2, 64]),
        (0, [5, 100], 128, true, vec![1, 4]),
        (0, [5, 102], 128, true, vec![1, 1]),
    ] {
        let x = Tensor::view(&dev, &data, offset, &shape, &[stride, 1]);
        let facts = facts_of(&tile, &[y.arg(), x.arg()]);
        assert_eq!(
            facts[1].aligned_runs, aligned,
            "offset {offset} stride {stride}"
        );
        assert_eq!(facts[1].size_divisors, divisors, "shape {shape:?}");
    }
}
