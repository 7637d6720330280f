//! The kernel language, feature by feature: generics and what the host learns of them,
//! literals typed by their use, helpers, consts, short-circuit logic, scalar operands,
//! shape operations, conversions and prints. Where a feature computes, the kernel runs on
//! the tile interpreter against plain Rust.

mod common;

use common::*;
use cuprum_testkit::compare::{assert_bits_eq, assert_same};
use cuprum_testkit::random::{random, rng};
use cuprum_tile_front::{GenericParamInfo, compile_module_with_info};
use cuprum_tile_interp::{Arg, TensorArg};
use cuprum_tile_ir::*;
use rand::Rng;

fn read<'a, T: El>(shape: &[u64], b: &'a [u8]) -> Arg<'a> {
    Arg::Tensor(TensorArg::read(T::TY, shape, b))
}

fn write<'a, T: El>(shape: &[u64], b: &'a mut [u8]) -> Arg<'a> {
    Arg::Tensor(TensorArg::write(T::TY, shape, b))
}

#[test]
fn generic_parameters_keep_their_source_order_for_the_host() {
    let src = "mod m {
    use cuprum::tile::core::*;
    #[cuprum::tile::entry(print_ir = true)]
    unsafe fn k<'a, E: ElementType, const BM: i32, const S: [i32; 2], F: ElementType, const FLAG: bool>(
        y: &mut Tensor<E, S>, x: &Tensor<F, { [-1, BM] }>, s: F,
    ) {
        if FLAG { y.store(convert_tile::<E>(load_tile_like(x, y)) * 2); }
    }
}";
    let module: syn::ItemMod = syn::parse_str(src).expect("parses");
    let c = compile_module_with_info(&module).expect("compiles");
    let k = &c.module.kernels[0];
    let names: Vec<(&str, ScalarType)> = k.consts.iter().map(|c| (c.name.as_str(), c.ty)).collect();
    assert_eq!(
        names,
        [
            ("BM", ScalarType::I32),
            ("S[0]", ScalarType::I32),
            ("S[1]", ScalarType::I32),
            ("FLAG", ScalarType::Bool)
        ]
    );
    assert_eq!(k.types, ["E", "F"]);
    assert_eq!(
        c.entries[0].generics,
        vec![
            GenericParamInfo::Type {
                name: "E".into(),
                index: 0
            },
            GenericParamInfo::Const {
                name: "BM".into(),
                ty: ScalarType::I32,
                first: 0,
                len: 1,
                array: false
            },
            GenericParamInfo::Const {
                name: "S".into(),
                ty: ScalarType::I32,
                first: 1,
                len: 2,
                array: true
            },
            GenericParamInfo::Type {
                name: "F".into(),
                index: 1
            },
            GenericParamInfo::Const {
                name: "FLAG".into(),
                ty: ScalarType::Bool,
                first: 3,
                len: 1,
                array: false
            },
        ]
    );
    assert!(c.entries[0].is_unsafe && c.entries[0].attrs.print_ir);
    assert_eq!(k.params[2].kind, ParamKind::Scalar(Elem::Param(1)));
    // The literal `2` takes the type parameter `E`, for specialization to convert.
    assert!(defs(k).iter().any(|(op, t)| matches!(
        op,
        Op::Const {
            value: Literal::Int(2),
            elem: Elem::Param(0),
            ..
        }
    ) && t.shape == vec![Dim::Param(1), Dim::Param(2)]));
    let s = specialize(
        k,
        &Specialization {
            consts: vec![8, 2, 8, 1],
            types: vec![ScalarType::F32, ScalarType::F16],
        },
    )
    .expect("specializes");
    assert!(s.is_specialized());
}

#[test]
fn a_lets_literal_takes_the_type_a_later_use_gives_it() {
    let src = "mod m {
    use cuprum::tile::core::*;
    #[cuprum::tile::entry()]
    fn k(y: &mut Tensor<i64, { [4] }>, n: i64) {
        let mut i = 0;
        let mut total = 0;
        loop {
            if i == n { break; }
            i += 1;
            total = total + i;
        }
        let scale = 3;
        let mut evens = 0i64;
        for j in 0..10 {
            if j % 2 == n % 2 { evens = evens + j; }
        }
        y.store(constant(0i64, const_shape![4]) + total * scale + evens * 1000);
    }
}";
    let m = compile(src);
    let k = &m.kernels[0];
    let loops: Vec<Vec<TileType>> = stmts(k)
        .into_iter()
        .filter_map(|s| match s {
            Stmt::Loop { args, .. } => Some(args.iter().map(|a| k.ty(*a).clone()).collect()),
            _ => None,
        })
        .collect();
    assert_eq!(loops, vec![vec![TileType::scalar(ScalarType::I64); 2]]);
    // The counter of `for j in 0..10` is an `i64`: `j` meets `n` and `evens`.
    let counters: Vec<TileType> = stmts(k)
        .into_iter()
        .filter_map(|s| match s {
            Stmt::For { counter, .. } => Some(k.ty(*counter).clone()),
            _ => None,
        })
        .collect();
    assert_eq!(counters, vec![TileType::scalar(ScalarType::I64)]);
    let k = specialized(&m, "k", &[], &[]);
    for n in [0i64, 1, 7, 300] {
        let mut out = poison::<i64>(4);
        launch(
            &k,
            &mut [
                write::<i64>(&[4], &mut out),
                Arg::Scalar(cuprum_ir::Constant::i64(n)),
            ],
        );
        let evens: i64 = (0..10).filter(|j| j % 2 == n % 2).sum();
        assert_same(
            "k",
            &values::<i64>(&out),
            &[n * (n + 1) / 2 * 3 + evens * 1000; 4],
        );
    }
}

const HELPERS: &str = r#"
mod helpers {
    use cuprum::tile::core::*;

    const WIDTH: i32 = 8;
    const LOW: f32 = f32::NEG_INFINITY;

    fn zeros<const S: [i32; 1]>() -> Tile<f32, S> {
        constant(0.0f32, const_shape!(S))
    }

    fn pick<const FLAG: bool, E: ElementType>(a: E, b: E) -> E {
        if FLAG { a } else { b }
    }

    fn biggest<const S: [i32; 2]>(t: Tile<f32, S>) -> Tile<f32, { [S[0]] }> {
        reduce(t, 1, LOW, |a, b| max(a, b))
    }

    #[cuprum::tile::entry()]
    fn k(out: &mut Tensor<f32, { [4, WIDTH] }>, rows: &mut Tensor<f32, { [4] }>, x: &Tensor<f32, { [-1, -1] }>, s: f32) {
        let t = load_tile_like(x, out);
        let z: Tile<f32, { [4] }> = zeros();
        let z2 = zeros::<{ [4] }>();
        rows.store(biggest(t) + z + z2);
        let factor = pick::<true, f32>(s, 1.0) * pick::<false, f32>(0.0, 2.0);
        out.store(t * factor);
    }
}
"#;

#[test]
fn helpers_are_specialized_by_arguments_turbofish_and_the_expected_type() {
    let m = compile(HELPERS);
    let k = kernel(&m, "k");
    // `pick`'s `if` is decided when it is inlined: no `If` remains.
    assert!(!stmts(k).iter().any(|s| matches!(s, Stmt::If { .. })));
    // The module const sizes the tile.
    let ParamKind::Tensor(t) = &k.params[0].kind else {
        panic!("a tensor")
    };
    assert_eq!(
        t.dims,
        vec![
            TensorDim::Static(Dim::Known(4)),
            TensorDim::Static(Dim::Known(8))
        ]
    );
    let k = specialized(&m, "k", &[], &[]);
    let mut r = rng("helpers_are_specialized_by_arguments_turbofish_and_the_expected_type");
    let rows = 4 * r.random_range(1..5usize);
    let x: Vec<f32> = random(&mut r, rows * 8, -50.0, 50.0);
    let s: f32 = r.random_range(-2.0..2.0);
    let xb = bytes(&x);
    let (mut ob, mut rb) = (poison::<f32>(rows * 8), poison::<f32>(rows));
    launch(
        &k,
        &mut [
            write::<f32>(&[rows as u64, 8], &mut ob),
            write::<f32>(&[rows as u64], &mut rb),
            read::<f32>(&[rows as u64, 8], &xb),
            Arg::Scalar(cuprum_ir::Constant::f32(s)),
        ],
    );
    let want: Vec<f32> = x.iter().map(|v| v * (s * 2.0)).collect();
    assert_bits_eq("scaled", &values::<f32>(&ob), &want);
    let maxes: Vec<f32> = x
        .chunks(8)
        .map(|r| r.iter().copied().fold(f32::NEG_INFINITY, f32::max))
        .collect();
    assert_bits_eq("row maxima", &values::<f32>(&rb), &maxes);
}

const LOGIC: &str = r#"
mod logic {
    use cuprum::tile::core::*;

    #[cuprum::tile::entry()]
    fn k(out: &mut Tensor<i32, { [8] }>, a: i32, b: i32) {
        // `b / a` must not run when `a == 0` (it would fail the launch).
        let big = a != 0 && b / a > 2;
        let either = a == 0 || b % a == 1;
        let flags = if big { 1 } else { 0 } + if either { 10 } else { 0 };
        let lanes: Tile<i32, { [8] }> = iota(out.shape());
        let scaled = 2 * lanes - a;
        let mixed = scaled * flags + b / (1 + lanes);
        out.store(mixed);
    }
}
"#;

#[test]
fn and_or_short_circuit_and_scalars_meet_tiles_on_either_side() {
    let m = compile(LOGIC);
    let k = specialized(&m, "k", &[], &[]);
    let mut r = rng("and_or_short_circuit_and_scalars_meet_tiles_on_either_side");
    let mut cases = vec![(0, 5), (0, -9), (2, 7), (3, 1)];
    for _ in 0..12 {
        cases.push((r.random_range(-5..6), r.random_range(-50..50)));
    }
    for (a, b) in cases {
        let mut out = poison::<i32>(8);
        launch(
            &k,
            &mut [
                write::<i32>(&[8], &mut out),
                Arg::Scalar(cuprum_ir::Constant::i32(a)),
                Arg::Scalar(cuprum_ir::Constant::i32(b)),
            ],
        );
        let big = a != 0 && b / a > 2;
        let either = a == 0 || b % a == 1;
        let flags = i32::from(big) + if either { 10 } else { 0 };
        let want: Vec<i32> = (0..8).map(|l| (2 * l - a) * flags + b / (1 + l)).collect();
        assert_same(&format!("k({a}, {b})"), &values::<i32>(&out), &want);
    }
}

const SHAPES: &str = r#"
mod shapes {
    use cuprum::tile::core::*;

    #[cuprum::tile::entry()]
    fn k(
        rows: &mut Tensor<i32, { [4, 8] }>,
        swapped: &mut Tensor<f32, { [8, 4] }>,
        cube: &mut Tensor<f32, { [2, 3, 4] }>,
        x: &Tensor<f32, { [4, 8] }>,
        c: &Tensor<f32, { [2, 3, 4] }>,
    ) {
        let r: Tile<i32, { [4, 8] }> = iota(const_shape![4, 8]);
        rows.store(r * 100 + broadcast(iota(const_shape![8]).reshape(const_shape![1, 8]), const_shape![4, 8]));
        let t = x.load_tile(const_shape![4, 8], [0, 0]);
        swapped.store(t.transpose());
        let q = c.partition(const_shape![2, 3, 4]).load([0, 0, 0]);
        let p = permute(q, [2, 0, 1], const_shape![4, 2, 3]);
        cube.store(permute(p, const_array![1, 2, 0]) - 0.5);
    }
}
"#;

#[test]
fn iota_counts_along_axis_zero_and_permutations_move_axes() {
    let m = compile(SHAPES);
    let k = specialized(&m, "k", &[], &[]);
    let mut r = rng("iota_counts_along_axis_zero_and_permutations_move_axes");
    let x: Vec<f32> = random(&mut r, 32, -9.0, 9.0);
    let c: Vec<f32> = random(&mut r, 24, -9.0, 9.0);
    let (xb, cb) = (bytes(&x), bytes(&c));
    let (mut rb, mut sb, mut qb) = (poison::<i32>(32), poison::<f32>(32), poison::<f32>(24));
    launch(
        &k,
        &mut [
            write::<i32>(&[4, 8], &mut rb),
            write::<f32>(&[8, 4], &mut sb),
            write::<f32>(&[2, 3, 4], &mut qb),
            read::<f32>(&[4, 8], &xb),
            read::<f32>(&[2, 3, 4], &cb),
        ],
    );
    let rows: Vec<i32> = (0..4)
        .flat_map(|i| (0..8).map(move |j| i * 100 + j))
        .collect();
    assert_same("iota", &values::<i32>(&rb), &rows);
    let swapped: Vec<f32> = (0..8)
        .flat_map(|j| (0..4).map(move |i| (i, j)))
        .map(|(i, j)| x[i * 8 + j])
        .collect();
    assert_bits_eq("transpose", &values::<f32>(&sb), &swapped);
    let cube: Vec<f32> = c.iter().map(|v| v - 0.5).collect();
    assert_bits_eq("permute and back", &values::<f32>(&qb), &cube);
}

const CONVERSIONS: &str = r#"
mod conversions {
    use cuprum::tile::core::*;

    #[cuprum::tile::entry()]
    fn k(
        bits: &mut Tensor<u32, { [16] }>,
        wide: &mut Tensor<i64, { [16] }>,
        narrow: &mut Tensor<i32, { [16] }>,
        rounded: &mut Tensor<i32, { [16] }>,
        x: &Tensor<f32, { [-1] }>,
        w: &Tensor<i64, { [-1] }>,
    ) {
        let t = load_tile_like(x, bits);
        bits.store(bitcast::<f32, u32>(t));
        let i: Tile<i32, { [16] }> = t.convert::<i32>();
        rounded.store(i);
        wide.store(exti::<i32, i64>(i) * 3);
        let v = load_tile_like(w, wide);
        narrow.store(trunci(v, overflow::None));
        let _ = program_id(0) as u32 + num_programs(0) as u32;
        let _ = unsafe { assume_div_by::<_, 16>(t) };
    }
}
"#;

#[test]
fn conversions_are_rusts_casts_and_bitcasts_keep_bits() {
    let m = compile(CONVERSIONS);
    let k = specialized(&m, "k", &[], &[]);
    let mut r = rng("conversions_are_rusts_casts_and_bitcasts_keep_bits");
    let x: Vec<f32> = random(&mut r, 16, -3e9, 3e9);
    let w: Vec<i64> = random(&mut r, 16, i64::MIN / 2, i64::MAX / 2);
    let (xb, wb) = (bytes(&x), bytes(&w));
    let (mut b, mut wi, mut n, mut ro) = (
        poison::<u32>(16),
        poison::<i64>(16),
        poison::<i32>(16),
        poison::<i32>(16),
    );
    launch(
        &k,
        &mut [
            write::<u32>(&[16], &mut b),
            write::<i64>(&[16], &mut wi),
            write::<i32>(&[16], &mut n),
            write::<i32>(&[16], &mut ro),
            read::<f32>(&[16], &xb),
            read::<i64>(&[16], &wb),
        ],
    );
    let want: Vec<u32> = x.iter().map(|v| v.to_bits()).collect();
    assert_same("bitcast", &values::<u32>(&b), &want);
    let want: Vec<i32> = x.iter().map(|&v| v as i32).collect();
    assert_same("as i32 (saturating)", &values::<i32>(&ro), &want);
    let want: Vec<i64> = x.iter().map(|&v| i64::from(v as i32) * 3).collect();
    assert_same("exti", &values::<i64>(&wi), &want);
    let want: Vec<i32> = w.iter().map(|&v| v as i32).collect();
    assert_same("trunci", &values::<i32>(&n), &want);
}

#[test]
fn prints_take_rust_format_specs_and_named_arguments() {
    let src = r#"
mod p {
    use cuprum::tile::core::*;
    #[cuprum::tile::entry()]
    fn k(x: f32, n: i64, flag: bool) {
        let id = get_tile_block_id().0;
        cuda_tile_print!("[{id}] {:.2} {:>5}|{:x} {} {}%\n", x, n, 255u32, flag, 1.5f64);
        cuda_tile_assert!(n >= 0, "n must not be negative");
    }
}
"#;
    let m = compile(src);
    let k = specialized(&m, "k", &[], &[]);
    let args = |n: i64| {
        [
            Arg::Scalar(cuprum_ir::Constant::f32(1.23456)),
            Arg::Scalar(cuprum_ir::Constant::i64(n)),
            Arg::Scalar(cuprum_ir::Constant::bool(true)),
        ]
    };
    let out = cuprum_tile_interp::run(&k, &mut args(42), [2, 1, 1]).expect("runs");
    assert_eq!(
        out.text(),
        "[0] 1.23    42|ff 1 1.5%\n[1] 1.23    42|ff 1 1.5%\n"
    );
    let e = cuprum_tile_interp::run(&k, &mut args(-1), [1, 1, 1]).expect_err("the assertion fails");
    assert!(e.to_string().contains("n must not be negative"), "{e}");
}

const CUTILE_IDIOMS: &str = r#"
mod idioms {
    use cuprum::tile::core::*;

    #[cuprum::tile::entry()]
    fn zero_fill<T: ElementType, const BM: i32, const BN: i32>(out: &mut Tensor<T, { [BM, BN] }>) {
        let z: Tile<T, { [BM, BN] }> = constant(T::ZERO, const_shape![BM, BN]);
        out.store(z);
    }

    #[cuprum::tile::entry()]
    fn argmax<const N: i32>(out: &mut Tensor<i32, { [1] }>, x: &Tensor<f32, { [N] }>) {
        let t: Tile<f32, { [N] }> = x.load_tile(const_shape![N], [0i32]);
        let biggest: Tile<f32, { [1] }> = reduce_max(t, 0i32);
        let biggest: f32 = tile_to_scalar(biggest.reshape(const_shape![]));
        let lanes: Tile<i32, { [N] }> = iota(const_shape![N]);
        let hit: Tile<bool, { [N] }> = eq_tile(t, biggest.broadcast(const_shape![N]));
        let first: Tile<i32, { [1] }> = reduce_min(select(hit, lanes, N), 0i32);
        out.store(first);
    }

    #[cuprum::tile::entry()]
    fn transposed(out: &mut Tensor<f32, { [8, 4] }>, x: &Tensor<f32, { [4, 8] }>) {
        let shape: Shape<{ [4, 8] }> = Shape::<{ [4, 8] }> { dims: &[] };
        let t = x.load_tile(shape, [0, 0]);
        let perm: Array<{ [1, 0] }> = const_array![1, 0];
        let flip: Array<{ [1, 0] }> = Array::<{ [1, 0] }> { dims: &[1i32, 0i32] };
        let once: Tile<f32, { [8, 4] }> = permute(t, perm);
        let twice: Tile<f32, { [4, 8] }> = permute(once, flip);
        out.store(permute(twice, perm));
    }
}
"#;

#[test]
fn cutile_idioms_zero_keepdim_reductions_and_const_arrays_work() {
    let m = compile(CUTILE_IDIOMS);
    let mut r = rng("cutile_idioms_zero_keepdim_reductions_and_const_arrays_work");
    let k = specialized(&m, "zero_fill", &[4, 4], &[ScalarType::F32]);
    let mut out = poison::<f32>(24);
    launch(&k, &mut [write::<f32>(&[6, 4], &mut out)]);
    assert_bits_eq("zero_fill", &values::<f32>(&out), &[0.0; 24]);

    let n = 64usize;
    let x: Vec<f32> = random(&mut r, n, -100.0, 100.0);
    let k = specialized(&m, "argmax", &[n as i64], &[]);
    let xb = bytes(&x);
    let mut out = poison::<i32>(1);
    launch(
        &k,
        &mut [write::<i32>(&[1], &mut out), read::<f32>(&[n as u64], &xb)],
    );
    let best = x
        .iter()
        .enumerate()
        .fold(0, |b, (i, v)| if *v > x[b] { i } else { b });
    assert_same("argmax", &values::<i32>(&out), &[best as i32]);

    let x: Vec<f32> = random(&mut r, 32, -9.0, 9.0);
    let k = specialized(&m, "transposed", &[], &[]);
    let xb = bytes(&x);
    let mut out = poison::<f32>(32);
    launch(
        &k,
        &mut [write::<f32>(&[8, 4], &mut out), read::<f32>(&[4, 8], &xb)],
    );
    let want: Vec<f32> = (0..8)
        .flat_map(|j| (0..4).map(move |i| (i, j)))
        .map(|(i, j)| x[i * 8 + j])
        .collect();
    assert_bits_eq("transposed", &values::<f32>(&out), &want);
}
