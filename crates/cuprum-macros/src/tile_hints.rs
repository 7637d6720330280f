//! `#[cuprum::tile::entry(optimization_hints = (sm_90 = (occupancy = 4), ..))]`: cuTile
//! Rust's per-target tuning hints, checked at `cargo build` (known targets, known hints,
//! values in range) and turned into the entry's table of `CompileOptions`, which the launch
//! consults for its device's target.

use proc_macro2::TokenStream;
use quote::quote;
use syn::spanned::Spanned;

/// One hint, as the source names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Hint {
    Occupancy,
    Warps,
    ClusterBlocks,
    MaxDivisibility,
}

impl Hint {
    const ALL: [(&'static str, Hint); 4] = [
        ("occupancy", Hint::Occupancy),
        ("num_worker_warps_per_cta", Hint::Warps),
        ("num_cta_in_cga", Hint::ClusterBlocks),
        ("max_divisibility", Hint::MaxDivisibility),
    ];

    fn named(name: &str) -> Option<Hint> {
        Self::ALL.iter().find(|(n, _)| *n == name).map(|(_, h)| *h)
    }

    fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, h)| *h == self)
            .map_or("", |(n, _)| n)
    }

    /// Why `value` is refused, if it is.
    fn refusal(self, value: u32) -> Option<String> {
        let ok = match self {
            Hint::Occupancy => (1..=32).contains(&value),
            Hint::Warps => value.is_power_of_two() && value <= 32,
            Hint::ClusterBlocks => (1..=16).contains(&value),
            Hint::MaxDivisibility => value.is_power_of_two(),
        };
        let wanted = match self {
            Hint::Occupancy => "1 to 32 blocks per multiprocessor",
            Hint::Warps => "a power of two from 1 to 32",
            Hint::ClusterBlocks => "1 to 16",
            Hint::MaxDivisibility => "a power of two",
        };
        (!ok).then(|| format!("`{}` must be {wanted}, not {value}", self.name()))
    }
}

/// The hints of one target (`sm_90`, or `default` for every target without its own).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct TargetHints {
    target: String,
    hints: Vec<(Hint, u32)>,
}

/// The `name = value` pairs of `(a = 1, b = 2)` (or `(a = 1)`).
fn assignments(expr: &syn::Expr) -> syn::Result<Vec<(syn::Ident, &syn::Expr)>> {
    let items: Vec<&syn::Expr> = match expr {
        syn::Expr::Paren(p) => vec![&*p.expr],
        syn::Expr::Tuple(t) => t.elems.iter().collect(),
        other => {
            return Err(syn::Error::new(
                other.span(),
                "expected `(name = value, ..)`, as in `optimization_hints = (sm_90 = (occupancy = 4))`",
            ));
        }
    };
    items
        .into_iter()
        .map(|item| match item {
            syn::Expr::Assign(a) => match &*a.left {
                syn::Expr::Path(p) if p.path.get_ident().is_some() => {
                    Ok((p.path.segments[0].ident.clone(), &*a.right))
                }
                other => Err(syn::Error::new(other.span(), "expected a name")),
            },
            other => Err(syn::Error::new(other.span(), "expected `name = value`")),
        })
        .collect()
}

/// Parses `optimization_hints`'s value.
pub(crate) fn parse(expr: &syn::Expr) -> syn::Result<Vec<TargetHints>> {
    let mut targets: Vec<TargetHints> = Vec::new();
    for (target, hints) in assignments(expr)? {
        let name = target.to_string();
        let is_sm = name
            .strip_prefix("sm_")
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
        if !is_sm && name != "default" {
            return Err(syn::Error::new(
                target.span(),
                format!("`{name}` is not a target: expected `sm_90`, `sm_100`, .. or `default`"),
            ));
        }
        if targets.iter().any(|t| t.target == name) {
            return Err(syn::Error::new(
                target.span(),
                format!("`{name}` is given twice"),
            ));
        }
        let mut parsed = TargetHints {
            target: name,
            hints: Vec::new(),
        };
        for (hint_name, value) in assignments(hints)? {
            let hint_text = hint_name.to_string();
            let Some(hint) = Hint::named(&hint_text) else {
                let per_op = matches!(hint_text.as_str(), "allow_tma" | "latency");
                let message = if per_op {
                    format!("`{hint_text}` is a hint of a load or store, not of an entry")
                } else {
                    format!(
                        "unknown hint `{hint_text}`: expected one of {}",
                        Hint::ALL.map(|(n, _)| format!("`{n}`")).join(", ")
                    )
                };
                return Err(syn::Error::new(hint_name.span(), message));
            };
            if parsed.hints.iter().any(|(h, _)| *h == hint) {
                return Err(syn::Error::new(
                    hint_name.span(),
                    format!("`{hint_text}` is given twice"),
                ));
            }
            let syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Int(int),
                ..
            }) = value
            else {
                return Err(syn::Error::new(value.span(), "expected an integer"));
            };
            let n: u32 = int.base10_parse()?;
            if let Some(why) = hint.refusal(n) {
                return Err(syn::Error::new(int.span(), why));
            }
            parsed.hints.push((hint, n));
        }
        targets.push(parsed);
    }
    Ok(targets)
}

/// The entry's table: `&[(target, CompileOptions), ..]`.
pub(crate) fn table(targets: &[TargetHints], private: &TokenStream) -> TokenStream {
    let rows = targets.iter().map(|t| {
        let target = &t.target;
        let setters = t.hints.iter().map(|(hint, n)| {
            let method = syn::Ident::new(hint.name(), proc_macro2::Span::call_site());
            quote!(.#method(#n))
        });
        quote!((#target, #private::CompileOptions::new() #(#setters)*))
    });
    quote!(&[#(#rows),*])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(s: &str) -> syn::Result<Vec<TargetHints>> {
        parse(&syn::parse_str::<syn::Expr>(s).expect("an expression"))
    }

    #[test]
    fn targets_and_hints_parse() {
        let t = parse_str(
            "(sm_120 = (num_cta_in_cga = 2, occupancy = 2, max_divisibility = 16,), sm_90 = (num_worker_warps_per_cta = 16,), default = (occupancy = 4))",
        )
        .expect("ok");
        assert_eq!(t.len(), 3);
        assert_eq!(t[0].target, "sm_120");
        assert_eq!(
            t[0].hints,
            vec![
                (Hint::ClusterBlocks, 2),
                (Hint::Occupancy, 2),
                (Hint::MaxDivisibility, 16)
            ]
        );
        assert_eq!(t[1].hints, vec![(Hint::Warps, 16)]);
        assert_eq!(t[2].target, "default");
        let table = table(&t, &quote!(p)).to_string();
        assert!(
            table.contains("num_worker_warps_per_cta (16u32)"),
            "{table}"
        );
    }

    #[test]
    fn bad_hints_are_refused_with_what_to_write() {
        for (source, says) in [
            ("(sm_90 = (occupancy = 0))", "1 to 32 blocks"),
            (
                "(sm_90 = (num_worker_warps_per_cta = 12))",
                "a power of two from 1 to 32",
            ),
            ("(sm_90 = (latency = 3))", "hint of a load or store"),
            ("(sm_90 = (warps = 3))", "unknown hint `warps`"),
            ("(hopper = (occupancy = 2))", "not a target"),
            ("(sm_90 = (occupancy = 2, occupancy = 4))", "given twice"),
            (
                "(sm_90 = (occupancy = 2), sm_90 = (occupancy = 4))",
                "given twice",
            ),
            ("(sm_90 = (occupancy = x))", "expected an integer"),
            ("sm_90", "expected `(name = value, ..)`"),
        ] {
            let e = parse_str(source).expect_err(source);
            assert!(e.to_string().contains(says), "{source}: {e}");
        }
    }
}
