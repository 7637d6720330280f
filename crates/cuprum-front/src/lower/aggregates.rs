//! Aggregates: fixed-size arrays (per-thread local memory, indexed at run time, bounds-checked)
//! and tuples (taken apart into their elements; mutable ones into one variable per element).
//!
//! Rust arrays are values, so binding one to a new name copies it; array expressions are
//! built in place. An array's element type comes from its elements, the `let` annotation, or
//! later uses (`let mut acc = [0.0; 4]; acc[k] += x[k];` makes `acc` an `[f32; 4]`).

use cuprum_ir::{
    AddressSpace, ArrayDecl, BinaryOp, CmpOp, Constant, Op, ScalarType as S, Stmt, Value,
};
use proc_macro2::Span;
use syn::spanned::Spanned;

use super::*;

/// What kind of aggregate a field access looks into.
enum Shape {
    Tuple,
    Struct(String),
    Other,
}

fn base_shape(v: &Val) -> Shape {
    match v {
        Val::Tuple(_) => Shape::Tuple,
        Val::Struct(name, _) => Shape::Struct(name.clone()),
        _ => Shape::Other,
    }
}

/// Arrays longer than this are refused: they would spill a thread's local memory badly.
const MAX_LOCAL_ARRAY: u64 = 16 * 1024;

impl Lowerer<'_> {
    /// `[e; N]` or `[a, b, c]`, with an optional element type from context.
    pub(super) fn array_expr(
        &mut self,
        e: &syn::Expr,
        hint: Option<S>,
        site: Option<u32>,
    ) -> Result<Val> {
        let span = e.span();
        let (items, len): (Vec<Val>, u64) = match e {
            syn::Expr::Repeat(r) => {
                let len = match self.eval_const(&r.len, 0)? {
                    ConstVal::Int(n) if n > 0 && (n as u64) <= MAX_LOCAL_ARRAY => n as u64,
                    _ => {
                        return err(
                            r.len.span(),
                            format!("array lengths must be between 1 and {MAX_LOCAL_ARRAY}"),
                        );
                    }
                };
                (vec![self.expr(&r.expr)?], len)
            }
            syn::Expr::Array(a) => {
                let items = a
                    .elems
                    .iter()
                    .map(|x| self.expr(x))
                    .collect::<Result<Vec<_>>>()?;
                let len = items.len() as u64;
                if len == 0 || len > MAX_LOCAL_ARRAY {
                    return err(
                        span,
                        format!("array lengths must be between 1 and {MAX_LOCAL_ARRAY}"),
                    );
                }
                (items, len)
            }
            other => return err(other.span(), "expected an array expression"),
        };
        // The element type: the hint, a typed element, the site's solution, or a default.
        let typed = items.iter().find_map(|v| match v {
            Val::Scalar(x) => Some(self.ty(*x)),
            _ => None,
        });
        let kind = if items.iter().any(|v| matches!(v, Val::Float(_))) {
            LitKind::Float
        } else {
            LitKind::Int
        };
        let mut infer_site = None;
        let elem = match (hint, typed) {
            (Some(t), _) | (None, Some(t)) => t,
            (None, None) => match site {
                Some(s) => {
                    self.note_kind(s, kind);
                    for v in &items {
                        if let Val::Infer(other, _) = v {
                            self.note_union(s, *other);
                        }
                    }
                    match self.solved(s) {
                        Some(t) => t,
                        None => {
                            infer_site = Some((s, kind));
                            kind.default_type()
                        }
                    }
                }
                None => kind.default_type(),
            },
        };
        if let Some(s) = site {
            self.note_type_unless(s, elem, infer_site.is_some());
        }
        let array = self.b.local_array(ArrayDecl {
            name: "array".into(),
            elem,
            len: len as u32,
        });
        let value = Val::Array {
            array,
            elem,
            len: len as u32,
            infer: infer_site,
        };
        if infer_site.is_some() {
            return Ok(value); // the infer run only needs the array's shape
        }
        let base = self.def(Op::LocalAddr(array), span)?;
        if let [item] = items.as_slice()
            && len > 1
        {
            let x = self.materialize(item.clone(), elem, span)?;
            self.fill_local(base, elem, len as u32, x, span)?;
        } else {
            for (k, item) in items.into_iter().enumerate() {
                let x = self.materialize(item, elem, span)?;
                let addr = self.local_elem_addr_const(base, elem, k as u32, span)?;
                self.b.push(Stmt::Store {
                    space: AddressSpace::Local,
                    addr,
                    value: x,
                });
            }
        }
        Ok(value)
    }

    fn note_type_unless(&mut self, site: u32, ty: S, unknown: bool) {
        if !unknown {
            self.note_type(site, ty);
        }
    }

    fn local_elem_addr_const(&mut self, base: Value, elem: S, k: u32, span: Span) -> Result<Value> {
        let offset = self.constant(Constant::u32(k * elem.size_bytes()));
        self.def(Op::Binary(BinaryOp::Add, base, offset), span)
    }

    /// Stores `value` into every element, with a loop (short arrays are written out).
    fn fill_local(
        &mut self,
        base: Value,
        elem: S,
        len: u32,
        value: Value,
        span: Span,
    ) -> Result<()> {
        if len <= 8 {
            for k in 0..len {
                let addr = self.local_elem_addr_const(base, elem, k, span)?;
                self.b.push(Stmt::Store {
                    space: AddressSpace::Local,
                    addr,
                    value,
                });
            }
            return Ok(());
        }
        self.counted_loop(len, span, |this, k| {
            let addr = this.local_elem_addr(base, elem, k, span)?;
            this.b.push(Stmt::Store {
                space: AddressSpace::Local,
                addr,
                value,
            });
            Ok(())
        })
    }

    /// `for k in 0..len { body(k) }` with a `u32` counter.
    fn counted_loop(
        &mut self,
        len: u32,
        span: Span,
        body: impl FnOnce(&mut Self, Value) -> Result<()>,
    ) -> Result<()> {
        let counter = self.b.var("k", S::U32);
        let zero = self.constant(Constant::u32(0));
        self.b.push(Stmt::WriteVar {
            var: counter,
            value: zero,
        });
        let end = self.constant(Constant::u32(len));
        let one = self.constant(Constant::u32(1));
        self.loop_body(|this| {
            let k = this.def(Op::ReadVar(counter), span)?;
            let more = this.def(Op::Compare(CmpOp::Lt, k, end), span)?;
            this.break_unless(more);
            let next = this.def(Op::Binary(BinaryOp::Add, k, one), span)?;
            this.b.push(Stmt::WriteVar {
                var: counter,
                value: next,
            });
            body(this, k)
        })
    }

    fn local_elem_addr(&mut self, base: Value, elem: S, k: Value, span: Span) -> Result<Value> {
        let size = self.constant(Constant::u32(elem.size_bytes()));
        let offset = self.def(Op::Binary(BinaryOp::Mul, k, size), span)?;
        self.def(Op::Binary(BinaryOp::Add, base, offset), span)
    }

    /// A copy of array `v` in a new local array (Rust's move/copy of an array value).
    pub(super) fn copy_array(&mut self, v: &Val, span: Span) -> Result<Val> {
        let &Val::Array {
            array: src,
            elem,
            len,
            infer,
        } = v
        else {
            return err(span, "expected an array");
        };
        let array = self.b.local_array(ArrayDecl {
            name: "array".into(),
            elem,
            len,
        });
        if infer.is_none() {
            self.copy_local(src, array, elem, len, span)?;
        }
        Ok(Val::Array {
            array,
            elem,
            len,
            infer,
        })
    }

    pub(super) fn copy_local(
        &mut self,
        src: u32,
        dst: u32,
        elem: S,
        len: u32,
        span: Span,
    ) -> Result<()> {
        let from = self.def(Op::LocalAddr(src), span)?;
        let to = self.def(Op::LocalAddr(dst), span)?;
        self.counted_loop(len, span, |this, k| {
            let a = this.local_elem_addr(from, elem, k, span)?;
            let x = this.def(
                Op::Load {
                    space: AddressSpace::Local,
                    ty: elem,
                    addr: a,
                },
                span,
            )?;
            let b = this.local_elem_addr(to, elem, k, span)?;
            this.b.push(Stmt::Store {
                space: AddressSpace::Local,
                addr: b,
                value: x,
            });
            Ok(())
        })
    }

    /// `array[index]` as a place: bounds-checked against the array's length.
    pub(super) fn array_place(
        &mut self,
        v: &Val,
        index_expr: &syn::Expr,
        site: String,
    ) -> Result<Place> {
        let &Val::Array {
            array,
            elem,
            len,
            infer,
        } = v
        else {
            return err(index_expr.span(), "expected an array");
        };
        let span = index_expr.span();
        let index = self.expr(index_expr)?;
        if let Some((s, kind)) = infer {
            // Infer run: the element type is what later uses say.
            let _ = self.materialize(index, S::U64, span)?;
            return Ok(Place::InferVar(s, kind));
        }
        let index = self.materialize(index, S::U64, span).map_err(|e| {
            syn::Error::new(e.span(), format!("{e} (arrays are indexed by `usize`)"))
        })?;
        self.constant_bounds_check(index, len, site, span)?;
        let base = self.def(Op::LocalAddr(array), span)?;
        let k = self.cast_value(index, S::U32, span)?;
        let addr = self.local_elem_addr(base, elem, k, span)?;
        Ok(Place::Mem {
            space: AddressSpace::Local,
            addr,
            elem,
        })
    }

    /// A tuple bound with `let mut`: one variable per (scalar) element.
    pub(super) fn mutable_tuple(
        &mut self,
        name: &str,
        items: Vec<Val>,
        span: Span,
    ) -> Result<Binding> {
        let mut out = Vec::with_capacity(items.len());
        for (k, item) in items.into_iter().enumerate() {
            out.push(match item {
                Val::Tuple(inner) => self.mutable_tuple(&format!("{name}.{k}"), inner, span)?,
                v @ Val::Array { .. } => Binding::Val(self.copy_array(&v, span)?),
                v => {
                    let x = self.scalar(v, span)?;
                    let ty = self.ty(x);
                    let var = self.b.var(format!("{name}.{k}"), ty);
                    self.b.push(Stmt::WriteVar { var, value: x });
                    Binding::Var {
                        var,
                        ty,
                        mutable: true,
                    }
                }
            });
        }
        Ok(Binding::Tuple(out))
    }

    /// A struct bound with `let mut`: one variable per field, in declaration order.
    pub(super) fn mutable_struct(
        &mut self,
        name: &str,
        struct_name: String,
        items: Vec<Val>,
        span: Span,
    ) -> Result<Binding> {
        match self.mutable_tuple(name, items, span)? {
            Binding::Tuple(fields) => Ok(Binding::Struct(struct_name, fields)),
            _ => err(span, "internal compiler error: struct fields"),
        }
    }

    /// The current value of a binding (reading every variable of a mutable tuple).
    pub(super) fn read_binding(&mut self, b: &Binding, span: Span) -> Result<Val> {
        Ok(match b {
            Binding::Val(v) => v.clone(),
            Binding::Var { var, .. } => Val::Scalar(self.def(Op::ReadVar(*var), span)?),
            Binding::InferVar { site, kind } => Val::Infer(*site, *kind),
            Binding::Tuple(items) => {
                let mut out = Vec::with_capacity(items.len());
                for item in items {
                    out.push(self.read_binding(item, span)?);
                }
                Val::Tuple(out)
            }
            Binding::Struct(name, items) => {
                let mut out = Vec::with_capacity(items.len());
                for item in items {
                    out.push(self.read_binding(item, span)?);
                }
                Val::Struct(name.clone(), out)
            }
        })
    }

    /// `tuple.N` and `record.field`.
    pub(super) fn field(&mut self, f: &syn::ExprField) -> Result<Val> {
        let base = self.expr(&f.base)?;
        let index = self.member_index(&base_shape(&base), &f.member)?;
        match base {
            Val::Tuple(items) | Val::Struct(_, items) => items
                .get(index)
                .cloned()
                .ok_or_else(|| syn::Error::new(f.member.span(), "no such field")),
            other => err(f.base.span(), format!("no fields on {}", describe(&other))),
        }
    }

    /// The position of a tuple element or struct field.
    fn member_index(&self, shape: &Shape, member: &syn::Member) -> Result<usize> {
        match (member, shape) {
            (syn::Member::Unnamed(i), Shape::Tuple) => Ok(i.index as usize),
            (syn::Member::Named(n), Shape::Struct(name)) => {
                let def = self.info.structs.iter().find(|s| s.ident == name.as_str());
                def.and_then(|d| d.fields.iter().position(|f| f.ident.as_ref() == Some(n)))
                    .ok_or_else(|| {
                        syn::Error::new(n.span(), format!("`{name}` has no field `{n}`"))
                    })
            }
            (m, _) => err(m.span(), "no such field"),
        }
    }

    /// `Name { field: value, .. }` for a struct of the module (every field given).
    pub(super) fn struct_expr(&mut self, st: &syn::ExprStruct) -> Result<Val> {
        let name = st
            .path
            .segments
            .last()
            .map(|s| s.ident.to_string())
            .unwrap_or_default();
        let Some(def) = self.info.structs.iter().find(|s| s.ident == name).cloned() else {
            return err(
                st.path.span(),
                format!("`{name}` is not a struct of this module"),
            );
        };
        // `..base`: fields not given come from `base`, a value of the same struct.
        let base = match &st.rest {
            Some(rest) => match self.expr(rest)? {
                Val::Struct(n, items) if n == name => Some(items),
                other => {
                    return err(
                        rest.span(),
                        format!("`..` needs a `{name}`, found {}", describe(&other)),
                    );
                }
            },
            None => None,
        };
        let mut items = Vec::new();
        for (k, field) in def.fields.iter().enumerate() {
            let fname = field.ident.as_ref();
            let given = st
                .fields
                .iter()
                .find(|fv| matches!(&fv.member, syn::Member::Named(n) if Some(n) == fname));
            match (given, &base) {
                (Some(given), _) => {
                    let v = self.expr(&given.expr)?;
                    items.push(self.field_value(v, &field.ty, given.expr.span())?);
                }
                (None, Some(base)) => items.push(base[k].clone()),
                (None, None) => {
                    return err(
                        st.span(),
                        format!(
                            "missing field `{}`",
                            fname.map(|i| i.to_string()).unwrap_or_default()
                        ),
                    );
                }
            }
        }
        Ok(Val::Struct(name, items))
    }

    /// A value converted to a field's declared type (a scalar or another struct).
    pub(super) fn field_value(&mut self, v: Val, ty: &syn::Type, span: Span) -> Result<Val> {
        if crate::types::struct_named(ty, &self.info.structs).is_some() {
            return match v {
                s @ Val::Struct(..) => Ok(s),
                other => err(
                    span,
                    format!("expected a struct, found {}", describe(&other)),
                ),
            };
        }
        let ty = self.resolve_scalar(ty)?;
        Ok(Val::Scalar(self.materialize(v, ty, span)?))
    }

    /// The binding that `tuple.N` (or a nested `tuple.N.M`) names, for assignment.
    pub(super) fn field_binding(&self, f: &syn::ExprField) -> Result<Binding> {
        let base = match &*f.base {
            syn::Expr::Path(p) => {
                let name = p
                    .path
                    .get_ident()
                    .map(|i| i.to_string())
                    .unwrap_or_default();
                self.lookup(&name)
                    .cloned()
                    .ok_or_else(|| syn::Error::new(p.span(), format!("cannot find `{name}`")))?
            }
            syn::Expr::Field(inner) => self.field_binding(inner)?,
            other => return err(other.span(), "assign to a field of a named variable"),
        };
        let (shape, items) = match base {
            Binding::Tuple(items) => (Shape::Tuple, items),
            Binding::Struct(name, items) => (Shape::Struct(name), items),
            _ => {
                return err(
                    f.span(),
                    "cannot assign to a field of an immutable value: declare it with `let mut`",
                );
            }
        };
        let index = self.member_index(&shape, &f.member)?;
        items
            .get(index)
            .cloned()
            .ok_or_else(|| syn::Error::new(f.member.span(), "no such field"))
    }

    /// Writes a whole tuple or array value into a mutable binding.
    pub(super) fn assign_binding(
        &mut self,
        target: &Binding,
        value: Val,
        span: Span,
    ) -> Result<()> {
        match (target, value) {
            (Binding::Struct(a, items), Val::Struct(b, values))
                if *a == b && items.len() == values.len() =>
            {
                for (t, v) in items.iter().zip(values) {
                    self.assign_binding(t, v, span)?;
                }
                Ok(())
            }
            (Binding::Tuple(items), Val::Tuple(values)) if items.len() == values.len() => {
                for (t, v) in items.iter().zip(values) {
                    self.assign_binding(t, v, span)?;
                }
                Ok(())
            }
            (Binding::Var { var, ty, .. }, v) => {
                let x = self.materialize(v, *ty, span)?;
                self.b.push(Stmt::WriteVar {
                    var: *var,
                    value: x,
                });
                Ok(())
            }
            (Binding::InferVar { site, .. }, v) => {
                match v {
                    Val::Scalar(x) => {
                        let ty = self.ty(x);
                        self.note_type(*site, ty);
                    }
                    Val::Infer(other, _) => self.note_union(*site, other),
                    _ => {}
                }
                Ok(())
            }
            (
                Binding::Val(Val::Array {
                    array: dst,
                    elem,
                    len,
                    infer,
                }),
                Val::Array {
                    array: src,
                    len: src_len,
                    ..
                },
            ) => {
                if *len != src_len {
                    return err(span, "arrays of different lengths");
                }
                if infer.is_none() {
                    self.copy_local(src, *dst, *elem, *len, span)?;
                }
                Ok(())
            }
            (_, v) => err(span, format!("cannot assign {} here", describe(&v))),
        }
    }
}
