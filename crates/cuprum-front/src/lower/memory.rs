//! Aggregate elements in memory: arrays, tuples and structs as elements of slices
//! (`&[[f32; 4]]`, `DisjointSlice<Particle>`) and of shared arrays
//! (`SharedArray<[f32; 17], 16>`).
//!
//! The IR only loads and stores scalars, so such an element is a byte range laid out as
//! [`crate::layout`] says, and every access is lowered to scalar accesses at the byte offsets
//! it gives: a slice of them is an IR slice of bytes (its length in bytes; element counts are
//! that divided by the element size), a shared array of them an IR shared array of bytes.
//! Access paths (`x[i].pos.y`, `tile[r][c]`, `out[k]` through a `get_mut` reference) are
//! followed without loading anything, so a path that ends at a scalar is one load or store;
//! a path that ends at an aggregate loads or stores all of its scalars back to back, in
//! address order, where the optimizer's `vectorize` merges a 16-byte aligned run of them
//! into one vector access. Each index is bounds-checked as for scalar slices and arrays.

use cuprum_ir::{AddressSpace, BinaryOp, CmpOp, Constant, Op, ScalarType as S, Stmt, TrapKind};
use proc_macro2::Span;
use syn::spanned::Spanned;

use super::*;
use crate::layout::ElemType;

/// An element (or part of one) in memory: where it is and what it is.
#[derive(Clone, Debug)]
pub(super) struct MemRef {
    /// Global (a `U64` address) or shared (a `U32` offset).
    pub space: AddressSpace,
    /// Its first byte.
    pub addr: Value,
    /// Its type.
    pub ty: ElemType,
    /// Whether it may be written.
    pub mutable: bool,
}

impl Lowerer<'_> {
    /// The element type of a slice parameter of aggregates, `None` for scalar slices.
    pub(super) fn elem_slice(&self, param: u32) -> Option<&ElemType> {
        self.elem_slices.get(&param)
    }

    /// The number of elements of slice `param` (the IR length, in bytes for a slice of
    /// aggregates, divided by the element size).
    pub(super) fn slice_len(&mut self, param: u32, span: Span) -> Result<Value> {
        let len = self.def(Op::SliceLen(param), span)?;
        let Some(size) = self.elem_slice(param).map(|t| t.layout().size) else {
            return Ok(len);
        };
        let (op, amount) = if size.is_power_of_two() {
            (BinaryOp::Shr, Constant::u32(size.trailing_zeros()))
        } else {
            (BinaryOp::Div, Constant::u64(size))
        };
        let amount = self.constant(amount);
        self.def(Op::Binary(op, len, amount), span)
    }

    /// Emits `if !(index < len) { trap }` for element `index` of slice parameter `param`, its
    /// length in elements (aggregate slices are bytes to the IR), naming `site`: the one
    /// bounds check of slice elements.
    pub(super) fn bounds_check(
        &mut self,
        param: u32,
        index: Value,
        site: String,
        span: Span,
    ) -> Result<()> {
        let len = self.slice_len(param, span)?;
        let in_bounds = self.def(Op::Compare(CmpOp::Lt, index, len), span)?;
        self.trap_unless(in_bounds, TrapKind::BoundsCheck { index, len, site });
        Ok(())
    }

    /// A reference to element `index` of slice parameter `param`: an aggregate one
    /// ([`Val::AggRef`], at [`slice_elements_addr`](Self::slice_elements_addr)) or a scalar
    /// one. The one choice `get_mut`/`get` and the output patterns share.
    /// `unsafe { slice.get_unchecked_mut(i) }` (and `get_unchecked`): a reference to element
    /// `i` of any slice, `DisjointSlice` included, as cuda-oxide's raw escape hatch. Rust
    /// makes the call `unsafe`, so the caller answers for races; the index is still checked
    /// against the length (a failed check stops the kernel with a typed error), which costs a
    /// comparison and keeps an out-of-bounds write from corrupting memory.
    pub(super) fn unchecked_element(
        &mut self,
        param: u32,
        method: &str,
        args: &[&syn::Expr],
        span: Span,
    ) -> Result<Val> {
        let [index] = args else {
            return err(span, format!("`{method}` takes one `usize` index"));
        };
        let access = self.slice_param(param).1;
        let mutable = method == "get_unchecked_mut";
        if mutable && access == SliceAccess::ReadOnly {
            return err(span, "cannot get a mutable element of a `&[T]`");
        }
        let value = self.expr(index)?;
        let index = self.materialize(value, S::U64, index.span())?;
        let site = format!("{method}({})", source_text(args[0]));
        self.bounds_check(param, index, site, span)?;
        self.slice_element_ref(param, index, mutable, span)
    }

    pub(super) fn slice_element_ref(
        &mut self,
        param: u32,
        index: Value,
        mutable: bool,
        span: Span,
    ) -> Result<Val> {
        match self.elem_slice(param).cloned() {
            Some(ty) => Ok(Val::AggRef(MemRef {
                space: AddressSpace::Global,
                addr: self.slice_elements_addr(param, index, span)?,
                ty,
                mutable,
            })),
            None => {
                let elem = self.slice_param(param).0;
                Ok(Val::ElemRef {
                    space: AddressSpace::Global,
                    addr: self.element_addr(param, index, elem)?,
                    elem,
                    mutable,
                })
            }
        }
    }

    /// The address `size * index` bytes past `base`, in `space`'s address type; `index` is a
    /// `U64`.
    pub(super) fn scaled_addr(
        &mut self,
        space: AddressSpace,
        base: Value,
        index: Value,
        size: u64,
        span: Span,
    ) -> Result<Value> {
        let (index, size) = if space == AddressSpace::Global {
            (index, Constant::u64(size))
        } else {
            (
                self.cast_value(index, S::U32, span)?,
                Constant::u32(size as u32),
            )
        };
        let size = self.constant(size);
        let offset = self.def(Op::Binary(BinaryOp::Mul, index, size), span)?;
        self.def(Op::Binary(BinaryOp::Add, base, offset), span)
    }

    /// The address `bytes` past `base`.
    pub(super) fn offset_addr(
        &mut self,
        space: AddressSpace,
        base: Value,
        bytes: u64,
        span: Span,
    ) -> Result<Value> {
        if bytes == 0 {
            return Ok(base);
        }
        let c = if space == AddressSpace::Global {
            Constant::u64(bytes)
        } else {
            Constant::u32(bytes as u32)
        };
        let c = self.constant(c);
        self.def(Op::Binary(BinaryOp::Add, base, c), span)
    }

    /// The memory an access path names, when it is rooted at a slice of aggregates, a shared
    /// array of aggregates or a reference to an aggregate element; `None` (and no code) for
    /// every other expression.
    pub(super) fn mem_path(&mut self, e: &syn::Expr) -> Result<Option<MemRef>> {
        match e {
            syn::Expr::Paren(p) => self.mem_path(&p.expr),
            syn::Expr::Group(g) => self.mem_path(&g.expr),
            syn::Expr::Path(_) => Ok(match self.root(e) {
                Some(Val::AggRef(m)) => Some(m),
                _ => None,
            }),
            syn::Expr::Unary(syn::ExprUnary {
                op: syn::UnOp::Deref(_),
                expr,
                ..
            }) => Ok(match self.root(expr) {
                Some(Val::AggRef(m)) => Some(m),
                _ => None,
            }),
            syn::Expr::Field(f) => match self.mem_path(&f.base)? {
                Some(m) => self.project_field(m, &f.member).map(Some),
                None => Ok(None),
            },
            syn::Expr::Index(i) => {
                if let Some(m) = self.mem_path(&i.expr)? {
                    return self.project_index(m, i).map(Some);
                }
                match self.root(&i.expr) {
                    Some(Val::Slice(p)) if self.elem_slice(p).is_some() => {
                        self.slice_elements_index(p, i).map(Some)
                    }
                    Some(Val::SharedElems { array, elem, len }) => {
                        self.shared_elements_index(array, elem, len, i).map(Some)
                    }
                    Some(Val::LocalElems { array, elem, len }) => {
                        self.local_elements_index(array, elem, len, i).map(Some)
                    }
                    Some(Val::Phased(p)) => match self.phased_aggregates.get(&p.array).cloned() {
                        Some(ty) => self.phased_elements_index(p, ty, i).map(Some),
                        None => Ok(None),
                    },
                    _ => Ok(None),
                }
            }
            _ => Ok(None),
        }
    }

    /// What a plain name is bound to, without emitting anything.
    fn root(&self, e: &syn::Expr) -> Option<Val> {
        let syn::Expr::Path(p) = e else {
            return None;
        };
        let name = p.path.get_ident()?.to_string();
        match self.lookup(&name)? {
            Binding::Val(
                v @ (Val::AggRef(_)
                | Val::Slice(_)
                | Val::SharedElems { .. }
                | Val::LocalElems { .. }
                | Val::Phased(_)),
            ) => Some(v.clone()),
            _ => None,
        }
    }

    /// `x[i]` of a slice of aggregates, checked against its element count.
    fn slice_elements_index(&mut self, param: u32, i: &syn::ExprIndex) -> Result<MemRef> {
        let span = i.span();
        let Some(ty) = self.elem_slice(param).cloned() else {
            return err(span, "internal compiler error: not a slice of aggregates");
        };
        let (_, access) = self.slice_param(param);
        if access == SliceAccess::Disjoint {
            return err(
                span,
                "a `DisjointSlice` is written through `get_mut(index)`, not indexed",
            );
        }
        let index = self.expr(&i.index)?;
        let index = self
            .materialize(index, S::U64, i.index.span())
            .map_err(|e| {
                syn::Error::new(e.span(), format!("{e} (slices are indexed by `usize`)"))
            })?;
        self.bounds_check(param, index, source_text(i), span)?;
        let addr = self.slice_elements_addr(param, index, span)?;
        Ok(MemRef {
            space: AddressSpace::Global,
            addr,
            ty,
            mutable: access == SliceAccess::ReadWrite,
        })
    }

    /// The address of element `index` of a slice of aggregates (not checked).
    pub(super) fn slice_elements_addr(
        &mut self,
        param: u32,
        index: Value,
        span: Span,
    ) -> Result<Value> {
        let size = self.elem_slice(param).map_or(1, |t| t.layout().size);
        let base = self.def(Op::SliceBase(param), span)?;
        self.scaled_addr(AddressSpace::Global, base, index, size, span)
    }

    /// `tile[r]` of a shared array of aggregates: only in `unsafe` code, as `get`/`set` are.
    fn shared_elements_index(
        &mut self,
        array: u32,
        ty: ElemType,
        len: u32,
        i: &syn::ExprIndex,
    ) -> Result<MemRef> {
        self.require_unsafe_shared(i)?;
        let base = self.def(Op::SharedAddr(array), i.span())?;
        self.array_elements_index(AddressSpace::Shared, base, ty, len, i)
    }

    /// `a[i]` of an array of `len` aggregates of `ty` at `base` in `space` (shared or local),
    /// checked against `len`.
    pub(super) fn array_elements_index(
        &mut self,
        space: AddressSpace,
        base: Value,
        ty: ElemType,
        len: u32,
        i: &syn::ExprIndex,
    ) -> Result<MemRef> {
        let span = i.span();
        let index = self.expr(&i.index)?;
        let index = self.checked_array_index(index, len, source_text(i), i.index.span(), span)?;
        let size = ty.layout().size;
        let addr = self.scaled_addr(space, base, index, size, span)?;
        Ok(MemRef {
            space,
            addr,
            ty,
            mutable: true,
        })
    }

    /// Refuses `tile[i]` of a shared array outside `unsafe` code.
    pub(super) fn require_unsafe_shared(&self, i: &syn::ExprIndex) -> Result<()> {
        if self.unsafe_depth == 0 && !self.kernel.is_unsafe {
            return err(
                i.span(),
                format!(
                    "indexing a shared array (`{}`) is `unsafe`: another thread may write the \
                     element at the same time. Wrap the access in `unsafe {{ .. }}` with a \
                     `// SAFETY:` comment saying why no other thread touches the element \
                     before the next `sync_threads()`",
                    source_text(i)
                ),
            );
        }
        Ok(())
    }

    /// `tile.get(i)`, `tile.set(i, v)` and `tile.len()` of a shared array of aggregates.
    pub(super) fn shared_elements_method(
        &mut self,
        m: &syn::ExprMethodCall,
        array: u32,
        ty: ElemType,
        len: u32,
    ) -> Result<Val> {
        let span = m.span();
        let args: Vec<&syn::Expr> = m.args.iter().collect();
        let method = m.method.to_string();
        if method == "len" && args.is_empty() {
            return Ok(Val::Scalar(self.constant(Constant::u64(u64::from(len)))));
        }
        let (first, rest) = match (method.as_str(), args.split_first()) {
            ("get" | "set", Some(split)) => split,
            _ => {
                return err(
                    span,
                    format!(
                        "a shared array of `{}` has `get(i)`, `set(i, value)`, `len()` and \
                         indexing (`tile[i]`, in `unsafe`); atomics work on scalar elements",
                        ty.rust_name()
                    ),
                );
            }
        };
        let index = self.expr(first)?;
        let index = self.materialize(index, S::U64, first.span())?;
        let site = format!("{}[{}]", source_text(&m.receiver), source_text(*first));
        self.constant_bounds_check(index, len, site, span)?;
        let base = self.def(Op::SharedAddr(array), span)?;
        let size = ty.layout().size;
        let addr = self.scaled_addr(AddressSpace::Shared, base, index, size, span)?;
        let place = MemRef {
            space: AddressSpace::Shared,
            addr,
            ty,
            mutable: true,
        };
        match rest {
            [] => self.load_mem(&place, span),
            [v] => {
                let v = self.expr(v)?;
                self.store_mem(&place, v, span)?;
                Ok(Val::Unit)
            }
            _ => err(
                span,
                format!("`{method}` takes the index and at most one value"),
            ),
        }
    }

    /// `m[i]` of an array element.
    fn project_index(&mut self, m: MemRef, i: &syn::ExprIndex) -> Result<MemRef> {
        let span = i.span();
        let ElemType::Array(elem, n) = m.ty else {
            return err(
                i.expr.span(),
                format!("cannot index a `{}`", m.ty.rust_name()),
            );
        };
        let index = self.expr(&i.index)?;
        let index = self.checked_array_index(index, n, source_text(i), i.index.span(), span)?;
        let size = elem.layout().size;
        let addr = self.scaled_addr(m.space, m.addr, index, size, span)?;
        Ok(MemRef {
            addr,
            ty: *elem,
            ..m
        })
    }

    /// `m.field` / `m.0` of a struct or tuple element.
    fn project_field(&mut self, m: MemRef, member: &syn::Member) -> Result<MemRef> {
        let k = match (&m.ty, member) {
            (ElemType::Struct { fields, .. }, syn::Member::Named(n)) => {
                fields.iter().position(|(f, _)| n == f)
            }
            (ElemType::Tuple(items), syn::Member::Unnamed(i)) => {
                Some(i.index as usize).filter(|&k| k < items.len())
            }
            _ => None,
        };
        let Some(k) = k else {
            return err(
                member.span(),
                format!("`{}` has no such field", m.ty.rust_name()),
            );
        };
        let offset = m.ty.offsets()[k];
        let ty = m.ty.members()[k].clone();
        let addr = self.offset_addr(m.space, m.addr, offset, member.span())?;
        Ok(MemRef { addr, ty, ..m })
    }

    /// The value of an element in memory: one load per scalar, in address order.
    pub(super) fn load_mem(&mut self, m: &MemRef, span: Span) -> Result<Val> {
        let mut loaded = Vec::new();
        for (offset, ty) in m.ty.leaves() {
            let addr = self.offset_addr(m.space, m.addr, offset, span)?;
            let op = Op::Load {
                space: m.space,
                ty,
                addr,
                eviction: cuprum_ir::Eviction::Normal,
            };
            loaded.push(self.def(op, span)?);
        }
        let mut leaves = loaded.into_iter();
        self.assemble(&m.ty, &mut leaves, span)
    }

    /// A value of type `ty` from its scalars in address order.
    fn assemble(
        &mut self,
        ty: &ElemType,
        leaves: &mut impl Iterator<Item = Value>,
        span: Span,
    ) -> Result<Val> {
        let mut next = |span| {
            leaves
                .next()
                .ok_or_else(|| syn::Error::new(span, "internal compiler error: element leaves"))
        };
        Ok(match ty {
            ElemType::Scalar(_) => Val::Scalar(next(span)?),
            ElemType::Struct { name, fields } => {
                let mut items = Vec::with_capacity(fields.len());
                for (_, f) in fields {
                    items.push(self.assemble(f, leaves, span)?);
                }
                Val::Struct(name.clone(), items)
            }
            ElemType::Tuple(types) => {
                let mut items = Vec::with_capacity(types.len());
                for t in types {
                    items.push(self.assemble(t, leaves, span)?);
                }
                Val::Tuple(items)
            }
            ElemType::Array(..) => {
                let (elem, dims) =
                    scalar_array(ty).ok_or_else(|| syn::Error::new(span, array_value_help(ty)))?;
                let what = format!("a copy of an element `{}`", ty.rust_name());
                let a = self.new_local_array("element", elem, dims, None, span, what)?;
                let base = self.array_addr(&a, span)?;
                for k in 0..a.count() {
                    let x = next(span)?;
                    let addr = self.local_elem_addr_const(base, elem, k, span)?;
                    self.b.push(Stmt::Store {
                        space: AddressSpace::Local,
                        addr,
                        value: x,
                    });
                }
                Val::Array(a)
            }
        })
    }

    /// Writes `v` over an element in memory: its scalars first, then one store each, back to
    /// back in address order.
    pub(super) fn store_mem(&mut self, m: &MemRef, v: Val, span: Span) -> Result<()> {
        if !m.mutable {
            return err(
                span,
                "cannot write through a shared reference or into a `&[T]`: outputs are \
                 `DisjointSlice<T>` elements from `get_mut`",
            );
        }
        let mut values = Vec::new();
        self.flatten(&m.ty, v, span, &mut values)?;
        if self.inferring() {
            return Ok(());
        }
        let mut addrs = Vec::with_capacity(values.len());
        for (offset, _) in m.ty.leaves() {
            addrs.push(self.offset_addr(m.space, m.addr, offset, span)?);
        }
        for (addr, value) in addrs.into_iter().zip(values) {
            self.b.push(Stmt::Store {
                space: m.space,
                addr,
                value,
            });
        }
        Ok(())
    }

    /// The scalars of `v`, a value of type `ty`, in address order.
    fn flatten(&mut self, ty: &ElemType, v: Val, span: Span, out: &mut Vec<Value>) -> Result<()> {
        let mismatch = |v: &Val| {
            err(
                span,
                format!(
                    "mismatched types: expected `{}`, found {}",
                    ty.rust_name(),
                    describe(v)
                ),
            )
        };
        match (ty, v) {
            (ElemType::Scalar(s), v) => out.push(self.materialize(v, *s, span)?),
            (ElemType::Struct { name, fields }, Val::Struct(n, items))
                if *name == n && items.len() == fields.len() =>
            {
                for ((_, f), item) in fields.iter().zip(items) {
                    self.flatten(f, item, span, out)?;
                }
            }
            (ElemType::Tuple(types), Val::Tuple(items)) if items.len() == types.len() => {
                for (t, item) in types.iter().zip(items) {
                    self.flatten(t, item, span, out)?;
                }
            }
            (ElemType::Array(..), Val::Array(a)) => {
                let Some((elem, dims)) = scalar_array(ty) else {
                    return err(span, array_value_help(ty));
                };
                if let Some((site, _)) = a.infer {
                    self.note_type(site, elem);
                    if a.dims == dims {
                        return Ok(());
                    }
                }
                if a.dims != dims || a.elem != elem {
                    return mismatch(&Val::Array(a));
                }
                let base = self.array_addr(&a, span)?;
                for k in 0..a.count() {
                    let addr = self.local_elem_addr_const(base, elem, k, span)?;
                    let op = Op::Load {
                        space: AddressSpace::Local,
                        ty: elem,
                        addr,
                        eviction: cuprum_ir::Eviction::Normal,
                    };
                    out.push(self.def(op, span)?);
                }
            }
            (_, v) => return mismatch(&v),
        }
        Ok(())
    }
}

/// The scalar type and dimensions of an array of scalars (nested arrays too).
fn scalar_array(ty: &ElemType) -> Option<(S, Vec<u32>)> {
    match ty {
        ElemType::Scalar(s) => Some((*s, Vec::new())),
        ElemType::Array(e, n) => {
            let (s, mut dims) = scalar_array(e)?;
            dims.insert(0, *n);
            Some((s, dims))
        }
        _ => None,
    }
}

fn array_value_help(ty: &ElemType) -> String {
    format!(
        "a whole `{}` cannot be a value in device code (local arrays hold numbers): access \
         its elements in place (`x[i][k].field`)",
        ty.rust_name()
    )
}
