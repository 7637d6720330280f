//! Const-generic lengths in the host copies of device functions.
//!
//! Device code sizes shared and local arrays with expressions of a function's const
//! parameters, as CUDA templates do: `SharedArray<f32, { BLOCK * BLOCK }>`, `[0.0; N + 1]`.
//! The front end evaluates them per specialization, but stable rustc refuses generic
//! parameters inside const expressions ("generic parameters may not be used in const
//! operations"), and `#[cuda_module]` also emits every kernel and helper as host code for
//! rustc to type-check. So in those host copies, and only there, each such length becomes the
//! placeholder `1`: the same placeholder everywhere, so the host copy's types still agree with
//! one another (an array made `[x; N * N]` still fits a `[f32; N * N]` annotation), while the
//! front end, which reads the untouched source, checks the real lengths of each
//! specialization. A length that is one `usize` parameter alone (`[f32; N]`,
//! `SharedArray<f32, N>`) is legal Rust and stays as written.
//!
//! It must not change anything else: host copies keep their meaning for the type checker.

use std::collections::HashMap;

use syn::visit_mut::VisitMut;

/// Rewrites the const-generic lengths of `f` that stable rustc refuses (see the module docs);
/// returns whether it changed anything.
pub fn rewrite(f: &mut syn::ItemFn) -> bool {
    let params: HashMap<String, bool> = f
        .sig
        .generics
        .params
        .iter()
        .filter_map(|g| match g {
            syn::GenericParam::Const(c) => Some((c.ident.to_string(), is_usize(&c.ty))),
            _ => None,
        })
        .collect();
    if params.is_empty() {
        return false;
    }
    let mut rewriter = Rewriter {
        params,
        changed: false,
    };
    rewriter.visit_item_fn_mut(f);
    rewriter.changed
}

fn is_usize(ty: &syn::Type) -> bool {
    matches!(ty, syn::Type::Path(p) if p.qself.is_none() && p.path.is_ident("usize"))
}

struct Rewriter {
    /// The function's const parameters, and whether each is a `usize`.
    params: HashMap<String, bool>,
    changed: bool,
}

impl Rewriter {
    /// The const parameter `e` is, alone (`N` or `{ N }`), if it is one.
    fn standalone<'e>(&self, e: &'e syn::Expr) -> Option<&'e syn::Ident> {
        match e {
            syn::Expr::Path(p) if p.qself.is_none() => p
                .path
                .get_ident()
                .filter(|i| self.params.contains_key(&i.to_string())),
            syn::Expr::Block(b) if b.label.is_none() => match b.block.stmts.as_slice() {
                [syn::Stmt::Expr(inner, None)] => self.standalone(inner),
                _ => None,
            },
            syn::Expr::Paren(p) => self.standalone(&p.expr),
            _ => None,
        }
    }

    /// Whether `e` names one of the const parameters anywhere.
    fn mentions_param(&self, e: &syn::Expr) -> bool {
        use syn::visit::Visit;
        struct Finder<'a>(&'a HashMap<String, bool>, bool);
        impl<'ast> Visit<'ast> for Finder<'_> {
            fn visit_expr_path(&mut self, p: &'ast syn::ExprPath) {
                if let Some(i) = p.path.get_ident() {
                    self.1 |= self.0.contains_key(&i.to_string());
                }
                syn::visit::visit_expr_path(self, p);
            }
        }
        let mut finder = Finder(&self.params, false);
        finder.visit_expr(e);
        finder.1
    }

    /// Replaces a `usize` length that stable rustc refuses with the placeholder.
    fn fix_length(&mut self, len: &mut syn::Expr) {
        let legal = self
            .standalone(len)
            .is_some_and(|i| self.params.get(&i.to_string()) == Some(&true));
        if !legal && self.mentions_param(len) {
            *len = syn::parse_quote!(1);
            self.changed = true;
        }
    }

    /// Replaces a const generic argument that stable rustc refuses with the placeholder.
    fn fix_argument(&mut self, arg: &mut syn::GenericArgument, usize_expected: bool) {
        match arg {
            syn::GenericArgument::Const(e) if usize_expected => self.fix_length(e),
            syn::GenericArgument::Const(e)
                if self.standalone(e).is_none() && self.mentions_param(e) =>
            {
                *e = syn::parse_quote!({ 1 });
                self.changed = true;
            }
            // `SharedArray<f32, N>` with a `u32` parameter `N`: the placeholder, as rustc
            // wants a `usize` there.
            syn::GenericArgument::Type(syn::Type::Path(p))
                if usize_expected
                    && p.qself.is_none()
                    && p.path
                        .get_ident()
                        .is_some_and(|i| self.params.get(&i.to_string()) == Some(&false)) =>
            {
                *arg = syn::parse_quote!(1);
                self.changed = true;
            }
            _ => {}
        }
    }
}

impl VisitMut for Rewriter {
    fn visit_type_array_mut(&mut self, a: &mut syn::TypeArray) {
        syn::visit_mut::visit_type_array_mut(self, a);
        self.fix_length(&mut a.len);
    }

    fn visit_expr_repeat_mut(&mut self, r: &mut syn::ExprRepeat) {
        syn::visit_mut::visit_expr_repeat_mut(self, r);
        self.fix_length(&mut r.len);
    }

    fn visit_path_segment_mut(&mut self, seg: &mut syn::PathSegment) {
        syn::visit_mut::visit_path_segment_mut(self, seg);
        // `SharedArray<T, LEN>`: its length is a `usize`.
        let shared = seg.ident == "SharedArray";
        if let syn::PathArguments::AngleBracketed(a) = &mut seg.arguments {
            for (k, arg) in a.args.iter_mut().enumerate() {
                self.fix_argument(arg, shared && k == 1);
            }
        }
    }

    // Items nested in the function have their own generics.
    fn visit_item_mut(&mut self, _: &mut syn::Item) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(src: &str) -> String {
        let mut f: syn::ItemFn = syn::parse_str(src).expect("a function");
        rewrite(&mut f);
        quote::quote!(#f).to_string()
    }

    #[test]
    fn lengths_of_const_expressions_become_the_placeholder() {
        let out = rewritten(
            "fn k<const B: usize, const M: u32>() { \
               let t = SharedArray::<f32, { B * B }>::uninit(); \
               let u: SharedArray<f32, M> = SharedArray::uninit(); \
               let a = [0.0f32; B + 1]; let b: [f32; B] = [0.0; B]; \
               let c = [0u8; 4 * 8]; \
               g::<{ B * 2 }, M>(a); }",
        );
        assert!(out.contains("SharedArray :: < f32 , 1 >"), "{out}");
        assert!(out.contains("SharedArray < f32 , 1 >"), "{out}");
        assert!(out.contains("[0.0f32 ; 1]"), "{out}");
        assert!(out.contains("[f32 ; B]"), "{out}");
        assert!(out.contains("[0.0 ; B]"), "{out}");
        assert!(out.contains("[0u8 ; 4 * 8]"), "{out}");
        assert!(out.contains("g :: < { 1 } , M >"), "{out}");
    }

    #[test]
    fn a_function_without_const_parameters_is_left_alone() {
        let src = "fn k<T>() { let a = [0.0f32; 4 * 4]; }";
        let mut f: syn::ItemFn = syn::parse_str(src).expect("a function");
        assert!(!rewrite(&mut f));
    }
}
