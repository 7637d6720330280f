//! Instruction sequences for the `f32` transcendental functions: `Exp`, `Ln`, `Log2`, `Sin`,
//! `Cos`, `Tanh` (`Exp2` is the single `ex2.approx.f32` instruction, in `math`).
//!
//! Their accuracy is documented (and was measured on hardware) in the `math` module. Special
//! inputs are fixed up with `selp`; the only branch skips the exact reduction of `Sin`/`Cos`
//! for small arguments. Each sequence is mirrored instruction by instruction by a plain-Rust
//! model in the tests below, which checks the algorithm and its constants against `f64`
//! references with exact stand-ins for the `.approx` instructions. Keep the two in step.

use crate::emit::{KernelWriter, ins};
use crate::math::k::{INF, NAN, NEG_INF, ONE};
use crate::regs::{Class, Reg};

// exp
const LOG2E_OVER_252: &str = "0f3BBB989D";
const F252: &str = "0f437C0000";
/// 1.5 * 2^23 + 1: adding it leaves an integer in the low mantissa bits.
const MAGIC_PLUS_1: &str = "0f4B400001";
/// -(1.5 * 2^23 + 127).
const NEG_MAGIC_PLUS_127: &str = "0fCB40007F";
const LOG2E_HI: &str = "0f3FB8AA3B";
const LOG2E_LO: &str = "0f32A57060";
// log
const MIN_NORMAL: &str = "0f00800000";
const TWO_P23: &str = "0f4B000000";
const TWO_M23: &str = "0f34000000";
const NEG_23: &str = "0fC1B80000";
const LN2_HI: &str = "0f3F317218";
const LN2_LO: &str = "0fB102E308";
/// -bits(2/3): `bits(x) - bits(2/3)` has the exponent of `x` scaled into [2/3, 4/3).
const NEG_TWO_THIRDS_BITS: i32 = -0x3F2A_AAAB;
/// 1/3, 1/5, 1/7, 1/9, 1/11: `atanh(s) / s = 1 + s^2/3 + s^4/5 + ...`.
const ATANH: [&str; 5] = [
    "0f3EAAAAAB",
    "0f3E4CCCCD",
    "0f3E124925",
    "0f3DE38E39",
    "0f3DBA2E8C",
];
// sin, cos
const TWO_OVER_PI: &str = "0f3F22F983";
/// -pi/2 in three parts (Cody–Waite).
const NEG_PIO2: [&str; 3] = ["0fBFC90FDA", "0fB3A22168", "0fA7C234C5"];
/// From this `abs(x)` on, the three-part reduction loses accuracy and the exact one is used.
const TRIG_LIMIT: &str = "0f47CE4780";
/// pi/2 * 2^-64, to scale the 64-bit fixed-point fraction of the exact reduction.
const PIO2_2M64: &str = "0d3BF921FB54442D18";
/// The module-scope table of the bits of 2/pi, after one word of zeros (see
/// [`TWO_OVER_PI_WORDS`]); declared by the module writer when a kernel uses `Sin` or `Cos`.
pub(crate) const TWO_OVER_PI_TABLE: &str = "$cuprum_two_over_pi";
/// 0, then the first 224 bits of the binary expansion of 2/pi, in 32-bit words: the start
/// of the one table of those bits, [`crate::f64math::TWO_OVER_PI_BITS`].
pub(crate) const TWO_OVER_PI_WORDS: [u32; 8] = {
    let bits = &crate::f64math::TWO_OVER_PI_BITS;
    let mut words = [0u32; 8];
    let mut i = 1;
    while i < 8 {
        let pair = bits[1 + (i - 1) / 2];
        words[i] = if (i - 1) % 2 == 0 {
            (pair >> 32) as u32
        } else {
            pair as u32
        };
        i += 1;
    }
    words
};
/// -1/3!, 1/5!, -1/7!, 1/9!.
const SIN: [&str; 4] = ["0fBE2AAAAB", "0f3C088889", "0fB9500D01", "0f3638EF1D"];
/// -1/2!, 1/4!, -1/6!, 1/8!, -1/10!.
const COS: [&str; 5] = [
    "0fBF000000",
    "0f3D2AAAAB",
    "0fBAB60B61",
    "0f37D00D01",
    "0fB493F27E",
];
// tanh
const TWO_LOG2E: &str = "0f4038AA3B";
const NEG_TWO: &str = "0fC0000000";
const TANH_SMALL: &str = "0f3F19999A";
/// Minimax fit of `(tanh(x) - x) / x^3` as a polynomial in `x^2` on [0, 0.6].
const TANH: [&str; 5] = [
    "0fBEAAAA9F",
    "0f3E0884D7",
    "0fBD5C4C6F",
    "0f3CAA5C52",
    "0fBBC12C33",
];

impl KernelWriter<'_> {
    fn f32s<const N: usize>(&mut self) -> [Reg; N] {
        std::array::from_fn(|_| self.regs.alloc(Class::F32))
    }

    /// `e^x = 2^n * 2^f`: `n` is `floor(x log2 e)` clamped to [-126, 126] (found with the
    /// `1.5 * 2^23` trick, whose bits also give `2^n`), `f = x log2 e - n` is computed with a
    /// two-part `log2 e`, and `2^f` with `ex2.approx.ftz`. The final multiplication creates
    /// subnormals and infinities as needed.
    pub(crate) fn exp_f32(&mut self, d: Reg, x: Reg) {
        let [t1, t2, t3, n, f, scale, e] = self.f32s();
        let b = self.tmp(Class::B32);
        ins!(self, "fma.rn.f32 {t1}, {x}, {LOG2E_OVER_252}, 0f3F000000");
        ins!(self, "cvt.sat.f32.f32 {t2}, {t1}");
        ins!(self, "fma.rm.f32 {t3}, {t2}, {F252}, {MAGIC_PLUS_1}");
        ins!(self, "add.rn.f32 {n}, {t3}, {NEG_MAGIC_PLUS_127}");
        ins!(self, "neg.f32 {n}, {n}");
        ins!(self, "fma.rn.f32 {f}, {x}, {LOG2E_HI}, {n}");
        ins!(self, "fma.rn.f32 {f}, {x}, {LOG2E_LO}, {f}");
        ins!(self, "mov.b32 {b}, {t3}");
        ins!(self, "shl.b32 {b}, {b}, 23");
        ins!(self, "mov.b32 {scale}, {b}");
        ins!(self, "ex2.approx.ftz.f32 {e}, {f}");
        ins!(self, "mul.rn.f32 {d}, {e}, {scale}");
    }

    /// `x = 2^e * m` with `m` in [2/3, 4/3) (subnormals scaled by 2^23 first);
    /// `ln m = 2 atanh(s)`, `s = (m - 1) / (m + 1)` in [-0.2, 0.15], by its series to `s^11`;
    /// then `e ln 2 + ln m` with a two-part `ln 2` (or `e + ln m * log2 e` for `log2`).
    /// Zero gives -inf; negative numbers and NaN give NaN; +inf gives +inf.
    pub(crate) fn log_f32(&mut self, d: Reg, x: Reg, base2: bool) {
        let [xs, eadj, m, ef, e, fm, den, s, z, p, s2, sz, lnm, r, fix] = self.f32s();
        let [dden, ns, res, rd, ds] = self.f32s();
        let [i, t, eb, mb] = [(); 4].map(|_| self.regs.alloc(Class::B32));
        let [sub, special, zero] = [(); 3].map(|_| self.regs.alloc(Class::Pred));
        ins!(self, "setp.lt.f32 {sub}, {x}, {MIN_NORMAL}");
        ins!(self, "mul.rn.f32 {xs}, {x}, {TWO_P23}");
        ins!(self, "selp.f32 {xs}, {xs}, {x}, {sub}");
        ins!(self, "selp.f32 {eadj}, {NEG_23}, 0f00000000, {sub}");
        ins!(self, "mov.b32 {i}, {xs}");
        ins!(self, "add.s32 {t}, {i}, {NEG_TWO_THIRDS_BITS}");
        ins!(self, "and.b32 {eb}, {t}, -8388608");
        ins!(self, "sub.s32 {mb}, {i}, {eb}");
        ins!(self, "mov.b32 {m}, {mb}");
        ins!(self, "cvt.rn.f32.s32 {ef}, {eb}");
        ins!(self, "fma.rn.f32 {e}, {ef}, {TWO_M23}, {eadj}");
        ins!(self, "sub.rn.f32 {fm}, {m}, {ONE}");
        ins!(self, "add.rn.f32 {den}, {m}, {ONE}");
        ins!(self, "div.rn.f32 {s}, {fm}, {den}");
        // `ds` corrects `s` for the roundings of `den` (m + 1 - den, exact) and of the
        // division (the residual `fm - s (m + 1)`, exact with fma).
        ins!(self, "add.rn.f32 {dden}, {den}, 0fBF800000");
        ins!(self, "sub.rn.f32 {dden}, {m}, {dden}");
        ins!(self, "neg.f32 {ns}, {s}");
        ins!(self, "fma.rn.f32 {res}, {ns}, {den}, {fm}");
        ins!(self, "fma.rn.f32 {res}, {ns}, {dden}, {res}");
        ins!(self, "rcp.approx.ftz.f32 {rd}, {den}");
        ins!(self, "mul.rn.f32 {ds}, {res}, {rd}");
        ins!(self, "add.rn.f32 {ds}, {ds}, {ds}");
        ins!(self, "mul.rn.f32 {z}, {s}, {s}");
        ins!(self, "fma.rn.f32 {p}, {z}, {}, {}", ATANH[4], ATANH[3]);
        for c in [ATANH[2], ATANH[1], ATANH[0]] {
            ins!(self, "fma.rn.f32 {p}, {p}, {z}, {c}");
        }
        ins!(self, "add.rn.f32 {s2}, {s}, {s}");
        ins!(self, "mul.rn.f32 {sz}, {s2}, {z}");
        ins!(self, "fma.rn.f32 {lnm}, {sz}, {p}, {ds}");
        ins!(self, "add.rn.f32 {lnm}, {s2}, {lnm}");
        if base2 {
            ins!(self, "mul.rn.f32 {r}, {lnm}, {LOG2E_LO}");
            ins!(self, "fma.rn.f32 {r}, {lnm}, {LOG2E_HI}, {r}");
            ins!(self, "add.rn.f32 {r}, {r}, {e}");
        } else {
            ins!(self, "fma.rn.f32 {r}, {e}, {LN2_LO}, {lnm}");
            ins!(self, "fma.rn.f32 {r}, {e}, {LN2_HI}, {r}");
        }
        // +inf, NaN and everything with the sign bit set.
        ins!(self, "setp.gt.u32 {special}, {i}, 2139095039");
        ins!(self, "fma.rn.f32 {fix}, {xs}, {INF}, {INF}");
        ins!(self, "selp.f32 {r}, {fix}, {r}, {special}");
        ins!(self, "setp.eq.f32 {zero}, {x}, 0f00000000");
        ins!(self, "selp.f32 {d}, {NEG_INF}, {r}, {zero}");
    }

    /// `x = k pi/2 + r` with `r` in [-pi/4, pi/4], Taylor polynomials for `sin r` and
    /// `cos r`, and the quadrant `k mod 4` picks and signs one. The reduction is three-part
    /// Cody–Waite with `fma` for abs(x) < 105615 and otherwise exact (Payne–Hanek: the
    /// 24-bit mantissa times a 96-bit window of 2/pi in integer arithmetic), so the error stays
    /// near 1 ulp over the whole range.
    pub(crate) fn sin_cos_f32(&mut self, d: Reg, x: Reg, cos: bool) {
        let [kr, kf, r, z, sp, rz, s, cp, c, v, nv, ax] = self.f32s();
        let [q, b] = [(); 2].map(|_| self.regs.alloc(Class::B32));
        let [odd, neg, big, inf] = [(); 4].map(|_| self.regs.alloc(Class::Pred));
        let poly = self.label();
        ins!(self, "mul.rn.f32 {kr}, {x}, {TWO_OVER_PI}");
        ins!(self, "cvt.rni.f32.f32 {kf}, {kr}");
        ins!(self, "fma.rn.f32 {r}, {kf}, {}, {x}", NEG_PIO2[0]);
        ins!(self, "fma.rn.f32 {r}, {kf}, {}, {r}", NEG_PIO2[1]);
        ins!(self, "fma.rn.f32 {r}, {kf}, {}, {r}", NEG_PIO2[2]);
        ins!(self, "cvt.rzi.s32.f32 {q}, {kf}");
        ins!(self, "abs.f32 {ax}, {x}");
        ins!(self, "setp.ge.f32 {big}, {ax}, {TRIG_LIMIT}");
        ins!(self, "@!{big} bra {poly}");
        self.exact_quadrant(x, r, q);
        self.place(poly);
        if cos {
            // cos(x) = sin(x + pi/2): one quadrant further.
            ins!(self, "add.s32 {q}, {q}, 1");
        }
        ins!(self, "mul.rn.f32 {z}, {r}, {r}");
        ins!(self, "fma.rn.f32 {sp}, {z}, {}, {}", SIN[3], SIN[2]);
        ins!(self, "fma.rn.f32 {sp}, {sp}, {z}, {}", SIN[1]);
        ins!(self, "fma.rn.f32 {sp}, {sp}, {z}, {}", SIN[0]);
        ins!(self, "mul.rn.f32 {rz}, {r}, {z}");
        ins!(self, "fma.rn.f32 {s}, {rz}, {sp}, {r}");
        ins!(self, "fma.rn.f32 {cp}, {z}, {}, {}", COS[4], COS[3]);
        for k in [COS[2], COS[1], COS[0]] {
            ins!(self, "fma.rn.f32 {cp}, {cp}, {z}, {k}");
        }
        ins!(self, "fma.rn.f32 {c}, {cp}, {z}, {ONE}");
        ins!(self, "and.b32 {b}, {q}, 1");
        ins!(self, "setp.ne.u32 {odd}, {b}, 0");
        ins!(self, "selp.f32 {v}, {c}, {s}, {odd}");
        ins!(self, "and.b32 {b}, {q}, 2");
        ins!(self, "setp.ne.u32 {neg}, {b}, 0");
        ins!(self, "neg.f32 {nv}, {v}");
        ins!(self, "selp.f32 {v}, {nv}, {v}, {neg}");
        // sin and cos of an infinity are NaN.
        ins!(self, "setp.eq.f32 {inf}, {ax}, {INF}");
        ins!(self, "selp.f32 {v}, {NAN}, {v}, {inf}");
        if cos {
            self.mov(d, v);
        } else {
            // sin(-0) is -0, which the polynomial would turn into +0.
            let zero = self.tmp(Class::Pred);
            ins!(self, "setp.eq.f32 {zero}, {x}, 0f00000000");
            ins!(self, "selp.f32 {d}, {x}, {v}, {zero}");
        }
    }

    /// The exact reduction of a large `x`: writes `r` (f32) and the quadrant `q` (s32, only
    /// its low two bits matter). With `x = m 2^e` (`m` the 24-bit integer mantissa), the bits
    /// of 2/pi that matter modulo 4 start at weight `2^-(e-1)`; 96 of them times `m`, modulo
    /// 2^96, is `x * 2/pi mod 4` as a fixed-point number with 94 fraction bits.
    fn exact_quadrant(&mut self, x: Reg, r: Reg, q: Reg) {
        let [
            ix,
            g,
            m,
            j,
            o,
            t0,
            t1,
            t2,
            t3,
            w0,
            w1,
            w2,
            clo,
            lo,
            hi,
            qq,
            inc,
        ] = [(); 17].map(|_| self.regs.alloc(Class::B32));
        let [tb, off, a, b, t, f] = [(); 6].map(|_| self.regs.alloc(Class::B64));
        let rd = self.tmp(Class::F64);
        let [fneg, xneg] = [(); 2].map(|_| self.regs.alloc(Class::Pred));
        ins!(self, "mov.b32 {ix}, {x}");
        ins!(self, "and.b32 {ix}, {ix}, 2147483647");
        // g = e + 30 = biased exponent - 120: the first bit's index in the zero-padded table.
        ins!(self, "shr.u32 {g}, {ix}, 23");
        ins!(self, "add.s32 {g}, {g}, -120");
        ins!(self, "and.b32 {m}, {ix}, 8388607");
        ins!(self, "or.b32 {m}, {m}, 8388608");
        ins!(self, "shr.u32 {j}, {g}, 5");
        ins!(self, "and.b32 {o}, {g}, 31");
        ins!(self, "mov.u64 {tb}, {TWO_OVER_PI_TABLE}");
        ins!(self, "mul.wide.u32 {off}, {j}, 4");
        ins!(self, "add.u64 {tb}, {tb}, {off}");
        ins!(self, "ld.const.u32 {t0}, [{tb}]");
        ins!(self, "ld.const.u32 {t1}, [{tb}+4]");
        ins!(self, "ld.const.u32 {t2}, [{tb}+8]");
        ins!(self, "ld.const.u32 {t3}, [{tb}+12]");
        ins!(self, "shf.l.clamp.b32 {w0}, {t1}, {t0}, {o}");
        ins!(self, "shf.l.clamp.b32 {w1}, {t2}, {t1}, {o}");
        ins!(self, "shf.l.clamp.b32 {w2}, {t3}, {t2}, {o}");
        // The low 96 bits of m * (w0:w1:w2).
        ins!(self, "mul.wide.u32 {a}, {m}, {w2}");
        ins!(self, "mul.wide.u32 {b}, {m}, {w1}");
        ins!(self, "mul.lo.u32 {clo}, {m}, {w0}");
        ins!(self, "shr.u64 {t}, {a}, 32");
        ins!(self, "add.u64 {t}, {t}, {b}");
        ins!(self, "cvt.u32.u64 {lo}, {t}");
        ins!(self, "shr.u64 {t}, {t}, 32");
        ins!(self, "cvt.u32.u64 {hi}, {t}");
        ins!(self, "add.u32 {hi}, {hi}, {clo}");
        // Two integer bits are the quadrant; the fraction, as a signed 64-bit number, is in
        // [-1/2, 1/2) of a quadrant (a negative one rounds the quadrant up).
        ins!(self, "shr.u32 {qq}, {hi}, 30");
        ins!(self, "mov.b64 {f}, {{{lo}, {hi}}}");
        ins!(self, "shl.b64 {f}, {f}, 2");
        ins!(self, "setp.lt.s64 {fneg}, {f}, 0");
        ins!(self, "selp.u32 {inc}, 1, 0, {fneg}");
        ins!(self, "add.u32 {qq}, {qq}, {inc}");
        ins!(self, "cvt.rn.f64.s64 {rd}, {f}");
        ins!(self, "mul.rn.f64 {rd}, {rd}, {PIO2_2M64}");
        ins!(self, "cvt.rn.f32.f64 {r}, {rd}");
        ins!(self, "setp.lt.f32 {xneg}, {x}, 0f00000000");
        ins!(self, "@{xneg} neg.f32 {r}, {r}");
        ins!(self, "@{xneg} neg.s32 {qq}, {qq}");
        self.mov(q, qq);
    }

    /// For abs(x) >= 0.6, `1 - 2 / (e^(2 abs(x)) + 1)` with `ex2.approx` and `rcp.approx`
    /// (no cancellation there); below, `x + x^3 p(x^2)`; the sign of `x` is copied last.
    pub(crate) fn tanh_f32(&mut self, d: Reg, x: Reg) {
        let [ax, a2, e, e1, rc, t, z, p, xz, s, v] = self.f32s();
        let large = self.tmp(Class::Pred);
        ins!(self, "abs.f32 {ax}, {x}");
        ins!(self, "mul.rn.f32 {a2}, {ax}, {TWO_LOG2E}");
        ins!(self, "ex2.approx.ftz.f32 {e}, {a2}");
        ins!(self, "add.rn.f32 {e1}, {e}, {ONE}");
        ins!(self, "rcp.approx.ftz.f32 {rc}, {e1}");
        ins!(self, "fma.rn.f32 {t}, {rc}, {NEG_TWO}, {ONE}");
        ins!(self, "mul.rn.f32 {z}, {x}, {x}");
        ins!(self, "fma.rn.f32 {p}, {z}, {}, {}", TANH[4], TANH[3]);
        for c in [TANH[2], TANH[1], TANH[0]] {
            ins!(self, "fma.rn.f32 {p}, {p}, {z}, {c}");
        }
        ins!(self, "mul.rn.f32 {xz}, {x}, {z}");
        ins!(self, "fma.rn.f32 {s}, {xz}, {p}, {x}");
        ins!(self, "setp.ge.f32 {large}, {ax}, {TANH_SMALL}");
        ins!(self, "selp.f32 {v}, {t}, {s}, {large}");
        ins!(self, "copysign.f32 {d}, {x}, {v}");
    }
}

/// Plain-Rust models of the sequences above, one line per instruction.
#[cfg(test)]
mod tests {
    fn c(hex: &str) -> f32 {
        f32::from_bits(u32::from_str_radix(&hex[2..], 16).unwrap_or(0))
    }
    fn fma(a: f32, b: f32, c: f32) -> f32 {
        a.mul_add(b, c)
    }
    /// Stand-in for `ex2.approx`: the exact result, rounded.
    fn ex2(x: f32) -> f32 {
        (x as f64).exp2() as f32
    }
    fn copysign(a: f32, b: f32) -> f32 {
        b.copysign(a)
    }
    use super::*;

    fn exp(x: f32) -> f32 {
        let t1 = fma(x, c(LOG2E_OVER_252), 0.5);
        let t2 = if t1.is_nan() { 0.0 } else { t1.clamp(0.0, 1.0) };
        // fma.rm: exact in f64, and the result lies in [2^23, 2^24) where f32 steps by 1.
        let t3 = ((t2 as f64) * (c(F252) as f64) + c(MAGIC_PLUS_1) as f64).floor() as f32;
        let n = -(t3 + c(NEG_MAGIC_PLUS_127));
        let f = fma(x, c(LOG2E_HI), n);
        let f = fma(x, c(LOG2E_LO), f);
        let scale = f32::from_bits(t3.to_bits() << 23);
        ex2(f) * scale
    }

    fn log(x: f32, base2: bool) -> f32 {
        let sub = x < c(MIN_NORMAL);
        let xs = if sub { x * c(TWO_P23) } else { x };
        let eadj = if sub { c(NEG_23) } else { 0.0 };
        let i = xs.to_bits();
        let t = (i as i32).wrapping_add(NEG_TWO_THIRDS_BITS);
        let eb = t & -8388608;
        let m = f32::from_bits((i as i32).wrapping_sub(eb) as u32);
        let e = fma(eb as f32, c(TWO_M23), eadj);
        let fm = m - 1.0;
        let den = m + 1.0;
        let s = fm / den;
        // Correction for the roundings of `den` and of the division.
        let dden = m - (den - 1.0);
        let r1 = fma(-s, dden, fma(-s, den, fm));
        let ds = r1 * (1.0 / den);
        let z = s * s;
        let mut p = fma(z, c(ATANH[4]), c(ATANH[3]));
        for k in [ATANH[2], ATANH[1], ATANH[0]] {
            p = fma(p, z, c(k));
        }
        let s2 = s + s;
        let lnm = s2 + fma(s2 * z, p, ds + ds);
        let r = if base2 {
            fma(lnm, c(LOG2E_HI), lnm * c(LOG2E_LO)) + e
        } else {
            fma(e, c(LN2_HI), fma(e, c(LN2_LO), lnm))
        };
        let r = if i > 2139095039 {
            fma(xs, f32::INFINITY, f32::INFINITY)
        } else {
            r
        };
        if x == 0.0 { f32::NEG_INFINITY } else { r }
    }

    /// The exact reduction: `(r, q)` for a large `x`.
    fn exact_quadrant(x: f32) -> (f32, i32) {
        let ix = x.to_bits() & 0x7FFF_FFFF;
        let g = (ix >> 23).wrapping_add(-120i32 as u32);
        let m = (ix & 0x7F_FFFF) | 0x80_0000;
        let (j, o) = ((g >> 5) as usize, g & 31);
        let w = &TWO_OVER_PI_WORDS[j..j + 4];
        let shf = |lo: u32, hi: u32| ((((hi as u64) << 32 | lo as u64) << o) >> 32) as u32;
        let (w0, w1, w2) = (shf(w[1], w[0]), shf(w[2], w[1]), shf(w[3], w[2]));
        let a = m as u64 * w2 as u64;
        let b = m as u64 * w1 as u64;
        let clo = m.wrapping_mul(w0);
        let t = (a >> 32) + b;
        let (lo, hi) = (t as u32, ((t >> 32) as u32).wrapping_add(clo));
        let f = ((((hi as u64) << 32) | lo as u64) << 2) as i64;
        let q = (hi >> 30) as i32 + (f < 0) as i32;
        let r = (f as f64 * f64::from_bits(0x3BF9_21FB_5444_2D18)) as f32;
        if x < 0.0 { (-r, -q) } else { (r, q) }
    }

    fn sin_cos(x: f32, cos: bool) -> f32 {
        let kf = (x * c(TWO_OVER_PI)).round_ties_even();
        let mut r = fma(kf, c(NEG_PIO2[0]), x);
        r = fma(kf, c(NEG_PIO2[1]), r);
        r = fma(kf, c(NEG_PIO2[2]), r);
        let mut q = kf as i32;
        if x.abs() >= c(TRIG_LIMIT) {
            (r, q) = exact_quadrant(x);
        }
        let q = q.wrapping_add(cos as i32);
        let z = r * r;
        let mut sp = fma(z, c(SIN[3]), c(SIN[2]));
        sp = fma(sp, z, c(SIN[1]));
        sp = fma(sp, z, c(SIN[0]));
        let s = fma(r * z, sp, r);
        let mut cp = fma(z, c(COS[4]), c(COS[3]));
        for k in [COS[2], COS[1], COS[0]] {
            cp = fma(cp, z, c(k));
        }
        let cc = fma(cp, z, 1.0);
        let v = if q & 1 != 0 { cc } else { s };
        let v = if q & 2 != 0 { -v } else { v };
        let v = if x.abs() == f32::INFINITY {
            f32::NAN
        } else {
            v
        };
        if !cos && x == 0.0 { x } else { v }
    }

    fn tanh(x: f32) -> f32 {
        let ax = x.abs();
        let e = ex2(ax * c(TWO_LOG2E));
        let rc = 1.0 / (e + 1.0);
        let t = fma(rc, c(NEG_TWO), 1.0);
        let z = x * x;
        let mut p = fma(z, c(TANH[4]), c(TANH[3]));
        for k in [TANH[2], TANH[1], TANH[0]] {
            p = fma(p, z, c(k));
        }
        let s = fma(x * z, p, x);
        copysign(x, if ax >= c(TANH_SMALL) { t } else { s })
    }

    /// Error of `got` against `want` in units of the last place of `want` as an f32.
    fn ulps(got: f32, want: f64) -> f64 {
        if want.is_nan() {
            return if got.is_nan() { 0.0 } else { f64::INFINITY };
        }
        let w = want as f32;
        if w.is_infinite() || got.is_infinite() {
            return if got == w { 0.0 } else { f64::INFINITY };
        }
        let ulp = if w == 0.0 {
            f32::from_bits(1) as f64
        } else {
            let next = f32::from_bits(w.abs().to_bits() + 1);
            (next - w.abs()) as f64
        };
        (got as f64 - want).abs() / ulp
    }

    /// Samples of every binade in `[lo, hi]` (positive), with both signs when `signed`.
    fn samples(lo: f32, hi: f32, signed: bool) -> Vec<f32> {
        let (a, b) = (lo.to_bits(), hi.to_bits());
        let step = ((b - a) / 200_000).max(1);
        let mut v: Vec<f32> = (a..=b).step_by(step as usize).map(f32::from_bits).collect();
        if signed {
            let neg: Vec<f32> = v.iter().map(|x| -x).collect();
            v.extend(neg);
        }
        v
    }

    fn worst(xs: &[f32], got: impl Fn(f32) -> f32, want: impl Fn(f64) -> f64) -> (f64, f32) {
        let w = xs.iter().fold((0.0, 0.0), |(w, wx), &x| {
            let e = ulps(got(x), want(x as f64));
            if e > w { (e, x) } else { (w, wx) }
        });
        eprintln!("worst error {} ulp at {}", w.0, w.1);
        w
    }

    #[test]
    fn exp_model_is_accurate() {
        let xs = samples(1e-30, 104.0, true);
        let (e, x) = worst(&xs, exp, f64::exp);
        assert!(e <= 1.5, "exp: {e} ulp at {x}");
        assert_eq!(exp(f32::INFINITY), f32::INFINITY);
        assert_eq!(exp(f32::NEG_INFINITY), 0.0);
        assert!(exp(f32::NAN).is_nan());
        assert_eq!(exp(0.0), 1.0);
    }

    #[test]
    fn log_model_is_accurate() {
        let xs = samples(f32::from_bits(1), f32::MAX, false);
        let (e, x) = worst(&xs, |x| log(x, false), f64::ln);
        assert!(e <= 1.5, "ln: {e} ulp at {x}");
        let (e, x) = worst(&xs, |x| log(x, true), f64::log2);
        assert!(e <= 1.5, "log2: {e} ulp at {x}");
        for base2 in [false, true] {
            assert_eq!(log(0.0, base2), f32::NEG_INFINITY);
            assert_eq!(log(-0.0, base2), f32::NEG_INFINITY);
            assert!(log(-1.0, base2).is_nan());
            assert!(log(f32::NAN, base2).is_nan());
            assert_eq!(log(f32::INFINITY, base2), f32::INFINITY);
            assert_eq!(log(1.0, base2), 0.0);
        }
        assert_eq!(log(8.0, true), 3.0);
    }

    #[test]
    fn sin_cos_models_are_accurate() {
        let xs = samples(1e-30, f32::MAX, true);
        let (e, x) = worst(&xs, |x| sin_cos(x, false), f64::sin);
        assert!(e <= 1.5, "sin: {e} ulp at {x}");
        let (e, x) = worst(&xs, |x| sin_cos(x, true), f64::cos);
        assert!(e <= 1.5, "cos: {e} ulp at {x}");
        assert!(sin_cos(-0.0, false).is_sign_negative());
        assert!(sin_cos(f32::INFINITY, false).is_nan());
        assert!(sin_cos(f32::NEG_INFINITY, true).is_nan());
        assert!(sin_cos(f32::NAN, true).is_nan());
        assert_eq!(sin_cos(0.0, true), 1.0);
    }

    #[test]
    fn tanh_model_is_accurate() {
        let xs = samples(1e-30, 20.0, true);
        let (e, x) = worst(&xs, tanh, f64::tanh);
        assert!(e <= 2.0, "tanh: {e} ulp at {x}");
        assert!(tanh(-0.0).is_sign_negative());
        assert_eq!(tanh(f32::INFINITY), 1.0);
        assert_eq!(tanh(f32::NEG_INFINITY), -1.0);
        assert!(tanh(f32::NAN).is_nan());
    }
}
