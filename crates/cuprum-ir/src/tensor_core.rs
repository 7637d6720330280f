//! The arithmetic of NVIDIA's tensor cores, as `Stmt::Mma` documents it (measured bit for
//! bit on an H200): products exact, every addend aligned to the largest exponent and
//! truncated, one exact addition, rounding toward zero. It is one definition that the
//! emulator's `mma.sync` and `wgmma` and the tile interpreter's `mma` all call, so that they
//! agree with each other and with the GPU bit for bit. Everything is done in integers: each
//! operand is taken apart into `m * 2^e` exactly, so nothing depends on the host's float
//! rounding.

/// The bits NVIDIA float arithmetic gives for a NaN result (canonical quiet NaN).
const CANONICAL_NAN: u32 = 0x7FFF_FFFF;

/// Bits kept below the alignment exponent when the tensor cores add (see `Stmt::Mma`).
const ALIGN_BITS: i32 = 25;

/// A float operand taken apart: `(-1)^neg * m * 2^e` exactly, or a special value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Num {
    /// `(-1)^neg * m * 2^e`, exactly (zero when `m` is 0).
    Finite {
        /// The sign.
        neg: bool,
        /// The integer significand.
        m: u64,
        /// The power of two it is scaled by.
        e: i32,
    },
    /// An infinity.
    Inf {
        /// The sign.
        neg: bool,
    },
    /// Not a number.
    NaN,
}

impl Num {
    /// Decodes an IEEE value with `mbits` stored mantissa bits, `ebits` exponent bits.
    pub fn decode(bits: u64, mbits: u32, ebits: u32) -> Num {
        let neg = bits >> (mbits + ebits) & 1 != 0;
        let bias = (1i32 << (ebits - 1)) - 1;
        let field = (bits >> mbits) as i32 & ((1 << ebits) - 1);
        let frac = bits & ((1u64 << mbits) - 1);
        if field == (1 << ebits) - 1 {
            return if frac == 0 {
                Num::Inf { neg }
            } else {
                Num::NaN
            };
        }
        let (m, e) = if field == 0 {
            (frac, 1 - bias - mbits as i32)
        } else {
            (frac | 1u64 << mbits, field - bias - mbits as i32)
        };
        Num::Finite { neg, m, e }
    }

    /// An IEEE binary16 value (its low 16 bits).
    pub fn f16(bits: u64) -> Num {
        Num::decode(bits & 0xFFFF, 10, 5)
    }

    /// A bfloat16 value (its low 16 bits).
    pub fn bf16(bits: u64) -> Num {
        Num::decode(bits & 0xFFFF, 7, 8)
    }

    /// An `f32` value (its low 32 bits).
    pub fn f32(bits: u64) -> Num {
        Num::decode(bits & 0xFFFF_FFFF, 23, 8)
    }

    /// An `f32` as the tensor cores read a `tf32` operand: only the sign, the exponent and
    /// the top 10 mantissa bits (truncation toward zero; see `MmaShape::M16n8k8Tf32`).
    pub fn tf32(bits: u64) -> Num {
        Num::decode(bits & 0xFFFF_E000, 23, 8)
    }

    /// `floor(log2 |x|)` of a finite nonzero value.
    fn exponent(m: u64, e: i32) -> i32 {
        e + 63 - m.leading_zeros() as i32
    }
}

/// `m * 2^e` rounded toward zero to an `f32` (infinite beyond the `f32` range).
fn round_toward_zero(neg: bool, m: u64, e: i32) -> f32 {
    let sign = if neg { -1.0f32 } else { 1.0 };
    if m == 0 {
        return 0.0 * sign;
    }
    let top = Num::exponent(m, e);
    if top >= 128 {
        return f32::INFINITY * sign;
    }
    // The spacing of f32 values at this magnitude (fixed below the normal range).
    let q = (top - 23).max(-149);
    let m = if q > e {
        m.checked_shr((q - e) as u32).unwrap_or(0)
    } else {
        m
    };
    let e = q.max(e);
    // `m < 2^24` and `2^e` (`-149 <= e < 128`, a normal f64 built from its exponent field)
    // is a power of two inside the f64 range: both products are exact.
    let scale = f64::from_bits(((e + 1023) as u64) << 52);
    (m as f64 * scale) as f32 * sign
}

/// One element of D: `c + sum(a[k] * b[k])` as the tensor cores add (see `Stmt::Mma`).
pub fn dot(c: Num, terms: impl Iterator<Item = (Num, Num)>) -> u32 {
    // Every addend as (neg, m, e, alignment exponent), plus the specials seen.
    let mut addends: [(bool, u64, i32, i32); 17] = [(false, 0, 0, 0); 17];
    let mut n = 0;
    let (mut nan, mut pos_inf, mut neg_inf) = (false, false, false);
    let mut all_negative_zero = true;
    let mut add = |x: Num, align: Option<i32>| match x {
        Num::NaN => nan = true,
        Num::Inf { neg } => {
            if neg {
                neg_inf = true
            } else {
                pos_inf = true
            }
        }
        Num::Finite { neg, m, e } => {
            all_negative_zero &= neg && m == 0;
            if m != 0 && n < addends.len() {
                addends[n] = (neg, m, e, align.unwrap_or(Num::exponent(m, e)));
                n += 1;
            }
        }
    };
    add(c, None);
    for (a, b) in terms {
        let product = match (a, b) {
            (Num::NaN, _) | (_, Num::NaN) => Num::NaN,
            (Num::Inf { .. }, Num::Finite { m: 0, .. })
            | (Num::Finite { m: 0, .. }, Num::Inf { .. }) => Num::NaN,
            (Num::Inf { neg: x } | Num::Finite { neg: x, .. }, Num::Inf { neg: y })
            | (Num::Inf { neg: x }, Num::Finite { neg: y, .. }) => Num::Inf { neg: x != y },
            (
                Num::Finite {
                    neg: x,
                    m: ma,
                    e: ea,
                },
                Num::Finite {
                    neg: y,
                    m: mb,
                    e: eb,
                },
            ) => {
                let p = Num::Finite {
                    neg: x != y,
                    m: ma * mb,
                    e: ea + eb,
                };
                // Products align on the sum of the operands' exponents, not their own.
                let align =
                    (ma != 0 && mb != 0).then(|| Num::exponent(ma, ea) + Num::exponent(mb, eb));
                add(p, align);
                continue;
            }
        };
        add(product, None);
    }
    if nan || (pos_inf && neg_inf) {
        return CANONICAL_NAN;
    }
    if pos_inf || neg_inf {
        return if neg_inf { 0xFF80_0000 } else { 0x7F80_0000 };
    }
    let Some(big) = addends[..n].iter().map(|a| a.3).max() else {
        return if all_negative_zero { 0x8000_0000 } else { 0 };
    };
    // Each addend truncated toward zero to a multiple of 2^q, then summed exactly: every
    // addend is below 2^(big + 2), so each fits in 27 bits and the sum in an i64.
    let q = big - ALIGN_BITS;
    let mut sum = 0i64;
    for &(neg, m, e, _) in &addends[..n] {
        let units = if e >= q {
            m << (e - q)
        } else {
            m.checked_shr((q - e) as u32).unwrap_or(0)
        } as i64;
        sum += if neg { -units } else { units };
    }
    round_toward_zero(sum < 0, sum.unsigned_abs(), q).to_bits()
}

/// `top` of a zero operand: so far below every real exponent (a few hundred from 0) that a
/// product with a zero never decides the alignment (and a sum of two cannot overflow).
const ZERO_TOP: i32 = -(1 << 28);

/// An operand decoded once for the many dot products it takes part in (the tile
/// interpreter's `mma`): [`dot_operands`] adds these without matching on [`Num`] or
/// branching on the data.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Operand {
    num: Num,
    neg: bool,
    /// The significand of a finite value (0 for a zero), which fits 24 bits.
    m: u32,
    e: i32,
    /// `floor(log2 |x|)` of a finite nonzero value; [`ZERO_TOP`] for a zero.
    top: i32,
    /// An infinity or a NaN.
    special: bool,
}

impl Operand {
    /// `num` taken apart for [`dot_operands`].
    pub fn new(num: Num) -> Operand {
        match num {
            Num::Finite { neg, m, e } if m < 1 << 24 => Operand {
                num,
                neg,
                m: m as u32,
                e,
                top: if m == 0 {
                    ZERO_TOP
                } else {
                    Num::exponent(m, e)
                },
                special: false,
            },
            _ => Operand {
                num,
                neg: false,
                m: 0,
                e: 0,
                top: ZERO_TOP,
                special: true,
            },
        }
    }
}

/// `m * 2^e` in units of `2^q`, truncated toward zero (`e - q <= 25` for every addend, as
/// each is below `2^(big + 1)`), negated when `neg`: without branches.
#[inline(always)]
fn units(neg: bool, m: u64, e: i32, q: i32) -> i64 {
    let s = e - q;
    let left = s.clamp(0, 63) as u32;
    let right = (-s).clamp(0, 63) as u32;
    let magnitude = ((m << left) >> right) as i64;
    if neg { -magnitude } else { magnitude }
}

/// [`dot`] of the `f32` accumulator bits `c` and the terms `a[k] * b[k]` (at most 16), for
/// operands decoded once: the same addends, alignment, truncation and rounding, so the same
/// bits, in two passes without data-dependent branches. Specials go the general way.
pub fn dot_operands(c: u32, a: &[Operand], b: &[Operand]) -> u32 {
    let general = || {
        dot(
            Num::f32(u64::from(c)),
            a.iter().zip(b).map(|(x, y)| (x.num, y.num)),
        )
    };
    let Num::Finite {
        neg: cneg,
        m: cm,
        e: ce,
    } = Num::f32(u64::from(c))
    else {
        return general();
    };
    if a.len() > 16 || a.iter().chain(b).any(|o| o.special) {
        return general();
    }
    // Products align on the sum of the operands' exponents, not their own.
    let mut big = if cm == 0 {
        2 * ZERO_TOP
    } else {
        Num::exponent(cm, ce)
    };
    let mut all_negative = true;
    for (x, y) in a.iter().zip(b) {
        big = big.max(x.top + y.top);
        all_negative &= x.neg != y.neg;
    }
    // A real exponent is within a few hundred of 0; a product with a zero, near ZERO_TOP.
    if big < ZERO_TOP / 2 {
        // Every addend is a zero: negative only if all of them are.
        return if cneg && all_negative { 0x8000_0000 } else { 0 };
    }
    let q = big - ALIGN_BITS;
    let mut sum = units(cneg, cm, ce, q);
    for (x, y) in a.iter().zip(b) {
        sum += units(
            x.neg != y.neg,
            u64::from(x.m) * u64::from(y.m),
            x.e + y.e,
            q,
        );
    }
    round_toward_zero(sum < 0, sum.unsigned_abs(), q).to_bits()
}
