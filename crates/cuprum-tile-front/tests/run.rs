//! Compiled kernels run on the tile interpreter (the tile IR's executable definition) and
//! give what plain Rust computes, on fresh random inputs (the seed is printed), outputs
//! poisoned first and every element checked.

mod common;

use common::sources::{ADD, LAYER_NORM, RMS_NORM, SAXPY, SOFTMAX};
use common::*;
use cuprum_testkit::random::{random, rng};
use cuprum_tile_interp::{Arg, TensorArg};
use cuprum_tile_ir::ScalarType;
use half::f16;
use rand::Rng;

fn read<'a, T: El>(shape: &[u64], b: &'a [u8]) -> Arg<'a> {
    Arg::Tensor(TensorArg::read(T::TY, shape, b))
}

fn write<'a, T: El>(shape: &[u64], b: &'a mut [u8]) -> Arg<'a> {
    Arg::Tensor(TensorArg::write(T::TY, shape, b))
}

fn scalar_f32(v: f32) -> Arg<'static> {
    Arg::Scalar(cuprum_ir::Constant::f32(v))
}

fn scalar_i32(v: i32) -> Arg<'static> {
    Arg::Scalar(cuprum_ir::Constant::i32(v))
}

#[test]
fn add_scale_and_saxpy_match_plain_rust_on_ragged_shapes() {
    let (m, saxpy_module) = (compile(ADD), compile(SAXPY));
    let mut r = rng("add_scale_and_saxpy_match_plain_rust_on_ragged_shapes");
    for _ in 0..4 {
        let n = r.random_range(1..3000usize);
        let tile = [32i64, 128, 256][r.random_range(0..3)];
        let x: Vec<f32> = random(&mut r, n, -100.0, 100.0);
        let y: Vec<f32> = random(&mut r, n, -100.0, 100.0);
        let (xb, yb) = (bytes(&x), bytes(&y));
        let shape = [n as u64];

        let k = specialized(&m, "add", &[tile], &[]);
        let mut z = poison::<f32>(n);
        launch(
            &k,
            &mut [
                write::<f32>(&shape, &mut z),
                read::<f32>(&shape, &xb),
                read::<f32>(&shape, &yb),
            ],
        );
        let want: Vec<f32> = x.iter().zip(&y).map(|(a, b)| a + b).collect();
        cuprum_testkit::compare::assert_bits_eq("add", &values::<f32>(&z), &want);

        let k = specialized(&m, "scale", &[tile], &[]);
        let mut out = poison::<f32>(n);
        launch(
            &k,
            &mut [write::<f32>(&shape, &mut out), read::<f32>(&shape, &xb)],
        );
        let want: Vec<f32> = x.iter().map(|a| a * 2.0).collect();
        cuprum_testkit::compare::assert_bits_eq("scale", &values::<f32>(&out), &want);

        let (rows, cols) = (r.random_range(1..40usize), r.random_range(1..70usize));
        let a: f32 = r.random_range(-4.0..4.0);
        let x: Vec<f32> = random(&mut r, rows * cols, -10.0, 10.0);
        let y: Vec<f32> = random(&mut r, rows * cols, -10.0, 10.0);
        let k = specialized(&saxpy_module, "saxpy", &[8, 16], &[]);
        let (xb, mut yb) = (bytes(&x), bytes(&y));
        let shape = [rows as u64, cols as u64];
        launch(
            &k,
            &mut [
                write::<f32>(&shape, &mut yb),
                scalar_f32(a),
                read::<f32>(&shape, &xb),
            ],
        );
        let want: Vec<f32> = x.iter().zip(&y).map(|(x, y)| a * x + y).collect();
        cuprum_testkit::compare::assert_bits_eq("saxpy", &values::<f32>(&yb), &want);
    }
}

#[test]
fn softmax_rms_norm_and_layer_norm_match_plain_rust() {
    let (softmax, rms_norm, layer_norm) =
        (compile(SOFTMAX), compile(RMS_NORM), compile(LAYER_NORM));
    let mut r = rng("softmax_rms_norm_and_layer_norm_match_plain_rust");

    // softmax: whole rows per tile, a ragged last block of rows.
    let (rows, bm, bn) = (r.random_range(1..50usize), 4usize, 32usize);
    let x: Vec<f32> = random(&mut r, rows * bn, -5.0, 5.0);
    let k = specialized(&softmax, "softmax", &[bm as i64, bn as i64], &[]);
    let (xb, mut yb) = (bytes(&x), poison::<f32>(rows * bn));
    let shape = [rows as u64, bn as u64];
    launch(
        &k,
        &mut [write::<f32>(&shape, &mut yb), read::<f32>(&shape, &xb)],
    );
    let mut want = Vec::with_capacity(x.len());
    for row in x.chunks(bn) {
        let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let e: Vec<f32> = row.iter().map(|v| (v - max).exp()).collect();
        let sum: f32 = e.iter().sum();
        want.extend(e.iter().map(|v| v / sum));
    }
    assert_close("softmax", &values::<f32>(&yb), &want, 1e-6);

    // rms_norm: one block per row.
    let (rows, n, block) = (r.random_range(1..20usize), 64usize, 16usize);
    let eps = 1e-6f32;
    let x: Vec<f32> = random(&mut r, rows * n, -3.0, 3.0);
    let w: Vec<f32> = random(&mut r, n, -2.0, 2.0);
    let k = specialized(&rms_norm, "rms_norm", &[n as i64, block as i64], &[]);
    let (xb, wb, mut ob) = (bytes(&x), bytes(&w), poison::<f32>(rows * n));
    launch(
        &k,
        &mut [
            read::<f32>(&[rows as u64, n as u64], &xb),
            read::<f32>(&[n as u64], &wb),
            write::<f32>(&[rows as u64, n as u64], &mut ob),
            scalar_f32(eps),
        ],
    );
    let mut want = Vec::with_capacity(x.len());
    for row in x.chunks(n) {
        let mut lanes = vec![0.0f32; block];
        for chunk in row.chunks(block) {
            for (l, v) in lanes.iter_mut().zip(chunk) {
                *l += v * v;
            }
        }
        let ss: f32 = lanes.iter().sum();
        let scale = (1.0 / (ss / n as f32 + eps)).sqrt();
        want.extend(row.iter().zip(&w).map(|(v, w)| v * scale * w));
    }
    assert_close("rms_norm", &values::<f32>(&ob), &want, 1e-5);

    // layer_norm in f16, with a row length the tiles do not divide.
    let (rows, n, block) = (r.random_range(1..12usize), 100usize, 32usize);
    let x: Vec<f16> = random::<f32>(&mut r, rows * n, -4.0, 4.0)
        .into_iter()
        .map(f16::from_f32)
        .collect();
    let w: Vec<f16> = random::<f32>(&mut r, n, 0.5, 2.0)
        .into_iter()
        .map(f16::from_f32)
        .collect();
    let b: Vec<f16> = random::<f32>(&mut r, n, -1.0, 1.0)
        .into_iter()
        .map(f16::from_f32)
        .collect();
    let k = specialized(&layer_norm, "layer_norm", &[n as i64, block as i64], &[]);
    let (xb, wb, bb, mut ob) = (bytes(&x), bytes(&w), bytes(&b), poison::<f16>(rows * n));
    launch(
        &k,
        &mut [
            read::<f16>(&[rows as u64, n as u64], &xb),
            read::<f16>(&[n as u64], &wb),
            read::<f16>(&[n as u64], &bb),
            write::<f16>(&[rows as u64, n as u64], &mut ob),
        ],
    );
    let mut want = Vec::with_capacity(x.len());
    for row in x.chunks(n) {
        let v: Vec<f32> = row.iter().map(|h| h.to_f32()).collect();
        let mean = v.iter().sum::<f32>() / n as f32;
        let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f32>() / n as f32;
        let inv = 1.0 / (var + 1e-5).sqrt();
        want.extend(
            v.iter()
                .zip(w.iter().zip(&b))
                .map(|(x, (w, b))| (x - mean) * inv * w.to_f32() + b.to_f32()),
        );
    }
    let got: Vec<f32> = values::<f16>(&ob).iter().map(|h| h.to_f32()).collect();
    // f16 outputs: within a few units in the last place of f16 (sums in another order).
    assert_close("layer_norm", &got, &want, 4e-3);
}

const FLOW: &str = r#"
mod flow {
    use cuprum::tile::core::*;

    fn collatz_steps(start: i32) -> i32 {
        let mut x = start;
        let mut steps = 0;
        while x != 1 {
            x = if x % 2 == 0 { x / 2 } else { 3 * x + 1 };
            steps += 1;
        }
        steps
    }

    #[cuprum::tile::entry()]
    fn flow<const B: i32>(out: &mut Tensor<i32, { [B] }>, n: i32, stop: i32) {
        if n < 0 {
            out.store(constant(-7, out.shape()));
            return;
        }
        let mut acc = 0;
        let mut odd = 0;
        for i in 0..n {
            if i == stop {
                break;
            }
            if i % 3 == 0 {
                continue;
            }
            acc = acc + i;
            if i % 2 == 1 {
                odd += 1;
            } else if i % 5 == 0 {
                odd -= 2;
            }
        }
        let mut k = 0i32;
        while k * k < acc {
            k += 1;
        }
        let mut m = acc;
        loop {
            if m < 10 {
                break;
            }
            m = m / 3;
        }
        let mut ladder = 0;
        for j in (1..=n).step_by(4) {
            ladder = ladder + j;
        }
        let sign = if acc > 100 { 1 } else { -1 };
        let steps = collatz_steps(n + 1);
        let base: Tile<i32, { [B] }> = iota(out.shape());
        out.store(base * sign + (acc * 1000 + odd * 100 + k * 10 + m + ladder * 7 + steps));
    }
}
"#;

/// What `flow` computes for one element, in plain Rust.
fn flow_reference(n: i32, stop: i32, index: i32) -> i32 {
    if n < 0 {
        return -7;
    }
    let (mut acc, mut odd) = (0i32, 0i32);
    for i in 0..n {
        if i == stop {
            break;
        }
        if i % 3 == 0 {
            continue;
        }
        acc += i;
        if i % 2 == 1 {
            odd += 1;
        } else if i % 5 == 0 {
            odd -= 2;
        }
    }
    let mut k = 0;
    while k * k < acc {
        k += 1;
    }
    let mut m = acc;
    while m >= 10 {
        m /= 3;
    }
    let ladder: i32 = (1..=n).step_by(4).sum();
    let sign = if acc > 100 { 1 } else { -1 };
    let (mut x, mut steps) = (n + 1, 0);
    while x != 1 {
        x = if x % 2 == 0 { x / 2 } else { 3 * x + 1 };
        steps += 1;
    }
    index * sign + (acc * 1000 + odd * 100 + k * 10 + m + ladder * 7 + steps)
}

#[test]
fn control_flow_carries_variables_as_rust_does() {
    let m = compile(FLOW);
    let k = specialized(&m, "flow", &[16], &[]);
    let mut r = rng("control_flow_carries_variables_as_rust_does");
    let mut cases: Vec<(i32, i32)> = vec![(-3, 0), (0, 0), (1, 5), (40, 1000), (40, 17)];
    for _ in 0..20 {
        cases.push((r.random_range(-2..120), r.random_range(0..150)));
    }
    for (n, stop) in cases {
        let mut out = poison::<i32>(16);
        launch(
            &k,
            &mut [
                write::<i32>(&[16], &mut out),
                scalar_i32(n),
                scalar_i32(stop),
            ],
        );
        let want: Vec<i32> = (0..16).map(|i| flow_reference(n, stop, i)).collect();
        cuprum_testkit::compare::assert_same(
            &format!("flow({n}, {stop})"),
            &values::<i32>(&out),
            &want,
        );
    }
}

const MATH: &str = r#"
mod math {
    use cuprum::tile::core::*;

    #[cuprum::tile::entry()]
    fn composed<const B: i32>(
        tan_out: &mut Tensor<f32, { [B] }>,
        sinh_out: &mut Tensor<f32, { [B] }>,
        cosh_out: &mut Tensor<f32, { [B] }>,
        rsqrt_out: &mut Tensor<f32, { [B] }>,
        pow_out: &mut Tensor<f32, { [B] }>,
        x: &Tensor<f32, { [-1] }>,
        y: &Tensor<f32, { [-1] }>,
    ) {
        let a = load_tile_like(x, tan_out);
        let b = load_tile_like(y, tan_out);
        tan_out.store(tan(a));
        sinh_out.store(a.sinh());
        cosh_out.store(cosh(a));
        rsqrt_out.store(rsqrt_ftz(absf(a) + 1.0));
        pow_out.store(pow(a, b));
    }

    #[cuprum::tile::entry()]
    fn integers<const B: i32>(
        div_out: &mut Tensor<i32, { [B] }>,
        abs_out: &mut Tensor<i32, { [B] }>,
        x: &Tensor<i32, { [-1] }>,
        y: &Tensor<i32, { [-1] }>,
    ) {
        let a = load_tile_like(x, div_out);
        let b = load_tile_like(y, div_out);
        // The padding of an edge tile is 0: divide it by 1, not by zero.
        let b = select(eq_tile(b, 0), 1, b);
        let q = ceil_div(a, b);
        div_out.store(q);
        abs_out.store(absi(a) + (a >> 3u32) - (a << 2) ^ max_tile(a, b));
    }
}
"#;

#[test]
fn composed_math_matches_std_and_integer_helpers_match_rust() {
    let m = compile(MATH);
    let mut r = rng("composed_math_matches_std_and_integer_helpers_match_rust");
    let n = r.random_range(1..700usize);
    let mut x: Vec<f32> = random(&mut r, n, -3.0, 3.0);
    let mut y: Vec<f32> = random(&mut r, n, -4.0, 4.0);
    // Integer exponents of negative bases, zero exponents and a zero base.
    for i in (0..n).step_by(5) {
        y[i] = y[i].round();
    }
    if n > 3 {
        y[1] = 0.0;
        x[2] = 0.0;
    }
    let k = specialized(&m, "composed", &[64], &[]);
    let (xb, yb) = (bytes(&x), bytes(&y));
    let mut outs: Vec<Vec<u8>> = (0..5).map(|_| poison::<f32>(n)).collect();
    let shape = [n as u64];
    {
        let [o0, o1, o2, o3, o4] = &mut outs[..] else {
            panic!("five outputs")
        };
        launch(
            &k,
            &mut [
                write::<f32>(&shape, o0),
                write::<f32>(&shape, o1),
                write::<f32>(&shape, o2),
                write::<f32>(&shape, o3),
                write::<f32>(&shape, o4),
                read::<f32>(&shape, &xb),
                read::<f32>(&shape, &yb),
            ],
        );
    }
    let got: Vec<Vec<f32>> = outs.iter().map(|o| values::<f32>(o)).collect();
    let want = |f: &dyn Fn(f32, f32) -> f32| -> Vec<f32> {
        x.iter().zip(&y).map(|(a, b)| f(*a, *b)).collect()
    };
    assert_close("tan", &got[0], &want(&|a, _| a.tan()), 1e-4);
    assert_close("sinh", &got[1], &want(&|a, _| a.sinh()), 1e-5);
    assert_close("cosh", &got[2], &want(&|a, _| a.cosh()), 1e-5);
    assert_close(
        "rsqrt",
        &got[3],
        &want(&|a, _| 1.0 / (a.abs() + 1.0).sqrt()),
        1e-6,
    );
    assert_close("pow", &got[4], &want(&|a, b| a.powf(b)), 1e-4);

    let xi: Vec<i32> = random(&mut r, n, -1000, 1000);
    let yi: Vec<i32> = random(&mut r, n, -40, 40)
        .into_iter()
        .map(|v| if v == 0 { 7 } else { v })
        .collect();
    let k = specialized(&m, "integers", &[32], &[]);
    let (xb, yb) = (bytes(&xi), bytes(&yi));
    let (mut d, mut a) = (poison::<i32>(n), poison::<i32>(n));
    launch(
        &k,
        &mut [
            write::<i32>(&shape, &mut d),
            write::<i32>(&shape, &mut a),
            read::<i32>(&shape, &xb),
            read::<i32>(&shape, &yb),
        ],
    );
    let ceil: Vec<i32> = xi
        .iter()
        .zip(&yi)
        .map(|(&a, &b)| {
            let (q, rem) = (a / b, a % b);
            if rem != 0 && ((rem < 0) == (b < 0)) {
                q + 1
            } else {
                q
            }
        })
        .collect();
    cuprum_testkit::compare::assert_same("ceil_div", &values::<i32>(&d), &ceil);
    let mixed: Vec<i32> = xi
        .iter()
        .zip(&yi)
        .map(|(&a, &b)| (a.wrapping_abs() + (a >> 3) - (a << 2)) ^ a.max(b))
        .collect();
    cuprum_testkit::compare::assert_same("integer operators", &values::<i32>(&a), &mixed);
}

const GENERIC: &str = r#"
mod generic {
    use cuprum::tile::core::*;

    fn twice<E: ElementType, const S: [i32; 2]>(t: Tile<E, S>) -> Tile<E, S> {
        t + t
    }

    #[cuprum::tile::entry()]
    fn rows<E: ElementType, const BM: i32, const BN: i32>(
        out: &mut Tensor<E, { [BM, BN] }>,
        sums: &mut Tensor<E, { [BM] }>,
        x: &Tensor<E, { [-1, -1] }>,
        s: E,
    ) {
        let t: Tile<E, { [BM, BN] }> = load_tile_like(x, out);
        let biggest = reduce(t, 1, 0, |a, b| max(a, b));
        let wide = biggest.reshape(const_shape![BM, 1]).broadcast(out.shape());
        let picked = select(gt_tile(t, wide - 1), twice(t), t * s);
        out.store(picked);
        let total: Tile<E, { [BM] }> = reduce_sum(t.transpose().transpose(), 1);
        sums.store(total);
    }
}
"#;

#[test]
fn a_generic_kernel_runs_for_each_element_type_it_is_specialized_with() {
    let m = compile(GENERIC);
    let mut r = rng("a_generic_kernel_runs_for_each_element_type_it_is_specialized_with");
    let (bm, bn) = (4usize, 8usize);
    let rows = bm * r.random_range(1..6usize);
    let x: Vec<i32> = random(&mut r, rows * bn, 0, 50);
    let s: i32 = r.random_range(-3..3);
    let k = specialized(&m, "rows", &[bm as i64, bn as i64], &[ScalarType::I32]);
    let xb = bytes(&x);
    let (mut ob, mut sb) = (poison::<i32>(rows * bn), poison::<i32>(rows));
    launch(
        &k,
        &mut [
            write::<i32>(&[rows as u64, bn as u64], &mut ob),
            write::<i32>(&[rows as u64], &mut sb),
            read::<i32>(&[rows as u64, bn as u64], &xb),
            Arg::Scalar(cuprum_ir::Constant::i32(s)),
        ],
    );
    let mut want = Vec::new();
    let mut sums = Vec::new();
    for row in x.chunks(bn) {
        let biggest = row.iter().copied().fold(0, i32::max);
        want.extend(
            row.iter()
                .map(|&v| if v > biggest - 1 { v + v } else { v * s }),
        );
        sums.push(row.iter().sum::<i32>());
    }
    cuprum_testkit::compare::assert_same("rows (i32)", &values::<i32>(&ob), &want);
    cuprum_testkit::compare::assert_same("row sums (i32)", &values::<i32>(&sb), &sums);

    let xf: Vec<f32> = x.iter().map(|&v| v as f32 * 0.5).collect();
    let k = specialized(&m, "rows", &[bm as i64, bn as i64], &[ScalarType::F32]);
    let xb = bytes(&xf);
    let (mut ob, mut sb) = (poison::<f32>(rows * bn), poison::<f32>(rows));
    launch(
        &k,
        &mut [
            write::<f32>(&[rows as u64, bn as u64], &mut ob),
            write::<f32>(&[rows as u64], &mut sb),
            read::<f32>(&[rows as u64, bn as u64], &xb),
            scalar_f32(s as f32),
        ],
    );
    let mut want = Vec::new();
    let mut sums = Vec::new();
    for row in xf.chunks(bn) {
        let biggest = row.iter().copied().fold(0.0f32, f32::max);
        want.extend(row.iter().map(|&v| {
            if v > biggest - 1.0 {
                v + v
            } else {
                v * s as f32
            }
        }));
        sums.push(row.iter().sum::<f32>());
    }
    cuprum_testkit::compare::assert_bits_eq("rows (f32)", &values::<f32>(&ob), &want);
    assert_close("row sums (f32)", &values::<f32>(&sb), &sums, 1e-6);
}

#[test]
fn hello_world_prints_each_blocks_coordinates() {
    let src = r#"
mod hello_world_module {
    use cuprum::tile::core::*;

    #[cuprum::tile::entry(print_ir = true)]
    fn hello_world_kernel() {
        let pids: (i32, i32, i32) = get_tile_block_id();
        let npids: (i32, i32, i32) = get_num_tile_blocks();
        cuda_tile_print!(
            "Hello, I am tile <{}, {}, {}> in a kernel with <{}, {}, {}> tiles.\n",
            pids.0, pids.1, pids.2, npids.0, npids.1, npids.2
        );
    }
}
"#;
    let m = compile(src);
    let k = specialized(&m, "hello_world_kernel", &[], &[]);
    let out = cuprum_tile_interp::run(&k, &mut [], [2, 1, 1]).expect("runs");
    assert_eq!(
        out.text(),
        "Hello, I am tile <0, 0, 0> in a kernel with <2, 1, 1> tiles.\n\
         Hello, I am tile <1, 0, 0> in a kernel with <2, 1, 1> tiles.\n"
    );
}
