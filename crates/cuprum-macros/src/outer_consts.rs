//! Constants and `#[device]` functions a `#[cuda_module]` reaches from its parent module
//! through `use super::*`.
//!
//! A proc macro sees only the module's own tokens, so `const BLOCK: usize = 256;` written
//! beside the module (as cuda-oxide's examples do) was "not a constant of this module" to
//! the front end, while rustc resolved it for the host copy. The macro reads the source
//! file the module is in (`proc_macro::Span::local_file`), finds the module among the
//! file's items by name (one `#[cuda_module]` module of that name, else nothing is added),
//! and gives the front end a copy of the module with its parent's `const` items and
//! `#[device]` functions (cuda-oxide's mark for a helper written outside the module)
//! appended (those the module neither defines nor imports by name, which shadow them). The copy is only what the front end
//! compiles and embeds as source; the module rustc sees is unchanged. Constants of other
//! files, or imported by name from elsewhere, are not found: the front end's error says to
//! define them in the module or its parent.

use std::collections::HashSet;
use std::path::Path;

/// `module` with the `const` items of its parent in `file` appended, when `file` can be read
/// and names exactly one `#[cuda_module]` module called as `module` is; else `module`.
pub fn with_parent_consts(module: &syn::ItemMod, file: Option<&Path>) -> syn::ItemMod {
    let mut out = module.clone();
    let Some(text) = file.and_then(|f| std::fs::read_to_string(f).ok()) else {
        return out;
    };
    let Ok(parsed) = syn::parse_file(&text) else {
        return out;
    };
    let mut parents = Vec::new();
    find_parents(&parsed.items, &module.ident, &mut parents);
    let [parent] = parents[..] else {
        return out;
    };
    let Some((_, items)) = &mut out.content else {
        return out;
    };
    // Names the module defines or imports by name shadow the parent's (a glob import
    // does not), for rustc and so here.
    let mut own: HashSet<String> = items.iter().filter_map(item_name).collect();
    for item in items.iter() {
        if let syn::Item::Use(u) = item {
            imported_names(&u.tree, &mut own);
        }
    }
    for item in parent {
        match item {
            syn::Item::Const(c) if !own.contains(&c.ident.to_string()) => {
                items.push(item.clone());
            }
            syn::Item::Fn(f)
                if f.attrs.iter().any(is_device) && !own.contains(&f.sig.ident.to_string()) =>
            {
                items.push(item.clone());
            }
            _ => {}
        }
    }
    out
}

/// The item lists that hold a `#[cuda_module]` module called `name`, searching nested inline
/// modules too.
fn find_parents<'a>(items: &'a [syn::Item], name: &syn::Ident, out: &mut Vec<&'a [syn::Item]>) {
    for item in items {
        let syn::Item::Mod(m) = item else { continue };
        if m.ident == *name && m.attrs.iter().any(is_cuda_module) {
            out.push(items);
        }
        if let Some((_, inner)) = &m.content {
            find_parents(inner, name, out);
        }
    }
}

/// `#[device]` (or `#[cuprum::simt::device]`): a device helper written outside the module.
fn is_device(a: &syn::Attribute) -> bool {
    a.path()
        .segments
        .last()
        .is_some_and(|s| s.ident == "device")
}

fn is_cuda_module(a: &syn::Attribute) -> bool {
    a.path()
        .segments
        .last()
        .is_some_and(|s| s.ident == "cuda_module")
}

/// The names a `use` tree brings in by name (not through globs).
fn imported_names(tree: &syn::UseTree, out: &mut HashSet<String>) {
    match tree {
        syn::UseTree::Path(p) => imported_names(&p.tree, out),
        syn::UseTree::Name(n) => {
            out.insert(n.ident.to_string());
        }
        syn::UseTree::Rename(r) => {
            out.insert(r.rename.to_string());
        }
        syn::UseTree::Glob(_) => {}
        syn::UseTree::Group(g) => {
            for t in &g.items {
                imported_names(t, out);
            }
        }
    }
}

/// The name an item defines, for the ones a constant could clash with.
fn item_name(item: &syn::Item) -> Option<String> {
    Some(match item {
        syn::Item::Const(c) => c.ident.to_string(),
        syn::Item::Static(s) => s.ident.to_string(),
        syn::Item::Fn(f) => f.sig.ident.to_string(),
        syn::Item::Struct(s) => s.ident.to_string(),
        _ => return None,
    })
}
