//! What a `#[cuprum::tile::module]` holds: entry functions (with their attributes), the
//! other functions (device helpers, inlined where they are called), and module `const`s
//! (evaluated here, once, to typed compile-time values).
//!
//! Anything else in the module is refused with a message, except `use` items, which only
//! bring names into scope for rustc (the kernel language's names are built in here).

use std::collections::{HashMap, HashSet};

use cuprum_ir::{BinaryOp, CmpOp, ScalarType};
use syn::spanned::Spanned;

use crate::err;
use crate::literal::{Lit, associated_const, fold_binary, fold_compare};

/// The attributes of one `#[cuprum::tile::entry(..)]`, as the host needs them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EntryAttrs {
    /// `print_ir = true`: print the kernel's IR when it is compiled.
    pub print_ir: bool,
    /// `unchecked_accesses`: cutile's waiver of its checks (accepted on an `unsafe fn`; cuprum
    /// needs no checks, since edge tiles pad their loads and drop their stores).
    pub unchecked_accesses: bool,
    /// `deny_in_kernel_checks`: cutile's refusal of in-kernel checks (cuprum's kernels have
    /// none, so it holds trivially).
    pub deny_in_kernel_checks: bool,
    /// `dump_mlir_dir = "path"`: where cutile writes its Tile IR; kept for the host.
    pub dump_dir: Option<String>,
}

/// The entry attribute keys: the ones with a meaning for cuprum, and those of cutile that it
/// accepts and ignores (`preconditions` tunes cutile's checks, which cuprum does not have).
/// `optimization_hints` are not the tile IR's: the entry macro reads them for the launch.
const ENTRY_KEYS: &[&str] = &[
    "print_ir",
    "unchecked_accesses",
    "deny_in_kernel_checks",
    "dump_mlir_dir",
    "preconditions",
    "optimization_hints",
];

/// One entry function.
pub(crate) struct Entry<'a> {
    pub func: &'a syn::ItemFn,
    pub attrs: EntryAttrs,
}

/// The module's items, by kind.
pub(crate) struct ModuleItems<'a> {
    pub entries: Vec<Entry<'a>>,
    /// Every function of the module, entries included, by name (callers inline them).
    pub functions: HashMap<String, &'a syn::ItemFn>,
    /// The module's consts, evaluated.
    pub consts: HashMap<String, Lit>,
    /// The file the module's spans count lines in, when its kernels carry line information
    /// (`crate::compile_module_with_lines`): each statement is then marked with its line
    /// (`cuprum_tile_ir::Stmt::SourceLine`).
    pub line_info: Option<String>,
}

/// Whether `attr` is the entry attribute (`#[cuprum::tile::entry]`, `#[entry]`, or cutile's
/// `#[cutile::entry]`).
fn is_entry_attr(attr: &syn::Attribute) -> bool {
    attr.path()
        .segments
        .last()
        .is_some_and(|s| s.ident == "entry")
}

/// Scans `module`; errors point at the offending item.
pub(crate) fn scan_module(module: &syn::ItemMod) -> syn::Result<ModuleItems<'_>> {
    let Some((_, items)) = &module.content else {
        return err(
            module.span(),
            "a `#[cuprum::tile::module]` needs its body inline: `mod name { .. }`",
        );
    };
    let mut entries = Vec::new();
    let mut functions = HashMap::new();
    let mut const_items: HashMap<String, &syn::ItemConst> = HashMap::new();
    for item in items {
        match item {
            syn::Item::Fn(f) => {
                let name = f.sig.ident.to_string();
                if functions.insert(name.clone(), f).is_some() {
                    return err(f.sig.ident.span(), format!("`{name}` is defined twice"));
                }
                let mut entry_attrs = f.attrs.iter().filter(|a| is_entry_attr(a));
                if let Some(attr) = entry_attrs.next() {
                    if let Some(again) = entry_attrs.next() {
                        return err(again.span(), "a second entry attribute");
                    }
                    let attrs = parse_entry_attrs(attr)?;
                    if attrs.unchecked_accesses && f.sig.unsafety.is_none() {
                        return err(
                            attr.span(),
                            "`unchecked_accesses` waives checks, so it needs an `unsafe fn`",
                        );
                    }
                    entries.push(Entry { func: f, attrs });
                }
            }
            syn::Item::Const(c) => {
                const_items.insert(c.ident.to_string(), c);
            }
            syn::Item::Use(_) => {}
            other => {
                return err(
                    other.span(),
                    "only functions, consts and `use` items are supported in a `#[cuprum::tile::module]`",
                );
            }
        }
    }
    let mut consts = HashMap::new();
    let mut evaluating = HashSet::new();
    let names: Vec<String> = const_items.keys().cloned().collect();
    for name in names {
        eval_module_const(&name, &const_items, &mut consts, &mut evaluating)?;
    }
    Ok(ModuleItems {
        entries,
        functions,
        consts,
        line_info: None,
    })
}

fn parse_entry_attrs(attr: &syn::Attribute) -> syn::Result<EntryAttrs> {
    let mut out = EntryAttrs::default();
    let metas = match &attr.meta {
        syn::Meta::Path(_) => return Ok(out),
        syn::Meta::List(l) if l.tokens.is_empty() => return Ok(out),
        syn::Meta::List(_) => attr.parse_args_with(
            syn::punctuated::Punctuated::<syn::Meta, syn::Token![,]>::parse_terminated,
        )?,
        syn::Meta::NameValue(nv) => {
            return err(
                nv.span(),
                "write entry options in parentheses: `entry(print_ir = true)`",
            );
        }
    };
    for meta in metas {
        let key = meta
            .path()
            .get_ident()
            .map(|i| i.to_string())
            .unwrap_or_default();
        if !ENTRY_KEYS.contains(&key.as_str()) {
            return err(
                meta.path().span(),
                format!(
                    "unknown entry option `{}`; the options are {}",
                    quote::ToTokens::to_token_stream(meta.path()),
                    ENTRY_KEYS
                        .iter()
                        .map(|k| format!("`{k}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            );
        }
        let flag = |meta: &syn::Meta| -> syn::Result<bool> {
            match meta {
                syn::Meta::Path(_) => Ok(true),
                syn::Meta::NameValue(syn::MetaNameValue {
                    value:
                        syn::Expr::Lit(syn::ExprLit {
                            lit: syn::Lit::Bool(b),
                            ..
                        }),
                    ..
                }) => Ok(b.value),
                other => err(other.span(), format!("`{key}` is `true` or `false`")),
            }
        };
        match key.as_str() {
            "print_ir" => out.print_ir = flag(&meta)?,
            "unchecked_accesses" => out.unchecked_accesses = flag(&meta)?,
            "deny_in_kernel_checks" => out.deny_in_kernel_checks = flag(&meta)?,
            "dump_mlir_dir" => match &meta {
                syn::Meta::NameValue(syn::MetaNameValue {
                    value:
                        syn::Expr::Lit(syn::ExprLit {
                            lit: syn::Lit::Str(s),
                            ..
                        }),
                    ..
                }) => out.dump_dir = Some(s.value()),
                other => {
                    return err(
                        other.span(),
                        "`dump_mlir_dir` is a string: `dump_mlir_dir = \"dir\"`",
                    );
                }
            },
            // cutile's launch preconditions and compiler hints: no meaning for cuprum.
            _ => match &meta {
                syn::Meta::NameValue(_) => {}
                other => return err(other.span(), format!("`{key}` takes a value: `{key} = ..`")),
            },
        }
    }
    Ok(out)
}

fn eval_module_const(
    name: &str,
    items: &HashMap<String, &syn::ItemConst>,
    done: &mut HashMap<String, Lit>,
    evaluating: &mut HashSet<String>,
) -> syn::Result<()> {
    if done.contains_key(name) {
        return Ok(());
    }
    let Some(item) = items.get(name) else {
        return Ok(());
    };
    if !evaluating.insert(name.to_string()) {
        return err(
            item.ident.span(),
            format!("the const `{name}` refers to itself"),
        );
    }
    let ty = match &*item.ty {
        syn::Type::Path(p) => p
            .path
            .get_ident()
            .and_then(|i| ScalarType::from_rust_name(&i.to_string())),
        _ => None,
    };
    let Some(ty) = ty else {
        return err(
            item.ty.span(),
            "a module const of a tile kernel is a number or a bool (`i32`, `f32`, `bool`, ...)",
        );
    };
    let value = ConstEval {
        items,
        done,
        evaluating,
    }
    .eval(&item.expr)?;
    let value = value.typed(ty, item.expr.span())?;
    evaluating.remove(name);
    done.insert(name.to_string(), value);
    Ok(())
}

struct ConstEval<'a, 'b> {
    items: &'a HashMap<String, &'b syn::ItemConst>,
    done: &'a mut HashMap<String, Lit>,
    evaluating: &'a mut HashSet<String>,
}

impl ConstEval<'_, '_> {
    fn eval(&mut self, e: &syn::Expr) -> syn::Result<Lit> {
        match e {
            syn::Expr::Lit(l) => Lit::from_syn(&l.lit),
            syn::Expr::Paren(p) => self.eval(&p.expr),
            syn::Expr::Group(g) => self.eval(&g.expr),
            syn::Expr::Block(b) => match b.block.stmts.as_slice() {
                [syn::Stmt::Expr(inner, None)] => self.eval(inner),
                _ => err(e.span(), "a const is one expression"),
            },
            syn::Expr::Path(p) => {
                let segs: Vec<String> = p
                    .path
                    .segments
                    .iter()
                    .map(|s| s.ident.to_string())
                    .collect();
                match segs.as_slice() {
                    [name] => {
                        eval_module_const(name, self.items, self.done, self.evaluating)?;
                        match self.done.get(name) {
                            Some(v) => Ok(v.clone()),
                            None => err(e.span(), format!("unknown const `{name}`")),
                        }
                    }
                    [ty, name] => ScalarType::from_rust_name(ty)
                        .and_then(|t| associated_const(t, name))
                        .ok_or_else(|| {
                            syn::Error::new(e.span(), format!("unknown const `{ty}::{name}`"))
                        }),
                    _ => err(e.span(), "unknown const"),
                }
            }
            syn::Expr::Unary(u) => {
                let v = self.eval(&u.expr)?;
                match u.op {
                    syn::UnOp::Neg(_) => v.negate(e.span()),
                    syn::UnOp::Not(_) => {
                        let ty = v.default_type();
                        let all = Lit::from_constant(cuprum_ir::Constant::new(ty, u64::MAX));
                        let all = if ty == ScalarType::Bool {
                            Lit::from_constant(cuprum_ir::Constant::bool(true))
                        } else {
                            all
                        };
                        fold_binary(BinaryOp::Xor, &v.typed(ty, e.span())?, &all, e.span())?
                            .ok_or_else(|| syn::Error::new(e.span(), "`!` does not apply here"))
                    }
                    _ => err(e.span(), "not a constant expression"),
                }
            }
            syn::Expr::Binary(b) => {
                let (l, r) = (self.eval(&b.left)?, self.eval(&b.right)?);
                let span = e.span();
                if let Some(op) = compare_op(&b.op) {
                    return fold_compare(op, &l, &r, span);
                }
                let Some(op) = binary_op(&b.op) else {
                    return err(span, "this operator is not allowed in a const");
                };
                fold_binary(op, &l, &r, span)?.ok_or_else(|| {
                    syn::Error::new(span, "this operation does not apply to these values")
                })
            }
            syn::Expr::Cast(c) => {
                let v = self.eval(&c.expr)?;
                let to = match &*c.ty {
                    syn::Type::Path(p) => p
                        .path
                        .get_ident()
                        .and_then(|i| ScalarType::from_rust_name(&i.to_string())),
                    _ => None,
                };
                match to {
                    Some(t) => v.cast(t, e.span()),
                    None => err(c.ty.span(), "a const can be cast to a number type only"),
                }
            }
            _ => err(
                e.span(),
                "a module const of a tile kernel must be computed from numbers and other consts",
            ),
        }
    }
}

/// The kernel IR's operation for a Rust arithmetic, bitwise or shift operator (plain or
/// compound: `+` and `+=` alike).
pub(crate) fn binary_op(op: &syn::BinOp) -> Option<BinaryOp> {
    use syn::BinOp as B;
    Some(match op {
        B::Add(_) | B::AddAssign(_) => BinaryOp::Add,
        B::Sub(_) | B::SubAssign(_) => BinaryOp::Sub,
        B::Mul(_) | B::MulAssign(_) => BinaryOp::Mul,
        B::Div(_) | B::DivAssign(_) => BinaryOp::Div,
        B::Rem(_) | B::RemAssign(_) => BinaryOp::Rem,
        B::BitAnd(_) | B::BitAndAssign(_) => BinaryOp::And,
        B::BitOr(_) | B::BitOrAssign(_) => BinaryOp::Or,
        B::BitXor(_) | B::BitXorAssign(_) => BinaryOp::Xor,
        B::Shl(_) | B::ShlAssign(_) => BinaryOp::Shl,
        B::Shr(_) | B::ShrAssign(_) => BinaryOp::Shr,
        _ => return None,
    })
}

/// The comparison for a Rust comparison operator.
pub(crate) fn compare_op(op: &syn::BinOp) -> Option<CmpOp> {
    use syn::BinOp as B;
    Some(match op {
        B::Eq(_) => CmpOp::Eq,
        B::Ne(_) => CmpOp::Ne,
        B::Lt(_) => CmpOp::Lt,
        B::Le(_) => CmpOp::Le,
        B::Gt(_) => CmpOp::Gt,
        B::Ge(_) => CmpOp::Ge,
        _ => return None,
    })
}
