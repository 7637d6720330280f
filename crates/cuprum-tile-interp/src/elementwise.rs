//! Element-wise operations on whole tiles, through `cuprum_ir::scalar` and nothing else: the
//! elements go 32 at a time through the 32-lane functions the emulator runs, and the rest one
//! at a time through the one-lane functions the optimizer folds with. So every element gets
//! exactly the kernel IR's result; no arithmetic is written here.
//!
//! Elements are register bits, zero-extended into a `u64`, as `cuprum_ir::Constant` holds
//! them.

use cuprum_ir::scalar::{self, OpFault};
use cuprum_ir::{BinaryOp, CmpOp, ScalarType, UnaryOp};

/// The lanes of the wide calls.
const W: usize = 32;

/// One `cuprum_ir::scalar` operation over `N` lanes, taking up to three operands (the unused
/// ones are ignored).
trait Lanes {
    fn apply<const N: usize>(
        &self,
        a: &[u64; N],
        b: &[u64; N],
        c: &[u64; N],
        out: &mut [u64; N],
    ) -> Result<(), OpFault>;
}

/// Runs `op` on every element: `out[i]` from `a[i]`, `b[i]`, `c[i]` (all of one length).
fn drive(op: &impl Lanes, a: &[u64], b: &[u64], c: &[u64]) -> Result<Vec<u64>, OpFault> {
    let n = a.len();
    debug_assert!(b.len() == n && c.len() == n);
    let mut out = vec![0u64; n];
    let full = n - n % W;
    let (oc, _) = out[..full].as_chunks_mut::<W>();
    let ((ac, _), (bc, _), (cc, _)) = (
        a[..full].as_chunks::<W>(),
        b[..full].as_chunks::<W>(),
        c[..full].as_chunks::<W>(),
    );
    for (((o, x), y), z) in oc.iter_mut().zip(ac).zip(bc).zip(cc) {
        op.apply::<W>(x, y, z, o)?;
    }
    for i in full..n {
        let mut r = [0u64; 1];
        op.apply::<1>(&[a[i]], &[b[i]], &[c[i]], &mut r)?;
        out[i] = r[0];
    }
    Ok(out)
}

/// The mask of `N` active lanes (`N` is 1 or 32).
const fn all_lanes<const N: usize>() -> u32 {
    u32::MAX >> (32 - N)
}

struct Unary(UnaryOp, ScalarType);
impl Lanes for Unary {
    fn apply<const N: usize>(
        &self,
        a: &[u64; N],
        _: &[u64; N],
        _: &[u64; N],
        out: &mut [u64; N],
    ) -> Result<(), OpFault> {
        scalar::unary(self.0, self.1, a, out)
    }
}

struct Binary(BinaryOp, ScalarType);
impl Lanes for Binary {
    fn apply<const N: usize>(
        &self,
        a: &[u64; N],
        b: &[u64; N],
        _: &[u64; N],
        out: &mut [u64; N],
    ) -> Result<(), OpFault> {
        scalar::binary(self.0, self.1, a, b, out, all_lanes::<N>())
    }
}

struct MulAdd(ScalarType);
impl Lanes for MulAdd {
    fn apply<const N: usize>(
        &self,
        a: &[u64; N],
        b: &[u64; N],
        c: &[u64; N],
        out: &mut [u64; N],
    ) -> Result<(), OpFault> {
        scalar::mul_add(self.0, a, b, c, out)
    }
}

struct Compare(CmpOp, ScalarType);
impl Lanes for Compare {
    fn apply<const N: usize>(
        &self,
        a: &[u64; N],
        b: &[u64; N],
        _: &[u64; N],
        out: &mut [u64; N],
    ) -> Result<(), OpFault> {
        scalar::compare(self.0, self.1, a, b, out);
        Ok(())
    }
}

struct Select;
impl Lanes for Select {
    fn apply<const N: usize>(
        &self,
        cond: &[u64; N],
        t: &[u64; N],
        f: &[u64; N],
        out: &mut [u64; N],
    ) -> Result<(), OpFault> {
        scalar::select(cond, t, f, out);
        Ok(())
    }
}

struct Cast(ScalarType, ScalarType);
impl Lanes for Cast {
    fn apply<const N: usize>(
        &self,
        a: &[u64; N],
        _: &[u64; N],
        _: &[u64; N],
        out: &mut [u64; N],
    ) -> Result<(), OpFault> {
        scalar::cast(self.0, self.1, a, out);
        Ok(())
    }
}

/// `op(a)` element by element, of type `ty`.
pub(crate) fn unary(op: UnaryOp, ty: ScalarType, a: &[u64]) -> Result<Vec<u64>, OpFault> {
    drive(&Unary(op, ty), a, a, a)
}

/// `a op b` element by element (`b` is `U32` for shifts).
pub(crate) fn binary(
    op: BinaryOp,
    ty: ScalarType,
    a: &[u64],
    b: &[u64],
) -> Result<Vec<u64>, OpFault> {
    drive(&Binary(op, ty), a, b, a)
}

/// `acc = acc op b` element by element (a reduction's step, without a new allocation).
pub(crate) fn binary_assign(
    op: BinaryOp,
    ty: ScalarType,
    acc: &mut [u64],
    b: &[u64],
) -> Result<(), OpFault> {
    debug_assert_eq!(acc.len(), b.len());
    let full = acc.len() - acc.len() % W;
    let (head, tail) = acc.split_at_mut(full);
    let (oc, _) = head.as_chunks_mut::<W>();
    let (bc, _) = b[..full].as_chunks::<W>();
    for (o, y) in oc.iter_mut().zip(bc) {
        let x = *o;
        scalar::binary(op, ty, &x, y, o, u32::MAX)?;
    }
    for (o, &y) in tail.iter_mut().zip(&b[full..]) {
        let mut r = [0u64; 1];
        scalar::binary(op, ty, &[*o], &[y], &mut r, 1)?;
        *o = r[0];
    }
    Ok(())
}

/// `a * b + c` element by element, with one rounding.
pub(crate) fn mul_add(
    ty: ScalarType,
    a: &[u64],
    b: &[u64],
    c: &[u64],
) -> Result<Vec<u64>, OpFault> {
    drive(&MulAdd(ty), a, b, c)
}

/// `a op b` element by element, as `Bool`.
pub(crate) fn compare(op: CmpOp, ty: ScalarType, a: &[u64], b: &[u64]) -> Vec<u64> {
    drive(&Compare(op, ty), a, b, a).unwrap_or_default()
}

/// `cond ? t : f` element by element.
pub(crate) fn select(cond: &[u64], t: &[u64], f: &[u64]) -> Vec<u64> {
    drive(&Select, cond, t, f).unwrap_or_default()
}

/// `a as to` element by element (Rust's `as`, the kernel IR's `Cast`).
pub(crate) fn cast(from: ScalarType, to: ScalarType, a: &[u64]) -> Vec<u64> {
    drive(&Cast(from, to), a, a, a).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wide_and_narrow_lanes_give_the_scalar_results() {
        // 70 elements: two groups of 32 and six single ones.
        let a: Vec<u64> = (0..70u64).map(|i| (i * 7 + 3) as u32 as u64).collect();
        let b: Vec<u64> = (0..70u64).map(|i| (i % 5 + 1) as u32 as u64).collect();
        let q = binary(BinaryOp::Div, ScalarType::U32, &a, &b).expect("no zero divisor");
        for i in 0..70 {
            assert_eq!(q[i], a[i] / b[i], "element {i}");
        }
        let mut zero = b.clone();
        zero[67] = 0;
        assert_eq!(
            binary(BinaryOp::Div, ScalarType::U32, &a, &zero),
            Err(OpFault::DivideByZero { lane: 0 })
        );
        let c = compare(CmpOp::Lt, ScalarType::U32, &b, &a);
        assert!(
            c.iter()
                .zip(a.iter().zip(&b))
                .all(|(&c, (x, y))| c == u64::from(y < x))
        );
        let f = cast(ScalarType::U32, ScalarType::F32, &a);
        assert!(
            f.iter()
                .zip(&a)
                .all(|(&f, &x)| f == u64::from((x as f32).to_bits()))
        );
    }
}
