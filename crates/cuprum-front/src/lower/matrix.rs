//! Tensor-core intrinsics for SIMT kernels: `mma.sync` (m16n8k16 f16/bf16 and m16n8k8 tf32,
//! accumulating in f32), `ldmatrix` from shared arrays, and `cp.async` copies from global to
//! shared memory with their commit/wait. The tile track lowers to the same IR statements.
//!
//! Fragments are fixed-size arrays (`[u32; 4]` for A, `[u32; 2]` for B, `[f32; 4]` for C and
//! D), as in `cuprum::simt::mma`; the IR receives their elements as values.

use cuprum_ir::{
    AddressSpace, BinaryOp, Constant, CpAsyncCache, MmaShape, Op, ScalarType as S, Stmt,
};
use proc_macro2::Span;
use syn::spanned::Spanned;

use super::*;

impl Lowerer<'_> {
    /// The `mma`/`ldmatrix`/`cp_async` intrinsics; `None` when `name` is not one.
    pub(super) fn matrix_call(
        &mut self,
        name: &str,
        args: &[&syn::Expr],
        span: Span,
    ) -> Result<Option<Val>> {
        let shape = match name {
            "mma_m16n8k16_f16" => Some(MmaShape::M16n8k16F16),
            "mma_m16n8k16_bf16" => Some(MmaShape::M16n8k16Bf16),
            "mma_m16n8k8_tf32" => Some(MmaShape::M16n8k8Tf32),
            _ => None,
        };
        if let Some(shape) = shape {
            let [a, b, c] = args else {
                return err(span, format!("`{name}` takes the A, B and C fragments"));
            };
            let a = self.fragment::<4>(a, S::U32)?;
            let b = self.fragment::<2>(b, S::U32)?;
            let c = self.fragment::<4>(c, S::F32)?;
            let d = self
                .b
                .mma(shape, a, b, c)
                .or_else(|m| err(span, format!("internal compiler error: {m}")))?;
            return Ok(Some(self.fresh_array(&d, S::F32, span)?));
        }
        let ldmatrix = match name {
            "ldmatrix_x1" => Some((1, false)),
            "ldmatrix_x2" => Some((2, false)),
            "ldmatrix_x4" => Some((4, false)),
            "ldmatrix_x1_trans" => Some((1, true)),
            "ldmatrix_x2_trans" => Some((2, true)),
            "ldmatrix_x4_trans" => Some((4, true)),
            _ => None,
        };
        if let Some((count, trans)) = ldmatrix {
            let [tile, row] = args else {
                return err(
                    span,
                    format!("`{name}` takes a shared array and this lane's row element"),
                );
            };
            let addr = self.shared_element_address(tile, row, 16, span)?;
            let d = self
                .b
                .ldmatrix(count, trans, addr)
                .or_else(|m| err(span, format!("internal compiler error: {m}")))?;
            return Ok(Some(if count == 1 {
                Val::Scalar(d[0])
            } else {
                self.fresh_array(&d, S::U32, span)?
            }));
        }
        match name {
            "cp_async" => {
                let [dst, dst_index, src, src_index, bytes] = args else {
                    return err(
                        span,
                        "`cp_async` takes (shared array, index, slice, index, bytes)",
                    );
                };
                let size = match self.eval_const(bytes, 0)? {
                    ConstVal::Int(n @ (4 | 8 | 16)) => n as u32,
                    _ => {
                        return err(
                            bytes.span(),
                            "cp_async copies 4, 8 or 16 bytes (a constant)",
                        );
                    }
                };
                let dst_addr = self.shared_element_address(dst, dst_index, size, span)?;
                let param = match self.expr(src)? {
                    Val::Slice(p) => p,
                    other => {
                        return err(
                            src.span(),
                            format!("cp_async copies from a slice, not {}", describe(&other)),
                        );
                    }
                };
                let (elem, _) = self.slice_param(param);
                let i = self.expr(src_index)?;
                let i = self.materialize(i, S::U64, src_index.span())?;
                // The whole copy must lie inside the slice: check its last element.
                let per_copy = u64::from(size / elem.size_bytes().max(1)).max(1);
                let last_offset = self.constant(Constant::u64(per_copy - 1));
                let last = self.def(Op::Binary(BinaryOp::Add, i, last_offset), span)?;
                let site = format!("cp_async from {}", source_text(*src));
                self.checked_element_addr(param, last, elem, site)?;
                let src_addr = self.element_addr(param, i, elem)?;
                let cache = if size == 16 {
                    CpAsyncCache::Cg
                } else {
                    CpAsyncCache::Ca
                };
                self.b
                    .cp_async(cache, size, dst_addr, src_addr, None)
                    .or_else(|m| err(span, format!("internal compiler error: {m}")))?;
                Ok(Some(Val::Unit))
            }
            // cuda-oxide's pointer forms: `cp_async_ca_16(dst, src)` from a global `*const` to
            // a shared `*mut`, and `cp_async_ca_zfill_16(dst, src, src_size)`, which reads
            // `src_size` bytes and zero-fills the rest (inside `unsafe`: the pointers must be
            // aligned to the size and in bounds).
            pointer_copy if pointer_cp_async(pointer_copy).is_some() => {
                let Some((cache, size, zfill)) = pointer_cp_async(pointer_copy) else {
                    return Ok(None);
                };
                let (dst, src, src_size) = match (zfill, args) {
                    (false, [dst, src]) => (dst, src, None),
                    (true, [dst, src, n]) => (dst, src, Some(n)),
                    _ => {
                        return err(
                            span,
                            format!(
                                "`{name}` takes (shared destination, global source{})",
                                if zfill { ", source bytes" } else { "" }
                            ),
                        );
                    }
                };
                let (dst, src) = (without_cast(dst), without_cast(src));
                let dst_addr = match self.expr(dst)? {
                    Val::Ptr {
                        addr,
                        space: cuprum_ir::AddressSpace::Shared,
                        mutable: true,
                        ..
                    } => addr,
                    other => {
                        return err(
                            dst.span(),
                            format!(
                                "`{name}` copies into shared memory through a `*mut` pointer \
                                 (`addr_of_mut!(TILE) as *mut u32`), not {}",
                                describe(&other)
                            ),
                        );
                    }
                };
                let src_addr = match self.expr(src)? {
                    Val::Ptr {
                        addr,
                        space: cuprum_ir::AddressSpace::Global,
                        ..
                    } => addr,
                    other => {
                        return err(
                            src.span(),
                            format!(
                                "`{name}` copies from global memory through a pointer \
                                 (`input.as_ptr()`), not {}",
                                describe(&other)
                            ),
                        );
                    }
                };
                let src_size = match src_size {
                    Some(n) => {
                        let v = self.expr(n)?;
                        Some(self.materialize(v, S::U32, n.span())?)
                    }
                    None => None,
                };
                self.b
                    .cp_async(cache, size, dst_addr, src_addr, src_size)
                    .or_else(|m| err(span, format!("internal compiler error: {m}")))?;
                Ok(Some(Val::Unit))
            }
            "cp_async_commit" | "cp_async_commit_group" if args.is_empty() => {
                self.b.push(Stmt::CpAsyncCommit);
                Ok(Some(Val::Unit))
            }
            "cp_async_wait_all" if args.is_empty() => {
                self.b.push(Stmt::CpAsyncWaitAll);
                Ok(Some(Val::Unit))
            }
            "cp_async_wait" | "cp_async_wait_group" => {
                let [pending] = args else {
                    return err(
                        span,
                        "`cp_async_wait` takes the number of groups that may stay pending",
                    );
                };
                let pending = match self.eval_const(pending, 0)? {
                    ConstVal::Int(n) if (0..=64).contains(&n) => n as u32,
                    _ => {
                        return err(
                            pending.span(),
                            "the pending count must be a constant between 0 and 64",
                        );
                    }
                };
                self.b.push(Stmt::CpAsyncWaitGroup { pending });
                Ok(Some(Val::Unit))
            }
            _ => Ok(None),
        }
    }

    /// The elements of a fragment argument (an array or tuple of `N` values of type `ty`).
    pub(super) fn fragment<const N: usize>(
        &mut self,
        e: &syn::Expr,
        ty: S,
    ) -> Result<[cuprum_ir::Value; N]> {
        let span = e.span();
        let items: Vec<cuprum_ir::Value> = match self.expr(e)? {
            Val::Array(a) if a.dims == [N as u32] && a.infer.is_some() => {
                // Infer run: an open array (`let mut acc = [0.0; 4]`) is a fragment of `ty`.
                if let Some((site, _)) = a.infer {
                    self.note_type(site, ty);
                }
                (0..N)
                    .map(|_| self.constant(Constant::new(ty, 0)))
                    .collect()
            }
            // Kept in variables (a wgmma's register `A`, `wgmma::keep_in_registers`): the
            // variables themselves.
            Val::Array(a) if a.dims == [N as u32] && a.elem == ty && a.regs.is_some() => {
                let Some(regs) = &a.regs else {
                    return err(span, "an array in registers without its variables");
                };
                if a.offset.is_some() {
                    return err(
                        span,
                        "pass the fragment whole, or a row of it picked by a constant index: \
                         it lives in registers, which a run-time index cannot name",
                    );
                }
                let start = regs.base as usize;
                let vars = regs.vars[start..start + N].to_vec();
                vars.into_iter()
                    .map(|var| self.def(Op::ReadVar(var), span))
                    .collect::<Result<_>>()?
            }
            Val::Array(a) if a.dims == [N as u32] && a.elem == ty => {
                let base = self.array_addr(&a, span)?;
                let mut out = Vec::with_capacity(N);
                for k in 0..N as u32 {
                    let off = self.constant(Constant::u32(k * ty.size_bytes()));
                    let addr = self.def(Op::Binary(BinaryOp::Add, base, off), span)?;
                    out.push(self.def(
                        Op::Load {
                            space: AddressSpace::Local,
                            ty,
                            addr,
                            eviction: cuprum_ir::Eviction::Normal,
                        },
                        span,
                    )?);
                }
                out
            }
            Val::Tuple(items) if items.len() == N => items
                .into_iter()
                .map(|v| self.materialize(v, ty, span))
                .collect::<Result<_>>()?,
            other => {
                return err(
                    span,
                    format!(
                        "expected a `[{ty}; {N}]` fragment, found {}",
                        describe(&other)
                    ),
                );
            }
        };
        items.try_into().or_else(|_| err(span, "fragment length"))
    }

    /// A new local array holding `values`.
    fn fresh_array(&mut self, values: &[cuprum_ir::Value], elem: S, span: Span) -> Result<Val> {
        let len = values.len() as u32;
        let array = self.declare_local(
            cuprum_ir::ArrayDecl {
                name: "fragment".into(),
                elem,
                len,
            },
            span,
            "a fragment".into(),
        );
        let base = self.def(Op::LocalAddr(array), span)?;
        for (k, v) in values.iter().enumerate() {
            let off = self.constant(Constant::u32(k as u32 * elem.size_bytes()));
            let addr = self.def(Op::Binary(BinaryOp::Add, base, off), span)?;
            self.b.push(Stmt::Store {
                space: AddressSpace::Local,
                addr,
                value: *v,
            });
        }
        Ok(Val::Array(arrays::LocalArray {
            array,
            elem,
            dims: vec![len],
            offset: None,
            infer: None,
            regs: None,
        }))
    }

    /// The shared address of element `index` of shared array `tile`, checked to leave `bytes`
    /// bytes inside the array.
    fn shared_element_address(
        &mut self,
        tile: &syn::Expr,
        index: &syn::Expr,
        bytes: u32,
        span: Span,
    ) -> Result<cuprum_ir::Value> {
        let (array, elem, len) = match self.expr(tile)? {
            Val::Shared { array, elem, len } => (array, elem, len),
            other => {
                return err(
                    tile.span(),
                    format!("expected a shared array, found {}", describe(&other)),
                );
            }
        };
        let i = self.expr(index)?;
        let i = self.materialize(i, S::U64, index.span())?;
        if array.is_some() {
            let per = u64::from(bytes / elem.size_bytes().max(1)).max(1);
            let last_offset = self.constant(Constant::u64(per - 1));
            let last = self.def(Op::Binary(BinaryOp::Add, i, last_offset), span)?;
            let site = format!("{}[{}]", source_text(tile), source_text(index));
            self.constant_bounds_check(last, len, site, span)?;
        }
        let base = match array {
            Some(a) => self.def(Op::SharedAddr(a), span)?,
            None => self.def(Op::DynSharedAddr, span)?,
        };
        let i32v = self.cast_value(i, S::U32, span)?;
        let size = self.constant(Constant::u32(elem.size_bytes()));
        let off = self.def(Op::Binary(BinaryOp::Mul, i32v, size), span)?;
        self.def(Op::Binary(BinaryOp::Add, base, off), span)
    }
}

/// `p.cast()` / `p.cast::<T>()` as `p`: a copy's ends are byte addresses, so the element
/// type the cast gives (`src.add(8).cast()` for the `*const u8` of the zero-filling forms)
/// changes nothing there.
fn without_cast(e: &syn::Expr) -> &syn::Expr {
    match e {
        syn::Expr::MethodCall(m) if m.method == "cast" && m.args.is_empty() => {
            without_cast(&m.receiver)
        }
        syn::Expr::Paren(p) => without_cast(&p.expr),
        _ => e,
    }
}

/// The cache policy, size and zero fill of cuda-oxide's pointer `cp.async` functions
/// (`cp_async_ca_4`, `cp_async_cg_zfill_16`, ...), if `name` is one.
fn pointer_cp_async(name: &str) -> Option<(CpAsyncCache, u32, bool)> {
    let rest = name.strip_prefix("cp_async_")?;
    let (cache, rest) = if let Some(r) = rest.strip_prefix("ca_") {
        (CpAsyncCache::Ca, r)
    } else {
        (CpAsyncCache::Cg, rest.strip_prefix("cg_")?)
    };
    let (zfill, size) = match rest.strip_prefix("zfill_") {
        Some(size) => (true, size),
        None => (false, rest),
    };
    let size: u32 = size.parse().ok()?;
    cache.allows_size(size).then_some((cache, size, zfill))
}
