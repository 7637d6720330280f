//! The arithmetic of the warp matrix operations: the tensor-core multiply-accumulate of
//! `Stmt::Mma` and the register assembly of `Stmt::LdMatrix`, on whole warps of registers.
//!
//! Both gather the lanes' fragments into plain matrices through the layout functions of
//! [`cuprum_ir::matrix`] (the one written-down copy of the PTX ISA's fragment tables), work on
//! the matrices, and scatter the results back the same way. The sums are
//! [`cuprum_ir::tensor_core`]'s, the one definition of the tensor cores' arithmetic that the
//! tile interpreter shares. The memory side of `ldmatrix`
//! (reading the rows from shared memory, with race tracking) is in `access`; the checks that
//! the whole warp takes part are in `warp`.

use cuprum_ir::MmaShape;
use cuprum_ir::matrix::ldmatrix_position;
pub(crate) use cuprum_ir::tensor_core::{Num, Operand, dot_operands};

use crate::lanes::Lanes;

/// An A or B element of `shape`: half `half` of a fragment register.
#[inline]
pub(crate) fn element(shape: MmaShape, bits: u64, half: usize) -> Num {
    shape.element(bits >> (16 * half))
}

/// `D = A * B + C` for a whole warp: `a`, `b`, `c` are the lanes' fragment registers, the
/// result is the lanes' fragment registers of D, each element computed by [`dot_operands`] as
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
    let mut cm = [[0u32; N]; M];
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
            cm[i][j] = r[l] as u32;
        }
    }
    // Each operand taken apart once for the eight or sixteen sums it is in; B by column.
    let ao = am.map(|row| row.map(Operand::new));
    let mut bo = [[Operand::new(zero); 16]; N];
    for (kk, row) in bm.iter().enumerate() {
        for (j, &x) in row.iter().enumerate() {
            bo[j][kk] = Operand::new(x);
        }
    }
    let mut d = [[0u64; 32]; 4];
    for lane in 0..32u32 {
        for (reg, r) in d.iter_mut().enumerate() {
            let (i, j) = MmaShape::c_position(lane, reg);
            r[lane as usize] = u64::from(dot_operands(cm[i][j], &ao[i][..k], &bo[j][..k]));
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
