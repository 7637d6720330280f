//! cuda-oxide's proof-carrying output handles: `element_thread32` on a `DisjointSlice<T>`,
//! and the tiled index spaces `LinearTiles<N>` (`tile_thread32`), `RowMajorTiles<R, C, S>`
//! (`tile_2d32`) and `RuntimeRowMajorTiles<R, C>` (`tile_2d32_rt`, its row width bound on the
//! host with `RowWidth`).
//!
//! Why this exists: each hands a thread its whole tile after **one** check (the tile lies
//! wholly inside the slice, and a row-major tile inside its row), and then `at_const::<..>()`
//! reaches each element without a check of its own.
//!
//! Each is the same fact as an output pattern of `disjoint.rs`, and is checked by the same
//! rules (one [`Pattern`] per slice, a thread index unique under the launch contract,
//! launch-uniform extents):
//! * `element_thread32(i)` is `get_mut(i)`: element `i`, [`Pattern::Element`]`(1)`.
//! * `tile_thread32(i)` on `LinearTiles<N>` is `chunk_mut::<N>(i)`'s set, elements
//!   `[N*i, N*i + N)`: [`Pattern::Chunk`]`(N)`; only whole chunks are handed out.
//! * `tile_2d32(c)` on `RowMajorTiles<R, C, S>` and `tile_2d32_rt(c)` on
//!   `RuntimeRowMajorTiles<R, C>` are `tile_mut::<R, C>(c, S)`'s set, rows
//!   `[R*row, R*row + R)` × columns `[C*col, C*col + C)` of a row-major matrix `S` wide
//!   (the constant `S`, or the row width the host bound): [`Pattern::Tile`]`(R, C)` with the
//!   extent `S`; only whole tiles, inside their rows, are handed out.
//!
//! The tile's existence is computed by [`Lowerer::linear_element`] on its **last** element
//! (whose column below the width keeps the tile in its rows, and whose exact linear index
//! below the length keeps it in the slice), its corner coordinates by
//! [`Lowerer::checked_mul_add`], so nothing wraps. Every other element of the tile lies
//! between its first and its last, so `at_const` computes addresses without checks.

use cuprum_ir::{BinaryOp, Constant, Op, Value};
use syn::spanned::Spanned;

use super::disjoint::Pattern;
use super::*;

/// The methods of `DisjointSlice` that return an `Option` of a handle, used in `if let`.
pub(super) const OPTION_METHODS: [&str; 4] = [
    "element_thread32",
    "tile_thread32",
    "tile_2d32",
    "tile_2d32_rt",
];

/// The shape of a tiled `DisjointSlice` parameter, from its type.
#[derive(Clone, Copy, Debug)]
pub(super) struct TileSpace {
    rows: u64,
    cols: u64,
    /// The constant row width of `RowMajorTiles`; `None` for `LinearTiles` (one row) and for
    /// `RuntimeRowMajorTiles` (the bound row width).
    stride: Option<u64>,
    linear: bool,
}

/// A thread's tile: `rows` × `cols` elements from linear index `base`, rows `stride` apart,
/// all inside the slice.
#[derive(Clone, Debug)]
pub(super) struct OutTile {
    param: u32,
    /// `U64`.
    base: Value,
    pub(super) rows: u64,
    pub(super) cols: u64,
    /// `U64`.
    stride: Value,
}

impl Lowerer<'_> {
    /// The tile shape of parameter type `ty`, when it is a tiled `DisjointSlice`.
    pub(super) fn tile_space(&self, ty: &syn::Type) -> Result<Option<TileSpace>> {
        let Some(seg) = crate::types::disjoint_space_segment(ty) else {
            return Ok(None);
        };
        let (want, linear) = match seg.ident.to_string().as_str() {
            "LinearTiles" => (1, true),
            "RowMajorTiles" => (3, false),
            "RuntimeRowMajorTiles" => (2, false),
            _ => return Ok(None),
        };
        let args: Vec<&syn::GenericArgument> = match &seg.arguments {
            syn::PathArguments::AngleBracketed(a) => a.args.iter().collect(),
            _ => Vec::new(),
        };
        if args.len() != want {
            return err(
                seg.span(),
                format!("`{}` takes {want} constant(s)", seg.ident),
            );
        }
        let mut values = Vec::with_capacity(want);
        for a in args {
            values.push(self.const_arg(a, 1)?);
        }
        Ok(Some(match values[..] {
            [n] => TileSpace {
                rows: 1,
                cols: n,
                stride: None,
                linear,
            },
            [r, c] => TileSpace {
                rows: r,
                cols: c,
                stride: None,
                linear,
            },
            [r, c, s] => TileSpace {
                rows: r,
                cols: c,
                stride: Some(s),
                linear,
            },
            _ => return err(seg.span(), "unexpected tile shape"),
        }))
    }

    /// A constant generic argument of at least `min`.
    fn const_arg(&self, arg: &syn::GenericArgument, min: u64) -> Result<u64> {
        let expr = super::outputs::generic_const_expr(arg)?;
        match self.eval_const(&expr, 0)? {
            ConstVal::Int(v) if v >= i128::from(min) && v <= i128::from(u32::MAX) => Ok(v as u64),
            _ => err(
                arg.span(),
                format!("expected a constant from {min} to {}", u32::MAX),
            ),
        }
    }

    /// `slice.element_thread32(i)`, `tile_thread32(i)`, `tile_2d32(c)`, `tile_2d32_rt(c)`:
    /// an `Option` of the thread's element or tile.
    pub(super) fn tile_method(&mut self, param: u32, m: &syn::ExprMethodCall) -> Result<Val> {
        let span = m.span();
        let method = m.method.to_string();
        let [index] = m.args.iter().collect::<Vec<_>>()[..] else {
            return err(span, format!("`{method}` takes the thread's index"));
        };
        let space = self.tile_spaces.get(&param).copied();
        let index_val = self.expr(index)?;
        self.spelling = Some(super::disjoint::Spelling {
            call: format!("{}.{method}(..)", super::source_text(&m.receiver)),
            index: if method.starts_with("tile_2d32") {
                "thread::coord_2d_u32(..)"
            } else {
                "thread::index_1d_u32(..)"
            },
        });
        let r = self.tile_method_checked(param, &method, index, index_val, space, span);
        self.spelling = None;
        r
    }

    fn tile_method_checked(
        &mut self,
        param: u32,
        method: &str,
        index: &syn::Expr,
        index_val: Val,
        space: Option<TileSpace>,
        span: proc_macro2::Span,
    ) -> Result<Val> {
        match (method, index_val, space) {
            ("element_thread32", Val::Index32(i), None) => {
                self.check_mapping(param, Pattern::Element(1), &[], span)?;
                let (linear, some) = self.linear_element(param, &[i], &[], span)?;
                let elem = self.slice_element_ref(param, linear, true, span)?;
                Ok(Val::Opt {
                    some,
                    inner: Box::new(elem),
                })
            }
            ("tile_thread32", Val::Index32(i), Some(t)) if t.linear => {
                self.check_mapping(param, Pattern::Chunk(t.cols), &[], span)?;
                let zero = self.constant(Constant::u64(0));
                self.whole_tile(param, t, (i, zero), zero, span)
            }
            (
                "tile_2d32",
                Val::Coord32(x, y),
                Some(
                    t @ TileSpace {
                        stride: Some(s), ..
                    },
                ),
            ) => {
                let width = self.constant(Constant::u64(s));
                self.check_mapping(param, Pattern::Tile(t.rows, t.cols), &[(width, span)], span)?;
                self.whole_tile(param, t, (x, y), width, span)
            }
            ("tile_2d32_rt", Val::Coord32(x, y), Some(t)) if !t.linear && t.stride.is_none() => {
                let Some(&width) = self.row_widths.get(&param) else {
                    return err(span, "`tile_2d32_rt` needs a `RuntimeRowMajorTiles` slice");
                };
                self.check_mapping(param, Pattern::Tile(t.rows, t.cols), &[(width, span)], span)?;
                self.whole_tile(param, t, (x, y), width, span)
            }
            (_, other, _) => err(
                index.span(),
                format!(
                    "`{method}` takes the thread's own index on its index space: \
                     `element_thread32` and `tile_thread32` (`LinearTiles`) \
                     `thread::index_1d_u32(lc)`, `tile_2d32` (`RowMajorTiles`) and \
                     `tile_2d32_rt` (`RuntimeRowMajorTiles`) `thread::coord_2d_u32(lc)`; not {}",
                    describe(&other)
                ),
            ),
        }
    }

    /// The tile at tile coordinates `(x, y)` (`y` is 0 for `LinearTiles`), present when its
    /// last element is inside its row (below `width`, where the space has rows) and inside
    /// the slice, every coordinate computed without wrapping.
    fn whole_tile(
        &mut self,
        param: u32,
        t: TileSpace,
        (x, y): (Value, Value),
        width: Value,
        span: proc_macro2::Span,
    ) -> Result<Val> {
        let cols = self.constant(Constant::u64(t.cols));
        let last_col = self.constant(Constant::u64(t.cols - 1));
        let (lc, lc_fits) = self.checked_mul_add(x, cols, last_col, span)?;
        let (last, mut some, stride) = if t.linear {
            let (last, some) = self.linear_element(param, &[lc], &[], span)?;
            let one = self.constant(Constant::u64(1));
            (last, some, one)
        } else {
            let rows = self.constant(Constant::u64(t.rows));
            let last_row = self.constant(Constant::u64(t.rows - 1));
            let (lr, lr_fits) = self.checked_mul_add(y, rows, last_row, span)?;
            let (last, some) = self.linear_element(param, &[lc, lr], &[width], span)?;
            let some = match lr_fits {
                Some(f) => self.def(Op::Binary(BinaryOp::And, some, f), span)?,
                None => some,
            };
            (last, some, width)
        };
        if let Some(f) = lc_fits {
            some = self.def(Op::Binary(BinaryOp::And, some, f), span)?;
        }
        // The first element: the last one less (rows - 1) rows and (cols - 1) columns, all
        // inside the tile, so no wrapping where the tile exists.
        let up = self.constant(Constant::u64(t.rows - 1));
        let up = self.def(Op::Binary(BinaryOp::Mul, up, stride), span)?;
        let back = self.def(Op::Binary(BinaryOp::Add, up, last_col), span)?;
        let base = self.def(Op::Binary(BinaryOp::Sub, last, back), span)?;
        Ok(Val::Opt {
            some,
            inner: Box::new(Val::OutTile(OutTile {
                param,
                base,
                rows: t.rows,
                cols: t.cols,
                stride,
            })),
        })
    }

    /// `tile.at_const::<J>()` (one row) or `tile.at_const::<R, C>()`: the element's handle,
    /// its position checked against the tile's shape here, at `cargo build`.
    pub(super) fn tile_at_const(&mut self, t: &OutTile, m: &syn::ExprMethodCall) -> Result<Val> {
        let span = m.span();
        let shape = if t.rows == 1 {
            "`at_const::<J>()` (or `at_const::<0, J>()`)"
        } else {
            "`at_const::<ROW, COL>()`"
        };
        let Some(tf) = &m.turbofish else {
            return err(span, format!("write the element's position: {shape}"));
        };
        let mut at = Vec::with_capacity(2);
        for a in &tf.args {
            at.push(self.const_arg(a, 0)?);
        }
        let (r, c) = match at[..] {
            [j] if t.rows == 1 => (0, j),
            [r, c] => (r, c),
            _ => return err(tf.span(), format!("expected {shape}")),
        };
        if r >= t.rows || c >= t.cols {
            return err(
                tf.span(),
                format!(
                    "element ({r}, {c}) is outside this thread's {} × {} tile",
                    t.rows, t.cols
                ),
            );
        }
        let r = self.constant(Constant::u64(r));
        let c = self.constant(Constant::u64(c));
        let down = self.def(Op::Binary(BinaryOp::Mul, r, t.stride), span)?;
        let offset = self.def(Op::Binary(BinaryOp::Add, down, c), span)?;
        let index = self.def(Op::Binary(BinaryOp::Add, t.base, offset), span)?;
        self.slice_element_ref(t.param, index, true, span)
    }
}
