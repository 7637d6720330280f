//! The types the front end understands, and how Rust type syntax maps onto them.
//!
//! The IR only knows scalars; the front end also tracks the handful of non-scalar things a
//! kernel can hold (slices, thread indices, element references) and takes them apart.

use std::collections::HashMap;

use cuprum_ir::{ScalarType, SliceAccess};

use crate::layout::{ElemType, elem_type};
use syn::spanned::Spanned;

/// A kernel parameter's type as the user wrote it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParamType {
    /// A scalar passed by value (`f32`, `u32`, `bool`, ...).
    Scalar(ScalarType),
    /// A slice of device memory: `&[T]` (read only), `DisjointSlice<T>` (each thread writes its
    /// own elements) or `&mut [T]` (in an `unsafe` kernel).
    Slice {
        /// The element type.
        elem: ScalarType,
        /// Which of the three forms it is.
        access: SliceAccess,
    },
    /// `AtomicSlice<T>`: global memory updated with atomics (an IR `ReadWrite` slice).
    Atomic {
        /// The element type, 32 or 64 bits wide.
        elem: ScalarType,
    },
    /// `*const T` / `*mut T` in an `unsafe` kernel: a raw device address (an IR `U64`).
    Pointer {
        /// The pointee type.
        elem: ScalarType,
        /// Whether it is `*mut T` rather than `*const T`.
        mutable: bool,
    },
    /// A slice whose elements are arrays or structs (`&[[f32; 4]]`, `DisjointSlice<Particle>`):
    /// an IR slice of bytes (`U8`, its length in bytes), each element laid out as
    /// [`crate::layout`] says.
    Elements {
        /// The element type.
        elem: ElemType,
        /// Which of the three forms it is.
        access: SliceAccess,
    },
    /// `DisjointSlice<T, Runtime2DIndex>` (cuda-oxide's runtime-width 2-D index space): a
    /// `Disjoint` IR slice of scalars followed by a `U64` parameter, the row width the host
    /// bound with `RowWidth::new(&mut buffer, width)`. Thread `(row, col)` reaches element
    /// `row * width + col` when `col < width`.
    RowWidthSlice {
        /// The element type.
        elem: ScalarType,
    },
    /// `TensorMap<T, RANK>` (`cuprum::simt::tma`): a tensor map passed by value (an IR
    /// [`ParamKind::TensorMap`](cuprum_ir::ParamKind::TensorMap)); the host passes a checked
    /// `&cuprum::TensorMap<T, RANK>`.
    TensorMap {
        /// The tensor's element type.
        elem: ScalarType,
        /// Its number of dimensions, 1 to 5.
        rank: u8,
    },
    /// `*const TmaDescriptor` (cuda-oxide's form): the `U64` global address of a tensor map
    /// the host copied into device memory. Allowed in safe kernels, as cuda-oxide's are, but
    /// such a kernel's launch methods are `unsafe`: nothing checks what the pointer points to.
    TensorMapPtr,
    /// A struct of the module passed by value: one scalar IR parameter per scalar field, in
    /// declaration order, the fields of a nested struct in its place (depth first).
    Struct {
        /// The struct's name in the module.
        name: String,
        /// Each scalar field's path from the struct (`pos.x` for field `x` of field `pos`)
        /// and its type, in that order.
        fields: Vec<(String, ScalarType)>,
    },
}

/// The last segment of a path type, with its generic arguments.
fn last_segment(ty: &syn::Type) -> Option<&syn::PathSegment> {
    match ty {
        syn::Type::Path(p) if p.qself.is_none() => p.path.segments.last(),
        _ => None,
    }
}

/// A scalar type name (`f32`, `usize`, `half::f16`, `bf16`).
pub fn scalar_type(ty: &syn::Type) -> Option<ScalarType> {
    let seg = last_segment(ty)?;
    if !seg.arguments.is_none() {
        return None;
    }
    ScalarType::from_rust_name(&seg.ident.to_string())
}

/// Parses a scalar type or explains why it is not one.
pub fn expect_scalar(ty: &syn::Type) -> syn::Result<ScalarType> {
    let heap = [
        "Vec", "Box", "String", "Rc", "Arc", "HashMap", "BTreeMap", "VecDeque",
    ];
    if let Some(seg) = last_segment(ty).filter(|s| heap.iter().any(|h| s.ident == h)) {
        return Err(syn::Error::new(
            ty.span(),
            format!(
                "`{}` lives on the heap, which device code cannot allocate",
                seg.ident
            ),
        ));
    }
    scalar_type(ty).ok_or_else(|| {
        syn::Error::new(
            ty.span(),
            "unsupported type in device code: expected a scalar type (bool, i8..i64, u8..u64, \
             usize, isize, f16, bf16, f32, f64)",
        )
    })
}

/// The single generic type argument of `Name<T>`.
/// The element type of `DisjointSlice<T>` or `DisjointSlice<T, Space>`, where the index space
/// is `Linear` (the default: thread indices and the output patterns) or `WarpIndex` (one
/// element per warp, reached with `thread::warp_index()`). Which one a slice is, rustc checks
/// on the host (each space's `get_mut` takes its own index type); the lowering follows the
/// index it is given.
fn disjoint_elem(seg: &syn::PathSegment) -> Option<&syn::Type> {
    let syn::PathArguments::AngleBracketed(a) = &seg.arguments else {
        return None;
    };
    match a.args.iter().collect::<Vec<_>>()[..] {
        [syn::GenericArgument::Type(t)] => Some(t),
        [
            syn::GenericArgument::Type(t),
            syn::GenericArgument::Type(space),
        ] if last_segment(space).is_some_and(|s| {
            [
                "WarpIndex",
                "Linear",
                "Runtime2DIndex",
                "LinearTiles",
                "RowMajorTiles",
                "RuntimeRowMajorTiles",
            ]
            .iter()
            .any(|name| s.ident == name)
        }) =>
        {
            Some(t)
        }
        _ => None,
    }
}

/// `T` of `Uniform<T>`.
pub fn uniform_arg(ty: &syn::Type) -> Option<&syn::Type> {
    let seg = last_segment(ty)?;
    if seg.ident != "Uniform" {
        return None;
    }
    single_type_arg(seg)
}

/// The index space's path segment of a `DisjointSlice<T, Space>` parameter type, if written
/// (`RowMajorTiles<1, 2, 64>`): what the lowering reads tile shapes from.
pub(crate) fn disjoint_space_segment(ty: &syn::Type) -> Option<&syn::PathSegment> {
    let seg = last_segment(ty)?;
    if seg.ident != "DisjointSlice" {
        return None;
    }
    let syn::PathArguments::AngleBracketed(a) = &seg.arguments else {
        return None;
    };
    match a.args.iter().nth(1) {
        Some(syn::GenericArgument::Type(space)) => last_segment(space),
        _ => None,
    }
}

/// The index space of `DisjointSlice<T, Space>` (its last path segment), if written.
fn disjoint_space(seg: &syn::PathSegment) -> Option<String> {
    let syn::PathArguments::AngleBracketed(a) = &seg.arguments else {
        return None;
    };
    match a.args.iter().nth(1) {
        Some(syn::GenericArgument::Type(space)) => last_segment(space).map(|s| s.ident.to_string()),
        _ => None,
    }
}

fn single_type_arg(seg: &syn::PathSegment) -> Option<&syn::Type> {
    match &seg.arguments {
        syn::PathArguments::AngleBracketed(a) if a.args.len() == 1 => match a.args.first() {
            Some(syn::GenericArgument::Type(t)) => Some(t),
            _ => None,
        },
        _ => None,
    }
}

/// The instance of a module struct that a concrete type names (`Particle`, `Acc<f32>`), if
/// any: see [`crate::generic_structs`]. A type that may name generic parameters goes through
/// [`concrete`] first.
pub fn struct_named(
    ty: &syn::Type,
    structs: &[syn::ItemStruct],
) -> Option<crate::generic_structs::StructInstance> {
    crate::generic_structs::instance(ty, structs)
}

/// `ty` with the type parameters of `generics` replaced by their scalar types, and generic
/// arguments that are constants (`Window<N>`, `Window<SIZE>`, `Window<{ 2 * K }>`) by their
/// values as `length` evaluates them: a type that [`struct_named`] can instantiate.
pub fn concrete(
    ty: &syn::Type,
    generics: &HashMap<String, ScalarType>,
    length: &dyn Fn(&syn::Expr) -> Option<u64>,
) -> syn::Type {
    use syn::visit_mut::VisitMut;
    struct Consts<'l>(&'l dyn Fn(&syn::Expr) -> Option<u64>);
    impl VisitMut for Consts<'_> {
        fn visit_generic_argument_mut(&mut self, arg: &mut syn::GenericArgument) {
            let expr = match &*arg {
                syn::GenericArgument::Const(e) => Some(e.clone()),
                syn::GenericArgument::Type(syn::Type::Path(p))
                    if p.qself.is_none()
                        && p.path.get_ident().is_some_and(|i| {
                            ScalarType::from_rust_name(&i.to_string()).is_none()
                        }) =>
                {
                    Some(syn::Expr::Path(syn::ExprPath {
                        attrs: Vec::new(),
                        qself: None,
                        path: p.path.clone(),
                    }))
                }
                _ => None,
            };
            if let Some(e) = expr
                && let Some(v) = (self.0)(&e)
            {
                *arg = syn::GenericArgument::Const(crate::generic_structs::literal(i128::from(v)));
                return;
            }
            syn::visit_mut::visit_generic_argument_mut(self, arg);
        }
    }
    let types: HashMap<String, syn::Type> = generics
        .iter()
        .map(|(n, s)| (n.clone(), crate::generic_structs::scalar_syn_type(*s)))
        .collect();
    let mut out = crate::generic_structs::substitute(ty, &types, &HashMap::new());
    Consts(length).visit_type_mut(&mut out);
    out
}

/// A scalar type, seeing generic parameters through `generics`.
pub fn scalar_in(
    ty: &syn::Type,
    generics: &HashMap<String, ScalarType>,
) -> syn::Result<ScalarType> {
    if let syn::Type::Path(p) = ty
        && let Some(ident) = p.path.get_ident()
        && let Some(&s) = generics.get(&ident.to_string())
    {
        return Ok(s);
    }
    expect_scalar(ty)
}

/// Maps a kernel parameter type, with generic type parameters standing for `generics`' scalar
/// types. `unsafe_kernel` allows `&mut [T]` and raw pointers.
pub fn param_type_in(
    ty: &syn::Type,
    unsafe_kernel: bool,
    generics: &HashMap<String, ScalarType>,
    structs: &[syn::ItemStruct],
    consts: &[syn::ItemConst],
) -> syn::Result<ParamType> {
    let length = |e: &syn::Expr| crate::layout::const_length(e, consts);
    if let Some(st) = struct_named(&concrete(ty, generics, &length), structs) {
        let mut fields = Vec::new();
        struct_leaves(&st.def, "", generics, structs, 0, &mut fields)?;
        return Ok(ParamType::Struct {
            name: st.name,
            fields,
        });
    }
    if let Some(decl) = crate::generic_structs::declaration(ty, structs) {
        return Err(syn::Error::new(
            ty.span(),
            format!(
                "name the arguments of `{}` here: `{}<f32>` (or the kernel's own parameters, \
                 `{}<T>`)",
                decl.ident, decl.ident, decl.ident
            ),
        ));
    }
    if let Ok(s) = scalar_in(ty, generics) {
        return Ok(ParamType::Scalar(s));
    }
    // cuda-oxide's `Uniform<T>`: a scalar the same in every thread, which every scalar
    // parameter is; the host passes the plain value.
    if let Some(t) = uniform_arg(ty) {
        return Ok(ParamType::Scalar(scalar_in(t, generics)?));
    }
    if let Some(t) = tensor_map_type(ty, generics, consts)? {
        return Ok(t);
    }
    if let syn::Type::Ptr(p) = ty {
        if !unsafe_kernel {
            return Err(syn::Error::new(
                ty.span(),
                "raw pointer parameters are only allowed in `unsafe` kernels",
            ));
        }
        if let Some(st) = crate::generic_structs::declaration(&p.elem, structs) {
            return Err(syn::Error::new(
                p.elem.span(),
                format!(
                    "raw pointers to structs are not supported in device code yet: pass one \
                     pointer per field and build the `{}` in the kernel",
                    st.ident
                ),
            ));
        }
        let elem = scalar_in(&p.elem, generics)?;
        return Ok(ParamType::Pointer {
            elem,
            mutable: p.mutability.is_some(),
        });
    }
    if let syn::Type::Reference(r) = ty
        && let syn::Type::Slice(s) = &*r.elem
    {
        let elem = slice_elem(&s.elem, generics, structs, consts)?;
        if r.mutability.is_some() {
            if !unsafe_kernel {
                return Err(syn::Error::new(
                    ty.span(),
                    "`&mut [T]` kernel parameters are only allowed in `unsafe` kernels: \
                         every thread could write every element. Use `DisjointSlice<T>` for an \
                         output each thread writes only at its own index",
                ));
            }
            return Ok(slice_param(elem, SliceAccess::ReadWrite));
        }
        return Ok(slice_param(elem, SliceAccess::ReadOnly));
    }
    if let Some(seg) = last_segment(ty)
        && seg.ident == "AtomicSlice"
        && let Some(t) = single_type_arg(seg)
    {
        let elem = scalar_in(t, generics)?;
        if !matches!(elem.size_bytes(), 4 | 8) {
            return Err(syn::Error::new(
                t.span(),
                "atomics work on 32- and 64-bit elements: i32, u32, i64, u64, f32, f64",
            ));
        }
        return Ok(ParamType::Atomic { elem });
    }
    if let Some(seg) = last_segment(ty)
        && seg.ident == "DisjointSlice"
        && let Some(t) = disjoint_elem(seg)
    {
        let elem = slice_elem(t, generics, structs, consts)?;
        let space = disjoint_space(seg);
        if space
            .as_deref()
            .is_some_and(|s| s.ends_with("Tiles") && !matches!(elem, ElemType::Scalar(_)))
        {
            return Err(syn::Error::new(
                t.span(),
                "a tiled `DisjointSlice` (`LinearTiles`, `RowMajorTiles`, \
                 `RuntimeRowMajorTiles`) holds numbers; for arrays or structs use \
                 `DisjointSlice<T>` with `chunk_mut` or `tile_mut`",
            ));
        }
        if space.as_deref() == Some("RuntimeRowMajorTiles")
            && let ElemType::Scalar(elem) = elem
        {
            return Ok(ParamType::RowWidthSlice { elem });
        }
        if disjoint_space(seg).is_some_and(|s| s == "Runtime2DIndex") {
            return match elem {
                ElemType::Scalar(elem) => Ok(ParamType::RowWidthSlice { elem }),
                _ => Err(syn::Error::new(
                    t.span(),
                    "a `DisjointSlice<T, Runtime2DIndex>` holds numbers; for arrays or structs \
                     use `DisjointSlice<T>` with `thread::index_2d()` and `get_mut_2d(index, width)`",
                )),
            };
        }
        return Ok(slice_param(elem, SliceAccess::Disjoint));
    }
    Err(syn::Error::new(
        ty.span(),
        "unsupported kernel parameter type: expected a scalar (f32, u32, ...), `&[T]`, \
         `DisjointSlice<T>`, `AtomicSlice<T>`, or `&mut [T]` in an `unsafe` kernel",
    ))
}

/// `TensorMap<T, RANK>` or `*const TmaDescriptor`, if `ty` is one of them.
fn tensor_map_type(
    ty: &syn::Type,
    generics: &HashMap<String, ScalarType>,
    consts: &[syn::ItemConst],
) -> syn::Result<Option<ParamType>> {
    if let syn::Type::Ptr(p) = ty
        && last_segment(&p.elem).is_some_and(|s| s.ident == "TmaDescriptor")
    {
        if p.mutability.is_some() {
            return Err(syn::Error::new(
                ty.span(),
                "a tensor map is read only: take it as `*const TmaDescriptor`",
            ));
        }
        return Ok(Some(ParamType::TensorMapPtr));
    }
    let Some(seg) = last_segment(ty).filter(|s| s.ident == "TensorMap") else {
        return Ok(None);
    };
    let usage = || {
        syn::Error::new(
            ty.span(),
            format!(
                "a tensor-map parameter is `TensorMap<T, RANK>`: a scalar element type and 1 to \
                 {} dimensions",
                cuprum_ir::tma::MAX_RANK
            ),
        )
    };
    let syn::PathArguments::AngleBracketed(a) = &seg.arguments else {
        return Err(usage());
    };
    let args: Vec<&syn::GenericArgument> = a.args.iter().collect();
    let [syn::GenericArgument::Type(t), rank] = args[..] else {
        return Err(usage());
    };
    let elem = scalar_in(t, generics)?;
    let rank = match rank {
        syn::GenericArgument::Const(e) => crate::layout::const_length(e, consts),
        syn::GenericArgument::Type(syn::Type::Path(p)) => {
            let e = syn::Expr::Path(syn::ExprPath {
                attrs: vec![],
                qself: None,
                path: p.path.clone(),
            });
            crate::layout::const_length(&e, consts)
        }
        _ => None,
    };
    let rank = rank
        .filter(|r| (1..=cuprum_ir::tma::MAX_RANK as u64).contains(r))
        .ok_or_else(usage)?;
    if cuprum_ir::tma::tensor_map_data_type(elem).is_none() {
        return Err(syn::Error::new(
            t.span(),
            format!("{}", cuprum_ir::TensorMapProblem::Element(elem)),
        ));
    }
    Ok(Some(ParamType::TensorMap {
        elem,
        rank: rank as u8,
    }))
}

/// The element type of a slice parameter: a scalar, or an array or struct of the module laid
/// out as `#[repr(C)]` (array lengths constants of the module: see
/// [`const_length`](crate::layout::const_length)).
fn slice_elem(
    ty: &syn::Type,
    generics: &HashMap<String, ScalarType>,
    structs: &[syn::ItemStruct],
    consts: &[syn::ItemConst],
) -> syn::Result<ElemType> {
    let length = |e: &syn::Expr| crate::layout::const_length(e, consts);
    let elem = elem_type(ty, generics, structs, &length)?;
    if contains_tuple(&elem) {
        return Err(syn::Error::new(
            ty.span(),
            "tuples as elements of device slices are not supported: Rust promises no layout \
             for tuples, so the host and the device could disagree. Declare a `#[repr(C)]` \
             struct with `#[derive(Clone, Copy, DeviceCopy)]` instead",
        ));
    }
    Ok(elem)
}

fn contains_tuple(t: &ElemType) -> bool {
    match t {
        ElemType::Tuple(_) => true,
        ElemType::Array(e, _) => contains_tuple(e),
        ElemType::Struct { fields, .. } => fields.iter().any(|(_, f)| contains_tuple(f)),
        ElemType::Scalar(_) => false,
    }
}

fn slice_param(elem: ElemType, access: SliceAccess) -> ParamType {
    match elem {
        ElemType::Scalar(elem) => ParamType::Slice { elem, access },
        elem => ParamType::Elements { elem, access },
    }
}

/// What a field of a device struct may be, for the error on anything else.
pub const STRUCT_FIELD_HELP: &str = "fields of device structs are numbers, arrays of numbers \
     or structs of the module; tuples in structs are not supported in device code yet: use a \
     nested struct";

/// What a field of a struct passed by value to a kernel may be, for the error on anything
/// else.
pub const STRUCT_PARAM_FIELD_HELP: &str = "fields of a struct passed by value to a kernel are \
     scalars or structs of the module (one launch argument each); arrays in a struct parameter \
     are not supported in device code yet: pass such structs in a slice (`&[Segment]`), or use \
     one scalar field per element (`x: f32, y: f32`)";

/// How deeply structs may nest in one another (deeper is a cycle, which rustc refuses too).
const MAX_STRUCT_DEPTH: u32 = 16;

/// Appends the scalar fields of `st` to `out`, depth first in declaration order, each with its
/// path below `prefix` (`pos.x`): the one definition of how a struct is laid out as scalars,
/// which kernel parameters and the host's launch arguments both follow.
pub fn struct_leaves(
    st: &syn::ItemStruct,
    prefix: &str,
    generics: &HashMap<String, ScalarType>,
    structs: &[syn::ItemStruct],
    depth: u32,
    out: &mut Vec<(String, ScalarType)>,
) -> syn::Result<()> {
    if depth > MAX_STRUCT_DEPTH {
        return Err(syn::Error::new(
            st.ident.span(),
            format!("`{}` contains itself", st.ident),
        ));
    }
    for field in &st.fields {
        let name = field
            .ident
            .as_ref()
            .map(|i| i.to_string())
            .unwrap_or_default();
        let path = if prefix.is_empty() {
            name
        } else {
            format!("{prefix}.{name}")
        };
        let ty = concrete(&field.ty, generics, &|_| None);
        if let Some(inner) = struct_named(&ty, structs) {
            struct_leaves(&inner.def, &path, generics, structs, depth + 1, out)?;
            continue;
        }
        let fty = scalar_in(&field.ty, generics)
            .map_err(|_| syn::Error::new(field.ty.span(), STRUCT_PARAM_FIELD_HELP))?;
        out.push((path, fty));
    }
    Ok(())
}

/// Why trait objects cannot be device values, and what to write instead.
pub const TRAIT_OBJECT_HELP: &str = "trait objects (`dyn Trait`) are not supported in device \
     code: the GPU has no vtables to call through. Call the helper `fn` you mean directly, make \
     a helper generic over the scalar type (`fn apply<T>(x: T) -> T`), or pass an integer \
     `kind` and `match` on it to pick the operation";

/// `impl Trait` in a signature or a binding of device code.
const IMPL_TRAIT_HELP: &str = "`impl Trait` types are not supported in device code: device \
     helpers take scalars, arrays, tuples, structs of the module and slices; write a generic \
     helper (`fn apply<T>(x: T) -> T`) or call the helper you mean directly";

/// Refuses `dyn Trait` in a field of a device struct, at the type's own span.
pub fn refuse_trait_object_fields(st: &syn::ItemStruct) -> syn::Result<()> {
    use syn::visit::Visit;
    #[derive(Default)]
    struct Finder(crate::items::Errors);
    impl<'a> Visit<'a> for Finder {
        fn visit_type_trait_object(&mut self, t: &'a syn::TypeTraitObject) {
            self.0.push(syn::Error::new(
                t.span(),
                format!(
                    "a device struct cannot hold a trait object: {TRAIT_OBJECT_HELP}. In a \
                     struct, store the numbers the operation needs, and an integer `kind` field \
                     to `match` on"
                ),
            ));
        }
    }
    let mut finder = Finder::default();
    for f in &st.fields {
        finder.visit_type(&f.ty);
    }
    finder.0.finish()
}

/// Refuses every `dyn Trait` and `impl Trait` in a device function, at the type's own span:
/// parameters, return types, `let` annotations, casts, `Box<dyn ..>`, `&dyn ..`, turbofishes.
pub fn refuse_trait_objects(f: &syn::ItemFn) -> syn::Result<()> {
    use syn::visit::Visit;
    #[derive(Default)]
    struct Finder(crate::items::Errors);
    impl<'a> Visit<'a> for Finder {
        fn visit_type_trait_object(&mut self, t: &'a syn::TypeTraitObject) {
            self.0.push(syn::Error::new(t.span(), TRAIT_OBJECT_HELP));
        }
        fn visit_type_impl_trait(&mut self, t: &'a syn::TypeImplTrait) {
            self.0.push(syn::Error::new(t.span(), IMPL_TRAIT_HELP));
        }
        // A nested item is refused as such by the lowering ("move it to the module").
        fn visit_item(&mut self, _: &'a syn::Item) {}
    }
    let mut finder = Finder::default();
    finder.visit_signature(&f.sig);
    finder.visit_block(&f.block);
    finder.0.finish()
}
