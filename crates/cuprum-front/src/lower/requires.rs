//! A launch contract's `requires = (..)` relations as the IR's launch requirements
//! ([`cuprum_ir::requires`]), so that the optimizer may rely on them.
//!
//! The macro checks each relation on the host in every generated launch (its `requires`),
//! and the runtime checks the IR's copy again at every launch on both backends, so a
//! relation the IR carries holds in every launch that runs. A relation that reads anything
//! but integer literals, integer scalar parameters and `len()` of plain slice parameters
//! (whose IR length is the user's length) is left out of the IR: the host still checks it,
//! the optimizer just does not know it. The grammar is the macro's, which has already
//! refused anything else with an error at the user's code.

use std::collections::HashMap;

use cuprum_ir::CmpOp;
use cuprum_ir::requires::{Requirement, Term, TermOp};

/// What a relation may read of a parameter, by the parameter's name.
#[derive(Clone, Copy, Debug)]
pub(super) enum Read {
    /// An integer scalar, parameter `i`.
    Scalar(u32),
    /// A plain slice, parameter `i`: its `len()`.
    Slice(u32),
}

/// `relation` as an IR requirement, when every operand is one the IR can read.
pub(super) fn requirement(
    relation: &syn::Expr,
    params: &HashMap<String, Read>,
) -> Option<Requirement> {
    let syn::Expr::Binary(b) = relation else {
        return None;
    };
    let op = match b.op {
        syn::BinOp::Eq(_) => CmpOp::Eq,
        syn::BinOp::Ne(_) => CmpOp::Ne,
        syn::BinOp::Lt(_) => CmpOp::Lt,
        syn::BinOp::Le(_) => CmpOp::Le,
        syn::BinOp::Gt(_) => CmpOp::Gt,
        syn::BinOp::Ge(_) => CmpOp::Ge,
        _ => return None,
    };
    let text = quote::quote!(#relation)
        .to_string()
        .replace(" . ", ".")
        .replace(" ()", "()");
    Some(Requirement {
        left: term(&b.left, params)?,
        op,
        right: term(&b.right, params)?,
        text,
    })
}

fn term(e: &syn::Expr, params: &HashMap<String, Read>) -> Option<Term> {
    Some(match e {
        syn::Expr::Paren(p) => term(&p.expr, params)?,
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(i),
            ..
        }) => Term::Const(i.base10_parse::<u64>().ok()?),
        syn::Expr::Path(p) => match params.get(&p.path.get_ident()?.to_string())? {
            Read::Scalar(i) => Term::Param(*i),
            Read::Slice(_) => return None,
        },
        syn::Expr::MethodCall(m) if m.method == "len" && m.args.is_empty() => {
            let syn::Expr::Path(p) = &*m.receiver else {
                return None;
            };
            match params.get(&p.path.get_ident()?.to_string())? {
                Read::Slice(i) => Term::Len(*i),
                Read::Scalar(_) => return None,
            }
        }
        syn::Expr::Binary(b) => {
            let op = match b.op {
                syn::BinOp::Add(_) => TermOp::Add,
                syn::BinOp::Sub(_) => TermOp::Sub,
                syn::BinOp::Mul(_) => TermOp::Mul,
                syn::BinOp::Div(_) => TermOp::Div,
                _ => return None,
            };
            Term::Bin(
                op,
                Box::new(term(&b.left, params)?),
                Box::new(term(&b.right, params)?),
            )
        }
        _ => return None,
    })
}
