//! The built-in operations that compute tiles: the grid, creation (`constant`, `iota`,
//! scalar⇄tile), shape operations (`reshape`, `broadcast`, `permute`, `transpose`),
//! element-wise functions, `select`, comparisons, conversions, reductions and `ceil_div`.
//! Loads, stores and partitions are in `views`.
//!
//! `iota(shape)` counts along axis 0 at any rank (cutile's is rank 1 only): the element at
//! `[i, j, ..]` is `i`. An `iota` of a float type counts in `i32` and converts.

use cuprum_ir::{BinaryOp, CmpOp, ScalarType, UnaryOp};
use cuprum_tile_ir::{Combine, Dim, Elem, Op, TileType, TileValue};
use proc_macro2::Span;
use syn::spanned::Spanned;

use super::calls::{Args, Builtin, Conversion, Reduction};
use super::math::MathFn;
use super::*;

impl<'m> Lowerer<'m> {
    /// Lowers built-in `b` (signature `sig`) applied to `args`.
    pub(super) fn builtin(
        &mut self,
        b: Builtin,
        sig: &str,
        args: Args<'_>,
        expect: &Ty,
    ) -> Result<Val> {
        if b == Builtin::NotYet {
            return err(
                args.span,
                format!(
                    "`{}` is not supported by cuprum's tile track yet",
                    args.name
                ),
            );
        }
        self.check_arity(sig, &args)?;
        let span = args.span;
        let what = format!("`{}`", args.name);
        match b {
            Builtin::PointerToTile => self.pointer_to_tile(&args),
            Builtin::LoadPtr => self.load_ptr(&args),
            Builtin::StorePtr => self.store_ptr(&args),
            Builtin::MakeTensorView => self.make_tensor_view(&args),
            Builtin::NewToken => Ok(super::pointers::token()),
            Builtin::BlockId | Builtin::NumBlocks => {
                let mut items = Vec::with_capacity(3);
                for axis in 0..3 {
                    let op = if b == Builtin::BlockId {
                        Op::BlockId(axis)
                    } else {
                        Op::NumBlocks(axis)
                    };
                    items.push(Val::Tile(self.def(op, span)?));
                }
                Ok(Val::Tuple(items))
            }
            Builtin::ProgramId | Builtin::NumPrograms => {
                let axis = self.const_int(&args.val(0), args.span_of(0), "a grid axis")?;
                let axis = match u32::try_from(axis) {
                    Ok(a) if a < 3 => a,
                    _ => {
                        return err(
                            args.span_of(0),
                            format!("grid axis {axis}: the grid has axes 0, 1 and 2"),
                        );
                    }
                };
                let op = if b == Builtin::ProgramId {
                    Op::BlockId(axis)
                } else {
                    Op::NumBlocks(axis)
                };
                Ok(Val::Tile(self.def(op, span)?))
            }
            Builtin::NumTiles => self.num_tiles(&args),
            Builtin::CeilDiv => self.ceil_div(args.val(0), args.val(1), span),
            Builtin::LoadTile => {
                let Val::Tensor(t) = args.val(0) else {
                    return err(args.span_of(0), "`load_tile` reads a tensor parameter");
                };
                let shape = self.static_shape(&args.val(1), args.span_of(1), "a tile shape")?;
                self.load_tiled(t, shape, args.val(2), args.span_of(2), span)
            }
            Builtin::LoadTileLike => {
                let (Val::Tensor(x), Val::Tensor(like)) = (args.val(0), args.val(1)) else {
                    return err(span, "`load_tile_like(x, like)` takes two tensors");
                };
                self.load_like(x, like, span)
            }
            Builtin::LoadTileMut => {
                let Val::Tensor(t) = args.val(0) else {
                    return err(args.span_of(0), "`load_tile_mut` reads a `&mut Tensor`");
                };
                self.load_own(t, span)
            }
            Builtin::StoreTile => {
                let Val::Tensor(t) = args.val(0) else {
                    return err(args.span_of(0), "`store_tile` writes a `&mut Tensor`");
                };
                self.store_own(t, args.val(1), args.span_of(1), span)?;
                Ok(Val::Unit)
            }
            Builtin::Constant | Builtin::BroadcastScalar => {
                let shape = self.static_shape(&args.val(1), args.span_of(1), "a tile shape")?;
                let elem = self.result_elem(&args, 0, expect)?;
                self.filled(args.val(0), elem, &shape, args.span_of(0))
            }
            Builtin::Iota => {
                let shape = self.static_shape(&args.val(0), args.span_of(0), "a tile shape")?;
                if shape.is_empty() {
                    return err(args.span_of(0), "`iota` needs a shape of rank 1 or more");
                }
                let elem = self
                    .turbofish_elem(&args, 0)?
                    .or_else(|| expect.elem())
                    .unwrap_or(Elem::Known(ScalarType::I32));
                let count_elem = match elem {
                    Elem::Known(t) if t.is_float() => Elem::Known(ScalarType::I32),
                    other => other,
                };
                let v = self.def(
                    Op::Iota {
                        elem: count_elem,
                        shape,
                        axis: 0,
                    },
                    span,
                )?;
                self.convert(v, elem, span).map(Val::Tile)
            }
            Builtin::ScalarToTile => match args.val(0) {
                Val::Lit(l, o) => {
                    let elem = match self.turbofish_elem(&args, 0)? {
                        Some(e) => Some(e),
                        None if l.ty.is_some() => None,
                        None => expect.elem(),
                    };
                    match elem {
                        Some(e) => Ok(Val::Tile(self.constant(&l, e, Vec::new(), span)?)),
                        None => Ok(Val::Tile(self.materialize(&l, o, span)?)),
                    }
                }
                other => {
                    let t = self.tile(other, args.span_of(0))?;
                    self.rank0(t, &what, args.span_of(0))?;
                    Ok(Val::Tile(t))
                }
            },
            Builtin::TileToScalar => match args.val(0) {
                v @ Val::Lit(..) => Ok(v),
                other => {
                    let t = self.tile(other, args.span_of(0))?;
                    self.rank0(t, &what, args.span_of(0))?;
                    Ok(Val::Tile(t))
                }
            },
            Builtin::Reshape => {
                let t = self.tile_expecting(args.val(0), expect, args.span_of(0))?;
                let shape = self.static_shape(&args.val(1), args.span_of(1), "a tile shape")?;
                self.def(Op::Reshape { value: t, shape }, span)
                    .map(Val::Tile)
            }
            Builtin::Broadcast => {
                let shape = self.static_shape(&args.val(1), args.span_of(1), "a tile shape")?;
                let t = self.tile_expecting(args.val(0), expect, args.span_of(0))?;
                let ty = self.ty(t);
                if ty.shape.is_empty() {
                    return self.splat(t, &shape, span).map(Val::Tile);
                }
                if ty.shape.len() != shape.len() {
                    return err(
                        span,
                        format!(
                            "`broadcast` of `{}` to `{}`: the ranks differ; `reshape` to rank {} first (with 1 for the new dimensions)",
                            self.show_shape(&ty.shape),
                            self.show_shape(&shape),
                            shape.len()
                        ),
                    );
                }
                self.def(Op::Broadcast { value: t, shape }, span)
                    .map(Val::Tile)
            }
            Builtin::Permute => {
                let t = self.tile(args.val(0), args.span_of(0))?;
                let perm = self.permutation(&args.val(1), args.span_of(1))?;
                let v = self.def(Op::Permute { value: t, perm }, span)?;
                if args.vals.len() == 3 {
                    let want = self.static_shape(&args.val(2), args.span_of(2), "a tile shape")?;
                    let got = self.ty(v).shape;
                    if got != want {
                        return err(
                            args.span_of(2),
                            format!(
                                "this permutation gives `{}`, not `{}`",
                                self.show_shape(&got),
                                self.show_shape(&want)
                            ),
                        );
                    }
                }
                Ok(Val::Tile(v))
            }
            Builtin::Transpose => {
                let t = self.tile(args.val(0), args.span_of(0))?;
                let ty = self.ty(t);
                if ty.shape.len() != 2 {
                    return err(
                        span,
                        format!(
                            "`transpose` swaps the two axes of a rank-2 tile; `{}` has rank {} (use `permute`)",
                            self.show(&ty),
                            ty.shape.len()
                        ),
                    );
                }
                self.def(
                    Op::Permute {
                        value: t,
                        perm: vec![1, 0],
                    },
                    span,
                )
                .map(Val::Tile)
            }
            Builtin::ShapeOf => match args.val(0) {
                Val::Tile(t) => Ok(Val::Shape(
                    self.ty(t).shape.into_iter().map(ShapeEntry::Dim).collect(),
                )),
                Val::Lit(..) => Ok(Val::Shape(Vec::new())),
                other => err(span, format!("`shape` of {}", other.kind())),
            },
            Builtin::Math(f) => {
                let f = match f {
                    MathFn::Unary(UnaryOp::Exp2) if args.flush_to_zero => {
                        MathFn::Unary(UnaryOp::Exp2Ftz)
                    }
                    f => f,
                };
                let tiles = self.unify_all(&args, f.arity(), &what, expect)?;
                self.math(f, &tiles, span).map(Val::Tile)
            }
            Builtin::Binary(op) => self.elementwise(op, args.val(0), args.val(1), &what, span),
            Builtin::Fma => {
                let tiles = self.unify_all(&args, 3, &what, expect)?;
                self.def(
                    Op::Ternary(cuprum_ir::TernaryOp::MulAdd, tiles[0], tiles[1], tiles[2]),
                    span,
                )
                .map(Val::Tile)
            }
            Builtin::Mma => {
                let mut tiles = Vec::with_capacity(3);
                for i in 0..3 {
                    tiles.push(self.tile(args.val(i), args.span_of(i))?);
                }
                let op = Op::Mma {
                    a: tiles[0],
                    b: tiles[1],
                    acc: tiles[2],
                };
                self.def(op, span).map(Val::Tile)
            }
            Builtin::Select => {
                let (a, b) = self.unify_pair(args.val(1), args.val(2), &what, span)?;
                let c =
                    self.tile_of(args.val(0), Elem::Known(ScalarType::Bool), args.span_of(0))?;
                let (cs, vs) = (self.ty(c).shape, self.ty(a).shape);
                let (c, a, b) = if cs == vs {
                    (c, a, b)
                } else if cs.is_empty() {
                    (self.splat(c, &vs, span)?, a, b)
                } else if vs.is_empty() {
                    (c, self.splat(a, &cs, span)?, self.splat(b, &cs, span)?)
                } else {
                    return err(
                        span,
                        format!(
                            "`select` with a condition of `{}` and values of `{}`: the shapes differ",
                            self.show_shape(&cs),
                            self.show_shape(&vs)
                        ),
                    );
                };
                self.def(
                    Op::Select {
                        cond: c,
                        if_true: a,
                        if_false: b,
                    },
                    span,
                )
                .map(Val::Tile)
            }
            Builtin::Compare(op) => {
                let (a, b) = self.unify_pair(args.val(0), args.val(1), &what, span)?;
                self.def(Op::Compare(op, a, b), span).map(Val::Tile)
            }
            Builtin::Convert(kind) => self.conversion(kind, &args, expect),
            Builtin::Reduce(kind) => self.reduce(kind, &args),
            Builtin::Assume => Ok(args.val(0)),
            Builtin::NotYet => Ok(Val::Unit),
        }
    }

    /// The element type given by the `index`th type argument (`::<f32>`), if any.
    fn turbofish_elem(&self, args: &Args<'_>, index: usize) -> Result<Option<Elem>> {
        match args.turbofish.get(index) {
            Some(syn::GenericArgument::Type(syn::Type::Infer(_))) | None => Ok(None),
            Some(syn::GenericArgument::Type(t)) => self.type_cx().elem(t).map(Some),
            Some(other) => err(other.span(), "expected an element type"),
        }
    }

    /// The element type of a created tile: the value's own type, else the type argument,
    /// else the annotation's, else Rust's default for the literal.
    fn result_elem(&mut self, args: &Args<'_>, value: usize, expect: &Ty) -> Result<Elem> {
        let own = match args.val(value) {
            Val::Tile(t) => Some(self.ty(t).elem),
            Val::Lit(l, _) => l.ty.map(Elem::Known),
            _ => None,
        };
        if let Some(e) = own {
            return Ok(e);
        }
        if let Some(e) = self.turbofish_elem(args, 0)? {
            return Ok(e);
        }
        if let Some(e) = expect.elem() {
            return Ok(e);
        }
        match args.val(value) {
            Val::Lit(l, o) => Ok(Elem::Known(match o.and_then(|o| self.hints.get(o)) {
                Some(t) => t,
                None => l.default_type(),
            })),
            other => err(
                args.span_of(value),
                format!("a tile's value is a scalar, not {}", other.kind()),
            ),
        }
    }

    /// A tile of `shape` filled with the scalar `v`.
    fn filled(
        &mut self,
        v: Val,
        elem: Elem,
        shape: &cuprum_tile_ir::Shape,
        span: Span,
    ) -> Result<Val> {
        match v {
            Val::Lit(l, o) => {
                if let (Some(o), Elem::Known(t)) = (o, elem) {
                    self.hints.learn(o, t);
                }
                self.constant(&l, elem, shape.clone(), span).map(Val::Tile)
            }
            other => {
                let t = self.tile_of(other, elem, span)?;
                self.rank0(t, "a tile's value", span)?;
                self.splat(t, shape, span).map(Val::Tile)
            }
        }
    }

    /// `v` as a tile; a literal takes the annotation's element type if there is one.
    fn tile_expecting(&mut self, v: Val, expect: &Ty, span: Span) -> Result<TileValue> {
        match (&v, expect.elem()) {
            (Val::Lit(l, _), Some(e)) if l.ty.is_none() => self.constant(l, e, Vec::new(), span),
            _ => self.tile(v, span),
        }
    }

    fn rank0(&self, t: TileValue, what: &str, span: Span) -> Result<()> {
        let ty = self.ty(t);
        if ty.shape.is_empty() {
            return Ok(());
        }
        err(
            span,
            format!(
                "{what} takes a scalar (a rank-0 tile), not `{}`; `reshape` it to `const_shape![]` first",
                self.show(&ty)
            ),
        )
    }

    /// The first `n` arguments as tiles of one type and shape: literals take the tiles'
    /// type (or the annotation's), scalars are repeated to the largest shape.
    fn unify_all(
        &mut self,
        args: &Args<'_>,
        n: usize,
        what: &str,
        expect: &Ty,
    ) -> Result<Vec<TileValue>> {
        let vals: Vec<(Val, Span)> = args.vals.iter().take(n).cloned().collect();
        // The operand of the highest rank sets the shape.
        let mut reference: Option<TileValue> = None;
        for (v, _) in &vals {
            if let Val::Tile(t) = v
                && reference.is_none_or(|r| self.ty(*t).shape.len() > self.ty(r).shape.len())
            {
                reference = Some(*t);
            }
        }
        let reference = match reference {
            Some(r) => r,
            None => {
                let Some((v, s)) = vals.first().cloned() else {
                    return err(args.span, format!("{what} needs an operand"));
                };
                self.tile_expecting(v, expect, s)?
            }
        };
        let mut out = Vec::with_capacity(n);
        for (v, s) in vals {
            let (t, _) = self.unify_pair(v, Val::Tile(reference), what, s)?;
            out.push(t);
        }
        Ok(out)
    }

    /// A permutation: `[1, 0]` or `const_array![1, 0]`.
    fn permutation(&self, v: &Val, span: Span) -> Result<Vec<u32>> {
        let items: Vec<i128> = match v {
            Val::Array(items) => items
                .iter()
                .map(|x| self.const_int(x, span, "a permutation entry"))
                .collect::<Result<_>>()?,
            Val::Shape(entries) => entries
                .iter()
                .map(|e| match e {
                    ShapeEntry::Dim(Dim::Known(n)) => Ok(i128::from(*n)),
                    _ => err(span, "a permutation is a list of axis numbers"),
                })
                .collect::<Result<_>>()?,
            other => {
                return err(
                    span,
                    format!("a permutation is `[1, 0]`, not {}", other.kind()),
                );
            }
        };
        items
            .into_iter()
            .map(|i| u32::try_from(i).or_else(|_| err(span, format!("axis {i} in a permutation"))))
            .collect()
    }

    fn conversion(&mut self, kind: Conversion, args: &Args<'_>, expect: &Ty) -> Result<Val> {
        let span = args.span;
        // `convert_tile::<TO>`, `convert::<TO>`, `convert_scalar::<TO>`; cutile's
        // `bitcast`, `exti`, `trunci`, `ftof`, `ftoi` and `itof` take `<FROM, TO>`.
        let to_index = match (kind, args.name.as_str()) {
            (Conversion::As, "convert_tile" | "convert" | "convert_scalar") => 0,
            _ if args.turbofish.len() >= 2 => 1,
            _ => 0,
        };
        let to = match self
            .turbofish_elem(args, to_index)?
            .or_else(|| expect.elem())
        {
            Some(e) => e,
            None => {
                return err(
                    span,
                    format!(
                        "cannot tell which element type `{}` converts to; annotate the `let` (`let t: Tile<f32, ..> = ..`) or give it: `{}::<f32>(..)`",
                        args.name, args.name
                    ),
                );
            }
        };
        let v = args.val(0);
        if let (Conversion::As, Val::Lit(l, _), Elem::Known(t)) = (kind, &v, to) {
            return Ok(Val::lit(l.cast(t, span)?));
        }
        let x = self.tile(v, args.span_of(0))?;
        let from = self.ty(x).elem;
        match kind {
            Conversion::As => self.convert(x, to, span).map(Val::Tile),
            Conversion::Bitcast => {
                if from == to {
                    return Ok(Val::Tile(x));
                }
                self.def(Op::Bitcast { value: x, to }, span).map(Val::Tile)
            }
            Conversion::Extend | Conversion::Truncate => {
                if let (Elem::Known(f), Elem::Known(t)) = (from, to) {
                    let widen = kind == Conversion::Extend;
                    let ok = f.is_int()
                        && t.is_int()
                        && if widen {
                            t.bits() >= f.bits()
                        } else {
                            t.bits() <= f.bits()
                        };
                    if !ok {
                        return err(
                            span,
                            format!(
                                "`{}` converts an integer to a {} integer, not `{f}` to `{t}`",
                                args.name,
                                if widen { "wider" } else { "narrower" }
                            ),
                        );
                    }
                }
                self.convert(x, to, span).map(Val::Tile)
            }
        }
    }

    fn reduce(&mut self, kind: Option<Reduction>, args: &Args<'_>) -> Result<Val> {
        let span = args.span;
        let t = self.tile(args.val(0), args.span_of(0))?;
        let ty = self.ty(t);
        let axis = self.const_int(&args.val(1), args.span_of(1), "a reduction axis")?;
        let axis = match u32::try_from(axis) {
            Ok(a) if (a as usize) < ty.shape.len() => a,
            _ => {
                return err(
                    args.span_of(1),
                    format!(
                        "`{}` over axis {axis} of `{}`, which has {} axes",
                        args.name,
                        self.show(&ty),
                        ty.shape.len()
                    ),
                );
            }
        };
        let combine = match kind {
            Some(Reduction::Sum) => Combine::Sum,
            Some(Reduction::Prod) => Combine::Prod,
            Some(Reduction::Max) => Combine::Max,
            Some(Reduction::Min) => Combine::Min,
            None => self.closure_combine(args, &ty)?,
        };
        let v = self.def(
            Op::Reduce {
                value: t,
                axis,
                combine,
            },
            span,
        )?;
        self.reductions.insert(v);
        self.origins.insert(
            v,
            format!(
                "`{}` over axis {axis} of `{}`",
                args.name,
                self.show_shape(&ty.shape)
            ),
        );
        Ok(Val::Tile(v))
    }

    /// `reduce`'s identity and closure `|a, b| ..` as the IR's combiner.
    fn closure_combine(&mut self, args: &Args<'_>, ty: &TileType) -> Result<Combine> {
        let Some(closure) = args.closure else {
            return err(
                args.span,
                "`reduce` takes a closure `|a, b| ..` as its combiner",
            );
        };
        let identity = match args.val(2) {
            Val::Lit(l, _) => l.literal(ty.elem, args.span_of(2))?,
            other => {
                return err(
                    args.span_of(2),
                    format!(
                        "the identity of `reduce` is a constant, not {}",
                        other.kind()
                    ),
                );
            }
        };
        if closure.inputs.len() != 2 {
            return err(
                closure.span(),
                "the combiner of `reduce` takes two values: `|a, b| ..`",
            );
        }
        let scalar = TileType {
            elem: ty.elem,
            shape: Vec::new(),
        };
        let a = self.b.value(scalar.clone());
        let b = self.b.value(scalar.clone());
        self.b.begin_block();
        self.frame.scopes.push(Vec::new());
        let loops = std::mem::take(&mut self.frame.loops);
        self.in_combiner += 1;
        let r = self.closure_body(closure, [a, b], &scalar);
        self.in_combiner -= 1;
        self.frame.loops = loops;
        self.frame.scopes.pop();
        let result = match r {
            Ok(v) => v,
            Err(e) => {
                self.b.end_block(Vec::new());
                return Err(e);
            }
        };
        let body = self.b.end_block(vec![result]);
        Ok(Combine::Closure {
            a,
            b,
            body,
            identity,
        })
    }

    fn closure_body(
        &mut self,
        closure: &syn::ExprClosure,
        operands: [TileValue; 2],
        scalar: &TileType,
    ) -> Result<TileValue> {
        for (pat, v) in closure.inputs.iter().zip(operands) {
            let (pat, ty) = match pat {
                syn::Pat::Type(pt) => (&*pt.pat, Some(&*pt.ty)),
                other => (other, None),
            };
            if let Some(t) = ty {
                let want = self.type_cx().ty(t)?;
                if want.tile_type().is_some_and(|w| w != *scalar) {
                    return err(
                        t.span(),
                        format!("the combiner's operands are `{}`", self.show(scalar)),
                    );
                }
            }
            self.bind_pattern(pat, Val::Tile(v))?;
        }
        let v = self.expr(&closure.body, &Ty::Scalar(scalar.elem))?;
        let r = self.tile_of(v, scalar.elem, closure.body.span())?;
        if self.ty(r) != *scalar {
            return err(
                closure.body.span(),
                format!(
                    "the combiner gives `{}`, not `{}`",
                    self.show(&self.ty(r)),
                    self.show(scalar)
                ),
            );
        }
        Ok(r)
    }

    /// `ceil_div(a, b)`: the quotient rounded up (toward positive infinity) for integers of
    /// any sign, without the overflow of `(a + b - 1) / b`.
    fn ceil_div(&mut self, a: Val, b: Val, span: Span) -> Result<Val> {
        if let (Val::Lit(x, _), Val::Lit(y, _)) = (&a, &b)
            && x.ty.is_none()
            && y.ty.is_none()
            && let (Some(x), Some(y)) = (x.as_int(), y.as_int())
        {
            if y == 0 {
                return err(span, "`ceil_div` by zero");
            }
            let (q, r) = (x / y, x % y);
            let up = r != 0 && ((r < 0) == (y < 0));
            return Ok(Val::lit(Lit::int(q + i128::from(up))));
        }
        let (x, y) = self.unify_pair(a, b, "`ceil_div`", span)?;
        let ty = self.ty(x);
        let Elem::Known(e) = ty.elem else {
            return err(span, "`ceil_div` takes integers");
        };
        if !e.is_int() {
            return err(span, format!("`ceil_div` takes integers, not `{e}`"));
        }
        let zero = self.constant(&Lit::int(0), ty.elem, ty.shape.clone(), span)?;
        let one = self.constant(&Lit::int(1), ty.elem, ty.shape.clone(), span)?;
        let q = self.def(Op::Binary(BinaryOp::Div, x, y), span)?;
        let r = self.def(Op::Binary(BinaryOp::Rem, x, y), span)?;
        let mut up = self.def(Op::Compare(CmpOp::Ne, r, zero), span)?;
        if e.is_signed_int() {
            let rn = self.def(Op::Compare(CmpOp::Lt, r, zero), span)?;
            let yn = self.def(Op::Compare(CmpOp::Lt, y, zero), span)?;
            let same = self.def(Op::Compare(CmpOp::Eq, rn, yn), span)?;
            up = self.def(Op::Binary(BinaryOp::And, up, same), span)?;
        }
        let q1 = self.def(Op::Binary(BinaryOp::Add, q, one), span)?;
        self.def(
            Op::Select {
                cond: up,
                if_true: q1,
                if_false: q,
            },
            span,
        )
        .map(Val::Tile)
    }
}
