//! cuda-oxide's warpgroup MMA API (`cuprum::simt::wgmma`) and the warp-specialization calls
//! around it, read as the IR's `Stmt::WgmmaFence`, `WgmmaMma`, `WgmmaCommit`, `WgmmaWait`,
//! `SetMaxNreg`, `NamedBarrier` and `StMatrix`.
//!
//! Every name is in one table, [`lookup`]: the fixed names in [`FIXED`], the
//! `wgmma_mma_m64n{N}k{K}_f32_{type}` family (cuda-oxide's spelling, for every `N` PTX has)
//! parsed from the name, and cuprum's general forms `wgmma_mma_f32_{type}[_reg_a]`, whose
//! `N` is the accumulator's (twice its element count) and whose `WgmmaFlags` say scale-d,
//! negation and transposition.
//!
//! The accumulator is a local array passed as `&mut acc`. The statement reads and writes
//! its elements *in place* as IR variables: the infer run reports each such array's `let`
//! (`Inference::register_lets`), and the emit run keeps that array in variables from the
//! `let` on (`arrays::Registers`), so nothing is copied between the fence and the wait
//! (which would make ptxas serialize the wgmma pipeline, its warning C7510).

use cuprum_ir::wgmma::{
    Descriptor, ScaleD, WgmmaA, WgmmaMma, WgmmaShape, WgmmaType, valid_register_count,
};
use cuprum_ir::{BinaryOp, Constant, Op, ScalarType as S, Stmt, Swizzle, Value};
use proc_macro2::Span;
use syn::spanned::Spanned;

use super::*;

/// What a name of the family does.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Call {
    Fence,
    Commit,
    /// `wgmma_wait_group::<N>()`.
    Wait,
    /// cuda-oxide's `make_smem_desc(ptr)`: its fixed fields ([`FIXED_DESCRIPTOR`]).
    SmemDesc,
    /// `make_smem_desc_custom(ptr, leading_bytes, stride_bytes, swizzle_128b)`.
    SmemDescCustom,
    /// `make_smem_desc_swizzled(ptr, leading_bytes, stride_bytes, swizzle_bytes)` (cuprum's).
    SmemDescSwizzled,
    /// `zero_accumulator()`: a `[[f32; 8]; 4]` of zeros.
    ZeroAccumulator,
    /// `setmaxnreg_inc::<N>()` / `setmaxnreg_dec::<N>()`.
    SetMaxNreg {
        increase: bool,
    },
    /// `named_barrier_sync(id, threads)` / `named_barrier_arrive(id, threads)`.
    NamedBarrier {
        arrive: bool,
    },
    /// `stmatrix_m8n8_x{count}[_trans](ptr, r0, ..)`.
    StMatrix {
        count: usize,
        trans: bool,
    },
    /// An MMA: `n` fixed by the name (cuda-oxide's family: A from a descriptor, `D += A B`),
    /// or `None` for the general forms (`N` from the accumulator, flags as an argument).
    Mma {
        ty: WgmmaType,
        n: Option<u32>,
        a_registers: bool,
    },
}

/// The names with nothing to parse.
const FIXED: &[(&str, Call)] = &[
    ("wgmma_fence", Call::Fence),
    ("wgmma_commit_group", Call::Commit),
    ("wgmma_wait_group", Call::Wait),
    ("make_smem_desc", Call::SmemDesc),
    ("make_smem_desc_custom", Call::SmemDescCustom),
    ("make_smem_desc_swizzled", Call::SmemDescSwizzled),
    ("zero_accumulator", Call::ZeroAccumulator),
    ("setmaxnreg_inc", Call::SetMaxNreg { increase: true }),
    ("setmaxnreg_dec", Call::SetMaxNreg { increase: false }),
    ("named_barrier_sync", Call::NamedBarrier { arrive: false }),
    ("named_barrier_arrive", Call::NamedBarrier { arrive: true }),
    (
        "stmatrix_m8n8_x1",
        Call::StMatrix {
            count: 1,
            trans: false,
        },
    ),
    (
        "stmatrix_m8n8_x1_trans",
        Call::StMatrix {
            count: 1,
            trans: true,
        },
    ),
    (
        "stmatrix_m8n8_x2",
        Call::StMatrix {
            count: 2,
            trans: false,
        },
    ),
    (
        "stmatrix_m8n8_x2_trans",
        Call::StMatrix {
            count: 2,
            trans: true,
        },
    ),
    (
        "stmatrix_m8n8_x4",
        Call::StMatrix {
            count: 4,
            trans: false,
        },
    ),
    (
        "stmatrix_m8n8_x4_trans",
        Call::StMatrix {
            count: 4,
            trans: true,
        },
    ),
];

/// The fields cuda-oxide's `make_smem_desc` ORs into the shifted address (its
/// `0xC000000800080000`): layout code 3, which the PTX ISA defines as the 32-byte swizzle,
/// and leading and stride byte offsets of 128.
pub(crate) const FIXED_DESCRIPTOR: Descriptor = Descriptor {
    start: 0,
    leading_byte_offset: 128,
    stride_byte_offset: 128,
    base_offset: 0,
    swizzle: Swizzle::B32,
};

/// The input type named by a suffix.
fn input_type(name: &str) -> Option<WgmmaType> {
    WgmmaType::ALL.into_iter().find(|t| t.ptx_name() == name)
}

/// What `name` is, or `Err` with the message for a name of the family that cuprum refuses
/// (cuda-oxide's `k16` spelling of `tf32`), or `Ok(None)` for other names.
fn lookup(name: &str) -> std::result::Result<Option<Call>, String> {
    if let Some((_, call)) = FIXED.iter().find(|(n, _)| *n == name) {
        return Ok(Some(*call));
    }
    if let Some(rest) = name.strip_prefix("wgmma_mma_f32_") {
        let (ty, a_registers) = match rest.strip_suffix("_reg_a") {
            Some(t) => (t, true),
            None => (rest, false),
        };
        return Ok(input_type(ty).map(|ty| Call::Mma {
            ty,
            n: None,
            a_registers,
        }));
    }
    let Some(rest) = name.strip_prefix("wgmma_mma_m64n") else {
        return Ok(None);
    };
    let Some((n, rest)) = rest.split_once('k') else {
        return Ok(None);
    };
    let Some((k, ty)) = rest.split_once("_f32_") else {
        return Ok(None);
    };
    let (Ok(n), Ok(k), Some(ty)) = (n.parse::<u32>(), k.parse::<u32>(), input_type(ty)) else {
        return Ok(None);
    };
    if !(WgmmaShape { ty, n }).is_valid() {
        return Err(format!(
            "`{name}`: wgmma's N is a multiple of 8 from 8 to 256, not {n}"
        ));
    }
    if k != ty.k() {
        return Err(format!(
            "`{name}`: a {} wgmma has K = {}, so this is `wgmma_mma_m64n{n}k{}_f32_{}`{}",
            ty.ptx_name(),
            ty.k(),
            ty.k(),
            ty.ptx_name(),
            if ty == WgmmaType::Tf32 {
                " (two of them make K = 16: the second with both descriptors advanced by 8 \
                 elements)"
            } else {
                ""
            }
        ));
    }
    Ok(Some(Call::Mma {
        ty,
        n: Some(n),
        a_registers: false,
    }))
}

impl Lowerer<'_> {
    /// The wgmma family; `None` when `path` names none of it.
    pub(super) fn wgmma_call(
        &mut self,
        path: &syn::Path,
        name: &str,
        args: &[&syn::Expr],
        span: Span,
    ) -> Result<Option<Val>> {
        let call = match lookup(name) {
            Ok(Some(call)) => call,
            Ok(None) => return Ok(None),
            Err(message) => return err(span, message),
        };
        let arity = match call {
            Call::Fence
            | Call::Commit
            | Call::Wait
            | Call::ZeroAccumulator
            | Call::SetMaxNreg { .. } => 0,
            Call::SmemDesc => 1,
            Call::NamedBarrier { .. } => 2,
            Call::SmemDescCustom | Call::SmemDescSwizzled => 4,
            Call::StMatrix { count, .. } => 1 + count,
            Call::Mma { n: Some(_), .. } => 3,
            Call::Mma { n: None, .. } => 4,
        };
        if args.len() != arity {
            return err(
                span,
                format!(
                    "`{name}` takes {arity} argument{}",
                    if arity == 1 { "" } else { "s" }
                ),
            );
        }
        match call {
            Call::Fence => self.b.push(Stmt::WgmmaFence),
            Call::Commit => self.b.push(Stmt::WgmmaCommit),
            Call::Wait => {
                let pending = self.immediate(path, name, 0..=7, span)?;
                self.b.push(Stmt::WgmmaWait { pending });
            }
            Call::SetMaxNreg { increase } => {
                let count = self.immediate(path, name, 24..=256, span)?;
                if !valid_register_count(count) {
                    return err(
                        span,
                        format!("`{name}` asks for a multiple of 8 registers, not {count}"),
                    );
                }
                if self.kernel.max_registers.is_none() {
                    return err(
                        span,
                        format!(
                            "`{name}` needs a register cap on the kernel (without one, ptxas \
                             ignores it): put `#[max_registers(N)]` on `{}` (PTX's `.maxnreg`; \
                             `N` a multiple of 8 from 24 to 256)",
                            self.kernel.name
                        ),
                    );
                }
                self.b.push(Stmt::SetMaxNreg { increase, count });
            }
            Call::NamedBarrier { arrive } => {
                let id = self.constant_arg(name, args[0], "barrier id", 1..=15)?;
                let threads = self.constant_arg(name, args[1], "thread count", 32..=1024)?;
                if threads % 32 != 0 {
                    return err(
                        args[1].span(),
                        format!("`{name}` counts whole warps: a multiple of 32, not {threads}"),
                    );
                }
                self.b.push(Stmt::NamedBarrier {
                    arrive,
                    id,
                    threads,
                });
            }
            Call::StMatrix { trans, .. } => {
                let addr = self.shared_row_address(name, args[0])?;
                let mut values = Vec::with_capacity(args.len() - 1);
                for a in &args[1..] {
                    let v = self.expr(a)?;
                    values.push(self.materialize(v, S::U32, a.span())?);
                }
                self.b.push(Stmt::StMatrix {
                    trans,
                    addr,
                    values,
                });
            }
            Call::SmemDesc => {
                let start = self.shared_row_address(name, args[0])?;
                let fixed = self.constant(Constant::u64(FIXED_DESCRIPTOR.encode()));
                let d = self.descriptor_field(start, 0, span)?;
                return Ok(Some(Val::Scalar(
                    self.def(Op::Binary(BinaryOp::Or, d, fixed), span)?,
                )));
            }
            Call::SmemDescCustom | Call::SmemDescSwizzled => {
                let start = self.shared_row_address(name, args[0])?;
                let mut fields = Vec::with_capacity(2);
                for a in &args[1..3] {
                    let v = self.expr(a)?;
                    fields.push(self.materialize(v, S::U32, a.span())?);
                }
                let layout = if call == Call::SmemDescCustom {
                    let v = self.expr(args[3])?;
                    let on = self.materialize(v, S::Bool, args[3].span())?;
                    let b128 = self.constant(Constant::u64(Swizzle::B128.descriptor_code() << 62));
                    let none = self.constant(Constant::u64(0));
                    self.def(
                        Op::Select {
                            cond: on,
                            if_true: b128,
                            if_false: none,
                        },
                        span,
                    )?
                } else {
                    let bytes = self.constant_arg(name, args[3], "swizzle width", 0..=128)?;
                    let Some(swizzle) = Swizzle::ALL
                        .into_iter()
                        .find(|s| s.span_bytes().unwrap_or(0) == bytes)
                    else {
                        return err(
                            args[3].span(),
                            format!(
                                "`{name}`'s swizzle is 0 (none), 32, 64 or 128 bytes, not {bytes}"
                            ),
                        );
                    };
                    self.constant(Constant::u64(swizzle.descriptor_code() << 62))
                };
                let mut d = self.descriptor_field(start, 0, span)?;
                for (field, shift) in fields.into_iter().zip([16, 32]) {
                    let f = self.descriptor_field(field, shift, span)?;
                    d = self.def(Op::Binary(BinaryOp::Or, d, f), span)?;
                }
                return Ok(Some(Val::Scalar(
                    self.def(Op::Binary(BinaryOp::Or, d, layout), span)?,
                )));
            }
            Call::ZeroAccumulator => {
                // Stored element by element at constant positions, so that the optimizer
                // keeps no memory for it once a `let` has moved it into registers.
                let what = "`zero_accumulator()`".to_string();
                let a = self.new_local_array("acc", S::F32, vec![4, 8], None, span, what)?;
                let base = self.array_addr(&a, span)?;
                let zero = self.constant(Constant::f32(0.0));
                for k in 0..a.count() {
                    let addr = self.local_elem_addr_const(base, S::F32, k, span)?;
                    self.b.push(Stmt::Store {
                        space: AddressSpace::Local,
                        addr,
                        value: zero,
                    });
                }
                return Ok(Some(Val::Array(a)));
            }
            Call::Mma { ty, n, a_registers } => {
                self.wgmma_mma(name, ty, n, a_registers, args, span)?
            }
        }
        Ok(Some(Val::Unit))
    }

    /// A call's const generic argument (`::<N>`), a constant within `range`.
    fn immediate(
        &self,
        path: &syn::Path,
        name: &str,
        range: std::ops::RangeInclusive<u32>,
        span: Span,
    ) -> Result<u32> {
        let generic = path.segments.last().and_then(|s| match &s.arguments {
            syn::PathArguments::AngleBracketed(a) if a.args.len() == 1 => a.args.first(),
            _ => None,
        });
        let expr: Option<syn::Expr> = match generic {
            Some(syn::GenericArgument::Const(e)) => Some(e.clone()),
            Some(syn::GenericArgument::Type(syn::Type::Path(p))) if p.qself.is_none() => {
                Some(syn::Expr::Path(syn::ExprPath {
                    attrs: Vec::new(),
                    qself: None,
                    path: p.path.clone(),
                }))
            }
            _ => None,
        };
        let value = match &expr {
            Some(e) => match self.eval_const(e, 0) {
                Ok(ConstVal::Int(v)) => u32::try_from(v).ok().filter(|v| range.contains(v)),
                _ => None,
            },
            None => None,
        };
        value.ok_or_else(|| {
            syn::Error::new(
                expr.as_ref().map_or(span, |e| e.span()),
                format!(
                    "`{name}::<N>()`: `N` is an immediate of the instruction, a constant from {} \
                     to {}",
                    range.start(),
                    range.end()
                ),
            )
        })
    }

    /// An argument that must be a constant within `range` (an immediate of the instruction).
    fn constant_arg(
        &self,
        name: &str,
        e: &syn::Expr,
        what: &str,
        range: std::ops::RangeInclusive<u32>,
    ) -> Result<u32> {
        match self.eval_const(e, 0) {
            Ok(ConstVal::Int(v)) if u32::try_from(v).is_ok_and(|v| range.contains(&v)) => {
                Ok(v as u32)
            }
            _ => err(
                e.span(),
                format!(
                    "`{name}`'s {what} is an immediate of the instruction: write a constant from \
                     {} to {}",
                    range.start(),
                    range.end()
                ),
            ),
        }
    }

    /// A flag of `WgmmaFlags` that must be known when the kernel is compiled.
    fn constant_flag(&self, e: &syn::Expr, field: &str) -> Result<bool> {
        match self.eval_const(e, 0) {
            Ok(ConstVal::Bool(b)) => Ok(b),
            _ => err(
                e.span(),
                format!(
                    "`{field}` is an immediate of the wgmma instruction: write `true` or `false` \
                     (only `scale_d` may be computed at run time)"
                ),
            ),
        }
    }

    /// `((x >> 4) & 0x3FFF) << shift` as a `U64`: one field of a matrix descriptor from a
    /// `U32` byte address or offset ([`Descriptor::encode`] is the same on the host).
    fn descriptor_field(&mut self, x: Value, shift: u32, span: Span) -> Result<Value> {
        let x = self.cast_value(x, S::U64, span)?;
        let four = self.constant(Constant::u32(4));
        let mask = self.constant(Constant::u64(0x3FFF));
        let shifted = self.def(Op::Binary(BinaryOp::Shr, x, four), span)?;
        let field = self.def(Op::Binary(BinaryOp::And, shifted, mask), span)?;
        if shift == 0 {
            return Ok(field);
        }
        let shift = self.constant(Constant::u32(shift));
        self.def(Op::Binary(BinaryOp::Shl, field, shift), span)
    }

    /// The `U32` shared address a raw pointer argument holds.
    fn shared_row_address(&mut self, name: &str, e: &syn::Expr) -> Result<Value> {
        match self.expr(e)? {
            Val::Ptr {
                addr,
                space: AddressSpace::Shared,
                ..
            } => Ok(addr),
            other => err(
                e.span(),
                format!(
                    "`{name}` takes a raw pointer into shared memory (`&raw const TILE as *const \
                     u8` of a `static mut TILE: SharedArray<T, N, ALIGN>`, or such a pointer \
                     moved with `.add(..)`), not {}",
                    describe(&other)
                ),
            ),
        }
    }

    /// One `wgmma.mma_async`.
    fn wgmma_mma(
        &mut self,
        name: &str,
        ty: WgmmaType,
        named_n: Option<u32>,
        a_registers: bool,
        args: &[&syn::Expr],
        span: Span,
    ) -> Result<()> {
        let acc_expr = args[0];
        let acc = self.accumulator(name, acc_expr)?;
        let a = if a_registers {
            self.keep_in_registers(args[1])?;
            WgmmaA::Registers(self.fragment::<4>(args[1], S::U32)?)
        } else {
            let v = self.expr(args[1])?;
            WgmmaA::Descriptor(self.materialize(v, S::U64, args[1].span())?)
        };
        let b = {
            let v = self.expr(args[2])?;
            self.materialize(v, S::U64, args[2].span())?
        };
        let flags = match args.get(3) {
            Some(e) => self.wgmma_flags(e)?,
            None => Flags::ACCUMULATE,
        };
        let Some(acc) = acc else {
            return Ok(()); // the infer run
        };
        let n = 2 * acc.len() as u32;
        let shape = WgmmaShape { ty, n };
        if let Some(named) = named_n
            && named != n
        {
            return err(
                acc_expr.span(),
                format!(
                    "`{name}`'s accumulator holds {} `f32`s per thread (`[[f32; 8]; {}]`), not {}",
                    named / 2,
                    named / 16,
                    acc.len()
                ),
            );
        }
        if !shape.is_valid() {
            return err(
                acc_expr.span(),
                format!(
                    "a wgmma accumulator holds N / 2 `f32`s per thread for N a multiple of 8 from \
                     8 to 256 (`[f32; 4]` or `[[f32; 8]; N / 16]`), not {}",
                    acc.len()
                ),
            );
        }
        let m = WgmmaMma {
            shape,
            a,
            b,
            scale_d: flags.scale_d,
            negate_a: flags.negate_a,
            negate_b: flags.negate_b,
            trans_a: flags.transpose_a,
            trans_b: flags.transpose_b,
            acc,
        };
        self.b
            .wgmma_mma(m)
            .or_else(|e| err(span, format!("`{name}`: {e}")))
    }

    /// In the infer run, marks the `let` of a local array passed as register `A` to be kept
    /// in variables (`arrays::Registers`): read from memory after the fence, its registers
    /// would be written between `wgmma.fence` and the `wgmma`, which the PTX ISA forbids
    /// (and the IR validator refuses); kept in variables, they are written where the array
    /// is. Other arguments (tuples) are left as they are.
    fn keep_in_registers(&mut self, e: &syn::Expr) -> Result<()> {
        if !self.inferring() {
            return Ok(());
        }
        if let Val::Array(a) = self.expr(e)?
            && let (Some(&site), Mode::Infer(inf)) = (self.array_lets.get(&a.array), &mut self.mode)
        {
            inf.register_lets.insert(site);
        }
        Ok(())
    }

    /// The variables of the accumulator argument (`&mut acc`); `None` in the infer run, which
    /// instead reports the array's `let` (see the module docs).
    fn accumulator(&mut self, name: &str, e: &syn::Expr) -> Result<Option<Vec<Var>>> {
        const FORM: &str = "a local array declared in the kernel, `let mut acc = [[0.0f32; 8]; \
                            N / 16];`, passed as `&mut acc` (or a row of one picked by a \
                            constant, `&mut accs[1]`)";
        // `&mut acc`, or a helper's `acc: &mut [[f32; 8]; K]` parameter passed on (a
        // reference to an array is the array's place, `references`).
        let inner = match e {
            syn::Expr::Reference(r) if r.mutability.is_some() => &*r.expr,
            other => other,
        };
        let Val::Array(a) = self.expr(inner)? else {
            return err(e.span(), format!("`{name}`'s accumulator must be {FORM}"));
        };
        if self.inferring() {
            if let Some((site, _)) = a.infer {
                self.note_type(site, S::F32);
            }
            if let (Some(&site), Mode::Infer(inf)) = (self.array_lets.get(&a.array), &mut self.mode)
            {
                inf.register_lets.insert(site);
            }
            return Ok(None);
        }
        if a.elem != S::F32 {
            return err(
                e.span(),
                format!("a wgmma accumulator holds `f32`s, not `{}`s", a.elem),
            );
        }
        let Some(regs) = &a.regs else {
            return err(e.span(), format!("`{name}`'s accumulator must be {FORM}"));
        };
        if a.offset.is_some() {
            return err(
                e.span(),
                "pick the accumulator row with a constant index: an accumulator lives in \
                 registers, which a run-time index cannot name",
            );
        }
        let start = regs.base as usize;
        Ok(Some(regs.vars[start..start + a.count() as usize].to_vec()))
    }

    /// The `WgmmaFlags` argument: `WgmmaFlags::ACCUMULATE`, `WgmmaFlags::OVERWRITE`, or a
    /// struct expression `WgmmaFlags { field: value, ..WgmmaFlags::ACCUMULATE }`.
    fn wgmma_flags(&mut self, e: &syn::Expr) -> Result<Flags> {
        const FORM: &str = FLAGS_FORM;
        let named = |p: &syn::Path| match p.segments.last().map(|s| s.ident.to_string()) {
            Some(n) if n == "ACCUMULATE" => Some(Flags::ACCUMULATE),
            Some(n) if n == "OVERWRITE" => Some(Flags {
                scale_d: ScaleD::Const(false),
                ..Flags::ACCUMULATE
            }),
            _ => None,
        };
        match e {
            syn::Expr::Path(p) => named(&p.path).ok_or_else(|| syn::Error::new(e.span(), FORM)),
            syn::Expr::Paren(p) => self.wgmma_flags(&p.expr),
            syn::Expr::Struct(s) => {
                let mut flags = match &s.rest {
                    Some(base) => match &**base {
                        syn::Expr::Path(p) => {
                            named(&p.path).ok_or_else(|| syn::Error::new(base.span(), FORM))?
                        }
                        other => return err(other.span(), FORM),
                    },
                    None => Flags::ACCUMULATE,
                };
                for f in &s.fields {
                    let syn::Member::Named(field) = &f.member else {
                        return err(f.span(), FORM);
                    };
                    let field = field.to_string();
                    match field.as_str() {
                        "scale_d" => {
                            flags.scale_d = match self.eval_const(&f.expr, 0) {
                                Ok(ConstVal::Bool(b)) => ScaleD::Const(b),
                                _ => {
                                    let v = self.expr(&f.expr)?;
                                    ScaleD::Pred(self.materialize(v, S::Bool, f.expr.span())?)
                                }
                            }
                        }
                        "negate_a" => flags.negate_a = self.constant_flag(&f.expr, &field)?,
                        "negate_b" => flags.negate_b = self.constant_flag(&f.expr, &field)?,
                        "transpose_a" => {
                            flags.transpose_a = self.constant_flag(&f.expr, &field)?;
                        }
                        "transpose_b" => {
                            flags.transpose_b = self.constant_flag(&f.expr, &field)?;
                        }
                        _ => return err(f.span(), format!("`WgmmaFlags` has no field `{field}`")),
                    }
                }
                Ok(flags)
            }
            _ => err(e.span(), FORM),
        }
    }
}

/// How `WgmmaFlags` are written: in the MMA call, where the front end reads them.
pub(super) const FLAGS_FORM: &str = "`WgmmaFlags` are immediates of the wgmma instruction: \
     write them in the MMA call, `WgmmaFlags::ACCUMULATE`, `WgmmaFlags::OVERWRITE`, or \
     `WgmmaFlags { transpose_b: true, ..WgmmaFlags::ACCUMULATE }` (only `scale_d` may be \
     computed at run time)";

/// Whether a path names one of `WgmmaFlags`' constants (a value only an MMA call reads).
pub(super) fn names_flags(path: &syn::Path) -> bool {
    path.segments.iter().any(|s| s.ident == "WgmmaFlags")
}

/// What `WgmmaFlags` says, read at build.
#[derive(Clone, Copy)]
struct Flags {
    scale_d: ScaleD,
    negate_a: bool,
    negate_b: bool,
    transpose_a: bool,
    transpose_b: bool,
}

impl Flags {
    /// `D = A B + D`, both operands K-major, nothing negated.
    const ACCUMULATE: Flags = Flags {
        scale_d: ScaleD::Const(true),
        negate_a: false,
        negate_b: false,
        transpose_a: false,
        transpose_b: false,
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_descriptor_is_cuda_oxides() {
        assert_eq!(FIXED_DESCRIPTOR.encode(), 0xC000_0008_0008_0000);
    }

    #[test]
    fn mma_names() {
        assert_eq!(
            lookup("wgmma_mma_m64n64k16_f32_bf16"),
            Ok(Some(Call::Mma {
                ty: WgmmaType::Bf16,
                n: Some(64),
                a_registers: false
            }))
        );
        assert_eq!(
            lookup("wgmma_mma_m64n8k8_f32_tf32"),
            Ok(Some(Call::Mma {
                ty: WgmmaType::Tf32,
                n: Some(8),
                a_registers: false
            }))
        );
        assert_eq!(
            lookup("wgmma_mma_f32_f16_reg_a"),
            Ok(Some(Call::Mma {
                ty: WgmmaType::F16,
                n: None,
                a_registers: true
            }))
        );
        assert!(lookup("wgmma_mma_m64n64k16_f32_tf32").is_err());
        assert!(lookup("wgmma_mma_m64n12k16_f32_bf16").is_err());
        assert_eq!(lookup("wgmma_mma_m64n64k16_f64_bf16"), Ok(None));
        assert_eq!(lookup("sync_threads"), Ok(None));
    }
}
