//! Device `printf` (`Stmt::Print`) on the emulator: the captured text is compared with what
//! the C library's `snprintf` writes for the same format and promoted arguments, on random
//! formats of the supported subset and on every argument type; plus lane order, divergence
//! and capture scoping.

mod common;

use std::ffi::{CString, c_char, c_int, c_long};

use common::*;
use cuprum_emu::{Memory, capture_prints, launch};
use cuprum_ir::ScalarType as S;
use cuprum_ir::*;
use half::{bf16, f16};
use rand::{Rng, SeedableRng, rngs::StdRng};

unsafe extern "C" {
    fn snprintf(buf: *mut c_char, n: usize, format: *const c_char, ...) -> c_int;
}

/// A promoted argument, as C passes it.
#[derive(Clone, Copy, Debug)]
enum CArg {
    Int(c_int),
    Long(c_long),
    Double(f64),
}

/// The C library's output for `format` with one argument.
fn c_format(format: &str, arg: CArg) -> String {
    let f = CString::new(format).unwrap();
    let mut buf = vec![0u8; 4096];
    // SAFETY: the buffer is 4096 bytes and we pass its size; the argument matches the one
    // conversion of `format` (checked by the IR validator when the kernel was built).
    let n = unsafe {
        let out = buf.as_mut_ptr().cast::<c_char>();
        match arg {
            CArg::Int(v) => snprintf(out, buf.len(), f.as_ptr(), v),
            CArg::Long(v) => snprintf(out, buf.len(), f.as_ptr(), v),
            CArg::Double(v) => snprintf(out, buf.len(), f.as_ptr(), v),
        }
    };
    assert!(
        (0..4096).contains(&n),
        "snprintf of {format:?} returned {n}"
    );
    buf.truncate(n as usize);
    String::from_utf8(buf).unwrap()
}

/// Launches `kernel` on one block of `threads` threads and returns what it printed.
fn printed(kernel: &Kernel, threads: u32) -> String {
    let mem = Memory::new();
    let (r, text) =
        capture_prints(|| launch(&mem, kernel, dims1(u64::from(threads), threads), &[]));
    r.unwrap();
    text
}

/// A random conversion of the subset taking an argument of `class` (0: 32-bit integer,
/// 1: 64-bit integer, 2: double).
fn random_conversion(rng: &mut StdRng, class: u32) -> String {
    let mut s = String::from("%");
    for f in ['-', '+', ' ', '#', '0'] {
        if rng.random_bool(0.2) {
            s.push(f);
        }
    }
    if rng.random_bool(0.5) {
        s += &rng.random_range(0..14).to_string();
    }
    if rng.random_bool(0.5) {
        s.push('.');
        if rng.random_bool(0.8) {
            s += &rng.random_range(0..12).to_string();
        }
    }
    let conv = match class {
        0 | 1 => {
            s += if class == 0 {
                ""
            } else if rng.random_bool(0.5) {
                "l"
            } else {
                "ll"
            };
            ['d', 'i', 'u', 'o', 'x', 'X'][rng.random_range(0..6)]
        }
        _ => {
            if rng.random_bool(0.2) {
                s.push('l');
            }
            ['f', 'e', 'E', 'g', 'G'][rng.random_range(0..5)]
        }
    };
    if matches!(conv, 'd' | 'i' | 'u') {
        s = s.replace('#', "");
    }
    s.push(conv);
    s
}

/// A double worth printing: zeros, infinities, NaNs, tiny and huge values, integers, ties.
fn interesting_double(rng: &mut StdRng) -> f64 {
    let sign = if rng.random_bool(0.5) { -1.0 } else { 1.0 };
    sign * match rng.random_range(0..10) {
        0 => 0.0,
        1 => f64::INFINITY,
        2 => f64::NAN,
        3 => f64::from_bits(rng.random_range(1..1u64 << 52)),
        4 => rng.random_range(0..100_000) as f64,
        5 => rng.random_range(0..1000) as f64 + 0.5,
        6 => rng.random_range(0..1000) as f64 / 1024.0,
        7 => 10f64.powi(rng.random_range(-30..30)),
        8 => f64::from_bits(rng.random::<u64>() & !(1 << 63)),
        _ => rng.random_range(-1.0..1.0) * 10f64.powi(rng.random_range(-8..12)),
    }
}

#[test]
fn random_formats_match_the_c_library() {
    let mut rng = StdRng::seed_from_u64(0x9f);
    let mut k = K::new("formats");
    let mut expected = String::new();
    let int_types = [S::Bool, S::I8, S::I16, S::I32, S::U8, S::U16, S::U32];
    let float_types = [S::F16, S::BF16, S::F32, S::F64];
    for case in 0..1500 {
        let class = case % 3;
        let conv = random_conversion(&mut rng, class);
        let format = format!("<{conv}>\n");
        let (value, carg) = match class {
            0 => {
                let ty = int_types[rng.random_range(0..int_types.len())];
                let c = Constant::new(ty, rng.random());
                let promoted = match ty {
                    S::Bool => c.bits as u32,
                    S::I8 => c.bits as u8 as i8 as i32 as u32,
                    S::I16 => c.bits as u16 as i16 as i32 as u32,
                    _ => c.bits as u32,
                };
                (k.c(c), CArg::Int(promoted as c_int))
            }
            1 => {
                let ty = if rng.random_bool(0.5) { S::I64 } else { S::U64 };
                let c = Constant::new(ty, rng.random());
                (k.c(c), CArg::Long(c.bits as c_long))
            }
            _ => {
                let ty = float_types[rng.random_range(0..float_types.len())];
                let x = interesting_double(&mut rng);
                let (bits, exact) = match ty {
                    S::F16 => {
                        let h = f16::from_f64(x);
                        (u64::from(h.to_bits()), h.to_f64())
                    }
                    S::BF16 => {
                        let h = bf16::from_f64(x);
                        (u64::from(h.to_bits()), h.to_f64())
                    }
                    S::F32 => ((x as f32).to_bits() as u64, f64::from(x as f32)),
                    _ => (x.to_bits(), x),
                };
                (k.c(Constant::new(ty, bits)), CArg::Double(exact))
            }
        };
        k.b.print(format.clone(), vec![value]).unwrap();
        expected += &c_format(&format, carg);
    }
    let got = printed(&k.finish(), 1);
    for (i, (g, w)) in got.lines().zip(expected.lines()).enumerate() {
        assert_eq!(g, w, "print {i}");
    }
    assert_eq!(got, expected);
}

#[test]
fn several_arguments_lanes_in_order() {
    let mut k = K::new("lanes");
    let t = k.tid();
    let neg = k.cast(t, S::I32);
    let zero = k.i32(0);
    let neg = k.bin(BinaryOp::Sub, zero, neg);
    let half_ = k.cast(t, S::F32);
    let h = k.f32(0.5);
    let half_ = k.mul(half_, h);
    let wide = k.cast(t, S::I64);
    let big = k.c(Constant::i64(-(1 << 40)));
    let wide = k.mul(wide, big);
    let odd = k.u32(1);
    let odd = k.bin(BinaryOp::And, t, odd);
    let one = k.u32(1);
    let is_odd = k.cmp(CmpOp::Eq, odd, one);
    k.b.print(
        "t=%u neg=%d half=%.3f wide=%lld\n",
        vec![t, neg, half_, wide],
    )
    .unwrap();
    k.if_(is_odd, |k| {
        k.b.print("odd %u%%\n", vec![t]).unwrap();
    });
    let got = printed(&k.finish(), 40);
    let mut want = String::new();
    // Warp 0 prints its 32 lines, then its odd lanes, then warp 1 does the same.
    for warp in [0..32u32, 32..40] {
        for t in warp.clone() {
            let wide = i64::from(t) * -(1 << 40);
            want += &format!(
                "t={t} neg={} half={:.3} wide={wide}\n",
                -(t as i32),
                t as f32 * 0.5
            );
        }
        for t in warp.filter(|t| t % 2 == 1) {
            want += &format!("odd {t}%\n");
        }
    }
    assert_eq!(got, want);
}

#[test]
fn capture_belongs_to_the_launching_thread() {
    let mut k = K::new("hello");
    k.b.print("hello\n", vec![]).unwrap();
    let kernel = k.finish();
    let (inner, outer) = capture_prints(|| {
        let other = std::thread::scope(|s| {
            s.spawn(|| capture_prints(|| printed(&kernel, 2)).0)
                .join()
                .unwrap()
        });
        let ((), text) = capture_prints(|| {
            let mem = Memory::new();
            launch(&mem, &kernel, dims1(1, 1), &[]).unwrap();
        });
        (other, text)
    });
    assert_eq!(inner, ("hello\nhello\n".to_string(), "hello\n".to_string()));
    assert_eq!(outer, "");
}
