//! Device `printf` in the emulator: a formatter for exactly the C subset that
//! [`cuprum_ir::printf`] defines, and the sinks the text goes to.
//!
//! The formatter reproduces C's (glibc's) output for that subset, conversion by conversion:
//! integer precision, `#`, `+`, space, `0` and `-` flags, and for floats the exactly rounded
//! decimal expansion (round half to even on the exact binary value, as glibc does; Rust's
//! formatting of `f64` with a precision gives the same digits), `e` exponents with at least
//! two digits, `g`'s choice between the two styles and its trailing-zero removal, `inf`/`nan`
//! (with the sign, so a NaN with its sign bit set prints `-nan`, as glibc).
//!
//! Each executing lane's text is one unit: by default written to the process's stdout with
//! one lock held for the whole text, so prints of different threads never interleave
//! mid-text; inside [`capture_prints`], appended to the capture instead. GPU printf gives no
//! order between threads; the emulator prints in its execution order (warps of a block in
//! order between barriers, lanes in lane order, blocks in parallel).

use std::cell::RefCell;
use std::io::Write as _;
use std::sync::{Arc, Mutex};

use cuprum_ir::ScalarType;
use cuprum_ir::printf::{ConvKind, Conversion, Piece};
use half::{bf16, f16};

/// One promoted argument (see [`cuprum_ir::printf::ArgClass`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Arg {
    Int32(u32),
    Int64(u64),
    Double(f64),
}

impl Arg {
    /// Promotes the register bits of a value of type `ty` as C varargs are promoted.
    pub(crate) fn promote(ty: ScalarType, bits: u64) -> Arg {
        use ScalarType as S;
        match ty {
            S::Bool => Arg::Int32(u32::from(bits != 0)),
            S::I8 => Arg::Int32(bits as u8 as i8 as i32 as u32),
            S::I16 => Arg::Int32(bits as u16 as i16 as i32 as u32),
            S::I32 | S::U8 | S::U16 | S::U32 => Arg::Int32(bits as u32),
            S::I64 | S::U64 => Arg::Int64(bits),
            S::F16 => Arg::Double(f16::from_bits(bits as u16).to_f64()),
            S::BF16 => Arg::Double(bf16::from_bits(bits as u16).to_f64()),
            S::F32 => Arg::Double(f64::from(f32::from_bits(bits as u32))),
            S::F64 => Arg::Double(f64::from_bits(bits)),
        }
    }
}

/// Formats `pieces` with `args` (one per conversion, of the class it takes, as the validator
/// guarantees; a missing or mismatched argument prints as zero).
pub(crate) fn format(pieces: &[Piece], args: &[Arg]) -> String {
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

/// Where a launch's prints go.
#[derive(Clone, Debug, Default)]
pub(crate) enum Sink {
    /// The process's stdout, one lock per print.
    #[default]
    Stdout,
    /// A [`capture_prints`] buffer.
    Capture(Arc<Mutex<String>>),
}

impl Sink {
    /// The sink for a launch started on this thread now.
    pub(crate) fn current() -> Sink {
        CAPTURE.with(|c| c.borrow().clone().map_or(Sink::Stdout, Sink::Capture))
    }

    /// Writes one print's text as one unit.
    pub(crate) fn emit(&self, text: &str) {
        match self {
            Sink::Stdout => {
                let mut out = std::io::stdout().lock();
                // Like the GPU's printf, a print that cannot be written is dropped.
                let _ = out.write_all(text.as_bytes());
                let _ = out.flush();
            }
            Sink::Capture(buf) => buf.lock().unwrap_or_else(|e| e.into_inner()).push_str(text),
        }
    }
}

thread_local! {
    static CAPTURE: RefCell<Option<Arc<Mutex<String>>>> = const { RefCell::new(None) };
}

/// Restores the enclosing capture (or none) when a [`capture_prints`] ends, even by a panic.
struct Restore(Option<Arc<Mutex<String>>>);

impl Drop for Restore {
    fn drop(&mut self) {
        let previous = self.0.take();
        CAPTURE.with(|c| *c.borrow_mut() = previous);
    }
}

/// Runs `f` and returns its result with everything that kernels launched on this thread
/// during `f` printed (device `printf`, `Stmt::Print`), instead of writing it to stdout.
/// Launches from other threads are not captured; captures nest (an inner capture takes its
/// launches' text, the outer one does not see it).
///
/// ```
/// let ((), text) = cuprum_emu::capture_prints(|| {
///     // launch kernels here
/// });
/// assert!(text.is_empty());
/// ```
pub fn capture_prints<R>(f: impl FnOnce() -> R) -> (R, String) {
    let buf = Arc::new(Mutex::new(String::new()));
    let previous = CAPTURE.with(|c| c.borrow_mut().replace(Arc::clone(&buf)));
    let restore = Restore(previous);
    let r = f();
    drop(restore);
    let text = std::mem::take(&mut *buf.lock().unwrap_or_else(|e| e.into_inner()));
    (r, text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cuprum_ir::printf::parse_format;

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
        use ScalarType as S;
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

    #[test]
    fn capture_nests_and_restores() {
        let ((), outer) = capture_prints(|| {
            Sink::current().emit("a");
            let ((), inner) = capture_prints(|| Sink::current().emit("b"));
            assert_eq!(inner, "b");
            Sink::current().emit("c");
        });
        assert_eq!(outer, "ac");
        assert!(matches!(Sink::current(), Sink::Stdout));
    }
}
