//! Generic device structs (`struct Acc<T> { sum: T, count: u32 }`, `struct Window<const N:
//! usize> { v: [f32; N] }`), monomorphised in the front end.
//!
//! Each instantiation is a struct of its own, named by its Rust spelling (`Acc<f32>`,
//! `Pair<f64, u32>`, `Window<4>`, `Body<Vec3<f32>>`): its definition is the declaration with
//! the arguments put in place of the parameters in every field type, and no generics left.
//! Everything after this module (`layout.rs`' layouts, `types.rs`' kernel parameters, the
//! lowering's values, fields and methods) sees only instances, so one declaration gives each
//! instantiation its own layout. A non-generic struct is its own only instance.
//!
//! The name is the one key: [`instance_named`] rebuilds the definition from it, so values
//! carry only their name, as those of non-generic structs do.

use std::collections::HashMap;

use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;

use cuprum_ir::ScalarType;

/// One instantiation of a struct of the module: its name and its definition with the
/// arguments substituted (no generic parameters left).
#[derive(Clone, Debug)]
pub struct StructInstance {
    /// The Rust spelling of the instantiated type: `Acc<f32>`, or `Particle`.
    pub name: String,
    /// The declaration with every field type's parameters replaced by the arguments.
    pub def: syn::ItemStruct,
}

/// The bounds a type parameter of a device struct (or of a generic `impl` of one) may have:
/// every number the parameter can stand for meets each of them, so the front end, which
/// specializes the parameter to a number, never has to check them.
pub const MET_BOUNDS: [&str; 27] = [
    "Num",
    "DeviceScalar",
    "DeviceCopy",
    "Copy",
    "Clone",
    "Default",
    "PartialEq",
    "PartialOrd",
    "Send",
    "Sync",
    "Sized",
    "Debug",
    "Add",
    "Sub",
    "Mul",
    "Div",
    "Rem",
    "Neg",
    "AddAssign",
    "SubAssign",
    "MulAssign",
    "DivAssign",
    "RemAssign",
    "BitAnd",
    "BitOr",
    "BitXor",
    "Not",
];

/// Checks the generic parameters of a struct declaration or an `impl` block: type
/// parameters stand for numbers (or structs of the module), so their bounds must be ones
/// every number meets; const parameters are integers or `bool`. `what` names the item for
/// the messages (`struct Acc`, `impl Acc`).
pub fn check_params(generics: &syn::Generics, what: &str) -> syn::Result<()> {
    let mut errors = crate::items::Errors::default();
    let check_bound = |param: &syn::Ident, bound: &syn::TypeParamBound| -> Option<syn::Error> {
        let syn::TypeParamBound::Trait(t) = bound else {
            return None; // lifetimes (`T: 'static`): every number meets them
        };
        let name = t
            .path
            .segments
            .last()
            .map(|s| s.ident.to_string())
            .unwrap_or_default();
        if MET_BOUNDS.contains(&name.as_str()) {
            return None;
        }
        let closure = matches!(name.as_str(), "Fn" | "FnMut" | "FnOnce");
        let why = if closure {
            format!(
                "`{param}: {name}(..)` makes `{param}` a closure, which is not plain data a \
                 device struct can hold (closures are not stored in device memory): store the \
                 numbers the closure needs as fields, and call a helper `fn` of the module on \
                 them"
            )
        } else {
            format!(
                "the bound `{param}: {}` is one the front end cannot meet: in `{what}` a type \
                 parameter stands for a number, specialized per use, and only the bounds every \
                 number has are known to hold (`Num`, `Copy`, `PartialOrd`, the arithmetic \
                 operator traits, ...). Bound `{param}` by `cuprum::simt::Num` (`T::ZERO`, \
                 `T::ONE`, arithmetic and comparisons), or write the methods for one element \
                 type",
                quote::ToTokens::to_token_stream(&t.path)
                    .to_string()
                    .replace(' ', "")
            )
        };
        Some(syn::Error::new(t.span(), why))
    };
    for p in &generics.params {
        match p {
            syn::GenericParam::Type(t) => {
                for e in t.bounds.iter().filter_map(|b| check_bound(&t.ident, b)) {
                    errors.push(e);
                }
            }
            syn::GenericParam::Const(c) => {
                let ok = crate::types::scalar_type(&c.ty)
                    .is_some_and(|s| s.is_int() || s == ScalarType::Bool);
                if !ok {
                    errors.push(syn::Error::new(
                        c.ty.span(),
                        format!("const parameters of `{what}` must be integers or `bool`"),
                    ));
                }
            }
            syn::GenericParam::Lifetime(l) => errors.push(syn::Error::new(
                l.span(),
                format!(
                    "`{what}` takes no lifetime parameters in device code: device structs hold \
                     values, not references"
                ),
            )),
        }
    }
    if let Some(w) = &generics.where_clause {
        for pred in &w.predicates {
            if let syn::WherePredicate::Type(pt) = pred
                && let syn::Type::Path(p) = &pt.bounded_ty
                && let Some(ident) = p.path.get_ident()
            {
                for e in pt.bounds.iter().filter_map(|b| check_bound(ident, b)) {
                    errors.push(e);
                }
            }
        }
    }
    errors.finish()
}

/// The struct declaration `ty`'s last path segment names, if it is one of the module's.
pub fn declaration<'s>(
    ty: &syn::Type,
    structs: &'s [syn::ItemStruct],
) -> Option<&'s syn::ItemStruct> {
    let seg = last_segment(ty)?;
    structs.iter().find(|s| s.ident == seg.ident)
}

fn last_segment(ty: &syn::Type) -> Option<&syn::PathSegment> {
    match ty {
        syn::Type::Path(p) if p.qself.is_none() => p.path.segments.last(),
        syn::Type::Group(g) => last_segment(&g.elem),
        syn::Type::Paren(p) => last_segment(&p.elem),
        _ => None,
    }
}

/// Whether a struct declaration has type or const parameters.
pub fn is_generic(st: &syn::ItemStruct) -> bool {
    st.generics
        .params
        .iter()
        .any(|p| !matches!(p, syn::GenericParam::Lifetime(_)))
}

/// The base name of an instance name: `Acc` of `Acc<f32>`.
pub fn base_name(instance: &str) -> &str {
    instance.split('<').next().unwrap_or(instance).trim()
}

/// The instance a concrete type names (`Acc<f32>`, `Window<4>`, `Particle`): `None` when it
/// names no struct of the module, or a generic one without (all) its arguments (`Acc`, which
/// needs them inferred: see the lowering's `generic_structs`). Arguments must already be
/// concrete: scalar types, instances, integer literals (see [`substitute`]).
pub fn instance(ty: &syn::Type, structs: &[syn::ItemStruct]) -> Option<StructInstance> {
    instance_at(ty, structs, 0)
}

/// How deeply instances may nest in their arguments (deeper is a struct containing itself).
const MAX_DEPTH: u32 = 16;

fn instance_at(ty: &syn::Type, structs: &[syn::ItemStruct], depth: u32) -> Option<StructInstance> {
    if depth > MAX_DEPTH {
        return None;
    }
    let decl = declaration(ty, structs)?;
    if !is_generic(decl) {
        return Some(StructInstance {
            name: decl.ident.to_string(),
            def: decl.clone(),
        });
    }
    let seg = last_segment(ty)?;
    let syn::PathArguments::AngleBracketed(given) = &seg.arguments else {
        return None;
    };
    let params: Vec<&syn::GenericParam> = decl
        .generics
        .params
        .iter()
        .filter(|p| !matches!(p, syn::GenericParam::Lifetime(_)))
        .collect();
    let args: Vec<&syn::GenericArgument> = given
        .args
        .iter()
        .filter(|a| !matches!(a, syn::GenericArgument::Lifetime(_)))
        .collect();
    if params.len() != args.len() {
        return None;
    }
    let mut types = HashMap::new();
    let mut consts = HashMap::new();
    let mut spelled = Vec::with_capacity(args.len());
    for (p, a) in params.iter().zip(&args) {
        match (p, a) {
            (syn::GenericParam::Type(t), syn::GenericArgument::Type(arg)) => {
                spelled.push(type_spelling(arg, structs, depth)?);
                types.insert(t.ident.to_string(), arg.clone());
            }
            (syn::GenericParam::Const(c), arg) => {
                let v = const_argument(arg)?;
                spelled.push(v.to_string());
                consts.insert(c.ident.to_string(), v);
            }
            _ => return None,
        }
    }
    let mut def = decl.clone();
    def.generics = syn::Generics::default();
    for field in def.fields.iter_mut() {
        field.ty = substitute(&field.ty, &types, &consts);
    }
    Some(StructInstance {
        name: format!("{}<{}>", decl.ident, spelled.join(", ")),
        def,
    })
}

/// The canonical spelling of a concrete type argument: a scalar's name, or an instance's.
fn type_spelling(ty: &syn::Type, structs: &[syn::ItemStruct], depth: u32) -> Option<String> {
    if let Some(s) = crate::types::scalar_type(ty) {
        return Some(s.rust_name().to_string());
    }
    if declaration(ty, structs).is_some() {
        return instance_at(ty, structs, depth + 1).map(|i| i.name);
    }
    // Not plain data (a reference, a slice, a tuple): spelled as written, so the field
    // that holds it reports what it is.
    Some(
        quote::ToTokens::to_token_stream(ty)
            .to_string()
            .replace(' ', ""),
    )
}

/// An integer (or `bool`) const argument already substituted: a literal.
fn const_argument(arg: &syn::GenericArgument) -> Option<i128> {
    let e = match arg {
        syn::GenericArgument::Const(e) => e.clone(),
        // `Window<4>` parses `4` as a const; `Window<{ 4 }>` too; a bare name as a type.
        syn::GenericArgument::Type(syn::Type::Path(p)) => syn::Expr::Path(syn::ExprPath {
            attrs: Vec::new(),
            qself: None,
            path: p.path.clone(),
        }),
        _ => return None,
    };
    literal_value(&e)
}

fn literal_value(e: &syn::Expr) -> Option<i128> {
    match e {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(i),
            ..
        }) => i.base10_parse().ok(),
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Bool(b),
            ..
        }) => Some(i128::from(b.value)),
        syn::Expr::Unary(syn::ExprUnary {
            op: syn::UnOp::Neg(_),
            expr,
            ..
        }) => literal_value(expr).map(|v| -v),
        syn::Expr::Block(b) if b.block.stmts.len() == 1 => match &b.block.stmts[0] {
            syn::Stmt::Expr(e, None) => literal_value(e),
            _ => None,
        },
        syn::Expr::Paren(p) => literal_value(&p.expr),
        syn::Expr::Group(g) => literal_value(&g.expr),
        _ => None,
    }
}

/// The instance an instance name names (see [`StructInstance::name`]).
pub fn instance_named(name: &str, structs: &[syn::ItemStruct]) -> Option<StructInstance> {
    if !name.contains('<') {
        return structs
            .iter()
            .find(|s| s.ident == name)
            .map(|s| StructInstance {
                name: name.to_string(),
                def: s.clone(),
            });
    }
    let ty: syn::Type = syn::parse_str(name).ok()?;
    instance(&ty, structs)
}

/// The type an instance name spells, for matching it against a generic type
/// (`Acc<f32>` against `Acc<T>`).
pub fn instance_type(name: &str) -> Option<syn::Type> {
    syn::parse_str(name).ok()
}

/// `ty` with the type parameters of `types` replaced by their types and the const parameters
/// of `consts` by their values (integer literals), in paths, generic arguments (`Window<N>`,
/// where `N` parses as a type) and array lengths.
pub fn substitute(
    ty: &syn::Type,
    types: &HashMap<String, syn::Type>,
    consts: &HashMap<String, i128>,
) -> syn::Type {
    let mut out = ty.clone();
    if types.is_empty() && consts.is_empty() {
        return out;
    }
    Substitute { types, consts }.visit_type_mut(&mut out);
    out
}

/// The literal expression of a const argument's value.
pub fn literal(v: i128) -> syn::Expr {
    let lit = syn::LitInt::new(
        &v.unsigned_abs().to_string(),
        proc_macro2::Span::call_site(),
    );
    let e: syn::Expr = syn::Expr::Lit(syn::ExprLit {
        attrs: Vec::new(),
        lit: syn::Lit::Int(lit),
    });
    if v < 0 { syn::parse_quote!(-#e) } else { e }
}

struct Substitute<'a> {
    types: &'a HashMap<String, syn::Type>,
    consts: &'a HashMap<String, i128>,
}

impl Substitute<'_> {
    fn single_ident(p: &syn::TypePath) -> Option<String> {
        match p.qself {
            None => p.path.get_ident().map(|i| i.to_string()),
            Some(_) => None,
        }
    }
}

impl VisitMut for Substitute<'_> {
    fn visit_type_mut(&mut self, ty: &mut syn::Type) {
        if let syn::Type::Path(p) = ty
            && let Some(name) = Self::single_ident(p)
            && let Some(t) = self.types.get(&name)
        {
            *ty = t.clone();
            return;
        }
        syn::visit_mut::visit_type_mut(self, ty);
    }

    fn visit_generic_argument_mut(&mut self, arg: &mut syn::GenericArgument) {
        if let syn::GenericArgument::Type(syn::Type::Path(p)) = arg
            && let Some(name) = Self::single_ident(p)
            && let Some(&v) = self.consts.get(&name)
        {
            *arg = syn::GenericArgument::Const(literal(v));
            return;
        }
        syn::visit_mut::visit_generic_argument_mut(self, arg);
    }

    fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
        if let syn::Expr::Path(p) = e
            && p.qself.is_none()
            && let Some(name) = p.path.get_ident().map(|i| i.to_string())
            && let Some(&v) = self.consts.get(&name)
        {
            *e = literal(v);
            return;
        }
        syn::visit_mut::visit_expr_mut(self, e);
    }
}

/// Matches a generic type `pattern` (`Acc<T>`, `[T; N]`, `Vec3<T>`) against a concrete one
/// (`Acc<f32>`, `[f32; 4]`), recording what each of `params` stands for: the types of type
/// parameters, the values of const ones. The first match of a parameter wins (rustc has
/// checked that the others agree).
pub fn unify(
    pattern: &syn::Type,
    concrete: &syn::Type,
    params: &[String],
    types: &mut HashMap<String, syn::Type>,
    consts: &mut HashMap<String, i128>,
) {
    match (pattern, concrete) {
        (syn::Type::Paren(p), c) => unify(&p.elem, c, params, types, consts),
        (syn::Type::Group(g), c) => unify(&g.elem, c, params, types, consts),
        (p, syn::Type::Group(g)) => unify(p, &g.elem, params, types, consts),
        (syn::Type::Reference(p), syn::Type::Reference(c)) => {
            unify(&p.elem, &c.elem, params, types, consts)
        }
        (syn::Type::Array(p), syn::Type::Array(c)) => {
            unify(&p.elem, &c.elem, params, types, consts);
            if let syn::Expr::Path(len) = &p.len
                && let Some(name) = len.path.get_ident().map(|i| i.to_string())
                && params.contains(&name)
                && let Some(v) = literal_value(&c.len)
            {
                consts.entry(name).or_insert(v);
            }
        }
        (syn::Type::Path(p), c) => {
            if let Some(name) = Substitute::single_ident(p)
                && params.contains(&name)
            {
                types.entry(name).or_insert_with(|| c.clone());
                return;
            }
            let (Some(ps), Some(cs)) = (p.path.segments.last(), last_segment(c)) else {
                return;
            };
            if ps.ident != cs.ident {
                return;
            }
            let (syn::PathArguments::AngleBracketed(pa), syn::PathArguments::AngleBracketed(ca)) =
                (&ps.arguments, &cs.arguments)
            else {
                return;
            };
            for (a, b) in pa.args.iter().zip(&ca.args) {
                match (a, b) {
                    // `Window<N>` against `Window<4>`: `N` parses as a type, `4` as a const.
                    (
                        syn::GenericArgument::Type(syn::Type::Path(tp)),
                        syn::GenericArgument::Const(e),
                    ) if Substitute::single_ident(tp).is_some_and(|n| params.contains(&n)) => {
                        if let (Some(name), Some(v)) =
                            (Substitute::single_ident(tp), literal_value(e))
                        {
                            consts.entry(name).or_insert(v);
                        }
                    }
                    (syn::GenericArgument::Type(a), syn::GenericArgument::Type(b)) => {
                        unify(a, b, params, types, consts)
                    }
                    (syn::GenericArgument::Const(syn::Expr::Path(a)), b) => {
                        if let Some(name) = a.path.get_ident().map(|i| i.to_string())
                            && params.contains(&name)
                            && let Some(v) = const_argument(b)
                        {
                            consts.entry(name).or_insert(v);
                        }
                    }
                    _ => {}
                }
            }
        }
        _ => {}
    }
}

/// The type a scalar type's name spells (`f32`), for substituting a type parameter.
pub fn scalar_syn_type(s: ScalarType) -> syn::Type {
    let ident = syn::Ident::new(s.rust_name(), proc_macro2::Span::call_site());
    syn::parse_quote!(#ident)
}
