//! The warp matrix statements, `cp.async` and device `printf` checked on a real GPU against
//! plain-Rust references (the same references the emulator's tests use: an `f64` matrix
//! product, the PTX ISA's fragment and `ldmatrix` tables transcribed by hand, copy-barrier-
//! read, and the C library's `snprintf`).
//!
//! CI has no GPU, so these tests are `#[ignore]`d and run in three steps, as in
//! `gpu_semantics.rs`:
//!
//! 1. `CUPRUM_GPU_CASES=<dir> cargo test -p cuprum-ptx --test gpu_warp -- --ignored export`
//!    writes `<name>.ptx`, `<name>.in` and a line `<name> <kind> <grid> <block> <out bytes>`
//!    of `cases.txt` per case;
//! 2. `python3 crates/cuprum-ptx/gpucheck/run_warp_cases.py <dir> <outdir>` runs them with
//!    CuPy (kernel parameters: input base, input length, output base, output length; output
//!    poisoned with 0xAB), writing `results.bin`, `index.txt` and, for `print` cases, the
//!    device's printf output in `<name>.txt`;
//! 3. `CUPRUM_GPU_RESULTS=<outdir> cargo test -p cuprum-ptx --test gpu_warp -- --ignored
//!    check --nocapture` compares, and prints how far the tensor cores' sums are from the
//!    exact ones. Every mma result must also equal, bit for bit, the summation `Stmt::Mma`
//!    documents (checked on an H200: all 20 cases pass, 1536 random mma elements included).

mod common;

use std::ffi::{CString, c_char, c_int, c_long};
use std::fmt::Write as _;

use common::K;
use cuprum_ir::ScalarType::{self as S};
use cuprum_ir::*;
use cuprum_ptx::{Target, write_module};
use half::{bf16, f16};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform in `[0, n)`.
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    /// Uniform in `[-a, a)`.
    fn sym(&mut self, a: f64) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 * a - a
    }
}

/// A promoted printf argument, as C passes it.
#[derive(Clone, Copy, Debug)]
enum CArg {
    Int(c_int),
    Long(c_long),
    Double(f64),
}

unsafe extern "C" {
    fn snprintf(buf: *mut c_char, n: usize, format: *const c_char, ...) -> c_int;
}

/// The C library's output for `format` with at most one argument.
fn c_format(format: &str, arg: Option<CArg>) -> String {
    let f = CString::new(format).unwrap();
    let mut buf = vec![0u8; 4096];
    let out = buf.as_mut_ptr().cast::<c_char>();
    // SAFETY: the buffer holds 4096 bytes, its size is passed, and the argument is the one
    // (or none) that `format`'s conversion takes.
    let n = unsafe {
        match arg {
            None => snprintf(out, buf.len(), f.as_ptr()),
            Some(CArg::Int(v)) => snprintf(out, buf.len(), f.as_ptr(), v),
            Some(CArg::Long(v)) => snprintf(out, buf.len(), f.as_ptr(), v),
            Some(CArg::Double(v)) => snprintf(out, buf.len(), f.as_ptr(), v),
        }
    };
    buf.truncate(n.max(0) as usize);
    String::from_utf8(buf).unwrap()
}

/// What a case's output must be.
enum Check {
    /// `D` fragments of one mma problem per warp; `exact`: every element bit-exact.
    Mma { problems: Vec<Problem>, exact: bool },
    /// Expected little-endian `u32` words of the output (`None`: not checked).
    Words(Vec<Option<u32>>),
    /// Expected printed lines, compared as sorted multisets (GPU print order is free).
    Print(Vec<String>),
}

struct Case {
    name: String,
    module: Module,
    grid: u32,
    block: u32,
    input: Vec<u8>,
    out_bytes: usize,
    check: Check,
}

/// Kernel frame: parameters `inp: &[u8]`, `out: &mut [u8]`; `g` the global thread index.
fn frame(name: &str) -> (K, u32, u32, Value) {
    let mut k = K::new(name);
    let inp = k.slice("inp", S::U8, SliceAccess::ReadOnly);
    let out = k.slice("out", S::U8, SliceAccess::ReadWrite);
    let g = k.global_index();
    (k, inp, out, g)
}

/// `ty` at byte `g * stride + offset` of slice `s`.
fn load_at(k: &mut K, s: u32, g: Value, stride: u64, offset: u64, ty: ScalarType) -> Value {
    let st = k.u64(stride);
    let off = k.bin(BinaryOp::Mul, g, st);
    let o = k.u64(offset);
    let off = k.bin(BinaryOp::Add, off, o);
    let a = k.elem_addr(s, off, S::U8);
    k.load(AddressSpace::Global, ty, a)
}

fn store_at(k: &mut K, s: u32, g: Value, stride: u64, offset: u64, v: Value) {
    let st = k.u64(stride);
    let off = k.bin(BinaryOp::Mul, g, st);
    let o = k.u64(offset);
    let off = k.bin(BinaryOp::Add, off, o);
    let a = k.elem_addr(s, off, S::U8);
    k.store(AddressSpace::Global, a, v);
}

// ---------------------------------------------------------------- mma

#[derive(Clone)]
struct Problem {
    shape: MmaShape,
    /// Raw input bits (f16/bf16 bits, or f32 bits for tf32), row-major.
    a: Vec<u32>,
    b: Vec<u32>,
    c: Vec<f32>,
}

/// The value of raw input bits (tf32: truncated to its 19 bits, as the IR defines).
fn value(shape: MmaShape, bits: u32) -> f64 {
    match shape {
        MmaShape::M16n8k16F16 => f16::from_bits(bits as u16).to_f64(),
        MmaShape::M16n8k16Bf16 => bf16::from_bits(bits as u16).to_f64(),
        MmaShape::M16n8k8Tf32 => f64::from(f32::from_bits(bits & 0xFFFF_E000)),
    }
}

fn bits_of(shape: MmaShape, x: f64) -> u32 {
    match shape {
        MmaShape::M16n8k16F16 => u32::from(f16::from_f64(x).to_bits()),
        MmaShape::M16n8k16Bf16 => u32::from(bf16::from_f64(x).to_bits()),
        MmaShape::M16n8k8Tf32 => (x as f32).to_bits(),
    }
}

/// The ten fragment words of `lane` (PTX ISA tables, transcribed independently of
/// `cuprum_ir::matrix`).
fn fragments(p: &Problem, lane: usize) -> [u32; 10] {
    let (g, t) = (lane >> 2, lane % 4);
    let k = p.shape.k();
    let a = |r: usize, c: usize| p.a[r * k + c];
    let b = |r: usize, c: usize| p.b[r * 8 + c];
    let pair = |x: u32, y: u32| x | y << 16;
    let mut w = if p.shape == MmaShape::M16n8k8Tf32 {
        [
            a(g, t),
            a(g + 8, t),
            a(g, t + 4),
            a(g + 8, t + 4),
            b(t, g),
            b(t + 4, g),
            0,
            0,
            0,
            0,
        ]
    } else {
        [
            pair(a(g, 2 * t), a(g, 2 * t + 1)),
            pair(a(g + 8, 2 * t), a(g + 8, 2 * t + 1)),
            pair(a(g, 2 * t + 8), a(g, 2 * t + 9)),
            pair(a(g + 8, 2 * t + 8), a(g + 8, 2 * t + 9)),
            pair(b(2 * t, g), b(2 * t + 1, g)),
            pair(b(2 * t + 8, g), b(2 * t + 9, g)),
            0,
            0,
            0,
            0,
        ]
    };
    for (i, (r, c)) in c_positions(lane).into_iter().enumerate() {
        w[6 + i] = p.c[r * 8 + c].to_bits();
    }
    w
}

fn c_positions(lane: usize) -> [(usize, usize); 4] {
    let (g, t) = (lane >> 2, lane % 4);
    [
        (g, 2 * t),
        (g, 2 * t + 1),
        (g + 8, 2 * t),
        (g + 8, 2 * t + 1),
    ]
}

fn mma_case(name: &str, problems: Vec<Problem>, exact: bool) -> Case {
    let shape = problems[0].shape;
    let (mut k, inp, out, g) = frame(name);
    let w: Vec<Value> = (0..10)
        .map(|j| load_at(&mut k, inp, g, 40, 4 * j, S::U32))
        .collect();
    let c: Vec<Value> = w[6..]
        .iter()
        .map(|&v| {
            k.op(Op::Bitcast {
                value: v,
                to: S::F32,
            })
        })
        .collect();
    let d =
        k.b.mma(
            shape,
            [w[0], w[1], w[2], w[3]],
            [w[4], w[5]],
            [c[0], c[1], c[2], c[3]],
        )
        .unwrap();
    for (j, v) in d.into_iter().enumerate() {
        store_at(&mut k, out, g, 16, 4 * j as u64, v);
    }
    let mut input = Vec::new();
    for p in &problems {
        for lane in 0..32 {
            for word in fragments(p, lane) {
                input.extend_from_slice(&word.to_le_bytes());
            }
        }
    }
    let threads = problems.len() as u32 * 32;
    Case {
        name: name.into(),
        module: common::one(k.finish()),
        grid: 1,
        block: threads,
        input,
        out_bytes: threads as usize * 16,
        check: Check::Mma { problems, exact },
    }
}

fn random_problem(shape: MmaShape, rng: &mut Rng, integers: bool) -> Problem {
    let k = shape.k();
    let mut gen_ = |n: usize, scale: f64| -> Vec<f64> {
        (0..n)
            .map(|_| {
                if integers {
                    rng.below(17) as f64 - 8.0
                } else {
                    rng.sym(scale)
                }
            })
            .collect()
    };
    let a = gen_(16 * k, 2.0)
        .into_iter()
        .map(|x| bits_of(shape, x))
        .collect();
    let b = gen_(k * 8, 2.0)
        .into_iter()
        .map(|x| bits_of(shape, x))
        .collect();
    let c = gen_(128, 10.0).into_iter().map(|x| x as f32).collect();
    Problem { shape, a, b, c }
}

fn mma_cases(rng: &mut Rng) -> Vec<Case> {
    let mut cases = Vec::new();
    for shape in MmaShape::ALL {
        let t = shape.input_type();
        let random = (0..4).map(|_| random_problem(shape, rng, false)).collect();
        cases.push(mma_case(&format!("mma_{t}_random"), random, false));
        let ints = (0..2).map(|_| random_problem(shape, rng, true)).collect();
        cases.push(mma_case(&format!("mma_{t}_integers"), ints, true));
    }
    // tf32: A is the identity with junk in the low 13 bits of its ones, B has junk there too:
    // truncation gives D = trunc(B) exactly, rounding would not.
    let shape = MmaShape::M16n8k8Tf32;
    let mut p = random_problem(shape, rng, false);
    for i in 0..16 {
        for kk in 0..8 {
            p.a[i * 8 + kk] = if i == kk { 0x3F80_1FFF } else { 0 };
        }
    }
    for bb in &mut p.b {
        *bb = (1.0f32 + rng.below(1024) as f32 / 1024.0).to_bits()
            | rng.below(0x2000) as u32
            | 0x1000;
    }
    p.c = vec![0.0; 128];
    cases.push(mma_case("mma_tf32_truncation", vec![p], true));
    // Special values: NaN and infinity in C, the largest f16 squared.
    let shape = MmaShape::M16n8k16F16;
    let mut p = Problem {
        shape,
        a: vec![0; 256],
        b: vec![0; 128],
        c: vec![1.0; 128],
    };
    p.c[0] = f32::NAN;
    p.c[1] = f32::INFINITY;
    p.a[16] = u32::from(f16::MAX.to_bits());
    p.b[0] = u32::from(f16::MAX.to_bits());
    cases.push(mma_case("mma_f16_special", vec![p], true));
    cases
}

// ---------------------------------------------------------------- ldmatrix

fn ldmatrix_case(count: usize, trans: bool, rng: &mut Rng) -> Case {
    let name = format!("ldmatrix_x{count}{}", if trans { "_trans" } else { "" });
    let (mut k, inp, out, g) = frame(&name);
    let tile = k.b.shared_array(ArrayDecl {
        name: "tile".into(),
        elem: S::U16,
        len: 512,
    });
    let base = k.op(Op::SharedAddr(tile));
    let t = k.special(Special::ThreadIdx(Dim::X));
    let thirty_two = k.u32(32);
    let mine = k.bin(BinaryOp::Mul, t, thirty_two);
    for j in 0..16 {
        let v = load_at(&mut k, inp, g, 32, 2 * j, S::U16);
        let jj = k.u32(2 * j as u32);
        let off = k.bin(BinaryOp::Add, mine, jj);
        let a = k.bin(BinaryOp::Add, base, off);
        k.store(AddressSpace::Shared, a, v);
    }
    k.b.push(Stmt::Barrier);
    let row = load_at(&mut k, inp, g, 4, 1024, S::U32);
    let sixteen = k.u32(16);
    let off = k.bin(BinaryOp::Mul, row, sixteen);
    let addr = k.bin(BinaryOp::Add, base, off);
    let d = k.b.ldmatrix(count, trans, addr).unwrap();
    for (m, v) in d.into_iter().enumerate() {
        store_at(&mut k, out, g, 16, 4 * m as u64, v);
    }
    let tile_data: Vec<u16> = (0..512).map(|_| rng.next() as u16).collect();
    let mut rows: Vec<u32> = (0..64).collect();
    for i in (1..64).rev() {
        rows.swap(i, rng.below(i as u64 + 1) as usize);
    }
    rows.truncate(32);
    let mut input: Vec<u8> = tile_data.iter().flat_map(|h| h.to_le_bytes()).collect();
    input.extend(rows.iter().flat_map(|r| r.to_le_bytes()));
    let elem = |m: usize, r: usize, c: usize| tile_data[rows[8 * m + r] as usize * 8 + c];
    let mut expect = Vec::new();
    for lane in 0..32 {
        for m in 0..4 {
            let (r, c) = (lane / 4, 2 * (lane % 4));
            let (lo, hi) = if trans {
                (elem(m, c, r), elem(m, c + 1, r))
            } else {
                (elem(m, r, c), elem(m, r, c + 1))
            };
            expect.push((m < count).then_some(u32::from(lo) | u32::from(hi) << 16));
        }
    }
    Case {
        name,
        module: common::one(k.finish()),
        grid: 1,
        block: 32,
        input,
        out_bytes: 512,
        check: Check::Words(expect),
    }
}

// ---------------------------------------------------------------- cp.async

fn cp_async_case(cache: CpAsyncCache, size: u32, wait_all: bool, rng: &mut Rng) -> Case {
    const THREADS: u32 = 64;
    const BLOCKS: u32 = 2;
    let name = format!("cp_async_{}_{size}", cache.ptx_name());
    let (mut k, inp, out, g) = frame(&name);
    let stage = k.b.shared_array(ArrayDecl {
        name: "stage".into(),
        elem: S::U8,
        len: THREADS * size,
    });
    let base = k.op(Op::SharedAddr(stage));
    let t = k.special(Special::ThreadIdx(Dim::X));
    let s64 = k.u64(u64::from(size));
    let goff = k.bin(BinaryOp::Mul, g, s64);
    let src = k.elem_addr(inp, goff, S::U8);
    let (seven, three, n, s32) = (k.u32(7), k.u32(3), k.u32(THREADS), k.u32(size));
    let slot = k.bin(BinaryOp::Mul, t, seven);
    let slot = k.bin(BinaryOp::Add, slot, three);
    let slot = k.bin(BinaryOp::Rem, slot, n);
    let soff = k.bin(BinaryOp::Mul, slot, s32);
    let dst = k.bin(BinaryOp::Add, base, soff);
    k.b.cp_async(cache, size, dst, src, None).unwrap();
    k.b.push(Stmt::CpAsyncCommit);
    k.b.push(if wait_all {
        Stmt::CpAsyncWaitAll
    } else {
        Stmt::CpAsyncWaitGroup { pending: 0 }
    });
    k.b.push(Stmt::Barrier);
    let mine = k.bin(BinaryOp::Mul, t, s32);
    for w in 0..size / 4 {
        let o = k.u32(4 * w);
        let off = k.bin(BinaryOp::Add, mine, o);
        let a = k.bin(BinaryOp::Add, base, off);
        let v = k.load(AddressSpace::Shared, S::U32, a);
        store_at(&mut k, out, g, u64::from(size), u64::from(4 * w), v);
    }
    let total = (THREADS * BLOCKS * size) as usize;
    let input: Vec<u8> = (0..total).map(|_| rng.next() as u8).collect();
    let s = size as usize;
    let mut bytes = vec![0u8; total];
    for b in 0..BLOCKS as usize {
        for t in 0..THREADS as usize {
            let slot = (7 * t + 3) % THREADS as usize;
            let from = (b * THREADS as usize + t) * s;
            let to = (b * THREADS as usize + slot) * s;
            bytes[to..to + s].copy_from_slice(&input[from..from + s]);
        }
    }
    let expect = bytes
        .chunks(4)
        .map(|c| Some(u32::from_le_bytes([c[0], c[1], c[2], c[3]])))
        .collect();
    Case {
        name,
        module: common::one(k.finish()),
        grid: BLOCKS,
        block: THREADS,
        input,
        out_bytes: total,
        check: Check::Words(expect),
    }
}

// ---------------------------------------------------------------- printf

/// A random conversion of the subset for argument class 0 (32-bit int), 1 (64-bit), 2 (f64).
fn random_conversion(rng: &mut Rng, class: u64) -> String {
    let mut s = String::from("%");
    for f in ['-', '+', ' ', '#', '0'] {
        if rng.below(5) == 0 {
            s.push(f);
        }
    }
    if rng.below(2) == 0 {
        s += &rng.below(14).to_string();
    }
    if rng.below(2) == 0 {
        s.push('.');
        if rng.below(5) != 0 {
            s += &rng.below(12).to_string();
        }
    }
    let conv = if class < 2 {
        s += ["", "l", "ll"][if class == 0 {
            0
        } else {
            1 + rng.below(2) as usize
        }];
        ['d', 'i', 'u', 'o', 'x', 'X'][rng.below(6) as usize]
    } else {
        if rng.below(5) == 0 {
            s.push('l');
        }
        ['f', 'e', 'E', 'g', 'G'][rng.below(5) as usize]
    };
    if matches!(conv, 'd' | 'i' | 'u') {
        s = s.replace('#', "");
    }
    s.push(conv);
    s
}

fn interesting_double(rng: &mut Rng) -> f64 {
    let sign = if rng.below(2) == 0 { -1.0 } else { 1.0 };
    sign * match rng.below(10) {
        0 => 0.0,
        1 => f64::INFINITY,
        2 => f64::NAN,
        3 => f64::from_bits(1 + rng.below((1 << 52) - 1)),
        4 => rng.below(100_000) as f64,
        5 => rng.below(1000) as f64 + 0.5,
        6 => rng.below(1000) as f64 / 1024.0,
        7 => 10f64.powi(rng.below(60) as i32 - 30),
        8 => f64::from_bits(rng.next() & !(1 << 63)),
        _ => rng.sym(1.0) * 10f64.powi(rng.below(20) as i32 - 8),
    }
}

/// One thread printing `n` random single-conversion formats of every argument type.
fn print_formats_case(rng: &mut Rng, n: usize) -> Case {
    let (mut k, _, _, _) = frame("print_formats");
    let ints = [S::Bool, S::I8, S::I16, S::I32, S::U8, S::U16, S::U32];
    let floats = [S::F16, S::BF16, S::F32, S::F64];
    let mut expect = Vec::new();
    for case in 0..n {
        let class = case as u64 % 3;
        let format = format!("<{}>\n", random_conversion(rng, class));
        let (c, arg) = match class {
            0 => {
                let ty = ints[rng.below(ints.len() as u64) as usize];
                let c = Constant::new(ty, rng.next());
                let v = match ty {
                    S::I8 => c.bits as u8 as i8 as i32,
                    S::I16 => c.bits as u16 as i16 as i32,
                    _ => c.bits as u32 as i32,
                };
                (c, CArg::Int(v))
            }
            1 => {
                let ty = if rng.below(2) == 0 { S::I64 } else { S::U64 };
                let c = Constant::new(ty, rng.next());
                (c, CArg::Long(c.bits as c_long))
            }
            _ => {
                let ty = floats[rng.below(floats.len() as u64) as usize];
                let x = interesting_double(rng);
                let (bits, exact) = match ty {
                    S::F16 => (
                        u64::from(f16::from_f64(x).to_bits()),
                        f16::from_f64(x).to_f64(),
                    ),
                    S::BF16 => (
                        u64::from(bf16::from_f64(x).to_bits()),
                        bf16::from_f64(x).to_f64(),
                    ),
                    S::F32 => (u64::from((x as f32).to_bits()), f64::from(x as f32)),
                    _ => (x.to_bits(), x),
                };
                (Constant::new(ty, bits), CArg::Double(exact))
            }
        };
        let v = k.c(c);
        k.b.print(format.clone(), vec![v]).unwrap();
        expect.push(c_format(&format, Some(arg)));
    }
    k.b.print("no arguments: 100%% done\n", vec![]).unwrap();
    expect.push("no arguments: 100% done\n".into());
    Case {
        name: "print_formats".into(),
        module: common::one(k.finish()),
        grid: 1,
        block: 1,
        input: Vec::new(),
        out_bytes: 8,
        check: Check::Print(expect),
    }
}

/// 64 threads printing several arguments each, odd ones a second line from a branch.
fn print_lanes_case() -> Case {
    let (mut k, _, _, _) = frame("print_lanes");
    let t = k.special(Special::ThreadIdx(Dim::X));
    let ti = k.cast(t, S::I32);
    let zero = k.c(Constant::i32(0));
    let neg = k.bin(BinaryOp::Sub, zero, ti);
    let tf = k.cast(t, S::F32);
    let h = k.c(Constant::f32(0.5));
    let half_ = k.bin(BinaryOp::Mul, tf, h);
    let wide = k.cast(t, S::I64);
    let big = k.c(Constant::i64(-(1 << 40)));
    let wide = k.bin(BinaryOp::Mul, wide, big);
    k.b.print(
        "t=%u neg=%d half=%.3f wide=%lld\n",
        vec![t, neg, half_, wide],
    )
    .unwrap();
    let one = k.u32(1);
    let bit = k.bin(BinaryOp::And, t, one);
    let odd = k.cmp(CmpOp::Eq, bit, one);
    k.if_(odd, |k| k.b.print("odd %u%%\n", vec![t]).unwrap());
    let mut expect = Vec::new();
    for t in 0..64u32 {
        let wide = i64::from(t) * -(1 << 40);
        expect.push(format!(
            "t={t} neg={} half={:.3} wide={wide}\n",
            -(t as i32),
            t as f32 * 0.5
        ));
        if t % 2 == 1 {
            expect.push(format!("odd {t}%\n"));
        }
    }
    Case {
        name: "print_lanes".into(),
        module: common::one(k.finish()),
        grid: 1,
        block: 64,
        input: Vec::new(),
        out_bytes: 8,
        check: Check::Print(expect),
    }
}

fn all_cases() -> Vec<Case> {
    let mut rng = Rng(0x005E_ED0F_7E45_0125);
    let mut cases = mma_cases(&mut rng);
    for count in [1, 2, 4] {
        for trans in [false, true] {
            cases.push(ldmatrix_case(count, trans, &mut rng));
        }
    }
    for (cache, size, wait_all) in [
        (CpAsyncCache::Ca, 4, false),
        (CpAsyncCache::Ca, 8, true),
        (CpAsyncCache::Ca, 16, false),
        (CpAsyncCache::Cg, 16, true),
    ] {
        cases.push(cp_async_case(cache, size, wait_all, &mut rng));
    }
    cases.push(print_formats_case(&mut rng, 600));
    cases.push(print_lanes_case());
    cases
}

fn dir_from(var: &str) -> Option<std::path::PathBuf> {
    std::env::var_os(var).map(std::path::PathBuf::from)
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
        let kind = if matches!(case.check, Check::Print(_)) {
            "print"
        } else {
            "data"
        };
        let _ = writeln!(
            index,
            "{} {kind} {} {} {}",
            case.name, case.grid, case.block, case.out_bytes
        );
    }
    std::fs::write(dir.join("cases.txt"), index).unwrap();
}

/// The tensor cores' sum as `Stmt::Mma` defines it, in `f64`: addends aligned on the
/// largest exponent (a product on the sum of its operands' exponents), truncated toward zero
/// to 25 bits below it, summed exactly, rounded toward zero to `f32`.
fn tensor_core_sum(p: &Problem, i: usize, j: usize) -> f32 {
    let k = p.shape.k();
    let exp = |x: f64| ((x.to_bits() >> 52) & 0x7FF) as i32 - 1023;
    let c = f64::from(p.c[i * 8 + j]);
    let mut addends = vec![(c, (c != 0.0).then(|| exp(c)))];
    for kk in 0..k {
        let (a, b) = (
            value(p.shape, p.a[i * k + kk]),
            value(p.shape, p.b[kk * 8 + j]),
        );
        addends.push((a * b, (a != 0.0 && b != 0.0).then(|| exp(a) + exp(b))));
    }
    let Some(big) = addends.iter().filter_map(|a| a.1).max() else {
        return 0.0;
    };
    let q = 2f64.powi(big - 25);
    let sum: f64 = addends.iter().map(|(x, _)| (x / q).trunc() * q).sum();
    let f = sum as f32;
    if f64::from(f).abs() > sum.abs() {
        f32::from_bits(f.to_bits() - 1)
    } else {
        f
    }
}

/// Compares one mma case; returns the largest error in units of `eps * sum |terms|`.
fn check_mma(
    name: &str,
    problems: &[Problem],
    exact: bool,
    out: &[u8],
    failures: &mut Vec<String>,
) -> f64 {
    let mut worst = 0.0f64;
    for (w, p) in problems.iter().enumerate() {
        let k = p.shape.k();
        for lane in 0..32 {
            for (i, (r, c)) in c_positions(lane).into_iter().enumerate() {
                let at = ((w * 32 + lane) * 4 + i) * 4;
                let got = f32::from_le_bytes(out[at..at + 4].try_into().unwrap());
                let mut sum = f64::from(p.c[r * 8 + c]);
                let mut mag = sum.abs();
                for kk in 0..k {
                    let x = value(p.shape, p.a[r * k + kk]) * value(p.shape, p.b[kk * 8 + c]);
                    sum += x;
                    mag += x.abs();
                }
                let ok = if sum.is_nan() {
                    got.is_nan()
                } else if exact || !sum.is_finite() {
                    // The exact sum, correctly rounded to f32.
                    got == sum as f32
                } else {
                    let err = (f64::from(got) - sum).abs() / (f64::from(f32::EPSILON) * mag);
                    worst = worst.max(err);
                    err <= (k + 1) as f64
                };
                if sum.is_finite() && got.to_bits() != tensor_core_sum(p, r, c).to_bits() {
                    failures.push(format!(
                        "{name} warp {w}: D[{r}][{c}] = {got:e}, the IR's summation gives {:e}",
                        tensor_core_sum(p, r, c)
                    ));
                }
                if sum.is_nan() && got.to_bits() != 0x7FFF_FFFF {
                    failures.push(format!("{name}: D[{r}][{c}] NaN bits {:#x}", got.to_bits()));
                }
                if !ok && failures.len() < 40 {
                    failures.push(format!(
                        "{name} warp {w}: D[{r}][{c}] = {got:e}, want {sum:e}"
                    ));
                }
            }
        }
    }
    worst
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
    let cases = all_cases();
    let mut failures = Vec::new();
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
        match &case.check {
            Check::Mma { problems, exact } => {
                let worst = check_mma(name, problems, *exact, out, &mut failures);
                if !exact {
                    println!("{name}: largest error {worst:.3} eps * sum of |terms|");
                }
            }
            Check::Words(expect) => {
                let mut bad = 0;
                for (i, want) in expect.iter().enumerate() {
                    let got = u32::from_le_bytes(out[4 * i..4 * i + 4].try_into().unwrap());
                    if let Some(w) = want
                        && got != *w
                    {
                        bad += 1;
                        if bad <= 4 {
                            failures
                                .push(format!("{name}: word {i} = {got:#010x}, want {w:#010x}"));
                        }
                    }
                }
                if bad > 4 {
                    failures.push(format!("{name}: {bad} wrong words in all"));
                }
            }
            Check::Print(expect) => {
                let text =
                    std::fs::read_to_string(dir.join(format!("{name}.txt"))).unwrap_or_default();
                let mut got: Vec<&str> = text.split_inclusive('\n').collect();
                let mut want: Vec<&str> = expect.iter().map(String::as_str).collect();
                got.sort_unstable();
                want.sort_unstable();
                let (mut gi, mut wi, mut bad) = (0, 0, 0);
                while gi < got.len() || wi < want.len() {
                    match (got.get(gi), want.get(wi)) {
                        (Some(g), Some(w)) if g == w => (gi, wi) = (gi + 1, wi + 1),
                        (g, w) => {
                            bad += 1;
                            if bad <= 12 {
                                failures.push(format!("{name}: got {g:?}, want {w:?}"));
                            }
                            match (g, w) {
                                (Some(g), Some(w)) if g < w => gi += 1,
                                (Some(_), None) => gi += 1,
                                _ => wi += 1,
                            }
                        }
                    }
                }
                println!(
                    "{name}: {} lines printed, {} expected",
                    got.len(),
                    want.len()
                );
            }
        }
    }
    println!("{checked} cases checked, {} problems", failures.len());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
