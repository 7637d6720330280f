//! Element types in memory and their layout: the one definition of where each scalar of an
//! array, tuple or struct element lies, which the lowering (loads and stores at byte offsets),
//! the host code generator (compile-time checks that the host type has the same layout) and
//! `#[derive(DeviceCopy)]` all ask.
//!
//! The layout is `#[repr(C)]`'s: a scalar is as large and as aligned as its size; an array
//! `[T; N]` is `N` `T`s in a row; a struct or tuple puts each field, in declaration order, at
//! the next offset that is a multiple of the field's alignment, is aligned to its most aligned
//! field, and its size is rounded up to that alignment. Rust lays out `#[repr(C)]` structs and
//! arrays exactly so; a tuple has no promised layout, which the host's checks catch.

use std::collections::HashMap;

use cuprum_ir::ScalarType;
use syn::spanned::Spanned;

/// The type of an element in memory: a scalar or an aggregate of them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ElemType {
    /// A number or `bool`.
    Scalar(ScalarType),
    /// `[T; N]`.
    Array(Box<ElemType>, u32),
    /// `(A, B, ..)`.
    Tuple(Vec<ElemType>),
    /// A struct of the module: its name and its fields in declaration order.
    Struct {
        /// The struct's name; for an instance of a generic struct its Rust spelling
        /// (`Acc<f32>`: see [`crate::generic_structs`]).
        name: String,
        /// Each field's name and type.
        fields: Vec<(String, ElemType)>,
    },
}

/// Size and alignment in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// The size, a multiple of `align`.
    pub size: u64,
    /// The alignment, a power of two.
    pub align: u64,
}

impl ElemType {
    /// The size and alignment.
    pub fn layout(&self) -> Layout {
        match self {
            Self::Scalar(s) => {
                let n = u64::from(s.size_bytes());
                Layout { size: n, align: n }
            }
            Self::Array(elem, n) => {
                let l = elem.layout();
                Layout {
                    size: l.size * u64::from(*n),
                    align: l.align,
                }
            }
            Self::Tuple(_) | Self::Struct { .. } => {
                let (end, align) = self.fields_placed();
                Layout {
                    size: end.div_ceil(align) * align,
                    align,
                }
            }
        }
    }

    /// The members of a tuple or struct, in order (none for scalars and arrays).
    pub fn members(&self) -> Vec<&ElemType> {
        match self {
            Self::Tuple(items) => items.iter().collect(),
            Self::Struct { fields, .. } => fields.iter().map(|(_, t)| t).collect(),
            _ => Vec::new(),
        }
    }

    /// The byte offset of each member of a tuple or struct, in order.
    pub fn offsets(&self) -> Vec<u64> {
        let mut out = Vec::new();
        let mut at: u64 = 0;
        for m in self.members() {
            let l = m.layout();
            at = at.div_ceil(l.align) * l.align;
            out.push(at);
            at += l.size;
        }
        out
    }

    /// Where the last member ends, and the largest alignment (1 when empty).
    fn fields_placed(&self) -> (u64, u64) {
        let members = self.members();
        let offsets = self.offsets();
        let end = members
            .iter()
            .zip(&offsets)
            .map(|(m, o)| o + m.layout().size)
            .max()
            .unwrap_or(0);
        let align = members.iter().map(|m| m.layout().align).max().unwrap_or(1);
        (end, align)
    }

    /// Every scalar of the element with its byte offset, in address order.
    pub fn leaves(&self) -> Vec<(u64, ScalarType)> {
        let mut out = Vec::new();
        self.push_leaves(0, &mut out);
        out
    }

    fn push_leaves(&self, base: u64, out: &mut Vec<(u64, ScalarType)>) {
        match self {
            Self::Scalar(s) => out.push((base, *s)),
            Self::Array(elem, n) => {
                let size = elem.layout().size;
                for k in 0..u64::from(*n) {
                    elem.push_leaves(base + k * size, out);
                }
            }
            Self::Tuple(_) | Self::Struct { .. } => {
                for (m, o) in self.members().into_iter().zip(self.offsets()) {
                    m.push_leaves(base + o, out);
                }
            }
        }
    }

    /// Bytes that no scalar covers (padding), which a host type would leave uninitialized.
    pub fn padding_bytes(&self) -> u64 {
        let covered: u64 = self
            .leaves()
            .iter()
            .map(|(_, s)| u64::from(s.size_bytes()))
            .sum();
        self.layout().size - covered
    }

    /// Whether the element is a single scalar.
    pub fn scalar(&self) -> Option<ScalarType> {
        match self {
            Self::Scalar(s) => Some(*s),
            _ => None,
        }
    }

    /// The Rust spelling: `[f32; 4]`, `(u32, f32)`, `Particle`.
    pub fn rust_name(&self) -> String {
        match self {
            Self::Scalar(s) => s.rust_name().to_string(),
            Self::Array(e, n) => format!("[{}; {n}]", e.rust_name()),
            Self::Tuple(items) => {
                let names: Vec<String> = items.iter().map(|t| t.rust_name()).collect();
                if names.len() == 1 {
                    format!("({},)", names[0])
                } else {
                    format!("({})", names.join(", "))
                }
            }
            Self::Struct { name, .. } => name.clone(),
        }
    }
}

/// How deeply element types may nest (deeper is a struct containing itself).
const MAX_DEPTH: u32 = 16;

/// What an element type may be, for the error on anything else.
pub const ELEMENT_HELP: &str = "element types in device memory are scalars, arrays `[T; N]`, \
     tuples and structs of the module made of those";

/// The element type `ty` names, with generic type parameters standing for `generics`' scalars
/// and array lengths given by `length` (`None`: not a constant this context can evaluate).
pub fn elem_type(
    ty: &syn::Type,
    generics: &HashMap<String, ScalarType>,
    structs: &[syn::ItemStruct],
    length: &dyn Fn(&syn::Expr) -> Option<u64>,
) -> syn::Result<ElemType> {
    elem_type_at(ty, generics, structs, length, 0)
}

fn elem_type_at(
    ty: &syn::Type,
    generics: &HashMap<String, ScalarType>,
    structs: &[syn::ItemStruct],
    length: &dyn Fn(&syn::Expr) -> Option<u64>,
    depth: u32,
) -> syn::Result<ElemType> {
    if depth > MAX_DEPTH {
        return Err(syn::Error::new(ty.span(), "this type contains itself"));
    }
    let inner = |t: &syn::Type| elem_type_at(t, generics, structs, length, depth + 1);
    match ty {
        syn::Type::Paren(p) => inner(&p.elem),
        syn::Type::Group(g) => inner(&g.elem),
        syn::Type::Array(a) => {
            let n = length(&a.len)
                .filter(|&n| n > 0 && n <= u64::from(u32::MAX))
                .ok_or_else(|| {
                    syn::Error::new(
                        a.len.span(),
                        "array lengths in element types must be positive constants: a literal, \
                         a module `const`, or a const parameter",
                    )
                })?;
            Ok(ElemType::Array(Box::new(inner(&a.elem)?), n as u32))
        }
        syn::Type::Tuple(t) if !t.elems.is_empty() => Ok(ElemType::Tuple(
            t.elems.iter().map(inner).collect::<syn::Result<_>>()?,
        )),
        _ => {
            let concrete = crate::types::concrete(ty, generics, length);
            if let Some(st) = crate::types::struct_named(&concrete, structs) {
                let mut fields = Vec::new();
                for (k, f) in st.def.fields.iter().enumerate() {
                    let name = f
                        .ident
                        .as_ref()
                        .map(|i| i.to_string())
                        .unwrap_or_else(|| k.to_string());
                    fields.push((name, inner(&f.ty)?));
                }
                return Ok(ElemType::Struct {
                    name: st.name,
                    fields,
                });
            }
            if let Some(decl) = crate::generic_structs::declaration(ty, structs) {
                return Err(syn::Error::new(
                    ty.span(),
                    format!(
                        "name the arguments of `{0}` in an element type: `{0}<f32>`, or the \
                         parameters in scope (`{0}<T>`)",
                        decl.ident
                    ),
                ));
            }
            crate::types::scalar_in(ty, generics)
                .map(ElemType::Scalar)
                .map_err(|e| syn::Error::new(ty.span(), format!("{e}; {ELEMENT_HELP}")))
        }
    }
}

/// The element type `ty` names (a slice element of a generic kernel: `Acc<T>`) for each size
/// the kernel's type parameters `params` may have: every scalar type is 1, 2, 4 or 8 bytes,
/// as large as it is aligned, so a layout depends only on those sizes. Each entry gives each
/// parameter's size and the element type with the parameter standing for an unsigned integer
/// of that size, for the host's per-instantiation layout assertions. Empty when `ty` does
/// not lay out, or when there are more than three parameters (64 cases).
pub fn per_parameter_size(
    ty: &syn::Type,
    params: &[String],
    structs: &[syn::ItemStruct],
    consts: &[syn::ItemConst],
) -> Vec<(Vec<u64>, ElemType)> {
    const SIZES: [(u64, ScalarType); 4] = [
        (1, ScalarType::U8),
        (2, ScalarType::U16),
        (4, ScalarType::U32),
        (8, ScalarType::U64),
    ];
    if params.len() > 3 {
        return Vec::new();
    }
    let length = |e: &syn::Expr| const_length(e, consts);
    let mut out = Vec::new();
    let cases = SIZES.len().pow(params.len() as u32);
    for case in 0..cases {
        let mut rest = case;
        let mut sizes = Vec::with_capacity(params.len());
        let mut generics = HashMap::new();
        for p in params {
            let (size, s) = SIZES[rest % SIZES.len()];
            rest /= SIZES.len();
            sizes.push(size);
            generics.insert(p.clone(), s);
        }
        if let Ok(elem) = elem_type(ty, &generics, structs, &length) {
            out.push((sizes, elem));
        }
    }
    out
}

/// An array length written as an integer literal (what a signature can say without the
/// module's constants).
pub fn literal_length(e: &syn::Expr) -> Option<u64> {
    const_length(e, &[])
}

/// An array length in a signature: an integer literal, a `const` of the module (or of its
/// parent, which the module's compiled copy includes; `super::N` names it too), or
/// arithmetic (`+ - * / %`, `<<`, parentheses, `as` casts) on those. `None` when it is
/// none of these (a const parameter, a call), or does not fit.
pub fn const_length(e: &syn::Expr, consts: &[syn::ItemConst]) -> Option<u64> {
    fn eval(e: &syn::Expr, consts: &[syn::ItemConst], depth: u32) -> Option<u64> {
        if depth > 32 {
            return None;
        }
        let go = |e: &syn::Expr| eval(e, consts, depth + 1);
        match e {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Int(i),
                ..
            }) => i.base10_parse().ok(),
            syn::Expr::Group(g) => go(&g.expr),
            syn::Expr::Paren(p) => go(&p.expr),
            syn::Expr::Block(b) if b.block.stmts.len() == 1 => match &b.block.stmts[0] {
                syn::Stmt::Expr(e, None) => go(e),
                _ => None,
            },
            syn::Expr::Cast(c) => go(&c.expr),
            syn::Expr::Path(p) => {
                let name = &p.path.segments.last()?.ident;
                let c = consts.iter().find(|c| &c.ident == name)?;
                go(&c.expr)
            }
            syn::Expr::Binary(b) => {
                let (l, r) = (go(&b.left)?, go(&b.right)?);
                match b.op {
                    syn::BinOp::Add(_) => l.checked_add(r),
                    syn::BinOp::Sub(_) => l.checked_sub(r),
                    syn::BinOp::Mul(_) => l.checked_mul(r),
                    syn::BinOp::Div(_) => l.checked_div(r),
                    syn::BinOp::Rem(_) => l.checked_rem(r),
                    syn::BinOp::Shl(_) => u32::try_from(r).ok().and_then(|r| l.checked_shl(r)),
                    _ => None,
                }
            }
            _ => None,
        }
    }
    eval(e, consts, 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ScalarType as S;

    fn st(name: &str, fields: Vec<ElemType>) -> ElemType {
        ElemType::Struct {
            name: name.into(),
            fields: fields
                .into_iter()
                .enumerate()
                .map(|(k, t)| (format!("f{k}"), t))
                .collect(),
        }
    }

    #[test]
    fn repr_c_offsets_sizes_and_padding() {
        let v3 = st("V3", vec![ElemType::Scalar(S::F32); 3]);
        assert_eq!(v3.layout(), Layout { size: 12, align: 4 });
        let particle = st("P", vec![v3.clone(), v3]);
        assert_eq!(particle.offsets(), vec![0, 12]);
        assert_eq!(particle.layout().size, 24);
        let mixed = st(
            "M",
            vec![
                ElemType::Scalar(S::U8),
                ElemType::Scalar(S::F64),
                ElemType::Scalar(S::U16),
            ],
        );
        assert_eq!(mixed.offsets(), vec![0, 8, 16]);
        assert_eq!(mixed.layout(), Layout { size: 24, align: 8 });
        assert_eq!(mixed.padding_bytes(), 13);
        let f4 = ElemType::Array(Box::new(ElemType::Scalar(S::F32)), 4);
        assert_eq!(f4.layout(), Layout { size: 16, align: 4 });
        assert_eq!(f4.leaves()[3], (12, S::F32));
        assert_eq!(f4.rust_name(), "[f32; 4]");
    }
}
