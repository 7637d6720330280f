//! The format strings of [`Stmt::Print`](crate::Stmt::Print): which subset of C's `printf`
//! the IR accepts, how arguments are promoted, and where they go in the argument buffer of
//! CUDA's `vprintf`.
//!
//! It lives in the IR because every consumer must agree on it: the validators (of the kernel
//! IR and of the tile IR) reject what is outside the subset (or whose argument types do not
//! fit), the PTX writer lays out the `vprintf` buffer with [`vprintf_layout`], and the
//! emulator and the tile interpreter format the text with [`format()`] from the same parsed
//! [`Piece`]s, each argument promoted by [`Arg::promote`].
//!
//! # The subset
//!
//! A format string is any text without NUL bytes, in which every `%` starts one of
//!
//! ```text
//! %%                                          a literal '%' (nothing else between)
//! %[flags][width][.precision][length]conv
//!     flags      any of  -  +  space  #  0    (in any order, repeats allowed)
//!     width      decimal digits (no '*')
//!     precision  '.' then optional decimal digits (no '*'); '.' alone means 0
//!     length     none, 'l' or 'll'
//!     conv       d i        signed decimal
//!                u          unsigned decimal
//!                o          unsigned octal
//!                x X        unsigned hexadecimal (lower / upper case)
//!                f          [-]ddd.ddd
//!                e E        [-]d.ddde[+-]dd
//!                g G        %f or %e style, whichever C's rule picks, trailing zeros removed
//! ```
//!
//! with C's meaning for each piece. Not supported (the validator rejects them): `%c`, `%s`,
//! `%p`, `%n`, `%a`, `%A`, `%F`, `*` widths and precisions, the `h`, `hh`, `j`, `z`, `t`
//! and `L` lengths, `#` with `d`, `i` or `u`, and `ll` with a float conversion.
//!
//! # Arguments
//!
//! One argument per conversion, in order; at most [`MAX_ARGS`]. Arguments are promoted as C
//! varargs are, giving three classes ([`ArgClass`]):
//!
//! * `bool`, `i8`, `i16`, `i32`, `u8`, `u16`, `u32` become a 32-bit integer (sign-extended
//!   from signed types, zero-extended from unsigned ones and `bool`, which is 0 or 1). They
//!   go with the integer conversions without a length.
//! * `i64` and `u64` are 64-bit integers, for the integer conversions with `l` or `ll`.
//! * `f16`, `bf16`, `f32` and `f64` become an `f64` (exactly), for the float conversions
//!   (with no length or `l`).
//!
//! An integer conversion prints the bits of its argument as the conversion's type: `%d` of
//! the `u32` `0xffff_ffff` prints `-1`, `%u` of the `i32` `-1` prints `4294967295`.
//!
//! # Output
//!
//! [`format()`] reproduces C's (glibc's) output for the subset, conversion by conversion:
//! integer precision, `#`, `+`, space, `0` and `-` flags, and for floats the exactly rounded
//! decimal expansion (round half to even on the exact binary value, as glibc does; Rust's
//! formatting of `f64` with a precision gives the same digits), `e` exponents with at least
//! two digits, `g`'s choice between the two styles and its trailing-zero removal, `inf`/`nan`
//! (with the sign, so a NaN with its sign bit set prints `-nan`, as glibc).
//!
//! On an H200, CUDA's `printf` printed exactly what glibc's `snprintf` does for 601 random
//! conversions of this subset (NaN, infinities, subnormals and huge values included), and so
//! does [`format()`].

use half::{bf16, f16};

use crate::types::ScalarType;

/// Most arguments one print may take (as CUDA's `printf`).
pub const MAX_ARGS: usize = 32;

/// The flags of a conversion.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Flags {
    /// `-`: left-justify in the field.
    pub left: bool,
    /// `+`: always print a sign on signed conversions.
    pub plus: bool,
    /// space: print a space where a `+` would go (ignored with `+`).
    pub space: bool,
    /// `#`: alternative form (`0` prefix for `o`, `0x` for nonzero `x`, always a decimal
    /// point and, for `g`, trailing zeros kept).
    pub alt: bool,
    /// `0`: pad with zeros after the sign (ignored with `-`, and for integers with a
    /// precision).
    pub zero: bool,
}

/// The length modifier of a conversion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Length {
    /// None: a 32-bit integer, or a double.
    Default,
    /// `l`: a 64-bit integer (LP64 `long`), or a double.
    Long,
    /// `ll`: a 64-bit integer.
    LongLong,
}

/// The conversion character.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConvKind {
    /// `d` or `i`.
    Signed,
    /// `u`.
    Unsigned,
    /// `o`.
    Octal,
    /// `x` (`upper` false) or `X`.
    Hex {
        /// `X`: the digits `A` to `F` in upper case.
        upper: bool,
    },
    /// `f`.
    Fixed,
    /// `e` or `E`.
    Exp {
        /// `E`: the exponent mark and `INF`/`NAN` in upper case.
        upper: bool,
    },
    /// `g` or `G`.
    General {
        /// `G`: as for `E`, the exponent mark and `INF`/`NAN` in upper case.
        upper: bool,
    },
}

impl ConvKind {
    /// Whether the conversion takes a float argument.
    pub const fn is_float(self) -> bool {
        matches!(self, Self::Fixed | Self::Exp { .. } | Self::General { .. })
    }
}

/// One `%...` conversion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Conversion {
    /// The flag characters, `-`, `+`, space, `#` and `0`.
    pub flags: Flags,
    /// The minimum field width in characters, if one was written.
    pub width: Option<u32>,
    /// The precision after `.`, if a `.` was written (`Some(0)` for a lone `.`): minimum digits
    /// for integer conversions, digits after the point for `f` and `e`, significant digits for
    /// `g`.
    pub precision: Option<u32>,
    /// The length modifier, which with `kind` picks the argument class.
    pub length: Length,
    /// The conversion character.
    pub kind: ConvKind,
}

impl Conversion {
    /// The argument class this conversion consumes.
    pub const fn arg_class(&self) -> ArgClass {
        match (self.kind.is_float(), self.length) {
            (true, _) => ArgClass::Double,
            (false, Length::Default) => ArgClass::Int32,
            (false, _) => ArgClass::Int64,
        }
    }
}

/// A piece of a parsed format string.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Piece {
    /// Text printed as is (`%%` already turned into `%`).
    Text(String),
    /// A conversion consuming the next argument.
    Conv(Conversion),
}

/// What an argument becomes after C's default argument promotions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgClass {
    /// A 32-bit integer (4 bytes in the `vprintf` buffer).
    Int32,
    /// A 64-bit integer (8 bytes).
    Int64,
    /// An `f64` (8 bytes).
    Double,
}

impl ArgClass {
    /// The class of an argument of type `ty`.
    pub const fn of(ty: ScalarType) -> ArgClass {
        use ScalarType as S;
        match ty {
            S::Bool | S::I8 | S::I16 | S::I32 | S::U8 | S::U16 | S::U32 => ArgClass::Int32,
            S::I64 | S::U64 => ArgClass::Int64,
            S::F16 | S::BF16 | S::F32 | S::F64 | S::Tf32 => ArgClass::Double,
        }
    }

    /// Size (and alignment) in bytes in the `vprintf` buffer.
    pub const fn size_bytes(self) -> u32 {
        match self {
            ArgClass::Int32 => 4,
            ArgClass::Int64 | ArgClass::Double => 8,
        }
    }
}

/// Parses `format` into pieces; `Err` says what is outside the subset and where.
pub fn parse_format(format: &str) -> Result<Vec<Piece>, String> {
    if format.contains('\0') {
        return Err("the format string contains a NUL byte".into());
    }
    let mut pieces = Vec::new();
    let mut text = String::new();
    let mut chars = format.char_indices().peekable();
    while let Some((start, c)) = chars.next() {
        if c != '%' {
            text.push(c);
            continue;
        }
        if chars.next_if(|&(_, c)| c == '%').is_some() {
            text.push('%');
            continue;
        }
        let mut flags = Flags::default();
        while let Some((_, f)) = chars.next_if(|&(_, c)| matches!(c, '-' | '+' | ' ' | '#' | '0')) {
            match f {
                '-' => flags.left = true,
                '+' => flags.plus = true,
                ' ' => flags.space = true,
                '#' => flags.alt = true,
                _ => flags.zero = true,
            }
        }
        let number = |chars: &mut std::iter::Peekable<std::str::CharIndices>| {
            let mut n: Option<u32> = None;
            while let Some((_, d)) = chars.next_if(|&(_, c)| c.is_ascii_digit()) {
                let digit = d as u32 - '0' as u32;
                n = Some(
                    n.unwrap_or(0)
                        .checked_mul(10)
                        .and_then(|n| n.checked_add(digit))
                        .ok_or_else(|| {
                            format!("a number too large in the conversion at byte {start}")
                        })?,
                );
            }
            Ok::<_, String>(n)
        };
        let width = number(&mut chars)?;
        let precision = if chars.next_if(|&(_, c)| c == '.').is_some() {
            Some(number(&mut chars)?.unwrap_or(0))
        } else {
            None
        };
        let mut length = Length::Default;
        if chars.next_if(|&(_, c)| c == 'l').is_some() {
            length = Length::Long;
            if chars.next_if(|&(_, c)| c == 'l').is_some() {
                length = Length::LongLong;
            }
        }
        let bad = |what: String| {
            Err(format!(
                "{what} in the conversion at byte {start} of the format string"
            ))
        };
        let kind = match chars.next().map(|(_, c)| c) {
            Some('d' | 'i') => ConvKind::Signed,
            Some('u') => ConvKind::Unsigned,
            Some('o') => ConvKind::Octal,
            Some('x') => ConvKind::Hex { upper: false },
            Some('X') => ConvKind::Hex { upper: true },
            Some('f') => ConvKind::Fixed,
            Some('e') => ConvKind::Exp { upper: false },
            Some('E') => ConvKind::Exp { upper: true },
            Some('g') => ConvKind::General { upper: false },
            Some('G') => ConvKind::General { upper: true },
            Some('*') => return bad("`*` widths and precisions are not supported".into()),
            Some(c) => return bad(format!("`%{c}` is not a supported conversion")),
            None => return bad("the format string ends".into()),
        };
        if flags.alt && matches!(kind, ConvKind::Signed | ConvKind::Unsigned) {
            return bad("`#` with a decimal integer conversion is undefined in C".into());
        }
        if kind.is_float() && length == Length::LongLong {
            return bad("`ll` with a float conversion is not supported".into());
        }
        if !text.is_empty() {
            pieces.push(Piece::Text(std::mem::take(&mut text)));
        }
        pieces.push(Piece::Conv(Conversion {
            flags,
            width,
            precision,
            length,
            kind,
        }));
    }
    if !text.is_empty() {
        pieces.push(Piece::Text(text));
    }
    Ok(pieces)
}

/// Checks `format` and that `args` (the argument types, in order) fit its conversions.
pub fn check_print(format: &str, args: &[ScalarType]) -> Result<Vec<Piece>, String> {
    let pieces = parse_format(format)?;
    if args.len() > MAX_ARGS {
        return Err(format!(
            "print takes at most {MAX_ARGS} arguments, got {}",
            args.len()
        ));
    }
    let convs: Vec<&Conversion> = pieces
        .iter()
        .filter_map(|p| match p {
            Piece::Conv(c) => Some(c),
            Piece::Text(_) => None,
        })
        .collect();
    if convs.len() != args.len() {
        return Err(format!(
            "the format string {format:?} has {} conversions but print has {} arguments",
            convs.len(),
            args.len()
        ));
    }
    for (i, (c, &ty)) in convs.iter().zip(args).enumerate() {
        let (want, got) = (c.arg_class(), ArgClass::of(ty));
        if want != got {
            let need = match want {
                ArgClass::Int32 => "a 32-bit or narrower integer or a bool",
                ArgClass::Int64 => "an i64 or u64",
                ArgClass::Double => "a float",
            };
            return Err(format!(
                "print argument {i} is {ty}, but its conversion in {format:?} needs {need}"
            ));
        }
    }
    Ok(pieces)
}

/// The byte offset of each argument in the `vprintf` argument buffer, and the buffer's size:
/// arguments in order, each promoted ([`ArgClass`]) and aligned to its size.
pub fn vprintf_layout(args: &[ScalarType]) -> (Vec<u32>, u32) {
    let mut offsets = Vec::with_capacity(args.len());
    let mut end = 0u32;
    for &ty in args {
        let size = ArgClass::of(ty).size_bytes();
        let at = end.next_multiple_of(size);
        offsets.push(at);
        end = at + size;
    }
    (offsets, end)
}

/// One argument after C's default promotions ([`ArgClass`]), as [`format()`] takes it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Arg {
    /// An [`ArgClass::Int32`] argument's 32 bits.
    Int32(u32),
    /// An [`ArgClass::Int64`] argument's 64 bits.
    Int64(u64),
    /// An [`ArgClass::Double`] argument.
    Double(f64),
}

impl Arg {
    /// Promotes the register bits of a value of type `ty` as C varargs are promoted.
    pub fn promote(ty: ScalarType, bits: u64) -> Arg {
        use ScalarType as S;
        match ty {
            S::Bool => Arg::Int32(u32::from(bits != 0)),
            S::I8 => Arg::Int32(bits as u8 as i8 as i32 as u32),
            S::I16 => Arg::Int32(bits as u16 as i16 as i32 as u32),
            S::I32 | S::U8 | S::U16 | S::U32 => Arg::Int32(bits as u32),
            S::I64 | S::U64 => Arg::Int64(bits),
            S::F16 => Arg::Double(f16::from_bits(bits as u16).to_f64()),
            S::BF16 => Arg::Double(bf16::from_bits(bits as u16).to_f64()),
            S::F32 | S::Tf32 => Arg::Double(f64::from(f32::from_bits(bits as u32))),
            S::F64 => Arg::Double(f64::from_bits(bits)),
        }
    }
}

/// Formats `pieces` with `args` (one per conversion, of the class it takes, as the validator
/// guarantees; a missing or mismatched argument prints as zero).
pub fn format(pieces: &[Piece], args: &[Arg]) -> String {
    let mut out = String::new();
    let mut args = args.iter();
    for p in pieces {
        match p {
            Piece::Text(t) => out.push_str(t),
            Piece::Conv(c) => {
                let arg = args.next().copied();
                if c.kind.is_float() {
                    let x = match arg {
                        Some(Arg::Double(x)) => x,
                        _ => 0.0,
                    };
                    float(c, x, &mut out);
                } else {
                    let (wide, bits) = match arg {
                        Some(Arg::Int32(v)) => (false, u64::from(v)),
                        Some(Arg::Int64(v)) => (true, v),
                        _ => (false, 0),
                    };
                    let (negative, magnitude) = match c.kind {
                        ConvKind::Signed => {
                            let v = if wide {
                                bits as i64
                            } else {
                                i64::from(bits as u32 as i32)
                            };
                            (v < 0, v.unsigned_abs())
                        }
                        _ => (false, bits),
                    };
                    int(c, negative, magnitude, &mut out);
                }
            }
        }
    }
    out
}

/// Writes `prefix` (sign or `0x`) and `body` padded to the conversion's width.
fn pad(c: &Conversion, prefix: &str, body: &str, zero_ok: bool, out: &mut String) {
    let len = prefix.len() + body.len();
    let fill = (c.width.unwrap_or(0) as usize).saturating_sub(len);
    if c.flags.left {
        out.push_str(prefix);
        out.push_str(body);
        out.extend(std::iter::repeat_n(' ', fill));
    } else if c.flags.zero && zero_ok {
        out.push_str(prefix);
        out.extend(std::iter::repeat_n('0', fill));
        out.push_str(body);
    } else {
        out.extend(std::iter::repeat_n(' ', fill));
        out.push_str(prefix);
        out.push_str(body);
    }
}

fn int(c: &Conversion, negative: bool, magnitude: u64, out: &mut String) {
    let mut digits = match c.kind {
        ConvKind::Octal => format!("{magnitude:o}"),
        ConvKind::Hex { upper: false } => format!("{magnitude:x}"),
        ConvKind::Hex { upper: true } => format!("{magnitude:X}"),
        _ => magnitude.to_string(),
    };
    if let Some(p) = c.precision {
        if p == 0 && magnitude == 0 {
            digits.clear();
        }
        let p = p as usize;
        if digits.len() < p {
            digits = format!("{}{digits}", "0".repeat(p - digits.len()));
        }
    }
    if c.flags.alt && c.kind == ConvKind::Octal && !digits.starts_with('0') {
        digits.insert(0, '0');
    }
    let prefix = match c.kind {
        ConvKind::Signed if negative => "-",
        ConvKind::Signed if c.flags.plus => "+",
        ConvKind::Signed if c.flags.space => " ",
        ConvKind::Hex { upper } if c.flags.alt && magnitude != 0 => {
            if upper {
                "0X"
            } else {
                "0x"
            }
        }
        _ => "",
    };
    pad(c, prefix, &digits, c.precision.is_none(), out);
}

fn float(c: &Conversion, x: f64, out: &mut String) {
    let sign = if x.is_sign_negative() {
        "-"
    } else if c.flags.plus {
        "+"
    } else if c.flags.space {
        " "
    } else {
        ""
    };
    let upper = matches!(
        c.kind,
        ConvKind::Exp { upper: true } | ConvKind::General { upper: true }
    );
    if !x.is_finite() {
        let body = match (x.is_nan(), upper) {
            (true, false) => "nan",
            (true, true) => "NAN",
            (false, false) => "inf",
            (false, true) => "INF",
        };
        pad(c, sign, body, false, out);
        return;
    }
    let a = x.abs();
    let p = c.precision.unwrap_or(6) as usize;
    let alt = c.flags.alt;
    let body = match c.kind {
        ConvKind::Exp { .. } => exp_style(a, p, upper, alt),
        ConvKind::General { .. } => general(a, p, upper, alt),
        _ => fixed(a, p, alt),
    };
    pad(c, sign, &body, true, out);
}

/// `%f` of a non-negative finite `a`.
fn fixed(a: f64, p: usize, alt: bool) -> String {
    let mut s = format!("{a:.p$}");
    if p == 0 && alt {
        s.push('.');
    }
    s
}

/// Rust's `{:.p$e}` of `a`, split into mantissa digits and decimal exponent.
fn rust_exp(a: f64, p: usize) -> (String, i32) {
    let s = format!("{a:.p$e}");
    match s.split_once('e') {
        Some((m, e)) => (m.to_string(), e.parse().unwrap_or(0)),
        None => (s, 0),
    }
}

/// `%e` of a non-negative finite `a`.
fn exp_style(a: f64, p: usize, upper: bool, alt: bool) -> String {
    let (mut m, e) = rust_exp(a, p);
    if p == 0 && alt {
        m.push('.');
    }
    let (letter, sign) = (if upper { 'E' } else { 'e' }, if e < 0 { '-' } else { '+' });
    format!("{m}{letter}{sign}{:02}", e.unsigned_abs())
}

/// `%g` of a non-negative finite `a`: C's rule with `P` significant digits.
fn general(a: f64, p: usize, upper: bool, alt: bool) -> String {
    let p = p.max(1);
    let (_, x) = rust_exp(a, p - 1);
    let mut s = if (x as i64) < p as i64 && x >= -4 {
        fixed(a, (p as i64 - 1 - x as i64) as usize, alt)
    } else {
        exp_style(a, p - 1, upper, alt)
    };
    if !alt {
        let cut = s.find(['e', 'E']).unwrap_or(s.len());
        let (mantissa, exponent) = s.split_at(cut);
        if mantissa.contains('.') {
            let m = mantissa.trim_end_matches('0').trim_end_matches('.');
            s = format!("{m}{exponent}");
        }
    }
    s
}

/// A piece of a Rust format string (the syntax of `println!`), which the front ends turn
/// into a format of the subset above (see [`parse_rust_format`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RustPiece {
    /// Text, already escaped for `printf` (`%` doubled, `{{` and `}}` undone).
    Text(String),
    /// A placeholder `{which:spec}`.
    Arg {
        /// Which argument it prints.
        which: RustArg,
        /// The format spec after `:` (empty for `{}`).
        spec: String,
    },
}

/// Which argument a placeholder prints.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RustArg {
    /// `{}`: the next positional argument.
    Next,
    /// `{2}`: positional argument 2.
    Index(usize),
    /// `{name}`: the variable (or expression text) `name`.
    Name(String),
}

/// Splits a Rust format string into text and placeholders.
pub fn parse_rust_format(format: &str) -> Result<Vec<RustPiece>, String> {
    let mut pieces = Vec::new();
    let mut text = String::new();
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
                text.push('{');
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
                text.push('}');
            }
            '}' => return Err("an unmatched `}` in the format string (write `}}`)".into()),
            '%' => text.push_str("%%"),
            '{' => {
                let mut inside = String::new();
                let mut closed = false;
                for d in chars.by_ref() {
                    if d == '}' {
                        closed = true;
                        break;
                    }
                    inside.push(d);
                }
                if !closed {
                    return Err("an unclosed `{` in the format string".into());
                }
                if !text.is_empty() {
                    pieces.push(RustPiece::Text(std::mem::take(&mut text)));
                }
                let (arg, spec) = inside.split_once(':').unwrap_or((inside.as_str(), ""));
                let which = if arg.is_empty() {
                    RustArg::Next
                } else if let Ok(k) = arg.parse::<usize>() {
                    RustArg::Index(k)
                } else {
                    RustArg::Name(arg.to_string())
                };
                pieces.push(RustPiece::Arg {
                    which,
                    spec: spec.to_string(),
                });
            }
            other => text.push(other),
        }
    }
    if !text.is_empty() {
        pieces.push(RustPiece::Text(text));
    }
    Ok(pieces)
}

/// The conversion of the subset that prints a value of type `ty` as the Rust format spec
/// `spec` asks (`""`, `"5"`, `"<8.3"`, `"x"`, `"e"`, ...): `{}` of an integer is `%d` or
/// `%u` (`%lld`/`%llu` for 64 bits), of a float `%g` (`{:.3}` gives `%.3f`, `{:e}` `%e`),
/// with `x`, `X` and `o`, widths, `<` and `>` alignment, `+` and `0` padding. A `bool` prints
/// as `1` or `0`.
pub fn rust_conversion(spec: &str, ty: ScalarType) -> Result<String, String> {
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
    let Some((width, precision)) = width_precision(rest) else {
        return Err(format!(
            "unsupported format spec `{{:{spec}}}` in device code"
        ));
    };
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

/// `[width][.precision]` of a spec (both decimal digits, either may be empty), or `None`.
fn width_precision(s: &str) -> Option<(&str, Option<&str>)> {
    let (width, precision) = match s.split_once('.') {
        Some((w, p)) => (w, Some(p)),
        None => (s, None),
    };
    let digits = |t: &str| t.chars().all(|c| c.is_ascii_digit());
    (digits(width) && precision.is_none_or(digits)).then_some((width, precision))
}

/// The conversion of the subset for a `gpu_printf!` spec (cuda-oxide's, C's inside braces):
/// `{:[flags][width][.precision][conv]}` with C's flags (`-`, `+`, space, `#`, `0`) and
/// conversions (`d i u o x X f e E g G`), the length added from `ty` (`ll` for 64-bit
/// integers). Without a conversion, an integer prints with `d` or `u` and a float with `f`
/// when a precision is given, else with `g`, as `{}` does ([`rust_conversion`]).
pub fn c_style_conversion(spec: &str, ty: ScalarType) -> Result<String, String> {
    let bad = |why: &str| Err(format!("the `gpu_printf!` spec `{{:{spec}}}` {why}"));
    let flags_end = spec
        .find(|c: char| !matches!(c, '-' | '+' | ' ' | '#' | '0'))
        .unwrap_or(spec.len());
    let (flags, rest) = spec.split_at(flags_end);
    let conv = rest.chars().last().filter(|c| "diuoxXfeEgG".contains(*c));
    let body = match conv {
        Some(_) => &rest[..rest.len() - 1],
        None => rest,
    };
    let Some((width, precision)) = width_precision(body) else {
        return bad("is not `[flags][width][.precision][conversion]`");
    };
    let prec = precision.map(|p| format!(".{p}")).unwrap_or_default();
    let conv = match conv {
        Some(c) => c,
        None if ty.is_float() && precision.is_some() => 'f',
        None if ty.is_float() => 'g',
        None if ty.is_signed_int() => 'd',
        None => 'u',
    };
    let float_conv = "feEgG".contains(conv);
    if float_conv != ty.is_float() {
        return bad(&format!(
            "asks for a {} conversion of a `{}`",
            if float_conv { "float" } else { "integer" },
            ty.rust_name()
        ));
    }
    if flags.contains('#') && "diu".contains(conv) {
        return bad("has `#`, which C gives no meaning with `d`, `i` or `u`");
    }
    let length = if !float_conv && ty.size_bytes() == 8 {
        "ll"
    } else {
        ""
    };
    Ok(format!("%{flags}{width}{prec}{length}{conv}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ScalarType as S;

    #[test]
    fn gpu_printf_specs_are_c_conversions() {
        let c = |spec: &str, ty| c_style_conversion(spec, ty);
        assert_eq!(c("#x", S::U32).as_deref(), Ok("%#x"));
        assert_eq!(c("#o", S::U32).as_deref(), Ok("%#o"));
        assert_eq!(c("X", S::U64).as_deref(), Ok("%llX"));
        assert_eq!(c(".6f", S::F32).as_deref(), Ok("%.6f"));
        assert_eq!(c("8.2f", S::F64).as_deref(), Ok("%8.2f"));
        assert_eq!(c("e", S::F32).as_deref(), Ok("%e"));
        assert_eq!(c("G", S::F32).as_deref(), Ok("%G"));
        assert_eq!(c("-8", S::I32).as_deref(), Ok("%-8d"));
        assert_eq!(c(" ", S::I32).as_deref(), Ok("% d"));
        assert_eq!(c("+", S::I64).as_deref(), Ok("%+lld"));
        assert_eq!(c("08", S::U32).as_deref(), Ok("%08u"));
        assert_eq!(c(".3", S::F32).as_deref(), Ok("%.3f"));
        assert!(c("f", S::U32).is_err());
        assert!(c("x", S::F32).is_err());
        assert!(c("#d", S::I32).is_err());
        assert!(c("8q", S::I32).is_err());
        for (spec, ty) in [
            ("#x", S::U32),
            (".6f", S::F32),
            ("-8", S::I64),
            (" ", S::I32),
        ] {
            let conv = c(spec, ty).expect("converts");
            assert!(check_print(&conv, &[ty]).is_ok(), "{conv}");
        }
    }

    #[test]
    fn rust_format_strings_become_pieces_and_conversions() {
        let pieces = parse_rust_format("a {} {{b}} {1:>5} {x:.3}% {:x}").expect("parses");
        assert_eq!(
            pieces,
            vec![
                RustPiece::Text("a ".into()),
                RustPiece::Arg {
                    which: RustArg::Next,
                    spec: String::new()
                },
                RustPiece::Text(" {b} ".into()),
                RustPiece::Arg {
                    which: RustArg::Index(1),
                    spec: ">5".into()
                },
                RustPiece::Text(" ".into()),
                RustPiece::Arg {
                    which: RustArg::Name("x".into()),
                    spec: ".3".into()
                },
                RustPiece::Text("%% ".into()),
                RustPiece::Arg {
                    which: RustArg::Next,
                    spec: "x".into()
                },
            ]
        );
        assert!(parse_rust_format("{").is_err());
        assert!(parse_rust_format("}").is_err());
        assert_eq!(rust_conversion("", S::I32).as_deref(), Ok("%d"));
        assert_eq!(rust_conversion("", S::U64).as_deref(), Ok("%llu"));
        assert_eq!(rust_conversion("", S::Bool).as_deref(), Ok("%u"));
        assert_eq!(rust_conversion(".3", S::F32).as_deref(), Ok("%.3f"));
        assert_eq!(rust_conversion("<8x", S::U32).as_deref(), Ok("%-8x"));
        assert_eq!(rust_conversion("+08.2e", S::F64).as_deref(), Ok("%+08.2e"));
        assert!(rust_conversion("^5", S::I32).is_err());
    }

    #[test]
    fn parses_the_subset() {
        let p = parse_format("a%%b %-+ #08.3lx %.e%lld %5.f|").unwrap();
        assert_eq!(p[0], Piece::Text("a%b ".into()));
        let Piece::Conv(c) = p[1] else { panic!() };
        assert!(c.flags.left && c.flags.plus && c.flags.space && c.flags.alt && c.flags.zero);
        assert_eq!(
            (c.width, c.precision, c.length),
            (Some(8), Some(3), Length::Long)
        );
        assert_eq!(c.kind, ConvKind::Hex { upper: false });
        let Piece::Conv(c) = p[3] else { panic!() };
        assert_eq!(
            (c.precision, c.kind),
            (Some(0), ConvKind::Exp { upper: false })
        );
        let Piece::Conv(c) = p[4] else { panic!() };
        assert_eq!(c.length, Length::LongLong);
        assert_eq!(p.last(), Some(&Piece::Text("|".into())));
    }

    #[test]
    fn rejects_the_rest() {
        for bad in [
            "%s", "%c", "%*d", "%.*f", "%hd", "%", "%5", "%#d", "%llf", "%F", "a\0b", "%p",
        ] {
            assert!(parse_format(bad).is_err(), "{bad:?}");
        }
        assert!(parse_format("%99999999999d").is_err());
    }

    #[test]
    fn checks_argument_types() {
        assert!(check_print("%d %u %x", &[S::I8, S::Bool, S::U32]).is_ok());
        assert!(
            check_print(
                "%ld %llx %f %lf %g",
                &[S::I64, S::U64, S::F16, S::F64, S::BF16]
            )
            .is_ok()
        );
        assert!(check_print("%d", &[S::I64]).is_err());
        assert!(check_print("%ld", &[S::I32]).is_err());
        assert!(check_print("%f", &[S::I32]).is_err());
        assert!(check_print("%d %d", &[S::I32]).is_err());
        assert!(check_print("no args", &[]).is_ok());
        assert!(check_print(&"%d".repeat(33), &[S::I32; 33]).is_err());
    }

    #[test]
    fn layout_aligns_each_argument() {
        let (offs, size) = vprintf_layout(&[S::I8, S::F32, S::U32, S::I64, S::Bool]);
        assert_eq!(offs, vec![0, 8, 16, 24, 32]);
        assert_eq!(size, 36);
        assert_eq!(vprintf_layout(&[]), (vec![], 0));
    }

    fn f(fmt: &str, args: &[Arg]) -> String {
        format(&parse_format(fmt).unwrap(), args)
    }

    #[test]
    fn known_outputs() {
        use Arg::*;
        assert_eq!(
            f("%d|%5d|%-5d|%05d|%+d|% d", &[Int32(42); 6]),
            "42|   42|42   |00042|+42| 42"
        );
        assert_eq!(
            f("%d %u %x %X %o", &[Int32(u32::MAX); 5]),
            "-1 4294967295 ffffffff FFFFFFFF 37777777777"
        );
        assert_eq!(
            f(
                "%#x %#o %#o %.0d|%.3d %08.3d",
                &[Int32(255), Int32(8), Int32(0), Int32(0), Int32(7), Int32(7)]
            ),
            "0xff 010 0 |007      007"
        );
        assert_eq!(
            f("%ld %lu %llx", &[Int64(u64::MAX); 3]),
            "-1 18446744073709551615 ffffffffffffffff"
        );
        assert_eq!(
            f(
                "%f %.2f %e %E %g %G",
                &[
                    Double(1.5),
                    Double(2.675),
                    Double(12345.678),
                    Double(-0.00012),
                    Double(100000.0),
                    Double(1e-5)
                ]
            ),
            "1.500000 2.67 1.234568e+04 -1.200000E-04 100000 1E-05"
        );
        assert_eq!(
            f(
                "%g %g %g %#g %.0e %#.0f %g",
                &[
                    Double(1e6),
                    Double(0.0001),
                    Double(123.456),
                    Double(1.5),
                    Double(5.0),
                    Double(3.0),
                    Double(0.0)
                ]
            ),
            "1e+06 0.0001 123.456 1.50000 5e+00 3. 0"
        );
        assert_eq!(
            f(
                "%f %5.1f %-6g| %010.2f %+e",
                &[
                    Double(f64::INFINITY),
                    Double(-f64::NAN),
                    Double(f64::NEG_INFINITY),
                    Double(-3.14659),
                    Double(0.0)
                ]
            ),
            "inf  -nan -inf  | -000003.15 +0.000000e+00"
        );
        assert_eq!(f("100%% %G", &[Double(f64::NAN)]), "100% NAN");
    }

    #[test]
    fn promotions() {
        assert_eq!(Arg::promote(S::I8, 0xFF), Arg::Int32(u32::MAX));
        assert_eq!(Arg::promote(S::U8, 0xFF), Arg::Int32(255));
        assert_eq!(Arg::promote(S::I16, 0x8000), Arg::Int32(0xFFFF_8000));
        assert_eq!(Arg::promote(S::Bool, 1), Arg::Int32(1));
        assert_eq!(Arg::promote(S::F16, 0x3C00), Arg::Double(1.0));
        assert_eq!(Arg::promote(S::BF16, 0xC000), Arg::Double(-2.0));
        assert_eq!(
            Arg::promote(S::F32, 0.1f32.to_bits() as u64),
            Arg::Double(0.1f32 as f64)
        );
    }
}
