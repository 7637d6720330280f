//! References to values (`&x`, `&mut keys[i]`, `&mut p.vel`) passed to helpers and methods.
//!
//! Helpers are inlined, so a reference needs no pointer: it is lowered as the place it names,
//! found once at the call (an index is evaluated there, as Rust does) and bound to the
//! parameter's name. A variable or a `let mut` struct is bound as that very binding (its
//! variables are the caller's); an element of a local array, of shared memory or of a slice
//! becomes an `ElemRef` to its address in that space. Reading the parameter (`*a`, or `a`
//! where Rust auto-derefs) reads the place; `*a = x` writes it. rustc checks the host copy of
//! every helper and kernel, so the borrow rules hold: two `&mut` to one place, or a write
//! through `&T`, never reach this lowering.
//!
//! What cannot be a place is refused: a reference returned from a helper, kept in a struct,
//! or re-pointed (`let mut r = &mut x`).

use cuprum_ir::Op;
use proc_macro2::Span;
use syn::spanned::Spanned;

use super::*;

/// Where references to values may appear in device code, for the errors elsewhere.
pub(super) const WHERE_REFERENCES: &str = "a reference to a value is supported as an argument \
     of a device helper or method (`swap(&mut a, &mut b)`, `update(&mut keys[i])`, `&mut p.vel`) \
     and as `let r = &mut x;`; helpers are inlined, so the reference is the place itself. Return \
     or store the value instead of a reference to it";

/// An argument of an inlined helper: a value, or the place a reference names.
pub(super) enum Arg {
    Value(Val),
    Place(Binding),
}

impl Lowerer<'_> {
    /// The place that the operand of `&` or `&mut` names, as a binding: the caller's own
    /// binding for a name or a field, an element reference for an element; anything else
    /// (a temporary, `&(a + b)`) is evaluated to a value.
    pub(super) fn place_binding(&mut self, e: &syn::Expr) -> Result<Binding> {
        match e {
            syn::Expr::Paren(p) => self.place_binding(&p.expr),
            syn::Expr::Group(g) => self.place_binding(&g.expr),
            // `&mut *r` and `&mut &mut x` name what `r` names.
            syn::Expr::Reference(r) => self.place_binding(&r.expr),
            syn::Expr::Unary(syn::ExprUnary {
                op: syn::UnOp::Deref(_),
                expr,
                ..
            }) => match self.place_binding(expr)? {
                // `&*cell_ptr`: the atomic cell, in `unsafe` code only.
                Binding::Val(v @ Val::AtomicCell { ptr: true, .. }) => {
                    Ok(Binding::Val(self.deref_cell_pointer(v, e.span())?))
                }
                place => Ok(place),
            },
            syn::Expr::Path(p) if p.path.get_ident().is_some() => {
                let name = p
                    .path
                    .get_ident()
                    .map(|i| i.to_string())
                    .unwrap_or_default();
                match self.lookup(&name).cloned() {
                    Some(b) => Ok(b),
                    None => Ok(Binding::Val(self.expr(e)?)),
                }
            }
            // An element of an array or struct in memory, or a part of one (`ps[i]`,
            // `ps[i].velocity`, `p.pos` of a `get_mut` reference): the memory itself.
            syn::Expr::Field(_) | syn::Expr::Index(_) if let Some(m) = self.mem_path(e)? => {
                Ok(Binding::Val(match m.ty {
                    crate::layout::ElemType::Scalar(elem) => Val::ElemRef {
                        space: m.space,
                        addr: m.addr,
                        elem,
                        mutable: m.mutable,
                    },
                    _ => Val::AggRef(m),
                }))
            }
            syn::Expr::Field(f) => {
                let base = self.place_binding(&f.base)?;
                self.member_binding(base, f)
            }
            syn::Expr::Index(i) => Ok(match self.indexed(i)? {
                arrays::Indexed::Element(place) => place_as_binding(place, i.span())?,
                arrays::Indexed::Row(row) => Binding::Val(Val::Array(row)),
            }),
            other => Ok(Binding::Val(self.expr(other)?)),
        }
    }

    /// `mem::swap(a, b)`: the places the two references name exchange their values (both
    /// read, then both written). rustc checks the host copy, so they are two distinct
    /// `&mut` places of one type.
    pub(super) fn mem_swap(&mut self, a: &syn::Expr, b: &syn::Expr, span: Span) -> Result<Val> {
        let (pa, pb) = (self.place_binding(a)?, self.place_binding(b)?);
        for (place, e) in [(&pa, a), (&pb, b)] {
            if matches!(place, Binding::Val(Val::Array(_) | Val::AggRef(_))) {
                return err(
                    e.span(),
                    "`mem::swap` exchanges numbers and `let mut` structs and tuples; swap the \
                     elements of arrays (or of structs in memory) one by one",
                );
            }
        }
        let (va, vb) = (
            self.read_referent(&pa, span)?,
            self.read_referent(&pb, span)?,
        );
        self.write_referent(&pa, vb, a)?;
        self.write_referent(&pb, va, b)?;
        Ok(Val::Unit)
    }

    /// `mem::replace(dest, value)`: the place `dest` names gets `value`; the call's value is
    /// what the place held.
    pub(super) fn mem_replace(
        &mut self,
        dest: &syn::Expr,
        value: &syn::Expr,
        span: Span,
    ) -> Result<Val> {
        let place = self.place_binding(dest)?;
        if matches!(place, Binding::Val(Val::Array(_) | Val::AggRef(_))) {
            return err(
                dest.span(),
                "`mem::replace` replaces numbers and `let mut` structs and tuples; replace the \
                 elements of arrays (or of structs in memory) one by one",
            );
        }
        let old = self.read_referent(&place, span)?;
        let new = self.expr(value)?;
        self.write_referent(&place, new, dest)?;
        Ok(old)
    }

    /// The value at a place a reference names.
    fn read_referent(&mut self, place: &Binding, span: Span) -> Result<Val> {
        let v = self.read_binding(place, span)?;
        self.deref_elem(v, span)
    }

    /// Writes `value` to the place a reference (`expr`) names.
    fn write_referent(&mut self, place: &Binding, value: Val, expr: &syn::Expr) -> Result<()> {
        match place {
            Binding::Val(v @ (Val::ElemRef { .. } | Val::Ptr { .. })) => {
                let place = self.deref_place(v.clone(), expr, expr)?;
                self.write_place(place, value, expr.span())
            }
            Binding::Val(other) => err(
                expr.span(),
                format!(
                    "`mem::swap` needs two places (`&mut x`, `&mut a[i]`, a `&mut` parameter), \
                     not {}",
                    describe(other)
                ),
            ),
            _ => self.assign_binding(place, value, expr.span()),
        }
    }

    /// Reads an element reference (auto-deref); other values pass unchanged.
    pub(super) fn deref_elem(&mut self, v: Val, span: Span) -> Result<Val> {
        match v {
            Val::ElemRef {
                space, addr, elem, ..
            } => Ok(Val::Scalar(self.def(
                Op::Load {
                    space,
                    ty: elem,
                    addr,
                    eviction: cuprum_ir::Eviction::Normal,
                },
                span,
            )?)),
            other => Ok(other),
        }
    }

    /// The place `*expr = ..` writes when `expr` is a value: an element reference or a
    /// `*mut` pointer.
    pub(super) fn deref_place(
        &mut self,
        v: Val,
        whole: &syn::Expr,
        expr: &syn::Expr,
    ) -> Result<Place> {
        match v {
            Val::ElemRef {
                space,
                addr,
                elem,
                mutable: true,
            } => Ok(Place::Mem { space, addr, elem }),
            Val::ElemRef { .. } => err(whole.span(), "cannot assign through a shared reference"),
            Val::Ptr {
                addr,
                elem,
                mutable: true,
                space,
            } => Ok(Place::Mem { space, addr, elem }),
            Val::Ptr { .. } => err(whole.span(), "cannot write through a `*const` pointer"),
            Val::ClusterPtr {
                addr,
                rank,
                elem,
                mutable: true,
            } => Ok(Place::Cluster { addr, rank, elem }),
            Val::ClusterPtr { .. } => err(
                whole.span(),
                "cannot write through `map_shared_rank`'s `*const` pointer: map a `*mut` one \
                 with `map_shared_rank_mut`",
            ),
            other => err(
                expr.span(),
                format!("cannot dereference {}", describe(&other)),
            ),
        }
    }

    /// The arguments of a call of `f`: a reference parameter (or `&self`) takes the place
    /// its argument names, any other parameter the argument's value.
    pub(super) fn helper_args<'f>(
        &mut self,
        inputs: impl Iterator<Item = &'f syn::FnArg>,
        args: &[&syn::Expr],
    ) -> Result<Vec<Arg>> {
        let mut out = Vec::with_capacity(args.len());
        for (input, a) in inputs.zip(args) {
            let by_ref = match input {
                syn::FnArg::Receiver(r) => r.reference.is_some(),
                syn::FnArg::Typed(pt) => matches!(&*pt.ty, syn::Type::Reference(_)),
            };
            out.push(if by_ref {
                Arg::Place(self.place_binding(a)?)
            } else {
                Arg::Value(self.expr(a)?)
            });
        }
        Ok(out)
    }

    /// A value standing for an argument where only its type matters (inferring a helper's
    /// type parameters): a place's type is known without reading it.
    pub(super) fn arg_witness(&mut self, arg: &Arg, span: Span) -> Result<Val> {
        match arg {
            Arg::Value(v) => Ok(v.clone()),
            Arg::Place(Binding::Var { ty, .. }) => {
                Ok(Val::Scalar(self.constant(cuprum_ir::Constant::new(*ty, 0))))
            }
            Arg::Place(Binding::Val(Val::ElemRef { elem, .. })) => Ok(Val::Scalar(
                self.constant(cuprum_ir::Constant::new(*elem, 0)),
            )),
            Arg::Place(b) => self.read_binding(b, span),
        }
    }

    /// Binds reference parameter `pt` of a helper to the place its argument names.
    pub(super) fn bind_reference_param(&mut self, pt: &syn::PatType, place: Binding) -> Result<()> {
        let syn::Pat::Ident(id) = &*pt.pat else {
            if let syn::Pat::Wild(_) = &*pt.pat {
                return Ok(());
            }
            return err(
                pt.pat.span(),
                "bind a reference parameter to a name: `a: &mut u32`",
            );
        };
        if id.mutability.is_some() {
            return err(
                id.span(),
                format!(
                    "a reference parameter cannot be `mut` in device code: it names the caller's \
                     place and cannot be re-pointed; drop the `mut` (write through `*{0}`)",
                    id.ident
                ),
            );
        }
        // `&5` for an `&u32`: the literal takes the referent's type.
        let place = match (place, &*pt.ty) {
            (Binding::Val(v @ (Val::Int(_) | Val::Float(_))), syn::Type::Reference(r)) => {
                match self.resolve_scalar(&r.elem) {
                    Ok(ty) => Binding::Val(Val::Scalar(self.materialize(v, ty, pt.span())?)),
                    Err(_) => Binding::Val(v),
                }
            }
            (b, _) => b,
        };
        self.bind(id.ident.to_string(), place);
        Ok(())
    }

    /// Field `f.member` of the place `base` names.
    fn member_binding(&mut self, base: Binding, f: &syn::ExprField) -> Result<Binding> {
        let (shape, items) = match base {
            Binding::Struct(name, items) => (aggregates::Shape::Struct(name), items),
            Binding::Tuple(items) => (aggregates::Shape::Tuple, items),
            Binding::Val(Val::Struct(name, items)) => (
                aggregates::Shape::Struct(name),
                items.into_iter().map(Binding::Val).collect(),
            ),
            Binding::Val(Val::Tuple(items)) => (
                aggregates::Shape::Tuple,
                items.into_iter().map(Binding::Val).collect(),
            ),
            other => {
                let v = self.read_binding(&other, f.span())?;
                return err(f.base.span(), format!("no fields on {}", describe(&v)));
            }
        };
        let index = self.member_index(&shape, &f.member)?;
        items
            .get(index)
            .cloned()
            .ok_or_else(|| syn::Error::new(f.member.span(), "no such field"))
    }
}

/// An element place as a binding: a variable stays one, memory becomes an element reference.
fn place_as_binding(place: Place, span: Span) -> Result<Binding> {
    Ok(match place {
        Place::Var(var, ty) => Binding::Var {
            var,
            ty,
            mutable: true,
        },
        Place::InferVar(site, kind) => Binding::InferVar { site, kind },
        Place::Mem { space, addr, elem } => Binding::Val(Val::ElemRef {
            space,
            addr,
            elem,
            mutable: true,
        }),
        Place::Cluster { .. } => {
            return err(
                span,
                "an element of another block's shared memory cannot be passed by reference: \
                 pass the `map_shared_rank_mut` pointer, or read it into a `let`",
            );
        }
        Place::Reg { .. } => {
            return err(
                span,
                "this element of a wgmma accumulator is picked at run time, and an accumulator \
                 lives in registers, so it has no address to borrow: index it with constants \
                 (a loop with constant bounds), or read it into a `let`",
            );
        }
    })
}
