//! The PTX writer's semantics checked on a real GPU against Rust references.
//!
//! CI has no GPU, so these tests are `#[ignore]`d and run in three steps by hand where a GPU
//! machine can run Python with CuPy:
//!
//! 1. `CUPRUM_GPU_CASES=<dir> cargo test -p cuprum-ptx --test gpu_semantics -- --ignored export`
//!    writes one PTX module, one input file and a line of `cases.txt` per case;
//! 2. `python3 crates/cuprum-ptx/gpucheck/run_cases.py <dir> <outdir>` runs every case on
//!    the GPU (each thread computes one element) and writes `results.bin` and `index.txt`;
//! 3. `CUPRUM_GPU_RESULTS=<outdir> cargo test -p cuprum-ptx --test gpu_semantics -- --ignored
//!    check --nocapture` compares every element with the reference (Rust's own operations,
//!    `as` casts, `f64` functions for the transcendental ones) and prints the measured error
//!    of the approximate functions.
//!
//! Every case is an element-wise kernel: thread `i` loads operands `a` (at byte `16 i`) and
//! `b` (at `16 i + 8`) of an input buffer and stores its result at byte `8 i` of the output,
//! except the warp, memory and control-flow cases, which compute their expected output by
//! hand.

mod common;
#[path = "gpu/reference.rs"]
mod reference;
#[path = "gpu/special.rs"]
mod special;

use std::fmt::Write as _;

use common::K;
use cuprum_ir::ScalarType::{self as S};
use cuprum_ir::*;
use cuprum_ptx::{Target, write_module};
use reference::*;

/// How a result is compared.
#[derive(Clone, Copy)]
enum Tol {
    /// Bit-exact, except that any NaN matches any NaN.
    Exact,
    /// Like `Exact`, and +0 matches -0 (float `min`/`max`, whose zero sign Rust leaves open).
    ZeroSign,
    /// Within this many units in the last place of the correctly rounded result; the
    /// measured maximum is printed.
    Ulps(f64),
}

struct Case {
    name: String,
    module: Module,
    threads: u32,
    input: Vec<u8>,
    out_ty: ScalarType,
    /// Bytes between the results of consecutive threads.
    stride: usize,
    expect: Vec<u64>,
    tol: Tol,
}

// ---------------------------------------------------------------- case builders

fn elementwise(
    name: String,
    tys: (ScalarType, ScalarType),
    inputs: &[(u64, u64)],
    body: impl FnOnce(&mut K, Value, Value) -> Value,
    expect: impl Fn(u64, u64) -> u64,
    tol: Tol,
) -> Case {
    let mut k = K::new(&name);
    let inp = k.slice("inp", S::U8, SliceAccess::ReadOnly);
    let out = k.slice("out", S::U8, SliceAccess::ReadWrite);
    let i = k.global_index();
    let len = k.op(Op::SliceLen(inp));
    let four = k.u32(4);
    let n = k.bin(BinaryOp::Shr, len, four);
    let inb = k.cmp(CmpOp::Lt, i, n);
    let mut out_ty = S::U8;
    k.if_(inb, |k| {
        let sixteen = k.u64(16);
        let off = k.bin(BinaryOp::Mul, i, sixteen);
        let pa = k.elem_addr(inp, off, S::U8);
        let eight = k.u64(8);
        let pb = k.bin(BinaryOp::Add, pa, eight);
        let a = k.load(AddressSpace::Global, tys.0, pa);
        let b = k.load(AddressSpace::Global, tys.1, pb);
        let r = body(k, a, b);
        out_ty = k.b.type_of(r);
        let o = k.bin(BinaryOp::Mul, i, eight);
        let po = k.elem_addr(out, o, S::U8);
        k.store(AddressSpace::Global, po, r);
    });
    let mut input = Vec::with_capacity(inputs.len() * 16);
    for &(a, b) in inputs {
        input.extend_from_slice(&a.to_le_bytes());
        input.extend_from_slice(&b.to_le_bytes());
    }
    Case {
        name,
        module: common::one(k.finish()),
        threads: inputs.len() as u32,
        input,
        out_ty,
        stride: 8,
        expect: inputs.iter().map(|&(a, b)| expect(a, b)).collect(),
        tol,
    }
}

/// Divisors (as `ty`'s bits) that take every way of dividing by a constant.
fn constant_divisors(ty: ScalarType) -> Vec<u64> {
    cuprum_testkit::divisors::constant_divisors(ty.bits(), ty.is_signed_int())
}

fn all_cases() -> Vec<Case> {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut cases = Vec::new();
    // Casts between every pair of types.
    for from in ScalarType::ALL {
        let xs = operands(from, &mut rng, 300);
        let inputs: Vec<(u64, u64)> = xs.iter().map(|&x| (x, 0)).collect();
        for to in ScalarType::ALL {
            if to == S::Bool && from != S::Bool {
                continue;
            }
            cases.push(elementwise(
                format!("cast_{from}_{to}"),
                (from, S::U8),
                &inputs,
                |k, a, _| k.cast(a, to),
                |a, _| cast_ref(from, to, a),
                Tol::Exact,
            ));
        }
    }
    // Bitcasts between every pair of types of one size.
    for from in ScalarType::ALL.into_iter().filter(|t| *t != S::Bool) {
        let xs = operands(from, &mut rng, 100);
        let inputs: Vec<(u64, u64)> = xs.iter().map(|&x| (x, 0)).collect();
        for to in ScalarType::ALL {
            // Nothing bitcasts to `tf32` (its low bits are zero): values are cast to it.
            if to == S::Bool || to == from || to.size_bytes() != from.size_bytes() || to == S::Tf32
            {
                continue;
            }
            cases.push(elementwise(
                format!("bitcast_{from}_{to}"),
                (from, S::U8),
                &inputs,
                |k, a, _| k.op(Op::Bitcast { value: a, to }),
                |a, _| a,
                Tol::Exact,
            ));
        }
    }
    // Integer and boolean arithmetic, comparisons.
    for ty in ScalarType::ALL
        .into_iter()
        .filter(|t| !t.is_float() && t.has_arithmetic())
    {
        let xs = operands(ty, &mut rng, 40);
        let all = pairs(&xs, &xs, 4000);
        let ops: &[BinaryOp] = if ty == S::Bool {
            &[BinaryOp::And, BinaryOp::Or, BinaryOp::Xor]
        } else {
            &[
                BinaryOp::Add,
                BinaryOp::Sub,
                BinaryOp::Mul,
                BinaryOp::Div,
                BinaryOp::Rem,
                BinaryOp::And,
                BinaryOp::Or,
                BinaryOp::Xor,
                BinaryOp::Shl,
                BinaryOp::Shr,
                BinaryOp::Min,
                BinaryOp::Max,
            ]
        };
        let high: &[BinaryOp] = if ty != S::Bool && ty.bits() >= 32 {
            &[BinaryOp::MulHigh]
        } else {
            &[]
        };
        for &op in ops.iter().chain(high) {
            let shift = matches!(op, BinaryOp::Shl | BinaryOp::Shr);
            let inputs: Vec<(u64, u64)> = all
                .iter()
                .copied()
                .map(|(a, b)| if shift { (a, b & 0xFFFF_FFFF) } else { (a, b) })
                .filter(|&(a, b)| {
                    let divides = matches!(op, BinaryOp::Div | BinaryOp::Rem);
                    let (x, y) = (to_i128(ty, a), to_i128(ty, b));
                    let min = ty.is_signed_int() && x == -(1i128 << (ty.bits() - 1));
                    !(divides && (y == 0 || (min && y == -1)))
                })
                .collect();
            let rhs = if shift { S::U32 } else { ty };
            cases.push(elementwise(
                format!("{op:?}_{ty}"),
                (ty, rhs),
                &inputs,
                |k, a, b| k.bin(op, a, b),
                |a, b| {
                    if ty == S::Bool {
                        let (x, y) = (a & 1, b & 1);
                        match op {
                            BinaryOp::And => x & y,
                            BinaryOp::Or => x | y,
                            _ => x ^ y,
                        }
                    } else {
                        int_binary(op, ty, a, b)
                    }
                },
                Tol::Exact,
            ));
        }
        // Divisions by constants, which the PTX writer gives ptxas as immediates.
        if ty != S::Bool {
            let xs: Vec<u64> = operands(ty, &mut rng, 400);
            for divisor in constant_divisors(ty) {
                for op in [BinaryOp::Div, BinaryOp::Rem] {
                    let min = |x: u64| {
                        ty.is_signed_int() && to_i128(ty, x) == -(1i128 << (ty.bits() - 1))
                    };
                    let inputs: Vec<(u64, u64)> = xs
                        .iter()
                        .filter(|&&x| !(min(x) && to_i128(ty, divisor) == -1))
                        .map(|&x| (x, 0))
                        .collect();
                    cases.push(elementwise(
                        format!("{op:?}_{ty}_by_constant_{divisor:x}"),
                        (ty, S::U8),
                        &inputs,
                        |k, a, _| {
                            let d = k.c(Constant::new(ty, divisor));
                            k.bin(op, a, d)
                        },
                        |a, _| int_binary(op, ty, a, divisor),
                        Tol::Exact,
                    ));
                }
            }
        }
        let unary: &[UnaryOp] = if ty == S::Bool {
            &[UnaryOp::Not]
        } else {
            &[
                UnaryOp::Not,
                UnaryOp::Neg,
                UnaryOp::CountOnes,
                UnaryOp::LeadingZeros,
                UnaryOp::TrailingZeros,
            ]
        };
        for &u in unary {
            let inputs: Vec<(u64, u64)> = xs.iter().map(|&x| (x, 0)).collect();
            cases.push(elementwise(
                format!("{u:?}_{ty}"),
                (ty, S::U8),
                &inputs,
                |k, a, _| k.op(Op::Unary(u, a)),
                |a, _| {
                    let x = to_i128(ty, a);
                    let width = ty.bits();
                    let low = if width == 64 {
                        a
                    } else {
                        a & ((1u64 << width) - 1)
                    };
                    if ty == S::Bool {
                        1 - (a & 1)
                    } else if u == UnaryOp::CountOnes {
                        u64::from(low.count_ones())
                    } else if u == UnaryOp::LeadingZeros {
                        u64::from(low.leading_zeros() - (64 - width))
                    } else if u == UnaryOp::TrailingZeros {
                        u64::from(low.trailing_zeros().min(width))
                    } else if u == UnaryOp::Not {
                        mask(ty, !x as u64)
                    } else {
                        mask(ty, x.wrapping_neg() as u64)
                    }
                },
                Tol::Exact,
            ));
        }
        cases.push(compare_case(ty, &all));
    }
    // Float arithmetic, functions and comparisons.
    for ty in [S::F32, S::F64, S::F16, S::BF16] {
        let xs = operands(ty, &mut rng, 60);
        let all = pairs(&xs, &xs, 20000);
        for op in [
            BinaryOp::Add,
            BinaryOp::Sub,
            BinaryOp::Mul,
            BinaryOp::Div,
            BinaryOp::Rem,
            BinaryOp::Min,
            BinaryOp::Max,
        ] {
            let tol = if matches!(op, BinaryOp::Min | BinaryOp::Max) {
                Tol::ZeroSign
            } else {
                Tol::Exact
            };
            cases.push(elementwise(
                format!("{op:?}_{ty}"),
                (ty, ty),
                &all,
                |k, a, b| k.bin(op, a, b),
                |a, b| float_binary(op, ty, a, b),
                tol,
            ));
        }
        cases.push(elementwise(
            format!("MulAdd_{ty}"),
            (ty, ty),
            &all,
            move |k, a, b| {
                // c = a + b keeps a third independent-ish operand without a third load.
                let c = k.bin(BinaryOp::Sub, b, a);
                k.op(Op::Ternary(TernaryOp::MulAdd, a, b, c))
            },
            move |a, b| {
                let c = float_binary(BinaryOp::Sub, ty, b, a);
                if ty == S::F64 {
                    let (x, y, z) = (f64::from_bits(a), f64::from_bits(b), f64::from_bits(c));
                    x.mul_add(y, z).to_bits()
                } else {
                    let f = |v| to_f64(ty, v) as f32;
                    float_result(ty, f(a).mul_add(f(b), f(c)) as f64)
                }
            },
            Tol::Exact,
        ));
        let unary_inputs: Vec<(u64, u64)> = xs.iter().map(|&x| (x, 0)).collect();
        for u in [
            UnaryOp::Neg,
            UnaryOp::Abs,
            UnaryOp::Sqrt,
            UnaryOp::Floor,
            UnaryOp::Ceil,
            UnaryOp::Round,
            UnaryOp::Trunc,
        ] {
            cases.push(elementwise(
                format!("{u:?}_{ty}"),
                (ty, S::U8),
                &unary_inputs,
                |k, a, _| k.op(Op::Unary(u, a)),
                |a, _| float_unary(u, ty, a),
                Tol::Exact,
            ));
        }
        cases.push(compare_case(ty, &all));
    }
    // The approximate f32 functions, on many inputs.
    for (u, lo, hi, tol) in [
        (UnaryOp::Exp, -104.0, 89.0, 3.0),
        (UnaryOp::Exp2, -150.0, 128.0, 3.0),
        (UnaryOp::Ln, 0.0, f64::MAX, 3.0),
        (UnaryOp::Log2, 0.0, f64::MAX, 3.0),
        (UnaryOp::Sin, -f64::MAX, f64::MAX, 3.0),
        (UnaryOp::Cos, -f64::MAX, f64::MAX, 3.0),
        (UnaryOp::Tanh, -20.0, 20.0, 3.0),
    ] {
        let mut inputs: Vec<(u64, u64)> = Vec::new();
        // Every binade of f32 inside [lo, hi], both signs.
        for i in 0..120_000u64 {
            let bits = (rng.next() as u32) & 0x7FFF_FFFF;
            let x = f32::from_bits(bits) as f64;
            let x = if i % 2 == 1 { -x } else { x };
            if x >= lo && x <= hi {
                inputs.push(((x as f32).to_bits() as u64, 0));
            }
        }
        // And uniformly in the interval (where it is finite).
        let (ulo, uhi) = (lo.max(-200.0), hi.min(200.0));
        for _ in 0..20_000 {
            let t = (rng.next() >> 11) as f64 / (1u64 << 53) as f64;
            inputs.push((((ulo + t * (uhi - ulo)) as f32).to_bits() as u64, 0));
        }
        inputs.extend(float_specials(S::F32).into_iter().map(|x| (x, 0)));
        cases.push(elementwise(
            format!("{u:?}_f32"),
            (S::F32, S::U8),
            &inputs,
            |k, a, _| k.op(Op::Unary(u, a)),
            |a, _| float_unary(u, S::F32, a),
            Tol::Ulps(tol),
        ));
    }
    for ty in [S::F16, S::BF16] {
        let xs = operands(ty, &mut rng, 2000);
        let inputs: Vec<(u64, u64)> = xs.iter().map(|&x| (x, 0)).collect();
        for u in [
            UnaryOp::Exp,
            UnaryOp::Exp2,
            UnaryOp::Ln,
            UnaryOp::Log2,
            UnaryOp::Sin,
            UnaryOp::Cos,
            UnaryOp::Tanh,
        ] {
            cases.push(elementwise(
                format!("{u:?}_{ty}"),
                (ty, S::U8),
                &inputs,
                |k, a, _| k.op(Op::Unary(u, a)),
                |a, _| float_unary(u, ty, a),
                Tol::Ulps(1.0),
            ));
        }
    }
    cases.extend(special::cases());
    cases
}

fn compare_case(ty: ScalarType, all: &[(u64, u64)]) -> Case {
    // All six comparisons packed into one byte: bit k is comparison k.
    const OPS: [CmpOp; 6] = [
        CmpOp::Eq,
        CmpOp::Ne,
        CmpOp::Lt,
        CmpOp::Le,
        CmpOp::Gt,
        CmpOp::Ge,
    ];
    elementwise(
        format!("cmp_{ty}"),
        (ty, ty),
        all,
        |k, a, b| {
            let mut acc = k.c(Constant::new(S::U8, 0));
            for (n, op) in OPS.into_iter().enumerate() {
                let p = k.cmp(op, a, b);
                let v = k.cast(p, S::U8);
                let s = k.u32(n as u32);
                let v = k.bin(BinaryOp::Shl, v, s);
                acc = k.bin(BinaryOp::Or, acc, v);
            }
            acc
        },
        |a, b| {
            OPS.into_iter()
                .enumerate()
                .map(|(n, op)| compare(op, ty, a, b) << n)
                .sum()
        },
        Tol::Exact,
    )
}

// ---------------------------------------------------------------- export and check

fn dir_from(var: &str) -> Option<std::path::PathBuf> {
    std::env::var_os(var).map(Into::into)
}

#[test]
#[ignore = "writes the GPU cases; see the module docs"]
fn export() {
    let Some(dir) = dir_from("CUPRUM_GPU_CASES") else {
        eprintln!("set CUPRUM_GPU_CASES=<dir>");
        return;
    };
    std::fs::create_dir_all(&dir).unwrap();
    let mut index = String::new();
    for case in all_cases() {
        let ptx = write_module(&case.module, Target::Sm90).unwrap();
        std::fs::write(dir.join(format!("{}.ptx", case.name)), ptx).unwrap();
        std::fs::write(dir.join(format!("{}.in", case.name)), &case.input).unwrap();
        let _ = writeln!(index, "{} {}", case.name, case.threads);
    }
    std::fs::write(dir.join("cases.txt"), index).unwrap();
}

fn ulp_error(ty: ScalarType, got: u64, want: u64) -> f64 {
    let (g, w) = (to_f64(ty, got), to_f64(ty, want));
    if g.is_nan() || w.is_nan() {
        return if g.is_nan() && w.is_nan() {
            0.0
        } else {
            f64::INFINITY
        };
    }
    if g == w {
        return 0.0;
    }
    if g.is_infinite() || w.is_infinite() {
        return f64::INFINITY;
    }
    // The spacing of `ty` at the correctly rounded result.
    let next = mask(ty, (want & !(1u64 << (ty.bits() - 1))) + 1);
    let ulp = (to_f64(ty, next) - w.abs()).abs();
    (g - w).abs() / ulp
}

#[test]
#[ignore = "checks GPU results; see the module docs"]
fn check() {
    let Some(dir) = dir_from("CUPRUM_GPU_RESULTS") else {
        eprintln!("set CUPRUM_GPU_RESULTS=<dir>");
        return;
    };
    let index = std::fs::read_to_string(dir.join("index.txt")).unwrap();
    let results = std::fs::read(dir.join("results.bin")).unwrap();
    let mut failures = Vec::new();
    let mut report = String::new();
    let cases = all_cases();
    let mut checked = 0;
    for line in index.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (name, offset, len, status) = (
            f[0],
            f[1].parse::<usize>().unwrap(),
            f[2].parse::<usize>().unwrap(),
            f[3],
        );
        let Some(case) = cases.iter().find(|c| c.name == name) else {
            failures.push(format!("{name}: unknown case"));
            continue;
        };
        if status != "ok" {
            failures.push(format!("{name}: {}", f[3..].join(" ")));
            continue;
        }
        checked += 1;
        let out = &results[offset..offset + len];
        let size = case.out_ty.size_bytes() as usize;
        let mut worst = (0.0f64, 0usize);
        let mut bad = 0;
        for (i, &want) in case.expect.iter().enumerate() {
            let stride = case.stride;
            let mut word = [0u8; 8];
            word[..size].copy_from_slice(&out[i * stride..i * stride + size]);
            let got = u64::from_le_bytes(word);
            let ty = case.out_ty;
            let ok = match case.tol {
                Tol::Exact | Tol::ZeroSign if ty.is_float() => {
                    let (g, w) = (to_f64(ty, got), to_f64(ty, want));
                    got == want
                        || (g.is_nan() && w.is_nan())
                        || (matches!(case.tol, Tol::ZeroSign) && g == 0.0 && w == 0.0)
                }
                Tol::Exact | Tol::ZeroSign => got == want,
                Tol::Ulps(max) => {
                    let e = ulp_error(ty, got, want);
                    if e > worst.0 {
                        worst = (e, i);
                    }
                    e <= max
                }
            };
            if !ok {
                bad += 1;
                if bad <= 3 {
                    let operands = match case.input.get(i * 16..i * 16 + 16) {
                        Some(input) if case.stride == 8 => {
                            let a = u64::from_le_bytes(input[..8].try_into().unwrap());
                            let b = u64::from_le_bytes(input[8..].try_into().unwrap());
                            format!(" a={a:#x} b={b:#x}:")
                        }
                        _ => String::new(),
                    };
                    failures.push(format!(
                        "{name}[{i}]:{operands} got {got:#x}, want {want:#x}"
                    ));
                }
            }
        }
        if bad > 3 {
            failures.push(format!("{name}: {bad} wrong elements in all"));
        }
        if let Tol::Ulps(_) = case.tol {
            let i = worst.1;
            let a = u64::from_le_bytes(case.input[i * 16..i * 16 + 8].try_into().unwrap());
            let _ = writeln!(
                report,
                "{name}: max error {:.2} ulp at input {:#x} ({:e}) over {} inputs",
                worst.0,
                a,
                to_f64(case.out_ty, a),
                case.expect.len()
            );
        }
    }
    println!("{report}");
    println!("{checked} cases checked, {} problems", failures.len());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
