//! cuda-oxide's read views: strips of a read-only slice checked once where they are made,
//! then read without checks.
//!
//! Why they exist: a naive matrix product reads a row of `A` and a column of `B` per thread;
//! indexing `a[row * k + i]` checks every read. [`MatrixView32::row`] and
//! [`MatrixView32::col`] check the whole strip once (its last element is inside the slice,
//! and a row strip inside its row), and [`RowView32::zip_exact`] checks once that two strips
//! have one length, so `for (x, y) in pair` compiles to loads, the multiply-add and the loop's
//! own exit test. The facts are established in `cuprum-front/src/lower/views.rs`:
//!
//! * `matrix.row(r, n)` is `Some` only when `n != 0`, `n <= stride` and
//!   `r * stride + n - 1 < len` (computed in 64 bits from `u32`s, so exactly);
//! * `matrix.col(c, n)` only when `n != 0`, `c < stride` and `(n - 1) * stride + c < len`;
//! * `view.get(i)` only when `i < n`; an empty view (`RowView32::empty()`) has `n = 0`.
//!
//! Views only read, so any number of threads may hold overlapping ones. They are made in a
//! kernel from its `&[T]` parameters and are not kernel parameters themselves.

use std::marker::PhantomData;

/// A read-only slice seen as a row-major matrix `stride` elements wide. It checks nothing
/// itself: each [`row`](Self::row) and [`col`](Self::col) checks its strip.
#[derive(Clone, Copy)]
pub struct MatrixView32<'a, T> {
    stride: u32,
    _slice: PhantomData<&'a [T]>,
}

impl<'a, T> MatrixView32<'a, T> {
    /// `slice` as rows of `stride` elements (a zero `stride` makes every strip `None`).
    pub fn new(slice: &'a [T], stride: u32) -> Self {
        let _ = slice;
        Self {
            stride,
            _slice: PhantomData,
        }
    }

    /// The first `cols` elements of row `row`, or `None` unless `cols` is at least 1, at most
    /// the stride, and the strip's last element is inside the slice.
    pub fn row(&self, row: u32, cols: u32) -> Option<RowView32<'a, T>> {
        let _ = (row, cols);
        None
    }

    /// The first `rows` elements of column `col` (one stride apart), or `None` unless `rows`
    /// is at least 1, `col` is below the stride and the strip's last element is inside the
    /// slice.
    pub fn col(&self, col: u32, rows: u32) -> Option<ColView32<'a, T>> {
        let _ = (col, rows);
        None
    }

    /// The row width.
    pub fn stride(&self) -> u32 {
        self.stride
    }

    /// The length of the slice.
    pub fn len(&self) -> usize {
        0
    }

    /// Whether the slice is empty.
    pub fn is_empty(&self) -> bool {
        true
    }
}

/// Consecutive elements of a row, all inside the slice.
#[derive(Clone, Copy)]
pub struct RowView32<'a, T> {
    len: u32,
    _slice: PhantomData<&'a [T]>,
}

/// Elements of a column, one row width apart, all inside the slice.
#[derive(Clone, Copy)]
pub struct ColView32<'a, T> {
    len: u32,
    _slice: PhantomData<&'a [T]>,
}

/// A row and a column of one length, read in step by `for (x, y) in pair`.
pub struct ZipView32<'a, T> {
    _slices: PhantomData<&'a [T]>,
}

impl<T: Copy> Iterator for ZipView32<'_, T> {
    type Item = (T, T);

    fn next(&mut self) -> Option<(T, T)> {
        None
    }
}

macro_rules! view_methods {
    ($view:ident) => {
        impl<'a, T> $view<'a, T> {
            /// A view of no elements, for a thread whose strip did not exist but which must
            /// go on (to reach a barrier): `view.get(i)` is always `None`.
            pub const fn empty() -> Self {
                Self {
                    len: 0,
                    _slice: PhantomData,
                }
            }

            /// Element `i`, or `None` unless `i` is below the view's length (one comparison).
            pub fn get(&self, i: u32) -> Option<T>
            where
                T: Copy,
            {
                let _ = i;
                None
            }

            /// The number of elements.
            pub fn len(&self) -> u32 {
                self.len
            }

            /// Whether the view has no elements.
            pub fn is_empty(&self) -> bool {
                self.len == 0
            }

            /// The elements in order (`for x in view.iter()`).
            pub fn iter(&self) -> std::iter::Empty<T> {
                std::iter::empty()
            }
        }
    };
}

view_methods!(RowView32);
view_methods!(ColView32);

impl<'a, T> RowView32<'a, T> {
    /// This row and `col` read in step, or `None` unless they have one length: the loop
    /// `for (x, y) in pair` then compares only its counter.
    pub fn zip_exact(self, col: ColView32<'a, T>) -> Option<ZipView32<'a, T>> {
        let _ = col;
        None
    }
}

/// cuda-oxide's `Uniform<T>`: a kernel parameter the same in every thread of a launch (every
/// scalar parameter is); the host passes the plain value.
#[derive(Clone, Copy, Debug)]
pub struct Uniform<T> {
    value: T,
}

impl<T: Copy> Uniform<T> {
    /// The value.
    pub fn get(&self) -> T {
        self.value
    }
}
