//! Sub-tile stores (`Stmt::StorePart`, the source's `partition_mut(..).store(t, index)`) on
//! the emulator against plain Rust: every sub-tile index of the own tile, and the ones just
//! outside it, is stored from `for` loops; elements land at `index * tile + c` of the own
//! tile, and those outside the own tile or the tensor are dropped (the tensor is a view in a
//! larger poisoned allocation, so a stray write shows).

mod common;

use common::*;
use cuprum_ir::{BinaryOp, ScalarType};
use cuprum_testkit::poison::poisoned;
use cuprum_testkit::random::random;
use cuprum_tile_ir::{Literal, Op, Stmt, TileKernel, TileType, TileValue};

/// One case: the own tile, the sub-tile, the output's shape and the input's shape.
struct Case {
    own: &'static [u32],
    sub: &'static [u32],
    out: &'static [usize],
    x: &'static [usize],
}

/// How many sub-tiles of `sub` cover `own` along each axis.
fn sub_tiles(own: &[u32], sub: &[u32]) -> Vec<i64> {
    own.iter()
        .zip(sub)
        .map(|(&o, &s)| i64::from(o.div_ceil(s)))
        .collect()
}

/// For every sub-tile index `i` from -1 to the last one + 1 along each axis:
/// `out.partition_mut(sub).store(x.load_tile(sub, i) + marker, i)`, where the marker is
/// `7 * block.0 + 3 * block.1 + block.2` (so each block's writes are its own).
fn kernel(case: &Case) -> TileKernel {
    let mut t = Tk::new("store_part");
    let out = t.output("out", ScalarType::F32, case.own);
    let x = t.input("x", ScalarType::F32, case.sub.len());
    let mut marker = None;
    for (axis, k) in [(0u32, 7i64), (1, 3), (2, 1)] {
        let b = t.block_id(axis);
        let k = t.int(k);
        let term = t.bin(BinaryOp::Mul, b, k);
        marker = Some(match marker {
            Some(m) => t.bin(BinaryOp::Add, m, term),
            None => term,
        });
    }
    let marker = marker.expect("three axes");
    let marker = t.def(Op::Cast {
        value: marker,
        to: f32e(),
    });
    let counts = sub_tiles(case.own, case.sub);
    nest(&mut t, case, &counts, out, x, marker, &mut Vec::new());
    t.finish()
}

fn nest(
    t: &mut Tk,
    case: &Case,
    counts: &[i64],
    out: u32,
    x: u32,
    marker: TileValue,
    index: &mut Vec<TileValue>,
) {
    let depth = index.len();
    if depth == case.sub.len() {
        let tile = t.load(x, case.sub, index.clone(), Literal::Float(0.0));
        let m = t.splat(marker, case.sub);
        let value = t.bin(BinaryOp::Add, tile, m);
        t.push(Stmt::StorePart {
            tensor: out,
            tile: cuprum_tile_ir::shape_of(case.sub),
            index: index.clone(),
            value,
        });
        return;
    }
    let start = t.int(-1);
    let end = t.int(counts[depth] + 1);
    let step = t.int(1);
    let counter = t.b.value(TileType::scalar(ScalarType::I32));
    let body = t.block(|t| {
        index.push(counter);
        nest(t, case, counts, out, x, marker, index);
        index.pop();
        vec![]
    });
    t.push(Stmt::For {
        counter,
        start,
        end,
        step,
        args: vec![],
        inits: vec![],
        body,
        results: vec![],
    });
}

/// The row-major coordinates of element `flat` of `shape`.
fn unflatten(mut flat: usize, shape: &[usize]) -> Vec<usize> {
    let mut c = vec![0; shape.len()];
    for d in (0..shape.len()).rev() {
        c[d] = flat % shape[d];
        flat /= shape[d];
    }
    c
}

/// What the kernel leaves in `out` (of the case's shape): the element at `g` is in the own
/// tile of block `g / own`, at own coordinate `o = g % own`, written by sub-tile
/// `i = o / sub` at its coordinate `o % sub`, i.e. `x[i * sub + o % sub] = x[o]` (0 outside
/// `x`) plus the block's marker.
fn reference(case: &Case, xs: &[f32]) -> Vec<f32> {
    let n: usize = case.out.iter().product();
    (0..n)
        .map(|flat| {
            let g = unflatten(flat, case.out);
            let mut block = [0i64; 3];
            let mut o = Vec::with_capacity(g.len());
            for (d, (&gd, &od)) in g.iter().zip(case.own).enumerate() {
                block[d] = (gd / od as usize) as i64;
                o.push(gd % od as usize);
            }
            let inside_x = o.iter().zip(case.x).all(|(&c, &n)| c < n);
            let v = if inside_x {
                let at = o
                    .iter()
                    .zip(row_major(case.x))
                    .map(|(&c, s)| c as i64 * s)
                    .sum::<i64>();
                xs[at as usize]
            } else {
                0.0
            };
            v + (7 * block[0] + 3 * block[1] + block[2]) as f32
        })
        .collect()
}

#[test]
fn sub_tile_stores_land_in_the_own_tile_and_drop_the_rest() {
    let cases = [
        // The rms_norm shape: one row per block, column blocks stored in a loop.
        Case {
            own: &[1, 64],
            sub: &[1, 16],
            out: &[5, 64],
            x: &[1, 64],
        },
        // Ragged: the sub-tiles overhang the own tile, which overhangs the tensor.
        Case {
            own: &[1, 100],
            sub: &[1, 32],
            out: &[3, 250],
            x: &[2, 90],
        },
        Case {
            own: &[4, 24],
            sub: &[2, 8],
            out: &[9, 50],
            x: &[5, 30],
        },
        // Sizes the sub-tiles divide: with the launch's facts, whole sub-tiles or none.
        Case {
            own: &[4, 24],
            sub: &[2, 8],
            out: &[8, 48],
            x: &[4, 24],
        },
        // Sizes the sub-tiles divide, but not the own tile: a sub-tile may straddle the
        // own tile's end, so facts must not make it whole.
        Case {
            own: &[1, 20],
            sub: &[1, 8],
            out: &[2, 40],
            x: &[1, 20],
        },
        Case {
            own: &[3, 5],
            sub: &[2, 2],
            out: &[7, 11],
            x: &[3, 5],
        },
        // The own tile's last size keeps no vector run aligned.
        Case {
            own: &[6],
            sub: &[4],
            out: &[23],
            x: &[7],
        },
        Case {
            own: &[2, 2, 8],
            sub: &[1, 2, 4],
            out: &[3, 5, 17],
            x: &[2, 2, 8],
        },
    ];
    let dev = dev();
    let mut rng = rng("store_part");
    for case in &cases {
        let tile = kernel(case);
        let c = compile(&dev, &tile);
        let xn: usize = case.x.iter().product();
        let xs = random(&mut rng, xn, -100.0f32, 100.0);
        let tx = Tensor::new(&dev, &xs, case.x);
        let want = reference(case, &xs);
        // Contiguous at offset 0 (vector stores where aligned), and a view at an odd offset
        // with a padded last row pitch inside a larger allocation.
        for (offset, pad) in [(0usize, 0usize), (3, 5)] {
            let rank = case.out.len();
            let mut pitch = case.out.to_vec();
            pitch[rank - 1] += pad;
            let strides = row_major(&pitch);
            let total = offset + pitch.iter().product::<usize>();
            let poison = poisoned::<f32>(total);
            // The kernel lowered knowing nothing of its tensors, and lowered with the facts
            // of this launch (as the runtime does).
            let facts_of_launch = {
                let o = Tensor::view(&dev, &poison, offset as i64, case.out, &strides);
                facts_of(&tile, &[o.arg(), tx.arg()])
            };
            let with_facts = compile_with(
                &dev,
                &tile,
                &cuprum_tile_lower::LowerOptions {
                    tensor_facts: facts_of_launch,
                    ..Default::default()
                },
            );
            if case
                .out
                .iter()
                .zip(case.sub)
                .all(|(&n, &t)| n % t as usize == 0)
                && case.own.iter().zip(case.sub).all(|(&o, &t)| o % t == 0)
            {
                let lines =
                    |c: &Compiled| cuprum_ir::print_kernel(&c.lowered.kernel).lines().count();
                assert!(
                    lines(&with_facts) < lines(&c),
                    "{:?}: whole sub-tiles, smaller code",
                    case.own
                );
            }
            for c in [&c, &with_facts] {
                let o = Tensor::view(&dev, &poison, offset as i64, case.out, &strides);
                launch(&dev, c, &[o.arg(), tx.arg()]).expect("launch");
                let all = o.to_host(&dev);
                let mut got = Vec::with_capacity(want.len());
                let mut expect_all = poison.clone();
                for (flat, w) in want.iter().enumerate() {
                    let g = unflatten(flat, case.out);
                    let at = offset as i64
                        + g.iter()
                            .zip(&strides)
                            .map(|(&c, &s)| c as i64 * s)
                            .sum::<i64>();
                    got.push(all[at as usize]);
                    expect_all[at as usize] = *w;
                }
                let what = format!(
                    "own {:?} sub {:?} out {:?} x {:?} offset {offset} pad {pad}",
                    case.own, case.sub, case.out, case.x
                );
                cuprum_testkit::compare::assert_bits_eq(&what, &got, &want);
                cuprum_testkit::compare::assert_bits_eq(
                    &format!("{what}: the allocation outside the tensor"),
                    &all,
                    &expect_all,
                );
            }
        }
    }
}

/// A sub-tile store and a load of the same own tile in one kernel see each other in order:
/// `out.partition_mut([1, B]).store(x_j, [0, j])` for each column block `j`, then
/// `out = 2 * out.load()` (the barrier between them orders threads that own different
/// elements in the two layouts).
#[test]
fn a_load_of_the_own_tile_sees_earlier_sub_tile_stores() {
    let mut t = Tk::new("store_then_load");
    let (cols, block) = (48u32, 8u32);
    let out = t.output("out", ScalarType::F32, &[2, cols]);
    let x = t.input("x", ScalarType::F32, 2);
    let pid = t.block_id(0);
    let rows = t.int(2);
    let row0 = t.bin(BinaryOp::Mul, pid, rows);
    let start = t.int(0);
    let end = t.int(i64::from(cols / block));
    let step = t.int(1);
    let j = t.b.value(TileType::scalar(ScalarType::I32));
    let body = t.block(|t| {
        // Row `r` of the block's pair of rows goes to sub-tile `[r, j]`.
        for r in 0..2 {
            let r = t.int(r);
            let row = t.bin(BinaryOp::Add, row0, r);
            let value = t.load(x, &[1, block], vec![row, j], Literal::Float(0.0));
            t.push(Stmt::StorePart {
                tensor: out,
                tile: cuprum_tile_ir::shape_of(&[1, block]),
                index: vec![r, j],
                value,
            });
        }
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
    let back = t.load_own(out, Literal::Float(0.0));
    let two = t.constant(ScalarType::F32, Literal::Float(2.0), &[2, cols]);
    let doubled = t.bin(BinaryOp::Mul, back, two);
    t.store(out, doubled);
    let k = t.finish();
    let dev = dev();
    let c = compile(&dev, &k);
    let mut rng = rng("store_then_load");
    for rows in [1usize, 6, 7] {
        let n = rows * cols as usize;
        let xs = random(&mut rng, n, -10.0f32, 10.0);
        let tx = Tensor::new(&dev, &xs, &[rows, cols as usize]);
        let o = Tensor::new(&dev, &poisoned::<f32>(n), &[rows, cols as usize]);
        launch(&dev, &c, &[o.arg(), tx.arg()]).expect("launch");
        let want: Vec<f32> = xs.iter().map(|v| 2.0 * v).collect();
        cuprum_testkit::compare::assert_bits_eq(
            &format!("store then load, {rows} rows"),
            &o.to_host(&dev),
            &want,
        );
    }
}
