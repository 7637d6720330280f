//! Which element `get_mut`, `get_mut_2d` and `get_mut_3d` give a thread, and the rules that
//! make a `DisjointSlice` hand every element to at most one thread of a launch.
//!
//! A safe kernel's output promise holds by construction, checked here at `cargo build`:
//! * **The index identifies the thread.** `index_1d()` is CUDA's
//!   `blockIdx.x * blockDim.x + threadIdx.x`, `index_2d()` adds y, `index_3d()` z. An N-D
//!   index is unique only where the launch has one block and one thread along the other axes;
//!   the launch contract fixes both (its grid is 1 beyond `domain`, its block is exact), so an
//!   N-D index may reach `get_mut_Nd` only in a kernel with `domain <= N` whose block is 1
//!   along every axis past N.
//! * **Every thread maps coordinates to elements the same way.** The extents of `get_mut_2d`
//!   and `get_mut_3d` must be *launch-uniform*: built from scalar parameters, constants, slice
//!   lengths and block/grid dimensions by pure operations, so every thread of a launch sees the
//!   same values; and every access of one slice in a kernel uses the same extents (with two
//!   widths, threads (1, 0) and (0, 1) meet at element 1 of widths 2 and 1).
//! * **The linear index does not wrap.** `y * width + x` is computed with an overflow check:
//!   an element whose linear index does not fit is past any buffer, so the thread gets `None`.
//!   Where value ranges prove that no overflow is possible (widths of 32 bits and the hardware's
//!   bounds on thread indices), the check is not emitted.
//!
//! `&mut [T]` slices of `unsafe` kernels use the same overflow-free element computation but
//! none of the uniqueness rules (their launches are the caller's promise).

use cuprum_ir::{BinaryOp, CmpOp, Constant, Op, ScalarType as S, SliceAccess, Special, Value};
use syn::spanned::Spanned;

use super::*;

/// How a `DisjointSlice` was first written in a kernel: the index dimensions and the uniform
/// extents (as [`Lowerer::uniform`] keys), and where.
#[derive(Clone, Debug)]
pub(super) struct DisjointMapping {
    dims: usize,
    extents: Vec<u32>,
    span: proc_macro2::Span,
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
        if access == SliceAccess::Disjoint && !self.inferring() {
            self.check_unique_index(param, dims, span)?;
            self.check_same_mapping(param, dims, &extents, span)?;
        }
        let extents: Vec<Value> = extents.into_iter().map(|(v, _)| v).collect();
        self.linear_element(param, &coords, &extents, span)
    }

    /// The row-major element of `coords` (x fastest) in an array of `extents` (all but the last
    /// dimension), and whether it exists: each coordinate but the last below its extent, and
    /// the exact (unwrapped) linear index below the slice's length.
    fn linear_element(
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
    fn checked_mul_add(
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
        // The high 64 bits of the 128-bit product, from 32-bit halves (each partial product
        // fits in 64 bits, and so does their sum, which is the exact high word).
        let low32 = self.constant(Constant::u64(u64::from(u32::MAX)));
        let thirty_two = self.constant(Constant::new(S::U32, 32));
        let zero = self.constant(Constant::u64(0));
        let half = |this: &mut Self, v: Value, high: bool| -> Result<Value> {
            let op = if high {
                Op::Binary(BinaryOp::Shr, v, thirty_two)
            } else {
                Op::Binary(BinaryOp::And, v, low32)
            };
            this.def(op, span)
        };
        let a_fits_32 = self
            .upper_bound(a)
            .is_some_and(|x| x <= u128::from(u32::MAX));
        let (al, bl, bh) = (
            half(self, a, false)?,
            half(self, b, false)?,
            half(self, b, true)?,
        );
        let ll = self.def(Op::Binary(BinaryOp::Mul, al, bl), span)?;
        let lh = self.def(Op::Binary(BinaryOp::Mul, al, bh), span)?;
        let ll_high = half(self, ll, true)?;
        let lh_low = half(self, lh, false)?;
        let mut mid = self.def(Op::Binary(BinaryOp::Add, ll_high, lh_low), span)?;
        let mut high = half(self, lh, true)?;
        if !a_fits_32 {
            let ah = half(self, a, true)?;
            let hl = self.def(Op::Binary(BinaryOp::Mul, ah, bl), span)?;
            let hh = self.def(Op::Binary(BinaryOp::Mul, ah, bh), span)?;
            let hl_low = half(self, hl, false)?;
            mid = self.def(Op::Binary(BinaryOp::Add, mid, hl_low), span)?;
            let hl_high = half(self, hl, true)?;
            high = self.def(Op::Binary(BinaryOp::Add, high, hl_high), span)?;
            high = self.def(Op::Binary(BinaryOp::Add, high, hh), span)?;
        }
        let mid_high = half(self, mid, true)?;
        high = self.def(Op::Binary(BinaryOp::Add, high, mid_high), span)?;
        let no_high = self.def(Op::Compare(CmpOp::Eq, high, zero), span)?;
        let no_carry = self.def(Op::Compare(CmpOp::Ge, sum, product), span)?;
        let fits = self.def(Op::Binary(BinaryOp::And, no_high, no_carry), span)?;
        Ok((sum, Some(fits)))
    }

    /// Refuses an N-D thread index on a `DisjointSlice` where the launch contract lets two
    /// threads have it. Kernels without a domain contract have only `unsafe` launches, whose
    /// callers promise disjointness.
    fn check_unique_index(&self, param: u32, dims: usize, span: proc_macro2::Span) -> Result<()> {
        let Some(contract) = self.kernel.contract else {
            return Ok(());
        };
        let Some(domain) = contract.domain else {
            return Ok(());
        };
        let (bx, by, bz) = contract.block;
        let name = self.param_name(param);
        let kernel = &self.kernel.name;
        let (call, index, rest) = match dims {
            1 => ("get_mut", "thread::index_1d()", ""),
            2 => ("get_mut_2d", "thread::index_2d()", ", .."),
            _ => ("get_mut_3d", "thread::index_3d()", ", .."),
        };
        let suggest = |axes: usize| match axes {
            2 => "use `thread::index_2d()` with `get_mut_2d(index, width)`",
            _ => "use `thread::index_3d()` with `get_mut_3d(index, width, height)`",
        };
        if domain as usize > dims {
            let axis = if dims == 1 { "y" } else { "z" };
            return err(
                span,
                format!(
                    "`{name}.{call}({index}{rest})` could give two threads one element: kernel \
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
                    "`{name}.{call}({index}{rest})` gives two threads one element: kernel `{kernel}` \
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
        dims: usize,
        extents: &[(Value, proc_macro2::Span)],
        span: proc_macro2::Span,
    ) -> Result<()> {
        let name = self.param_name(param);
        let mut keys = Vec::with_capacity(extents.len());
        for &(v, at) in extents {
            let Some(&key) = self.uniform.get(&v) else {
                return err(
                    at,
                    format!(
                        "the extents of `{name}.get_mut_{dims}d` must be the same for every \
                         thread of the launch, or two threads could map to one element: build \
                         them from the kernel's scalar parameters, constants, slice lengths \
                         and `block_dim_*`/`grid_dim_*` (not from thread indices, memory or \
                         `let mut` variables)"
                    ),
                );
            };
            keys.push(key);
        }
        let mapping = DisjointMapping {
            dims,
            extents: keys,
            span,
        };
        match self.disjoint_mappings.get(&param) {
            None => {
                self.disjoint_mappings.insert(param, mapping);
                Ok(())
            }
            Some(first) if first.dims == mapping.dims && first.extents == mapping.extents => Ok(()),
            Some(first) => {
                let mut e = syn::Error::new(
                    span,
                    format!(
                        "`{name}` is written through another mapping elsewhere in this kernel: \
                         every access of one `DisjointSlice` must use the same method and the \
                         same extents, or two threads could reach one element"
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
