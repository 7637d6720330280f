//! Aggregates: tuples (taken apart into their elements; mutable ones into one variable per
//! element) and structs of the module (the same, field by field). Local arrays have their own
//! module, `arrays`.

use cuprum_ir::{Op, Stmt};
use proc_macro2::Span;
use syn::spanned::Spanned;

use super::*;

/// What kind of aggregate a field access looks into.
pub(super) enum Shape {
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

impl Lowerer<'_> {
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
                Val::Struct(sname, inner) => {
                    self.mutable_struct(&format!("{name}.{k}"), sname, inner, span)?
                }
                v @ Val::Array(_) => Binding::Val(self.copy_array(&v, span)?),
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
            &Binding::Ptr {
                var,
                elem,
                mutable,
                space,
            } => Val::Ptr {
                addr: self.def(Op::ReadVar(var), span)?,
                elem,
                mutable,
                space,
            },
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
    pub(super) fn member_index(&self, shape: &Shape, member: &syn::Member) -> Result<usize> {
        match (member, shape) {
            (syn::Member::Unnamed(i), Shape::Tuple) => Ok(i.index as usize),
            (syn::Member::Named(n), Shape::Struct(name)) => {
                let def = self.instance_def(name);
                def.and_then(|d| {
                    d.def
                        .fields
                        .iter()
                        .position(|f| f.ident.as_ref() == Some(n))
                })
                .ok_or_else(|| syn::Error::new(n.span(), format!("`{name}` has no field `{n}`")))
            }
            (m, _) => err(m.span(), "no such field"),
        }
    }

    /// `Name { field: value, .. }` for a struct of the module (every field given, or the
    /// rest from `..base`). A generic struct's arguments come from the path, where the value
    /// goes, or the field values (see `instances`).
    pub(super) fn struct_expr(&mut self, st: &syn::ExprStruct) -> Result<Val> {
        let expected = self.expected.take();
        let name = st
            .path
            .segments
            .last()
            .map(|s| s.ident.to_string())
            .unwrap_or_default();
        let Some(decl) = self.info.structs.iter().find(|s| s.ident == name).cloned() else {
            return err(
                st.path.span(),
                format!("`{name}` is not a struct of this module"),
            );
        };
        // `..base`: fields not given come from `base`, a value of the same struct.
        let base = match &st.rest {
            Some(rest) => match self.expr(rest)? {
                Val::Struct(n, items) if crate::generic_structs::base_name(&n) == name => {
                    Some((n, items))
                }
                other => {
                    return err(
                        rest.span(),
                        format!("`..` needs a `{name}`, found {}", describe(&other)),
                    );
                }
            },
            None => None,
        };
        let given: Vec<Option<&syn::FieldValue>> = decl
            .fields
            .iter()
            .map(|field| {
                st.fields.iter().find(|fv| {
                    matches!(&fv.member, syn::Member::Named(n) if Some(n) == field.ident.as_ref())
                })
            })
            .collect();
        // A generic struct whose instance the path or the binding names gives its field
        // values their types; otherwise the values name the instance.
        let known = if crate::generic_structs::is_generic(&decl) {
            let path = self.struct_instance(&syn::Type::Path(syn::TypePath {
                qself: None,
                path: st.path.clone(),
            }));
            let hinted = expected
                .as_ref()
                .and_then(|t| self.struct_instance(t))
                .filter(|i| crate::generic_structs::base_name(&i.name) == name);
            path.or(hinted)
                .or_else(|| base.as_ref().and_then(|(n, _)| self.instance_def(n)))
        } else {
            self.instance_def(&name)
        };
        let mut values: Vec<Option<Val>> = Vec::with_capacity(given.len());
        for (k, g) in given.iter().enumerate() {
            let Some(g) = g else {
                values.push(None);
                continue;
            };
            if let Some(inst) = &known
                && let Some(field) = inst.def.fields.iter().nth(k)
                && crate::types::struct_named(&field.ty, &self.info.structs).is_some()
            {
                self.expected = Some(field.ty.clone());
            }
            let v = self.expr(&g.expr);
            self.expected = None;
            values.push(Some(v?));
        }
        let inst = match known {
            Some(inst) => inst,
            None => {
                let refs: Vec<Option<&Val>> = values.iter().map(Option::as_ref).collect();
                self.struct_expr_instance(
                    &st.path,
                    &decl,
                    &refs,
                    base.as_ref().map(|(n, _)| n.as_str()),
                    expected.as_ref(),
                    st.span(),
                )?
            }
        };
        let mut items = Vec::new();
        for (k, (field, value)) in inst.def.fields.iter().zip(values).enumerate() {
            match (value, &base) {
                (Some(v), _) => {
                    let span = given[k].map_or(st.span(), |g| g.expr.span());
                    items.push(self.field_value(v, &field.ty, span)?);
                }
                (None, Some((_, base))) => items.push(base[k].clone()),
                (None, None) => {
                    return err(
                        st.span(),
                        format!(
                            "missing field `{}`",
                            field
                                .ident
                                .as_ref()
                                .map(|i| i.to_string())
                                .unwrap_or_default()
                        ),
                    );
                }
            }
        }
        Ok(Val::Struct(inst.name, items))
    }

    /// `v` with every array inside it (a field of a struct, nested too) copied, as binding a
    /// struct to a new name copies it in Rust; numbers are values already.
    pub(super) fn copy_array_fields(&mut self, v: Val, span: Span) -> Result<Val> {
        match v {
            Val::Struct(name, items) => {
                let mut out = Vec::with_capacity(items.len());
                for item in items {
                    out.push(self.copy_array_fields(item, span)?);
                }
                Ok(Val::Struct(name, out))
            }
            v @ Val::Array(_) => self.copy_array(&v, span),
            other => Ok(other),
        }
    }

    /// A value converted to a field's declared type (a number, another struct, or an array
    /// of numbers, which is copied, as Rust copies arrays).
    pub(super) fn field_value(&mut self, v: Val, ty: &syn::Type, span: Span) -> Result<Val> {
        if let Some(def) = self.struct_instance(ty) {
            return match v {
                Val::Struct(name, items) if def.name == name => Ok(Val::Struct(name, items)),
                Val::AggRef(m) => match self.load_mem(&m, span)? {
                    Val::Struct(name, items) if def.name == name => Ok(Val::Struct(name, items)),
                    other => self.field_value(other, ty, span),
                },
                other => err(
                    span,
                    format!(
                        "mismatched types: expected a `{}`, found {}",
                        def.name,
                        describe(&other)
                    ),
                ),
            };
        }
        if let syn::Type::Array(_) = ty
            && let Some((elem, dims)) = self.array_type(&self.concrete_type(ty))?
        {
            return match v {
                Val::Array(a) if a.dims == dims && (a.elem == elem || a.infer.is_some()) => {
                    if let Some((open, _)) = a.infer {
                        self.note_type(open, elem);
                    }
                    self.copy_array(&Val::Array(a), span)
                }
                other => err(
                    span,
                    format!(
                        "mismatched types: expected `{}`, found {}",
                        source_text(ty),
                        describe(&other)
                    ),
                ),
            };
        }
        let ty = self
            .resolve_scalar(ty)
            .map_err(|_| syn::Error::new(ty.span(), crate::types::STRUCT_FIELD_HELP))?;
        Ok(Val::Scalar(self.materialize(v, ty, span)?))
    }

    /// The struct `name` rebuilt from its scalar fields in the order of
    /// [`crate::types::struct_leaves`] (a kernel parameter's IR parameters).
    pub(super) fn assemble_struct(
        &mut self,
        name: &str,
        leaves: &mut impl Iterator<Item = Val>,
        span: Span,
    ) -> Result<Val> {
        let Some(def) = self.instance_def(name) else {
            return err(span, format!("`{name}` is not a struct of this module"));
        };
        let mut items = Vec::with_capacity(def.def.fields.len());
        for field in &def.def.fields {
            match crate::types::struct_named(&field.ty, &self.info.structs) {
                Some(inner) => {
                    items.push(self.assemble_struct(&inner.name, leaves, span)?);
                }
                None => match leaves.next() {
                    Some(v) => items.push(v),
                    None => return err(span, "internal compiler error: struct fields"),
                },
            }
        }
        Ok(Val::Struct(name.to_string(), items))
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
            (Binding::Ptr { var, .. }, Val::Scalar(addr)) if self.ty(addr) == S::U64 => {
                self.b.push(Stmt::WriteVar {
                    var: *var,
                    value: addr,
                });
                Ok(())
            }
            (Binding::Ptr { var, .. }, Val::Ptr { addr, .. }) => {
                self.b.push(Stmt::WriteVar {
                    var: *var,
                    value: addr,
                });
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
            (Binding::Val(Val::Array(target)), v) => {
                let target = target.clone();
                self.assign_array(&target, v, span)
            }
            (_, v) => err(span, format!("cannot assign {} here", describe(&v))),
        }
    }
}
