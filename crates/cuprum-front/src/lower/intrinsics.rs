//! Device intrinsics: what `cuprum::simt`'s device API means in IR.
//!
//! Thread indices in two and three dimensions, barriers and fences, shared-memory arrays
//! (static and dynamic) with their atomics, atomics on `AtomicSlice` parameters, and warp
//! shuffles, votes and reductions. Each function here is called by `calls.rs` once it has
//! recognised the intrinsic's name.

use cuprum_ir::{
    AddressSpace, ArrayDecl, AtomicOp, BinaryOp, CmpOp, Constant, Dim, MemOrder, Op,
    ScalarType as S, Scope, ShuffleMode, Special, Stmt, TrapKind, Value, VoteMode,
};
use proc_macro2::Span;
use syn::spanned::Spanned;

use super::*;

/// A parsed `SharedArray<T, N>` / `DynamicShared<T>` type or turbofish.
pub(super) struct SharedShape {
    pub elem: S,
    /// `None` for dynamic shared memory.
    pub len: Option<u32>,
    /// The element type of an array of aggregates (`elem` is then `U8`; see `memory`).
    pub agg: Option<crate::layout::ElemType>,
    /// The alignment of the array's start in bytes when it asks for more than the default
    /// 16 (`SharedArray<T, N, 128>` for TMA boxes, 1024 for swizzled ones); 0 otherwise.
    pub align: u32,
}

impl Lowerer<'_> {
    /// `thread::index_2d()` / `index_3d()`: global coordinates as `u64`s.
    pub(super) fn global_index(&mut self, dims: &[Dim], span: Span) -> Result<Vec<Value>> {
        let mut out = Vec::with_capacity(dims.len());
        for &d in dims {
            let block = self.def(Op::Special(Special::BlockIdx(d)), span)?;
            let dim = self.def(Op::Special(Special::BlockDim(d)), span)?;
            let tid = self.def(Op::Special(Special::ThreadIdx(d)), span)?;
            let block = self.cast_value(block, S::U64, span)?;
            let dim = self.cast_value(dim, S::U64, span)?;
            let tid = self.cast_value(tid, S::U64, span)?;
            let base = self.def(Op::Binary(BinaryOp::Mul, block, dim), span)?;
            out.push(self.def(Op::Binary(BinaryOp::Add, base, tid), span)?);
        }
        Ok(out)
    }

    /// The calling thread's warp within its block: its linear thread index / 32.
    pub(super) fn warp_id(&mut self, span: Span) -> Result<Value> {
        let linear = self.linear_thread_index(span)?;
        let five = self.constant(Constant::u32(5));
        self.def(Op::Binary(BinaryOp::Shr, linear, five), span)
    }

    /// The calling thread's linear index in its block, `x + dim_x * (y + dim_y * z)` (a
    /// `U32`; the hardware numbers warps by it), with the block's sizes as constants where a
    /// launch contract fixes them.
    pub(super) fn linear_thread_index(&mut self, span: Span) -> Result<Value> {
        let tx = self.def(Op::Special(Special::ThreadIdx(Dim::X)), span)?;
        let ty = self.def(Op::Special(Special::ThreadIdx(Dim::Y)), span)?;
        let tz = self.def(Op::Special(Special::ThreadIdx(Dim::Z)), span)?;
        let nx = self.block_dim(Dim::X, span)?;
        let ny = self.block_dim(Dim::Y, span)?;
        let zy = self.def(Op::Binary(BinaryOp::Mul, tz, ny), span)?;
        let zy = self.def(Op::Binary(BinaryOp::Add, zy, ty), span)?;
        let row = self.def(Op::Binary(BinaryOp::Mul, zy, nx), span)?;
        self.def(Op::Binary(BinaryOp::Add, row, tx), span)
    }

    /// The block's size along `d` when the launch contract fixes it.
    pub(super) fn contract_block_dim(&self, d: Dim) -> Option<u32> {
        self.contract.map(|c| match d {
            Dim::X => c.block.0,
            Dim::Y => c.block.1,
            Dim::Z => c.block.2,
        })
    }

    /// The block's size along `d`: the launch contract's constant, else `blockDim`.
    pub(super) fn block_dim(&mut self, d: Dim, span: Span) -> Result<Value> {
        match self.contract_block_dim(d) {
            Some(n) => Ok(self.constant(Constant::u32(n))),
            None => self.def(Op::Special(Special::BlockDim(d)), span),
        }
    }

    /// Declares a shared array for `let name = SharedArray::<T, N>::uninit()` (or the dynamic
    /// region for `dynamic_shared::<T>()`).
    pub(super) fn declare_shared(
        &mut self,
        name: &str,
        shape: SharedShape,
        span: Span,
    ) -> Result<Val> {
        let Some(len) = shape.len else {
            return Ok(Val::Shared {
                array: None,
                elem: shape.elem,
                len: 0,
            });
        };
        let size = match &shape.agg {
            Some(ty) => ty.layout().size,
            None => u64::from(shape.elem.size_bytes()),
        };
        let bytes = u64::from(len) * size;
        if bytes > u64::from(cuprum_ir::MAX_SHARED_BYTES) {
            return err(
                span,
                format!(
                    "shared array `{name}` needs {bytes} bytes; a block has at most {} KiB",
                    cuprum_ir::MAX_SHARED_BYTES / 1024
                ),
            );
        }
        if let Some(ty) = shape.agg {
            let array = self.b.shared_array_aligned(
                ArrayDecl {
                    name: name.to_string(),
                    elem: S::U8,
                    len: bytes as u32,
                },
                shape.align,
            );
            return Ok(Val::SharedElems {
                array,
                elem: ty,
                len,
            });
        }
        let array = self.b.shared_array_aligned(
            ArrayDecl {
                name: name.to_string(),
                elem: shape.elem,
                len,
            },
            shape.align,
        );
        Ok(Val::Shared {
            array: Some(array),
            elem: shape.elem,
            len,
        })
    }

    /// Parses the element type and length of `SharedArray<T, N>` / `DynamicShared<T>` from
    /// generic arguments (a type annotation or a turbofish).
    pub(super) fn shared_shape(
        &self,
        args: &syn::PathArguments,
        dynamic: bool,
        span: Span,
    ) -> Result<SharedShape> {
        let syn::PathArguments::AngleBracketed(a) = args else {
            return err(
                span,
                if dynamic {
                    "name the element type: `dynamic_shared::<f32>()`"
                } else {
                    "name the element type and length: `SharedArray::<f32, 256>::uninit()`"
                },
            );
        };
        let mut it = a.args.iter();
        let (elem, agg) = match it.next() {
            Some(syn::GenericArgument::Type(t)) => match self.resolve_scalar(t) {
                Ok(s) => (s, None),
                Err(_) => {
                    let length = |e: &syn::Expr| match self.eval_const(e, 0) {
                        Ok(ConstVal::Int(n)) => u64::try_from(n).ok(),
                        _ => None,
                    };
                    let ty = crate::layout::elem_type(
                        t,
                        &self.type_params,
                        &self.info.structs,
                        &length,
                    )?;
                    if dynamic {
                        return err(
                            t.span(),
                            format!(
                                "dynamic shared memory holds scalars: view it as the scalar \
                                 type of `{}` and compute the element's offsets, or declare \
                                 a static `SharedArray<{}, N>`",
                                ty.rust_name(),
                                ty.rust_name()
                            ),
                        );
                    }
                    (S::U8, Some(ty))
                }
            },
            _ => return err(a.span(), "expected the element type first"),
        };
        if dynamic {
            return Ok(SharedShape {
                elem,
                len: None,
                agg,
                align: 0,
            });
        }
        let len = self.length_argument(
            it.next(),
            "expected the array length second: `SharedArray<f32, 256>`",
            a.span(),
        )?;
        // cuda-oxide's alignment (`SharedArray<u32, 64, 8>`): static shared arrays start at
        // multiples of 16 bytes (`cuprum_ir::array_layout`), which any `ALIGN` up to 16 is;
        // larger powers of two up to `MAX_ARRAY_ALIGN` (TMA boxes) are asked of the IR.
        let mut align_bytes = 0;
        if let Some(align) = it.next() {
            let n = match align {
                syn::GenericArgument::Const(e) => match self.eval_const(e, 0)? {
                    ConstVal::Int(n) => Some(n),
                    _ => None,
                },
                syn::GenericArgument::Type(syn::Type::Path(p)) => {
                    let e = syn::Expr::Path(syn::ExprPath {
                        attrs: vec![],
                        qself: None,
                        path: p.path.clone(),
                    });
                    match self.eval_const(&e, 0)? {
                        ConstVal::Int(n) => Some(n),
                        _ => None,
                    }
                }
                _ => None,
            };
            let max = i128::from(cuprum_ir::MAX_ARRAY_ALIGN);
            match n {
                Some(0 | 1 | 2 | 4 | 8 | 16) => {}
                Some(n) if n > 16 && n <= max && n.count_ones() == 1 => align_bytes = n as u32,
                Some(n) if n > max && n.count_ones() == 1 => {
                    return err(
                        align.span(),
                        format!(
                            "a static shared array may be aligned to at most {max} bytes (what \
                             a 128-byte-swizzled TMA box needs), not {n}"
                        ),
                    );
                }
                _ => {
                    return err(
                        align.span(),
                        "the alignment (third argument) must be 0 or a power of two: \
                         `SharedArray<u32, 64, 8>`",
                    );
                }
            }
        }
        Ok(SharedShape {
            elem,
            len: Some(len),
            agg,
            align: align_bytes,
        })
    }

    /// A constant length given as a generic argument (`256`, `{ 2 * N }`, a const
    /// parameter `BLOCK`): between 1 and 2^32 - 1. `expected` says what to write when the
    /// argument is missing or not a constant.
    pub(super) fn length_argument(
        &self,
        arg: Option<&syn::GenericArgument>,
        expected: &str,
        span: Span,
    ) -> Result<u32> {
        let len = match arg {
            Some(syn::GenericArgument::Const(e)) => self.eval_const(e, 0)?,
            Some(syn::GenericArgument::Type(syn::Type::Path(p))) => {
                let e = syn::Expr::Path(syn::ExprPath {
                    attrs: vec![],
                    qself: None,
                    path: p.path.clone(),
                });
                self.eval_const(&e, 0)?
            }
            _ => return err(span, expected),
        };
        let ConstVal::Int(len) = len else {
            return err(span, "the length must be an integer");
        };
        match u32::try_from(len).ok().filter(|&l| l > 0) {
            Some(len) => Ok(len),
            None => err(span, "the length must be between 1 and 2^32 - 1"),
        }
    }

    /// `index` as a `usize` index into an array of the constant length `len`, checked
    /// ([`constant_bounds_check`](Self::constant_bounds_check) at `span`); the one way local,
    /// shared and element arrays take an index. `index_span` is where a non-integer index is
    /// reported.
    pub(super) fn checked_array_index(
        &mut self,
        index: Val,
        len: u32,
        site: String,
        index_span: Span,
        span: Span,
    ) -> Result<Value> {
        let index = self.materialize(index, S::U64, index_span).map_err(|e| {
            syn::Error::new(e.span(), format!("{e} (arrays are indexed by `usize`)"))
        })?;
        self.constant_bounds_check(index, len, site, span)?;
        Ok(index)
    }

    /// Traps unless `index < len` (a constant length); nothing when the index is proven below.
    pub(super) fn constant_bounds_check(
        &mut self,
        index: Value,
        len: u32,
        site: String,
        span: Span,
    ) -> Result<()> {
        if self.provably_below(index, u64::from(len)) {
            return Ok(());
        }
        let len_v = self.constant(Constant::u64(u64::from(len)));
        let ok = self.def(Op::Compare(CmpOp::Lt, index, len_v), span)?;
        self.trap_unless(
            ok,
            TrapKind::BoundsCheck {
                index,
                len: len_v,
                site,
            },
        );
        Ok(())
    }

    /// The address of element `index` (a `u64`) of a shared array, bounds-checked for static
    /// arrays.
    pub(super) fn shared_addr(
        &mut self,
        array: Option<u32>,
        elem: S,
        len: u32,
        index: Value,
        site: String,
        span: Span,
    ) -> Result<Value> {
        let base = match array {
            Some(a) => {
                self.constant_bounds_check(index, len, site, span)?;
                self.def(Op::SharedAddr(a), span)?
            }
            None => self.def(Op::DynSharedAddr, span)?,
        };
        let index32 = self.cast_value(index, S::U32, span)?;
        let size = self.constant(Constant::u32(elem.size_bytes()));
        let offset = self.def(Op::Binary(BinaryOp::Mul, index32, size), span)?;
        self.def(Op::Binary(BinaryOp::Add, base, offset), span)
    }

    /// Methods of a shared array: `get`, `set`, `len`, `fetch_*`.
    pub(super) fn shared_method(
        &mut self,
        m: &syn::ExprMethodCall,
        array: Option<u32>,
        elem: S,
        len: u32,
    ) -> Result<Val> {
        let span = m.span();
        let method = m.method.to_string();
        let args: Vec<&syn::Expr> = m.args.iter().collect();
        if method == "len" && args.is_empty() {
            if array.is_none() {
                return err(
                    span,
                    "the length of dynamic shared memory is the launch's `shared_mem_bytes`; pass it as a parameter",
                );
            }
            return Ok(Val::Scalar(self.constant(Constant::u64(u64::from(len)))));
        }
        let Some((first, rest)) = args.split_first() else {
            return err(span, format!("`{method}` takes an element index first"));
        };
        let i = self.expr(first)?;
        let i = self.materialize(i, S::U64, first.span())?;
        let site = format!("{}[{}]", source_text(&m.receiver), source_text(*first));
        match (method.as_str(), rest) {
            ("get", []) => {
                let addr = self.shared_addr(array, elem, len, i, site, span)?;
                Ok(Val::Scalar(self.def(
                    Op::Load {
                        space: AddressSpace::Shared,
                        ty: elem,
                        addr,
                        eviction: cuprum_ir::Eviction::Normal,
                    },
                    span,
                )?))
            }
            ("get_mut", []) => {
                // The element itself, for a helper's `&mut` parameter (see `references`).
                let addr = self.shared_addr(array, elem, len, i, site, span)?;
                Ok(Val::ElemRef {
                    space: AddressSpace::Shared,
                    addr,
                    elem,
                    mutable: true,
                })
            }
            ("set", [v]) => {
                let v = self.expr(v)?;
                let v = self.materialize(v, elem, span)?;
                let addr = self.shared_addr(array, elem, len, i, site, span)?;
                self.b.push(Stmt::Store {
                    space: AddressSpace::Shared,
                    addr,
                    value: v,
                });
                Ok(Val::Unit)
            }
            (name, [v]) => {
                let (op, _) = atomic_method(name, span)?;
                let v = self.expr(v)?;
                let v = self.materialize(v, elem, span)?;
                let addr = self.shared_addr(array, elem, len, i, site, span)?;
                self.atomic(
                    op,
                    AddressSpace::Shared,
                    (Scope::Block, MemOrder::Relaxed),
                    addr,
                    v,
                    None,
                    elem,
                    span,
                )
            }
            _ => err(
                span,
                format!(
                    "`{method}` is not a method of shared arrays (get, set, get_mut, len, fetch_add, fetch_sub, fetch_min, fetch_max, fetch_and, fetch_or, fetch_xor, swap)"
                ),
            ),
        }
    }

    /// Methods of an `AtomicSlice` parameter.
    pub(super) fn atomic_method_call(
        &mut self,
        m: &syn::ExprMethodCall,
        param: u32,
    ) -> Result<Val> {
        let span = m.span();
        let method = m.method.to_string();
        let args: Vec<&syn::Expr> = m.args.iter().collect();
        let (elem, _) = self.slice_param(param);
        if method == "len" && args.is_empty() {
            return Ok(Val::Scalar(self.def(Op::SliceLen(param), span)?));
        }
        let (op, scope) = if method == "compare_exchange" {
            (AtomicOp::CompareExchange, Scope::Device)
        } else {
            atomic_method(&method, span)?
        };
        let expected_args = if op == AtomicOp::CompareExchange {
            3
        } else {
            2
        };
        if args.len() != expected_args {
            return err(span, format!("`{method}` takes {expected_args} arguments"));
        }
        let i = self.expr(args[0])?;
        let i = self.materialize(i, S::U64, args[0].span())?;
        let site = format!("{}[{}]", source_text(&m.receiver), source_text(args[0]));
        let addr = self.checked_element_addr(param, i, elem, site)?;
        let (compare, value) = if op == AtomicOp::CompareExchange {
            let c = self.expr(args[1])?;
            let c = self.materialize(c, elem, span)?;
            let v = self.expr(args[2])?;
            (Some(c), self.materialize(v, elem, span)?)
        } else {
            let v = self.expr(args[1])?;
            (None, self.materialize(v, elem, span)?)
        };
        self.atomic(
            op,
            AddressSpace::Global,
            (scope, MemOrder::Relaxed),
            addr,
            value,
            compare,
            elem,
            span,
        )
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn atomic(
        &mut self,
        op: AtomicOp,
        space: AddressSpace,
        (scope, order): (Scope, MemOrder),
        addr: Value,
        value: Value,
        compare: Option<Value>,
        elem: S,
        span: Span,
    ) -> Result<Val> {
        if !op.applies_to(elem) {
            return err(
                span,
                format!(
                    "atomic {op:?} is not available on `{elem}`: floats support fetch_add, swap and compare_exchange"
                ),
            );
        }
        if !matches!(elem.size_bytes(), 4 | 8) {
            return err(
                span,
                format!("atomics work on 32- and 64-bit elements, not `{elem}`"),
            );
        }
        Ok(Val::Scalar(self.def(
            Op::Atomic {
                op,
                space,
                scope,
                order,
                addr,
                value,
                compare,
            },
            span,
        )?))
    }

    /// The operand of an intrinsic whose result has its operand's type (`shuffle<T>`,
    /// `reduce_add<T>`). A typed value is taken as it is. An untyped literal, or a value whose
    /// type is still being inferred, has the type the *result's* uses give it, as in Rust: the
    /// call is a `site`, tied to the operand's. In the infer run such an operand gives
    /// `Err(placeholder)`, the open result to return instead of emitting the operation (so
    /// `let mut j = 0; j = warp::shuffle(j, 0); .. j + x[k]` types `j` from `x`, not as `i32`).
    pub(super) fn same_type_operand(
        &mut self,
        v: Val,
        site: u32,
        span: Span,
    ) -> Result<std::result::Result<Value, Val>> {
        let kind = match &v {
            Val::Int(_) => LitKind::Int,
            Val::Float(_) => LitKind::Float,
            Val::Infer(other, kind) => {
                self.note_union(site, *other);
                *kind
            }
            _ => return self.scalar(v, span).map(Ok),
        };
        self.note_kind(site, kind);
        if self.inferring() {
            return Ok(Err(Val::Infer(site, kind)));
        }
        let ty = self.solved(site).unwrap_or(kind.default_type());
        self.materialize(v, ty, span).map(Ok)
    }

    /// `warp::*` functions. `None` when `name` is not one.
    pub(super) fn warp_call(
        &mut self,
        name: &str,
        args: &[&syn::Expr],
        span: Span,
    ) -> Result<Option<Val>> {
        let call = self.warp_spelling(name, args, span)?;
        let (name, args) = (call.name.as_str(), &call.args[..]);
        if let Some(v) = self.warp_derived(name, args, span)? {
            return Ok(Some(v));
        }
        let shuffle = match name {
            "shuffle" | "shuffle_idx" => Some(ShuffleMode::Idx),
            "shuffle_up" => Some(ShuffleMode::Up),
            "shuffle_down" => Some(ShuffleMode::Down),
            "shuffle_xor" => Some(ShuffleMode::Xor),
            _ => None,
        };
        if let Some(mode) = shuffle {
            let [v, lane] = args else {
                return err(span, format!("`{name}` takes a value and a lane"));
            };
            let site = self.site();
            let v = self.expr(v)?;
            let lane_v = self.expr(lane)?;
            let lane = self.materialize(lane_v, S::U32, lane.span())?;
            let v = match self.same_type_operand(v, site, span)? {
                Ok(v) => v,
                Err(open) => return Ok(Some(open)),
            };
            return Ok(Some(Val::Scalar(self.def(
                Op::Shuffle {
                    mode,
                    value: v,
                    lane,
                },
                span,
            )?)));
        }
        let vote = match name {
            "all" => Some(VoteMode::All),
            "any" => Some(VoteMode::Any),
            "ballot" => Some(VoteMode::Ballot),
            _ => None,
        };
        if let Some(mode) = vote {
            let [p] = args else {
                return err(span, format!("`{name}` takes one predicate"));
            };
            let p = self.boolean(p)?;
            return Ok(Some(Val::Scalar(
                self.def(Op::Vote { mode, pred: p }, span)?,
            )));
        }
        let reduce = match name {
            "reduce_add" => Some(BinaryOp::Add),
            "reduce_min" => Some(BinaryOp::Min),
            "reduce_max" => Some(BinaryOp::Max),
            "reduce_and" => Some(BinaryOp::And),
            "reduce_or" => Some(BinaryOp::Or),
            "reduce_xor" => Some(BinaryOp::Xor),
            _ => None,
        };
        if let Some(op) = reduce {
            let [v] = args else {
                return err(span, format!("`{name}` takes one value"));
            };
            let site = self.site();
            let v = self.expr(v)?;
            let mut acc = match self.same_type_operand(v, site, span)? {
                Ok(v) => v,
                Err(open) => return Ok(Some(open)),
            };
            if self.ty(acc) == S::Bool {
                return err(span, "warp reductions work on numbers");
            }
            // A butterfly: every lane ends with the same value, bit for bit, since each step
            // combines the same two partial results on both lanes of a pair.
            for m in [16u32, 8, 4, 2, 1] {
                let mask = self.constant(Constant::u32(m));
                let other = self.def(
                    Op::Shuffle {
                        mode: ShuffleMode::Xor,
                        value: acc,
                        lane: mask,
                    },
                    span,
                )?;
                acc = self.def(Op::Binary(op, acc, other), span)?;
            }
            return Ok(Some(Val::Scalar(acc)));
        }
        Ok(None)
    }
}

/// The atomic operation and scope a method name stands for.
fn atomic_method(name: &str, span: Span) -> Result<(AtomicOp, Scope)> {
    let (base, scope) = match name.strip_suffix("_block") {
        Some(b) => (b, Scope::Block),
        None => match name.strip_suffix("_system") {
            Some(b) => (b, Scope::System),
            None => (name, Scope::Device),
        },
    };
    let op = match rust_atomic_op(base) {
        Some(op) => op,
        None => {
            return err(
                span,
                format!(
                    "`{name}` is not an atomic operation (fetch_add, fetch_sub, fetch_min, fetch_max, fetch_and, fetch_or, fetch_xor, swap, compare_exchange; with `_block` or `_system` for another scope)"
                ),
            );
        }
    };
    Ok((op, scope))
}

/// The atomic operation a Rust atomic method names (`fetch_add`, ..., `swap`,
/// `compare_exchange`), as on `std::sync::atomic` types: the one table of these names, for
/// `AtomicSlice` and the typed atomic cells alike.
pub(super) fn rust_atomic_op(name: &str) -> Option<AtomicOp> {
    Some(match name {
        "fetch_add" => AtomicOp::Add,
        "fetch_sub" => AtomicOp::Sub,
        "fetch_min" => AtomicOp::Min,
        "fetch_max" => AtomicOp::Max,
        "fetch_and" => AtomicOp::And,
        "fetch_or" => AtomicOp::Or,
        "fetch_xor" => AtomicOp::Xor,
        "swap" => AtomicOp::Exchange,
        "compare_exchange" => AtomicOp::CompareExchange,
        _ => return None,
    })
}
