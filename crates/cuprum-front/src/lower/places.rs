//! Places: the locations an assignment writes or a read loads (`x`, `*r`, `t.0`,
//! `slice[i]`, `array[i]`, `shared[i]`), resolved to a variable or a typed address, and the
//! bounds-checked addresses of slice elements. Kept apart from the expressions (`mod.rs`)
//! because every kind of storage (variables, global, shared and local memory) meets here.

use cuprum_ir::{AddressSpace, BinaryOp, Constant, Op, ScalarType as S, SliceAccess, Stmt, Value};
use syn::spanned::Spanned;

use super::*;

impl Lowerer<'_> {
    pub(super) fn place(&mut self, e: &syn::Expr) -> Result<Place> {
        if let Some(m) = self.mem_path(e)? {
            let Some(elem) = m.ty.scalar() else {
                return err(
                    e.span(),
                    format!(
                        "`{}` is a whole `{}`: assign it with `=`",
                        source_text(e),
                        m.ty.rust_name()
                    ),
                );
            };
            if !m.mutable {
                return err(
                    e.span(),
                    "cannot assign through a shared reference or into a `&[T]`",
                );
            }
            return Ok(Place::Mem {
                space: m.space,
                addr: m.addr,
                elem,
            });
        }
        match e {
            syn::Expr::Paren(p) => self.place(&p.expr),
            syn::Expr::Path(p) => {
                let name = p
                    .path
                    .get_ident()
                    .map(|i| i.to_string())
                    .unwrap_or_default();
                match self.lookup(&name).cloned() {
                    Some(Binding::Var {
                        var,
                        ty,
                        mutable: true,
                    }) => Ok(Place::Var(var, ty)),
                    Some(Binding::InferVar { site, kind, .. }) => Ok(Place::InferVar(site, kind)),
                    Some(Binding::Val(Val::ElemRef { .. } | Val::AggRef(_))) => err(
                        p.span(),
                        format!("`{name}` is a reference to an element: write `*{name} = ...`"),
                    ),
                    Some(Binding::Val(
                        v @ (Val::Ptr { .. }
                        | Val::Slice(_)
                        | Val::Atomic(_)
                        | Val::Shared { .. }
                        | Val::SharedElems { .. }
                        | Val::LocalElems { .. }
                        | Val::Index1(_)
                        | Val::Index2(..)
                        | Val::Index3(..)),
                    )) => err(
                        p.span(),
                        format!(
                            "cannot assign to `{name}`: {} cannot be reassigned in device code; \
                             bind the new value to a new name with `let`",
                            describe(&v)
                        ),
                    ),
                    Some(_) => err(
                        p.span(),
                        format!(
                            "cannot assign twice to immutable variable `{name}`: declare it \
                             `let mut {name}` (or `mut {name}: T` for a parameter)"
                        ),
                    ),
                    None => err(p.span(), format!("cannot find `{name}` in device code")),
                }
            }
            syn::Expr::Unary(syn::ExprUnary {
                op: syn::UnOp::Deref(_),
                expr,
                ..
            }) => match self.place_binding(expr)? {
                // A reference passed to a helper: the caller's variable itself.
                Binding::Var {
                    var,
                    ty,
                    mutable: true,
                } => Ok(Place::Var(var, ty)),
                Binding::InferVar { site, kind } => Ok(Place::InferVar(site, kind)),
                Binding::Val(v) => self.deref_place(v, e, expr),
                _ => err(
                    e.span(),
                    "assign through a reference to a scalar here (`*r = x`), or to a field",
                ),
            },
            syn::Expr::Index(i) => self.index_place(i),
            syn::Expr::Field(f) => match self.field_binding(f)? {
                Binding::Var {
                    var,
                    ty,
                    mutable: true,
                } => Ok(Place::Var(var, ty)),
                Binding::InferVar { site, kind } => Ok(Place::InferVar(site, kind)),
                _ => err(f.span(), "assign to a scalar field of a `let mut` tuple"),
            },
            other => err(
                other.span(),
                "this is not an assignable place in device code",
            ),
        }
    }

    pub(super) fn read_place(&mut self, place: Place, span: proc_macro2::Span) -> Result<Val> {
        Ok(match place {
            Place::Var(var, _) => Val::Scalar(self.def(Op::ReadVar(var), span)?),
            Place::InferVar(site, kind) => Val::Infer(site, kind),
            Place::Mem { space, addr, elem } => Val::Scalar(self.def(
                Op::Load {
                    space,
                    ty: elem,
                    addr,
                    eviction: cuprum_ir::Eviction::Normal,
                },
                span,
            )?),
            Place::Reg { vars, index, .. } => {
                Val::Scalar(self.read_register_choice(&vars, index, span)?)
            }
            Place::Cluster { addr, rank, elem } => {
                Val::Scalar(self.cluster_read(addr, rank, elem, span)?)
            }
        })
    }

    pub(super) fn write_place(
        &mut self,
        place: Place,
        v: Val,
        span: proc_macro2::Span,
    ) -> Result<()> {
        match place {
            Place::Var(var, ty) => {
                let x = self.materialize(v, ty, span)?;
                self.b.push(Stmt::WriteVar { var, value: x });
            }
            Place::InferVar(site, _) => match v {
                Val::Scalar(x) => {
                    let ty = self.ty(x);
                    self.note_type(site, ty)
                }
                Val::Infer(other, _) => self.note_union(site, other),
                _ => {}
            },
            Place::Mem { space, addr, elem } => {
                let x = self.materialize(v, elem, span)?;
                self.b.push(Stmt::Store {
                    space,
                    addr,
                    value: x,
                });
            }
            Place::Reg { vars, index, elem } => {
                let x = self.materialize(v, elem, span)?;
                self.write_register_choice(&vars, index, x, span)?;
            }
            Place::Cluster { addr, rank, elem } => {
                let x = self.materialize(v, elem, span)?;
                self.cluster_write(addr, rank, x, span)?;
            }
        }
        Ok(())
    }

    /// `slice[index]`, bounds-checked.
    pub(super) fn index_place(&mut self, i: &syn::ExprIndex) -> Result<Place> {
        match self.indexed(i)? {
            arrays::Indexed::Element(place) => Ok(place),
            arrays::Indexed::Row(row) => err(
                i.span(),
                format!(
                    "`{}` is a row `{}` of an array of arrays, not a number: index it again \
                     (`{}[j]`) or assign it a whole row",
                    source_text(i),
                    row.type_name(),
                    source_text(i)
                ),
            ),
        }
    }

    /// `slice[index]` (bounds-checked) or `array[index]`: an element, or a row of an array
    /// of arrays.
    pub(super) fn indexed(&mut self, i: &syn::ExprIndex) -> Result<arrays::Indexed> {
        if let Some(place) = self.phased_index(i)? {
            return Ok(arrays::Indexed::Element(place));
        }
        let param = match self.expr(&i.expr)? {
            Val::Slice(p) => p,
            Val::Array(a) => return self.index_array(&a, &i.index, source_text(i)),
            Val::Shared { array, elem, len } => {
                self.require_unsafe_shared(i)?;
                let index = self.expr(&i.index)?;
                let index = self.materialize(index, S::U64, i.index.span())?;
                let addr = self.shared_addr(array, elem, len, index, source_text(i), i.span())?;
                return Ok(arrays::Indexed::Element(Place::Mem {
                    space: AddressSpace::Shared,
                    addr,
                    elem,
                }));
            }
            other => {
                return err(
                    i.expr.span(),
                    format!("cannot index {} in device code", describe(&other)),
                );
            }
        };
        let (elem, access) = self.slice_param(param);
        let index_val = self.expr(&i.index)?;
        if matches!(index_val, Val::Index1(_)) {
            return err(
                i.index.span(),
                "slices are indexed by `usize`: use `.get()` on the thread index",
            );
        }
        let index = self
            .materialize(index_val, S::U64, i.index.span())
            .map_err(|e| {
                syn::Error::new(e.span(), format!("{e} (slices are indexed by `usize`)"))
            })?;
        let site = source_text(i);
        let addr = self.checked_element_addr(param, index, elem, site)?;
        if access == SliceAccess::Disjoint {
            return err(i.span(), disjoint::NOT_INDEXED);
        }
        Ok(arrays::Indexed::Element(Place::Mem {
            space: AddressSpace::Global,
            addr,
            elem,
        }))
    }

    pub(super) fn slice_param(&self, param: u32) -> (S, SliceAccess) {
        match self.b.kernel().params.get(param as usize).map(|p| p.kind) {
            Some(cuprum_ir::ParamKind::Slice { elem, access }) => (elem, access),
            _ => (S::U8, SliceAccess::ReadOnly),
        }
    }

    /// Emits `if !(index < len) { trap }` and returns the element's address.
    pub(super) fn checked_element_addr(
        &mut self,
        param: u32,
        index: Value,
        elem: S,
        site: String,
    ) -> Result<Value> {
        self.bounds_check(param, index, site, proc_macro2::Span::call_site())?;
        self.element_addr(param, index, elem)
    }

    pub(super) fn element_addr(&mut self, param: u32, index: Value, elem: S) -> Result<Value> {
        let span = proc_macro2::Span::call_site();
        let base = self.def(Op::SliceBase(param), span)?;
        let size = self.constant(Constant::u64(elem.size_bytes() as u64));
        let offset = self.def(Op::Binary(BinaryOp::Mul, index, size), span)?;
        self.def(Op::Binary(BinaryOp::Add, base, offset), span)
    }
}
