//! cuda-oxide's proof-carrying output handles: a thread's element or tile of a
//! `DisjointSlice`, checked once when handed out, then reached without checks.
//!
//! Why they exist: `element_thread32`, `tile_thread32`, `tile_2d32` and `tile_2d32_rt` give a
//! thread its whole piece of an output after **one** check (the piece lies wholly inside the
//! slice, and a row-major tile inside its rows), so that each `at_const::<..>()` access needs
//! none.
//!
//! They are sound for the same reasons as the patterns of [`DisjointSlice`] (see
//! [`disjoint`](super::disjoint)); each is one of them, and a slice is reached through one
//! pattern per kernel:
//!
//! | handle | the thread's elements | the same set as |
//! |---|---|---|
//! | `element_thread32(i)` on `DisjointSlice<T>` | element `i` | `get_mut(i)` |
//! | `tile_thread32(i)` on `DisjointSlice<T, LinearTiles<N>>` | `[N*i, N*i + N)`, only when all `N` exist | `chunk_mut::<N>(i)` |
//! | `tile_2d32(c)` on `DisjointSlice<T, RowMajorTiles<R, C, S>>` | rows `[R*row, R*row + R)` × columns `[C*col, C*col + C)` of a row-major matrix `S` wide, only when the whole tile lies in its rows and in the slice | `tile_mut::<R, C>(c, S)` |
//! | `tile_2d32_rt(c)` on `DisjointSlice<T, RuntimeRowMajorTiles<R, C>>` | the same with the row width the host bound with [`RowWidth::new(&mut buffer, width)`](crate::RowWidth) | `tile_mut::<R, C>(c, width)` |
//!
//! The index `i` is [`thread::index_1d_u32`](super::thread::index_1d_u32) and the
//! coordinates `c` [`thread::coord_2d_u32`](super::thread::coord_2d_u32), both unique under
//! the kernel's launch contract (`domain = 1` and `domain = 2`, a block of 1 along the other
//! axes); the row width is the same in every thread of a launch. The elements are computed
//! from the exact (64-bit) index, so distinct threads get disjoint pieces, and a piece whose
//! last element would not fit is not handed out. Positions in a tile are constants checked
//! against its shape at `cargo build`.

use std::marker::PhantomData;

use super::DisjointSlice;
use super::thread::{ThreadCoord2D32, ThreadIndex32};

/// The index space of a `DisjointSlice<T, LinearTiles<N>>`: consecutive tiles of `N`
/// elements, tile `i` for the thread of 1-D index `i`.
pub enum LinearTiles<const N: usize> {}

/// The index space of a `DisjointSlice<T, RowMajorTiles<ROWS, COLS, ROW_STRIDE>>`: a
/// row-major matrix `ROW_STRIDE` elements wide cut into `ROWS` × `COLS` tiles, tile
/// `(row, col)` for the thread of 2-D coordinates `(row, col)`.
pub enum RowMajorTiles<const ROWS: usize, const COLS: usize, const ROW_STRIDE: usize> {}

/// The index space of a `DisjointSlice<T, RuntimeRowMajorTiles<ROWS, COLS>>`: as
/// [`RowMajorTiles`], with the row width the host binds with
/// [`RowWidth::new(&mut buffer, width)`](crate::RowWidth).
pub enum RuntimeRowMajorTiles<const ROWS: usize, const COLS: usize> {}

/// One element the calling thread owns: read it, write it.
pub struct ElementMut32<'a, T> {
    _element: PhantomData<&'a mut T>,
}

impl<T> ElementMut32<'_, T> {
    /// The element's value.
    pub fn read(&self) -> T
    where
        T: Copy,
    {
        crate::simt::shared::unreachable_on_host()
    }

    /// Stores `value` in the element.
    pub fn write(&mut self, value: T) {
        let _ = value;
    }
}

/// The calling thread's tile of `N` consecutive elements.
pub struct TileMut32<'a, T, const N: usize> {
    _elements: PhantomData<&'a mut [T; N]>,
}

impl<T, const N: usize> TileMut32<'_, T, N> {
    /// Element `I` of the tile (`I < N`, checked at `cargo build`).
    pub fn at_const<const I: u32>(&mut self) -> ElementMut32<'_, T> {
        ElementMut32 {
            _element: PhantomData,
        }
    }

    /// The tile's length, `N`.
    pub fn len(&self) -> u32 {
        N as u32
    }

    /// Whether the tile is empty (never: `N >= 1`).
    pub fn is_empty(&self) -> bool {
        N == 0
    }
}

/// The calling thread's `ROWS` × `COLS` tile of a row-major matrix.
pub struct Tile2DMut32<'a, T, const ROWS: usize, const COLS: usize> {
    _elements: PhantomData<&'a mut T>,
}

impl<T, const ROWS: usize, const COLS: usize> Tile2DMut32<'_, T, ROWS, COLS> {
    /// The element at row `R`, column `C` of the tile (below `ROWS` and `COLS`, checked at
    /// `cargo build`).
    pub fn at_const<const R: u32, const C: u32>(&mut self) -> ElementMut32<'_, T> {
        ElementMut32 {
            _element: PhantomData,
        }
    }

    /// `ROWS`.
    pub fn rows(&self) -> u32 {
        ROWS as u32
    }

    /// `COLS`.
    pub fn cols(&self) -> u32 {
        COLS as u32
    }
}

impl<T> DisjointSlice<T> {
    /// The calling thread's element `index`, or `None` past the end: the element
    /// `get_mut(index)` reaches, as a handle with `read()` and `write(v)`.
    pub fn element_thread32(&mut self, index: ThreadIndex32) -> Option<ElementMut32<'_, T>> {
        let _ = index;
        None
    }
}

impl<T, const N: usize> DisjointSlice<T, LinearTiles<N>> {
    /// The calling thread's tile, elements `[N*i, N*i + N)`, or `None` unless all of them
    /// exist.
    pub fn tile_thread32(&mut self, index: ThreadIndex32) -> Option<TileMut32<'_, T, N>> {
        let _ = index;
        None
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        0
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        true
    }
}

impl<T, const ROWS: usize, const COLS: usize, const ROW_STRIDE: usize>
    DisjointSlice<T, RowMajorTiles<ROWS, COLS, ROW_STRIDE>>
{
    /// The calling thread's tile at tile coordinates `(coord.row(), coord.col())`, or `None`
    /// unless it lies wholly inside its rows (`COLS * (col + 1) <= ROW_STRIDE`) and the slice.
    pub fn tile_2d32(&mut self, coord: ThreadCoord2D32) -> Option<Tile2DMut32<'_, T, ROWS, COLS>> {
        let _ = coord;
        None
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        0
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        true
    }
}

impl<T, const ROWS: usize, const COLS: usize> DisjointSlice<T, RuntimeRowMajorTiles<ROWS, COLS>> {
    /// The calling thread's tile at tile coordinates `(coord.row(), coord.col())` in rows of
    /// the bound width, or `None` unless it lies wholly inside its rows and the slice.
    pub fn tile_2d32_rt(
        &mut self,
        coord: ThreadCoord2D32,
    ) -> Option<Tile2DMut32<'_, T, ROWS, COLS>> {
        let _ = coord;
        None
    }

    /// The row width the host bound with `RowWidth::new(&mut buffer, width)`.
    pub fn row_width(&self) -> u32 {
        0
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        0
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        true
    }
}
