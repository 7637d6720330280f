//! `requires = (input.len() >= n * stride, ..)` in a `#[launch_contract]`: relations between
//! a kernel's arguments that the kernel relies on (buffer lengths against scalar sizes), as
//! cuda-oxide's contracts state them. The generated launch methods check each one on the host
//! before anything runs, so an undersized buffer is a typed error (`Error::InvalidLaunch`,
//! naming the relation and both sides) instead of a kernel that stops at a bounds check.
//!
//! A relation compares two sums, differences, products or quotients of integer literals,
//! integer parameters and `param.len()` of buffer parameters. Every operand widens to `u64`
//! and the arithmetic is checked: a negative parameter, an overflow, a subtraction below
//! zero or a division by zero makes the relation fail, never wrap.

use proc_macro2::TokenStream;
use quote::quote;
use syn::spanned::Spanned;

/// The statements that check `relations` (in the launch method, where the parameters are in
/// scope under their names) and return the error for the first that does not hold.
pub fn checks(kernel: &str, relations: &[syn::Expr]) -> syn::Result<TokenStream> {
    let mut out = TokenStream::new();
    for relation in relations {
        let syn::Expr::Binary(b) = relation else {
            return Err(not_a_relation(relation));
        };
        let op = match b.op {
            syn::BinOp::Eq(_)
            | syn::BinOp::Ne(_)
            | syn::BinOp::Lt(_)
            | syn::BinOp::Le(_)
            | syn::BinOp::Gt(_)
            | syn::BinOp::Ge(_) => b.op,
            _ => return Err(not_a_relation(relation)),
        };
        let (left, right) = (term(&b.left)?, term(&b.right)?);
        let (text, left_text, right_text) = (source(relation), source(&b.left), source(&b.right));
        out.extend(quote! {
            {
                let left: ::std::option::Option<u64> = #left;
                let right: ::std::option::Option<u64> = #right;
                let holds = match (left, right) {
                    (::std::option::Option::Some(a), ::std::option::Option::Some(b)) => a #op b,
                    _ => false,
                };
                if !holds {
                    let side = |v: ::std::option::Option<u64>| match v {
                        ::std::option::Option::Some(v) => v.to_string(),
                        ::std::option::Option::None => {
                            "not a u64 (negative, overflowing or divided by zero)".to_string()
                        }
                    };
                    return ::std::result::Result::Err(::cuprum::Error::InvalidLaunch {
                        kernel: #kernel.to_string(),
                        reason: ::std::format!(
                            "the launch contract's size requirement `{}` fails: {} = {} and {} = {}",
                            #text, #left_text, side(left), #right_text, side(right)
                        ),
                    });
                }
            }
        });
    }
    Ok(out)
}

/// One side of a relation as an `Option<u64>` expression.
fn term(e: &syn::Expr) -> syn::Result<TokenStream> {
    Ok(match e {
        syn::Expr::Paren(p) => term(&p.expr)?,
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(i),
            ..
        }) => {
            let v = i.base10_parse::<u64>()?;
            quote!(::std::option::Option::Some(#v))
        }
        syn::Expr::Path(p) if p.path.get_ident().is_some() => {
            quote!(::std::convert::TryInto::<u64>::try_into(#p).ok())
        }
        syn::Expr::MethodCall(m)
            if m.method == "len"
                && m.args.is_empty()
                && matches!(&*m.receiver, syn::Expr::Path(p) if p.path.get_ident().is_some()) =>
        {
            let buffer = &m.receiver;
            quote!(::std::convert::TryInto::<u64>::try_into(#buffer.len()).ok())
        }
        syn::Expr::Binary(b) => {
            let checked = match b.op {
                syn::BinOp::Add(_) => quote!(checked_add),
                syn::BinOp::Sub(_) => quote!(checked_sub),
                syn::BinOp::Mul(_) => quote!(checked_mul),
                syn::BinOp::Div(_) => quote!(checked_div),
                _ => return Err(unsupported(e)),
            };
            let (l, r) = (term(&b.left)?, term(&b.right)?);
            quote!((#l).and_then(|a: u64| (#r).and_then(|b: u64| a.#checked(b))))
        }
        _ => return Err(unsupported(e)),
    })
}

/// How `e` reads (its tokens, spaced as written code is: `input.len() >= n * stride`).
fn source(e: &syn::Expr) -> String {
    quote!(#e)
        .to_string()
        .replace(" . ", ".")
        .replace(" ()", "()")
        .replace("( ", "(")
        .replace(" )", ")")
}

fn not_a_relation(e: &syn::Expr) -> syn::Error {
    syn::Error::new(
        e.span(),
        "`requires` takes comparisons of arguments: `requires = (input.len() >= n * stride, ..)`",
    )
}

fn unsupported(e: &syn::Expr) -> syn::Error {
    syn::Error::new(
        e.span(),
        "a `requires` relation compares sums, differences, products and quotients of integer \
         literals, integer parameters and `buffer.len()`",
    )
}
