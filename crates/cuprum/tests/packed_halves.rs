//! cuda-oxide's packed half operations (`f16x2::*`, `bf16x2::*`, `tcgen05::cvt_f32x2_bf16x2`;
//! issue 14): every operation on random packed pairs (including NaNs, infinities,
//! subnormals and signed zeros), each half checked against a plain-Rust model of the PTX
//! instruction the operation is named after, over outputs poisoned first; and
//! `convert::cvt_rna_tf32_f32` against the nearest `tf32` found by comparing neighbours.

mod common;

use common::ctx;
use cuprum::simt::bf16x2::*;
use cuprum::simt::convert::cvt_rna_tf32_f32;
use cuprum::simt::f16x2::*;
use cuprum::simt::tcgen05::cvt_f32x2_bf16x2;
use cuprum::simt::{DisjointSlice, cuda_module, kernel, thread};
use cuprum::{DeviceBuffer, LaunchConfig};
use cuprum_testkit::poison::poisoned;
use cuprum_testkit::random::{random, rng};
use half::{bf16, f16};
use rand::Rng;

const F16_OPS: usize = 27;
const BF16_OPS: usize = 15;

/// The `f16x2` operations in the kernel's order.
const F16_NAMES: [&str; F16_OPS] = [
    "abs",
    "add",
    "fma",
    "fma_ftz",
    "fma_ftz_relu",
    "fma_ftz_sat",
    "fma_relu",
    "fma_sat",
    "max",
    "min",
    "mul",
    "neg",
    "sub",
    "max_ftz",
    "max_ftz_nan",
    "max_ftz_nan_xorsign_abs",
    "max_ftz_xorsign_abs",
    "max_nan",
    "max_nan_xorsign_abs",
    "max_xorsign_abs",
    "min_ftz",
    "min_ftz_nan",
    "min_ftz_nan_xorsign_abs",
    "min_ftz_xorsign_abs",
    "min_nan",
    "min_nan_xorsign_abs",
    "min_xorsign_abs",
];
/// The `bf16x2` operations in the kernel's order.
const BF16_NAMES: [&str; BF16_OPS] = [
    "abs",
    "add",
    "fma",
    "fma_relu",
    "max",
    "min",
    "mul",
    "neg",
    "sub",
    "max_nan",
    "max_nan_xorsign_abs",
    "max_xorsign_abs",
    "min_nan",
    "min_nan_xorsign_abs",
    "min_xorsign_abs",
];

#[cuda_module]
mod kernels {
    use super::*;

    #[kernel]
    pub fn packed_f16(x: &[u32], y: &[u32], z: &[u32], mut out: DisjointSlice<[u32; F16_OPS]>) {
        let idx = thread::index_1d();
        let i = idx.get();
        if let Some(row) = out.get_mut(idx) {
            let (a, b, c) = (x[i], y[i], z[i]);
            *row = [
                abs_f16x2(a),
                add_f16x2(a, b),
                fma_f16x2(a, b, c),
                fma_ftz_f16x2(a, b, c),
                fma_ftz_relu_f16x2(a, b, c),
                fma_ftz_sat_f16x2(a, b, c),
                fma_relu_f16x2(a, b, c),
                fma_sat_f16x2(a, b, c),
                max_f16x2(a, b),
                min_f16x2(a, b),
                mul_f16x2(a, b),
                neg_f16x2(a),
                sub_f16x2(a, b),
                max_ftz_f16x2(a, b),
                max_ftz_nan_f16x2(a, b),
                max_ftz_nan_xorsign_abs_f16x2(a, b),
                max_ftz_xorsign_abs_f16x2(a, b),
                max_nan_f16x2(a, b),
                max_nan_xorsign_abs_f16x2(a, b),
                max_xorsign_abs_f16x2(a, b),
                min_ftz_f16x2(a, b),
                min_ftz_nan_f16x2(a, b),
                min_ftz_nan_xorsign_abs_f16x2(a, b),
                min_ftz_xorsign_abs_f16x2(a, b),
                min_nan_f16x2(a, b),
                min_nan_xorsign_abs_f16x2(a, b),
                min_xorsign_abs_f16x2(a, b),
            ];
        }
    }

    #[kernel]
    pub fn packed_bf16(x: &[u32], y: &[u32], z: &[u32], mut out: DisjointSlice<[u32; BF16_OPS]>) {
        let idx = thread::index_1d();
        let i = idx.get();
        if let Some(row) = out.get_mut(idx) {
            let (a, b, c) = (x[i], y[i], z[i]);
            *row = [
                abs_bf16x2(a),
                add_bf16x2(a, b),
                fma_bf16x2(a, b, c),
                fma_relu_bf16x2(a, b, c),
                max_bf16x2(a, b),
                min_bf16x2(a, b),
                mul_bf16x2(a, b),
                neg_bf16x2(a),
                sub_bf16x2(a, b),
                max_nan_bf16x2(a, b),
                max_nan_xorsign_abs_bf16x2(a, b),
                max_xorsign_abs_bf16x2(a, b),
                min_nan_bf16x2(a, b),
                min_nan_xorsign_abs_bf16x2(a, b),
                min_xorsign_abs_bf16x2(a, b),
            ];
        }
    }

    #[kernel]
    pub fn pack_bf16(lo: &[f32], hi: &[f32], mut out: DisjointSlice<u32>) {
        let idx = thread::index_1d();
        let i = idx.get();
        if let Some(o) = out.get_mut(idx) {
            *o = cvt_f32x2_bf16x2(lo[i], hi[i]);
        }
    }

    #[kernel]
    pub fn round_tf32(x: &[f32], mut out: DisjointSlice<u32>) {
        let idx = thread::index_1d();
        let i = idx.get();
        if let Some(o) = out.get_mut(idx) {
            *o = cvt_rna_tf32_f32(x[i]);
        }
    }
}

/// One half type's model: bits to `f32` and back (rounding to nearest even), its subnormal
/// exponent field and its 1.0.
#[derive(Clone, Copy)]
struct Half {
    to_f32: fn(u16) -> f32,
    from_f32: fn(f32) -> u16,
    exponent_mask: u16,
    one: u16,
}

const F16: Half = Half {
    to_f32: |b| f16::from_bits(b).to_f32(),
    from_f32: |x| f16::from_f32(x).to_bits(),
    exponent_mask: 0x7C00,
    one: 0x3C00,
};
const BF16: Half = Half {
    to_f32: |b| bf16::from_bits(b).to_f32(),
    from_f32: |x| bf16::from_f32(x).to_bits(),
    exponent_mask: 0x7F80,
    one: 0x3F80,
};
const CANONICAL_NAN: u16 = 0x7FFF;

/// What one half of `name` gives: the bits, and whether any NaN is right (a NaN whose
/// payload the arithmetic chose) or any zero is (min/max of two zeros of opposite signs).
fn model(h: Half, name: &str, a: u16, b: u16, c: u16) -> (u16, Leeway) {
    let has = |m: &str| name.split('_').any(|p| p == m);
    let ftz = |x: u16| {
        if x & h.exponent_mask == 0 {
            x & 0x8000
        } else {
            x
        }
    };
    let (a, b, c) = if has("ftz") {
        (ftz(a), ftz(b), ftz(c))
    } else {
        (a, b, c)
    };
    let f = h.to_f32;
    let op = name.split('_').next().unwrap_or_default();
    let mut leeway = Leeway::None;
    let mut r = match op {
        "neg" => a ^ 0x8000,
        "abs" => a & 0x7FFF,
        "min" | "max" => {
            let xorsign = name.contains("xorsign_abs");
            let (x, y) = if xorsign {
                (a & 0x7FFF, b & 0x7FFF)
            } else {
                (a, b)
            };
            let (fx, fy) = (f(x), f(y));
            let m = if op == "min" { fx.min(fy) } else { fx.max(fy) };
            if fx == 0.0 && fy == 0.0 && x != y {
                leeway = Leeway::AnyZero;
            }
            // Two NaNs give a NaN whose payload the IR leaves open (the GPU's is canonical).
            if fx.is_nan() && fy.is_nan() {
                leeway = Leeway::AnyNan;
            }
            let mut bits = (h.from_f32)(m);
            if xorsign {
                bits = (bits & 0x7FFF) | ((a ^ b) & 0x8000);
            }
            if has("nan") && (fx.is_nan() || fy.is_nan()) {
                bits = CANONICAL_NAN;
                leeway = Leeway::None;
            }
            bits
        }
        _ => {
            let v = match op {
                "add" => f(a) + f(b),
                "sub" => f(a) - f(b),
                "mul" => f(a) * f(b),
                _ => f(a).mul_add(f(b), f(c)),
            };
            let v = (h.from_f32)(v);
            if (h.to_f32)(v).is_nan() {
                leeway = Leeway::AnyNan;
            }
            if has("sat") {
                let x = (h.to_f32)(v);
                leeway = Leeway::None;
                if x.is_nan() || x <= 0.0 {
                    0
                } else if x >= 1.0 {
                    h.one
                } else {
                    v
                }
            } else {
                v
            }
        }
    };
    if has("relu") {
        if (h.to_f32)(r).is_nan() {
            r = CANONICAL_NAN;
            leeway = Leeway::None;
        } else if r & 0x8000 != 0 {
            r = 0;
        }
    }
    if has("ftz") {
        r = ftz(r);
    }
    (r, leeway)
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Leeway {
    None,
    AnyNan,
    AnyZero,
}

fn halves(w: u32) -> [u16; 2] {
    [w as u16, (w >> 16) as u16]
}

/// Random packed words: random bits, one half in four replaced by a special value.
fn words(rng: &mut rand::rngs::StdRng, n: usize, specials: &[u16]) -> Vec<u32> {
    random::<u32>(rng, n, 0, u32::MAX)
        .into_iter()
        .map(|w| {
            let mut hs = halves(w);
            for h in &mut hs {
                if rng.random_range(0..4) == 0 {
                    *h = specials[rng.random_range(0..specials.len())];
                }
            }
            u32::from(hs[0]) | u32::from(hs[1]) << 16
        })
        .collect()
}

/// `n` rows of poisoned words.
fn rows_of<const K: usize>(n: usize) -> Vec<[u32; K]> {
    poisoned::<u32>(n * K)
        .chunks(K)
        .map(|c| std::array::from_fn(|k| c[k]))
        .collect()
}

fn check(h: Half, names: &[&str], x: &[u32], y: &[u32], z: &[u32], rows: &[Vec<u32>]) {
    for (i, row) in rows.iter().enumerate() {
        for (k, name) in names.iter().enumerate() {
            let got = halves(row[k]);
            for (half, &g) in got.iter().enumerate() {
                let (a, b, c) = (halves(x[i])[half], halves(y[i])[half], halves(z[i])[half]);
                let (want, leeway) = model(h, name, a, b, c);
                let ok = g == want
                    || (leeway == Leeway::AnyNan && (h.to_f32)(g).is_nan())
                    || (leeway == Leeway::AnyZero && g & 0x7FFF == 0);
                assert!(
                    ok,
                    "{name} element {i} half {half}: ({a:#06x}, {b:#06x}, {c:#06x}) gave \
                     {g:#06x}, want {want:#06x} ({leeway:?})"
                );
            }
        }
    }
}

#[test]
fn every_packed_operation_on_both_halves() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let mut rng = rng("packed_halves");
    let n = 2000;
    let config = LaunchConfig::for_num_elems(n as u32);
    let module = kernels::load(ctx).unwrap();
    // Zeros, ones, infinities, NaNs, the smallest and largest subnormals and normals.
    let f16_specials = [
        0x0000, 0x8000, 0x3C00, 0xBC00, 0x7C00, 0xFC00, 0x7E00, 0xFE01, 0x0001, 0x83FF, 0x0400,
        0x7BFF, 0x3800,
    ];
    let bf16_specials = [
        0x0000, 0x8000, 0x3F80, 0xBF80, 0x7F80, 0xFF80, 0x7FC0, 0xFFC1, 0x0001, 0x807F, 0x0080,
        0x7F7F, 0x3F00,
    ];
    for (h, names, specials) in [
        (F16, &F16_NAMES[..], &f16_specials[..]),
        (BF16, &BF16_NAMES[..], &bf16_specials[..]),
    ] {
        let (x, y, z) = (
            words(&mut rng, n, specials),
            words(&mut rng, n, specials),
            words(&mut rng, n, specials),
        );
        let (dx, dy, dz) = (
            DeviceBuffer::from_host(&stream, &x).unwrap(),
            DeviceBuffer::from_host(&stream, &y).unwrap(),
            DeviceBuffer::from_host(&stream, &z).unwrap(),
        );
        let rows: Vec<Vec<u32>> = if names.len() == F16_OPS {
            let mut out = DeviceBuffer::from_host(&stream, &rows_of::<F16_OPS>(n)).unwrap();
            unsafe { module.packed_f16(&stream, config, &dx, &dy, &dz, &mut out) }.unwrap();
            out.to_host_vec(&stream)
                .unwrap()
                .iter()
                .map(|r| r.to_vec())
                .collect()
        } else {
            let mut out = DeviceBuffer::from_host(&stream, &rows_of::<BF16_OPS>(n)).unwrap();
            unsafe { module.packed_bf16(&stream, config, &dx, &dy, &dz, &mut out) }.unwrap();
            out.to_host_vec(&stream)
                .unwrap()
                .iter()
                .map(|r| r.to_vec())
                .collect()
        };
        check(h, names, &x, &y, &z, &rows);
    }
}

#[test]
fn two_floats_pack_into_bf16x2() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let mut rng = rng("pack_bf16");
    let n = 1000;
    let mut lo: Vec<f32> = random(&mut rng, n, -1.0e6, 1.0e6);
    let hi: Vec<f32> = random(&mut rng, n, -3.0, 3.0);
    lo[0] = f32::NAN;
    lo[1] = f32::INFINITY;
    lo[2] = -0.0;
    let (dlo, dhi) = (
        DeviceBuffer::from_host(&stream, &lo).unwrap(),
        DeviceBuffer::from_host(&stream, &hi).unwrap(),
    );
    let mut out = DeviceBuffer::from_host(&stream, &poisoned::<u32>(n)).unwrap();
    let module = kernels::load(ctx).unwrap();
    unsafe {
        module.pack_bf16(
            &stream,
            LaunchConfig::for_num_elems(n as u32),
            &dlo,
            &dhi,
            &mut out,
        )
    }
    .unwrap();
    let got = out.to_host_vec(&stream).unwrap();
    for i in 0..n {
        let [l, h] = halves(got[i]);
        let (wl, wh) = (bf16::from_f32(lo[i]), bf16::from_f32(hi[i]));
        let same =
            |g: u16, w: bf16| g == w.to_bits() || (w.is_nan() && bf16::from_bits(g).is_nan());
        assert!(
            same(l, wl) && same(h, wh),
            "element {i}: ({}, {}) packed as {:#010x}, want lo {:#06x} hi {:#06x}",
            lo[i],
            hi[i],
            got[i],
            wl.to_bits(),
            wh.to_bits()
        );
    }
}

/// The `tf32` nearest to finite `x` (ties away from zero), as bits: the nearer of its two
/// `tf32` neighbours in magnitude, compared in `f64` (2^128 past the largest finite one).
fn nearest_tf32_bits(x: f32) -> u32 {
    let down = x.to_bits() & 0xFFFF_E000;
    let up = down + 0x2000;
    let magnitude = |b: u32| {
        if b & 0x7FFF_FFFF >= 0x7F80_0000 {
            2f64.powi(128)
        } else {
            f64::from(f32::from_bits(b)).abs()
        }
    };
    let target = f64::from(x).abs();
    if target - magnitude(down) < magnitude(up) - target {
        down
    } else {
        up
    }
}

#[test]
fn floats_round_to_tf32_to_nearest_ties_away() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let mut rng = rng("round_tf32");
    let n = 4000;
    let mut x: Vec<f32> = (0..n)
        .map(|_| f32::from_bits(rng.random::<u32>()))
        .collect();
    // Ties both ways, just below and above them, the largest finite values, specials.
    let tie = 1.0f32 + 2f32.powi(-11);
    x[..12].copy_from_slice(&[
        tie,
        -tie,
        f32::from_bits(tie.to_bits() - 1),
        f32::from_bits(tie.to_bits() + 1),
        f32::MAX,
        -f32::MAX,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        f32::from_bits(0x7F80_0001),
        -0.0,
        f32::from_bits(0x0000_1000),
    ]);
    let dx = DeviceBuffer::from_host(&stream, &x).unwrap();
    let mut out = DeviceBuffer::from_host(&stream, &poisoned::<u32>(n)).unwrap();
    let module = kernels::load(ctx).unwrap();
    // SAFETY: a 1-D launch of `n` threads over buffers of `n` elements.
    unsafe {
        module.round_tf32(
            &stream,
            LaunchConfig::for_num_elems(n as u32),
            &dx,
            &mut out,
        )
    }
    .unwrap();
    let got = out.to_host_vec(&stream).unwrap();
    for (i, (&v, &g)) in x.iter().zip(&got).enumerate() {
        let want = if v.is_nan() {
            0x7FFF_E000
        } else if v.is_infinite() {
            v.to_bits()
        } else {
            nearest_tf32_bits(v)
        };
        assert_eq!(
            g,
            want,
            "element {i}: {v:e} ({:#010x}) rounded to {g:#010x}, want {want:#010x}",
            v.to_bits()
        );
    }
    assert_eq!(got[0], 0x3F80_2000, "a tie rounds away from zero");
    assert_eq!(got[4], 0x7F80_0000, "past the largest tf32: infinity");
}
