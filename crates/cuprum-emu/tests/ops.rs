//! Every scalar operation against Rust: casts for every type pair against `as` (with a
//! brute-force correctly-rounded reference for `f16`/`bf16`), integer and float arithmetic,
//! comparisons (NaN included), select and bitcast. Inputs are random bits plus edge values.

// References index several parallel arrays by element; ranges read better than zips here.
#![allow(clippy::needless_range_loop)]

mod common;

use common::*;
use cuprum_emu::{Memory, launch};
use cuprum_ir::scalar::math::{self, Real};
use cuprum_ir::*;
use half::{bf16, f16};
use rand::{Rng, SeedableRng, rngs::StdRng};

use ScalarType as S;

/// `2^x` with PTX's `.ftz`, written out here independently of the IR's definition: an `f32`
/// subnormal operand is a zero of its sign, an `f32` subnormal result `+0`; `f64` unchanged.
trait Exp2Flushing {
    fn exp2_flushing(self) -> Self;
}

impl Exp2Flushing for f32 {
    fn exp2_flushing(self) -> f32 {
        let x = if self != 0.0 && self.abs() < f32::MIN_POSITIVE {
            if self < 0.0 { -0.0 } else { 0.0 }
        } else {
            self
        };
        let y = x.exp2();
        if y != 0.0 && y < f32::MIN_POSITIVE {
            0.0
        } else {
            y
        }
    }
}

impl Exp2Flushing for f64 {
    fn exp2_flushing(self) -> f64 {
        self.exp2()
    }
}

/// Runs `out[i] = f(in0[i], in1[i], ...)` and returns the output bits.
fn run_map(
    mem: &Memory,
    in_tys: &[ScalarType],
    inputs: &[Vec<u64>],
    out_ty: ScalarType,
    f: impl FnOnce(&mut K, &[Value]) -> Value,
) -> Vec<u64> {
    let mut k = K::new("map");
    let ins: Vec<u32> = in_tys
        .iter()
        .enumerate()
        .map(|(i, &t)| k.slice(&format!("in{i}"), t, SliceAccess::ReadOnly))
        .collect();
    let out = k.slice("out", out_ty, SliceAccess::Disjoint);
    k.guarded(out, |k, i| {
        let vals: Vec<Value> = ins.iter().map(|&p| k.load(p, i)).collect();
        let r = f(k, &vals);
        k.store(out, i, r);
    });
    let kernel = k.finish();
    let n = inputs[0].len();
    let mut args: Vec<_> = in_tys
        .iter()
        .zip(inputs)
        .map(|(&t, bits)| upload_bits(mem, t, bits))
        .collect();
    let dout = output(mem, out_ty, n);
    args.push(dout);
    launch(mem, &kernel, dims1(n as u64, 64), &args).unwrap();
    download_bits(mem, out_ty, dout)
}

fn mask(ty: ScalarType, bits: u64) -> u64 {
    Constant::new(ty, bits).bits
}

/// Random values of `ty` as canonical bits, with edge cases first.
fn values(rng: &mut StdRng, ty: ScalarType, n: usize) -> Vec<u64> {
    let mut v: Vec<u64> = Vec::new();
    match ty {
        S::Bool => v.extend([0, 1]),
        t if t.is_int() => {
            for x in [
                0u64,
                1,
                2,
                u64::MAX,
                u64::MAX - 1,
                0x7f,
                0x80,
                0x7fff,
                0x8000,
            ] {
                v.push(mask(t, x));
            }
            for x in [
                i64::MIN as u64,
                i64::MAX as u64,
                i32::MIN as u64,
                i32::MAX as u64,
            ] {
                v.push(mask(t, x));
            }
        }
        _ => {
            let specials = [
                0.0,
                -0.0,
                1.0,
                -1.0,
                0.5,
                1.5,
                2.5,
                -0.5,
                -2.5,
                65504.0,
                65519.99,
                65520.0,
                -65520.0,
                255.5,
                256.0,
                -129.0,
                3e9,
                -3e9,
                1e19,
                -1e19,
                1e300,
                f64::INFINITY,
                f64::NEG_INFINITY,
                f64::NAN,
                f32::MAX as f64,
                f64::MIN_POSITIVE,
                1e-40,
                1.0 + 2f64.powi(-8) + 2f64.powi(-40),
                1.0 + 2f64.powi(-11) + 2f64.powi(-40),
                1.0 + 2f64.powi(-24) + 2f64.powi(-60),
                4294967295.5,
                4294967296.0,
                9.3e18,
                1.8446744073709552e19,
            ];
            for x in specials {
                v.push(match ty {
                    S::F64 => x.to_bits(),
                    S::F32 => (x as f32).to_bits() as u64,
                    S::F16 => f16::from_f64(x).to_bits() as u64,
                    _ => bf16::from_f64(x).to_bits() as u64,
                });
            }
        }
    }
    while v.len() < n {
        let raw: u64 = rng.random();
        let x = match (ty, v.len() % 3) {
            (S::Bool, _) => raw & 1,
            (t, _) if t.is_int() => mask(t, raw),
            (_, 0) => mask(ty, raw),
            (_, k) => {
                let scale = if k == 1 { 300.0 } else { 1e10 };
                let f = rng.random_range(-scale..scale);
                match ty {
                    S::F64 => f64::to_bits(f),
                    S::F32 => (f as f32).to_bits() as u64,
                    S::F16 => f16::from_f64(f).to_bits() as u64,
                    _ => bf16::from_f64(f).to_bits() as u64,
                }
            }
        };
        v.push(x);
    }
    v
}

// ---------------------------------------------------------------------------------------------
// Casts

#[derive(Clone, Copy, Debug)]
enum Exact {
    I(i128),
    F(f64),
}

fn decode(ty: ScalarType, b: u64) -> Exact {
    match ty {
        S::Bool => Exact::I((b != 0) as i128),
        S::I8 => Exact::I(b as u8 as i8 as i128),
        S::I16 => Exact::I(b as u16 as i16 as i128),
        S::I32 => Exact::I(b as u32 as i32 as i128),
        S::I64 => Exact::I(b as i64 as i128),
        S::U8 | S::U16 | S::U32 | S::U64 => Exact::I(b as i128),
        S::F16 => Exact::F(f16::from_bits(b as u16).to_f64()),
        S::BF16 => Exact::F(bf16::from_bits(b as u16).to_f64()),
        S::F32 | S::Tf32 => Exact::F(f32::from_bits(b as u32) as f64),
        S::F64 => Exact::F(f64::from_bits(b)),
    }
}

/// The `tf32` nearest to `f` (ties away from zero), found by search over the four nearest
/// `tf32` magnitudes; a NaN is the canonical `tf32` NaN.
fn nearest_tf32(f: f32) -> u64 {
    if f.is_nan() {
        return 0x7FFF_E000;
    }
    if f.is_infinite() {
        return u64::from(f.to_bits());
    }
    let magnitude = |b: u32| {
        if b >= 0x7F80_0000 {
            2f64.powi(128)
        } else {
            f64::from(f32::from_bits(b))
        }
    };
    let base = (f.to_bits() & 0x7FFF_E000).saturating_sub(0x2000);
    let target = f64::from(f.abs());
    let mut best = base;
    for k in 1..4 {
        let c = base + k * 0x2000;
        // `<=`: a tie goes to the larger magnitude.
        if (magnitude(c) - target).abs() <= (magnitude(best) - target).abs() {
            best = c;
        }
    }
    u64::from(best.min(0x7F80_0000) | f.to_bits() & 0x8000_0000)
}

/// The correctly rounded (ties to even) half of `x`, found by search over the bit patterns.
fn nearest_half(x: Exact, bf: bool) -> u16 {
    let value = |b: u16| {
        if bf {
            bf16::from_bits(b).to_f64()
        } else {
            f16::from_bits(b).to_f64()
        }
    };
    let (inf, nan): (u16, u16) = if bf {
        (0x7f80, 0x7fc0)
    } else {
        (0x7c00, 0x7e00)
    };
    let (neg, mag_f, mag_i) = match x {
        Exact::F(f) if f.is_nan() => return nan,
        Exact::F(f) => (f.is_sign_negative(), f.abs(), None),
        Exact::I(i) => (i < 0, i.unsigned_abs() as f64, Some(i.unsigned_abs())),
    };
    let sign = if neg { 0x8000 } else { 0 };
    // Largest finite pattern <= |x| (positive finite patterns are ordered like their values).
    let (mut lo, mut hi) = (0u16, inf); // value(lo) <= |x| < value(hi) unless |x| >= max
    if mag_f >= value(inf - 1) {
        lo = inf - 1;
    } else {
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if value(mid) <= mag_f {
                lo = mid
            } else {
                hi = mid
            }
        }
    }
    let (a, b) = (lo, lo + 1);
    // Past the largest finite value, the overflow threshold acts as a value one ulp above it.
    let vb = if b == inf {
        value(a) + (value(a) - value(a - 1))
    } else {
        value(b)
    };
    // Distances, exactly: in integers for huge integers, in f64 otherwise (Sterbenz: exact).
    let (da, db) = match mag_i {
        Some(m) if m > (1u128 << 53) => {
            let (m, va, vb) = (m as i128, value(a) as i128, vb as i128);
            ((m - va) as f64, (vb - m) as f64)
        }
        _ => (mag_f - value(a), vb - mag_f),
    };
    let pick = if da < db || (da == db && a & 1 == 0) {
        a
    } else {
        b
    };
    pick | sign
}

fn reference_cast(from: ScalarType, to: ScalarType, bits: u64) -> u64 {
    let x = decode(from, bits);
    macro_rules! prim {
        ($t:ty, $put:expr) => {
            match x {
                Exact::I(i) => $put(i as $t),
                Exact::F(f) => $put(f as $t),
            }
        };
    }
    match to {
        S::Bool => match x {
            Exact::I(i) => (i != 0) as u64,
            Exact::F(_) => unreachable!(),
        },
        S::I8 => prim!(i8, |v: i8| v as u8 as u64),
        S::I16 => prim!(i16, |v: i16| v as u16 as u64),
        S::I32 => prim!(i32, |v: i32| v as u32 as u64),
        S::I64 => prim!(i64, |v: i64| v as u64),
        S::U8 => prim!(u8, |v: u8| v as u64),
        S::U16 => prim!(u16, |v: u16| v as u64),
        S::U32 => prim!(u32, |v: u32| v as u64),
        S::U64 => prim!(u64, |v: u64| v),
        S::F32 => prim!(f32, |v: f32| v.to_bits() as u64),
        S::F64 => prim!(f64, |v: f64| v.to_bits()),
        S::F16 => nearest_half(x, false) as u64,
        S::BF16 => nearest_half(x, true) as u64,
        S::Tf32 => nearest_tf32(match x {
            Exact::I(i) => i as f32,
            Exact::F(f) => f as f32,
        }),
    }
}

fn is_nan(ty: ScalarType, b: u64) -> bool {
    match ty {
        S::F16 => f16::from_bits(b as u16).is_nan(),
        S::BF16 => bf16::from_bits(b as u16).is_nan(),
        S::F32 | S::Tf32 => f32::from_bits(b as u32).is_nan(),
        S::F64 => f64::from_bits(b).is_nan(),
        _ => false,
    }
}

/// Float results agree when the bits agree or both are NaN.
fn same(ty: ScalarType, got: u64, want: u64) -> bool {
    got == want || (is_nan(ty, got) && is_nan(ty, want))
}

#[test]
fn every_cast_pair_matches_rust_as() {
    let mut rng = StdRng::seed_from_u64(10);
    let mem = Memory::new();
    for from in ScalarType::ALL {
        let input = values(&mut rng, from, 400);
        for to in ScalarType::ALL {
            if to == S::Bool && from != S::Bool {
                continue;
            }
            let got = run_map(&mem, &[from], std::slice::from_ref(&input), to, |k, v| {
                k.cast(v[0], to)
            });
            for (x, g) in input.iter().zip(&got) {
                let want = reference_cast(from, to, *x);
                assert!(
                    same(to, *g, want),
                    "{from} {x:#x} as {to}: got {g:#x}, want {want:#x}"
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Integers

const INT_BINOPS: [BinaryOp; 13] = [
    BinaryOp::Add,
    BinaryOp::Sub,
    BinaryOp::Mul,
    BinaryOp::MulHigh,
    BinaryOp::Div,
    BinaryOp::Rem,
    BinaryOp::And,
    BinaryOp::Or,
    BinaryOp::Xor,
    BinaryOp::Shl,
    BinaryOp::Shr,
    BinaryOp::Min,
    BinaryOp::Max,
];
const CMPS: [CmpOp; 6] = [
    CmpOp::Eq,
    CmpOp::Ne,
    CmpOp::Lt,
    CmpOp::Le,
    CmpOp::Gt,
    CmpOp::Ge,
];

macro_rules! int_reference {
    ($t:ty, $op:expr, $a:expr, $b:expr) => {{
        let (x, y) = (<$t as Elem>::from_bits($a), <$t as Elem>::from_bits($b));
        let s = $b as u32;
        let r: $t = match $op {
            BinaryOp::Add => x.wrapping_add(y),
            BinaryOp::Sub => x.wrapping_sub(y),
            BinaryOp::Mul => x.wrapping_mul(y),
            // Signed products of 64-bit values fit in i128; unsigned ones in u128.
            BinaryOp::MulHigh if <$t>::MIN == 0 as $t => {
                ((x as u128 * y as u128) >> <$t>::BITS) as $t
            }
            BinaryOp::MulHigh => ((x as i128 * y as i128) >> <$t>::BITS) as $t,
            BinaryOp::Div => x / y,
            BinaryOp::Rem => x % y,
            BinaryOp::And => x & y,
            BinaryOp::Or => x | y,
            BinaryOp::Xor => x ^ y,
            BinaryOp::Shl => x.wrapping_shl(s),
            BinaryOp::Shr => x.wrapping_shr(s),
            BinaryOp::Min => x.min(y),
            BinaryOp::Max => x.max(y),
            BinaryOp::Atan2 | BinaryOp::Hypot => unreachable!("floats only"),
        };
        r.to_bits()
    }};
}

macro_rules! int_cmp_reference {
    ($t:ty, $op:expr, $a:expr, $b:expr) => {{
        let (x, y) = (<$t as Elem>::from_bits($a), <$t as Elem>::from_bits($b));
        (match $op {
            CmpOp::Eq => x == y,
            CmpOp::Ne => x != y,
            CmpOp::Lt => x < y,
            CmpOp::Le => x <= y,
            CmpOp::Gt => x > y,
            CmpOp::Ge => x >= y,
        }) as u64
    }};
}

macro_rules! check_int_type {
    ($t:ty, $rng:expr, $mem:expr) => {{
        let ty = <$t as Elem>::TY;
        let a = values($rng, ty, 300);
        let mut b = values($rng, ty, 300);
        b.reverse();
        // Divisors: never zero, never MIN / -1.
        let bdiv: Vec<u64> = a
            .iter()
            .zip(&b)
            .map(|(&x, &y)| {
                let (xv, yv) = (<$t as Elem>::from_bits(x), <$t as Elem>::from_bits(y));
                if yv == 0 as $t || xv.checked_div(yv).is_none() {
                    3
                } else {
                    y
                }
            })
            .collect();
        let shifts: Vec<u64> = (0..300).map(|i| (i * 7 % 200) as u64).collect();
        for op in INT_BINOPS {
            if op == BinaryOp::MulHigh && <$t>::BITS < 32 {
                continue; // 32- and 64-bit integers only
            }
            let rhs = match op {
                BinaryOp::Div | BinaryOp::Rem => &bdiv,
                BinaryOp::Shl | BinaryOp::Shr => &shifts,
                _ => &b,
            };
            let rty = if matches!(op, BinaryOp::Shl | BinaryOp::Shr) {
                S::U32
            } else {
                ty
            };
            let got = run_map($mem, &[ty, rty], &[a.clone(), rhs.clone()], ty, |k, v| {
                k.bin(op, v[0], v[1])
            });
            for i in 0..a.len() {
                let want = int_reference!($t, op, a[i], rhs[i]);
                assert_eq!(got[i], want, "{ty} {:#x} {op:?} {:#x}", a[i], rhs[i]);
            }
        }
        for op in CMPS {
            let got = run_map($mem, &[ty, ty], &[a.clone(), b.clone()], S::Bool, |k, v| {
                k.cmp(op, v[0], v[1])
            });
            for i in 0..a.len() {
                assert_eq!(
                    got[i],
                    int_cmp_reference!($t, op, a[i], b[i]),
                    "{ty} {op:?}"
                );
            }
        }
        let neg = run_map($mem, &[ty], std::slice::from_ref(&a), ty, |k, v| {
            k.un(UnaryOp::Neg, v[0])
        });
        let not = run_map($mem, &[ty], std::slice::from_ref(&a), ty, |k, v| {
            k.un(UnaryOp::Not, v[0])
        });
        for i in 0..a.len() {
            let x = <$t as Elem>::from_bits(a[i]);
            assert_eq!(neg[i], x.wrapping_neg().to_bits());
            assert_eq!(not[i], (!x).to_bits());
        }
        // Bit counts, with zero and all-ones among the operands.
        let mut bits = a.clone();
        bits.extend([0, <$t>::MAX.to_bits(), <$t>::MIN.to_bits(), 1]);
        let counts = [
            UnaryOp::CountOnes,
            UnaryOp::LeadingZeros,
            UnaryOp::TrailingZeros,
        ];
        for op in counts {
            let got = run_map($mem, &[ty], std::slice::from_ref(&bits), ty, |k, v| {
                k.un(op, v[0])
            });
            for i in 0..bits.len() {
                let x = <$t as Elem>::from_bits(bits[i]);
                let want = match op {
                    UnaryOp::CountOnes => x.count_ones(),
                    UnaryOp::LeadingZeros => x.leading_zeros(),
                    _ => x.trailing_zeros(),
                };
                assert_eq!(got[i], (want as $t).to_bits(), "{ty} {op:?} {x}");
            }
        }
    }};
}

#[test]
fn integer_ops_match_rust() {
    let mut rng = StdRng::seed_from_u64(11);
    let mem = Memory::new();
    check_int_type!(i8, &mut rng, &mem);
    check_int_type!(i16, &mut rng, &mem);
    check_int_type!(i32, &mut rng, &mem);
    check_int_type!(i64, &mut rng, &mem);
    check_int_type!(u8, &mut rng, &mem);
    check_int_type!(u16, &mut rng, &mem);
    check_int_type!(u32, &mut rng, &mem);
    check_int_type!(u64, &mut rng, &mem);
}

#[test]
fn bool_ops_select_and_bitcast() {
    let mem = Memory::new();
    let a: Vec<u64> = (0..64).map(|i| i & 1).collect();
    let b: Vec<u64> = (0..64).map(|i| (i >> 1) & 1).collect();
    for (op, f) in [
        (BinaryOp::And, (|x, y| x & y) as fn(u64, u64) -> u64),
        (BinaryOp::Or, |x, y| x | y),
        (BinaryOp::Xor, |x, y| x ^ y),
    ] {
        let got = run_map(
            &mem,
            &[S::Bool, S::Bool],
            &[a.clone(), b.clone()],
            S::Bool,
            |k, v| k.bin(op, v[0], v[1]),
        );
        assert!((0..64).all(|i| got[i] == f(a[i], b[i])));
    }
    let not = run_map(
        &mem,
        &[S::Bool],
        std::slice::from_ref(&a),
        S::Bool,
        |k, v| k.un(UnaryOp::Not, v[0]),
    );
    assert!((0..64).all(|i| not[i] == 1 - a[i]));
    let eq = run_map(
        &mem,
        &[S::Bool, S::Bool],
        &[a.clone(), b.clone()],
        S::Bool,
        |k, v| k.cmp(CmpOp::Lt, v[0], v[1]),
    );
    assert!((0..64).all(|i| eq[i] == (a[i] < b[i]) as u64));
    let x: Vec<u64> = (0..64).map(|i| (i as f32 * 1.5).to_bits() as u64).collect();
    let y: Vec<u64> = (0..64)
        .map(|i| (i as f32 * -2.0).to_bits() as u64)
        .collect();
    let sel = run_map(
        &mem,
        &[S::Bool, S::F32, S::F32],
        &[a.clone(), x.clone(), y.clone()],
        S::F32,
        |k, v| k.select(v[0], v[1], v[2]),
    );
    assert!((0..64).all(|i| sel[i] == if a[i] == 1 { x[i] } else { y[i] }));
    let bc = run_map(&mem, &[S::F32], std::slice::from_ref(&x), S::I32, |k, v| {
        k.op(Op::Bitcast {
            value: v[0],
            to: S::I32,
        })
    });
    assert_eq!(bc, x);
}

// ---------------------------------------------------------------------------------------------
// Floats

/// The binary operations defined on floats.
fn float_binops() -> impl Iterator<Item = BinaryOp> {
    BinaryOp::ALL
        .iter()
        .copied()
        .filter(|b| !b.is_integer_only())
}

/// The unary operations defined on floats.
fn float_unops() -> impl Iterator<Item = UnaryOp> {
    UnaryOp::ALL
        .iter()
        .copied()
        .filter(|u| *u != UnaryOp::Not && !u.is_bit_count())
}

macro_rules! float_bin {
    ($op:expr, $x:expr, $y:expr) => {
        match $op {
            BinaryOp::Add => $x + $y,
            BinaryOp::Sub => $x - $y,
            BinaryOp::Mul => $x * $y,
            BinaryOp::Div => $x / $y,
            BinaryOp::Rem => $x % $y,
            BinaryOp::Min => $x.min($y),
            BinaryOp::Max => $x.max($y),
            // Computed in f64 (Rust's std) and rounded once, as the IR defines it.
            BinaryOp::Atan2 => $x.via2($y, f64::atan2),
            BinaryOp::Hypot => $x.via2($y, f64::hypot),
            _ => unreachable!(),
        }
    };
}
macro_rules! float_un {
    ($op:expr, $x:expr) => {
        match $op {
            UnaryOp::Neg => -$x,
            UnaryOp::Abs => $x.abs(),
            UnaryOp::Sqrt => $x.sqrt(),
            UnaryOp::Floor => $x.floor(),
            UnaryOp::Ceil => $x.ceil(),
            UnaryOp::Round => $x.round(),
            UnaryOp::Trunc => $x.trunc(),
            UnaryOp::Exp => $x.exp(),
            UnaryOp::Exp2 => $x.exp2(),
            UnaryOp::Exp2Ftz => $x.exp2_flushing(),
            UnaryOp::Ln => $x.ln(),
            UnaryOp::Log2 => $x.log2(),
            UnaryOp::Sin => $x.sin(),
            UnaryOp::Cos => $x.cos(),
            UnaryOp::Tanh => $x.tanh(),
            // Computed in f64 and rounded once, as the IR defines them; the inverse hyperbolic
            // functions by the IR's accurate forms (std's lose accuracy near their poles).
            UnaryOp::Tan => $x.via(f64::tan),
            UnaryOp::Atan => $x.via(f64::atan),
            UnaryOp::Sinh => $x.via(f64::sinh),
            UnaryOp::Cosh => $x.via(f64::cosh),
            UnaryOp::Asinh => $x.via(math::asinh),
            UnaryOp::Acosh => $x.via(math::acosh),
            UnaryOp::Atanh => $x.via(math::atanh),
            UnaryOp::ExpM1 => $x.via(f64::exp_m1),
            UnaryOp::Ln1p => $x.via(f64::ln_1p),
            UnaryOp::Not | UnaryOp::CountOnes | UnaryOp::LeadingZeros | UnaryOp::TrailingZeros => {
                unreachable!()
            }
        }
    };
}
macro_rules! float_cmp {
    ($op:expr, $x:expr, $y:expr) => {
        match $op {
            CmpOp::Eq => $x == $y,
            CmpOp::Ne => $x != $y,
            CmpOp::Lt => $x < $y,
            CmpOp::Le => $x <= $y,
            CmpOp::Gt => $x > $y,
            CmpOp::Ge => $x >= $y,
        }
    };
}

/// Checks one float type; `$t` is the storage type, computed as `$c` through `$to`/`$from`
/// (the IR computes `f16`/`bf16` in `f32` and rounds back).
macro_rules! check_float_type {
    ($t:ty, $to:expr, $from:expr, $rng:expr, $mem:expr) => {{
        let ty = <$t as Elem>::TY;
        let (to, from) = ($to, $from);
        let a = values($rng, ty, 300);
        let mut b = values($rng, ty, 300);
        b.rotate_left(7);
        let mut c = values($rng, ty, 300);
        c.rotate_left(13);
        let x = |bits: u64| to(<$t as Elem>::from_bits(bits));
        for op in float_binops() {
            let got = run_map($mem, &[ty, ty], &[a.clone(), b.clone()], ty, |k, v| {
                k.bin(op, v[0], v[1])
            });
            for i in 0..a.len() {
                let want = Elem::to_bits(from(float_bin!(op, x(a[i]), x(b[i]))));
                assert!(
                    same(ty, got[i], want),
                    "{ty} {:#x} {op:?} {:#x}: {:#x} vs {want:#x}",
                    a[i],
                    b[i],
                    got[i]
                );
            }
        }
        for op in float_unops() {
            let got = run_map($mem, &[ty], std::slice::from_ref(&a), ty, |k, v| {
                k.un(op, v[0])
            });
            for i in 0..a.len() {
                let want = if op == UnaryOp::Neg {
                    // An exact sign flip, also for NaN.
                    a[i] ^ (1 << (ty.bits() - 1))
                } else {
                    Elem::to_bits(from(float_un!(op, x(a[i]))))
                };
                assert!(
                    same(ty, got[i], want),
                    "{ty} {op:?} {:#x}: {:#x} vs {want:#x}",
                    a[i],
                    got[i]
                );
            }
        }
        for op in CMPS {
            let got = run_map($mem, &[ty, ty], &[a.clone(), b.clone()], S::Bool, |k, v| {
                k.cmp(op, v[0], v[1])
            });
            for i in 0..a.len() {
                assert_eq!(
                    got[i],
                    float_cmp!(op, x(a[i]), x(b[i])) as u64,
                    "{ty} {:#x} {op:?} {:#x}",
                    a[i],
                    b[i]
                );
            }
        }
        let got = run_map(
            $mem,
            &[ty, ty, ty],
            &[a.clone(), b.clone(), c.clone()],
            ty,
            |k, v| k.op(Op::Ternary(TernaryOp::MulAdd, v[0], v[1], v[2])),
        );
        for i in 0..a.len() {
            let want = Elem::to_bits(from(x(a[i]).mul_add(x(b[i]), x(c[i]))));
            assert!(same(ty, got[i], want), "{ty} mul_add");
        }
    }};
}

#[test]
fn float_ops_match_rust() {
    let mut rng = StdRng::seed_from_u64(12);
    let mem = Memory::new();
    check_float_type!(f32, |x: f32| x, |x: f32| x, &mut rng, &mem);
    check_float_type!(f64, |x: f64| x, |x: f64| x, &mut rng, &mem);
    check_float_type!(f16, f16::to_f32, f16::from_f32, &mut rng, &mem);
    check_float_type!(bf16, bf16::to_f32, bf16::from_f32, &mut rng, &mem);
}

#[test]
fn float_semantics_spot_checks() {
    let mem = Memory::new();
    let f = |v: &[f32]| v.iter().map(|x| x.to_bits() as u64).collect::<Vec<_>>();
    // Min/Max return the other operand when one is NaN; Ne is true with NaN.
    let a = f(&[f32::NAN, 1.0, -0.0, 2.5, -2.5]);
    let b = f(&[3.0, f32::NAN, 0.0, 0.0, 0.0]);
    let min = run_map(
        &mem,
        &[S::F32, S::F32],
        &[a.clone(), b.clone()],
        S::F32,
        |k, v| k.bin(BinaryOp::Min, v[0], v[1]),
    );
    assert_eq!(f32::from_bits(min[0] as u32), 3.0);
    assert_eq!(f32::from_bits(min[1] as u32), 1.0);
    let ne = run_map(
        &mem,
        &[S::F32, S::F32],
        &[a.clone(), b.clone()],
        S::Bool,
        |k, v| k.cmp(CmpOp::Ne, v[0], v[1]),
    );
    assert_eq!(&ne[..2], &[1, 1]);
    let round = run_map(&mem, &[S::F32], std::slice::from_ref(&a), S::F32, |k, v| {
        k.un(UnaryOp::Round, v[0])
    });
    assert_eq!(f32::from_bits(round[3] as u32), 3.0, "half away from zero");
    assert_eq!(f32::from_bits(round[4] as u32), -3.0);
    // Float to int saturates, NaN gives 0.
    let big = f(&[f32::NAN, 1e20, -1e20, -1.9, 1.9]);
    let to_i = run_map(&mem, &[S::F32], &[big], S::I32, |k, v| k.cast(v[0], S::I32));
    assert_eq!(
        to_i.iter().map(|&x| x as u32 as i32).collect::<Vec<_>>(),
        [0, i32::MAX, i32::MIN, -1, 1]
    );
}
