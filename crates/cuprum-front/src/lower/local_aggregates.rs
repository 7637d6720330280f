//! Local arrays of structs and tuples (`let mut bodies = [Body::new(); 4];`,
//! `[(0u32, 1.0f32), (2, 3.0)]`): per-thread arrays whose elements are aggregates.
//!
//! Such an array is a local IR array of bytes laid out as [`crate::layout`] says (local
//! arrays start 16-byte aligned, so every field is aligned), and it is accessed as shared
//! arrays of aggregates are (`memory`): `ps[i]` is a [`MemRef`] in local memory, checked
//! against the length as Rust checks it, and access paths (`ps[i].pos.x`) become one scalar
//! load or store. Arrays are values in Rust, so binding one to a new name copies it.
//! Only flat arrays of aggregates are built here; an array of arrays of aggregates is refused
//! with what to write instead.

use cuprum_ir::{AddressSpace, ArrayDecl, Op, ScalarType as S};
use proc_macro2::Span;
use syn::spanned::Spanned;

use super::memory::MemRef;
use super::*;
use crate::layout::ElemType;

/// Elements an array of aggregates may have: each is stored by its own statements, so
/// larger ones would be large code.
pub(super) const MAX_AGGREGATE_ELEMENTS: u32 = 256;

impl Lowerer<'_> {
    /// The type in memory of the aggregate value `v` (a struct of the module, or a tuple of
    /// typed numbers and aggregates).
    fn aggregate_type(&self, v: &Val, span: Span) -> Result<ElemType> {
        match v {
            Val::Struct(name, _) => {
                let ty: syn::Type = syn::parse_str(name)
                    .map_err(|e| syn::Error::new(span, format!("`{name}`: {e}")))?;
                let length = |_: &syn::Expr| None;
                crate::layout::elem_type(&ty, &self.type_params, &self.info.structs, &length)
                    .map_err(|e| syn::Error::new(span, e.to_string()))
            }
            Val::Tuple(items) => Ok(ElemType::Tuple(
                items
                    .iter()
                    .map(|item| match item {
                        Val::Scalar(x) => Ok(ElemType::Scalar(self.ty(*x))),
                        Val::Struct(..) | Val::Tuple(_) => self.aggregate_type(item, span),
                        _ => err(
                            span,
                            "the numbers of a tuple in an array need their types here \
                             (`(0u32, 1.0f32)`, or a typed `let` of the tuple first)",
                        ),
                    })
                    .collect::<Result<_>>()?,
            )),
            _ => err(span, "internal compiler error: not an aggregate"),
        }
    }

    /// Whether `ty` is an array type whose elements are not numbers (`[Particle; 4]`).
    pub(super) fn aggregate_array_type(&self, ty: &syn::Type) -> bool {
        match ty {
            syn::Type::Array(a) => match &*a.elem {
                inner @ syn::Type::Array(_) => self.aggregate_array_type(inner),
                elem => self.resolve_scalar(elem).is_err(),
            },
            syn::Type::Paren(p) => self.aggregate_array_type(&p.elem),
            _ => false,
        }
    }

    /// A local array holding `items` (aggregate values of one type), in order.
    pub(super) fn aggregate_array(&mut self, items: Vec<Val>, span: Span) -> Result<Val> {
        let Some(first) = items.first() else {
            return err(span, "array lengths must be at least 1");
        };
        let len = items.len() as u32;
        if len > MAX_AGGREGATE_ELEMENTS {
            return err(
                span,
                format!(
                    "a local array of tuples or structs may have at most \
                     {MAX_AGGREGATE_ELEMENTS} elements; this one has {len}"
                ),
            );
        }
        let elem = self.aggregate_type(first, span)?;
        let size = elem.layout().size;
        let bytes = u64::from(len) * size;
        if bytes > arrays::MAX_LOCAL_ARRAY {
            return err(
                span,
                format!(
                    "this array takes {bytes} bytes; local arrays may take at most {}",
                    arrays::MAX_LOCAL_ARRAY
                ),
            );
        }
        let array = self.declare_local(
            ArrayDecl {
                name: "array".into(),
                elem: S::U8,
                len: bytes as u32,
            },
            span,
            format!("an array of `{}`", elem.rust_name()),
        );
        if !self.inferring() {
            let base = self.def(Op::LocalAddr(array), span)?;
            for (k, item) in items.into_iter().enumerate() {
                let addr = self.offset_addr(AddressSpace::Local, base, k as u64 * size, span)?;
                let place = MemRef {
                    space: AddressSpace::Local,
                    addr,
                    ty: elem.clone(),
                    mutable: true,
                };
                self.store_mem(&place, item, span)?;
            }
        }
        Ok(Val::LocalElems { array, elem, len })
    }

    /// A copy of a local array of aggregates (Rust arrays are values).
    pub(super) fn copy_aggregate_array(
        &mut self,
        array: u32,
        elem: &ElemType,
        len: u32,
        span: Span,
    ) -> Result<Val> {
        let items = (0..len)
            .map(|k| {
                let place = self.local_element(array, elem, k, span)?;
                self.load_mem(&place, span)
            })
            .collect::<Result<Vec<_>>>()?;
        self.aggregate_array(items, span)
    }

    /// Element `k` (a constant) of a local array of aggregates.
    fn local_element(&mut self, array: u32, elem: &ElemType, k: u32, span: Span) -> Result<MemRef> {
        let base = self.def(Op::LocalAddr(array), span)?;
        let size = elem.layout().size;
        let addr = self.offset_addr(AddressSpace::Local, base, u64::from(k) * size, span)?;
        Ok(MemRef {
            space: AddressSpace::Local,
            addr,
            ty: elem.clone(),
            mutable: true,
        })
    }

    /// `ps[i]` of a local array of aggregates, checked against its length.
    pub(super) fn local_elements_index(
        &mut self,
        array: u32,
        elem: ElemType,
        len: u32,
        i: &syn::ExprIndex,
    ) -> Result<MemRef> {
        let base = self.def(Op::LocalAddr(array), i.span())?;
        self.array_elements_index(AddressSpace::Local, base, elem, len, i)
    }
}
