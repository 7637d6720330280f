//! Naming one specialization of a generic kernel on the command line, for `emit`.
//!
//! A generic kernel (`fn scale<T, const N: usize>`) has no code until a launch fixes its
//! parameters, so `emit` needs them spelled out. Two spellings are accepted, because users
//! reach for both: the Rust one, `--kernel 'scale::<f32, 4>'` (arguments in declaration
//! order, `::` optional), and the named one, `--kernel scale --specialize T=f32,N=4`. This
//! module parses either and checks it against the kernel's parameters (count, names, scalar
//! types, const values in range of their type) into the [`Specialization`] a launch builds,
//! with a message that says what the kernel takes whenever it does not fit.

use cuprum_front::Specialization;
use cuprum_ir::ScalarType;

/// The generic arguments as the user wrote them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SpecArgs {
    /// `name::<f32, 4>`: in the kernel's declaration order.
    Positional(Vec<String>),
    /// `--specialize T=f32,N=4`: by parameter name.
    Named(Vec<(String, String)>),
}

/// What `--kernel` (and `--specialize`) ask for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelRequest {
    /// The kernel's function name.
    pub name: String,
    /// Its specialization, if one was named.
    pub spec: Option<SpecArgs>,
}

/// Parses `--kernel` (`NAME` or `NAME::<ARGS>`) and `--specialize` (`P=V,...`).
///
/// ```
/// use cargo_cuprum::specialize::{parse_request, SpecArgs};
///
/// let r = parse_request("scale::<f32, 4>", None)?;
/// assert_eq!(r.name, "scale");
/// assert_eq!(r.spec, Some(SpecArgs::Positional(vec!["f32".into(), "4".into()])));
/// let r = parse_request("scale", Some("T=f32, N=4"))?;
/// assert_eq!(r.spec, Some(SpecArgs::Named(vec![("T".into(), "f32".into()), ("N".into(), "4".into())])));
/// assert!(parse_request("scale::<f32>", Some("T=f32")).is_err());
/// # Ok::<(), String>(())
/// ```
pub fn parse_request(kernel: &str, specialize: Option<&str>) -> Result<KernelRequest, String> {
    let kernel = kernel.trim();
    let (name, positional) = match kernel.find('<') {
        None => (kernel, None),
        Some(at) => {
            let inner = kernel[at + 1..].trim_end();
            let Some(inner) = inner.strip_suffix('>') else {
                return Err(format!(
                    "--kernel `{kernel}`: a specialization is written `NAME::<ARG, ...>`, \
                     closed by `>`"
                ));
            };
            let args = split_list(inner);
            if args.is_empty() {
                return Err(format!(
                    "--kernel `{kernel}`: `<>` names no generic argument; write e.g. \
                     `{}::<f32>`",
                    kernel[..at].trim_end().trim_end_matches("::")
                ));
            }
            (kernel[..at].trim_end().trim_end_matches("::"), Some(args))
        }
    };
    if name.is_empty() || !name.chars().all(|c| c.is_alphanumeric() || c == '_') {
        return Err(format!(
            "--kernel `{kernel}`: expected a kernel's function name, optionally followed by \
             `::<ARG, ...>`"
        ));
    }
    let named = match specialize {
        None => None,
        Some(text) => {
            let mut pairs: Vec<(String, String)> = Vec::new();
            for part in split_list(text) {
                let Some((param, value)) = part.split_once('=') else {
                    return Err(format!(
                        "--specialize `{text}`: `{part}` is not `PARAM=VALUE` (write e.g. \
                         `T=f32,N=4`)"
                    ));
                };
                let (param, value) = (param.trim().to_owned(), value.trim().to_owned());
                if param.is_empty() || value.is_empty() {
                    return Err(format!(
                        "--specialize `{text}`: `{part}` needs both a parameter and a value"
                    ));
                }
                if pairs.iter().any(|(p, _)| *p == param) {
                    return Err(format!("--specialize `{text}`: `{param}` is given twice"));
                }
                pairs.push((param, value));
            }
            if pairs.is_empty() {
                return Err("--specialize needs `PARAM=VALUE`, e.g. `T=f32,N=4`".to_owned());
            }
            Some(pairs)
        }
    };
    let spec = match (positional, named) {
        (Some(_), Some(_)) => {
            return Err(format!(
                "--kernel `{kernel}` already names a specialization; drop --specialize (or \
                 the `::<...>`)"
            ));
        }
        (Some(args), None) => Some(SpecArgs::Positional(args)),
        (None, Some(pairs)) => Some(SpecArgs::Named(pairs)),
        (None, None) => None,
    };
    Ok(KernelRequest {
        name: name.to_owned(),
        spec,
    })
}

fn split_list(text: &str) -> Vec<String> {
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// One generic parameter of a kernel, in declaration order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GenericParam {
    /// `T`: a scalar element type.
    Type(String),
    /// `const N: usize`: `ty` is `None` when the written type is not a scalar cuprum knows
    /// (the front end refuses such a kernel anyway).
    Const {
        /// The parameter's name (`N`).
        name: String,
        /// Its type as written in the source (`usize`).
        written: String,
        /// That type as a cuprum scalar type, when it is one.
        ty: Option<ScalarType>,
    },
}

impl GenericParam {
    fn name(&self) -> &str {
        match self {
            Self::Type(name) | Self::Const { name, .. } => name,
        }
    }
}

/// The type and const parameters of a kernel function (lifetimes are not counted).
pub fn generic_params(f: &syn::ItemFn) -> Vec<GenericParam> {
    f.sig
        .generics
        .params
        .iter()
        .filter_map(|g| match g {
            syn::GenericParam::Type(t) => Some(GenericParam::Type(t.ident.to_string())),
            syn::GenericParam::Const(c) => {
                let written = match &c.ty {
                    syn::Type::Path(p) => p
                        .path
                        .segments
                        .iter()
                        .map(|s| s.ident.to_string())
                        .collect::<Vec<_>>()
                        .join("::"),
                    _ => "?".to_owned(),
                };
                let last = written.rsplit("::").next().unwrap_or("");
                Some(GenericParam::Const {
                    name: c.ident.to_string(),
                    ty: ScalarType::from_rust_name(last),
                    written,
                })
            }
            syn::GenericParam::Lifetime(_) => None,
        })
        .collect()
}

/// `<T, const N: usize>`.
pub fn describe(params: &[GenericParam]) -> String {
    let parts: Vec<String> = params
        .iter()
        .map(|p| match p {
            GenericParam::Type(name) => name.clone(),
            GenericParam::Const { name, written, .. } => format!("const {name}: {written}"),
        })
        .collect();
    format!("<{}>", parts.join(", "))
}

/// How to name a specialization of `kernel`, in both spellings, with example values.
pub fn example(kernel: &str, params: &[GenericParam]) -> String {
    let value = |p: &GenericParam| match p {
        GenericParam::Type(_) => "f32".to_owned(),
        GenericParam::Const {
            ty: Some(ScalarType::Bool),
            ..
        } => "true".to_owned(),
        GenericParam::Const { .. } => "4".to_owned(),
    };
    let positional: Vec<String> = params.iter().map(value).collect();
    let named: Vec<String> = params
        .iter()
        .map(|p| format!("{}={}", p.name(), value(p)))
        .collect();
    format!(
        "--kernel '{kernel}::<{}>' or --kernel {kernel} --specialize {}",
        positional.join(", "),
        named.join(",")
    )
}

const TYPE_NAMES: &str = "bool, i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64";

fn scalar_type(param: &str, value: &str) -> Result<ScalarType, String> {
    let bare = value.strip_prefix("half::").unwrap_or(value);
    ScalarType::from_rust_name(bare).ok_or_else(|| {
        let hint = if value.parse::<i128>().is_ok() || value == "true" || value == "false" {
            " (it is a type parameter: give a type, not a value)"
        } else {
            ""
        };
        format!(
            "`{param}` = `{value}` is not a scalar type kernels take{hint}; use one of {TYPE_NAMES}"
        )
    })
}

fn const_value(
    param: &str,
    written: &str,
    ty: Option<ScalarType>,
    value: &str,
) -> Result<i128, String> {
    let Some(ty) = ty else {
        return Err(format!(
            "`const {param}: {written}` is not an integer or bool parameter kernels take"
        ));
    };
    if ty == ScalarType::Bool {
        return match value {
            "true" => Ok(1),
            "false" => Ok(0),
            _ => Err(format!(
                "`{param}` is `const {param}: bool`: give `true` or `false`, not `{value}`"
            )),
        };
    }
    let digits: String = value.chars().filter(|&c| c != '_').collect();
    let Ok(v) = digits.parse::<i128>() else {
        let hint = if ScalarType::from_rust_name(value).is_some() {
            " (it is a const parameter: give a number, not a type)"
        } else {
            ""
        };
        return Err(format!(
            "`{param}` is `const {param}: {written}`: `{value}` is not an integer{hint}"
        ));
    };
    let bits = ty.bits();
    let (min, max) = if ty.is_signed_int() {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        (0, (1i128 << bits) - 1)
    };
    if v < min || v > max {
        return Err(format!(
            "`{param}` is `const {param}: {written}`: {v} is out of its range {min}..={max}"
        ));
    }
    Ok(v)
}

/// Checks `args` against `kernel`'s `params` and builds the [`Specialization`] a launch with
/// those arguments builds (types in declaration order, then consts in declaration order).
pub fn resolve(
    kernel: &str,
    params: &[GenericParam],
    args: &SpecArgs,
) -> Result<Specialization, String> {
    let takes = format!(
        "kernel `{kernel}` takes {}; name a specialization as {}",
        describe(params),
        example(kernel, params)
    );
    let values: Vec<&str> = match args {
        SpecArgs::Positional(values) => {
            if values.len() != params.len() {
                return Err(format!(
                    "{} generic argument(s) given (`{}`), {} expected: {takes}",
                    values.len(),
                    values.join(", "),
                    params.len()
                ));
            }
            values.iter().map(String::as_str).collect()
        }
        SpecArgs::Named(pairs) => {
            if let Some((unknown, _)) = pairs
                .iter()
                .find(|(p, _)| !params.iter().any(|q| q.name() == p))
            {
                return Err(format!("no generic parameter `{unknown}`: {takes}"));
            }
            let mut values = Vec::with_capacity(params.len());
            for p in params {
                match pairs.iter().find(|(name, _)| name == p.name()) {
                    Some((_, v)) => values.push(v.as_str()),
                    None => return Err(format!("`{}` is not given: {takes}", p.name())),
                }
            }
            values
        }
    };
    let mut spec = Specialization::default();
    for (param, value) in params.iter().zip(values) {
        match param {
            GenericParam::Type(name) => {
                let ty = scalar_type(name, value).map_err(|e| format!("{e}; {takes}"))?;
                spec.types.push((name.clone(), ty));
            }
            GenericParam::Const { name, written, ty } => {
                let v =
                    const_value(name, written, *ty, value).map_err(|e| format!("{e}; {takes}"))?;
                spec.consts.push((name.clone(), v));
            }
        }
    }
    Ok(spec)
}

/// `scale::<f32, 4>`, as a specialization is shown in headers.
pub fn display(kernel: &str, params: &[GenericParam], spec: &Specialization) -> String {
    let values: Vec<String> = params
        .iter()
        .map(|p| match p {
            GenericParam::Type(name) => spec
                .types
                .iter()
                .find(|(n, _)| n == name)
                .map_or("?", |(_, t)| t.rust_name())
                .to_owned(),
            GenericParam::Const { name, ty, .. } => spec
                .consts
                .iter()
                .find(|(n, _)| n == name)
                .map_or("?".to_owned(), |(_, v)| {
                    if *ty == Some(ScalarType::Bool) {
                        (*v != 0).to_string()
                    } else {
                        v.to_string()
                    }
                }),
        })
        .collect();
    format!("{kernel}::<{}>", values.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> Vec<GenericParam> {
        let f: syn::ItemFn = syn::parse_quote! {
            pub fn scale<'a, T: Copy, const N: usize, const NEG: i8, const ON: bool>(x: T) {}
        };
        generic_params(&f)
    }

    fn positional(args: &[&str]) -> SpecArgs {
        SpecArgs::Positional(args.iter().map(|s| (*s).to_owned()).collect())
    }

    #[test]
    fn parameters_are_read_in_order_without_lifetimes() {
        let p = params();
        assert_eq!(
            describe(&p),
            "<T, const N: usize, const NEG: i8, const ON: bool>"
        );
        assert_eq!(
            example("scale", &p),
            "--kernel 'scale::<f32, 4, 4, true>' or --kernel scale --specialize \
             T=f32,N=4,NEG=4,ON=true"
        );
    }

    #[test]
    fn both_spellings_give_the_same_specialization() {
        let p = params();
        let a = resolve("scale", &p, &positional(&["f32", "16", "-3", "true"]));
        let b = resolve(
            "scale",
            &p,
            &SpecArgs::Named(vec![
                ("ON".into(), "true".into()),
                ("T".into(), "f32".into()),
                ("NEG".into(), "-3".into()),
                ("N".into(), "1_6".into()),
            ]),
        );
        let a = a.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(Ok(&a), b.as_ref());
        assert_eq!(a.types, [("T".to_owned(), ScalarType::F32)]);
        assert_eq!(
            a.consts,
            [
                ("N".to_owned(), 16),
                ("NEG".to_owned(), -3),
                ("ON".to_owned(), 1)
            ]
        );
        assert_eq!(a.mangle("scale"), "scale__f32_16_m3_1");
        assert_eq!(display("scale", &p, &a), "scale::<f32, 16, -3, true>");
    }

    #[test]
    fn bad_specializations_say_what_the_kernel_takes() {
        let p = params();
        let cases: [(SpecArgs, &str); 8] = [
            (
                positional(&["f32"]),
                "1 generic argument(s) given (`f32`), 4 expected",
            ),
            (
                positional(&["f33", "1", "1", "true"]),
                "`T` = `f33` is not a scalar type",
            ),
            (
                positional(&["4", "1", "1", "true"]),
                "give a type, not a value",
            ),
            (
                positional(&["f32", "u32", "1", "true"]),
                "give a number, not a type",
            ),
            (
                positional(&["f32", "-1", "1", "true"]),
                "-1 is out of its range 0..=",
            ),
            (
                positional(&["f32", "1", "200", "true"]),
                "200 is out of its range -128..=127",
            ),
            (
                positional(&["f32", "1", "1", "yes"]),
                "give `true` or `false`, not `yes`",
            ),
            (
                SpecArgs::Named(vec![("X".into(), "f32".into())]),
                "no generic parameter `X`",
            ),
        ];
        for (args, want) in cases {
            match resolve("scale", &p, &args) {
                Ok(spec) => panic!("{args:?} was accepted as {spec:?}"),
                Err(e) => {
                    assert!(e.contains(want), "{args:?}: {e}");
                    assert!(
                        e.contains("kernel `scale` takes <T, const N: usize"),
                        "{args:?}: {e}"
                    );
                }
            }
        }
        let missing = resolve(
            "scale",
            &p,
            &SpecArgs::Named(vec![("T".into(), "f32".into())]),
        );
        assert!(missing.is_err_and(|e| e.starts_with("`N` is not given")));
    }

    #[test]
    fn requests_parse_and_malformed_ones_are_refused() {
        let r = parse_request("scale<u32,4>", None).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.name, "scale");
        assert_eq!(r.spec, Some(positional(&["u32", "4"])));
        let r = parse_request("fill", None).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((r.name.as_str(), r.spec), ("fill", None));
        for (kernel, spec, want) in [
            ("scale::<f32", None, "closed by `>`"),
            ("scale::<>", None, "names no generic argument"),
            ("a b", None, "expected a kernel's function name"),
            ("scale", Some("T"), "is not `PARAM=VALUE`"),
            ("scale", Some("T=f32,T=u32"), "`T` is given twice"),
            ("scale", Some("=f32"), "needs both a parameter and a value"),
            ("scale", Some(","), "--specialize needs"),
        ] {
            match parse_request(kernel, spec) {
                Ok(r) => panic!("{kernel} {spec:?} was accepted as {r:?}"),
                Err(e) => assert!(e.contains(want), "{kernel} {spec:?}: {e}"),
            }
        }
    }
}
