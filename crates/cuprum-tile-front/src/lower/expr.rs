//! Expressions: literals, names, operators, casts, tuples, arrays, fields and indexing;
//! calls, control flow and macros are dispatched to their modules.
//!
//! Operators apply element-wise to tiles of one type and shape. A scalar operand (a rank-0
//! tile, or a literal) is repeated to the other operand's shape, so `t * 2.0` and `x + t`
//! work (cutile has no scalar operands; SPEC §3 uses them). Comparison operators (`<`,
//! `==`, ...) are for scalars, which control flow tests; tiles compare with `lt_tile` and
//! friends.

use cuprum_ir::{BinaryOp, CmpOp, ScalarType, UnaryOp};
use cuprum_tile_ir::{Elem, Op, TileValue};
use proc_macro2::Span;
use syn::spanned::Spanned;

use super::*;
use crate::items::{binary_op, compare_op};
use crate::literal::{associated_const, fold_binary, fold_compare};
use crate::types::path_name;

/// The modules of cutile's mode markers (`ftz::Disabled`, `rounding::NearestEven`, ...):
/// arguments that select hardware modes cuprum does not distinguish.
const MARKER_MODULES: &[&str] = &[
    "ftz",
    "rounding",
    "nan",
    "overflow",
    "reverse",
    "padding",
    "ordering",
    "scope",
    "tma",
    "dim_map",
    "cmp_ordering",
    "predicate",
    "latency",
    "signedness",
];

impl Lowerer<'_> {
    pub(super) fn expr(&mut self, e: &syn::Expr, expect: &Ty) -> Result<Val> {
        match e {
            syn::Expr::Lit(l) => Ok(Val::lit(Lit::from_syn(&l.lit)?)),
            syn::Expr::Paren(p) => self.expr(&p.expr, expect),
            syn::Expr::Group(g) => self.expr(&g.expr, expect),
            syn::Expr::Path(p) => self.path_value(p),
            syn::Expr::Unary(u) => self.unary(u),
            syn::Expr::Binary(b) => self.binary(b, expect),
            syn::Expr::Assign(a) => {
                // The new value is expected to have the variable's type.
                let expect = match &a.left.as_ref() {
                    syn::Expr::Path(p) => path_name(&p.path)
                        .and_then(|n| self.lookup(&n))
                        .and_then(|f| self.binding(f))
                        .and_then(|b| match b.val {
                            Val::Tile(t) => Some(t),
                            _ => None,
                        })
                        .map(|t| {
                            let t = self.ty(t);
                            Ty::Tile(t.elem, t.shape)
                        }),
                    _ => None,
                };
                let v = self.expr(&a.right, expect.as_ref().unwrap_or(&Ty::Infer))?;
                self.assign(&a.left, v, a.span())?;
                Ok(Val::Unit)
            }
            syn::Expr::Cast(c) => self.cast(c),
            syn::Expr::Call(c) => self.call(c, expect),
            syn::Expr::MethodCall(m) => self.method_call(m, expect),
            syn::Expr::Macro(m) => self.macro_call(&m.mac, expect),
            syn::Expr::Field(f) => self.field(f),
            syn::Expr::Index(i) => self.index(i),
            syn::Expr::Tuple(t) => {
                if t.elems.is_empty() {
                    return Ok(Val::Unit);
                }
                let items = t
                    .elems
                    .iter()
                    .map(|x| self.expr(x, &Ty::Infer))
                    .collect::<Result<Vec<_>>>()?;
                Ok(Val::Tuple(items))
            }
            syn::Expr::Array(a) => {
                let items = a
                    .elems
                    .iter()
                    .map(|x| self.expr(x, &Ty::Infer))
                    .collect::<Result<Vec<_>>>()?;
                Ok(Val::Array(items))
            }
            syn::Expr::Repeat(r) => {
                let item = self.expr(&r.expr, &Ty::Infer)?;
                let n = self.type_cx().const_usize(&r.len)?;
                Ok(Val::Array(vec![item; n]))
            }
            syn::Expr::Reference(r) => self.expr(&r.expr, expect),
            syn::Expr::Block(b) => {
                if let Some(l) = &b.label {
                    return err(l.span(), "labeled blocks are not supported in tile kernels");
                }
                self.block(&b.block, expect)
            }
            syn::Expr::Unsafe(u) => self.block(&u.block, expect),
            syn::Expr::If(i) => self.if_expr(i, expect),
            syn::Expr::ForLoop(f) => self.for_loop(f),
            syn::Expr::While(w) => self.while_loop(w),
            syn::Expr::Loop(l) => self.loop_expr(l),
            syn::Expr::Break(b) => self.break_expr(b),
            syn::Expr::Continue(c) => self.continue_expr(c),
            syn::Expr::Return(r) => self.return_expr(r),
            syn::Expr::Range(r) => err(
                r.span(),
                "a range is only allowed as the iterator of a `for` loop",
            ),
            syn::Expr::Closure(c) => err(
                c.span(),
                "a closure is only allowed as the combiner of `reduce(tile, axis, identity, |a, b| ..)`",
            ),
            syn::Expr::Let(l) => err(
                l.span(),
                "`if let` and `while let` are not supported in tile kernels",
            ),
            syn::Expr::Struct(st) => self.struct_literal(st),
            syn::Expr::Match(m) => err(
                m.span(),
                "`match` is not supported in tile kernels yet; use `if`/`else`",
            ),
            other => err(
                other.span(),
                "this expression is not supported in tile kernels",
            ),
        }
    }

    fn path_value(&mut self, p: &syn::ExprPath) -> Result<Val> {
        let span = p.span();
        let segs: Vec<String> = p
            .path
            .segments
            .iter()
            .map(|s| s.ident.to_string())
            .collect();
        // cutile's absent optional arguments, typed or not (`None::<scope::TileBlock>`), and
        // its latency hints (`Latency::<0>`): nothing to do here.
        if segs == ["None"] || segs == ["Latency"] {
            return Ok(Val::Marker(segs[0].clone()));
        }
        if let Some(name) = path_name(&p.path) {
            if let Some(flat) = self.lookup(&name)
                && let Some(b) = self.binding(flat)
            {
                return Ok(b.val.clone());
            }
            match self.frame.env.get(&name).cloned() {
                Some(Generic::Const { value, ty }) => return self.const_generic(value, ty, span),
                Some(Generic::Array(dims)) => {
                    return Ok(Val::Shape(dims.into_iter().map(ShapeEntry::Dim).collect()));
                }
                Some(Generic::Type(_)) | Some(Generic::UnboundType) => {
                    return err(span, format!("`{name}` is a type, not a value"));
                }
                Some(_) => {
                    return err(
                        span,
                        format!(
                            "the const parameter `{name}` is not known here; give it with `::<..>`"
                        ),
                    );
                }
                None => {}
            }
            if let Some(c) = self.items.consts.get(&name) {
                return Ok(Val::lit(c.clone()));
            }
            if name == "None" {
                return Ok(Val::Marker(name));
            }
            if self.items.functions.contains_key(&name) {
                return err(span, format!("`{name}` is a function; call it"));
            }
            return err(span, format!("unknown name `{name}` in this tile kernel"));
        }
        let n = segs.len();
        // `E::ZERO` (cutile's `ElementType::ZERO`) of a type parameter or a scalar type.
        if n == 2 && segs[1] == "ZERO" {
            match (
                self.frame.env.get(&segs[0]),
                ScalarType::from_rust_name(&segs[0]),
            ) {
                (Some(Generic::Type(e)), _) => {
                    let e = *e;
                    let zero = self.constant(&Lit::int(0), e, Vec::new(), span);
                    return zero.map(Val::Tile);
                }
                (_, Some(ScalarType::Bool)) => {
                    return Ok(Val::lit(Lit::from_constant(cuprum_ir::Constant::bool(
                        false,
                    ))));
                }
                (_, Some(t)) => {
                    return Ok(Val::lit(Lit::from_constant(Lit::int(0).constant(t, span)?)));
                }
                _ => {}
            }
        }
        if n >= 2 {
            if let Some(t) = ScalarType::from_rust_name(&segs[n - 2])
                && let Some(c) = associated_const(t, &segs[n - 1])
            {
                return Ok(Val::lit(c));
            }
            if MARKER_MODULES.contains(&segs[n - 2].as_str()) {
                return Ok(Val::Marker(segs.join("::")));
            }
        }
        err(
            span,
            format!("unknown name `{}` in this tile kernel", segs.join("::")),
        )
    }

    /// The value of a const generic: the kernel's parameter, or a known number.
    pub(super) fn const_generic(
        &mut self,
        value: ConstValue,
        ty: ScalarType,
        span: Span,
    ) -> Result<Val> {
        match value {
            ConstValue::Known(n) if ty == ScalarType::Bool => Ok(Val::lit(Lit::from_constant(
                cuprum_ir::Constant::bool(n != 0),
            ))),
            ConstValue::Known(n) => Ok(Val::lit(Lit::from_constant(
                Lit::int(i128::from(n)).constant(ty, span)?,
            ))),
            ConstValue::Param(i) => {
                let v = self.def(Op::ConstParam(i), span)?;
                self.convert(v, Elem::Known(ty), span).map(Val::Tile)
            }
        }
    }

    /// cutile's `Shape::<{ [..] }> { dims: .. }` and `Array::<{ [..] }> { dims: .. }`: the
    /// static shape or the numbers their type gives (the `dims` field is not read).
    fn struct_literal(&mut self, st: &syn::ExprStruct) -> Result<Val> {
        let span = st.span();
        let last = st.path.segments.last();
        let name = last.map(|s| s.ident.to_string()).unwrap_or_default();
        let args = crate::types::last_generic_args(&st.path);
        match (name.as_str(), args.as_slice()) {
            // Run-time numbers: the `dims` field's values.
            ("Shape", [a])
                if self
                    .type_cx()
                    .shape_arg(a)?
                    .contains(&crate::types::Extent::Dynamic) =>
            {
                self.dims_field(st)
            }
            ("Array", [a]) if self.type_cx().const_array_arg(a)?.contains(&-1) => {
                self.dims_field(st)
            }
            ("Shape", [a]) => {
                let extents = self.type_cx().shape_arg(a)?;
                let dims =
                    self.type_cx()
                        .static_shape(&extents, a.span(), "a shape built in a kernel")?;
                Ok(Val::Shape(dims.into_iter().map(ShapeEntry::Dim).collect()))
            }
            ("Array", [a]) => {
                let numbers = self.type_cx().const_array_arg(a)?;
                Ok(Val::Array(
                    numbers
                        .into_iter()
                        .map(|n| Val::lit(Lit::typed_int(i128::from(n), ScalarType::I32)))
                        .collect(),
                ))
            }
            _ => err(
                span,
                "tile kernels have no structs (only cutile's `Shape::<{ [..] }> { .. }` and `Array::<{ [..] }> { .. }`)",
            ),
        }
    }

    /// The `dims: &[a, b, ..]` field of cutile's `Shape { .. }` or `Array { .. }` whose type
    /// has run-time (`-1`) entries: the values, as an array.
    fn dims_field(&mut self, st: &syn::ExprStruct) -> Result<Val> {
        let Some(field) = st
            .fields
            .iter()
            .find(|f| matches!(&f.member, syn::Member::Named(n) if n == "dims"))
        else {
            return err(st.span(), "this needs its `dims: &[..]` field");
        };
        match self.expr(&field.expr, &Ty::Infer)? {
            v @ Val::Array(_) => Ok(v),
            other => err(
                field.expr.span(),
                format!("`dims` is an array `&[a, b, ..]`, not {}", other.kind()),
            ),
        }
    }

    fn unary(&mut self, u: &syn::ExprUnary) -> Result<Val> {
        let span = u.span();
        let v = self.expr(&u.expr, &Ty::Infer)?;
        match u.op {
            syn::UnOp::Deref(_) => Ok(v),
            syn::UnOp::Neg(_) => match v {
                Val::Lit(l, o) => Ok(Val::Lit(l.negate(span)?, o)),
                other => {
                    let t = self.tile(other, span)?;
                    self.unary_op(UnaryOp::Neg, t, span).map(Val::Tile)
                }
            },
            syn::UnOp::Not(_) => {
                let t = match v {
                    Val::Lit(l, _) if l.ty == Some(ScalarType::Bool) => {
                        let b = matches!(l.num, crate::literal::Num::Bool(true));
                        return Ok(Val::lit(Lit::from_constant(cuprum_ir::Constant::bool(!b))));
                    }
                    other => self.tile(other, span)?,
                };
                self.unary_op(UnaryOp::Not, t, span).map(Val::Tile)
            }
            _ => err(span, "this operator is not supported in tile kernels"),
        }
    }

    /// `op t`, with Rust's rules on which types allow it.
    pub(super) fn unary_op(&mut self, op: UnaryOp, t: TileValue, span: Span) -> Result<TileValue> {
        let ty = self.ty(t);
        if let Elem::Known(e) = ty.elem {
            if op == UnaryOp::Neg && e.is_unsigned_int() {
                return err(
                    span,
                    format!("cannot negate `{}`: `{e}` is unsigned", self.show(&ty)),
                );
            }
            if op == UnaryOp::Not && e.is_float() {
                return err(span, format!("`!` is not defined on `{}`", self.show(&ty)));
            }
        }
        self.def(Op::Unary(op, t), span)
    }

    fn binary(&mut self, b: &syn::ExprBinary, expect: &Ty) -> Result<Val> {
        let span = b.span();
        let symbol = quote::ToTokens::to_token_stream(&b.op).to_string();
        if matches!(b.op, syn::BinOp::And(_) | syn::BinOp::Or(_)) {
            return self.short_circuit(b);
        }
        let compound = matches!(
            b.op,
            syn::BinOp::AddAssign(_)
                | syn::BinOp::SubAssign(_)
                | syn::BinOp::MulAssign(_)
                | syn::BinOp::DivAssign(_)
                | syn::BinOp::RemAssign(_)
                | syn::BinOp::BitAndAssign(_)
                | syn::BinOp::BitOrAssign(_)
                | syn::BinOp::BitXorAssign(_)
                | syn::BinOp::ShlAssign(_)
                | syn::BinOp::ShrAssign(_)
        );
        // An arithmetic result has its operands' type, so an annotation's type is the left
        // operand's expected type, and the left operand's type the right one's (as rustc
        // infers `t * convert_tile(u)`).
        let arithmetic = !matches!(
            b.op,
            syn::BinOp::Shl(_)
                | syn::BinOp::Shr(_)
                | syn::BinOp::ShlAssign(_)
                | syn::BinOp::ShrAssign(_)
        ) && compare_op(&b.op).is_none();
        let l = self.expr(
            &b.left,
            if arithmetic && !compound {
                expect
            } else {
                &Ty::Infer
            },
        )?;
        let right_expect = match &l {
            Val::Tile(t) if compare_op(&b.op).is_some() || arithmetic => {
                let t = self.ty(*t);
                Ty::Tile(t.elem, t.shape)
            }
            _ => Ty::Infer,
        };
        let r = self.expr(&b.right, &right_expect)?;
        if let Some(op) = compare_op(&b.op) {
            return self.compare_scalars(op, l, r, &symbol, span);
        }
        let Some(op) = binary_op(&b.op) else {
            return err(span, format!("`{symbol}` is not supported in tile kernels"));
        };
        let v = self.elementwise(op, l, r, &format!("`{symbol}`"), span)?;
        if compound {
            self.assign(&b.left, v, span)?;
            return Ok(Val::Unit);
        }
        Ok(v)
    }

    /// `a op b` element-wise, a scalar or literal operand repeated to the other's shape.
    /// `what` names the operation in messages.
    pub(super) fn elementwise(
        &mut self,
        op: BinaryOp,
        l: Val,
        r: Val,
        what: &str,
        span: Span,
    ) -> Result<Val> {
        if let (Val::Lit(a, oa), Val::Lit(b, ob)) = (&l, &r)
            && let Some(v) = fold_binary(op, a, b, span)?
        {
            return Ok(Val::Lit(v, oa.or(*ob)));
        }
        let shift = matches!(op, BinaryOp::Shl | BinaryOp::Shr);
        let (a, b) = if shift {
            let a = self.tile(l, span)?;
            let shape = self.ty(a).shape;
            let b = match r {
                Val::Lit(lit, _) => {
                    let amount = lit.cast(ScalarType::U32, span)?;
                    self.constant(&amount, Elem::Known(ScalarType::U32), shape.clone(), span)?
                }
                other => {
                    let b = self.tile(other, span)?;
                    let b = self.convert(b, Elem::Known(ScalarType::U32), span)?;
                    self.fit_shape(b, &shape, what, span)?
                }
            };
            (a, b)
        } else {
            self.unify_pair(l, r, what, span)?
        };
        self.def(Op::Binary(op, a, b), span).map(Val::Tile)
    }

    /// Two operands as tiles of one type and shape: a literal takes the other's type, a
    /// rank-0 tile is repeated to the other's shape.
    pub(super) fn unify_pair(
        &mut self,
        l: Val,
        r: Val,
        what: &str,
        span: Span,
    ) -> Result<(TileValue, TileValue)> {
        match (l, r) {
            (Val::Lit(a, _), Val::Lit(b, _)) => {
                let ty = a.ty.or(b.ty).unwrap_or_else(|| {
                    if !is_number(&a) || !is_number(&b) {
                        ScalarType::Bool
                    } else if matches!(a.num, crate::literal::Num::Float { .. })
                        || matches!(b.num, crate::literal::Num::Float { .. })
                    {
                        ScalarType::F64
                    } else {
                        a.default_type()
                    }
                });
                let x = self.constant(&a, Elem::Known(ty), Vec::new(), span)?;
                let y = self.constant(&b, Elem::Known(ty), Vec::new(), span)?;
                Ok((x, y))
            }
            (Val::Lit(a, o), other) => {
                let y = self.tile(other, span)?;
                let x = self.lit_like(&a, o, y, span)?;
                Ok((x, y))
            }
            (other, Val::Lit(b, o)) => {
                let x = self.tile(other, span)?;
                let y = self.lit_like(&b, o, x, span)?;
                Ok((x, y))
            }
            (l, r) => {
                let x = self.tile(l, span)?;
                let y = self.tile(r, span)?;
                let (tx, ty) = (self.ty(x), self.ty(y));
                if tx.elem != ty.elem {
                    self.hints.mismatch(x, ty.elem);
                    self.hints.mismatch(y, tx.elem);
                    return err(
                        span,
                        format!(
                            "{what} of `{}` and `{}`: the element types differ (convert one with `convert_tile` or `as`)",
                            self.show(&tx),
                            self.show(&ty)
                        ),
                    );
                }
                if tx.shape == ty.shape {
                    return Ok((x, y));
                }
                if ty.shape.is_empty() {
                    let y = self.splat(y, &tx.shape, span)?;
                    return Ok((x, y));
                }
                if tx.shape.is_empty() {
                    let x = self.splat(x, &ty.shape, span)?;
                    return Ok((x, y));
                }
                err(
                    span,
                    format!(
                        "{what} of `{}` and `{}`: the shapes differ (reshape and `broadcast` one to the other's shape first)",
                        self.show_shape(&tx.shape),
                        self.show_shape(&ty.shape)
                    ),
                )
            }
        }
    }

    /// A literal as a tile of `like`'s type and shape.
    pub(super) fn lit_like(
        &mut self,
        lit: &Lit,
        origin: Option<u32>,
        like: TileValue,
        span: Span,
    ) -> Result<TileValue> {
        let ty = self.ty(like);
        if let (Some(o), Elem::Known(t)) = (origin, ty.elem) {
            self.hints.learn(o, t);
        }
        self.constant(lit, ty.elem, ty.shape, span)
    }

    /// `v` of `shape`, a rank-0 `v` repeated.
    pub(super) fn fit_shape(
        &mut self,
        v: TileValue,
        shape: &cuprum_tile_ir::Shape,
        what: &str,
        span: Span,
    ) -> Result<TileValue> {
        let t = self.ty(v);
        if &t.shape == shape {
            return Ok(v);
        }
        if t.shape.is_empty() {
            return self.splat(v, shape, span);
        }
        err(
            span,
            format!(
                "{what}: `{}` where a tile of shape `{}` is required",
                self.show(&t),
                self.show_shape(shape)
            ),
        )
    }

    /// `a op b` for the comparison operators: scalars (rank 0) only.
    fn compare_scalars(
        &mut self,
        op: CmpOp,
        l: Val,
        r: Val,
        symbol: &str,
        span: Span,
    ) -> Result<Val> {
        if let (Val::Lit(a, _), Val::Lit(b, _)) = (&l, &r) {
            return Ok(Val::lit(fold_compare(op, a, b, span)?));
        }
        let (a, b) = self.unify_pair(l, r, &format!("`{symbol}`"), span)?;
        let ty = self.ty(a);
        if !ty.shape.is_empty() {
            let f = match op {
                CmpOp::Eq => "eq_tile",
                CmpOp::Ne => "ne_tile",
                CmpOp::Lt => "lt_tile",
                CmpOp::Le => "le_tile",
                CmpOp::Gt => "gt_tile",
                CmpOp::Ge => "ge_tile",
            };
            return err(
                span,
                format!(
                    "`{symbol}` compares scalars; for `{}` element by element use `{f}(a, b)`",
                    self.show(&ty)
                ),
            );
        }
        self.def(Op::Compare(op, a, b), span).map(Val::Tile)
    }

    /// `a && b` and `a || b` on scalar bools: `b` is evaluated only when needed.
    fn short_circuit(&mut self, b: &syn::ExprBinary) -> Result<Val> {
        let span = b.span();
        let and = matches!(b.op, syn::BinOp::And(_));
        let l = self.expr(&b.left, &Ty::Infer)?;
        let bool_ty = Elem::Known(ScalarType::Bool);
        if let Val::Lit(lit, _) = &l {
            let v = lit.constant(ScalarType::Bool, b.left.span())?.bits != 0;
            if v != and {
                // `false && ..` and `true || ..`
                return Ok(l);
            }
            let r = self.expr(&b.right, &Ty::Infer)?;
            if let Val::Lit(lit, _) = &r {
                let v = lit.constant(ScalarType::Bool, b.right.span())?;
                return Ok(Val::lit(Lit::from_constant(v)));
            }
            let r = self.tile(r, b.right.span())?;
            self.scalar_bool(r, b.right.span())?;
            return Ok(Val::Tile(r));
        }
        let cond = self.tile(l, b.left.span())?;
        self.scalar_bool(cond, b.left.span())?;
        let result = self
            .b
            .value(cuprum_tile_ir::TileType::scalar(ScalarType::Bool));
        self.b.begin_block();
        let (then, otherwise);
        if and {
            let r = self.expr(&b.right, &Ty::Infer)?;
            let r = self.tile(r, b.right.span())?;
            self.scalar_bool(r, b.right.span())?;
            then = self.b.end_block(vec![r]);
            self.b.begin_block();
            let f = self.constant(
                &Lit::from_constant(cuprum_ir::Constant::bool(false)),
                bool_ty,
                Vec::new(),
                span,
            )?;
            otherwise = self.b.end_block(vec![f]);
        } else {
            let t = self.constant(
                &Lit::from_constant(cuprum_ir::Constant::bool(true)),
                bool_ty,
                Vec::new(),
                span,
            )?;
            then = self.b.end_block(vec![t]);
            self.b.begin_block();
            let r = self.expr(&b.right, &Ty::Infer)?;
            let r = self.tile(r, b.right.span())?;
            self.scalar_bool(r, b.right.span())?;
            otherwise = self.b.end_block(vec![r]);
        }
        self.b.push(cuprum_tile_ir::Stmt::If {
            cond,
            then,
            otherwise,
            results: vec![result],
        });
        Ok(Val::Tile(result))
    }

    /// Checks that `v` is a rank-0 bool (a condition).
    pub(super) fn scalar_bool(&self, v: TileValue, span: Span) -> Result<()> {
        let t = self.ty(v);
        if t.shape.is_empty() && t.elem == Elem::Known(ScalarType::Bool) {
            return Ok(());
        }
        err(
            span,
            format!(
                "a condition is a scalar `bool`, not `{}`{}",
                self.show(&t),
                if t.shape.is_empty() {
                    ""
                } else {
                    " (reduce a tile of bools first, or use `select` element by element)"
                }
            ),
        )
    }

    fn cast(&mut self, c: &syn::ExprCast) -> Result<Val> {
        let span = c.span();
        let to = self.type_cx().elem(&c.ty)?;
        let v = self.expr(&c.expr, &Ty::Infer)?;
        match (v, to) {
            (Val::Lit(l, _), Elem::Known(t)) => Ok(Val::lit(l.cast(t, span)?)),
            (Val::Lit(l, _), Elem::Param(_)) => {
                let v = self.constant(&l, to, Vec::new(), span)?;
                Ok(Val::Tile(v))
            }
            (other, _) => {
                let t = self.tile(other, span)?;
                self.convert(t, to, span).map(Val::Tile)
            }
        }
    }

    /// `t as to`, element-wise (nothing when `t` already has that element type).
    pub(super) fn convert(&mut self, t: TileValue, to: Elem, span: Span) -> Result<TileValue> {
        let from = self.ty(t).elem;
        if from == to {
            return Ok(t);
        }
        if let (Elem::Known(ScalarType::Bool), Elem::Known(f)) = (from, to)
            && f.is_float()
        {
            return err(
                span,
                "a `bool` cannot be cast to a float; cast to an integer first",
            );
        }
        self.def(Op::Cast { value: t, to }, span)
    }

    fn field(&mut self, f: &syn::ExprField) -> Result<Val> {
        let base = self.expr(&f.base, &Ty::Infer)?;
        let syn::Member::Unnamed(i) = &f.member else {
            return err(
                f.member.span(),
                "tile kernels have no structs; only tuple fields (`.0`) exist",
            );
        };
        match base {
            Val::Tuple(items) => match items.get(i.index as usize) {
                Some(v) => Ok(v.clone()),
                None => err(
                    f.member.span(),
                    format!(
                        "this tuple has {} fields; `.{}` is out of range",
                        items.len(),
                        i.index
                    ),
                ),
            },
            other => err(f.span(), format!("`.{}` of {}", i.index, other.kind())),
        }
    }

    fn index(&mut self, ix: &syn::ExprIndex) -> Result<Val> {
        let span = ix.span();
        let base = self.expr(&ix.expr, &Ty::Infer)?;
        let i = self.expr(&ix.index, &Ty::Infer)?;
        let i = self.const_int(&i, ix.index.span(), "an index into a shape or an array")?;
        match base {
            Val::Shape(entries) => {
                let Some(entry) = usize::try_from(i)
                    .ok()
                    .and_then(|i| entries.get(i))
                    .copied()
                else {
                    return err(
                        ix.index.span(),
                        format!(
                            "this shape has {} dimensions; index {i} is out of range",
                            entries.len()
                        ),
                    );
                };
                self.shape_entry_value(entry, span)
            }
            Val::Array(items) => match usize::try_from(i).ok().and_then(|i| items.get(i)) {
                Some(v) => Ok(v.clone()),
                None => err(
                    ix.index.span(),
                    format!(
                        "this array has {} elements; index {i} is out of range",
                        items.len()
                    ),
                ),
            },
            other => err(span, format!("indexing {} is not supported", other.kind())),
        }
    }

    /// One dimension of a shape as an `i32` value (cutile's type for sizes): a known size,
    /// a const parameter, or a dynamic tensor dimension read at launch and narrowed.
    pub(super) fn shape_entry_value(&mut self, entry: ShapeEntry, span: Span) -> Result<Val> {
        let i32t = Elem::Known(ScalarType::I32);
        match entry {
            ShapeEntry::Dim(cuprum_tile_ir::Dim::Known(n)) => Ok(Val::lit(
                Lit::typed_int(i128::from(n), ScalarType::I32).typed(ScalarType::I32, span)?,
            )),
            ShapeEntry::Dim(cuprum_tile_ir::Dim::Param(i)) => {
                let v = self.def(Op::ConstParam(i), span)?;
                self.convert(v, i32t, span).map(Val::Tile)
            }
            ShapeEntry::Dynamic { tensor, axis } => {
                let v = self.def(Op::TensorDim { tensor, axis }, span)?;
                self.convert(v, i32t, span).map(Val::Tile)
            }
        }
    }

    /// `target = value` (or the store of a compound assignment): `target` is a `let mut`
    /// variable, which now holds `value` (of its type).
    pub(super) fn assign(&mut self, target: &syn::Expr, value: Val, span: Span) -> Result<()> {
        if value == Val::Never {
            return Ok(());
        }
        let name = match target {
            syn::Expr::Path(p) => path_name(&p.path),
            _ => None,
        };
        let Some(name) = name else {
            return err(
                target.span(),
                "only variables can be assigned in a tile kernel (tiles are values, not memory)",
            );
        };
        let Some(flat) = self.lookup(&name) else {
            return err(target.span(), format!("unknown variable `{name}`"));
        };
        let Some(binding) = self.binding(flat).cloned() else {
            return err(target.span(), format!("unknown variable `{name}`"));
        };
        if !binding.mutable {
            return err(
                target.span(),
                format!("`{name}` is not mutable; declare it with `let mut {name}`"),
            );
        }
        let new = match (&binding.val, value) {
            (Val::Tile(old), Val::Lit(l, o)) => {
                let ty = self.ty(*old);
                if let (Some(o), Elem::Known(t)) = (o, ty.elem) {
                    self.hints.learn(o, t);
                }
                Val::Tile(self.constant(&l, ty.elem, ty.shape, span)?)
            }
            (Val::Tile(old), Val::Tile(new)) => {
                let (want, got) = (self.ty(*old), self.ty(new));
                if want != got {
                    if want.elem != got.elem {
                        self.hints.mismatch(*old, got.elem);
                        self.hints.mismatch(new, want.elem);
                    }
                    return err(
                        span,
                        format!(
                            "mismatched types: `{name}` is `{}`, the new value `{}`",
                            self.show(&want),
                            self.show(&got)
                        ),
                    );
                }
                Val::Tile(new)
            }
            (Val::Lit(old, o), Val::Tile(new)) => {
                let ty = self.ty(new);
                if let (Some(o), Elem::Known(t)) = (o, ty.elem) {
                    self.hints.learn(*o, t);
                }
                if let Elem::Known(t) = ty.elem {
                    old.typed(t, span)?;
                }
                Val::Tile(new)
            }
            (Val::Lit(..), Val::Lit(l, o)) => Val::Lit(l, o),
            (old, new) if std::mem::discriminant(old) == std::mem::discriminant(&new) => new,
            (old, new) => {
                return err(
                    span,
                    format!(
                        "`{name}` holds {}; it cannot be given {}",
                        old.kind(),
                        new.kind()
                    ),
                );
            }
        };
        if let Some(b) = self.binding_mut(flat) {
            b.val = new;
        }
        Ok(())
    }
}
