//! Reductions on the device against plain Rust: sum, max, min, product and closures along
//! each axis (within threads, across lanes, across warps; ragged tiles and tiles of any
//! size), and the row softmax, which must keep its rows in registers.

mod common;

use common::kernels::softmax;
use common::*;
use cuprum_ir::{BinaryOp, CmpOp, ScalarType};
use cuprum_testkit::compare::{assert_bits_eq, assert_same};
use cuprum_testkit::poison::poisoned;
use cuprum_testkit::random::random;
use cuprum_tile_ir::{Combine, Literal, Op};

#[derive(Clone, Copy, Debug)]
enum Kind {
    Sum,
    Prod,
    Min,
    Max,
    /// `|a, b| a ^ b`, identity 0.
    Xor,
    /// `|a, b| if a > b { a } else { b }`, identity `i32::MIN`.
    SelectMax,
}

impl Kind {
    const ALL: [Kind; 6] = [
        Kind::Sum,
        Kind::Prod,
        Kind::Min,
        Kind::Max,
        Kind::Xor,
        Kind::SelectMax,
    ];

    fn identity(self) -> i32 {
        match self {
            Kind::Sum | Kind::Xor => 0,
            Kind::Prod => 1,
            Kind::Min => i32::MAX,
            Kind::Max | Kind::SelectMax => i32::MIN,
        }
    }

    fn apply(self, a: i32, b: i32) -> i32 {
        match self {
            Kind::Sum => a.wrapping_add(b),
            Kind::Prod => a.wrapping_mul(b),
            Kind::Min => a.min(b),
            Kind::Max | Kind::SelectMax => a.max(b),
            Kind::Xor => a ^ b,
        }
    }

    fn combine(self, t: &mut Tk) -> Combine {
        let i32t = ScalarType::I32;
        match self {
            Kind::Sum => Combine::Sum,
            Kind::Prod => Combine::Prod,
            Kind::Min => Combine::Min,
            Kind::Max => Combine::Max,
            Kind::Xor => t.closure(i32t, Literal::Int(0), |t, a, b| t.bin(BinaryOp::Xor, a, b)),
            Kind::SelectMax => t.closure(i32t, Literal::Int(i64::from(i32::MIN)), |t, a, b| {
                let gt = t.cmp(CmpOp::Gt, a, b);
                t.def(Op::Select {
                    cond: gt,
                    if_true: a,
                    if_false: b,
                })
            }),
        }
    }
}

/// `out[i] = reduce(x[i, ..])` (axis 1) or `out[j] = reduce(x[.., j])` (axis 0), one tile
/// covering the reduced extent, padded with the identity.
fn reduce_kernel(kind: Kind, axis: u32, tile: [u32; 2]) -> cuprum_tile_ir::TileKernel {
    let mut t = Tk::new("reduce");
    let kept = tile[1 - axis as usize];
    let out = t.output("out", ScalarType::I32, &[kept]);
    let x = t.input("x", ScalarType::I32, 2);
    let pid = t.block_id(0);
    let zero = t.int(0);
    let index = if axis == 1 {
        vec![pid, zero]
    } else {
        vec![zero, pid]
    };
    let tx = t.load(x, &tile, index, Literal::Int(i64::from(kind.identity())));
    let c = kind.combine(&mut t);
    let r = t.reduce(tx, axis, c);
    t.store(out, r);
    t.finish()
}

#[test]
fn integer_reductions_along_each_axis() {
    let dev = dev();
    let mut rng = rng("integer_reductions");
    // (axis, tile, rows, cols): lanes and warps along the axis, tiles of any size, ragged.
    let cases: [(u32, [u32; 2], usize, usize); 8] = [
        (1, [4, 512], 10, 300),
        (1, [3, 50], 7, 50),
        (1, [16, 16], 37, 16),
        (1, [1, 2048], 3, 2048),
        (0, [256, 2], 200, 7),
        (0, [50, 3], 50, 8),
        (0, [16, 16], 16, 37),
        (0, [64, 8], 64, 8),
    ];
    for (axis, tile, rows, cols) in cases {
        for kind in Kind::ALL {
            let k = reduce_kernel(kind, axis, tile);
            for warps in [None, Some(1), Some(4)] {
                let c = compile_warps(&dev, &k, warps);
                let xs = match kind {
                    Kind::Prod => random(&mut rng, rows * cols, -3i32, 4),
                    _ => random(&mut rng, rows * cols, -1_000_000i32, 1_000_000),
                };
                let kept = if axis == 1 { rows } else { cols };
                let o = Tensor::new(&dev, &vec![i32::MIN + 1; kept], &[kept]);
                let tx = Tensor::new(&dev, &xs, &[rows, cols]);
                launch(&dev, &c, &[o.arg(), tx.arg()]).expect("launch");
                let want: Vec<i32> = (0..kept)
                    .map(|i| {
                        let line: Vec<i32> = if axis == 1 {
                            xs[i * cols..(i + 1) * cols].to_vec()
                        } else {
                            (0..rows).map(|r| xs[r * cols + i]).collect()
                        };
                        line.into_iter()
                            .fold(kind.identity(), |a, b| kind.apply(a, b))
                    })
                    .collect();
                assert_same(
                    &format!("{kind:?} along {axis} of {tile:?} ({rows}x{cols}), {warps:?} warps"),
                    &o.to_host(&dev),
                    &want,
                );
            }
        }
    }
}

/// A reduction to a scalar (rank 1 to rank 0), used as a scalar: `out = x - sum(x)`.
#[test]
fn reduction_to_a_scalar_is_uniform() {
    let mut t = Tk::new("center");
    let out = t.output("out", ScalarType::I32, &[1000]);
    let x = t.input("x", ScalarType::I32, 1);
    let pid = t.block_id(0);
    let tx = t.load(x, &[1000], vec![pid], Literal::Int(0));
    let s = t.reduce(tx, 0, Combine::Sum);
    let s = t.splat(s, &[1000]);
    let r = t.bin(BinaryOp::Sub, tx, s);
    t.store(out, r);
    let k = t.finish();
    let dev = dev();
    let c = compile(&dev, &k);
    let mut rng = rng("reduction_to_a_scalar");
    let n = 2500usize;
    let xs = random(&mut rng, n, -1000i32, 1000);
    let o = Tensor::new(&dev, &vec![i32::MIN; n], &[n]);
    let tx = Tensor::new(&dev, &xs, &[n]);
    launch(&dev, &c, &[o.arg(), tx.arg()]).expect("launch");
    let want: Vec<i32> = (0..n)
        .map(|e| {
            let b = e / 1000;
            let s: i32 = xs[b * 1000..((b + 1) * 1000).min(n)].iter().sum();
            xs[e] - s
        })
        .collect();
    assert_same("center", &o.to_host(&dev), &want);
}

/// Float sums (within a bound: the order is unspecified) and float max (exact), with NaN
/// and signed zeros kept where Rust keeps them.
#[test]
fn float_sums_and_maxima() {
    let dev = dev();
    let mut rng = rng("float_reductions");
    for (tile, rows, cols) in [([8u32, 256u32], 20usize, 256usize), ([2, 1000], 5, 1000)] {
        for combine in [Combine::Sum, Combine::Max] {
            let mut t = Tk::new("freduce");
            let out = t.output("out", ScalarType::F32, &[tile[0]]);
            let x = t.input("x", ScalarType::F32, 2);
            let pid = t.block_id(0);
            let zero = t.int(0);
            let pad = if combine == Combine::Sum {
                -0.0
            } else {
                f64::NEG_INFINITY
            };
            let tx = t.load(x, &tile, vec![pid, zero], Literal::Float(pad));
            let r = t.reduce(tx, 1, combine.clone());
            t.store(out, r);
            let k = t.finish();
            let c = compile(&dev, &k);
            let mut xs = random(&mut rng, rows * cols, -100.0f32, 100.0);
            // A row of negative zeros (its sum is -0.0), one with a NaN (ignored by max).
            for v in &mut xs[..cols] {
                *v = -0.0;
            }
            xs[cols + 3] = f32::NAN;
            let o = Tensor::new(&dev, &poisoned::<f32>(rows), &[rows]);
            let tx = Tensor::new(&dev, &xs, &[rows, cols]);
            launch(&dev, &c, &[o.arg(), tx.arg()]).expect("launch");
            let got = o.to_host(&dev);
            let rows_of = |i: usize| &xs[i * cols..(i + 1) * cols];
            if combine == Combine::Sum {
                assert_eq!(got[0].to_bits(), (-0.0f32).to_bits(), "a sum of -0.0");
                assert!(got[1].is_nan(), "a NaN propagates through a sum");
                // Any order of n additions is within (n - 1) * eps * sum(|x|) of the
                // exact sum (computed in f64).
                for (i, &g) in got.iter().enumerate().skip(2) {
                    let row = rows_of(i);
                    let exact: f64 = row.iter().map(|&v| f64::from(v)).sum();
                    let magnitude: f64 = row.iter().map(|&v| f64::from(v).abs()).sum();
                    let bound = (row.len() - 1) as f64 * f64::from(f32::EPSILON) * magnitude;
                    let err = (f64::from(g) - exact).abs();
                    assert!(
                        err <= bound,
                        "row {i}: got {g}, exact {exact}, bound {bound}"
                    );
                }
            } else {
                let want: Vec<f32> = (0..rows)
                    .map(|i| rows_of(i).iter().fold(f32::NEG_INFINITY, |a, &b| a.max(b)))
                    .collect();
                assert_bits_eq("max", &got[1..], &want[1..]);
                assert_eq!(got[0], 0.0);
            }
        }
    }
}

#[test]
fn row_softmax() {
    let dev = dev();
    let mut rng = rng("row_softmax");
    for (tile, rows, cols) in [
        ([2u32, 128u32], 37usize, 128usize),
        ([1, 4096], 5, 4096),
        ([4, 128], 9, 100),
        ([3, 100], 7, 100),
        // 16 warps: a row of 64 Ki elements needs more than the registers of 8.
        ([1, 65536], 2, 65536),
    ] {
        let k = softmax(tile);
        let c = compile(&dev, &k);
        let xs = random(&mut rng, rows * cols, -10.0f32, 10.0);
        let o = Tensor::new(&dev, &poisoned::<f32>(rows * cols), &[rows, cols]);
        let tx = Tensor::new(&dev, &xs, &[rows, cols]);
        launch(&dev, &c, &[o.arg(), tx.arg()]).expect("launch");
        let mut want = Vec::with_capacity(rows * cols);
        for r in 0..rows {
            let row = &xs[r * cols..(r + 1) * cols];
            let m = row.iter().fold(f32::NEG_INFINITY, |a, &b| a.max(b));
            let e: Vec<f32> = row.iter().map(|v| (v - m).exp()).collect();
            let s: f32 = e.iter().sum();
            want.extend(e.iter().map(|v| v / s));
        }
        // The row's sum of positive terms, in any order, is within (n - 1) eps of the
        // sequential one; the rest is the same operations on the same bits.
        let tol = cols as f32 * f32::EPSILON;
        assert_close(&format!("softmax {tile:?}"), &o.to_host(&dev), &want, tol);
    }
}

/// The row softmax reads each element once and keeps the row in registers: its only
/// shared memory is the two cross-warp reductions' scratch (one word per warp each, side by
/// side, so that each takes one barrier: the second writes while threads may still read the
/// first's), and no layout conversion moves the tile.
#[test]
fn row_softmax_keeps_rows_in_registers() {
    let dev = dev();
    let c = compile(&dev, &softmax([1, 4096]));
    let l = &c.lowered;
    assert_eq!(l.block_threads, 256);
    assert_eq!(l.shared_bytes, 2 * 8 * 4, "one f32 per warp, per reduction");
    let a = accesses(&l.kernel);
    // 16 elements per thread: four 16-byte loads on the fast path and 16 predicated ones on
    // the edge path (which also takes unaligned views); likewise for the store.
    assert_eq!(a.vector_loads, vec![4; 4], "{a:?}");
    assert_eq!(a.loads, 16, "{a:?}");
    assert_eq!(a.vector_stores, vec![4; 4], "{a:?}");
    assert_eq!(a.stores, 16, "{a:?}");
    // Per reduction: one shared store of the warp's partial, and the eight partials read
    // back with two 16-byte loads to combine them.
    assert_eq!(a.shared, 2, "{a:?}");
    assert_eq!(a.vector_shared, vec![4; 4], "{a:?}");
    assert_eq!(a.barriers, 2, "{a:?}");
}

/// Tiles whose layouts pad them past the registers of 8 warps get more warps: `[100, 300]`
/// (30000 elements, laid out as `[128, 512]`) of `f32` takes 16 warps and `f64` 32, and
/// `out[i, j] = x[i, j] + max(x[i, ..])` is exact on both.
#[test]
fn ragged_tiles_padded_past_eight_warps_get_more_warps() {
    let dev = dev();
    let mut rng = rng("padded_tiles");
    let (rows, cols) = (150usize, 300usize);
    let xs = random(&mut rng, rows * cols, -1000.0f32, 1000.0);
    for (ty, warps) in [(ScalarType::F32, 16), (ScalarType::F64, 32)] {
        let mut t = Tk::new("padded");
        let out = t.output("out", ty, &[100, 300]);
        let x = t.input("x", ty, 2);
        let (i, j) = (t.block_id(0), t.block_id(1));
        let tx = t.load(
            x,
            &[100, 300],
            vec![i, j],
            Literal::Float(f64::NEG_INFINITY),
        );
        let m = t.reduce(tx, 1, Combine::Max);
        let m = t.reshape(m, &[100, 1]);
        let m = t.broadcast(m, &[100, 300]);
        let r = t.bin(BinaryOp::Add, tx, m);
        t.store(out, r);
        let c = compile(&dev, &t.finish());
        assert_eq!(c.lowered.block_threads, warps * 32, "{ty}");
        if ty == ScalarType::F32 {
            let o = Tensor::new(&dev, &poisoned::<f32>(rows * cols), &[rows, cols]);
            let tx = Tensor::new(&dev, &xs, &[rows, cols]);
            launch(&dev, &c, &[o.arg(), tx.arg()]).expect("launch");
            let want: Vec<f32> = (0..rows)
                .flat_map(|r| {
                    let row = &xs[r * cols..(r + 1) * cols];
                    let m = row.iter().fold(f32::NEG_INFINITY, |a, &b| a.max(b));
                    row.iter().map(move |&v| v + m)
                })
                .collect();
            assert_bits_eq("f32", &o.to_host(&dev), &want);
        } else {
            let x64: Vec<f64> = xs.iter().map(|&v| f64::from(v)).collect();
            let o = Tensor::new(&dev, &vec![f64::NAN; rows * cols], &[rows, cols]);
            let tx = Tensor::new(&dev, &x64, &[rows, cols]);
            launch(&dev, &c, &[o.arg(), tx.arg()]).expect("launch");
            // Sums of two f32 values are exact in f64.
            let want: Vec<f64> = (0..rows)
                .flat_map(|r| {
                    let row = &x64[r * cols..(r + 1) * cols];
                    let m = row.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b));
                    row.iter().map(move |&v| v + m)
                })
                .collect();
            assert_bits_eq("f64", &o.to_host(&dev), &want);
        }
    }
}

/// In order: each barrier (`true`) and each shared-memory store (`false`) of `block`, into
/// branches and loops.
fn barriers_and_shared_stores(block: &cuprum_ir::Block, out: &mut Vec<bool>) {
    use cuprum_ir::{AddressSpace, Stmt as IStmt};
    for s in &block.stmts {
        match s {
            IStmt::Barrier => out.push(true),
            IStmt::Store {
                space: AddressSpace::Shared,
                ..
            } => out.push(false),
            IStmt::If {
                then, otherwise, ..
            } => {
                barriers_and_shared_stores(then, out);
                barriers_and_shared_stores(otherwise, out);
            }
            IStmt::Loop { body } => barriers_and_shared_stores(body, out),
            _ => {}
        }
    }
}

/// A reduction across warps inside a loop writes the scratch that the previous iteration's
/// reads may still be reading, so the loop body meets a barrier before its first shared
/// store; the reduction after the loop then needs one too (the loop left the scratch in
/// use). A kernel's first reduction needs none before its writes.
#[test]
fn scratch_reused_across_loop_iterations_is_behind_a_barrier() {
    let lowered = cuprum_tile_lower::lower(&kernels::control()).unwrap_or_else(|e| panic!("{e}"));
    let body = &lowered.kernel.body;
    let mut loop_events = Vec::new();
    for s in &body.stmts {
        if let cuprum_ir::Stmt::Loop { body } = s {
            barriers_and_shared_stores(body, &mut loop_events);
        }
    }
    assert!(
        loop_events.contains(&false),
        "the loop's reduction crosses warps: {loop_events:?}"
    );
    assert_eq!(
        loop_events.first(),
        Some(&true),
        "a barrier before the loop body's first shared store: {loop_events:?}"
    );
    let mut after = Vec::new();
    let loop_at = body
        .stmts
        .iter()
        .position(|s| matches!(s, cuprum_ir::Stmt::Loop { .. }))
        .expect("a loop");
    barriers_and_shared_stores(
        &cuprum_ir::Block {
            stmts: body.stmts[loop_at + 1..].to_vec(),
        },
        &mut after,
    );
    assert_eq!(after.first(), Some(&true), "{after:?}");
    let softmax = cuprum_tile_lower::lower(&softmax([1, 4096])).unwrap_or_else(|e| panic!("{e}"));
    let mut events = Vec::new();
    barriers_and_shared_stores(&softmax.kernel.body, &mut events);
    assert_eq!(events.first(), Some(&false), "{events:?}");
}

/// The kernel's shared-memory events in program order: `S` a store, `L` a load, `B` a
/// barrier.
fn shared_events(kernel: &cuprum_ir::Kernel) -> String {
    use cuprum_ir::{AddressSpace as S, Op as IOp, Stmt as IStmt};
    let mut out = String::new();
    kernel.body.visit(&mut |s| match s {
        IStmt::Def {
            op: IOp::Load {
                space: S::Shared, ..
            },
            ..
        }
        | IStmt::VectorLoad {
            space: S::Shared, ..
        } => out.push('L'),
        IStmt::Store {
            space: S::Shared, ..
        }
        | IStmt::VectorStore {
            space: S::Shared, ..
        } => out.push('S'),
        IStmt::Barrier => out.push('B'),
        _ => {}
    });
    out
}

/// `out[i] = sum(x[i, ..]) + max(x[i, ..]) * min(x[i, ..])`: three reductions of one tile
/// that do not depend on each other.
fn independent_reductions(tile: [u32; 2]) -> cuprum_tile_ir::TileKernel {
    let mut t = Tk::new("independent");
    let out = t.output("out", ScalarType::I32, &[tile[0]]);
    let x = t.input("x", ScalarType::I32, 2);
    let pid = t.block_id(0);
    let zero = t.int(0);
    let tx = t.load(x, &tile, vec![pid, zero], Literal::Int(0));
    let sum = t.reduce(tx, 1, Combine::Sum);
    let max = t.reduce(tx, 1, Combine::Max);
    let min = t.reduce(tx, 1, Combine::Min);
    let spread = t.bin(BinaryOp::Mul, max, min);
    let r = t.bin(BinaryOp::Add, sum, spread);
    t.store(out, r);
    t.finish()
}

/// Independent reductions across warps write their partial results side by side and meet
/// the block at one barrier (their reads wait for the first use), as a Welford reduction's
/// one exchange does; the results are the same as plain Rust's.
#[test]
fn independent_reductions_share_one_barrier() {
    let dev = dev();
    let mut rng = rng("independent_reductions");
    for (tile, rows, cols) in [
        ([1u32, 2048u32], 3usize, 2048usize),
        ([4, 512], 9, 300),
        ([2, 1000], 5, 1000),
    ] {
        let k = independent_reductions(tile);
        for warps in [None, Some(4)] {
            let c = compile_warps(&dev, &k, warps);
            let events = shared_events(&c.lowered.kernel);
            let before_reads = &events[..events.find('L').unwrap_or(events.len())];
            assert!(
                before_reads.len() >= 4
                    && before_reads.ends_with("SB")
                    && before_reads.matches('B').count() == 1,
                "{tile:?}, {warps:?} warps: the three reductions' writes, then one barrier, \
                 then their reads: {events}"
            );
            // A tile padded with zeros: the padding must not reach max or min, so the
            // values of each row straddle zero.
            let xs = random(&mut rng, rows * cols, -1_000_000i32, 1_000_000);
            let o = Tensor::new(&dev, &poisoned::<i32>(rows), &[rows]);
            let tx = Tensor::new(&dev, &xs, &[rows, cols]);
            launch(&dev, &c, &[o.arg(), tx.arg()]).expect("launch");
            let want: Vec<i32> = xs
                .chunks(cols)
                .map(|row| {
                    let sum = row.iter().fold(0i32, |a, &b| a.wrapping_add(b));
                    let max = row.iter().copied().max().unwrap_or(0).max(0);
                    let min = row.iter().copied().min().unwrap_or(0).min(0);
                    sum.wrapping_add(max.wrapping_mul(min))
                })
                .collect();
            assert_same(
                &format!("independent reductions of {tile:?}, {warps:?} warps"),
                &o.to_host(&dev),
                &want,
            );
        }
    }
}
