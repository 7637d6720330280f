//! Tensors as a launch passes them: an allocation of little-endian bytes and a view into it
//! (shape, strides and offset in elements), exactly what the interpreter's `TensorArg` and
//! the lowering's `ArgSlot`s take. Random views (contiguous, padded, transposed, reversed,
//! broadcast along an axis, at an offset) and random element values with the special ones
//! every type has (NaN, infinities, signed zeros, subnormals, `MIN`, `MAX`, `-1`).

use cuprum_ir::{Constant, ScalarType};
use rand::Rng;
use rand::rngs::SmallRng;

/// A tensor argument: its allocation and the view the kernel sees.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tensor {
    /// The element type.
    pub elem: ScalarType,
    /// The size along each axis, in elements.
    pub shape: Vec<u64>,
    /// The stride along each axis, in elements (any sign; zero repeats an element).
    pub strides: Vec<i64>,
    /// The element address, in the allocation, of the element at coordinate 0.
    pub offset: u64,
    /// The allocation, little-endian; a whole number of elements.
    pub bytes: Vec<u8>,
}

impl Tensor {
    /// The allocation's length in elements.
    pub fn len(&self) -> u64 {
        (self.bytes.len() / self.elem.size_bytes() as usize) as u64
    }

    /// Whether the allocation holds no element.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The element count of the view.
    pub fn elements(&self) -> u64 {
        self.shape.iter().product()
    }

    /// The allocation index of the element at coordinate `c`.
    pub fn address(&self, c: &[u64]) -> i64 {
        c.iter()
            .zip(&self.strides)
            .fold(self.offset as i64, |a, (&x, &s)| a + x as i64 * s)
    }

    /// The coordinates of the view's elements, row-major.
    pub fn coords(&self) -> Vec<Vec<u64>> {
        let mut out = Vec::with_capacity(self.elements() as usize);
        let mut c = vec![0u64; self.shape.len()];
        if self.shape.contains(&0) {
            return out;
        }
        loop {
            out.push(c.clone());
            let mut d = self.shape.len();
            loop {
                if d == 0 {
                    return out;
                }
                d -= 1;
                c[d] += 1;
                if c[d] < self.shape[d] {
                    break;
                }
                c[d] = 0;
            }
        }
    }

    /// The coordinate of the view element at allocation index `index`, if one is there.
    pub fn coord_of(&self, index: u64) -> Option<Vec<u64>> {
        self.coords()
            .into_iter()
            .find(|c| self.address(c) == index as i64)
    }

    /// The bits of allocation element `index` (zero-extended).
    pub fn element(&self, index: u64) -> u64 {
        element_bits(&self.bytes, self.elem, index as usize)
    }

    /// `shape`, strides, offset and allocation length as text, for reports.
    pub fn describe(&self) -> String {
        format!(
            "{} {:?} strides {:?} offset {} in {} elements",
            self.elem,
            self.shape,
            self.strides,
            self.offset,
            self.len()
        )
    }
}

/// The bits of element `index` of `bytes`, elements of `elem` (zero-extended).
pub fn element_bits(bytes: &[u8], elem: ScalarType, index: usize) -> u64 {
    let size = elem.size_bytes() as usize;
    let mut w = [0u8; 8];
    if let Some(chunk) = bytes.get(index * size..(index + 1) * size) {
        w[..size].copy_from_slice(chunk);
    }
    u64::from_le_bytes(w)
}

/// Writes the low bytes of `bits` as element `index` of `bytes`.
pub fn set_element(bytes: &mut [u8], elem: ScalarType, index: usize, bits: u64) {
    let size = elem.size_bytes() as usize;
    if let Some(chunk) = bytes.get_mut(index * size..(index + 1) * size) {
        chunk.copy_from_slice(&bits.to_le_bytes()[..size]);
    }
}

/// How a random view lays its elements out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ViewKind {
    /// Row-major and contiguous from the allocation's start.
    Contiguous,
    /// Any of: rows padded, axes in another order, some reversed, at an offset; each element
    /// at its own address (outputs need that).
    Injective,
    /// Like `Injective`, and some axes may have stride 0 (every element along them is one:
    /// read-only tensors only).
    Any,
}

/// A view of `shape` of `kind` in a fresh allocation: strides, offset and the allocation's
/// length in elements.
pub fn random_view(rng: &mut SmallRng, shape: &[u64], kind: ViewKind) -> (Vec<i64>, u64, u64) {
    let rank = shape.len();
    if kind == ViewKind::Contiguous || rank == 0 || rng.random_bool(0.35) {
        let strides = row_major(shape);
        let len = shape.iter().product::<u64>().max(1);
        return (strides, 0, len);
    }
    // Axes from the outermost in memory to the innermost, each with a pitch of at least
    // the inner ones' span (padded now and then).
    let mut order: Vec<usize> = (0..rank).collect();
    if rng.random_bool(0.5) {
        for i in (1..rank).rev() {
            order.swap(i, rng.random_range(0..=i));
        }
    }
    let mut strides = vec![0i64; rank];
    let mut pitch: i64 = if rng.random_bool(0.2) { 2 } else { 1 };
    for &axis in order.iter().rev() {
        let n = shape[axis] as i64;
        if kind == ViewKind::Any && rng.random_bool(0.12) {
            strides[axis] = 0;
            continue;
        }
        strides[axis] = pitch;
        pitch *= n.max(1);
        if rng.random_bool(0.3) {
            pitch += rng.random_range(1..=5);
        }
    }
    for s in &mut strides {
        if rng.random_bool(0.15) {
            *s = -*s;
        }
    }
    // The span: the lowest and highest element addresses relative to coordinate 0.
    let (mut lo, mut hi) = (0i64, 0i64);
    for (&n, &s) in shape.iter().zip(&strides) {
        let far = (n as i64 - 1).max(0) * s;
        lo += far.min(0);
        hi += far.max(0);
    }
    let pad_front = if rng.random_bool(0.5) {
        rng.random_range(0..=7)
    } else {
        0
    };
    let offset = (pad_front - lo) as u64;
    let len = offset as i64 + hi + 1 + rng.random_range(0..=6);
    (strides, offset, len as u64)
}

/// The row-major strides of a contiguous tensor of `shape`.
pub fn row_major(shape: &[u64]) -> Vec<i64> {
    let mut s = vec![1i64; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        s[d] = s[d + 1] * shape[d + 1] as i64;
    }
    s
}

/// A random element of `ty`: mostly ordinary values (small integers, moderate floats), now
/// and then a special one. Floats never get a signaling NaN (the GPU quiets them).
pub fn random_element(rng: &mut SmallRng, ty: ScalarType) -> Constant {
    use ScalarType as S;
    if ty == S::Bool {
        return Constant::bool(rng.random_bool(0.5));
    }
    if ty.is_int() {
        let bits = ty.bits();
        let max = if ty.is_signed_int() {
            (1u64 << (bits - 1)) - 1
        } else if bits == 64 {
            u64::MAX
        } else {
            (1u64 << bits) - 1
        };
        let min = if ty.is_signed_int() {
            1u64 << (bits - 1)
        } else {
            0
        };
        let v: u64 = match rng.random_range(0..10) {
            0..=3 => rng.random_range(-20i64..=20) as u64,
            4..=6 => rng.random(),
            7 => max,
            8 => min,
            _ => [0u64, 1, u64::MAX, 2, 7][rng.random_range(0..5)],
        };
        return Constant::new(ty, v);
    }
    let x: f64 = match rng.random_range(0..20) {
        0..=7 => f64::from(rng.random_range(-16i32..=16)) * 0.5,
        8..=14 => rng.random_range(-100.0..100.0),
        15 => rng.random_range(-1e6..1e6),
        16 => [f64::NAN, -f64::NAN][rng.random_range(0..2)],
        17 => [f64::INFINITY, f64::NEG_INFINITY][rng.random_range(0..2)],
        18 => [0.0, -0.0][rng.random_range(0..2)],
        _ => {
            // Tiny: a subnormal of the type now and then.
            let tiny = match ty {
                S::F16 => 1e-6,
                S::F64 => 1e-310,
                _ => 1e-40,
            };
            tiny * rng.random_range(-4.0..4.0)
        }
    };
    cuprum_ir::scalar::cast_constant(Constant::f64(x), ty)
}

/// A tensor of `elem` and `shape` in a random view of `kind`, every allocated element
/// random.
pub fn random_tensor(
    rng: &mut SmallRng,
    elem: ScalarType,
    shape: &[u64],
    kind: ViewKind,
) -> Tensor {
    let (strides, offset, len) = random_view(rng, shape, kind);
    let mut bytes = vec![0u8; len as usize * elem.size_bytes() as usize];
    for i in 0..len as usize {
        let c = random_element(rng, elem);
        set_element(&mut bytes, elem, i, c.bits);
    }
    Tensor {
        elem,
        shape: shape.to_vec(),
        strides,
        offset,
        bytes,
    }
}

/// An output tensor of `elem` and `shape` in a random view of `kind`, its whole allocation
/// `poison` bytes.
pub fn poisoned_tensor(
    rng: &mut SmallRng,
    elem: ScalarType,
    shape: &[u64],
    kind: ViewKind,
    poison: u8,
) -> Tensor {
    let (strides, offset, len) = random_view(rng, shape, kind);
    Tensor {
        elem,
        shape: shape.to_vec(),
        strides,
        offset,
        bytes: vec![poison; len as usize * elem.size_bytes() as usize],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn views_stay_in_their_allocation_and_injective_ones_never_alias() {
        let mut rng = SmallRng::seed_from_u64(7);
        for i in 0..500 {
            let rank = i % 4;
            let shape: Vec<u64> = (0..rank).map(|_| rng.random_range(1..=9)).collect();
            for kind in [ViewKind::Contiguous, ViewKind::Injective, ViewKind::Any] {
                let t = random_tensor(&mut rng, ScalarType::I16, &shape, kind);
                let mut seen = std::collections::HashSet::new();
                for c in t.coords() {
                    let a = t.address(&c);
                    assert!(a >= 0 && (a as u64) < t.len(), "{} at {c:?}", t.describe());
                    if kind != ViewKind::Any {
                        assert!(seen.insert(a), "{} aliases at {c:?}", t.describe());
                    }
                }
                assert_eq!(t.coords().len() as u64, t.elements());
            }
        }
    }
}
