//! Raw pointers of `unsafe` entries, in cuTile Rust's shapes: a `*mut T` parameter,
//! `pointer_to_tile(p)`, a `PointerTile`'s `reshape`, `broadcast`, `offset_tile` and `offset`,
//! `load_ptr_tko`/`store_ptr_tko` with a mask and padding, and tensor views over a pointer
//! (`make_tensor_view(p, shape, strides, token)`) with their `partition(..).load([i])` and
//! `partition_mut(..).store(t, [i])`.
//!
//! A pointer tile is the pointer parameter and a tile of `i64` element offsets from it; every
//! access becomes the tile IR's `Gather` or `Scatter` at those offsets, so offsets outside
//! the pointer's allocation read padding and are not written. A tensor view is the pointer,
//! a base offset and run-time sizes and strides: a tile of it is a gather (or scatter) whose
//! offsets are the coordinates times the strides, masked to the view's sizes, so its edge
//! tiles pad and drop as a tensor's do. Tokens order nothing here (a block's accesses keep
//! program order), so they are accepted and dropped.

use cuprum_ir::{BinaryOp, CmpOp, ScalarType};
use cuprum_tile_ir::{Dim, Elem, Literal, Op, Shape, Stmt, TileType, TileValue};
use proc_macro2::Span;

use super::calls::Args;
use super::*;

/// A tensor view over a raw pointer (`make_tensor_view`).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct RawView {
    /// The raw pointer parameter.
    pub tensor: u32,
    /// The view's first element, in elements from the pointer (rank-0 `i64`).
    pub base: TileValue,
    /// Its size along each axis (rank-0 `i64`s).
    pub sizes: Vec<TileValue>,
    /// Its stride along each axis, in elements (rank-0 `i64`s).
    pub strides: Vec<TileValue>,
}

const I64: Elem = Elem::Known(ScalarType::I64);

impl<'m> Lowerer<'m> {
    /// The element type of raw pointer parameter `p`.
    pub(super) fn pointer_elem(&self, p: u32) -> Result<Elem> {
        match self.kernel().params.get(p as usize).map(|p| &p.kind) {
            Some(ParamKind::Tensor(t)) if t.access == TensorAccess::Raw => Ok(t.elem),
            _ => err(Span::call_site(), "internal error: not a raw pointer"),
        }
    }

    /// `v` (a number or an integer scalar) as a rank-0 `i64`.
    fn scalar_i64(&mut self, v: Val, span: Span, what: &str) -> Result<TileValue> {
        let t = match v {
            Val::Lit(l, _) if l.ty.is_none() => return self.constant(&l, I64, Vec::new(), span),
            other => self.tile(other, span)?,
        };
        let ty = self.ty(t);
        if !ty.shape.is_empty() || !matches!(ty.elem, Elem::Known(e) if e.is_int()) {
            return err(
                span,
                format!("{what} is a scalar integer, not `{}`", self.show(&ty)),
            );
        }
        self.convert(t, I64, span)
    }

    /// `v` as a tile of `i64` offsets (any integer tile; a number is rank 0).
    fn offsets_i64(&mut self, v: Val, span: Span) -> Result<TileValue> {
        let t = match v {
            Val::Lit(l, _) if l.ty.is_none() => return self.constant(&l, I64, Vec::new(), span),
            other => self.tile(other, span)?,
        };
        let ty = self.ty(t);
        if !matches!(ty.elem, Elem::Known(e) if e.is_int()) {
            return err(
                span,
                format!("offsets are integers, not `{}`", self.show(&ty)),
            );
        }
        self.convert(t, I64, span)
    }

    /// `pointer_to_tile(p)`: the pointer as a rank-0 pointer tile.
    pub(super) fn pointer_to_tile(&mut self, args: &Args<'_>) -> Result<Val> {
        match args.val(0) {
            Val::Pointer(tensor) => {
                let offsets = self.constant(&Lit::int(0), I64, Vec::new(), args.span)?;
                Ok(Val::PointerTile { tensor, offsets })
            }
            other => err(
                args.span_of(0),
                format!(
                    "`pointer_to_tile` takes a `*mut T` parameter of an `unsafe` entry, not {}",
                    other.kind()
                ),
            ),
        }
    }

    /// A method of a pointer tile.
    pub(super) fn pointer_tile_method(
        &mut self,
        tensor: u32,
        offsets: TileValue,
        name: &str,
        args: Args<'_>,
        span: Span,
    ) -> Result<Val> {
        let offsets = match name {
            "reshape" | "broadcast" => {
                self.check_arity(&format!("{name}(shape)"), &args)?;
                let shape = self.static_shape(&args.val(0), args.span_of(0), "a shape")?;
                let op = if name == "reshape" {
                    Op::Reshape {
                        value: offsets,
                        shape,
                    }
                } else {
                    Op::Broadcast {
                        value: offsets,
                        shape,
                    }
                };
                self.def(op, span)?
            }
            "offset_tile" | "offset" => {
                self.check_arity(&format!("{name}(offsets)"), &args)?;
                let by = self.offsets_i64(args.val(0), args.span_of(0))?;
                let shape = self.ty(offsets).shape;
                let by = if self.ty(by).shape.is_empty() {
                    self.splat(by, &shape, span)?
                } else {
                    by
                };
                self.def(Op::Binary(BinaryOp::Add, offsets, by), span)?
            }
            _ => {
                return err(
                    span,
                    format!(
                        "a pointer tile has no method `{name}` (it has `reshape`, `broadcast`, `offset_tile` and `offset`)"
                    ),
                );
            }
        };
        Ok(Val::PointerTile { tensor, offsets })
    }

    /// `load_ptr_tko(pointers, .., mask, padding, ..)`: the tile and a token. The mode
    /// arguments are dropped; what is left are the pointers, then a `bool` tile (the mask)
    /// and a scalar (the padding), each optional.
    pub(super) fn load_ptr(&mut self, args: &Args<'_>) -> Result<Val> {
        let Val::PointerTile { tensor, offsets } = args.val(0) else {
            return err(
                args.span_of(0),
                "`load_ptr_tko` reads through a pointer tile",
            );
        };
        let elem = self.pointer_elem(tensor)?;
        let mut mask = None;
        let mut padding = Literal::Int(0);
        for i in 1..args.vals.len() {
            match args.val(i) {
                Val::Lit(l, _) => padding = l.literal(elem, args.span_of(i))?,
                Val::Tile(t) if self.ty(t).elem == Elem::Known(ScalarType::Bool) => {
                    mask = Some(self.mask_like(t, offsets, args.span_of(i))?);
                }
                other => {
                    return err(
                        args.span_of(i),
                        format!(
                            "`load_ptr_tko` takes a `bool` mask tile and a padding number, not {}",
                            other.kind()
                        ),
                    );
                }
            }
        }
        let tile = self.def(
            Op::Gather {
                tensor,
                offsets,
                mask,
                padding,
            },
            args.span,
        )?;
        Ok(Val::Tuple(vec![Val::Tile(tile), token()]))
    }

    /// `store_ptr_tko(pointers, value, .., mask, ..)`: a token.
    pub(super) fn store_ptr(&mut self, args: &Args<'_>) -> Result<Val> {
        let Val::PointerTile { tensor, offsets } = args.val(0) else {
            return err(
                args.span_of(0),
                "`store_ptr_tko` writes through a pointer tile",
            );
        };
        let elem = self.pointer_elem(tensor)?;
        let shape = self.ty(offsets).shape;
        let value = self.tile_of(args.val(1), elem, args.span_of(1))?;
        let value = if self.ty(value).shape.is_empty() && !shape.is_empty() {
            self.splat(value, &shape, args.span_of(1))?
        } else {
            value
        };
        let mask = match args.vals.get(2) {
            Some((Val::Tile(t), s)) => Some(self.mask_like(*t, offsets, *s)?),
            Some((other, s)) => {
                return err(
                    *s,
                    format!("a store's mask is a `bool` tile, not {}", other.kind()),
                );
            }
            None => None,
        };
        self.scatter(tensor, offsets, value, mask, args.span)?;
        Ok(token())
    }

    /// `mask` checked to be a `bool` tile of `offsets`' shape.
    fn mask_like(&self, mask: TileValue, offsets: TileValue, span: Span) -> Result<TileValue> {
        let (m, o) = (self.ty(mask), self.ty(offsets));
        if m.elem != Elem::Known(ScalarType::Bool) || m.shape != o.shape {
            return err(
                span,
                format!(
                    "the mask is `{}`; it must be a `bool` tile of the pointers' shape `{}`",
                    self.show(&m),
                    self.show_shape(&o.shape)
                ),
            );
        }
        Ok(mask)
    }

    fn scatter(
        &mut self,
        tensor: u32,
        offsets: TileValue,
        value: TileValue,
        mask: Option<TileValue>,
        span: Span,
    ) -> Result<()> {
        let (v, o) = (self.ty(value), self.ty(offsets));
        if v.shape != o.shape {
            return err(
                span,
                format!(
                    "a store of `{}` through pointers of shape `{}`",
                    self.show(&v),
                    self.show_shape(&o.shape)
                ),
            );
        }
        self.b.push(Stmt::Scatter {
            tensor,
            offsets,
            value,
            mask,
        });
        Ok(())
    }

    /// `make_tensor_view(pointer, shape, strides, token)`: a tensor over the pointer.
    pub(super) fn make_tensor_view(&mut self, args: &Args<'_>) -> Result<Val> {
        let Val::PointerTile { tensor, offsets } = args.val(0) else {
            return err(
                args.span_of(0),
                "`make_tensor_view` takes a rank-0 pointer tile (`pointer_to_tile(p)`)",
            );
        };
        if !self.ty(offsets).shape.is_empty() {
            return err(
                args.span_of(0),
                "`make_tensor_view` takes a rank-0 pointer tile (`pointer_to_tile(p)`)",
            );
        }
        let sizes = self.i64_list(args.val(1), args.span_of(1), "a view's size")?;
        let strides = self.i64_list(args.val(2), args.span_of(2), "a view's stride")?;
        if sizes.len() != strides.len() || sizes.is_empty() {
            return err(
                args.span,
                format!(
                    "a tensor view has one stride per dimension: {} sizes and {} strides given",
                    sizes.len(),
                    strides.len()
                ),
            );
        }
        Ok(Val::RawTensor(Box::new(RawView {
            tensor,
            base: offsets,
            sizes,
            strides,
        })))
    }

    /// The entries of a shape or array as rank-0 `i64`s.
    fn i64_list(&mut self, v: Val, span: Span, what: &str) -> Result<Vec<TileValue>> {
        let items: Vec<Val> = match v {
            Val::Array(items) | Val::Tuple(items) => items,
            Val::Shape(entries) => {
                let mut out = Vec::with_capacity(entries.len());
                for e in entries {
                    out.push(match e {
                        ShapeEntry::Dim(Dim::Known(n)) => Val::lit(Lit::int(i128::from(n))),
                        ShapeEntry::Dim(Dim::Param(i)) => {
                            Val::Tile(self.def(Op::ConstParam(i), span)?)
                        }
                        ShapeEntry::Dynamic { tensor, axis } => {
                            Val::Tile(self.def(Op::TensorDim { tensor, axis }, span)?)
                        }
                    });
                }
                out
            }
            other => {
                return err(
                    span,
                    format!(
                        "{what} list is `[a, b, ..]` or a shape, not {}",
                        other.kind()
                    ),
                );
            }
        };
        items
            .into_iter()
            .map(|item| self.scalar_i64(item, span, what))
            .collect()
    }

    /// A method of a tensor view over a pointer.
    pub(super) fn raw_tensor_method(
        &mut self,
        view: RawView,
        name: &str,
        args: Args<'_>,
        span: Span,
    ) -> Result<Val> {
        match name {
            "partition" | "partition_mut" => {
                self.check_arity(&format!("{name}(shape)"), &args)?;
                let tile =
                    self.static_shape(&args.val(0), args.span_of(0), "a partition's tile shape")?;
                if tile.len() != view.sizes.len() {
                    return err(
                        args.span_of(0),
                        format!(
                            "this view has rank {}, so its tiles do too, not `{}`",
                            view.sizes.len(),
                            self.show_shape(&tile)
                        ),
                    );
                }
                Ok(Val::RawPartition {
                    view: Box::new(view),
                    tile,
                    mutable: name == "partition_mut",
                })
            }
            _ => err(
                span,
                format!(
                    "a tensor view over a pointer has no method `{name}` (it has `partition` and `partition_mut`)"
                ),
            ),
        }
    }

    /// A method of a partition of a tensor view over a pointer: `load([i, ..])`, and
    /// `store(tile, [i, ..])` for `partition_mut`.
    pub(super) fn raw_partition_method(
        &mut self,
        view: RawView,
        tile: Shape,
        mutable: bool,
        name: &str,
        args: Args<'_>,
        span: Span,
    ) -> Result<Val> {
        let elem = self.pointer_elem(view.tensor)?;
        match name {
            "load" => {
                self.check_arity("load(index)", &args)?;
                let index = self.tile_index(args.val(0), tile.len(), args.span_of(0))?;
                let (offsets, inside) = self.view_tile(&view, &tile, &index, span)?;
                let t = self.def(
                    Op::Gather {
                        tensor: view.tensor,
                        offsets,
                        mask: Some(inside),
                        padding: Literal::Int(0),
                    },
                    span,
                )?;
                Ok(Val::Tile(t))
            }
            "store" if mutable => {
                self.check_arity("store(tile, index)", &args)?;
                let value = self.tile_of(args.val(0), elem, args.span_of(0))?;
                let want = TileType {
                    elem,
                    shape: tile.clone(),
                };
                let got = self.ty(value);
                if got != want {
                    return err(
                        args.span_of(0),
                        format!(
                            "this partition's tiles are `{}`, not `{}`",
                            self.show(&want),
                            self.show(&got)
                        ),
                    );
                }
                let index = self.tile_index(args.val(1), tile.len(), args.span_of(1))?;
                let (offsets, inside) = self.view_tile(&view, &tile, &index, span)?;
                self.scatter(view.tensor, offsets, value, Some(inside), span)?;
                Ok(Val::Unit)
            }
            "store" => err(
                span,
                "a `partition` is read-only; store through `partition_mut`",
            ),
            _ => err(
                span,
                format!("a partition of a tensor view has no method `{name}`"),
            ),
        }
    }

    /// Tile `index` (of shape `tile`) of `view`: each element's offset from the pointer, and
    /// whether it lies inside the view.
    fn view_tile(
        &mut self,
        view: &RawView,
        tile: &Shape,
        index: &[TileValue],
        span: Span,
    ) -> Result<(TileValue, TileValue)> {
        let mut offsets = self.splat(view.base, tile, span)?;
        let mut inside: Option<TileValue> = None;
        for (axis, (&i, &n)) in index.iter().zip(tile).enumerate() {
            let i = self.convert(i, I64, span)?;
            let n = match n {
                Dim::Known(n) => self.constant(&Lit::int(i128::from(n)), I64, Vec::new(), span)?,
                Dim::Param(c) => {
                    let c = self.def(Op::ConstParam(c), span)?;
                    self.convert(c, I64, span)?
                }
            };
            let first = self.def(Op::Binary(BinaryOp::Mul, i, n), span)?;
            let first = self.splat(first, tile, span)?;
            let along = self.def(
                Op::Iota {
                    elem: I64,
                    shape: tile.clone(),
                    axis: axis as u32,
                },
                span,
            )?;
            let coord = self.def(Op::Binary(BinaryOp::Add, first, along), span)?;
            let zero = self.constant(&Lit::int(0), I64, tile.clone(), span)?;
            let size = self.splat(view.sizes[axis], tile, span)?;
            let low = self.def(Op::Compare(CmpOp::Ge, coord, zero), span)?;
            let high = self.def(Op::Compare(CmpOp::Lt, coord, size), span)?;
            let here = self.def(Op::Binary(BinaryOp::And, low, high), span)?;
            inside = Some(match inside {
                Some(acc) => self.def(Op::Binary(BinaryOp::And, acc, here), span)?,
                None => here,
            });
            let stride = self.splat(view.strides[axis], tile, span)?;
            let step = self.def(Op::Binary(BinaryOp::Mul, coord, stride), span)?;
            offsets = self.def(Op::Binary(BinaryOp::Add, offsets, step), span)?;
        }
        let inside = inside.ok_or_else(|| syn::Error::new(span, "a view of rank 0"))?;
        Ok((offsets, inside))
    }
}

/// What `load_ptr_tko`, `store_ptr_tko` and `new_token_unordered` give as their token.
pub(super) fn token() -> Val {
    Val::Marker("token".into())
}
