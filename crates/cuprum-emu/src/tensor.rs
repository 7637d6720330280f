//! The arithmetic of the warp matrix operations: the tensor-core multiply-accumulate of
//! `Stmt::Mma` and the register assembly of `Stmt::LdMatrix`, on whole warps of registers.
//!
//! Both gather the lanes' fragments into plain matrices through the layout functions of
//! [`cuprum_ir::matrix`] (the one written-down copy of the PTX ISA's fragment tables), work on
//! the matrices, and scatter the results back the same way. The sums follow the tensor
//! cores' own arithmetic, as `Stmt::Mma` documents it (alignment to the largest exponent,
//! truncation, one exact addition, rounding toward zero), in integers: every operand is
//! taken apart into `m * 2^e` exactly, so nothing here depends on the host's float
//! rounding. The memory side of `ldmatrix`
//! (reading the rows from shared memory, with race tracking) is in `access`; the checks that
//! the whole warp takes part are in `warp`.

use cuprum_ir::MmaShape;
use cuprum_ir::matrix::ldmatrix_position;

use crate::lanes::Lanes;

/// The bits NVIDIA float arithmetic gives for a NaN result (canonical quiet NaN).
const CANONICAL_NAN: u32 = 0x7FFF_FFFF;

/// Bits kept below the alignment exponent when the tensor cores add (see `Stmt::Mma`).
const ALIGN_BITS: i32 = 25;

/// A float operand taken apart: `(-1)^neg * m * 2^e` exactly, or a special value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Num {
    Finite { neg: bool, m: u64, e: i32 },
    Inf { neg: bool },
    NaN,
}

impl Num {
    /// Decodes an IEEE value with `mbits` stored mantissa bits, `ebits` exponent bits.
    pub(crate) fn decode(bits: u64, mbits: u32, ebits: u32) -> Num {
        let neg = bits >> (mbits + ebits) & 1 != 0;
        let bias = (1i32 << (ebits - 1)) - 1;
        let field = (bits >> mbits) as i32 & ((1 << ebits) - 1);
        let frac = bits & ((1u64 << mbits) - 1);
        if field == (1 << ebits) - 1 {
            return if frac == 0 {
                Num::Inf { neg }
            } else {
                Num::NaN
            };
        }
        let (m, e) = if field == 0 {
            (frac, 1 - bias - mbits as i32)
        } else {
            (frac | 1u64 << mbits, field - bias - mbits as i32)
        };
        Num::Finite { neg, m, e }
    }

    /// `floor(log2 |x|)` of a finite nonzero value.
    fn exponent(m: u64, e: i32) -> i32 {
        e + 63 - m.leading_zeros() as i32
    }
}

/// An A or B element of `shape`: half `half` of a fragment register.
#[inline]
pub(crate) fn element(shape: MmaShape, bits: u64, half: usize) -> Num {
    let h = bits >> (16 * half) & 0xFFFF;
    match shape {
        MmaShape::M16n8k16F16 => Num::decode(h, 10, 5),
        MmaShape::M16n8k16Bf16 => Num::decode(h, 7, 8),
        // The tensor cores read only the tf32 bits: truncation toward zero.
        MmaShape::M16n8k8Tf32 => Num::decode(bits & 0xFFFF_E000, 23, 8),
    }
}

/// `m * 2^e` rounded toward zero to an `f32` (infinite beyond the `f32` range).
fn round_toward_zero(neg: bool, m: u64, e: i32) -> f32 {
    let sign = if neg { -1.0f32 } else { 1.0 };
    if m == 0 {
        return 0.0 * sign;
    }
    let top = Num::exponent(m, e);
    if top >= 128 {
        return f32::INFINITY * sign;
    }
    // The spacing of f32 values at this magnitude (fixed below the normal range).
    let q = (top - 23).max(-149);
    let m = if q > e {
        m.checked_shr((q - e) as u32).unwrap_or(0)
    } else {
        m
    };
    let e = q.max(e);
    // `m < 2^24` and `2^e` is a power of two inside the f64 range: both products are exact.
    (m as f64 * 2f64.powi(e)) as f32 * sign
}

/// One element of D: `c + sum(a[k] * b[k])` as the tensor cores add (see `Stmt::Mma`).
pub(crate) fn dot(c: Num, terms: impl Iterator<Item = (Num, Num)>) -> u32 {
    // Every addend as (neg, m, e, alignment exponent), plus the specials seen.
    let mut addends: [(bool, u64, i32, i32); 17] = [(false, 0, 0, 0); 17];
    let mut n = 0;
    let (mut nan, mut pos_inf, mut neg_inf) = (false, false, false);
    let mut all_negative_zero = true;
    let mut add = |x: Num, align: Option<i32>| match x {
        Num::NaN => nan = true,
        Num::Inf { neg } => {
            if neg {
                neg_inf = true
            } else {
                pos_inf = true
            }
        }
        Num::Finite { neg, m, e } => {
            all_negative_zero &= neg && m == 0;
            if m != 0 && n < addends.len() {
                addends[n] = (neg, m, e, align.unwrap_or(Num::exponent(m, e)));
                n += 1;
            }
        }
    };
    add(c, None);
    for (a, b) in terms {
        let product = match (a, b) {
            (Num::NaN, _) | (_, Num::NaN) => Num::NaN,
            (Num::Inf { .. }, Num::Finite { m: 0, .. })
            | (Num::Finite { m: 0, .. }, Num::Inf { .. }) => Num::NaN,
            (Num::Inf { neg: x } | Num::Finite { neg: x, .. }, Num::Inf { neg: y })
            | (Num::Inf { neg: x }, Num::Finite { neg: y, .. }) => Num::Inf { neg: x != y },
            (
                Num::Finite {
                    neg: x,
                    m: ma,
                    e: ea,
                },
                Num::Finite {
                    neg: y,
                    m: mb,
                    e: eb,
                },
            ) => {
                let p = Num::Finite {
                    neg: x != y,
                    m: ma * mb,
                    e: ea + eb,
                };
                // Products align on the sum of the operands' exponents, not their own.
                let align =
                    (ma != 0 && mb != 0).then(|| Num::exponent(ma, ea) + Num::exponent(mb, eb));
                add(p, align);
                continue;
            }
        };
        add(product, None);
    }
    if nan || (pos_inf && neg_inf) {
        return CANONICAL_NAN;
    }
    if pos_inf || neg_inf {
        return if neg_inf { 0xFF80_0000 } else { 0x7F80_0000 };
    }
    let Some(big) = addends[..n].iter().map(|a| a.3).max() else {
        return if all_negative_zero { 0x8000_0000 } else { 0 };
    };
    // Each addend truncated toward zero to a multiple of 2^q, then summed exactly: every
    // addend is below 2^(big + 2), so each fits in 27 bits and the sum in an i64.
    let q = big - ALIGN_BITS;
    let mut sum = 0i64;
    for &(neg, m, e, _) in &addends[..n] {
        let units = if e >= q {
            m << (e - q)
        } else {
            m.checked_shr((q - e) as u32).unwrap_or(0)
        } as i64;
        sum += if neg { -units } else { units };
    }
    round_toward_zero(sum < 0, sum.unsigned_abs(), q).to_bits()
}

/// `D = A * B + C` for a whole warp: `a`, `b`, `c` are the lanes' fragment registers, the
/// result is the lanes' fragment registers of D, each element computed by [`dot`] as
/// `Stmt::Mma` defines.
pub(crate) fn mma(shape: MmaShape, a: &[Lanes; 4], b: &[Lanes; 2], c: &[Lanes; 4]) -> [Lanes; 4] {
    const M: usize = MmaShape::M;
    const N: usize = MmaShape::N;
    let k = shape.k();
    let zero = Num::Finite {
        neg: false,
        m: 0,
        e: 0,
    };
    let mut am = [[zero; 16]; M];
    let mut bm = [[zero; N]; 16];
    let mut cm = [[zero; N]; M];
    for lane in 0..32u32 {
        let l = lane as usize;
        for half in 0..shape.elements_per_register() {
            for (reg, r) in a.iter().enumerate() {
                let (i, kk) = shape.a_position(lane, reg, half);
                am[i][kk] = element(shape, r[l], half);
            }
            for (reg, r) in b.iter().enumerate() {
                let (kk, j) = shape.b_position(lane, reg, half);
                bm[kk][j] = element(shape, r[l], half);
            }
        }
        for (reg, r) in c.iter().enumerate() {
            let (i, j) = MmaShape::c_position(lane, reg);
            cm[i][j] = Num::decode(r[l] & 0xFFFF_FFFF, 23, 8);
        }
    }
    let mut d = [[0u64; 32]; 4];
    for lane in 0..32u32 {
        for (reg, r) in d.iter_mut().enumerate() {
            let (i, j) = MmaShape::c_position(lane, reg);
            let terms = (0..k).map(|kk| (am[i][kk], bm[kk][j]));
            r[lane as usize] = u64::from(dot(cm[i][j], terms));
        }
    }
    d
}

/// The 16-bit elements of up to four 8x8 matrices, `rows[m][r][c]`, as `ldmatrix` read them.
pub(crate) type Matrices = [[[u16; 8]; 8]; 4];

/// The `ldmatrix` destination registers of every lane for the first `count` of `rows`:
/// register `m` of lane `l` holds the two elements [`ldmatrix_position`] names.
pub(crate) fn ldmatrix_registers(rows: &Matrices, count: usize, trans: bool) -> [Lanes; 4] {
    let mut out = [[0u64; 32]; 4];
    for (m, reg) in out.iter_mut().enumerate().take(count) {
        for (lane, r) in reg.iter_mut().enumerate() {
            let (r0, c0) = ldmatrix_position(lane as u32, 0, trans);
            let (r1, c1) = ldmatrix_position(lane as u32, 1, trans);
            *r = u64::from(rows[m][r0][c0]) | u64::from(rows[m][r1][c1]) << 16;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The identity times B is B, in the tf32 shape, and low mantissa bits are dropped.
    #[test]
    fn tf32_identity_truncates() {
        let shape = MmaShape::M16n8k8Tf32;
        let (mut a, mut b, c) = ([[0u64; 32]; 4], [[0u64; 32]; 2], [[0u64; 32]; 4]);
        let bval = |kk: usize, j: usize| 1.0f32 + (kk * 8 + j) as f32 / 64.0 + 1.0 / 4096.0;
        for lane in 0..32u32 {
            for (reg, r) in a.iter_mut().enumerate() {
                let (i, kk) = shape.a_position(lane, reg, 0);
                r[lane as usize] = u64::from(if i == kk { 1.0f32 } else { 0.0 }.to_bits());
            }
            for (reg, r) in b.iter_mut().enumerate() {
                let (kk, j) = shape.b_position(lane, reg, 0);
                r[lane as usize] = u64::from(bval(kk, j).to_bits());
            }
        }
        let d = mma(shape, &a, &b, &c);
        for lane in 0..32u32 {
            for (reg, r) in d.iter().enumerate() {
                let (i, j) = MmaShape::c_position(lane, reg);
                let want = if i < 8 {
                    f32::from_bits(bval(i, j).to_bits() & 0xFFFF_E000)
                } else {
                    0.0
                };
                assert_eq!(f32::from_bits(r[lane as usize] as u32), want, "D[{i}][{j}]");
            }
        }
    }

    #[test]
    fn ldmatrix_distribution() {
        let mut rows = [[[0u16; 8]; 8]; 4];
        for (m, mat) in rows.iter_mut().enumerate() {
            for (r, row) in mat.iter_mut().enumerate() {
                for (c, e) in row.iter_mut().enumerate() {
                    *e = (m * 64 + r * 8 + c) as u16;
                }
            }
        }
        let plain = ldmatrix_registers(&rows, 4, false);
        // Lane 5: row 1, columns 2 and 3.
        assert_eq!(plain[2][5], (128 + 8 + 2) | (128 + 8 + 3) << 16);
        let trans = ldmatrix_registers(&rows, 2, true);
        // Lane 5 transposed: column 1 of rows 2 and 3.
        assert_eq!(trans[1][5], (64 + 16 + 1) | (64 + 24 + 1) << 16);
        assert_eq!(trans[2], [0; 32]);
    }
}
