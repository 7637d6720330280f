//! The `DisjointSlice` patterns beyond one element per thread: `for (j, out) in
//! y.chunk_mut::<N>(i)`, `for (r, c, out) in m.tile_mut::<TM, TN>(idx, width)`,
//! `for (i, out) in y.grid_stride_mut()`, `if let Some(out) = y.block_result_mut()` and
//! `y.update(i, |v| ..)`.
//!
//! Kernels that write several elements per thread, a result per block or in place would
//! otherwise need `unsafe fn` and `&mut [T]`. Each pattern here computes which elements are
//! the thread's and lowers the body once per element (chunks and tiles unrolled, with a fast
//! copy for a piece wholly in bounds; grid strides as a loop). Why the sets of two threads
//! never meet, and the checks that keep it so, are `disjoint.rs`'s: this file only asks
//! [`Lowerer::check_mapping`] with the pattern it lowers.

use cuprum_ir::{AddressSpace, BinaryOp, CmpOp, Constant, Dim, Op, ScalarType as S, SliceAccess};
use cuprum_ir::{Special, Stmt, Value};
use syn::spanned::Spanned;

use super::disjoint::Pattern;
use super::strided::Extent;
use super::*;

/// At most this many elements per chunk or tile: each is a copy of the loop body.
const MAX_PIECE: u64 = 64;

/// What every tile of a `block_tile_mut` shares: the slice, the tile's rows and columns, the
/// width of the slice's rows, and whether the extents give any element at all.
struct BlockTile {
    param: u32,
    th: Value,
    tw: Value,
    w: Value,
    ok: Value,
}

/// One element of a chunk or tile: its offsets within the piece, linear index, and whether
/// the thread gets it.
struct PieceElement {
    offsets: Vec<u64>,
    linear: Value,
    ok: Value,
}

impl Lowerer<'_> {
    /// Lowers `for pat in slice.chunk_mut::<N>(i)`, `.tile_mut::<TM, TN>(idx, width)` or
    /// `.grid_stride_mut()`; `None` when `f` is another loop.
    pub(super) fn output_loop(&mut self, f: &syn::ExprForLoop) -> Result<Option<Val>> {
        let syn::Expr::MethodCall(m) = &*f.expr else {
            return Ok(None);
        };
        let method = m.method.to_string();
        let arity = match method.as_str() {
            "chunk_mut" | "grid_stride_mut" => 2,
            "tile_mut" | "block_tile_mut" => 3,
            _ => return Ok(None),
        };
        let span = f.span();
        if f.label.is_some() {
            return err(span, super::control::LABEL_HELP);
        }
        let param = self.disjoint_receiver(&m.receiver, &method)?;
        let names = loop_names(&f.pat, arity, &method)?;
        let args: Vec<&syn::Expr> = m.args.iter().collect();
        if method == "grid_stride_mut" {
            if !args.is_empty() || m.turbofish.is_some() {
                return err(m.span(), "`grid_stride_mut()` takes no arguments");
            }
            return self.grid_stride(param, &names, &f.body, span).map(Some);
        }
        if super::control::breaks_this_loop(&f.body) {
            return err(
                span,
                format!(
                    "a `{method}` loop visits each of the thread's elements: `break` and \
                     `continue` are not allowed in it (use `if` around the body)"
                ),
            );
        }
        if method == "block_tile_mut" {
            if m.turbofish.is_some() {
                return err(m.span(), "`block_tile_mut` takes no generic arguments");
            }
            return self
                .block_tile(param, &args, &names, &f.body, span)
                .map(Some);
        }
        let shape = self.piece_shape(m, if method == "tile_mut" { 2 } else { 1 })?;
        let elements = match (method.as_str(), &args[..]) {
            ("chunk_mut", [index]) => self.chunk_elements(param, shape[0], index, span)?,
            ("tile_mut", [index, width]) => {
                self.tile_elements(param, (shape[0], shape[1]), index, width, span)?
            }
            _ => {
                return err(
                    m.span(),
                    "expected `chunk_mut::<N>(thread::index_1d())` or \
                     `tile_mut::<TM, TN>(thread::index_2d(), width)`",
                );
            }
        };
        self.piece_loop(param, &elements, &names, &f.body, span)
            .map(Some)
    }

    /// The `DisjointSlice` parameter a pattern method is called on.
    fn disjoint_receiver(&mut self, receiver: &syn::Expr, method: &str) -> Result<u32> {
        match self.expr(receiver)? {
            Val::Slice(p) if self.slice_param(p).1 == SliceAccess::Disjoint => Ok(p),
            other => err(
                receiver.span(),
                format!(
                    "`{method}` is a method of `DisjointSlice`, not of {}",
                    describe(&other)
                ),
            ),
        }
    }

    /// The constant shape in `method::<A, B>`: `dims` values, each at least 1, whose product
    /// is at most [`MAX_PIECE`].
    fn piece_shape(&self, m: &syn::ExprMethodCall, dims: usize) -> Result<Vec<u64>> {
        let method = &m.method;
        let want = if dims == 1 { "<N>" } else { "<TM, TN>" };
        let Some(tf) = &m.turbofish else {
            return err(
                method.span(),
                format!("`{method}` needs its constant shape: `{method}::{want}(..)`"),
            );
        };
        if tf.args.len() != dims {
            return err(tf.span(), format!("`{method}` takes `::{want}`"));
        }
        let mut shape = Vec::with_capacity(dims);
        for arg in &tf.args {
            let expr = generic_const_expr(arg)?;
            match self.eval_const(&expr, 0)? {
                ConstVal::Int(v) if v >= 1 && v <= i128::from(MAX_PIECE) => shape.push(v as u64),
                _ => {
                    return err(
                        arg.span(),
                        format!("the shape of `{method}` must be a constant from 1 to {MAX_PIECE}"),
                    );
                }
            }
        }
        if shape.iter().product::<u64>() > MAX_PIECE {
            return err(
                tf.span(),
                format!("a tile holds at most {MAX_PIECE} elements (each is a copy of the body)"),
            );
        }
        Ok(shape)
    }

    /// Elements `N*i + j` for `j` in `0..n`, each the thread's when it is below the length.
    fn chunk_elements(
        &mut self,
        param: u32,
        n: u64,
        index: &syn::Expr,
        span: proc_macro2::Span,
    ) -> Result<Vec<PieceElement>> {
        let Val::Index1(i) = self.expr(index)? else {
            return err(
                index.span(),
                "`chunk_mut` takes the thread's own index (`thread::index_1d()`), so that no two \
                 threads get one chunk",
            );
        };
        self.check_mapping(param, Pattern::Chunk(n), &[], span)?;
        let size = self.constant(Constant::u64(n));
        let mut out = Vec::with_capacity(n as usize);
        for j in 0..n {
            let offset = self.constant(Constant::u64(j));
            let (e, fits) = self.checked_mul_add(i, size, offset, span)?;
            let (linear, mut ok) = self.linear_element(param, &[e], &[], span)?;
            if let Some(fits) = fits {
                ok = self.def(Op::Binary(BinaryOp::And, fits, ok), span)?;
            }
            out.push(PieceElement {
                offsets: vec![j],
                linear,
                ok,
            });
        }
        Ok(out)
    }

    /// Elements at row `TM*y + r`, column `TN*x + c` of a row-major matrix `width` wide.
    fn tile_elements(
        &mut self,
        param: u32,
        (tm, tn): (u64, u64),
        index: &syn::Expr,
        width: &syn::Expr,
        span: proc_macro2::Span,
    ) -> Result<Vec<PieceElement>> {
        let Val::Index2(x, y) = self.expr(index)? else {
            return err(
                index.span(),
                "`tile_mut` takes the thread's own index (`thread::index_2d()`), so that no two \
                 threads get one tile",
            );
        };
        let w = self.expr(width)?;
        let w = self.materialize(w, S::U64, width.span())?;
        self.check_mapping(param, Pattern::Tile(tm, tn), &[(w, width.span())], span)?;
        let (rows, cols) = (
            self.constant(Constant::u64(tm)),
            self.constant(Constant::u64(tn)),
        );
        let mut out = Vec::with_capacity((tm * tn) as usize);
        for r in 0..tm {
            let r_c = self.constant(Constant::u64(r));
            let (row, row_fits) = self.checked_mul_add(y, rows, r_c, span)?;
            for c in 0..tn {
                let c_c = self.constant(Constant::u64(c));
                let (col, col_fits) = self.checked_mul_add(x, cols, c_c, span)?;
                let (linear, mut ok) = self.linear_element(param, &[col, row], &[w], span)?;
                for fits in [row_fits, col_fits].into_iter().flatten() {
                    ok = self.def(Op::Binary(BinaryOp::And, fits, ok), span)?;
                }
                out.push(PieceElement {
                    offsets: vec![r, c],
                    linear,
                    ok,
                });
            }
        }
        Ok(out)
    }

    /// The body once per element. Elements are in increasing linear order and each one's
    /// condition implies its predecessors' (coordinates grow, columns stay below the width),
    /// so the last one's condition says the whole piece is in bounds: then the body runs
    /// without per-element checks, else each copy is guarded.
    fn piece_loop(
        &mut self,
        param: u32,
        elements: &[PieceElement],
        names: &[Option<String>],
        body: &syn::Block,
        span: proc_macro2::Span,
    ) -> Result<Val> {
        let Some(last) = elements.last() else {
            return Ok(Val::Unit);
        };
        let all = last.ok;
        self.b.begin_block();
        for e in elements {
            if matches!(self.owned_body(param, e, names, body)?, Val::Never)
                || self.b.block_terminated()
            {
                break;
            }
        }
        let then = self.b.end_block();
        self.b.begin_block();
        for e in elements {
            let site = self.site();
            self.branches(
                e.ok,
                |this| this.owned_body(param, e, names, body),
                None,
                site,
                span,
            )?;
        }
        let otherwise = self.b.end_block();
        self.b.push(Stmt::If {
            cond: all,
            then,
            otherwise,
        });
        Ok(Val::Unit)
    }

    /// `body` with `names` bound to the element's offsets and a reference to it.
    fn owned_body(
        &mut self,
        param: u32,
        e: &PieceElement,
        names: &[Option<String>],
        body: &syn::Block,
    ) -> Result<Val> {
        let mut values = Vec::with_capacity(names.len());
        for &o in &e.offsets {
            values.push(Val::Scalar(self.constant(Constant::u64(o))));
        }
        values.push(self.owned_ref(param, e.linear, body.span())?);
        self.scoped_body(names, values, body)
    }

    /// A mutable reference to element `linear` of `param` (a scalar or an aggregate).
    fn owned_ref(&mut self, param: u32, linear: Value, span: proc_macro2::Span) -> Result<Val> {
        self.slice_element_ref(param, linear, true, span)
    }

    /// Lowers `body` in a new scope with `names` bound to `values` (`None` names: `_`).
    pub(super) fn scoped_body(
        &mut self,
        names: &[Option<String>],
        values: Vec<Val>,
        body: &syn::Block,
    ) -> Result<Val> {
        let scope = names
            .iter()
            .zip(values)
            .filter_map(|(n, v)| n.clone().map(|n| (n, Binding::Val(v))))
            .collect();
        self.scopes.push(scope);
        let r = self.block(body);
        self.scopes.pop();
        r
    }

    /// `for (i, out) in slice.grid_stride_mut()`: a loop from `index_1d()` by the grid's
    /// thread count while below the length. The cursor is advanced before the body, so
    /// `continue` works; it stops instead of wrapping.
    fn grid_stride(
        &mut self,
        param: u32,
        names: &[Option<String>],
        body: &syn::Block,
        span: proc_macro2::Span,
    ) -> Result<Val> {
        self.check_mapping(param, Pattern::GridStride, &[], span)?;
        let start = self.global_index_x()?;
        let blocks = self.def(Op::Special(Special::GridDim(Dim::X)), span)?;
        let threads = self.def(Op::Special(Special::BlockDim(Dim::X)), span)?;
        let blocks = self.cast_value(blocks, S::U64, span)?;
        let threads = self.cast_value(threads, S::U64, span)?;
        let stride = self.def(Op::Binary(BinaryOp::Mul, blocks, threads), span)?;
        let len = self.slice_len(param, span)?;
        let end = self.constant(Constant::u64(u64::MAX));
        let cursor = self.b.var("grid_stride", S::U64);
        self.b.push(Stmt::WriteVar {
            var: cursor,
            value: start,
        });
        self.loop_body(|this| {
            let e = this.def(Op::ReadVar(cursor), span)?;
            let more = this.def(Op::Compare(CmpOp::Lt, e, len), span)?;
            this.break_unless(more);
            let next = this.def(Op::Binary(BinaryOp::Add, e, stride), span)?;
            let no_wrap = this.def(Op::Compare(CmpOp::Ge, next, e), span)?;
            let next = this.def(
                Op::Select {
                    cond: no_wrap,
                    if_true: next,
                    if_false: end,
                },
                span,
            )?;
            this.b.push(Stmt::WriteVar {
                var: cursor,
                value: next,
            });
            let out = this.owned_ref(param, e, span)?;
            this.scoped_body(names, vec![Val::Scalar(e), out], body)
                .map(|_| ())
        })?;
        Ok(Val::Unit)
    }

    /// `slice.block_result_mut()` in an `if let`: the block's linear index, and whether this
    /// thread is the block's first and the element exists.
    pub(super) fn block_result_element(
        &mut self,
        param: u32,
        args: &[&syn::Expr],
        span: proc_macro2::Span,
    ) -> Result<(Value, Value)> {
        if !args.is_empty() {
            return err(span, "`block_result_mut()` takes no arguments");
        }
        self.check_mapping(param, Pattern::BlockResult, &[], span)?;
        let zero = self.constant(Constant::u32(0));
        let mut first: Option<Value> = None;
        for d in [Dim::X, Dim::Y, Dim::Z] {
            let t = self.def(Op::Special(Special::ThreadIdx(d)), span)?;
            let is_zero = self.def(Op::Compare(CmpOp::Eq, t, zero), span)?;
            first = Some(match first {
                Some(f) => self.def(Op::Binary(BinaryOp::And, f, is_zero), span)?,
                None => is_zero,
            });
        }
        let linear = self.block_linear_index(span)?;
        let len = self.slice_len(param, span)?;
        let in_len = self.def(Op::Compare(CmpOp::Lt, linear, len), span)?;
        let first = first.unwrap_or(in_len);
        let ok = self.def(Op::Binary(BinaryOp::And, first, in_len), span)?;
        Ok((linear, ok))
    }

    /// `thread::warp_index()`: whether the calling thread holds its warp's index (lane 0 of a
    /// warp, in a launch whose grid and blocks are one-dimensional) and the index,
    /// `blockIdx.x * ceil(blockDim.x / 32) + threadIdx.x / 32` (a `U64`). Distinct warps of a
    /// 1-D launch get distinct indices (`threadIdx.x / 32` is below the warps per block), and
    /// one lane of each holds it, so an element per warp index is one thread's.
    pub(super) fn warp_index(&mut self, span: proc_macro2::Span) -> Result<(Value, Value)> {
        let reg = |this: &mut Self, s: Special| this.def(Op::Special(s), span);
        let one = self.constant(Constant::u32(1));
        let mut one_d: Option<Value> = None;
        for s in [
            Special::BlockDim(Dim::Y),
            Special::BlockDim(Dim::Z),
            Special::GridDim(Dim::Y),
            Special::GridDim(Dim::Z),
        ] {
            let v = reg(self, s)?;
            let is_one = self.def(Op::Compare(CmpOp::Eq, v, one), span)?;
            one_d = Some(match one_d {
                Some(acc) => self.def(Op::Binary(BinaryOp::And, acc, is_one), span)?,
                None => is_one,
            });
        }
        let t = reg(self, Special::ThreadIdx(Dim::X))?;
        let lane_bits = self.constant(Constant::u32(31));
        let lane = self.def(Op::Binary(BinaryOp::And, t, lane_bits), span)?;
        let zero = self.constant(Constant::u32(0));
        let lane0 = self.def(Op::Compare(CmpOp::Eq, lane, zero), span)?;
        let holds = match one_d {
            Some(d) => self.def(Op::Binary(BinaryOp::And, d, lane0), span)?,
            None => lane0,
        };
        let five = self.constant(Constant::u32(5));
        let warp = self.def(Op::Binary(BinaryOp::Shr, t, five), span)?;
        let bdim = reg(self, Special::BlockDim(Dim::X))?;
        let rounded = self.def(Op::Binary(BinaryOp::Add, bdim, lane_bits), span)?;
        let per_block = self.def(Op::Binary(BinaryOp::Shr, rounded, five), span)?;
        let bid = reg(self, Special::BlockIdx(Dim::X))?;
        let (bid, per_block, warp) = (
            self.cast_value(bid, S::U64, span)?,
            self.cast_value(per_block, S::U64, span)?,
            self.cast_value(warp, S::U64, span)?,
        );
        let base = self.def(Op::Binary(BinaryOp::Mul, bid, per_block), span)?;
        let index = self.def(Op::Binary(BinaryOp::Add, base, warp), span)?;
        Ok((holds, index))
    }

    /// `thread::index_2d_runtime(&slice)` for a `DisjointSlice<T, Runtime2DIndex>`: whether
    /// the thread's column is below the slice's row width, and the thread's 2-D index (the
    /// witness `get_mut` takes; it carries the coordinates, so `get_mut` on another slice of
    /// the space checks that slice's own width).
    pub(super) fn index_2d_runtime(
        &mut self,
        slice: &syn::Expr,
        span: proc_macro2::Span,
    ) -> Result<(Value, Val)> {
        let target = match slice {
            syn::Expr::Reference(r) => &*r.expr,
            other => other,
        };
        let width = match self.expr(target)? {
            Val::Slice(p) => self.row_widths.get(&p).copied(),
            _ => None,
        };
        let Some(width) = width else {
            return err(
                slice.span(),
                "`thread::index_2d_runtime` takes a `DisjointSlice<T, Runtime2DIndex>` parameter",
            );
        };
        let v = self.global_index(&[Dim::X, Dim::Y], span)?;
        let inside = self.def(Op::Compare(CmpOp::Lt, v[0], width), span)?;
        Ok((inside, Val::Index2(v[0], v[1])))
    }

    /// `slice.get_mut(index)` on a `DisjointSlice<T, Runtime2DIndex>` with the thread's 2-D
    /// index: element `row * width + col` of the slice's own row width, when the column is
    /// below it and the element below the length (`get_mut_2d` with the bound width).
    pub(super) fn row_width_element(
        &mut self,
        param: u32,
        coords: [Value; 2],
        span: proc_macro2::Span,
    ) -> Result<Option<(Value, Value)>> {
        let Some(&width) = self.row_widths.get(&param) else {
            return Ok(None);
        };
        self.check_mapping(param, Pattern::RowWidth2D, &[(width, span)], span)?;
        self.linear_element(param, &coords, &[width], span)
            .map(Some)
    }

    /// `slice.get_mut(w)` for a warp index `w` (a `DisjointSlice<T, WarpIndex>`): element `w`
    /// when it is below the length.
    pub(super) fn warp_result_element(
        &mut self,
        param: u32,
        w: Value,
        span: proc_macro2::Span,
    ) -> Result<(Value, Value)> {
        self.check_mapping(param, Pattern::WarpResult, &[], span)?;
        let len = self.slice_len(param, span)?;
        let ok = self.def(Op::Compare(CmpOp::Lt, w, len), span)?;
        Ok((w, ok))
    }

    /// The block's linear index `x + gx * (y + gy * z)`, a `U64`: below
    /// 2^31 * 2^16 * 2^16, so exact.
    fn block_linear_index(&mut self, span: proc_macro2::Span) -> Result<Value> {
        let reg = |this: &mut Self, s: Special| -> Result<Value> {
            let v = this.def(Op::Special(s), span)?;
            this.cast_value(v, S::U64, span)
        };
        let (bx, by, bz) = (
            reg(self, Special::BlockIdx(Dim::X))?,
            reg(self, Special::BlockIdx(Dim::Y))?,
            reg(self, Special::BlockIdx(Dim::Z))?,
        );
        let (gx, gy) = (
            reg(self, Special::GridDim(Dim::X))?,
            reg(self, Special::GridDim(Dim::Y))?,
        );
        let yz = self.def(Op::Binary(BinaryOp::Mul, gy, bz), span)?;
        let yz = self.def(Op::Binary(BinaryOp::Add, yz, by), span)?;
        let linear = self.def(Op::Binary(BinaryOp::Mul, gx, yz), span)?;
        self.def(Op::Binary(BinaryOp::Add, linear, bx), span)
    }

    /// The block's tile, `(b / per_row, b % per_row)` for its linear index `b` (`U64`s;
    /// `per_row` is launch-uniform and nonzero), in a launch that does not have `per_row`
    /// blocks across x (those take [`Self::block_tile`]'s plain path). Without a division
    /// where the launch makes it plain: one tile per row (`(b, 0)`).
    fn block_tile_index(
        &mut self,
        per_row: Value,
        span: proc_macro2::Span,
    ) -> Result<(Value, Value)> {
        let b = self.block_linear_index(span)?;
        let one = self.constant(Constant::u64(1));
        let zero = self.constant(Constant::u64(0));
        let (row, col) = (
            self.b.var("tile_row", S::U64),
            self.b.var("tile_col", S::U64),
        );
        let single = self.def(Op::Compare(CmpOp::Eq, per_row, one), span)?;
        let write = |this: &mut Self, r: Value, c: Value| {
            this.b.push(Stmt::WriteVar { var: row, value: r });
            this.b.push(Stmt::WriteVar { var: col, value: c });
        };
        self.b.begin_block();
        write(self, b, zero);
        let one_per_row = self.b.end_block();
        self.b.begin_block();
        let r = self.def(Op::Binary(BinaryOp::Div, b, per_row), span)?;
        let c = self.def(Op::Binary(BinaryOp::Rem, b, per_row), span)?;
        write(self, r, c);
        let general = self.b.end_block();
        self.b.push(Stmt::If {
            cond: single,
            then: one_per_row,
            otherwise: general,
        });
        Ok((
            self.def(Op::ReadVar(row), span)?,
            self.def(Op::ReadVar(col), span)?,
        ))
    }

    /// `for (r, c, out) in slice.block_tile_mut(tile_rows, tile_cols, width)`: the block's
    /// tile (see `disjoint.rs` for why the elements are the thread's alone), as two loops
    /// strided by the block's size over the tile's rows and columns.
    ///
    /// The common launch has `per_row` blocks across x: block `(x, y, z)` then has tile
    /// `(y + gy * z, x)` (what `b / per_row`, `b % per_row` give), with indices the launch
    /// limits bound, so that path (lowered apart from the general one, body included) needs
    /// neither a division nor a test that the tile's first rows fit in 64 bits.
    fn block_tile(
        &mut self,
        param: u32,
        args: &[&syn::Expr],
        names: &[Option<String>],
        body: &syn::Block,
        span: proc_macro2::Span,
    ) -> Result<Val> {
        let [rows, cols, width] = args else {
            return err(
                span,
                "expected `block_tile_mut(tile_rows, tile_cols, width)`",
            );
        };
        let extent = |this: &mut Self, e: &syn::Expr| -> Result<(Value, proc_macro2::Span)> {
            let v = this.expr(e)?;
            Ok((this.materialize(v, S::U64, e.span())?, e.span()))
        };
        let extents = [
            extent(self, rows)?,
            extent(self, cols)?,
            extent(self, width)?,
        ];
        self.check_mapping(param, Pattern::BlockTile, &extents, span)?;
        let [(th, _), (tw, _), (w, _)] = extents;
        let u64c = |this: &mut Self, n: u64| this.constant(Constant::u64(n));
        let (zero, one) = (u64c(self, 0), u64c(self, 1));
        let bin = |this: &mut Self, op: BinaryOp, a: Value, b: Value| {
            this.def(Op::Binary(op, a, b), span)
        };
        let cmp =
            |this: &mut Self, op: CmpOp, a: Value, b: Value| this.def(Op::Compare(op, a, b), span);
        let select = |this: &mut Self, cond: Value, if_true: Value, if_false: Value| {
            this.def(
                Op::Select {
                    cond,
                    if_true,
                    if_false,
                },
                span,
            )
        };
        // Tiles per row of tiles, ceil(w / tw), with divisors kept nonzero (an extent of zero
        // gives no elements).
        let tw_pos = cmp(self, CmpOp::Gt, tw, zero)?;
        let tw_safe = select(self, tw_pos, tw, one)?;
        let whole = bin(self, BinaryOp::Div, w, tw_safe)?;
        let part = bin(self, BinaryOp::Rem, w, tw_safe)?;
        let has_part = cmp(self, CmpOp::Ne, part, zero)?;
        let extra = select(self, has_part, one, zero)?;
        let per_row = bin(self, BinaryOp::Add, whole, extra)?;
        let per_row_pos = cmp(self, CmpOp::Gt, per_row, zero)?;
        let per_row_safe = select(self, per_row_pos, per_row, one)?;
        let tile = BlockTile {
            param,
            th,
            tw,
            w,
            ok: bin(self, BinaryOp::And, tw_pos, per_row_pos)?,
        };
        let reg = |this: &mut Self, s: Special| -> Result<Value> {
            let v = this.def(Op::Special(s), span)?;
            this.cast_value(v, S::U64, span)
        };
        let gx = reg(self, Special::GridDim(Dim::X))?;
        let across_x = cmp(self, CmpOp::Eq, per_row_safe, gx)?;
        self.b.begin_block();
        let (by, bz, gy) = (
            reg(self, Special::BlockIdx(Dim::Y))?,
            reg(self, Special::BlockIdx(Dim::Z))?,
            reg(self, Special::GridDim(Dim::Y))?,
        );
        let layers = bin(self, BinaryOp::Mul, gy, bz)?;
        let tile_row = bin(self, BinaryOp::Add, layers, by)?;
        let tile_col = reg(self, Special::BlockIdx(Dim::X))?;
        self.block_tile_at(&tile, tile_row, tile_col, names, body, span)?;
        let plain = self.b.end_block();
        self.b.begin_block();
        let (tile_row, tile_col) = self.block_tile_index(per_row_safe, span)?;
        self.block_tile_at(&tile, tile_row, tile_col, names, body, span)?;
        let general = self.b.end_block();
        self.b.push(Stmt::If {
            cond: across_x,
            then: plain,
            otherwise: general,
        });
        Ok(Val::Unit)
    }

    /// The elements of tile `(tile_row, tile_col)` (`U64`s, `tile_col < per_row`), each
    /// given to `body` by [`Self::block_tile`]'s loops.
    fn block_tile_at(
        &mut self,
        tile: &BlockTile,
        tile_row: Value,
        tile_col: Value,
        names: &[Option<String>],
        body: &syn::Block,
        span: proc_macro2::Span,
    ) -> Result<()> {
        let &BlockTile {
            param,
            th,
            tw,
            w,
            ok,
        } = tile;
        let zero = self.constant(Constant::u64(0));
        let bin = |this: &mut Self, op: BinaryOp, a: Value, b: Value| {
            this.def(Op::Binary(op, a, b), span)
        };
        let cmp =
            |this: &mut Self, op: CmpOp, a: Value, b: Value| this.def(Op::Compare(op, a, b), span);
        // col0 = tile_col * tw < w; the tile's columns end at col0 + min(tw, w - col0) <= w.
        let col0 = bin(self, BinaryOp::Mul, tile_col, tw)?;
        let room = bin(self, BinaryOp::Sub, w, col0)?;
        let narrower = cmp(self, CmpOp::Lt, tw, room)?;
        let span_cols = self.def(
            Op::Select {
                cond: narrower,
                if_true: tw,
                if_false: room,
            },
            span,
        )?;
        let col_end = bin(self, BinaryOp::Add, col0, span_cols)?;
        // The tile's rows end at row (tile_row + 1) * th, so its elements end at element
        // tile_end = (tile_row + 1) * th * w; when that fits in 64 bits, so does every
        // row * w + col of the tile (each smaller), its start row0 * w included.
        let (rows_end, rows_fit) = self.checked_mul_add(tile_row, th, th, span)?;
        let (tile_end, end_fits) = self.checked_mul_add(rows_end, w, zero, span)?;
        let row0 = bin(self, BinaryOp::Sub, rows_end, th)?;
        let start0 = bin(self, BinaryOp::Mul, row0, w)?;
        let len = self.slice_len(param, span)?;
        let zero32 = self.constant(Constant::u32(0));
        let tz = self.def(Op::Special(Special::ThreadIdx(Dim::Z)), span)?;
        let mut go = cmp(self, CmpOp::Eq, tz, zero32)?;
        for fits in [Some(ok), rows_fit, end_fits].into_iter().flatten() {
            go = bin(self, BinaryOp::And, go, fits)?;
        }
        // A thread's offsets in the tile: from its index, by the block's size, below the
        // tile's extent; unrolled where the contract fixes the block and the extent is a
        // constant.
        let axis = |this: &mut Self, d: Dim, extent: Value| -> Result<(Value, Extent, Extent)> {
            let t = this.def(Op::Special(Special::ThreadIdx(d)), span)?;
            let t = this.cast_value(t, S::U64, span)?;
            let step = match this.contract_block_dim(d) {
                Some(n) => Extent::Fixed(u64::from(n)),
                None => {
                    let n = this.def(Op::Special(Special::BlockDim(d)), span)?;
                    Extent::Runtime(this.cast_value(n, S::U64, span)?)
                }
            };
            let end = match this.constant_value(extent) {
                Some(c) => Extent::Fixed(c),
                None => Extent::Runtime(extent),
            };
            Ok((t, step, end))
        };
        self.b.begin_block();
        let (ty, dy, rows_extent) = axis(self, Dim::Y, th)?;
        let (tx, dx, cols_extent) = axis(self, Dim::X, tw)?;
        // The loops, testing each element against the tile's columns and the slice's length
        // (`checked`), or not, for a tile whose every element exists.
        let loops = |this: &mut Self, checked: bool| -> Result<()> {
            this.strided_range(ty, dy, rows_extent, span, &mut |this, r| {
                let skip = bin(this, BinaryOp::Mul, r, w)?;
                let row_start = bin(this, BinaryOp::Add, start0, skip)?;
                this.strided_range(tx, dx, cols_extent, span, &mut |this, c| {
                    let col = bin(this, BinaryOp::Add, col0, c)?;
                    // row * w + col, exact (see above), and inside the slice.
                    let linear = bin(this, BinaryOp::Add, row_start, col)?;
                    let element = |this: &mut Self| -> Result<()> {
                        let out = this.owned_ref(param, linear, span)?;
                        this.scoped_body(names, vec![Val::Scalar(r), Val::Scalar(c), out], body)
                            .map(|_| ())
                    };
                    if !checked {
                        return element(this);
                    }
                    let in_tile = cmp(this, CmpOp::Lt, col, col_end)?;
                    let in_len = cmp(this, CmpOp::Lt, linear, len)?;
                    let inside = bin(this, BinaryOp::And, in_tile, in_len)?;
                    this.when(inside, element)
                })
            })
        };
        // A tile of whole rows (`tw` columns) that ends inside the slice: every element
        // exists, so its loops test none (the edge tiles keep the tests).
        let full_width = cmp(self, CmpOp::Eq, span_cols, tw)?;
        let ends_inside = cmp(self, CmpOp::Le, tile_end, len)?;
        let whole = bin(self, BinaryOp::And, full_width, ends_inside)?;
        self.b.begin_block();
        loops(self, false)?;
        let unchecked = self.b.end_block();
        self.b.begin_block();
        loops(self, true)?;
        let checked = self.b.end_block();
        self.b.push(Stmt::If {
            cond: whole,
            then: unchecked,
            otherwise: checked,
        });
        let then = self.b.end_block();
        self.b.push(Stmt::If {
            cond: go,
            then,
            otherwise: Default::default(),
        });
        Ok(())
    }

    /// `slice.update(i, |v| body)`: the thread's element replaced by `body` with `v` bound
    /// to its value, when it exists (the element of `get_mut(i)`, under its rules).
    pub(super) fn disjoint_update(&mut self, param: u32, m: &syn::ExprMethodCall) -> Result<Val> {
        let span = m.span();
        let args: Vec<&syn::Expr> = m.args.iter().collect();
        let (index, closure) = match &args[..] {
            [index, syn::Expr::Closure(c)] if c.inputs.len() == 1 => (*index, c),
            _ => {
                return err(
                    span,
                    "expected `update(thread::index_1d(), |v| new value)` with a closure literal \
                     of one parameter",
                );
            }
        };
        let name = match closure.inputs.first() {
            Some(syn::Pat::Ident(id)) => Some(id.ident.to_string()),
            Some(syn::Pat::Type(t)) => match &*t.pat {
                syn::Pat::Ident(id) => Some(id.ident.to_string()),
                _ => None,
            },
            _ => None,
        };
        let Some(name) = name else {
            return err(closure.inputs.span(), "expected a parameter name: `|v| ..`");
        };
        let (elem, access) = self.slice_param(param);
        if access != SliceAccess::Disjoint {
            return err(span, "`update` is a method of `DisjointSlice`");
        }
        if self.elem_slice(param).is_some() {
            return err(
                span,
                "`update` replaces a number; for an array or struct element, take it with \
                 `if let Some(e) = out.get_mut(i)` and update its fields in place",
            );
        }
        let (linear, ok) = self.slice_element(param, access, "get_mut", &[index], span)?;
        let site = self.site();
        self.branches(
            ok,
            |this| {
                let addr = this.element_addr(param, linear, elem)?;
                let load = Op::Load {
                    space: AddressSpace::Global,
                    ty: elem,
                    addr,
                    eviction: cuprum_ir::Eviction::Normal,
                };
                let old = this.def(load, span)?;
                this.scopes
                    .push(vec![(name, Binding::Val(Val::Scalar(old)))]);
                let new = this.expr(&closure.body);
                this.scopes.pop();
                let value = this.materialize(new?, elem, closure.body.span())?;
                this.b.push(Stmt::Store {
                    space: AddressSpace::Global,
                    addr,
                    value,
                });
                Ok(Val::Unit)
            },
            None,
            site,
            span,
        )
    }
}

/// The names of a pattern loop's tuple `(a, b)` / `(r, c, out)`: identifiers or `_`.
pub(super) fn loop_names(
    pat: &syn::Pat,
    arity: usize,
    method: &str,
) -> Result<Vec<Option<String>>> {
    let want = if arity == 3 {
        "`(r, c, out)`"
    } else {
        "`(i, out)`"
    };
    let syn::Pat::Tuple(t) = pat else {
        return err(
            pat.span(),
            format!("a `{method}` loop binds a tuple {want}"),
        );
    };
    if t.elems.len() != arity {
        return err(
            pat.span(),
            format!("a `{method}` loop binds a tuple {want}"),
        );
    }
    t.elems
        .iter()
        .map(|p| match p {
            syn::Pat::Ident(id) if id.by_ref.is_none() && id.subpat.is_none() => {
                Ok(Some(id.ident.to_string()))
            }
            syn::Pat::Wild(_) => Ok(None),
            other => err(other.span(), "expected a name or `_`"),
        })
        .collect()
}

/// A const generic argument as an expression: `::<4>`, `::<{ N + 1 }>`, or `::<N>` (which
/// syn reads as a type path).
pub(super) fn generic_const_expr(arg: &syn::GenericArgument) -> Result<syn::Expr> {
    match arg {
        syn::GenericArgument::Const(e) => Ok(e.clone()),
        syn::GenericArgument::Type(syn::Type::Path(tp)) if tp.qself.is_none() => {
            Ok(syn::Expr::Path(syn::ExprPath {
                attrs: Vec::new(),
                qself: None,
                path: tp.path.clone(),
            }))
        }
        other => err(other.span(), "expected a constant"),
    }
}
