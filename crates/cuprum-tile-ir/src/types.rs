//! Shapes and element types of tiles, possibly naming a kernel's generic parameters.
//!
//! A tile kernel is usually generic over its tile sizes (`const BM: i32`) and sometimes over
//! its element type (`E: ElementType`). The front end runs once, at `cargo build`, before
//! those are known, so a shape dimension or an element type may name a parameter
//! ([`Dim::Param`], [`Elem::Param`]); [`crate::specialize`] substitutes the values given at
//! launch and checks what could not be checked before. Only a specialized kernel (every
//! dimension [`Dim::Known`], every element [`Elem::Known`]) is interpreted or lowered.

use std::fmt;

use cuprum_ir::ScalarType;

/// One dimension of a tile's shape.
#[derive(serde::Serialize, serde::Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dim {
    /// A size known when the kernel was compiled (at least 1).
    Known(u32),
    /// The value of const generic parameter `index` of the kernel ([`crate::TileKernel::consts`]).
    Param(u32),
}

impl Dim {
    /// The size, when known.
    pub const fn known(self) -> Option<u32> {
        match self {
            Dim::Known(n) => Some(n),
            Dim::Param(_) => None,
        }
    }
}

/// An axis number of a tensor (from 0): known, or the value of a const generic parameter
/// until specialization (a permutation given as `const DIM_MAP: [i32; N]`).
#[derive(serde::Serialize, serde::Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Axis {
    /// A known axis.
    Known(u32),
    /// The value of const generic parameter `index` of the kernel.
    Param(u32),
}

impl Axis {
    /// The axis, when known.
    pub const fn known(self) -> Option<u32> {
        match self {
            Axis::Known(a) => Some(a),
            Axis::Param(_) => None,
        }
    }
}

/// A tile's shape: its dimensions, outermost first (row-major). Rank 0 is a scalar.
pub type Shape = Vec<Dim>;

/// The element count of `shape` when every dimension is known (1 for rank 0); `None` when a
/// dimension names a parameter or the count overflows `u64`.
pub fn element_count(shape: &[Dim]) -> Option<u64> {
    shape
        .iter()
        .try_fold(1u64, |n, d| n.checked_mul(u64::from(d.known()?)))
}

/// The sizes of a shape whose dimensions are all known.
pub fn known_sizes(shape: &[Dim]) -> Option<Vec<u32>> {
    shape.iter().map(|d| d.known()).collect()
}

/// A shape of known sizes.
pub fn shape_of(sizes: &[u32]) -> Shape {
    sizes.iter().map(|&n| Dim::Known(n)).collect()
}

/// An element type.
#[derive(serde::Serialize, serde::Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Elem {
    /// A known scalar type.
    Known(ScalarType),
    /// Type parameter `index` of the kernel ([`crate::TileKernel::types`]).
    Param(u32),
}

impl Elem {
    /// The scalar type, when known.
    pub const fn known(self) -> Option<ScalarType> {
        match self {
            Elem::Known(t) => Some(t),
            Elem::Param(_) => None,
        }
    }
}

/// The type of a tile value: an element type and a shape. Rank-0 tiles are the scalars of
/// tile programs (block indices, loop counters, reduction results).
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, PartialEq, Eq, Hash)]
pub struct TileType {
    /// The element type.
    pub elem: Elem,
    /// The shape.
    pub shape: Shape,
}

impl TileType {
    /// A rank-0 tile (a scalar) of a known type.
    pub fn scalar(ty: ScalarType) -> Self {
        Self {
            elem: Elem::Known(ty),
            shape: Vec::new(),
        }
    }

    /// A tile of a known element type and shape.
    pub fn new(ty: ScalarType, shape: Shape) -> Self {
        Self {
            elem: Elem::Known(ty),
            shape,
        }
    }

    /// The tile's rank.
    pub fn rank(&self) -> usize {
        self.shape.len()
    }

    /// Whether this is a rank-0 tile.
    pub fn is_scalar(&self) -> bool {
        self.shape.is_empty()
    }
}

/// Writes a dimension as the printer does: a number or `$i` for parameter `i`.
impl fmt::Display for Dim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dim::Known(n) => write!(f, "{n}"),
            Dim::Param(i) => write!(f, "${i}"),
        }
    }
}

impl fmt::Display for Elem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Elem::Known(t) => write!(f, "{t}"),
            Elem::Param(i) => write!(f, "%T{i}"),
        }
    }
}

/// Writes a shape as `[a, b, c]`.
pub struct ShapeDisplay<'a>(pub &'a [Dim]);

impl fmt::Display for ShapeDisplay<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[")?;
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{d}")?;
        }
        f.write_str("]")
    }
}

impl fmt::Display for TileType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.shape.is_empty() {
            write!(f, "{}", self.elem)
        } else {
            write!(f, "tile<{}, {}>", self.elem, ShapeDisplay(&self.shape))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_display() {
        let s = vec![Dim::Known(4), Dim::Known(8)];
        assert_eq!(element_count(&s), Some(32));
        assert_eq!(element_count(&[]), Some(1));
        assert_eq!(element_count(&[Dim::Known(2), Dim::Param(0)]), None);
        let t = TileType::new(ScalarType::F32, s);
        assert_eq!(t.to_string(), "tile<f32, [4, 8]>");
        assert_eq!(TileType::scalar(ScalarType::I32).to_string(), "i32");
        assert_eq!(
            TileType {
                elem: Elem::Param(0),
                shape: vec![Dim::Param(1)]
            }
            .to_string(),
            "tile<%T0, [$1]>"
        );
    }
}
