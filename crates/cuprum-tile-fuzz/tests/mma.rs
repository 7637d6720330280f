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
/// `[tm, tn]` of the output and `tk` of the K steps.
#[derive(Clone, Copy, Debug)]
struct Sizes {
    batch: u32,
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
        m,
        n,
        k,
        tm,
        tn,
        tk,
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
    let mut t = random_tensor(rng, ty, shape, ViewKind::Any);
    for i in 0..t.len() as usize {
        let bits = value_bits(rng, ty);
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

/// `out = acc + a · b` over the whole K, K in steps of `tk`, as a tile kernel and its launch.
fn gemm_case(seed: u64, input_ty: ScalarType, acc_ty: ScalarType, s: Sizes) -> Case {
    let mut rng = SmallRng::seed_from_u64(seed);
    let name = format!("mma_{input_ty}_b{}_{}x{}x{}", s.batch, s.m, s.n, s.k);
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
        let mut out = if batched { vec![1] } else { vec![] };
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
    let a = input(&mut cb, &mut rng, "a", input_ty, &lead(&[s.m, s.k]));
    let b = input(&mut cb, &mut rng, "b", input_ty, &lead(&[s.k, s.n]));
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
    let index = |cb: &mut CaseBuilder, rest: [TileValue; 2]| -> Vec<TileValue> {
        let _ = cb;
        bi.into_iter().chain(rest).collect()
    };
    let zero = Literal::Int(0);
    let acc_index = index(&mut cb, [mi, ni]);
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
    let (start, end, step) = (int(&mut cb, 0), int(&mut cb, steps), int(&mut cb, 1));
    let counter = cb.b.value(TileType::scalar(S::I32));
    let acc_ty_tile = cb.b.ty(acc0).clone();
    let acc = cb.b.value(acc_ty_tile.clone());
    let result = cb.b.value(acc_ty_tile);
    cb.b.begin_block();
    let ai = index(&mut cb, [mi, counter]);
    let ta = def(
        &mut cb,
        Op::Load {
            view: View::Tiled {
                tensor: a,
                tile: shape_of(&tile(&[s.tm, s.tk])),
                index: ai,
            },
            padding: zero,
        },
    );
    let bix = index(&mut cb, [counter, ni]);
    let tb = def(
        &mut cb,
        Op::Load {
            view: View::Tiled {
                tensor: b,
                tile: shape_of(&tile(&[s.tk, s.tn])),
                index: bix,
            },
            padding: zero,
        },
    );
    let next = def(&mut cb, Op::Mma { a: ta, b: tb, acc });
    let body = cb.b.end_block(vec![next]);
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
    cb.finish(Tolerance::Exact, LowerOptions::default())
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
    let cases: Vec<Case> = [S::F16, S::BF16]
        .into_iter()
        .flat_map(|ty| sizes.iter().map(move |&s| (ty, s)))
        .enumerate()
        .map(|(i, (ty, s))| gemm_case(seed + i as u64, ty, S::F32, s))
        .collect();
    check_all("tensor-core mma", &cases);
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
        .map(|(i, (ty, s))| gemm_case(seed + i as u64, ty, ty, s))
        .collect();
    check_all("fma-chain mma", &cases);
}
