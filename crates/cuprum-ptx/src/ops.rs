//! Single-value operations: constants, integer and boolean arithmetic, comparisons, selects,
//! casts and bitcasts, and the dispatch of every [`Op`] to its emitter.
//!
//! Integers of up to 32 bits are kept canonical in `.b32` registers (see `regs`): this module
//! re-normalises after every operation that can leave garbage in the high bits. Float
//! operations and the 16-bit float conversions live in `math`.

use cuprum_ir::{BinaryOp, CmpOp, Constant, Op, ScalarType, TernaryOp, UnaryOp, Value};

use crate::PtxError;
use crate::emit::{KernelWriter, ins};
use crate::regs::{Class, Reg, float_type, int_op_type, is_half};

use ScalarType as S;

impl KernelWriter<'_> {
    /// Emits the definition of `value` by `op`.
    pub(crate) fn def(&mut self, value: Value, op: &Op) -> Result<(), PtxError> {
        let d = self.reg(value);
        let ty = self.ty(value);
        // Two 16-bit floats packed into a word (`pack`): one vector move.
        if let Some(&(lo, hi)) = self.half_pairs.get(&value) {
            let (lo, hi) = (self.reg(lo), self.reg(hi));
            ins!(self, "mov.b32 {d}, {{{lo}, {hi}}}");
            return Ok(());
        }
        match op {
            Op::Const(c) => self.constant(d, *c),
            Op::Param(_)
            | Op::SliceBase(_)
            | Op::SliceLen(_)
            | Op::SharedAddr(_)
            | Op::DynSharedAddr
            | Op::LocalAddr(_)
            | Op::Special(_) => self.def_input(d, ty, op),
            Op::Unary(u, a) => {
                let a = self.reg(*a);
                self.unary(*u, ty, d, a)?;
            }
            // `1.0 / x`: the correctly rounded reciprocal is the same number, in fewer
            // instructions than a division (nvcc writes `1.0f / x` so too).
            Op::Binary(BinaryOp::Div, l, r)
                if matches!(ty, S::F32 | S::F64) && self.float_ones.contains(l) =>
            {
                let r = self.reg(*r);
                ins!(self, "rcp.rn.{} {d}, {r}", float_type(ty));
            }
            Op::Binary(b, l, r) => {
                let (l, r) = (self.reg(*l), self.reg(*r));
                self.binary(*b, ty, d, l, r)?;
            }
            Op::Ternary(TernaryOp::MulAdd, a, b, c) => {
                let (a, b, c) = (self.reg(*a), self.reg(*b), self.reg(*c));
                self.mul_add(ty, d, a, b, c)?;
            }
            Op::Compare(c, l, r) => {
                let operand_ty = self.ty(*l);
                let (l, r) = (self.reg(*l), self.reg(*r));
                self.compare(*c, operand_ty, d, l, r);
            }
            Op::Select {
                cond,
                if_true,
                if_false,
            } => {
                let (c, t, f) = (self.reg(*cond), self.reg(*if_true), self.reg(*if_false));
                self.select(d, c, t, f);
            }
            Op::Cast { value, to } => {
                let (from, s) = (self.ty(*value), self.reg(*value));
                self.cast(from, *to, d, s)?;
            }
            Op::Bitcast { value, to } => {
                let (from, s) = (self.ty(*value), self.reg(*value));
                self.bitcast(from, *to, d, s)?;
            }
            Op::ReadVar(var) => {
                let v = self.var(*var);
                self.mov(d, v);
            }
            Op::Load {
                space,
                ty,
                addr,
                eviction,
            } => self.load(d, *space, *ty, *addr, *eviction),
            Op::Atomic {
                op,
                space,
                scope,
                order,
                addr,
                value,
                compare,
            } => self.atomic(d, *op, *space, *scope, *order, *addr, *value, *compare)?,
            Op::AtomicLoad {
                space,
                scope,
                order,
                ty,
                addr,
            } => self.atomic_load(d, *space, *scope, *order, *ty, *addr)?,
            Op::Shuffle { mode, value, lane } => self.shuffle(d, *mode, *value, *lane),
            Op::Vote { mode, pred } => self.vote(d, *mode, *pred),
        }
        Ok(())
    }

    fn constant(&mut self, d: Reg, c: Constant) {
        let b = c.bits;
        match c.ty {
            S::Bool => ins!(self, "mov.pred {d}, {}", b & 1),
            S::I8 => ins!(self, "mov.b32 {d}, {}", b as u8 as i8 as i32),
            S::I16 => ins!(self, "mov.b32 {d}, {}", b as u16 as i16 as i32),
            S::I32 | S::U32 | S::U8 | S::U16 => ins!(self, "mov.b32 {d}, {}", b as u32 as i32),
            S::I64 | S::U64 if b <= i64::MAX as u64 => ins!(self, "mov.b64 {d}, {b}"),
            S::I64 | S::U64 => ins!(self, "mov.b64 {d}, 0x{b:016X}"),
            S::F16 | S::BF16 => ins!(self, "mov.b16 {d}, 0x{:04X}", b as u16),
            S::F32 | S::Tf32 => ins!(self, "mov.f32 {d}, 0f{:08X}", b as u32),
            S::F64 => ins!(self, "mov.f64 {d}, 0d{b:016X}"),
        }
    }

    /// Restores the canonical form of an 8- or 16-bit integer in a `.b32` register.
    pub(crate) fn normalize(&mut self, r: Reg, ty: ScalarType) {
        match ty {
            S::I8 => ins!(self, "cvt.s32.s8 {r}, {r}"),
            S::I16 => ins!(self, "cvt.s32.s16 {r}, {r}"),
            S::U8 => ins!(self, "and.b32 {r}, {r}, 255"),
            S::U16 => ins!(self, "and.b32 {r}, {r}, 65535"),
            _ => {}
        }
    }

    /// `count_ones`, `leading_zeros` or `trailing_zeros` of an integer, in its own type. PTX
    /// counts into a `u32`; narrow values (canonical in 32-bit registers, so sign-extended
    /// when signed) are masked to their width first, a `leading_zeros` is corrected by the
    /// bits above the width, and a `trailing_zeros` sees a one just above the width, so zero
    /// counts as the width.
    fn bit_count(&mut self, u: UnaryOp, ty: ScalarType, d: Reg, a: Reg) {
        let bits = ty.bits();
        if bits == 64 {
            let count = self.tmp(Class::B32);
            match u {
                UnaryOp::CountOnes => ins!(self, "popc.b64 {count}, {a}"),
                UnaryOp::LeadingZeros => ins!(self, "clz.b64 {count}, {a}"),
                _ => {
                    let r = self.tmp(Class::B64);
                    ins!(self, "brev.b64 {r}, {a}");
                    ins!(self, "clz.b64 {count}, {r}");
                }
            }
            ins!(self, "cvt.u64.u32 {d}, {count}");
            return;
        }
        let x = if bits < 32 {
            let x = self.tmp(Class::B32);
            let mask = (1u32 << bits) - 1;
            ins!(self, "and.b32 {x}, {a}, {mask}");
            x
        } else {
            a
        };
        match u {
            UnaryOp::CountOnes => ins!(self, "popc.b32 {d}, {x}"),
            UnaryOp::LeadingZeros => {
                ins!(self, "clz.b32 {d}, {x}");
                if bits < 32 {
                    ins!(self, "sub.u32 {d}, {d}, {}", 32 - bits);
                }
            }
            _ => {
                let r = self.tmp(Class::B32);
                if bits < 32 {
                    ins!(self, "or.b32 {r}, {x}, {}", 1u32 << bits);
                    ins!(self, "brev.b32 {r}, {r}");
                } else {
                    ins!(self, "brev.b32 {r}, {x}");
                }
                ins!(self, "clz.b32 {d}, {r}");
            }
        }
    }

    fn unary(&mut self, u: UnaryOp, ty: ScalarType, d: Reg, a: Reg) -> Result<(), PtxError> {
        match (u, ty) {
            (UnaryOp::Not, S::Bool) => ins!(self, "not.pred {d}, {a}"),
            (UnaryOp::Not, t) if t.is_int() => {
                ins!(self, "not.{} {d}, {a}", d.class.ptx_type());
                self.normalize(d, t);
            }
            (UnaryOp::Neg, t) if t.is_int() => {
                let w = if t.bits() == 64 { 64 } else { 32 };
                ins!(self, "neg.s{w} {d}, {a}");
                self.normalize(d, t);
            }
            (UnaryOp::Neg, t) if is_half(t) => ins!(self, "xor.b16 {d}, {a}, 0x8000"),
            (UnaryOp::Neg, S::F32 | S::F64) => ins!(self, "neg.{} {d}, {a}", float_type(ty)),
            (UnaryOp::Abs, t) if is_half(t) => ins!(self, "and.b16 {d}, {a}, 0x7FFF"),
            (UnaryOp::Abs, S::F32 | S::F64) => ins!(self, "abs.{} {d}, {a}", float_type(ty)),
            (u, t) if u.is_bit_count() && t.is_int() => self.bit_count(u, t, d, a),
            (UnaryOp::Neg | UnaryOp::Not | UnaryOp::Abs, t) => {
                return Err(self.unsupported(format!("{u:?} on {t}")));
            }
            (_, t) if t.is_float() => self.float_unary(u, t, d, a)?,
            (_, t) => return Err(self.unsupported(format!("{u:?} on {t}"))),
        }
        Ok(())
    }

    fn binary(
        &mut self,
        b: BinaryOp,
        ty: ScalarType,
        d: Reg,
        l: Reg,
        r: Reg,
    ) -> Result<(), PtxError> {
        if ty == S::Bool {
            let name = match b {
                BinaryOp::And => "and",
                BinaryOp::Or => "or",
                BinaryOp::Xor => "xor",
                _ => return Err(self.unsupported(format!("{b:?} on bool"))),
            };
            ins!(self, "{name}.pred {d}, {l}, {r}");
            return Ok(());
        }
        if ty.is_float() {
            return self.float_binary(b, ty, d, l, r);
        }
        let t = int_op_type(ty);
        let bits = d.class.ptx_type();
        match b {
            BinaryOp::Add => ins!(self, "add.{t} {d}, {l}, {r}"),
            BinaryOp::Sub => ins!(self, "sub.{t} {d}, {l}, {r}"),
            BinaryOp::Mul => ins!(self, "mul.lo.{t} {d}, {l}, {r}"),
            // The validator admits 32- and 64-bit operands only, whose registers are exact.
            BinaryOp::MulHigh => ins!(self, "mul.hi.{t} {d}, {l}, {r}"),
            BinaryOp::Div => ins!(self, "div.{t} {d}, {l}, {r}"),
            BinaryOp::Rem => ins!(self, "rem.{t} {d}, {l}, {r}"),
            BinaryOp::And => ins!(self, "and.{bits} {d}, {l}, {r}"),
            BinaryOp::Or => ins!(self, "or.{bits} {d}, {l}, {r}"),
            BinaryOp::Xor => ins!(self, "xor.{bits} {d}, {l}, {r}"),
            BinaryOp::Min => ins!(self, "min.{t} {d}, {l}, {r}"),
            BinaryOp::Max => ins!(self, "max.{t} {d}, {l}, {r}"),
            BinaryOp::Atan2 | BinaryOp::Hypot => {
                return Err(self.unsupported(format!("{b:?} on {ty}")));
            }
            BinaryOp::Shl | BinaryOp::Shr => {
                // The amount is taken modulo the width (Rust's `wrapping_shl`/`wrapping_shr`).
                let m = self.tmp(Class::B32);
                ins!(self, "and.b32 {m}, {r}, {}", ty.bits() - 1);
                if b == BinaryOp::Shl {
                    ins!(self, "shl.{bits} {d}, {l}, {m}");
                } else {
                    // Arithmetic on signed, logical on unsigned; canonical narrow values shift
                    // correctly as 32-bit ones.
                    ins!(self, "shr.{t} {d}, {l}, {m}");
                }
            }
        }
        if matches!(
            b,
            BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Shl
        ) {
            self.normalize(d, ty);
        }
        Ok(())
    }

    fn compare(&mut self, c: CmpOp, ty: ScalarType, d: Reg, l: Reg, r: Reg) {
        if ty == S::Bool {
            // false < true.
            let t = self.tmp(Class::Pred);
            match c {
                CmpOp::Eq => {
                    ins!(self, "xor.pred {t}, {l}, {r}");
                    ins!(self, "not.pred {d}, {t}");
                }
                CmpOp::Ne => ins!(self, "xor.pred {d}, {l}, {r}"),
                CmpOp::Lt | CmpOp::Le => {
                    ins!(self, "not.pred {t}, {l}");
                    let op = if c == CmpOp::Lt { "and" } else { "or" };
                    ins!(self, "{op}.pred {d}, {t}, {r}");
                }
                CmpOp::Gt | CmpOp::Ge => {
                    ins!(self, "not.pred {t}, {r}");
                    let op = if c == CmpOp::Gt { "and" } else { "or" };
                    ins!(self, "{op}.pred {d}, {l}, {t}");
                }
            }
            return;
        }
        if is_half(ty) {
            let (fl, fr) = (self.widen_half(l, ty), self.widen_half(r, ty));
            self.compare(c, S::F32, d, fl, fr);
            return;
        }
        let (name, t) = if ty.is_float() {
            // IEEE: ordered comparisons are false on NaN, `Ne` (unordered) is true.
            let name = match c {
                CmpOp::Eq => "eq",
                CmpOp::Ne => "neu",
                CmpOp::Lt => "lt",
                CmpOp::Le => "le",
                CmpOp::Gt => "gt",
                CmpOp::Ge => "ge",
            };
            (name, float_type(ty))
        } else {
            let name = match c {
                CmpOp::Eq => "eq",
                CmpOp::Ne => "ne",
                CmpOp::Lt => "lt",
                CmpOp::Le => "le",
                CmpOp::Gt => "gt",
                CmpOp::Ge => "ge",
            };
            (name, int_op_type(ty))
        };
        ins!(self, "setp.{name}.{t} {d}, {l}, {r}");
    }

    fn select(&mut self, d: Reg, c: Reg, t: Reg, f: Reg) {
        if d.class == Class::Pred {
            let (n, x, y) = (
                self.tmp(Class::Pred),
                self.tmp(Class::Pred),
                self.tmp(Class::Pred),
            );
            ins!(self, "not.pred {n}, {c}");
            ins!(self, "and.pred {x}, {c}, {t}");
            ins!(self, "and.pred {y}, {n}, {f}");
            ins!(self, "or.pred {d}, {x}, {y}");
        } else {
            ins!(self, "selp.{} {d}, {t}, {f}, {c}", d.class.ptx_type());
        }
    }

    /// Rust's `as` from `from` to `to` (see `cuprum_ir::kernel`).
    fn cast(&mut self, from: ScalarType, to: ScalarType, d: Reg, s: Reg) -> Result<(), PtxError> {
        if from == to {
            self.mov(d, s);
            return Ok(());
        }
        match (from, to) {
            // A `tf32` is the `f32` it stands for, in an `f32` register.
            (S::Tf32, _) => return self.cast(S::F32, to, d, s),
            (_, S::Tf32) => {
                let f = if from == S::F32 {
                    s
                } else {
                    let f = self.tmp(Class::F32);
                    self.cast(from, S::F32, f, s)?;
                    f
                };
                self.round_to_tf32(d, f);
            }
            (_, S::Bool) => return Err(self.unsupported(format!("cast from {from} to bool"))),
            (S::Bool, _) => self.bool_to(to, d, s),
            _ if from.is_int() && to.is_int() => self.int_to_int(from, to, d, s),
            _ if from.is_int() => self.int_to_float(from, to, d, s),
            _ if to.is_int() => self.float_to_int(from, to, d, s),
            _ => self.float_to_float(from, to, d, s),
        }
        Ok(())
    }

    /// `d = f` rounded to `tf32` in integer instructions, exactly as
    /// `cuprum_ir::scalar::round_to_tf32` defines it (not `cvt.rna.tf32.f32`, whose handling
    /// of NaNs was never measured).
    fn round_to_tf32(&mut self, d: Reg, f: Reg) {
        let bits = self.tmp(Class::B32);
        let magnitude = self.tmp(Class::B32);
        let nan = self.tmp(Class::Pred);
        ins!(self, "mov.b32 {bits}, {f}");
        ins!(self, "and.b32 {magnitude}, {bits}, 2147483647");
        ins!(self, "setp.gt.u32 {nan}, {magnitude}, 2139095040");
        ins!(self, "add.u32 {bits}, {bits}, 4096");
        ins!(self, "and.b32 {bits}, {bits}, -8192");
        ins!(
            self,
            "selp.b32 {bits}, {}, {bits}, {nan}",
            cuprum_ir::scalar::TF32_NAN
        );
        ins!(self, "mov.b32 {d}, {bits}");
    }

    fn bool_to(&mut self, to: ScalarType, d: Reg, s: Reg) {
        let (one, zero) = match to {
            S::F32 => ("0f3F800000", "0f00000000"),
            S::F64 => ("0d3FF0000000000000", "0d0000000000000000"),
            S::F16 => ("0x3C00", "0x0000"),
            S::BF16 => ("0x3F80", "0x0000"),
            _ => ("1", "0"),
        };
        ins!(self, "selp.{} {d}, {one}, {zero}, {s}", d.class.ptx_type());
    }

    fn int_to_int(&mut self, from: ScalarType, to: ScalarType, d: Reg, s: Reg) {
        match (from.bits() == 64, to.bits() == 64) {
            (true, true) => self.mov(d, s),
            (false, true) => {
                // The canonical 32-bit register already holds the source extended by its own
                // signedness; extend it the same way to 64 bits.
                let src = int_op_type(from);
                let dst = if from.is_signed_int() { "s64" } else { "u64" };
                ins!(self, "cvt.{dst}.{src} {d}, {s}");
            }
            (true, false) => {
                ins!(self, "cvt.u32.u64 {d}, {s}");
                self.normalize(d, to);
            }
            (false, false) => {
                self.mov(d, s);
                self.normalize(d, to);
            }
        }
    }

    fn int_to_float(&mut self, from: ScalarType, to: ScalarType, d: Reg, s: Reg) {
        let src = int_op_type(from);
        match to {
            S::F32 | S::F64 => ins!(self, "cvt.rn.{}.{src} {d}, {s}", float_type(to)),
            _ => {
                // To a 16-bit float: exactly to f32 when the integer fits in 24 bits, else round
                // to odd into f32, so that the final rounding to the half is the only one that
                // counts (the emulator does the same).
                let f = if from.bits() <= 16 {
                    let f = self.tmp(Class::F32);
                    ins!(self, "cvt.rn.f32.{src} {f}, {s}");
                    f
                } else {
                    self.int_to_f32_odd(from, s)
                };
                self.narrow_half(d, f, to);
            }
        }
    }

    fn float_to_int(&mut self, from: ScalarType, to: ScalarType, d: Reg, s: Reg) {
        let (s, from) = if is_half(from) {
            (self.widen_half(s, from), S::F32)
        } else {
            (s, from)
        };
        let f = float_type(from);
        // `cvt.rzi` to a 32- or 64-bit integer rounds toward zero and saturates, as Rust's
        // `as`; narrower results saturate to 32 bits, then clamp. NaN must give 0, which
        // `cvt.rzi` does not do for every pair of types (an H200 gives the minimum integer for
        // f64 sources and for 64-bit results), so NaN is replaced explicitly.
        match to {
            S::I8 | S::I16 => {
                let (lo, hi) = if to == S::I8 {
                    (i8::MIN as i32, i8::MAX as i32)
                } else {
                    (i16::MIN as i32, i16::MAX as i32)
                };
                ins!(self, "cvt.rzi.s32.{f} {d}, {s}");
                ins!(self, "max.s32 {d}, {d}, {lo}");
                ins!(self, "min.s32 {d}, {d}, {hi}");
            }
            S::U8 | S::U16 => {
                let hi = if to == S::U8 { 255 } else { 65535 };
                ins!(self, "cvt.rzi.u32.{f} {d}, {s}");
                ins!(self, "min.u32 {d}, {d}, {hi}");
            }
            _ => ins!(self, "cvt.rzi.{}.{f} {d}, {s}", int_op_type(to)),
        }
        let num = self.tmp(Class::Pred);
        ins!(self, "setp.num.{f} {num}, {s}, {s}");
        ins!(self, "selp.{} {d}, {d}, 0, {num}", d.class.ptx_type());
    }

    fn float_to_float(&mut self, from: ScalarType, to: ScalarType, d: Reg, s: Reg) {
        match (from, to) {
            (S::F32, S::F64) => ins!(self, "cvt.f64.f32 {d}, {s}"),
            (S::F64, S::F32) => ins!(self, "cvt.rn.f32.f64 {d}, {s}"),
            (S::F32, _) => self.narrow_half(d, s, to),
            (_, S::F32) => self.widen_half_into(d, s, from),
            (_, S::F64) => {
                let f = self.widen_half(s, from);
                ins!(self, "cvt.f64.f32 {d}, {f}");
            }
            (S::F64, _) => {
                let f = self.f64_to_f32_odd(s);
                self.narrow_half(d, f, to);
            }
            // Between the two halves, through the exact f32.
            _ => {
                let f = self.widen_half(s, from);
                self.narrow_half(d, f, to);
            }
        }
    }

    /// Reinterprets the bits of `s` (of type `from`) as `to`, of the same size.
    fn bitcast(
        &mut self,
        from: ScalarType,
        to: ScalarType,
        d: Reg,
        s: Reg,
    ) -> Result<(), PtxError> {
        match (s.class, d.class) {
            (Class::B16, Class::B16) => self.mov(d, s),
            (Class::B32, Class::B16) => ins!(self, "cvt.u16.u32 {d}, {s}"),
            (Class::B16, Class::B32) => {
                let t = if to.is_signed_int() {
                    "s32.s16"
                } else {
                    "u32.u16"
                };
                ins!(self, "cvt.{t} {d}, {s}");
            }
            (Class::B32, Class::B32) => {
                self.mov(d, s);
                self.normalize(d, to);
            }
            (Class::B32 | Class::F32, Class::B32 | Class::F32) => ins!(self, "mov.b32 {d}, {s}"),
            (Class::B64 | Class::F64, Class::B64 | Class::F64) => ins!(self, "mov.b64 {d}, {s}"),
            _ => return Err(self.unsupported(format!("bitcast from {from} to {to}"))),
        }
        Ok(())
    }
}
