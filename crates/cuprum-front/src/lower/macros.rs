//! Device macros: `println!`/`print!` (CUDA's `vprintf`; the emulator prints the same text)
//! and `assert!`, `assert_eq!`, `assert_ne!`, `debug_assert*!`, `panic!`, `unreachable!`
//! (a failed one stops the kernel with an error naming the kernel and the message).
//!
//! Rust format strings are translated to the `printf` subset of `cuprum_ir::printf`: `{}`
//! becomes `%d`/`%u`/`%lld`/`%llu` for integers by type and `%g` for floats (`{:.3}` gives
//! `%.3f`, `{:e}` `%e`, `{:x}` `%x`), with width, `<`/`>` alignment and `0` padding. A `bool`
//! prints as `1` or `0`.

use cuprum_ir::{Op, ScalarType as S, Stmt, TrapKind, UnaryOp};
use proc_macro2::Span;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;

use super::*;

impl Lowerer<'_> {
    /// A macro invocation in device code.
    pub(super) fn device_macro(&mut self, mac: &syn::Macro) -> Result<Val> {
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
            "println" | "print" | "eprintln" | "eprint" => {
                self.print(&args, name.ends_with("ln"), span)?;
                Ok(Val::Unit)
            }
            "assert" | "debug_assert" => {
                let Some((cond, message)) = args.split_first() else {
                    return err(span, "`assert!` needs a condition");
                };
                let c = self.boolean(cond)?;
                let text = match message.first() {
                    Some(m) => literal_text(m),
                    None => format!("assertion failed: {}", source_text(*cond)),
                };
                self.assert_holds(c, text, span)?;
                Ok(Val::Unit)
            }
            "assert_eq" | "assert_ne" | "debug_assert_eq" | "debug_assert_ne" => {
                let [l, r, message @ ..] = &args[..] else {
                    return err(span, format!("`{name}!` needs two values"));
                };
                let (lv, rv) = (self.expr(l)?, self.expr(r)?);
                let op = if name.ends_with("eq") {
                    syn::BinOp::Eq(Default::default())
                } else {
                    syn::BinOp::Ne(Default::default())
                };
                let cmp = if matches!(op, syn::BinOp::Eq(_)) {
                    cuprum_ir::CmpOp::Eq
                } else {
                    cuprum_ir::CmpOp::Ne
                };
                let c = self.compare(cmp, lv, rv, span)?;
                let c = self.materialize(c, S::Bool, span)?;
                let text = match message.first() {
                    Some(m) => literal_text(m),
                    None => format!(
                        "assertion `left {} right` failed: {} vs {}",
                        if matches!(op, syn::BinOp::Eq(_)) {
                            "=="
                        } else {
                            "!="
                        },
                        source_text(*l),
                        source_text(*r)
                    ),
                };
                self.assert_holds(c, text, span)?;
                Ok(Val::Unit)
            }
            "panic" | "unreachable" | "todo" | "unimplemented" => {
                let text = match args.first() {
                    Some(m) => literal_text(m),
                    None => format!("{name}!() reached"),
                };
                self.b.push(Stmt::Trap(TrapKind::Assert { message: text }));
                Ok(Val::Never)
            }
            "vec" => err(
                span,
                "`vec!` allocates on the heap, which device code cannot do",
            ),
            "format" | "write" | "writeln" => err(
                span,
                "formatting into strings is not available in device code; use `println!`",
            ),
            _ => err(
                span,
                format!("`{name}!`: macros are not supported in device code"),
            ),
        }
    }

    fn assert_holds(&mut self, cond: cuprum_ir::Value, message: String, span: Span) -> Result<()> {
        let failed = self.def(Op::Unary(UnaryOp::Not, cond), span)?;
        self.b.begin_block();
        self.b.push(Stmt::Trap(TrapKind::Assert { message }));
        let then = self.b.end_block();
        self.b.push(Stmt::If {
            cond: failed,
            then,
            otherwise: Default::default(),
        });
        Ok(())
    }

    fn print(&mut self, args: &[&syn::Expr], newline: bool, span: Span) -> Result<()> {
        let Some((fmt, rest)) = args.split_first() else {
            if newline {
                self.b.push(Stmt::Print {
                    format: "\n".into(),
                    args: vec![],
                });
            }
            return Ok(());
        };
        let syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(fmt),
            ..
        }) = fmt
        else {
            return err(
                fmt.span(),
                "the first argument of `println!` must be a string literal",
            );
        };
        let text = fmt.value();
        let mut positional = rest
            .iter()
            .map(|e| self.expr(e))
            .collect::<Result<Vec<_>>>()?;
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
                    for d in chars.by_ref() {
                        if d == '}' {
                            break;
                        }
                        spec.push(d);
                    }
                    let (arg, format) = spec.split_once(':').unwrap_or((spec.as_str(), ""));
                    let value = if arg.is_empty() {
                        next += 1;
                        positional.get(next - 1).cloned()
                    } else if let Ok(k) = arg.parse::<usize>() {
                        positional.get(k).cloned()
                    } else {
                        let e: syn::Expr = syn::parse_str(arg).map_err(|_| {
                            syn::Error::new(
                                fmt.span(),
                                format!("bad argument `{arg}` in the format string"),
                            )
                        })?;
                        Some(self.expr(&e)?)
                    };
                    let Some(value) = value else {
                        return err(
                            fmt.span(),
                            "the format string names more arguments than `println!` has",
                        );
                    };
                    let x = self.scalar(value, fmt.span())?;
                    let (conv, x) = self.printf_conversion(x, format, fmt.span())?;
                    out.push_str(&conv);
                    values.push(x);
                }
                other => out.push(other),
            }
        }
        if newline {
            out.push('\n');
        }
        positional.clear();
        let types: Vec<S> = values.iter().map(|v| self.ty(*v)).collect();
        cuprum_ir::printf::check_print(&out, &types).map_err(|e| {
            syn::Error::new(span, format!("internal compiler error in `println!`: {e}"))
        })?;
        self.b.push(Stmt::Print {
            format: out,
            args: values,
        });
        Ok(())
    }

    /// The `printf` conversion for a Rust format spec (`""`, `"5"`, `"<8.3"`, `"x"`, `"e"`).
    fn printf_conversion(
        &mut self,
        x: cuprum_ir::Value,
        spec: &str,
        span: Span,
    ) -> Result<(String, cuprum_ir::Value)> {
        let ty = self.ty(x);
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
            return err(
                span,
                format!("unsupported format spec `{{:{spec}}}` in device code"),
            );
        }
        let prec = precision.map(|p| format!(".{p}")).unwrap_or_default();
        let conv = if ty.is_float() {
            let c = match (kind, precision) {
                (Some('e'), _) => "e",
                (Some('E'), _) => "E",
                (_, Some(_)) => "f",
                _ => "g",
            };
            format!("%{flags}{width}{prec}{c}")
        } else {
            let wide = ty.size_bytes() == 8;
            let c = match kind {
                Some('x') => "x",
                Some('X') => "X",
                Some('o') => "o",
                _ if ty.is_signed_int() => "d",
                _ => "u",
            };
            format!("%{flags}{width}{}{c}", if wide { "ll" } else { "" })
        };
        Ok((conv, x))
    }
}

/// The text of a string literal argument (a message), or its source when it is not one.
fn literal_text(e: &syn::Expr) -> String {
    match e {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(s),
            ..
        }) => s.value(),
        other => source_text(other),
    }
}
