//! Directed three-way tests of `mma`: a tiled GEMM (`acc = mma(a_tile, b_tile, acc)` in a
//! `for` loop over K, the accumulator loaded from a tensor) on every input type `mma` takes,
//! as matrices and as batches, at ragged sizes in random views, run by the interpreter and by
//! the lowered kernel on the device (`CudaContext::new(0)`: the emulator here, the GPU under
//! gpu-pack), every output element compared bit for bit: `Op::Mma` defines its arithmetic
//! exactly (tensor-core sums of 16 products for f16/bf16, fused multiply-add chains for
//! f32/f64). The inputs are random values of a few significant bits scaled over a range of
//! exponents, so the tensor cores' alignment and truncation matter, plus some zeros. A
//! second output adds each row's maximum to the result, so that every register of the
//! accumulator's layout is read (those past the tile's end must hold copies of the last
//! row or column). Tiles of 16 and 32 rows read their operands with `ldmatrix`; tiles of
//! 48 rows, where warps reach past the end, through registers.

mod common;

use common::check_all;
use cuprum_ir::{Constant, ScalarType};
use cuprum_testkit::poison;
use cuprum_tile_fuzz::tensor::{ViewKind, random_tensor, set_element};
use cuprum_tile_fuzz::{Case, CaseBuilder, Tolerance};
use cuprum_tile_ir::{Elem, Literal, Op, Stmt, TileType, TileValue, View, shape_of};
use cuprum_tile_lower::LowerOptions;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use ScalarType as S;

/// One GEMM case's sizes: `batch` (0: no batch axis), the tensors' `m`, `n`, `k` and the tile
/// `[tm, tn]` of the output and `tk` of the K steps; `tb` batches per tile (1 but in
/// [`Sizes::batch_tiles`]).
#[derive(Clone, Copy, Debug)]
struct Sizes {
    batch: u32,
    tb: u32,
    m: u64,
    n: u64,
    k: u64,
    tm: u32,
    tn: u32,
    tk: u32,
}

/// `Sizes` in the order of its fields: batch, m, n, k, tm, tn, tk.
fn sizes(batch: u32, m: u64, n: u64, k: u64, tm: u32, tn: u32, tk: u32) -> Sizes {
    Sizes {
        batch,
        tb: 1,
        m,
        n,
        k,
        tm,
        tn,
        tk,
    }
}

impl Sizes {
    /// These sizes with `tb` batches in each tile (the tile's leading size).
    fn batch_tiles(self, tb: u32) -> Sizes {
        Sizes { tb, ..self }
    }
}

/// A random value of `ty` with few significant bits, a random sign and exponent in
/// `-6..=6` (one in eight is zero), as bits.
fn value_bits(rng: &mut SmallRng, ty: ScalarType) -> u64 {
    let x = if rng.random_range(0..8) == 0 {
        0.0
    } else {
        let m = rng.random_range(1..64) as f64;
        let e = rng.random_range(-6..=6);
        let s = if rng.random_bool(0.5) { -1.0 } else { 1.0 };
        s * m * 2f64.powi(e) / 64.0
    };
    cuprum_ir::scalar::cast_constant(Constant::f64(x), ty).bits
}

/// A read-only input of `ty` and `shape`, in a random view, holding [`value_bits`].
fn input(
    cb: &mut CaseBuilder,
    rng: &mut SmallRng,
    name: &str,
    ty: ScalarType,
    shape: &[u64],
) -> u32 {
    noisy_input(cb, rng, (name, ty, shape), 0)
}

/// [`input`] with random bits under `noise` set in every nonzero element (low mantissa
/// bits, which a conversion then rounds away).
fn noisy_input(
    cb: &mut CaseBuilder,
    rng: &mut SmallRng,
    (name, ty, shape): (&str, ScalarType, &[u64]),
    noise: u64,
) -> u32 {
    let mut t = random_tensor(rng, ty, shape, ViewKind::Any);
    for i in 0..t.len() as usize {
        let mut bits = value_bits(rng, ty);
        if bits != 0 {
            bits |= rng.random::<u64>() & noise;
        }
        set_element(&mut t.bytes, ty, i, bits);
    }
    cb.input_tensor(name, t, None)
}

fn def(cb: &mut CaseBuilder, op: Op) -> TileValue {
    cb.def(op).unwrap_or_else(|e| panic!("{e}"))
}

fn int(cb: &mut CaseBuilder, v: i64) -> TileValue {
    def(
        cb,
        Op::Const {
            value: Literal::Int(v),
            elem: Elem::Known(S::I32),
            shape: vec![],
        },
    )
}

/// The tile `tile` of `tensor` at `index`, zero past its edges.
fn load_tile(cb: &mut CaseBuilder, tensor: u32, tile: &[u32], index: Vec<TileValue>) -> TileValue {
    def(
        cb,
        Op::Load {
            view: View::Tiled {
                tensor,
                tile: shape_of(tile),
                index,
            },
            padding: Literal::Int(0),
        },
    )
}

/// `for counter in start..end step { acc = mma(a tile, b tile, acc) }` from `acc0`: each
/// operand `(tensor, tile shape)` loaded (zero padding) at the index `index(counter)` gives it,
/// converted to `convert` when given; returns the loop's result.
fn k_loop(
    cb: &mut CaseBuilder,
    bounds: [TileValue; 3],
    acc0: TileValue,
    operands: ([(u32, Vec<u32>); 2], Option<ScalarType>),
    index: impl FnOnce(TileValue) -> (Vec<TileValue>, Vec<TileValue>),
) -> TileValue {
    k_loop_keeping(cb, bounds, acc0, operands, index, |_, _, next, _| next)
}

/// [`k_loop`] whose body carries `keep(counter, product, acc)` instead of the product.
fn k_loop_keeping(
    cb: &mut CaseBuilder,
    [start, end, step]: [TileValue; 3],
    acc0: TileValue,
    (operands, convert): ([(u32, Vec<u32>); 2], Option<ScalarType>),
    index: impl FnOnce(TileValue) -> (Vec<TileValue>, Vec<TileValue>),
    keep: impl FnOnce(&mut CaseBuilder, TileValue, TileValue, TileValue) -> TileValue,
) -> TileValue {
    let counter = cb.b.value(TileType::scalar(S::I32));
    let acc_ty = cb.b.ty(acc0).clone();
    let acc = cb.b.value(acc_ty.clone());
    let result = cb.b.value(acc_ty);
    cb.b.begin_block();
    let (ai, bi) = index(counter);
    let [(a, a_tile), (b, b_tile)] = operands;
    let mut load =
        |tensor: u32, tile: Vec<u32>, index: Vec<TileValue>| load_tile(cb, tensor, &tile, index);
    let mut ta = load(a, a_tile, ai);
    let mut tb = load(b, b_tile, bi);
    if let Some(to) = convert {
        for t in [&mut ta, &mut tb] {
            *t = def(
                cb,
                Op::Cast {
                    value: *t,
                    to: Elem::Known(to),
                },
            );
        }
    }
    let next = def(cb, Op::Mma { a: ta, b: tb, acc });
    let kept = keep(cb, counter, next, acc);
    let body = cb.b.end_block(vec![kept]);
    cb.b.push(Stmt::For {
        counter,
        start,
        end,
        step,
        args: vec![acc],
        inits: vec![acc0],
        body,
        results: vec![result],
    });
    result
}

/// `out = acc + a · b` over the whole K, K in steps of `tk`, as a tile kernel and its launch.
fn gemm_case(
    seed: u64,
    input_ty: ScalarType,
    acc_ty: ScalarType,
    s: Sizes,
    options: LowerOptions,
) -> Case {
    gemm_case_stored(seed, (input_ty, input_ty), acc_ty, s, options)
}

/// [`gemm_case`] with operands stored as `stored` and converted to `input_ty` after their
/// loads (`f32` tensors multiplied as `tf32`, say): their values then have every mantissa
/// bit, so that the conversion rounds.
fn gemm_case_stored(
    seed: u64,
    (stored, input_ty): (ScalarType, ScalarType),
    acc_ty: ScalarType,
    s: Sizes,
    options: LowerOptions,
) -> Case {
    let mut rng = SmallRng::seed_from_u64(seed);
    let name = format!(
        "mma_{stored}_{input_ty}_b{}_{}x{}x{}_tiles{}x{}x{}x{}_w{}",
        s.batch,
        s.m,
        s.n,
        s.k,
        s.tb,
        s.tm,
        s.tn,
        s.tk,
        options.num_warps.unwrap_or(0)
    );
    let mut cb = CaseBuilder::new(name, seed, poison::BYTE);
    let batched = s.batch > 0;
    let lead = |v: &[u64]| -> Vec<u64> {
        let mut out = if batched {
            vec![u64::from(s.batch)]
        } else {
            vec![]
        };
        out.extend_from_slice(v);
        out
    };
    let tile = |v: &[u32]| -> Vec<u32> {
        let mut out = if batched { vec![s.tb] } else { vec![] };
        out.extend_from_slice(v);
        out
    };
    let out_kind = if rng.random_bool(0.5) {
        ViewKind::Contiguous
    } else {
        ViewKind::Injective
    };
    let out = cb.output(
        &mut rng,
        "out",
        acc_ty,
        &tile(&[s.tm, s.tn]),
        &lead(&[s.m, s.n]),
        out_kind,
    );
    let noise = if stored == input_ty { 0 } else { 0x1FFF };
    let a = noisy_input(&mut cb, &mut rng, ("a", stored, &lead(&[s.m, s.k])), noise);
    let b = noisy_input(&mut cb, &mut rng, ("b", stored, &lead(&[s.k, s.n])), noise);
    let c = input(&mut cb, &mut rng, "c", acc_ty, &lead(&[s.m, s.n]));

    // Grid axes: (batch,) row tile, column tile.
    let ids: Vec<TileValue> = (0..if batched { 3 } else { 2 })
        .map(|a| def(&mut cb, Op::BlockId(a)))
        .collect();
    let (bi, mi, ni) = if batched {
        (Some(ids[0]), ids[1], ids[2])
    } else {
        (None, ids[0], ids[1])
    };
    let index = |rest: [TileValue; 2]| -> Vec<TileValue> { bi.into_iter().chain(rest).collect() };
    let zero = Literal::Int(0);
    let acc_index = index([mi, ni]);
    let acc0 = def(
        &mut cb,
        Op::Load {
            view: View::Tiled {
                tensor: c,
                tile: shape_of(&tile(&[s.tm, s.tn])),
                index: acc_index,
            },
            padding: zero,
        },
    );
    let steps = s.k.div_ceil(u64::from(s.tk)) as i64;
    let bounds = [int(&mut cb, 0), int(&mut cb, steps), int(&mut cb, 1)];
    let result = k_loop(
        &mut cb,
        bounds,
        acc0,
        (
            [(a, tile(&[s.tm, s.tk])), (b, tile(&[s.tk, s.tn]))],
            (stored != input_ty).then_some(input_ty),
        ),
        |counter| (index([mi, counter]), index([counter, ni])),
    );
    cb.b.push(Stmt::Store {
        tensor: out,
        value: result,
    });
    // The row maxima of the result, broadcast back and added: a reduction reads every
    // register of the accumulator's layout, copies past the tile's end included.
    let out2 = cb.output(
        &mut rng,
        "row_max_plus",
        acc_ty,
        &tile(&[s.tm, s.tn]),
        &lead(&[s.m, s.n]),
        out_kind,
    );
    let rank = if batched { 3 } else { 2 };
    let max = def(
        &mut cb,
        Op::Reduce {
            value: result,
            axis: rank - 1,
            combine: cuprum_tile_ir::Combine::Max,
        },
    );
    let keep = def(
        &mut cb,
        Op::Reshape {
            value: max,
            shape: shape_of(&tile(&[s.tm, 1])),
        },
    );
    let wide = def(
        &mut cb,
        Op::Broadcast {
            value: keep,
            shape: shape_of(&tile(&[s.tm, s.tn])),
        },
    );
    let sum = def(&mut cb, Op::Binary(cuprum_ir::BinaryOp::Add, result, wide));
    cb.b.push(Stmt::Store {
        tensor: out2,
        value: sum,
    });
    cb.finish(Tolerance::Exact, options)
        .unwrap_or_else(|e| panic!("{e}"))
}

/// A fresh seed for `test`, printed.
fn seed(test: &str) -> u64 {
    cuprum_testkit::random::rng(test).random()
}

#[test]
fn tensor_core_mma_matches_the_interpreter_bit_for_bit() {
    let seed = seed("tensor_core_mma");
    let sizes = [
        // One K step, one block.
        sizes(0, 16, 8, 16, 16, 8, 16),
        // Ragged on every axis, several K steps, several warps' worth of 16x8 blocks.
        sizes(0, 70, 45, 100, 32, 32, 32),
        // Tiles that are multiples of 16 but not powers of two.
        sizes(0, 50, 40, 60, 48, 24, 48),
        // Batched.
        sizes(3, 20, 17, 40, 16, 16, 16),
        // K steps of 8 and of 24: a last tensor-core step of fewer than 16 products.
        sizes(0, 40, 24, 37, 32, 16, 8),
        sizes(0, 16, 16, 50, 16, 16, 24),
        // K steps of 9 and 13: lanes whose fragment positions pass K hold zeros, not the
        // clamped copies of K's last column (found by the random programs).
        sizes(0, 16, 16, 9, 16, 16, 9),
        sizes(0, 40, 24, 45, 32, 16, 13),
        // K steps of 3: a lane bit's step (4 columns) passes K, so the layout makes those
        // lanes replicas; the fragments still want zeros there.
        sizes(0, 32, 16, 7, 32, 16, 3),
    ];
    let kinds = [(S::F16, S::F16), (S::BF16, S::BF16)];
    check_all("tensor-core mma", &tensor_core_gemms(seed, &kinds, &sizes));
}

/// Tiles of several batches: the warps the result's 16x8 blocks leave over each take
/// their own batches (`WarpGrid::batched`), on operands from registers and from shared
/// memory through `ldmatrix`, ragged batches (the last tile's outside loads padded, its
/// stores dropped), in 4 and 8 warps; `tf32` and the FMA chains too.
#[test]
fn tiles_of_several_batches_share_them_out_among_the_warps() {
    let seed = seed("batch_tiles");
    let sizes = [
        // 16x16 results: two warps along N, then two along the batches.
        sizes(7, 20, 17, 40, 16, 16, 16).batch_tiles(4),
        // 16x8 results: every warp its own batches; ragged K.
        sizes(9, 16, 8, 23, 16, 8, 16).batch_tiles(8),
        // More warps than batches and blocks: the rest hold copies.
        sizes(2, 33, 9, 16, 16, 8, 16).batch_tiles(2),
    ];
    let mut cases = Vec::new();
    for (i, s) in sizes.iter().enumerate() {
        for (j, (stored, input)) in [(S::F16, S::F16), (S::BF16, S::BF16), (S::Tf32, S::Tf32)]
            .into_iter()
            .enumerate()
        {
            for (w, warps) in [None, Some(8)].into_iter().enumerate() {
                let options = LowerOptions {
                    num_warps: warps,
                    ..LowerOptions::default()
                };
                let at = seed + (i * 16 + j * 2 + w) as u64;
                cases.push(gemm_case_stored(at, (stored, input), S::F32, *s, options));
            }
        }
        cases.push(gemm_case(
            seed + 100 + i as u64,
            S::F32,
            S::F32,
            *s,
            LowerOptions::default(),
        ));
    }
    check_all("batch tiles", &cases);
}

/// A GEMM case into an `f32` accumulator per kind (operands stored as, and multiplied as)
/// and size, seeds counted up from `seed`.
fn tensor_core_gemms(seed: u64, kinds: &[(ScalarType, ScalarType)], sizes: &[Sizes]) -> Vec<Case> {
    kinds
        .iter()
        .flat_map(|&kind| sizes.iter().map(move |&s| (kind, s)))
        .enumerate()
        .map(|(i, (kind, s))| {
            gemm_case_stored(seed + i as u64, kind, S::F32, s, LowerOptions::default())
        })
        .collect()
}

/// `tf32` GEMMs (`mma.sync m16n8k8`): `tf32` tensors multiplied as they are, and `f32`
/// tensors with every mantissa bit converted to `tf32` (rounded) after their loads.
#[test]
fn tf32_mma_matches_the_interpreter_bit_for_bit() {
    let seed = seed("tf32_mma");
    let sizes = [
        // One K step of 8, one block.
        sizes(0, 16, 8, 8, 16, 8, 8),
        // Ragged on every axis, several K steps, several warps' worth of 16x8 blocks.
        sizes(0, 70, 45, 100, 32, 32, 32),
        // Tiles that are multiples of 16 but not powers of two; K steps of 12 (a last
        // tensor-core step of 4 products).
        sizes(0, 50, 40, 60, 48, 24, 12),
        // Batched.
        sizes(3, 20, 17, 40, 16, 16, 16),
        // K steps of 3 and 5: lanes whose fragment positions pass K hold zeros.
        sizes(0, 32, 16, 7, 32, 16, 3),
        sizes(0, 16, 16, 9, 16, 16, 5),
    ];
    let cases = tensor_core_gemms(seed, &[(S::Tf32, S::Tf32), (S::F32, S::Tf32)], &sizes);
    check_all("tf32 mma", &cases);
}

#[test]
fn fma_chain_mma_matches_the_interpreter_bit_for_bit() {
    let seed = seed("fma_chain_mma");
    let sizes = [
        sizes(0, 5, 3, 7, 4, 4, 4),
        sizes(0, 40, 33, 50, 16, 32, 8),
        sizes(2, 9, 12, 10, 8, 8, 5),
    ];
    let cases: Vec<Case> = [S::F32, S::F64]
        .into_iter()
        .flat_map(|ty| sizes.iter().map(move |&s| (ty, s)))
        .enumerate()
        .map(|(i, (ty, s))| gemm_case(seed + i as u64, ty, ty, s, LowerOptions::default()))
        .collect();
    check_all("fma-chain mma", &cases);
}

/// A case for the Hopper GEMM recipe (`emit::wgmma_gemm`): the sizes, the output's element
/// type, how the accumulator starts and the loop's K steps `start..end`.
#[derive(Clone, Copy, Debug)]
struct RecipeCase {
    input: ScalarType,
    out: ScalarType,
    /// `None`: the accumulator starts as the output's own tile (`f32` outputs).
    init: Option<f64>,
    s: Sizes,
    steps: (i64, i64),
    /// The output's rows padded to whole 16-byte runs (stores of column pairs), rather than
    /// contiguous.
    padded_out: bool,
    /// Blocks per cluster ([`LowerOptions::cluster_blocks`]); `None`: the lowering's choice.
    cluster: Option<u32>,
}

impl RecipeCase {
    /// The loop over all of K's steps, a contiguous output, `cluster` blocks per cluster.
    fn whole_loop(
        input: ScalarType,
        out: ScalarType,
        init: Option<f64>,
        s: Sizes,
        cluster: u32,
    ) -> RecipeCase {
        RecipeCase {
            input,
            out,
            init,
            s,
            steps: (0, s.k.div_ceil(u64::from(s.tk)) as i64),
            padded_out: false,
            cluster: Some(cluster),
        }
    }
}

/// A row-major `[rows, cols]` tensor of `ty` holding [`value_bits`] that a tensor map can
/// describe: its row pitch a random multiple of 16 bytes at least `cols`, at an offset of a
/// random multiple of 16 bytes.
fn tma_tensor(
    rng: &mut SmallRng,
    ty: ScalarType,
    rows: u64,
    cols: u64,
) -> cuprum_tile_fuzz::Tensor {
    mapped_tensor(rng, ty, &[rows, cols], value_bits)
}

/// A tensor of `shape` a tensor map can describe (rows padded to a multiple of 16 bytes and
/// a few chunks more, at an aligned offset into its allocation, poison between), its
/// elements `bits(rng, ty)`.
fn mapped_tensor(
    rng: &mut SmallRng,
    ty: ScalarType,
    shape: &[u64],
    bits: fn(&mut SmallRng, ScalarType) -> u64,
) -> cuprum_tile_fuzz::Tensor {
    let per16 = 16 / u64::from(ty.size_bytes());
    let rank = shape.len();
    let mut strides = vec![1i64; rank];
    let mut extent = shape[rank - 1].next_multiple_of(per16) + per16 * rng.random_range(0..3);
    for axis in (0..rank - 1).rev() {
        strides[axis] = extent as i64;
        extent *= shape[axis];
    }
    let offset = per16 * rng.random_range(0..3);
    let len = offset + extent;
    let mut t = cuprum_tile_fuzz::Tensor {
        elem: ty,
        shape: shape.to_vec(),
        strides,
        offset,
        bytes: vec![poison::BYTE; (len * u64::from(ty.size_bytes())) as usize],
    };
    let count: u64 = shape.iter().product();
    for i in 0..count {
        let (mut rest, mut at) = (i, offset);
        for axis in (0..rank).rev() {
            at += (rest % shape[axis]) * t.strides[axis] as u64;
            rest /= shape[axis];
        }
        let b = bits(rng, ty);
        set_element(&mut t.bytes, ty, at as usize, b);
    }
    t
}

/// `out = convert(init + a · b)` in cuTile Rust's `gemm` shape, lowered for sm_90 with the
/// tensors' facts, so that the Hopper recipe takes it.
fn recipe_case(seed: u64, rc: RecipeCase) -> Case {
    let mut rng = SmallRng::seed_from_u64(seed);
    let s = rc.s;
    let name = format!(
        "gemm_{}_{}x{}x{}_{}x{}x{}_steps_{}_{}",
        rc.input, s.m, s.n, s.k, s.tm, s.tn, s.tk, rc.steps.0, rc.steps.1
    );
    let mut cb = CaseBuilder::new(name, seed, poison::BYTE);
    let out = cb.output(
        &mut rng,
        "out",
        rc.out,
        &[s.tm, s.tn],
        &[s.m, s.n],
        ViewKind::Contiguous,
    );
    let ta = tma_tensor(&mut rng, rc.input, s.m, s.k);
    let a = cb.input_tensor("a", ta, None);
    let tb = tma_tensor(&mut rng, rc.input, s.k, s.n);
    let b = cb.input_tensor("b", tb, None);
    let mi = def(&mut cb, Op::BlockId(0));
    let ni = def(&mut cb, Op::BlockId(1));
    let acc0 = match rc.init {
        Some(x) => def(
            &mut cb,
            Op::Const {
                value: Literal::Float(x),
                elem: Elem::Known(S::F32),
                shape: shape_of(&[s.tm, s.tn]),
            },
        ),
        None => def(
            &mut cb,
            Op::Load {
                view: View::Own { tensor: out },
                padding: Literal::Float(-3.0),
            },
        ),
    };
    let bounds = [
        int(&mut cb, rc.steps.0),
        int(&mut cb, rc.steps.1),
        int(&mut cb, 1),
    ];
    let result = k_loop(
        &mut cb,
        bounds,
        acc0,
        ([(a, vec![s.tm, s.tk]), (b, vec![s.tk, s.tn])], None),
        |counter| (vec![mi, counter], vec![counter, ni]),
    );
    let stored = if rc.out == S::F32 {
        result
    } else {
        def(
            &mut cb,
            Op::Cast {
                value: result,
                to: Elem::Known(rc.out),
            },
        )
    };
    cb.b.push(Stmt::Store {
        tensor: out,
        value: stored,
    });
    let options = LowerOptions {
        compute_capability: Some((9, 0)),
        cluster_blocks: rc.cluster,
        ..LowerOptions::default()
    };
    let mut case = cb
        .finish(Tolerance::Exact, options)
        .unwrap_or_else(|e| panic!("{e}"));
    if rc.padded_out
        && let Some(cuprum_tile_fuzz::ArgData::Tensor(t)) = case.args.get_mut(out as usize)
    {
        let mut padded = tma_tensor(&mut rng, rc.out, s.m, s.n);
        padded.bytes.fill(poison::BYTE);
        *t = padded;
    }
    let mut case = case.with_tensor_facts();
    // An accumulator that starts as the output: give the output values first.
    if rc.init.is_none()
        && let Some(cuprum_tile_fuzz::ArgData::Tensor(t)) = case.args.get_mut(out as usize)
    {
        for i in 0..s.m * s.n {
            let bits = value_bits(&mut rng, S::F32);
            set_element(&mut t.bytes, S::F32, i as usize, bits);
        }
    }
    case
}

#[test]
fn hopper_gemm_recipe_matches_the_interpreter_bit_for_bit() {
    let seed = seed("hopper_gemm_recipe");
    let case = |input, out, init, s| RecipeCase::whole_loop(input, out, init, s, 1);
    let mut cases = vec![
        // Ragged on every axis; two consumer warpgroups; K in one stage per step.
        case(
            S::BF16,
            S::F32,
            Some(0.0),
            sizes(0, 200, 190, 300, 128, 128, 64),
        ),
        // One consumer warpgroup, 32-deep stages (64-byte swizzle), a non-zero start.
        case(S::F16, S::F16, Some(0.5), sizes(0, 100, 70, 72, 64, 64, 32)),
        // The widest MMA (n = 256), 16-deep stages (32-byte swizzle), a bf16 result.
        case(
            S::BF16,
            S::BF16,
            Some(0.0),
            sizes(0, 130, 260, 40, 128, 256, 16),
        ),
        // Two stages per K step; the accumulator starts as the output's own tile.
        case(S::F16, S::F32, None, sizes(0, 64, 192, 250, 64, 192, 128)),
        // More rows of tiles (10) than a group of the grouped block order takes (8).
        case(
            S::BF16,
            S::F32,
            Some(0.0),
            sizes(0, 600, 150, 32, 64, 64, 32),
        ),
    ];
    // A loop that starts past K's first step, and one that never runs.
    let s = sizes(0, 70, 64, 100, 64, 64, 16);
    cases.push(RecipeCase {
        steps: (2, 7),
        ..case(S::BF16, S::F32, Some(0.0), s)
    });
    cases.push(RecipeCase {
        steps: (3, 3),
        ..case(S::BF16, S::F32, Some(1.0), s)
    });
    // Late starts with several stages per K step (two of 64, three of 16).
    for (steps, input, out, s) in [
        ((1, 5), S::F16, S::F32, sizes(0, 64, 128, 600, 64, 128, 128)),
        ((2, 5), S::BF16, S::BF16, sizes(0, 100, 64, 230, 64, 64, 48)),
    ] {
        cases.push(RecipeCase {
            steps,
            ..case(input, out, Some(0.0), s)
        });
    }
    // Whole columns, so the tiles go out through shared memory with TMA stores: an odd
    // number of 128-byte chunks per tile (three, and one), several tiles per block.
    cases.push(case(
        S::BF16,
        S::BF16,
        Some(0.0),
        sizes(0, 128, 384, 64, 64, 192, 32),
    ));
    cases.push(case(
        S::F16,
        S::F16,
        Some(0.5),
        sizes(0, 200, 128, 40, 64, 64, 16),
    ));
    // Ragged columns in rows of whole 16-byte chunks: TMA stores clip the last tiles.
    cases.push(case(
        S::F16,
        S::F16,
        Some(0.0),
        sizes(0, 150, 200, 64, 64, 128, 32),
    ));
    cases.push(case(
        S::BF16,
        S::F32,
        Some(0.0),
        sizes(0, 100, 132, 48, 64, 128, 16),
    ));
    // Outputs whose rows are padded to 16-byte runs, so column pairs are one store, with an
    // odd width (the last column alone) and even ones.
    for (out, n) in [(S::BF16, 131), (S::F32, 190), (S::F16, 64)] {
        cases.push(RecipeCase {
            padded_out: true,
            ..case(S::F16, out, Some(0.25), sizes(0, 140, n, 48, 128, 128, 16))
        });
    }
    // tf32 (the swapped product, `Cᵀ = Bᵀ Aᵀ`): two consumers of two column blocks each
    // with 32-deep stages; one consumer of one block with 8-deep stages and the accumulator
    // from the output; three blocks (one consumer), a tf32 result; ragged everywhere.
    cases.extend([
        case(
            S::Tf32,
            S::F32,
            Some(0.0),
            sizes(0, 200, 300, 100, 128, 256, 32),
        ),
        case(S::Tf32, S::F32, None, sizes(0, 70, 50, 44, 64, 64, 8)),
        case(
            S::Tf32,
            S::Tf32,
            Some(0.5),
            sizes(0, 90, 200, 72, 64, 192, 24),
        ),
        case(
            S::Tf32,
            S::F16,
            Some(0.0),
            sizes(0, 128, 128, 64, 128, 128, 16),
        ),
    ]);
    cases.push(RecipeCase {
        padded_out: true,
        ..case(
            S::Tf32,
            S::BF16,
            Some(0.25),
            sizes(0, 140, 131, 48, 128, 128, 16),
        )
    });
    let cases: Vec<Case> = cases
        .into_iter()
        .enumerate()
        .map(|(i, rc)| recipe_case(seed + i as u64, rc))
        .collect();
    // Outputs a tensor map describes with whole rows of 16-byte chunks go out through
    // shared memory with TMA stores; the others are stored by the threads.
    let mut staged = 0;
    for c in &cases {
        let compiled = cuprum_tile_fuzz::device::compile(c, &c.options)
            .unwrap_or_else(|e| panic!("{}: {e}", c.kernel.name));
        let threads = compiled.lowered.block_threads;
        assert!(
            threads == 256 || threads == 384,
            "{}: the Hopper recipe did not take it ({threads} threads per block)",
            c.kernel.name
        );
        staged += usize::from(stores_tiles(&compiled.lowered.kernel));
    }
    assert!(
        (3..cases.len()).contains(&staged),
        "{staged} of {} cases take the staged epilogue",
        cases.len()
    );
    check_all("Hopper GEMM recipe", &cases);
}

/// Whether `kernel` stores tiles with TMA (the GEMM recipe's staged epilogue).
fn stores_tiles(kernel: &cuprum_ir::Kernel) -> bool {
    let mut stores = false;
    kernel.body.visit(&mut |s| {
        stores |= matches!(s, cuprum_ir::Stmt::Tma(cuprum_ir::TmaOp::StoreTile { .. }));
    });
    stores
}

/// The Hopper GEMM recipe in clusters of two blocks, which take vertically neighbouring
/// tiles and copy half of each stage's B boxes into both blocks' shared memory (TMA
/// multicast): bit for bit the interpreter's, with an odd number of tile rows (the last
/// pair's second block computes past the tensor and stores nothing), several pairs per
/// cluster, both consumer counts, the accumulator from the output, padded outputs and a
/// loop that never runs; the lowered kernel is a cluster kernel that multicasts B.
#[test]
fn hopper_gemm_recipe_in_clusters_of_two_matches_the_interpreter_bit_for_bit() {
    let seed = seed("hopper_gemm_recipe_clusters");
    let case = |input, out, init, s| RecipeCase::whole_loop(input, out, init, s, 2);
    let mut cases = vec![
        // Three rows of tiles (an odd count), two columns, two consumers, n = 128.
        case(
            S::BF16,
            S::F32,
            Some(0.0),
            sizes(0, 300, 250, 200, 128, 128, 64),
        ),
        // The widest MMA (four B boxes, two per block), a bf16 result, ragged K.
        case(
            S::BF16,
            S::BF16,
            Some(0.0),
            sizes(0, 260, 300, 72, 128, 256, 32),
        ),
        // One consumer, five rows of tiles, the accumulator from the output.
        case(S::F16, S::F32, None, sizes(0, 300, 128, 100, 64, 128, 16)),
        // One tile row: the pair's second block has nothing to store.
        case(
            S::F16,
            S::F16,
            Some(0.5),
            sizes(0, 50, 256, 64, 64, 128, 64),
        ),
        // Whole tiles (the epilogue tests no edge) in an odd number of rows: the pair's
        // second block past the last row must not store.
        case(
            S::BF16,
            S::BF16,
            Some(0.0),
            sizes(0, 192, 256, 64, 64, 128, 32),
        ),
    ];
    cases.push(RecipeCase {
        steps: (3, 3),
        ..case(
            S::BF16,
            S::F32,
            Some(1.0),
            sizes(0, 130, 128, 100, 64, 128, 16),
        )
    });
    cases.push(RecipeCase {
        padded_out: true,
        ..case(
            S::F16,
            S::BF16,
            Some(0.25),
            sizes(0, 140, 131, 48, 64, 128, 16),
        )
    });
    let cases: Vec<Case> = cases
        .into_iter()
        .enumerate()
        .map(|(i, rc)| recipe_case(seed + i as u64, rc))
        .collect();
    for c in &cases {
        let compiled = cuprum_tile_fuzz::device::compile(c, &c.options)
            .unwrap_or_else(|e| panic!("{}: {e}", c.kernel.name));
        let kernel = &compiled.lowered.kernel;
        assert_eq!(kernel.cluster, Some((2, 1, 1)), "{}", c.kernel.name);
        let mut multicasts = 0;
        kernel.body.visit(&mut |s| {
            multicasts += usize::from(matches!(
                s,
                cuprum_ir::Stmt::Tma(cuprum_ir::TmaOp::LoadTile {
                    multicast: Some(_),
                    ..
                })
            ));
        });
        assert!(multicasts > 0, "{}: no multicast copy", c.kernel.name);
    }
    check_all("Hopper GEMM recipe in clusters", &cases);
}

/// A random value of `ty` of at most 1 in magnitude with few significant bits (one in
/// eight is zero), as bits: sums of `d` products stay far from `f16`'s range.
fn small_bits(rng: &mut SmallRng, ty: ScalarType) -> u64 {
    let x = if rng.random_range(0..8) == 0 {
        0.0
    } else {
        let m = rng.random_range(1..16) as f64;
        let s = if rng.random_bool(0.5) { -1.0 } else { 1.0 };
        s * m * 2f64.powi(rng.random_range(-4..=0)) / 16.0
    };
    cuprum_ir::scalar::cast_constant(Constant::f64(x), ty).bits
}

/// `value` broadcast to `shape`.
fn broadcast(cb: &mut CaseBuilder, value: TileValue, shape: [u32; 2]) -> TileValue {
    def(
        cb,
        Op::Broadcast {
            value,
            shape: shape_of(&shape),
        },
    )
}

/// Heads of the key and value tensors of a mapped chain case; the chain reads the last.
const MAPPED_HEADS: u64 = 2;

/// The tensors of a chain case.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ChainTensors {
    /// In random views, the case lowered without facts.
    Any,
    /// q a tensor a tensor map can describe, k and v rank-3 ones of [`MAPPED_HEADS`] heads
    /// whose last the chain reads (`[1, bn, d]` tiles, reshaped, as cuTile Rust's attention
    /// loads them), the case lowered with the tensors' facts, so that the tensor memory
    /// accelerator copies the key and value tiles.
    Mapped,
    /// As `Mapped`, the loop running no iteration (as causal attention's first loop does
    /// for the first block of queries): the result is the loop's initial values.
    MappedNoIteration,
    /// As `Mapped`, the scores of every iteration but the first passing through a branch
    /// that masks them (`rows + j >= cols`, else `-1`), as causal attention written as one
    /// loop masks the tiles on the diagonal: the chain runs through the branch's result.
    MappedMaskedBranch,
    /// As `Mapped`, the key tiles in two loops one after the other (the first half, then
    /// the rest from the first loop's results), as causal attention runs them.
    MappedTwoLoops,
    /// As `Mapped`, block 0 returning before the loop (its output left as it was): no
    /// producer warpgroup can copy for a loop some blocks' consumers never reach.
    MappedReturnBefore,
    /// As `Mapped`, block 0 returning after the loop, before its store.
    MappedReturnAfter,
}

impl ChainTensors {
    /// The key loops the chain runs its tiles in, one after the other.
    fn loops(self) -> i64 {
        if self == ChainTensors::MappedTwoLoops {
            2
        } else {
            1
        }
    }
}

/// Attention's shape with exact arithmetic in place of the exponentials: per block of `bm`
/// query rows, over key tiles of `bn`, `s = q kᵀ`, the running row maximum `m`, `p = s - m`
/// broadcast, `acc = (acc + (m_old - m) broadcast) + f16(p) v`, and after the loop
/// `acc - m` broadcast. Two chained tensor-core `mma`s (the first's result, through a row
/// reduction and broadcast, is the second's left operand), a loop-invariant left operand,
/// row broadcasts onto both results' layouts: the lowering's row-only warp grids, in-place
/// broadcasts and fragments made once before the loop, checked bit for bit.
/// Its tensors as `tensors` says.
fn chain_case(
    seed: u64,
    input_ty: ScalarType,
    (rows, keys, d): (u64, u64, u32),
    [bm, bn]: [u32; 2],
    q_reshaped: bool,
    options: LowerOptions,
    tensors: ChainTensors,
) -> Case {
    let mapped = tensors != ChainTensors::Any;
    let mut rng = SmallRng::seed_from_u64(seed);
    let loops = match tensors.loops() {
        1 => String::new(),
        n => format!("_{n}_loops"),
    };
    let name = format!("mma_chain_{input_ty}_{rows}x{keys}x{d}_tiles_{bm}x{bn}{loops}");
    let mut cb = CaseBuilder::new(name, seed, poison::BYTE);
    let out = cb.output(
        &mut rng,
        "out",
        S::F32,
        &[bm, d],
        &[rows, u64::from(d)],
        ViewKind::Injective,
    );
    let mut tensor = |cb: &mut CaseBuilder, name: &str, n: u64, heads: Option<u64>| {
        let t = match heads {
            Some(h) => mapped_tensor(&mut rng, input_ty, &[h, n, u64::from(d)], small_bits),
            None if mapped => mapped_tensor(&mut rng, input_ty, &[n, u64::from(d)], small_bits),
            None => {
                let mut t = random_tensor(&mut rng, input_ty, &[n, u64::from(d)], ViewKind::Any);
                for i in 0..t.len() as usize {
                    let bits = small_bits(&mut rng, input_ty);
                    set_element(&mut t.bytes, input_ty, i, bits);
                }
                t
            }
        };
        cb.input_tensor(name, t, None)
    };
    let heads = mapped.then_some(MAPPED_HEADS);
    let (q, k, v) = (
        tensor(&mut cb, "q", rows, None),
        tensor(&mut cb, "k", keys, heads),
        tensor(&mut cb, "v", keys, heads),
    );
    let last_head = int(&mut cb, MAPPED_HEADS as i64 - 1);
    let row = def(&mut cb, Op::BlockId(0));
    let zero_i = int(&mut cb, 0);
    let load = |cb: &mut CaseBuilder, tensor: u32, tile: [u32; 2], index: Vec<TileValue>| {
        load_tile(cb, tensor, &tile, index)
    };
    // A key or value tile: of the last head, reshaped, where the tensors have heads.
    let kv_load = |cb: &mut CaseBuilder, tensor: u32, index: Vec<TileValue>| match heads {
        Some(_) => {
            let index = std::iter::once(last_head).chain(index).collect();
            let t = load_tile(cb, tensor, &[1, bn, d], index);
            def(
                cb,
                Op::Reshape {
                    value: t,
                    shape: shape_of(&[bn, d]),
                },
            )
        }
        None => load_tile(cb, tensor, &[bn, d], index),
    };
    let constant = |cb: &mut CaseBuilder, shape: &[u32]| {
        def(
            cb,
            Op::Const {
                value: Literal::Float(0.0),
                elem: Elem::Known(S::F32),
                shape: shape_of(shape),
            },
        )
    };
    if tensors == ChainTensors::MappedReturnBefore {
        return_in_block_0(&mut cb, row);
    }
    let tq = load(&mut cb, q, [bm, d], vec![row, zero_i]);
    // cuTile's examples load q as a rank-3 tile and reshape it: the same tile, reached
    // through a reshape.
    let tq = if q_reshaped {
        def(
            &mut cb,
            Op::Reshape {
                value: tq,
                shape: shape_of(&[bm, d]),
            },
        )
    } else {
        tq
    };
    let m0 = constant(&mut cb, &[bm, 1]);
    let acc0 = constant(&mut cb, &[bm, d]);
    let steps = match tensors {
        ChainTensors::MappedNoIteration => 0,
        _ => keys.div_ceil(u64::from(bn)) as i64,
    };
    // The key loop over tiles `first..last`, from `inits`, giving its results.
    let key_loop = |cb: &mut CaseBuilder, [first, last]: [i64; 2], inits: [TileValue; 2]| {
        let [start, end, step] = [int(cb, first), int(cb, last), int(cb, 1)];

        let counter = cb.b.value(TileType::scalar(S::I32));
        let m_ty = cb.b.ty(m0).clone();
        let acc_ty = cb.b.ty(acc0).clone();
        let (m, acc) = (cb.b.value(m_ty.clone()), cb.b.value(acc_ty.clone()));
        let (m_out, acc_out) = (cb.b.value(m_ty), cb.b.value(acc_ty));
        cb.b.begin_block();
        let zero_j = int(cb, 0);
        let kt = kv_load(cb, k, vec![counter, zero_j]);
        let kt_t = def(
            cb,
            Op::Permute {
                value: kt,
                perm: vec![1, 0],
            },
        );
        let zero = constant(cb, &[bm, bn]);
        let s = def(
            cb,
            Op::Mma {
                a: tq,
                b: kt_t,
                acc: zero,
            },
        );
        let s = match tensors {
            ChainTensors::MappedMaskedBranch => masking_branch(cb, counter, s, [bm, bn]),
            _ => s,
        };
        let max = def(
            cb,
            Op::Reduce {
                value: s,
                axis: 1,
                combine: cuprum_tile_ir::Combine::Max,
            },
        );
        let max = def(
            cb,
            Op::Reshape {
                value: max,
                shape: shape_of(&[bm, 1]),
            },
        );
        let m_new = def(cb, Op::Binary(cuprum_ir::BinaryOp::Max, m, max));
        let m_wide = broadcast(cb, m_new, [bm, bn]);
        let p = def(cb, Op::Binary(cuprum_ir::BinaryOp::Sub, s, m_wide));
        let p16 = def(
            cb,
            Op::Cast {
                value: p,
                to: Elem::Known(input_ty),
            },
        );
        let alpha = def(cb, Op::Binary(cuprum_ir::BinaryOp::Sub, m, m_new));
        let alpha_wide = broadcast(cb, alpha, [bm, d]);
        let shifted = def(cb, Op::Binary(cuprum_ir::BinaryOp::Add, acc, alpha_wide));
        let vt = kv_load(cb, v, vec![counter, zero_j]);
        let next = def(
            cb,
            Op::Mma {
                a: p16,
                b: vt,
                acc: shifted,
            },
        );
        let body = cb.b.end_block(vec![m_new, next]);
        cb.b.push(Stmt::For {
            counter,
            start,
            end,
            step,
            args: vec![m, acc],
            inits: inits.to_vec(),
            body,
            results: vec![m_out, acc_out],
        });
        [m_out, acc_out]
    };
    // With several loops, each from the last one's results, as causal attention runs its
    // unmasked then its diagonal key tiles (a product deferred in each).
    let loops = tensors.loops();
    let [m_out, acc_out] = (0..loops).fold([m0, acc0], |inits, i| {
        let bounds = [i * steps / loops, (i + 1) * steps / loops];
        key_loop(&mut cb, bounds, inits)
    });
    if tensors == ChainTensors::MappedReturnAfter {
        return_in_block_0(&mut cb, row);
    }
    let m_wide = broadcast(&mut cb, m_out, [bm, d]);
    let result = def(
        &mut cb,
        Op::Binary(cuprum_ir::BinaryOp::Sub, acc_out, m_wide),
    );
    cb.b.push(Stmt::Store {
        tensor: out,
        value: result,
    });
    let case = cb
        .finish(Tolerance::Exact, options)
        .unwrap_or_else(|e| panic!("{e}"));
    if mapped {
        case.with_tensor_facts()
    } else {
        case
    }
}

/// `if row == 0 { return }`: block 0 leaves the kernel there.
fn return_in_block_0(cb: &mut CaseBuilder, row: TileValue) {
    let zero = int(cb, 0);
    let first = def(cb, Op::Compare(cuprum_ir::CmpOp::Eq, row, zero));
    cb.b.begin_block();
    cb.b.push(Stmt::Return);
    let then = cb.b.end_block(vec![]);
    cb.b.begin_block();
    let otherwise = cb.b.end_block(vec![]);
    cb.b.push(Stmt::If {
        cond: first,
        then,
        otherwise,
        results: vec![],
    });
}

/// `if j >= 1 { select(rows + j >= cols, scores, -1) } else { scores }`: the scores of
/// iteration `j` masked past the first, through a branch (the mask made as attention's
/// causal kernel makes it, [`causal_mask_by_rows`]).
fn masking_branch(
    cb: &mut CaseBuilder,
    counter: TileValue,
    scores: TileValue,
    tile: [u32; 2],
) -> TileValue {
    let one = int(cb, 1);
    let later = def(cb, Op::Compare(cuprum_ir::CmpOp::Ge, counter, one));
    cb.b.begin_block();
    let seen = causal_mask_by_rows(cb, counter, tile);
    let hidden = def(
        cb,
        Op::Const {
            value: Literal::Float(-1.0),
            elem: Elem::Known(S::F32),
            shape: shape_of(&tile),
        },
    );
    let masked = def(
        cb,
        Op::Select {
            cond: seen,
            if_true: scores,
            if_false: hidden,
        },
    );
    let then = cb.b.end_block(vec![masked]);
    cb.b.begin_block();
    let otherwise = cb.b.end_block(vec![scores]);
    let result = cb.b.value(cb.b.ty(scores).clone());
    cb.b.push(Stmt::If {
        cond: later,
        then,
        otherwise,
        results: vec![result],
    });
    result
}

/// Options for compute capability 9.0 (the `wgmma` lowering of `mma`s whose layouts are
/// warpgroups'), with `warps` per block if given (which also keeps GEMM-shaped kernels
/// from the whole-kernel Hopper recipe).
fn hopper(warps: Option<u32>) -> LowerOptions {
    LowerOptions {
        compute_capability: Some((9, 0)),
        num_warps: warps,
        ..LowerOptions::default()
    }
}

#[test]
fn tensor_core_mma_on_hopper_matches_the_interpreter_bit_for_bit() {
    let seed = seed("tensor_core_mma_hopper");
    // GEMMs lowered for compute capability 9.0 outside the whole-kernel recipe (warps
    // chosen): tiles whose warps split the rows only but whose rows are too short for
    // 128-byte panels, and a 2x2 warp grid, all keep `mma.sync` (`wgmma_mma` takes only
    // 128-byte panels), which must stay right with the Hopper options.
    let sizes = [
        (sizes(0, 100, 70, 96, 64, 32, 32), 4),
        (sizes(0, 64, 40, 64, 64, 16, 64), 4),
        (sizes(0, 130, 20, 200, 128, 16, 128), 8),
        (sizes(0, 64, 64, 48, 64, 64, 16), 4),
    ];
    let cases: Vec<Case> = [S::F16, S::BF16]
        .into_iter()
        .flat_map(|ty| sizes.iter().map(move |&s| (ty, s)))
        .enumerate()
        .map(|(i, (ty, (s, warps)))| gemm_case(seed + i as u64, ty, S::F32, s, hopper(Some(warps))))
        .collect();
    check_all("tensor-core mma (Hopper)", &cases);
}

/// A chain case's (query rows, keys, head dimension) and its tiles `[bm, bn]`.
type ChainShape = ((u64, u64, u32), [u32; 2]);

/// Every chain case of `shapes` ((query rows, keys, head dimension) and tiles), in `f16` and
/// `bf16`, q loaded directly and through a reshape in turn, lowered with `options` and
/// checked three ways bit for bit.
fn check_chains(what: &str, seed: u64, shapes: &[ChainShape], options: LowerOptions) {
    let cases: Vec<Case> = [S::F16, S::BF16, S::Tf32]
        .into_iter()
        .flat_map(|ty| shapes.iter().map(move |&s| (ty, s)))
        .enumerate()
        .map(|(i, (ty, (sizes, tiles)))| {
            chain_case(
                seed + i as u64,
                ty,
                sizes,
                tiles,
                i % 2 == 1,
                options.clone(),
                ChainTensors::Any,
            )
        })
        .collect();
    check_all(what, &cases);
}

#[test]
fn chained_mmas_match_the_interpreter_bit_for_bit() {
    let seed = seed("chained_mmas");
    // (query rows, keys, head dimension) and tiles [bm, bn]: several key tiles, ragged
    // queries and keys (padding rows and keys read zeros), and a block of 64 rows whose
    // warps split the rows only.
    let shapes = [
        ((64, 96, 32), [64, 32]),
        ((40, 50, 16), [32, 16]),
        ((128, 64, 64), [128, 64]),
    ];
    check_chains("chained mma", seed, &shapes, LowerOptions::default());
}

#[test]
fn chained_mmas_on_hopper_match_the_interpreter_bit_for_bit() {
    let seed = seed("chained_mmas_hopper");
    // As above with `wgmma` and its rings: one and two warpgroups, a head dimension of one
    // and of two 128-byte panels (attention's 128), ragged keys (the last key tile staged
    // through registers), and shapes that keep `mma.sync` (rows of 32 and 16 elements,
    // and a block of two warps).
    let shapes = [
        ((64, 96, 32), [64, 32]),
        ((128, 64, 64), [128, 64]),
        ((70, 200, 128), [64, 64]),
        ((64, 40, 16), [64, 16]),
        ((40, 50, 16), [32, 16]),
        // Head dimension 64 and 64 keys per tile over several key tiles: wrong on the H100
        // while q stayed in registers.
        ((64, 136, 64), [64, 64]),
    ];
    check_chains("chained mma (Hopper)", seed, &shapes, hopper(None));
}

#[test]
fn chained_mmas_on_hopper_with_128_keys_per_tile_match_the_interpreter() {
    let seed = seed("chained_mmas_hopper_wide");
    // Key tiles of 128 (the first `mma`'s N and the second's K): one and two warpgroups,
    // head dimensions of one and two 128-byte panels (q kept in shared memory), and ragged
    // queries and keys (q's padding rows written to its tile, the last key tile staged
    // through registers).
    let shapes = [
        ((128, 256, 128), [128, 128]),
        ((64, 256, 128), [64, 128]),
        ((64, 256, 64), [64, 128]),
        ((128, 256, 64), [128, 128]),
        ((70, 200, 128), [64, 128]),
    ];
    check_chains(
        "chained mma (Hopper, 128 keys per tile)",
        seed,
        &shapes,
        hopper(None),
    );
}

#[test]
fn chained_mmas_on_hopper_copy_mapped_tiles_with_tma_bit_for_bit() {
    let seed = seed("chained_mmas_hopper_tma");
    // As the Hopper chains above, the key and value tensors rank 3 and mappable (a launch's
    // facts), so the tensor memory accelerator copies their tiles: one and two warpgroups,
    // 64 and 128 keys per tile, head dimensions of one and two panels, ragged queries and
    // keys (the boxes' rows past the keys read zeros, as the loads' padding), and loops that
    // run no iteration (their first copies never started, their mbarriers set up and
    // invalidated all the same).
    let shapes: [(ChainShape, ChainTensors); 13] = [
        (((70, 200, 128), [64, 64]), ChainTensors::Mapped),
        (((128, 64, 64), [128, 64]), ChainTensors::Mapped),
        (((64, 256, 128), [64, 128]), ChainTensors::Mapped),
        (((128, 136, 128), [128, 128]), ChainTensors::Mapped),
        // Two warpgroups over five key tiles: buffers refilled by the last warp done.
        (((128, 320, 64), [128, 64]), ChainTensors::Mapped),
        (((40, 72, 64), [64, 64]), ChainTensors::Mapped),
        (((64, 128, 128), [64, 64]), ChainTensors::MappedNoIteration),
        (((128, 128, 64), [128, 64]), ChainTensors::MappedNoIteration),
        // Two loops in a row (two and three key tiles; one and one; two and two).
        (((128, 320, 64), [128, 64]), ChainTensors::MappedTwoLoops),
        (((128, 256, 128), [128, 128]), ChainTensors::MappedTwoLoops),
        (((64, 256, 64), [64, 64]), ChainTensors::MappedTwoLoops),
        // Two blocks, the first returning before the loop (counted buffers, no producer)
        // or after it (a producer).
        (
            ((200, 320, 64), [128, 64]),
            ChainTensors::MappedReturnBefore,
        ),
        (
            ((200, 256, 128), [128, 128]),
            ChainTensors::MappedReturnAfter,
        ),
    ];
    let mut cases = Vec::new();
    for (i, (ty, ((sizes, tiles), tensors))) in [S::F16, S::BF16]
        .into_iter()
        .flat_map(|ty| shapes.iter().map(move |&s| (ty, s)))
        .enumerate()
    {
        let options = hopper(None);
        let q_reshaped = i % 2 == 0;
        let case = chain_case(
            seed + i as u64,
            ty,
            sizes,
            tiles,
            q_reshaped,
            options,
            tensors,
        );
        let lowered = cuprum_tile_lower::lower_with(&case.kernel, &case.options)
            .unwrap_or_else(|e| panic!("{e}"));
        let w = loop_work(&lowered.kernel);
        // Per loop and iteration: kᵀ's and v's next tiles, a box per 64 columns of the head
        // dimension each, no `cp.async`; each product waits for its own tile's mbarrier.
        let loops = tensors.loops() as usize;
        let panels = sizes.2 as usize / 64;
        assert_eq!(
            (w.copies, w.group_waits),
            (0, 0),
            "{ty} {sizes:?} {tiles:?}: {w:?}"
        );
        // Every consumer thread waits for its tiles' full mbarriers, and for nothing else.
        // With two warpgroups a producer warpgroup copies every tile: lane 0 of each
        // consumer warp arrives on a buffer's empty mbarrier once done with it (one
        // arrival statement per release in the loop), the producer waits on it
        // before refilling the buffer (from the third iteration on), and the consumers
        // never meet in the loop; with one, the block meets once an iteration, where thread
        // 0 refills both rings.
        // (A loop that some blocks never reach keeps the warps counting themselves done
        // with a buffer, an atomic add each, the last one refilling it.)
        let several = tiles[0] > 64;
        let produced = several && tensors != ChainTensors::MappedReturnBefore;
        let counted = usize::from(several && !produced) * 2 * loops;
        let (releases, barriers) = if produced {
            (2, 0)
        } else {
            (0, usize::from(!several))
        };
        let (releases, barriers) = (releases * loops, barriers * loops);
        let threads = 32 * (tiles[0] / 16) + if produced { 128 } else { 0 };
        assert_eq!(lowered.block_threads, threads, "{ty} {sizes:?} {tiles:?}");
        let copies = 2 * panels * loops;
        let (consumer_copies, producer_copies) = if produced { (0, copies) } else { (copies, 0) };
        assert_eq!(
            (w.tma_copies, w.producer.tma_copies),
            (consumer_copies, producer_copies),
            "{ty} {sizes:?} {tiles:?}: {w:?}"
        );
        assert_eq!(
            w.mbarrier_waits,
            2 * loops,
            "{ty} {sizes:?} {tiles:?}: {w:?}"
        );
        // The producer: per loop, one wait to start (the consumers set its mbarriers up)
        // and one per ring for the buffer's release.
        let starts = usize::from(produced) * loops;
        assert_eq!(
            w.producer.mbarrier_waits,
            starts + releases,
            "{ty} {sizes:?} {tiles:?}: {w:?}"
        );
        assert_eq!(
            w.mbarrier_arrivals, releases,
            "{ty} {sizes:?} {tiles:?}: {w:?}"
        );
        assert_eq!(w.shared_atomics, counted, "{ty} {sizes:?} {tiles:?}: {w:?}");
        assert_eq!(w.named_barriers, 0, "{ty} {sizes:?} {tiles:?}: {w:?}");
        assert!(w.wgmmas > 0, "{ty} {sizes:?} {tiles:?}: {w:?}");
        assert_eq!(w.barriers, barriers, "{ty} {sizes:?} {tiles:?}: {w:?}");
        // With two warpgroups the second product is deferred: issued in the next
        // iteration after the first, whose wait leaves it in flight; with one (no registers
        // to spare at three blocks per multiprocessor) each product is waited for at once.
        let deferred = usize::from(tiles[0] > 64) * loops;
        assert_eq!(w.partial_waits, deferred, "{ty} {sizes:?} {tiles:?}: {w:?}");
        // A deferred product carries one `B` descriptor to the next iteration; the others
        // (one per 16 of K) are made from it where it is issued.
        assert_eq!(
            w.u64_var_writes, deferred,
            "{ty} {sizes:?} {tiles:?}: {w:?}"
        );
        cases.push(case);
    }
    check_all("chained mma (Hopper, tensor memory accelerator)", &cases);
}

#[test]
fn chained_mmas_through_a_masking_branch_keep_wgmma_and_registers() {
    let seed = seed("chained_mmas_masking_branch");
    // Causal attention written as one loop: the scores pass through a branch that masks
    // them on some iterations. The chain is still one (the branch's result reaches the
    // second product), so on Hopper both products take `wgmma` with row-only warp grids,
    // the probabilities the second one's `A` in registers; one and two warpgroups, ragged
    // keys, bit for bit against the interpreter.
    let shapes: [ChainShape; 3] = [
        ((64, 200, 128), [64, 64]),
        ((128, 136, 64), [128, 64]),
        ((70, 256, 64), [64, 128]),
    ];
    let mut cases = Vec::new();
    for (i, (ty, (sizes, tiles))) in [S::F16, S::BF16]
        .into_iter()
        .flat_map(|ty| shapes.iter().map(move |&s| (ty, s)))
        .enumerate()
    {
        let case = chain_case(
            seed + i as u64,
            ty,
            sizes,
            tiles,
            i % 2 == 0,
            hopper(None),
            ChainTensors::MappedMaskedBranch,
        );
        let lowered = cuprum_tile_lower::lower_with(&case.kernel, &case.options)
            .unwrap_or_else(|e| panic!("{e}"));
        let w = loop_work(&lowered.kernel);
        assert!(w.wgmmas > 0, "{ty} {sizes:?} {tiles:?}: {w:?}");
        assert!(w.register_a_wgmmas > 0, "{ty} {sizes:?} {tiles:?}: {w:?}");
        assert_eq!(w.ldmatrices, 0, "{ty} {sizes:?} {tiles:?}: {w:?}");
        // The mask the branch makes is compared per register in the scores' layout.
        assert_eq!(w.shared_other_stores, 0, "{ty} {sizes:?} {tiles:?}: {w:?}");
        cases.push(case);
    }
    check_all("chained mma through a masking branch (Hopper)", &cases);
}

/// What the loop of a lowered kernel does per iteration: block barriers, `cp.async` copies
/// and shared-memory stores of `f32` values (the one loop of a chain case).
#[derive(Debug, Default)]
struct LoopWork {
    /// What the producer warpgroup's loops do (`emit::producer`); the rest counts the
    /// consumers' (or every thread's, without a producer).
    producer: ProducerWork,
    /// Named barriers in the consumers' loops.
    named_barriers: usize,
    barriers: usize,
    copies: usize,
    shared_f32_stores: usize,
    wgmmas: usize,
    ldmatrices: usize,
    /// The loop's `wgmma`s that read `A` from registers.
    register_a_wgmmas: usize,
    group_waits: usize,
    full_waits: usize,
    /// The tensor memory accelerator's tile copies, and mbarrier waits.
    tma_copies: usize,
    mbarrier_waits: usize,
    /// Plain mbarrier arrivals.
    mbarrier_arrivals: usize,
    /// Atomics on shared memory (a warp counting itself done with a ring's buffer).
    shared_atomics: usize,
    /// `wgmma` waits that leave a group in flight (a product deferred to the next
    /// iteration, issued after that iteration's first: `emit::deferred`).
    partial_waits: usize,
    /// Accumulator variables of the loop's `wgmma`s that are also read after the loop: the
    /// loop's own carried variables, accumulated in place.
    carried_accumulators: usize,
    /// Writes of 64-bit variables (a deferred product's carried `B` descriptor).
    u64_var_writes: usize,
    /// Shared-memory stores in the loop of neither `f32` nor 16-bit values (the operands a
    /// product stages through registers at a ragged edge are 16-bit): a mask moved between
    /// layouts.
    shared_other_stores: usize,
    /// Waits for every `cp.async` before the first loop (a resident tile copied straight
    /// from global memory, waited for once, before the loop).
    full_waits_before: usize,
}

/// The producer warpgroup's work (its code runs its loops alone).
#[derive(Debug, Default)]
struct ProducerWork {
    tma_copies: usize,
    mbarrier_waits: usize,
}

fn loop_work(kernel: &cuprum_ir::Kernel) -> LoopWork {
    use std::collections::HashSet;
    #[derive(Default)]
    struct Vars {
        accumulators: HashSet<cuprum_ir::Var>,
        read_outside: HashSet<cuprum_ir::Var>,
        /// Whether a loop has been met (statements are visited in order).
        looped: bool,
    }
    fn visit(
        b: &cuprum_ir::Block,
        k: &cuprum_ir::Kernel,
        in_loop: bool,
        w: &mut LoopWork,
        vars: &mut Vars,
    ) {
        for s in &b.stmts {
            match s {
                cuprum_ir::Stmt::Loop { body } => {
                    vars.looped = true;
                    visit(body, k, true, w, vars)
                }
                // The producer warpgroup's branch: it gives registers back first.
                cuprum_ir::Stmt::If { then, .. }
                    if matches!(
                        then.stmts.first(),
                        Some(cuprum_ir::Stmt::SetMaxNreg {
                            increase: false,
                            ..
                        })
                    ) =>
                {
                    then.visit(&mut |s| match s {
                        cuprum_ir::Stmt::Tma(cuprum_ir::TmaOp::LoadTile { .. }) => {
                            w.producer.tma_copies += 1
                        }
                        cuprum_ir::Stmt::Mbarrier {
                            op: cuprum_ir::MbarrierOp::WaitParity,
                            ..
                        } => w.producer.mbarrier_waits += 1,
                        _ => {}
                    });
                }
                cuprum_ir::Stmt::If {
                    then, otherwise, ..
                } => {
                    visit(then, k, in_loop, w, vars);
                    visit(otherwise, k, in_loop, w, vars);
                }
                cuprum_ir::Stmt::WgmmaMma(m) if in_loop => {
                    w.wgmmas += 1;
                    if matches!(m.a, cuprum_ir::wgmma::WgmmaA::Registers(_)) {
                        w.register_a_wgmmas += 1;
                    }
                    vars.accumulators.extend(m.acc.iter().copied());
                }
                cuprum_ir::Stmt::Def {
                    op: cuprum_ir::Op::ReadVar(v),
                    ..
                } if !in_loop => {
                    vars.read_outside.insert(*v);
                }
                cuprum_ir::Stmt::WriteVar { value, .. }
                    if in_loop && k.values[*value].ty == S::U64 =>
                {
                    w.u64_var_writes += 1
                }
                cuprum_ir::Stmt::Barrier if in_loop => w.barriers += 1,
                cuprum_ir::Stmt::NamedBarrier { .. } if in_loop => w.named_barriers += 1,
                cuprum_ir::Stmt::CpAsync { .. } if in_loop => w.copies += 1,
                cuprum_ir::Stmt::CpAsyncWaitGroup { .. } if in_loop => w.group_waits += 1,
                cuprum_ir::Stmt::CpAsyncWaitAll if in_loop => w.full_waits += 1,
                cuprum_ir::Stmt::CpAsyncWaitAll if !vars.looped => w.full_waits_before += 1,
                cuprum_ir::Stmt::Tma(cuprum_ir::TmaOp::LoadTile { .. }) if in_loop => {
                    w.tma_copies += 1
                }
                cuprum_ir::Stmt::Mbarrier {
                    op: cuprum_ir::MbarrierOp::WaitParity,
                    ..
                } if in_loop => w.mbarrier_waits += 1,
                cuprum_ir::Stmt::Mbarrier {
                    op: cuprum_ir::MbarrierOp::Arrive,
                    ..
                } if in_loop => w.mbarrier_arrivals += 1,
                cuprum_ir::Stmt::LdMatrix { .. } if in_loop => w.ldmatrices += 1,
                cuprum_ir::Stmt::Def {
                    op:
                        cuprum_ir::Op::Atomic {
                            space: cuprum_ir::AddressSpace::Shared,
                            ..
                        },
                    ..
                } if in_loop => w.shared_atomics += 1,
                cuprum_ir::Stmt::WgmmaWait { pending } if in_loop && *pending > 0 => {
                    w.partial_waits += 1
                }
                cuprum_ir::Stmt::Store {
                    space: cuprum_ir::AddressSpace::Shared,
                    value,
                    ..
                } if in_loop && k.values[*value].ty == S::F32 => w.shared_f32_stores += 1,
                cuprum_ir::Stmt::Store {
                    space: cuprum_ir::AddressSpace::Shared,
                    value,
                    ..
                } if in_loop && k.values[*value].ty.size_bytes() != 2 => w.shared_other_stores += 1,
                _ => {}
            }
        }
    }
    let mut w = LoopWork::default();
    let mut vars = Vars::default();
    visit(&kernel.body, kernel, false, &mut w, &mut vars);
    w.carried_accumulators = vars.accumulators.intersection(&vars.read_outside).count();
    w
}

#[test]
fn chained_mmas_keep_their_rows_in_registers() {
    // Attention's loop, lowered: the scores, the probabilities and the row statistics never
    // cross warps through shared memory (row-only warp grids, broadcasts in place), the key
    // and value tiles reach shared memory by `cp.async` (staged loads), and the loop meets
    // the block at no more barriers than those two stagings need.
    for (sizes, tiles) in [((128, 256, 64), [128, 64]), ((64, 96, 32), [64, 32])] {
        let work = |q_reshaped| {
            let options = LowerOptions::default();
            let case = chain_case(
                1,
                S::F16,
                sizes,
                tiles,
                q_reshaped,
                options,
                ChainTensors::Any,
            );
            let lowered = cuprum_tile_lower::lower_with(&case.kernel, &case.options)
                .unwrap_or_else(|e| panic!("{e}"));
            loop_work(&lowered.kernel)
        };
        let w = work(false);
        assert_eq!(w.shared_f32_stores, 0, "{sizes:?} {tiles:?}: {w:?}");
        assert!(w.copies > 0, "{sizes:?} {tiles:?}: {w:?}");
        assert!(w.barriers <= 3, "{sizes:?} {tiles:?}: {w:?}");
        // The loop-invariant q is put in fragments once, reshaped or not: the loop copies
        // only k and v.
        let reshaped = work(true);
        assert_eq!(
            reshaped.copies, w.copies,
            "{sizes:?} {tiles:?}: {reshaped:?}"
        );
    }
}

#[test]
fn chained_mmas_on_hopper_take_wgmma_where_warps_are_warpgroups() {
    // Four or eight warps of 16 rows each: both products are `wgmma`s (kᵀ and v read from
    // swizzled shared memory, copied an iteration ahead, p from registers), one per 16 of K,
    // and nothing is read with `ldmatrix`; two warps keep `mma.sync`. The loop-invariant q
    // is read from registers (fragments packed before the loop) by products of 64 keys, and
    // from a swizzled tile of its own, written once before the loop, by products of 128
    // keys or of the other product's N (which came out wrong on the H100 with q in
    // registers). `want`: the loop's
    // `wgmma`s, and those reading `A` from registers.
    for (sizes, tiles, want) in [
        (
            (70, 200, 128),
            [64, 64],
            Some((128 / 16 + 64 / 16, 128 / 16 + 64 / 16)),
        ),
        // 64 keys per tile and head dimension 64: both products' N is 64, so q is resident
        // too (with both in registers the H100 computed wrong results).
        ((128, 64, 64), [128, 64], Some((64 / 16 + 64 / 16, 64 / 16))),
        (
            (64, 256, 128),
            [64, 128],
            Some((128 / 16 + 128 / 16, 128 / 16)),
        ),
        (
            (128, 256, 128),
            [128, 128],
            Some((128 / 16 + 128 / 16, 128 / 16)),
        ),
        ((40, 50, 16), [32, 16], None),
        // Rows of 32 elements: no 128-byte panels, so `mma.sync`.
        ((64, 96, 32), [64, 32], None),
    ] {
        let case = chain_case(
            1,
            S::F16,
            sizes,
            tiles,
            true,
            hopper(None),
            ChainTensors::Any,
        );
        let lowered = cuprum_tile_lower::lower_with(&case.kernel, &case.options)
            .unwrap_or_else(|e| panic!("{e}"));
        let w = loop_work(&lowered.kernel);
        match want {
            Some((n, register_a)) => {
                assert_eq!(w.wgmmas, n, "{sizes:?} {tiles:?}: {w:?}");
                assert_eq!(
                    w.register_a_wgmmas, register_a,
                    "{sizes:?} {tiles:?}: {w:?}"
                );
                assert_eq!(w.ldmatrices, 0, "{sizes:?} {tiles:?}: {w:?}");
                // A resident q is copied from global memory into its tile (`cp.async`,
                // not through registers) and waited for once, before the loop.
                assert_eq!(
                    w.full_waits_before,
                    usize::from(register_a < n),
                    "{sizes:?} {tiles:?}: {w:?}"
                );
                // kᵀ and v each come from a two-buffer ring: each mma waits for its own
                // copy from an iteration ago, never for all copies.
                assert_eq!(w.group_waits, 2, "{sizes:?} {tiles:?}: {w:?}");
                assert_eq!(w.full_waits, 0, "{sizes:?} {tiles:?}: {w:?}");
                // The output's accumulator (head dimension / 2 registers a thread) is the
                // loop's own variables, accumulated in place: no copies in and out of the
                // wgmma's registers every iteration.
                assert_eq!(
                    w.carried_accumulators,
                    sizes.2 as usize / 2,
                    "{sizes:?} {tiles:?}: {w:?}"
                );
            }
            None => assert_eq!(w.wgmmas, 0, "{sizes:?} {tiles:?}: {w:?}"),
        }
        assert_eq!(w.shared_f32_stores, 0, "{sizes:?} {tiles:?}: {w:?}");
        assert!(w.barriers <= 3, "{sizes:?} {tiles:?}: {w:?}");
    }
}
// CUPRUM_DEVICE=cuda <bin> chain_bisect --ignored --nocapture.

/// `0..n` as `i32`, reshaped to `shape` (a row or a column of indices).
fn iota_as(cb: &mut CaseBuilder, n: u32, shape: [u32; 2]) -> TileValue {
    let line = def(
        cb,
        Op::Iota {
            elem: Elem::Known(S::I32),
            shape: shape_of(&[n]),
            axis: 0,
        },
    );
    def(
        cb,
        Op::Reshape {
            value: line,
            shape: shape_of(&shape),
        },
    )
}

/// Scalar `value` broadcast to a tile of `shape`, through a `[1, 1]` reshape.
fn scalar_as(cb: &mut CaseBuilder, value: TileValue, shape: [u32; 2]) -> TileValue {
    let unit = def(
        cb,
        Op::Reshape {
            value,
            shape: shape_of(&[1, 1]),
        },
    );
    broadcast(cb, unit, shape)
}

/// `rows + shift >= cols` over a `[tm, tn]` tile: a row and a column iota made in one axis,
/// reshaped and broadcast, and `shift` (an `i32` scalar) broadcast, as a causal mask is.
fn causal_mask(cb: &mut CaseBuilder, shift: TileValue, [tm, tn]: [u32; 2]) -> TileValue {
    let rows = iota_as(cb, tm, [tm, 1]);
    let rows = broadcast(cb, rows, [tm, tn]);
    let cols = iota_as(cb, tn, [1, tn]);
    let cols = broadcast(cb, cols, [tm, tn]);
    let shift = scalar_as(cb, shift, [tm, tn]);
    let shifted = def(cb, Op::Binary(cuprum_ir::BinaryOp::Add, rows, shift));
    def(cb, Op::Compare(cuprum_ir::CmpOp::Ge, shifted, cols))
}

/// `rows + shift >= cols` over a `[tm, tn]` tile as attention's causal kernel makes it:
/// the row indices a `[tm, 1]` column (an iota reshaped, plus `shift` broadcast), broadcast
/// to the tile and compared with a row of column indices broadcast.
fn causal_mask_by_rows(cb: &mut CaseBuilder, shift: TileValue, [tm, tn]: [u32; 2]) -> TileValue {
    let column = iota_as(cb, tm, [tm, 1]);
    let shift = scalar_as(cb, shift, [tm, 1]);
    let rows = def(cb, Op::Binary(cuprum_ir::BinaryOp::Add, shift, column));
    let rows = broadcast(cb, rows, [tm, tn]);
    let cols = iota_as(cb, tn, [1, tn]);
    let cols = broadcast(cb, cols, [tm, tn]);
    def(cb, Op::Compare(cuprum_ir::CmpOp::Ge, rows, cols))
}

/// The mask the loop of [`masked_product_case`] makes, at step `k`.
#[derive(Clone, Copy, Debug)]
enum LoopMask {
    /// `rows + k >= cols`, its indices made `[tm, tn]` first ([`causal_mask`]).
    Step,
    /// `rows + k + shift >= cols` made as attention's causal mask is
    /// ([`causal_mask_by_rows`]); `shift` (an `i32`, added with wrapping) puts the row
    /// indices where they wrap.
    ByRows(i64),
    /// `cols < k + shift`: a bound, the uniform value on the comparison's right.
    Bound(i64),
}

/// Masks meeting `mma` results, the product of `input_ty` tiles into `f32`: inside the K
/// loop, each step's product kept only where `rows + step >= cols` (a mask a loop makes,
/// compared per register in the product's layout), and after it the whole product kept
/// where `rows + row_tile - col_tile >= cols`, else `-1` (a mask made outside loops,
/// recomputed per register in the layout its `select` reads). The loop's mask can also be
/// another ([`LoopMask`]).
fn masked_product_case(
    seed: u64,
    input_ty: ScalarType,
    s: Sizes,
    options: LowerOptions,
    mask: LoopMask,
) -> Case {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut name = format!(
        "masked_mma_{input_ty}_{}x{}x{}_tiles{}x{}x{}_sm{}",
        s.m,
        s.n,
        s.k,
        s.tm,
        s.tn,
        s.tk,
        options
            .compute_capability
            .map_or(80, |(major, minor)| major * 10 + minor)
    );
    match mask {
        LoopMask::Step => {}
        LoopMask::ByRows(shift) => name += &format!("_rows{}", shift as i32 as u32),
        LoopMask::Bound(shift) => name += &format!("_bound{}", shift as i32 as u32),
    }
    let mut cb = CaseBuilder::new(name, seed, poison::BYTE);
    let out = cb.output(
        &mut rng,
        "out",
        S::F32,
        &[s.tm, s.tn],
        &[s.m, s.n],
        ViewKind::Contiguous,
    );
    let a = input(&mut cb, &mut rng, "a", input_ty, &[s.m, s.k]);
    let b = input(&mut cb, &mut rng, "b", input_ty, &[s.k, s.n]);
    let (mi, ni) = (def(&mut cb, Op::BlockId(0)), def(&mut cb, Op::BlockId(1)));
    let acc0 = def(
        &mut cb,
        Op::Const {
            value: Literal::Float(0.0),
            elem: Elem::Known(S::F32),
            shape: shape_of(&[s.tm, s.tn]),
        },
    );
    let steps = s.k.div_ceil(u64::from(s.tk)) as i64;
    let bounds = [int(&mut cb, 0), int(&mut cb, steps), int(&mut cb, 1)];
    let product = k_loop_keeping(
        &mut cb,
        bounds,
        acc0,
        ([(a, vec![s.tm, s.tk]), (b, vec![s.tk, s.tn])], None),
        |counter| (vec![mi, counter], vec![counter, ni]),
        |cb, counter, next, acc| {
            let shifted = |cb: &mut CaseBuilder, shift: i64| {
                let shift = int(cb, shift);
                def(cb, Op::Binary(cuprum_ir::BinaryOp::Add, counter, shift))
            };
            let seen = match mask {
                LoopMask::Step => causal_mask(cb, counter, [s.tm, s.tn]),
                LoopMask::ByRows(shift) => {
                    let shift = shifted(cb, shift);
                    causal_mask_by_rows(cb, shift, [s.tm, s.tn])
                }
                LoopMask::Bound(shift) => {
                    let bound = shifted(cb, shift);
                    let bound = scalar_as(cb, bound, [s.tm, s.tn]);
                    let cols = iota_as(cb, s.tn, [1, s.tn]);
                    let cols = broadcast(cb, cols, [s.tm, s.tn]);
                    def(cb, Op::Compare(cuprum_ir::CmpOp::Lt, cols, bound))
                }
            };
            def(
                cb,
                Op::Select {
                    cond: seen,
                    if_true: next,
                    if_false: acc,
                },
            )
        },
    );
    let diagonal = def(&mut cb, Op::Binary(cuprum_ir::BinaryOp::Sub, mi, ni));
    let seen = causal_mask(&mut cb, diagonal, [s.tm, s.tn]);
    let hidden = def(
        &mut cb,
        Op::Const {
            value: Literal::Float(-1.0),
            elem: Elem::Known(S::F32),
            shape: shape_of(&[s.tm, s.tn]),
        },
    );
    let masked = def(
        &mut cb,
        Op::Select {
            cond: seen,
            if_true: product,
            if_false: hidden,
        },
    );
    cb.b.push(Stmt::Store {
        tensor: out,
        value: masked,
    });
    cb.finish(Tolerance::Exact, options)
        .unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn masks_of_iotas_meet_mma_results_in_their_layout() {
    let seed = seed("masked_mma");
    let sizes = [
        sizes(0, 70, 45, 100, 32, 32, 32),
        sizes(0, 128, 128, 192, 64, 64, 64),
    ];
    let mut cases = Vec::new();
    for (i, s) in sizes.iter().enumerate() {
        for (j, options) in [LowerOptions::default(), hopper(Some(4))]
            .into_iter()
            .enumerate()
        {
            let ty = if j == 0 { S::F16 } else { S::BF16 };
            cases.push(masked_product_case(
                seed + (i * 2 + j) as u64,
                ty,
                *s,
                options,
                LoopMask::Step,
            ));
        }
    }
    check_all("masked mma", &cases);
}

#[test]
fn masks_a_loop_makes_compare_per_register_even_where_indices_wrap() {
    let seed = seed("masked_mma_wrapping");
    // The loop's mask `rows + step + shift >= cols` with the row indices past `i32::MAX`
    // (wrapping to the most negative values) and at the most negative ones, and a bound
    // `cols < step + shift` near the most negative value and within the tile: the lowering
    // compares each register against an immediate after a saturating subtraction, which
    // must give the interpreter's bits here too; and nothing but the product's operands
    // crosses shared memory in the loop.
    let s = sizes(0, 128, 128, 192, 64, 64, 64);
    let mut cases = Vec::new();
    let masks = [
        LoopMask::ByRows(i64::from(i32::MAX) - 40),
        LoopMask::ByRows(i64::from(i32::MIN)),
        LoopMask::Bound(i64::from(i32::MIN) + 40),
        LoopMask::Bound(5),
    ];
    for (i, mask) in masks.into_iter().enumerate() {
        for (j, options) in [LowerOptions::default(), hopper(Some(4))]
            .into_iter()
            .enumerate()
        {
            let case = masked_product_case(seed + (i * 2 + j) as u64, S::F16, s, options, mask);
            let lowered = cuprum_tile_lower::lower_with(&case.kernel, &case.options)
                .unwrap_or_else(|e| panic!("{e}"));
            let w = loop_work(&lowered.kernel);
            assert_eq!(w.shared_other_stores, 0, "{mask:?}: {w:?}");
            cases.push(case);
        }
    }
    check_all("masked mma (wrapping indices)", &cases);
}
