//! The kernel language's macros: `const_shape![..]` (a static shape; `const_shape!(S)` of an
//! array parameter; `shape![..]` is the same, by cuTile Rust's newer name), `const_array![..]`, `cuda_tile_print!(fmt, args..)` and
//! `cuda_tile_assert!(cond, msg)` (`assert!` alike).
//!
//! `cuda_tile_print!` takes Rust's format syntax and prints once per tile block, through the
//! `printf` subset of `cuprum_ir::printf`, translated as the SIMT track's `println!` is (by
//! `cuprum_ir::printf::parse_rust_format` and `rust_conversion`): `{}` of an integer becomes
//! `%d`/`%u` (`%lld`/`%llu` for 64 bits), of a float `%g` (`{:.3}` gives `%.3f`), and so on; a
//! `bool` prints as `1` or `0`. `{name}` prints the variable `name`. Arguments are scalars.

use cuprum_ir::ScalarType;
use cuprum_ir::printf::{RustArg, RustPiece, rust_conversion};
use cuprum_tile_ir::{Elem, Stmt};
use proc_macro2::Span;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;

use super::*;

impl Lowerer<'_> {
    pub(super) fn macro_call(&mut self, mac: &syn::Macro, _expect: &Ty) -> Result<Val> {
        let name = mac
            .path
            .segments
            .last()
            .map(|s| s.ident.to_string())
            .unwrap_or_default();
        let span = mac.span();
        let args: Punctuated<syn::Expr, syn::Token![,]> = if mac.tokens.is_empty() {
            Punctuated::new()
        } else {
            mac.parse_body_with(Punctuated::parse_terminated)?
        };
        let args: Vec<&syn::Expr> = args.iter().collect();
        match name.as_str() {
            // `shape!` is the newer cuTile Rust name.
            "const_shape" | "shape" => {
                let mut entries = Vec::new();
                for a in args {
                    entries.extend(self.shape_macro_entry(a)?);
                }
                Ok(Val::Shape(entries))
            }
            "const_array" => {
                // `const_array!(P)` of an array const parameter whose numbers are known.
                if let [syn::Expr::Path(p)] = args.as_slice()
                    && let Some(name) = crate::types::path_name(&p.path)
                    && let Some(Generic::Array(dims)) = self.frame.env.get(&name)
                {
                    // Numbers known only at launch: axis numbers naming the parameter's
                    // elements (what `partition_permuted` takes).
                    if dims.iter().any(|d| matches!(d, Dim::Param(_))) {
                        return Ok(Val::Axes(
                            dims.iter()
                                .map(|d| match d {
                                    Dim::Known(n) => Axis::Known(*n),
                                    Dim::Param(i) => Axis::Param(*i),
                                })
                                .collect(),
                        ));
                    }
                    let arg: syn::GenericArgument = syn::parse_quote!(#p);
                    let numbers = self.type_cx().const_array_arg(&arg)?;
                    return Ok(Val::Array(
                        numbers
                            .into_iter()
                            .map(|n| Val::lit(Lit::typed_int(i128::from(n), ScalarType::I32)))
                            .collect(),
                    ));
                }
                let items = args
                    .iter()
                    .map(|a| match self.expr(a, &Ty::Infer)? {
                        v @ Val::Lit(..) => Ok(v),
                        _ => err(a.span(), "`const_array!` takes numbers"),
                    })
                    .collect::<Result<Vec<_>>>()?;
                Ok(Val::Array(items))
            }
            "cuda_tile_print" => {
                self.print(&args, span)?;
                Ok(Val::Unit)
            }
            "cuda_tile_assert" | "assert" | "debug_assert" => {
                let Some((cond, rest)) = args.split_first() else {
                    return err(span, format!("`{name}!` needs a condition"));
                };
                let message = match rest.first() {
                    Some(syn::Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Str(s),
                        ..
                    })) => s.value(),
                    Some(other) => crate::source_text(other),
                    None => format!("assertion failed: {}", crate::source_text(cond)),
                };
                let c = self.expr(cond, &Ty::Infer)?;
                if let Val::Lit(l, _) = &c
                    && l.constant(ScalarType::Bool, cond.span())?.bits != 0
                {
                    return Ok(Val::Unit);
                }
                let c = self.tile(c, cond.span())?;
                self.scalar_bool(c, cond.span())?;
                self.b.push(Stmt::Assert { cond: c, message });
                Ok(Val::Unit)
            }
            "println" | "print" | "eprintln" | "eprint" => err(
                span,
                format!(
                    "`{name}!` is host code; a tile kernel prints with `cuda_tile_print!(\"..\\n\", ..)`"
                ),
            ),
            _ => err(
                span,
                format!("the macro `{name}!` is not supported in tile kernels"),
            ),
        }
    }

    /// One argument of `const_shape!`: a dimension, or a whole array parameter.
    fn shape_macro_entry(&self, e: &syn::Expr) -> Result<Vec<ShapeEntry>> {
        if let syn::Expr::Path(p) = e
            && let Some(name) = crate::types::path_name(&p.path)
            && let Some(Generic::Array(dims)) = self.frame.env.get(&name)
        {
            return Ok(dims.iter().map(|d| ShapeEntry::Dim(*d)).collect());
        }
        match self.type_cx().extent(e)? {
            Extent::Dim(d) => Ok(vec![ShapeEntry::Dim(d)]),
            Extent::Dynamic => err(e.span(), "a tile shape has no `-1` dimensions"),
        }
    }

    fn print(&mut self, args: &[&syn::Expr], span: Span) -> Result<()> {
        let Some((fmt, rest)) = args.split_first() else {
            return err(span, "`cuda_tile_print!` needs a format string");
        };
        let syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(fmt),
            ..
        }) = fmt
        else {
            return err(
                fmt.span(),
                "the first argument of `cuda_tile_print!` is a string literal",
            );
        };
        let pieces = cuprum_ir::printf::parse_rust_format(&fmt.value())
            .map_err(|e| syn::Error::new(fmt.span(), e))?;
        let mut positional = Vec::with_capacity(rest.len());
        for e in rest {
            positional.push((self.expr(e, &Ty::Infer)?, e.span()));
        }
        let mut next = 0usize;
        let mut out = String::new();
        let mut values = Vec::new();
        for piece in pieces {
            let (which, spec) = match piece {
                RustPiece::Text(t) => {
                    out.push_str(&t);
                    continue;
                }
                RustPiece::Arg { which, spec } => (which, spec),
            };
            let (value, vspan) = match which {
                RustArg::Next => {
                    next += 1;
                    match positional.get(next - 1) {
                        Some(v) => v.clone(),
                        None => {
                            return err(
                                fmt.span(),
                                "the format string has more `{}` than `cuda_tile_print!` has arguments",
                            );
                        }
                    }
                }
                RustArg::Index(k) => match positional.get(k) {
                    Some(v) => v.clone(),
                    None => return err(fmt.span(), format!("no argument {k} to print")),
                },
                RustArg::Name(arg) => {
                    let e: syn::Expr = syn::parse_str(&arg).map_err(|_| {
                        syn::Error::new(
                            fmt.span(),
                            format!("bad argument `{arg}` in the format string"),
                        )
                    })?;
                    (self.expr(&e, &Ty::Infer)?, fmt.span())
                }
            };
            let v = self.tile(value, vspan)?;
            let ty = self.ty(v);
            let Elem::Known(t) = ty.elem else {
                return err(
                    vspan,
                    "printing a value whose type is a type parameter is not supported",
                );
            };
            if !ty.shape.is_empty() {
                return err(
                    vspan,
                    format!(
                        "`cuda_tile_print!` prints scalars, not `{}`",
                        self.show(&ty)
                    ),
                );
            }
            let conv = rust_conversion(&spec, t).map_err(|m| syn::Error::new(fmt.span(), m))?;
            out.push_str(&conv);
            values.push(v);
        }
        if next < positional.len() {
            return err(
                span,
                format!(
                    "`cuda_tile_print!` has {} arguments, but its format string uses {next}",
                    positional.len()
                ),
            );
        }
        let types: Vec<ScalarType> = values
            .iter()
            .filter_map(|v| self.ty(*v).elem.known())
            .collect();
        cuprum_ir::printf::check_print(&out, &types).map_err(|e| {
            syn::Error::new(fmt.span(), format!("this format cannot be printed: {e}"))
        })?;
        self.b.push(Stmt::Print {
            format: out,
            args: values,
        });
        Ok(())
    }
}
