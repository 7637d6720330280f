//! The transcendental float methods in kernels, for `f32` and `f64` (cuda-oxide's
//! `math_atan`, `math_hyperbolic` and `math_tan` use them; `exp_m1`, `ln_1p` and `hypot`
//! too): one kernel per function and
//! width, run on random inputs over each function's whole domain (every binade, both signs)
//! and the special values, every element checked against a plain-Rust reference computed in
//! `f64`: within 2 ulp (the GPU's sequences are approximations of about 1 ulp; the emulator
//! computes the IR's definition, Rust's `std`), and exactly at zeros, infinities and NaN
//! (signed zeros, `atan2`'s quadrants, overflow to infinity, `acosh(x < 1)`, `atanh(±1)`).

mod common;

use common::{blocks_for, ctx};
use cuprum::simt::{DisjointSlice, kernel, launch_contract, thread};
use cuprum::{DeviceBuffer, LaunchConfig1D, cuda_module};
use cuprum_testkit::poison::poisoned;
use cuprum_testkit::random::rng;
use rand::Rng;
use rand::rngs::StdRng;

#[cuda_module]
mod kernels {
    use super::*;

    #[kernel]
    #[launch_contract(domain = 1, block = (256, 1, 1))]
    pub fn exp_f32(x: &[f32], mut out: DisjointSlice<f32>) {
        let i = thread::index_1d();
        if let Some(o) = out.get_mut(i) {
            *o = x[i.get()].exp();
        }
    }

    #[kernel]
    #[launch_contract(domain = 1, block = (256, 1, 1))]
    pub fn exp_f64(x: &[f64], mut out: DisjointSlice<f64>) {
        let i = thread::index_1d();
        if let Some(o) = out.get_mut(i) {
            *o = x[i.get()].exp();
        }
    }

    #[kernel]
    #[launch_contract(domain = 1, block = (256, 1, 1))]
    pub fn exp2_f32(x: &[f32], mut out: DisjointSlice<f32>) {
        let i = thread::index_1d();
        if let Some(o) = out.get_mut(i) {
            *o = x[i.get()].exp2();
        }
    }

    #[kernel]
    #[launch_contract(domain = 1, block = (256, 1, 1))]
    pub fn exp2_f64(x: &[f64], mut out: DisjointSlice<f64>) {
        let i = thread::index_1d();
        if let Some(o) = out.get_mut(i) {
            *o = x[i.get()].exp2();
        }
    }

    #[kernel]
    #[launch_contract(domain = 1, block = (256, 1, 1))]
    pub fn ln_f32(x: &[f32], mut out: DisjointSlice<f32>) {
        let i = thread::index_1d();
        if let Some(o) = out.get_mut(i) {
            *o = x[i.get()].ln();
        }
    }

    #[kernel]
    #[launch_contract(domain = 1, block = (256, 1, 1))]
    pub fn ln_f64(x: &[f64], mut out: DisjointSlice<f64>) {
        let i = thread::index_1d();
        if let Some(o) = out.get_mut(i) {
            *o = x[i.get()].ln();
        }
    }

    #[kernel]
    #[launch_contract(domain = 1, block = (256, 1, 1))]
    pub fn log2_f32(x: &[f32], mut out: DisjointSlice<f32>) {
        let i = thread::index_1d();
        if let Some(o) = out.get_mut(i) {
            *o = x[i.get()].log2();
        }
    }

    #[kernel]
    #[launch_contract(domain = 1, block = (256, 1, 1))]
    pub fn log2_f64(x: &[f64], mut out: DisjointSlice<f64>) {
        let i = thread::index_1d();
        if let Some(o) = out.get_mut(i) {
            *o = x[i.get()].log2();
        }
    }

    #[kernel]
    #[launch_contract(domain = 1, block = (256, 1, 1))]
    pub fn sin_f32(x: &[f32], mut out: DisjointSlice<f32>) {
        let i = thread::index_1d();
        if let Some(o) = out.get_mut(i) {
            *o = x[i.get()].sin();
        }
    }

    #[kernel]
    #[launch_contract(domain = 1, block = (256, 1, 1))]
    pub fn sin_f64(x: &[f64], mut out: DisjointSlice<f64>) {
        let i = thread::index_1d();
        if let Some(o) = out.get_mut(i) {
            *o = x[i.get()].sin();
        }
    }

    #[kernel]
    #[launch_contract(domain = 1, block = (256, 1, 1))]
    pub fn cos_f32(x: &[f32], mut out: DisjointSlice<f32>) {
        let i = thread::index_1d();
        if let Some(o) = out.get_mut(i) {
            *o = x[i.get()].cos();
        }
    }

    #[kernel]
    #[launch_contract(domain = 1, block = (256, 1, 1))]
    pub fn cos_f64(x: &[f64], mut out: DisjointSlice<f64>) {
        let i = thread::index_1d();
        if let Some(o) = out.get_mut(i) {
            *o = x[i.get()].cos();
        }
    }

    #[kernel]
    #[launch_contract(domain = 1, block = (256, 1, 1))]
    pub fn tan_f32(x: &[f32], mut out: DisjointSlice<f32>) {
        let i = thread::index_1d();
        if let Some(o) = out.get_mut(i) {
            *o = x[i.get()].tan();
        }
    }

    #[kernel]
    #[launch_contract(domain = 1, block = (256, 1, 1))]
    pub fn tan_f64(x: &[f64], mut out: DisjointSlice<f64>) {
        let i = thread::index_1d();
        if let Some(o) = out.get_mut(i) {
            *o = x[i.get()].tan();
        }
    }

    #[kernel]
    #[launch_contract(domain = 1, block = (256, 1, 1))]
    pub fn atan_f32(x: &[f32], mut out: DisjointSlice<f32>) {
        let i = thread::index_1d();
        if let Some(o) = out.get_mut(i) {
            *o = x[i.get()].atan();
        }
    }

    #[kernel]
    #[launch_contract(domain = 1, block = (256, 1, 1))]
    pub fn atan_f64(x: &[f64], mut out: DisjointSlice<f64>) {
        let i = thread::index_1d();
        if let Some(o) = out.get_mut(i) {
            *o = x[i.get()].atan();
        }
    }

    #[kernel]
    #[launch_contract(domain = 1, block = (256, 1, 1))]
    pub fn sinh_f32(x: &[f32], mut out: DisjointSlice<f32>) {
        let i = thread::index_1d();
        if let Some(o) = out.get_mut(i) {
            *o = x[i.get()].sinh();
        }
    }

    #[kernel]
    #[launch_contract(domain = 1, block = (256, 1, 1))]
    pub fn sinh_f64(x: &[f64], mut out: DisjointSlice<f64>) {
        let i = thread::index_1d();
        if let Some(o) = out.get_mut(i) {
            *o = x[i.get()].sinh();
        }
    }

    #[kernel]
    #[launch_contract(domain = 1, block = (256, 1, 1))]
    pub fn cosh_f32(x: &[f32], mut out: DisjointSlice<f32>) {
        let i = thread::index_1d();
        if let Some(o) = out.get_mut(i) {
            *o = x[i.get()].cosh();
        }
    }

    #[kernel]
    #[launch_contract(domain = 1, block = (256, 1, 1))]
    pub fn cosh_f64(x: &[f64], mut out: DisjointSlice<f64>) {
        let i = thread::index_1d();
        if let Some(o) = out.get_mut(i) {
            *o = x[i.get()].cosh();
        }
    }

    #[kernel]
    #[launch_contract(domain = 1, block = (256, 1, 1))]
    pub fn tanh_f32(x: &[f32], mut out: DisjointSlice<f32>) {
        let i = thread::index_1d();
        if let Some(o) = out.get_mut(i) {
            *o = x[i.get()].tanh();
        }
    }

    #[kernel]
    #[launch_contract(domain = 1, block = (256, 1, 1))]
    pub fn tanh_f64(x: &[f64], mut out: DisjointSlice<f64>) {
        let i = thread::index_1d();
        if let Some(o) = out.get_mut(i) {
            *o = x[i.get()].tanh();
        }
    }

    #[kernel]
    #[launch_contract(domain = 1, block = (256, 1, 1))]
    pub fn asinh_f32(x: &[f32], mut out: DisjointSlice<f32>) {
        let i = thread::index_1d();
        if let Some(o) = out.get_mut(i) {
            *o = x[i.get()].asinh();
        }
    }

    #[kernel]
    #[launch_contract(domain = 1, block = (256, 1, 1))]
    pub fn asinh_f64(x: &[f64], mut out: DisjointSlice<f64>) {
        let i = thread::index_1d();
        if let Some(o) = out.get_mut(i) {
            *o = x[i.get()].asinh();
        }
    }

    #[kernel]
    #[launch_contract(domain = 1, block = (256, 1, 1))]
    pub fn acosh_f32(x: &[f32], mut out: DisjointSlice<f32>) {
        let i = thread::index_1d();
        if let Some(o) = out.get_mut(i) {
            *o = x[i.get()].acosh();
        }
    }

    #[kernel]
    #[launch_contract(domain = 1, block = (256, 1, 1))]
    pub fn acosh_f64(x: &[f64], mut out: DisjointSlice<f64>) {
        let i = thread::index_1d();
        if let Some(o) = out.get_mut(i) {
            *o = x[i.get()].acosh();
        }
    }

    #[kernel]
    #[launch_contract(domain = 1, block = (256, 1, 1))]
    pub fn atanh_f32(x: &[f32], mut out: DisjointSlice<f32>) {
        let i = thread::index_1d();
        if let Some(o) = out.get_mut(i) {
            *o = x[i.get()].atanh();
        }
    }

    #[kernel]
    #[launch_contract(domain = 1, block = (256, 1, 1))]
    pub fn atanh_f64(x: &[f64], mut out: DisjointSlice<f64>) {
        let i = thread::index_1d();
        if let Some(o) = out.get_mut(i) {
            *o = x[i.get()].atanh();
        }
    }

    #[kernel]
    #[launch_contract(domain = 1, block = (256, 1, 1))]
    pub fn atan2_f32(y: &[f32], x: &[f32], mut out: DisjointSlice<f32>) {
        let i = thread::index_1d();
        if let Some(o) = out.get_mut(i) {
            *o = y[i.get()].atan2(x[i.get()]);
        }
    }

    #[kernel]
    #[launch_contract(domain = 1, block = (256, 1, 1))]
    pub fn atan2_f64(y: &[f64], x: &[f64], mut out: DisjointSlice<f64>) {
        let i = thread::index_1d();
        if let Some(o) = out.get_mut(i) {
            *o = y[i.get()].atan2(x[i.get()]);
        }
    }

    #[kernel]
    #[launch_contract(domain = 1, block = (256, 1, 1))]
    pub fn exp_m1_f32(x: &[f32], mut out: DisjointSlice<f32>) {
        let i = thread::index_1d();
        if let Some(o) = out.get_mut(i) {
            *o = x[i.get()].exp_m1();
        }
    }

    #[kernel]
    #[launch_contract(domain = 1, block = (256, 1, 1))]
    pub fn exp_m1_f64(x: &[f64], mut out: DisjointSlice<f64>) {
        let i = thread::index_1d();
        if let Some(o) = out.get_mut(i) {
            *o = x[i.get()].exp_m1();
        }
    }

    #[kernel]
    #[launch_contract(domain = 1, block = (256, 1, 1))]
    pub fn ln_1p_f32(x: &[f32], mut out: DisjointSlice<f32>) {
        let i = thread::index_1d();
        if let Some(o) = out.get_mut(i) {
            *o = x[i.get()].ln_1p();
        }
    }

    #[kernel]
    #[launch_contract(domain = 1, block = (256, 1, 1))]
    pub fn ln_1p_f64(x: &[f64], mut out: DisjointSlice<f64>) {
        let i = thread::index_1d();
        if let Some(o) = out.get_mut(i) {
            *o = x[i.get()].ln_1p();
        }
    }

    #[kernel]
    #[launch_contract(domain = 1, block = (256, 1, 1))]
    pub fn hypot_f32(x: &[f32], y: &[f32], mut out: DisjointSlice<f32>) {
        let i = thread::index_1d();
        if let Some(o) = out.get_mut(i) {
            *o = x[i.get()].hypot(y[i.get()]);
        }
    }

    #[kernel]
    #[launch_contract(domain = 1, block = (256, 1, 1))]
    pub fn hypot_f64(x: &[f64], y: &[f64], mut out: DisjointSlice<f64>) {
        let i = thread::index_1d();
        if let Some(o) = out.get_mut(i) {
            *o = x[i.get()].hypot(y[i.get()]);
        }
    }
}

/// Where a function's random inputs come from.
#[derive(Clone, Copy, Debug)]
enum Dom {
    /// Every finite value, both signs.
    All,
    /// Positive values.
    Positive,
    /// Values in `[lo, hi]`.
    Range(f64, f64),
    /// `[1, max]`, half of them just above 1.
    AtLeastOne,
    /// `(-1, 1)`, half of them next to `±1`.
    UnitInterval,
}

/// The exponent range of a float type: its smallest subnormal's and its largest finite's.
#[derive(Clone, Copy)]
struct Width {
    min_exp: i32,
    max_exp: i32,
    /// Bits of mantissa, to reach the values next to 1.
    digits: i32,
}

const F32: Width = Width {
    min_exp: -149,
    max_exp: 127,
    digits: 24,
};
const F64: Width = Width {
    min_exp: -1074,
    max_exp: 1023,
    digits: 53,
};

/// `m 2^e`, `m` uniform in [1, 2), `e` uniform in `[lo, hi]`.
fn log_uniform(rng: &mut StdRng, lo: i32, hi: i32) -> f64 {
    let e = rng.random_range(lo..=hi);
    rng.random_range(1.0..2.0) * 2f64.powi(e)
}

/// `n` random inputs of `dom`, as `f64`s representable in `w`'s type.
fn inputs(rng: &mut StdRng, dom: Dom, w: Width, n: usize) -> Vec<f64> {
    let mut v = Vec::with_capacity(n);
    while v.len() < n {
        let sign = if rng.random() { 1.0 } else { -1.0 };
        let x = match dom {
            Dom::All => sign * log_uniform(rng, w.min_exp, w.max_exp),
            Dom::Positive => log_uniform(rng, w.min_exp, w.max_exp),
            Dom::Range(lo, hi) => {
                if rng.random_range(0..10) == 0 {
                    rng.random_range(lo..=hi)
                } else {
                    let top = lo.abs().max(hi.abs()).log2().ceil() as i32;
                    let x = sign * log_uniform(rng, w.min_exp, top);
                    if !(lo..=hi).contains(&x) {
                        continue;
                    }
                    x
                }
            }
            Dom::AtLeastOne => {
                if rng.random() {
                    1.0 + log_uniform(rng, -w.digits, -1)
                } else {
                    log_uniform(rng, 0, w.max_exp)
                }
            }
            Dom::UnitInterval => {
                if rng.random() {
                    sign * (1.0 - log_uniform(rng, -w.digits - 1, -2))
                } else {
                    sign * log_uniform(rng, w.min_exp, -2)
                }
            }
        };
        v.push(x);
    }
    v
}

/// The special inputs every function is run on.
fn specials(w: Width) -> Vec<f64> {
    let (tiny, min_normal, max) = if w.digits == 24 {
        (
            f64::from(f32::from_bits(1)),
            f64::from(f32::MIN_POSITIVE),
            f64::from(f32::MAX),
        )
    } else {
        (f64::from_bits(1), f64::MIN_POSITIVE, f64::MAX)
    };
    let mut v = vec![
        0.0,
        f64::INFINITY,
        f64::NAN,
        1.0,
        0.5,
        2.0,
        tiny,
        min_normal,
        max,
        std::f64::consts::FRAC_PI_2,
        std::f64::consts::PI,
        710.0,
        89.0,
    ];
    let neg: Vec<f64> = v.iter().map(|x| -x).collect();
    v.extend(neg);
    v
}

/// A float's place in the order of all floats: consecutive floats differ by 1, `±0` are
/// both 0, the infinities are one past the largest finite values.
fn order(bits: i128, sign_bit: i128) -> i128 {
    if bits & sign_bit != 0 {
        -(bits & (sign_bit - 1))
    } else {
        bits
    }
}

/// Checks `got` against `want` (the reference, rounded to the type): NaN where it is NaN,
/// bit for bit where `exact`, else within 2 ulp. Returns why not.
fn mismatch(got: u64, want: u64, nan: (bool, bool), sign_bit: u64, exact: bool) -> Option<String> {
    match nan {
        (true, true) => return None,
        (false, false) => {}
        _ => return Some("NaN on one side only".into()),
    }
    if exact {
        return (got != want).then(|| "an exact result is required".into());
    }
    let (sign_bit, got, want) = (i128::from(sign_bit), i128::from(got), i128::from(want));
    let d = (order(got, sign_bit) - order(want, sign_bit)).abs();
    (d > 2).then(|| format!("{d} ulp"))
}

/// Checks every element; from `special_from` on, the inputs are special values, where a
/// zero or infinite result must be exact (its sign too).
fn check<X: Copy + std::fmt::Debug, T: Copy + std::fmt::Debug>(
    name: &str,
    xs: &[X],
    got: &[T],
    want: impl Fn(usize) -> T,
    bits: impl Fn(T) -> (u64, bool),
    (sign_bit, inf): (u64, u64),
    special_from: usize,
) {
    assert_eq!(got.len(), xs.len(), "{name}: length");
    for (i, (&x, &g)) in xs.iter().zip(got).enumerate() {
        let w = want(i);
        let ((gb, gn), (wb, wn)) = (bits(g), bits(w));
        let magnitude = wb & (sign_bit - 1);
        let exact = i >= special_from && (magnitude == 0 || magnitude == inf);
        if let Some(why) = mismatch(gb, wb, (gn, wn), sign_bit, exact) {
            panic!("{name}: element {i}, input {x:?}: got {g:?}, want {w:?} ({why})");
        }
    }
}

/// The sign bit and the bits of infinity of `f32` and `f64`.
const BITS32: (u64, u64) = (1 << 31, 0x7F80_0000);
const BITS64: (u64, u64) = (1 << 63, 0x7FF0_0000_0000_0000);

fn bits32(x: f32) -> (u64, bool) {
    (u64::from(x.to_bits()), x.is_nan())
}

fn bits64(x: f64) -> (u64, bool) {
    (x.to_bits(), x.is_nan())
}

/// The accurate inverse hyperbolic functions (Rust's `std` versions lose accuracy near their
/// poles and overflow for huge arguments).
fn asinh_ref(x: f64) -> f64 {
    let a = x.abs();
    let r = if a > 1e10 {
        a.ln() + std::f64::consts::LN_2
    } else if a > 2.0 {
        (2.0 * a + 1.0 / (a + (a * a + 1.0).sqrt())).ln()
    } else {
        (a + a * a / (1.0 + (1.0 + a * a).sqrt())).ln_1p()
    };
    r.copysign(x)
}

fn acosh_ref(x: f64) -> f64 {
    if x.is_nan() || x < 1.0 {
        f64::NAN
    } else if x > 1e10 {
        x.ln() + std::f64::consts::LN_2
    } else if x > 2.0 {
        (2.0 * x - 1.0 / (x + (x * x - 1.0).sqrt())).ln()
    } else {
        let t = x - 1.0;
        (t + (2.0 * t + t * t).sqrt()).ln_1p()
    }
}

fn atanh_ref(x: f64) -> f64 {
    let a = x.abs();
    (0.5 * (2.0 * a / (1.0 - a)).ln_1p()).copysign(x)
}

const N: usize = 4096;

/// One test per function: its `f32` and its `f64` kernel.
macro_rules! unary_test {
    ($name:ident, $k32:ident, $p32:ident, $k64:ident, $p64:ident, $reference:expr, $d32:expr, $d64:expr) => {
        #[test]
        fn $name() -> cuprum::Result<()> {
            let ctx = ctx();
            let stream = ctx.default_stream();
            let module = kernels::load(ctx)?;
            let mut rng = rng(stringify!($name));
            let reference: fn(f64) -> f64 = $reference;

            let mut xs: Vec<f32> = inputs(&mut rng, $d32, F32, N)
                .into_iter()
                .map(|x| x as f32)
                .collect();
            xs.extend(specials(F32).into_iter().map(|x| x as f32));
            let dx = DeviceBuffer::from_host(&stream, &xs)?;
            let mut dout = DeviceBuffer::from_host(&stream, &poisoned::<f32>(xs.len()))?;
            let n = xs.len();
            let prepared = module.$p32(LaunchConfig1D::new(blocks_for(n, 256), 256, 0))?;
            module.$k32(&stream, &prepared, &dx, &mut dout)?;
            let got = dout.to_host_vec(&stream)?;
            let want = |i: usize| reference(f64::from(xs[i])) as f32;
            check(
                concat!(stringify!($name), " f32"),
                &xs,
                &got,
                want,
                bits32,
                BITS32,
                N,
            );

            let mut xs = inputs(&mut rng, $d64, F64, N);
            xs.extend(specials(F64));
            let dx = DeviceBuffer::from_host(&stream, &xs)?;
            let mut dout = DeviceBuffer::from_host(&stream, &poisoned::<f64>(xs.len()))?;
            let n = xs.len();
            let prepared = module.$p64(LaunchConfig1D::new(blocks_for(n, 256), 256, 0))?;
            module.$k64(&stream, &prepared, &dx, &mut dout)?;
            let got = dout.to_host_vec(&stream)?;
            let want = |i: usize| reference(xs[i]);
            check(
                concat!(stringify!($name), " f64"),
                &xs,
                &got,
                want,
                bits64,
                BITS64,
                N,
            );
            Ok(())
        }
    };
}

unary_test!(
    exp,
    exp_f32,
    prepare_exp_f32,
    exp_f64,
    prepare_exp_f64,
    f64::exp,
    Dom::Range(-104.0, 89.0),
    Dom::Range(-750.0, 710.0)
);
unary_test!(
    exp2,
    exp2_f32,
    prepare_exp2_f32,
    exp2_f64,
    prepare_exp2_f64,
    f64::exp2,
    Dom::Range(-150.0, 128.0),
    Dom::Range(-1080.0, 1025.0)
);
unary_test!(
    ln,
    ln_f32,
    prepare_ln_f32,
    ln_f64,
    prepare_ln_f64,
    f64::ln,
    Dom::Positive,
    Dom::Positive
);
unary_test!(
    log2,
    log2_f32,
    prepare_log2_f32,
    log2_f64,
    prepare_log2_f64,
    f64::log2,
    Dom::Positive,
    Dom::Positive
);
unary_test!(
    sin,
    sin_f32,
    prepare_sin_f32,
    sin_f64,
    prepare_sin_f64,
    f64::sin,
    Dom::All,
    Dom::All
);
unary_test!(
    cos,
    cos_f32,
    prepare_cos_f32,
    cos_f64,
    prepare_cos_f64,
    f64::cos,
    Dom::All,
    Dom::All
);
unary_test!(
    tan,
    tan_f32,
    prepare_tan_f32,
    tan_f64,
    prepare_tan_f64,
    f64::tan,
    Dom::All,
    Dom::All
);
unary_test!(
    atan,
    atan_f32,
    prepare_atan_f32,
    atan_f64,
    prepare_atan_f64,
    f64::atan,
    Dom::All,
    Dom::All
);
unary_test!(
    sinh,
    sinh_f32,
    prepare_sinh_f32,
    sinh_f64,
    prepare_sinh_f64,
    f64::sinh,
    Dom::Range(-90.0, 90.0),
    Dom::Range(-711.0, 711.0)
);
unary_test!(
    cosh,
    cosh_f32,
    prepare_cosh_f32,
    cosh_f64,
    prepare_cosh_f64,
    f64::cosh,
    Dom::Range(-90.0, 90.0),
    Dom::Range(-711.0, 711.0)
);
unary_test!(
    tanh,
    tanh_f32,
    prepare_tanh_f32,
    tanh_f64,
    prepare_tanh_f64,
    f64::tanh,
    Dom::All,
    Dom::All
);
unary_test!(
    asinh,
    asinh_f32,
    prepare_asinh_f32,
    asinh_f64,
    prepare_asinh_f64,
    asinh_ref,
    Dom::All,
    Dom::All
);
unary_test!(
    acosh,
    acosh_f32,
    prepare_acosh_f32,
    acosh_f64,
    prepare_acosh_f64,
    acosh_ref,
    Dom::AtLeastOne,
    Dom::AtLeastOne
);
unary_test!(
    atanh,
    atanh_f32,
    prepare_atanh_f32,
    atanh_f64,
    prepare_atanh_f64,
    atanh_ref,
    Dom::UnitInterval,
    Dom::UnitInterval
);

unary_test!(
    exp_m1,
    exp_m1_f32,
    prepare_exp_m1_f32,
    exp_m1_f64,
    prepare_exp_m1_f64,
    f64::exp_m1,
    Dom::Range(-104.0, 89.0),
    Dom::Range(-750.0, 710.0)
);
unary_test!(
    ln_1p,
    ln_1p_f32,
    prepare_ln_1p_f32,
    ln_1p_f64,
    prepare_ln_1p_f64,
    f64::ln_1p,
    Dom::All,
    Dom::All
);

/// One test per two-operand function: its `f32` and its `f64` kernel, on random pairs over
/// every binade (and pairs of close magnitudes), then every pair of special values.
macro_rules! binary_test {
    ($name:ident, $k32:ident, $p32:ident, $k64:ident, $p64:ident, $reference:expr) => {
        #[test]
        fn $name() -> cuprum::Result<()> {
            let reference: fn(f64, f64) -> f64 = $reference;
            let ctx = ctx();
            let stream = ctx.default_stream();
            let module = kernels::load(ctx)?;
            let mut rng = rng(stringify!($name));
            // Random pairs over every binade, then every pair of special values (the quadrants,
            // signed zeros and infinities).
            for w in [F32, F64] {
                let mut ys = inputs(&mut rng, Dom::All, w, N);
                let mut xs = inputs(&mut rng, Dom::All, w, N);
                // Also magnitudes close to each other, where the ratio is near 1.
                for i in 0..N / 4 {
                    xs[i] = ys[i] * rng.random_range(0.5..2.0);
                }
                let s = specials(w);
                for &y in &s {
                    for &x in &s {
                        ys.push(y);
                        xs.push(x);
                    }
                }
                let n = xs.len();
                let config = LaunchConfig1D::new(blocks_for(n, 256), 256, 0);
                if w.digits == 24 {
                    let ys: Vec<f32> = ys.iter().map(|&y| y as f32).collect();
                    let xs: Vec<f32> = xs.iter().map(|&x| x as f32).collect();
                    let (dy, dx) = (
                        DeviceBuffer::from_host(&stream, &ys)?,
                        DeviceBuffer::from_host(&stream, &xs)?,
                    );
                    let mut dout = DeviceBuffer::from_host(&stream, &poisoned::<f32>(n))?;
                    let prepared = module.$p32(config)?;
                    module.$k32(&stream, &prepared, &dy, &dx, &mut dout)?;
                    let got = dout.to_host_vec(&stream)?;
                    let pairs: Vec<(f32, f32)> =
                        ys.iter().copied().zip(xs.iter().copied()).collect();
                    let want = |i: usize| reference(f64::from(ys[i]), f64::from(xs[i])) as f32;
                    check(
                        concat!(stringify!($name), " f32"),
                        &pairs,
                        &got,
                        want,
                        bits32,
                        BITS32,
                        N,
                    );
                } else {
                    let (dy, dx) = (
                        DeviceBuffer::from_host(&stream, &ys)?,
                        DeviceBuffer::from_host(&stream, &xs)?,
                    );
                    let mut dout = DeviceBuffer::from_host(&stream, &poisoned::<f64>(n))?;
                    let prepared = module.$p64(config)?;
                    module.$k64(&stream, &prepared, &dy, &dx, &mut dout)?;
                    let got = dout.to_host_vec(&stream)?;
                    let pairs: Vec<(f64, f64)> =
                        ys.iter().copied().zip(xs.iter().copied()).collect();
                    let want = |i: usize| reference(ys[i], xs[i]);
                    check(
                        concat!(stringify!($name), " f64"),
                        &pairs,
                        &got,
                        want,
                        bits64,
                        BITS64,
                        N,
                    );
                }
            }
            Ok(())
        }
    };
}

binary_test!(
    atan2,
    atan2_f32,
    prepare_atan2_f32,
    atan2_f64,
    prepare_atan2_f64,
    f64::atan2
);
binary_test!(
    hypot,
    hypot_f32,
    prepare_hypot_f32,
    hypot_f64,
    prepare_hypot_f64,
    f64::hypot
);
