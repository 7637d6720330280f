//! Bounds checks proved by a kernel's launch requirements (`requires = (x.len() >= w * h)`):
//! a 2-D read `x[r * w + c]` under `r < h && c < w` loses its check, and the near misses
//! keep theirs (a guard `r <= h`, a stride that is not the guarded extent, a requirement
//! with a subtraction on its smaller side, a requirement about another slice, signed
//! extents). Each kernel runs on the emulator before and after the passes, on launches that
//! satisfy the requirement, edge rows and columns outside the matrix included; where a check
//! must stay, on launches that fail it too, so that a wrongly dropped check shows as an
//! out-of-bounds read instead of the same trap. A launch that breaks the requirement is
//! refused before any thread runs.
//!
//! Planted bugs these tests catch (tried by hand on the optimizer's `relations`): a fact
//! `x <= b` read as `x < b` (`RowLe` loses its check), and the mixed-radix rule without its
//! premise `c < B` (`ColumnGuardedByH` loses its check).

mod common;

use common::{K, optimized, passes};
use cuprum_emu::{ArgValue, LaunchDims, Memory, launch};
use cuprum_ir::requires::{Requirement, Term, TermOp};
use cuprum_ir::*;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use ScalarType as S;

/// How the test kernel computes and guards its read of `x`.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Variant {
    /// `if r < h && c < w { x[r * w + c] }` under `x.len() >= w * h`: provable.
    Proper,
    /// The same with the product written `w * r` and the sum `c + w * r`: provable.
    Commuted,
    /// `if r <= h && c < w`: row `h` reads past the end.
    RowLe,
    /// `if r < h && c < w { x[r * h + c] }`: the stride is not the guarded width.
    WrongStride,
    /// `if r < h && c < h { x[r * w + c] }`: the column is not guarded by the stride.
    ColumnGuardedByH,
    /// Requirement `x.len() >= w * h - 1` (a subtraction on the smaller side is not exact).
    SubtractedRequirement,
    /// Requirement about `out` instead of `x`.
    OtherSlice,
    /// Extents and requirement as before, but `w` and `h` are `i64`.
    Signed,
}

/// `kernel(x: &[u32], out: disjoint [u32], w, h)`: block `r` (= blockIdx.x), thread `c`
/// (= threadIdx.x) copies `x[r * w + c]` to `out[blockIdx.x * blockDim.x + threadIdx.x]`
/// when the guard holds, with the front end's bounds checks before both accesses.
fn kernel(variant: Variant) -> Kernel {
    let mut k = K::new("requires_2d");
    let x = k.slice("x", S::U32, SliceAccess::ReadOnly);
    let out = k.slice("out", S::U32, SliceAccess::Disjoint);
    let ext = if variant == Variant::Signed {
        S::I64
    } else {
        S::U64
    };
    let w = k.scalar("w", ext);
    let h = k.scalar("h", ext);
    let (wi, hi) = (2, 3);
    let product = Term::Bin(
        TermOp::Mul,
        Box::new(Term::Param(wi)),
        Box::new(Term::Param(hi)),
    );
    let (len_of, right) = match variant {
        Variant::SubtractedRequirement => (
            x,
            Term::Bin(TermOp::Sub, Box::new(product), Box::new(Term::Const(1))),
        ),
        Variant::OtherSlice => (out, product),
        _ => (x, product),
    };
    k.b.require(Requirement {
        left: Term::Len(len_of),
        op: CmpOp::Ge,
        right,
        text: "len >= w * h".into(),
    });
    let bx = k.op(Op::Special(Special::BlockIdx(Dim::X)));
    let tx = k.tid();
    let r = k.cast(bx, ext);
    let c = k.cast(tx, ext);
    let row_ok = if variant == Variant::RowLe {
        k.cmp(CmpOp::Le, r, h)
    } else {
        k.cmp(CmpOp::Lt, r, h)
    };
    let col_ok = if variant == Variant::ColumnGuardedByH {
        k.cmp(CmpOp::Lt, c, h)
    } else {
        k.cmp(CmpOp::Lt, c, w)
    };
    let ok = k.bin(BinaryOp::And, row_ok, col_ok);
    k.if_else(
        ok,
        |k| {
            let stride = if variant == Variant::WrongStride {
                h
            } else {
                w
            };
            let i = if variant == Variant::Commuted {
                let m = k.mul(stride, r);
                k.add(c, m)
            } else {
                let m = k.mul(r, stride);
                k.add(m, c)
            };
            let i = if ext == S::U64 { i } else { k.cast(i, S::U64) };
            k.bounds_check(x, i);
            let v = k.load(x, S::U32, i);
            let o = k.global_id();
            k.bounds_check(out, o);
            k.store(out, o, v);
        },
        |_| {},
    );
    k.finish()
}

/// How many bounds checks the printed kernel has.
fn checks(kernel: &Kernel) -> usize {
    print_kernel(kernel).matches("bounds_check(").count()
}

/// Runs `kernel` over `rows` blocks of `cols` threads with `w` and `h` as given, `x` of
/// `x_len` random words and `out` of `rows * cols` poisoned ones: every word of `out` after
/// the launch, or the error (value numbers left out, as the passes renumber them).
fn run(
    kernel: &Kernel,
    seed: u64,
    (rows, cols): (u32, u32),
    (w, h): (u64, u64),
    x_len: u64,
) -> Result<Vec<u32>, String> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mem = Memory::new();
    let alloc = |words: &[u32]| -> Result<u64, String> {
        let bytes: Vec<u8> = words.iter().flat_map(|v| v.to_le_bytes()).collect();
        let base = mem.alloc(bytes.len().max(4)).map_err(|e| e.to_string())?;
        mem.write(base, &bytes).map_err(|e| e.to_string())?;
        Ok(base)
    };
    let input: Vec<u32> = (0..x_len).map(|_| rng.random()).collect();
    let out_len = u64::from(rows) * u64::from(cols);
    let poison = vec![0xDEAD_BEEFu32; out_len as usize];
    let (xb, ob) = (alloc(&input)?, alloc(&poison)?);
    let args = [
        ArgValue::Slice {
            base: xb,
            len: x_len,
        },
        ArgValue::Slice {
            base: ob,
            len: out_len,
        },
        ArgValue::Scalar(w),
        ArgValue::Scalar(h),
    ];
    let dims = LaunchDims {
        grid: [rows, 1, 1],
        block: [cols, 1, 1],
        dynamic_shared_bytes: 0,
    };
    launch(&mem, kernel, dims, &args).map_err(|e| unnumbered(&e.to_string()))?;
    let mut bytes = vec![0u8; out_len as usize * 4];
    mem.read(ob, &mut bytes).map_err(|e| e.to_string())?;
    Ok(bytes
        .chunks_exact(4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect())
}

/// The plain-Rust reference of a launch that satisfies the guard's premises: `out[r * cols +
/// c]` is `x[r * w + c]` inside the `h` x `w` matrix and the poison elsewhere.
fn reference(seed: u64, (rows, cols): (u32, u32), (w, h): (u64, u64), x_len: u64) -> Vec<u32> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let input: Vec<u32> = (0..x_len).map(|_| rng.random()).collect();
    let mut out = vec![0xDEAD_BEEFu32; rows as usize * cols as usize];
    for r in 0..u64::from(rows) {
        for c in 0..u64::from(cols) {
            if r < h && c < w {
                out[(r * u64::from(cols) + c) as usize] = input[(r * w + c) as usize];
            }
        }
    }
    out
}

/// `text` with every value number (`%12`) replaced by `%_`.
fn unnumbered(text: &str) -> String {
    let mut out = String::new();
    let mut digits = false;
    for ch in text.chars() {
        if digits && ch.is_ascii_digit() {
            continue;
        }
        digits = ch == '%';
        out.push(ch);
        if digits {
            out.push('_');
        }
    }
    out
}

/// A launch: grid rows and block columns, `w` and `h`, `x`'s length.
type Launch = ((u32, u32), (u64, u64), u64);

/// Launches (grid rows and block columns, `w` and `h`, `x`'s length) that satisfy
/// `x.len() >= w * h`: exact and roomy lengths, grids and blocks larger than the matrix, an
/// empty matrix.
fn fitting_launches(rng: &mut SmallRng) -> Vec<Launch> {
    let mut out = vec![
        ((5, 32), (32, 5), 160),
        ((7, 40), (33, 5), 165),
        ((3, 8), (0, 3), 0),
        ((4, 16), (9, 0), 1),
    ];
    for _ in 0..6 {
        let (w, h) = (rng.random_range(1..48u64), rng.random_range(1..9u64));
        let (rows, cols) = (rng.random_range(1..12u32), rng.random_range(1..64u32));
        let room = rng.random_range(0..3u64);
        out.push(((rows, cols), (w, h), w * h + room));
    }
    out
}

#[test]
fn a_2d_read_under_its_requirement_loses_its_check() {
    let mut rng = SmallRng::seed_from_u64(0x2D);
    for variant in [Variant::Proper, Variant::Commuted] {
        let k = kernel(variant);
        for pipeline in [passes(&["conditions"]), cuprum_opt::PASSES.to_vec()] {
            let opt = optimized(&k, &pipeline);
            assert_eq!(checks(&k), 2);
            // The read's check is gone; the store's (no requirement on `out`) stays.
            assert_eq!(
                checks(&opt),
                1,
                "{variant:?}: expected only the store's check\n{}",
                print_kernel(&opt)
            );
            for (seed, (grid, ext, x_len)) in fitting_launches(&mut rng).into_iter().enumerate() {
                let seed = seed as u64;
                let want = reference(seed, grid, ext, x_len);
                assert_eq!(
                    run(&k, seed, grid, ext, x_len),
                    Ok(want.clone()),
                    "{variant:?}"
                );
                assert_eq!(run(&opt, seed, grid, ext, x_len), Ok(want), "{variant:?}");
            }
        }
    }
}

#[test]
fn near_misses_keep_their_checks() {
    for variant in [
        Variant::RowLe,
        Variant::WrongStride,
        Variant::ColumnGuardedByH,
        Variant::SubtractedRequirement,
        Variant::OtherSlice,
        Variant::Signed,
    ] {
        let k = kernel(variant);
        let opt = optimized(&k, cuprum_opt::PASSES);
        assert_eq!(
            checks(&opt),
            2,
            "{variant:?}: a check the requirement does not prove went\n{}",
            print_kernel(&opt)
        );
        // Launches that satisfy the requirement yet read past `x` under the guard: row `h`
        // (`RowLe`), rows of `h` elements in a matrix of narrower ones (`WrongStride`),
        // columns past the width (`ColumnGuardedByH`, same launch), the last element (`SubtractedRequirement`), anything (`OtherSlice`): the check must
        // still trap, the same way before and after.
        let launches = [
            ((6, 8), (8, 5), 40),
            ((5, 8), (4, 5), 20),
            ((5, 8), (8, 5), 39),
            ((5, 8), (8, 5), 3),
        ];
        for (seed, &(grid, ext, x_len)) in launches.iter().enumerate() {
            let seed = seed as u64;
            let before = run(&k, seed, grid, ext, x_len);
            let after = run(&opt, seed, grid, ext, x_len);
            assert_eq!(before, after, "{variant:?}, launch {seed}");
        }
        let trapped = launches
            .iter()
            .enumerate()
            .any(|(seed, &(grid, ext, x_len))| {
                run(&opt, seed as u64, grid, ext, x_len)
                    .is_err_and(|e| e.contains("out of bounds") || e.contains("bounds check"))
            });
        // A signed kernel's read is in bounds whenever the requirement holds (the check is
        // kept only because signed relations are not followed).
        assert!(
            trapped || variant == Variant::Signed,
            "{variant:?}: no launch exercised the kept check"
        );
    }
}

#[test]
fn a_launch_that_breaks_the_requirement_is_refused() {
    let k = kernel(Variant::Proper);
    let opt = optimized(&k, cuprum_opt::PASSES);
    for kernel in [&k, &opt] {
        let e = run(kernel, 1, (5, 32), (32, 5), 159).expect_err("x is one element short");
        assert!(e.contains("len >= w * h"), "{e}");
    }
}

#[test]
fn a_requirement_must_read_parameters_of_the_right_kind() {
    let mut k = kernel(Variant::Proper);
    // `Len` of a scalar parameter.
    k.requires[0].left = Term::Len(2);
    assert!(validate_kernel(&k).is_err());
    k.requires[0].left = Term::Param(7);
    assert!(validate_kernel(&k).is_err());
}
