//! Tensors in memory as the device sees them: elements addressed through strides and an
//! offset into an allocation of little-endian bytes, and the part of a tile that lies inside
//! a tensor ([`Window`]).
//!
//! A tile's element at tile coordinate `c` is the tensor's element `base + c` (per axis);
//! it exists when `0 <= base + c < shape` on every axis, and is at element address
//! `offset + sum((base + c) * stride)` of the allocation. Those in-bounds coordinates form a
//! box, and an address is linear in the coordinate, so the extreme addresses of a tile are
//! at two corners of the box: [`Window::new`] checks those two against the allocation once,
//! after which every element's address is known to be inside it (no per-element check, no
//! panic).

use cuprum_ir::ScalarType;

/// A tensor argument as the interpreter reads it during a launch.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TensorView<'a> {
    /// The parameter's name, for errors.
    pub name: &'a str,
    /// The element type.
    pub elem: ScalarType,
    /// Elements per axis.
    pub shape: &'a [u64],
    /// Strides per axis, in elements.
    pub strides: &'a [i64],
    /// The element address of the element at coordinate 0.
    pub offset: u64,
    /// The allocation.
    pub bytes: &'a [u8],
}

impl TensorView<'_> {
    /// Whole elements in the allocation.
    pub fn elements(&self) -> u64 {
        (self.bytes.len() / self.elem.size_bytes() as usize) as u64
    }

    /// The element at address `addr` (inside the allocation), as register bits; a `Bool`
    /// reads as 0 or 1 whatever the byte holds, as the emulator's loads.
    pub fn read(&self, addr: usize) -> u64 {
        read_elem(self.bytes, self.elem, addr)
    }
}

/// The element of type `elem` at element address `addr` of `bytes`.
pub(crate) fn read_elem(bytes: &[u8], elem: ScalarType, addr: usize) -> u64 {
    let size = elem.size_bytes() as usize;
    let mut b = [0u8; 8];
    if let Some(src) = bytes.get(addr * size..addr * size + size) {
        b[..size].copy_from_slice(src);
    }
    let bits = u64::from_le_bytes(b);
    if elem == ScalarType::Bool {
        u64::from(bits != 0)
    } else {
        bits
    }
}

/// Writes `bits` as an element of type `elem` at element address `addr` of `bytes`.
pub(crate) fn write_elem(bytes: &mut [u8], elem: ScalarType, addr: usize, bits: u64) {
    let size = elem.size_bytes() as usize;
    if let Some(dst) = bytes.get_mut(addr * size..addr * size + size) {
        dst.copy_from_slice(&bits.to_le_bytes()[..size]);
    }
}

/// An element whose address is outside the allocation: its tensor coordinate and address
/// (`None` when it does not even fit an `i64`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct AddressFault {
    pub coord: Vec<u64>,
    pub address: Option<i64>,
}

/// The in-bounds part of one tile of a tensor, with every address in it checked.
#[derive(Clone, Debug)]
pub(crate) struct Window {
    /// The tile shape.
    tile: Vec<usize>,
    /// Per axis, the in-bounds tile coordinates `lo..hi` (empty when nothing is inside).
    lo: Vec<usize>,
    hi: Vec<usize>,
    /// The element address of tile coordinate `lo`.
    start: i64,
    /// The tensor's strides.
    strides: Vec<i64>,
}

impl Window {
    /// The part of the tile at tensor coordinate `base` (per axis) of shape `tile` that lies
    /// inside `t`, once the addresses of its elements are checked against the allocation.
    /// `Ok(None)` when no element of the tile is inside the tensor.
    pub fn new(
        t: &TensorView<'_>,
        base: &[i128],
        tile: &[usize],
    ) -> Result<Option<Window>, AddressFault> {
        let rank = tile.len();
        let mut lo = vec![0usize; rank];
        let mut hi = vec![0usize; rank];
        for d in 0..rank {
            let n = i128::from(t.shape[d]);
            let t_d = tile[d] as i128;
            let l = (-base[d]).clamp(0, t_d);
            let h = (n - base[d]).clamp(0, t_d);
            if l >= h {
                return Ok(None);
            }
            (lo[d], hi[d]) = (l as usize, h as usize);
        }
        // The tensor coordinates of the two corners where the address is least and most.
        let mut least = Vec::with_capacity(rank);
        let mut most = Vec::with_capacity(rank);
        for d in 0..rank {
            let (first, last) = (base[d] + lo[d] as i128, base[d] + hi[d] as i128 - 1);
            if t.strides[d] >= 0 {
                least.push(first);
                most.push(last);
            } else {
                least.push(last);
                most.push(first);
            }
        }
        let elements = i128::from(t.elements());
        for corner in [&least, &most] {
            match address(t, corner) {
                Some(a) if (0..elements).contains(&a) => {}
                address => {
                    return Err(AddressFault {
                        coord: corner.iter().map(|&c| c as u64).collect(),
                        address: address.and_then(|a| i64::try_from(a).ok()),
                    });
                }
            }
        }
        let first: Vec<i128> = (0..rank).map(|d| base[d] + lo[d] as i128).collect();
        // Inside the allocation, so it fits an `i64`.
        let start = address(t, &first).unwrap_or(0) as i64;
        Ok(Some(Window {
            tile: tile.to_vec(),
            lo,
            hi,
            start,
            strides: t.strides.to_vec(),
        }))
    }

    /// Calls `f(i, addr)` for every in-bounds element, in row-major order: `i` is its index
    /// in the tile (row-major), `addr` its element address in the allocation.
    pub fn for_each(&self, mut f: impl FnMut(usize, usize)) {
        let rank = self.tile.len();
        if rank == 0 {
            f(0, self.start as usize);
            return;
        }
        let inner = rank - 1;
        // Row-major strides of the tile.
        let mut tstride = vec![1usize; rank];
        for d in (0..inner).rev() {
            tstride[d] = tstride[d + 1] * self.tile[d + 1];
        }
        let len = self.hi[inner] - self.lo[inner];
        let s = self.strides[inner];
        // An odometer over the outer axes, from `lo` to `hi`.
        let mut c = self.lo.clone();
        loop {
            let mut index = 0usize;
            // In `i128`: partial sums may leave the allocation, the whole sum does not.
            let mut addr = i128::from(self.start);
            for d in 0..rank {
                index += c[d] * tstride[d];
                addr += (c[d] - self.lo[d]) as i128 * i128::from(self.strides[d]);
            }
            let addr = addr as i64;
            for k in 0..len {
                f(index + k, (addr + k as i64 * s) as usize);
            }
            let mut d = inner;
            loop {
                if d == 0 {
                    return;
                }
                d -= 1;
                c[d] += 1;
                if c[d] < self.hi[d] {
                    break;
                }
                c[d] = self.lo[d];
            }
        }
    }
}

/// `offset + sum(coord * stride)`, `None` past `i128`.
fn address(t: &TensorView<'_>, coord: &[i128]) -> Option<i128> {
    coord
        .iter()
        .zip(t.strides)
        .try_fold(i128::from(t.offset), |a, (&c, &s)| {
            a.checked_add(c.checked_mul(i128::from(s))?)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view<'a>(
        shape: &'a [u64],
        strides: &'a [i64],
        offset: u64,
        bytes: &'a [u8],
    ) -> TensorView<'a> {
        TensorView {
            name: "t",
            elem: ScalarType::U8,
            shape,
            strides,
            offset,
            bytes,
        }
    }

    fn visited(w: &Window) -> Vec<(usize, usize)> {
        let mut v = Vec::new();
        w.for_each(|i, a| v.push((i, a)));
        v
    }

    #[test]
    fn edge_tiles_visit_only_elements_inside() {
        let bytes = [0u8; 12];
        // A 3x4 row-major tensor; the 2x3 tile at (2, 3) holds only element (2, 3).
        let t = view(&[3, 4], &[4, 1], 0, &bytes);
        let w = Window::new(&t, &[2, 3], &[2, 3])
            .expect("inside")
            .expect("not empty");
        assert_eq!(visited(&w), vec![(0, 11)]);
        // Transposed view of the same bytes: shape 4x3, strides (1, 4).
        let t = view(&[4, 3], &[1, 4], 0, &bytes);
        let w = Window::new(&t, &[-1, 1], &[2, 2])
            .expect("inside")
            .expect("not empty");
        assert_eq!(visited(&w), vec![(2, 4), (3, 8)]);
        assert!(Window::new(&t, &[4, 0], &[2, 2]).expect("inside").is_none());
    }

    #[test]
    fn addresses_outside_the_allocation_are_faults() {
        let bytes = [0u8; 12];
        // Offset 2 pushes the last element of a 3x4 tensor past the 12 bytes.
        let t = view(&[3, 4], &[4, 1], 2, &bytes);
        let e = Window::new(&t, &[0, 0], &[4, 4]).expect_err("outside");
        assert_eq!(e.coord, vec![2, 3]);
        assert_eq!(e.address, Some(13));
        // Negative strides reaching below the start.
        let t = view(&[3], &[-1], 1, &bytes);
        assert_eq!(
            Window::new(&t, &[0], &[4]).expect_err("below").address,
            Some(-1)
        );
        let t = view(&[3], &[i64::MAX], 0, &bytes);
        assert!(Window::new(&t, &[0], &[4]).is_err());
    }
}
