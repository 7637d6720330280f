//! Uniform control flow against plain Rust, on the device `CudaContext::new(0)` picks: `for`
//! with a carried accumulator, `if` with results, `loop` with `break`, `continue`, `return`;
//! and on the emulator (which alone reports them as typed errors, and whose prints a test can
//! capture): prints once per tile block; assertions, division by zero and bad steps.

mod common;

use common::*;
use cuprum_emu::EmuError;
use cuprum_ir::{BinaryOp, CmpOp, ScalarType};
use cuprum_runtime::Error;
use cuprum_testkit::compare::assert_same;
use cuprum_testkit::random::random;
use cuprum_tile_ir::{Combine, Literal, Op, Stmt, TileType, TileValue};

fn i64_const(t: &mut Tk, v: i64) -> TileValue {
    t.constant(ScalarType::I64, Literal::Int(v), &[])
}

/// `out[i] = sum_j x[i, j]` over column tiles of 64, the sum carried by a `for` loop that
/// starts from a constant (uniform) and continues as a reduction's slice layout.
#[test]
fn for_loop_carries_an_accumulator() {
    let mut t = Tk::new("row_sums");
    let out = t.output("out", ScalarType::I32, &[8]);
    let x = t.input("x", ScalarType::I32, 2);
    let pid = t.block_id(0);
    let cols = t.def(Op::TensorDim { tensor: x, axis: 1 });
    let bk = i64_const(&mut t, 64);
    let bk1 = i64_const(&mut t, 63);
    let c1 = t.bin(BinaryOp::Add, cols, bk1);
    let tiles = t.bin(BinaryOp::Div, c1, bk);
    let start = i64_const(&mut t, 0);
    let step = i64_const(&mut t, 1);
    let acc0 = t.constant(ScalarType::I32, Literal::Int(0), &[8]);
    let counter = t.b.value(TileType::scalar(ScalarType::I64));
    let acc = t.b.value(t.ty(acc0));
    let result = t.b.value(t.ty(acc0));
    let body = t.block(|t| {
        let tile = t.load(x, &[8, 64], vec![pid, counter], Literal::Int(0));
        let s = t.reduce(tile, 1, Combine::Sum);
        vec![t.bin(BinaryOp::Add, acc, s)]
    });
    t.push(Stmt::For {
        counter,
        start,
        end: tiles,
        step,
        args: vec![acc],
        inits: vec![acc0],
        body,
        results: vec![result],
    });
    t.store(out, result);
    let k = t.finish();
    let dev = dev();
    let c = compile(&dev, &k);
    let mut rng = rng("for_loop");
    for (rows, cols) in [(20usize, 300usize), (8, 64), (3, 1)] {
        let xs = random(&mut rng, rows * cols, -1000i32, 1000);
        let o = Tensor::new(&dev, &vec![i32::MIN; rows], &[rows]);
        let tx = Tensor::new(&dev, &xs, &[rows, cols]);
        launch(&dev, &c, &[o.arg(), tx.arg()]).expect("launch");
        let want: Vec<i32> = (0..rows)
            .map(|r| xs[r * cols..(r + 1) * cols].iter().sum())
            .collect();
        assert_same(&format!("row sums {rows}x{cols}"), &o.to_host(&dev), &want);
    }
}

/// `out = if pid % 2 == 0 { 2 * x } else { 5 } + if pid % 2 == 0 { 1 } else { -1 }`: one
/// result a tile from registers in one branch and a constant in the other, one a scalar.
#[test]
fn if_with_results() {
    let mut t = Tk::new("branches");
    let out = t.output("out", ScalarType::I32, &[128]);
    let x = t.input("x", ScalarType::I32, 1);
    let pid = t.block_id(0);
    let tx = t.load(x, &[128], vec![pid], Literal::Int(0));
    let two = t.int(2);
    let zero = t.int(0);
    let rem = t.bin(BinaryOp::Rem, pid, two);
    let even = t.cmp(CmpOp::Eq, rem, zero);
    let tile_ty = t.ty(tx);
    let r_tile = t.b.value(tile_ty);
    let r_scalar = t.b.value(TileType::scalar(ScalarType::I32));
    let then = t.block(|t| {
        let two = t.constant(ScalarType::I32, Literal::Int(2), &[128]);
        let d = t.bin(BinaryOp::Mul, tx, two);
        let one = t.int(1);
        vec![d, one]
    });
    let otherwise = t.block(|t| {
        let five = t.constant(ScalarType::I32, Literal::Int(5), &[128]);
        let m1 = t.int(-1);
        vec![five, m1]
    });
    t.push(Stmt::If {
        cond: even,
        then,
        otherwise,
        results: vec![r_tile, r_scalar],
    });
    let s = t.splat(r_scalar, &[128]);
    let r = t.bin(BinaryOp::Add, r_tile, s);
    t.store(out, r);
    let k = t.finish();
    let dev = dev();
    let c = compile(&dev, &k);
    let mut rng = rng("if_with_results");
    let n = 600usize;
    let xs = random(&mut rng, n, -1000i32, 1000);
    let o = Tensor::new(&dev, &vec![i32::MIN; n], &[n]);
    let tx = Tensor::new(&dev, &xs, &[n]);
    launch(&dev, &c, &[o.arg(), tx.arg()]).expect("launch");
    let want: Vec<i32> = (0..n)
        .map(|e| {
            if (e / 128) % 2 == 0 {
                2 * xs[e] + 1
            } else {
                5 - 1
            }
        })
        .collect();
    assert_same("if", &o.to_host(&dev), &want);
}

/// `loop { if i >= n { break } acc = acc * 3 + x; i += 1 }` with a scalar counter and a
/// tile carried, then `for k in 0..10 { if k % 3 == 0 { continue } acc += k }`, and a
/// `return` that leaves block 1's tile untouched.
#[test]
fn loop_break_continue_and_return() {
    let mut t = Tk::new("loops");
    let out = t.output("out", ScalarType::I32, &[64]);
    let x = t.input("x", ScalarType::I32, 1);
    let n = t.scalar_param("n", ScalarType::I32);
    let pid = t.block_id(0);
    let tx = t.load(x, &[64], vec![pid], Literal::Int(0));
    let zero = t.int(0);
    let tile_ty = t.ty(tx);
    let (i, acc) = (
        t.b.value(TileType::scalar(ScalarType::I32)),
        t.b.value(tile_ty.clone()),
    );
    let (ri, racc) = (
        t.b.value(TileType::scalar(ScalarType::I32)),
        t.b.value(tile_ty.clone()),
    );
    let body = t.block(|t| {
        let done = t.cmp(CmpOp::Ge, i, n);
        let brk = t.block(|t| {
            t.push(Stmt::Break {
                values: vec![i, acc],
            });
            vec![]
        });
        let go_on = t.block(|_| vec![]);
        t.push(Stmt::If {
            cond: done,
            then: brk,
            otherwise: go_on,
            results: vec![],
        });
        let three = t.constant(ScalarType::I32, Literal::Int(3), &[64]);
        let a3 = t.bin(BinaryOp::Mul, acc, three);
        let next = t.bin(BinaryOp::Add, a3, tx);
        let one = t.int(1);
        let i1 = t.bin(BinaryOp::Add, i, one);
        vec![i1, next]
    });
    t.push(Stmt::Loop {
        args: vec![i, acc],
        inits: vec![zero, tx],
        body,
        results: vec![ri, racc],
    });
    // for k in 0..10 { if k % 3 == 0 { continue } acc += k }
    let (k, acc2, racc2) = (
        t.b.value(TileType::scalar(ScalarType::I32)),
        t.b.value(tile_ty.clone()),
        t.b.value(tile_ty),
    );
    let (start, end, step) = (t.int(0), t.int(10), t.int(1));
    let body = t.block(|t| {
        let three = t.int(3);
        let zero = t.int(0);
        let m = t.bin(BinaryOp::Rem, k, three);
        let skip = t.cmp(CmpOp::Eq, m, zero);
        let cont = t.block(|t| {
            t.push(Stmt::Continue { values: vec![acc2] });
            vec![]
        });
        let go_on = t.block(|_| vec![]);
        t.push(Stmt::If {
            cond: skip,
            then: cont,
            otherwise: go_on,
            results: vec![],
        });
        let ks = t.splat(k, &[64]);
        vec![t.bin(BinaryOp::Add, acc2, ks)]
    });
    t.push(Stmt::For {
        counter: k,
        start,
        end,
        step,
        args: vec![acc2],
        inits: vec![racc],
        body,
        results: vec![racc2],
    });
    let _ = ri;
    // Block 1 returns before storing.
    let one = t.int(1);
    let is_one = t.cmp(CmpOp::Eq, pid, one);
    let ret = t.block(|t| {
        t.push(Stmt::Return);
        vec![]
    });
    let go_on = t.block(|_| vec![]);
    t.push(Stmt::If {
        cond: is_one,
        then: ret,
        otherwise: go_on,
        results: vec![],
    });
    t.store(out, racc2);
    let k = t.finish();
    let dev = dev();
    let c = compile(&dev, &k);
    let mut rng = rng("loops");
    let len = 200usize;
    for n in [0i32, 1, 4] {
        let xs = random(&mut rng, len, -100i32, 100);
        let o = Tensor::new(&dev, &vec![i32::MIN; len], &[len]);
        let tx = Tensor::new(&dev, &xs, &[len]);
        launch(&dev, &c, &[o.arg(), tx.arg(), scalar(n)]).expect("launch");
        let want: Vec<i32> = (0..len)
            .map(|e| {
                if e / 64 == 1 {
                    return i32::MIN;
                }
                let mut acc = xs[e];
                for _ in 0..n {
                    acc = acc.wrapping_mul(3).wrapping_add(xs[e]);
                }
                acc + (0..10).filter(|k| k % 3 != 0).sum::<i32>()
            })
            .collect();
        assert_same(&format!("loops n={n}"), &o.to_host(&dev), &want);
    }
}

/// A `for` loop whose counter wraps past the type's range stops there.
#[test]
fn a_for_loop_stops_where_its_counter_would_wrap() {
    let mut t = Tk::new("wrap");
    let out = t.output("out", ScalarType::I32, &[32]);
    let count = t.constant(ScalarType::I32, Literal::Int(0), &[32]);
    let c = t.b.value(TileType::scalar(ScalarType::I8));
    let acc = t.b.value(t.ty(count));
    let res = t.b.value(t.ty(count));
    let start = t.constant(ScalarType::I8, Literal::Int(100), &[]);
    let end = t.constant(ScalarType::I8, Literal::Int(127), &[]);
    let step = t.constant(ScalarType::I8, Literal::Int(10), &[]);
    let body = t.block(|t| {
        let one = t.constant(ScalarType::I32, Literal::Int(1), &[32]);
        vec![t.bin(BinaryOp::Add, acc, one)]
    });
    t.push(Stmt::For {
        counter: c,
        start,
        end,
        step,
        args: vec![acc],
        inits: vec![count],
        body,
        results: vec![res],
    });
    t.store(out, res);
    let k = t.finish();
    let dev = dev();
    let c = compile(&dev, &k);
    let o = Tensor::new(&dev, &[i32::MIN; 32], &[32]);
    launch(&dev, &c, &[o.arg()]).expect("launch");
    // 100, 110, 120; 130 wraps.
    assert_same("iterations", &o.to_host(&dev), &[3; 32]);
}

/// A print runs once per tile block, with scalar arguments (a block index, a sum).
#[test]
fn print_once_per_tile_block() {
    let mut t = Tk::new("printer");
    let out = t.output("out", ScalarType::I32, &[256]);
    let pid = t.block_id(0);
    let tile = t.load_own(out, Literal::Int(0));
    let s = t.reduce(tile, 0, Combine::Sum);
    t.push(Stmt::Print {
        format: "block %d sum %d\n".into(),
        args: vec![pid, s],
    });
    let k = t.finish();
    let dev = emu();
    let c = compile(&dev, &k);
    let n = 600usize;
    let data: Vec<i32> = (0..n as i32).collect();
    let o = Tensor::new(&dev, &data, &[n]);
    let (r, text) = cuprum_emu::capture_prints(|| launch(&dev, &c, &[o.arg()]));
    r.expect("launch");
    let mut lines: Vec<&str> = text.lines().collect();
    lines.sort();
    let want: Vec<String> = (0..3)
        .map(|b| {
            let s: i32 = (b * 256..((b + 1) * 256).min(n as i32)).sum();
            format!("block {b} sum {s}")
        })
        .collect();
    assert_eq!(lines, want, "{text}");
}

fn assert_kernel(limit_param: bool) -> cuprum_tile_ir::TileKernel {
    let mut t = Tk::new("checked");
    let out = t.output("out", ScalarType::I32, &[128]);
    let x = t.input("x", ScalarType::I32, 1);
    let limit = if limit_param {
        t.scalar_param("limit", ScalarType::I32)
    } else {
        t.int(0)
    };
    let pid = t.block_id(0);
    let tx = t.load(x, &[128], vec![pid], Literal::Int(0));
    let m = t.reduce(tx, 0, Combine::Max);
    let ok = t.cmp(CmpOp::Lt, m, limit);
    t.push(Stmt::Assert {
        cond: ok,
        message: "an element reached the limit".into(),
    });
    t.store(out, tx);
    t.finish()
}

#[test]
fn assertions_pass_or_fail_the_launch_with_their_message() {
    let dev = emu();
    let c = compile(&dev, &assert_kernel(true));
    let n = 300usize;
    let xs: Vec<i32> = (0..n as i32).collect();
    let o = Tensor::new(&dev, &vec![i32::MIN; n], &[n]);
    let tx = Tensor::new(&dev, &xs, &[n]);
    launch(&dev, &c, &[o.arg(), tx.arg(), scalar(1000i32)]).expect("passes");
    assert_same("copied", &o.to_host(&dev), &xs);
    // A failed launch leaves its context unusable (as on a GPU): a fresh one.
    let dev = emu();
    let c = compile(&dev, &c.tile);
    let o = Tensor::new(&dev, &vec![i32::MIN; n], &[n]);
    let tx = Tensor::new(&dev, &xs, &[n]);
    let e = launch(&dev, &c, &[o.arg(), tx.arg(), scalar(200i32)]).expect_err("fails");
    match e {
        Error::Emulator {
            source: EmuError::AssertFailed { message, .. },
            ..
        } => assert_eq!(message, "an element reached the limit"),
        other => panic!("{other}"),
    }
}

/// `x / y` and `x % y` on i32 tiles: exact where defined; a zero divisor or `MIN / -1`
/// fails the launch with its error.
#[test]
fn integer_division_checks_its_divisors() {
    for op in [BinaryOp::Div, BinaryOp::Rem] {
        let mut t = Tk::new("divide");
        let out = t.output("out", ScalarType::I32, &[64]);
        let x = t.input("x", ScalarType::I32, 1);
        let y = t.input("y", ScalarType::I32, 1);
        let pid = t.block_id(0);
        let tx = t.load(x, &[64], vec![pid], Literal::Int(0));
        let ty = t.load(y, &[64], vec![pid], Literal::Int(1));
        let q = t.bin(op, tx, ty);
        t.store(out, q);
        let k = t.finish();
        let dev = emu();
        let c = compile(&dev, &k);
        let mut rng = rng("division");
        let n = 150usize;
        let xs = random(&mut rng, n, -1000i32, 1000);
        let mut ys = random(&mut rng, n, 1i32, 50);
        for (i, v) in ys.iter_mut().enumerate() {
            if i % 3 == 0 {
                *v = -*v;
            }
        }
        let o = Tensor::new(&dev, &vec![i32::MIN; n], &[n]);
        let (tx, ty) = (Tensor::new(&dev, &xs, &[n]), Tensor::new(&dev, &ys, &[n]));
        launch(&dev, &c, &[o.arg(), tx.arg(), ty.arg()]).expect("launch");
        let want: Vec<i32> = xs
            .iter()
            .zip(&ys)
            .map(|(a, b)| if op == BinaryOp::Div { a / b } else { a % b })
            .collect();
        assert_same(&format!("{op:?}"), &o.to_host(&dev), &want);

        let mut zero = ys.clone();
        zero[77] = 0;
        let dev = emu();
        let c = compile(&dev, &k);
        let o = Tensor::new(&dev, &vec![i32::MIN; n], &[n]);
        let (tx, ty) = (Tensor::new(&dev, &xs, &[n]), Tensor::new(&dev, &zero, &[n]));
        let e = launch(&dev, &c, &[o.arg(), tx.arg(), ty.arg()]).expect_err("zero divisor");
        assert!(
            matches!(
                e,
                Error::Emulator {
                    source: EmuError::DivideByZero { .. },
                    ..
                }
            ),
            "{e}"
        );

        let mut xs_min = xs.clone();
        xs_min[5] = i32::MIN;
        let mut ys_m1 = ys.clone();
        ys_m1[5] = -1;
        let dev = emu();
        let c = compile(&dev, &k);
        let o = Tensor::new(&dev, &vec![i32::MIN; n], &[n]);
        let (tx, ty) = (
            Tensor::new(&dev, &xs_min, &[n]),
            Tensor::new(&dev, &ys_m1, &[n]),
        );
        let e = launch(&dev, &c, &[o.arg(), tx.arg(), ty.arg()]).expect_err("overflow");
        assert!(
            matches!(
                e,
                Error::Emulator {
                    source: EmuError::DivideOverflow { .. },
                    ..
                }
            ),
            "{e}"
        );
    }
}

/// A `for` loop with a step that is not positive fails the launch.
#[test]
fn a_non_positive_step_fails_the_launch() {
    let mut t = Tk::new("bad_step");
    let out = t.output("out", ScalarType::I32, &[32]);
    let step = t.scalar_param("step", ScalarType::I32);
    let zero = t.constant(ScalarType::I32, Literal::Int(0), &[32]);
    let c = t.b.value(TileType::scalar(ScalarType::I32));
    let acc = t.b.value(t.ty(zero));
    let res = t.b.value(t.ty(zero));
    let (start, end) = (t.int(0), t.int(10));
    let body = t.block(|t| {
        let cs = t.splat(c, &[32]);
        vec![t.bin(BinaryOp::Add, acc, cs)]
    });
    t.push(Stmt::For {
        counter: c,
        start,
        end,
        step,
        args: vec![acc],
        inits: vec![zero],
        body,
        results: vec![res],
    });
    t.store(out, res);
    let k = t.finish();
    let dev = emu();
    let c = compile(&dev, &k);
    let o = Tensor::new(&dev, &[i32::MIN; 32], &[32]);
    launch(&dev, &c, &[o.arg(), scalar(3i32)]).expect("step 3");
    assert_same("0 + 3 + 6 + 9", &o.to_host(&dev), &[18; 32]);
    let dev = emu();
    let c = compile(&dev, &k);
    let o = Tensor::new(&dev, &[i32::MIN; 32], &[32]);
    let e = launch(&dev, &c, &[o.arg(), scalar(0i32)]).expect_err("step 0");
    match e {
        Error::Emulator {
            source: EmuError::AssertFailed { message, .. },
            ..
        } => assert!(message.contains("step must be positive"), "{message}"),
        other => panic!("{other}"),
    }
}

/// Kernels the lowering refuses, with errors a user can act on.
#[test]
fn refusals_are_typed_and_say_what_to_do() {
    // Generic kernels must be specialized first.
    let mut b = cuprum_tile_ir::TileBuilder::new("generic");
    b.const_param("B", ScalarType::I32);
    let e = cuprum_tile_lower::lower(&b.finish()).expect_err("generic");
    assert_eq!(e, cuprum_tile_lower::LowerError::Generic("generic".into()));
    // A tile too large for the registers of one block.
    let mut t = Tk::new("huge");
    let out = t.output("out", ScalarType::F32, &[512, 512]);
    let z = t.load_own(out, Literal::Float(0.0));
    t.store(out, z);
    let e = cuprum_tile_lower::lower(&t.finish()).expect_err("huge");
    let msg = e.to_string();
    assert!(msg.contains("use smaller tiles"), "{msg}");
    // A reduce closure that loads.
    let mut t = Tk::new("closure_load");
    let out = t.output("out", ScalarType::I32, &[32]);
    let x = t.input("x", ScalarType::I32, 0);
    let tile = t.load_own(out, Literal::Int(0));
    let c = t.closure(ScalarType::I32, Literal::Int(0), |t, a, _b| {
        let l = t.load(x, &[], vec![], Literal::Int(0));
        t.bin(BinaryOp::Add, a, l)
    });
    let r = t.reduce(tile, 0, c);
    let rs = t.splat(r, &[32]);
    t.store(out, rs);
    let e = cuprum_tile_lower::lower(&t.finish()).expect_err("a closure that loads");
    let msg = e.to_string();
    assert!(msg.contains("a closure may only combine"), "{msg}");
}
