//! The kernel language's macros: `const_shape![..]` (a static shape; `const_shape!(S)` of an
//! array parameter), `const_array![..]`, `cuda_tile_print!(fmt, args..)` and
//! `cuda_tile_assert!(cond, msg)` (`assert!` alike).
//!
//! `cuda_tile_print!` takes Rust's format syntax and prints once per tile block, through the
//! `printf` subset of `cuprum_ir::printf`: `{}` of an integer becomes `%d`/`%u` (`%lld`/`%llu`
//! for 64 bits), of a float `%g` (`{:.3}` gives `%.3f`, `{:e}` `%e`), with `{:x}`, `{:X}`,
//! `{:o}`, widths, `<`/`>` alignment, `+` and `0` padding; a `bool` prints as `1` or `0`.
//! `{name}` prints the variable `name`. Arguments are scalars.

use cuprum_ir::ScalarType;
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
            "const_shape" => {
                let mut entries = Vec::new();
                for a in args {
                    entries.extend(self.shape_macro_entry(a)?);
                }
                Ok(Val::Shape(entries))
            }
            "const_array" => {
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
        let text = fmt.value();
        let mut positional = Vec::with_capacity(rest.len());
        for e in rest {
            positional.push((self.expr(e, &Ty::Infer)?, e.span()));
        }
        let mut next = 0usize;
        let mut out = String::new();
        let mut values = Vec::new();
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '{' if chars.peek() == Some(&'{') => {
                    chars.next();
                    out.push('{');
                }
                '}' if chars.peek() == Some(&'}') => {
                    chars.next();
                    out.push('}');
                }
                '%' => out.push_str("%%"),
                '{' => {
                    let mut spec = String::new();
                    let mut closed = false;
                    for d in chars.by_ref() {
                        if d == '}' {
                            closed = true;
                            break;
                        }
                        spec.push(d);
                    }
                    if !closed {
                        return err(fmt.span(), "an unclosed `{` in the format string");
                    }
                    let (arg, format) = spec.split_once(':').unwrap_or((spec.as_str(), ""));
                    let (value, vspan) = if arg.is_empty() {
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
                    } else if let Ok(k) = arg.parse::<usize>() {
                        match positional.get(k) {
                            Some(v) => v.clone(),
                            None => return err(fmt.span(), format!("no argument {k} to print")),
                        }
                    } else {
                        let e: syn::Expr = syn::parse_str(arg).map_err(|_| {
                            syn::Error::new(
                                fmt.span(),
                                format!("bad argument `{arg}` in the format string"),
                            )
                        })?;
                        (self.expr(&e, &Ty::Infer)?, fmt.span())
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
                    let conv =
                        printf_conversion(format, t).map_err(|m| syn::Error::new(fmt.span(), m))?;
                    out.push_str(&conv);
                    values.push(v);
                }
                other => out.push(other),
            }
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

/// The `printf` conversion for a Rust format spec (`""`, `"5"`, `"<8.3"`, `"x"`, `"e"`) of a
/// value of type `ty`.
fn printf_conversion(spec: &str, ty: ScalarType) -> std::result::Result<String, String> {
    let mut flags = String::new();
    let mut rest = spec;
    if let Some(r) = rest.strip_prefix('<') {
        flags.push('-');
        rest = r;
    } else if let Some(r) = rest.strip_prefix('>') {
        rest = r;
    }
    if let Some(r) = rest.strip_prefix('+') {
        flags.push('+');
        rest = r;
    }
    if let Some(r) = rest.strip_prefix('0') {
        flags.push('0');
        rest = r;
    }
    let kind = rest
        .chars()
        .last()
        .filter(|c| matches!(c, 'x' | 'X' | 'e' | 'E' | '?' | 'o'));
    if kind.is_some() {
        rest = &rest[..rest.len() - 1];
    }
    let (width, precision) = match rest.split_once('.') {
        Some((w, p)) => (w, Some(p)),
        None => (rest, None),
    };
    if !width.chars().all(|c| c.is_ascii_digit())
        || !precision.is_none_or(|p| p.chars().all(|c| c.is_ascii_digit()))
    {
        return Err(format!(
            "the format spec `{{:{spec}}}` is not supported in a tile kernel"
        ));
    }
    let prec = precision.map(|p| format!(".{p}")).unwrap_or_default();
    if ty.is_float() {
        let c = match (kind, precision) {
            (Some('e'), _) => "e",
            (Some('E'), _) => "E",
            (_, Some(_)) => "f",
            _ => "g",
        };
        return Ok(format!("%{flags}{width}{prec}{c}"));
    }
    let wide = ty.size_bytes() == 8;
    let c = match kind {
        Some('x') => "x",
        Some('X') => "X",
        Some('o') => "o",
        _ if ty.is_signed_int() => "d",
        _ => "u",
    };
    Ok(format!(
        "%{flags}{width}{}{c}",
        if wide { "ll" } else { "" }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rust_format_specs_become_printf_conversions() {
        assert_eq!(printf_conversion("", ScalarType::I32).as_deref(), Ok("%d"));
        assert_eq!(
            printf_conversion("", ScalarType::U64).as_deref(),
            Ok("%llu")
        );
        assert_eq!(
            printf_conversion(".3", ScalarType::F32).as_deref(),
            Ok("%.3f")
        );
        assert_eq!(
            printf_conversion("<8x", ScalarType::U32).as_deref(),
            Ok("%-8x")
        );
        assert_eq!(printf_conversion("e", ScalarType::F64).as_deref(), Ok("%e"));
        assert!(printf_conversion("^5", ScalarType::I32).is_err());
    }
}
