//! Device macros: `println!`/`print!` (CUDA's `vprintf`; the emulator prints the same text)
//! and `assert!`, `assert_eq!`, `assert_ne!`, `debug_assert*!`, `panic!`, `unreachable!`
//! (a failed one stops the kernel with an error naming the kernel and the message).
//!
//! Rust format strings are translated to the `printf` subset of `cuprum_ir::printf` (by its
//! `parse_rust_format` and `rust_conversion`, which the tile front end shares): `{}`
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
    /// `addr_of_mut!(TILE)`, `&raw const BAR`: a raw pointer to the first element of a
    /// shared array (a `static mut` one, an mbarrier, or dynamic shared memory).
    pub(super) fn raw_address(
        &mut self,
        place: &syn::Expr,
        mutable: bool,
        span: proc_macro2::Span,
    ) -> Result<Val> {
        match self.expr(place)? {
            Val::Shared { array, elem, .. } => {
                let addr = match array {
                    Some(a) => self.def(cuprum_ir::Op::SharedAddr(a), span)?,
                    None => self.def(cuprum_ir::Op::DynSharedAddr, span)?,
                };
                Ok(Val::Ptr {
                    addr,
                    elem,
                    mutable,
                    space: cuprum_ir::AddressSpace::Shared,
                })
            }
            other => err(
                place.span(),
                format!(
                    "a raw pointer to {} is not supported in device code: take it of a \
                     shared array of scalars or an mbarrier",
                    describe(&other)
                ),
            ),
        }
    }

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
            // `core::ptr::addr_of_mut!(TILE)`: a raw pointer to the first element of a shared
            // array (a `static mut` one, or dynamic shared memory), as cuda-oxide takes
            // `cp.async` destinations.
            "addr_of_mut" | "addr_of" => {
                let [place] = args[..] else {
                    return err(span, format!("`{name}!` takes one place"));
                };
                self.raw_address(place, name == "addr_of_mut", span)
            }
            // `gpu_printf!` is cuda-oxide's `print!` (its format string ends with `\n`).
            "println" | "print" | "eprintln" | "eprint" => {
                self.print(&args, name.ends_with("ln"), false, span)?;
                Ok(Val::Unit)
            }
            // cuda-oxide's `gpu_printf!`: C's specs inside the braces (`{:#x}`, `{:.2f}`),
            // no newline added, and CUDA `printf`'s value: the number of arguments.
            "gpu_printf" => {
                self.print(&args, false, true, span)?;
                let count = args.len().saturating_sub(1) as i32;
                Ok(Val::Scalar(self.constant(cuprum_ir::Constant::i32(count))))
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
        self.trap_if(failed, TrapKind::Assert { message });
        Ok(())
    }

    /// `println!` and its kin (Rust's format specs), or `gpu_printf!` with `c_specs` (C's).
    fn print(
        &mut self,
        args: &[&syn::Expr],
        newline: bool,
        c_specs: bool,
        span: Span,
    ) -> Result<()> {
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
        let pieces = cuprum_ir::printf::parse_rust_format(&fmt.value())
            .map_err(|e| syn::Error::new(fmt.span(), e))?;
        let mut positional = rest
            .iter()
            .map(|e| self.expr(e))
            .collect::<Result<Vec<_>>>()?;
        let mut next = 0usize;
        let mut out = String::new();
        let mut values = Vec::new();
        for piece in pieces {
            let (which, spec) = match piece {
                cuprum_ir::printf::RustPiece::Text(t) => {
                    out.push_str(&t);
                    continue;
                }
                cuprum_ir::printf::RustPiece::Arg { which, spec } => (which, spec),
            };
            let value = match which {
                cuprum_ir::printf::RustArg::Next => {
                    next += 1;
                    positional.get(next - 1).cloned()
                }
                cuprum_ir::printf::RustArg::Index(k) => positional.get(k).cloned(),
                cuprum_ir::printf::RustArg::Name(arg) => {
                    let e: syn::Expr = syn::parse_str(&arg).map_err(|_| {
                        syn::Error::new(
                            fmt.span(),
                            format!("bad argument `{arg}` in the format string"),
                        )
                    })?;
                    Some(self.expr(&e)?)
                }
            };
            let Some(value) = value else {
                return err(
                    fmt.span(),
                    "the format string names more arguments than `println!` has",
                );
            };
            let x = self.scalar(value, fmt.span())?;
            let conv = if c_specs {
                cuprum_ir::printf::c_style_conversion(&spec, self.ty(x))
            } else {
                cuprum_ir::printf::rust_conversion(&spec, self.ty(x))
            }
            .map_err(|e| syn::Error::new(fmt.span(), e))?;
            out.push_str(&conv);
            values.push(x);
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
