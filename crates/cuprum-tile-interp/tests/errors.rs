//! The typed errors of a launch: the kernel's own failures name the kernel and the first
//! failing block; the host's mistakes (arguments, grid, addresses) are refused without a
//! panic.

mod common;

use common::*;
use cuprum_tile_interp::{Arg, InterpError, TensorArg, TensorData, run};
use cuprum_tile_ir::*;

/// `z = x / y` on `i32`, tile 8.
fn div_kernel() -> TileKernel {
    let mut b = TileBuilder::new("div");
    let z = output(&mut b, "z", I32, &[8]);
    let x = input(&mut b, "x", I32, 1);
    let y = input(&mut b, "y", I32, 1);
    let pid = block_id(&mut b, 0);
    // Padding 1 for the divisor: the ragged edge divides by 1, not by 0.
    let tx = load_tiled(&mut b, x, &[8], vec![pid], Literal::Int(0));
    let ty = load_tiled(&mut b, y, &[8], vec![pid], Literal::Int(1));
    let q = bin(&mut b, BinaryOp::Div, tx, ty);
    store(&mut b, z, q);
    b.finish()
}

fn run_div(x: &[i32], y: &[i32]) -> (Result<cuprum_tile_interp::Output, InterpError>, Vec<i32>) {
    let (bx, by) = (bytes(x), bytes(y));
    let mut bz = poison_u32(x.len());
    let shape = [x.len() as u64];
    let mut args = [
        Arg::Tensor(TensorArg::write(I32, &shape, &mut bz)),
        Arg::Tensor(TensorArg::read(I32, &shape, &bx)),
        Arg::Tensor(TensorArg::read(I32, &shape, &by)),
    ];
    let r = launch(&div_kernel(), &mut args);
    (r, values(&bz))
}

#[test]
fn integer_division_by_zero_names_the_kernel_and_block() {
    let x: Vec<i32> = (0..20).collect();
    let mut y = vec![3; 20];
    let (r, z) = run_div(&x, &y);
    r.expect("no zero divisor");
    assert_eq!(z, x.iter().map(|v| v / 3).collect::<Vec<_>>());

    // Zeros in blocks 1 and 2: the error is block 1's.
    y[9] = 0;
    y[17] = 0;
    let e = run_div(&x, &y).0.expect_err("zero divisor");
    assert_eq!(
        e,
        InterpError::DivideByZero {
            kernel: "div".into(),
            block: [1, 0, 0]
        }
    );
    assert!(e.to_string().contains("`div`, block [1, 0, 0]"), "{e}");

    let mut x = x;
    x[19] = i32::MIN;
    let mut y = vec![3; 20];
    y[19] = -1;
    assert_eq!(
        run_div(&x, &y).0.expect_err("overflow"),
        InterpError::DivideOverflow {
            kernel: "div".into(),
            block: [2, 0, 0]
        }
    );
}

#[test]
fn a_failed_assertion_names_the_first_failing_block() {
    let mut b = TileBuilder::new("check");
    let id = block_id(&mut b, 0);
    let two = int(&mut b, I32, 2);
    let ok = def(&mut b, Op::Compare(CmpOp::Lt, id, two));
    b.push(Stmt::Assert {
        cond: ok,
        message: "block < 2".into(),
    });
    let k = b.finish();
    run(&k, &mut [], [2, 1, 1]).expect("blocks 0 and 1 pass");
    let e = run(&k, &mut [], [5, 1, 1]).expect_err("blocks 2 to 4 fail");
    assert_eq!(
        e,
        InterpError::AssertFailed {
            kernel: "check".into(),
            block: [2, 0, 0],
            message: "block < 2".into()
        }
    );
    assert!(e.to_string().contains("assertion failed: block < 2"), "{e}");
}

#[test]
fn a_for_step_must_be_positive() {
    for step in [0, -1] {
        let mut b = TileBuilder::new("steps");
        let start = int(&mut b, I32, 0);
        let end = int(&mut b, I32, 4);
        let step_v = int(&mut b, I32, step);
        let counter = b.value(TileType::scalar(I32));
        b.begin_block();
        let body = b.end_block(vec![]);
        b.push(Stmt::For {
            counter,
            start,
            end,
            step: step_v,
            args: vec![],
            inits: vec![],
            body,
            results: vec![],
        });
        let k = b.finish();
        assert_eq!(
            run(&k, &mut [], [1, 1, 1]).expect_err("step"),
            InterpError::ForStep {
                kernel: "steps".into(),
                block: [0, 0, 0],
                step
            }
        );
    }
}

#[test]
fn a_for_counter_stops_at_the_end_of_its_type() {
    // for i in (100..127).step_by(50) on i8: 100 only; 100 + 50 would wrap below 127.
    let mut b = TileBuilder::new("wrap");
    let y = output(&mut b, "y", I32, &[1]);
    let start = int(&mut b, ScalarType::I8, 100);
    let end = int(&mut b, ScalarType::I8, 127);
    let step = int(&mut b, ScalarType::I8, 50);
    let zero = int(&mut b, I32, 0);
    let one = int(&mut b, I32, 1);
    let counter = b.value(TileType::scalar(ScalarType::I8));
    let n = b.value(TileType::scalar(I32));
    let count = b.value(TileType::scalar(I32));
    b.begin_block();
    let n1 = bin(&mut b, BinaryOp::Add, n, one);
    let body = b.end_block(vec![n1]);
    b.push(Stmt::For {
        counter,
        start,
        end,
        step,
        args: vec![n],
        inits: vec![zero],
        body,
        results: vec![count],
    });
    let c = def(
        &mut b,
        Op::Reshape {
            value: count,
            shape: shape_of(&[1]),
        },
    );
    store(&mut b, y, c);
    let k = b.finish();
    let mut out = poison_u32(1);
    launch(
        &k,
        &mut [Arg::Tensor(TensorArg::write(I32, &[1], &mut out))],
    )
    .expect("runs");
    assert_eq!(values::<i32>(&out), vec![1]);
}

/// `z = x` (copy), tile 8, with two partitioned outputs of the same tile.
fn copy_kernel() -> TileKernel {
    let mut b = TileBuilder::new("copy");
    let z = output(&mut b, "z", F32, &[8]);
    let w = output(&mut b, "w", F32, &[8]);
    let x = input(&mut b, "x", F32, 1);
    let pid = block_id(&mut b, 0);
    let t = load_tiled(&mut b, x, &[8], vec![pid], Literal::Float(0.0));
    store(&mut b, z, t);
    store(&mut b, w, t);
    b.finish()
}

#[test]
fn a_bad_grid_is_refused() {
    let k = copy_kernel();
    let bx = bytes(&[1.0f32; 20]);
    let (mut bz, mut bw) = (poison_f32(20), poison_f32(20));
    let mut args = [
        Arg::Tensor(TensorArg::write(F32, &[20], &mut bz)),
        Arg::Tensor(TensorArg::write(F32, &[20], &mut bw)),
        Arg::Tensor(TensorArg::read(F32, &[20], &bx)),
    ];
    assert_eq!(
        run(&k, &mut args, [2, 1, 1]).expect_err("grid"),
        InterpError::GridMismatch {
            kernel: "copy".into(),
            given: [2, 1, 1],
            expected: [3, 1, 1]
        }
    );
    run(&k, &mut args, [3, 1, 1]).expect("the partitioned grid");

    // Partitioned tensors that disagree.
    let mut bw = poison_f32(40);
    let mut args = [
        Arg::Tensor(TensorArg::write(F32, &[20], &mut bz)),
        Arg::Tensor(TensorArg::write(F32, &[40], &mut bw)),
        Arg::Tensor(TensorArg::read(F32, &[20], &bx)),
    ];
    let e = run(&k, &mut args, [3, 1, 1]).expect_err("disagree");
    assert!(
        matches!(
            &e,
            InterpError::Grid(GridError::Disagree {
                first_grid: [3, 1, 1],
                other_grid: [5, 1, 1],
                ..
            })
        ),
        "{e:?}"
    );
}

#[test]
fn bad_arguments_are_refused() {
    let k = copy_kernel();
    let bx = bytes(&[1.0f32; 20]);
    let (mut bz, mut bw) = (poison_f32(20), poison_f32(20));
    let count = run(&k, &mut [], [3, 1, 1]).expect_err("count");
    assert!(matches!(
        count,
        InterpError::ArgCount {
            expected: 3,
            given: 0,
            ..
        }
    ));

    let mut args = [
        Arg::Tensor(TensorArg::write(F32, &[20], &mut bz)),
        Arg::Tensor(TensorArg::write(I32, &[20], &mut bw)),
        Arg::Tensor(TensorArg::read(F32, &[20], &bx)),
    ];
    let e = run(&k, &mut args, [3, 1, 1]).expect_err("element type");
    assert!(matches!(&e, InterpError::BadArg { index: 1, .. }), "{e:?}");

    let bw2 = poison_f32(20);
    let mut args = [
        Arg::Tensor(TensorArg::write(F32, &[20], &mut bz)),
        Arg::Tensor(TensorArg {
            data: TensorData::Read(&bw2),
            ..TensorArg::read(F32, &[20], &bw2)
        }),
        Arg::Tensor(TensorArg::read(F32, &[20], &bx)),
    ];
    let e = run(&k, &mut args, [3, 1, 1]).expect_err("read-only output");
    assert!(e.to_string().contains("read-only bytes"), "{e}");

    let mut args = [
        Arg::Tensor(TensorArg::write(F32, &[20], &mut bz)),
        Arg::Scalar(Constant::f32(1.0)),
        Arg::Tensor(TensorArg::read(F32, &[20], &bx)),
    ];
    let e = run(&k, &mut args, [3, 1, 1]).expect_err("a scalar for a tensor");
    assert!(matches!(&e, InterpError::BadArg { index: 1, .. }), "{e:?}");
}

#[test]
fn addresses_outside_an_allocation_are_errors() {
    let k = copy_kernel();
    let (mut bz, mut bw) = (poison_f32(20), poison_f32(20));
    // 20 elements claimed, 19 held: the last tile's read of element 19 is outside.
    let short = bytes(&[1.0f32; 19]);
    let mut args = [
        Arg::Tensor(TensorArg::write(F32, &[20], &mut bz)),
        Arg::Tensor(TensorArg::write(F32, &[20], &mut bw)),
        Arg::Tensor(TensorArg::read(F32, &[20], &short)),
    ];
    let e = run(&k, &mut args, [3, 1, 1]).expect_err("short input");
    assert_eq!(
        e,
        InterpError::OutOfAllocation {
            kernel: "copy".into(),
            block: [2, 0, 0],
            param: "x".into(),
            coord: vec![19],
            address: Some(19),
            elements: 19
        }
    );
    // An offset pushing an output past its end, and a negative stride before its start.
    let bx = bytes(&[1.0f32; 20]);
    for (strides, offset, block) in [([1i64], 1u64, [2, 0, 0]), ([-1], 0, [0, 0, 0])] {
        let mut args = [
            Arg::Tensor(TensorArg::write(F32, &[20], &mut bz).strided(&strides, offset)),
            Arg::Tensor(TensorArg::write(F32, &[20], &mut bw)),
            Arg::Tensor(TensorArg::read(F32, &[20], &bx)),
        ];
        let e = run(&k, &mut args, [3, 1, 1]).expect_err("outside");
        assert!(
            matches!(&e, InterpError::OutOfAllocation { param, block: b, .. } if param == "z" && *b == block),
            "{e:?}"
        );
    }
}

#[test]
fn generic_and_invalid_kernels_are_refused() {
    let mut b = TileBuilder::new("generic");
    let bsz = b.const_param("B", I32);
    b.param(
        "z",
        ParamKind::Tensor(TensorParam {
            elem: Elem::Known(F32),
            dims: vec![TensorDim::Static(Dim::Param(bsz))],
            access: TensorAccess::Partitioned,
        }),
    );
    let k = b.finish();
    let mut bz = poison_f32(4);
    let mut args = [Arg::Tensor(TensorArg::write(F32, &[4], &mut bz))];
    assert_eq!(
        run(&k, &mut args, [1, 1, 1]).expect_err("generic"),
        InterpError::Generic("generic".into())
    );
    let s = specialize(
        &k,
        &Specialization {
            consts: vec![4],
            types: vec![],
        },
    )
    .expect("B = 4");
    run(&s, &mut args, [1, 1, 1]).expect("specialized");

    let mut bad = copy_kernel();
    bad.body.stmts.reverse();
    assert!(matches!(
        run(&bad, &mut [], [1, 1, 1]).expect_err("invalid"),
        InterpError::Invalid(_)
    ));
}
