//! Permuted views (`View::Permuted`) lowered and run on the emulator against plain Rust,
//! and the kernels of this crate's newer statements (sub-tile stores, permuted loads)
//! through the PTX writer and ptxas (when `cuprum_testkit::ptxas` finds it).

mod common;

use common::*;
use cuprum_ir::{BinaryOp, Module, ScalarType};
use cuprum_ptx::{Target, write_module};
use cuprum_testkit::poison::poisoned;
use cuprum_testkit::random::random;
use cuprum_testkit::{numbered, ptxas};
use cuprum_tile_ir::{Axis, Literal, Op, Stmt, TileKernel, View, shape_of};

/// `out = x.partition_permuted(tile, perm).load(block id) * 2` for a rank-3 `x`.
fn permuted(perm: [u32; 3], tile: [u32; 3]) -> TileKernel {
    let mut t = Tk::new("permuted");
    let out = t.output("out", ScalarType::F32, &tile);
    let x = t.input("x", ScalarType::F32, 3);
    let index = (0..3).map(|a| t.block_id(a)).collect();
    let v = t.def(Op::Load {
        view: View::Permuted {
            tensor: x,
            tile: shape_of(&tile),
            index,
            dim_map: perm.iter().map(|&a| Axis::Known(a)).collect(),
        },
        padding: Literal::Float(0.0),
    });
    let two = t.constant(ScalarType::F32, Literal::Float(2.0), &tile);
    let y = t.bin(BinaryOp::Mul, v, two);
    t.store(out, y);
    t.finish()
}

#[test]
fn permuted_loads_read_the_tensor_in_the_view_order() {
    let dev = dev();
    let mut rng = rng("permuted_loads");
    for perm in [
        [0, 1, 2],
        [0, 2, 1],
        [1, 0, 2],
        [1, 2, 0],
        [2, 0, 1],
        [2, 1, 0],
    ] {
        for (shape, tile) in [([3usize, 5, 70], [2u32, 4, 32]), ([9, 17, 6], [4, 8, 4])] {
            let c = compile(&dev, &permuted(perm, tile));
            let n: usize = shape.iter().product();
            let xs = random(&mut rng, n, -100.0f32, 100.0);
            let tx = Tensor::new(&dev, &xs, &shape);
            let out_shape: Vec<usize> = perm.iter().map(|&a| shape[a as usize]).collect();
            let o = Tensor::new(&dev, &poisoned::<f32>(n), &out_shape);
            launch(&dev, &c, &[o.arg(), tx.arg()]).expect("launch");
            let strides = row_major(&shape);
            let mut want = Vec::with_capacity(n);
            for v0 in 0..out_shape[0] {
                for v1 in 0..out_shape[1] {
                    for v2 in 0..out_shape[2] {
                        let v = [v0, v1, v2];
                        let at: i64 = (0..3)
                            .map(|i| v[i] as i64 * strides[perm[i] as usize])
                            .sum();
                        want.push(xs[at as usize] * 2.0);
                    }
                }
            }
            cuprum_testkit::compare::assert_bits_eq(
                &format!("permutation {perm:?} of {shape:?} in tiles of {tile:?}"),
                &o.to_host(&dev),
                &want,
            );
        }
    }
}

/// `out.partition_mut([1, 16]).store(x tile, [0, j])` for each of 4 column blocks.
fn sub_tile_stores() -> TileKernel {
    let mut t = Tk::new("sub_tile_stores");
    let out = t.output("out", ScalarType::F32, &[1, 64]);
    let x = t.input("x", ScalarType::F32, 2);
    let row = t.block_id(0);
    let start = t.int(0);
    let end = t.int(4);
    let step = t.int(1);
    let j = t.b.value(cuprum_tile_ir::TileType::scalar(ScalarType::I32));
    let body = t.block(|t| {
        let v = t.load(x, &[1, 16], vec![row, j], Literal::Float(0.0));
        let zero = t.int(0);
        t.push(Stmt::StorePart {
            tensor: out,
            tile: shape_of(&[1, 16]),
            index: vec![zero, j],
            value: v,
        });
        vec![]
    });
    t.push(Stmt::For {
        counter: j,
        start,
        end,
        step,
        args: vec![],
        inits: vec![],
        body,
        results: vec![],
    });
    t.finish()
}

#[test]
fn the_new_statements_write_and_assemble() {
    for tile in [permuted([2, 0, 1], [2, 4, 32]), sub_tile_stores()] {
        let mut lowered = cuprum_tile_lower::lower(&tile).unwrap_or_else(|e| panic!("{e}"));
        cuprum_opt::optimize_kernel(&mut lowered.kernel);
        let name = lowered.kernel.name.clone();
        let module = Module {
            kernels: vec![lowered.kernel],
        };
        for target in [Target::Sm80, Target::Sm90] {
            let ptx = write_module(&module, target).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(ptx.contains(&format!(".visible .entry {name}(")), "{ptx}");
            if let Err(e) = ptxas::check(&ptx, target.name()) {
                panic!("{name}: {e}\n--- PTX ---\n{}", numbered(&ptx));
            }
        }
    }
}
