//! cuTile Rust's example kernels (their `cutile` paths changed to `cuprum::tile`) and a
//! layer norm in their style compile to tile IR that validates, has the shapes the source
//! annotates, and specializes.

mod common;

use common::sources::*;
use common::*;
use cuprum_tile_ir::*;

fn f32s(shape: Shape) -> TileType {
    TileType::new(ScalarType::F32, shape)
}

fn spec(consts: &[i64]) -> Specialization {
    Specialization {
        consts: consts.to_vec(),
        types: vec![],
    }
}

/// The value stored by the kernel's only `Store`.
fn stored_type(k: &TileKernel) -> TileType {
    let stores: Vec<TileType> = stmts(k)
        .into_iter()
        .filter_map(|s| match s {
            Stmt::Store { value, .. } => Some(k.ty(*value).clone()),
            _ => None,
        })
        .collect();
    assert_eq!(stores.len(), 1, "one store in `{}`", k.name);
    stores[0].clone()
}

#[test]
fn add_reads_its_inputs_at_the_blocks_tile_and_prints_as_expected() {
    let m = compile(ADD);
    let add = kernel(&m, "add");
    // An array const parameter is one const per element, named `S[i]`.
    assert_eq!(add.consts.len(), 1);
    assert_eq!(add.consts[0].name, "S[0]");
    assert_eq!(add.consts[0].ty, ScalarType::I32);
    let s = vec![Dim::Param(0)];
    assert_eq!(
        add.params[0].kind,
        ParamKind::Tensor(TensorParam {
            elem: Elem::Known(ScalarType::F32),
            dims: vec![TensorDim::Static(Dim::Param(0))],
            access: TensorAccess::Partitioned,
        })
    );
    for p in &add.params[1..] {
        let ParamKind::Tensor(t) = &p.kind else {
            panic!("{} is a tensor", p.name)
        };
        assert_eq!(
            (t.access, t.dims.clone()),
            (TensorAccess::Read, vec![TensorDim::Dynamic])
        );
    }
    let loads = types_of(
        add,
        |op| matches!(op, Op::Load { view: View::Tiled { tile, .. }, .. } if tile == &vec![Dim::Param(0)]),
    );
    assert_eq!(loads, vec![f32s(s.clone()), f32s(s.clone())]);
    assert_eq!(stored_type(add), f32s(s));

    let scale = kernel(&m, "scale");
    let expected = "\
tile kernel scale<$0 = const B: i32>(
  param 0 out: &mut tensor (partitioned)<f32, [$0]>,
  param 1 x: &tensor<f32, [?]>,
) {
  %0 : i32 = block_id 0
  %1 : tile<f32, [$0]> = load param1 tile [$0] at [%0] pad 0
  %2 : tile<f32, [$0]> = const 2.0f32
  %3 : tile<f32, [$0]> = Mul %1, %2
  store param0[own tile] = %3
}
";
    assert_eq!(print_kernel(scale), expected);

    let add256 = specialize(add, &spec(&[256])).expect("S = [256]");
    assert!(add256.is_specialized());
    assert_eq!(stored_type(&add256), f32s(shape_of(&[256])));
}

#[test]
fn hello_world_prints_the_block_and_grid_indices_with_printf_conversions() {
    let m = compile(HELLO_WORLD);
    let k = kernel(&m, "hello_world_kernel");
    assert!(k.params.is_empty() && k.consts.is_empty());
    let prints: Vec<(&String, &Vec<TileValue>)> = stmts(k)
        .into_iter()
        .filter_map(|s| match s {
            Stmt::Print { format, args } => Some((format, args)),
            _ => None,
        })
        .collect();
    assert_eq!(prints.len(), 1);
    let (format, args) = prints[0];
    assert_eq!(
        format,
        "Hello, I am tile <%d, %d, %d> in a kernel with <%d, %d, %d> tiles.\n"
    );
    let ops: Vec<&Op> = args
        .iter()
        .map(|a| def_of(k, *a).expect("each argument is defined"))
        .collect();
    assert_eq!(
        ops,
        vec![
            &Op::BlockId(0),
            &Op::BlockId(1),
            &Op::BlockId(2),
            &Op::NumBlocks(0),
            &Op::NumBlocks(1),
            &Op::NumBlocks(2)
        ]
    );
    specialize(k, &spec(&[])).expect("nothing to specialize");
}

#[test]
fn saxpy_broadcasts_its_scalar_to_the_tile_of_its_output() {
    let m = compile(SAXPY);
    let k = kernel(&m, "saxpy");
    let names: Vec<&str> = k.consts.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["S[0]", "S[1]"]);
    assert_eq!(
        k.params[1].kind,
        ParamKind::Scalar(Elem::Known(ScalarType::F32))
    );
    let tile = vec![Dim::Param(0), Dim::Param(1)];
    let broadcasts = types_of(k, |op| matches!(op, Op::Broadcast { .. }));
    assert_eq!(broadcasts, vec![f32s(tile.clone())]);
    let own = types_of(k, |op| {
        matches!(
            op,
            Op::Load {
                view: View::Own { tensor: 0 },
                ..
            }
        )
    });
    assert_eq!(own, vec![f32s(tile.clone())]);
    assert_eq!(stored_type(k), f32s(tile));
    let s = specialize(k, &spec(&[2, 2])).expect("S = [2, 2]");
    assert_eq!(stored_type(&s), f32s(shape_of(&[2, 2])));
}

#[test]
fn softmax_reduces_rows_to_bm_and_broadcasts_back() {
    let m = compile(SOFTMAX);
    let k = kernel(&m, "softmax");
    let (bm, bn) = (Dim::Param(0), Dim::Param(1));
    let reductions: Vec<(Combine, TileType)> = defs(k)
        .into_iter()
        .filter_map(|(op, t)| match op {
            Op::Reduce {
                axis: 1, combine, ..
            } => Some((combine.clone(), t)),
            _ => None,
        })
        .collect();
    assert_eq!(
        reductions,
        vec![
            (Combine::Max, f32s(vec![bm])),
            (Combine::Sum, f32s(vec![bm]))
        ]
    );
    let reshapes = types_of(k, |op| matches!(op, Op::Reshape { .. }));
    assert_eq!(reshapes, vec![f32s(vec![bm, Dim::Known(1)]); 2]);
    let exps = types_of(k, |op| matches!(op, Op::Unary(UnaryOp::Exp, _)));
    assert_eq!(exps, vec![f32s(vec![bm, bn])]);
    assert_eq!(stored_type(k), f32s(vec![bm, bn]));
    let s = specialize(k, &spec(&[2, 8])).expect("BM = 2, BN = 8");
    assert_eq!(stored_type(&s), f32s(shape_of(&[2, 8])));
    // A shape error that depends on the parameters is found when they are known.
    let bad = specialize(k, &spec(&[0, 8])).expect_err("BM = 0");
    assert!(matches!(bad, SpecializeError::BadDim { .. }), "{bad}");
}

#[test]
fn rms_norm_carries_its_sum_through_a_loop_and_stores_sub_tiles() {
    let m = compile(RMS_NORM);
    let k = kernel(&m, "rms_norm");
    let block = Dim::Param(1);
    let row_tile = f32s(vec![Dim::Known(1), block]);
    let loops: Vec<(Vec<TileType>, &Block)> = stmts(k)
        .into_iter()
        .filter_map(|s| match s {
            Stmt::For { args, body, .. } => {
                Some((args.iter().map(|a| k.ty(*a).clone()).collect(), body))
            }
            _ => None,
        })
        .collect();
    assert_eq!(loops.len(), 2);
    // The first loop carries `rms`; the second carries nothing and stores.
    assert_eq!(loops[0].0, vec![row_tile.clone()]);
    assert!(loops[1].0.is_empty());
    let parts: Vec<(&Shape, TileType)> = loops[1]
        .1
        .stmts
        .iter()
        .filter_map(|s| match s {
            Stmt::StorePart {
                tile,
                value,
                index,
                tensor: 2,
            } => {
                assert_eq!(index.len(), 2);
                Some((tile, k.ty(*value).clone()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(parts, vec![(&vec![Dim::Known(1), block], row_tile.clone())]);
    // `num_tiles = N / BLOCK_SIZE` is computed from the const parameters.
    let divs = defs(k)
        .into_iter()
        .filter(|(op, t)| {
            matches!(op, Op::Binary(BinaryOp::Div, ..)) && *t == TileType::scalar(ScalarType::I32)
        })
        .count();
    assert_eq!(divs, 1);
    assert_eq!(
        types_of(k, |op| matches!(op, Op::Unary(UnaryOp::Sqrt, _))),
        vec![TileType::scalar(ScalarType::F32)]
    );
    let s = specialize(k, &spec(&[8, 2])).expect("N = 8, BLOCK_SIZE = 2");
    let Some(Stmt::For { body, .. }) = s.body.stmts.last() else {
        panic!("the kernel ends with its store loop")
    };
    assert!(body.stmts.iter().any(|s| matches!(
        s,
        Stmt::StorePart { tile, .. } if tile == &shape_of(&[1, 2])
    )));
}

#[test]
fn layer_norm_in_f16_computes_in_f32_and_masks_the_padding() {
    let m = compile(LAYER_NORM);
    let k = kernel(&m, "layer_norm");
    let block = Dim::Param(1);
    let tile = vec![Dim::Known(1), block];
    let f16 = |shape: Shape| TileType::new(ScalarType::F16, shape);
    // Every load reads f16 and is converted to f32 once.
    let casts: Vec<TileType> = types_of(k, |op| {
        matches!(
            op,
            Op::Cast {
                to: Elem::Known(ScalarType::F32),
                ..
            }
        )
    })
    .into_iter()
    .filter(|t| !t.shape.is_empty())
    .collect();
    assert_eq!(casts, vec![f32s(tile.clone()); 5]);
    let loads = types_of(k, |op| matches!(op, Op::Load { .. }));
    assert!(
        loads.iter().all(|t| t.elem == Elem::Known(ScalarType::F16)),
        "{loads:?}"
    );
    // The mask: an iota along the row compared with N.
    assert_eq!(
        types_of(k, |op| matches!(op, Op::Iota { axis: 0, .. })),
        vec![TileType::new(ScalarType::I32, vec![block])]
    );
    assert_eq!(
        types_of(k, |op| matches!(op, Op::Compare(CmpOp::Lt, ..))),
        vec![TileType::new(ScalarType::Bool, tile.clone())]
    );
    assert_eq!(
        types_of(k, |op| matches!(op, Op::Select { .. })),
        vec![f32s(tile.clone())]
    );
    // The helper was inlined twice (two reductions to a scalar).
    assert_eq!(
        types_of(k, |op| matches!(
            op,
            Op::Reduce {
                combine: Combine::Sum,
                ..
            }
        )),
        vec![f32s(vec![Dim::Known(1)]); 2]
    );
    let stores: Vec<TileType> = stmts(k)
        .into_iter()
        .filter_map(|s| match s {
            Stmt::StorePart { value, .. } => Some(k.ty(*value).clone()),
            _ => None,
        })
        .collect();
    assert_eq!(stores, vec![f16(tile)]);
    for (n, b) in [(1024, 256), (1000, 128), (7, 16)] {
        let s = specialize(k, &spec(&[n, b])).expect("specializes");
        assert!(s.is_specialized());
    }
}

#[test]
fn exp2_flushes_subnormals_only_where_asked() {
    // `ftz::Enabled` and `exp2_ftz` are the IR's `Exp2Ftz`; `ftz::Disabled` and no marker
    // are `Exp2`.
    let m = compile(
        r#"
mod my_module {
    use cuprum::tile::core::*;

    #[cuprum::tile::entry()]
    fn exps<const B: i32>(y: &mut Tensor<f32, { [B] }>, x: &Tensor<f32, { [-1] }>) {
        let t: Tile<f32, { [B] }> = load_tile_like(x, y);
        let a: Tile<f32, { [B] }> = exp2(t, ftz::Enabled);
        let b: Tile<f32, { [B] }> = exp2(t, ftz::Disabled);
        let c: Tile<f32, { [B] }> = exp2_ftz(t);
        let d: Tile<f32, { [B] }> = exp2(t);
        y.store(a + b + c + d);
    }
}
"#,
    );
    let k = kernel(&m, "exps");
    let exps: Vec<UnaryOp> = defs(k)
        .into_iter()
        .filter_map(|(op, _)| match op {
            Op::Unary(u @ (UnaryOp::Exp2 | UnaryOp::Exp2Ftz), _) => Some(*u),
            _ => None,
        })
        .collect();
    assert_eq!(
        exps,
        [
            UnaryOp::Exp2Ftz,
            UnaryOp::Exp2,
            UnaryOp::Exp2Ftz,
            UnaryOp::Exp2
        ]
    );
}
