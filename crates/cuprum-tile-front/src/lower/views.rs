//! Tensors and their tiles: `x.shape()`, `x.partition(shape)` and its `.load([i, j])`,
//! `x.load_tile(shape, [i, j])`, `load_tile_like(x, z)` / `x.load_like(z)`, the own tile of an
//! output (`z.load()`, `load_tile_mut(z)`, `z.store(t)`), sub-tiles of the own tile
//! (`z.partition_mut(shape).store(t, [i, j])`), and `num_tiles(&partition, axis)`.
//!
//! In a kernel, a `&mut Tensor<E, S>` is the tile of shape `S` this block owns (so its
//! `shape()` is `S`), and a `&Tensor` is the whole input (its `-1` dimensions are read at
//! launch). Loads pad with zeros outside the tensor; stores drop what falls outside.

use cuprum_ir::{BinaryOp, ScalarType};
use cuprum_tile_ir::{
    Axis, Dim, Elem, Op, ParamKind, Shape, Stmt, TensorAccess, TensorDim, TensorParam, TileValue,
    View,
};
use proc_macro2::Span;

use super::calls::Args;
use super::*;

impl<'m> Lowerer<'m> {
    pub(super) fn tensor_param(&self, t: u32) -> Result<(String, TensorParam)> {
        match self.kernel().params.get(t as usize) {
            Some(p) => match &p.kind {
                ParamKind::Tensor(tp) => Ok((p.name.clone(), tp.clone())),
                ParamKind::Scalar(_) => {
                    err(Span::call_site(), format!("`{}` is not a tensor", p.name))
                }
            },
            None => err(
                Span::call_site(),
                "internal error: an unknown tensor parameter",
            ),
        }
    }

    /// `x.shape()`: an output's tile shape, or an input's declared dimensions.
    fn tensor_shape(&self, t: u32) -> Result<Vec<ShapeEntry>> {
        let (_, tp) = self.tensor_param(t)?;
        Ok(tp
            .dims
            .iter()
            .enumerate()
            .map(|(axis, d)| match d {
                TensorDim::Static(d) => ShapeEntry::Dim(*d),
                TensorDim::Dynamic => ShapeEntry::Dynamic {
                    tensor: t,
                    axis: axis as u32,
                },
            })
            .collect())
    }

    pub(super) fn tensor_method(
        &mut self,
        t: u32,
        name: &str,
        args: Args<'_>,
        span: Span,
    ) -> Result<Val> {
        let (tname, tp) = self.tensor_param(t)?;
        let output = tp.access == TensorAccess::Partitioned;
        match name {
            "shape" => {
                self.check_arity("shape()", &args)?;
                Ok(Val::Shape(self.tensor_shape(t)?))
            }
            "partition" | "partition_mut" => {
                self.check_arity(&format!("{name}(shape)"), &args)?;
                let mutable = name == "partition_mut";
                if mutable && !output {
                    return err(
                        span,
                        format!(
                            "`{tname}` is read-only (`&Tensor`); only a `&mut Tensor` output has `partition_mut`"
                        ),
                    );
                }
                if !mutable && output {
                    return err(
                        span,
                        format!(
                            "`{tname}` is an output: a block reads only its own tile of it (`{tname}.load()`) and writes sub-tiles with `partition_mut`"
                        ),
                    );
                }
                let tile =
                    self.static_shape(&args.val(0), args.span_of(0), "a partition's tile shape")?;
                if tile.len() != tp.rank() {
                    return err(
                        args.span_of(0),
                        format!(
                            "`{tname}` has rank {}, so its tiles do too, not `{}`",
                            tp.rank(),
                            self.show_shape(&tile)
                        ),
                    );
                }
                Ok(Val::Partition {
                    tensor: t,
                    tile,
                    mutable,
                })
            }
            "partition_permuted" => {
                self.check_arity("partition_permuted(shape, dim_map)", &args)?;
                if output {
                    return err(
                        span,
                        format!(
                            "`{tname}` is an output: a block reads only its own tile of it (`{tname}.load()`)"
                        ),
                    );
                }
                let tile =
                    self.static_shape(&args.val(0), args.span_of(0), "a partition's tile shape")?;
                let dim_map = self.axes(args.val(1), args.span_of(1))?;
                if tile.len() != tp.rank() || dim_map.len() != tp.rank() {
                    return err(
                        span,
                        format!(
                            "`{tname}` has rank {}, so its permuted tiles and their axes do too, not `{}` and {} axes",
                            tp.rank(),
                            self.show_shape(&tile),
                            dim_map.len()
                        ),
                    );
                }
                Ok(Val::PermutedPartition {
                    tensor: t,
                    tile,
                    dim_map,
                })
            }
            "load" => {
                self.check_arity("load()", &args)?;
                self.load_own(t, span)
            }
            "store" => {
                self.check_arity("store(tile)", &args)?;
                self.store_own(t, args.val(0), args.span_of(0), span)?;
                Ok(Val::Unit)
            }
            "load_tile" => {
                self.check_arity("load_tile(shape, index)", &args)?;
                let shape = self.static_shape(&args.val(0), args.span_of(0), "a tile shape")?;
                self.load_tiled(t, shape, args.val(1), args.span_of(1), span)
            }
            "load_like" | "load_tile_like" => {
                self.check_arity(&format!("{name}(like)"), &args)?;
                let Val::Tensor(like) = args.val(0) else {
                    return err(
                        args.span_of(0),
                        format!("`{name}` takes the tensor whose tile to match"),
                    );
                };
                self.load_like(t, like, span)
            }
            _ => err(
                span,
                format!(
                    "a tensor has no method `{name}` (it has `shape`, `partition`, `partition_mut`, `load`, `store`, `load_tile` and `load_like`)"
                ),
            ),
        }
    }

    pub(super) fn partition_method(
        &mut self,
        t: u32,
        tile: Shape,
        mutable: bool,
        name: &str,
        args: Args<'_>,
        span: Span,
    ) -> Result<Val> {
        match (name, mutable) {
            ("load" | "load_pipelined", false) => {
                self.check_arity(&format!("{name}(index)"), &args)?;
                self.load_tiled(t, tile, args.val(0), args.span_of(0), span)
            }
            ("store" | "store_unchecked", true) => {
                self.check_arity(&format!("{name}(tile, index)"), &args)?;
                self.store_part(
                    t,
                    tile,
                    args.val(0),
                    args.span_of(0),
                    args.val(1),
                    args.span_of(1),
                )?;
                Ok(Val::Unit)
            }
            ("load", true) => err(
                span,
                "loading a sub-tile of an output's own tile is not supported yet; load the whole tile with `load()`",
            ),
            ("store", false) => err(span, "a partition of a `&Tensor` is read-only"),
            _ => err(
                span,
                format!(
                    "a {} has no method `{name}`",
                    if mutable {
                        "mutable partition"
                    } else {
                        "partition"
                    }
                ),
            ),
        }
    }

    /// A permutation of axes: `[1, 0]`, `const_array![1, 0]`, or `const_array!(P)` of an
    /// array const parameter (known at launch).
    fn axes(&mut self, v: Val, span: Span) -> Result<Vec<Axis>> {
        match v {
            Val::Axes(axes) => Ok(axes),
            Val::Array(items) => items
                .iter()
                .map(|item| {
                    let n = self.const_int(item, span, "an axis")?;
                    u32::try_from(n)
                        .map(Axis::Known)
                        .or_else(|_| err(span, format!("an axis is 0 or more, not {n}")))
                })
                .collect(),
            other => err(
                span,
                format!(
                    "axes are `[1, 0]` or `const_array!(P)`, not {}",
                    other.kind()
                ),
            ),
        }
    }

    /// A method of `x.partition_permuted(tile, dim_map)`: `load([i, j, ..])`.
    pub(super) fn permuted_partition_method(
        &mut self,
        t: u32,
        tile: Shape,
        dim_map: Vec<Axis>,
        name: &str,
        args: Args<'_>,
        span: Span,
    ) -> Result<Val> {
        match name {
            "load" | "load_pipelined" => {
                self.check_arity(&format!("{name}(index)"), &args)?;
                let (_, tp) = self.tensor_param(t)?;
                let index = self.tile_index(args.val(0), tp.rank(), args.span_of(0))?;
                self.def(
                    Op::Load {
                        view: View::Permuted {
                            tensor: t,
                            tile,
                            index,
                            dim_map,
                        },
                        padding: zero_literal(tp.elem),
                    },
                    span,
                )
                .map(Val::Tile)
            }
            _ => err(span, format!("a permuted partition has no method `{name}`")),
        }
    }

    /// One rank-0 integer per axis from `[i, j, ..]`.
    pub(super) fn tile_index(&mut self, v: Val, rank: usize, span: Span) -> Result<Vec<TileValue>> {
        let items = match v {
            Val::Array(items) => items,
            Val::Tuple(items) => items,
            other => {
                return err(
                    span,
                    format!("a tile index is `[i, j, ..]`, not {}", other.kind()),
                );
            }
        };
        if items.len() != rank {
            return err(
                span,
                format!(
                    "this index has {} coordinates; the tensor has rank {rank}",
                    items.len()
                ),
            );
        }
        let mut out = Vec::with_capacity(rank);
        for item in items {
            let v = match item {
                Val::Lit(l, o) => self.materialize(&l, o, span)?,
                other => self.tile(other, span)?,
            };
            let ty = self.ty(v);
            if !ty.shape.is_empty() || !matches!(ty.elem, Elem::Known(t) if t.is_int()) {
                return err(
                    span,
                    format!(
                        "a tile coordinate is a scalar integer, not `{}`",
                        self.show(&ty)
                    ),
                );
            }
            out.push(v);
        }
        Ok(out)
    }

    /// Tile `index` of read-only tensor `t` cut into tiles of `tile`.
    pub(super) fn load_tiled(
        &mut self,
        t: u32,
        tile: Shape,
        index: Val,
        index_span: Span,
        span: Span,
    ) -> Result<Val> {
        let (name, tp) = self.tensor_param(t)?;
        if tp.access == TensorAccess::Partitioned {
            return err(
                span,
                format!(
                    "`{name}` is an output: a block reads only its own tile of it, with `{name}.load()`"
                ),
            );
        }
        if tile.len() != tp.rank() {
            return err(
                span,
                format!(
                    "`{name}` has rank {}, so its tiles do too, not `{}`",
                    tp.rank(),
                    self.show_shape(&tile)
                ),
            );
        }
        let index = self.tile_index(index, tp.rank(), index_span)?;
        self.def(
            Op::Load {
                view: View::Tiled {
                    tensor: t,
                    tile,
                    index,
                },
                padding: zero_literal(tp.elem),
            },
            span,
        )
        .map(Val::Tile)
    }

    /// `load_tile_like(x, like)`: `x`'s tile at this block's position, of `like`'s shape.
    pub(super) fn load_like(&mut self, x: u32, like: u32, span: Span) -> Result<Val> {
        let (lname, lp) = self.tensor_param(like)?;
        let mut tile = Vec::with_capacity(lp.rank());
        for d in &lp.dims {
            match d {
                TensorDim::Static(d) => tile.push(*d),
                TensorDim::Dynamic => {
                    return err(
                        span,
                        format!(
                            "`{lname}` has a `-1` dimension, so its tile shape is not known; load with `load_tile(shape, index)`"
                        ),
                    );
                }
            }
        }
        let (xname, xp) = self.tensor_param(x)?;
        if xp.rank() != lp.rank() || lp.rank() > 3 {
            return err(
                span,
                format!(
                    "`load_tile_like` needs tensors of one rank, 1 to 3 (one grid axis per dimension): `{xname}` has rank {}, `{lname}` rank {}",
                    xp.rank(),
                    lp.rank()
                ),
            );
        }
        let mut index = Vec::with_capacity(tile.len());
        for axis in 0..tile.len() as u32 {
            index.push(self.def(Op::BlockId(axis), span)?);
        }
        let tiled = Val::Array(index.into_iter().map(Val::Tile).collect());
        self.load_tiled(x, tile, tiled, span, span)
    }

    /// The tile output `t` this block owns.
    pub(super) fn load_own(&mut self, t: u32, span: Span) -> Result<Val> {
        let (name, tp) = self.tensor_param(t)?;
        if tp.access != TensorAccess::Partitioned {
            return err(
                span,
                format!(
                    "`{name}` is an input (`&Tensor`); `load()` reads an output's own tile; read inputs with `load_tile`, `partition(..).load(..)` or `load_tile_like`"
                ),
            );
        }
        self.def(
            Op::Load {
                view: View::Own { tensor: t },
                padding: zero_literal(tp.elem),
            },
            span,
        )
        .map(Val::Tile)
    }

    /// `value` as a tile of element `elem` and shape `shape` for a store (a literal is
    /// repeated).
    fn store_value(
        &mut self,
        name: &str,
        elem: Elem,
        shape: &Shape,
        value: Val,
        value_span: Span,
    ) -> Result<TileValue> {
        if let Val::Lit(l, _) = &value {
            return self.constant(l, elem, shape.clone(), value_span);
        }
        let v = self.tile(value, value_span)?;
        let got = self.ty(v);
        let want = cuprum_tile_ir::TileType {
            elem,
            shape: shape.clone(),
        };
        if got != want {
            if got.elem != elem {
                self.hints.mismatch(v, elem);
            }
            return err(
                value_span,
                format!(
                    "`{name}` stores `{}` tiles; this is `{}`",
                    self.show(&want),
                    self.show(&got)
                ),
            );
        }
        Ok(v)
    }

    /// `t.store(value)`: the block's own tile of output `t`.
    pub(super) fn store_own(
        &mut self,
        t: u32,
        value: Val,
        value_span: Span,
        span: Span,
    ) -> Result<()> {
        let (name, tp) = self.tensor_param(t)?;
        let Some(tile) = tp.partition_tile() else {
            return err(
                span,
                format!(
                    "`{name}` is an input (`&Tensor`); only `&mut Tensor` outputs are stored to"
                ),
            );
        };
        let v = self.store_value(&name, tp.elem, &tile, value, value_span)?;
        self.b.push(Stmt::Store {
            tensor: t,
            value: v,
        });
        Ok(())
    }

    /// `t.partition_mut(tile).store(value, index)`: a sub-tile of the own tile.
    fn store_part(
        &mut self,
        t: u32,
        tile: Shape,
        value: Val,
        value_span: Span,
        index: Val,
        index_span: Span,
    ) -> Result<()> {
        let (name, tp) = self.tensor_param(t)?;
        let v = self.store_value(&name, tp.elem, &tile, value, value_span)?;
        let index = self.tile_index(index, tp.rank(), index_span)?;
        self.b.push(Stmt::StorePart {
            tensor: t,
            tile,
            index,
            value: v,
        });
        Ok(())
    }

    /// `num_tiles(&partition, axis)`: how many tiles of the partition fit along `axis`,
    /// rounded up (an `i32`).
    pub(super) fn num_tiles(&mut self, args: &Args<'_>) -> Result<Val> {
        let span = args.span;
        let (tensor, tile, mapped) = match args.val(0) {
            Val::Partition { tensor, tile, .. } => (tensor, tile, false),
            Val::Mapped { tensor, tile, .. } => (tensor, tile, true),
            _ => {
                return err(
                    args.span_of(0),
                    "`num_tiles` counts the tiles of a partition",
                );
            }
        };
        let axis = self.const_int(&args.val(1), args.span_of(1), "an axis")?;
        let Some(axis) = usize::try_from(axis).ok().filter(|a| *a < tile.len()) else {
            return err(
                args.span_of(1),
                format!("axis {axis} of a rank-{} partition", tile.len()),
            );
        };
        let (_, tp) = self.tensor_param(tensor)?;
        // A partition of an input divides the tensor; one of an output divides the own
        // tile, whose dimensions are the output's declared (static) ones.
        // (A mapped output's declared dims are its tiles; it is cut whole.)
        let size = match tp.dims.get(axis).copied().unwrap_or(TensorDim::Dynamic) {
            TensorDim::Static(d) if !mapped => ShapeEntry::Dim(d),
            TensorDim::Static(_) | TensorDim::Dynamic => ShapeEntry::Dynamic {
                tensor,
                axis: axis as u32,
            },
        };
        let t = tile.get(axis).copied().unwrap_or(Dim::Known(1));
        if let (ShapeEntry::Dim(Dim::Known(n)), Dim::Known(d)) = (size, t) {
            return Ok(Val::lit(Lit::typed_int(
                i128::from(n.div_ceil(d)),
                ScalarType::I32,
            )));
        }
        let i64e = Elem::Known(ScalarType::I64);
        let n = match size {
            ShapeEntry::Dynamic { tensor, axis } => {
                self.def(Op::TensorDim { tensor, axis }, span)?
            }
            ShapeEntry::Dim(d) => self.dim_value(d, i64e, span)?,
        };
        let d = self.dim_value(t, i64e, span)?;
        let one = self.constant(&Lit::int(1), i64e, Vec::new(), span)?;
        let sum = self.def(Op::Binary(BinaryOp::Add, n, d), span)?;
        let sum = self.def(Op::Binary(BinaryOp::Sub, sum, one), span)?;
        let q = self.def(Op::Binary(BinaryOp::Div, sum, d), span)?;
        self.convert(q, Elem::Known(ScalarType::I32), span)
            .map(Val::Tile)
    }

    /// A dimension's value as a scalar of `elem`.
    fn dim_value(&mut self, d: Dim, elem: Elem, span: Span) -> Result<TileValue> {
        match d {
            Dim::Known(n) => self.constant(&Lit::int(i128::from(n)), elem, Vec::new(), span),
            Dim::Param(i) => {
                let v = self.def(Op::ConstParam(i), span)?;
                self.convert(v, elem, span)
            }
        }
    }
}
