//! Operators: arithmetic with literal typing, comparisons, short-circuit logic, casts,
//! and the checks Rust makes on integer division.

use cuprum_ir::{BinaryOp, CmpOp, Constant, Op, ScalarType as S, Stmt, TrapKind, UnaryOp, Value};
use syn::spanned::Spanned;

use super::*;

/// The operation a compound assignment (`+=`, `<<=`, ...) applies; `None` for other operators.
pub(super) fn compound_op(op: syn::BinOp) -> Option<BinaryOp> {
    use syn::BinOp as B;
    Some(match op {
        B::AddAssign(_) => BinaryOp::Add,
        B::SubAssign(_) => BinaryOp::Sub,
        B::MulAssign(_) => BinaryOp::Mul,
        B::DivAssign(_) => BinaryOp::Div,
        B::RemAssign(_) => BinaryOp::Rem,
        B::BitAndAssign(_) => BinaryOp::And,
        B::BitOrAssign(_) => BinaryOp::Or,
        B::BitXorAssign(_) => BinaryOp::Xor,
        B::ShlAssign(_) => BinaryOp::Shl,
        B::ShrAssign(_) => BinaryOp::Shr,
        _ => return None,
    })
}

impl Lowerer<'_> {
    // ----- operators ----------------------------------------------------------------------

    pub(super) fn binary_expr(&mut self, b: &syn::ExprBinary) -> Result<Val> {
        use syn::BinOp as B;
        let span = b.span();
        if let Some(op) = compound_op(b.op) {
            if let Some(v) = self.struct_compound_assign(b)? {
                return Ok(v);
            }
            let place = self.place(&b.left)?;
            let current = self.read_place(place.clone(), span)?;
            let rhs = self.expr(&b.right)?;
            let result = self.arith(op, current, rhs, span, b)?;
            self.write_place(place, result, span)?;
            return Ok(Val::Unit);
        }
        if let B::And(_) | B::Or(_) = b.op {
            return self.short_circuit(b);
        }
        let l = self.expr(&b.left)?;
        let r = self.expr(&b.right)?;
        if let Val::Struct(..) = l {
            return self.struct_binary_operator(b, l, r);
        }
        let cmp = match b.op {
            B::Eq(_) => Some(CmpOp::Eq),
            B::Ne(_) => Some(CmpOp::Ne),
            B::Lt(_) => Some(CmpOp::Lt),
            B::Le(_) => Some(CmpOp::Le),
            B::Gt(_) => Some(CmpOp::Gt),
            B::Ge(_) => Some(CmpOp::Ge),
            _ => None,
        };
        if let Some(c) = cmp {
            return self.compare(c, l, r, span);
        }
        let op = match b.op {
            B::Add(_) => BinaryOp::Add,
            B::Sub(_) => BinaryOp::Sub,
            B::Mul(_) => BinaryOp::Mul,
            B::Div(_) => BinaryOp::Div,
            B::Rem(_) => BinaryOp::Rem,
            B::BitAnd(_) => BinaryOp::And,
            B::BitOr(_) => BinaryOp::Or,
            B::BitXor(_) => BinaryOp::Xor,
            B::Shl(_) => BinaryOp::Shl,
            B::Shr(_) => BinaryOp::Shr,
            _ => return err(span, "this operator is not supported in device code"),
        };
        self.arith(op, l, r, span, b)
    }

    /// Picks the common type of two operands, or `None` when both are still untyped.
    pub(super) fn unify(&mut self, l: &Val, r: &Val, span: proc_macro2::Span) -> Result<Option<S>> {
        Ok(match (l, r) {
            (Val::Scalar(x), _) => Some(self.ty(*x)),
            (_, Val::Scalar(y)) => Some(self.ty(*y)),
            (Val::Infer(a, _), Val::Infer(b, _)) => {
                self.note_union(*a, *b);
                None
            }
            (Val::Infer(..), _) | (_, Val::Infer(..)) => None,
            (Val::Int(_), Val::Int(_)) | (Val::Float(_), Val::Float(_)) => None,
            (Val::Int(_), Val::Float(_)) | (Val::Float(_), Val::Int(_)) => {
                return err(
                    span,
                    "cannot mix integer and floating-point literals: write `1.0`, not `1`",
                );
            }
            (a, b) => {
                return err(
                    span,
                    format!("no arithmetic between {} and {}", describe(a), describe(b)),
                );
            }
        })
    }

    /// `l op r`; `expr` is the expression as written, which a failed division check names.
    pub(super) fn arith(
        &mut self,
        op: BinaryOp,
        l: Val,
        r: Val,
        span: proc_macro2::Span,
        expr: &dyn quote::ToTokens,
    ) -> Result<Val> {
        if let (BinaryOp::Shl | BinaryOp::Shr, Val::Int(a), Val::Int(b)) = (op, &l, &r) {
            let (a, b) = (*a, *b);
            if !(0..128).contains(&b) {
                return err(span, "shift amount out of range");
            }
            return Ok(Val::Int(if op == BinaryOp::Shl { a << b } else { a >> b }));
        }
        if matches!(op, BinaryOp::Shl | BinaryOp::Shr) {
            let lhs = self.scalar(l, span)?;
            let amount = match r {
                Val::Int(_) => self.materialize(r, S::U32, span)?,
                other => {
                    let a = self.scalar(other, span)?;
                    self.cast_value(a, S::U32, span)?
                }
            };
            if !self.ty(lhs).is_int() {
                return err(span, "shifts need an integer");
            }
            return Ok(Val::Scalar(self.def(Op::Binary(op, lhs, amount), span)?));
        }
        let ty = match self.unify(&l, &r, span)? {
            Some(ty) => ty,
            None => {
                return Ok(match (&l, &r) {
                    (Val::Infer(s, k), _) | (_, Val::Infer(s, k)) => Val::Infer(*s, *k),
                    (Val::Int(a), Val::Int(b)) => Val::Int(fold_int(op, *a, *b, span)?),
                    (Val::Float(a), Val::Float(b)) => Val::Float(fold_float(op, *a, *b, span)?),
                    _ => return err(span, "unsupported operands"),
                });
            }
        };
        if ty == S::Bool && !matches!(op, BinaryOp::And | BinaryOp::Or | BinaryOp::Xor) {
            return err(span, "arithmetic on `bool` is not allowed");
        }
        if op.is_float_only() && !ty.is_float() {
            return err(
                span,
                format!("`{op:?}` needs floats, found `{ty}`").to_lowercase(),
            );
        }
        let lv = self.materialize(l, ty, span)?;
        let divisor_const = matches!(r, Val::Int(x) if x != 0 && x != -1);
        let rv = self.materialize(r, ty, span)?;
        if ty.is_int() && matches!(op, BinaryOp::Div | BinaryOp::Rem) && !divisor_const {
            let site = format!("`{}`{}", source_text(&expr), at_line(span));
            self.divide_checks(lv, rv, ty, site)?;
        }
        Ok(Val::Scalar(self.def(Op::Binary(op, lv, rv), span)?))
    }

    /// Rust panics on integer division by zero and on `MIN / -1`; so does the device, with a
    /// trap that names the operation and where it is (`site`).
    pub(super) fn divide_checks(
        &mut self,
        lhs: Value,
        rhs: Value,
        ty: S,
        site: String,
    ) -> Result<()> {
        let span = proc_macro2::Span::call_site();
        let zero = self.constant(Constant::new(ty, 0));
        let is_zero = self.def(Op::Compare(CmpOp::Eq, rhs, zero), span)?;
        self.trap_if(is_zero, TrapKind::DivideByZero { site: site.clone() });
        if ty.is_signed_int() {
            let minus_one = self.constant(Constant::new(ty, u64::MAX));
            let min = self.constant(Constant::new(ty, 1u64 << (ty.bits() - 1)));
            let a = self.def(Op::Compare(CmpOp::Eq, rhs, minus_one), span)?;
            let b = self.def(Op::Compare(CmpOp::Eq, lhs, min), span)?;
            let both = self.def(Op::Binary(BinaryOp::And, a, b), span)?;
            self.trap_if(both, TrapKind::DivideOverflow { site });
        }
        Ok(())
    }

    /// `if !cond { trap }`: the shape every bounds check takes.
    pub(super) fn trap_unless(&mut self, cond: Value, kind: TrapKind) {
        self.b.begin_block();
        let then = self.b.end_block();
        self.b.begin_block();
        self.b.push(Stmt::Trap(kind));
        let otherwise = self.b.end_block();
        self.b.push(Stmt::If {
            cond,
            then,
            otherwise,
        });
    }

    pub(super) fn trap_if(&mut self, cond: Value, kind: TrapKind) {
        let _ = self.when(cond, |this| {
            this.b.push(Stmt::Trap(kind));
            Ok(())
        });
    }

    /// Emits `if cond { body }`, without an else: what `body` lowers goes in the then-block.
    pub(super) fn when(
        &mut self,
        cond: Value,
        body: impl FnOnce(&mut Self) -> Result<()>,
    ) -> Result<()> {
        self.b.begin_block();
        body(self)?;
        let then = self.b.end_block();
        self.b.push(Stmt::If {
            cond,
            then,
            otherwise: Default::default(),
        });
        Ok(())
    }

    pub(super) fn compare(
        &mut self,
        c: CmpOp,
        l: Val,
        r: Val,
        span: proc_macro2::Span,
    ) -> Result<Val> {
        let ty = match self.unify(&l, &r, span)? {
            Some(ty) => ty,
            None => match (&l, &r) {
                (Val::Int(a), Val::Int(b)) => return Ok(self.bool_val(cmp_fold(c, a, b))),
                (Val::Float(a), Val::Float(b)) => return Ok(self.bool_val(cmp_fold_f(c, *a, *b))),
                // Infer run, both sides still open: a placeholder, recording nothing.
                (Val::Infer(..), _) | (_, Val::Infer(..)) => {
                    return Ok(self.bool_val(false));
                }
                _ => return err(span, "unsupported comparison"),
            },
        };
        let lv = self.materialize(l, ty, span)?;
        let rv = self.materialize(r, ty, span)?;
        Ok(Val::Scalar(self.def(Op::Compare(c, lv, rv), span)?))
    }

    pub(super) fn bool_val(&mut self, v: bool) -> Val {
        Val::Scalar(self.constant(Constant::bool(v)))
    }

    /// `a && b`, `a || b`: `b` runs only when needed, as in Rust. When `b` is plain
    /// arithmetic that cannot fault or have an effect (`x < w && y < h`), evaluating it always
    /// changes nothing, and the result is `a & b` (`a | b`): straight code, with no variable
    /// and no branch for the optimizer and ptxas to see through.
    pub(super) fn short_circuit(&mut self, b: &syn::ExprBinary) -> Result<Val> {
        let span = b.span();
        let is_and = matches!(b.op, syn::BinOp::And(_));
        let lhs = self.boolean(&b.left)?;
        self.b.begin_block();
        let rhs = self.boolean(&b.right)?;
        let mut evaluate_rhs = self.b.end_block();
        if evaluate_rhs.stmts.iter().all(speculable) {
            for s in evaluate_rhs.stmts {
                self.b.push(s);
            }
            let op = if is_and { BinaryOp::And } else { BinaryOp::Or };
            return Ok(Val::Scalar(self.def(Op::Binary(op, lhs, rhs), span)?));
        }
        let var = self.b.var(if is_and { "and" } else { "or" }, S::Bool);
        self.b.push(Stmt::WriteVar { var, value: lhs });
        evaluate_rhs.stmts.push(Stmt::WriteVar { var, value: rhs });
        let (then, otherwise) = if is_and {
            (evaluate_rhs, Default::default())
        } else {
            (Default::default(), evaluate_rhs)
        };
        self.b.push(Stmt::If {
            cond: lhs,
            then,
            otherwise,
        });
        Ok(Val::Scalar(self.def(Op::ReadVar(var), span)?))
    }

    pub(super) fn unary(&mut self, u: &syn::ExprUnary) -> Result<Val> {
        let span = u.span();
        match u.op {
            syn::UnOp::Deref(_) => match self.expr(&u.expr)? {
                v @ Val::ElemRef { .. } => self.deref_elem(v, span),
                v @ Val::AtomicCell { ptr: true, .. } => self.deref_cell_pointer(v, span),
                Val::Ptr {
                    addr, elem, space, ..
                } => Ok(Val::Scalar(self.def(
                    Op::Load {
                        space,
                        ty: elem,
                        addr,
                        eviction: cuprum_ir::Eviction::Normal,
                    },
                    span,
                )?)),
                Val::ClusterPtr {
                    addr, rank, elem, ..
                } => Ok(Val::Scalar(self.cluster_read(addr, rank, elem, span)?)),
                // A reference passed to a helper is the place itself (see `references`):
                // reading it is reading the place.
                v @ (Val::Scalar(_)
                | Val::Int(_)
                | Val::Float(_)
                | Val::Infer(..)
                | Val::Struct(..)
                | Val::Tuple(_)
                | Val::Array(_)) => Ok(v),
                other => err(span, format!("cannot dereference {}", describe(&other))),
            },
            syn::UnOp::Neg(_) => match self.expr(&u.expr)? {
                Val::Int(i) => Ok(Val::Int(-i)),
                Val::Float(f) => Ok(Val::Float(-f)),
                v @ Val::Infer(..) => Ok(v),
                v @ Val::Struct(..) => self.struct_operator("Neg", vec![v], span),
                v => {
                    let x = self.scalar(v, span)?;
                    if self.ty(x).is_unsigned_int() || self.ty(x) == S::Bool {
                        return err(span, format!("cannot negate `{}`", self.ty(x)));
                    }
                    Ok(Val::Scalar(self.def(Op::Unary(UnaryOp::Neg, x), span)?))
                }
            },
            syn::UnOp::Not(_) => {
                let v = self.expr(&u.expr)?;
                if let Val::Infer(..) = v {
                    return Ok(v);
                }
                let x = self.scalar(v, span)?;
                if self.ty(x).is_float() {
                    return err(span, "cannot apply `!` to a float");
                }
                Ok(Val::Scalar(self.def(Op::Unary(UnaryOp::Not, x), span)?))
            }
            _ => err(span, "this operator is not supported in device code"),
        }
    }

    pub(super) fn cast(&mut self, c: &syn::ExprCast) -> Result<Val> {
        // `p as *mut u32`: the same address, another element type.
        if let syn::Type::Ptr(target) = &*c.ty {
            if let Some(cell) = self.cell_pointer(c, target)? {
                return Ok(cell);
            }
            return match self.expr(&c.expr)? {
                // `map.as_ptr() as *const TmaDescriptor`: still the map.
                v @ Val::TensorMap(_) if super::tma::is_tma_descriptor(&target.elem) => Ok(v),
                Val::ClusterPtr { addr, rank, .. } => Ok(Val::ClusterPtr {
                    addr,
                    rank,
                    elem: self.resolve_scalar(&target.elem)?,
                    mutable: target.mutability.is_some(),
                }),
                Val::Ptr { addr, space, .. } => Ok(Val::Ptr {
                    addr,
                    // `as *mut Barrier`: an mbarrier is one `u64` (`mbarrier`), so a shared
                    // array of them is a ring of barriers that `.add(s)` steps through.
                    elem: if super::mbarrier::is_barrier(&target.elem) {
                        S::U64
                    } else {
                        self.resolve_scalar(&target.elem)?
                    },
                    mutable: target.mutability.is_some(),
                    space,
                }),
                other => err(
                    c.span(),
                    format!(
                        "only raw pointers convert to raw pointers in device code, not {}",
                        describe(&other)
                    ),
                ),
            };
        }
        let to = self.resolve_scalar(&c.ty)?;
        let span = c.span();
        match self.expr(&c.expr)? {
            // `ptr as u64`: the address (a shared one is its offset in the block's window).
            Val::Ptr { addr, .. } if to.is_int() && to.bits() >= 32 => {
                Ok(Val::Scalar(self.cast_value(addr, to, span)?))
            }
            Val::Int(i) => {
                if to.is_float() {
                    return Ok(Val::Scalar(self.constant(int_as_float(to, i))));
                }
                if to == S::Bool {
                    return err(
                        span,
                        "cannot cast an integer to `bool`: compare with 0 instead",
                    );
                }
                // An unsuffixed literal is an i32 (or whatever fits), truncated like `as`.
                Ok(Val::Scalar(self.constant(Constant::new(to, i as u64))))
            }
            Val::Float(f) => {
                let x = self.constant(Constant::f64(f));
                Ok(Val::Scalar(self.cast_value(x, to, span)?))
            }
            Val::Infer(site, kind) => {
                if self.inferring() {
                    Ok(Val::Scalar(self.constant(Constant::new(to, 0))))
                } else {
                    let x = self.scalar(Val::Infer(site, kind), span)?;
                    Ok(Val::Scalar(self.cast_value(x, to, span)?))
                }
            }
            v => {
                let x = self.scalar(v, span)?;
                if to == S::Bool && self.ty(x) != S::Bool {
                    return err(
                        span,
                        "cannot cast a number to `bool`: compare with 0 instead",
                    );
                }
                Ok(Val::Scalar(self.cast_value(x, to, span)?))
            }
        }
    }

    pub(super) fn cast_value(&mut self, x: Value, to: S, span: proc_macro2::Span) -> Result<Value> {
        if self.ty(x) == to {
            return Ok(x);
        }
        self.def(Op::Cast { value: x, to }, span)
    }
}

pub(super) fn fold_int(op: BinaryOp, a: i128, b: i128, span: proc_macro2::Span) -> Result<i128> {
    Ok(match op {
        BinaryOp::Add => a + b,
        BinaryOp::Sub => a - b,
        BinaryOp::Mul => a.saturating_mul(b),
        BinaryOp::Div | BinaryOp::Rem if b == 0 => return err(span, "division by zero"),
        BinaryOp::Div => a / b,
        BinaryOp::Rem => a % b,
        BinaryOp::And => a & b,
        BinaryOp::Or => a | b,
        BinaryOp::Xor => a ^ b,
        BinaryOp::Min => a.min(b),
        BinaryOp::Max => a.max(b),
        BinaryOp::Shl | BinaryOp::Shr => return err(span, "unsupported constant shift"),
        BinaryOp::MulHigh => return err(span, "unsupported constant high product"),
        BinaryOp::Atan2 | BinaryOp::Hypot => return err(span, "float-only operation on integers"),
    })
}

pub(super) fn fold_float(op: BinaryOp, a: f64, b: f64, span: proc_macro2::Span) -> Result<f64> {
    Ok(match op {
        BinaryOp::Add => a + b,
        BinaryOp::Sub => a - b,
        BinaryOp::Mul => a * b,
        BinaryOp::Div => a / b,
        BinaryOp::Rem => a % b,
        BinaryOp::Min => a.min(b),
        BinaryOp::Max => a.max(b),
        // Untyped literals fold in f64, as the other arithmetic between them does.
        BinaryOp::Atan2 => a.atan2(b),
        BinaryOp::Hypot => a.hypot(b),
        _ => return err(span, "this operator does not apply to floats"),
    })
}

pub(super) fn cmp_fold<T: PartialOrd>(c: CmpOp, a: &T, b: &T) -> bool {
    match c {
        CmpOp::Eq => a == b,
        CmpOp::Ne => a != b,
        CmpOp::Lt => a < b,
        CmpOp::Le => a <= b,
        CmpOp::Gt => a > b,
        CmpOp::Ge => a >= b,
    }
}

pub(super) fn cmp_fold_f(c: CmpOp, a: f64, b: f64) -> bool {
    cmp_fold(c, &a, &b)
}

/// Whether `stmt` may run where the source did not ask for it: a definition that cannot
/// fault, has no effect and reads no memory (no division, which may trap on zero; no loads,
/// atomics or warp operations); reading a variable is fine.
fn speculable(stmt: &Stmt) -> bool {
    match stmt {
        Stmt::Def { op, .. } => match op {
            Op::Binary(b, ..) => !matches!(b, BinaryOp::Div | BinaryOp::Rem),
            Op::Const(_)
            | Op::Param(_)
            | Op::SliceBase(_)
            | Op::SliceLen(_)
            | Op::Special(_)
            | Op::Unary(..)
            | Op::Compare(..)
            | Op::Select { .. }
            | Op::Cast { .. }
            | Op::Bitcast { .. }
            | Op::ReadVar(_) => true,
            _ => false,
        },
        _ => false,
    }
}
