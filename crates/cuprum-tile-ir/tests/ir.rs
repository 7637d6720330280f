//! The tile IR's rules, on kernels built with the builder: what validates, what is refused,
//! specialization, the printer and the serialized form.

use cuprum_tile_ir::*;

fn tensor(elem: Elem, dims: Vec<TensorDim>, access: TensorAccess) -> ParamKind {
    ParamKind::Tensor(TensorParam { elem, dims, access })
}

/// `add<const B: i32>(z: &mut Tensor<f32, {[B]}>, x: &Tensor<f32, {[-1]}>, y: ..)`:
/// `z.store(load_tile_like(x, z) + load_tile_like(y, z))`.
fn add() -> TileKernel {
    let mut b = TileBuilder::new("add");
    let bsz = b.const_param("B", ScalarType::I32);
    let f32e = Elem::Known(ScalarType::F32);
    let z = b.param(
        "z",
        tensor(
            f32e,
            vec![TensorDim::Static(Dim::Param(bsz))],
            TensorAccess::Partitioned,
        ),
    );
    let x = b.param(
        "x",
        tensor(f32e, vec![TensorDim::Dynamic], TensorAccess::Read),
    );
    let y = b.param(
        "y",
        tensor(f32e, vec![TensorDim::Dynamic], TensorAccess::Read),
    );
    let pid = b.def(Op::BlockId(0)).expect("block id");
    let tile = vec![Dim::Param(bsz)];
    let zero = Literal::Float(0.0);
    let tx = b
        .def(Op::Load {
            view: View::Tiled {
                tensor: x,
                tile: tile.clone(),
                index: vec![pid],
            },
            padding: zero,
        })
        .expect("load x");
    let ty = b
        .def(Op::Load {
            view: View::Tiled {
                tensor: y,
                tile,
                index: vec![pid],
            },
            padding: zero,
        })
        .expect("load y");
    let sum = b.def(Op::Binary(BinaryOp::Add, tx, ty)).expect("add");
    b.push(Stmt::Store {
        tensor: z,
        value: sum,
    });
    b.finish()
}

#[test]
fn a_generic_kernel_validates_specializes_prints_and_round_trips() {
    let k = add();
    validate_kernel(&k).expect("valid");
    let s = specialize(
        &k,
        &Specialization {
            consts: vec![128],
            types: vec![],
        },
    )
    .expect("B = 128");
    assert!(s.is_specialized());
    let text = print_kernel(&s);
    assert!(text.contains("tile<f32, [128]>"), "{text}");
    let m = TileModule {
        kernels: vec![k.clone()],
    };
    let bytes = encode_module(&m);
    assert_eq!(decode_module(&bytes).expect("round trip"), m);
    let mut bad = bytes.clone();
    let last = bad.len() - 1;
    bad[last] ^= 1;
    assert!(decode_module(&bad).is_err());
}

#[test]
fn specialization_refuses_bad_sizes_and_counts() {
    let k = add();
    assert!(matches!(
        specialize(
            &k,
            &Specialization {
                consts: vec![0],
                types: vec![]
            }
        ),
        Err(SpecializeError::BadDim { .. })
    ));
    assert!(matches!(
        specialize(
            &k,
            &Specialization {
                consts: vec![],
                types: vec![]
            }
        ),
        Err(SpecializeError::Count { .. })
    ));
}

#[test]
fn shape_rules_are_enforced_by_the_builder() {
    let mut b = TileBuilder::new("k");
    let a = b
        .def(Op::Const {
            value: Literal::Float(1.0),
            elem: Elem::Known(ScalarType::F32),
            shape: shape_of(&[4, 8]),
        })
        .expect("const");
    let c = b
        .def(Op::Const {
            value: Literal::Float(1.0),
            elem: Elem::Known(ScalarType::F32),
            shape: shape_of(&[8]),
        })
        .expect("const");
    let e = b
        .def(Op::Binary(BinaryOp::Add, a, c))
        .expect_err("shapes differ");
    assert!(e.message.contains("tile<f32, [8]>"), "{e}");
    let e = b
        .def(Op::Reshape {
            value: a,
            shape: shape_of(&[5, 5]),
        })
        .expect_err("counts differ");
    assert!(e.message.contains("32 elements"), "{e}");
    let e = b
        .def(Op::Broadcast {
            value: c,
            shape: shape_of(&[4, 8]),
        })
        .expect_err("rank differs");
    assert!(e.message.contains("ranks differ"), "{e}");
    let r = b
        .def(Op::Reduce {
            value: a,
            axis: 1,
            combine: Combine::Sum,
        })
        .expect("reduce");
    assert_eq!(b.ty(r).shape, shape_of(&[4]));
    let p = b
        .def(Op::Permute {
            value: a,
            perm: vec![1, 0],
        })
        .expect("permute");
    assert_eq!(b.ty(p).shape, shape_of(&[8, 4]));
    b.def(Op::Permute {
        value: a,
        perm: vec![0, 0],
    })
    .expect_err("not a permutation");
    b.def(Op::Unary(UnaryOp::Exp, r)).expect("exp of f32");
    let i = b.def(Op::BlockId(0)).expect("pid");
    b.def(Op::Unary(UnaryOp::Sqrt, i)).expect_err("sqrt of i32");
}

#[test]
fn values_are_scoped_and_loops_carry_typed_values() {
    let mut b = TileBuilder::new("loop");
    let f = Elem::Known(ScalarType::F32);
    let i32t = TileType::scalar(ScalarType::I32);
    let acc0 = b
        .def(Op::Const {
            value: Literal::Float(0.0),
            elem: f,
            shape: shape_of(&[16]),
        })
        .expect("c");
    let start = b
        .def(Op::Const {
            value: Literal::Int(0),
            elem: Elem::Known(ScalarType::I32),
            shape: vec![],
        })
        .expect("c");
    let end = b
        .def(Op::Const {
            value: Literal::Int(4),
            elem: Elem::Known(ScalarType::I32),
            shape: vec![],
        })
        .expect("c");
    let step = b
        .def(Op::Const {
            value: Literal::Int(1),
            elem: Elem::Known(ScalarType::I32),
            shape: vec![],
        })
        .expect("c");
    let counter = b.value(i32t);
    let acc = b.value(b.ty(acc0).clone());
    let result = b.value(b.ty(acc0).clone());
    b.begin_block();
    let one = b
        .def(Op::Const {
            value: Literal::Float(1.0),
            elem: f,
            shape: shape_of(&[16]),
        })
        .expect("c");
    let next = b.def(Op::Binary(BinaryOp::Add, acc, one)).expect("add");
    let body = b.end_block(vec![next]);
    b.push(Stmt::For {
        counter,
        start,
        end,
        step,
        args: vec![acc],
        inits: vec![acc0],
        body,
        results: vec![result],
    });
    let good = b.finish();
    validate_kernel(&good).expect("valid loop");

    // Using the loop argument after the loop is an error.
    let mut bad = good.clone();
    bad.body.stmts.push(Stmt::Def {
        value: bad
            .values
            .append(TileType::new(ScalarType::F32, shape_of(&[16]))),
        op: Op::Unary(UnaryOp::Neg, acc),
    });
    let e = validate_kernel(&bad).expect_err("scoped");
    assert!(e.message.contains("not defined"), "{e}");
}

#[test]
fn outputs_are_read_and_written_only_through_their_own_tile() {
    let mut b = TileBuilder::new("k");
    let f = Elem::Known(ScalarType::F32);
    let z = b.param(
        "z",
        tensor(
            f,
            vec![TensorDim::Static(Dim::Known(64))],
            TensorAccess::Partitioned,
        ),
    );
    let x = b.param("x", tensor(f, vec![TensorDim::Dynamic], TensorAccess::Read));
    let pid = b.def(Op::BlockId(0)).expect("pid");
    let e = b
        .def(Op::Load {
            view: View::Tiled {
                tensor: z,
                tile: shape_of(&[64]),
                index: vec![pid],
            },
            padding: Literal::Float(0.0),
        })
        .expect_err("tiled loads of an output");
    assert!(e.message.contains("its own tile"), "{e}");
    let own = b
        .def(Op::Load {
            view: View::Own { tensor: z },
            padding: Literal::Float(0.0),
        })
        .expect("own tile");
    b.push(Stmt::Store {
        tensor: x,
        value: own,
    });
    let e = validate_kernel(&b.finish()).expect_err("a store to an input");
    assert!(e.message.contains("not a partitioned tensor"), "{e}");
}

#[test]
fn the_grid_is_one_block_per_tile_of_every_partitioned_tensor() {
    let f = Elem::Known(ScalarType::F32);
    let mut b = TileBuilder::new("k");
    let out = |tile: &[u32]| {
        tensor(
            f,
            tile.iter()
                .map(|&t| TensorDim::Static(Dim::Known(t)))
                .collect(),
            TensorAccess::Partitioned,
        )
    };
    b.param("y", out(&[16, 32]));
    b.param("s", ParamKind::Scalar(f));
    b.param("x", tensor(f, vec![TensorDim::Dynamic], TensorAccess::Read));
    b.param("z", out(&[8, 64]));
    let k = b.finish();
    let (y, x, z): (&[u64], &[u64], &[u64]) = (&[37, 50], &[7], &[20, 100]);
    assert_eq!(
        grid_of(&k, &[Some(y), None, Some(x), Some(z)]),
        Ok(Some([3, 2, 1]))
    );
    // An empty tensor gives no block along its empty axis.
    let (y0, z0): (&[u64], &[u64]) = (&[0, 50], &[0, 100]);
    assert_eq!(
        grid_of(&k, &[Some(y0), None, None, Some(z0)]),
        Ok(Some([0, 2, 1]))
    );
    let z2: &[u64] = &[20, 200];
    assert!(matches!(
        grid_of(&k, &[Some(y), None, Some(x), Some(z2)]),
        Err(GridError::Disagree {
            first_grid: [3, 2, 1],
            other_grid: [3, 4, 1],
            ..
        })
    ));
    assert!(matches!(
        grid_of(&k, &[Some(y), None, Some(x), Some(x)]),
        Err(GridError::Rank {
            expected: 2,
            got: 1,
            ..
        })
    ));
    assert!(matches!(
        grid_of(&k, &[Some(y)]),
        Err(GridError::MissingShape { .. })
    ));
    let huge: &[u64] = &[u64::MAX, 1];
    assert!(matches!(
        grid_of(&k, &[Some(huge), None, None, Some(huge)]),
        Err(GridError::TooManyBlocks { axis: 0, .. })
    ));
    // No partitioned tensor: the launch gives the grid.
    assert_eq!(grid_of(&TileBuilder::new("none").finish(), &[]), Ok(None));
    // A generic tile size is known only once specialized.
    let g = add();
    let n: &[u64] = &[1000];
    assert!(matches!(
        grid_of(&g, &[Some(n), Some(n), Some(n)]),
        Err(GridError::Generic { .. })
    ));
    let s = specialize(
        &g,
        &Specialization {
            consts: vec![128],
            types: vec![],
        },
    )
    .expect("B = 128");
    assert_eq!(
        grid_of(&s, &[Some(n), Some(n), Some(n)]),
        Ok(Some([8, 1, 1]))
    );
}

#[test]
fn operators_bitcasts_and_prints_follow_the_kernel_ir_rules() {
    let mut b = TileBuilder::new("k");
    let c = |b: &mut TileBuilder, ty: ScalarType, value: Literal| {
        b.def(Op::Const {
            value,
            elem: Elem::Known(ty),
            shape: shape_of(&[4]),
        })
        .expect("const")
    };
    let x = c(&mut b, ScalarType::F32, Literal::Float(1.0));
    let t = c(&mut b, ScalarType::Bool, Literal::Bool(true));
    let u = c(&mut b, ScalarType::U32, Literal::Int(1));
    let i8s = c(&mut b, ScalarType::I8, Literal::Int(1));
    b.def(Op::Binary(BinaryOp::And, x, x))
        .expect_err("and of floats");
    b.def(Op::Binary(BinaryOp::Add, t, t))
        .expect_err("add of bools");
    b.def(Op::Binary(BinaryOp::Xor, t, t))
        .expect("xor of bools");
    b.def(Op::Binary(BinaryOp::Shl, x, u))
        .expect_err("shift of a float");
    b.def(Op::Binary(BinaryOp::Shl, u, u))
        .expect("shift of a u32");
    b.def(Op::Bitcast {
        value: t,
        to: Elem::Known(ScalarType::U8),
    })
    .expect_err("bitcast of a bool");
    b.def(Op::Bitcast {
        value: i8s,
        to: Elem::Known(ScalarType::Bool),
    })
    .expect_err("bitcast to a bool");
    b.def(Op::Bitcast {
        value: x,
        to: Elem::Known(ScalarType::I32),
    })
    .expect("bitcast of f32 to i32");
    // A print of `i32` (false) and `i64` (true) arguments.
    let print = |format: &str, wide: &[bool]| {
        let mut k = TileBuilder::new("p");
        let args = wide
            .iter()
            .map(|&w| {
                k.def(Op::Const {
                    value: Literal::Int(1),
                    elem: Elem::Known(if w { ScalarType::I64 } else { ScalarType::I32 }),
                    shape: vec![],
                })
                .expect("const")
            })
            .collect();
        k.push(Stmt::Print {
            format: format.into(),
            args,
        });
        validate_kernel(&k.finish())
    };
    print("%d %ld\n", &[false, true]).expect("matching classes");
    print("%d\n", &[true]).expect_err("an i64 for %d");
    print("%d %d\n", &[false]).expect_err("an argument missing");
}

#[test]
fn sub_tile_stores_write_the_own_tile_by_sub_tile_index_and_specialize() {
    // `z.partition_mut(const_shape![1, BS]).store(t, [0, j])` inside a [1, N] own tile.
    let mut b = TileBuilder::new("rows");
    let n = b.const_param("N", ScalarType::I32);
    let bs = b.const_param("BS", ScalarType::I32);
    let f = Elem::Known(ScalarType::F32);
    let z = b.param(
        "z",
        tensor(
            f,
            vec![
                TensorDim::Static(Dim::Known(1)),
                TensorDim::Static(Dim::Param(n)),
            ],
            TensorAccess::Partitioned,
        ),
    );
    let x = b.param("x", tensor(f, vec![TensorDim::Dynamic], TensorAccess::Read));
    let sub = vec![Dim::Known(1), Dim::Param(bs)];
    let t = b
        .def(Op::Const {
            value: Literal::Float(1.0),
            elem: f,
            shape: sub.clone(),
        })
        .expect("const");
    let zero = b.def(Op::BlockId(1)).expect("pid");
    let j = b.def(Op::BlockId(0)).expect("pid");
    b.push(Stmt::StorePart {
        tensor: z,
        tile: sub.clone(),
        index: vec![zero, j],
        value: t,
    });
    let k = b.finish();
    validate_kernel(&k).expect("valid sub-tile store");
    assert!(
        print_kernel(&k).contains("tile [1, $1] at [%1, %2]"),
        "{}",
        print_kernel(&k)
    );
    let s = specialize(
        &k,
        &Specialization {
            consts: vec![64, 16],
            types: vec![],
        },
    )
    .expect("N = 64, BS = 16");
    let Some(Stmt::StorePart { tile, .. }) = s.body.stmts.last() else {
        panic!("the store is the last statement");
    };
    assert_eq!(tile, &shape_of(&[1, 16]));

    // To an input, with a wrong rank, or of another shape: refused.
    for (tensor, tile, what) in [
        (
            x,
            vec![Dim::Known(1), Dim::Param(bs)],
            "not a partitioned tensor",
        ),
        (z, vec![Dim::Param(bs)], "indices to a rank-2 tensor"),
        (z, vec![Dim::Known(2), Dim::Param(bs)], "a sub-tile store"),
    ] {
        let mut bad = k.clone();
        bad.body.stmts.pop();
        let index = if tile.len() == 2 {
            vec![zero, j]
        } else {
            vec![j]
        };
        bad.body.stmts.push(Stmt::StorePart {
            tensor,
            tile,
            index,
            value: t,
        });
        let e = validate_kernel(&bad).expect_err(what);
        assert!(e.message.contains(what), "{e}");
    }
}

#[test]
fn a_kernel_name_must_be_an_identifier() {
    for bad in ["for_i8_-128", "1st", ""] {
        let e = validate_kernel(&TileBuilder::new(bad).finish()).expect_err("not an identifier");
        assert!(e.message.contains("cannot name a kernel"), "{e}");
    }
    validate_kernel(&TileBuilder::new("_ok_9").finish()).expect("an identifier");
}
