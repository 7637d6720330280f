//! The arithmetic of the warp matrix operations: the tensor-core multiply-accumulate of
//! `Stmt::Mma` and the register assembly of `Stmt::LdMatrix`, on whole warps of registers.
//!
//! Both gather the lanes' fragments into plain matrices through the layout functions of
//! [`cuprum_ir::matrix`] (the one written-down copy of the PTX ISA's fragment tables), work on
//! the matrices, and scatter the results back the same way. The memory side of `ldmatrix`
//! (reading the rows from shared memory, with race tracking) is in `access`; the checks that
//! the whole warp takes part are in `warp`.

use cuprum_ir::MmaShape;
use cuprum_ir::matrix::ldmatrix_position;
use half::{bf16, f16};

use crate::ops::Lanes;

/// The bits NVIDIA float arithmetic gives for a NaN result (canonical quiet NaN).
const CANONICAL_NAN: u32 = 0x7FFF_FFFF;

/// The `f32` value of element `half` of an A/B fragment register of `shape`.
#[inline]
fn element(shape: MmaShape, bits: u64, half: usize) -> f32 {
    let h = (bits >> (16 * half)) as u16;
    match shape {
        MmaShape::M16n8k16F16 => f16::from_bits(h).to_f32(),
        MmaShape::M16n8k16Bf16 => bf16::from_bits(h).to_f32(),
        // The tensor cores read only the tf32 bits: truncation toward zero.
        MmaShape::M16n8k8Tf32 => f32::from_bits(bits as u32 & 0xFFFF_E000),
    }
}

/// `D = A * B + C` for a whole warp: `a`, `b`, `c` are the lanes' fragment registers, the
/// result is the lanes' fragment registers of D. Products are exact in `f32`; they are added
/// to C in order of `k` with `f32` round-to-nearest-even additions (see `Stmt::Mma`); a NaN
/// result is the canonical NaN.
pub(crate) fn mma(shape: MmaShape, a: &[Lanes; 4], b: &[Lanes; 2], c: &[Lanes; 4]) -> [Lanes; 4] {
    const M: usize = MmaShape::M;
    const N: usize = MmaShape::N;
    let k = shape.k();
    let mut am = [[0f32; 16]; M];
    let mut bm = [[0f32; N]; 16];
    let mut cm = [[0f32; N]; M];
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
            cm[i][j] = f32::from_bits(r[l] as u32);
        }
    }
    let mut dm = [[0u32; N]; M];
    for i in 0..M {
        for j in 0..N {
            let mut acc = cm[i][j];
            for kk in 0..k {
                acc += am[i][kk] * bm[kk][j];
            }
            dm[i][j] = if acc.is_nan() {
                CANONICAL_NAN
            } else {
                acc.to_bits()
            };
        }
    }
    let mut d = [[0u64; 32]; 4];
    for lane in 0..32u32 {
        for (reg, r) in d.iter_mut().enumerate() {
            let (i, j) = MmaShape::c_position(lane, reg);
            r[lane as usize] = u64::from(dm[i][j]);
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
