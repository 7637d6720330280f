//! The cache eviction hints the lowering gives tile loads (`cuprum_tile_lower`'s `evict`
//! rule): a row read twice by each block is kept between the reads (`Last`) and let go
//! after the second (`First`); a tile every block reads is not let go first; loads in a
//! loop that may run more than once, and tensors read once, get no hint. Each kernel also
//! runs against a plain-Rust reference (the hints never change a result).

mod common;

use common::*;
use cuprum_ir::{BinaryOp, Eviction, ScalarType};
use cuprum_testkit::poison::poisoned;
use cuprum_testkit::random::random;
use cuprum_tile_ir::{Combine, Literal, Stmt, TileKernel, TileType, TileValue};

const COLS: u32 = 256;

/// How the lowered kernel's global loads (scalar and vector) are hinted: (normal, first,
/// last).
fn hints(c: &Compiled) -> (usize, usize, usize) {
    use cuprum_ir::{AddressSpace, Op, Stmt as IStmt};
    let mut n = (0, 0, 0);
    c.lowered.kernel.body.visit(&mut |s| {
        let e = match s {
            IStmt::Def {
                op:
                    Op::Load {
                        space: AddressSpace::Global,
                        eviction,
                        ..
                    },
                ..
            }
            | IStmt::VectorLoad {
                space: AddressSpace::Global,
                eviction,
                ..
            } => *eviction,
            _ => return,
        };
        match e {
            Eviction::Normal => n.0 += 1,
            Eviction::First => n.1 += 1,
            Eviction::Last => n.2 += 1,
        }
    });
    n
}

/// How a test kernel reads its row the second time.
#[derive(Clone, Copy, Debug)]
enum Shape {
    /// Both reads of row `block` outside loops.
    Straight,
    /// Both reads in `for` loops of `trips` known trips (the row is read `trips` times in
    /// each, the sum scaled to match).
    Looped { trips: i64 },
    /// Both reads of row 0, which every block reads.
    SharedRow,
}

/// `out[r, :] = x[row, :] * sum(x[row, :]) * w` for each block `r` (`row` = `r`, or 0 for
/// [`Shape::SharedRow`]), reading `x`'s row once for the sum and once more for the output.
fn two_reads(shape: Shape) -> TileKernel {
    let mut t = Tk::new("two_reads");
    let out = t.output("out", ScalarType::F32, &[1, COLS]);
    let x = t.input("x", ScalarType::F32, 2);
    let w = t.input("w", ScalarType::F32, 1);
    let row = match shape {
        Shape::SharedRow => t.int(0),
        _ => t.block_id(0),
    };
    let zero = t.int(0);
    let read = |t: &mut Tk| t.load(x, &[1, COLS], vec![row, zero], Literal::Float(0.0));
    let (sum, second) = match shape {
        Shape::Straight | Shape::SharedRow => {
            let tx = read(&mut t);
            let s = t.reduce(tx, 1, Combine::Sum);
            (s, read(&mut t))
        }
        Shape::Looped { trips } => {
            let s0 = t.constant(ScalarType::F32, Literal::Float(0.0), &[1]);
            let s = looped(&mut t, trips, s0, |t, acc| {
                let tx = read(t);
                let r = t.reduce(tx, 1, Combine::Sum);
                t.bin(BinaryOp::Add, acc, r)
            });
            let last0 = t.constant(ScalarType::F32, Literal::Float(0.0), &[1, COLS]);
            // Each trip reads the row again; the last trip's tile is the result.
            let tx = looped(&mut t, trips, last0, |t, _| read(t));
            let n = t.constant(ScalarType::F32, Literal::Float(trips as f64), &[1]);
            (t.bin(BinaryOp::Div, s, n), tx)
        }
    };
    let sum = t.splat_to(sum, &[1, COLS]);
    let tw = t.load(w, &[COLS], vec![zero], Literal::Float(0.0));
    let tw = t.reshape(tw, &[1, COLS]);
    let p = t.bin(BinaryOp::Mul, second, sum);
    let p = t.bin(BinaryOp::Mul, p, tw);
    t.store(out, p);
    t.finish()
}

/// A `for` loop of `trips` trips (constant bounds) carrying `init` through `step`.
fn looped(
    t: &mut Tk,
    trips: i64,
    init: TileValue,
    step: impl FnOnce(&mut Tk, TileValue) -> TileValue,
) -> TileValue {
    let (start, end, one) = (t.int(0), t.int(trips), t.int(1));
    let counter = t.b.value(TileType::scalar(ScalarType::I32));
    let arg = t.b.value(t.ty(init));
    let result = t.b.value(t.ty(init));
    let body = t.block(|t| vec![step(t, arg)]);
    t.push(Stmt::For {
        counter,
        start,
        end,
        step: one,
        args: vec![arg],
        inits: vec![init],
        body,
        results: vec![result],
    });
    result
}

trait SplatTo {
    fn splat_to(&mut self, v: TileValue, shape: &[u32]) -> TileValue;
}

impl SplatTo for Tk {
    /// A `[1]` tile as a tile of `shape`.
    fn splat_to(&mut self, v: TileValue, shape: &[u32]) -> TileValue {
        let r = self.reshape(v, &[1, 1]);
        self.broadcast(r, shape)
    }
}

/// Runs `kernel` on random data (rows not a multiple of anything) and checks every element.
fn check_result(dev: &Dev, c: &Compiled, shape: Shape) {
    let (rows, cols) = (37usize, COLS as usize);
    let mut r = cuprum_testkit::random::rng("eviction");
    let hx: Vec<f32> = random(&mut r, rows * cols, 0.5f32, 1.5);
    let hw: Vec<f32> = random(&mut r, cols, 0.5f32, 1.5);
    let x = Tensor::new(dev, &hx, &[rows, cols]);
    let w = Tensor::new(dev, &hw, &[cols]);
    let o = Tensor::new(dev, &poisoned::<f32>(rows * cols), &[rows, cols]);
    launch(dev, c, &[o.arg(), x.arg(), w.arg()]).unwrap_or_else(|e| panic!("{e}"));
    let got = o.to_host(dev);
    let mut want = vec![0.0f32; rows * cols];
    for r in 0..rows {
        let src = if matches!(shape, Shape::SharedRow) {
            0
        } else {
            r
        };
        let xs = &hx[src * cols..(src + 1) * cols];
        let sum: f32 = xs.iter().sum();
        for j in 0..cols {
            want[r * cols + j] = xs[j] * sum * hw[j];
        }
    }
    assert_close(&format!("{shape:?}"), &got, &want, 1e-4);
}

#[test]
fn a_row_read_twice_is_kept_between_the_reads_and_let_go_after() {
    let dev = dev();
    let c = compile(&dev, &two_reads(Shape::Straight));
    let (normal, first, last) = hints(&c);
    assert!(
        last > 0,
        "the first read keeps the row: {normal} {first} {last}"
    );
    assert_eq!(first, last, "the second read lets it go, as many loads");
    assert!(normal > 0, "w, read once, has no hint");
    check_result(&dev, &c, Shape::Straight);
}

#[test]
fn a_row_every_block_reads_is_not_let_go_first() {
    let dev = dev();
    let c = compile(&dev, &two_reads(Shape::SharedRow));
    let (_, first, last) = hints(&c);
    assert!(last > 0);
    assert_eq!(first, 0, "other blocks read row 0 again");
    check_result(&dev, &c, Shape::SharedRow);
}

#[test]
fn reads_in_loops_are_hinted_only_when_each_loop_runs_once() {
    let dev = dev();
    let once = compile(&dev, &two_reads(Shape::Looped { trips: 1 }));
    let (_, first, last) = hints(&once);
    assert!(first > 0 && last > 0, "one trip: hinted ({first}, {last})");
    check_result(&dev, &once, Shape::Looped { trips: 1 });
    let twice = compile(&dev, &two_reads(Shape::Looped { trips: 2 }));
    assert_eq!(hints(&twice).1 + hints(&twice).2, 0, "two trips: no hints");
    check_result(&dev, &twice, Shape::Looped { trips: 2 });
}
