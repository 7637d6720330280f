//! Which elements a `DisjointSlice` gives a thread, and the rules that make every element
//! one thread's at most, whatever the inputs and whatever launch the kernel's
//! `#[launch_contract]` lets `prepare_*` accept.
//!
//! A safe kernel's output promise holds by construction, checked here at `cargo build`:
//! * **The index identifies the thread.** `index_1d()` is CUDA's
//!   `blockIdx.x * blockDim.x + threadIdx.x`, `index_2d()` adds y, `index_3d()` z. An N-D
//!   index is unique only where the launch has one block and one thread along the other axes;
//!   the launch contract fixes both (its grid is 1 beyond `domain`, its block is exact), so an
//!   N-D index may reach a pattern of N dimensions only in a kernel with `domain <= N` whose
//!   block is 1 along every axis past N ([`Lowerer::check_unique_index`]).
//! * **Every thread maps coordinates to elements the same way.** Extents (the `width` of
//!   `get_mut_2d` and `tile_mut`, the `height` of `get_mut_3d`) must be *launch-uniform*:
//!   built from scalar parameters, constants, slice lengths and block/grid dimensions by pure
//!   operations, so every thread of a launch sees the same values. And every access of one
//!   slice in a kernel uses the same [`Pattern`] with the same extents
//!   ([`Lowerer::check_same_mapping`]): with two widths, threads (1, 0) and (0, 1) meet at
//!   element 1 of widths 2 and 1; with `get_mut(i)` beside `chunk_mut::<4>(i)`, threads 1 and
//!   0 meet at element 1.
//! * **The linear index does not wrap.** `y * width + x` (and `N * i + j` of a chunk) is
//!   computed with an overflow check: an element whose linear index does not fit is past any
//!   buffer, so the thread does not get it. Where value ranges prove that no overflow is
//!   possible (widths of 32 bits and the hardware's bounds on thread indices), the check is
//!   not emitted.
//!
//! Under those rules each pattern gives distinct threads disjoint sets of elements:
//! * `get_mut*(index)`: the one element at the (unique) index.
//! * `chunk_mut::<N>(i)`: `[N*i, N*i + N)`; distinct `i` give disjoint ranges.
//! * `tile_mut::<TM, TN>(idx, width)`: rows `[TM*y, TM*y + TM)` × columns `[TN*x, TN*x + TN)`,
//!   columns at or past `width` skipped, so distinct `(x, y)` give disjoint rectangles of one
//!   row-major matrix and a tile never spills into the next row.
//! * `grid_stride_mut()`: `t + k*s` with `t` = `index_1d()` (unique, below `s`) and `s` the
//!   grid's thread count read from the hardware: element `e` is only thread `e mod s`'s.
//!   The cursor stops rather than wraps.
//! * `block_result_mut()`: element `bx + gx * (by + gy * bz)`, in thread (0, 0, 0) of the
//!   block only: one elected thread per block, distinct blocks, exact in 64 bits (the
//!   hardware bounds grids to 2^31 × 2^16 × 2^16 blocks). Needs no contract.
//! * `block_tile_mut(th, tw, w)`: block `b` (that linear index) takes tile
//!   `(b / ceil(w / tw), b % ceil(w / tw))` of `th` × `tw` tiles, and in it thread
//!   `(x, y, 0)` the elements at tile offsets `(y + k*dim_y, x + l*dim_x)`: distinct blocks,
//!   distinct tiles; distinct threads, distinct residues. Columns stay below `w` and a row
//!   `row` keeps only columns with `row * w + col < len` (rows below `len / w` whole, row
//!   `len / w` up to `len % w`), so the linear index is exact without a per-element check.
//!   Needs no contract.
//!
//! Each pattern hands out `&mut T`, so a thread may read what it owns (in-place updates); a
//! `DisjointSlice` has no other way in (indexing it is refused), so no thread reads another's
//! element. `outputs.rs` lowers the patterns beyond `get_mut*`; the element computations and
//! the rules are here.
//!
//! `&mut [T]` slices of `unsafe` kernels use the same overflow-free element computation but
//! none of the uniqueness rules (their launches are the caller's promise).

use cuprum_ir::{BinaryOp, CmpOp, Constant, Op, ScalarType as S, SliceAccess, Special, Value};
use syn::spanned::Spanned;

use super::*;

/// Why a `DisjointSlice` is neither indexed nor read with `get`: the one message for both.
pub(super) const NOT_INDEXED: &str = "a `DisjointSlice` is not indexed: a thread reaches (reads \
     and writes) only its own elements, through `get_mut(i)`, `chunk_mut`, `tile_mut`, \
     `grid_stride_mut`, `block_result_mut` or `update`, since another thread's element could be \
     written while this one reads it";

/// How a thread's position names its elements of a `DisjointSlice`: one pattern per slice
/// and kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Pattern {
    /// `get_mut`, `get_mut_2d`, `get_mut_3d` (and `update`): one element at an N-D index.
    Element(usize),
    /// `chunk_mut::<N>`: `N` consecutive elements per 1-D index.
    Chunk(u64),
    /// `tile_mut::<TM, TN>`: a `TM` × `TN` tile per 2-D index.
    Tile(u64, u64),
    /// `grid_stride_mut`: every grid-size-th element from the 1-D index.
    GridStride,
    /// `block_result_mut`: one element per block, in the block's first thread.
    BlockResult,
    /// `block_tile_mut`: a tile per block, strided over the block's threads.
    BlockTile,
    /// `get_mut(w)` on a `DisjointSlice<T, WarpIndex>`: one element per warp, in its lane 0.
    WarpResult,
    /// `get_mut(i)` on a `DisjointSlice<T, Runtime2DIndex>` with the index of
    /// `thread::index_2d_runtime`: one element at the 2-D index, in rows of the bound width.
    RowWidth2D,
}

impl Pattern {
    /// The thread-index dimensions the pattern starts from (0: none, a block result).
    pub(super) fn dims(self) -> usize {
        match self {
            Pattern::Element(d) => d,
            Pattern::Chunk(_) | Pattern::GridStride => 1,
            Pattern::Tile(..) | Pattern::RowWidth2D => 2,
            Pattern::BlockResult | Pattern::BlockTile | Pattern::WarpResult => 0,
        }
    }

    /// The call that uses it, for messages: `out.chunk_mut::<4>(thread::index_1d())`.
    pub(super) fn call(self, slice: &str) -> String {
        match self {
            Pattern::Element(1) => format!("{slice}.get_mut(thread::index_1d())"),
            Pattern::Element(d) => format!("{slice}.get_mut_{d}d(thread::index_{d}d(), ..)"),
            Pattern::Chunk(n) => format!("{slice}.chunk_mut::<{n}>(thread::index_1d())"),
            Pattern::Tile(m, n) => {
                format!("{slice}.tile_mut::<{m}, {n}>(thread::index_2d(), ..)")
            }
            Pattern::GridStride => format!("{slice}.grid_stride_mut()"),
            Pattern::BlockResult => format!("{slice}.block_result_mut()"),
            Pattern::BlockTile => format!("{slice}.block_tile_mut(..)"),
            Pattern::WarpResult => format!("{slice}.get_mut(warp) with thread::warp_index()"),
            Pattern::RowWidth2D => {
                format!("{slice}.get_mut(index) with thread::index_2d_runtime(&{slice})")
            }
        }
    }
}

/// How a `DisjointSlice` was first reached in a kernel: the pattern and its uniform extents
/// (as [`Lowerer::uniform`] keys), and where.
#[derive(Clone, Debug)]
pub(super) struct DisjointMapping {
    pattern: Pattern,
    extents: Vec<u32>,
    span: proc_macro2::Span,
    /// The call as written, for messages.
    call: String,
}

/// How a handle method of `tiles.rs` is written, for messages about the pattern it shares:
/// the call (`out.tile_thread32(index)`) and the index (`thread::index_1d_u32(lc)`).
#[derive(Clone, Debug)]
pub(super) struct Spelling {
    pub(super) call: String,
    pub(super) index: &'static str,
}

impl Lowerer<'_> {
    /// Records a launch-uniform key for the value `v` just defined by `op`, when it has one:
    /// two values with one key are equal in every thread of every launch.
    pub(super) fn note_uniform(&mut self, v: Value, op: &Op) {
        let key = |this: &Self| -> Option<String> {
            let id = |x: &Value| this.uniform.get(x).copied();
            Some(match op {
                Op::Const(c) => format!("const {:?} {}", c.ty, c.bits),
                Op::Param(i) => format!("param {i}"),
                Op::SliceLen(i) => format!("len {i}"),
                Op::Special(s @ (Special::BlockDim(_) | Special::GridDim(_))) => format!("{s:?}"),
                Op::Unary(u, a) => format!("{u:?} {}", id(a)?),
                Op::Binary(b, l, r) => format!("{b:?} {} {}", id(l)?, id(r)?),
                Op::Ternary(t, a, b, c) => format!("{t:?} {} {} {}", id(a)?, id(b)?, id(c)?),
                Op::Compare(c, a, b) => format!("{c:?} {} {}", id(a)?, id(b)?),
                Op::Select {
                    cond,
                    if_true,
                    if_false,
                } => format!("select {} {} {}", id(cond)?, id(if_true)?, id(if_false)?),
                Op::Cast { value, to } => format!("cast {to:?} {}", id(value)?),
                Op::Bitcast { value, to } => format!("bitcast {to:?} {}", id(value)?),
                _ => return None,
            })
        };
        if let Some(key) = key(self) {
            let next = self.uniform_keys.len() as u32;
            let id = *self.uniform_keys.entry(key).or_insert(next);
            self.uniform.insert(v, id);
        }
    }

    /// The element of slice `param` that `slice.method(args..)` names in an `if let`, and the
    /// condition under which it exists: `(linear index, in bounds)`.
    pub(super) fn slice_element(
        &mut self,
        param: u32,
        access: SliceAccess,
        method: &str,
        args: &[&syn::Expr],
        span: proc_macro2::Span,
    ) -> Result<(Value, Value)> {
        let (index_expr, extent_exprs) = match args {
            [index, extents @ ..] => (*index, extents),
            [] => return err(span, "expected an index argument"),
        };
        let dims = match method {
            "get_mut_2d" => 2,
            "get_mut_3d" => 3,
            _ => 1,
        };
        if extent_exprs.len() != dims - 1 {
            return err(
                span,
                if dims == 1 {
                    "expected one index argument".to_owned()
                } else {
                    format!("`{method}` takes the index and {} extent(s)", dims - 1)
                },
            );
        }
        let coords = match (self.expr(index_expr)?, dims) {
            (Val::WarpIndex(w), 1) if access == SliceAccess::Disjoint => {
                return self.warp_result_element(param, w, span);
            }
            (Val::Index2(x, y), 1) if self.row_widths.contains_key(&param) => {
                if let Some(element) = self.row_width_element(param, [x, y], span)? {
                    return Ok(element);
                }
                return err(index_expr.span(), "not a runtime-width 2-D slice");
            }
            (_, 1) if self.row_widths.contains_key(&param) => {
                return err(
                    index_expr.span(),
                    "a `DisjointSlice<T, Runtime2DIndex>` is indexed by the thread's own index, \
                     `thread::index_2d_runtime(&slice)`",
                );
            }
            (Val::Index1(x), 1) => vec![x],
            (Val::Index2(x, y), 2) => vec![x, y],
            (Val::Index3(x, y, z), 3) => vec![x, y, z],
            (_, 2 | 3) => {
                return err(
                    index_expr.span(),
                    format!("`{method}` takes the thread's own index (`thread::index_{dims}d()`)"),
                );
            }
            _ if access == SliceAccess::Disjoint => {
                return err(
                    index_expr.span(),
                    "a `DisjointSlice` is indexed by the thread's own index (`thread::index_1d()`), so \
                     that no two threads can write one element",
                );
            }
            (v, _) => vec![self.materialize(v, S::U64, index_expr.span())?],
        };
        let mut extents = Vec::with_capacity(extent_exprs.len());
        for e in extent_exprs {
            let v = self.expr(e)?;
            extents.push((self.materialize(v, S::U64, e.span())?, e.span()));
        }
        if access == SliceAccess::Disjoint {
            self.check_mapping(param, Pattern::Element(dims), &extents, span)?;
        }
        let extents: Vec<Value> = extents.into_iter().map(|(v, _)| v).collect();
        self.linear_element(param, &coords, &extents, span)
    }

    /// The row-major element of `coords` (x fastest) in an array of `extents` (all but the last
    /// dimension), and whether it exists: each coordinate but the last below its extent, and
    /// the exact (unwrapped) linear index below the slice's length.
    pub(super) fn linear_element(
        &mut self,
        param: u32,
        coords: &[Value],
        extents: &[Value],
        span: proc_macro2::Span,
    ) -> Result<(Value, Value)> {
        let mut ok: Option<Value> = None;
        let mut all = |this: &mut Self, c: Value| -> Result<()> {
            ok = Some(match ok {
                Some(o) => this.def(Op::Binary(BinaryOp::And, o, c), span)?,
                None => c,
            });
            Ok(())
        };
        for (&c, &e) in coords.iter().zip(extents) {
            let below = self.def(Op::Compare(CmpOp::Lt, c, e), span)?;
            all(self, below)?;
        }
        let mut linear = coords[coords.len() - 1];
        for k in (0..coords.len() - 1).rev() {
            let (next, fits) = self.checked_mul_add(linear, extents[k], coords[k], span)?;
            if let Some(fits) = fits {
                all(self, fits)?;
            }
            linear = next;
        }
        let len = self.slice_len(param, span)?;
        let in_len = self.def(Op::Compare(CmpOp::Lt, linear, len), span)?;
        all(self, in_len)?;
        let ok = ok.unwrap_or(in_len);
        Ok((linear, ok))
    }

    /// `a * b + c` on `U64`s, and a `Bool` that is true exactly when the exact result fits in
    /// 64 bits; `None` when the value ranges already prove it does.
    pub(super) fn checked_mul_add(
        &mut self,
        a: Value,
        b: Value,
        c: Value,
        span: proc_macro2::Span,
    ) -> Result<(Value, Option<Value>)> {
        let product = self.def(Op::Binary(BinaryOp::Mul, a, b), span)?;
        let sum = self.def(Op::Binary(BinaryOp::Add, product, c), span)?;
        let bounds = (
            self.upper_bound(a),
            self.upper_bound(b),
            self.upper_bound(c),
        );
        if let (Some(ba), Some(bb), Some(bc)) = bounds
            && ba
                .checked_mul(bb)
                .and_then(|p| p.checked_add(bc))
                .is_some_and(|r| r <= u128::from(u64::MAX))
        {
            return Ok((sum, None));
        }
        // A constant factor and addend (a tile's size): the exact result fits exactly when
        // the other factor is at most (2^64 - 1 - c) / k, one comparison.
        let constant_factor = match (self.constant_value(a), self.constant_value(b)) {
            (_, Some(k)) => Some((a, k)),
            (Some(k), _) => Some((b, k)),
            _ => None,
        };
        if let (Some((x, k)), Some(c)) = (constant_factor, self.constant_value(c)) {
            let most = (u64::MAX - c).checked_div(k).unwrap_or(u64::MAX);
            let most = self.constant(Constant::u64(most));
            let fits = self.def(Op::Compare(CmpOp::Le, x, most), span)?;
            return Ok((sum, Some(fits)));
        }
        // The exact product fits in 64 bits when its high half (one `mul.hi.u64`) is zero.
        let zero = self.constant(Constant::u64(0));
        let high = self.def(Op::Binary(BinaryOp::MulHigh, a, b), span)?;
        let no_high = self.def(Op::Compare(CmpOp::Eq, high, zero), span)?;
        if self.constant_value(c) == Some(0) {
            // Nothing added: no carry to test.
            return Ok((sum, Some(no_high)));
        }
        let no_carry = self.def(Op::Compare(CmpOp::Ge, sum, product), span)?;
        let fits = self.def(Op::Binary(BinaryOp::And, no_high, no_carry), span)?;
        Ok((sum, Some(fits)))
    }

    /// The rules for reaching `param` through `pattern` with `extents` (launch-uniform
    /// values and where they were written): a thread index unique under the launch contract,
    /// and one mapping per slice. Checked in the emitting run only.
    pub(super) fn check_mapping(
        &mut self,
        param: u32,
        pattern: Pattern,
        extents: &[(Value, proc_macro2::Span)],
        span: proc_macro2::Span,
    ) -> Result<()> {
        if self.inferring() {
            return Ok(());
        }
        self.check_unique_index(param, pattern, span)?;
        self.check_same_mapping(param, pattern, extents, span)
    }

    /// Refuses an N-D thread index on a `DisjointSlice` where the launch contract lets two
    /// threads have it. Kernels without a domain contract have only `unsafe` launches, whose
    /// callers promise disjointness.
    fn check_unique_index(
        &self,
        param: u32,
        pattern: Pattern,
        span: proc_macro2::Span,
    ) -> Result<()> {
        let dims = pattern.dims();
        if dims == 0 {
            return Ok(());
        }
        let Some(contract) = self.contract else {
            return Ok(());
        };
        let Some(domain) = contract.domain else {
            return Ok(());
        };
        let (bx, by, bz) = contract.block;
        let call = match &self.spelling {
            Some(s) => s.call.clone(),
            None => pattern.call(&self.param_name(param)),
        };
        let kernel = &self.kernel.name;
        let index = match (pattern, dims, &self.spelling) {
            (_, _, Some(s)) => s.index,
            (Pattern::RowWidth2D, _, _) => "thread::index_2d_runtime(..)",
            (_, 1, _) => "thread::index_1d()",
            (_, 2, _) => "thread::index_2d()",
            _ => "thread::index_3d()",
        };
        let handle = self.spelling.is_some();
        let suggest = |axes: usize| match (pattern, axes) {
            // A handle's index space has no more axes to add.
            _ if handle => "keep one thread per index",
            // A runtime-width slice has rows only: its index has no third axis to add.
            (Pattern::RowWidth2D, _) => "keep the launch to one layer along z",
            (_, 2) => "use `thread::index_2d()` with `get_mut_2d(index, width)`",
            _ => "use `thread::index_3d()` with `get_mut_3d(index, width, height)`",
        };
        if domain as usize > dims {
            let axis = if dims == 1 { "y" } else { "z" };
            return err(
                span,
                format!(
                    "`{call}` could give two threads one element: kernel \
                     `{kernel}` declares `domain = {domain}`, so its grid may have several \
                     blocks along {axis}, and `{index}` is the same in each of them; {}, or \
                     declare `domain = {dims}`",
                    suggest(domain as usize)
                ),
            );
        }
        let block = [bx, by, bz];
        if let Some(axis) = (dims..3).find(|&a| block[a] != 1) {
            let (who, fix) = match (dims, axis) {
                (1, 1) => ("threads (x, 0) and (x, 1)", suggest(2)),
                (1, _) => ("threads (x, y, 0) and (x, y, 1)", suggest(3)),
                _ => ("threads (x, y, 0) and (x, y, 1)", suggest(3)),
            };
            let threads = bx * by * bz;
            let flat = match dims {
                1 => format!("({threads}, 1, 1)"),
                _ => format!("({bx}, {}, 1)", by * bz),
            };
            return err(
                span,
                format!(
                    "`{call}` gives two threads one element: kernel `{kernel}` \
                     declares block ({bx}, {by}, {bz}), so {who} of a block have the same \
                     `{index}`; {fix}, or declare a block of {flat}"
                ),
            );
        }
        Ok(())
    }

    /// Requires launch-uniform extents, the same at every access of one `DisjointSlice`.
    fn check_same_mapping(
        &mut self,
        param: u32,
        pattern: Pattern,
        extents: &[(Value, proc_macro2::Span)],
        span: proc_macro2::Span,
    ) -> Result<()> {
        let name = self.param_name(param);
        let call = match &self.spelling {
            Some(s) => s.call.clone(),
            None => pattern.call(&name),
        };
        let mut keys = Vec::with_capacity(extents.len());
        for &(v, at) in extents {
            let Some(&key) = self.uniform.get(&v) else {
                return err(
                    at,
                    format!(
                        "the extents of `{}` must be the same for every \
                         thread of the launch, or two threads could map to one element: build \
                         them from the kernel's scalar parameters, constants, slice lengths \
                         and `block_dim_*`/`grid_dim_*` (not from thread indices, memory or \
                         `let mut` variables)",
                        call
                    ),
                );
            };
            keys.push(key);
        }
        let mapping = DisjointMapping {
            pattern,
            extents: keys,
            span,
            call,
        };
        match self.disjoint_mappings.get(&param) {
            None => {
                self.disjoint_mappings.insert(param, mapping);
                Ok(())
            }
            Some(first) if first.pattern == mapping.pattern && first.extents == mapping.extents => {
                Ok(())
            }
            Some(first) => {
                let mut e = syn::Error::new(
                    span,
                    format!(
                        "`{name}` is reached through `{}` elsewhere in this kernel: every access \
                         of one `DisjointSlice` must use the same pattern with the same shape \
                         and extents, or two threads could reach one element",
                        first.call
                    ),
                );
                e.combine(syn::Error::new(
                    first.span,
                    format!("`{name}` is first written here"),
                ));
                Err(e)
            }
        }
    }

    fn param_name(&self, param: u32) -> String {
        self.b
            .kernel()
            .params
            .get(param as usize)
            .map_or_else(|| format!("parameter {param}"), |p| p.name.clone())
    }
}
