//! `launch!(f<<<grid, block, shared_bytes, stream>>>(args..))`: CUDA C++'s launch syntax for
//! a raw launch of a `cuprum::Function` (a kernel of a PTX or cubin module cuprum did not
//! compile, or one of cuprum's own). The tokens are split at the `<<<` and `>>>` markers
//! (which Rust's grammar would read as shifts), and the call becomes
//! `cuprum::external::launch_raw(&f, grid, block, shared_bytes, &stream, &[args..])`: an
//! `unsafe` call returning `cuprum::Result<()>`.

use proc_macro2::{Delimiter, Spacing, TokenStream, TokenTree};
use quote::quote;
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::{Expr, Token};

/// Expands the macro's input (see the module docs).
pub(crate) fn expand(input: TokenStream) -> syn::Result<TokenStream> {
    let tokens: Vec<TokenTree> = input.into_iter().collect();
    let shape = || {
        syn::Error::new(
            proc_macro2::Span::call_site(),
            "expected `launch!(function<<<grid, block, shared_bytes, stream>>>(arguments..))`",
        )
    };
    let open = find_triple(&tokens, '<', 0).ok_or_else(shape)?;
    let close = find_triple(&tokens, '>', open + 3).ok_or_else(shape)?;
    let function: TokenStream = tokens[..open].iter().cloned().collect();
    if function.is_empty() {
        return Err(shape());
    }
    let config: TokenStream = tokens[open + 3..close].iter().cloned().collect();
    let config = Punctuated::<Expr, Token![,]>::parse_terminated.parse2(config)?;
    let [grid, block, shared, stream] = config.iter().collect::<Vec<_>>()[..] else {
        return Err(syn::Error::new_spanned(
            &config,
            "the launch configuration is `<<<grid, block, shared_bytes, stream>>>`: four values",
        ));
    };
    let args = match &tokens[close + 3..] {
        [TokenTree::Group(g)] if g.delimiter() == Delimiter::Parenthesis => g.stream(),
        _ => return Err(shape()),
    };
    let args = Punctuated::<Expr, Token![,]>::parse_terminated.parse2(args)?;
    let args = args.iter();
    Ok(quote! {
        ::cuprum::external::launch_raw(
            &(#function),
            #grid,
            #block,
            #shared,
            ::core::borrow::Borrow::<::cuprum::Stream>::borrow(&(#stream)),
            &[#(::cuprum::external::IntoRawArg::raw_arg(&(#args))),*],
        )
    })
}

/// The index of the first run of three `c` punctuation tokens at or after `from`, joined as
/// one operator (`<<<`, `>>>`).
fn find_triple(tokens: &[TokenTree], c: char, from: usize) -> Option<usize> {
    (from..tokens.len().saturating_sub(2)).find(|&i| {
        tokens[i..i + 3].iter().enumerate().all(|(k, t)| match t {
            TokenTree::Punct(p) => p.as_char() == c && (k == 2 || p.spacing() == Spacing::Joint),
            _ => false,
        })
    })
}
