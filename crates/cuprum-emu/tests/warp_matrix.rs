//! Tensor-core `mma.sync`, `ldmatrix` and `cp.async` on the emulator, against plain-Rust
//! references: a triple-loop matrix product in `f64` on random f16/bf16/tf32 matrices
//! (within the error bound of `f32` accumulation, exactly for small integers, and bit for bit
//! against an `f64` rendering of the tensor cores' summation that the IR documents), the PTX ISA's `ldmatrix` thread-to-row and
//! fragment mapping, and copy-then-barrier-then-read for `cp.async`; plus the errors (partial
//! warps, races, misalignment, uninitialized reads).
//!
//! The fragment layouts here are transcribed from the PTX ISA independently of
//! `cuprum_ir::matrix`, so a mistake in either shows up as a mismatch.

mod common;

use common::*;
use cuprum_emu::{EmuError, LaunchDims, Memory, launch};
use cuprum_ir::ScalarType as S;
use cuprum_ir::*;
use half::{bf16, f16};
use rand::{Rng, SeedableRng, rngs::StdRng};

// ---------------------------------------------------------------- mma

/// One `16 x K` times `K x 8` plus `16 x 8` problem, elements as `f32` values; A and B are
/// converted to the shape's input type (see [`input_bits`]).
#[derive(Clone)]
struct Problem {
    shape: MmaShape,
    a: Vec<f32>,
    b: Vec<f32>,
    c: Vec<f32>,
}

/// The raw input bits of element `x` for `shape` (f16/bf16 bits, or the f32 bits for tf32).
fn input_bits(shape: MmaShape, x: f32) -> u32 {
    match shape {
        MmaShape::M16n8k16F16 => u32::from(f16::from_f32(x).to_bits()),
        MmaShape::M16n8k16Bf16 => u32::from(bf16::from_f32(x).to_bits()),
        MmaShape::M16n8k8Tf32 => x.to_bits(),
    }
}

/// The value the tensor core multiplies for input `x` (tf32: truncated, as the IR defines).
fn input_value(shape: MmaShape, x: f32) -> f32 {
    match shape {
        MmaShape::M16n8k16F16 => f16::from_f32(x).to_f32(),
        MmaShape::M16n8k16Bf16 => bf16::from_f32(x).to_f32(),
        MmaShape::M16n8k8Tf32 => f32::from_bits(x.to_bits() & 0xFFFF_E000),
    }
}

/// The ten fragment words (a0..a3, b0, b1, c0..c3) of `lane`, from the ISA's tables.
fn fragments(p: &Problem, lane: usize) -> [u32; 10] {
    let (g, t) = (lane >> 2, lane % 4);
    let k = p.shape.k();
    let a = |r: usize, c: usize| input_bits(p.shape, p.a[r * k + c]);
    let b = |r: usize, c: usize| input_bits(p.shape, p.b[r * 8 + c]);
    let mut w = [0u32; 10];
    if p.shape == MmaShape::M16n8k8Tf32 {
        // a0: (g, t), a1: (g+8, t), a2: (g, t+4), a3: (g+8, t+4); b0: (t, g), b1: (t+4, g).
        w[0] = a(g, t);
        w[1] = a(g + 8, t);
        w[2] = a(g, t + 4);
        w[3] = a(g + 8, t + 4);
        w[4] = b(t, g);
        w[5] = b(t + 4, g);
    } else {
        // Register r holds elements 2r (low half) and 2r + 1 (high half).
        let pair = |x: u32, y: u32| x | y << 16;
        w[0] = pair(a(g, 2 * t), a(g, 2 * t + 1));
        w[1] = pair(a(g + 8, 2 * t), a(g + 8, 2 * t + 1));
        w[2] = pair(a(g, 2 * t + 8), a(g, 2 * t + 9));
        w[3] = pair(a(g + 8, 2 * t + 8), a(g + 8, 2 * t + 9));
        w[4] = pair(b(2 * t, g), b(2 * t + 1, g));
        w[5] = pair(b(2 * t + 8, g), b(2 * t + 9, g));
    }
    for (i, (r, c)) in c_positions(lane).into_iter().enumerate() {
        w[6 + i] = p.c[r * 8 + c].to_bits();
    }
    w
}

/// `(row, col)` of accumulator registers c0..c3 of `lane`.
fn c_positions(lane: usize) -> [(usize, usize); 4] {
    let (g, t) = (lane >> 2, lane % 4);
    [
        (g, 2 * t),
        (g, 2 * t + 1),
        (g + 8, 2 * t),
        (g + 8, 2 * t + 1),
    ]
}

/// A kernel where thread `i` loads its ten fragment words from `frags[10 i..]`, runs the mma
/// and stores its D fragment at `out[4 i..]`.
fn mma_kernel(shape: MmaShape) -> Kernel {
    let mut k = K::new("mma");
    let frags = k.slice("frags", S::U32, SliceAccess::ReadOnly);
    let out = k.slice("out", S::F32, SliceAccess::Disjoint);
    let i = k.global_id();
    let ten = k.u64(10);
    let base = k.mul(i, ten);
    let words: Vec<Value> = (0..10)
        .map(|j| {
            let off = k.u64(j);
            let idx = k.add(base, off);
            k.load(frags, idx)
        })
        .collect();
    let c: Vec<Value> = words[6..]
        .iter()
        .map(|&w| {
            k.op(Op::Bitcast {
                value: w,
                to: S::F32,
            })
        })
        .collect();
    let d =
        k.b.mma(
            shape,
            [words[0], words[1], words[2], words[3]],
            [words[4], words[5]],
            [c[0], c[1], c[2], c[3]],
        )
        .unwrap();
    let four = k.u64(4);
    let obase = k.mul(i, four);
    for (j, v) in d.into_iter().enumerate() {
        let off = k.u64(j as u64);
        let idx = k.add(obase, off);
        k.store(out, idx, v);
    }
    k.finish()
}

/// Runs one problem per warp (`problems.len()` warps, in blocks of `block` threads) and
/// returns each warp's D as a row-major `16 x 8` matrix.
fn run_mma(problems: &[Problem], block: u32) -> Vec<Vec<f32>> {
    let shape = problems[0].shape;
    let mem = Memory::new();
    let mut words = Vec::new();
    for p in problems {
        for lane in 0..32 {
            words.extend(fragments(p, lane).map(u64::from));
        }
    }
    let frags = upload_bits(&mem, S::U32, &words);
    let n = problems.len() * 32;
    let out = output(&mem, S::F32, n * 4);
    launch(
        &mem,
        &mma_kernel(shape),
        dims1(n as u64, block),
        &[frags, out],
    )
    .unwrap();
    let got: Vec<f32> = download(&mem, out);
    (0..problems.len())
        .map(|w| {
            let mut d = vec![f32::NAN; 128];
            for lane in 0..32 {
                for (i, (r, c)) in c_positions(lane).into_iter().enumerate() {
                    d[r * 8 + c] = got[(w * 32 + lane) * 4 + i];
                }
            }
            d
        })
        .collect()
}

fn random_problem(shape: MmaShape, rng: &mut StdRng, integers: bool) -> Problem {
    let k = shape.k();
    let mut gen_ = |n: usize, scale: f32| -> Vec<f32> {
        (0..n)
            .map(|_| {
                if integers {
                    rng.random_range(-8i32..=8) as f32
                } else {
                    rng.random_range(-scale..scale)
                }
            })
            .collect()
    };
    // A and B keep the generated f32 values: the f16/bf16 shapes round them to their input
    // type, tf32 truncates them (both through `input_bits`/`input_value`).
    let a = gen_(16 * k, 2.0);
    let b = gen_(k * 8, 2.0);
    let c = gen_(128, 10.0);
    Problem { shape, a, b, c }
}

/// `(f64 exact-ish result, sum of magnitudes)` of D[i][j].
fn reference(p: &Problem, i: usize, j: usize) -> (f64, f64) {
    let k = p.shape.k();
    let mut sum = f64::from(p.c[i * 8 + j]);
    let mut mag = sum.abs();
    for kk in 0..k {
        let x = f64::from(input_value(p.shape, p.a[i * k + kk]))
            * f64::from(input_value(p.shape, p.b[kk * 8 + j]));
        sum += x;
        mag += x.abs();
    }
    (sum, mag)
}

/// The IR's definition of the tensor cores' sum (`Stmt::Mma`), in `f64` (independently of
/// the emulator's integer implementation): addends aligned on the largest exponent (products
/// on the sum of their operands' exponents), truncated to 25 bits below it, summed exactly
/// (every partial sum is a multiple of the quantum below 2^32 of it, so exact in `f64`),
/// rounded toward zero to `f32`.
fn tensor_core_sum(p: &Problem, i: usize, j: usize) -> f32 {
    let k = p.shape.k();
    let exp = |x: f64| ((x.to_bits() >> 52) & 0x7FF) as i32 - 1023;
    let c = f64::from(p.c[i * 8 + j]);
    let mut addends = vec![(c, (c != 0.0).then(|| exp(c)))];
    for kk in 0..k {
        let a = f64::from(input_value(p.shape, p.a[i * k + kk]));
        let b = f64::from(input_value(p.shape, p.b[kk * 8 + j]));
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

#[test]
fn mma_matches_the_reference_on_random_matrices() {
    let mut rng = StdRng::seed_from_u64(0x6d6d61);
    for shape in MmaShape::ALL {
        let problems: Vec<Problem> = (0..6)
            .map(|_| random_problem(shape, &mut rng, false))
            .collect();
        // Two warps per block: several blocks and several warps per block.
        let results = run_mma(&problems, 64);
        for (p, d) in problems.iter().zip(&results) {
            for i in 0..16 {
                for j in 0..8 {
                    let got = d[i * 8 + j];
                    let (want, mag) = reference(p, i, j);
                    let bound = (p.shape.k() + 1) as f64 * f64::from(f32::EPSILON) * mag;
                    assert!(
                        (f64::from(got) - want).abs() <= bound,
                        "{shape:?} D[{i}][{j}] = {got}, reference {want} (bound {bound})"
                    );
                    let model = tensor_core_sum(p, i, j);
                    assert_eq!(
                        got.to_bits(),
                        model.to_bits(),
                        "{shape:?} D[{i}][{j}] model"
                    );
                }
            }
        }
    }
}

#[test]
fn mma_is_exact_on_small_integers() {
    let mut rng = StdRng::seed_from_u64(7);
    for shape in MmaShape::ALL {
        let problems: Vec<Problem> = (0..3)
            .map(|_| random_problem(shape, &mut rng, true))
            .collect();
        for (p, d) in problems.iter().zip(run_mma(&problems, 32)) {
            for i in 0..16 {
                for j in 0..8 {
                    assert_eq!(f64::from(d[i * 8 + j]), reference(p, i, j).0, "{shape:?}");
                }
            }
        }
    }
}

#[test]
fn mma_special_values() {
    let shape = MmaShape::M16n8k16F16;
    let mut p = Problem {
        shape,
        a: vec![0.0; 256],
        b: vec![0.0; 128],
        c: vec![1.0; 128],
    };
    p.c[0] = f32::NAN;
    p.c[1] = f32::INFINITY;
    p.a[16] = 65504.0; // A[1][0]: the largest f16
    p.b[0] = 65504.0; // B[0][0]
    p.a[32] = 4096.0; // A[2][0]
    p.b[1] = 4096.0; // B[0][1]
    p.c[17] = 1.25; // C[2][1]
    let d = &run_mma(&[p], 32)[0];
    assert_eq!(
        d[0].to_bits(),
        0x7FFF_FFFF,
        "NaN results are the canonical NaN"
    );
    assert_eq!(d[1], f32::INFINITY);
    // 65504^2 is exact; C = 1 is below the alignment quantum 2^5 and truncated away.
    assert_eq!(d[8], 4_290_774_016.0);
    // 2^24 + 1.25: C truncated to a multiple of 2^-1, the sum rounded toward zero (an IEEE
    // f32 addition would give 2^24 + 2).
    assert_eq!(d[17], 16_777_216.0);
    assert_eq!(d[127], 1.0);
}

#[test]
fn mma_needs_the_whole_warp() {
    let shape = MmaShape::M16n8k8Tf32;
    let mem = Memory::new();
    let frags = upload_bits(&mem, S::U32, &vec![0; 48 * 10]);
    let out = output(&mem, S::F32, 48 * 4);
    // A block of 48 threads: its second warp has 16 lanes.
    let err = launch(&mem, &mma_kernel(shape), dims1(48, 48), &[frags, out]).unwrap_err();
    assert!(
        matches!(
            err,
            EmuError::IncompleteWarp {
                thread: [32, 0, 0],
                operation: "mma.sync",
                active: 0xFFFF,
                ..
            }
        ),
        "{err}"
    );
    // Inside a branch taken by half of the lanes.
    let mut k = K::new("diverged");
    let lane = k.special(Special::LaneId);
    let sixteen = k.u32(16);
    let low = k.cmp(CmpOp::Lt, lane, sixteen);
    let zero = k.u32(0);
    let fz = k.f32(0.0);
    k.if_(low, |k| {
        k.b.mma(shape, [zero; 4], [zero; 2], [fz; 4]).unwrap();
    });
    let err = launch(&mem, &k.finish(), dims1(32, 32), &[]).unwrap_err();
    assert!(err.to_string().contains("only lanes 0x0000ffff"), "{err}");
}

// ---------------------------------------------------------------- ldmatrix

/// Rows of 16 bytes in the shared tile.
const ROWS: usize = 64;

/// A kernel (one warp) that fills a shared tile of `ROWS` rows from `data` (thread t stores
/// `data[16 t .. 16 t + 16]`), waits at a barrier unless `no_barrier`, and runs an
/// `ldmatrix` with lane `l` addressing byte `16 * rows[l] + skew` of the tile; thread `l`
/// stores register `m` at `out[4 l + m]`.
fn ldmatrix_kernel(count: usize, trans: bool, no_barrier: bool, skew: u32, fill: bool) -> Kernel {
    let mut k = K::new("ldm");
    let data = k.slice("data", S::U16, SliceAccess::ReadOnly);
    let rows = k.slice("rows", S::U32, SliceAccess::ReadOnly);
    let out = k.slice("out", S::U32, SliceAccess::Disjoint);
    let tile = k.b.shared_array(ArrayDecl {
        name: "tile".into(),
        elem: S::U16,
        len: (ROWS * 8) as u32,
    });
    let t = k.tid();
    let t64 = k.cast(t, S::U64);
    if fill {
        let sixteen = k.u32(16);
        let first = k.mul(t, sixteen);
        for j in 0..16 {
            let jj = k.u32(j);
            let idx = k.add(first, jj);
            let idx64 = k.cast(idx, S::U64);
            let v = k.load(data, idx64);
            k.store_shared(tile, idx, v);
        }
    }
    if !no_barrier {
        k.barrier();
    }
    let row = k.load(rows, t64);
    let sixteen = k.u32(16);
    let off = k.mul(row, sixteen);
    let skew = k.u32(skew);
    let off = k.add(off, skew);
    let base = k.op(Op::SharedAddr(tile));
    let addr = k.add(base, off);
    let d = k.b.ldmatrix(count, trans, addr).unwrap();
    let four = k.u64(4);
    let obase = k.mul(t64, four);
    for (m, v) in d.into_iter().enumerate() {
        let mm = k.u64(m as u64);
        let idx = k.add(obase, mm);
        k.store(out, idx, v);
    }
    k.finish()
}

fn run_ldmatrix(kernel: &Kernel, data: &[u16], rows: &[u32]) -> Result<Vec<u32>, EmuError> {
    let mem = Memory::new();
    let data = upload(&mem, data);
    let rows = upload(&mem, rows);
    let out = output(&mem, S::U32, 128);
    launch(&mem, kernel, dims1(32, 32), &[data, rows, out])?;
    Ok(download(&mem, out))
}

#[test]
fn ldmatrix_follows_the_isa_mapping() {
    let mut rng = StdRng::seed_from_u64(0x1d);
    let data: Vec<u16> = (0..ROWS * 8).map(|_| rng.random()).collect();
    for count in [1usize, 2, 4] {
        for trans in [false, true] {
            // Distinct random rows for every lane (the unused lanes' rows are ignored).
            let mut all: Vec<u32> = (0..ROWS as u32).collect();
            for i in (1..all.len()).rev() {
                all.swap(i, rng.random_range(0..=i));
            }
            let rows = &all[..32];
            let got =
                run_ldmatrix(&ldmatrix_kernel(count, trans, false, 0, true), &data, rows).unwrap();
            // Matrix m, row r is the tile row lane 8m + r addressed.
            let elem = |m: usize, r: usize, c: usize| data[rows[8 * m + r] as usize * 8 + c];
            for lane in 0..32 {
                for m in 0..4 {
                    let got = got[lane * 4 + m];
                    if m >= count {
                        assert_eq!(got, 0xA5A5_A5A5, "register {m} is not written");
                        continue;
                    }
                    let (r, c) = (lane / 4, 2 * (lane % 4));
                    let (lo, hi) = if trans {
                        (elem(m, c, r), elem(m, c + 1, r))
                    } else {
                        (elem(m, r, c), elem(m, r, c + 1))
                    };
                    let want = u32::from(lo) | u32::from(hi) << 16;
                    assert_eq!(got, want, "x{count} trans={trans} lane {lane} matrix {m}");
                }
            }
        }
    }
}

#[test]
fn ldmatrix_errors() {
    let data = vec![1u16; ROWS * 8];
    let rows: Vec<u32> = (0..32).collect();
    let err = run_ldmatrix(&ldmatrix_kernel(4, false, false, 8, true), &data, &rows).unwrap_err();
    assert!(
        matches!(
            err,
            EmuError::Misaligned {
                size: 16,
                thread: [0, 0, 0],
                ..
            }
        ),
        "{err}"
    );
    // Lane 1 reads row 1, which thread 0 wrote, with no barrier between.
    let err = run_ldmatrix(&ldmatrix_kernel(1, false, true, 0, true), &data, &rows).unwrap_err();
    assert!(
        matches!(
            err,
            EmuError::SharedRace {
                threads: ([0, 0, 0], [1, 0, 0]),
                ..
            }
        ),
        "{err}"
    );
    let err = run_ldmatrix(&ldmatrix_kernel(2, true, false, 0, false), &data, &rows).unwrap_err();
    assert!(
        matches!(err, EmuError::UninitializedSharedRead { .. }),
        "{err}"
    );
    let far: Vec<u32> = (0..32)
        .map(|l| if l == 9 { ROWS as u32 } else { l })
        .collect();
    let err = run_ldmatrix(&ldmatrix_kernel(2, false, false, 0, true), &data, &far).unwrap_err();
    assert!(
        matches!(
            err,
            EmuError::OutOfBounds {
                thread: [9, 0, 0],
                ..
            }
        ),
        "{err}"
    );
    // The same out-of-range row in a lane whose address `.x1` ignores is fine.
    run_ldmatrix(&ldmatrix_kernel(1, false, false, 0, true), &data, &far).unwrap();
}

// ---------------------------------------------------------------- cp.async

const THREADS: u32 = 64;

/// `THREADS` threads per block; thread t copies `size` bytes from `src[block][t]` to shared
/// slot `(7 t + 3) % THREADS`, commits, waits, meets the others at a barrier (unless
/// `no_barrier`) and copies shared slot t to `out[block][t]` with 4-byte loads.
fn cp_async_kernel(
    cache: CpAsyncCache,
    size: u32,
    wait_all: bool,
    no_barrier: bool,
    src_skew: u64,
) -> Kernel {
    let mut k = K::new("cpasync");
    let src = k.slice("src", S::U8, SliceAccess::ReadOnly);
    let out = k.slice("out", S::U32, SliceAccess::Disjoint);
    let smem = k.b.shared_array(ArrayDecl {
        name: "stage".into(),
        elem: S::U8,
        len: THREADS * size,
    });
    let t = k.tid();
    let g = k.global_id();
    let size32 = k.u32(size);
    let size64 = k.u64(u64::from(size));
    let goff = k.mul(g, size64);
    let skew = k.u64(src_skew);
    let goff = k.add(goff, skew);
    let gaddr = k.elem_addr(src, goff);
    let seven = k.u32(7);
    let three = k.u32(3);
    let n = k.u32(THREADS);
    let slot = k.mul(t, seven);
    let slot = k.add(slot, three);
    let slot = k.bin(BinaryOp::Rem, slot, n);
    let soff = k.mul(slot, size32);
    let saddr = k.shared_addr(smem, soff);
    k.b.cp_async(cache, size, saddr, gaddr, None).unwrap();
    k.push(Stmt::CpAsyncCommit);
    k.push(if wait_all {
        Stmt::CpAsyncWaitAll
    } else {
        Stmt::CpAsyncWaitGroup { pending: 0 }
    });
    if !no_barrier {
        k.barrier();
    }
    let mine = k.mul(t, size32);
    let base = k.shared_addr(smem, mine);
    let words = u64::from(size / 4);
    let wpt = k.u64(words);
    let obase = k.mul(g, wpt);
    for w in 0..words {
        let off = k.u32(4 * w as u32);
        let a = k.add(base, off);
        let v = k.op(Op::Load {
            space: AddressSpace::Shared,
            ty: S::U32,
            addr: a,
            eviction: cuprum_ir::Eviction::Normal,
        });
        let ww = k.u64(w);
        let idx = k.add(obase, ww);
        k.store(out, idx, v);
    }
    k.finish()
}

fn run_cp_async(kernel: &Kernel, size: u32, blocks: u32) -> Result<(Vec<u8>, Vec<u8>), EmuError> {
    let mem = Memory::new();
    let n = (THREADS * blocks * size) as usize;
    let src: Vec<u8> = (0..n + 16).map(|i| (i * 37 + 11) as u8).collect();
    let src_arg = upload(&mem, &src);
    let out = output(&mem, S::U32, n / 4);
    let dims = LaunchDims {
        grid: [blocks, 1, 1],
        block: [THREADS, 1, 1],
        dynamic_shared_bytes: 0,
    };
    launch(&mem, kernel, dims, &[src_arg, out])?;
    let bytes: Vec<u8> = download::<u32>(&mem, out)
        .into_iter()
        .flat_map(u32::to_le_bytes)
        .collect();
    Ok((src, bytes))
}

/// Each thread marks its own shared word, copies a global word over it with `cp.async`,
/// reads it before waiting and again after: out[2g] and out[2g + 1].
fn cp_async_visibility_kernel(wait: Stmt) -> Kernel {
    let mut k = K::new("cpasync_visible");
    let src = k.slice("src", S::U8, SliceAccess::ReadOnly);
    let out = k.slice("out", S::U32, SliceAccess::Disjoint);
    let smem = k.b.shared_array(ArrayDecl {
        name: "stage".into(),
        elem: S::U8,
        len: THREADS * 4,
    });
    let t = k.tid();
    let g = k.global_id();
    let four = k.u32(4);
    let soff = k.mul(t, four);
    let saddr = k.shared_addr(smem, soff);
    let marker = k.u32(0xDEAD_BEEF);
    k.push(Stmt::Store {
        space: AddressSpace::Shared,
        addr: saddr,
        value: marker,
    });
    let four64 = k.u64(4);
    let goff = k.mul(g, four64);
    let gaddr = k.elem_addr(src, goff);
    k.b.cp_async(CpAsyncCache::Ca, 4, saddr, gaddr, None)
        .unwrap();
    k.push(Stmt::CpAsyncCommit);
    let read = |k: &mut K| {
        k.op(Op::Load {
            space: AddressSpace::Shared,
            ty: S::U32,
            addr: saddr,
            eviction: cuprum_ir::Eviction::Normal,
        })
    };
    let before = read(&mut k);
    k.push(wait);
    let after = read(&mut k);
    let two = k.u64(2);
    let first = k.mul(g, two);
    k.store(out, first, before);
    let one = k.u64(1);
    let second = k.add(first, one);
    k.store(out, second, after);
    k.finish()
}

#[test]
fn cp_async_lands_when_its_thread_waits() {
    // The copy is asynchronous: before the wait the thread still reads its marker (a read
    // without a wait sees stale data on the emulator, as it may on the GPU); after
    // `wait_group 0` or `wait_all` it reads the copied word. A `wait_group 1` leaves the
    // only committed group in flight.
    for (wait, lands) in [
        (Stmt::CpAsyncWaitGroup { pending: 0 }, true),
        (Stmt::CpAsyncWaitAll, true),
        (Stmt::CpAsyncWaitGroup { pending: 1 }, false),
    ] {
        let what = format!("{wait:?}");
        let kernel = cp_async_visibility_kernel(wait);
        let blocks = 2;
        let mem = Memory::new();
        let n = (THREADS * blocks * 4) as usize;
        let src: Vec<u8> = (0..n).map(|i| (i * 37 + 11) as u8).collect();
        let src_arg = upload(&mem, &src);
        let out = output(&mem, S::U32, 2 * (THREADS * blocks) as usize);
        let dims = LaunchDims {
            grid: [blocks, 1, 1],
            block: [THREADS, 1, 1],
            dynamic_shared_bytes: 0,
        };
        launch(&mem, &kernel, dims, &[src_arg, out]).unwrap_or_else(|e| panic!("{what}: {e}"));
        let got = download::<u32>(&mem, out);
        for g in 0..(THREADS * blocks) as usize {
            let copied =
                u32::from_le_bytes([src[4 * g], src[4 * g + 1], src[4 * g + 2], src[4 * g + 3]]);
            assert_eq!(
                got[2 * g],
                0xDEAD_BEEF,
                "{what}: thread {g} saw its copy before waiting"
            );
            let want = if lands { copied } else { 0xDEAD_BEEF };
            assert_eq!(got[2 * g + 1], want, "{what}: thread {g} after the wait");
        }
    }
}

#[test]
fn cp_async_copy_barrier_read() {
    let cases = [
        (CpAsyncCache::Ca, 4, false),
        (CpAsyncCache::Ca, 8, true),
        (CpAsyncCache::Ca, 16, false),
        (CpAsyncCache::Cg, 16, true),
    ];
    for (cache, size, wait_all) in cases {
        let blocks = 3;
        let kernel = cp_async_kernel(cache, size, wait_all, false, 0);
        let (src, got) = run_cp_async(&kernel, size, blocks).unwrap();
        let s = size as usize;
        for b in 0..blocks as usize {
            for slot in 0..THREADS as usize {
                // The thread whose copy landed in `slot`.
                let t = (0..THREADS as usize)
                    .find(|t| (7 * t + 3) % THREADS as usize == slot)
                    .unwrap();
                let from = (b * THREADS as usize + t) * s;
                let to = (b * THREADS as usize + slot) * s;
                assert_eq!(
                    &got[to..to + s],
                    &src[from..from + s],
                    "{cache:?} {size} bytes, block {b} slot {slot}"
                );
            }
        }
    }
}

#[test]
fn cp_async_errors() {
    // Without the barrier, thread 0 reads slot 0, which another thread's copy wrote.
    let writer = (0..THREADS).find(|t| (7 * t + 3) % THREADS == 0).unwrap();
    let kernel = cp_async_kernel(CpAsyncCache::Ca, 8, false, true, 0);
    let err = run_cp_async(&kernel, 8, 1).unwrap_err();
    let EmuError::SharedRace { threads, .. } = err else {
        panic!("{err}");
    };
    assert_eq!(threads, ([writer, 0, 0], [0, 0, 0]));
    let kernel = cp_async_kernel(CpAsyncCache::Cg, 16, false, false, 8);
    let err = run_cp_async(&kernel, 16, 1).unwrap_err();
    assert!(
        matches!(
            err,
            EmuError::Misaligned {
                size: 16,
                space: AddressSpace::Global,
                ..
            }
        ),
        "{err}"
    );
}
