//! `Op::Mma` on whole tiles, exactly as the tile IR defines it: tensor-core sums of 16
//! products for `f16`/`bf16` inputs (through `cuprum_ir::tensor_core`, the arithmetic the
//! emulator's `mma.sync` and `wgmma` also use, its operands decoded once per tile) and chains of fused multiply-adds for
//! `f32`/`f64` (on native floats, vectorized with the CPU's FMA where it has one: the same
//! roundings in the same order). Tiles are row-major bits, as everywhere in the interpreter.

use cuprum_ir::ScalarType;
use cuprum_ir::scalar::{self, OpFault};
use cuprum_ir::tensor_core::{Operand, dot_operands};
use cuprum_tile_ir::MmaKind;

/// The sizes of one `mma`: `batch` products of `[m, k]` by `[k, n]`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct MmaDims {
    pub batch: usize,
    pub m: usize,
    pub n: usize,
    pub k: usize,
}

impl MmaDims {
    /// The sizes of `a · b + acc` from the shapes of `a` and `b` (rank 2, or 3 with a leading
    /// batch axis; the validator checked that they agree).
    pub(crate) fn of(a: &[usize], b: &[usize]) -> MmaDims {
        let r = a.len();
        MmaDims {
            batch: if r == 3 { a[0] } else { 1 },
            m: a[r - 2],
            k: a[r - 1],
            n: b[r - 1],
        }
    }
}

/// `a · b + acc` of kind `kind`, row-major bits in and out.
pub(crate) fn mma(
    kind: MmaKind,
    d: MmaDims,
    a: &[u64],
    b: &[u64],
    acc: &[u64],
) -> Result<Vec<u64>, OpFault> {
    let mut out = Vec::with_capacity(d.batch * d.m * d.n);
    for batch in 0..d.batch {
        let a = &a[batch * d.m * d.k..][..d.m * d.k];
        let b = &b[batch * d.k * d.n..][..d.k * d.n];
        let acc = &acc[batch * d.m * d.n..][..d.m * d.n];
        // B by columns, so that each tensor-core dot product reads both operands in order.
        let column = |j: usize| (0..d.k).map(move |kk| b[kk * d.n + j]);
        match kind {
            MmaKind::TensorCore { .. } => {
                let shape = kind.shape().ok_or(OpFault::Unsupported)?;
                let decode = |x: u64| Operand::new(shape.element(x));
                let an: Vec<Operand> = a.iter().map(|&x| decode(x)).collect();
                let bt: Vec<Operand> = (0..d.n).flat_map(column).map(decode).collect();
                let step = kind.k_step() as usize;
                for i in 0..d.m {
                    let row = &an[i * d.k..][..d.k];
                    for j in 0..d.n {
                        let col = &bt[j * d.k..][..d.k];
                        let mut sum = acc[i * d.n + j] as u32;
                        for (ra, cb) in row.chunks(step).zip(col.chunks(step)) {
                            sum = dot_operands(sum, ra, cb);
                        }
                        out.push(u64::from(sum));
                    }
                }
            }
            MmaKind::FmaChain {
                elem: ScalarType::F32,
            } => fma_chain_native::<f32>(d, a, b, acc, &mut out),
            MmaKind::FmaChain {
                elem: ScalarType::F64,
            } => fma_chain_native::<f64>(d, a, b, acc, &mut out),
            MmaKind::FmaChain { elem } => {
                // Row by row: every element of a row takes its k-th product at step k, so
                // each one's chain runs in order of k while a step covers the whole row.
                for i in 0..d.m {
                    let mut row = acc[i * d.n..][..d.n].to_vec();
                    for kk in 0..d.k {
                        fma_row(elem, a[i * d.k + kk], &b[kk * d.n..][..d.n], &mut row)?;
                    }
                    out.extend_from_slice(&row);
                }
            }
        }
    }
    Ok(out)
}

/// A float type the FMA chains run on natively: the kernel IR's fused multiply-add of it is
/// Rust's `mul_add` (`cuprum_ir::scalar`), one rounding per step.
trait Native: Copy + Send + Sync {
    fn from_bits(bits: u64) -> Self;
    fn to_bits(self) -> u64;
    fn mul_add(self, y: Self, z: Self) -> Self;
}

impl Native for f32 {
    fn from_bits(bits: u64) -> Self {
        f32::from_bits(bits as u32)
    }
    fn to_bits(self) -> u64 {
        u64::from(f32::to_bits(self))
    }
    #[inline(always)]
    fn mul_add(self, y: Self, z: Self) -> Self {
        f32::mul_add(self, y, z)
    }
}

impl Native for f64 {
    fn from_bits(bits: u64) -> Self {
        f64::from_bits(bits)
    }
    fn to_bits(self) -> u64 {
        f64::to_bits(self)
    }
    #[inline(always)]
    fn mul_add(self, y: Self, z: Self) -> Self {
        f64::mul_add(self, y, z)
    }
}

/// One batch of an `f32`/`f64` FMA-chain `mma` on native floats, appended to `out`: the same
/// chains in the same order as [`fma_row`] (row by row, step `k` of every element of a row
/// together), so the same bits, at the speed of the CPU's vector FMA.
fn fma_chain_native<T: Native>(d: MmaDims, a: &[u64], b: &[u64], acc: &[u64], out: &mut Vec<u64>) {
    let b: Vec<T> = b.iter().map(|&x| T::from_bits(x)).collect();
    let mut row: Vec<T> = Vec::with_capacity(d.n);
    for i in 0..d.m {
        row.clear();
        row.extend(acc[i * d.n..][..d.n].iter().map(|&x| T::from_bits(x)));
        for kk in 0..d.k {
            fma_row_native(
                T::from_bits(a[i * d.k + kk]),
                &b[kk * d.n..][..d.n],
                &mut row,
            );
        }
        out.extend(row.iter().map(|v| v.to_bits()));
    }
}

/// `d[j] = fma(x, y[j], d[j])` for every `j`: with the CPU's vector FMA where it has one.
fn fma_row_native<T: Native>(x: T, y: &[T], d: &mut [T]) {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU has the features the function is compiled for.
        unsafe { fma_row_avx2(x, y, d) };
        return;
    }
    fma_row_plain(x, y, d);
}

#[inline(always)]
fn fma_row_plain<T: Native>(x: T, y: &[T], d: &mut [T]) {
    for (dj, &yj) in d.iter_mut().zip(y) {
        *dj = x.mul_add(yj, *dj);
    }
}

/// [`fma_row_plain`] compiled with AVX2 and FMA, so that `mul_add` is `vfmadd` (the same
/// single rounding) and the loop is vectorized.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn fma_row_avx2<T: Native>(x: T, y: &[T], d: &mut [T]) {
    fma_row_plain(x, y, d);
}

/// `d[j] = fma(x, y[j], d[j])` for every `j`, with the kernel IR's fused multiply-add of
/// `elem` (`F32` or `F64`), eight lanes at a time.
fn fma_row(elem: ScalarType, x: u64, y: &[u64], d: &mut [u64]) -> Result<(), OpFault> {
    const LANES: usize = 8;
    let xs = [x; LANES];
    let mut next = [0u64; LANES];
    let (y_chunks, y_rest) = y.as_chunks::<LANES>();
    let (d_chunks, d_rest) = d.as_chunks_mut::<LANES>();
    for (yc, dc) in y_chunks.iter().zip(d_chunks) {
        scalar::mul_add(elem, &xs, yc, dc, &mut next)?;
        *dc = next;
    }
    for (&yj, dj) in y_rest.iter().zip(d_rest) {
        let mut one = [0u64];
        scalar::mul_add(elem, &[x], &[yj], &[*dj], &mut one)?;
        *dj = one[0];
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use cuprum_ir::tensor_core::{Num, dot};
    use rand::Rng;

    /// Operands decoded once add to the bits of the general tensor-core sum, for `f16` and
    /// `bf16` with zeros of both signs, subnormals, infinities and NaNs, sums that cancel, and
    /// chunks shorter than 16.
    #[test]
    fn decoded_operands_add_as_the_tensor_cores_do() {
        let mut rng = cuprum_testkit::random::rng("decoded_operands");
        for (decode, name) in [(Num::f16 as fn(u64) -> Num, "f16"), (Num::bf16, "bf16")] {
            for case in 0..20_000 {
                let len = rng.random_range(1..=16);
                let operand = |rng: &mut rand::rngs::StdRng| -> u64 {
                    match rng.random_range(0..40) {
                        0 => 0x8000,
                        1 => 0,
                        2 => rng.random_range(1..0x400u64),
                        3 => 0x7C00 | (rng.random_range(0..2u64) << 15),
                        4 => 0x7E00,
                        // bf16's infinity and a NaN (f16 reads them as large finites).
                        5 => 0x7F80,
                        6 => 0xFFC1,
                        // Mostly one exponent band, so sums cancel and truncate.
                        _ => {
                            rng.random_range(0x3800..0x4400u64) | (rng.random_range(0..2u64) << 15)
                        }
                    }
                };
                let a: Vec<u64> = (0..len).map(|_| operand(&mut rng)).collect();
                let b: Vec<u64> = (0..len).map(|_| operand(&mut rng)).collect();
                let c: u32 = match rng.random_range(0..6) {
                    0 => 0x8000_0000,
                    1 => 0,
                    2 => 0x7F80_0000,
                    _ => rng.random_range(-64.0f32..64.0).to_bits(),
                };
                let want = dot(
                    Num::f32(u64::from(c)),
                    a.iter().zip(&b).map(|(&x, &y)| (decode(x), decode(y))),
                );
                let ao: Vec<Operand> = a.iter().map(|&x| Operand::new(decode(x))).collect();
                let bo: Vec<Operand> = b.iter().map(|&x| Operand::new(decode(x))).collect();
                let got = dot_operands(c, &ao, &bo);
                assert_eq!(
                    got, want,
                    "{name} case {case}: c {c:#x}, a {a:x?}, b {b:x?}: {got:#x} vs {want:#x}"
                );
            }
        }
    }

    /// The FMA chains on native floats give the bits of the kernel IR's `mul_add` lanes,
    /// specials included (NaN, infinities, subnormals, signed zeros).
    #[test]
    fn native_fma_chains_match_the_ir_arithmetic() {
        let mut rng = cuprum_testkit::random::rng("native_fma_chains");
        let specials = [
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            -0.0,
            0.0,
            f32::MIN_POSITIVE / 8.0,
            f32::MAX,
        ];
        for (m, n, k) in [(1, 1, 1), (3, 17, 5), (16, 33, 40), (7, 64, 9)] {
            let value = |rng: &mut rand::rngs::StdRng| {
                if rng.random_range(0..20) == 0 {
                    specials[rng.random_range(0..specials.len())]
                } else {
                    rng.random_range(-100.0f32..100.0)
                }
            };
            let bits = |v: Vec<f32>| -> Vec<u64> {
                v.into_iter().map(|x| u64::from(x.to_bits())).collect()
            };
            let a = bits((0..m * k).map(|_| value(&mut rng)).collect());
            let b = bits((0..k * n).map(|_| value(&mut rng)).collect());
            let acc = bits((0..m * n).map(|_| value(&mut rng)).collect());
            let d = MmaDims { batch: 1, m, n, k };
            let got = mma(
                MmaKind::FmaChain {
                    elem: ScalarType::F32,
                },
                d,
                &a,
                &b,
                &acc,
            )
            .expect("mma");
            let mut want = Vec::new();
            for i in 0..m {
                let mut row = acc[i * n..][..n].to_vec();
                for kk in 0..k {
                    fma_row(ScalarType::F32, a[i * k + kk], &b[kk * n..][..n], &mut row)
                        .expect("lanes");
                }
                want.extend_from_slice(&row);
            }
            assert_eq!(got, want, "{m}x{n}x{k}");
        }
    }
}
